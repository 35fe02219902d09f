/* SPDX-License-Identifier: MIT */
/*
 * Description: the library's inits (its onces, a fork child's reset,
 * the pool's first start, syslet_drain()) complete or fail cleanly
 * whatever cuts into them: asynchronous cancellation, signals, seccomp
 * traps, the program's atfork handlers; a SCHED_DEADLINE thread starts
 * the pool and keeps its own attributes. Groups (argv[1]):
 *
 *   rawcancel  syslet_cancel() in a raw fork child, before its first punt
 *              (the parent's call running on its one worker, another
 *              queued), then of its own call, and (rawcancel_race) from
 *              two child threads racing forked.c's reset: ENOENT for the
 *              parent's, 1 for its own, nobody hangs.
 *   seccomp_errno a DEADLINE thread makes the first punt under a filter
 *              that refuses sched_setattr with EPERM: a clean EAGAIN, the
 *              thread as it was.
 *   dl_signal  a signal sent to the DEADLINE thread inside thread_start()'s
 *              window is pending there and handled once after; its
 *              handler's raw fork fails with EAGAIN (the thread as it was).
 *   atfork_punt_late  control of atfork_punt: the program's handler
 *              registered after the library's: its calls complete.
 *   wipe_atfork, nowipe_noh  controls of nowipe_atfork: with the wipe the
 *              program's handler runs the init again; without it a handler
 *              that makes no call leaves a child that is served.
 *
 * Findings (each fixed, now a passing run; hooks exported from here
 * hold a thread at a chosen point, each a deterministic widening of a
 * real window):
 *   seccomp_trap a DEADLINE thread makes the first punt under a filter
 *              that traps sched_setattr (SECCOMP_RET_TRAP; the program's
 *              SIGSYS handler answers EPERM, as sandboxes do): spawn.c
 *              thread_start() calls it with every signal blocked, so the
 *              kernel forces SIGSYS with the default action and the whole
 *              process is killed (expected: a clean EAGAIN).
 *   dl_lost    another thread changes the DEADLINE thread's runtime (by
 *              tid, 2 ms to 3 ms) while thread_start() has the flag set:
 *              the restore writes back the attributes read before, and
 *              the program's change is undone.
 *   oncecancel a runner with asynchronous cancellation cancelled after it
 *              claimed a once (word RUNNING) and before its
 *              pthread_setcancelstate(DISABLE) took effect (forked.c
 *              syslet__once_slow(): the claim comes before the disable):
 *              the once stays RUNNING for ever, every later caller waits.
 *   resetcancel in a raw fork child, the thread whose punt runs forked.c's
 *              reset is cancelled (asynchronous) inside it (indirect()'s
 *              punt runs it with cancellation on): the byte stays
 *              RESETTING, every other thread's punt spins for ever.
 *   draincancel a thread cancelled (asynchronous) while it waits inside
 *              syslet_drain(): drain_busy stays taken, every later
 *              syslet_drain() waits for ever.
 *   nowipe_atfork without MADV_WIPEONFORK (FIX_NOWIPE=1, re-exec): the
 *              program's own atfork child handler, registered before its
 *              first call of the library, calls it in a glibc fork child
 *              while another thread of the parent was inside an init:
 *              fallback_forked() runs only after it, the handler waits
 *              for ever.
 *   atfork_punt the program's atfork child handler, registered (as
 *              programs do, at start) before the library's first call,
 *              punts two reads in a glibc fork() child: its punt found
 *              the wiped page and ran forked.c's reset and a first start;
 *              then the library's own child handlers (pool.c
 *              syslet__pool_atfork_child(), registered at set-up) reset
 *              the pool again under the new threads (worker records
 *              freed, queue and rings re-initialised): neither call ever
 *              completed (control: atfork_punt_late). Fixed: one handler,
 *              registered at load, one reset per child.
 *   fallback_sig without MADV_WIPEONFORK: a signal to the thread that
 *              registers fallback_forked() (held in __register_atfork),
 *              whose handler makes an inline indirect() (another once):
 *              fallback_ready() spins for ever on the registration its
 *              own thread is in (pthread_once() had no such gate).
 *
 * Every wait is bounded: alarm() in every process, deadlines on joins.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "forked.h"
#include "test_fork_util.h"
#include "test_hook_util.h"
#include "test_sched_util.h"

#define CASE_S 20
#define CHILD_S 6
#define NS_MS 1000000ull

/* Run @fn in a fresh process (its own library state) under alarm. */
static void in_child(int (*fn)(void), const char *name)
{
	/* No core file: seccomp_trap's SIGSYS. */
	int r = case_process(fn, name, CASE_S);

	if (r == 77)
		skip();
	if (r)
		fail_msg("%s: case process: %d", name, r);
}

