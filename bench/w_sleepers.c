/* SPDX-License-Identifier: MIT */
/*
 * sleepers: 10,000 calls that each block for 10 ms, all submitted at once;
 * the figure is the wall time from the first submission to the last
 * completion. 10 ms is the limit; a pool too small to hold them all, or
 * too slow to grow, shows as a multiple of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <syslet/syslet.h>

#include "bench.h"

static const struct timespec nap = { .tv_nsec = 10 * 1000 * 1000 };

/* ---- libsyslet ---------------------------------------------------------- */

static int sl_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct bench_sl *s = calloc(1, sizeof(*s));
	uint64_t calls = *(uint64_t *)c->arg;
	uint32_t elements = 1;
	int ret;

	(void)r;
	if (!s)
		return -ENOMEM;
	while (elements < calls)
		elements <<= 1;
	ret = bench_sl_init(s, elements, 0, 0);
	if (ret) {
		free(s);
		return ret;
	}
	*state = s;
	return 0;
}

static void sl_teardown(void *state)
{
	bench_sl_fini(state);
	free(state);
}

static void run_sl(void *state, struct bench_run *r)
{
	struct bench_sl *s = state;
	struct indirect_registers regs;
	uint64_t i, got = 0, t0 = bench_start(r);
	int n;

	FILL_IN(regs, SYS_nanosleep, &nap, NULL);
	for (i = 0; i < r->ops; i++) {
		long res;
		int ret = bench_sl_submit(s, &regs, i, &res);

		if (ret < 0) {
			bench_fail(r, "indirect(): %s", strerror(-ret));
			break;
		}
		if (ret == 1) {
			got++;
			r->done += res == 0;
		}
	}
	while (s->inflight) {
		n = bench_sl_reap(s, 0, r);
		if (n < 0)
			break;
		got += (uint64_t)n;
	}
	bench_stop(r, t0);
}

/* ---- a thread per call -------------------------------------------------- */

struct tp_st {
	pthread_attr_t attr;
	pthread_t *th;
};

static void *tp_call(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)(nanosleep(&nap, NULL) ? -errno : 0);
}

static int tp_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct tp_st *s = calloc(1, sizeof(*s));

	(void)r;
	if (!s)
		return -ENOMEM;
	s->th = calloc(*(uint64_t *)c->arg, sizeof(*s->th));
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
	uint64_t i, n, t0 = bench_start(r);

	for (n = 0; n < r->ops; n++) {
		int e = pthread_create(&s->th[n], &s->attr, tp_call, NULL);

		if (e) {
			bench_fail(r, "pthread_create: %s", strerror(e));
			break;
		}
	}
	for (i = 0; i < n; i++) {
		void *ret;

		pthread_join(s->th[i], &ret);
		r->done += ret == NULL;
	}
	bench_stop(r, t0);
}

/* ---- libuv uv_queue_work ------------------------------------------------ */

struct uv_st {
	uv_loop_t loop;
	uv_timer_t watchdog;
	uv_work_t *w;
	struct bench_run *r;
	bool broken;
};

static void uv_nap(uv_work_t *w)
{
	(void)w;
	nanosleep(&nap, NULL);
}

static void uv_after(uv_work_t *w, int status)
{
	struct uv_st *s = w->data;

	if (status == 0)
		s->r->done++;
	else
		bench_fail(s->r, "uv_queue_work: %s", uv_strerror(status));
}

static void uv_expired(uv_timer_t *t)
{
	struct uv_st *s = t->data;

	bench_fail(s->r, "libuv: not done after %d s", BENCH_WAIT_S);
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
	s->w = calloc(*(uint64_t *)c->arg, sizeof(*s->w));
	ret = s->w ? uv_loop_init(&s->loop) : UV_ENOMEM;
	if (ret) {
		bench_fail(r, "uv_loop_init: %s", uv_strerror(ret));
		free(s->w);
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
		return; /* work may still come back: leave it */
	uv_close((uv_handle_t *)&s->watchdog, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	uv_loop_close(&s->loop);
	free(s->w);
	free(s);
}

static void run_uv(void *state, struct bench_run *r)
{
	struct uv_st *s = state;
	uint64_t i, t0;

	if (s->broken) {
		bench_fail(r, "libuv loop broken by an earlier timeout");
		return;
	}
	s->r = r;
	uv_timer_start(&s->watchdog, uv_expired, BENCH_WAIT_S * 1000, 0);
	uv_unref((uv_handle_t *)&s->watchdog);
	t0 = bench_start(r);
	for (i = 0; i < r->ops; i++) {
		int ret;

		s->w[i].data = s;
		ret = uv_queue_work(&s->loop, &s->w[i], uv_nap, uv_after);
		if (ret) {
			bench_fail(r, "uv_queue_work: %s", uv_strerror(ret));
			break;
		}
	}
	uv_run(&s->loop, UV_RUN_DEFAULT);
	bench_stop(r, t0);
	uv_timer_stop(&s->watchdog);
}

/* ---- the limit: one 10 ms sleep ----------------------------------------- */

static void run_limit(void *state, struct bench_run *r)
{
	uint64_t t0 = bench_start(r);

	(void)state;
	r->done = nanosleep(&nap, NULL) ? 0 : r->ops;
	bench_stop(r, t0);
}

void bench_sleepers(struct bench_results *res)
{
	static uint64_t calls;
	struct bench_case bc = {
		.workload = "sleepers",
		.unit = BENCH_MS_PER_BATCH,
	};
	struct bench_contender *c;
	char slcfg[120], name[64], uvt[16];

	calls = bench_pick(200, 10000, 10000);
	bc.ops_min = bc.ops_max = calls;
	bc.inflight = (unsigned int)calls;
	/*
	 * libuv's largest pool (its threads are all made at the first use,
	 * and libuv aborts if one cannot be): no larger than the batch.
	 */
	snprintf(uvt, sizeof(uvt), "%llu",
		 (unsigned long long)(calls < 1024 ? calls : 1024));
	setenv("UV_THREADPOOL_SIZE", uvt, 1);
	bench_sl_describe(slcfg, sizeof(slcfg));
	snprintf(name, sizeof(name), "%llu x nanosleep(10 ms) at once",
		 (unsigned long long)calls);
	bc.name = name;

	c = bench_add(&bc, "libsyslet", true);
	snprintf(c->config, sizeof(c->config),
		 "indirect(SYS_nanosleep), one ring of %llu+; %s",
		 (unsigned long long)calls, slcfg);
	c->setup = sl_setup;
	c->run = run_sl;
	c->teardown = sl_teardown;
	c = bench_add(&bc, "thread per call", false);
	snprintf(c->config, sizeof(c->config),
		 "pthread_create (64 KiB stack) each, then join all");
	c->setup = tp_setup;
	c->run = run_tp;
	c->teardown = tp_teardown;
	c = bench_add(&bc, "libuv", false);
	snprintf(c->config, sizeof(c->config),
		 "uv_queue_work, UV_THREADPOOL_SIZE=%s (libuv's maximum "
		 "is 1024)",
		 uvt);
	c->setup = uv_setup;
	c->run = run_uv;
	c->teardown = uv_teardown;
	c = bench_add(&bc, "limit", false);
	snprintf(c->config, sizeof(c->config), "one nanosleep(10 ms)");
	c->run = run_limit;
	c->max_ops = 1;
	for (unsigned int i = 0; i < bc.n; i++)
		bc.c[i].arg = &calls;
	bench_case_run(&bc, res);
	bench_sl_note(res);
}
