/* SPDX-License-Identifier: MIT */
/*
 * Description: white-box tests of the notifier and of the SYS_exit answer
 * of the library's syscall() (no seccomp trap any more, issue 10 faults 4
 * and 8): where the notifier's stack pointer starts and that nothing at or
 * above sp is written; a notifier's syscall(SYS_exit) returns to the
 * worker and leaves the program's SIGSYS handler, the thread's seccomp
 * mode and NO_NEW_PRIVS as they were; a raw exit ends the thread and the
 * next notifier on that sp still runs; an exit outside a notifier still
 * ends the thread; a child forked in a notifier is an ordinary process
 * (its syscall(SYS_exit) exits, an image it execs has NoNewPrivs: 0 and
 * Seccomp: 0); syslet_current_completion() is not disturbed by the reuse
 * of the slot.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "pool.h"

/* Sanitizer builds enter the notifier through a trampoline. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FIBER_TRAMPOLINE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FIBER_TRAMPOLINE 1
#endif
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FIBER_TRAMPOLINE_TSAN 1
#endif
#endif

#define STACK_SIZE (64 * 1024)
#define CANARY 0xa5

/* The stack, with a canary zone above the top the library is given. */
static _Alignas(64) unsigned char stack[STACK_SIZE + 256];
static struct syslet_completion comp = { 0, 42 };
static _Atomic int ran, after_exit, program_sigsys;

static void run_on_thread(void *(*fn)(void *), void *arg)
{
	struct timespec end;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 30;
	assert_int_equal(pthread_timedjoin_np(t, NULL, &end), 0);
}

/*
 * The calling thread's notifier state, as a worker's start makes it; kept
 * reachable (a worker's record keeps its own): some of these threads end
 * by a raw exit.
 */
static void *states[256];
static _Atomic unsigned int nstates;

static void thread_init(void)
{
	unsigned int i = atomic_fetch_add(&nstates, 1);

	assert_true(i < sizeof(states) / sizeof(states[0]));
	states[i] = syslet__notify_alloc();
	assert_int_equal(syslet__notify_thread_init(states[i]), 0);
}

static void notify_on(void (*fn)(void), uint64_t sp)
{
	static _Thread_local bool ready;
	struct syslet__job job = { .ip = (uint64_t)(uintptr_t)fn, .sp = sp };

	if (!ready) {
		thread_init();
		ready = true;
	}

	syslet__notify_run(&job, &comp);
}

static uint64_t sp_at(size_t off)
{
	return (uint64_t)(uintptr_t)(stack + off);
}

static void on_program_sigsys(int sig)
{
	(void)sig;
	atomic_fetch_add(&program_sigsys, 1);
}

static void sys_exits(void)
{
	atomic_fetch_add(&ran, 1);
	syscall(SYS_exit, 0);
	atomic_fetch_add(&after_exit, 1);
}

struct fn {
	void (*fn)(void);
};

static void *init_and_notify(void *arg)
{
	const struct fn *f = arg;

	notify_on(f->fn, sp_at(STACK_SIZE));
	return NULL;
}

static const struct fn f_sys_exits = { sys_exits };

/* A "Key:\t<n>" line of /proc/thread-self/status, or -1. */
static int status_field(const char *key)
{
	char line[256];
	size_t len = strlen(key);
	int n = -1;
	FILE *f = fopen("/proc/thread-self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len)) {
			n = atoi(line + len);
			break;
		}
	fclose(f);
	return n;
}

static _Atomic int after_seccomp = -1, after_nnp = -1;

static void *exit_then_look(void *arg)
{
	init_and_notify(arg);
	atomic_store(&after_seccomp, status_field("Seccomp:"));
	atomic_store(&after_nnp, status_field("NoNewPrivs:"));
	return NULL;
}

/*
 * A notifier ending in syscall(SYS_exit) returns to the worker, and the
 * program's SIGSYS handler, the seccomp mode and NO_NEW_PRIVS stay as
 * they were (issue 10 fault 4: a filter, NO_NEW_PRIVS and a handler of
 * the library's own were installed for it).
 */
