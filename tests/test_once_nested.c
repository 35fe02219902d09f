/* SPDX-License-Identifier: MIT */
/*
 * Description: every once of the library (a syslet__once(): a word in
 * plain memory, a runner byte in a page mapped MADV_WIPEONFORK) runs once
 * and serves every fork child, however forks, cancellation and signals
 * meet it. Case groups (argv[1]):
 *
 *   nested     a raw fork child re-runs an init its parent had under way,
 *              with one of its threads held inside that re-run, and forks
 *              again (raw and glibc): grandchildren, then the child, must
 *              be served. One case per once, and pool_config: the config's
 *              init inside the pool's (two onces RUNNING).
 *   sharedvm   clone(CLONE_VM|SIGCHLD) and vfork() while a thread is
 *              inside an init: the child calls the library, must wait in
 *              the futex (seen in /proc) and the init run only once.
 *   atfork     a thread held inside an init, raw fork: the child re-runs
 *              the init, starts its pool, then forks by glibc, raw and
 *              indirect(SYS_fork): every generation must be served, and
 *              no init may register an atfork handler (counted by the
 *              __register_atfork defined here). The inits used to
 *              register their modules' handlers (a re-run registered one
 *              twice: two resets; a program's handler registered before
 *              them ran first, interrupted_init atfork_punt); the one handler
 *              is now registered at load (forked.c).
 *   ifork      indirect(SYS_fork) (glibc's fork()) while a thread is
 *              inside each init.
 *   cancel     pthread_cancel() of a waiter (deferred) and of the runner:
 *              nobody hangs, the waiter leaves once the init is done.
 *   cancelrun  deferred pthread_cancel() of a runner inside each init whose
 *              runner is the calling thread: the init completes.
 *   signal     signals (SA_NODEFER) to a waiter whose handler calls the
 *              library: nested waits, all served.
 *   pidns      each hold-and-raw-fork case inside a new pid namespace
 *              (the case process is pid 1).
 *   stress     8 threads race first calls on both CPUs, a fork (glibc,
 *              raw, indirect) at a random point; up to 60 rounds, 40 s.
 *
 * Findings (should_fail in tests/meson.build):
 *   asynccancel a runner with asynchronous cancellation cancelled inside
 *              the init: syslet__once_slow() restores the cancel state
 *              (which acts at once) before it stores DONE; the once stays
 *              RUNNING and every later caller waits for ever.
 *   rawcancel  syslet_cancel() in a raw fork child: forked.c's reset does
 *              not do cancel.c's atfork work (the slots keep the parent's
 *              running call: EAGAIN, not ENOENT), and syslet_cancel()
 *              makes no fork check (the parent's queued call: found, 1).
 *   nowipe     ONCE3_NOWIPE=1 (set by re-exec): madvise() refuses
 *              MADV_WIPEONFORK, as before Linux 4.14: the runner bytes are
 *              plain statics and a glibc fork() child of a process with a
 *              thread inside any init waits for ever (pthread_once() re-ran
 *              the init in that child).
 *   cancelfirst a deferred cancel pending on the thread whose punt starts
 *              the pool: it ends in spawn.c tls_extra()'s pthread_join()
 *              with first_lock held; every later punt hangs.
 *
 * Every wait is bounded: alarm() in every process, deadlines on polls.
 * Held threads: the hooks below hold the first non-main thread of the
 * armed process that calls them while the armed once reads RUNNING (as
 * tests/test_once_raw_fork.c does), until released.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

/* indirect()'s fork: SYS_fork, or a fork-like clone where there is none. */
#ifdef SYS_fork
#define FILL_FORK(r) FILL_IN(r, SYS_fork)
#else
#define FILL_FORK(r) FILL_IN(r, SYS_clone, SIGCHLD, 0, 0, 0, 0)
#endif

#include <syslet/syslet.h>

#include "forked.h"
#include "test_fork_util.h"

#define CASE_S 25 /* alarm of a case process */
#define CHILD_S 8 /* alarm of a forked generation */
#define STACK_SIZE (256 * 1024)

static _Atomic int hold_after; /* 1: hold in __register_atfork only */
static _Atomic int notified;
static _Atomic int getenv_n; /* getenv("SYSLET_MAX_WORKERS") calls */
static _Alignas(16) char nstack[STACK_SIZE];

