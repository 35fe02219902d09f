/* SPDX-License-Identifier: MIT */
/*
 * blocking-mix: random 4 KiB reads of a file on a real disk, evicted from
 * the page cache (POSIX_FADV_DONTNEED) before every run, at queue depth 32.
 * Every run reads the same blocks, in the same shuffled order, each once.
 * Buffered readers get POSIX_FADV_RANDOM (no readahead), like O_DIRECT.
 *
 * Buffers: one per slot; a call may still be writing into a buffer when it
 * is handed out again (completions come back out of order). The data is
 * never looked at, so that race is harmless and costs nothing.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "bench.h"

#define BLOCK 4096
#define QD 32

struct mix {
	int bfd; /* buffered, POSIX_FADV_RANDOM */
	int dfd; /* O_DIRECT, or -errno where the file system has none */
	uint64_t blocks;
	uint32_t *perm; /* the order blocks are read in */
	char *buf; /* QD blocks, 4 KiB aligned */
	bool buf_kept; /* libsyslet reads pending after a failed wait use it */
};

struct mix_arg {
	struct mix *m;
	bool direct;
};

static off_t off_of(const struct mix *m, uint64_t n)
{
	return (off_t)m->perm[n % m->blocks] * BLOCK;
}

static char *buf_of(const struct mix *m, uint64_t n)
{
	return m->buf + (n % QD) * BLOCK;
}

static void evict(const struct mix *m)
{
	posix_fadvise(m->bfd, 0, 0, POSIX_FADV_DONTNEED);
}

/* ---- libsyslet ---------------------------------------------------------- */

struct sl_st {
	struct mix *m;
	struct bench_sl sl;
};

static int sl_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct sl_st *s = calloc(1, sizeof(*s));
	int ret;

	(void)r;
	if (!s)
		return -ENOMEM;
	s->m = ((struct mix_arg *)c->arg)->m;
	ret = bench_sl_init(&s->sl, QD, 0, 0);
	if (ret) {
		free(s);
		return ret;
	}
	*state = s;
	return 0;
}

static void sl_teardown(void *state)
{
	struct sl_st *s = state;

	bench_sl_fini(&s->sl);
	if (s->sl.inflight)
		s->m->buf_kept = true;
	free(s);
}

static void run_sl(void *state, struct bench_run *r)
{
	struct sl_st *s = state;
	struct mix *m = s->m;
	struct indirect_registers regs;
	uint64_t sub = 0, got = 0, t0;
	bool stop = false;
	int n;

	evict(m);
	t0 = bench_start(r);
	while (got < r->ops) {
		while (s->sl.inflight < QD && sub < r->ops && !stop) {
			long res;
			int ret;

			FILL_IN(regs, SYS_pread64, m->bfd, buf_of(m, sub),
				BLOCK, off_of(m, sub));
			ret = bench_sl_submit(&s->sl, &regs, sub, &res);
			if (ret < 0) {
				bench_fail(r, "indirect(): %s", strerror(-ret));
				stop = true;
			} else if (ret == 1) {
				got++;
				if (res == BLOCK)
					r->done++;
			}
			sub += ret >= 0;
		}
		if (!s->sl.inflight) {
			if (stop)
				break;
			continue;
		}
		n = bench_sl_reap(&s->sl, BLOCK, r);
		if (n < 0)
			break;
		got += (uint64_t)n;
	}
	bench_stop(r, t0);
}

/* ---- io_uring ----------------------------------------------------------- */

struct ur_st {
	struct mix *m;
	int fd;
	struct io_uring ring;
};

static int ur_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct mix_arg *a = c->arg;
	struct ur_st *s = calloc(1, sizeof(*s));
	struct iovec iov[QD];
	char desc[120];
	int ret, i;

	if (a->direct && a->m->dfd < 0) {
		bench_fail(r, "O_DIRECT in %s: %s", bench_opts.disk_dir,
			   strerror(-a->m->dfd));
		return a->m->dfd;
	}
	if (!s)
		return -ENOMEM;
	s->m = a->m;
	s->fd = a->direct ? a->m->dfd : a->m->bfd;
	ret = bench_uring_init(&s->ring, QD, desc, sizeof(desc));
	if (ret) {
		bench_fail(r, "io_uring_queue_init: %s", strerror(-ret));
		free(s);
		return ret;
	}
	for (i = 0; i < QD; i++) {
		iov[i].iov_base = buf_of(s->m, (uint64_t)i);
		iov[i].iov_len = BLOCK;
	}
	ret = io_uring_register_files(&s->ring, &s->fd, 1);
	if (!ret)
		ret = io_uring_register_buffers(&s->ring, iov, QD);
	if (ret) {
		bench_fail(r, "io_uring_register: %s", strerror(-ret));
		io_uring_queue_exit(&s->ring);
		free(s);
		return ret;
	}
	snprintf(c->config, sizeof(c->config),
		 "%s, READ_FIXED, registered file + buffers; %s",
		 a->direct ? "O_DIRECT" : "buffered (async page-cache reads)",
		 desc);
	*state = s;
	return 0;
}

