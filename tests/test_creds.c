/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: credentials and confinement by construction (SPEC 5.1).
 * Workers never change their credentials; a punted call runs on one only
 * if its submitter equals them, else it completes with EPERM without
 * running (a transfer that moved bytes inline reports them). Each case
 * runs in a child process whose pool has at most one worker
 * (SYSLET_MAX_WORKERS=1, set before the library reads it); the cases that
 * need root skip as another user.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/securebits.h>
#include <linux/close_range.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "sanitizer.h"
#include "test_priv_util.h"

#define NOBODY 65534
#define CALLS 50

static struct syslet_ring *ring;

/* @nr(@a0, @a1, @a2) through indirect() on ring, without waiting. */
static long submit(long nr, long a0, long a1, long a2)
{
	union indirect_params p;
	struct indirect_registers r;

	if (!ring)
		ring = ring_new(64);
	params_for(&p, ring, 1);
	FILL_IN(r, nr, a0, a1, a2, 0);
	return indirect(&r, &p, sizeof(p), 0);
}

static long punt(long nr, long a0, long a1, long a2)
{
	return punt_on(&ring, nr, a0, a1, a2, 0);
}

/* The threads of this process. */
static int threads(void)
{
	char buf[4096];
	int n = 0, fd = open("/proc/self/stat", O_RDONLY);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	char *p;
	int i;

	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	p = strrchr(buf, ')');
	/* Field 20, num_threads: the 18th after the command. */
	for (i = 0; p && i < 18; i++)
		p = strchr(p + 1, ' ');
	if (p)
		n = atoi(p + 1);
	return n;
}

/*
 * The thread count comes back to @n within 2 s: a joined thread leaves
 * num_threads a little after its join returns (the kernel wakes the joiner
 * before it reaps the thread; seen under emulation), while a started pool
 * keeps its manager for the process's life.
 */
/*
 * Under TSan its runtime starts a thread of its own in a fork child, after
 * the count: the cases that count threads skip there (cmocka's skip).
 */
static void skip_under_tsan(void)
{
	if (UNDER_TSAN) {
		fprintf(stderr, "skipped: TSan adds its own thread to a fork "
				"child, the thread count is not the "
				"library's\n");
		skip();
	}
}

static bool threads_back_to(int n)
{
	struct timespec t0, t, ms = { 0, 1000000 };

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (threads() == n)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= 2)
			return false;
		nanosleep(&ms, NULL);
	}
}

/*
 * A call queued behind one that holds the only worker, then a glibc
 * broadcast (seteuid, either direction), then the worker released: the
 * queued call gets EPERM and runs nothing; a setgroups() broadcast after
 * it succeeds (issue 23 items 1, 3; the program used to abort).
 */
static int queued_across(uid_t first, uid_t then)
{
	int fds[2];
	gid_t root = 0;
	long r;
	char c = 'x';

	CHECK(!pipe(fds));
	CHECK(!seteuid(first));
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF); /* the pool runs */
	/* The worker takes this read and blocks; the next call waits. */
	CHECK(submit(SYS_read, fds[0], (long)&c, 1) == -1 &&
	      errno == ESYSLETPENDING);
	CHECK(submit(SYS_mkdirat, AT_FDCWD, (long)"/tmp/syslet-creds-queued",
		     0700) == -1 &&
	      errno == ESYSLETPENDING);
	CHECK(!seteuid(0));
	CHECK(!seteuid(then));
	CHECK(write(fds[1], "y", 1) == 1);
	/* The read ran before the change (1) or was refused; the rest not. */
	r = (long)ring_pop(ring).status;
	CHECK(r == 1 || r == -EPERM);
	CHECK((long)ring_pop(ring).status == -EPERM);
	CHECK(access("/tmp/syslet-creds-queued", F_OK) && errno == ENOENT);
	CHECK(!seteuid(0));
	CHECK(!setgroups(1, &root));
	/* Now equal again: calls run. */
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	return 0;
}

static int queued_drop(void)
{
	return queued_across(0, NOBODY);
}

static int queued_raise(void)
{
	return queued_across(NOBODY, 0);
}

static void test_queued_before_drop(void **state)
{
	(void)state;
	run_child(queued_drop);
}

static void test_queued_before_raise(void **state)
{
	(void)state;
	run_child(queued_raise);
}

/* Item 8: a raw setresuid thread first: EPERM for it, not EAGAIN. */
static int raw_first_thread(void)
{
	CHECK(!syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY));
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EPERM);
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EPERM);
	return 0;
}

