/* SPDX-License-Identifier: MIT */
/*
 * pipes-mix (issue 9, item 6): BLOCKED calls sit blocked on pipes (each a
 * 1-byte read of its own empty pipe) while one thread per CPU, pinned to
 * it, runs a stream of short calls at queue depth 1. The figures are the
 * short calls': wall time per call (all streams together), CPU time per
 * call (every thread, the blocked ones' too) and each call's latency, from
 * its submission until its completion is consumed (p50, p99). A short
 * call that waits behind the blocked ones shows in the p99, or as a lost
 * call after the contender's bounded wait.
 *
 * The short call is fdatasync(2) of a clean tmpfs file, as in punt-*: it
 * always goes to a worker (indirect() classes it as blocking, so no try
 * runs it inline, unlike getppid), yet costs ~110 ns itself, so what it
 * measures is getting a worker. A read of a pipe with data ready would
 * complete inline in indirect()'s try, and a nanosleep(0) is not free.
 *
 * The blocked calls go first; libsyslet's measured part starts once its
 * statistics show no call queued (every blocked one is on a worker).
 * After the streams, a byte written to every pipe completes them; each
 * must return 1. Pools are sized so that the goal ("p99 < 1 ms while the
 * cap allows workers") applies: libsyslet's cap is raised to BLOCKED + 4
 * per CPU if it is lower, libuv's pool has that many threads.
 *
 * Shared: per run, a stream's struct is written by the main thread before
 * pthread_create() and read back after pthread_join() (both order them);
 * the streams start together at a gate (a flag under a mutex, with a
 * condition variable). Nothing else is shared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <syslet/syslet.h>

#include "bench.h"

#define STACK (64 * 1024)

struct pm_arg {
	unsigned int blocked;
	int (*pipes)[2];
	int fd; /* the tmpfs file of the short calls */
	long ncpu;
};

/* Where the streams wait to start together. */
struct gate {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool open;
};

struct stream {
	pthread_t th;
	int cpu;
	uint64_t calls;
	const struct pm_arg *a;
	struct gate *go;
	struct bench_run r; /* this stream's done and first error */
	struct bench_hist hist;
};

/* ---- the frame shared by the contenders ------------------------------- */

static void gate_wait(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->m);
	pthread_mutex_unlock(&g->m);
}

/* Run @fn on one pinned thread per CPU, timed from the gate's opening. */
static void run_streams(const struct pm_arg *a, struct bench_run *r,
			void *(*fn)(void *))
{
	struct stream *st = calloc((size_t)a->ncpu, sizeof(*st));
	struct gate go = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   false };
	unsigned int started = 0, i;
	uint64_t t0;

	if (!st) {
		bench_fail(r, "out of memory");
		return;
	}
	for (i = 0; i < a->ncpu; i++) {
		pthread_attr_t at;
		cpu_set_t set;
		int e;

		st[i].cpu = (int)i;
		st[i].calls = r->ops / (uint64_t)a->ncpu;
		st[i].a = a;
		st[i].go = &go;
		CPU_ZERO(&set);
		CPU_SET(i, &set);
		pthread_attr_init(&at);
		pthread_attr_setaffinity_np(&at, sizeof(set), &set);
		e = pthread_create(&st[i].th, &at, fn, &st[i]);
		pthread_attr_destroy(&at);
		if (e) {
			bench_fail(r, "pthread_create: %s", strerror(e));
			break;
		}
		started++;
	}
	/* the streams that started run even if one did not: r failed */
	t0 = bench_start(r);
	pthread_mutex_lock(&go.m);
	go.open = true;
	pthread_cond_broadcast(&go.cv);
	pthread_mutex_unlock(&go.m);
	for (i = 0; i < started; i++)
		pthread_join(st[i].th, NULL);
	bench_stop(r, t0);
	for (i = 0; i < started; i++) {
		r->done += st[i].r.done;
		if (st[i].r.err[0])
			bench_fail(r, "cpu %u: %s", i, st[i].r.err);
		if (r->lat)
			bench_hist_merge(r->lat, &st[i].hist);
	}
	free(st);
}

