/* SPDX-License-Identifier: MIT */
/*
 * A notifier that forks: its child is an ordinary process (SPEC 5), and
 * a notifier that comes back in a fork child ends the child, status 0
 * (notify.c: s->pid != pid, or the MADV_WIPEONFORK byte not READY); the
 * parent's notifiers and calls go on. Each case runs in its own process
 * under alarm(); every wait is bounded.
 *
 *   parent_mix  256 notifiers on one shared sp, ending by return,
 *              syslet_notify_exit(), syscall(SYS_exit, 0), some making an
 *              inline indirect() themselves, while the main thread
 *              glibc-forks and raw-forks children: every call completes
 *              once, every notifier runs, no worker replaced or lost,
 *              syslet_drain() returns, stats agree.
 *   child_notifiers  the same mix in a glibc fork child (from the main
 *              thread) of a parent that ran notifiers, and in a grandchild;
 *              the parent again after.
 *   spawn      notifiers that vfork()+_exit and posix_spawn(/bin/true):
 *              the worker carries on.
 *   nf_status  a notifier glibc-forks, the child returns at once: the
 *              child (its only thread gone) ends with status 0.
 *   nowipe_*   the above without MADV_WIPEONFORK (madvise interposed,
 *              NFK_NOWIPE=1, re-exec).
 *
 * Findings, fixed (notify.c: the kernel's pid; the child ends, status 0):
 *   nowipe_nf_raw  without MADV_WIPEONFORK, a notifier raw-forks while a
 *              call of the parent waits queued (one worker): the page is
 *              absent and the cached pid was never reset: the child's
 *              thread went on as a worker and ran the parent's queued
 *              read (fork_reset nf_return_raw, again, before 4.14).
 *   nf_child_ends  a notifier glibc-forks; the child punts one call (its
 *              pool starts) and returns from the notifier: its thread
 *              ended, the process did not (the library's threads kept
 *              it).
 *
 * Known (should_fail, syslet(7) BUGS):
 *   nf_same_sp a notifier glibc-forks; the child (still in the notifier,
 *              on stack S) punts a call whose notifier shares S: the
 *              child's reset re-initialised every stripe, so the child's
 *              worker runs the second notifier on S at once, over the
 *              frames of the thread still running there (SPEC 4.4:
 *              notifiers sharing an sp never run at once).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "forked.h"
#include "test_fork_util.h"
#include "test_hook_util.h"
#include "test_pool_util.h"

NOWIPE_HOOKS("NFK_NOWIPE")

extern char **environ;
/* <spawn.h> is src/spawn.h here (include path): declared by hand. */
int posix_spawn(pid_t *pid, const char *path, const void *fa, const void *attr,
		char *const argv[], char *const envp[]);

#define CASE_S 40
#define NRING 64

static void in_child(int (*fn)(void), const char *name)
{
	int r = case_process(fn, name, CASE_S);

	if (r)
		fail_msg("%s: case process: %d", name, r);
}

static char sh_stack[65536] __attribute__((aligned(16)));
#define SH_TOP ((void *)(sh_stack + sizeof(sh_stack)))
static _Alignas(64) char ringmem[65536];
static _Atomic int ran, bad;

static void mix_note(void)
{
	struct syslet_completion *c = syslet_current_completion();
	uint64_t cd = c ? c->caller_data : ~0ull;

	if (!c)
		atomic_store(&bad, 1);
	if (cd % 8 == 3) {
		_Alignas(8) char m[4096];

		if (ind_getpid_on((struct syslet_ring *)m))
			atomic_store(&bad, 2);
	}
	atomic_fetch_add(&ran, 1);
	switch (cd % 4) {
	case 1:
		syslet_notify_exit();
	case 2:
		syscall(SYS_exit, 0);
		atomic_store(&bad, 3); /* not reached */
		return;
	default:
		return;
	}
}

