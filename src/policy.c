/* SPDX-License-Identifier: MIT */
/*
 * Whether the calling thread runs a real-time policy (SCHED_FIFO, RR or
 * DEADLINE), for wake.c: such a thread may keep its CPU, and with it the
 * pool's worker there, for as long as it polls the ring (RT throttling
 * lets that worker run 50 ms a second, or never), so a submit that counts
 * on its own CPU's spinner or sleeper asks help from another CPU too.
 *
 * A system call per submit is too dear for the hand-off path (one
 * sched_getscheduler() is tens of nanoseconds on a quiet machine and was
 * 940 ns on the 2-CPU test VM, against a hand-off of ~500 ns), so each
 * thread keeps its answer (rt) tagged with the process-wide generation
 * (gen) it was read under, and reads it again only when gen has moved.
 * gen moves after every change of a policy that the library sees, of any
 * thread (pthread_setschedparam() may name another): sched_setscheduler(),
 * pthread_setschedparam(), syscall(SYS_sched_setscheduler or
 * SYS_sched_setattr) (interpose.c), the same calls through indirect()
 * (indirect.c), and a fork child's reset (SCHED_RESET_ON_FORK may have
 * changed its policy). A new thread reads its own on its first question.
 *
 * Where wake.c makes a system call anyway (it wakes a sleeper of the
 * caller's own shard), it asks the kernel (syslet__policy_reread()), which
 * also renews the thread's answer. Not seen elsewhere: a change made by
 * inline assembly, by a library that calls glibc's functions without the
 * program's symbol lookup, or by another process (chrt -p). A thread that
 * became real-time that way is answered as before where wake.c counts on
 * its own CPU's spinner or an idle worker there (its call may then wait
 * for RT throttling) until its next seen change or sleeper wake-up; one
 * that left real-time that way only wakes a worker more per call.
 *
 * A thread that leaves real time may let go the CPU it runs on: the shard
 * of that CPU, marked held (wake.c), is unmarked then, and only then
 * (syslet__policy_after() asks the kernel for the thread's policy before
 * and after the change, another thread's by its id, interpose.c); the
 * shard of the CPU the thread runs on (the caller's), or last ran on
 * (another's: /proc), every shard if that cannot be read; nothing when
 * the change failed. A thread that moved before it left leaves its old
 * CPU's mark, cleared by that CPU's next worker to run (a worker more
 * meanwhile). A change that does not end real time unmarks nothing: a
 * program that sets SCHED_OTHER on a SCHED_OTHER thread every millisecond
 * beside a FIFO poller sent the poller's moved worker home, behind the
 * poller, at each (15-19 of 30 of the poller's calls >= 20 ms; 1 of 30
 * without it), and so did a thread on the other CPU going FIFO and back
 * each time.
 *
 * Shared state: gen, bumped (seq_cst) after the change it announces, read
 * acquire, so that a thread that sees the new gen reads the new policy;
 * tag and rt are per thread.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "compiler.h"
#include "policy.h"
#include "shard.h"
#include "sys.h"

static _Atomic unsigned long gen = 1;
static SYSLET_TLS unsigned long tag; /* 0: never read */
static SYSLET_TLS bool rt;

bool syslet__policy_realtime(void)
{
	/* Acquire: pairs with the bump after the change. */
	if (likely(atomic_load_explicit(&gen, memory_order_acquire) == tag))
		return rt;
	return syslet__policy_reread();
}

bool syslet__policy_reread(void)
{
	/* Acquire: as above; read before the policy. */
	unsigned long g = atomic_load_explicit(&gen, memory_order_acquire);
	int pol;

	pol = sched_getscheduler(0);
	if (pol < 0)
		return false; /* unknown: asked again next time (tag kept) */
	pol &= ~SCHED_RESET_ON_FORK;
	rt = pol == SCHED_FIFO || pol == SCHED_RR || pol == SCHED_DEADLINE;
	tag = g;
	return rt;
}

/* Whether policy @pol (-1: unknown) may be real-time. */
static bool maybe_rt(int pol)
{
	if (pol < 0)
		return true; /* unknown */
	pol &= ~SCHED_RESET_ON_FORK;
	return pol == SCHED_FIFO || pol == SCHED_RR || pol == SCHED_DEADLINE;
}

int syslet__policy_of(long tid)
{
	long r = tid < 0 ? -1 : syslet__sys1(SYS_sched_getscheduler, tid);

	return r < 0 ? -1 : (int)r;
}

void syslet__policy_changed(int freed)
{
	/* Seq_cst: ordered after the change it announces. */
	atomic_fetch_add(&gen, 1);
	/* A real-time thread may have let a CPU go (wake.c). */
	if (freed != SYSLET__FREED_NONE)
		syslet__wake_unmark(freed);
}

/*
 * The CPU thread @tid last ran on (/proc: the 39th field of its stat),
 * -1 if unknown. Read only when another thread left real time.
 */
static int last_cpu(long tid)
{
	char path[64], buf[512], *p;
	int fd, i;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
	/* System calls: the program's errno stays as its call left it. */
	fd = (int)syslet__sys4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC,
			       0);
	if (fd < 0)
		return -1;
	n = syslet__sys3(SYS_read, fd, buf, sizeof(buf) - 1);
	syslet__sys1(SYS_close, fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* The name (field 2) may hold spaces and parentheses: after it. */
	p = strrchr(buf, ')');
	for (i = 2; p && i < 39; i++)
		p = strchr(p + 1, ' ');
	/* Whole: a read that ended inside it would give another CPU. */
	return p && strchr(p + 1, ' ') ? atoi(p + 1) : -1;
}

/*
 * What a change of thread @tid's policy (0: the caller's) from @before to
 * @now (-1: unknown) let go: the CPU it runs on, or last ran on.
 */
static int freed(long tid, int before, int now)
{
	int cpu;

	if (!maybe_rt(before) || (now >= 0 && maybe_rt(now)))
		return SYSLET__FREED_NONE;
	if (!tid || tid == gettid())
		cpu = sched_getcpu();
	else
		cpu = tid > 0 ? last_cpu(tid) : -1;
	return cpu < 0 ? SYSLET__FREED_ANY : cpu;
}

void syslet__policy_after(long tid, int before, bool done)
{
	int now = -1;

	/* A change refused (ESRCH, EINVAL, EPERM) let nothing go. */
	if (!done)
		before = SCHED_OTHER;
	else if (maybe_rt(before))
		now = syslet__policy_of(tid);
	syslet__policy_changed(freed(tid, before, now));
}

long syslet__policy_sys(long nr, const long *a)
{
	int before = syslet__policy_of(a[0]);
	long r = syslet__sys6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);

	syslet__policy_after(a[0], before, r >= 0);
	return r;
}