/* ---- hooks (export_dynamic: the library's calls come here) ---------- */

/*
 * oncecancel: hold a thread in syslet__once_slow()'s DISABLE. It claimed
 * the once before it (the finding); now the DISABLE comes first, so the
 * hold is before the claim: a cancel there leaves the once unclaimed.
 */
static _Atomic int cs_hold_id = -1;
static _Atomic int cs_held;
static _Atomic int cs_release;

__attribute__((visibility("default"))) int pthread_setcancelstate(int st,
								  int *old)
{
	REAL("pthread_setcancelstate", int (*real)(int, int *), real);
	int id = atomic_load(&cs_hold_id), zero = 0;

	if (id >= 0 && st == PTHREAD_CANCEL_DISABLE &&
	    atomic_load(&syslet__once_words[id]) != SYSLET__ONCE_DONE &&
	    atomic_compare_exchange_strong(&cs_held, &zero, 1)) {
		/* A pending asynchronous cancel acts here, as it may. */
		while (!atomic_load(&cs_release))
			sched_yield(); /* bounded by the alarm */
	}
	return real(st, old);
}

/* dl_lost: a pthread_create() of a DEADLINE thread with the flag set. */
static _Atomic int pc_armed;
static _Atomic pid_t pc_tid; /* the DEADLINE thread inside the window */
static _Atomic int pc_done; /* the other thread's change made */
static _Atomic int pc_windows;
static _Atomic int pc_sig; /* dl_signal: a signal sent in the window */
static _Atomic int pc_pending; /* it was pending (blocked) there */

__attribute__((visibility("default"))) int
pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
	       void *arg)
{
	REAL("pthread_create",
	     int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
			 void *),
	     real);
	struct dl_attr at = { .size = sizeof(at) };
	int ret = real(t, a, fn, arg);
	double t0;

	if ((atomic_load(&pc_armed) || atomic_load(&pc_sig)) &&
	    !syscall(SYS_sched_getattr, 0, &at, sizeof(at), 0) &&
	    at.policy == SCHED_DEADLINE &&
	    (at.flags & SCHED_FLAG_RESET_ON_FORK)) {
		atomic_fetch_add(&pc_windows, 1);
		if (atomic_exchange(&pc_sig, 0)) {
			sigset_t p;

			syscall(SYS_tgkill, getpid(), gettid_(), SIGUSR2);
			sigpending(&p);
			atomic_store(&pc_pending, sigismember(&p, SIGUSR2));
		} else if (atomic_exchange(&pc_armed, 0)) {
			atomic_store(&pc_tid, gettid_());
			t0 = now();
			while (!atomic_load(&pc_done) && now() - t0 < 5)
				sched_yield();
		}
	}
	return ret;
}

/* A kernel before 4.14, which has no MADV_WIPEONFORK. */
NOWIPE_HOOKS("FIX_NOWIPE")

/* Hold a non-main thread in the config's init (its getenv()). */
static _Atomic int ge_armed;
static _Atomic pid_t ge_pid;
static _Atomic pid_t ge_main;
static _Atomic int ge_held;
static _Atomic int ge_release;

__attribute__((visibility("default"))) char *getenv(const char *n)
{
	REAL("getenv", char *(*real)(const char *), real);
	int zero = 0;

	if (atomic_load(&ge_armed) && getpid() == atomic_load(&ge_pid) &&
	    gettid_() != atomic_load(&ge_main) &&
	    atomic_load(&syslet__once_words[SYSLET__ONCE_CONFIG]) ==
		    SYSLET__ONCE_RUNNING &&
	    atomic_compare_exchange_strong(&ge_held, &zero, 1)) {
		while (!atomic_load(&ge_release))
			sched_yield(); /* bounded by the alarm */
	}
	return real(n);
}

/* fallback_sig: hold the first registration of a non-main thread. */
static _Atomic int ra_armed;
static _Atomic int ra_held;
static _Atomic int ra_release;

int __register_atfork(void (*pre)(void), void (*par)(void), void (*chi)(void),
		      void *dso);

