/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the ring under injected faults (-Dfault_injection=true,
 * skipped otherwise): a failed allocation of side state is -ENOMEM for that
 * call only, and a wait whose futex calls all fail still honours its
 * timeout and still returns on a post.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

static struct syslet_ring *new_ring(void)
{
	struct syslet_ring *ring = aligned_alloc(64, 128);

	assert_non_null(ring);
	assert_int_equal(syslet_ring_init(ring, 4), 0);
	return ring;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs first: the first allocation of the process is the table's. */
static void test_alloc(void **state)
{
	struct syslet_ring *ring = new_ring();
	struct syslet__rstate *rs;

	(void)state;
	assert_int_equal(syslet__ring_reserve(ring, &rs), -ENOMEM);
	assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	syslet__ring_unreserve(rs);
	free(ring);
}

static void *post_later(void *arg)
{
	struct syslet_ring *ring = arg;
	struct syslet__cnode n = { .caller_data = 3 };
	struct syslet__rstate *rs;

	if (syslet__ring_reserve(ring, &rs) == 0)
		syslet__ring_post(rs, &n);
	return NULL;
}

static void test_futex(void **state)
{
	const struct timespec ms50 = { .tv_nsec = 50000000 };
	const struct timespec limit = { .tv_sec = 30 };
	struct syslet_ring *ring = new_ring();
	pthread_t t;
	double t0;

	(void)state;
	t0 = now_sec();
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &ms50), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_true(now_sec() - t0 >= 0.05);
	assert_int_equal(pthread_create(&t, NULL, post_later, ring), 0);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &limit), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ring->comp[0].caller_data, 3);
	free(ring);
}

#ifdef SYSLET_FAULT_INJECTION
static const int fault_build = 1;
#else
static const int fault_build = 0;
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_futex),
	};

	if (!fault_build)
		return 77;
	/* The 1st allocation fails, and every futex wait. */
	setenv("SYSLET_FAULT", "alloc=@1,futex=@1+,report=0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
