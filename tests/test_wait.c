/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: syslet_ring_wait{,_timeout} against the real completion
 * writer: at once when kernel_head != user_idx, woken by a post on a ring
 * nobody submitted to before, one FUTEX_WAKE per publish only while someone
 * waits, -1/EINTR from a signal handler (with or without SA_RESTART),
 * ETIMEDOUT despite spurious futex wake-ups, and bad arguments.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

/* Every wait for another thread is bounded: a stuck test fails loudly. */
#define BOUND_SEC 30

static struct syslet_ring *new_ring(uint32_t elements)
{
	struct syslet_ring *ring = aligned_alloc(
		64, (syslet_ring_size(elements) + 63) & ~(size_t)63);

	assert_non_null(ring);
	assert_int_equal(syslet_ring_init(ring, elements), 0);
	return ring;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct waiter {
	pthread_t thread;
	struct syslet_ring *ring;
	uint32_t idx;
	const struct timespec *timeout; /* NULL: syslet_ring_wait() */
	_Atomic pid_t tid;
	_Atomic int done;
	int ret, err;
	double elapsed;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	double t0 = now_sec();

	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	if (w->timeout)
		w->ret = syslet_ring_wait_timeout(w->ring, w->idx, w->timeout);
	else
		w->ret = syslet_ring_wait(w->ring, w->idx);
	w->err = errno;
	w->elapsed = now_sec() - t0;
	atomic_store(&w->done, 1);
	return NULL;
}

static void start_waiter(struct waiter *w, struct syslet_ring *ring,
			 uint32_t idx, const struct timespec *timeout)
{
	memset(w, 0, sizeof(*w));
	w->ring = ring;
	w->idx = idx;
	w->timeout = timeout;
	assert_int_equal(pthread_create(&w->thread, NULL, wait_thread, w), 0);
}

/* True once thread @tid sleeps in a futex wait (bounded poll). */
static bool asleep(struct waiter *w)
{
	double end = now_sec() + BOUND_SEC;
	char path[64], buf[512], wchan[64];
	FILE *f;

	while (now_sec() < end && !atomic_load(&w->done)) {
		pid_t tid = atomic_load(&w->tid);
		char *p, st = 0;

		if (!tid) {
			sched_yield();
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		f = fopen(path, "r");
		if (f) {
			if (fgets(buf, sizeof(buf), f)) {
				p = strrchr(buf, ')');
				if (p && p[1])
					st = p[2];
			}
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", tid);
		wchan[0] = 0;
		f = fopen(path, "r");
		if (f) {
			if (!fgets(wchan, sizeof(wchan), f))
				wchan[0] = 0;
			fclose(f);
		}
		/* wchan reads "0" where the kernel hides it. */
		if (st == 'S' &&
		    (strstr(wchan, "futex") || !strcmp(wchan, "0")))
			return true;
		sched_yield();
	}
	return false;
}

static void join_waiter(struct waiter *w)
{
	double end = now_sec() + BOUND_SEC;

	while (!atomic_load(&w->done) && now_sec() < end)
		sched_yield();
	if (!atomic_load(&w->done))
		fail_msg("waiter still asleep after %d s", BOUND_SEC);
	assert_int_equal(pthread_join(w->thread, NULL), 0);
}

static void post_one(struct syslet_ring *ring, uint64_t cd)
{
	struct syslet__cnode n = { .status = cd, .caller_data = cd };
	struct syslet__rstate *rs;

	assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	syslet__ring_post(rs, &n);
}

static void test_at_once(void **state)
{
	const struct timespec zero = { 0 };
	struct syslet_ring *ring = new_ring(8);

	(void)state;
	alarm(BOUND_SEC);
	ring->kernel_head = 5;
	ring->user_tail = 3;
	errno = 1234;
	assert_int_equal(syslet_ring_wait(ring, 4), 0);
	assert_int_equal(syslet_ring_wait(ring, 3), 0);
	assert_int_equal(syslet_ring_wait_timeout(ring, 4, &zero), 0);
	assert_int_equal(syslet_ring_wait_timeout(ring, 4, NULL), 0);
	assert_int_equal(errno, 1234);
	alarm(0);
	free(ring);
}

static void test_bad_args(void **state)
{
	const struct timespec ok = { .tv_nsec = 1000 };
	const struct timespec bad[] = {
		{ .tv_nsec = 1000000000 },
		{ .tv_nsec = -1 },
		{ .tv_sec = -1 },
	};
	uint64_t buf[16] = { 0 };
	struct syslet_ring *ring = (struct syslet_ring *)buf;
	struct syslet_ring *odd = (struct syslet_ring *)((char *)buf + 4);
	size_t i;

	(void)state;
	assert_int_equal(syslet_ring_wait(NULL, 0), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(syslet_ring_wait_timeout(NULL, 0, &ok), -1);
	assert_int_equal(errno, EFAULT);
	/* memcpy: the test itself must not access a misaligned ring */
	memcpy((char *)odd + offsetof(struct syslet_ring, elements),
	       &(uint32_t){ 4 }, sizeof(uint32_t));
	assert_int_equal(syslet_ring_wait(odd, 0), -1);
	assert_int_equal(errno, EINVAL);
	ring->elements = 0;
	assert_int_equal(syslet_ring_wait(ring, 0), -1);
	assert_int_equal(errno, EINVAL);
	ring->elements = 12;
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &ok), -1);
	assert_int_equal(errno, EINVAL);
	ring->elements = 4;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* Rejected even when the ring already has a completion. */
		ring->kernel_head = (uint32_t)i;
		assert_int_equal(syslet_ring_wait_timeout(ring, 0, &bad[i]),
				 -1);
		assert_int_equal(errno, EINVAL);
	}
}

static void test_timeout(void **state)
{
	const struct timespec zero = { 0 }, ms50 = { .tv_nsec = 50000000 };
	struct syslet_ring *ring = new_ring(4);
	double t0;

	(void)state;
	alarm(BOUND_SEC);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &zero), -1);
	assert_int_equal(errno, ETIMEDOUT);
	t0 = now_sec();
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &ms50), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_true(now_sec() - t0 >= 0.05);
	alarm(0);
	free(ring);
}

