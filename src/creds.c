/* SPDX-License-Identifier: MIT */
/*
 * Credentials and confinement by construction (SPEC 5.1, issue 23).
 *
 * The pool's threads never change their credentials: they are created
 * from a thread found equal to them (the first from the thread whose punt
 * starts the pool, which this check passed), inherit its state, and then
 * change only with the rest of the process, when glibc's set*id and
 * setgroups broadcast a change to every thread. A punted call runs on one
 * only if its submitter equals them in everything SPEC 5.1 lists, else it
 * completes with EPERM before anything of it runs on a worker.
 *
 * Process-wide changes: gen, moved by the interposed glibc functions that
 * broadcast (interpose.c) before and after glibc's own: the low BUSY_BITS
 * count the broadcasts under way, the rest an epoch that every end moves.
 * A job records gen at submit (always a value with none under way); the
 * worker compares it just before the call (exec.c), and a call submitted
 * before a broadcast began, whichever direction it went, gets EPERM.
 *
 * Per thread: seen, the gen at which this thread was last compared with
 * the pool, and apart, the verdict. The steady submit is one load of gen
 * and one TLS compare. The comparison is made again at a thread's first
 * punt, after gen moved, and after the thread changed its own credentials
 * or confinement through an interposed function or indirect(), which make
 * that call through syslet__creds_call().
 *
 * split, process-wide, says how threads may differ in what the
 * comparison below cannot always see: nothing until a thread changes
 * something of its own through syslet__creds_call() (its ids,
 * capabilities, securebits, shared structures: APART, for good;
 * NO_NEW_PRIVS or a filter of its own: FILTER, until a filter with TSYNC,
 * which leaves every thread with the caller's filters; a Landlock domain
 * taken while other threads run: LANDLOCK, for good). Where the
 * comparison cannot be made (a filter refuses /proc or kcmp with EPERM),
 * no split answers equal. After a filter with TSYNC (SANDBOX), while no
 * split is known, threads are not compared at all: in a Chromium-style
 * allow-list sandbox the comparison's reads would trap (SIGSYS), and
 * every thread holds the one filter. LANDLOCK refuses every
 * comparison: a domain cannot be compared from outside, and one taken
 * while alone is inherited by every later thread, the pool's too
 * (syslet(7)). A change made where the library cannot see it (a raw
 * system call, libc's own syscall()) inside such a sandbox goes unseen.
 *
 * The comparison compares, with system calls, this thread with a
 * reference: a thread of the pool (named "syslet/...", its
 * tid cached in ref and looked up again in /proc/self/task when it ended),
 * or, before the pool has one, the thread-group leader: the Uid, Gid,
 * Groups, Cap* (inheritable, permitted, effective, bounding, ambient),
 * NoNewPrivs, Seccomp and Seccomp_filters lines of their status files,
 * kcmp() of their fs_struct and descriptor table, the inodes of their
 * namespaces; securebits, which only a thread can read of itself, against
 * pool_sec, the value of the first thread found equal (the pool's threads
 * inherit it, and nothing changes it on them).
 *
 * The window: a broadcast that lands on a worker between its check and
 * its system call. The call then runs with the credentials every thread of
 * the process holds after the change, its submitter's included, as a plain
 * call blocked across the broadcast does once glibc's SA_RESTART handler
 * restarts it; it never runs with credentials no thread of the process
 * holds (syslet(7)).
 *
 * Shared state:
 *   - gen: seq_cst read-modify-writes by broadcasters; acquire loads.
 *   - ref, pool_sec: hints, relaxed (pool_sec set once by CAS from -1).
 *   - split: relaxed read-modify-writes after the change; relaxed loads
 *     (syslet__creds_call() says why).
 *   - seen, apart: per thread, their own thread (and its signal handlers:
 *     apart is written before seen).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "compiler.h"
#include "creds.h"
#include "sys.h"

#define BUSY_BITS 24
#define EPOCH (1UL << BUSY_BITS)
#define STATUS_MAX 4096
#define SPLIT_APART 1u /* a thread changed its ids, caps or structures */
#define SPLIT_FILTER 2u /* a thread took a filter or NO_NEW_PRIVS alone */
#define SPLIT_LANDLOCK 4u /* a thread of several took a Landlock domain */
#define SPLITS 7u
#define SANDBOX 8u /* a filter every thread took: not compared */

