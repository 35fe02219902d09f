/* SPDX-License-Identifier: MIT */
/*
 * Neutral threads (SPEC 5, issue 9 item 4): a thread the library starts
 * inherits nothing from the program thread that happened to cause it.
 *
 * pthread_create() copies the creating thread's per-thread state: its
 * credentials, scheduling policy, priority and nice value, CPU affinity,
 * I/O priority, timer slack, securebits (KEEPCAPS), NO_NEW_PRIVS, seccomp
 * filters, namespaces. The new thread therefore first resets itself
 * against the fixed baseline (SPEC 5, baseline.c): SCHED_OTHER, the
 * leader's nice value and affinity, I/O priority none; the timer slack to the kernel's default, 50 us; credentials
 * (creds.c). Then it checks what cannot be reset: NO_NEW_PRIVS, the
 * seccomp mode and filter count, the fs_struct (root, working directory:
 * a thread that unshared CLONE_FS, perhaps to chroot, would else share
 * its jail with every worker), and the mount, network, UTS, IPC, user
 * and cgroup namespaces must be the leader's (/proc/self/status,
 * /proc/self/ns/). A thread that differs in anything after the reset
 * ends at once and the spawn fails with EPERM: the pool then has one
 * worker fewer (the submitter of the pool's first call gets EAGAIN, SPEC
 * 5), never a worker in another state. A later spawn from a thread that
 * can produce a neutral one succeeds.
 *
 * A worker to be pinned is created on its CPU alone (glibc sets the mask
 * before it runs): with the baseline mask, the kernel may queue it on a
 * CPU a real-time thread holds, where it waits for RT throttling, ~950
 * ms, while the pool counts it as a worker to come.
 *
 * Threads are created from neutral threads only: a thread of the library
 * (the manager, which starts every worker) creates them itself (its copy
 * is neutral already but for scheduling, which the new thread resets all
 * the same); a program thread asks the pool's manager (manager.c), a
 * thread of the library created once per process (the first time, from
 * that program thread, with the reset and the checks above, the asker
 * waiting for the verdict on a futex; if it fails, the spawn fails and the
 * next one tries again), and waits for its pthread_create() answer.
 *
 * Not reset, not checked: speculation controls, the leader's own
 * oddities (it is the baseline).
 *
 * Shared state:
 *   - struct start, written by the creator before pthread_create() (which
 *     orders it), its verdict by the new thread (release store, futex
 *     wake) and read by the creator (acquire). Only the creator frees it
 *     when it waits, only the new thread when it does not.
 *   - neutral: per thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ioprio.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "baseline.h"
#include "cancel.h"
#include "compiler.h"
#include "creds.h"
#include "shard.h"
#include "spawn.h"
#include "sys.h"

#define STATUS_MIN 4096
#define TIMER_SLACK_NS 50000 /* the kernel's default */
#define STACK_MAX (64u << 20) /* the largest stack the probe tries */
#define PROBE_MIN_STACK (64u << 10) /* the probe's first stack, at least */

enum { PENDING, NEUTRAL, TAINTED };

struct start {
	void *(*fn)(void *);
	void *arg;
	bool wait;
	int cpu; /* started on it alone (>= 0), else the baseline */
	_Atomic uint32_t verdict;
};

static SYSLET_TLS bool neutral;

static const char *const ns_names[] = { "mnt", "net",  "uts",
					"ipc", "user", "cgroup" };

char *syslet__read_all(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t size = STATUS_MIN, len = 0;
	char *buf = NULL, *b;
	ssize_t n;

	if (fd < 0)
		return NULL;
	for (;;) {
		if (!buf || len + 1 == size) {
			if (buf)
				size *= 2;
			b = realloc(buf, size);
			if (!b)
				break;
			buf = b;
		}
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			if (n < 0 || !len)
				break;
			buf[len] = 0;
			return buf;
		}
		len += (size_t)n;
	}
	close(fd);
	free(buf);
	return NULL;
}