/* Spurious futex wake-ups neither end the wait early nor stretch it. */
static void test_timeout_spurious(void **state)
{
	const struct timespec ms300 = { .tv_nsec = 300000000 };
	struct syslet_ring *ring = new_ring(4);
	struct waiter w;
	int wakes = 0;

	(void)state;
	start_waiter(&w, ring, 0, &ms300);
	assert_true(asleep(&w));
	while (!atomic_load(&w.done) && wakes < 1000000) {
		wakes += (int)syscall(SYS_futex, &ring->kernel_head,
				      FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		sched_yield();
	}
	join_waiter(&w);
	assert_int_equal(w.ret, -1);
	assert_int_equal(w.err, ETIMEDOUT);
	assert_true(wakes > 0);
	assert_true(w.elapsed >= 0.3);
	free(ring);
}

/* Memory no other ring of this process has used. */
static _Alignas(64) uint64_t fresh_mem[(16 + 4 * 16) / 8];

static void test_wake_on_publish(void **state)
{
	const struct timespec long_wait = { .tv_sec = BOUND_SEC };
	struct syslet_ring *ring = (struct syslet_ring *)fresh_mem;
	struct syslet__rstate *rs;
	struct waiter w;
	uint64_t wakes = syslet__ring_wakes();

	(void)state;
	assert_int_equal(syslet_ring_init(ring, 4), 0);
	/* Nobody has submitted to this ring: the wait allocates nothing. */
	start_waiter(&w, ring, 0, NULL);
	assert_true(asleep(&w));
	assert_int_equal(syslet__ring_get(ring, false, &rs), -ENOENT);
	assert_int_equal(syslet__ring_wakes(), wakes);
	post_one(ring, 11);
	join_waiter(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(syslet__ring_wakes(), wakes + 1);
	assert_int_equal(ring->comp[0].caller_data, 11);

	/* The timeout variant is woken the same way. */
	start_waiter(&w, ring, 1, &long_wait);
	assert_true(asleep(&w));
	post_one(ring, 12);
	join_waiter(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(syslet__ring_wakes(), wakes + 2);

	/* Nobody waits any more: posting costs no wake-up. */
	post_one(ring, 13);
	assert_int_equal(syslet_ring_head(ring), 3);
	assert_int_equal(syslet__ring_wakes(), wakes + 2);
	/* Nothing pending: the ring's side state is gone. */
	assert_int_equal(syslet__ring_get(ring, false, &rs), -ENOENT);
}

static void test_many_waiters(void **state)
{
	struct syslet_ring *ring = new_ring(4);
	uint64_t wakes = syslet__ring_wakes();
	struct waiter w[4];
	int i;

	(void)state;
	for (i = 0; i < 4; i++)
		start_waiter(&w[i], ring, 0, NULL);
	for (i = 0; i < 4; i++)
		assert_true(asleep(&w[i]));
	post_one(ring, 1);
	for (i = 0; i < 4; i++) {
		join_waiter(&w[i]);
		assert_int_equal(w[i].ret, 0);
	}
	/* One FUTEX_WAKE for all of them. */
	assert_int_equal(syslet__ring_wakes(), wakes + 1);
	free(ring);
}

static _Atomic int handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void eintr(int sa_flags, const struct timespec *timeout)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = sa_flags };
	struct syslet_ring *ring = new_ring(4);
	struct waiter w;

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&handled, 0);
	start_waiter(&w, ring, 0, timeout);
	assert_true(asleep(&w));
	assert_int_equal(pthread_kill(w.thread, SIGUSR1), 0);
	join_waiter(&w);
	assert_int_equal(w.ret, -1);
	assert_int_equal(w.err, EINTR);
	assert_int_equal(atomic_load(&handled), 1);
	signal(SIGUSR1, SIG_DFL);
	free(ring);
}

static void test_eintr(void **state)
{
	const struct timespec long_wait = { .tv_sec = BOUND_SEC };

	(void)state;
	eintr(0, NULL);
	eintr(0, &long_wait);
}

/* Unlike most system calls, the wait is not restarted after a handler. */
static void test_eintr_sa_restart(void **state)
{
	const struct timespec long_wait = { .tv_sec = BOUND_SEC };

	(void)state;
	eintr(SA_RESTART, NULL);
	eintr(SA_RESTART, &long_wait);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at_once),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_timeout_spurious),
		cmocka_unit_test(test_wake_on_publish),
		cmocka_unit_test(test_many_waiters),
		cmocka_unit_test(test_eintr),
		cmocka_unit_test(test_eintr_sa_restart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
