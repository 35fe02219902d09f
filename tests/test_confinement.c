/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: breaking issue 10's promise from outside: a call made
 * through indirect() never succeeds where the same thread's own call
 * fails. Each case runs in a fresh child process (a new pool) under an
 * alarm, black-box through libsyslet.so:
 *   - a thread's own seccomp filter (prctl, or syscall(SYS_seccomp) after
 *     the thread already punted) forbids mkdirat: a punted mkdirat must
 *     not run on a worker without that filter; as root and as uid 1000;
 *     the same for the main thread's own filter after the pool started;
 *   - a thread with its own fs_struct (unshare(CLONE_FS)) chroot'ed into a
 *     jail: a punted mkdirat of a path outside the jail must not land in
 *     the real root;
 *   - a thread in its own mount namespace with a read-only bind mount: a
 *     punted mkdirat must not reach the writable original;
 *   - a jailed thread that starts the pool must not put the workers in
 *     its jail: a later root thread's punted call lands in the real root;
 *   - a process with many supplementary groups (3000, 65536: a status
 *     file past 16 KiB) still starts its pool, and a thread dropped to
 *     nobody gets exactly those groups on the worker;
 *   - the main thread ended with pthread_exit(): another thread's calls
 *     still start a pool and run (the leader, a zombie, is no baseline);
 *   - an allow-list sandbox of the Chromium kind (NO_NEW_PRIVS, then a
 *     TSYNC filter trapping every call it does not list): the program's
 *     punted calls run, and the library makes no call the filter traps;
 *   - Landlock: a thread of several restricts itself; neither it nor a
 *     thread it starts afterwards gets through a worker what its domain
 *     forbids, while the other threads' calls still run; a process that
 *     restricts itself while it has one thread gets its calls run as
 *     plainly (the pool inherits the domain).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sanitizer.h"
#include "indirect_util.h"
#include "test_priv_util.h"

#define USER_A 1000

static char dir[] = "/tmp/syslet-privatk-XXXXXX";
static _Thread_local char path[128]; /* fresh()'s last */
static _Thread_local struct syslet_ring *ring;
static _Atomic unsigned int seq;

/* Run @nr through indirect(); a pending call's completion, waited for. */
static long punt(long nr, long a0, long a1, long a2)
{
	return punt_on(&ring, nr, a0, a1, a2, 0);
}

/* A fresh path under @base. */
static const char *fresh(const char *base)
{
	snprintf(path, sizeof(path), "%s/d%d.%u", base, (int)getpid(),
		 atomic_fetch_add(&seq, 1));
	return path;
}

static long punt_mkdir(const char *p)
{
	return punt(SYS_mkdirat, AT_FDCWD, (long)p, 0700);
}

static bool exists(const char *p)
{
	struct stat st;

	return !stat(p, &st);
}

static int start_pool(void)
{
	return punt(SYS_fdatasync, -1, 0, 0) == -EBADF ? 0 : -1;
}

/* A filter of this thread only: mkdirat fails with EPERM. */
static struct sock_filter no_mkdirat[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdirat, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};
static struct sock_fprog no_mkdirat_prog = { 4, no_mkdirat };

/* The same thread, directly and through a worker: neither creates. */
static int refused_both(const char *base)
{
	CHECK(mkdirat(AT_FDCWD, fresh(base), 0700) == -1 && errno == EPERM);
	CHECK(punt_mkdir(fresh(base)) < 0);
	CHECK(!exists(path));
	return 0;
}

static int filter_prctl_thread(void)
{
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(!prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &no_mkdirat_prog));
	return refused_both(dir);
}

/* Punted before: the snapshot was valid when the filter came. */
static int filter_syscall_thread(void)
{
	CHECK(punt_mkdir(fresh(dir)) == 0);
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(!syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
		       &no_mkdirat_prog));
	return refused_both(dir);
}

/* The same, the filter installed through indirect() itself. */
static int filter_indirect_thread(void)
{
	CHECK(punt_mkdir(fresh(dir)) == 0);
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(!punt(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
		    (long)&no_mkdirat_prog));
	return refused_both(dir);
}