/* Real functions resolved once: no dlsym (loader lock) in a raw child. */
#define HOOK(ret, name, params, args, after)                   \
	__attribute__((visibility("default"))) ret name params \
	{                                                      \
		static void *_Atomic slot;                     \
		void *sym = atomic_load(&slot);                \
		ret(*real) params;                             \
		ret res_;                                      \
                                                               \
		if (!sym) {                                    \
			sym = dlsym(RTLD_NEXT, #name);         \
			atomic_store(&slot, sym);              \
		}                                              \
		memcpy(&real, &sym, sizeof(real));             \
		if (!after && !atomic_load(&hold_after))       \
			maybe_hold();                          \
		res_ = real args;                              \
		if (after && atomic_load(&hold_after))         \
			maybe_hold();                          \
		return res_;                                   \
	}

HOOK(int, pthread_key_create, (pthread_key_t * k, void (*d)(void *)), (k, d), 0)
/* ONCE3_NOWIPE=1: a kernel before 4.14, which has no MADV_WIPEONFORK. */
static int nowipe(void)
{
	static void *_Atomic slot;
	void *sym = atomic_load(&slot);
	char *(*real)(const char *);
	const char *v;

	if (!sym) {
		sym = dlsym(RTLD_NEXT, "getenv");
		atomic_store(&slot, sym);
	}
	memcpy(&real, &sym, sizeof(real));
	v = real("ONCE3_NOWIPE");
	return v && !strcmp(v, "1");
}

__attribute__((visibility("default"))) int madvise(void *a, size_t l, int adv)
{
	static void *_Atomic slot;
	void *sym = atomic_load(&slot);
	int (*real)(void *, size_t, int);

	if (!sym) {
		sym = dlsym(RTLD_NEXT, "madvise");
		atomic_store(&slot, sym);
	}
	memcpy(&real, &sym, sizeof(real));
	if (!atomic_load(&hold_after))
		maybe_hold();
	if (adv == MADV_WIPEONFORK && nowipe()) {
		errno = EINVAL;
		return -1;
	}
	return real(a, l, adv);
}
HOOK(int, sigaction,
     (int s, const struct sigaction *restrict sa,
      struct sigaction *restrict old),
     (s, sa, old), 0)
HOOK(int, pthread_mutexattr_setrobust, (pthread_mutexattr_t * a, int r), (a, r),
     0)
/*
 * pthread_atfork() (libc_nonshared) calls it: hold after a registration,
 * and count each child handler's registrations (atfork).
 */
#define NREG 32
static void (*_Atomic reg_fn[NREG])(void);
static _Atomic int reg_n[NREG];

static void count_reg(void (*chi)(void))
{
	void (*none)(void);
	int i;

	for (i = 0; i < NREG && chi; i++) {
		none = NULL;
		if (atomic_compare_exchange_strong(&reg_fn[i], &none, chi) ||
		    none == chi) {
			atomic_fetch_add(&reg_n[i], 1);
			return;
		}
	}
}

static int sum_reg(void)
{
	int i, n = 0;

	for (i = 0; i < NREG; i++)
		n += atomic_load(&reg_n[i]);
	return n;
}

int __register_atfork(void (*pre)(void), void (*par)(void), void (*chi)(void),
		      void *dso);

__attribute__((visibility("default"))) int __register_atfork(void (*pre)(void),
							     void (*par)(void),
							     void (*chi)(void),
							     void *dso)
{
	static void *_Atomic slot;
	void *sym = atomic_load(&slot);
	int (*real)(void (*)(void), void (*)(void), void (*)(void), void *);
	int r;

	if (!sym) {
		sym = dlsym(RTLD_NEXT, "__register_atfork");
		atomic_store(&slot, sym);
	}
	memcpy(&real, &sym, sizeof(real));
	r = real(pre, par, chi, dso);
	count_reg(chi);
	if (atomic_load(&hold_after))
		maybe_hold();
	return r;
}

__attribute__((visibility("default"))) char *getenv(const char *n)
{
	static void *_Atomic slot;
	void *sym = atomic_load(&slot);
	char *(*real)(const char *);

	if (!sym) {
		sym = dlsym(RTLD_NEXT, "getenv");
		atomic_store(&slot, sym);
	}
	memcpy(&real, &sym, sizeof(real));
	if (!strcmp(n, "SYSLET_MAX_WORKERS"))
		atomic_fetch_add(&getenv_n, 1);
	if (!atomic_load(&hold_after))
		maybe_hold();
	return real(n);
}

/*
 * cancelfirst: the first call of another thread (the pool's stack probe,
 * spawn.c tls_extra()) waits till the thread with a cancel pending is
 * gone, so that its pthread_join() of the probe blocks (a cancellation
 * point that acts only when it has to wait).
 */
static _Atomic pid_t probe_wait_tid;
static _Atomic int probe_waited;

static int task_alive(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	return !access(path, F_OK);
}

__attribute__((visibility("default"))) int pthread_getattr_np(pthread_t t,
							      pthread_attr_t *a)
{
	static void *_Atomic slot;
	void *sym = atomic_load(&slot);
	int (*real)(pthread_t, pthread_attr_t *);
	pid_t w = atomic_load(&probe_wait_tid);
	int zero = 0;
	double t0;

	if (!sym) {
		sym = dlsym(RTLD_NEXT, "pthread_getattr_np");
		atomic_store(&slot, sym);
	}
	memcpy(&real, &sym, sizeof(real));
	if (w && gettid_() != w &&
	    atomic_compare_exchange_strong(&probe_waited, &zero, 1)) {
		t0 = now();
		while (task_alive(w) && now() - t0 < 5)
			sched_yield();
	}
	return real(t, a);
}

static void resolve_hooks(void)
{
	pthread_key_t k;
	pthread_mutexattr_t a;
	pthread_attr_t at;

	/* Each hook resolves its real function on its first call. */
	if (!pthread_key_create(&k, NULL))
		pthread_key_delete(k);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_destroy(&a);
	(void)getenv("HOME");
	(void)madvise(nstack, 0, MADV_NORMAL);
	(void)sigaction(SIGURG, NULL, NULL);
	if (!pthread_getattr_np(pthread_self(), &at))
		pthread_attr_destroy(&at);
}

/* ---- what a generation must get served ------------------------------ */

/* On a ring of its own in static memory (the stress racers share it). */
static int ind_getpid(void)
{
	static _Alignas(8) char mem[4096];

	return ind_getpid_on((struct syslet_ring *)mem);
}

static int punt_read(void)
{
	return punt_served(0);
}

static void notifier(void)
{
	atomic_store(&notified, 1);
}

/* A punted read whose notifier runs: 0, else 20 to 23. */
static int punt_notify(void)
{
	_Alignas(8) char mem[4096];
	int ret = punt_wait_on((struct syslet_ring *)mem, 0, notifier,
			       nstack + STACK_SIZE);

	return ret ? 19 + ret : 0;
}

static int cancel_ok(void)
{
	return syslet_cancel(NULL, 0, 0) ? 24 : 0;
}

static int config_ok(void)
{
	return syslet_config_get(SYSLET_OPT_MIN_WORKERS) == 1 ? 0 : 25;
}

static int stats_ok(void)
{
	struct syslet_stats st;

	return syslet_stats(&st, sizeof(st)) ? 26 : 0;
}

static int drain_ok(void)
{
	return syslet_drain() ? 27 : 0;
}

static int all_ok(void)
{
	int (*const f[])(void) = { ind_getpid,	punt_read, cancel_ok, config_ok,
				   punt_notify, stats_ok,  drain_ok };
	size_t i;
	int r;

	atomic_store(&notified, 0);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if ((r = f[i]()))
			return r;
	return atomic_load(&notified) ? 0 : 28;
}

/* ---- the onces and how a thread gets into each ---------------------- */

struct onecase {
	const char *name;
	enum syslet__once_id id;
	int warm; /* an inline call first (the tally's init) */
	int (*first)(void);
};

static const struct onecase cases[] = {
	{ "tally", SYSLET__ONCE_TALLY, 0, ind_getpid },
	{ "config", SYSLET__ONCE_CONFIG, 0, config_ok },
	{ "pool", SYSLET__ONCE_POOL, 1, punt_read },
	{ "forked", SYSLET__ONCE_FORKED, 1, punt_read },
	{ "cancel_slot", SYSLET__ONCE_CANCEL_SLOT, 1, punt_read },
	{ "notify", SYSLET__ONCE_NOTIFY, 1, punt_notify },
	/* The config's init run by the pool's: two onces RUNNING at once. */
	{ "pool_config", SYSLET__ONCE_CONFIG, 1, punt_read },
};

/* The onces whose init used to register an atfork handler. */
static const struct onecase atfork_cases[] = {
	{ "pool", SYSLET__ONCE_POOL, 1, punt_read },
	{ "forked", SYSLET__ONCE_FORKED, 1, punt_read },
	{ "cancel_slot", SYSLET__ONCE_CANCEL_SLOT, 1, punt_read },
	{ "notify", SYSLET__ONCE_NOTIFY, 1, punt_notify },
};

static void *first_main(void *arg)
{
	const struct onecase *c = arg;

	return (void *)(intptr_t)c->first();
}

/* Arm this process: its next non-main thread in @id's init is held. */
static void arm(enum syslet__once_id id, int after)
{
	atomic_store(&hold_pid, getpid());
	atomic_store(&main_tid, gettid_());
	atomic_store(&held, 0);
	atomic_store(&held_tid, 0);
	atomic_store(&hold_after, after);
	atomic_store(&hold_on, 1);
	atomic_store(&hold_id, (int)id);
}

static void disarm(void)
{
	atomic_store(&hold_on, 0);
	atomic_store(&hold_id, -1);
}

/* A thread running @c->first, held inside @c->id's init: 0, else code. */
static int start_held(const struct onecase *c, int after, pthread_t *th)
{
	double t0 = now();

	arm(c->id, after);
	if (pthread_create(th, NULL, first_main, (void *)c))
		return 2;
	while (!atomic_load(&held)) {
		if (now() - t0 > 10) {
			fprintf(stderr,
				"%s: no thread was held inside the "
				"init\n",
				c->name);
			return 3;
		}
		sched_yield();
	}
	if (!strcmp(c->name, "pool_config") &&
	    atomic_load(&syslet__once_words[SYSLET__ONCE_POOL]) !=
		    SYSLET__ONCE_RUNNING) {
		fprintf(stderr, "pool_config: not inside the pool's init\n");
		return 8;
	}
	return 0;
}

/* Whether task @tid of @pid sits in futex() on @addr (/proc). */
static int in_futex_on(pid_t pid, pid_t tid, const void *addr)
{
	char path[64], buf[256];
	unsigned long a0 = 0;
	long nr = -1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%ld %lx", &nr, &a0) != 2)
		return 0;
	return nr == SYS_futex && a0 == (unsigned long)(uintptr_t)addr;
}

static int wait_in_futex(pid_t pid, pid_t tid, const void *addr, double s)
{
	double t0 = now();

	while (!in_futex_on(pid, tid, addr)) {
		if (now() - t0 > s)
			return 0;
		sched_yield();
	}
	return 1;
}

/* Run @fn(@c) in a fresh process (its own library state) under alarm. */
static void in_child(int (*fn)(const struct onecase *), const struct onecase *c)
{
	pid_t pid = fork();
	int r;

	assert_true(pid >= 0);
	if (!pid) {
		alarm(CASE_S);
		_exit(fn(c));
	}
	r = reap(pid, CASE_S + 5, c->name);
	if (r)
		fail_msg("%s: case process: %d", c->name, r);
}

/* ---- nested --------------------------------------------------------- */

/* In the raw child: hold one of its threads in its re-run, fork again. */
static int nested_child(const struct onecase *c)
{
	pthread_t th;
	void *res;
	pid_t g;
	int r;

	alarm(CHILD_S * 3);
	r = start_held(c, 0, &th);
	if (r)
		return 30 + r;
	g = raw_fork();
	if (!g) {
		alarm(CHILD_S);
		_exit(all_ok());
	}
	if (g < 0 || (r = reap(g, CHILD_S + 2, "raw grandchild")))
		return 40;
	g = fork();
	if (!g) {
		alarm(CHILD_S);
		_exit(all_ok());
	}
	if (g < 0 || (r = reap(g, CHILD_S + 2, "glibc grandchild")))
		return 41;
	disarm();
	pthread_join(th, &res);
	if (res)
		return 42;
	return all_ok() ? 43 : 0;
}

static int nested_case(const struct onecase *c)
{
	pthread_t th;
	pid_t pid;
	int r;

	if (c->warm && ind_getpid())
		return 9;
	r = start_held(c, 0, &th);
	if (r)
		return r;
	pid = raw_fork();
	if (!pid)
		_exit(nested_child(c));
	disarm();
	pthread_join(th, NULL);
	return reap(pid, CHILD_S * 3 + 5, "raw child");
}

static void test_nested(void **state)
{
	in_child(nested_case, *state);
}

/* ---- sharedvm --------------------------------------------------------- */

static _Atomic long vm_result = -1;
static _Atomic pid_t vm_pid;

static int vm_fn(void *arg)
{
	(void)arg;
	atomic_store(&vm_pid, getpid());
	atomic_store(&vm_result, syslet_config_get(SYSLET_OPT_MIN_WORKERS));
	return 0;
}

/* clone(CLONE_VM|SIGCHLD) while a thread is inside the config's init. */
static int clonevm_case(const struct onecase *c)
{
	static const struct onecase cfg = { "config", SYSLET__ONCE_CONFIG, 0,
					    config_ok };
	char *stk = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pthread_t th;
	pid_t pid;
	int r;

	(void)c;
	if (stk == MAP_FAILED)
		return 1;
	r = start_held(&cfg, 0, &th);
	if (r)
		return r;
	pid = clone(vm_fn, stk + STACK_SIZE, CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		return 4;
	/* The child must wait for the parent's runner, not run the init. */
	if (!wait_in_futex(pid, pid, &syslet__once_words[SYSLET__ONCE_CONFIG],
			   10)) {
		fprintf(stderr, "clone_vm child not waiting on the word\n");
		disarm();
		reap(pid, 5, "clone_vm");
		return 50;
	}
	if (atomic_load(&vm_result) != -1)
		return 51;
	disarm();
	pthread_join(th, NULL);
	r = reap(pid, 10, "clone_vm child");
	if (r)
		return 52;
	if (atomic_load(&vm_result) != 1)
		return 53;
	if (atomic_load(&getenv_n) != 1) {
		fprintf(stderr, "config init ran %d times\n",
			atomic_load(&getenv_n));
		return 54;
	}
	return 0;
}

static void *releaser(void *arg)
{
	double t0 = now();
	pid_t pid;

	(void)arg;
	while (!(pid = atomic_load(&vm_pid)) && now() - t0 < 10)
		sched_yield();
	if (pid && !wait_in_futex(pid, pid,
				  &syslet__once_words[SYSLET__ONCE_CONFIG], 10))
		pid = 0;
	disarm();
	return (void *)(intptr_t)(pid ? 0 : 1);
}

/* vfork() while a thread is inside the config's init. */
static int vfork_case(const struct onecase *c)
{
	static const struct onecase cfg = { "config", SYSLET__ONCE_CONFIG, 0,
					    config_ok };
	pthread_t th, rel;
	void *res;
	pid_t pid;
	int r, st;

	(void)c;
	r = start_held(&cfg, 0, &th);
	if (r)
		return r;
	if (pthread_create(&rel, NULL, releaser, NULL))
		return 5;
	pid = vfork();
	if (!pid) {
		atomic_store(&vm_pid, getpid());
		atomic_store(&vm_result,
			     syslet_config_get(SYSLET_OPT_MIN_WORKERS));
		_exit(0);
	}
	if (pid < 0)
		return 6;
	pthread_join(rel, &res);
	pthread_join(th, NULL);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 60;
	if (res) {
		fprintf(stderr, "vfork child not seen waiting on the word\n");
		return 61;
	}
	if (atomic_load(&vm_result) != 1)
		return 62;
	if (atomic_load(&getenv_n) != 1) {
		fprintf(stderr, "config init ran %d times\n",
			atomic_load(&getenv_n));
		return 63;
	}
	return all_ok() ? 64 : 0;
}

static void test_clonevm(void **state)
{
	(void)state;
	in_child(clonevm_case, &cases[1]);
}

static void test_vfork(void **state)
{
	(void)state;
	in_child(vfork_case, &cases[1]);
}

/* ---- atfork ----------------------------------------------------------- */

/* A generation forked from one whose handlers are registered twice. */
static int gen_forks(void)
{
	static _Alignas(8) char mem[4096];
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	union indirect_params p;
	struct indirect_registers r;
	pid_t g;
	int i, ret;

	for (i = 0; i < 3; i++) {
		if (i == 0) {
			g = fork();
		} else if (i == 1) {
			g = raw_fork();
		} else {
			syslet_ring_init(ring, 16);
			memset(&p, 0, sizeof(p));
			p.syslet.completion_ring_ptr =
				(uint64_t)(uintptr_t)ring;
			FILL_FORK(r);
			g = (pid_t)indirect(&r, &p, sizeof(p), 0);
		}
		if (!g) {
			alarm(CHILD_S);
			ret = all_ok();
			/* And once more: a great-grandchild by glibc. */
			if (!ret) {
				g = fork();
				if (!g) {
					alarm(CHILD_S);
					_exit(all_ok());
				}
				ret = g < 0 ? 71 :
					      reap(g, CHILD_S + 1, "ggchild");
			}
			_exit(ret);
		}
		if (g < 0)
			return 70;
		ret = reap(g, 2 * CHILD_S + 3, "atfork grandchild");
		if (ret)
			return 72 + i;
	}
	return 0;
}

static int atfork_case(const struct onecase *c)
{
	int r, base = sum_reg(); /* the library's, at load */
	pthread_t th;
	pid_t pid;

	if (c->warm && ind_getpid())
		return 9;
	r = start_held(c, 0, &th);
	if (r)
		return r;
	pid = raw_fork();
	if (!pid) {
		alarm(4 * CHILD_S);
		disarm();
		/* Re-runs the init, pool started. */
		r = all_ok();
		if (r)
			_exit(r);
		if (sum_reg() != base) {
			fprintf(stderr,
				"%s: %d atfork handlers registered "
				"after load\n",
				c->name, sum_reg() - base);
			_exit(85);
		}
		_exit(gen_forks());
	}
	disarm();
	pthread_join(th, NULL);
	r = reap(pid, 4 * CHILD_S + 5, "atfork child");
	if (r)
		return r;
	/* The parent itself, its init done, forks too. */
	return all_ok() ? 80 : gen_forks();
}

static void test_atfork(void **state)
{
	in_child(atfork_case, *state);
}

/* ---- ifork ------------------------------------------------------------ */

static int ifork_case(const struct onecase *c)
{
	static _Alignas(8) char mem[4096];
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	union indirect_params p;
	struct indirect_registers r;
	pthread_t th;
	pid_t pid;
	int ret;

	if (c->warm && ind_getpid())
		return 9;
	ret = start_held(c, 0, &th);
	if (ret)
		return ret;
	syslet_ring_init(ring, 16);
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	FILL_FORK(r);
	pid = (pid_t)indirect(&r, &p, sizeof(p), 0);
	if (!pid) {
		alarm(CHILD_S);
		_exit(all_ok());
	}
	disarm();
	pthread_join(th, NULL);
	if (pid < 0)
		return 4;
	ret = reap(pid, CHILD_S + 2, "indirect fork child");
	return ret ? ret : all_ok();
}

static void test_ifork(void **state)
{
	in_child(ifork_case, *state);
}

/* ---- cancel ----------------------------------------------------------- */

static _Atomic pid_t waiter_tid;
static _Atomic int waiter_out;

static void *waiter_main(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tid, gettid_());
	atomic_store(&waiter_out, config_ok() ? 2 : 1);
	return NULL;
}

static int cancel_case(const struct onecase *c)
{
	pthread_t th, w;
	struct timespec dl;
	void *res;
	int r;

	(void)c;
	r = start_held(&cases[1], 0, &th);
	if (r)
		return r;
	if (pthread_create(&w, NULL, waiter_main, NULL))
		return 4;
	while (!atomic_load(&waiter_tid))
		sched_yield();
	if (!wait_in_futex(getpid(), atomic_load(&waiter_tid),
			   &syslet__once_words[SYSLET__ONCE_CONFIG], 10))
		return 90;
	/* Deferred: the waiter must not leave before the init is done. */
	pthread_cancel(w);
	pthread_cancel(th); /* the runner: its init must still complete */
	if (!wait_in_futex(getpid(), atomic_load(&waiter_tid),
			   &syslet__once_words[SYSLET__ONCE_CONFIG], 10) ||
	    atomic_load(&waiter_out))
		return 91;
	disarm();
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	if (pthread_timedjoin_np(w, &res, &dl))
		return 92; /* the waiter hung */
	if (atomic_load(&waiter_out) != 1)
		return 93; /* it left without a configuration */
	if (pthread_timedjoin_np(th, &res, &dl))
		return 94;
	if (atomic_load(&syslet__once_words[SYSLET__ONCE_CONFIG]) !=
	    SYSLET__ONCE_DONE)
		return 95;
	return config_ok() ? 96 : 0;
}

static void test_cancel(void **state)
{
	(void)state;
	in_child(cancel_case, &cases[1]);
}

/*
 * Deferred cancellation of a runner held inside each init: the init
 * completes (cancellation is off inside), the thread ends at a later
 * cancellation point; every other call must still be served.
 */
static int cancelrun_case(const struct onecase *c)
{
	pthread_t th;
	void *res;
	int r;

	if (c->warm && ind_getpid())
		return 9;
	r = start_held(c, 0, &th);
	if (r)
		return r;
	pthread_cancel(th);
	disarm();
	if (join_within(th, 8, &res))
		return 160;
	if (atomic_load(&syslet__once_words[c->id]) != SYSLET__ONCE_DONE)
		return 161;
	return all_ok();
}

static void test_cancelrun(void **state)
{
	in_child(cancelrun_case, *state);
}

/*
 * A thread with a (deferred) cancel pending makes the process's first
 * punt: the pool's start in it reaches a cancellation point
 * (pthread_join() of the stack probe, spawn.c tls_extra()) with
 * first_lock and the manager's lock held (pool.c start_first(),
 * manager.c syslet__manager_start()), and the thread ends there: every
 * later punt of the process waits for first_lock for ever.
 */
static _Atomic int cf_state;

static void *cf_main(void *arg)
{
	(void)arg;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	atomic_store(&probe_wait_tid, gettid_());
	atomic_store(&cf_state, 1);
	while (atomic_load(&cf_state) != 2)
		sched_yield(); /* main cancels it: bounded by the alarm */
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	punt_read();
	atomic_store(&cf_state, 3);
	return NULL;
}

static void *punt_main(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)(punt_read() ? 2 : 1);
}

