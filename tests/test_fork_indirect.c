/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: fork, vfork and clone through indirect() (issue 10 fault 5,
 * SPEC 3 and 5). With a call pending in the parent:
 *   - indirect(SYS_fork) runs glibc's fork(): the child's pool works (a
 *     call it punts completes there) and the parent's pending call
 *     completes in the parent only;
 *   - a fork-like clone (no shared memory, no stack) through indirect(),
 *     and a raw syscall(SYS_fork), skip the atfork handlers: the child's
 *     first punt still finds a fresh pool (the wipe-on-fork check);
 *   - vfork, clone3, clone with CLONE_VM or a new stack: EINVAL, nothing
 *     run.
 * Each case in a fresh child process under an alarm.
 */
#include <errno.h>
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "test_priv_util.h"

#define CHILD_WAIT_S 10

static struct syslet_ring *ring;
static int gate[2];

static long ind(uint64_t cd, long nr, long a0, long a1, long a2, long a3)
{
	union indirect_params p;
	struct indirect_registers r;

	params_for(&p, ring, cd);
	FILL_IN(r, nr, a0, a1, a2, a3);
	return indirect(&r, &p, sizeof(p), 0);
}

/* The next completion within CHILD_WAIT_S, consumed; -1 if none. */
static int next(struct syslet_completion *c)
{
	struct timespec ts = { CHILD_WAIT_S, 0 };
	uint32_t tail = ring->user_tail;

	if (syslet_ring_head(ring) == tail &&
	    syslet_ring_wait_timeout(ring, tail, &ts))
		return -1;
	*c = *syslet_ring_slot(ring, tail);
	syslet_ring_advance(ring, 1);
	return 0;
}

/* In a forked process: a punted call completes here, nothing else. */
static int child_punts(void)
{
	struct syslet_completion c;

	CHECK(ind(2, SYS_fdatasync, -1, 0, 0, 0) == -1 &&
	      errno == ESYSLETPENDING);
	CHECK(!next(&c) && c.caller_data == 2 && (long)c.status == -EBADF);
	/* The parent's pending read did not complete here. */
	CHECK(syslet_ring_head(ring) == ring->user_tail);
	return 0;
}

/* The parent's side: its pending read completes after the child. */
static int parent_after(pid_t pid)
{
	struct syslet_completion c;
	int st;

	CHECK(pid > 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(syslet_ring_head(ring) == ring->user_tail);
	CHECK(write(gate[1], "g", 1) == 1);
	CHECK(!next(&c) && c.caller_data == 1 && (long)c.status == 1);
	return 0;
}

static char byte;

/* A ring, and a pool with a call pending on a pipe. */
static void pending_read(void)
{
	ring = ring_new(16);
	CHECK(!pipe(gate));
	CHECK(ind(1, SYS_read, gate[0], (long)&byte, 1, 0) == -1 &&
	      errno == ESYSLETPENDING);
}

#ifdef SYS_fork
static int fork_child(void)
{
	long pid;

	pending_read();
	pid = ind(3, SYS_fork, 0, 0, 0, 0);
	if (pid == 0)
		_exit(child_punts());
	return parent_after((pid_t)pid);
}

static void test_fork(void **state)
{
	(void)state;
	run_forked(fork_child);
}
#else
/* No fork system call on this architecture (aarch64): clone covers it. */
static void test_fork(void **state)
{
	(void)state;
	skip();
}
#endif

static int clone_child(void)
{
	long pid;

	pending_read();
	pid = ind(3, SYS_clone, SIGCHLD, 0, 0, 0);
	if (pid == 0)
		_exit(child_punts());
	return parent_after((pid_t)pid);
}

static void test_fork_like_clone(void **state)
{
	(void)state;
	run_forked(clone_child);
}

#ifdef SYS_fork
static int raw_fork_child(void)
{
	long pid;

	pending_read();
	pid = syscall(SYS_fork);
	if (pid == 0)
		_exit(child_punts());
	return parent_after((pid_t)pid);
}

static void test_raw_fork(void **state)
{
	(void)state;
	run_forked(raw_fork_child);
}
#else
static void test_raw_fork(void **state)
{
	(void)state;
	skip();
}
#endif

static _Alignas(16) char stack[16384];

static int refused_child(void)
{
	long top = (long)(uintptr_t)(stack + sizeof(stack));
	struct syslet_completion c;

	pending_read();
	errno = 0;
#ifdef SYS_vfork
	CHECK(ind(3, SYS_vfork, 0, 0, 0, 0) == -1 && errno == EINVAL);
#endif
	CHECK(ind(3, SYS_clone, CLONE_VM | SIGCHLD, 0, 0, 0) == -1 &&
	      errno == EINVAL);
	CHECK(ind(3, SYS_clone, SIGCHLD, top, 0, 0) == -1 && errno == EINVAL);
	CHECK(ind(3, SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0) ==
		      -1 &&
	      errno == EINVAL);
	CHECK(ind(3, SYS_clone3, 0, 0, 0, 0) == -1 && errno == EINVAL);
	/* No other class for them. */
#ifdef SYS_fork
	CHECK(syslet_set_class(SYS_fork, SYSLET_CLASS_ASYNC) == -1 &&
	      errno == EINVAL);
#endif
	CHECK(syslet_set_class(SYS_setresuid, SYSLET_CLASS_ASYNC) == -1 &&
	      errno == EINVAL);
#ifdef SYS_fork
	CHECK(syslet_set_class(SYS_fork, SYSLET_CLASS_INLINE) == 0);
#endif
	/* Nothing was started: no child to wait for. */
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
	CHECK(write(gate[1], "g", 1) == 1);
	CHECK(!next(&c) && c.caller_data == 1 && (long)c.status == 1);
	return 0;
}

static void test_refused(void **state)
{
	(void)state;
	run_forked(refused_child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_fork_like_clone),
		cmocka_unit_test(test_raw_fork),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
