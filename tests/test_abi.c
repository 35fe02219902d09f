/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the 2007 ABI as SPEC 2 fixes it: sizes, offsets, the
 * ESYSLETPENDING value, FILL_IN, and the consumer helpers of syslet.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include <syslet/syslet.h>

static void test_sizes(void **state)
{
	(void)state;
	assert_int_equal(ESYSLETPENDING, 132);
	assert_int_equal(sizeof(struct syslet_args), 32);
	assert_int_equal(sizeof(struct syslet_completion), 16);
	assert_int_equal(sizeof(struct syslet_ring), 16);
	assert_int_equal(sizeof(struct indirect_registers), 56);
	assert_int_equal(offsetof(struct syslet_args, frame.ip), 16);
	assert_int_equal(offsetof(struct syslet_args, frame.sp), 24);
#ifdef __x86_64__
	assert_int_equal(offsetof(struct indirect_registers, rax), 0);
	assert_int_equal(offsetof(struct indirect_registers, rdi), 8);
	assert_int_equal(offsetof(struct indirect_registers, r10), 32);
	assert_int_equal(offsetof(struct indirect_registers, r9), 48);
#endif
}

static void test_fill_in(void **state)
{
	struct indirect_registers r;
	char buf[8];

	(void)state;
	FILL_IN(r, SYS_pread64, 3, buf, sizeof(buf), -1);
	assert_int_equal(SYSLET__REG_NR(&r), SYS_pread64);
	assert_int_equal(SYSLET__REG_ARGS(&r)[0], 3);
	assert_ptr_equal((void *)(uintptr_t)SYSLET__REG_ARGS(&r)[1], buf);
	assert_int_equal(SYSLET__REG_ARGS(&r)[2], sizeof(buf));
	assert_int_equal((int64_t)SYSLET__REG_ARGS(&r)[3], -1);
	assert_int_equal(SYSLET__REG_ARGS(&r)[4], 0);
	assert_int_equal(SYSLET__REG_ARGS(&r)[5], 0);
	FILL_IN(r, SYS_getpid);
	assert_int_equal(SYSLET__REG_NR(&r), SYS_getpid);
	assert_int_equal(SYSLET__REG_ARGS(&r)[0], 0);
}

static void test_helpers(void **state)
{
	struct syslet_ring *ring = aligned_alloc(8, syslet_ring_size(4));

	(void)state;
	assert_non_null(ring);
	assert_int_equal(syslet_ring_size(4), 16 + 4 * 16);
	assert_int_equal(syslet_ring_init(ring, 3), -1);
	assert_int_equal(syslet_ring_init(ring, 0), -1);
	assert_int_equal(syslet_ring_init(ring, 4), 0);
	assert_int_equal(syslet_ring_head(ring), 0);
	ring->kernel_head = 0xFFFFFFFF;
	ring->user_tail = 0xFFFFFFFF;
	assert_ptr_equal(syslet_ring_slot(ring, 0xFFFFFFFF), &ring->comp[3]);
	syslet_ring_advance(ring, 1);
	assert_int_equal(ring->user_tail, 0);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_fill_in),
		cmocka_unit_test(test_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