/* The value of "@key" in a status text, or -1. */
static long field(const char *st, const char *key)
{
	const char *p = strstr(st, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/*
 * The fixed baseline (baseline.c): SCHED_OTHER, the leader's nice, I/O
 * priority none; slack: the kernel's default; affinity: the leader's mask,
 * or its CPU @cpu alone if >= 0 and in it. What the kernel refuses of the
 * policy and the nice value is to become more demanding (leave SCHED_IDLE,
 * lower the nice value, without CAP_SYS_NICE or RLIMIT_NICE): the thread
 * keeps its creator's then, less demanding, and that is no failure, or an
 * unprivileged process that called nice(10) after the load could start no
 * thread at all (EAGAIN for ever). Only a thread left more demanding than
 * the baseline (real time, a lower nice value) fails.
 */
static int reset_sched(pid_t leader, int cpu)
{
	struct sched_param sp = { 0 };
	int err = 0, nice = syslet__baseline_nice(), pol;
	cpu_set_t set;

	/*
	 * The system call, not the library's own sched_setscheduler()
	 * (interpose.c): this thread's policy is no program thread's, and
	 * policy.c's generation would make every submitter ask again.
	 */
	syslet__sys3(SYS_sched_setscheduler, 0, SCHED_OTHER, &sp);
	pol = sched_getscheduler(0);
	if (pol != SCHED_OTHER && pol != SCHED_BATCH && pol != SCHED_IDLE)
		err = -EPERM;
	setpriority(PRIO_PROCESS, 0, nice);
	errno = 0;
	if (getpriority(PRIO_PROCESS, 0) < nice || errno)
		err = -EPERM;
	if (syslet__baseline_mask(&set)) {
		err = -EPERM;
	} else {
		if (cpu >= 0 && CPU_ISSET(cpu, &set)) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
		}
		/*
		 * Nothing of it in the cpuset now: the leader's mask now;
		 * that too (a zombie leader's is not updated): the one it
		 * inherited, which the kernel keeps within the cpuset. Never
		 * a failure, or no thread could start for good.
		 */
		if (sched_setaffinity(0, sizeof(set), &set) &&
		    !sched_getaffinity(leader, sizeof(set), &set))
			(void)sched_setaffinity(0, sizeof(set), &set);
	}
	/* IOPRIO_CLASS_NONE, level 0: always allowed. */
	if (syslet__sys3(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, 0))
		err = -EPERM;
	if (prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0))
		err = -EPERM;
	return err;
}

/*
 * The descriptor table is the leader's (a thread that unshared
 * CLONE_FILES would else give every worker its private table). Not
 * comparable: a zombie leader has none any more; a kernel without kcmp.
 */
static bool shared_files(const char *lst)
{
	const char *st = strstr(lst, "\nState:");
	long r;

	if (st && st[7 + strspn(st + 7, " \t")] == 'Z')
		return true;
	r = syslet__sys5(SYS_kcmp, getpid(), gettid(), KCMP_FILES, 0, 0);
	/* 0: the same table; 1 or 2: an order between two; < 0: unknown */
	return r != 1 && r != 2;
}

/* NO_NEW_PRIVS, seccomp and namespaces: the leader's, or -EPERM. */
static int check_fixed(const char *lst, const char *tst)
{
	static const char *const keys[] = { "\nNoNewPrivs:", "\nSeccomp:",
					    "\nSeccomp_filters:" };
	char a[64], b[64];
	struct stat x, y;
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (field(lst, keys[i]) != field(tst, keys[i]))
			return -EPERM;
	if (!shared_files(lst))
		return -EPERM;
	for (i = 0; i < sizeof(ns_names) / sizeof(ns_names[0]); i++) {
		snprintf(a, sizeof(a), "/proc/self/ns/%s", ns_names[i]);
		snprintf(b, sizeof(b), "/proc/thread-self/ns/%s", ns_names[i]);
		if (stat(a, &x) || stat(b, &y))
			continue; /* a namespace this kernel lacks */
		if (x.st_ino != y.st_ino || x.st_dev != y.st_dev)
			return -EPERM;
	}
	return 0;
}

