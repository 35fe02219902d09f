/* SPDX-License-Identifier: MIT */
/*
 * Functions of glibc that libsyslet.so defines itself, each doing exactly
 * what glibc's does, plus telling creds.c what may have changed:
 *
 *   - syscall(): SYS_exit issued in notifier context (this worker thread,
 *     this process: notify.c) returns to the worker instead (SPEC 4.4), so
 *     that 2007 notifiers ending in syscall(SYS_exit, 0) leave the worker
 *     alive. Every other call goes to the kernel unchanged, with glibc's
 *     convention (-1 and errno); one that may change the calling thread's
 *     credentials or confinement has it compared again (creds.c).
 *   - setfsuid, setfsgid, capset, prctl, unshare, setns, close_range:
 *     per-thread changes: the same, around the system call.
 *   - the set*id and setgroups family and initgroups, which glibc applies
 *     to every thread (SIGSETXID): glibc's own function, between the two
 *     moves of creds.c's generation.
 *
 * Seen from every object (SPEC 5.1): the version script leaves these
 * names out of LIBSYSLET_1, so they are exported unversioned (the base
 * version), and glibc's dynamic linker binds a versioned reference
 * (syscall@GLIBC_2.2.5, from an object linked against libc only) to an
 * unversioned definition found first in the lookup scope: for objects
 * linked with -lsyslet, dlopen()ed after it, and under LD_PRELOAD.
 *
 * glibc's own set*id functions are found by dlsym(RTLD_NEXT) when the
 * library is loaded (a constructor: lookups, no system call, no
 * allocation), so that the interposed ones, async-signal-safe in POSIX,
 * stay so; a call made before that (another object's constructor) looks
 * them up then. A versioned reference (setuid@GLIBC_2.2.5) would bind back
 * to the library's own unversioned definition.
 *
 * Shared state: the real functions' addresses, written at load (or by a
 * call before it, each thread writing the same address), then only read.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <grp.h>
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
	long a[6];
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (unlikely(nr == SYS_exit) && syslet__notify_exit_here())
		syslet__notify_leave();
	if (unlikely(nr == SYS_sched_setscheduler || nr == SYS_sched_setattr))
		return answer(syslet__policy_sys(nr, a));
	return answer(syslet__creds_call(nr, a));
}

/* System call @nr of glibc's function of that name, then creds.c told. */
#define PER_THREAD(type, name, params, ...)                             \
	SYSLET_EXPORT type name params                                  \
	{                                                               \
		const long a[6] = { __VA_ARGS__ };                      \
                                                                        \
		return (type)answer(syslet__creds_call(SYS_##name, a)); \
	}

int capset(void *hdr, void *data);

/* setfs[ug]id answer the old id, never -1 and errno (glibc's too). */
SYSLET_EXPORT int setfsuid(uid_t id)
{
	const long a[6] = { id };

	return (int)syslet__creds_call(SYS_setfsuid, a);
}

SYSLET_EXPORT int setfsgid(gid_t id)
{
	const long a[6] = { id };

	return (int)syslet__creds_call(SYS_setfsgid, a);
}

PER_THREAD(int, capset, (void *h, void *d), (long)h, (long)d)
PER_THREAD(int, unshare, (int f), f)
PER_THREAD(int, setns, (int fd, int t), fd, t)
PER_THREAD(int, close_range, (unsigned int lo, unsigned int hi, int f), lo, hi,
	   f)

SYSLET_EXPORT int prctl(int option, ...)
{
	long a[6] = { option };
	va_list ap;
	int i;

	va_start(ap, option);
	for (i = 1; i < 5; i++)
		a[i] = (long)va_arg(ap, unsigned long);
	va_end(ap);
	return (int)answer(syslet__creds_call(SYS_prctl, a));
}

/* glibc's own @name, looked up once (top of file). */
static void *real(void **slot, const char *name)
{
	int err = errno;

	if (unlikely(!*slot))
		*slot = dlsym(RTLD_NEXT, name);
	errno = err;
	return *slot;
}

/* glibc's @name, which every thread applies, between two generations. */
#define BROADCAST(name, params, args)                          \
	static void *real_##name;                              \
	SYSLET_EXPORT int name params                          \
	{                                                      \
		void *f = real(&real_##name, #name);           \
		int(*fn) params;                               \
		int ret;                                       \
                                                               \
		if (!f) {                                      \
			errno = ENOSYS;                        \
			return -1;                             \
		}                                              \
		memcpy(&fn, &f, sizeof(fn)); /* POSIX dlsym */ \
		syslet__creds_broadcast(true);                 \
		ret = fn args;                                 \
		syslet__creds_broadcast(false);                \
		return ret;                                    \
	}

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

__attribute__((constructor)) static void find_real(void)
{
	real(&real_setuid, "setuid");
	real(&real_setgid, "setgid");
	real(&real_seteuid, "seteuid");
	real(&real_setegid, "setegid");
	real(&real_setreuid, "setreuid");
	real(&real_setregid, "setregid");
	real(&real_setresuid, "setresuid");
	real(&real_setresgid, "setresgid");
	real(&real_setgroups, "setgroups");
	real(&real_initgroups, "initgroups");
}

SYSLET_EXPORT int sched_setscheduler(pid_t pid, int policy,
				     const struct sched_param *param)
{
	const long a[6] = { pid, policy, (long)param };

	return (int)answer(syslet__policy_sys(SYS_sched_setscheduler, a));
}

/*
 * Thread @t's kernel id (0: the caller), -1 if unknown. glibc 2.36 has no
 * pthread_gettid_np() (2.42), and pthread_getschedparam() answers for
 * another thread from its descriptor, where glibc keeps the policy it last
 * set: the id is read from the thread's CPU-time clock, whose encoding is
 * the kernel's ABI (~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED).
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
static void *real_pthread_setschedparam;
SYSLET_EXPORT int pthread_setschedparam(pthread_t t, int policy,
					const struct sched_param *param)
{
	void *f = real(&real_pthread_setschedparam, "pthread_setschedparam");
	int (*fn)(pthread_t, int, const struct sched_param *);
	pid_t tid = thread_tid(t);
	int before, ret, err;

	if (!f)
		return ENOSYS;
	memcpy(&fn, &f, sizeof(fn)); /* POSIX dlsym */
	before = syslet__policy_of(tid);
	ret = fn(t, policy, param);
	err = errno;
	syslet__policy_after(tid, before, !ret);
	errno = err;
	return ret;
}