static void ur_teardown(void *state)
{
	struct ur_st *s = state;

	io_uring_queue_exit(&s->ring);
	free(s);
}

static void run_ur(void *state, struct bench_run *r)
{
	struct ur_st *s = state;
	struct mix *m = s->m;
	uint64_t sub = 0, got = 0, t0;
	unsigned int inflight = 0;

	evict(m);
	t0 = bench_start(r);
	while (got < r->ops) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;
		int ret;

		for (; inflight < QD && sub < r->ops; inflight++, sub++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

			io_uring_prep_read_fixed(sqe, 0, buf_of(m, sub), BLOCK,
						 (uint64_t)off_of(m, sub),
						 (int)(sub % QD));
			sqe->flags |= IOSQE_FIXED_FILE;
		}
		ret = io_uring_submit_and_wait(&s->ring, 1);
		if (ret < 0 && ret != -EINTR) {
			bench_fail(r, "io_uring_submit_and_wait: %s",
				   strerror(-ret));
			break;
		}
		io_uring_for_each_cqe(&s->ring, head, cqe)
		{
			if (cqe->res == BLOCK)
				r->done++;
			else
				bench_fail(r, "io_uring read: %d", cqe->res);
			n++;
		}
		io_uring_cq_advance(&s->ring, n);
		inflight -= n;
		got += n;
	}
	bench_stop(r, t0);
}

/* ---- libaio, O_DIRECT --------------------------------------------------- */

struct la_st {
	struct mix *m;
	io_context_t ctx;
	struct iocb cb[QD];
	struct iocb *free_cb[QD];
};

static int la_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct la_st *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->m = ((struct mix_arg *)c->arg)->m;
	if (s->m->dfd < 0) {
		ret = s->m->dfd;
		bench_fail(r, "O_DIRECT in %s: %s", bench_opts.disk_dir,
			   strerror(-ret));
		free(s);
		return ret;
	}
	ret = io_setup(QD, &s->ctx);
	if (ret) {
		bench_fail(r, "io_setup: %s", strerror(-ret));
		free(s);
		return ret;
	}
	*state = s;
	return 0;
}

static void la_teardown(void *state)
{
	struct la_st *s = state;

	io_destroy(s->ctx);
	free(s);
}

static void run_la(void *state, struct bench_run *r)
{
	struct la_st *s = state;
	struct mix *m = s->m;
	struct timespec to = { .tv_sec = BENCH_WAIT_S };
	struct io_event ev[QD];
	uint64_t sub = 0, got = 0, t0;
	unsigned int nfree = QD, i;

	for (i = 0; i < QD; i++)
		s->free_cb[i] = &s->cb[i];
	evict(m);
	t0 = bench_start(r);
	while (got < r->ops) {
		struct iocb *batch[QD];
		int nb = 0, ret;

		for (; nfree && sub < r->ops; sub++) {
			struct iocb *cb = s->free_cb[--nfree];

			io_prep_pread(cb, m->dfd, buf_of(m, sub), BLOCK,
				      off_of(m, sub));
			batch[nb++] = cb;
		}
		if (nb) {
			ret = io_submit(s->ctx, nb, batch);
			if (ret != nb) {
				bench_fail(r, "io_submit: %s",
					   strerror(ret < 0 ? -ret : EAGAIN));
				break;
			}
		}
		ret = io_getevents(s->ctx, 1, QD, ev, &to);
		if (ret <= 0 && ret != -EINTR) {
			bench_fail(r, "io_getevents: %s",
				   ret ? strerror(-ret) : "timed out");
			break;
		}
		for (i = 0; ret > 0 && i < (unsigned int)ret; i++) {
			if (ev[i].res == BLOCK)
				r->done++;
			else
				bench_fail(r, "libaio read: %ld",
					   (long)ev[i].res);
			s->free_cb[nfree++] = ev[i].obj;
			got++;
		}
	}
	bench_stop(r, t0);
}

/* ---- glibc POSIX AIO ---------------------------------------------------- */

static int aio_setup(struct bench_contender *c, void **state,
		     struct bench_run *r)
{
	struct mix *m = ((struct mix_arg *)c->arg)->m;
	struct bench_aio *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	ret = bench_aio_init(s, m->bfd, QD, bench_opts.aio_fds != 0, r);
	if (ret) {
		free(s);
		return ret;
	}
	*state = s;
	return 0;
}

