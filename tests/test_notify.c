/* SPDX-License-Identifier: MIT */
/*
 * Description: the ip/sp notifier end to end through indirect(): a
 * notifier that returns, one that calls syslet_notify_exit(), one that ends
 * with syscall(SYS_exit, 0); each runs once per completion, on its stack,
 * with its worker's mask (every signal blocked but SIGSYS and the cancel
 * signal), syslet_current_completion() giving its completion;
 * notifiers sharing one sp never overlap; 10,000 SYS_exit notifiers lose
 * nothing and the process still makes threads and exits normally.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

/* TSan: a thread of its own, started late; no threads after a fork. */
#if defined(__SANITIZE_THREAD__)
#define TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN 1
#endif
#endif
#ifdef TSAN
#define TSAN_THREADS 1
#else
#define TSAN_THREADS 0
#endif

#define STACK_SIZE (64 * 1024)
#define NSTACKS 4
#define RING_ELEMS 16384
#define WAIT_S 30
#define CD_MAGIC 0x5ee1e70000000000ull

enum how { RETURN, NOTIFY_EXIT, SYS_EXIT };

static _Alignas(64) unsigned char stacks[NSTACKS][STACK_SIZE];
static struct syslet_ring *ring;

/* What the notifiers saw; checked by the test thread afterwards. */
static _Atomic enum how how;
static _Atomic int nstacks; /* notifiers choose among this many */
static _Atomic uint32_t done; /* notifiers run (futex word) */
static _Atomic int inside[NSTACKS]; /* notifiers on each stack now */
static _Atomic int max_inside;
static _Atomic int bad_stack, bad_mask, bad_current, bad_after_exit;
static _Atomic uint8_t *seen; /* by caller_data index */

static uint64_t sp_of(int s)
{
	return (uint64_t)(uintptr_t)(stacks[s] + STACK_SIZE);
}

static void wake_done(void)
{
	atomic_fetch_add(&done, 1);
	syscall(SYS_futex, &done, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

static long cancel_signal; /* read in main() */

static void check_mask(void)
{
	sigset_t m;
	int s;

	pthread_sigmask(SIG_BLOCK, NULL, &m);
	for (s = 1; s <= SIGRTMAX; s++) {
		/*
		 * Unblockable; a seccomp trap's; glibc's own; the cancel
		 * signal, which the worker never blocks (no mask switch).
		 */
		if (s == SIGKILL || s == SIGSTOP || s == SIGSYS ||
		    (s > 31 && s < SIGRTMIN) || s == cancel_signal)
			continue;
		if (!sigismember(&m, s))
			atomic_fetch_add(&bad_mask, 1);
	}
}

/* The body every notifier runs; returns the stack it is on. */
static int notifier_body(void)
{
	volatile char local = 0;
	uintptr_t a = (uintptr_t)&local;
	struct syslet_completion *c = syslet_current_completion();
	int s, n, m;
	uint64_t i;

	for (s = 0; s < NSTACKS; s++)
		if (a >= (uintptr_t)stacks[s] && a < sp_of(s))
			break;
	if (s == NSTACKS) {
		atomic_fetch_add(&bad_stack, 1);
		return 0;
	}
	n = atomic_fetch_add(&inside[s], 1) + 1;
	m = atomic_load(&max_inside);
	while (n > m && !atomic_compare_exchange_weak(&max_inside, &m, n))
		;
	check_mask();
	if (!c || (c->caller_data & ~0xffffffffull) != CD_MAGIC ||
	    c->status != 0) {
		atomic_fetch_add(&bad_current, 1);
	} else {
		i = c->caller_data & 0xffffffffull;
		atomic_fetch_add(&seen[i], 1);
		/* Its stack is the one the caller chose for it. */
		if ((int)(i % (uint64_t)atomic_load(&nstacks)) != s)
			atomic_fetch_add(&bad_stack, 1);
	}
	/* Widen the window in which an overlap would show. */
	sched_yield();
	atomic_fetch_sub(&inside[s], 1);
	return s;
}

static void notifier(void)
{
	notifier_body();
	switch (atomic_load(&how)) {
	case RETURN:
		wake_done();
		return;
	case NOTIFY_EXIT:
		wake_done();
		syslet_notify_exit();
	case SYS_EXIT:
		wake_done();
		syscall(SYS_exit, 0);
		atomic_fetch_add(&bad_after_exit, 1);
		return;
	}
}

static void wait_done(uint32_t target)
{
	struct timespec end, now, tick = { 1, 0 };
	uint32_t v;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += WAIT_S;
	while ((v = atomic_load(&done)) < target) {
		syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, v, &tick, NULL,
			0);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec > end.tv_nsec))
			fail_msg("only %u of %u notifiers ran in %d s",
				 atomic_load(&done), target, WAIT_S);
	}
}