static int cancelfirst_case(const struct onecase *c)
{
	struct timespec dl;
	pthread_t th, p;
	void *res;

	(void)c;
	if (ind_getpid())
		return 9;
	if (pthread_create(&th, NULL, cf_main, NULL))
		return 2;
	while (atomic_load(&cf_state) != 1)
		sched_yield();
	pthread_cancel(th);
	atomic_store(&cf_state, 2);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 8;
	if (pthread_timedjoin_np(th, &res, &dl))
		return 170;
	if (pthread_create(&p, NULL, punt_main, NULL))
		return 3;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 6;
	if (pthread_timedjoin_np(p, &res, &dl)) {
		fprintf(stderr,
			"cancelfirst: the canceled thread ended "
			"inside indirect() (%s); a later punt hung\n",
			atomic_load(&cf_state) == 3 ? "no" : "yes");
		return 171;
	}
	return res == (void *)1 ? 0 : 172;
}

static void test_cancelfirst(void **state)
{
	(void)state;
	in_child(cancelfirst_case, &cases[0]);
}

/* A runner with asynchronous cancellation, cancelled inside the init. */
static _Atomic int async_returned;

static void *async_main(void *arg)
{
	(void)arg;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	config_ok();
	atomic_store(&async_returned, 1);
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	return NULL;
}

