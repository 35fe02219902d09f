/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: attacks from outside on the pool's growth rules (wake.c's
 * syslet__wake_grow(): no start while a worker of the shard is idle, while
 * a spinner covers it, or while its jobs move; want_step per look) against
 * SPEC 5: "a call must never wait behind blocked calls while the cap
 * allows another worker". Each round blocks up to cap - 1 workers in reads
 * of empty pipes, on one CPU's shard or on both, just after a quick call
 * made the shard's worker the spinner, then queues quick calls behind
 * them; each quick call must complete within BOUND_S (a bug is a wait of
 * seconds or forever, not a slow scheduler). Variants: the other CPU held
 * busy by a program thread while its spinner holds the role; the reaper
 * busy-polling the ring on the CPU of the shard's only free worker; quick
 * calls behind a blocked one while the other shard streams quick calls; a
 * notifier that blocks; pinning on and off; spin budget 0 and the
 * default; caps 2, 3 and 8. Every case runs in a forked child with an
 * alarm; the pipes are then written and every blocked call must complete.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_stream_util.h"

#define ROUNDS 10

struct attack {
	long cap;
	int ka, kb; /* blocked reads on CPU a's shard, on CPU b's */
	bool same; /* b is a: one shard */
	bool hold; /* A keeps CPU a busy until B's quick calls are done */
	bool busy_poll; /* B reaps by polling the ring, no system call */
	bool fifo; /* A holds CPU a as a SCHED_FIFO thread (root) */
	long fifo_bound_ms; /* then the bound of B's quick calls, all */
	bool stream; /* B streams quick calls while A's quick ones wait */
	bool slow; /* B streams 1 ms sleeps: its shard's queue never empties */
};

static const struct attack *at;
static int cpu_a, cpu_b, pa[2], pb[2];
static _Atomic int go, done;
static struct syslet_ring *ring_a, *ring_b;

/* Reap one completion by polling the ring only; -ETIMEDOUT after BOUND_S. */
static int reap_polling(struct syslet_ring *r, struct syslet_completion *c)
{
	uint64_t end = deadline();
	uint32_t tail = r->user_tail;

	while (syslet_ring_head(r) == tail)
		if (syslet__now_ns() > end)
			return -ETIMEDOUT;
	*c = *syslet_ring_slot(r, tail);
	syslet_ring_advance(r, 1);
	return 0;
}

static void block(struct syslet_ring *r, int fd, int k)
{
	static char sink[64];
	int i;

	for (i = 0; i < k; i++)
		CHECK(!submit(r, SYS_read, fd, (long)&sink[i], 1, 100 + i));
}

static void *thread_a(void *arg)
{
	(void)arg;
	CHECK(!pin_self(cpu_a));
	quick_first(ring_a);
	block(ring_a, pa[0], at->ka);
	if (at->fifo) {
		struct sched_param sp = { .sched_priority = 1 };

		CHECK(!pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp));
	}
	atomic_store(&go, 1);
	if (at->hold)
		CHECK(hold_until(&done));
	return NULL;
}

static void *thread_b(void *arg)
{
	struct syslet_completion c;
	int i, ret;

	(void)arg;
	CHECK(!pin_self(cpu_b));
	CHECK(hold_until(&go));
	if (at->same)
		quick_first(ring_b);
	block(ring_b, pb[0], at->kb);
	for (i = 0; i < QUICK; i++)
		CHECK(!submit(ring_b, SYS_getppid, 0, 0, 0, 200 + i));
	uint64_t ms, t0 = syslet__now_ns();

	for (i = 0; i < QUICK; i++) {
		ret = at->busy_poll ? reap_polling(ring_b, &c) :
				      reap_within(ring_b, &c, BOUND_S);
		if (ret) {
			struct syslet_stats st;

			stats(&st);
			fprintf(stderr,
				"quick call %d of %d not done after %d s "
				"(cpu a %d b %d, workers %u, cap %ld, "
				"blocked %d+%d, queued %u)\n",
				i, QUICK, BOUND_S, cpu_a, cpu_b, st.workers_now,
				at->cap, at->ka, at->kb, queued_total(&st));
		}
		CHECK(!ret && c.caller_data >= 200 &&
		      (long)c.status == getppid());
	}
	ms = (syslet__now_ns() - t0) / 1000000;
	if (at->fifo && ms > (uint64_t)at->fifo_bound_ms)
		fprintf(stderr,
			"quick calls on free CPU %d took %llu ms while CPU %d "
			"was held by a SCHED_FIFO thread (cap %ld)\n",
			cpu_b, (unsigned long long)ms, cpu_a, at->cap);
	CHECK(!at->fifo || ms <= (uint64_t)at->fifo_bound_ms);
	atomic_store(&done, 1);
	return NULL;
}

