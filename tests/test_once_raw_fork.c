/* SPDX-License-Identifier: MIT */
/*
 * A child raw-forked (SYS_clone, SIGCHLD) while another thread is inside
 * one of the library's onces is served (forked.c syslet__once(): the
 * once words are wiped in every fork child). With pthread_once() such a
 * child waited for ever in it (tally: 5 of 5 hung). Now every once of the
 * library is a syslet__once(); one case per once.
 *
 * Deterministic: this program defines functions the inits call
 * (pthread_key_create, getenv, madvise, sigaction,
 * pthread_mutexattr_setrobust); the first of the case's threads other
 * than main that calls one while the case's once word reads RUNNING is
 * held there until the raw fork is taken (a model of a thread preempted
 * inside the init), then goes on. Each case runs in a forked child (fresh
 * library state) with an alarm; the raw-forked grandchild has its own and
 * must get its calls served: a hang or a wrong answer fails the case.
 *
 * Shared state: the hold_* words and held, written by the case's main
 * thread and the held thread, seq_cst (few, test only).
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

#include "forked.h"
#include "test_fork_util.h"

#define CASE_S 20 /* alarm of a case */
#define CHILD_S 5 /* alarm of the raw-forked grandchild */
#define STACK_SIZE (64 * 1024)

static _Atomic int notified;
static _Alignas(16) char nstack[STACK_SIZE];

static void *real_fn(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define HOOK(ret, name, params, args)                                   \
	__attribute__((visibility("default"))) ret name params          \
	{                                                               \
		ret(*real) params;                                      \
		void *sym = real_fn(#name);                             \
		memcpy(&real, &sym, sizeof(real)); /* POSIX: dlsym's */ \
		maybe_hold();                                           \
		return real args;                                       \
	}

HOOK(int, pthread_key_create, (pthread_key_t * k, void (*d)(void *)), (k, d))
HOOK(char *, getenv, (const char *n), (n))
HOOK(int, madvise, (void *a, size_t l, int adv), (a, l, adv))
HOOK(int, sigaction,
     (int s, const struct sigaction *restrict sa,
      struct sigaction *restrict old),
     (s, sa, old))
HOOK(int, pthread_mutexattr_setrobust, (pthread_mutexattr_t * a, int r), (a, r))
/* indirect() of getpid() on a ring of its own (answered inline): 0. */
static int inline_ok(void)
{
	static _Alignas(8) char mem[2][4096];
	static _Atomic int n;
	struct syslet_ring *ring =
		(struct syslet_ring *)mem[atomic_fetch_add(&n, 1) & 1];

	return ind_getpid_on(ring) ? 5 : 0;
}

/* indirect() of read(2) of an empty pipe (punted), served: 0. */
static int punt_read(void)
{
	static _Alignas(8) char mem[2][4096];
	static _Atomic int n;
	struct syslet_ring *ring =
		(struct syslet_ring *)mem[atomic_fetch_add(&n, 1) & 1];
	struct timespec to = { .tv_sec = 3 };
	int fd[2];
	char c;

	if (syslet_ring_init(ring, 16) || pipe(fd))
		return 10;
	if (punt_read_fd(ring, fd[0], &c, 0))
		return 11;
	if (write(fd[1], "x", 1) != 1)
		return 12;
	if (syslet_ring_wait_timeout(ring, 0, &to))
		return 13;
	return 0;
}

/* indirect() of read(2) with a notifier: a worker runs it. */
static void notifier(void)
{
	atomic_store(&notified, 1);
}

static int punt_notify(void)
{
	static _Alignas(8) char mem[4096];
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	struct timespec to = { .tv_sec = 3 };
	int fd[2];
	char c;

	if (syslet_ring_init(ring, 16) || pipe(fd))
		return 20;
	if (punt_read_frame(ring, fd[0], &c, 0, notifier, nstack + STACK_SIZE))
		return 21;
	if (write(fd[1], "x", 1) != 1)
		return 22;
	return syslet_ring_wait_timeout(ring, 0, &to) ? 23 : 0;
}

static int cancel_ok(void)
{
	return syslet_cancel(NULL, 0, 0) ? 24 : 0;
}

/* What the grandchild must get served: an inline call, a punt, a cancel. */
static int all_ok(void)
{
	int r = inline_ok();

	if (!r)
		r = punt_read();
	if (!r)
		r = cancel_ok();
	return r;
}

struct onecase {
	const char *name;
	enum syslet__once_id id;
	int warm; /* main makes an inline call first (the tally's init) */
	int (*first)(void); /* the held thread's call */
};

static void *first_main(void *arg)
{
	const struct onecase *c = arg;

	c->first();
	return NULL;
}

/* Exit code of the case child: 0 the grandchild's calls were served. */
static int hold_case(const struct onecase *c)
{
	struct timespec t0, t;
	pthread_t th;
	int st;
	pid_t pid;

	atomic_store(&hold_pid, getpid());
	atomic_store(&main_tid, gettid_());
	if (c->warm && inline_ok())
		return 9;
	atomic_store(&hold_on, 1);
	atomic_store(&hold_id, (int)c->id);
	if (pthread_create(&th, NULL, first_main, (void *)c))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(&held)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			fprintf(stderr,
				"%s: no thread was held inside the "
				"init\n",
				c->name);
			return 3;
		}
		sched_yield();
	}
	/* A thread other than this one is inside the chosen init. */
	pid = raw_fork();
	if (pid < 0)
		return 4;
	if (!pid) {
		alarm(CHILD_S);
		_exit(all_ok());
	}
	atomic_store(&hold_on, 0);
	pthread_join(th, NULL);
	/* The notifier runs after its completion is posted: 3 s at most. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (c->id == SYSLET__ONCE_NOTIFY && !atomic_load(&notified)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 3)
			break;
		sched_yield();
	}
	if (waitpid(pid, &st, 0) != pid)
		return 6;
	if (WIFSIGNALED(st)) {
		fprintf(stderr,
			"%s: raw fork child: signal %d (%s): a call "
			"hung\n",
			c->name, WTERMSIG(st),
			WTERMSIG(st) == SIGALRM ? "alarm" : "?");
		return 7;
	}
	if (WEXITSTATUS(st))
		fprintf(stderr, "%s: raw fork child: exit %d\n", c->name,
			WEXITSTATUS(st));
	return WEXITSTATUS(st)						 ? 8 :
	       (c->id == SYSLET__ONCE_NOTIFY && !atomic_load(&notified)) ? 10 :
									   0;
}

static const struct onecase cases[] = {
	{ "tally", SYSLET__ONCE_TALLY, 0, inline_ok },
	{ "config", SYSLET__ONCE_CONFIG, 0, punt_read },
	{ "pool", SYSLET__ONCE_POOL, 1, punt_read },
	{ "forked", SYSLET__ONCE_FORKED, 1, punt_read },
	{ "cancel_slot", SYSLET__ONCE_CANCEL_SLOT, 1, punt_read },
	{ "notify", SYSLET__ONCE_NOTIFY, 1, punt_notify },
};

static void test_rawfork(void **state)
{
	const struct onecase *c = *state;
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		alarm(CASE_S);
		_exit(hold_case(c));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("%s: case child killed by signal %d", c->name,
			 WTERMSIG(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tests[i] = (struct CMUnitTest){
			.name = cases[i].name,
			.test_func = test_rawfork,
			.initial_state = (void *)&cases[i],
		};
	return _cmocka_run_group_tests("once_raw_fork", tests, i, NULL, NULL);
}
