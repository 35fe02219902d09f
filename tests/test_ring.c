/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the completion writer of ring.c, one thread at a time:
 * reservation arithmetic and refusal when full, posting in index order,
 * the full 64-bit status, u32 index wrap, resync of a re-initialised ring,
 * the fork-child reset, and no FUTEX_WAKE when nobody waits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

static struct syslet_ring *new_ring(uint32_t elements, uint32_t start)
{
	struct syslet_ring *ring = aligned_alloc(
		64, (syslet_ring_size(elements) + 63) & ~(size_t)63);

	assert_non_null(ring);
	memset(ring, 0xa5, syslet_ring_size(elements));
	assert_int_equal(syslet_ring_init(ring, elements), 0);
	ring->kernel_head = start;
	ring->user_tail = start;
	return ring;
}

/* Reserve and post one completion; return the index it landed at. */
static uint32_t post_one(struct syslet_ring *ring, uint64_t status, uint64_t cd)
{
	struct syslet__cnode n = { .status = status, .caller_data = cd };
	struct syslet__rstate *rs;

	assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	syslet__ring_post(rs, &n);
	assert_int_equal(atomic_load(&n.posted), 1);
	return n.index;
}

static void test_check(void **state)
{
	uint64_t buf[8] = { 0 };
	struct syslet_ring *ring = (struct syslet_ring *)buf;

	(void)state;
	assert_int_equal(syslet__ring_check(NULL), -EFAULT);
	ring->elements = 4;
	assert_int_equal(syslet__ring_check(ring), 0);
	assert_int_equal(
		syslet__ring_check((struct syslet_ring *)((char *)buf + 4)),
		-EINVAL);
	ring->elements = 0;
	assert_int_equal(syslet__ring_check(ring), -EINVAL);
	ring->elements = 6;
	assert_int_equal(syslet__ring_check(ring), -EINVAL);
	ring->elements = 1;
	assert_int_equal(syslet__ring_check(ring), 0);
}

static void test_state_lookup(void **state)
{
	struct syslet_ring *a = new_ring(4, 0), *b = new_ring(4, 0);
	struct syslet__rstate *ra, *ra2, *rb;

	(void)state;
	assert_int_equal(syslet__ring_get(a, false, &ra), -ENOENT);
	assert_int_equal(syslet__ring_get(a, true, &ra), 0);
	assert_int_equal(syslet__ring_get(b, true, &rb), 0);
	assert_int_equal(syslet__ring_get(a, false, &ra2), 0);
	assert_ptr_equal(ra, ra2);
	assert_ptr_not_equal(ra, rb);
	assert_ptr_equal(syslet__ring_of(ra), a);
	assert_ptr_equal(syslet__ring_of(rb), b);
	assert_int_equal((uintptr_t)ra % 64, 0);
	syslet__ring_put(ra2);
	/* Still held once: still found. */
	assert_int_equal(syslet__ring_get(a, false, &ra2), 0);
	assert_ptr_equal(ra, ra2);
	syslet__ring_put(ra2);
	syslet__ring_put(ra);
	syslet__ring_put(rb);
	/* The last reference gone, the state is too. */
	assert_int_equal(syslet__ring_get(a, false, &ra), -ENOENT);
	assert_int_equal(syslet__ring_get(b, false, &rb), -ENOENT);
	free(a);
	free(b);
}