static int filter_child(void)
{
	CHECK(!start_pool());
	CHECK(on_thread(filter_prctl_thread) == 0);
	CHECK(on_thread(filter_syscall_thread) == 0);
	CHECK(on_thread(filter_indirect_thread) == 0);
	/* The other threads are not confined by it. */
	CHECK(punt_mkdir(fresh(dir)) == 0 && exists(path));
	return 0;
}

/* The main thread, alone, after the pool started (libseccomp's default). */
static int filter_leader_child(void)
{
	CHECK(!start_pool());
	CHECK(punt_mkdir(fresh(dir)) == 0);
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(!prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &no_mkdirat_prog));
	return refused_both(dir);
}

static void test_leader_filter(void **state)
{
	(void)state;
	run_child(filter_leader_child);
}

static void test_thread_filter(void **state)
{
	(void)state;
	run_child(filter_child);
}

static int filter_unpriv_child(void)
{
	char sub[64];

	snprintf(sub, sizeof(sub), "%s/u%d", dir, (int)getpid());
	CHECK(!mkdir(sub, 0700) && !chown(sub, USER_A, USER_A));
	CHECK(!setgroups(0, NULL));
	CHECK(!setresgid(USER_A, USER_A, USER_A));
	CHECK(!setresuid(USER_A, USER_A, USER_A));
	CHECK(!start_pool());
	CHECK(punt_mkdir(fresh(sub)) == 0 && exists(path));
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(!syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
		       &no_mkdirat_prog));
	return refused_both(sub);
}

static void *filter_unpriv_run(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)filter_unpriv_child();
}

/* As uid 1000: the filter on a second thread, the first keeps none. */
static int unpriv_child(void)
{
	pthread_t t;
	void *r;

	/* Give the directory to everyone, then drop for good. */
	CHECK(!chmod(dir, 0711));
	CHECK(!pthread_create(&t, NULL, filter_unpriv_run, NULL));
	CHECK(!pthread_join(t, &r));
	return (int)(intptr_t)r;
}

static void test_thread_filter_unprivileged(void **state)
{
	(void)state;
	run_child(unpriv_child);
}

static char jail[64];

/* This thread (alone) into @jail; paths outside it cannot be reached. */
static void enter_jail(void)
{
	CHECK(!unshare(CLONE_FS));
	CHECK(!chroot(jail) && !chdir("/"));
}

static int jail_thread(void)
{
	char out[96];

	enter_jail();
	snprintf(out, sizeof(out), "%s/escaped", dir);
	/* dir does not exist inside the jail. */
	CHECK(mkdirat(AT_FDCWD, out, 0700) == -1 && errno == ENOENT);
	CHECK(punt_mkdir(out) < 0);
	return 0;
}

static int jail_child(void)
{
	char out[96];

	snprintf(jail, sizeof(jail), "%s/jail%d", dir, (int)getpid());
	CHECK(!mkdir(jail, 0755));
	CHECK(!start_pool());
	CHECK(on_thread(jail_thread) == 0);
	snprintf(out, sizeof(out), "%s/escaped", dir);
	CHECK(!exists(out));
	return 0;
}

static void test_chroot_jail(void **state)
{
	(void)state;
	run_child(jail_child);
}

/* The pool's first call made from a jail: no worker shares the jail. */
static int jail_starter(void)
{
	enter_jail();
	(void)start_pool();
	return 0;
}

static int jail_first_child(void)
{
	char inside[256];
	char proc[96];

	snprintf(jail, sizeof(jail), "%s/jail%d", dir, (int)getpid());
	CHECK(!mkdir(jail, 0755));
	/* A /proc in the jail (this process's own mounts), as a real jail. */
	snprintf(proc, sizeof(proc), "%s/proc", jail);
	CHECK(!mkdir(proc, 0755));
	CHECK(!unshare(CLONE_NEWNS));
	CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	CHECK(!mount("/proc", proc, NULL, MS_BIND | MS_REC, NULL));
	CHECK(on_thread(jail_starter) == 0);
	CHECK(punt_mkdir(fresh(dir)) == 0);
	CHECK(exists(path));
	snprintf(inside, sizeof(inside), "%s%s", jail, path);
	CHECK(!exists(inside));
	return 0;
}

static void test_jail_starts_pool(void **state)
{
	(void)state;
	run_child(jail_first_child);
}

static char ro[64];