static void test_sys_exit_no_side_effects(void **state)
{
	struct sigaction sa = { .sa_handler = on_program_sigsys }, cur;

	(void)state;
	assert_int_equal(sigaction(SIGSYS, &sa, NULL), 0);
	run_on_thread(exit_then_look, (void *)&f_sys_exits);
	assert_int_equal(atomic_load(&ran), 1);
	assert_int_equal(atomic_load(&after_exit), 0);
	assert_int_equal(atomic_load(&after_seccomp), 0);
	assert_int_equal(atomic_load(&after_nnp), 0);
	assert_int_equal(sigaction(SIGSYS, NULL, &cur), 0);
	assert_ptr_equal(cur.sa_handler, on_program_sigsys);
	raise(SIGSYS);
	assert_int_equal(atomic_load(&program_sigsys), 1);
}

static _Atomic pid_t forked;

/* A child forked in a notifier exits by syscall(SYS_exit, 7). */
static void fork_exits(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		syscall(SYS_exit, 7);
		_exit(99); /* not reached: the exit really exits */
	}
	atomic_store(&forked, pid);
}

/* A child forked in a notifier execs a check of its own status. */
static void fork_execs(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c",
		      "grep -q '^NoNewPrivs:.0$' /proc/self/status && "
		      "grep -q '^Seccomp:.0$' /proc/self/status",
		      (char *)NULL);
		_exit(98);
	}
	atomic_store(&forked, pid);
}

static const struct fn f_fork_exits = { fork_exits },
		       f_fork_execs = { fork_execs };

