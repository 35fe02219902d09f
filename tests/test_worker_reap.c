/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the pool's death watch and its descriptor-free manager
 * (manager.c, worker.c) attacked from outside, as a hostile or merely
 * unusual program would (an earlier design, a reaper thread with pidfds
 * in a private table and a SIGURG doorbell read from a signalfd, failed
 * the cases kept here). Claims:
 *   1. no library descriptor in the program's table, no program
 *      descriptor closed or written by the library while the pool runs;
 *   2. worker deaths in notifiers (inline-assembly SYS_exit,
 *      pthread_exit) are seen and replaced whatever the program does to
 *      its descriptors, limits and signals;
 *   3. no process-wide side effect: the program's own SIGURG (blocked
 *      and waited for, handled, raised) is never taken from it;
 *   4. nothing lost, nothing hangs: every call completes, every
 *      notifier runs, syslet_drain() returns.
 * Cases: a process-directed SIGURG with SIGURG blocked in every program
 * thread, and with a handler; a program that sets SIGURG's disposition
 * to SIG_IGN/SIG_DFL while workers die; RLIMIT_NOFILE lowered after and
 * before the pool started; RLIMIT_NPROC with room for the manager and
 * one worker only; many deaths at once with a small cap; fork() and raw
 * SYS_fork while workers start and die, the pool then used in the child;
 * dup2/close_range storms while workers die; a program thread with an
 * unshared fs_struct, an unshared descriptor table (CLONE_FILES) or a
 * seccomp filter starting the pool; raw per-thread credential changes
 * in the main thread before the pool starts; a SIGURG the program
 * raises itself.
 * Not here: the pool's first call in a dup2() storm over the low
 * numbers. The first call opens /proc/self/status to check the new
 * threads (spawn.c), and a program that dup2()s onto numbers it did not
 * open races with every library that opens a file (glibc's malloc opens
 * /sys/devices/system/cpu/online the same way): syslet(7) says so.
 * Each case runs in a forked child with an alarm; every wait is bounded
 * (BOUND_S) and fails loudly.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shard.h"
#include "test_pool_util.h"

/* A raw fork (no atfork handler): aarch64 has no fork call, only clone. */
#ifdef SYS_fork
#define RAW_FORK() ((pid_t)syscall(SYS_fork))
#else
#define RAW_FORK() ((pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0))
#endif

#define BOUND_S 5 /* every wait of a case */
#define NOTIFY_STACK (64 * 1024)
#define STACKS 16

static const struct timespec one_ms = { 0, 1000000 };
static char *stacks; /* STACKS notifier stacks */
static _Atomic int notified; /* notifiers that ran */

/* A bounded poll: evaluate @cond every millisecond for BOUND_S. */
#define WITHIN(cond) POLL_WITHIN(BOUND_S, cond)

/* A notifier that counts itself, then ends its worker's thread. */
static void die(void)
{
	atomic_fetch_add(&notified, 1);
	end_worker();
}

#ifndef __x86_64__
static void *exit_at_once(void *arg)
{
	pthread_exit(arg);
}
#endif

/*
 * Elsewhere than x86_64 die() is pthread_exit(), whose unwinder glibc
 * loads (dlopen of libgcc_s) at its first use: loaded now, before a case
 * uses up the descriptors (RLIMIT_NOFILE), where that load fails and
 * glibc aborts the process.
 */
static void load_unwinder(void)
{
#ifndef __x86_64__
	pthread_t t;

	if (!pthread_create(&t, NULL, exit_at_once, NULL))
		pthread_join(t, NULL);
#endif
}

static uintptr_t stack_top(int i)
{
	return (uintptr_t)(stacks + (size_t)(i % STACKS + 1) * NOTIFY_STACK);
}

/* Queue @nr with a dying notifier on stack @i. */
static int submit_die(struct syslet_ring *r, long nr, long a0, long a1, long a2,
		      uint64_t data, int i)
{
	return submit_ex(r, nr, a0, a1, a2, data, (uintptr_t)die, stack_top(i));
}

static uint64_t replaced(void)
{
	struct syslet_stats st;

	stats(&st);
	return st.workers_replaced;
}

/* A plain call completes within BOUND_S; false if not. */
static bool plain_call_completes(struct syslet_ring *r, uint64_t data)
{
	struct syslet_completion c;

	CHECK(!submit(r, SYS_getppid, 0, 0, 0, data));
	if (reap_within(r, &c, BOUND_S))
		return false;
	CHECK(c.caller_data == data && (long)c.status == getppid());
	return true;
}

