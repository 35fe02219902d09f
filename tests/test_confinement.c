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
 *     still start a pool and run (the leader, a zombie, is no baseline).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
