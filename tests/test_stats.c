/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: syslet_stats() numbers: nothing started before the first
 * call, submitted/completed/inline counts, workers now/peak/started,
 * sleeps, the per-shard queue depth, EINVAL.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
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

static void test_einval(void **state)
{
	struct syslet_stats st;

	(void)state;
	errno = 0;
	assert_int_equal(syslet_stats(NULL, sizeof(st)), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_stats(&st, sizeof(st) - 1), -1);
	assert_int_equal(errno, EINVAL);
}

static void test_counts(void **state)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct syslet_ring *r = ring_new(128);
	struct syslet_completion c;
	struct syslet_stats st;
	int i;

	(void)state;
	stats(&st);
	/* Nothing starts before the first call goes pending. */
	assert_int_equal(st.workers_now, 0);
	assert_int_equal(st.workers_started, 0);
	assert_int_equal(st.submitted, 0);
	for (i = 0; i < 5; i++)
		syslet__stats_inline(SYS_getpid);
	for (i = 0; i < 100; i++)
		assert_int_equal(submit(r, SYS_getppid, 0, 0, 0, i), 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(reap_one(r, &c), 0);
	assert_int_equal(syslet_drain(), 0);
	stats(&st);
	assert_int_equal(st.submitted, 100);
	assert_int_equal(st.completed, 100);
	assert_int_equal(st.inline_calls, 5);
	assert_true(st.workers_now >= 1);
	assert_true(st.workers_peak >= st.workers_now);
	assert_true(st.workers_started >= st.workers_peak);
	assert_int_equal(st.workers_replaced, 0);
	assert_int_equal(st.shards, ncpu < SYSLET_STATS_MAX_SHARDS ?
					    ncpu :
					    SYSLET_STATS_MAX_SHARDS);
	assert_int_equal(queued_total(&st), 0);
	/* With nothing to do, idle workers end up asleep. */
	assert_true(WAIT_STATS(st, st.sleeps > 0));
	free(r);
}

/* @n inline getpid calls through indirect() on the calling thread. */
static void *inline_calls(void *n)
{
	struct syslet_ring *r = aligned_alloc(8, syslet_ring_size(4));
	union indirect_params p = { 0 };
	struct indirect_registers regs;
	long i;

	if (!r || syslet_ring_init(r, 4))
		return (void *)1;
	p.syslet.completion_ring_ptr = (uintptr_t)r;
	FILL_IN(regs, SYS_getpid);
	for (i = 0; i < (long)(intptr_t)n; i++)
		if (indirect(&regs, &p, sizeof(p), 0) != getpid())
			return (void *)1;
	free(r);
	return NULL;
}

/*
 * Inline calls are tallied per thread: the count of a thread that ended is
 * kept, and a thread that takes over its tally counts on from it.
 */
static void test_inline_tally(void **state)
{
	struct syslet_stats before, after;
	pthread_t t;
	void *res;
	int i;

	(void)state;
	stats(&before);
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_create(&t, NULL, inline_calls,
						(void *)(intptr_t)(10 + i)),
				 0);
		assert_int_equal(pthread_join(t, &res), 0);
		assert_null(res);
	}
	assert_null(inline_calls((void *)(intptr_t)7));
	stats(&after);
	assert_int_equal(after.inline_calls - before.inline_calls,
			 10 + 11 + 12 + 7);
}

static void test_queue_depth(void **state)
{
	struct syslet_ring *r = ring_new(8);
	struct syslet_completion c;
	struct syslet_stats st;
	char buf[4];
	int fd[2], i, st_;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) || pipe(fd))
			_exit(1);
		for (i = 0; i < 4; i++)
			if (submit(r, SYS_read, fd[0], (long)&buf[i], 1, 1))
				_exit(2);
		/* One runs, three wait: the cap is one worker. */
		if (!WAIT_STATS(st,
				queued_total(&st) == 3 && st.workers_now == 1))
			_exit(3);
		if (write(fd[1], "abcd", 4) != 4)
			_exit(4);
		for (i = 0; i < 4; i++)
			if (reap_one(r, &c) || c.status != 1)
				_exit(5);
		stats(&st);
		_exit(queued_total(&st) || st.workers_peak != 1 ? 6 : 0);
	}
	assert_int_equal(waitpid(pid, &st_, 0), pid);
	assert_true(WIFEXITED(st_));
	assert_int_equal(WEXITSTATUS(st_), 0);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_einval),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_inline_tally),
		cmocka_unit_test(test_queue_depth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