static void aio_teardown(void *state)
{
	bench_aio_fini(state);
	free(state);
}

static int aio_issue_read(struct aiocb *cb, uint64_t n, void *arg)
{
	struct mix *m = arg;

	cb->aio_buf = buf_of(m, n);
	cb->aio_nbytes = BLOCK;
	cb->aio_offset = off_of(m, n);
	return aio_read(cb);
}

static struct mix *aio_mix;

static void run_aio(void *state, struct bench_run *r)
{
	uint64_t t0;

	evict(aio_mix);
	t0 = bench_start(r);
	bench_aio_loop(state, r, aio_issue_read, aio_mix, BLOCK);
	bench_stop(r, t0);
}

/* ---- the workload ------------------------------------------------------- */

void bench_mix(struct bench_results *res)
{
	struct aioinit ai = {
		.aio_threads = QD,
		.aio_num = QD,
		.aio_idle_time = 60,
	};
	uint64_t size = bench_pick(4, 64, 256) << 20;
	struct bench_case bc = {
		.workload = "blocking-mix",
		.name = "random 4 KiB reads, evicted file on disk, QD 32",
		.unit = BENCH_NS_PER_OP,
		.ops_min = bench_pick(128, 256, 512),
		.ops_max = size / BLOCK,
		.ops_granule = QD,
		.inflight = QD,
	};
	struct mix m = { .blocks = size / BLOCK };
	struct mix_arg buffered = { .m = &m }, direct = { .m = &m, true };
	struct bench_contender *c;
	char slcfg[120], path[256];
	uint64_t i, seed = 0x9e3779b97f4a7c15ull;

	m.bfd = bench_tmpfile(bench_opts.disk_dir, "mix", size, 0);
	if (m.bfd < 0) {
		fprintf(stderr, "syslet-bench: blocking-mix: file in %s: %s\n",
			bench_opts.disk_dir, strerror(-m.bfd));
		exit(1);
	}
	/* the unlinked file, opened again without the page cache */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", m.bfd);
	m.dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (m.dfd < 0)
		m.dfd = -errno; /* tmpfs: those contenders are skipped */
	m.perm = calloc(m.blocks, sizeof(*m.perm));
	m.buf = aligned_alloc(BLOCK, QD * BLOCK);
	if (!m.perm || !m.buf) {
		fprintf(stderr, "syslet-bench: blocking-mix: out of memory\n");
		exit(1);
	}
	memset(m.buf, 0, QD * BLOCK);
	posix_fadvise(m.bfd, 0, 0, POSIX_FADV_RANDOM);
	for (i = 0; i < m.blocks; i++)
		m.perm[i] = (uint32_t)i;
	for (i = m.blocks - 1; i > 0; i--) {
		uint64_t j;
		uint32_t t;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		j = seed % (i + 1);
		t = m.perm[i];
		m.perm[i] = m.perm[j];
		m.perm[j] = t;
	}
	aio_mix = &m;
	aio_init(&ai);
	bench_sl_describe(slcfg, sizeof(slcfg));

	c = bench_add(&bc, "libsyslet", true);
	snprintf(c->config, sizeof(c->config),
		 "indirect(SYS_pread64), buffered, ring of %d; %s", QD, slcfg);
	c->arg = &buffered;
	c->setup = sl_setup;
	c->run = run_sl;
	c->teardown = sl_teardown;
	c = bench_add(&bc, "io_uring", false);
	c->arg = &buffered;
	c->setup = ur_setup;
	c->run = run_ur;
	c->teardown = ur_teardown;
	c = bench_add(&bc, "io_uring O_DIRECT", false);
	c->arg = &direct;
	c->setup = ur_setup;
	c->run = run_ur;
	c->teardown = ur_teardown;
	c = bench_add(&bc, "libaio O_DIRECT", false);
	snprintf(c->config, sizeof(c->config),
		 "io_submit batches + io_getevents(1..%d), O_DIRECT", QD);
	c->arg = &direct;
	c->setup = la_setup;
	c->run = run_la;
	c->teardown = la_teardown;
	c = bench_add(&bc, "POSIX AIO", false);
	snprintf(c->config, sizeof(c->config),
		 "aio_read + aio_suspend, buffered; aio_init threads %d, num "
		 "%d; %s",
		 ai.aio_threads, ai.aio_num,
		 bench_opts.aio_fds ? "one fd per slot (glibc serializes an "
				      "fd)" :
				      "one fd");
	c->arg = &buffered;
	c->setup = aio_setup;
	c->run = run_aio;
	c->teardown = aio_teardown;
	bench_case_run(&bc, res);
	bench_sl_note(res);
	if (m.dfd >= 0)
		close(m.dfd);
	close(m.bfd);
	free(m.perm);
	if (!m.buf_kept)
		free(m.buf);
}