static int neutralise(int cpu)
{
	char *lst = NULL, *tst = NULL;
	int ret;

	ret = reset_sched(getpid(), cpu);
	if (!ret) {
		lst = syslet__read_all("/proc/self/status");
		ret = lst ? 0 : -EIO;
	}
	if (!ret) {
		tst = syslet__read_all("/proc/thread-self/status");
		ret = tst ? check_fixed(lst, tst) : -EIO;
	}
	free(lst);
	free(tst);
	return ret;
}

static void *trampoline(void *arg)
{
	struct start *st = arg;
	void *(*fn)(void *) = st->fn;
	void *fnarg = st->arg;
	int cpu = st->cpu;
	uint32_t v;

	if (!st->wait) {
		free(st);
		/* A facet it fails is left less demanding (reset_sched()). */
		reset_sched(getpid(), cpu);
		neutral = true;
		return fn(fnarg);
	}
	v = neutralise(cpu) ? TAINTED : NEUTRAL;
	/* Release: the creator reads the verdict, then frees @st. */
	atomic_store_explicit(&st->verdict, v, memory_order_release);
	syslet__futex(&st->verdict, FUTEX_WAKE_PRIVATE, 1, NULL);
	if (v != NEUTRAL)
		return NULL;
	neutral = true;
	return fn(fnarg);
}

/*
 * glibc takes the program's static TLS from each thread's stack (its own
 * __thread data, LD_PRELOADed libraries, glibc's surplus) and refuses a
 * stack only when less than 2 KiB would be left: a thread of 64 KiB in a
 * program with 60 KiB of it would run on 4 KiB. So before its first
 * thread the library learns, once, how much of a stack a thread loses: a
 * probe thread measures the stack below its first frame, and every thread
 * of the library gets that much more than its size. A size below
 * PTHREAD_STACK_MIN (128 KiB on aarch64 and ppc64le) is raised to it: a
 * refused pthread_attr_setstacksize() would leave glibc's default, which
 * under a small RLIMIT_STACK is the static TLS plus 2 KiB. The static TLS
 * is fixed at start-up (dlopen() takes its modules' from the surplus), so
 * one measure serves the process and its fork children. The probe's own
 * stack must leave it room: glibc's check counts the guard the program
 * asked for (a page), not the 64 KiB it maps on aarch64 and ppc64le, so a
 * TLS up to about 64 KiB below a stack's size makes a thread whose stack
 * starts inside its guard. It is sized from ld.so's own record of the
 * static TLS (_dl_get_tls_static_info, GLIBC_PRIVATE, which the
 * sanitizers read too) plus 64 KiB; without it, from the smallest size
 * up (the band stays open there). Written once
 * (compare-and-swap from 0, relaxed: a racing creator's probe measures
 * the same; the extra is never 0, it holds the thread descriptor).
 */
static _Atomic size_t extra;

/* Set @a's stack size to @size, at least PTHREAD_STACK_MIN. */
static int stack_size_set(pthread_attr_t *a, size_t size)
{
	size_t min = PTHREAD_STACK_MIN;

	return -pthread_attr_setstacksize(a, size < min ? min : size);
}

/* The probe: the stack below its first frame. */
static void *probe(void *arg)
{
	char here;
	pthread_attr_t a;
	size_t size;
	void *low;

	if (!pthread_getattr_np(pthread_self(), &a)) {
		if (!pthread_attr_getstack(&a, &low, &size))
			*(size_t *)arg =
				(size_t)((uintptr_t)&here - (uintptr_t)low);
		pthread_attr_destroy(&a);
	}
	return NULL;
}

/*
 * ld.so's static TLS size, 0 if unknown: looked up at load (the only
 * thing this file does then), since dlsym() takes ld.so's lock, which a
 * child raw-forked while another thread held it in a first start would
 * wait for for ever (first_attack_rawfork; glibc's fork() resets it).
 * The size is fixed at startup.
 */
static size_t tls_static;

