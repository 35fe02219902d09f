/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the bad-input checks of SPEC 3 and 4.3 that could hang or
 * run something if missing: a frame with only one of ip/sp (EINVAL),
 * syscall numbers no architecture has (ENOSYS, nothing run, ring
 * untouched; ring checks first), and a wait timeout that is not a valid
 * timespec (EINVAL, never a hang). Each case runs in a child under a
 * 20 s alarm, so a hang fails loudly instead of timing the suite out.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#define RING_BYTES 4096

static const uint64_t one = 1;

static struct syslet_ring *ring_new(uint32_t elements)
{
	struct syslet_ring *r = aligned_alloc(64, RING_BYTES);

	if (!r)
		abort();
	memset(r, 0xa5, RING_BYTES);
	r->kernel_head = 0;
	r->user_tail = 0;
	r->elements = elements;
	r->wait_group = 0;
	return r;
}

static int ring_untouched(const struct syslet_ring *r, uint32_t elements)
{
	const unsigned char *p = (const unsigned char *)r->comp;
	size_t i;

	if (r->kernel_head || r->user_tail || r->elements != elements)
		return 0;
	for (i = 0; i < RING_BYTES - sizeof(*r); i++)
		if (p[i] != 0xa5)
			return 0;
	return 1;
}

/* Run @fn in a child under an alarm; it returns 0 on success. */
static void in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("child killed by signal %d%s", WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (hang)" : "");
	if (WEXITSTATUS(status))
		fail_msg("child: check %d failed", WEXITSTATUS(status));
}

static int expect(long ret, int err)
{
	return ret == -1 && errno == err;
}

static int half_frame(void)
{
	struct syslet_ring *r = ring_new(4);
	struct indirect_registers regs;
	union indirect_params p;
	int fd = eventfd(0, EFD_NONBLOCK), k = 0;
	uint64_t v = 0;
	char stack[256];

	FILL_IN(regs, SYS_write, fd, &one, sizeof(one));
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)r;
	p.syslet.frame.ip = (uint64_t)(uintptr_t)&half_frame;
	errno = 0;
	if (!expect(indirect(&regs, &p, sizeof(p), 0), EINVAL))
		return 1;
	p.syslet.frame.ip = 0;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(stack + sizeof(stack));
	errno = 0;
	if (!expect(indirect(&regs, &p, sizeof(p), 0), EINVAL))
		return 2;
	/* the frame check comes before the ring checks */
	r->elements = 3;
	errno = 0;
	if (!expect(indirect(&regs, &p, sizeof(p), 0), EINVAL))
		return 3;
	if (syslet_drain() || read(fd, &v, sizeof(v)) != -1 || v)
		k = 4;
	r->elements = 4;
	return k ? k : ring_untouched(r, 4) ? 0 : 5;
}

static int bad_numbers(void)
{
	static const uint64_t nrs[] = {
		(uint64_t)-1,
		(uint64_t)LONG_MIN,
		(uint64_t)-4096,
		(uint64_t)1 << 32,
		(uint64_t)1 << 40,
		(uint64_t)LONG_MAX,
		(uint64_t)UINT64_MAX - 1,
		0x8000000000000001ULL,
	};
	struct syslet_ring *r = ring_new(4);
	struct indirect_registers regs;
	union indirect_params p;
	size_t i;

	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)r;
	for (i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
		FILL_IN(regs, nrs[i], 1, 2, 3);
		errno = 0;
		if (!expect(indirect(&regs, &p, sizeof(p), 0), ENOSYS))
			return 10 + (int)i;
	}
	if (syslet_drain() || !ring_untouched(r, 4))
		return 2;
	/* ring checks come first: a bad ring is EINVAL, not ENOSYS */
	r->elements = 6;
	FILL_IN(regs, -1);
	errno = 0;
	if (!expect(indirect(&regs, &p, sizeof(p), 0), EINVAL))
		return 3;
	return 0;
}

static int bad_timespec(void)
{
	static const struct timespec bad[] = {
		{ 0, 1000000000 },
		{ 0, -1 },
		{ 1, LONG_MAX },
		{ 0, LONG_MIN },
	};
	struct syslet_ring *r = ring_new(4);
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		if (!expect(syslet_ring_wait_timeout(r, 0, &bad[i]), EINVAL))
			return 1 + (int)i;
	}
	return 0;
}

static void test_half_frame(void **state)
{
	(void)state;
	in_child(half_frame);
}

static void test_bad_numbers(void **state)
{
	(void)state;
	in_child(bad_numbers);
}

static void test_bad_timespec(void **state)
{
	(void)state;
	in_child(bad_timespec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_half_frame),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_bad_timespec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