/* A's quick calls behind its blocked ones, while B streams its own. */
static void *stream_a(void *arg)
{
	struct syslet_completion c;
	int i, ret;

	(void)arg;
	CHECK(!pin_self(cpu_a));
	CHECK(hold_until(&go));
	quick_first(ring_a);
	block(ring_a, pa[0], at->ka);
	for (i = 0; i < QUICK; i++)
		CHECK(!submit(ring_a, SYS_getppid, 0, 0, 0, 200 + i));
	for (i = 0; i < QUICK; i++) {
		ret = reap_within(ring_a, &c, BOUND_S);
		if (ret)
			fprintf(stderr,
				"quick call %d not done after %d s while "
				"the other shard streams (cap %ld)\n",
				i, BOUND_S, at->cap);
		CHECK(!ret && c.caller_data >= 200);
	}
	atomic_store(&done, 1);
	return NULL;
}

/* B streams 8 quick calls (1 ms sleeps if slow) until A's are done. */
static void *stream_b(void *arg)
{
	(void)arg;
	CHECK(!pin_self(cpu_b));
	atomic_store(&go, 1);
	stream(&(struct stream){
		.ring = ring_b,
		.nr = at->slow ? SYS_nanosleep : SYS_getppid,
		.depth = 8,
		.reap_s = BOUND_S,
		.total_s = 2 * BOUND_S,
		.cap = at->cap,
		.done = &done,
	});
	return NULL;
}

static void round_once(void)
{
	pthread_t ta, tb;

	atomic_store(&go, 0);
	atomic_store(&done, 0);
	CHECK(!pipe(pa) && !pipe(pb));
	CHECK(!pthread_create(&ta, NULL, at->stream ? stream_a : thread_a,
			      NULL));
	CHECK(!pthread_create(&tb, NULL, at->stream ? stream_b : thread_b,
			      NULL));
	CHECK(!pthread_join(tb, NULL) && !pthread_join(ta, NULL));
	release(ring_a, pa, at->ka);
	if (!at->stream)
		release(ring_b, pb, at->kb);
	close(pa[0]);
	close(pa[1]);
	close(pb[0]);
	close(pb[1]);
}

/* The case @arg in a fork_variants() child. */
static int child(const void *arg, long pin, long spin, int order)
{
	const struct attack *a = arg;
	int i;

	at = a;
	cpu_a = allowed_cpu(order);
	cpu_b = a->same ? cpu_a : allowed_cpu(1 - order);
	ring_a = ring_new(64);
	ring_b = ring_new(64);
	CHECK(ring_a && ring_b);
	config_pool(pin, spin, a->cap);
	for (i = 0; i < ROUNDS; i++)
		round_once();
	CHECK(!syslet_drain());
	return 0;
}

/* Every pinning and spin variant of @a, each CPU order, each in a child. */
static void run_variants(const struct attack *a)
{
	if (ncpus_allowed() < 2)
		skip();
	fork_variants(child, a, 2, 4 * ROUNDS * BOUND_S);
}

/* run_variants() of the case @state, a description in cases[]. */
static void test_variants(void **state)
{
	run_variants(*state);
}

/* test_variants()'s cases, in the order they run. */
static const CASES(struct attack) cases[] = {
	/*
	 * Cap 2: the spinner takes its own shard's blocking read; calls
	 * behind.
	 */
	{ "test_cap2_same_shard", { .cap = 2, .kb = 1, .same = true } },
	/* Cap 2: A's spinner blocks in A's read; B's calls count on it. */
	{ "test_cap2_neighbour_held", { .cap = 2, .ka = 1, .hold = true } },
	/* Cap 3: a blocked call on each shard, the other CPU held busy. */
	{ "test_cap3_both_held", { .cap = 3, .ka = 1, .kb = 1, .hold = true } },
	/* Cap 8: seven blocked calls on both shards, one worker left. */
	{ "test_cap8_both", { .cap = 8, .ka = 3, .kb = 4 } },
	/* Cap 8, held: as above while A keeps its CPU. */
	{ "test_cap8_both_held", { .cap = 8, .ka = 3, .kb = 4, .hold = true } },
	/* Cap 2: the reaper polls on the CPU of the shard's workers. */
	{ "test_cap2_busy_poll_same_cpu",
	  { .cap = 2, .kb = 1, .same = true, .busy_poll = true } },
	/* Cap 3: one shard, two blocked, the reaper polls on that CPU. */
	{ "test_cap3_busy_poll_same_cpu",
	  { .cap = 3, .kb = 2, .same = true, .busy_poll = true } },
	/* Cap 2 and 3: A's one worker blocks while B's shard streams. */
	{ "test_cap2_stream", { .cap = 2, .ka = 1, .stream = true } },
	{ "test_cap3_stream", { .cap = 3, .ka = 2, .stream = true } },
	/*
	 * At the cap, the only free worker serves B's stream of 1 ms sleeps,
	 * whose queue never empties: A's quick calls must still be taken (a
	 * worker that steals only from an empty queue left them there for
	 * ever).
	 */
	{ "test_cap2_stream_slow",
	  { .cap = 2, .ka = 1, .stream = true, .slow = true } },
};