static _Atomic unsigned long gen = EPOCH;
static _Atomic long ref; /* a pool thread's tid, 0: none known */
static _Atomic long pool_sec = -1; /* the pool's securebits, -1: unknown */
static _Atomic unsigned int split; /* SPLIT_*: how threads may differ */
static SYSLET_TLS unsigned long seen; /* 0: never compared */
static SYSLET_TLS bool apart;

/* Whether thread @tid of this process is one of the pool's. */
static bool pool_thread(long tid)
{
	char path[48], name[20];

	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
	return syslet__slurp(path, name, sizeof(name)) > 0 &&
	       !strncmp(name, "syslet/", 7);
}

/* Whether /proc numbers processes as this pid namespace does. */
static bool proc_ours(long pid)
{
	char buf[24];
	long n = syslet__sys4(SYS_readlinkat, AT_FDCWD, "/proc/self", buf,
			      sizeof(buf) - 1);

	if (n <= 0)
		return false;
	buf[n] = 0;
	return atol(buf) == pid;
}

/* A pool thread's tid, or 0 if there is none. */
static long find_ref(void)
{
	long t = atomic_load_explicit(&ref, memory_order_relaxed);
	struct dirent *e;
	DIR *d;

	if (t && pool_thread(t))
		return t;
	t = 0;
	d = opendir("/proc/self/task");
	while (d && !t && (e = readdir(d)))
		if (atol(e->d_name) > 0 && pool_thread(atol(e->d_name)))
			t = atol(e->d_name);
	if (d)
		closedir(d);
	/* Relaxed: a hint, checked at each use. */
	atomic_store_explicit(&ref, t, memory_order_relaxed);
	return t;
}

/* Whether line @key of status texts @a and @b is the same (or in none). */
static bool same_line(const char *a, const char *b, const char *key)
{
	const char *p = strstr(a, key), *q = strstr(b, key);
	size_t n;

	if (!p || !q)
		return !p && !q;
	n = strcspn(p + 1, "\n");
	return n == strcspn(q + 1, "\n") && !memcmp(p, q, n + 1);
}

/*
 * Whether this thread, @self, equals thread @r (top of file): SAME,
 * DIFFER, or UNKNOWN where the process may not look (a sandbox's filter
 * refuses /proc or kcmp).
 */
enum verdict { DIFFER, SAME, UNKNOWN };

static enum verdict equal(long self, long r, long leader)
{
	static const char *const keys[] = {
		"\nUid:",
		"\nGid:",
		"\nGroups:",
		"\nCapInh:",
		"\nCapPrm:",
		"\nCapEff:",
		"\nCapBnd:",
		"\nCapAmb:",
		"\nNoNewPrivs:",
		"\nSeccomp:",
		"\nSeccomp_filters:",
	};
	static const char *const ns[] = {
		"cgroup", "ipc",
		"mnt",	  "net",
		"pid",	  "pid_for_children",
		"time",	  "time_for_children",
		"user",	  "uts",
	};
	char mine[STATUS_MAX], theirs[STATUS_MAX], a[64], b[80];
	long la, lb;
	long sec = syslet__sys1(SYS_prctl, PR_GET_SECUREBITS), old = -1;
	struct stat x, y;
	bool ra, rb;
	size_t i;