static void *late_main(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)(config_ok() ? 2 : 1);
}

static int asynccancel_case(const struct onecase *c)
{
	pthread_t th, late;
	struct timespec dl;
	double t0 = now();
	void *res;

	(void)c;
	arm(SYSLET__ONCE_CONFIG, 0);
	if (pthread_create(&th, NULL, async_main, NULL))
		return 2;
	while (!atomic_load(&held)) {
		if (now() - t0 > 10)
			return 3;
		sched_yield();
	}
	pthread_cancel(th);
	disarm();
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	if (pthread_timedjoin_np(th, &res, &dl))
		return 4;
	if (atomic_load(&syslet__once_words[SYSLET__ONCE_CONFIG]) !=
	    SYSLET__ONCE_DONE)
		fprintf(stderr,
			"asynccancel: runner cancelled with the "
			"word %u (RUNNING), its call %s\n",
			atomic_load(&syslet__once_words[SYSLET__ONCE_CONFIG]),
			atomic_load(&async_returned) ? "returned" :
						       "never returned");
	if (pthread_create(&late, NULL, late_main, NULL))
		return 5;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	if (pthread_timedjoin_np(late, &res, &dl)) {
		fprintf(stderr, "asynccancel: a later syslet_config_get() "
				"hung\n");
		return 100;
	}
	return res == (void *)1 ? 0 : 101;
}

