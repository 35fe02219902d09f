/* SPDX-License-Identifier: MIT */
/*
 * inline: calls that never need a worker. A cached 4 KiB pread through
 * indirect() against plain pread, preadv2(RWF_NOWAIT) (the floor of a
 * read that must not block) and io_uring; getpid through indirect()
 * against the raw system call. Single-threaded.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#define FILE_BLOCKS 256

struct rd {
	int fd;
	char *buf;
	pid_t pid;
	struct bench_sl sl;
	struct io_uring ring;
};

static int rd_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct rd *s = calloc(1, sizeof(*s));

	(void)r;
	if (!s)
		return -ENOMEM;
	s->fd = *(int *)c->arg;
	s->pid = getpid();
	s->buf = aligned_alloc(BLOCK, BLOCK);
	if (!s->buf) {
		free(s);
		return -ENOMEM;
	}
	memset(s->buf, 0, BLOCK);
	*state = s;
	return 0;
}

static void rd_teardown(void *state)
{
	struct rd *s = state;

	free(s->buf);
	free(s);
}

static off_t off_of(uint64_t i)
{
	return (off_t)((i % FILE_BLOCKS) * BLOCK);
}

static void run_pread(void *state, struct bench_run *r)
{
	struct rd *s = state;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops; i++)
		if (pread(s->fd, s->buf, BLOCK, off_of(i)) == BLOCK)
			r->done++;
	bench_stop(r, t0);
}

static void run_preadv2(void *state, struct bench_run *r)
{
	struct rd *s = state;
	struct iovec iov = { .iov_base = s->buf, .iov_len = BLOCK };
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops; i++)
		if (preadv2(s->fd, &iov, 1, off_of(i), RWF_NOWAIT) == BLOCK)
			r->done++;
	bench_stop(r, t0);
	if (r->done < r->ops)
		bench_fail(r, "preadv2(RWF_NOWAIT) did not read a cached "
			      "block");
}

/* One call through indirect(); a pending one is waited for at once. */
static void sl_one(struct rd *s, struct indirect_registers *regs, long expect,
		   struct bench_run *r)
{
	long res;
	int ret = bench_sl_submit(&s->sl, regs, 0, &res);

	if (ret == 1) {
		if (res == expect)
			r->done++;
		else
			bench_fail(r, "indirect() = %ld, expected %ld", res,
				   expect);
	} else if (ret == 0) {
		bench_sl_reap(&s->sl, expect, r);
	} else {
		bench_fail(r, "indirect(): %s", strerror(-ret));
	}
}

static int sl_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct rd *s;
	int ret = rd_setup(c, state, r);

	if (ret)
		return ret;
	s = *state;
	ret = bench_sl_init(&s->sl, 64, 0, 0);
	if (ret)
		rd_teardown(s);
	return ret;
}

static void sl_teardown(void *state)
{
	struct rd *s = state;

	bench_sl_fini(&s->sl);
	/* Reads still pending after a failed wait write into s->buf. */
	if (!s->sl.inflight)
		rd_teardown(s);
}

static void run_sl_pread(void *state, struct bench_run *r)
{
	struct rd *s = state;
	struct indirect_registers regs;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops && !r->err[0]; i++) {
		FILL_IN(regs, SYS_pread64, s->fd, s->buf, BLOCK, off_of(i));
		sl_one(s, &regs, BLOCK, r);
	}
	bench_stop(r, t0);
}

static int uring_setup(struct bench_contender *c, void **state,
		       struct bench_run *r)
{
	struct iovec iov;
	struct rd *s;
	char desc[120];
	int ret = rd_setup(c, state, r);

	if (ret)
		return ret;
	s = *state;
	ret = bench_uring_init(&s->ring, 8, desc, sizeof(desc));
	if (ret) {
		bench_fail(r, "io_uring_queue_init: %s", strerror(-ret));
		rd_teardown(s);
		return ret;
	}
	iov.iov_base = s->buf;
	iov.iov_len = BLOCK;
	ret = io_uring_register_files(&s->ring, &s->fd, 1);
	if (!ret)
		ret = io_uring_register_buffers(&s->ring, &iov, 1);
	if (ret) {
		bench_fail(r, "io_uring_register: %s", strerror(-ret));
		io_uring_queue_exit(&s->ring);
		rd_teardown(s);
		return ret;
	}
	snprintf(c->config, sizeof(c->config),
		 "READ_FIXED, registered file + buffer, submit_and_wait(1) "
		 "per read; %s",
		 desc);
	return 0;
}