/* @n calls with mix_note in batches of 8, forks between: 0 or a code. */
static int run_mix(int n, int forks)
{
	struct syslet_ring *r = (struct syslet_ring *)ringmem;
	struct syslet_stats s0, s1;
	static unsigned char seen[1024];
	int fd[2], i, b, ret = 0;
	char buf[8];

	atomic_store(&ran, 0);
	memset(seen, 0, sizeof(seen));
	if (syslet_ring_init(r, NRING) || pipe(fd) ||
	    syslet_stats(&s0, sizeof(s0)))
		return 50;
	for (b = 0; b < n; b += 8) {
		for (i = 0; i < 8; i++)
			if (punt_read_frame(r, fd[0], &buf[i],
					    (uint64_t)(b + i), mix_note,
					    SH_TOP))
				return 51;
		if (write(fd[1], "abcdefgh", 8) != 8)
			return 52;
		if (forks && (b / 8) % 4 == 0) {
			pid_t p = (b / 8) % 8 ? raw_fork() : fork();

			if (!p)
				_exit(0);
			if (reap(p, 8, "mix fork child"))
				return 53;
		}
		if (wait_n(r, 8, 8))
			return 54;
		for (i = 0; i < 8; i++) {
			struct syslet_completion *c =
				syslet_ring_slot(r, r->user_tail + (uint32_t)i);

			if (c->caller_data >= 1024 || seen[c->caller_data]++ ||
			    c->status != 1)
				ret = 55;
		}
		syslet_ring_advance(r, 8);
	}
	if (POLL_WITHIN(8, atomic_load(&ran) == n) == 0) {
		fprintf(stderr, "ran %d of %d notifiers\n", atomic_load(&ran),
			n);
		return 56;
	}
	if (atomic_load(&bad)) {
		fprintf(stderr, "bad %d\n", atomic_load(&bad));
		return 57;
	}
	if (syslet_drain())
		return 58;
	if (syslet_stats(&s1, sizeof(s1)))
		return 59;
	if (s1.submitted - s0.submitted != (uint64_t)n ||
	    s1.completed - s0.completed != (uint64_t)n ||
	    s1.workers_replaced != s0.workers_replaced || queued_total(&s1) ||
	    !s1.workers_now) {
		fprintf(stderr,
			"stats: sub %llu comp %llu repl %llu->%llu q %u w %u\n",
			(unsigned long long)(s1.submitted - s0.submitted),
			(unsigned long long)(s1.completed - s0.completed),
			(unsigned long long)s0.workers_replaced,
			(unsigned long long)s1.workers_replaced,
			queued_total(&s1), s1.workers_now);
		return 60;
	}
	if (worker_threads() < 1)
		return 61;
	/* No byte left: each read took one. */
	{
		int avail = -1;

		if (ioctl(fd[0], FIONREAD, &avail) || avail)
			return 62;
	}
	close(fd[0]);
	close(fd[1]);
	return ret;
}

static int parent_mix_case(void)
{
	return run_mix(256, 1);
}

static int child_notifiers_case(void)
{
	pid_t p;
	int r;

	if ((r = run_mix(64, 0)))
		return r;
	p = fork();
	if (!p) {
		pid_t g;

		alarm(20);
		if ((r = run_mix(128, 0)))
			_exit(r);
		g = fork();
		if (!g) {
			alarm(15);
			_exit(run_mix(96, 0));
		}
		if ((r = reap(g, 15, "grandchild")))
			_exit(70 + (r > 20 ? 20 : r));
		_exit(run_mix(64, 0));
	}
	if ((r = reap(p, 30, "child")))
		return r;
	return run_mix(64, 1);
}

static _Atomic int sp_ok;

