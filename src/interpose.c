/* SPDX-License-Identifier: MIT */
/*
 * Functions of glibc that libsyslet.so defines itself (exported in the
 * version script, so they take glibc's place for every object linked with
 * -lsyslet), each doing exactly what glibc's does, plus:
 *
 *   - syscall(): SYS_exit issued in notifier context (this worker thread,
 *     this process: notify.c) returns to the worker instead (SPEC 4.4), so
 *     that 2007 notifiers ending in syscall(SYS_exit, 0) leave the worker
 *     alive without any seccomp filter or signal handler. Every other call
 *     goes to the kernel unchanged, with glibc's convention (-1 and errno);
 *     one that changes the calling thread's credentials or confinement
 *     (seccomp) marks its snapshot stale (creds.c), one that changes a
 *     scheduling policy (sched_setscheduler, sched_setattr) every
 *     thread's answer of policy.c (its policy asked before and after:
 *     leaving real time frees a CPU).
 *   - sched_setscheduler, pthread_setschedparam: the same, around glibc's
 *     system call or glibc's own function.
 *   - setfsuid, setfsgid, capset, prctl, unshare, setns: per-thread
 *     changes of credentials: the same, around glibc's system call.
 *   - the set*id and setgroups family and initgroups, which glibc applies
 *     to every thread (SIGSETXID): glibc's own function, with the
 *     credentials generation moved before and after it (creds.c).
 *
 * Shared state: the real functions' addresses, found once by dlsym
 * (RTLD_NEXT) and stored with relaxed atomics (every thread finds the
 * same address, so a race only repeats the lookup).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"
#include "creds.h"
#include "notify.h"
#include "policy.h"
#include "sys.h"

/* Whether system call @nr may change the calling thread's credentials. */
static inline bool cred_nr(long nr)
{
	switch (nr) {
	case SYS_setuid:
	case SYS_setgid:
	case SYS_setreuid:
	case SYS_setregid:
	case SYS_setgroups:
	case SYS_setresuid:
	case SYS_setresgid:
	case SYS_setfsuid:
	case SYS_setfsgid:
	case SYS_capset:
	case SYS_prctl:
	case SYS_unshare:
	case SYS_setns:
	case SYS_seccomp:
		return true;
	default:
		return false;
	}
}

static long answer(long r)
{
	if (unlikely((unsigned long)r >= -4095UL)) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

SYSLET_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	long a[6], r;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (unlikely(nr == SYS_exit) && syslet__notify_exit_here())
		syslet__notify_leave();
	if (unlikely(nr == SYS_sched_setscheduler || nr == SYS_sched_setattr))
		return answer(syslet__policy_sys(nr, a));
	r = syslet__sys6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (unlikely(cred_nr(nr)))
		syslet__creds_changed_self();
	return answer(r);
}

SYSLET_EXPORT int setfsuid(uid_t id)
{
	int r = (int)syslet__sys1(SYS_setfsuid, id);

	syslet__creds_changed_self();
	return r;
}

SYSLET_EXPORT int setfsgid(gid_t id)
{
	int r = (int)syslet__sys1(SYS_setfsgid, id);

	syslet__creds_changed_self();
	return r;
}

int capset(void *hdr, void *data);

SYSLET_EXPORT int capset(void *hdr, void *data)
{
	long r = syslet__sys2(SYS_capset, hdr, data);

	syslet__creds_changed_self();
	return (int)answer(r);
}

SYSLET_EXPORT int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;
	long r;
	int i;

	va_start(ap, option);
	for (i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	r = syslet__sys5(SYS_prctl, option, a[0], a[1], a[2], a[3]);
	syslet__creds_changed_self();
	return (int)answer(r);
}

SYSLET_EXPORT int unshare(int flags)
{
	long r = syslet__sys1(SYS_unshare, flags);

	syslet__creds_changed_self();
	return (int)answer(r);
}

SYSLET_EXPORT int setns(int fd, int nstype)
{
	long r = syslet__sys2(SYS_setns, fd, nstype);

	syslet__creds_changed_self();
	return (int)answer(r);
}

SYSLET_EXPORT int sched_setscheduler(pid_t pid, int policy,
				     const struct sched_param *param)
{
	const long a[6] = { pid, policy, (long)param };

	return (int)answer(syslet__policy_sys(SYS_sched_setscheduler, a));
}

/* glibc's own @name (the next definition after ours). */
static void *next(void *_Atomic *slot, const char *name)
{
	/* Relaxed: every thread stores the same address. */
	void *f = atomic_load_explicit(slot, memory_order_relaxed);

	if (unlikely(!f)) {
		f = dlsym(RTLD_NEXT, name);
		atomic_store_explicit(slot, f, memory_order_relaxed);
	}
	return f;
}

/*
 * glibc's own @name (@params, @args), between @before and @after, which
 * keep errno; @none is its answer when glibc has none.
 */
#define AROUND(name, params, args, none, before, after)            \
	SYSLET_EXPORT int name params                              \
	{                                                          \
		static void *_Atomic slot;                         \
		void *f = next(&slot, #name);                      \
		int(*real) params;                                 \
		int ret, err;                                      \
                                                                   \
		if (!f)                                            \
			return none;                               \
		memcpy(&real, &f, sizeof(real)); /* POSIX dlsym */ \
		before;                                            \
		ret = real args;                                   \
		err = errno;                                       \
		after;                                             \
		errno = err;                                       \
		return ret;                                        \
	}

/* glibc's @name, which every thread applies, between two generations. */
#define BROADCAST(name, params, args)                    \
	AROUND(name, params, args, (errno = ENOSYS, -1), \
	       syslet__creds_changed_all(), syslet__creds_changed_all())

BROADCAST(setuid, (uid_t a), (a))
BROADCAST(setgid, (gid_t a), (a))
BROADCAST(seteuid, (uid_t a), (a))
BROADCAST(setegid, (gid_t a), (a))
BROADCAST(setreuid, (uid_t a, uid_t b), (a, b))
BROADCAST(setregid, (gid_t a, gid_t b), (a, b))
BROADCAST(setresuid, (uid_t a, uid_t b, uid_t c), (a, b, c))
BROADCAST(setresgid, (gid_t a, gid_t b, gid_t c), (a, b, c))
BROADCAST(setgroups, (size_t a, const gid_t *b), (a, b))
BROADCAST(initgroups, (const char *a, gid_t b), (a, b))

/*
 * Thread @t's kernel id (0: the caller), -1 if unknown. glibc 2.36 has no
 * pthread_gettid_np() (2.42), and pthread_getschedparam() answers for
 * another thread from its descriptor, where glibc keeps the policy it last
 * set, stale after the thread's own sched_setscheduler(): the id is read
 * from the thread's CPU-time clock, whose encoding is the kernel's ABI
 * (~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED: 6).
 */
static pid_t thread_tid(pthread_t t)
{
	clockid_t c;

	if (pthread_equal(t, pthread_self()))
		return 0;
	if (pthread_getcpuclockid(t, &c) || (c & 7) != 6)
		return -1;
	return (pid_t) ~(c >> 3);
}

/* glibc's own (it keeps the thread's policy in its descriptor too). */
AROUND(pthread_setschedparam, (pthread_t a, int b, const struct sched_param *c),
       (a, b, c), ENOSYS, pid_t tid = thread_tid(a);
       int before = syslet__policy_of(tid),
       syslet__policy_after(tid, before, !ret))
