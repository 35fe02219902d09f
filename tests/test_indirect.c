/* SPDX-License-Identifier: MIT */
/*
 * Description: indirect()'s checks in SPEC 3 order with nothing run when
 * one fails, the syscall(2) return convention, the argument block copied
 * at entry and short params read as zero, the pre-syslet path, ENOSYS,
 * EBUSY on a full ring, and the ERFKILL rule.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

static int pipe_bytes(int fd)
{
	int n = -1;

	assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
	return n;
}

/* A write of "x" to @fds[1] that must not happen when indirect() fails. */
static void expect_fail(int *fds, struct indirect_registers *regs, void *params,
			size_t len, int flags, int err)
{
	errno = 0;
	assert_int_equal(indirect(regs, params, len, flags), -1);
	assert_int_equal(errno, err);
	assert_int_equal(pipe_bytes(fds[0]), 0);
}

static void test_checks_in_order(void **state)
{
	struct syslet_ring *ring = ring_new(4), *odd;
	struct indirect_registers regs;
	union indirect_params p;
	uint32_t four;
	char *raw;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	FILL_IN(regs, SYS_write, fds[1], "x", 1);
	params_for(&p, ring, 1);
	/* flags first, even with everything else wrong */
	expect_fail(fds, NULL, NULL, 1000, 1, EINVAL);
	expect_fail(fds, &regs, &p, sizeof(p), 1, EINVAL);
	/* then regs */
	expect_fail(fds, NULL, NULL, 1000, 0, EFAULT);
	/* then the params length, before the NULL params */
	expect_fail(fds, &regs, NULL, sizeof(p) + 1, 0, EINVAL);
	expect_fail(fds, &regs, NULL, sizeof(p), 0, EFAULT);
	expect_fail(fds, &regs, NULL, 8, 0, EFAULT);
	/* frame: ip and sp both or neither */
	p.syslet.frame.ip = 0x1000;
	expect_fail(fds, &regs, &p, sizeof(p), 0, EINVAL);
	p.syslet.frame.ip = 0;
	p.syslet.frame.sp = 0x1000;
	expect_fail(fds, &regs, &p, sizeof(p), 0, EINVAL);
	p.syslet.frame.sp = 0;
	/* the ring: alignment, then elements */
	raw = aligned_alloc(64, 128);
	assert_non_null(raw);
	memset(raw, 0, 128);
	four = 4;
	memcpy(raw + 4 + offsetof(struct syslet_ring, elements), &four, 4);
	params_for(&p, (struct syslet_ring *)(raw + 4), 1);
	expect_fail(fds, &regs, &p, sizeof(p), 0, EINVAL);
	odd = (struct syslet_ring *)raw;
	odd->elements = 0;
	params_for(&p, odd, 1);
	expect_fail(fds, &regs, &p, sizeof(p), 0, EINVAL);
	odd->elements = 6;
	expect_fail(fds, &regs, &p, sizeof(p), 0, EINVAL);
	/* the syscall number */
	params_for(&p, ring, 1);
	FILL_IN(regs, -1L, fds[1], "x", 1);
	expect_fail(fds, &regs, &p, sizeof(p), 0, ENOSYS);
	FILL_IN(regs, 1024, fds[1], "x", 1);
	expect_fail(fds, &regs, &p, sizeof(p), 0, ENOSYS);
	FILL_IN(regs, 0x40000000L | SYS_write, fds[1], "x", 1);
	expect_fail(fds, &regs, &p, sizeof(p), 0, ENOSYS);
	/* and the same write, valid, runs (inline where pipes have NOWAIT) */
	need_nowait_pipe();
	FILL_IN(regs, SYS_write, fds[1], "x", 1);
	assert_int_equal(indirect(&regs, &p, sizeof(p), 0), 1);
	assert_int_equal(pipe_bytes(fds[0]), 1);
	ring_empty(ring);
	free(raw);
	free(ring);
	close(fds[0]);
	close(fds[1]);
}

static void test_return_convention(void **state)
{
	struct syslet_ring *ring = ring_new(4);
	long r;
	int fd;

	(void)state;
	errno = 0;
	r = SYS_IND(ring, 0, SYS_close, -1);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EBADF);
	/* a large positive result is returned as is */
	r = SYS_IND(ring, 0, SYS_getpid);
	assert_int_equal(r, getpid());
	r = SYS_IND(ring, 0, SYS_mmap, 0, 4096, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r > 0 && (r & 4095) == 0);
	assert_int_equal(munmap((void *)r, 4096), 0);
	/* a result that would be negative as an int is not an error */
	fd = memfd_create("ind", 0);
	assert_true(fd >= 0);
	r = SYS_IND(ring, 0, SYS_lseek, fd, 0x80000000L, SEEK_SET);
	assert_int_equal(r, 0x80000000L);
	close(fd);
	ring_empty(ring);
	free(ring);
}

