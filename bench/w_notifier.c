/* SPDX-License-Identifier: MIT */
/*
 * notifier: what a notifier adds to a punted call. fdatasync of a clean
 * tmpfs file (always a worker) at queue depth 16, with no notifier, with
 * one that returns, one that leaves through syslet_notify_exit(), and one
 * that ends in syscall(SYS_exit, 0) as 2007 programs did (the worker is
 * gone; the pool must replace it). The figure is per call, from the first
 * submission until every completion is reaped and every notifier has run.
 *
 * Shared: the notifier count (notifiers add to it, release; the last one
 * wakes the main thread, which reads it, acquire), the run's target (the
 * main thread writes it between runs, notifiers read it before their add)
 * and QD notifier stacks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "bench.h"

#define QD 16
#define STACK (64 * 1024)

enum how {
	NONE,
	RETURNS,
	NOTIFY_EXIT,
	SYS_EXIT,
};

static _Atomic uint32_t ran; /* notifiers run this run */
/*
 * ran at the end of the run. Written by the main thread before the run's
 * first indirect(), whose hand-off to a worker orders it before every
 * notifier of the run. A notifier reads it before its add to ran, never
 * after: once the main thread saw the last add, it starts the next run and
 * writes target again while the notifiers of this one may still be
 * running (the read after the add was a data race, seen by TSan).
 */
static uint32_t target;