static void *drainer(void *arg)
{
	_Atomic int *done = arg;

	CHECK(!syslet_drain());
	atomic_store(done, 1);
	return NULL;
}

/* syslet_drain() returns within BOUND_S (else the thread is left). */
static bool drain_within(void)
{
	static _Atomic int done;
	pthread_t t;

	atomic_store(&done, 0);
	CHECK(!pthread_create(&t, NULL, drainer, (void *)&done));
	if (!WITHIN(atomic_load(&done)))
		return false;
	CHECK(!pthread_join(t, NULL));
	return true;
}

/* @n calls whose notifiers end their worker, one at a time: all seen. */
static int deaths_one_by_one(struct syslet_ring *r, int n, uint64_t base)
{
	struct syslet_completion c;
	uint64_t rep0 = replaced();
	int i, seen;

	for (i = 0; i < n; i++) {
		seen = atomic_load(&notified);
		CHECK(!submit_die(r, SYS_getppid, 0, 0, 0, base + (uint64_t)i,
				  i));
		if (reap_within(r, &c, BOUND_S)) {
			fprintf(stderr, "death %d: no completion in %d s\n", i,
				BOUND_S);
			return 1;
		}
		CHECK((long)c.status == getppid());
		if (!WITHIN(atomic_load(&notified) > seen)) {
			fprintf(stderr, "death %d: the notifier never ran\n",
				i);
			return 1;
		}
		if (!WITHIN(replaced() >= rep0 + (uint64_t)i + 1)) {
			fprintf(stderr,
				"death %d: not seen (replaced %llu of %d)\n", i,
				(unsigned long long)(replaced() - rep0), i + 1);
			return 1;
		}
	}
	return 0;
}

/* The pool's first call, completed: the manager and a worker exist. */
static struct syslet_ring *pool_started(long cap)
{
	struct syslet_ring *r = ring_new(64);

	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, cap));
	CHECK(plain_call_completes(r, 1));
	return r;
}

/* ---- claim 3: the program's own SIGURG ---------------------------- */

static bool urg_pending(void)
{
	sigset_t p;

	CHECK(!sigpending(&p));
	return sigismember(&p, SIGURG);
}

/*
 * SIGURG blocked in every program thread (a program that takes it with
 * sigwaitinfo() or a signalfd); a SIGURG sent to the process stays
 * pending for the program until it takes it (a signalfd of the
 * library's would read the process's shared pending set too).
 */
static int urg_blocked(void)
{
	struct timespec zero = { 0, 0 };
	struct syslet_ring *r;
	sigset_t urg;
	siginfo_t si;
	long n = 200;

	sigemptyset(&urg);
	sigaddset(&urg, SIGURG);
	CHECK(!pthread_sigmask(SIG_BLOCK, &urg, NULL));
	r = pool_started(4);
	(void)r;
	CHECK(!kill(getpid(), SIGURG));
	/* 200 ms: ample for a thread woken on another CPU to take it. */
	while (urg_pending() && n--)
		nanosleep(&one_ms, NULL);
	if (!urg_pending()) {
		fprintf(stderr, "the program's pending SIGURG was taken from"
				" it\n");
		return 1;
	}
	CHECK(sigtimedwait(&urg, &si, &zero) == SIGURG);
	CHECK(si.si_pid == getpid());
	return 0;
}

static _Atomic int urg_handled;

static void on_urg(int sig)
{
	(void)sig;
	atomic_fetch_add(&urg_handled, 1);
}

static void *urg_receiver(void *arg)
{
	struct timespec t = { 1, 0 };

	(void)arg;
	for (;;)
		nanosleep(&t, NULL); /* a handler interrupts it */
	return NULL;
}

#define URG_ROUNDS 200

/*
 * The program handles SIGURG on one of its threads (the others block
 * it); every SIGURG sent to the process reaches the handler.
 */
static int urg_handler(void)
{
	struct sigaction sa = { .sa_handler = on_urg };
	pthread_t t;
	sigset_t urg;
	int i;

	CHECK(!sigaction(SIGURG, &sa, NULL));
	CHECK(!pthread_create(&t, NULL, urg_receiver, NULL));
	sigemptyset(&urg);
	sigaddset(&urg, SIGURG);
	CHECK(!pthread_sigmask(SIG_BLOCK, &urg, NULL));
	pool_started(4);
	for (i = 0; i < URG_ROUNDS; i++) {
		CHECK(!kill(getpid(), SIGURG));
		if (!WITHIN(atomic_load(&urg_handled) == i + 1)) {
			fprintf(stderr,
				"SIGURG %d sent to the process never reached"
				" the program's handler\n",
				i);
			return 1;
		}
	}
	return 0;
}