static int raw_first(void)
{
	int n = threads();

	CHECK(!on_thread(raw_first_thread));
	CHECK(threads_back_to(n)); /* it started no pool */
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	return 0;
}

static void test_raw_setresuid_first(void **state)
{
	(void)state;
	skip_under_tsan();
	run_child(raw_first);
}

/*
 * A change the library cannot see: glibc's own syscall(), as an object
 * that binds syscall@GLIBC (libsyslet reached through another library, or
 * dlopen()ed) calls it. The thread is still compared at its first punt.
 */
static long libc_syscall(long nr, long a0, long a1, long a2)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	long (*fn)(long, ...) = NULL;

	if (libc) /* POSIX's way to a function's address (dlsym(3)) */
		*(void **)&fn = dlsym(libc, "syscall");
	if (!fn) {
		fprintf(stderr, "no libc.so.6 syscall\n");
		abort();
	}
	return fn(nr, a0, a1, a2);
}

static int unseen_drop_thread(void)
{
	CHECK(!libc_syscall(SYS_setresuid, -1, NOBODY, -1));
	CHECK(geteuid() == NOBODY);
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EPERM);
	return 0;
}

/* The pool runs, then a thread drops its euid unseen: refused. */
static int unseen_drop(void)
{
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	CHECK(!on_thread(unseen_drop_thread));
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	return 0;
}

static void test_unseen_drop_refused(void **state)
{
	(void)state;
	run_child(unseen_drop);
}

/*
 * The first punt of the process from a thread that dropped its euid
 * unseen: refused, and the pool is not born from it: the root thread's
 * punted mkdirat makes a directory of uid 0, and glibc's setgroups()
 * broadcast succeeds (it used to abort on a worker of uid 65534).
 */
static int unseen_first(void)
{
	char dir[] = "/tmp/syslet-creds-XXXXXX", path[64];
	gid_t g = 0;
	struct stat st;

	CHECK(mkdtemp(dir));
	CHECK(!on_thread(unseen_drop_thread));
	snprintf(path, sizeof(path), "%s/d", dir);
	CHECK(punt(SYS_mkdirat, AT_FDCWD, (long)path, 0700) == 0);
	CHECK(!stat(path, &st) && st.st_uid == 0);
	CHECK(!setgroups(1, &g));
	rmdir(path);
	rmdir(dir);
	return 0;
}

static void test_unseen_drop_first(void **state)
{
	(void)state;
	run_child(unseen_first);
}

/*
 * Securebits of one thread's own (SECBIT_NO_SETUID_FIXUP): its punts are
 * refused, a thread with the pool's securebits runs, whichever of the two
 * was compared first.
 */
static int secbits_thread(void)
{
	CHECK(!prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0));
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EPERM);
	return 0;
}

static int plain_thread(void)
{
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	return 0;
}

static int secbits(void)
{
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	CHECK(!on_thread(secbits_thread));
	CHECK(!on_thread(plain_thread));
	return 0;
}

static void test_securebits_apart(void **state)
{
	(void)state;
	run_child(secbits);
}

/*
 * Item 5: a thread with its own fs_struct writes twice a pipe's capacity
 * to it: what went inline is the answer, never EPERM. (The capacity is 16
 * pages: 64 KiB on x86_64, 1 MiB with ppc64le's 64 KiB pages.) Where
 * the kernel's pipes refuse RWF_NOWAIT (6.1) nothing moves inline and the
 * whole call is refused, nothing written.
 */
static int partial_thread(void)
{
	static char buf[4 << 20];
	int fds[2], in;
	long r, cap;

	CHECK(!pipe(fds));
	cap = fcntl(fds[1], F_GETPIPE_SZ);
	CHECK(cap > 0 && 2 * cap <= (long)sizeof(buf));
	CHECK(!unshare(CLONE_FS));
	r = punt(SYS_write, fds[1], (long)buf, 2 * cap);
	CHECK(!ioctl(fds[0], FIONREAD, &in));
	/* 6.1's pipes refuse RWF_NOWAIT: nothing goes inline, all refused */
	CHECK(r > 0 ? r < 2 * cap && r == in : r == -EPERM && !in);
	return 0;
}

static int partial(void)
{
	return on_thread(partial_thread);
}

static void test_partial_write_apart(void **state)
{
	(void)state;
	run_forked(partial);
}