static int mntns_thread(void)
{
	CHECK(!unshare(CLONE_NEWNS));
	CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	CHECK(!mount(ro, ro, NULL, MS_BIND, NULL));
	CHECK(!mount(NULL, ro, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL));
	CHECK(mkdirat(AT_FDCWD, fresh(ro), 0700) == -1 && errno == EROFS);
	CHECK(punt_mkdir(fresh(ro)) < 0);
	return 0;
}

static int mntns_child(void)
{
	snprintf(ro, sizeof(ro), "%s/ro%d", dir, (int)getpid());
	CHECK(!mkdir(ro, 0755));
	CHECK(!start_pool());
	CHECK(on_thread(mntns_thread) == 0);
	CHECK(!exists(path));
	return 0;
}

static void test_mount_namespace(void **state)
{
	(void)state;
	run_child(mntns_child);
}

static void *after_leader(void *arg)
{
	(void)arg;
	/* Bounded: the leader's end is seen in /proc (a zombie). */
	for (int i = 0; i < 30000; i++) {
		char st[4096];
		FILE *f = fopen("/proc/self/stat", "r");
		bool z = f && fgets(st, sizeof(st), f) && strstr(st, ") Z ");

		if (f)
			fclose(f);
		if (z)
			break;
		usleep(1000);
	}
	CHECK(!start_pool());
	CHECK(punt_mkdir(fresh(dir)) == 0 && exists(path));
	_exit(0);
}

static int leader_exit_child(void)
{
	pthread_t t;

	CHECK(!pthread_create(&t, NULL, after_leader, NULL));
	pthread_exit(NULL);
}

static void test_leader_exited(void **state)
{
	(void)state;
	run_child(leader_exit_child);
}

static int setup(void **state)
{
	(void)state;
	return priv_dir_setup(dir);
}

static int teardown(void **state)
{
	(void)state;
	return priv_dir_teardown(dir);
}

/* What the allow-list sandbox trapped: call numbers, in order. */
static _Atomic int ntrap;
static int trapped[16];

/* The trapped call answers -ENOSYS, the kernel's default for a trap. */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	int i = atomic_fetch_add(&ntrap, 1);

	(void)sig;
	(void)uc;
	if (i < 16)
		trapped[i] = si->si_syscall;
}

#define ALLOW(n)                                        \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/*
 * The program's own calls (mkdirat, fdatasync), what the library's
 * syslet(7) says a sandbox must allow it (getpid, process_vm_readv, the
 * scheduling calls by which the pool keeps out of real-time threads' way:
 * sched_getscheduler trapped in 1 of ~50 runs without them), and
 * what any thread needs to live, wait and start; the rest traps.
 */
static int allowlist_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_mkdirat),
		ALLOW(SYS_fdatasync),
		ALLOW(SYS_getpid),
		ALLOW(SYS_process_vm_readv),
		ALLOW(SYS_sched_getscheduler),
		ALLOW(SYS_sched_setscheduler),
		ALLOW(SYS_getpriority),
		ALLOW(SYS_setpriority),
		ALLOW(SYS_sched_getattr),
		ALLOW(SYS_sched_setattr),
		ALLOW(SYS_futex),
		ALLOW(SYS_exit),
		ALLOW(SYS_exit_group),
		ALLOW(SYS_rt_sigreturn),
		ALLOW(SYS_rt_sigprocmask),
		ALLOW(SYS_mmap),
		ALLOW(SYS_munmap),
		ALLOW(SYS_mprotect),
		ALLOW(SYS_madvise),
		ALLOW(SYS_brk),
		ALLOW(SYS_clone),
		ALLOW(SYS_clone3),
		ALLOW(SYS_set_robust_list),
		ALLOW(SYS_rseq),
		ALLOW(SYS_gettid),
		ALLOW(SYS_tgkill),
		ALLOW(SYS_write),
		ALLOW(SYS_sched_yield),
		ALLOW(SYS_sched_getaffinity),
		ALLOW(SYS_sched_setaffinity),
		ALLOW(SYS_clock_gettime),
		ALLOW(SYS_clock_nanosleep),
		ALLOW(SYS_nanosleep),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct sigaction sa = { .sa_sigaction = on_sigsys,
				.sa_flags = SA_SIGINFO };
	const char *p[3];
	int i;

	for (i = 0; i < 3; i++)
		p[i] = strdup(fresh(dir));
	CHECK(!start_pool());
	CHECK(!sigaction(SIGSYS, &sa, NULL));
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(!syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		       SECCOMP_FILTER_FLAG_TSYNC, &prog));
	for (i = 0; i < 3; i++)
		if (punt_mkdir(p[i]) != 0 ||
		    punt(SYS_fdatasync, -1, 0, 0) != -EBADF)
			_exit(10 + i);
	if (atomic_load(&ntrap))
		_exit(20 + trapped[0] % 200);
	return 0;
}