/*
 * Cap 3: A keeps CPU a as a real-time thread once its shard's worker holds
 * the spinner role; B's quick calls on CPU b, which is free, count on that
 * spinner (wake.c's (b)), which cannot run. The bug was: no wake, no want,
 * no growth, so they waited until the kernel's RT throttling let it run
 * (812-954 ms, 50 ms of each second by default; forever with
 * sched_rt_runtime_us -1). Seen with pinning and the default spin. Now the
 * manager watches them (SYSLET__WATCH_NS, 25 ms) and then wakes or starts
 * a worker of B's shard: 0-92 ms per round here. 500 ms: 20 watches.
 */
static void test_cap3_fifo_holder(void **state)
{
	static const struct attack a = {
		.cap = 3, .hold = true, .fifo = true, .fifo_bound_ms = 500
	};

	(void)state;
	if (geteuid())
		skip();
	run_variants(&a);
}

static int notify_pipe[2];

/* A notifier that blocks until the test releases it. */
static void blocking_notifier(void)
{
	char b;

	if (read(notify_pipe[0], &b, 1) != 1)
		abort();
}

/*
 * The spinner of a shard runs a call whose notifier blocks; quick calls
 * then queued on that shard (and on the other) must not wait for it.
 */
static int notifier_child(const void *arg, long pin, long spin, int order)
{
	long cap = *(const long *)arg;
	struct syslet_ring *r = ring_new(64);
	char *stack = malloc(STACK);
	struct syslet_completion c;
	int cpu[2] = { allowed_cpu(order), allowed_cpu(1 - order) };
	int i, n, round;

	CHECK(r && stack && !pipe(notify_pipe));
	config_pool(pin, spin, cap);
	for (round = 0; round < ROUNDS; round++) {
		CHECK(!pin_self(cpu[0]));
		quick_first(r);
		CHECK(!submit_ex(r, SYS_getppid, 0, 0, 0, 50,
				 (uintptr_t)blocking_notifier,
				 (uintptr_t)(stack + STACK)));
		/* The notified call completes before its notifier runs. */
		CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 50);
		for (i = 0; i < QUICK; i++) {
			CHECK(!pin_self(cpu[i % 2]));
			CHECK(!submit(r, SYS_getppid, 0, 0, 0, 200 + i));
		}
		for (i = 0; i < QUICK; i++) {
			n = reap_within(r, &c, BOUND_S);
			if (n)
				fprintf(stderr,
					"quick call %d not done after %d s "
					"behind a blocked notifier (cap %ld)\n",
					i, BOUND_S, cap);
			CHECK(!n && c.caller_data >= 200);
		}
		CHECK(write(notify_pipe[1], "x", 1) == 1);
		CHECK(!syslet_drain());
	}
	return 0;
}

static void notifier_variants(long cap)
{
	if (ncpus_allowed() < 2)
		skip();
	fork_variants(notifier_child, &cap, 2, 4 * ROUNDS * BOUND_S);
}

static void test_cap2_notifier_blocks(void **state)
{
	(void)state;
	notifier_variants(2);
}

static void test_cap3_notifier_blocks(void **state)
{
	(void)state;
	notifier_variants(3);
}

/*
 * "fifo": only test_cap3_fifo_holder, in its own run (a real-time thread,
 * and a bound in time: not under the sanitizers, run.sh). Else the other
 * cases.
 */
int main(int argc, char **argv)
{
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0]) + 2];
	size_t i;
	const struct CMUnitTest known_bug[] = {
		cmocka_unit_test(test_cap3_fifo_holder),
	};

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tests[i] = CASE_TEST(cases[i], test_variants);
	tests[i++] =
		(struct CMUnitTest)cmocka_unit_test(test_cap2_notifier_blocks);
	tests[i] =
		(struct CMUnitTest)cmocka_unit_test(test_cap3_notifier_blocks);
	if (argc == 2 && !strcmp(argv[1], "fifo"))
		return cmocka_run_group_tests(known_bug, NULL, NULL);
	if (argc == 2) /* one test by name (or a cmocka pattern) */
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