	if (sec < 0)
		return UNKNOWN;
	/* Relaxed: set once; the pool's threads inherit the first value. */
	if (!atomic_compare_exchange_strong_explicit(&pool_sec, &old, sec,
						     memory_order_relaxed,
						     memory_order_relaxed) &&
	    old != sec)
		return DIFFER;
	if (r == self)
		return SAME;
	/* The leader by /proc/self: right whatever /proc's pid namespace. */
	if (r == leader)
		snprintf(a, sizeof(a), "/proc/self/status");
	else
		snprintf(a, sizeof(a), "/proc/self/task/%ld/status", r);
	/*
	 * A text that fills its buffer may have lost the lines compared
	 * below (hundreds of supplementary groups): not known.
	 */
	la = syslet__slurp("/proc/thread-self/status", mine, sizeof(mine));
	lb = syslet__slurp(a, theirs, sizeof(theirs));
	if (la <= 0 || lb <= 0 || la >= STATUS_MAX - 1 || lb >= STATUS_MAX - 1)
		return UNKNOWN;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!same_line(mine, theirs, keys[i]))
			return DIFFER;
	/* A leader that ended (pthread_exit) holds no fs, files, ns. */
	if (strstr(theirs, "\nState:\tZ"))
		return SAME;
	la = syslet__sys5(SYS_kcmp, self, r, KCMP_FS, 0, 0);
	lb = la ? la : syslet__sys5(SYS_kcmp, self, r, KCMP_FILES, 0, 0);
	if (la || lb)
		return la < 0 || lb < 0 ? UNKNOWN : DIFFER;
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		snprintf(a, sizeof(a), "/proc/thread-self/ns/%s", ns[i]);
		if (r == leader)
			snprintf(b, sizeof(b), "/proc/self/ns/%s", ns[i]);
		else
			snprintf(b, sizeof(b), "/proc/self/task/%ld/ns/%s", r,
				 ns[i]);
		ra = stat(a, &x) != 0;
		rb = stat(b, &y) != 0;
		if (ra != rb ||
		    (!ra && (x.st_ino != y.st_ino || x.st_dev != y.st_dev)))
			return DIFFER;
	}
	return SAME;
}

/* The comparison of this thread at generation @g (top of file). */
static __attribute__((noinline)) long compare(unsigned long g)
{
	int err = errno;
	long self, r, leader;
	unsigned int sp;
	enum verdict v;
	bool eq;

	if (g & (EPOCH - 1))
		return -EPERM; /* a broadcast under way */
	/* Relaxed: see syslet__creds_call(). */
	sp = atomic_load_explicit(&split, memory_order_relaxed);
	if (sp == SANDBOX) {
		apart = false;
		atomic_signal_fence(memory_order_seq_cst);
		seen = g;
		return (long)g;
	}
	self = syslet__sys0(SYS_gettid);
	leader = syslet__sys0(SYS_getpid);
	/*
	 * A pool thread is named by /proc's numbers: only where /proc is of
	 * this pid namespace (not after unshare(CLONE_NEWPID) without a new
	 * mount) are they this thread's, for kcmp(); else the leader.
	 */
	r = proc_ours(leader) ? find_ref() : 0;
	v = equal(self, r ? r : leader, leader);
	errno = err;
	eq = !(sp & SPLIT_LANDLOCK) &&
	     (v == SAME || (v == UNKNOWN && !(sp & SPLITS)));
	/* Acquire: as in syslet__creds_submit(). */
	if (atomic_load_explicit(&gen, memory_order_acquire) != g)
		return -EPERM; /* compared in the middle of a change */
	apart = !eq;
	atomic_signal_fence(memory_order_seq_cst); /* a handler's punt */
	seen = g;
	return eq ? (long)g : -EPERM;
}

long syslet__creds_submit(void)
{
	/*
	 * Acquire: pairs with a broadcaster's bump, made before glibc
	 * signals any thread.
	 */
	unsigned long g = atomic_load_explicit(&gen, memory_order_acquire);

	if (likely(seen == g))
		return apart ? -EPERM : (long)g;
	return compare(g);
}

bool syslet__creds_current(unsigned long g)
{
	/*
	 * Acquire: a broadcast that already reached this thread was begun
	 * (gen moved) before glibc signalled it.
	 */
	return atomic_load_explicit(&gen, memory_order_acquire) == g;
}

/* Whether this process has one thread (the calling one). */
static bool alone(void)
{
	char st[STATUS_MAX], *p;
	long n = syslet__slurp("/proc/self/status", st, sizeof(st));

	p = n > 0 ? strstr(st, "\nThreads:\t") : NULL;
	return p && atol(p + 10) == 1;
}

/*
 * What call @nr(@a), answered @r, did to this thread alone (top of file):
 * a change of its ids, capabilities or shared structures (APART), of its
 * filters or NO_NEW_PRIVS (FILTER), a filter every thread took, which
 * leaves them all with the caller's filters (SYNCED), a Landlock domain
 * (LANDLOCK), or nothing. A failed call changed nothing.
 */