/* ---- claim 4: the doorbell flushed by the program's sigaction ------ */

static _Atomic int storm_stop;

/* SIG_IGN and SIG_DFL (ignore for SIGURG) flush every pending SIGURG. */
static void *disposition_storm(void *arg)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	(void)arg;
	while (!atomic_load(&storm_stop)) {
		sigaction(SIGURG, &ign, NULL);
		sigaction(SIGURG, &dfl, NULL);
	}
	return NULL;
}

#define STORM_DEATHS 1000

/*
 * A program thread sets SIGURG's disposition over and over (a program
 * that ignores SIGURG, or resets it, at any time); workers die in
 * notifiers and are replaced, cap 1: every replacement's notifier runs.
 */
static int urg_disposition(void)
{
	struct syslet_ring *r = pool_started(1);
	pthread_t t[2];
	int i, ret;

	for (i = 0; i < 2; i++)
		CHECK(!pthread_create(&t[i], NULL, disposition_storm, NULL));
	ret = deaths_one_by_one(r, STORM_DEATHS, 100);
	atomic_store(&storm_stop, 1);
	for (i = 0; i < 2; i++)
		CHECK(!pthread_join(t[i], NULL));
	if (!ret && !plain_call_completes(r, 2)) {
		fprintf(stderr, "a plain call after the storm never ran\n");
		return 1;
	}
	return ret;
}

/* ---- claim 2: RLIMIT_NOFILE, RLIMIT_NPROC --------------------------- */

static void nofile(rlim_t n)
{
	struct rlimit rl;

	CHECK(!getrlimit(RLIMIT_NOFILE, &rl));
	rl.rlim_cur = n;
	CHECK(!setrlimit(RLIMIT_NOFILE, &rl));
}

/*
 * RLIMIT_NOFILE lowered to 2 after the pool started (the program cannot
 * open anything more; its descriptors 0-2 stay): a death watch that
 * needs descriptors fails (a reaper's private table counted too).
 * Workers die one by one, cap 1: each death is seen and replaced.
 */
static int nofile_after(void)
{
	struct syslet_ring *r = pool_started(1);
	int ret;

	nofile(2);
	ret = deaths_one_by_one(r, 4, 100);
	if (ret)
		return ret;
	if (!plain_call_completes(r, 2)) {
		fprintf(stderr, "a call after the deaths never completed\n");
		return 1;
	}
	if (!drain_within()) {
		fprintf(stderr, "syslet_drain() hangs\n");
		return 1;
	}
	return 0;
}

#define AT_ONCE 4

/*
 * RLIMIT_NOFILE of 4 before the pool starts, the program holding 0-2:
 * AT_ONCE workers block on the program's pipes, then all die in their
 * notifiers at once, cap AT_ONCE: every death is seen and replaced, a
 * later call completes, syslet_drain() returns.
 */
static int nofile_before(void)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	struct syslet_stats st;
	int fd[AT_ONCE][2], i;
	char got[AT_ONCE]; /* the reads' bytes, not into c being reaped */
	uint64_t rep0;

	CHECK(r);
	for (i = 0; i < AT_ONCE; i++)
		CHECK(!pipe(fd[i]));
	/* Above the program's low numbers: move them out of the way. */
	for (i = 0; i < AT_ONCE; i++) {
		CHECK(dup2(fd[i][0], 100 + 2 * i) == 100 + 2 * i);
		CHECK(dup2(fd[i][1], 101 + 2 * i) == 101 + 2 * i);
		close(fd[i][0]);
		close(fd[i][1]);
		fd[i][0] = 100 + 2 * i;
		fd[i][1] = 101 + 2 * i;
	}
	CHECK(!syscall(SYS_close_range, 3, 99, 0));
	nofile(4);
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, AT_ONCE));
	if (!plain_call_completes(r, 1)) {
		fprintf(stderr, "the pool did not start with RLIMIT_NOFILE "
				"4\n");
		return 1;
	}
	rep0 = replaced();
	for (i = 0; i < AT_ONCE; i++)
		CHECK(!submit_die(r, SYS_read, fd[i][0], (long)&got[i], 1,
				  10 + (uint64_t)i, i));
	CHECK(WAIT_STATS(st, st.workers_now == AT_ONCE && !queued_total(&st)));
	for (i = 0; i < AT_ONCE; i++)
		CHECK(write(fd[i][1], "x", 1) == 1);
	for (i = 0; i < AT_ONCE; i++)
		CHECK(!reap_within(r, &c, BOUND_S) && c.status == 1);
	CHECK(WITHIN(atomic_load(&notified) == AT_ONCE));
	if (!WITHIN(replaced() == rep0 + AT_ONCE)) {
		fprintf(stderr, "%llu of %d deaths seen\n",
			(unsigned long long)(replaced() - rep0), AT_ONCE);
		return 1;
	}
	if (!plain_call_completes(r, 2) || !drain_within()) {
		fprintf(stderr, "the pool hangs after the deaths\n");
		return 1;
	}
	return 0;
}

