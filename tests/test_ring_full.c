/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the table of ring states when it fills: every ring that got
 * a state keeps it (found again, same pointer), a new ring then gets
 * ENOMEM from reserve and from syslet_ring_wait, never a shared or
 * recycled state, and rings that had one keep working.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

#define MAX_TRY (1u << 20)

/* Rings are looked up by address only: these are never dereferenced. */
static struct syslet_ring *fake(uint32_t i)
{
	return (struct syslet_ring *)(uintptr_t)(0x100000000ull +
						 (uint64_t)i * 64);
}

static void test_full(void **state)
{
	struct syslet__rstate **got = calloc(MAX_TRY, sizeof(*got));
	struct syslet_ring *ring = aligned_alloc(64, 128);
	struct syslet_ring *old = aligned_alloc(64, 128);
	struct syslet__cnode c = { .caller_data = 9 };
	struct syslet__rstate *rs;
	uint32_t i, n;
	int ret = 0;

	(void)state;
	assert_non_null(got);
	assert_non_null(ring);
	assert_non_null(old);
	assert_int_equal(syslet_ring_init(ring, 4), 0);
	assert_int_equal(syslet_ring_init(old, 4), 0);
	assert_int_equal(syslet__ring_state(old, &rs), 0);
	for (n = 0; n < MAX_TRY; n++) {
		ret = syslet__ring_state(fake(n), &got[n]);
		if (ret)
			break;
	}
	assert_int_equal(ret, -ENOMEM);
	assert_true(n >= 65536);
	for (i = 0; i < n; i++) {
		assert_int_equal(syslet__ring_state(fake(i), &rs), 0);
		assert_ptr_equal(rs, got[i]);
		assert_ptr_equal(syslet__ring_of(rs), fake(i));
		if (i)
			assert_ptr_not_equal(got[i], got[i - 1]);
	}
	assert_int_equal(syslet__ring_reserve(ring, &rs), -ENOMEM);
	assert_int_equal(syslet_ring_wait(ring, 0), -1);
	assert_int_equal(errno, ENOMEM);
	/* A ring that got its state before still works. */
	assert_int_equal(syslet__ring_reserve(old, &rs), 0);
	syslet__ring_post(rs, &c);
	assert_int_equal(syslet_ring_head(old), 1);
	assert_int_equal(old->comp[0].caller_data, 9);
	free(old);
	free(got);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