static void test_short_params_and_copy(void **state)
{
	struct syslet_ring *ring = ring_new(4);
	struct indirect_registers regs;
	struct syslet_completion c;
	union indirect_params p;
	char buf[8];
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	/* 16 bytes: ring and caller_data, the frame reads as 0 (no notifier) */
	memset(&p, 0xff, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = 77;
	FILL_IN(regs, SYS_read, fds[0], buf, sizeof(buf));
	errno = 0;
	assert_int_equal(indirect(&regs, &p, 16, 0), -1);
	assert_int_equal(errno, ESYSLETPENDING);
	/* the block and the registers were copied: reuse them at once */
	p.syslet.caller_data = 99;
	FILL_IN(regs, SYS_getpid);
	assert_int_equal(write(fds[1], "abc", 3), 3);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 3);
	assert_int_equal(c.caller_data, 77);
	assert_memory_equal(buf, "abc", 3);
	assert_int_equal(syslet_drain(), 0);
	free(ring);
	close(fds[0]);
	close(fds[1]);
}

static void check_fd(long fd, int want_cloexec, int want_nonblock)
{
	assert_true(fd >= 0);
	assert_int_equal(!!(fcntl((int)fd, F_GETFD) & FD_CLOEXEC),
			 want_cloexec);
	assert_int_equal(!!(fcntl((int)fd, F_GETFL) & O_NONBLOCK),
			 want_nonblock);
	close((int)fd);
}

/* Pre-syslet: file_flags, params as short as an int or the whole union. */
static long pre(long nr, int flags, size_t len, long a, long b, long c, long d)
{
	struct indirect_registers regs;
	union indirect_params p;

	memset(&p, 0, sizeof(p));
	p.file_flags.flags = flags;
	FILL_IN(regs, nr, a, b, c, d);
	return indirect(&regs, &p, len, 0);
}

static void test_presyslet(void **state)
{
	int sv[2], lfd, cfd, both = O_CLOEXEC | O_NONBLOCK;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t mask;
	long r;

	(void)state;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	check_fd(pre(SYS_socket, O_CLOEXEC, sizeof(int), AF_UNIX, SOCK_STREAM,
		     0, 0),
		 1, 0);
	check_fd(pre(SYS_socket, O_NONBLOCK, 32, AF_UNIX, SOCK_STREAM, 0, 0), 0,
		 1);
	check_fd(pre(SYS_socket, 0, 0, AF_UNIX, SOCK_STREAM, 0, 0), 0, 0);
#ifdef SYS_eventfd
	check_fd(pre(SYS_eventfd, both, sizeof(int), 0, 0, 0, 0), 1, 1);
#endif
	check_fd(pre(SYS_eventfd2, O_CLOEXEC, 32, 0, EFD_NONBLOCK, 0, 0), 1, 1);
#ifdef SYS_signalfd
	check_fd(pre(SYS_signalfd, both, 32, -1, (long)&mask, 8, 0), 1, 1);
#endif
	check_fd(pre(SYS_signalfd4, O_NONBLOCK, 4, -1, (long)&mask, 8, 0), 0,
		 1);
	check_fd(pre(SYS_timerfd_create, both, 4, CLOCK_MONOTONIC, 0, 0, 0), 1,
		 1);
	assert_int_equal(pre(SYS_socketpair, O_CLOEXEC, 4, AF_UNIX, SOCK_STREAM,
			     0, (long)sv),
			 0);
	check_fd(sv[0], 1, 0);
	check_fd(sv[1], 1, 0);
	/* accept and accept4 on a listening socket with a client waiting */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "@ind-%d", getpid());
	sa.sun_path[0] = 0;
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	cfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	check_fd(pre(SYS_accept, both, 4, lfd, 0, 0, 0), 1, 1);
	close(cfd);
	cfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	check_fd(pre(SYS_accept4, O_CLOEXEC, 32, lfd, 0, 0, SOCK_NONBLOCK), 1,
		 1);
	close(cfd);
	/* other flags, other calls: EINVAL, and nothing created */
	errno = 0;
	assert_int_equal(
		pre(SYS_socket, O_APPEND, 4, AF_UNIX, SOCK_STREAM, 0, 0), -1);
	assert_int_equal(errno, EINVAL);
	r = pre(SYS_getpid, 0, 0, 0, 0, 0, 0);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EINVAL);
	r = pre(SYS_dup, O_CLOEXEC, 4, 0, 0, 0, 0);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EINVAL);
	/* the call's own error comes back as errno */
	r = pre(SYS_socket, O_CLOEXEC, 4, 12345, SOCK_STREAM, 0, 0);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	close(lfd);
}