static void submit(uint32_t i)
{
	static const struct timespec ns1 = { 0, 1 };
	struct indirect_registers regs;
	struct syslet_args args = {
		.completion_ring_ptr = (uint64_t)(uintptr_t)ring,
		.caller_data = CD_MAGIC | i,
		.frame.ip = (uint64_t)(uintptr_t)notifier,
		.frame.sp = sp_of((int)(i % (uint32_t)atomic_load(&nstacks))),
	};
	long r;

	/* A 1 ns sleep is never answered inline: it goes to a worker. */
	FILL_IN(regs, SYS_nanosleep, &ns1, NULL);
	r = indirect(&regs, &args, sizeof(args), 0);
	assert_int_equal(r, -1);
	assert_int_equal(errno, ESYSLETPENDING);
}

static void reset(enum how h, int n_stacks, uint32_t calls)
{
	atomic_store(&how, h);
	atomic_store(&nstacks, n_stacks);
	atomic_store(&done, 0);
	atomic_store(&max_inside, 0);
	atomic_store(&bad_stack, 0);
	atomic_store(&bad_mask, 0);
	atomic_store(&bad_current, 0);
	atomic_store(&bad_after_exit, 0);
	memset((void *)seen, 0, calls);
	syslet_ring_init(ring, RING_ELEMS);
}

/* Every completion in the ring once, every notifier once, nothing amiss. */
static void check_all(uint32_t calls, int max_overlap)
{
	uint32_t head = syslet_ring_head(ring), k;
	uint8_t *inring = calloc(calls, 1);

	assert_non_null(inring);
	assert_int_equal(syslet_drain(), 0);
	assert_int_equal(head - ring->user_tail, calls);
	for (k = ring->user_tail; k != head; k++) {
		struct syslet_completion *c = syslet_ring_slot(ring, k);

		assert_int_equal(c->caller_data & ~0xffffffffull, CD_MAGIC);
		assert_true((c->caller_data & 0xffffffffull) < calls);
		assert_int_equal(c->status, 0);
		inring[c->caller_data & 0xffffffffull]++;
	}
	for (k = 0; k < calls; k++) {
		assert_int_equal(inring[k], 1);
		assert_int_equal(atomic_load(&seen[k]), 1);
	}
	free(inring);
	syslet_ring_advance(ring, calls);
	assert_int_equal(atomic_load(&done), calls);
	assert_int_equal(atomic_load(&bad_stack), 0);
	assert_int_equal(atomic_load(&bad_mask), 0);
	assert_int_equal(atomic_load(&bad_current), 0);
	assert_int_equal(atomic_load(&bad_after_exit), 0);
	assert_in_range(atomic_load(&max_inside), 1, max_overlap);
}

/* @calls notifiers ending @h, at most @window in flight at once. */
static void run(enum how h, int n_stacks, uint32_t calls, uint32_t window)
{
	uint32_t i;

	reset(h, n_stacks, calls);
	for (i = 0; i < calls; i++) {
		if (i >= window)
			wait_done(i - window + 1);
		submit(i);
	}
	wait_done(calls);
	check_all(calls, 1);
}

static void test_return(void **state)
{
	(void)state;
	run(RETURN, NSTACKS, 64, 16);
}

static void test_notify_exit(void **state)
{
	(void)state;
	run(NOTIFY_EXIT, NSTACKS, 64, 16);
}

static void test_sys_exit(void **state)
{
	(void)state;
	run(SYS_EXIT, NSTACKS, 64, 16);
}