__attribute__((constructor)) static void tls_static_read(void)
{
	void (*get)(size_t *, size_t *);
	void *f = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
	size_t size = 0, align = 0;

	if (f) {
		memcpy(&get, &f, sizeof(get)); /* POSIX dlsym */
		get(&size, &align);
	}
	tls_static = size < STACK_MAX ? size : 0;
}

static size_t static_tls_size(void)
{
	return tls_static;
}

/*
 * The kernel refuses a SCHED_DEADLINE thread's clone() (EAGAIN) unless it
 * has SCHED_FLAG_RESET_ON_FORK, with which the child starts as
 * SCHED_OTHER, as the new thread resets itself anyway. So a DEADLINE
 * thread that starts the library's first thread gets the flag for the
 * time of the pthread_create() only, signals blocked (nothing of the
 * program runs on the thread meanwhile) but for those the kernel forces
 * (SIGSYS of a seccomp trap, SIGSEGV...: blocked, they would kill the
 * process), and the flag cleared after, on the attributes as they are
 * then (another thread may have changed them meanwhile): the program's
 * own forks see the thread as it was. Setting and clearing the flag of a
 * DEADLINE thread takes CAP_SYS_NICE (as setting DEADLINE did): without
 * it the EAGAIN stands.
 */
struct sched_attr_v1 {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif

void syslet__sig_block(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all); /* not glibc's SIGCANCEL, SIGSETXID */
	sigdelset(&all, SIGSYS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGTRAP);
	sigemptyset(old);
	syslet__sys4(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, _NSIG / 8);
}

void syslet__sig_restore(const sigset_t *old)
{
	/* Raw: pthread_sigmask() would unblock those two if they were. */
	syslet__sys4(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, _NSIG / 8);
}

static int thread_start(pthread_t *t, const pthread_attr_t *a,
			void *(*fn)(void *), void *arg)
{
	struct sched_attr_v1 was = { .size = sizeof(was) }, on;
	sigset_t old;
	int ret = pthread_create(t, a, fn, arg);

	if (ret != EAGAIN ||
	    syslet__sys3(SYS_sched_getattr, 0, (long)&was, sizeof(was)) ||
	    was.policy != SCHED_DEADLINE ||
	    (was.flags & SCHED_FLAG_RESET_ON_FORK))
		return ret;
	on = was;
	on.size = sizeof(on);
	on.flags |= SCHED_FLAG_RESET_ON_FORK;
	syslet__sig_block(&old);
	if (!syslet__sys3(SYS_sched_setattr, 0, (long)&on, 0)) {
		ret = pthread_create(t, a, fn, arg);
		/* Only the flag back: not what another thread set since. */
		on.size = sizeof(on);
		if (!syslet__sys3(SYS_sched_getattr, 0, (long)&on,
				  sizeof(on))) {
			on.flags &= ~(uint64_t)SCHED_FLAG_RESET_ON_FORK;
			on.size = sizeof(on);
			syslet__sys3(SYS_sched_setattr, 0, (long)&on, 0);
		}
	}
	syslet__sig_restore(&old);
	return ret;
}

/* The extra, learnt on first use: > 0, or the probe's -errno. */
static long tls_extra(void)
{
	size_t size = PTHREAD_STACK_MIN, used = 0, v, zero = 0;
	long pg = sysconf(_SC_PAGESIZE);
	pthread_attr_t a;
	sigset_t all;
	pthread_t t;
	int ret = EINVAL;

	v = atomic_load_explicit(&extra, memory_order_relaxed);
	if (v)
		return (long)v;
	sigfillset(&all);
	pthread_attr_init(&a);
	pthread_attr_setsigmask_np(&a, &all);
	if (size < PROBE_MIN_STACK)
		size = PROBE_MIN_STACK;
	size += (static_tls_size() + PROBE_MIN_STACK + (size_t)pg - 1) &
		~((size_t)pg - 1);
	/* EINVAL: the static TLS leaves no 2 KiB of it, try twice that */
	for (; size <= STACK_MAX && !used; size *= 2) {
		if (pthread_attr_setstacksize(&a, size))
			break;
		ret = thread_start(&t, &a, probe, &used);
		if (!ret)
			pthread_join(t, NULL);
		else if (ret != EINVAL)
			break; /* EAGAIN, ENOMEM: no thread at any size */
	}
	pthread_attr_destroy(&a);
	size /= 2; /* the size the probe ran with */
	if (!used || used > size)
		return -(ret ? ret : EINVAL);
	v = (size - used + (size_t)pg - 1) & ~((size_t)pg - 1);
	if (!atomic_compare_exchange_strong_explicit(&extra, &zero, v,
						     memory_order_relaxed,
						     memory_order_relaxed))
		v = zero;
	return (long)v;
}

