/* SPDX-License-Identifier: MIT */
/*
 * Description: white-box tests of the switch into a notifier and back
 * (notify.c, SPEC 4.4): it makes no system call, whichever way the
 * notifier ends (it returns, calls syslet_notify_exit(), ends with
 * syscall(SYS_exit, 0)), counted by the raw_syscalls:sys_enter tracepoint
 * on the thread (77 where perf_event_open() of it is not permitted, under
 * the sanitizers, whose fiber hooks keep glibc's switch, and on an x86_64
 * shadow stack); the notifier runs with its worker's signal mask; the
 * worker's callee-saved registers and floating-point rounding mode are
 * what they were after a notifier that changed them and left by
 * syslet_notify_exit() or syscall(SYS_exit).
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <linux/perf_event.h>
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
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "pool.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GLIBC_SWITCH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GLIBC_SWITCH 1
#endif
#endif

#define STACK_SIZE (64 * 1024)
#define RUNS 100

static _Alignas(64) unsigned char stack[STACK_SIZE];
static struct syslet_completion comp;
static void (*volatile ending)(void);
static _Atomic int ran;

/* Kept reachable, as a worker's record keeps its own. */
static void *states[8];
static _Atomic unsigned int nstates;

static void thread_init(void)
{
	static _Thread_local bool ready;
	unsigned int i;

	if (ready)
		return;
	i = atomic_fetch_add(&nstates, 1);
	if (i >= 8 || !(states[i] = syslet__notify_alloc()) ||
	    syslet__notify_thread_init(states[i]))
		abort();
	ready = true;
}

static void notify(void (*fn)(void))
{
	struct syslet__job job = { .ip = (uint64_t)(uintptr_t)fn,
				   .sp = (uint64_t)(uintptr_t)(stack +
							       STACK_SIZE) };

	thread_init();
	syslet__notify_run(&job, &comp);
}

static void *on_thread(void *(*fn)(void *))
{
	pthread_t t;
	void *r;

	assert_int_equal(pthread_create(&t, NULL, fn, NULL), 0);
	assert_int_equal(pthread_join(t, &r), 0);
	return r;
}

/* ---- no system call ---------------------------------------------------- */

/* raw_syscalls:sys_enter on this thread, disabled; -1 if not permitted. */
static int counter(void)
{
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT,
				     .size = sizeof(a),
				     .disabled = 1 };
	static const char *const ids[] = {
		"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
		"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	unsigned long long id = 0;
	unsigned int i;
	FILE *f;

	for (i = 0; i < 2 && !id; i++) {
		f = fopen(ids[i], "r");
		if (f && fscanf(f, "%llu", &id) != 1)
			id = 0;
		if (f)
			fclose(f);
	}
	if (!id)
		return -1;
	a.config = id;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/* System calls entered on this thread during RUNS notifiers of @fn. */
static long count(int fd, void (*fn)(void))
{
	uint64_t n = 0;
	int i;

	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_RESET, 0), 0);
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	for (i = 0; fn && i < RUNS; i++)
		notify(fn);
	/* Counted: the disable's own entry, as in every span. */
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	assert_int_equal(read(fd, &n, sizeof(n)), sizeof(n));
	return (long)n;
}

static void returns(void)
{
	atomic_fetch_add(&ran, 1);
}

static void exits(void)
{
	atomic_fetch_add(&ran, 1);
	syslet_notify_exit();
}

static void sys_exits(void)
{
	atomic_fetch_add(&ran, 1);
	syscall(SYS_exit, 0);
}

static long counted[3]; /* by the thread, for the main thread to check */

static void *counts(void *arg)
{
	long empty;
	int fd = counter();

	(void)arg;
	if (fd < 0)
		return (void *)-1L;
	notify(returns); /* the first: sets up (mmap, mutexes) */
	atomic_store(&ran, 0);
	empty = count(fd, NULL);
	counted[0] = count(fd, returns) - empty;
	counted[1] = count(fd, exits) - empty;
	counted[2] = count(fd, sys_exits) - empty;
	close(fd);
	return NULL;
}

static bool shadow_stack(void)
{
#ifdef __x86_64__
	uint64_t ssp = 0;

	__asm__ volatile("rdsspq %0" : "+r"(ssp));
	return ssp;
#else
	return false;
#endif
}

