/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: every public function fed bad input (NULLs, misaligned and
 * non-power-of-two rings, absurd lengths, flags != 0, unknown options and
 * classes, full or corrupt rings) fails with its documented errno, and
 * nothing is executed or written when it does (SPEC 3, 4.2, 4.3).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#define ALIGNED_RING_BYTES 4096

/* A ring of @elements in a zeroed, 8-aligned buffer; slot contents 0xa5. */
static struct syslet_ring *ring_new(uint32_t elements)
{
	struct syslet_ring *r = aligned_alloc(64, ALIGNED_RING_BYTES);

	assert_non_null(r);
	memset(r, 0xa5, ALIGNED_RING_BYTES);
	r->kernel_head = 0;
	r->user_tail = 0;
	r->elements = elements;
	r->wait_group = 0;
	return r;
}

/* No byte of @r (header included) differs from what ring_new() left. */
static void assert_ring_untouched(const struct syslet_ring *r, uint32_t head,
				  uint32_t tail, uint32_t elems)
{
	const unsigned char *p = (const unsigned char *)r->comp;
	size_t i;

	assert_int_equal(r->kernel_head, head);
	assert_int_equal(r->user_tail, tail);
	assert_int_equal(r->elements, elems);
	assert_int_equal(r->wait_group, 0);
	for (i = 0; i < ALIGNED_RING_BYTES - sizeof(*r); i++)
		if (p[i] != 0xa5)
			fail_msg("ring slot byte %zu written", i);
}

/* indirect() must fail with -1 and @err. */
#define assert_indirect_fails(err, regs, params, len, flags)                 \
	do {                                                                 \
		errno = 0;                                                   \
		assert_int_equal(indirect((regs), (params), (len), (flags)), \
				 -1);                                        \
		assert_int_equal(errno, (err));                              \
	} while (0)

static void params_for(union indirect_params *p, const void *ring)
{
	memset(p, 0, sizeof(*p));
	p->syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p->syslet.caller_data = 0x1234;
}

/* An eventfd whose counter tells whether a write on it ever ran. */
static int counter_fd(void)
{
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	assert_true(fd >= 0);
	return fd;
}

static uint64_t counter_value(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		assert_int_equal(errno, EAGAIN);
	return v;
}

static const uint64_t one = 1;

static void test_flags_first(void **state)
{
	struct syslet_ring *r = ring_new(4);
	struct indirect_registers regs;
	union indirect_params p;
	int fd = counter_fd();

	(void)state;
	params_for(&p, r);
	FILL_IN(regs, SYS_write, fd, &one, sizeof(one));
	assert_indirect_fails(EINVAL, &regs, &p, sizeof(p), 1);
	assert_indirect_fails(EINVAL, &regs, &p, sizeof(p), -1);
	assert_indirect_fails(EINVAL, &regs, &p, sizeof(p), INT_MIN);
	/* flags are checked before anything else, even a NULL regs */
	assert_indirect_fails(EINVAL, NULL, NULL, SIZE_MAX, 2);
	assert_int_equal(counter_value(fd), 0);
	assert_ring_untouched(r, 0, 0, 4);
	close(fd);
	free(r);
}

static void test_null_regs(void **state)
{
	struct syslet_ring *r = ring_new(4);
	union indirect_params p;

	(void)state;
	params_for(&p, r);
	assert_indirect_fails(EFAULT, NULL, &p, sizeof(p), 0);
	assert_indirect_fails(EFAULT, NULL, NULL, 0, 0);
	/* regs before paramslen */
	assert_indirect_fails(EFAULT, NULL, &p, SIZE_MAX, 0);
	assert_ring_untouched(r, 0, 0, 4);
	free(r);
}

