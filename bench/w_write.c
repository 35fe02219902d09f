/* SPDX-License-Identifier: MIT */
/*
 * try-fs: what the try path does per file system. A cached 4 KiB pread of
 * a tmpfs file through indirect() (inline: memory-backed files cannot wait
 * for a device) against plain pread; a buffered 4 KiB pwrite on the disk
 * directory through indirect() (ext4 answers EOPNOTSUPP to RWF_NOWAIT
 * writes: a worker does it, as io_uring's io-wq does) against plain pwrite,
 * so the price of that punt is visible. Single-threaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "bench.h"

#define BLOCK 4096
#define FILE_BLOCKS 256

struct fs {
	int fd;
	char *buf;
	struct bench_sl sl;
};

static off_t off_of(uint64_t i)
{
	return (off_t)((i % FILE_BLOCKS) * BLOCK);
}

static int fs_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct fs *s = calloc(1, sizeof(*s));
	int ret;

	(void)r;
	if (!s)
		return -ENOMEM;
	s->fd = *(int *)c->arg;
	s->buf = aligned_alloc(BLOCK, BLOCK);
	if (!s->buf) {
		free(s);
		return -ENOMEM;
	}
	memset(s->buf, 'w', BLOCK);
	ret = bench_sl_init(&s->sl, 64, 0, 0);
	if (ret) {
		free(s->buf);
		free(s);
		return ret;
	}
	*state = s;
	return 0;
}

static void fs_teardown(void *state)
{
	struct fs *s = state;

	bench_sl_fini(&s->sl);
	/* Transfers still pending after a failed wait use s->buf. */
	if (s->sl.inflight)
		return;
	free(s->buf);
	free(s);
}

static void run_pread(void *state, struct bench_run *r)
{
	struct fs *s = state;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops; i++)
		if (pread(s->fd, s->buf, BLOCK, off_of(i)) == BLOCK)
			r->done++;
	bench_stop(r, t0);
}

static void run_pwrite(void *state, struct bench_run *r)
{
	struct fs *s = state;
	uint64_t i, t0 = bench_start(r);

	for (i = 0; i < r->ops; i++)
		if (pwrite(s->fd, s->buf, BLOCK, off_of(i)) == BLOCK)
			r->done++;
	bench_stop(r, t0);
}

/* @nr(fd, buf, BLOCK, off) through indirect(), waited for when pending. */
static void run_sl(struct fs *s, long nr, struct bench_run *r)
{
	struct indirect_registers regs;
	uint64_t i, t0 = bench_start(r);
	long res;
	int ret;

	for (i = 0; i < r->ops && !r->err[0]; i++) {
		FILL_IN(regs, nr, s->fd, s->buf, BLOCK, off_of(i));
		ret = bench_sl_submit(&s->sl, &regs, 0, &res);
		if (ret == 1 && res == BLOCK)
			r->done++;
		else if (ret == 0)
			bench_sl_reap(&s->sl, BLOCK, r);
		else
			bench_fail(r, "indirect(): %ld / %d", res, ret);
	}
	bench_stop(r, t0);
}

static void run_sl_pread(void *state, struct bench_run *r)
{
	run_sl(state, SYS_pread64, r);
}

static void run_sl_pwrite(void *state, struct bench_run *r)
{
	run_sl(state, SYS_pwrite64, r);
}

static void one_case(struct bench_results *res, const char *name, int fd,
		     bool wr)
{
	struct bench_case bc = {
		.workload = "try-fs",
		.unit = BENCH_NS_PER_OP,
		.ops_min = bench_pick(32, 200, 1000),
		.ops_max = 5000000,
		.name = name,
	};
	struct bench_contender *c;

	c = bench_add(&bc, "libsyslet", true);
	snprintf(c->config, sizeof(c->config), "indirect(SYS_%s) %s",
		 wr ? "pwrite64" : "pread64",
		 wr ? "(RWF_NOWAIT refused: a worker)" : "(inline)");
	c->arg = &fd;
	c->setup = fs_setup;
	c->run = wr ? run_sl_pwrite : run_sl_pread;
	c->teardown = fs_teardown;
	c = bench_add(&bc, wr ? "pwrite" : "pread", false);
	snprintf(c->config, sizeof(c->config), "plain %s(2)",
		 wr ? "pwrite" : "pread");
	c->arg = &fd;
	c->setup = fs_setup;
	c->run = wr ? run_pwrite : run_pread;
	c->teardown = fs_teardown;
	bench_case_run(&bc, res);
	bench_sl_note(res);
}

void bench_try_fs(struct bench_results *res)
{
	char *buf = malloc(BLOCK);
	int fd, i;

	fd = bench_tmpfile(bench_opts.shm_dir, "tryfs", FILE_BLOCKS * BLOCK, 0);
	if (fd < 0 || !buf) {
		fprintf(stderr, "syslet-bench: try-fs: file in %s: %s\n",
			bench_opts.shm_dir, strerror(fd < 0 ? -fd : ENOMEM));
		exit(1);
	}
	one_case(res, "pread 4 KiB, tmpfs", fd, false);
	close(fd);
	fd = bench_tmpfile(bench_opts.disk_dir, "tryfs", FILE_BLOCKS * BLOCK,
			   0);
	if (fd < 0) {
		fprintf(stderr, "syslet-bench: try-fs: file in %s: %s\n",
			bench_opts.disk_dir, strerror(-fd));
		exit(1);
	}
	for (i = 0; i < FILE_BLOCKS; i++)
		if (pread(fd, buf, BLOCK, (off_t)i * BLOCK) != BLOCK)
			exit(1);
	one_case(res, "pwrite 4 KiB, buffered, disk dir", fd, true);
	close(fd);
	free(buf);
}
