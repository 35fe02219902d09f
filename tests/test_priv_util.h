/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests that run each case in a fresh child process
 * (a new pool) under an alarm: the privilege tests (test_priv,
 * test_confinement, test_priv_notifier) and test_fork_indirect. CHECK for
 * the child, which has no cmocka; running a function in a child process
 * or on a new thread, the test failing loudly on its failure; a call
 * through indirect() whose completion, if it went pending, is waited for
 * (bounded); and the root-only test directory of set-up and tear-down.
 * Include after <cmocka.h> and indirect_util.h.
 */
#ifndef SYSLET_TEST_PRIV_UTIL_H
#define SYSLET_TEST_PRIV_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <syslet/syslet.h>

#define ALARM_S 60 /* each child's alarm */

/* In a child: no cmocka, an exit status naming the failed line. */
#define CHECK(c)                                                        \
	do {                                                            \
		if (!(c)) {                                             \
			fprintf(stderr, "child %s:%d: %s (errno %d)\n", \
				__FILE__, __LINE__, #c, errno);         \
			_exit(1);                                       \
		}                                                       \
	} while (0)

/*
 * Run @fn in a fresh child process under an alarm of ALARM_S seconds; the
 * test fails unless the child exits 0.
 */
static inline void run_forked(int (*fn)(void))
{
	pid_t pid;
	int st;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(ALARM_S);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("child killed by signal %d", WTERMSIG(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* run_forked() for a test that needs root: skipped otherwise. */
static inline void run_child(int (*fn)(void))
{
	if (geteuid())
		skip();
	run_forked(fn);
}

struct on_thread_fn {
	int (*fn)(void);
};

static inline void *on_thread_start(void *arg)
{
	return (void *)(intptr_t)((struct on_thread_fn *)arg)->fn();
}

/* In a child: run @fn on a new thread of this process; its result. */
static inline int on_thread(int (*fn)(void))
{
	struct on_thread_fn f = { fn };
	pthread_t t;
	void *r;

	CHECK(!pthread_create(&t, NULL, on_thread_start, &f));
	CHECK(!pthread_join(t, &r));
	return (int)(intptr_t)r;
}

/*
 * Run @nr(@a0, @a1, @a2, @a3) through indirect() on *@ring (made on first
 * use); the inline answer or, for a pending call, its completion's status,
 * waited for. >= 0 or -errno.
 */
static inline long punt_on(struct syslet_ring **ring, long nr, long a0, long a1,
			   long a2, long a3)
{
	union indirect_params p;
	struct indirect_registers r;
	struct syslet_completion c;
	long ret;

	if (!*ring)
		*ring = ring_new(64);
	params_for(&p, *ring, 1);
	FILL_IN(r, nr, a0, a1, a2, a3);
	ret = indirect(&r, &p, sizeof(p), 0);
	if (ret >= 0)
		return ret;
	if (errno != ESYSLETPENDING)
		return -errno;
	c = ring_pop(*ring);
	return (long)c.status;
}

/*
 * Set-up: make the test directory from the mkdtemp() template @dir, mode
 * 0700; 0 or -1. Nothing as another user than root (the tests skip).
 */
static inline int priv_dir_setup(char *dir)
{
	if (geteuid())
		return 0;
	if (!mkdtemp(dir) || chmod(dir, 0700))
		return -1;
	return 0;
}

/* Tear-down: remove the test directory @dir and all in it; 0 or -1. */
static inline int priv_dir_teardown(const char *dir)
{
	char cmd[96];

	if (geteuid())
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

#endif /* SYSLET_TEST_PRIV_UTIL_H */