static void test_no_syscall(void **state)
{
	(void)state;
#if defined(GLIBC_SWITCH)
	fprintf(stderr, "skipped: the sanitizers keep glibc's switch\n");
	skip();
#endif
	if (shadow_stack()) {
		fprintf(stderr, "skipped: glibc's switch on a shadow stack\n");
		skip();
	}
	if (on_thread(counts)) {
		fprintf(stderr, "skipped: no raw_syscalls:sys_enter counter "
				"(perf_event_open not permitted)\n");
		skip();
	}
	assert_int_equal(atomic_load(&ran), 3 * RUNS);
	/* glibc's swapcontext() and setcontext(): 2 * RUNS each */
	assert_int_equal(counted[0], 0);
	assert_int_equal(counted[1], 0);
	assert_int_equal(counted[2], 0);
}

/* ---- the worker's mask ------------------------------------------------- */

static sigset_t seen, worker;

static void looks(void)
{
	pthread_sigmask(SIG_BLOCK, NULL, &seen);
}

static void *masked(void *arg)
{
	sigset_t m;

	(void)arg;
	sigfillset(&m);
	sigdelset(&m, SIGUSR1);
	sigdelset(&m, SIGSYS);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &m, NULL), 0);
	notify(looks);
	pthread_sigmask(SIG_BLOCK, NULL, &worker);
	return NULL;
}

/* glibc's switch ran the notifier with every signal but SIGSYS blocked. */
static void test_worker_mask(void **state)
{
	int s;

	(void)state;
	on_thread(masked);
	assert_int_equal(sigismember(&worker, SIGUSR1), 0);
	for (s = 1; s <= SIGRTMAX; s++)
		assert_int_equal(sigismember(&seen, s),
				 sigismember(&worker, s));
}

/* ---- what the worker keeps --------------------------------------------- */

static __attribute__((noinline)) uint64_t mix(uint64_t x)
{
	return x * 0x9e3779b97f4a7c15ull + 1;
}

static volatile uint64_t seed = 1, want[8], sink;
static volatile double wantd[4];

/*
 * Fills the callee-saved registers with values of its own, live across
 * the call down (as keeps() below does), then leaves from the bottom.
 */
static __attribute__((noinline)) uint64_t deep(int depth)
{
	uint64_t a = mix(seed + depth), b = mix(a), c = mix(b), d = mix(c);
	uint64_t e = mix(d), f = mix(e), g = mix(f), h = mix(g);
	double x = (double)a, y = (double)b, z = (double)c, w = (double)d;
	uint64_t r = 0;

	if (depth)
		r = deep(depth - 1);
	else
		ending();
	return r + (a ^ b ^ c ^ d ^ e ^ f ^ g ^ h) + (uint64_t)(x + y + z + w);
}

static void leaves_rounding_up(void)
{
	fesetround(FE_UPWARD);
	sink = deep(8);
}

/*
 * Values the compiler cannot know, kept live across the call (in
 * callee-saved registers where it can), checked against copies in memory.
 */
static void *keeps(void *arg)
{
	uint64_t a = mix(seed), b = mix(a), c = mix(b), d = mix(c);
	uint64_t e = mix(d), f = mix(e), g = mix(f), h = mix(g);
	double x = (double)(a >> 12), y = (double)(b >> 12);
	double z = (double)(c >> 12), w = (double)(d >> 12);
	volatile double one = 1.0, three = 3.0;
	bool same;

	(void)arg;
	want[0] = a, want[1] = b, want[2] = c, want[3] = d;
	want[4] = e, want[5] = f, want[6] = g, want[7] = h;
	wantd[0] = x, wantd[1] = y, wantd[2] = z, wantd[3] = w;
	if (fesetround(FE_TONEAREST))
		return (void *)"fesetround";
	notify(leaves_rounding_up);
	if (fegetround() != FE_TONEAREST)
		return (void *)"rounding mode";
	/* Upward, 1/3 then its product by 3 round up, above 1. */
	if (one / three * three != 1.0)
		return (void *)"rounding mode (arithmetic)";
	same = a == want[0] && b == want[1] && c == want[2] && d == want[3];
	same = same && e == want[4] && f == want[5] && g == want[6];
	if (!same || h != want[7])
		return (void *)"integer registers";
	same = x == wantd[0] && y == wantd[1] && z == wantd[2];
	if (!same || w != wantd[3])
		return (void *)"floating-point registers";
	return NULL;
}

static void test_worker_keeps_registers(void **state)
{
	(void)state;
	ending = syslet_notify_exit;
	assert_null(on_thread(keeps));
	ending = sys_exits;
	assert_null(on_thread(keeps));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_syscall),
		cmocka_unit_test(test_worker_mask),
		cmocka_unit_test(test_worker_keeps_registers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
