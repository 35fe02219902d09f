/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the attack tests that run the pool at its cap with
 * workers blocked in reads of empty pipes (test_pool_fairness.c,
 * test_pool_growth.c): the pool's options of a variant, a quick call that
 * makes a shard's worker the spinner, a thread that holds its CPU until a
 * flag is set, a stream of calls kept in flight until a flag is set, the
 * blocked reads released and reaped, and every variant of a case (pinning
 * on and off, the default spin budget and 0, each order of two CPUs) in a
 * forked child under an alarm. Every wait is bounded and fails loudly
 * (CHECK, in the case's child).
 *
 * Shared state: none of the header's own. The flags a stream or a holder
 * polls (seq_cst) are the test's, set by another of its threads; a case's
 * description is read only, from a table the test's main() names.
 */
#ifndef SYSLET_TEST_STREAM_UTIL_H
#define SYSLET_TEST_STREAM_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "shard.h"
#include "test_pool_util.h"

#define BOUND_S 5 /* every wait of a round */
#define QUICK 8 /* quick calls queued behind the blocked ones */
#define STACK (64 * 1024) /* a notifier's stack */

/*
 * A table of cases: each a test's name (for cmocka's output and filter)
 * and a, its description, a @type. CASE_TEST(c, func) is case @c as a
 * cmocka test of @func, which gets &@c.a as its state: one function
 * serves the whole table, each case under its own name.
 */
#define CASES(type)               \
	struct {                  \
		const char *name; \
		type a;           \
	}
#define CASE_TEST(c, func)                         \
	((struct CMUnitTest){ .name = (c).name,    \
			      .test_func = (func), \
			      .initial_state = (void *)&(c).a })

static inline uint64_t deadline(void)
{
	return syslet__now_ns() + BOUND_S * 1000000000ull;
}

/* Spin (keeping the CPU) until @flag is set; false after BOUND_S. */
static inline bool hold_until(_Atomic int *flag)
{
	uint64_t end = deadline();

	while (!atomic_load(flag))
		if (syslet__now_ns() > end)
			return false;
	return true;
}

/* A quick call, so that the shard's worker claims the spinner role. */
static inline void quick_first(struct syslet_ring *r)
{
	struct syslet_completion c;

	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 1));
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 1);
}

/* SYSLET_OPT_PIN, the cap, and the spin budget unless @spin < 0. */
static inline void config_pool(long pin, long spin, long cap)
{
	CHECK(!syslet_config_set(SYSLET_OPT_PIN, pin));
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, cap));
	if (spin >= 0)
		CHECK(!syslet_config_set(SYSLET_OPT_SPIN_NS, spin));
}

/* Release @k reads of @p and reap them from @r. */
static inline void release(struct syslet_ring *r, int p[2], int k)
{
	struct syslet_completion c;
	int i;

	for (i = 0; i < k; i++)
		CHECK(write(p[1], "x", 1) == 1);
	for (i = 0; i < k; i++)
		CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data >= 100 &&
		      c.caller_data < 200 && c.status == 1);
}

/* A stream of calls from the calling thread (see stream()). */
struct stream {
	struct syslet_ring *ring;
	long nr; /* SYS_nanosleep (1 ms each), or SYS_getppid */
	int depth; /* calls in flight */
	int reap_s; /* the bound of each completion */
	int total_s; /* the bound of the whole stream */
	uintptr_t notifier; /* if set: each call's notifier, */
	char *const *stacks; /* call i's on stacks[i] (STACK bytes) */
	long cap; /* the pool's cap, said when a call is late */
	_Atomic int *done; /* the stream ends once it is set */
};

/*
 * Keep @s->depth calls in flight on @s->ring until @s->done is set, then
 * reap those still out; each completion within @s->reap_s (else said on
 * stderr and exit 1), the whole within @s->total_s.
 */
static inline void stream(const struct stream *s)
{
	static const struct timespec ms1 = { 0, 1000000 };
	struct syslet_completion c;
	uint64_t end = syslet__now_ns() + s->total_s * 1000000000ull;
	uintptr_t sp;
	int i, out = 0;

	while (!atomic_load(s->done)) {
		CHECK(syslet__now_ns() < end);
		for (i = out; i < s->depth; i++, out++) {
			sp = s->notifier ? (uintptr_t)s->stacks[i] + STACK : 0;
			CHECK(!submit_ex(s->ring, s->nr, (long)&ms1, 0, 0,
					 300 + i, s->notifier, sp));
		}
		if (reap_within(s->ring, &c, s->reap_s)) {
			fprintf(stderr,
				"a stream's call not done after %d s "
				"(cap %ld)\n",
				s->reap_s, s->cap);
			_exit(1);
		}
		out--;
	}
	for (; out; out--)
		CHECK(!reap_within(s->ring, &c, s->reap_s));
}

/*
 * Run @child(@arg, pin, spin, order) in a forked child under an alarm of
 * @alarm_s seconds for each pinning (on, off), each spin budget (the
 * default: -1, and 0) and each order of two CPUs below @orders (1 or 2);
 * each child must exit 0.
 */
static inline void fork_variants(int (*child)(const void *, long, long, int),
				 const void *arg, int orders,
				 unsigned int alarm_s)
{
	static const long pins[] = { 1, 0 }, spins[] = { -1, 0 };
	int p, s, order;
	pid_t pid;

	for (p = 0; p < 2; p++)
		for (s = 0; s < 2; s++)
			for (order = 0; order < orders; order++) {
				pid = fork_case(alarm_s);
				assert_true(pid >= 0);
				if (!pid)
					_exit(child(arg, pins[p], spins[s],
						    order));
				assert_int_equal(wait_case(pid), 0);
			}
}

#endif /* SYSLET_TEST_STREAM_UTIL_H */
