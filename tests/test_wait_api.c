/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: syslet_ring_wait and syslet_ring_wait_timeout as exported
 * by libsyslet.so: errors, an immediate return, a timeout, and a wait
 * ended by the completion of a call that went pending through indirect().
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

/* A wait that hangs kills the test (SIGALRM) instead of blocking it. */
#define BOUND_SEC 30

static void test_errors(void **state)
{
	const struct timespec bad = { .tv_nsec = 1000000000 };
	struct syslet_ring *ring = aligned_alloc(8, syslet_ring_size(4));

	(void)state;
	assert_non_null(ring);
	assert_int_equal(syslet_ring_wait(NULL, 0), -1);
	assert_int_equal(errno, EFAULT);
	ring->elements = 5;
	assert_int_equal(syslet_ring_wait(ring, 0), -1);
	assert_int_equal(errno, EINVAL);
	syslet_ring_init(ring, 4);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &bad), -1);
	assert_int_equal(errno, EINVAL);
	free(ring);
}

static void test_at_once_and_timeout(void **state)
{
	const struct timespec ms10 = { .tv_nsec = 10000000 };
	struct syslet_ring *ring = aligned_alloc(8, syslet_ring_size(4));

	(void)state;
	assert_non_null(ring);
	syslet_ring_init(ring, 4);
	alarm(BOUND_SEC);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &ms10), -1);
	assert_int_equal(errno, ETIMEDOUT);
	ring->kernel_head = 1;
	assert_int_equal(syslet_ring_wait(ring, 0), 0);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &ms10), 0);
	alarm(0);
	free(ring);
}

static void test_pending_read(void **state)
{
	struct syslet_ring *ring = aligned_alloc(8, syslet_ring_size(4));
	union indirect_params p = { 0 };
	struct indirect_registers regs;
	char buf[8];
	int fds[2];

	(void)state;
	assert_non_null(ring);
	syslet_ring_init(ring, 4);
	assert_int_equal(pipe(fds), 0);
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = 77;
	FILL_IN(regs, SYS_read, fds[0], buf, sizeof(buf));
	/* An empty pipe: the read goes pending. */
	assert_int_equal(indirect(&regs, &p, sizeof(p), 0), -1);
	assert_int_equal(errno, ESYSLETPENDING);
	assert_int_equal(write(fds[1], "abc", 3), 3);
	alarm(BOUND_SEC);
	assert_int_equal(syslet_ring_wait(ring, 0), 0);
	alarm(0);
	assert_int_equal(syslet_ring_head(ring), 1);
	assert_int_equal(ring->comp[0].status, 3);
	assert_int_equal(ring->comp[0].caller_data, 77);
	syslet_ring_advance(ring, 1);
	close(fds[0]);
	close(fds[1]);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_at_once_and_timeout),
		cmocka_unit_test(test_pending_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