enum change { NONE, APART, FILTER, SYNCED, LANDLOCK };

static enum change change_of(long nr, const long *a, long r)
{
	switch (nr) {
	case SYS_setfsuid:
	case SYS_setfsgid:
		return APART; /* they answer the old id, never an error */
	case SYS_close_range:
		return r == 0 && (a[2] & CLOSE_RANGE_UNSHARE) ? APART : NONE;
	case SYS_prctl:
		if (r < 0)
			return NONE;
		switch (a[0]) {
		case PR_SET_NO_NEW_PRIVS:
		case PR_SET_SECCOMP:
			return FILTER;
		case PR_SET_SECUREBITS:
		case PR_SET_KEEPCAPS:
		case PR_CAPBSET_DROP:
		case PR_CAP_AMBIENT:
			return APART;
		default:
			return NONE;
		}
	case SYS_seccomp:
		/*
		 * On failure TSYNC answers the tid of a thread that could not
		 * take the filter, unless asked for a listener, which needs
		 * TSYNC_ESRCH (-ESRCH then).
		 */
		if (a[0] == SECCOMP_SET_MODE_FILTER &&
		    (a[1] & SECCOMP_FILTER_FLAG_TSYNC))
			return r == 0 || (r > 0 &&
					  (a[1] &
					   SECCOMP_FILTER_FLAG_NEW_LISTENER)) ?
				       SYNCED :
				       NONE;
		return r >= 0 ? FILTER : NONE;
	case SYS_landlock_restrict_self:
		return r == 0 ? LANDLOCK : NONE;
	case SYS_setuid:
	case SYS_setgid:
	case SYS_setreuid:
	case SYS_setregid:
	case SYS_setgroups:
	case SYS_setresuid:
	case SYS_setresgid:
	case SYS_capset:
	case SYS_unshare:
	case SYS_setns:
		return r >= 0 ? APART : NONE;
	default:
		return NONE;
	}
}

long syslet__creds_call(long nr, const long *a)
{
	bool one = nr == SYS_landlock_restrict_self && alone();
	long r = syslet__sys6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);

	/*
	 * Relaxed: a thread reads split only for its own calls (after its
	 * own change) or for a thread it created after (pthread_create()
	 * orders them).
	 */
	switch (change_of(nr, a, r)) {
	case NONE:
		return r;
	case APART:
		atomic_fetch_or_explicit(&split, SPLIT_APART,
					 memory_order_relaxed);
		break;
	case FILTER:
		atomic_fetch_or_explicit(&split, SPLIT_FILTER,
					 memory_order_relaxed);
		break;
	case SYNCED:
		atomic_fetch_and_explicit(&split, ~SPLIT_FILTER,
					  memory_order_relaxed);
		atomic_fetch_or_explicit(&split, SANDBOX, memory_order_relaxed);
		break;
	case LANDLOCK:
		/* Alone, every later thread, the pool's too, inherits it. */
		if (!one)
			atomic_fetch_or_explicit(&split, SPLIT_LANDLOCK,
						 memory_order_relaxed);
		break;
	}
	seen = 0;
	return r;
}

void syslet__creds_broadcast(bool begin)
{
	/* Seq_cst: before glibc signals any thread, after all answered. */
	atomic_fetch_add(&gen, begin ? 1 : EPOCH - 1);
}

void syslet__creds_forked(void)
{
	/* Relaxed: the child's only thread. No broadcast under way here. */
	atomic_store_explicit(
		&gen,
		(atomic_load_explicit(&gen, memory_order_relaxed) &
		 ~(EPOCH - 1)) +
			EPOCH,
		memory_order_relaxed);
	atomic_store_explicit(&ref, 0, memory_order_relaxed);
	atomic_store_explicit(&pool_sec, -1, memory_order_relaxed);
	/* The child's one thread is its reference; its filters stay. */
	atomic_store_explicit(
		&split,
		atomic_load_explicit(&split, memory_order_relaxed) & SANDBOX,
		memory_order_relaxed);
	seen = 0;
}