static void test_paramslen(void **state)
{
	struct syslet_ring *r = ring_new(4);
	struct indirect_registers regs;
	union indirect_params p[2];
	int fd = counter_fd();
	size_t len;

	(void)state;
	params_for(&p[0], r);
	FILL_IN(regs, SYS_write, fd, &one, sizeof(one));
	assert_indirect_fails(EINVAL, &regs, p, sizeof(p[0]) + 1, 0);
	assert_indirect_fails(EINVAL, &regs, p, sizeof(p), 0);
	assert_indirect_fails(EINVAL, &regs, p, SIZE_MAX, 0);
	assert_indirect_fails(EINVAL, &regs, p, (size_t)1 << 40, 0);
	/* paramslen before params: an absurd length with NULL is EINVAL */
	assert_indirect_fails(EINVAL, &regs, NULL, SIZE_MAX, 0);
	for (len = 1; len <= sizeof(p[0]); len++)
		assert_indirect_fails(EFAULT, &regs, NULL, len, 0);
	assert_int_equal(counter_value(fd), 0);
	assert_ring_untouched(r, 0, 0, 4);
	close(fd);
	free(r);
}

/*
 * No ring: the pre-syslet path takes only the file-flags calls; any other
 * is EINVAL and is not run. A short params block reads as zero: with 0 or
 * 7 bytes the ring pointer is 0, so this is the same path.
 */
static void test_presyslet_other_call(void **state)
{
	struct indirect_registers regs;
	union indirect_params p;
	int fd = counter_fd();

	(void)state;
	memset(&p, 0, sizeof(p));
	FILL_IN(regs, SYS_write, fd, &one, sizeof(one));
	assert_indirect_fails(EINVAL, &regs, &p, sizeof(p), 0);
	assert_indirect_fails(EINVAL, &regs, NULL, 0, 0);
	assert_indirect_fails(EINVAL, &regs, &p, 7, 0);
	FILL_IN(regs, SYS_getpid);
	assert_indirect_fails(EINVAL, &regs, &p, sizeof(p), 0);
	assert_int_equal(counter_value(fd), 0);
	close(fd);
}

static void test_misaligned_ring(void **state)
{
	struct syslet_ring *r = ring_new(4);
	struct indirect_registers regs;
	union indirect_params p;
	int fd = counter_fd();
	uintptr_t off;

	(void)state;
	FILL_IN(regs, SYS_write, fd, &one, sizeof(one));
	for (off = 1; off < 8; off++) {
		params_for(&p, (char *)r + off);
		assert_indirect_fails(EINVAL, &regs, &p, sizeof(p), 0);
	}
	assert_int_equal(counter_value(fd), 0);
	close(fd);
	free(r);
}

static void test_bad_elements(void **state)
{
	static const uint32_t bad[] = { 0,	    3,		5,
					6,	    7,		12,
					100,	    0x80000001, 0xffffffff,
					0x7fffffff, 0xc0000000 };
	struct indirect_registers regs;
	union indirect_params p;
	int fd = counter_fd();
	size_t i;

	(void)state;
	FILL_IN(regs, SYS_write, fd, &one, sizeof(one));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct syslet_ring *r = ring_new(bad[i]);

		params_for(&p, r);
		assert_indirect_fails(EINVAL, &regs, &p, sizeof(p), 0);
		assert_ring_untouched(r, 0, 0, bad[i]);
		free(r);
	}
	assert_int_equal(counter_value(fd), 0);
	close(fd);
}

/* A pending-class call with a visible side effect: renameat(a, b). */
struct rename_call {
	char a[64], b[64];
	struct indirect_registers regs;
};