static void spawn_note(void)
{
	char *argv[] = { "true", NULL };
	pid_t p;
	int st;

	p = vfork();
	if (!p)
		_exit(7);
	if (p < 0 || waitpid(p, &st, 0) != p || WEXITSTATUS(st) != 7)
		atomic_store(&bad, 10);
	if (posix_spawn(&p, "/bin/true", NULL, NULL, argv, environ) ||
	    waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
		atomic_store(&bad, 11);
	atomic_fetch_add(&sp_ok, 1);
}

static int spawn_case(void)
{
	struct syslet_ring *r = (struct syslet_ring *)ringmem;
	struct syslet_stats st;
	int fd[2], i;
	char c[16];

	if (syslet_ring_init(r, NRING) || pipe(fd))
		return 1;
	for (i = 0; i < 16; i++)
		if (punt_read_frame(r, fd[0], &c[i], (uint64_t)i, spawn_note,
				    SH_TOP))
			return 2;
	if (write(fd[1], "0123456789abcdef", 16) != 16 || wait_n(r, 16, 10))
		return 3;
	syslet_ring_advance(r, 16);
	if (!POLL_WITHIN(10, atomic_load(&sp_ok) == 16))
		return 4;
	if (atomic_load(&bad))
		return 5;
	if (syslet_stats(&st, sizeof(st)) || st.workers_replaced)
		return 6;
	return run_mix(32, 0) ? 7 : 0;
}

/* ---- notifiers that fork ------------------------------------------------ */

enum { M_STATUS, M_RAW, M_SAME_SP, M_ENDS };
static int nf_mode;
static _Atomic pid_t nf_pid = -1;
static _Atomic int sp2_ran, main_checked;

static void sp_note2(void)
{
	volatile char big[12288];

	memset((char *)big, 0xa5, sizeof(big));
	atomic_store(&sp2_ran, 1);
	if (atomic_load(&main_checked))
		_exit(0);
}

static void nf_note(void)
{
	volatile char canary[2048];
	pid_t pid;

	pid = nf_mode == M_RAW ? raw_fork() : fork();
	if (pid) {
		atomic_store(&nf_pid, pid);
		return;
	}
	if (nf_mode == M_STATUS || nf_mode == M_RAW)
		return; /* the thread ends here */
	if (nf_mode == M_ENDS) {
		if (punt_served(0x44))
			_exit(20);
		return; /* the only thread of the program ends */
	}
	/* M_SAME_SP: a notifier on the stack this thread runs on. */
	{
		_Alignas(8) static char cm[4096];
		struct syslet_ring *r = (struct syslet_ring *)cm;
		int fd[2];
		size_t i;
		char c;

		memset((char *)canary, 0x5a, sizeof(canary));
		if (syslet_ring_init(r, 16) || pipe(fd) ||
		    punt_read_frame(r, fd[0], &c, 0x55, sp_note2, SH_TOP) ||
		    write(fd[1], "x", 1) != 1)
			_exit(31);
		if (wait_n(r, 1, 4))
			_exit(32);
		/* a window to see it run (it must not, while we are here) */
		POLL_WITHIN(1, atomic_load(&sp2_ran));
		for (i = 0; i < sizeof(canary); i++)
			if (canary[i] != 0x5a)
				_exit(33);
		if (atomic_load(&sp2_ran))
			_exit(34);
		atomic_store(&main_checked, 1);
		return; /* the worker's sp_note2 then ends the child, 0 */
	}
}

static int nf_fork_case(int mode, int want)
{
	struct syslet_ring *r = (struct syslet_ring *)ringmem;
	int fd[2], st;
	char c;
	pid_t pid;

	nf_mode = mode;
	if (syslet_ring_init(r, 16) || pipe(fd) ||
	    punt_read_frame(r, fd[0], &c, 0x66, nf_note, SH_TOP) ||
	    write(fd[1], "n", 1) != 1)
		return 1;
	if (!POLL_WITHIN(4, atomic_load(&nf_pid) >= 0))
		return 2;
	pid = atomic_load(&nf_pid);
	if (pid <= 0)
		return 3;
	st = reap(pid, 8, "notifier's child");
	if (st != want) {
		fprintf(stderr, "notifier's child: %d, want %d\n", st, want);
		return 4;
	}
	if (wait_n(r, 1, 4))
		return 5;
	return run_mix(16, 0) ? 6 : 0;
}

static int nf_status_case(void)
{
	return nf_fork_case(M_STATUS, 0);
}

static int nf_same_sp_case(void)
{
	return nf_fork_case(M_SAME_SP, 0);
}

static int nf_ends_case(void)
{
	return nf_fork_case(M_ENDS, 0);
}

/* nowipe_nf_raw: fork_reset's nf_return_raw, without the page. */
static int nf_raw_case(void)
{
	struct syslet_ring *r = (struct syslet_ring *)ringmem;
	int fd[2], d[2], ret = 0, avail = -1;
	double t0;
	pid_t pid;
	char c, e;

	nf_mode = M_RAW;
	if (pin_self(allowed_cpu(0)) ||
	    syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) ||
	    syslet_ring_init(r, 16) || pipe(fd) || pipe(d))
		return 1;
	if (punt_read_frame(r, fd[0], &c, 0x66, nf_note, SH_TOP) ||
	    punt_read_fd(r, d[0], &e, 0x77))
		return 2;
	if (write(fd[1], "n", 1) != 1)
		return 3;
	if (!POLL_WITHIN(4, atomic_load(&nf_pid) >= 0))
		return 4;
	pid = atomic_load(&nf_pid);
	if (pid <= 0)
		return 4;
	t0 = now();
	while (now() - t0 < 2 && !pid_in_read(pid, d[0]))
		sched_yield();
	if (pid_in_read(pid, d[0])) {
		fprintf(stderr, "child %d runs the parent's queued read\n",
			pid);
		ret = 10;
	}
	if (write(d[1], "ab", 2) != 2 || wait_n(r, 2, 4))
		ret = ret ? ret : 11;
	kill(pid, SIGKILL);
	reap(pid, 2, "raw notifier child");
	if (!ret && (ioctl(d[0], FIONREAD, &avail) || avail != 1)) {
		fprintf(stderr, "pipe holds %d, want 1\n", avail);
		ret = 12;
	}
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "parent_mix", parent_mix_case },
	{ "child_notifiers", child_notifiers_case },
	{ "spawn", spawn_case },
	{ "nf_status", nf_status_case },
	{ "nf_same_sp", nf_same_sp_case },
	{ "nf_child_ends", nf_ends_case },
	{ "nf_raw", nf_raw_case },
};
static int (*case_fn)(void);
static const char *case_name;

static void test_case(void **state)
{
	(void)state;
	in_child(case_fn, case_name);
}

int main(int argc, char **argv)
{
	const char *g = argc > 1 ? argv[1] : "parent_mix";
	const char *base = g;
	struct CMUnitTest t[1];
	size_t i;

	if (!strncmp(g, "nowipe_", 7)) {
		base = g + 7;
		if (!nowipe()) {
			setenv("NFK_NOWIPE", "1", 1);
			execv("/proc/self/exe", argv);
			return 1;
		}
	}
	{
		pthread_mutex_t m; /* resolve the hooks before any fork */

		pthread_mutex_init(&m, NULL);
		(void)nowipe();
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(base, cases[i].name))
			break;
	if (i == sizeof(cases) / sizeof(cases[0])) {
		fprintf(stderr, "unknown group %s\n", g);
		return 2;
	}
	case_fn = cases[i].fn;
	case_name = g;
	t[0] = (struct CMUnitTest)cmocka_unit_test(test_case);
	return _cmocka_run_group_tests(g, t, 1, NULL, NULL);
}
