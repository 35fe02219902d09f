/* SPDX-License-Identifier: MIT */
/*
 * Description: syslet_stats_syscall() counts by system call number: inline
 * answers on the calling threads (each thread's tally, summed), punted
 * calls and their completions, and nothing for numbers never called.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "indirect_util.h"

static struct syslet_ring *ring;

static struct syslet_syscall_stats get(long nr)
{
	struct syslet_syscall_stats s;

	assert_int_equal(syslet_stats_syscall(nr, &s, sizeof(s)), 0);
	return s;
}

static void *inline_getpid(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 1000; i++)
		if (SYS_IND(ring, 0, SYS_getpid) != getpid())
			return arg;
	return NULL;
}

static void test_inline_by_number(void **state)
{
	struct syslet_syscall_stats before = get(SYS_getpid), after, other;
	pthread_t t;
	void *ret;

	(void)state;
	other = get(SYS_getuid);
	assert_null(inline_getpid(NULL));
	assert_int_equal(pthread_create(&t, NULL, inline_getpid, NULL), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	after = get(SYS_getpid);
	assert_int_equal(after.inline_calls - before.inline_calls, 2000);
	assert_int_equal(after.punted, before.punted);
	assert_int_equal(get(SYS_getuid).inline_calls, other.inline_calls);
}

static void test_punted_by_number(void **state)
{
	struct syslet_syscall_stats before = get(SYS_read), after;
	struct syslet_completion c;
	int p[2];
	char b[4];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true(PENDING(SYS_IND(ring, 5, SYS_read, p[0], b, sizeof(b))));
	assert_int_equal(write(p[1], "ab", 2), 2);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 2);
	assert_int_equal(syslet_drain(), 0);
	after = get(SYS_read);
	assert_int_equal(after.punted - before.punted, 1);
	assert_int_equal(after.completed - before.completed, 1);
	assert_int_equal(after.cancelled, before.cancelled);
	close(p[0]);
	close(p[1]);
}

static void test_bad_arguments(void **state)
{
	struct syslet_syscall_stats s;

	(void)state;
	assert_int_equal(syslet_stats_syscall(SYS_read, NULL, sizeof(s)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(syslet_stats_syscall(1 << 20, &s, sizeof(s)), -1);
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_by_number),
		cmocka_unit_test(test_punted_by_number),
		cmocka_unit_test(test_bad_arguments),
	};

	ring = ring_new(64);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