__attribute__((visibility("default"))) int __register_atfork(void (*pre)(void),
							     void (*par)(void),
							     void (*chi)(void),
							     void *dso)
{
	REAL("__register_atfork",
	     int (*real)(void (*)(void), void (*)(void), void (*)(void),
			 void *),
	     real);
	int zero = 0;

	if (atomic_load(&ra_armed) && getpid() == atomic_load(&ge_pid) &&
	    gettid_() != atomic_load(&ge_main) &&
	    atomic_compare_exchange_strong(&ra_held, &zero, 1)) {
		while (!atomic_load(&ra_release))
			sched_yield(); /* bounded by the alarm */
	}
	return real(pre, par, chi, dso);
}

/* resetcancel: hold a thread in a raw fork child's reset. */
static _Atomic int mi_armed;
static _Atomic pid_t mi_pid;
static _Atomic pid_t mi_main;
static _Atomic int mi_held;
static _Atomic int mi_release;

__attribute__((visibility("default"))) int
pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	REAL("pthread_mutex_init",
	     int (*real)(pthread_mutex_t *, const pthread_mutexattr_t *), real);
	int zero = 0;

	if (atomic_load(&mi_armed) && getpid() == atomic_load(&mi_pid) &&
	    gettid_() != atomic_load(&mi_main) &&
	    atomic_compare_exchange_strong(&mi_held, &zero, 1)) {
		while (!atomic_load(&mi_release))
			sched_yield(); /* bounded by the alarm */
	}
	return real(m, a);
}

static void resolve_hooks(void)
{
	int cs;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &cs);
	(void)getenv("HOME");
	(void)madvise(NULL, 0, MADV_NORMAL);
	(void)__register_atfork(NULL, NULL, NULL, NULL);
	{
		pthread_mutex_t m;

		pthread_mutex_init(&m, NULL);
	}
}

/* ---- what must be served ------------------------------------------- */

static _Alignas(8) char ringmem[4096];

static struct syslet_ring *ring0(void)
{
	return (struct syslet_ring *)ringmem;
}

/* A punted read that completes: 0, else a code. */
static int punt_ok(void)
{
	return punt_served(7);
}

/* An inline getpid through indirect(): 0, else a code. */
static int ind_getpid_ok(void)
{
	_Alignas(8) char mem[4096];

	return ind_getpid_on((struct syslet_ring *)mem);
}

/* ---- rawcancel ------------------------------------------------------ */

static _Atomic int rc_go;
static _Atomic int rc_res[2];
static struct syslet_ring *rc_ring;

static void *rc_racer(void *arg)
{
	intptr_t k = (intptr_t)arg;
	int r;

	while (!atomic_load(&rc_go))
		sched_yield();
	errno = 0;
	r = syslet_cancel(rc_ring, 0xbee1, 0);
	atomic_store(&rc_res[k], r == -1 && errno == ENOENT ? 1 : 2);
	return NULL;
}

/* In the raw child: the parent's calls are not its own; its own are. */
static int rawcancel_child(struct syslet_ring *ring, int mode)
{
	_Alignas(8) char mem[4096];
	struct syslet_ring *own = (struct syslet_ring *)mem;
	pthread_t t[2];
	int fd[2], r, i;
	char c;

	alarm(CHILD_S);
	if (mode == 1) {
		/* Two threads race the reset from syslet_cancel(). */
		rc_ring = ring;
		for (i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, rc_racer,
					   (void *)(intptr_t)i))
				return 30;
		atomic_store(&rc_go, 1);
		for (i = 0; i < 2; i++)
			if (join_within(t[i], 4, NULL))
				return 31;
		if (atomic_load(&rc_res[0]) != 1 ||
		    atomic_load(&rc_res[1]) != 1)
			return 32;
	}
	for (i = 0; i < 2; i++) {
		errno = 0;
		r = syslet_cancel(ring, 0xbee0 + (uint64_t)i, 0);
		if (r != -1 || errno != ENOENT) {
			fprintf(stderr,
				"raw child: cancel of the parent's "
				"call %d: %d (%s)\n",
				i, r, strerror(errno));
			return 33 + i;
		}
	}
	/* Its own call, queued or running: found. */
	if (syslet_ring_init(own, 16) || pipe(fd))
		return 40;
	if (punt_read_fd(own, fd[0], &c, 0xbee0))
		return 41;
	r = syslet_cancel(own, 0xbee0, 0);
	if (r != 1) {
		fprintf(stderr, "raw child: cancel of its own call: %d (%s)\n",
			r, strerror(errno));
		return 42;
	}
	{
		struct timespec to = { .tv_sec = 4 };

		if (syslet_ring_wait_timeout(own, 0, &to))
			return 43;
		if ((int64_t)own->comp[0].status != -ECANCELED &&
		    (int64_t)own->comp[0].status != -EINTR)
			return 44;
	}
	if (syslet_drain())
		return 45;
	return punt_ok() ? 46 : 0;
}

