/* SPDX-License-Identifier: MIT */
/*
 * punt-qd1, punt-qd64: fdatasync of a clean tmpfs file. It costs nothing
 * itself and every contender hands it to a thread, so what is measured is
 * hand-off, completion and wake-up. The submitting thread keeps QD calls in
 * flight and reaps whatever has completed each time it wakes.
 *
 * Process-wide settings are made once per workload process: glibc's
 * aio_init() (threads = QD) and UV_THREADPOOL_SIZE.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

#include <syslet/syslet.h>

#include "bench.h"

struct punt_arg {
	int fd;
	unsigned int qd;
	bool aio_per_slot;
};

/* ---- libsyslet ---------------------------------------------------------- */

struct sl_st {
	const struct punt_arg *a;
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
	s->a = c->arg;
	ret = bench_sl_init(&s->sl, s->a->qd, 0, 0);
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
	free(s);
}

static void run_sl(void *state, struct bench_run *r)
{
	struct sl_st *s = state;
	struct indirect_registers regs;
	uint64_t sub = 0, got = 0, t0 = bench_start(r);
	bool stop = false;
	int n;

	FILL_IN(regs, SYS_fdatasync, s->a->fd);
	while (got < r->ops) {
		while (s->sl.inflight < s->a->qd && sub < r->ops && !stop) {
			long res;
			int ret = bench_sl_submit(&s->sl, &regs, sub, &res);

			if (ret < 0) {
				bench_fail(r, "indirect(): %s", strerror(-ret));
				stop = true;
			} else if (ret == 1) {
				got++;
				if (res == 0)
					r->done++;
				bench_lat_tick(r);
			}
			sub += ret >= 0;
		}
		if (!s->sl.inflight) {
			if (stop)
				break;
			continue;
		}
		n = bench_sl_reap(&s->sl, 0, r);
		if (n < 0)
			break;
		got += (uint64_t)n;
		bench_lat_tick(r);
	}
	bench_stop(r, t0);
}

/* ---- io_uring ----------------------------------------------------------- */

struct ur_st {
	const struct punt_arg *a;
	struct io_uring ring;
};

static int ur_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct ur_st *s = calloc(1, sizeof(*s));
	char desc[120];
	int ret;

	if (!s)
		return -ENOMEM;
	s->a = c->arg;
	ret = bench_uring_init(&s->ring, s->a->qd < 8 ? 8 : s->a->qd, desc,
			       sizeof(desc));
	if (ret) {
		bench_fail(r, "io_uring_queue_init: %s", strerror(-ret));
		free(s);
		return ret;
	}
	ret = io_uring_register_files(&s->ring, &s->a->fd, 1);
	if (ret) {
		bench_fail(r, "io_uring_register_files: %s", strerror(-ret));
		io_uring_queue_exit(&s->ring);
		free(s);
		return ret;
	}
	snprintf(c->config, sizeof(c->config),
		 "FSYNC+DATASYNC, IOSQE_ASYNC (io-wq anyway), registered "
		 "file; %s",
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
	uint64_t sub = 0, got = 0, t0 = bench_start(r);
	unsigned int inflight = 0;

	while (got < r->ops) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;
		int ret;

		for (; inflight < s->a->qd && sub < r->ops; inflight++, sub++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

			io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC);
			sqe->flags |= IOSQE_FIXED_FILE | IOSQE_ASYNC;
		}
		ret = io_uring_submit_and_wait(&s->ring, 1);
		if (ret < 0 && ret != -EINTR) {
			bench_fail(r, "io_uring_submit_and_wait: %s",
				   strerror(-ret));
			break;
		}
		io_uring_for_each_cqe(&s->ring, head, cqe)
		{
			if (cqe->res == 0)
				r->done++;
			else
				bench_fail(r, "io_uring fsync: %d", cqe->res);
			n++;
		}
		io_uring_cq_advance(&s->ring, n);
		inflight -= n;
		got += n;
		if (n)
			bench_lat_tick(r);
	}
	bench_stop(r, t0);
}

/* ---- glibc POSIX AIO ---------------------------------------------------- */