static void test_allowlist_sandbox(void **state)
{
	(void)state;
	if (UNDER_SANITIZER) { /* its runtime's own calls trap */
		fprintf(stderr, "skipped: a sanitizer's runtime makes calls "
				"the allow-list does not name\n");
		skip();
	}
	run_child(allowlist_child);
}

/*
 * A Landlock domain forbidding making directories and files anywhere; -1
 * if there is no Landlock.
 */
static int landlock_no_mkdir(void)
{
	struct landlock_ruleset_attr ra = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_DIR |
				     LANDLOCK_ACCESS_FS_MAKE_REG,
	};
	long fd = syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);
	int r;

	if (fd < 0)
		return -1;
	r = (int)syscall(SYS_landlock_restrict_self, fd, 0);
	close((int)fd);
	return r;
}

/* A new file made by a punted openat (O_CREAT: always punted). */
static long punt_creat(const char *p)
{
	long fd = punt(SYS_openat, AT_FDCWD, (long)p,
		       O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC);

	if (fd >= 0)
		close((int)fd);
	return fd < 0 ? fd : 0;
}

/* Restricted: the plain calls and the punted ones are refused alike. */
static int mkdir_forbidden(void)
{
	CHECK(mkdirat(AT_FDCWD, fresh(dir), 0700) == -1 && errno == EACCES);
	CHECK(punt_mkdir(fresh(dir)) < 0);
	CHECK(!exists(path));
	CHECK(punt_creat(fresh(dir)) < 0);
	CHECK(!exists(path));
	return 0;
}

static int landlock_thread(void)
{
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(landlock_no_mkdir() == 0);
	CHECK(!mkdir_forbidden());
	/* Its domain is inherited by what it starts; the library's view too. */
	return on_thread(mkdir_forbidden);
}

static int landlock_child(void)
{
	CHECK(!start_pool());
	CHECK(punt_mkdir(fresh(dir)) == 0);
	CHECK(on_thread(landlock_thread) == 0);
	/* This thread is not restricted: its calls still run. */
	CHECK(punt_mkdir(fresh(dir)) == 0 && exists(path));
	CHECK(punt_creat(fresh(dir)) == 0 && exists(path));
	return 0;
}

/* Alone when restricted: the pool, started after, holds the domain too. */
static int landlock_alone_child(void)
{
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(landlock_no_mkdir() == 0);
	CHECK(punt_mkdir(fresh(dir)) == -EACCES && !exists(path));
	CHECK(punt_creat(fresh(dir)) == -EACCES && !exists(path));
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	CHECK(on_thread(mkdir_forbidden) == 0);
	return 0;
}

static void landlock_or_skip(void)
{
	struct landlock_ruleset_attr ra = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_DIR,
	};
	long fd = syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);

	if (fd < 0) {
		fprintf(stderr, "no Landlock here (errno %d)\n", errno);
		skip();
	}
	close((int)fd);
}

static void test_landlock_thread(void **state)
{
	(void)state;
	landlock_or_skip();
	run_child(landlock_child);
}

static void test_landlock_alone(void **state)
{
	(void)state;
	landlock_or_skip();
	if (UNDER_TSAN) { /* its runtime's thread: never alone */
		fprintf(stderr, "skipped: TSan's own thread runs beside\n");
		skip();
	}
	run_child(landlock_alone_child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_filter),
		cmocka_unit_test(test_leader_filter),
		cmocka_unit_test(test_thread_filter_unprivileged),
		cmocka_unit_test(test_chroot_jail),
		cmocka_unit_test(test_jail_starts_pool),
		cmocka_unit_test(test_mount_namespace),
		cmocka_unit_test(test_leader_exited),
		cmocka_unit_test(test_allowlist_sandbox),
		cmocka_unit_test(test_landlock_thread),
		cmocka_unit_test(test_landlock_alone),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
