/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: issue 10 fault 7: any worker death is noticed. 256 calls
 * are queued at once, with a cap of 8 workers, each call with a notifier
 * that ends its worker's thread,
 * by an inline-assembly SYS_exit (no libc wrapper sees it) or by
 * pthread_exit. Every call completes, syslet_drain() returns, the stats
 * count each death (workers_replaced) and as many workers as there are
 * worker threads, and the pool still runs calls. Each way of dying runs in
 * a fresh process, so that the counts are exact.
 */
#include <pthread.h>
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

#include "test_pool_util.h"

#define CALLS 256
#define STACK (16 * 1024)
#define CAP 8

static void thread_exit(void)
{
	pthread_exit(NULL);
}

static int all_die(void (*fn)(void))
{
	struct syslet_ring *r = ring_new(2 * CALLS);
	char *stacks = malloc((size_t)CALLS * STACK);
	struct syslet_completion c;
	struct syslet_stats st;
	int i;

	CHECK(r && stacks);
	/* Far fewer workers than calls: the dead must be replaced. */
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, CAP));
	alarm(TEST_WAIT_S);
	for (i = 0; i < CALLS; i++)
		CHECK(!submit_ex(
			r, SYS_getppid, 0, 0, 0, (uint64_t)i, (uintptr_t)fn,
			(uintptr_t)(stacks + (size_t)(i + 1) * STACK)));
	for (i = 0; i < CALLS; i++)
		CHECK(!reap_one(r, &c) && (long)c.status == getppid());
	CHECK(!syslet_drain());
	/* Each death counted, and the count of workers is the true one. */
	CHECK(WAIT_STATS(st, st.workers_replaced == CALLS &&
				     st.workers_now == worker_threads()));
	CHECK(st.completed == CALLS && st.workers_peak <= CAP);
	/* And the pool still works. */
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 7));
	CHECK(!reap_one(r, &c) && c.caller_data == 7);
	alarm(0);
	return 0;
}

static void in_child(void (*fn)(void))
{
	pid_t pid = fork_case(0);

	if (!pid)
		_exit(all_die(fn));
	assert_int_equal(wait_case(pid), 0);
}

static void test_raw_exit(void **state)
{
	(void)state;
#ifdef __x86_64__
	in_child(exit_raw);
#else
	skip();
#endif
}

static void test_pthread_exit(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/*
	 * The sanitizers' thread teardown, run by pthread_exit() on the
	 * notifier's makecontext stack, fails in their own runtime (ASan: a
	 * stack-use-after-scope in its sigaltstack reset; TSan: a CHECK on
	 * the current fiber): not ours.
	 */
	(void)thread_exit;
	skip();
#else
	in_child(thread_exit);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw_exit),
		cmocka_unit_test(test_pthread_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