static int child_status(const struct fn *f)
{
	int st;

	atomic_store(&forked, -1);
	run_on_thread(init_and_notify, (void *)f);
	assert_true(atomic_load(&forked) > 0);
	assert_int_equal(waitpid(atomic_load(&forked), &st, 0),
			 atomic_load(&forked));
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Issue 10 fault 8: notifier context leaked into children. */
static void test_child_of_notifier(void **state)
{
	(void)state;
	/* Not the worker loop in the child: a real exit of its thread. */
	assert_int_equal(child_status(&f_fork_exits), 7);
	/* An image exec'd from a notifier runs unconstrained. */
	assert_int_equal(child_status(&f_fork_execs), 0);
}

#if defined(__x86_64__) && !defined(FIBER_TRAMPOLINE)
static volatile uintptr_t entry_rsp __attribute__((used));

__attribute__((naked)) static void probe_rsp(void)
{
	__asm__("movq %rsp, entry_rsp(%rip)\n\tret");
}

static void *layout(void *arg)
{
	size_t off = (size_t)(uintptr_t)arg, i;
	uint64_t sp = sp_at(off);

	memset(stack + off, CANARY, 64);
	notify_on(probe_rsp, sp);
	/* The SysV ABI's function entry: rsp + 8 a multiple of 16. */
	assert_int_equal((entry_rsp + 8) % 16, 0);
	assert_int_equal(entry_rsp, ((sp - 8) & ~(uint64_t)15) - 8);
	for (i = 0; i < 64; i++)
		assert_int_equal(stack[off + i], CANARY);
	return NULL;
}

static void test_entry_layout(void **state)
{
	(void)state;
	run_on_thread(layout, (void *)(uintptr_t)STACK_SIZE);
	run_on_thread(layout, (void *)(uintptr_t)(STACK_SIZE - 8));
}
#endif

/*
 * A thread that vanishes by a raw exit never runs its destructors, which
 * the sanitizers' thread bookkeeping needs: not under sanitizers.
 */
#if defined(__x86_64__) && !defined(FIBER_TRAMPOLINE)
/* An exit the filter lets through: not from inside libc's syscall(). */
static void raw_exits(void)
{
	atomic_fetch_add(&ran, 1);
	for (;;)
		__asm__ volatile("syscall"
				 :
				 : "a"((long)SYS_exit), "D"(0L)
				 : "rcx", "r11", "memory");
}

static void returns(void)
{
	atomic_fetch_add(&ran, 1);
}

static const struct fn f_raw_exits = { raw_exits }, f_returns = { returns };

static void test_raw_exit_vanishes(void **state)
{
	(void)state;
	atomic_store(&ran, 0);
	/* The thread really ends (join returns), holding the sp busy... */
	run_on_thread(init_and_notify, (void *)&f_raw_exits);
	assert_int_equal(atomic_load(&ran), 1);
	/* ...and the next notifier on that sp is not kept waiting. */
	run_on_thread(init_and_notify, (void *)&f_returns);
	assert_int_equal(atomic_load(&ran), 2);
}
#endif

/* The exit is performed by a raw syscall: not under sanitizers either. */
#ifndef FIBER_TRAMPOLINE
static void *exit_outside(void *arg)
{
	(void)arg;
	thread_init();
	syscall(SYS_exit, 0);
	atomic_fetch_add(&after_exit, 1);
	return NULL;
}

static void test_exit_outside_notifier(void **state)
{
	(void)state;
	atomic_store(&after_exit, 0);
	run_on_thread(exit_outside, NULL);
	assert_int_equal(atomic_load(&after_exit), 0);
	assert_null(syslet_current_completion());
}
#endif

static _Atomic uint64_t seen_data;

/* The slot is reused (consumed, then refilled) while the notifier runs. */
static void slot_reused(void)
{
	comp.caller_data = 7;
	comp.status = (uint64_t)-5;
	atomic_store(&seen_data, syslet_current_completion()->caller_data ^
					 syslet_current_completion()->status);
}

static void *announce(void *arg)
{
	struct syslet__job job = { .ip = (uint64_t)(uintptr_t)slot_reused,
				   .sp = sp_at(STACK_SIZE) };

	(void)arg;
	thread_init();
	job.cnode.caller_data = 42;
	job.cnode.status = 3;
	comp.caller_data = 42;
	comp.status = 3;
	syslet__notify_run(&job, &comp);
	return NULL;
}

/* syslet_current_completion() keeps giving the completion announced. */
static void test_current_is_stable(void **state)
{
	(void)state;
	run_on_thread(announce, NULL);
	assert_int_equal(atomic_load(&seen_data), 42 ^ 3);
	assert_null(syslet_current_completion());
}

/* TSan does not support threads started after a multi-threaded fork. */
#if !defined(__SANITIZE_THREAD__) && !defined(FIBER_TRAMPOLINE_TSAN)
static _Atomic int held, release;

static void counts(void)
{
	atomic_fetch_add(&ran, 1);
}

static void holds_sp(void)
{
	atomic_store(&held, 1);
	while (!atomic_load(&release))
		sched_yield();
}

static const struct fn f_holds_sp = { holds_sp };

static void *timed_notify(void *arg)
{
	(void)arg;
	notify_on(counts, sp_at(STACK_SIZE));
	return NULL;
}

/* A fork child can use an sp a parent's notifier was on at the fork. */
static void test_fork_while_busy(void **state)
{
	struct timespec end;
	pthread_t a, t;
	pid_t pid;
	int status, ok;

	(void)state;
	atomic_store(&held, 0);
	atomic_store(&release, 0);
	assert_int_equal(pthread_create(&a, NULL, init_and_notify,
					(void *)&f_holds_sp),
			 0);
	while (!atomic_load(&held))
		sched_yield();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		atomic_store(&ran, 0);
		clock_gettime(CLOCK_REALTIME, &end);
		end.tv_sec += 20;
		ok = !pthread_create(&t, NULL, timed_notify, NULL) &&
		     !pthread_timedjoin_np(t, NULL, &end) &&
		     atomic_load(&ran) == 1;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	atomic_store(&release, 1);
	assert_int_equal(pthread_join(a, NULL), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sys_exit_no_side_effects),
		cmocka_unit_test(test_child_of_notifier),
#if defined(__x86_64__) && !defined(FIBER_TRAMPOLINE)
		cmocka_unit_test(test_entry_layout),
#endif
#if defined(__x86_64__) && !defined(FIBER_TRAMPOLINE)
		cmocka_unit_test(test_raw_exit_vanishes),
#endif
#ifndef FIBER_TRAMPOLINE
		cmocka_unit_test(test_exit_outside_notifier),
#endif
		cmocka_unit_test(test_current_is_stable),
#if !defined(__SANITIZE_THREAD__) && !defined(FIBER_TRAMPOLINE_TSAN)
		cmocka_unit_test(test_fork_while_busy),
#endif
	};

#ifndef __x86_64__
	return 77;
#endif
	return cmocka_run_group_tests(tests, NULL, NULL);
}