#define NPROC_UID 54321 /* a user with no other task */

/*
 * Not root, RLIMIT_NPROC room for the manager and one worker only (no
 * room for a watcher thread). A worker dies in its notifier, cap 1: the
 * death is seen, a later call completes.
 */
static int nproc_manager_and_one(void)
{
	struct rlimit rl = { 3, 3 }; /* main thread, manager, one worker */
	struct syslet_ring *r = ring_new(64);

	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1));
	CHECK(!setresgid(NPROC_UID, NPROC_UID, NPROC_UID));
	CHECK(!setresuid(NPROC_UID, NPROC_UID, NPROC_UID));
	CHECK(!setrlimit(RLIMIT_NPROC, &rl));
	if (!plain_call_completes(r, 1)) {
		fprintf(stderr, "the pool did not start with 3 tasks\n");
		return 1;
	}
	if (deaths_one_by_one(r, 1, 100))
		return 1;
	if (!plain_call_completes(r, 2)) {
		fprintf(stderr, "a call after the death never completed\n");
		return 1;
	}
	return 0;
}

/* ---- claim 4: many deaths at once ---------------------------------- */

#define MANY 16

/* MANY calls with dying notifiers queued at once, cap 2. */
static int many_deaths(void)
{
	struct syslet_ring *r = pool_started(2);
	struct syslet_completion c;
	uint64_t rep0 = replaced();
	int i;

	for (i = 0; i < MANY; i++)
		CHECK(!submit_die(r, SYS_getppid, 0, 0, 0, 10 + (uint64_t)i,
				  i));
	for (i = 0; i < MANY; i++)
		if (reap_within(r, &c, BOUND_S)) {
			fprintf(stderr, "%d of %d completions\n", i, MANY);
			return 1;
		}
	if (!WITHIN(replaced() == rep0 + MANY) || !drain_within()) {
		fprintf(stderr, "%llu of %d deaths seen\n",
			(unsigned long long)(replaced() - rep0), MANY);
		return 1;
	}
	return !plain_call_completes(r, 2);
}

/* ---- fork while workers start and die ----------------------------- */

static _Atomic int dying_stop;

/* Deaths one after another on a ring of its own, until told to stop. */
static void *dying_loop(void *arg)
{
	struct syslet_ring *r = ring_new(8);
	struct syslet_completion c;
	uint64_t i;

	(void)arg;
	CHECK(r);
	for (i = 0; !atomic_load(&dying_stop); i++) {
		CHECK(!submit_die(r, SYS_getppid, 0, 0, 0, i, (int)(i % 2)));
		CHECK(!reap_within(r, &c, BOUND_S));
	}
	return NULL;
}

/*
 * A 1 ms nanosleep through indirect() (the public edge, whose fork check
 * resets a raw fork child's pool), with a dying notifier if @dying.
 */
static int indirect_sleep(struct syslet_ring *r, uint64_t data, bool dying)
{
	struct indirect_registers regs;
	union indirect_params p = { 0 };
	long ret;

	FILL_IN(regs, SYS_nanosleep, (uintptr_t)&one_ms, 0);
	p.syslet.completion_ring_ptr = (uintptr_t)r;
	p.syslet.caller_data = data;
	if (dying) {
		p.syslet.frame.ip = (uintptr_t)die;
		p.syslet.frame.sp = stack_top(7);
	}
	ret = indirect(&regs, &p, sizeof(p.syslet), 0);
	return ret == -1 && errno == ESYSLETPENDING ? 0 : -1;
}