static void test_unknown_number(void **state)
{
	struct syslet_ring *ring = ring_new(4);
	struct syslet_completion c;
	long r;

	(void)state;
	/* a number no table and no kernel knows: async, the kernel's ENOSYS */
	r = SYS_IND(ring, 5, 1000);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, -ENOSYS);
	assert_int_equal(c.caller_data, 5);
	/* a hole of every table (x86_64, aarch64, ppc64: never assigned) */
	r = SYS_IND(ring, 6, 410);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, -ENOSYS);
	assert_int_equal(syslet_drain(), 0);
	free(ring);
}

/* Async class: straight to a worker even when the call would be quick. */
static void test_async_class(void **state)
{
	struct syslet_ring *ring = ring_new(4);
	char dir[] = "/var/tmp/syslet-async-XXXXXX", path[64], ents[1024];
	struct syslet_completion c;
	int fd, dfd;
	long r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a", dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	r = SYS_IND(ring, 1, SYS_fsync, fd);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	r = SYS_IND(ring, 2, SYS_fdatasync, fd);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	r = SYS_IND(ring, 3, SYS_getdents64, dfd, ents, sizeof(ents));
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_true((long)c.status > 0);
	r = SYS_IND(ring, 4, SYS_unlinkat, AT_FDCWD, path, 0);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	assert_int_equal(access(path, F_OK), -1);
	/* the call's error arrives in the completion */
	r = SYS_IND(ring, 5, SYS_unlinkat, AT_FDCWD, path, 0);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, -ENOENT);
	assert_int_equal(syslet_drain(), 0);
	close(dfd);
	close(fd);
	assert_int_equal(rmdir(dir), 0);
	free(ring);
}

static void test_ebusy(void **state)
{
	struct syslet_ring *ring = ring_new(1);
	struct syslet_completion c;
	char b1[4], b2[4];
	int fds[2];
	long r;

	(void)state;
	need_nowait_pipe();
	assert_int_equal(pipe(fds), 0);
	r = SYS_IND(ring, 1, SYS_read, fds[0], b1, 4);
	assert_true(PENDING(r));
	/* the second blocking call finds no slot: EBUSY, not started */
	errno = 0;
	r = SYS_IND(ring, 2, SYS_read, fds[0], b2, 4);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EBUSY);
	/* an inline call needs no slot */
	assert_int_equal(SYS_IND(ring, 3, SYS_getpid), getpid());
	assert_int_equal(write(fds[1], "abcd", 4), 4);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 4);
	assert_int_equal(c.caller_data, 1);
	/* had the second read started, it would have taken these bytes */
	assert_int_equal(write(fds[1], "efgh", 4), 4);
	assert_int_equal(pipe_bytes(fds[0]), 4);
	/* the slot is free again once consumed */
	r = SYS_IND(ring, 4, SYS_read, fds[0], b2, 4);
	assert_int_equal(r, 4);
	assert_memory_equal(b2, "efgh", 4);
	assert_int_equal(syslet_drain(), 0);
	free(ring);
	close(fds[0]);
	close(fds[1]);
}

/*
 * ERFKILL: make getppid fail with it (seccomp, in a child) and check it
 * arrives through the ring, never as an inline 132.
 */
static void test_erfkill(void **state)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ERFKILL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct syslet_ring *ring = ring_new(1);
		struct syslet_completion c;
		long r;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(77);
		r = SYS_IND(ring, 9, SYS_getppid);
		if (!PENDING(r))
			_exit(1);
		if (syslet_ring_wait(ring, 0))
			_exit(2);
		/* the one slot holds it, unconsumed: the next ERFKILL is EBUSY */
		r = SYS_IND(ring, 10, SYS_getppid);
		if (r != -1 || errno != EBUSY)
			_exit(3);
		c = ring_pop(ring);
		if ((long)c.status != -ERFKILL || c.caller_data != 9)
			_exit(4);
		syslet_drain();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checks_in_order),
		cmocka_unit_test(test_return_convention),
		cmocka_unit_test(test_short_params_and_copy),
		cmocka_unit_test(test_presyslet),
		cmocka_unit_test(test_unknown_number),
		cmocka_unit_test(test_async_class),
		cmocka_unit_test(test_ebusy),
		cmocka_unit_test(test_erfkill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