/* @a initialised for a library thread: detached, signals blocked. */
static int attrs(pthread_attr_t *a, size_t stack_size)
{
	sigset_t all;

	sigfillset(&all);
	sigdelset(&all, SIGSYS); /* a seccomp trap runs a handler (standin.c) */
	sigdelset(&all, syslet__cancel_signal()); /* cancel.c */
	pthread_attr_init(a);
	pthread_attr_setdetachstate(a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setsigmask_np(a, &all);
	return stack_size_set(a, stack_size);
}

/* @a starts its thread on CPU @cpu alone, if the baseline has it. */
static bool on_cpu(pthread_attr_t *a, int cpu)
{
	cpu_set_t set;

	if (syslet__baseline_mask(&set) || !CPU_ISSET(cpu, &set))
		return false;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return !pthread_attr_setaffinity_np(a, sizeof(set), &set);
}

/*
 * pthread_create() of @fn, on CPU @cpu alone if >= 0 and allowed (glibc
 * sets the mask before the thread runs: left to the kernel, a thread of
 * the manager's baseline mask may be queued on a CPU a real-time thread
 * holds, counted as a worker to come and never running until RT
 * throttling, ~950 ms); with @wait, the new thread's verdict too.
 */
static int create(void *(*fn)(void *), void *arg, size_t stack_size, bool wait,
		  int cpu)
{
	long e = tls_extra();
	struct start *st;
	pthread_attr_t a;
	pthread_t t;
	uint32_t v;
	bool one;
	int ret;

	if (e < 0)
		return (int)e;
	st = malloc(sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->fn = fn;
	st->arg = arg;
	st->wait = wait;
	st->cpu = cpu;
	atomic_init(&st->verdict, PENDING);
	ret = attrs(&a, stack_size + (size_t)e);
	one = !ret && cpu >= 0 && on_cpu(&a, cpu);
	if (!ret)
		ret = -thread_start(&t, &a, trampoline, st);
	if (ret == -EINVAL && one) {
		/* A CPU the process lost since: anywhere, as without one. */
		st->cpu = -1;
		pthread_attr_destroy(&a);
		ret = attrs(&a, stack_size + (size_t)e);
		if (!ret)
			ret = -thread_start(&t, &a, trampoline, st);
	}
	pthread_attr_destroy(&a);
	if (ret) {
		free(st);
		return ret;
	}
	if (!wait)
		return 0;
	/* Acquire: pairs with the new thread's verdict. */
	while ((v = atomic_load_explicit(&st->verdict, memory_order_acquire)) ==
	       PENDING)
		syslet__futex(&st->verdict, FUTEX_WAIT_PRIVATE, PENDING, NULL);
	free(st);
	return v == NEUTRAL ? 0 : -EPERM;
}

int syslet__thread_create(void *(*fn)(void *), void *arg, size_t stack_size,
			  int cpu)
{
	return create(fn, arg, stack_size, false, cpu);
}

int syslet__thread_create_checked(void *(*fn)(void *), void *arg,
				  size_t stack_size)
{
	return create(fn, arg, stack_size, true, -1);
}

int syslet__thread_spawn(void *(*fn)(void *), void *arg, size_t stack_size,
			 int cpu)
{
	if (neutral)
		return create(fn, arg, stack_size, false, cpu);
	return syslet__manager_spawn(fn, arg, stack_size, cpu);
}