static void test_asynccancel(void **state)
{
	(void)state;
	in_child(asynccancel_case, &cases[1]);
}

/* ---- signal ----------------------------------------------------------- */

static _Atomic int sig_calls, sig_bad;

static void on_usr1(int s)
{
	int e = errno;

	(void)s;
	atomic_fetch_add(&sig_calls, 1);
	if (config_ok())
		atomic_store(&sig_bad, 1);
	errno = e;
}

static int signal_case(const struct onecase *c)
{
	struct sigaction sa;
	struct timespec dl;
	pthread_t th, w;
	void *res;
	int r, i;

	(void)c;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_NODEFER; /* nested: each waits in the handler */
	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	r = start_held(&cases[1], 0, &th);
	if (r)
		return r;
	if (pthread_create(&w, NULL, waiter_main, NULL))
		return 4;
	while (!atomic_load(&waiter_tid))
		sched_yield();
	for (i = 0; i < 20; i++) {
		/* The waiter's handler waits too, nested: both wake. */
		if (!wait_in_futex(getpid(), atomic_load(&waiter_tid),
				   &syslet__once_words[SYSLET__ONCE_CONFIG],
				   10))
			return 110;
		if (i < 19)
			pthread_kill(w, SIGUSR1);
		while (atomic_load(&sig_calls) < i + 1 && i < 19)
			sched_yield(); /* the handler entered (bounded) */
	}
	disarm();
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	if (pthread_timedjoin_np(w, &res, &dl))
		return 111;
	pthread_join(th, NULL);
	if (atomic_load(&sig_bad) || atomic_load(&waiter_out) != 1)
		return 112;
	return 0;
}