static void count(void)
{
	uint32_t want = target;

	/*
	 * Release: the read of target above and the notifier's work happen
	 * before the main thread's acquire load that sees this add.
	 */
	if (atomic_fetch_add_explicit(&ran, 1, memory_order_release) + 1 ==
	    want)
		syscall(SYS_futex, &ran, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void notify_return(void)
{
	count();
}

static void notify_exit(void)
{
	count();
	syslet_notify_exit();
}

static void notify_sys_exit(void)
{
	count();
	syscall(SYS_exit, 0);
}

struct nt_st {
	enum how how;
	int fd;
	char *stacks; /* QD stacks; call n uses stack n % QD */
	struct bench_sl sl;
};

struct nt_arg {
	enum how how;
	int fd;
};

static int nt_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	static void (*const fn[])(void) = {
		[RETURNS] = notify_return,
		[NOTIFY_EXIT] = notify_exit,
		[SYS_EXIT] = notify_sys_exit,
	};
	const struct nt_arg *a = c->arg;
	struct nt_st *s = calloc(1, sizeof(*s));
	uint64_t ip = 0, sp = 0;
	int ret;

	(void)r;
	if (!s)
		return -ENOMEM;
	s->how = a->how;
	s->fd = a->fd;
	s->stacks = aligned_alloc(64, (size_t)QD * STACK);
	if (!s->stacks) {
		free(s);
		return -ENOMEM;
	}
	if (s->how != NONE) {
		ip = (uint64_t)(uintptr_t)fn[s->how];
		sp = (uint64_t)(uintptr_t)(s->stacks + STACK);
	}
	ret = bench_sl_init(&s->sl, QD, ip, sp);
	if (ret) {
		free(s->stacks);
		free(s);
		return ret;
	}
	*state = s;
	return 0;
}

static void nt_teardown(void *state)
{
	struct nt_st *s = state;

	/*
	 * The last notifiers may still be on these stacks, between their
	 * count() and their way out, after the run saw every count: wait
	 * until every call's notifier is done. After a failed run, calls
	 * may never finish: leave the stacks to them.
	 */
	if (!s->sl.inflight && !syslet_drain())
		free(s->stacks);
	bench_sl_fini(&s->sl);
	free(s);
}

static void run_nt(void *state, struct bench_run *r)
{
	struct nt_st *s = state;
	union indirect_params *p = (union indirect_params *)s->sl.params;
	struct timespec to = { .tv_sec = BENCH_WAIT_S };
	struct indirect_registers regs;
	uint64_t sub = 0, got = 0, t0;
	uint32_t seen;
	int n;

	atomic_store_explicit(&ran, 0, memory_order_relaxed);
	target = s->how == NONE ? 0 : (uint32_t)r->ops;
	FILL_IN(regs, SYS_fdatasync, s->fd);
	t0 = bench_start(r);
	while (got < r->ops) {
		while (s->sl.inflight < QD && sub < r->ops) {
			long res;
			int ret;

			/*
			 * Stacks are reused round robin; should a notifier
			 * still be running on one, the library serializes
			 * the notifiers that share an sp.
			 */
			if (s->how != NONE)
				p->syslet.frame.sp =
					(uint64_t)(uintptr_t)(s->stacks +
							      (sub % QD + 1) *
								      STACK);
			ret = bench_sl_submit(&s->sl, &regs, sub, &res);
			if (ret != 0) {
				bench_fail(r, "indirect(): %s",
					   ret < 0 ? strerror(-ret) :
						     "done inline");
				break;
			}
			sub++;
		}
		if (!s->sl.inflight)
			break;
		n = bench_sl_reap(&s->sl, 0, r);
		if (n < 0)
			break;
		got += (uint64_t)n;
	}
	/* acquire: pairs with the notifiers' release adds */
	while ((seen = atomic_load_explicit(&ran, memory_order_acquire)) <
	       target) {
		if (syscall(SYS_futex, &ran, FUTEX_WAIT_PRIVATE, seen, &to,
			    NULL, 0) &&
		    errno == ETIMEDOUT) {
			bench_fail(r, "%u of %u notifiers ran", seen, target);
			r->done = seen < r->done ? seen : r->done;
			break;
		}
	}
	bench_stop(r, t0);
}

void bench_notifier(struct bench_results *res)
{
	static const char *const names[] = {
		[NONE] = "no notifier",
		[RETURNS] = "returns",
		[NOTIFY_EXIT] = "syslet_notify_exit",
		[SYS_EXIT] = "SYS_exit",
	};
	static const char *const what[] = {
		[NONE] = "frame 0/0: completion only (the reference)",
		[RETURNS] = "notifier returns; the worker carries on",
		[NOTIFY_EXIT] = "notifier calls syslet_notify_exit()",
		[SYS_EXIT] = "notifier ends in syscall(SYS_exit, 0) (2007 "
			     "style): the pool replaces the worker",
	};
	static struct nt_arg args[4];
	struct bench_case bc = {
		.workload = "notifier",
		.name = "fdatasync of a clean tmpfs file, QD 16",
		.unit = BENCH_NS_PER_OP,
		.ops_min = bench_pick(32, 256, 1024),
		.ops_max = 1000000,
		.ops_granule = QD,
		/*
		 * A call is pending for the pool until its notifier returns,
		 * but its completion is posted before (the 2007 order) and
		 * the loop submits the next call at once: QD calls and up to
		 * QD notifiers (one per stack) run at the same time.
		 */
		.inflight = 2 * QD,
	};
	char slcfg[120];
	int fd, i;

	fd = bench_tmpfile(bench_opts.shm_dir, "notifier", 4096, 0);
	if (fd < 0)
		fd = bench_tmpfile("/tmp", "notifier", 4096, 0);
	if (fd < 0) {
		fprintf(stderr, "syslet-bench: notifier: file in %s: %s\n",
			bench_opts.shm_dir, strerror(-fd));
		exit(1);
	}
	bench_sl_describe(slcfg, sizeof(slcfg));
	for (i = NONE; i <= SYS_EXIT; i++) {
		struct bench_contender *c = bench_add(&bc, names[i], true);

		args[i] = (struct nt_arg){ (enum how)i, fd };
		snprintf(c->config, sizeof(c->config), "%s%s%s", what[i],
			 i == NONE ? "; " : "", i == NONE ? slcfg : "");
		c->reference = i == NONE;
		c->arg = &args[i];
		c->setup = nt_setup;
		c->run = run_nt;
		c->teardown = nt_teardown;
		/* a worker lost per call: keep the count sane */
		if (i == SYS_EXIT)
			c->max_ops = bench_pick(32, 2000, 5000);
	}
	bench_case_run(&bc, res);
	bench_sl_note(res);
	close(fd);
}