/* In a fork child: the pool works, a death there is seen and replaced. */
static int child_uses_pool(void)
{
	struct syslet_ring *r = ring_new(16);
	struct syslet_completion c;

	alarm(4 * BOUND_S);
	atomic_store(&notified, 0);
	CHECK(r && !indirect_sleep(r, 1, false));
	if (reap_within(r, &c, BOUND_S)) {
		fprintf(stderr, "child: the first call never completed\n");
		return 1;
	}
	CHECK(c.caller_data == 1 && c.status == 0);
	CHECK(!indirect_sleep(r, 2, true));
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 2);
	CHECK(WITHIN(atomic_load(&notified) == 1));
	if (!WITHIN(replaced() == 1)) {
		fprintf(stderr, "child: the death was not seen\n");
		return 1;
	}
	CHECK(!indirect_sleep(r, 3, false));
	if (reap_within(r, &c, BOUND_S)) {
		fprintf(stderr, "child: a call after the death never ran\n");
		return 1;
	}
	return 0;
}

#define FORKS 20

static int fork_during_deaths(bool raw)
{
	pthread_t t[2];
	pid_t pid;
	int i, st, ret = 0;

	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	for (i = 0; i < 2; i++)
		CHECK(!pthread_create(&t[i], NULL, dying_loop, NULL));
	for (i = 0; i < FORKS && !ret; i++) {
		pid = raw ? RAW_FORK() : fork();
		CHECK(pid >= 0);
		if (!pid)
			_exit(child_uses_pool());
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "fork child %d: status %#x\n", i, st);
			ret = 1;
		}
	}
	atomic_store(&dying_stop, 1);
	for (i = 0; i < 2; i++)
		CHECK(!pthread_join(t[i], NULL));
	return ret;
}

static int glibc_fork(void)
{
	return fork_during_deaths(false);
}

/*
 * Raw SYS_fork: no atfork handler. The parent's threads (workers in
 * malloc...) may hold glibc's locks the child then needs: to keep this
 * case about the library, the parent's deaths are quiet at each fork.
 */
static int raw_fork(void)
{
	struct syslet_ring *r = pool_started(2);
	struct syslet_completion c;
	pid_t pid;
	int i, st;

	/* A program's calls go through indirect(), which arms its check. */
	CHECK(!indirect_sleep(r, 9, false) && !reap_within(r, &c, BOUND_S));
	for (i = 0; i < FORKS; i++) {
		CHECK(!deaths_one_by_one(r, 1, 100 + (uint64_t)i));
		pid = RAW_FORK();
		CHECK(pid >= 0);
		if (!pid)
			_exit(child_uses_pool());
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "raw fork child %d: status %#x\n", i,
				st);
			return 1;
		}
	}
	return 0;
}

/* ---- claim 1: dup2/close_range storms ----------------------------- */

#define STORM_LOW 3
#define STORM_HIGH 40
#define KEEP_FD 200

static _Atomic int closed_behind; /* a storm descriptor closed by another */
static int storm_src; /* the program's /dev/null, dup2()ed by the storms */

/*
 * Storm @arg (0 or 1) owns half of [STORM_LOW, STORM_HIGH): it fills its
 * numbers with the program's descriptors, checks they are all still there
 * (nobody else may close them), empties them again.
 */
static void *fd_storm(void *arg)
{
	int half = (STORM_HIGH - STORM_LOW) / 2;
	int lo = STORM_LOW + (int)(intptr_t)arg * half, fd;

	while (!atomic_load(&storm_stop)) {
		for (fd = lo; fd < lo + half; fd++)
			dup2(storm_src, fd);
		for (fd = lo; fd < lo + half; fd++)
			if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
				atomic_store(&closed_behind, fd);
		syscall(SYS_close_range, lo, lo + half - 1, 0);
	}
	return NULL;
}

/* The program's pipe and /dev/null above the storm; 0-2 and them only. */
static void storm_setup(void)
{
	int keep[2];

	CHECK(!pipe(keep));
	CHECK(dup2(keep[0], KEEP_FD) == KEEP_FD &&
	      dup2(keep[1], KEEP_FD + 1) == KEEP_FD + 1);
	storm_src = open("/dev/null", O_RDONLY);
	CHECK(storm_src >= 0 && dup2(storm_src, KEEP_FD + 2) == KEEP_FD + 2);
	CHECK(!syscall(SYS_close_range, 3, KEEP_FD - 1, 0));
	storm_src = KEEP_FD + 2;
}