static int rawcancel_mode(int mode)
{
	struct syslet_ring *ring = ring0();
	int fd[2], ret;
	pid_t pid;
	char ch[2];

	if (syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) ||
	    syslet_cancel(NULL, 0, 0) || syslet_ring_init(ring, 16) || pipe(fd))
		return 1;
	/* One running (a worker in read), one queued behind it. */
	ret = running_and_queued(ring, fd[0], ch, 8);
	if (ret)
		return ret;
	pid = raw_fork();
	if (!pid)
		_exit(rawcancel_child(ring, mode));
	if (pid < 0)
		return 5;
	ret = reap(pid, CHILD_S + 2, "raw child");
	if (write(fd[1], "xy", 2) != 2)
		return 6;
	if (!ret && syslet_drain())
		return 7;
	return ret;
}

static int rawcancel_case(void)
{
	return rawcancel_mode(0);
}

static int rawcancel_race_case(void)
{
	return rawcancel_mode(1);
}

static void test_rawcancel(void **state)
{
	(void)state;
	in_child(rawcancel_case, "rawcancel");
}

static void test_rawcancel_race(void **state)
{
	(void)state;
	in_child(rawcancel_race_case, "rawcancel_race");
}

/* ---- DEADLINE ------------------------------------------------------- */

/* The program's SIGSYS handler: the trapped call answers EPERM. */
static _Atomic int sigsys_n;

static void on_sigsys(int s, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)s;
	(void)si;
	atomic_fetch_add(&sigsys_n, 1);
#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#else
	(void)uc;
#endif
}

/* All threads: sched_setattr trapped (@trap) or refused with EPERM. */
static int filter_setattr(int trap)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_setattr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 trap ? SECCOMP_RET_TRAP :
				SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

/* dl_signal: the program's handler forks (raw) on the DEADLINE thread. */
static _Atomic int usr2_n, usr2_fork_err = -1;

static void on_usr2(int s)
{
	int e = errno, st;
	pid_t pid = raw_fork();

	(void)s;
	atomic_fetch_add(&usr2_n, 1);
	if (!pid)
		_exit(0);
	atomic_store(&usr2_fork_err, pid < 0 ? errno : 0);
	if (pid > 0)
		waitpid(pid, &st, 0);
	errno = e;
}

struct dl_case {
	int trap; /* filter: -1 none, 0 EPERM, 1 trap */
	int first; /* the first punt's errno, 0 pending */
	struct dl_attr after;
	int lost; /* 1: another thread changes the runtime meanwhile */
};

static _Atomic int dl_state; /* 1: DEADLINE set, 2: filter in */
/* dl_main's read lands after it returned: not on its stack. */
static char dl_byte;

static void *dl_main(void *arg)
{
	struct dl_case *d = arg;
	struct syslet_ring *ring = ring0();
	int fd[2];

	if (dl_set(0, 0, 2 * NS_MS)) {
		fprintf(stderr, "sched_setattr(SCHED_DEADLINE): %s\n",
			strerror(errno));
		_exit(77);
	}
	atomic_store(&dl_state, 1);
	while (atomic_load(&dl_state) != 2)
		sched_yield(); /* bounded by the alarm */
	if (syslet_ring_init(ring, 16) || pipe(fd))
		_exit(20);
	if (d->lost == 1)
		atomic_store(&pc_armed, 1);
	if (d->lost == 2)
		atomic_store(&pc_sig, 1);
	d->first = punt_read_fd(ring, fd[0], &dl_byte, 1);
	dl_get(0, &d->after);
	if (!d->first && write(fd[1], "x", 1) != 1)
		_exit(21);
	return NULL;
}