static int aio_setup(struct bench_contender *c, void **state,
		     struct bench_run *r)
{
	const struct punt_arg *a = c->arg;
	struct bench_aio *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	ret = bench_aio_init(s, a->fd, a->qd, a->aio_per_slot, r);
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

static int aio_issue_fsync(struct aiocb *cb, uint64_t n, void *arg)
{
	(void)n;
	(void)arg;
	return aio_fsync(O_DSYNC, cb);
}

static void run_aio(void *state, struct bench_run *r)
{
	uint64_t t0 = bench_start(r);

	bench_aio_loop(state, r, aio_issue_fsync, NULL, 0);
	bench_stop(r, t0);
}

/* ---- libuv -------------------------------------------------------------- */

struct uv_st {
	const struct punt_arg *a;
	uv_loop_t loop;
	uv_timer_t watchdog;
	uv_fs_t *req;
	struct bench_run *r;
	uint64_t sub, got;
	bool broken; /* a run timed out: the loop is not reusable */
};

static void uv_done(uv_fs_t *req);

static void uv_issue(struct uv_st *s, uv_fs_t *req)
{
	int ret;

	req->data = s;
	ret = uv_fs_fdatasync(&s->loop, req, s->a->fd, uv_done);
	if (ret) {
		bench_fail(s->r, "uv_fs_fdatasync: %s", uv_strerror(ret));
		uv_stop(&s->loop);
		return;
	}
	s->sub++;
}

static void uv_done(uv_fs_t *req)
{
	struct uv_st *s = req->data;

	if (req->result == 0)
		s->r->done++;
	else
		bench_fail(s->r, "uv_fs_fdatasync: %ld", (long)req->result);
	uv_fs_req_cleanup(req);
	s->got++;
	bench_lat_tick(s->r);
	if (s->sub < s->r->ops)
		uv_issue(s, req);
}

static void uv_expired(uv_timer_t *t)
{
	struct uv_st *s = t->data;

	bench_fail(s->r, "libuv: no completion for %d s", BENCH_WAIT_S);
	s->broken = true;
	uv_stop(&s->loop);
}

static int uv_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct uv_st *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->a = c->arg;
	s->req = calloc(s->a->qd, sizeof(*s->req));
	ret = s->req ? uv_loop_init(&s->loop) : UV_ENOMEM;
	if (ret) {
		bench_fail(r, "uv_loop_init: %s", uv_strerror(ret));
		free(s->req);
		free(s);
		return -ENOMEM;
	}
	uv_timer_init(&s->loop, &s->watchdog);
	s->watchdog.data = s;
	*state = s;
	return 0;
}

static void uv_teardown(void *state)
{
	struct uv_st *s = state;

	if (s->broken)
		return; /* requests may still come back: leave it */
	uv_close((uv_handle_t *)&s->watchdog, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	uv_loop_close(&s->loop);
	free(s->req);
	free(s);
}

static void run_uv(void *state, struct bench_run *r)
{
	struct uv_st *s = state;
	uint64_t t0;
	unsigned int i;

	if (s->broken) {
		bench_fail(r, "libuv loop broken by an earlier timeout");
		return;
	}
	s->r = r;
	s->sub = s->got = 0;
	uv_timer_start(&s->watchdog, uv_expired, BENCH_WAIT_S * 1000, 0);
	uv_unref((uv_handle_t *)&s->watchdog);
	t0 = bench_start(r);
	for (i = 0; i < s->a->qd && s->sub < r->ops; i++)
		uv_issue(s, &s->req[i]);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	bench_stop(r, t0);
	uv_timer_stop(&s->watchdog);
}

/* ---- a thread per call -------------------------------------------------- */

struct tp_st {
	const struct punt_arg *a;
	pthread_attr_t attr;
	pthread_t *th; /* FIFO of threads in flight */
};

static void *tp_call(void *arg)
{
	int fd = (int)(intptr_t)arg;

	return (void *)(intptr_t)(fdatasync(fd) ? -errno : 0);
}

static int tp_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct tp_st *s = calloc(1, sizeof(*s));

	(void)r;
	if (!s)
		return -ENOMEM;
	s->a = c->arg;
	s->th = calloc(s->a->qd, sizeof(*s->th));
	if (!s->th) {
		free(s);
		return -ENOMEM;
	}
	pthread_attr_init(&s->attr);
	pthread_attr_setstacksize(&s->attr, 64 * 1024);
	*state = s;
	return 0;
}

static void tp_teardown(void *state)
{
	struct tp_st *s = state;

	pthread_attr_destroy(&s->attr);
	free(s->th);
	free(s);
}

static void run_tp(void *state, struct bench_run *r)
{
	struct tp_st *s = state;
	uint64_t sub = 0, got = 0, t0 = bench_start(r);
	unsigned int qd = s->a->qd;

	while (got < r->ops) {
		void *ret;
		int e;

		for (; sub - got < qd && sub < r->ops; sub++) {
			e = pthread_create(&s->th[sub % qd], &s->attr, tp_call,
					   (void *)(intptr_t)s->a->fd);
			if (e) {
				bench_fail(r, "pthread_create: %s",
					   strerror(e));
				break;
			}
		}
		if (sub == got)
			break;
		pthread_join(s->th[got % qd], &ret);
		if (ret == NULL)
			r->done++;
		else
			bench_fail(r, "fdatasync: %ld", (long)(intptr_t)ret);
		got++;
		bench_lat_tick(r);
	}
	bench_stop(r, t0);
}