static void test_signal(void **state)
{
	(void)state;
	in_child(signal_case, &cases[1]);
}

/* ---- pidns ------------------------------------------------------------ */

static int pidns_inner(const struct onecase *c)
{
	pthread_t th;
	pid_t pid;
	int r;

	if (getpid() != 1)
		return 120;
	if (c->warm && ind_getpid())
		return 9;
	r = start_held(c, 0, &th);
	if (r)
		return r;
	pid = raw_fork();
	if (!pid) {
		alarm(CHILD_S);
		_exit(all_ok());
	}
	disarm();
	pthread_join(th, NULL);
	r = reap(pid, CHILD_S + 2, "pidns raw child");
	return r ? r : all_ok();
}

static int pidns_case(const struct onecase *c)
{
	pid_t pid;

	if (unshare(CLONE_NEWPID))
		return errno == EPERM ? 77 : 121;
	pid = fork();
	if (!pid) {
		alarm(CASE_S - 5);
		_exit(pidns_inner(c));
	}
	return pid < 0 ? 122 : reap(pid, CASE_S - 3, "pid 1");
}

static void test_pidns(void **state)
{
	in_child(pidns_case, *state);
}

/* ---- stress ----------------------------------------------------------- */

#define NTHREADS 8

static _Atomic int go;
static _Atomic int stress_bad;