/* dl_lost: the program's supervisor changes the runtime by tid. */
static void *supervisor(void *arg)
{
	double t0 = now();
	pid_t tid;

	(void)arg;
	while (!(tid = atomic_load(&pc_tid)) && now() - t0 < 8)
		sched_yield();
	if (tid) {
		if (dl_set(tid, 0, 3 * NS_MS))
			fprintf(stderr, "supervisor: %s\n", strerror(errno));
	}
	atomic_store(&pc_done, 1);
	return NULL;
}

static int dl_case_run(int trap, int lost)
{
	struct dl_case d = { .trap = trap, .lost = lost };
	pthread_t t, sup;

	if (pthread_create(&t, NULL, dl_main, &d))
		return 2;
	while (atomic_load(&dl_state) != 1)
		sched_yield(); /* bounded by the alarm */
	if (trap >= 0 && filter_setattr(trap)) {
		fprintf(stderr, "seccomp: %s\n", strerror(errno));
		return 77;
	}
	if (lost == 1 && pthread_create(&sup, NULL, supervisor, NULL))
		return 3;
	if (lost == 2) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr2;
		if (sigaction(SIGUSR2, &sa, NULL))
			return 3;
	}
	atomic_store(&dl_state, 2);
	if (join_within(t, 10, NULL))
		return 4;
	if (lost == 1)
		join_within(sup, 10, NULL);
	fprintf(stderr,
		"deadline (filter %d, lost %d): first punt %s, %d SIGSYS, "
		"after: policy %u flags %#llx runtime %llu ns, windows %d\n",
		trap, lost, d.first ? strerror(d.first) : "pending",
		atomic_load(&sigsys_n), d.after.policy,
		(unsigned long long)d.after.flags,
		(unsigned long long)d.after.runtime, atomic_load(&pc_windows));
	if (d.after.policy != SCHED_DEADLINE ||
	    (d.after.flags & SCHED_FLAG_RESET_ON_FORK))
		return 5;
	if (trap >= 0)
		return d.first == EAGAIN ? 0 : 6;
	if (d.first)
		return 7;
	if (lost == 2) {
		fprintf(stderr,
			"dl_signal: pending in the window %d, "
			"handled %d, its fork: %s\n",
			atomic_load(&pc_pending), atomic_load(&usr2_n),
			strerror(atomic_load(&usr2_fork_err)));
		return atomic_load(&pc_pending) == 1 &&
				       atomic_load(&usr2_n) == 1 &&
				       atomic_load(&usr2_fork_err) == EAGAIN ?
			       0 :
			       9;
	}
	if (lost && d.after.runtime != 3 * NS_MS) {
		fprintf(stderr, "dl_lost: the supervisor's runtime (3 ms) "
				"was undone by thread_start()'s restore\n");
		return 8;
	}
	return 0;
}

static int seccomp_errno_case(void)
{
	return dl_case_run(0, 0);
}

static int seccomp_trap_case(void)
{
	return dl_case_run(1, 0);
}

static int dl_lost_case(void)
{
	return dl_case_run(-1, 1);
}

static int dl_signal_case(void)
{
	return dl_case_run(-1, 2);
}

static void test_dl_signal(void **state)
{
	(void)state;
	in_child(dl_signal_case, "dl_signal");
}

static void test_seccomp_errno(void **state)
{
	(void)state;
	in_child(seccomp_errno_case, "seccomp_errno");
}

static void test_seccomp_trap(void **state)
{
	(void)state;
	in_child(seccomp_trap_case, "seccomp_trap");
}

static void test_dl_lost(void **state)
{
	(void)state;
	in_child(dl_lost_case, "dl_lost");
}

/* ---- oncecancel ----------------------------------------------------- */

static void *async_config(void *arg)
{
	(void)arg;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	syslet_config_get(SYSLET_OPT_MIN_WORKERS);
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	return NULL;
}

static void *late_config(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)(syslet_config_get(SYSLET_OPT_MIN_WORKERS) ==
						  1 ?
					  1 :
					  2);
}

static int oncecancel_case(void)
{
	pthread_t th, late;
	double t0 = now();
	void *res;

	atomic_store(&cs_hold_id, SYSLET__ONCE_CONFIG);
	if (pthread_create(&th, NULL, async_config, NULL))
		return 2;
	while (!atomic_load(&cs_held)) {
		if (now() - t0 > 8)
			return 3;
		sched_yield();
	}
	pthread_cancel(th);
	if (join_within(th, 5, &res))
		return 4;
	atomic_store(&cs_release, 1);
	if (pthread_create(&late, NULL, late_config, NULL))
		return 5;
	if (join_within(late, 4, &res)) {
		fprintf(stderr,
			"oncecancel: runner cancelled with the word "
			"%u: a later syslet_config_get() hung\n",
			atomic_load(&syslet__once_words[SYSLET__ONCE_CONFIG]));
		return 100;
	}
	return res == (void *)1 ? 0 : 101;
}