/*
 * The storm while workers die and are replaced: every call completes,
 * every death is seen, the program's pipe above the storm is intact and
 * carries only its own bytes.
 */
static int deaths_in_storm(void)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	pthread_t t[2];
	int i, ret;
	char b;

	/* Started before the storm (see the top of the file). */
	storm_setup();
	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	CHECK(plain_call_completes(r, 1));
	for (i = 0; i < 2; i++)
		CHECK(!pthread_create(&t[i], NULL, fd_storm,
				      (void *)(intptr_t)i));
	ret = deaths_one_by_one(r, 50, 100);
	atomic_store(&storm_stop, 1);
	for (i = 0; i < 2; i++)
		CHECK(!pthread_join(t[i], NULL));
	/*
	 * closed_behind is not checked here: glibc's malloc opens
	 * /sys/devices/system/cpu/online once per process, in whichever
	 * thread (a new worker) first needs a new arena.
	 */
	if (ret)
		return ret;
	CHECK(!submit(r, SYS_read, KEEP_FD, (long)&b, 1, 3));
	CHECK(write(KEEP_FD + 1, "k", 1) == 1);
	CHECK(!reap_within(r, &c, BOUND_S) && c.status == 1 && b == 'k');
	return !drain_within();
}

/* ---- a program thread with its own fs_struct starts the pool ------- */

static void *unshared_first(void *arg)
{
	struct syslet_ring *r = arg;
	struct syslet_completion c;
	int ret;

	CHECK(!unshare(CLONE_FS));
	ret = submit(r, SYS_getppid, 0, 0, 0, 1);
	/* Refused (the pool's start from here fails) or done. */
	CHECK(ret == -EAGAIN || ret == -EPERM ||
	      (!ret && !reap_within(r, &c, BOUND_S)));
	return NULL;
}

static int unshared_fs(void)
{
	struct syslet_ring *r = ring_new(64);
	pthread_t t;

	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	CHECK(!pthread_create(&t, NULL, unshared_first, r));
	CHECK(!pthread_join(t, NULL));
	if (!plain_call_completes(r, 2)) {
		fprintf(stderr, "a normal thread's call never completed\n");
		return 1;
	}
	return deaths_one_by_one(r, 4, 100);
}

/* ---- program threads unlike the others start the pool --------------- */

static int odd_fd[2] = { -1, -1 };

/* A thread with a descriptor table of its own makes the first call. */
static void *files_first(void *arg)
{
	struct syslet_ring *r = arg;
	struct syslet_completion c;
	int ret;

	CHECK(!unshare(CLONE_FILES));
	ret = submit(r, SYS_getppid, 0, 0, 0, 1);
	CHECK(ret == -EAGAIN || ret == -EPERM ||
	      (!ret && !reap_within(r, &c, BOUND_S)));
	return NULL;
}

/*
 * A program thread that unshared its descriptor table (CLONE_FILES)
 * starts the pool; then the main thread opens a pipe and reads it
 * through the pool: the worker must see the process's table, not the
 * odd thread's private copy (SPEC 5, neutral workers).
 */
static int unshared_files(void)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	pthread_t t;
	char b = 0;

	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	CHECK(!pthread_create(&t, NULL, files_first, r));
	CHECK(!pthread_join(t, NULL));
	CHECK(!pipe(odd_fd) && write(odd_fd[1], "f", 1) == 1);
	/* Queued straight to the pool (as an empty pipe's read would be). */
	CHECK(!submit(r, SYS_read, odd_fd[0], (long)&b, 1, 2));
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 2);
	if ((long)c.status != 1 || b != 'f') {
		fprintf(stderr,
			"a worker read the main thread's pipe: %ld (%s)\n",
			(long)c.status,
			(long)c.status < 0 ? strerror((int)-(long)c.status) :
					     "");
		return 1;
	}
	return 0;
}

/* A thread under a seccomp filter (allow everything) makes the first call. */
static void *seccomp_first(void *arg)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { 1, &allow };
	struct syslet_ring *r = arg;
	struct syslet_completion c;
	int ret;

	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(!syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog));
	ret = submit(r, SYS_getppid, 0, 0, 0, 1);
	CHECK(ret == -EAGAIN || ret == -EPERM ||
	      (!ret && !reap_within(r, &c, BOUND_S)));
	return NULL;
}