/* Item 6: 50 refusals start no 50 workers (nor any). */
static int refusals_thread(void)
{
	int i;

	CHECK(!unshare(CLONE_FS));
	for (i = 0; i < CALLS; i++)
		CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EPERM);
	return 0;
}

static int refusals(void)
{
	int n = threads();

	CHECK(!on_thread(refusals_thread));
	CHECK(threads_back_to(n));
	return 0;
}

static void test_refusals_start_no_workers(void **state)
{
	(void)state;
	skip_under_tsan();
	run_forked(refusals);
}

/*
 * Item 7: a thread with its own descriptor table, a number re-bound to its
 * own empty pipe: EPERM, never the process table's file's data. Through
 * unshare(CLONE_FILES), or close_range(CLOSE_RANGE_UNSHARE) through
 * indirect().
 */
static int files_thread(int how)
{
	int full[2], empty[2];
	char c = 0;

	CHECK(!pipe(full) && !pipe(empty));
	CHECK(write(full[1], "x", 1) == 1);
	if (how)
		CHECK(punt(SYS_close_range, 1000, 1000, CLOSE_RANGE_UNSHARE) ==
		      0);
	else
		CHECK(!unshare(CLONE_FILES));
	CHECK(dup2(empty[0], full[0]) == full[0]);
	CHECK(punt(SYS_read, full[0], (long)&c, 1) == -EPERM);
	CHECK(c == 0);
	return 0;
}

static int files_unshare(void)
{
	return files_thread(0);
}

static int files_close_range(void)
{
	return files_thread(1);
}

static int on_files_unshare(void)
{
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	return on_thread(files_unshare);
}

static int on_files_close_range(void)
{
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	return on_thread(files_close_range);
}

static void test_files_unshared(void **state)
{
	(void)state;
	run_forked(on_files_unshare);
}

static void test_files_close_range(void **state)
{
	(void)state;
	run_forked(on_files_close_range);
}

/*
 * Issue 23 item 2: a thread that gave up root by a raw setresuid cannot
 * read a root process's memory, and no worker reads it for it: a punted
 * process_vm_readv() is refused (EPERM), the buffer untouched.
 */
static pid_t holder;
static char secret[16] = "root's secret";

static int vm_read_thread(void)
{
	char buf[16] = { 0 };
	struct iovec l = { buf, sizeof(buf) }, r = { secret, sizeof(secret) };
	union indirect_params p;
	struct indirect_registers regs;
	struct syslet_completion c;
	long ret;

	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	CHECK(!syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY));
	errno = 0;
	CHECK(syscall(SYS_process_vm_readv, holder, &l, 1, &r, 1, 0) == -1 &&
	      errno == EPERM);
	params_for(&p, ring, 2);
	FILL_IN(regs, SYS_process_vm_readv, holder, (long)&l, 1, (long)&r, 1,
		0);
	ret = indirect(&regs, &p, sizeof(p), 0);
	if (ret == -1 && errno == ESYSLETPENDING) {
		c = ring_pop(ring);
		ret = (long)c.status;
	} else if (ret < 0) {
		ret = -errno;
	}
	CHECK(ret == -EPERM);
	CHECK(!buf[0]);
	return 0;
}

static int vm_read(void)
{
	int go[2], rc;
	char c;

	CHECK(!pipe(go));
	holder = fork();
	CHECK(holder >= 0);
	if (!holder) {
		close(go[1]);
		alarm(ALARM_S);
		_exit(read(go[0], &c, 1) < 0);
	}
	close(go[0]);
	rc = on_thread(vm_read_thread);
	close(go[1]);
	CHECK(waitpid(holder, NULL, 0) == holder);
	return rc;
}

static void test_vm_read_apart(void **state)
{
	(void)state;
	run_child(vm_read);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queued_before_drop),
		cmocka_unit_test(test_queued_before_raise),
		cmocka_unit_test(test_raw_setresuid_first),
		cmocka_unit_test(test_unseen_drop_refused),
		cmocka_unit_test(test_unseen_drop_first),
		cmocka_unit_test(test_securebits_apart),
		cmocka_unit_test(test_partial_write_apart),
		cmocka_unit_test(test_refusals_start_no_workers),
		cmocka_unit_test(test_files_unshared),
		cmocka_unit_test(test_files_close_range),
		cmocka_unit_test(test_vm_read_apart),
	};

	setenv("SYSLET_MAX_WORKERS", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