static void test_oncecancel(void **state)
{
	(void)state;
	in_child(oncecancel_case, "oncecancel");
}

/* ---- draincancel ---------------------------------------------------- */

static _Atomic pid_t drainer_tid;

static void *drainer(void *arg)
{
	(void)arg;
	pthread_setcanceltype((intptr_t)arg ? PTHREAD_CANCEL_ASYNCHRONOUS :
					      PTHREAD_CANCEL_DEFERRED,
			      NULL);
	atomic_store(&drainer_tid, gettid_());
	return (void *)(intptr_t)(syslet_drain() ? 2 : 1);
}

static int in_futex(pid_t tid)
{
	char path[64], buf[64];
	ssize_t n;
	long nr = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return sscanf(buf, "%ld", &nr) == 1 && nr == SYS_futex;
}

static int draincancel_case(void)
{
	struct syslet_ring *ring = ring0();
	struct timespec to = { .tv_sec = 4 };
	pthread_t d, d2;
	double t0;
	int fd[2];
	void *res;
	char c;
	int jr;

	if (syslet_ring_init(ring, 16) || pipe(fd))
		return 1;
	if (punt_read_fd(ring, fd[0], &c, 1))
		return 2;
	if (pthread_create(&d, NULL, drainer, (void *)1))
		return 3;
	t0 = now();
	while (!atomic_load(&drainer_tid) || !in_futex(drainer_tid)) {
		if (now() - t0 > 8)
			return 4;
		sched_yield();
	}
	/*
	 * syslet_drain() runs with cancellation off (the fix): the cancel
	 * acts when it returns, once the call it waits for completes.
	 */
	pthread_cancel(d);
	if (write(fd[1], "x", 1) != 1 || syslet_ring_wait_timeout(ring, 0, &to))
		return 6;
	/*
	 * Cancelled: glibc 2.36 leaves the result NULL, not
	 * PTHREAD_CANCELED, for a cancel acted on when the state is turned
	 * back on (pthread_setcancelstate()); not 1 or 2, returned.
	 */
	res = (void *)3;
	jr = join_within(d, 5, &res);
	if (jr || (res != PTHREAD_CANCELED && res)) {
		fprintf(stderr, "draincancel: the drainer (join %d): %s\n", jr,
			jr		 ? "still waiting after 5 s" :
			res == (void *)1 ? "returned 0, not cancelled" :
					   "returned -1, not cancelled");
		return 5;
	}
	atomic_store(&drainer_tid, 0);
	if (pthread_create(&d2, NULL, drainer, (void *)0))
		return 7;
	if (join_within(d2, 4, &res)) {
		fprintf(stderr, "draincancel: a later syslet_drain() with "
				"nothing pending hung (drain state kept by the "
				"cancelled drainer)\n");
		return 100;
	}
	return res == (void *)1 ? 0 : 101;
}

static void test_draincancel(void **state)
{
	(void)state;
	in_child(draincancel_case, "draincancel");
}

/* ---- atfork: a program's child handler calls the library ------------- */

static _Atomic int handler_on;
static _Atomic int handler_out;
static int handler_use = 1; /* 0: the handler makes no call (control) */

static void prog_child(void)
{
	if (!handler_use)
		atomic_store(&handler_out, 1);
	else if (atomic_load(&handler_on))
		atomic_store(
			&handler_out,
			syslet_config_get(SYSLET_OPT_MIN_WORKERS) == 1 ? 1 : 2);
}

static void *first_config(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)syslet_config_get(SYSLET_OPT_MIN_WORKERS);
}