static void *racer(void *arg)
{
	int (*const f[])(void) = { ind_getpid, punt_read, cancel_ok,
				   config_ok,  stats_ok,  drain_ok };
	intptr_t k = (intptr_t)arg;
	int r;

	while (!atomic_load(&go))
		sched_yield();
	r = f[k % 6]();
	if (!r)
		r = f[(k + 1) % 6]();
	if (r)
		atomic_store(&stress_bad, r);
	return NULL;
}

static int stress_round(int round)
{
	static _Alignas(8) char mem[4096];
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	union indirect_params p;
	struct indirect_registers r;
	unsigned int seed = (unsigned int)round * 2654435761u;
	pthread_t th[NTHREADS];
	volatile unsigned long spin;
	unsigned long n;
	int i, ret;
	pid_t pid;

	for (i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, racer,
				   (void *)(intptr_t)(i + round)))
			return 2;
	n = (unsigned long)rand_r(&seed) % 200000;
	atomic_store(&go, 1);
	for (spin = 0; spin < n; spin++)
		;
	switch (round % 3) {
	case 0:
		pid = fork();
		break;
	case 1:
		pid = raw_fork();
		break;
	default:
		syslet_ring_init(ring, 16);
		memset(&p, 0, sizeof(p));
		p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
		FILL_FORK(r);
		pid = (pid_t)indirect(&r, &p, sizeof(p), 0);
		break;
	}
	if (!pid) {
		alarm(CHILD_S);
		_exit(all_ok());
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	if (pid < 0)
		return 3;
	ret = reap(pid, CHILD_S + 2, "stress child");
	if (ret) {
		fprintf(stderr, "stress round %d (fork %d, spin %lu): %d\n",
			round, round % 3, n, ret);
		return ret;
	}
	return atomic_load(&stress_bad) ? 130 : all_ok();
}

static void test_stress(void **state)
{
	double t0 = now();
	int round, r;
	pid_t pid;

	(void)state;
	for (round = 0; round < 60 && now() - t0 < 40; round++) {
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			alarm(CASE_S);
			_exit(stress_round(round));
		}
		r = reap(pid, CASE_S + 2, "stress round");
		if (r)
			fail_msg("stress round %d: %d", round, r);
	}
}

/* ---- rawcancel -------------------------------------------------------- */

/* A read running on a parent's worker; a raw fork child cancels it. */
static int rawcancel_case(const struct onecase *c)
{
	static _Alignas(8) char mem[4096];
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	double t0;
	int fd[2], i, ret;
	pid_t pid;
	char ch;

	(void)c;
	if (cancel_ok() || syslet_ring_init(ring, 16) || pipe(fd))
		return 1;
	if (punt_read_fd(ring, fd[0], &ch, 0xc0ffee))
		return 2;
	/* Running: a worker sits in read() of the pipe (/proc). */
	t0 = now();
	while (!task_in_read(fd[0])) {
		if (now() - t0 > 10)
			return 4;
		sched_yield();
	}
	for (i = 0; i < 2; i++) {
		pid = i ? fork() : raw_fork();
		if (!pid) {
			alarm(CHILD_S);
			/* A punt of its own: forked.c's reset done. */
			if (punt_read())
				_exit(140);
			errno = 0;
			ret = syslet_cancel(ring, 0xc0ffee, 0);
			if (ret != -1 || errno != ENOENT) {
				fprintf(stderr,
					"%s fork child: "
					"syslet_cancel() of the "
					"parent's call: %d, %s\n",
					i ? "glibc" : "raw", ret,
					strerror(errno));
				_exit(141);
			}
			_exit(0);
		}
		if (pid < 0)
			return 5;
		ret = reap(pid, CHILD_S + 2, i ? "glibc child" : "raw child");
		if (ret)
			return ret;
	}
	if (write(fd[1], "x", 1) != 1)
		return 6;
	return 0;
}

static void test_rawcancel(void **state)
{
	(void)state;
	in_child(rawcancel_case, &cases[0]);
}

/*
 * One worker at most: a read runs, a second one is queued behind it. A raw
 * fork child that made no punt of its own cancels the queued one: it is
 * its parent's (SPEC 5: it completes in the parent only), so ENOENT.
 */