/* ---- the floor: the call itself, on the caller -------------------------- */

static void run_floor(void *state, struct bench_run *r)
{
	const struct punt_arg *a = state;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops; i++) {
		r->done += fdatasync(a->fd) == 0;
		bench_lat_tick(r);
	}
	bench_stop(r, t0);
}

static int floor_setup(struct bench_contender *c, void **state,
		       struct bench_run *r)
{
	(void)r;
	*state = c->arg;
	return 0;
}

/* ---- the workloads ------------------------------------------------------ */

static void punt(struct bench_results *res, const char *wl, unsigned int qd)
{
	struct aioinit ai = {
		.aio_threads = (int)qd,
		.aio_num = (int)qd,
		.aio_idle_time = 60,
	};
	struct bench_case bc = {
		.workload = wl,
		.unit = BENCH_NS_PER_OP,
		.ops_min = qd * bench_pick(16, 64, 256) / (qd > 1 ? 8 : 1),
		.ops_max = 10000000,
		.ops_granule = qd,
		.latency = qd == 1,
		.inflight = qd,
	};
	struct punt_arg a = { .qd = qd };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long uvt = bench_opts.uv_threads ? bench_opts.uv_threads : ncpu;
	struct bench_contender *c;
	char slcfg[120], name[64], num[16];

	a.fd = bench_tmpfile(bench_opts.shm_dir, "punt", 4096, 0);
	if (a.fd < 0)
		a.fd = bench_tmpfile("/tmp", "punt", 4096, 0);
	if (a.fd < 0) {
		fprintf(stderr, "syslet-bench: %s: file in %s: %s\n", wl,
			bench_opts.shm_dir, strerror(-a.fd));
		exit(1);
	}
	/* one fd: glibc then runs them back to back on one thread (faster) */
	a.aio_per_slot = bench_opts.aio_fds == 1;
	aio_init(&ai);
	snprintf(num, sizeof(num), "%ld", uvt);
	setenv("UV_THREADPOOL_SIZE", num, 1);
	bench_sl_describe(slcfg, sizeof(slcfg));
	snprintf(name, sizeof(name), "fdatasync of a clean tmpfs file, QD %u",
		 qd);
	bc.name = name;

	c = bench_add(&bc, "libsyslet", true);
	snprintf(c->config, sizeof(c->config),
		 "indirect(SYS_fdatasync), ring of %u, syslet_ring_wait + "
		 "batch reaping; %s",
		 qd, slcfg);
	c->setup = sl_setup;
	c->run = run_sl;
	c->teardown = sl_teardown;
	c = bench_add(&bc, "io_uring", false);
	c->setup = ur_setup;
	c->run = run_ur;
	c->teardown = ur_teardown;
	c = bench_add(&bc, "POSIX AIO", false);
	snprintf(c->config, sizeof(c->config),
		 "aio_fsync(O_DSYNC) + aio_suspend; aio_init threads %d, num "
		 "%d, idle 60 s; %s",
		 ai.aio_threads, ai.aio_num,
		 a.aio_per_slot ? "one fd per slot" :
				  "one fd (glibc serializes an fd: measured "
				  "best)");
	c->setup = aio_setup;
	c->run = run_aio;
	c->teardown = aio_teardown;
	c = bench_add(&bc, "libuv", false);
	snprintf(c->config, sizeof(c->config),
		 "uv_fs_fdatasync, UV_THREADPOOL_SIZE=%ld (%s)", uvt,
		 bench_opts.uv_threads ? "--uv-threads" :
					 "the CPU count: measured best");
	c->setup = uv_setup;
	c->run = run_uv;
	c->teardown = uv_teardown;
	c = bench_add(&bc, "thread per call", false);
	snprintf(c->config, sizeof(c->config),
		 "pthread_create (64 KiB stack) + pthread_join, FIFO");
	c->setup = tp_setup;
	c->run = run_tp;
	c->teardown = tp_teardown;
	c = bench_add(&bc, "floor: inline call", false);
	snprintf(c->config, sizeof(c->config),
		 "fdatasync(2) on the caller: the work without a hand-off");
	c->setup = floor_setup;
	c->run = run_floor;
	for (unsigned int i = 0; i < bc.n; i++)
		bc.c[i].arg = &a;
	bench_case_run(&bc, res);
	bench_sl_note(res);
	close(a.fd);
}

void bench_punt_qd1(struct bench_results *res)
{
	punt(res, "punt-qd1", 1);
}

void bench_punt_qd64(struct bench_results *res)
{
	punt(res, "punt-qd64", 64);
}