static int atfork_case(void)
{
	pthread_t th;
	double t0 = now();
	pid_t pid;
	int r;

	/* The program's, before its first call of the library. */
	if (pthread_atfork(NULL, NULL, prog_child))
		return 1;
	atomic_store(&ge_pid, getpid());
	atomic_store(&ge_main, gettid_());
	atomic_store(&ge_armed, 1);
	if (pthread_create(&th, NULL, first_config, NULL))
		return 2;
	while (!atomic_load(&ge_held)) {
		if (now() - t0 > 8)
			return 3;
		sched_yield();
	}
	atomic_store(&handler_on, 1);
	pid = fork();
	if (!pid) {
		alarm(3);
		_exit(atomic_load(&handler_out) == 1 && !punt_ok() ? 0 : 60);
	}
	atomic_store(&handler_on, 0);
	atomic_store(&ge_release, 1);
	join_within(th, 5, NULL);
	if (pid < 0)
		return 4;
	r = reap(pid, 5, "glibc fork child");
	if (r == 99)
		fprintf(stderr,
			"%s: the program's atfork child handler "
			"waited for ever in syslet_config_get()\n",
			nowipe() ? "nowipe" : "wipe");
	return r;
}

static void test_atfork(void **state)
{
	(void)state;
	in_child(atfork_case, nowipe() ? "nowipe_atfork" : "wipe_atfork");
}

/* ---- resetcancel: a raw fork child's reset and async cancel -------- */

static void *async_punt(void *arg)
{
	(void)arg;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	punt_ok();
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	return NULL;
}

static void *plain_punt(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)(punt_ok() ? 2 : 1);
}

static int resetcancel_child(void)
{
	pthread_t th, u;
	double t0 = now();
	void *res;

	alarm(CHILD_S);
	atomic_store(&mi_pid, getpid());
	atomic_store(&mi_main, gettid_());
	atomic_store(&mi_armed, 1);
	if (pthread_create(&th, NULL, async_punt, NULL))
		return 2;
	while (!atomic_load(&mi_held)) {
		if (now() - t0 > 4)
			return 3;
		sched_yield();
	}
	/*
	 * The reset runs with cancellation off (the fix): the cancel acts
	 * once it is done, when the thread turns it back on.
	 */
	pthread_cancel(th);
	atomic_store(&mi_release, 1);
	if (join_within(th, 3, &res))
		return 4;
	if (pthread_create(&u, NULL, plain_punt, NULL))
		return 5;
	if (join_within(u, 2, &res)) {
		fprintf(stderr, "resetcancel: the first punt's thread was "
				"cancelled inside forked.c's reset: another "
				"thread's punt waits for ever (RESETTING)\n");
		return 100;
	}
	return res == (void *)1 ? 0 : 101;
}

static int resetcancel_case(void)
{
	pid_t pid;

	if (punt_ok())
		return 1;
	pid = raw_fork();
	if (!pid)
		_exit(resetcancel_child());
	if (pid < 0)
		return 2;
	return reap(pid, CHILD_S + 2, "raw child");
}

static void test_resetcancel(void **state)
{
	(void)state;
	in_child(resetcancel_case, "resetcancel");
}

/* ---- atfork_punt: a program's child handler punts ------------------ */

static int ap_late; /* control: registered after the library's */
static struct handler_punts ap;

static void ap_child(void)
{
	handler_punts_run(&ap, ring0());
}

static int atfork_punt_case(void)
{
	struct syslet_ring *ring = ring0();
	struct timespec to = { .tv_sec = 1 };
	double t0;
	pid_t pid;

	/* The program's handler, registered before the library's. */
	if ((!ap_late && pthread_atfork(NULL, NULL, ap_child)) || pipe(ap.fd))
		return 1;
	if (syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) || punt_ok())
		return 2;
	if (ap_late && pthread_atfork(NULL, NULL, ap_child))
		return 1;
	atomic_store(&ap.on, 1);
	pid = fork();
	if (!pid) {
		alarm(CHILD_S);
		if (ap.sub[0] || ap.sub[1])
			_exit(60);
		if (write(ap.fd[1], "xy", 2) != 2)
			_exit(61);
		t0 = now();
		while (syslet_ring_head(ring) - ring->user_tail < 2 &&
		       now() - t0 < 4)
			syslet_ring_wait_timeout(ring, syslet_ring_head(ring),
						 &to);
		if (syslet_ring_head(ring) - ring->user_tail < 2) {
			fprintf(stderr,
				"atfork_punt: %u of the 2 calls the "
				"program's atfork child handler "
				"punted completed (the library's own "
				"child handlers reset the pool the "
				"handler's punt had set up)\n",
				syslet_ring_head(ring) - ring->user_tail);
			_exit(100);
		}
		_exit(punt_ok() ? 62 : 0);
	}
	atomic_store(&ap.on, 0);
	if (pid < 0)
		return 3;
	return reap(pid, CHILD_S + 2, "glibc fork child");
}