static int rawqueued_case(const struct onecase *c)
{
	static _Alignas(8) char mem[4096];
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	int fd[2], ret;
	pid_t pid;
	char ch[2];

	(void)c;
	if (syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) || cancel_ok() ||
	    syslet_ring_init(ring, 16) || pipe(fd))
		return 1;
	ret = running_and_queued(ring, fd[0], ch, 10);
	if (ret)
		return ret;
	pid = raw_fork();
	if (!pid) {
		alarm(CHILD_S);
		errno = 0;
		ret = syslet_cancel(ring, 0xbee1, 0);
		if (ret != -1 || errno != ENOENT) {
			fprintf(stderr,
				"raw fork child: syslet_cancel() of "
				"the parent's queued call: %d (%s)\n",
				ret, ret < 0 ? strerror(errno) : "found");
			_exit(142);
		}
		_exit(0);
	}
	if (pid < 0)
		return 5;
	ret = reap(pid, CHILD_S + 2, "raw child");
	if (write(fd[1], "xy", 2) != 2)
		return 6;
	return ret;
}

static void test_rawqueued(void **state)
{
	(void)state;
	in_child(rawqueued_case, &cases[0]);
}

/* ---- nowipe ----------------------------------------------------------- */

/* Without MADV_WIPEONFORK: glibc's fork() while a thread is in an init. */
static int nowipe_case(const struct onecase *c)
{
	pthread_t th;
	pid_t pid;
	int r;

	if (!nowipe())
		return 150;
	if (c->warm && ind_getpid())
		return 9;
	/* Without a thread inside an init, a fork child is served. */
	pid = fork();
	if (!pid) {
		alarm(CHILD_S);
		_exit(all_ok());
	}
	if (pid < 0 || reap(pid, CHILD_S + 2, "glibc fork child, no init"))
		return 151;
	r = start_held(c, 0, &th);
	if (r)
		return r;
	pid = fork();
	if (!pid) {
		alarm(2); /* a hang is for ever: 2 s keeps 8 cases short */
		_exit(all_ok());
	}
	disarm();
	pthread_join(th, NULL);
	if (pid < 0)
		return 4;
	r = reap(pid, 4, "glibc fork child");
	if (r) {
		fprintf(stderr,
			"%s: glibc fork child of a thread inside the "
			"init: %d (the runner byte is a copied static, "
			"the word RUNNING: nobody runs it)\n",
			c->name, r);
		return r;
	}
	return all_ok();
}

static void test_nowipe(void **state)
{
	in_child(nowipe_case, *state);
}

/* ---- main ------------------------------------------------------------- */

#define N(a) (sizeof(a) / sizeof((a)[0]))

int main(int argc, char **argv)
{
	struct CMUnitTest t[16];
	const char *g = argc > 1 ? argv[1] : "nested";
	size_t i, n = 0;

	if (!strcmp(g, "nowipe") && !nowipe()) {
		/* From its start: the constructor madvise()s at load. */
		setenv("ONCE3_NOWIPE", "1", 1);
		execv("/proc/self/exe", argv);
		return 1;
	}
	resolve_hooks();
	if (argc > 2)
		cmocka_set_test_filter(argv[2]);
	if (!strcmp(g, "nowipe")) {
		for (i = 0; i < N(cases); i++)
			t[n++] = (struct CMUnitTest){
				.name = cases[i].name,
				.test_func = test_nowipe,
				.initial_state = (void *)&cases[i],
			};
	} else if (!strcmp(g, "cancelfirst")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_cancelfirst);
	} else if (!strcmp(g, "cancelrun")) {
		/* Those whose held thread is the caller (not a worker). */
		for (i = 0; i < N(cases); i++)
			if (cases[i].first == ind_getpid ||
			    cases[i].first == config_ok ||
			    cases[i].first == cancel_ok)
				t[n++] = (struct CMUnitTest){
					.name = cases[i].name,
					.test_func = test_cancelrun,
					.initial_state = (void *)&cases[i],
				};
	} else if (!strcmp(g, "nested") || !strcmp(g, "ifork") ||
		   !strcmp(g, "pidns")) {
		/*
		 * ifork: indirect(SYS_fork) is an inline call, so the
		 * forking thread's first waits for the tally's init: no
		 * tally case there.
		 */
		for (i = !strcmp(g, "ifork"); i < N(cases); i++)
			t[n++] = (struct CMUnitTest){
				.name = cases[i].name,
				.test_func = g[0] == 'n' ? test_nested :
					     g[0] == 'i' ? test_ifork :
							   test_pidns,
				.initial_state = (void *)&cases[i],
			};
	} else if (!strcmp(g, "atfork")) {
		for (i = 0; i < N(atfork_cases); i++)
			t[n++] = (struct CMUnitTest){
				.name = atfork_cases[i].name,
				.test_func = test_atfork,
				.initial_state = (void *)&atfork_cases[i],
			};
	} else if (!strcmp(g, "sharedvm")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_clonevm);
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_vfork);
	} else if (!strcmp(g, "cancel")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_cancel);
	} else if (!strcmp(g, "asynccancel")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_asynccancel);
	} else if (!strcmp(g, "signal")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_signal);
	} else if (!strcmp(g, "stress")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_stress);
	} else if (!strcmp(g, "rawcancel")) {
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_rawcancel);
		t[n++] = (struct CMUnitTest)cmocka_unit_test(test_rawqueued);
	} else {
		fprintf(stderr, "unknown group %s\n", g);
		return 2;
	}
	return _cmocka_run_group_tests(g, t, n, NULL, NULL);
}
