/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: fork() with the pool running: the child gets an empty,
 * working pool (no workers, zero counters, no reservations inherited);
 * calls pending in the parent complete in the parent only, also when the
 * fork lands in the middle of a stream of calls.
 */
#include <pthread.h>
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

#include "test_pool_util.h"

static void wait_child(pid_t pid)
{
	int st;

	assert_true(pid >= 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_child_pool_empty(void **state)
{
	struct syslet_ring *r = ring_new(1);
	struct syslet_completion c = { 0 };
	struct syslet_stats st;
	char ch;
	int fd[2];
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fd), 0);
	/* The ring's one slot is reserved by a call blocked in the parent. */
	assert_int_equal(submit(r, SYS_read, fd[0], (long)&ch, 1, 1), 0);
	assert_int_equal(submit(r, SYS_getppid, 0, 0, 0, 9), -EBUSY);
	pid = fork();
	if (!pid) {
		stats(&st);
		CHECK(st.workers_now == 0 && st.submitted == 0 &&
		      st.completed == 0 && queued_total(&st) == 0);
		/* The parent's reservation stays in the parent. */
		CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
		CHECK(!reap_one(r, &c));
		CHECK(c.caller_data == 2 && (long)c.status == getppid());
		CHECK(!syslet_drain());
		CHECK(syslet_ring_head(r) == 1);
		stats(&st);
		CHECK(st.workers_now >= 1 && st.submitted == 1 &&
		      st.completed == 1);
		_exit(0);
	}
	wait_child(pid);
	/* The parent's call was not run by the child: still blocked here. */
	assert_int_equal(syslet_ring_head(r), 0);
	assert_int_equal(write(fd[1], "x", 1), 1);
	assert_int_equal(reap_one(r, &c), 0);
	assert_int_equal(c.caller_data, 1);
	assert_int_equal(c.status, 1);
	assert_int_equal(syslet_drain(), 0);
	close(fd[0]);
	close(fd[1]);
	free(r);
}

static _Atomic int stop;

static void *stream(void *arg)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	long ppid = getppid(), *bad = arg;

	int i, n;

	while (!atomic_load(&stop)) {
		for (n = 0; n < 64 && !submit(r, SYS_getppid, 0, 0, 0, 0); n++)
			;
		if (n < 64)
			(*bad)++;
		for (i = 0; i < n; i++)
			if (reap_one(r, &c) || (long)c.status != ppid)
				(*bad)++;
	}
	if (syslet_drain())
		(*bad)++;
	free(r);
	return NULL;
}

static void test_fork_during_stream(void **state)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	long bad = 0;
	pthread_t t;
	pid_t pid;
	int i;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, stream, &bad), 0);
	for (i = 0; i < 50; i++) {
		pid = fork();
		if (!pid) {
			CHECK(!submit(r, SYS_getppid, 0, 0, 0, 5));
			CHECK(!reap_one(r, &c) && c.caller_data == 5);
			CHECK(!syslet_drain());
			_exit(0);
		}
		wait_child(pid);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	assert_int_equal(bad, 0);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_pool_empty),
		cmocka_unit_test(test_fork_during_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