static void test_atfork_punt(void **state)
{
	(void)state;
	in_child(atfork_punt_case, "atfork_punt");
}

/* ---- fallback_sig: a signal to the registrar (no wipe) -------------- */

static _Atomic int sig_in, sig_out;

static void on_usr1(int s)
{
	int e = errno;

	(void)s;
	atomic_store(&sig_in, 1);
	/* Another once than any the thread is in (it is in none yet). */
	if (!ind_getpid_ok())
		atomic_store(&sig_out, 1);
	errno = e;
}

static int fallback_sig_case(void)
{
	struct sigaction sa;
	pthread_t th;
	double t0 = now();

	if (!nowipe())
		return 150;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	atomic_store(&ge_pid, getpid());
	atomic_store(&ge_main, gettid_());
	atomic_store(&ra_armed, 1);
	if (pthread_create(&th, NULL, first_config, NULL))
		return 2;
	while (!atomic_load(&ra_held)) {
		if (now() - t0 > 2) {
			/*
			 * The fix: the fallback's atfork handler is
			 * registered at load, by no thread of the program;
			 * the first set-up and a handler's call both go
			 * through.
			 */
			if (join_within(th, 4, NULL))
				return 3;
			raise(SIGUSR1);
			return atomic_load(&sig_out) ? 0 : 102;
		}
		sched_yield();
	}
	pthread_kill(th, SIGUSR1);
	t0 = now();
	while (!atomic_load(&sig_in) && now() - t0 < 4)
		sched_yield();
	if (!atomic_load(&sig_in))
		return 102;
	/* The registration goes on as soon as the handler returns. */
	atomic_store(&ra_release, 1);
	t0 = now();
	while (!atomic_load(&sig_out) && now() - t0 < 2)
		usleep(1000);
	if (!atomic_load(&sig_out)) {
		fprintf(stderr, "fallback_sig: the handler's indirect() "
				"waits for ever in fallback_ready() for the "
				"registration it interrupted\n");
		return 100;
	}
	return join_within(th, 4, NULL) ? 101 : 0;
}

static void test_fallback_sig(void **state)
{
	(void)state;
	in_child(fallback_sig_case, "fallback_sig");
}

/* ---- main ------------------------------------------------------------ */

int main(int argc, char **argv)
{
	const char *g = argc > 1 ? argv[1] : "rawcancel";
	struct CMUnitTest t[4];
	size_t n = 0;

	if ((!strcmp(g, "nowipe_atfork") || !strcmp(g, "nowipe_noh") ||
	     !strcmp(g, "fallback_sig")) &&
	    !nowipe()) {
		/* From its start: the constructor madvise()s at load. */
		setenv("FIX_NOWIPE", "1", 1);
		execv("/proc/self/exe", argv);
		return 1;
	}
	resolve_hooks();
	if (!strcmp(g, "rawcancel")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_rawcancel);
		t[n++] = (struct CMUnitTest)cmocka_unit_test(
			test_rawcancel_race);
	} else if (!strcmp(g, "seccomp_errno")) {
		t[n++] =
			(struct CMUnitTest)cmocka_unit_test(test_seccomp_errno);
	} else if (!strcmp(g, "seccomp_trap")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_seccomp_trap);
	} else if (!strcmp(g, "dl_signal")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_dl_signal);
	} else if (!strcmp(g, "dl_lost")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_dl_lost);
	} else if (!strcmp(g, "oncecancel")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_oncecancel);
	} else if (!strcmp(g, "draincancel")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_draincancel);
	} else if (!strcmp(g, "resetcancel")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_resetcancel);
	} else if (!strcmp(g, "atfork_punt") || !strcmp(g, "atfork_punt_"
							   "late")) {
		ap_late = !strcmp(g, "atfork_punt_late");
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_atfork_punt);
	} else if (!strcmp(g, "fallback_sig")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_fallback_sig);
	} else if (!strcmp(g, "nowipe_atfork") || !strcmp(g, "nowipe_noh") ||
		   !strcmp(g, "wipe_atfork")) {
		handler_use = strcmp(g, "nowipe_noh") != 0;
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_atfork);
	} else {
		fprintf(stderr, "unknown group %s\n", g);
		return 2;
	}
	return _cmocka_run_group_tests(g, t, n, NULL, NULL);
}