static void test_current_outside(void **state)
{
	(void)state;
	assert_null(syslet_current_completion());
}

struct submitter {
	pthread_t t;
	uint32_t first, n;
};

static void *submit_many(void *arg)
{
	struct submitter *s = arg;
	uint32_t i;

	for (i = s->first; i < s->first + s->n; i++)
		submit(i);
	return NULL;
}

/* Several threads, several hundred calls, one sp: never two at once. */
static void shared_sp(enum how h)
{
	enum { THREADS = 4, EACH = 150 };
	struct submitter s[THREADS];
	int k;

	reset(h, 1, THREADS * EACH);
	for (k = 0; k < THREADS; k++) {
		s[k].first = (uint32_t)k * EACH;
		s[k].n = EACH;
		assert_int_equal(
			pthread_create(&s[k].t, NULL, submit_many, &s[k]), 0);
	}
	for (k = 0; k < THREADS; k++)
		pthread_join(s[k].t, NULL);
	wait_done(THREADS * EACH);
	check_all(THREADS * EACH, 1);
}

static void test_shared_sp_return(void **state)
{
	(void)state;
	shared_sp(RETURN);
}

static void test_shared_sp_sys_exit(void **state)
{
	(void)state;
	shared_sp(SYS_EXIT);
}

static void *nop(void *arg)
{
	return arg;
}

#ifndef TSAN
/* A child (with workers of its own) runs SYS_exit notifiers, ends normally. */
static void fork_child(void)
{
	pthread_t t;
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		reset(SYS_EXIT, NSTACKS, 8);
		for (uint32_t i = 0; i < 8; i++)
			submit(i);
		wait_done(8);
		syslet_drain();
		if (pthread_create(&t, NULL, nop, NULL) ||
		    pthread_join(t, NULL))
			_exit(2);
		exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}
#endif

/* 10,000 SYS_exit notifiers; then threads and exit still work. */
static void test_sys_exit_10000(void **state)
{
	pthread_t t;
	void *ret = NULL;

	(void)state;
	run(SYS_EXIT, NSTACKS, 10000, 256);
	assert_int_equal(pthread_create(&t, NULL, nop, ring), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, ring);
#ifndef TSAN
	fork_child();
#endif
}

static int base_threads;

static int threads_now(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * Last: workers that ran trapped SYS_exit notifiers retire through glibc's
 * thread exit, with every signal blocked, which the trap must let through
 * (else SIGSYS, forced to its default action, kills the process).
 */
static void test_workers_retire(void **state)
{
	struct timespec end, now, tick = { 0, 1000000 };

	(void)state;
	run(SYS_EXIT, NSTACKS, 256, 64);
	/* The real pool: no idle floor (the stub's workers always retire). */
	if (syslet_config_get(SYSLET_OPT_IDLE_MS) > 0)
		assert_int_equal(syslet_config_set(SYSLET_OPT_MIN_WORKERS, 0),
				 0);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += WAIT_S;
	/* The threads before any worker, the manager, the pool's last one. */
	while (threads_now() > base_threads + 2) {
		nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec > end.tv_nsec))
			fail_msg("%d threads still there after %d s",
				 threads_now(), WAIT_S);
	}
}

static int setup(void **state)
{
	(void)state;
	/* The main thread, and a sanitizer's own. */
	base_threads = threads_now() + TSAN_THREADS;
	/* Idle workers retire soon (test_workers_retire); not in the stub. */
	syslet_config_set(SYSLET_OPT_IDLE_MS, 100);
	ring = malloc(syslet_ring_size(RING_ELEMS));
	seen = calloc(RING_ELEMS, 1);
	return ring && seen ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_current_outside),
		cmocka_unit_test(test_return),
		cmocka_unit_test(test_notify_exit),
		cmocka_unit_test(test_sys_exit),
		cmocka_unit_test(test_shared_sp_return),
		cmocka_unit_test(test_shared_sp_sys_exit),
		cmocka_unit_test(test_sys_exit_10000),
		cmocka_unit_test(test_workers_retire),
	};

	cancel_signal = syslet_config_get(SYSLET_OPT_CANCEL_SIGNAL);
	return cmocka_run_group_tests(tests, setup, NULL);
}
