/* SPDX-License-Identifier: MIT */
/*
 * Description: thread-bound calls run on the calling thread: gettid,
 * rt_sigprocmask and a raw setresuid (per thread in the kernel) through
 * indirect() act on the caller and on no other thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

static struct syslet_ring *ring;

static void *tid_thread(void *arg)
{
	long *tid = arg;

	tid[0] = syscall(SYS_gettid);
	tid[1] = SYS_IND(ring, 0, SYS_gettid);
	return NULL;
}

static void test_gettid(void **state)
{
	long tid[2];
	pthread_t t;

	(void)state;
	assert_int_equal(SYS_IND(ring, 0, SYS_gettid), syscall(SYS_gettid));
	assert_int_equal(pthread_create(&t, NULL, tid_thread, tid), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(tid[0], tid[1]);
	assert_int_not_equal(tid[0], syscall(SYS_gettid));
	ring_empty(ring);
}

static void *mask_thread(void *arg)
{
	sigset_t set, now;
	long *ok = arg;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	*ok = SYS_IND(ring, 0, SYS_rt_sigprocmask, SIG_BLOCK, &set, 0, 8);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	if (*ok == 0 && !sigismember(&now, SIGUSR1))
		*ok = -100;
	return NULL;
}

static void test_sigprocmask(void **state)
{
	sigset_t now;
	pthread_t t;
	long ok = -1;

	(void)state;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	assert_false(sigismember(&now, SIGUSR1));
	assert_int_equal(pthread_create(&t, NULL, mask_thread, &ok), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ok, 0);
	/* the caller's mask changed, not this thread's */
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	assert_false(sigismember(&now, SIGUSR1));
	ring_empty(ring);
}

static int go[2];

static void *euid_thread(void *arg)
{
	long *euid = arg;
	char b;

	if (read(go[0], &b, 1) != 1)
		return NULL;
	*euid = syscall(SYS_geteuid);
	return NULL;
}

static void test_raw_setresuid(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long other = -1;
		pthread_t t;

		if (pipe(go) || pthread_create(&t, NULL, euid_thread, &other))
			_exit(10);
		if (SYS_IND(ring, 0, SYS_setresuid, -1, 65534, -1) != 0)
			_exit(11);
		if (syscall(SYS_geteuid) != 65534)
			_exit(12);
		if (write(go[1], "g", 1) != 1 || pthread_join(t, NULL))
			_exit(13);
		/* the raw call changed only the calling thread */
		_exit(other == 0 ? 0 : 14);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int setup(void **state)
{
	(void)state;
	ring = ring_new(4);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(ring);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gettid),
		cmocka_unit_test(test_sigprocmask),
		cmocka_unit_test(test_raw_setresuid),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
