/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a shard marked held (wake.c's hold(): a watch found the
 * calls it covered untaken) that is not held. The mark is a hint: a watch
 * marks every covering shard with a sleeper, including a healthy one that
 * was simply never woken, and the mark stays until one of its workers
 * runs. At the cap, a submit of the other CPU skipped that sleeper and,
 * with no growth left, woke nobody: the call waited for the sleeper's idle
 * timeout (found by the model, tests/model/pool.pml MARKS_OLD=1). Now a
 * submit at the cap wakes a marked shard's sleeper too.
 *
 * Two CPUs a and b, cap 2, no spinning: shard a has one worker blocked in
 * a read of an empty pipe and one asleep; shard a is marked by hand (the
 * state a watch leaves, white-box); B on CPU b submits a quick call, which
 * must complete within BOUND_S, far below the idle timeout (IDLE_MS).
 * Pinning on and off; each case in a forked child under an alarm.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shard.h"
#include "test_pool_util.h"

#define BOUND_S 5
#define IDLE_MS 600000 /* the sleeper never times out during a case */

static int marked_child(long pin)
{
	struct syslet_ring *r = ring_new(16);
	struct syslet__shard *sa;
	struct syslet_completion c;
	int cpu_a = allowed_cpu(0), cpu_b = allowed_cpu(1), fd[2];
	char byte = 0;

	CHECK(r && !pipe(fd));
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2) &&
	      !syslet_config_set(SYSLET_OPT_PIN, pin) &&
	      !syslet_config_set(SYSLET_OPT_SPIN_NS, 0) &&
	      !syslet_config_set(SYSLET_OPT_IDLE_MS, IDLE_MS));
	sa = &syslet__pool_get()->shards[cpu_a];
	CHECK(!pin_self(cpu_a));
	/* Shard a: one worker blocked, a second one grown for a quick call. */
	CHECK(!submit(r, SYS_read, fd[0], (long)&byte, 1, 1));
	CHECK(POLL_WITHIN(BOUND_S, atomic_load(&sa->idle) == 0));
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 2);
	CHECK(POLL_WITHIN(BOUND_S, atomic_load(&sa->sleepers) == 1));
	CHECK(atomic_load(&syslet__pool.nworkers) == 2);
	/* What a watch leaves on a shard whose sleeper it never woke. */
	atomic_store(&sa->held, 1);
	CHECK(!pin_self(cpu_b));
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 3));
	if (reap_within(r, &c, BOUND_S)) {
		fprintf(stderr,
			"a call at the cap waited %d s past a marked "
			"shard's sleeper (pin %ld)\n",
			BOUND_S, pin);
		return 2;
	}
	CHECK(c.caller_data == 3);
	CHECK(write(fd[1], "x", 1) == 1);
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 1);
	CHECK(!syslet_drain());
	return 0;
}

static void run(long pin)
{
	pid_t pid;

	if (ncpus_allowed() < 2)
		skip();
	pid = fork_case(4 * BOUND_S);
	assert_true(pid >= 0);
	if (!pid)
		_exit(marked_child(pin));
	assert_int_equal(wait_case(pid), 0);
}

static void test_marked_sleeper_at_cap_pinned(void **state)
{
	(void)state;
	run(1);
}

static void test_marked_sleeper_at_cap_unpinned(void **state)
{
	(void)state;
	run(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marked_sleeper_at_cap_pinned),
		cmocka_unit_test(test_marked_sleeper_at_cap_unpinned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
