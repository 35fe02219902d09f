/* SPDX-License-Identifier: MIT */
/*
 * Attack from outside on 37e82d4 (forked.c syslet__once(): the pool's and
 * forked.c's onces survive a raw fork because their words are wiped in
 * every fork child). The library's other onces are still pthread_once():
 * a child raw-forked (SYS_clone, SIGCHLD) while another thread is inside
 * one of them waits for ever in pthread_once(), the hang 37e82d4 removed
 * from the pool's init only.
 *
 * Deterministic: this program defines pthread_key_create(), which the
 * library's inits call through the PLT; it holds the chosen thread inside
 * the init until the raw fork is taken (a model of a thread preempted
 * there), then calls glibc's. Each case runs in a forked child (fresh
 * library state) with an alarm; the raw-forked grandchild has its own.
 *  - tally: stats.c's pthread_once(tally_init), reached by the first
 *    inline indirect() of a thread (getpid): the grandchild's first inline
 *    call hangs.
 *  - punt1 (control, passes): the pool's init, syslet__once(), held the
 *    same way: the grandchild runs it again and its punted read is served.
 *
 * Shared state: hold_tid/hold_on/held, written by the case's main thread
 * and the held thread, seq_cst (few, test only).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#include <syslet/syslet.h>

#define CASE_S 20 /* alarm of a case */
#define CHILD_S 5 /* alarm of the raw-forked grandchild */

static _Atomic pid_t hold_tid;
static _Atomic int hold_on;
static _Atomic int held;
static _Atomic int hold_nth = 1; /* hold at the held thread's nth call */
static _Atomic int calls;

typedef int key_create_fn(pthread_key_t *, void (*)(void *));

/* The library's inits call this one: hold the chosen thread inside. */
__attribute__((visibility("default"))) int
pthread_key_create(pthread_key_t *key, void (*dtor)(void *))
{
	void *sym = dlsym(RTLD_NEXT, "pthread_key_create");
	key_create_fn *real;

	memcpy(&real, &sym, sizeof(real)); /* POSIX: dlsym's answer */

	if (atomic_load(&hold_tid) == (pid_t)syscall(SYS_gettid) &&
	    atomic_fetch_add(&calls, 1) + 1 == atomic_load(&hold_nth)) {
		atomic_store(&held, 1);
		while (atomic_load(&hold_on))
			sched_yield(); /* bounded by the case's alarm */
	}
	return real(key, dtor);
}

/* indirect() of getpid() on a ring of its own (answered inline). */
static long ind_getpid(void)
{
	static _Alignas(8) char mem[2][4096];
	static _Atomic int n;
	struct syslet_ring *ring =
		(struct syslet_ring *)mem[atomic_fetch_add(&n, 1) & 1];
	union indirect_params p;
	struct indirect_registers r;

	if (syslet_ring_init(ring, 16))
		return -1;
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	FILL_IN(r, SYS_getpid);
	return indirect(&r, &p, sizeof(p), 0);
}

/* indirect() of read(2) of an empty pipe (punted), served: 0. */
static int punt_read(void)
{
	static _Alignas(8) char mem[2][4096];
	static _Atomic int n;
	struct syslet_ring *ring =
		(struct syslet_ring *)mem[atomic_fetch_add(&n, 1) & 1];
	struct timespec to = { .tv_sec = 3 };
	union indirect_params p;
	struct indirect_registers r;
	int fd[2];
	char c;
	long ret;

	if (syslet_ring_init(ring, 16) || pipe(fd))
		return 10;
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	FILL_IN(r, SYS_read, fd[0], &c, 1);
	ret = indirect(&r, &p, sizeof(p), 0);
	if (ret != -1 || errno != ESYSLETPENDING)
		return 11;
	if (write(fd[1], "x", 1) != 1)
		return 12;
	if (syslet_ring_wait_timeout(ring, 0, &to))
		return 13;
	return 0;
}

static void *first_inline(void *arg)
{
	(void)arg;
	atomic_store(&hold_tid, (pid_t)syscall(SYS_gettid));
	ind_getpid();
	return NULL;
}

static void *first_punt(void *arg)
{
	(void)arg;
	atomic_store(&hold_tid, (pid_t)syscall(SYS_gettid));
	punt_read();
	return NULL;
}

/* Exit code of the case child: 0 the grandchild's call returned. */
static int hold_case(void *(*first)(void *), int (*call)(void))
{
	struct timespec t0, t;
	pthread_t th;
	int st;
	pid_t pid;

	atomic_store(&hold_on, 1);
	if (pthread_create(&th, NULL, first, NULL))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(&held)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			fprintf(stderr, "the first inline call never got to "
					"pthread_key_create\n");
			return 3;
		}
		sched_yield();
	}
	/* The other thread is inside stats.c's pthread_once(tally_init). */
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		return 4;
	if (!pid) {
		alarm(CHILD_S);
		_exit(call());
	}
	atomic_store(&hold_on, 0);
	pthread_join(th, NULL);
	if (waitpid(pid, &st, 0) != pid)
		return 6;
	if (WIFSIGNALED(st)) {
		fprintf(stderr,
			"raw fork child: signal %d (%s): its first "
			"call hung (pthread_once)\n",
			WTERMSIG(st), WTERMSIG(st) == SIGALRM ? "alarm" : "?");
		return 7;
	}
	return WEXITSTATUS(st);
}

static int inline_ok(void)
{
	return ind_getpid() == getpid() ? 0 : 5;
}

static int tally_case(void)
{
	return hold_case(first_inline, inline_ok);
}

/* The pool's init (syslet__once) held at its pthread_key_create. */
static int punt_case(int nth)
{
	if (ind_getpid() != getpid()) /* stats.c's once done before */
		return 9;
	atomic_store(&hold_nth, nth);
	return hold_case(first_punt, punt_read);
}

static int punt1(void)
{
	return punt_case(1);
}

static void run_case(int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		alarm(CASE_S);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("case child killed by signal %d", WTERMSIG(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_rawfork_tally(void **state)
{
	(void)state;
	run_case(tally_case);
}

static void test_rawfork_punt1(void **state)
{
	(void)state;
	run_case(punt1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rawfork_tally),
		cmocka_unit_test(test_rawfork_punt1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