static void uring_teardown(void *state)
{
	struct rd *s = state;

	io_uring_queue_exit(&s->ring);
	rd_teardown(s);
}

static void run_uring(void *state, struct bench_run *r)
{
	struct rd *s = state;
	struct io_uring_cqe *cqe;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		int ret;

		io_uring_prep_read_fixed(sqe, 0, s->buf, BLOCK, off_of(i), 0);
		sqe->flags |= IOSQE_FIXED_FILE;
		ret = io_uring_submit_and_wait(&s->ring, 1);
		if (ret < 0 || io_uring_peek_cqe(&s->ring, &cqe)) {
			bench_fail(r, "io_uring_submit_and_wait: %s",
				   strerror(ret < 0 ? -ret : EIO));
			break;
		}
		if (cqe->res == BLOCK)
			r->done++;
		else
			bench_fail(r, "io_uring read: %d", cqe->res);
		io_uring_cqe_seen(&s->ring, cqe);
	}
	bench_stop(r, t0);
}

static void run_getpid(void *state, struct bench_run *r)
{
	struct rd *s = state;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops; i++)
		if (syscall(SYS_getpid) == s->pid)
			r->done++;
	bench_stop(r, t0);
}

static void run_sl_getpid(void *state, struct bench_run *r)
{
	struct rd *s = state;
	struct indirect_registers regs;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops && !r->err[0]; i++) {
		FILL_IN(regs, SYS_getpid);
		sl_one(s, &regs, s->pid, r);
	}
	bench_stop(r, t0);
}

void bench_inline(struct bench_results *res)
{
	struct bench_case bc = {
		.workload = "inline",
		.unit = BENCH_NS_PER_OP,
		.ops_min = bench_pick(32, 200, 1000),
		.ops_max = 5000000,
	};
	struct bench_contender *c;
	char slcfg[120];
	char *buf;
	int fd, i;

	fd = bench_tmpfile(bench_opts.disk_dir, "inline", FILE_BLOCKS * BLOCK,
			   0);
	if (fd < 0) {
		fprintf(stderr, "syslet-bench: inline: file in %s: %s\n",
			bench_opts.disk_dir, strerror(-fd));
		exit(1);
	}
	/* bring every block into the page cache */
	buf = malloc(BLOCK);
	for (i = 0; buf && i < FILE_BLOCKS; i++)
		if (pread(fd, buf, BLOCK, (off_t)i * BLOCK) != BLOCK)
			exit(1);
	free(buf);
	bench_sl_describe(slcfg, sizeof(slcfg));

	bc.name = "pread 4 KiB, cached (ext4 page cache)";
	c = bench_add(&bc, "libsyslet", true);
	snprintf(c->config, sizeof(c->config),
		 "indirect(SYS_pread64) with a ring of 64; %s", slcfg);
	c->arg = &fd;
	c->setup = sl_setup;
	c->run = run_sl_pread;
	c->teardown = sl_teardown;
	c = bench_add(&bc, "pread", false);
	snprintf(c->config, sizeof(c->config), "plain pread(2)");
	c->arg = &fd;
	c->setup = rd_setup;
	c->run = run_pread;
	c->teardown = rd_teardown;
	c = bench_add(&bc, "preadv2 RWF_NOWAIT", false);
	snprintf(c->config, sizeof(c->config),
		 "preadv2(RWF_NOWAIT): the floor of a non-blocking read");
	c->arg = &fd;
	c->setup = rd_setup;
	c->run = run_preadv2;
	c->teardown = rd_teardown;
	c = bench_add(&bc, "io_uring", false);
	c->arg = &fd;
	c->setup = uring_setup;
	c->run = run_uring;
	c->teardown = uring_teardown;
	bench_case_run(&bc, res);
	bench_sl_note(res);

	memset(bc.c, 0, sizeof(bc.c));
	bc.n = 0;
	bc.name = "getpid";
	c = bench_add(&bc, "libsyslet", true);
	snprintf(c->config, sizeof(c->config),
		 "indirect(SYS_getpid) with a ring of 64");
	c->arg = &fd;
	c->setup = sl_setup;
	c->run = run_sl_getpid;
	c->teardown = sl_teardown;
	c = bench_add(&bc, "raw syscall", false);
	snprintf(c->config, sizeof(c->config),
		 "syscall(SYS_getpid): the floor");
	c->arg = &fd;
	c->setup = rd_setup;
	c->run = run_getpid;
	c->teardown = rd_teardown;
	bench_case_run(&bc, res);
	bench_sl_note(res);
	close(fd);
}
