/* SPDX-License-Identifier: MIT */
/*
 * Description: syslet_drain() and signals (SPEC 6): a handler installed
 * with glibc's signal(), which sets SA_RESTART, still ends the drain with
 * -1/EINTR, as one without SA_RESTART does; the call it waited for is not
 * disturbed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sanitizer.h"

#include "indirect_util.h"

struct drainer {
	_Atomic int done;
	int ret, err;
};

static _Atomic int handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void *drainer(void *arg)
{
	struct drainer *d = arg;

	d->ret = syslet_drain();
	d->err = errno;
	atomic_store(&d->done, 1);
	return NULL;
}

static void drain_interrupted(struct sigaction *sa)
{
	struct timespec ms = { 0, 1000000 };
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	struct drainer d = { 0 };
	pthread_t t;
	char ch;
	int fd[2], i;

	assert_int_equal(sigaction(SIGUSR1, sa, NULL), 0);
	assert_int_equal(pipe(fd), 0);
	assert_true(PENDING(SYS_IND(r, 1, SYS_read, fd[0], &ch, 1)));
	assert_int_equal(pthread_create(&t, NULL, drainer, &d), 0);
	/* A signal before the futex wait only runs the handler: repeat. */
	for (i = 0; i < WAIT_SECONDS * 1000 && !atomic_load(&d.done); i++) {
		pthread_kill(t, SIGUSR1);
		nanosleep(&ms, NULL);
	}
	assert_true(atomic_load(&d.done)); /* else the join would hang */
	pthread_join(t, NULL);
	assert_true(atomic_load(&handled) > 0);
	assert_int_equal(d.ret, -1);
	assert_int_equal(d.err, EINTR);
	assert_int_equal(write(fd[1], "x", 1), 1);
	c = ring_pop(r);
	assert_int_equal(c.caller_data, 1);
	assert_int_equal((long)c.status, 1);
	assert_int_equal(syslet_drain(), 0);
	close(fd[0]);
	close(fd[1]);
	free(r);
}

static void test_sa_restart(void **state)
{
	struct sigaction sa;

	(void)state;
	/* glibc's signal() is BSD semantics: SA_RESTART. */
	assert_true(signal(SIGUSR1, on_usr1) != SIG_ERR);
	assert_int_equal(sigaction(SIGUSR1, NULL, &sa), 0);
	if (UNDER_TSAN && !(sa.sa_flags & SA_RESTART)) {
		print_message("TSan's signal() sets no SA_RESTART\n");
		skip();
	}
	assert_true(sa.sa_flags & SA_RESTART);
	drain_interrupted(&sa);
}

static void test_no_restart(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	(void)state;
	drain_interrupted(&sa);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sa_restart),
		cmocka_unit_test(test_no_restart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