static void test_reserve_full(void **state)
{
	struct syslet_ring *ring = new_ring(4, 0);
	struct syslet__cnode n[4] = { 0 };
	struct syslet__rstate *rs, *r2;
	int i;

	(void)state;
	for (i = 0; i < 4; i++)
		assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	assert_int_equal(syslet__ring_reserve(ring, &r2), -EBUSY);
	/* A call that never started gives its slot back. */
	syslet__ring_unreserve(rs);
	assert_int_equal(syslet__ring_reserve(ring, &r2), 0);
	assert_ptr_equal(r2, rs);
	assert_int_equal(syslet__ring_reserve(ring, &r2), -EBUSY);

	/* Posted but unconsumed completions still hold their slots. */
	for (i = 0; i < 2; i++) {
		n[i].status = (uint64_t)i;
		n[i].caller_data = 100 + (uint64_t)i;
		syslet__ring_post(rs, &n[i]);
		assert_int_equal(n[i].index, i);
	}
	assert_int_equal(syslet_ring_head(ring), 2);
	assert_int_equal(syslet__ring_reserve(ring, &r2), -EBUSY);
	assert_int_equal(ring->comp[1].caller_data, 101);

	/* Consuming one frees exactly one. */
	syslet_ring_advance(ring, 1);
	assert_int_equal(syslet__ring_reserve(ring, &r2), 0);
	assert_int_equal(syslet__ring_reserve(ring, &r2), -EBUSY);

	/* Post the 3 in flight, consume all: the ring is empty again. */
	for (i = 0; i < 3; i++) {
		struct syslet__cnode c = { .caller_data = 7 };

		syslet__ring_post(rs, &c);
		assert_int_equal(c.index, 2 + i);
	}
	assert_int_equal(syslet_ring_head(ring), 5);
	assert_int_equal(ring->comp[4 & 3].caller_data, 7);
	syslet_ring_advance(ring, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(syslet__ring_reserve(ring, &r2), 0);
	assert_int_equal(syslet__ring_reserve(ring, &r2), -EBUSY);
	for (i = 0; i < 4; i++)
		syslet__ring_unreserve(rs);
	free(ring);
}

static void test_ring_of_one(void **state)
{
	struct syslet_ring *ring = new_ring(1, 0);
	struct syslet__rstate *rs;
	uint32_t i;

	(void)state;
	for (i = 0; i < 10; i++) {
		assert_int_equal(post_one(ring, i, i), i);
		assert_int_equal(syslet__ring_reserve(ring, &rs), -EBUSY);
		assert_int_equal(ring->comp[0].caller_data, i);
		syslet_ring_advance(ring, 1);
	}
	free(ring);
}

static void test_full_status(void **state)
{
	struct syslet_ring *ring = new_ring(4, 0);
	const uint64_t big = 0x123456789abcdef0ull;
	const uint64_t rfkill = (uint64_t)-132;

	(void)state;
	post_one(ring, big, 1);
	post_one(ring, rfkill, 2);
	assert_true(ring->comp[0].status == big);
	assert_true((int64_t)ring->comp[1].status == -132);
	assert_int_equal(ring->comp[1].caller_data, 2);
	free(ring);
}

static void test_wrap(void **state)
{
	struct syslet_ring *ring = new_ring(8, 0xfffffff0u);
	struct syslet__rstate *rs;
	uint32_t i, idx, expect = 0xfffffff0u;

	(void)state;
	for (i = 0; i < 64; i++) {
		/* Keep up to 5 unconsumed, so that the full test also wraps. */
		idx = post_one(ring, ~(uint64_t)i, i);
		assert_int_equal(idx, expect);
		expect++;
		assert_int_equal(syslet_ring_head(ring), expect);
		if (expect - ring->user_tail == 8) {
			assert_int_equal(syslet__ring_reserve(ring, &rs),
					 -EBUSY);
			syslet_ring_advance(ring, 3);
		}
		assert_true(syslet_ring_slot(ring, idx)->status ==
			    ~(uint64_t)i);
	}
	assert_int_equal(syslet_ring_head(ring), 0xfffffff0u + 64);
	free(ring);
}

static void test_reinit(void **state)
{
	struct syslet_ring *ring = new_ring(4, 0);
	struct syslet__rstate *rs;
	int i;

	(void)state;
	for (i = 0; i < 10; i++) {
		post_one(ring, 0, 0);
		syslet_ring_advance(ring, 1);
	}
	assert_int_equal(syslet_ring_head(ring), 10);
	/* The program reuses the memory: a fresh ring, head back to 0. */
	syslet_ring_init(ring, 4);
	assert_int_equal(post_one(ring, 5, 5), 0);
	assert_int_equal(syslet_ring_head(ring), 1);
	assert_int_equal(ring->comp[0].caller_data, 5);
	/* ...and to a different start and size. */
	syslet_ring_init(ring, 2);
	ring->kernel_head = ring->user_tail = 1000;
	assert_int_equal(post_one(ring, 6, 6), 1000);
	assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	assert_int_equal(syslet__ring_reserve(ring, &rs), -EBUSY);
	syslet__ring_unreserve(rs);
	free(ring);
}

static void test_no_wake_without_waiter(void **state)
{
	struct syslet_ring *ring = new_ring(64, 0);
	uint64_t wakes;
	int i;

	(void)state;
	wakes = syslet__ring_wakes();
	for (i = 0; i < 1000; i++) {
		post_one(ring, 0, 0);
		syslet_ring_advance(ring, 1);
	}
	assert_int_equal(syslet__ring_wakes(), wakes);
	free(ring);
}

static void test_fork_reset(void **state)
{
	struct syslet_ring *ring = new_ring(4, 0);
	struct syslet__cnode n = { .caller_data = 1 };
	struct syslet__rstate *rs;
	int i, st;
	pid_t pid;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The 3 calls stay in the parent: the child has 4 free. */
		syslet__ring_atfork_child();
		for (i = 0; i < 4; i++)
			if (syslet__ring_reserve(ring, &rs))
				_exit(1);
		if (syslet__ring_reserve(ring, &rs) != -EBUSY)
			_exit(2);
		syslet__ring_post(rs, &n);
		_exit(n.index == 0 && syslet_ring_head(ring) == 1 ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* The parent keeps its 3 reservations. */
	assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	assert_int_equal(syslet__ring_reserve(ring, &rs), -EBUSY);
	for (i = 0; i < 4; i++)
		syslet__ring_unreserve(rs);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_state_lookup),
		cmocka_unit_test(test_reserve_full),
		cmocka_unit_test(test_ring_of_one),
		cmocka_unit_test(test_full_status),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_reinit),
		cmocka_unit_test(test_no_wake_without_waiter),
		cmocka_unit_test(test_fork_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