/* Then a normal thread's calls run, deaths are seen. */
static int seccomp_thread(void)
{
	struct syslet_ring *r = ring_new(64);
	pthread_t t;

	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	CHECK(!pthread_create(&t, NULL, seccomp_first, r));
	CHECK(!pthread_join(t, NULL));
	if (!plain_call_completes(r, 2)) {
		fprintf(stderr, "a normal thread's call never completed\n");
		return 1;
	}
	return deaths_one_by_one(r, 4, 100);
}

/*
 * Raw per-thread credential changes in the main thread (the baseline)
 * before the pool starts: fsuid, effective uid with root saved, no
 * capabilities left but those needed back. The manager and the
 * workers then run as that: deaths are still seen and replaced.
 */
static int raw_creds_leader(void)
{
	struct syslet_ring *r = ring_new(64);

	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1));
	syscall(SYS_setfsuid, 65534);
	CHECK(!syscall(SYS_setresuid, 0, 65534, 0));
	if (!plain_call_completes(r, 1)) {
		fprintf(stderr, "the pool's first call never completed\n");
		return 1;
	}
	return deaths_one_by_one(r, 4, 100);
}

/* SIGURG the program raises itself (thread-directed) is its own. */
static int urg_raise(void)
{
	struct timespec zero = { 0, 0 };
	struct sigaction sa = { .sa_handler = on_urg };
	sigset_t urg;
	siginfo_t si;

	CHECK(!sigaction(SIGURG, &sa, NULL));
	pool_started(2);
	CHECK(!raise(SIGURG) && atomic_load(&urg_handled) == 1);
	sigemptyset(&urg);
	sigaddset(&urg, SIGURG);
	CHECK(!pthread_sigmask(SIG_BLOCK, &urg, NULL));
	CHECK(!raise(SIGURG));
	CHECK(sigtimedwait(&urg, &si, &zero) == SIGURG);
	return 0;
}

/* ---- the cases ------------------------------------------------------ */

static void in_child(int (*fn)(void))
{
	pid_t pid = fork_case(20 * BOUND_S);

	if (!pid) {
		stacks = malloc((size_t)STACKS * NOTIFY_STACK);
		CHECK(stacks);
		_exit(fn());
	}
	assert_int_equal(wait_case(pid), 0);
}

#define CASE(name, fn)                 \
	static void name(void **state) \
	{                              \
		(void)state;           \
		in_child(fn);          \
	}

CASE(test_urg_blocked_process_signal, urg_blocked)
CASE(test_urg_handler_process_signal, urg_handler)
CASE(test_urg_disposition_storm, urg_disposition)
CASE(test_nofile_after_start, nofile_after)
CASE(test_nofile_before_start, nofile_before)
CASE(test_nproc_manager_and_one, nproc_manager_and_one)
CASE(test_many_deaths_small_cap, many_deaths)
CASE(test_fork_during_deaths, glibc_fork)
CASE(test_raw_fork_after_deaths, raw_fork)
CASE(test_fd_storm_deaths, deaths_in_storm)
CASE(test_unshared_fs_first, unshared_fs)
CASE(test_unshared_files_first, unshared_files)
CASE(test_seccomp_thread_first, seccomp_thread)
CASE(test_raw_creds_leader, raw_creds_leader)
CASE(test_urg_raised_by_program, urg_raise)

/* An argument: run the cases it matches (cmocka's filter). */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urg_blocked_process_signal),
		cmocka_unit_test(test_urg_handler_process_signal),
		cmocka_unit_test(test_urg_disposition_storm),
		cmocka_unit_test(test_nofile_after_start),
		cmocka_unit_test(test_nofile_before_start),
		cmocka_unit_test(test_nproc_manager_and_one),
		cmocka_unit_test(test_many_deaths_small_cap),
		cmocka_unit_test(test_fork_during_deaths),
		cmocka_unit_test(test_raw_fork_after_deaths),
		cmocka_unit_test(test_fd_storm_deaths),
		cmocka_unit_test(test_unshared_fs_first),
		cmocka_unit_test(test_unshared_files_first),
		cmocka_unit_test(test_seccomp_thread_first),
		cmocka_unit_test(test_raw_creds_leader),
		cmocka_unit_test(test_urg_raised_by_program),
	};

	if (argc == 2)
		cmocka_set_test_filter(argv[1]);
	load_unwinder();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