/* Release the blocked calls: a byte into every pipe. */
static int release(const struct pm_arg *a, struct bench_run *r)
{
	unsigned int i;

	for (i = 0; i < a->blocked; i++) {
		if (write(a->pipes[i][1], "x", 1) != 1) {
			bench_fail(r, "write to pipe: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ---- libsyslet ---------------------------------------------------------- */

struct sl_st {
	const struct pm_arg *a;
	struct bench_sl blk; /* the blocked calls' ring */
	char *bytes; /* their buffers */
};

static int sl_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct sl_st *s = calloc(1, sizeof(*s));
	uint32_t elements = 1;
	int ret;

	(void)r;
	if (!s)
		return -ENOMEM;
	s->a = c->arg;
	while (elements < s->a->blocked)
		elements <<= 1;
	s->bytes = calloc(s->a->blocked, 1);
	ret = s->bytes ? bench_sl_init(&s->blk, elements, 0, 0) : -ENOMEM;
	if (ret) {
		free(s->bytes);
		free(s);
		return ret;
	}
	*state = s;
	return 0;
}

static void sl_teardown(void *state)
{
	struct sl_st *s = state;

	bench_sl_fini(&s->blk);
	if (!s->blk.inflight)
		free(s->bytes);
	free(s);
}

/* Wait (bounded) until no call is queued: every blocked one has a worker. */
static int sl_settle(struct bench_run *r)
{
	static const struct timespec ms = { 0, 1000000 };
	uint64_t end = bench_now() + BENCH_WAIT_S * 1000000000ull;
	struct syslet_stats st;
	uint64_t queued;
	uint32_t i;

	do {
		if (syslet_stats(&st, sizeof(st)))
			return 0; /* no statistics: start at once */
		for (queued = 0, i = 0; i < st.shards; i++)
			queued += st.queue_depth[i];
		if (!queued)
			return 0;
		nanosleep(&ms, NULL);
	} while (bench_now() < end);
	bench_fail(r, "%llu blocked calls still queued after %d s",
		   (unsigned long long)queued, BENCH_WAIT_S);
	return -1;
}

static void *sl_stream(void *arg)
{
	struct stream *st = arg;
	struct indirect_registers regs;
	struct bench_sl sl;
	uint64_t i;

	if (bench_sl_init(&sl, 2, 0, 0)) {
		bench_fail(&st->r, "out of memory");
		return NULL;
	}
	FILL_IN(regs, SYS_fdatasync, st->a->fd);
	gate_wait(st->go);
	for (i = 0; i < st->calls; i++) {
		uint64_t t = bench_now();
		long res;
		int ret = bench_sl_submit(&sl, &regs, i, &res);

		if (ret < 0) {
			bench_fail(&st->r, "indirect(): %s", strerror(-ret));
			break;
		}
		if (ret == 1)
			st->r.done += res == 0;
		else if (bench_sl_reap(&sl, 0, &st->r) < 0)
			break;
		bench_hist_add(&st->hist, bench_now() - t);
	}
	bench_sl_fini(&sl);
	return NULL;
}

static void run_sl(void *state, struct bench_run *r)
{
	struct sl_st *s = state;
	struct indirect_registers regs;
	struct bench_run blk = { 0 };
	unsigned int i;

	for (i = 0; i < s->a->blocked; i++) {
		long res;
		int ret;

		FILL_IN(regs, SYS_read, s->a->pipes[i][0], &s->bytes[i], 1);
		ret = bench_sl_submit(&s->blk, &regs, i, &res);
		if (ret) {
			bench_fail(r, "blocked read %u: %s", i,
				   ret < 0 ? strerror(-ret) : "done inline");
			return;
		}
	}
	if (!sl_settle(r))
		run_streams(s->a, r, sl_stream);
	if (release(s->a, r))
		return;
	while (s->blk.inflight)
		if (bench_sl_reap(&s->blk, 1, &blk) < 0)
			break;
	if (blk.done != s->a->blocked) {
		bench_fail(r, "blocked reads: %llu of %u returned 1: %s",
			   (unsigned long long)blk.done, s->a->blocked,
			   blk.err);
		r->done = 0;
	}
}

/* ---- libuv -------------------------------------------------------------- */

struct uv_st {
	const struct pm_arg *a;
	uv_loop_t loop;
	uv_timer_t watchdog; /* bounds the wait for the blocked reads */
	bool expired;
	uv_fs_t *req;
	char *bytes;
	uint64_t done, failed; /* this run's blocked reads back */
	bool stuck; /* reads of a failed run may still come back */
};

static void uv_blk_done(uv_fs_t *req)
{
	struct uv_st *s = req->data;

	if (req->result == 1)
		s->done++;
	else
		s->failed++;
	uv_fs_req_cleanup(req);
}

static void uv_blk_expired(uv_timer_t *t)
{
	struct uv_st *s = t->data;

	s->expired = true;
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
	s->req = calloc(s->a->blocked, sizeof(*s->req));
	s->bytes = calloc(s->a->blocked, 1);
	ret = s->req && s->bytes ? uv_loop_init(&s->loop) : UV_ENOMEM;
	if (ret) {
		bench_fail(r, "uv_loop_init: %s", uv_strerror(ret));
		free(s->bytes);
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

	if (s->stuck)
		return; /* reads may still come back: leave it */
	uv_close((uv_handle_t *)&s->watchdog, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	uv_loop_close(&s->loop);
	free(s->bytes);
	free(s->req);
	free(s);
}

struct uv_stream {
	struct stream *st;
	uv_loop_t loop;
	uv_fs_t req;
	uv_timer_t watchdog;
	uint64_t n, t;
};

static void uv_short_done(uv_fs_t *req);

static void uv_short_issue(struct uv_stream *u)
{
	int ret;

	u->t = bench_now();
	ret = uv_fs_fdatasync(&u->loop, &u->req, u->st->a->fd, uv_short_done);
	if (ret) {
		bench_fail(&u->st->r, "uv_fs_fdatasync: %s", uv_strerror(ret));
		uv_stop(&u->loop);
	}
}

static void uv_short_done(uv_fs_t *req)
{
	struct uv_stream *u = req->data;

	if (req->result == 0)
		u->st->r.done++;
	else
		bench_fail(&u->st->r, "uv_fs_fdatasync: %ld",
			   (long)req->result);
	uv_fs_req_cleanup(req);
	bench_hist_add(&u->st->hist, bench_now() - u->t);
	if (++u->n < u->st->calls)
		uv_short_issue(u);
}

static void uv_expired(uv_timer_t *t)
{
	struct uv_stream *u = t->data;

	bench_fail(&u->st->r, "libuv: no completion for %d s", BENCH_WAIT_S);
	uv_stop(&u->loop);
}

static void *uv_stream(void *arg)
{
	struct uv_stream u = { .st = arg };
	bool ok = !uv_loop_init(&u.loop);

	gate_wait(u.st->go);
	if (!ok) {
		bench_fail(&u.st->r, "uv_loop_init failed");
		return NULL;
	}
	u.req.data = &u;
	uv_timer_init(&u.loop, &u.watchdog);
	u.watchdog.data = &u;
	uv_timer_start(&u.watchdog, uv_expired, BENCH_WAIT_S * 1000, 0);
	uv_unref((uv_handle_t *)&u.watchdog);
	if (u.st->calls)
		uv_short_issue(&u);
	uv_run(&u.loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&u.watchdog, NULL);
	uv_run(&u.loop, UV_RUN_DEFAULT);
	/* a timed-out request keeps the loop: leak it rather than crash */
	if (u.n >= u.st->calls)
		uv_loop_close(&u.loop);
	return NULL;
}

static void run_uv(void *state, struct bench_run *r)
{
	struct uv_st *s = state;
	unsigned int i;

	if (s->stuck) {
		bench_fail(r, "libuv: an earlier run left reads behind");
		return;
	}
	s->stuck = true;
	for (i = 0; i < s->a->blocked; i++) {
		uv_buf_t b = uv_buf_init(&s->bytes[i], 1);
		int ret;

		s->req[i].data = s;
		ret = uv_fs_read(&s->loop, &s->req[i], s->a->pipes[i][0], &b, 1,
				 -1, uv_blk_done);
		if (ret) {
			/* the reads queued so far stay blocked: stuck */
			bench_fail(r, "uv_fs_read: %s", uv_strerror(ret));
			return;
		}
	}
	run_streams(s->a, r, uv_stream);
	if (release(s->a, r))
		return;
	s->expired = false;
	uv_timer_start(&s->watchdog, uv_blk_expired, BENCH_WAIT_S * 1000, 0);
	while (s->done + s->failed < s->a->blocked && !s->expired)
		uv_run(&s->loop, UV_RUN_ONCE);
	uv_timer_stop(&s->watchdog);
	if (s->done != s->a->blocked) {
		bench_fail(r, "libuv blocked reads: %llu of %u returned 1",
			   (unsigned long long)s->done, s->a->blocked);
		r->done = 0;
	}
	s->stuck = s->done + s->failed < s->a->blocked;
	s->done = s->failed = 0;
}

/* ---- a thread per call -------------------------------------------------- */

struct tp_st {
	const struct pm_arg *a;
	pthread_t *th;
};

static void *tp_read(void *arg)
{
	char c;

	return (void *)(intptr_t)(read((int)(intptr_t)arg, &c, 1) == 1);
}

static void *tp_sync(void *arg)
{
	return (void *)(intptr_t)(fdatasync((int)(intptr_t)arg) == 0);
}

static int tp_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct tp_st *s = calloc(1, sizeof(*s));

	(void)r;
	if (!s)
		return -ENOMEM;
	s->a = c->arg;
	s->th = calloc(s->a->blocked, sizeof(*s->th));
	if (!s->th) {
		free(s);
		return -ENOMEM;
	}
	*state = s;
	return 0;
}

static void tp_teardown(void *state)
{
	struct tp_st *s = state;

	free(s->th);
	free(s);
}

static int tp_start(pthread_t *t, void *(*fn)(void *), int fd)
{
	pthread_attr_t at;
	int e;

	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, STACK);
	e = pthread_create(t, &at, fn, (void *)(intptr_t)fd);
	pthread_attr_destroy(&at);
	return e;
}

static void *tp_stream(void *arg)
{
	struct stream *st = arg;
	uint64_t i;

	gate_wait(st->go);
	for (i = 0; i < st->calls; i++) {
		uint64_t t = bench_now();
		pthread_t th;
		void *ok;
		int e = tp_start(&th, tp_sync, st->a->fd);

		if (e) {
			bench_fail(&st->r, "pthread_create: %s", strerror(e));
			break;
		}
		pthread_join(th, &ok);
		st->r.done += ok != NULL;
		bench_hist_add(&st->hist, bench_now() - t);
	}
	return NULL;
}

static void run_tp(void *state, struct bench_run *r)
{
	struct tp_st *s = state;
	unsigned int i, n, ok = 0;

	for (n = 0; n < s->a->blocked; n++) {
		int e = tp_start(&s->th[n], tp_read, s->a->pipes[n][0]);

		if (e) {
			bench_fail(r, "pthread_create: %s", strerror(e));
			break;
		}
	}
	if (n == s->a->blocked)
		run_streams(s->a, r, tp_stream);
	/* a failed write would leave readers blocked: abort is the way out */
	if (release(s->a, r))
		abort();
	for (i = 0; i < n; i++) {
		void *ret;

		pthread_join(s->th[i], &ret);
		ok += ret != NULL;
	}
	if (ok != s->a->blocked) {
		bench_fail(r, "blocked reads: %u of %u returned 1", ok,
			   s->a->blocked);
		r->done = 0;
	}
}

/* ---- the workload ------------------------------------------------------- */

/* Room for @fds more descriptors: raise the soft limit if need be. */
static int want_fds(unsigned int fds)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur >= fds + 64)
		return 0;
	if (rl.rlim_max < fds + 64)
		return -EMFILE;
	rl.rlim_cur = fds + 64;
	return setrlimit(RLIMIT_NOFILE, &rl) ? -errno : 0;
}

void bench_pipes_mix(struct bench_results *res)
{
	static struct pm_arg a;
	struct bench_case bc = {
		.workload = "pipes-mix",
		.unit = BENCH_NS_PER_OP,
		.latency = true,
	};
	struct bench_contender *c;
	char slcfg[120], name[64], num[24];
	long cap, want;
	unsigned int i;
	int ret;

	a.ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (a.ncpu < 1)
		a.ncpu = 1;
	a.blocked = (unsigned int)bench_pick(100, 1000, 1000);
	want = (long)a.blocked + 4 * a.ncpu;
	bc.ops_granule = (uint64_t)a.ncpu;
	bc.ops_min = (uint64_t)a.ncpu * bench_pick(50, 500, 2000);
	bc.ops_max = (uint64_t)a.ncpu * 200000;
	bc.inflight = a.blocked + (unsigned int)a.ncpu;
	a.pipes = calloc(a.blocked, sizeof(*a.pipes));
	ret = a.pipes ? want_fds(2 * a.blocked) : -ENOMEM;
	for (i = 0; !ret && i < a.blocked; i++)
		ret = pipe2(a.pipes[i], O_CLOEXEC) ? -errno : 0;
	a.fd = ret ? ret : bench_tmpfile(bench_opts.shm_dir, "pipes", 4096, 0);
	if (a.fd < 0)
		a.fd = bench_tmpfile("/tmp", "pipes", 4096, 0);
	if (a.fd < 0) {
		fprintf(stderr, "syslet-bench: pipes-mix: %s\n",
			strerror(-a.fd));
		exit(1);
	}
	/* libuv's pool is made at its first use, in this process */
	snprintf(num, sizeof(num), "%ld", want < 1024 ? want : 1024);
	setenv("UV_THREADPOOL_SIZE", num, 1);
	cap = syslet_config_get(SYSLET_OPT_MAX_WORKERS);
	if (cap >= 0 && cap < want)
		syslet_config_set(SYSLET_OPT_MAX_WORKERS, want);
	bench_sl_describe(slcfg, sizeof(slcfg));
	snprintf(name, sizeof(name),
		 "short calls, %ld streams, %u blocked on pipes", a.ncpu,
		 a.blocked);
	bc.name = name;

	c = bench_add(&bc, "libsyslet", true);
	snprintf(c->config, sizeof(c->config),
		 "read of empty pipes, fdatasync at QD 1 per CPU; %.*s%s", 80,
		 slcfg, cap >= 0 && cap < want ? " (cap raised)" : "");
	c->setup = sl_setup;
	c->run = run_sl;
	c->teardown = sl_teardown;
	c = bench_add(&bc, "libuv", false);
	snprintf(c->config, sizeof(c->config),
		 "uv_fs_read of the pipes on one loop, uv_fs_fdatasync on a "
		 "loop per CPU; UV_THREADPOOL_SIZE=%s",
		 num);
	c->setup = uv_setup;
	c->run = run_uv;
	c->teardown = uv_teardown;
	c = bench_add(&bc, "thread per call", false);
	snprintf(c->config, sizeof(c->config),
		 "a thread blocked in read(2) per pipe, pthread_create + join "
		 "per short call (64 KiB stacks)");
	c->setup = tp_setup;
	c->run = run_tp;
	c->teardown = tp_teardown;
	for (i = 0; i < bc.n; i++)
		bc.c[i].arg = &a;
	bench_case_run(&bc, res);
	bench_sl_note(res);
}