static void rename_prepare(struct rename_call *c)
{
	int fd;

	snprintf(c->a, sizeof(c->a), "/tmp/syslet-badinput-%d-a", getpid());
	snprintf(c->b, sizeof(c->b), "/tmp/syslet-badinput-%d-b", getpid());
	unlink(c->b);
	fd = open(c->a, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	FILL_IN(c->regs, SYS_renameat, AT_FDCWD, c->a, AT_FDCWD, c->b);
}

/* The rename of @c did not happen. */
static void rename_assert_not_run(struct rename_call *c)
{
	struct stat st;

	assert_int_equal(stat(c->a, &st), 0);
	assert_int_equal(stat(c->b, &st), -1);
	unlink(c->a);
}

/*
 * SPEC 4.2: when the ring has no free slot, EBUSY and the call is not
 * started. A ring whose header is corrupt (user_tail ahead of
 * kernel_head: "more unconsumed than elements") has no free slot either.
 */
static void test_ring_full(void **state)
{
	static const struct {
		uint32_t elements, head, tail;
	} full[] = {
		{ 1, 1, 0 },
		{ 4, 4, 0 },
		{ 4, 0x10000002, 0x0ffffffe },
		{ 2, 1, 0xffffffff },
		{ 8, 0, 1 }, /* tail ahead of head */
		{ 1, 5, 9 }, /* tail ahead of head */
		{ 16, 0, 0x80000000 }, /* tail far from head */
	};
	struct rename_call c;
	union indirect_params p;
	size_t i;

	(void)state;
	rename_prepare(&c);
	for (i = 0; i < sizeof(full) / sizeof(full[0]); i++) {
		struct syslet_ring *r = ring_new(full[i].elements);

		r->kernel_head = full[i].head;
		r->user_tail = full[i].tail;
		params_for(&p, r);
		assert_indirect_fails(EBUSY, &c.regs, &p, sizeof(p), 0);
		assert_ring_untouched(r, full[i].head, full[i].tail,
				      full[i].elements);
		free(r);
	}
	rename_assert_not_run(&c);
}

/*
 * A number no kernel has but within the range a table may not cover: the
 * completion carries -ENOSYS (or indirect() says ENOSYS at once).
 */
static void test_unknown_in_range_nr(void **state)
{
	struct syslet_ring *r = ring_new(4);
	struct indirect_registers regs;
	union indirect_params p;
	struct timespec ten_s = { 10, 0 };
	long ret;

	(void)state;
	params_for(&p, r);
	FILL_IN(regs, 1023);
	errno = 0;
	ret = indirect(&regs, &p, sizeof(p), 0);
	assert_int_equal(ret, -1);
	if (errno == ENOSYS) {
		assert_ring_untouched(r, 0, 0, 4);
	} else {
		assert_int_equal(errno, ESYSLETPENDING);
		assert_int_equal(syslet_ring_wait_timeout(r, 0, &ten_s), 0);
		assert_int_equal(syslet_ring_head(r), 1);
		assert_int_equal((int64_t)r->comp[0].status, -ENOSYS);
		assert_int_equal(r->comp[0].caller_data, 0x1234);
		syslet_ring_advance(r, 1);
	}
	assert_int_equal(syslet_drain(), 0);
	free(r);
}

static void test_wait_bad_ring(void **state)
{
	static const uint32_t bad[] = { 0, 3, 6, 0x80000001, 0xffffffff };
	struct timespec zero = { 0, 0 };
	struct syslet_ring *r = ring_new(4);
	size_t i;

	(void)state;
	errno = 0;
	assert_int_equal(syslet_ring_wait(NULL, 0), -1);
	assert_int_equal(errno, EFAULT);
	errno = 0;
	assert_int_equal(syslet_ring_wait_timeout(NULL, 0, &zero), -1);
	assert_int_equal(errno, EFAULT);
	errno = 0;
	assert_int_equal(syslet_ring_wait_timeout(NULL, 0, NULL), -1);
	assert_int_equal(errno, EFAULT);
	for (i = 1; i < 8; i++) {
		struct syslet_ring *m =
			(struct syslet_ring *)(void *)((char *)r + i);

		errno = 0;
		assert_int_equal(syslet_ring_wait(m, 0), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(syslet_ring_wait_timeout(m, 0, &zero), -1);
		assert_int_equal(errno, EINVAL);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r->elements = bad[i];
		/* head == user_idx: a valid ring would sleep; this one fails */
		errno = 0;
		assert_int_equal(syslet_ring_wait(r, 0), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(syslet_ring_wait_timeout(r, 0, &zero), -1);
		assert_int_equal(errno, EINVAL);
		/* even when it would return at once */
		errno = 0;
		assert_int_equal(syslet_ring_wait(r, 7), -1);
		assert_int_equal(errno, EINVAL);
	}
	free(r);
}

static void test_wait_zero_timeout(void **state)
{
	struct timespec zero = { 0, 0 };
	struct syslet_ring *r = ring_new(4);

	(void)state;
	errno = 0;
	assert_int_equal(syslet_ring_wait_timeout(r, 0, &zero), -1);
	assert_int_equal(errno, ETIMEDOUT);
	r->kernel_head = 0xfffffffe;
	r->user_tail = 0xfffffffe;
	errno = 0;
	assert_int_equal(syslet_ring_wait_timeout(r, 0xfffffffe, &zero), -1);
	assert_int_equal(errno, ETIMEDOUT);
	/* any user_idx other than kernel_head returns at once */
	assert_int_equal(syslet_ring_wait_timeout(r, 0xffffffff, &zero), 0);
	assert_int_equal(syslet_ring_wait_timeout(r, 0, &zero), 0);
	assert_int_equal(syslet_ring_wait(r, 0), 0);
	assert_ring_untouched(r, 0xfffffffe, 0xfffffffe, 4);
	free(r);
}

static void test_stats(void **state)
{
	struct syslet_stats st;

	(void)state;
	errno = 0;
	assert_int_equal(syslet_stats(NULL, sizeof(st)), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_stats(&st, 0), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_stats(&st, sizeof(st) - 1), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_stats(NULL, 0), -1);
	assert_int_equal(errno, EINVAL);
}

static void test_config(void **state)
{
	static const long opts[] = {
		SYSLET_OPT_MAX_WORKERS,	  SYSLET_OPT_MIN_WORKERS,
		SYSLET_OPT_PIN,		  SYSLET_OPT_SPIN_NS,
		SYSLET_OPT_IDLE_MS,	  SYSLET_OPT_STACK_SIZE,
		SYSLET_OPT_CANCEL_SIGNAL,
	};
	static const long bad_opts[] = { 0, -1, 8, 1000, LONG_MIN, LONG_MAX };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_opts) / sizeof(bad_opts[0]); i++) {
		errno = 0;
		assert_int_equal(
			syslet_config_set((enum syslet_option)bad_opts[i], 1),
			-1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(
			syslet_config_get((enum syslet_option)bad_opts[i]), -1);
		assert_int_equal(errno, EINVAL);
	}
	/* a negative value is out of range for every option */
	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		enum syslet_option o = (enum syslet_option)opts[i];
		long before = syslet_config_get(o);

		errno = 0;
		assert_int_equal(syslet_config_set(o, -1), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(syslet_config_set(o, LONG_MIN), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(syslet_config_get(o), before);
	}
}

static void test_classes(void **state)
{
	static const long bad_nr[] = { -1, LONG_MIN, LONG_MAX, (long)1 << 40 };
	static const int bad_cls[] = { 0, 4, -1, INT_MAX };
	int before;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_nr) / sizeof(bad_nr[0]); i++) {
		errno = 0;
		assert_int_equal(syslet_get_class(bad_nr[i]), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(
			syslet_set_class(bad_nr[i], SYSLET_CLASS_ASYNC), -1);
		assert_int_equal(errno, EINVAL);
	}
	before = syslet_get_class(SYS_getpid);
	for (i = 0; i < sizeof(bad_cls) / sizeof(bad_cls[0]); i++) {
		errno = 0;
		assert_int_equal(
			syslet_set_class(SYS_getpid,
					 (enum syslet_class)bad_cls[i]),
			-1);
		assert_int_equal(errno, EINVAL);
	}
	assert_int_equal(syslet_get_class(SYS_getpid), before);
}

static void test_current_completion_outside(void **state)
{
	(void)state;
	assert_null(syslet_current_completion());
	assert_int_equal(syslet_drain(), 0);
	assert_null(syslet_current_completion());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags_first),
		cmocka_unit_test(test_null_regs),
		cmocka_unit_test(test_paramslen),
		cmocka_unit_test(test_presyslet_other_call),
		cmocka_unit_test(test_misaligned_ring),
		cmocka_unit_test(test_bad_elements),
		cmocka_unit_test(test_ring_full),
		cmocka_unit_test(test_unknown_in_range_nr),
		cmocka_unit_test(test_wait_bad_ring),
		cmocka_unit_test(test_wait_zero_timeout),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_current_completion_outside),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
