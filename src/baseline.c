/* SPDX-License-Identifier: MIT */
/*
 * The process baseline (SPEC 5, neutral workers): the state a thread of
 * the library (the manager, a worker) takes when it starts, whichever
 * program thread caused it. It is the thread-group leader's, read from the
 * kernel, in two readings: when the library was loaded (a constructor:
 * what the process was started with, chrt(1), nice(1), taskset(1), the
 * parent's), and now.
 *
 * Each facet takes, of the two, the one that asks the least of the
 * machine for the program:
 *   - affinity: the union of the masks. A leader that pins itself later
 *     (a real-time control loop on one CPU) chose that for itself: the
 *     library's threads that took it would queue behind it on that CPU
 *     while the others idle; a mask widened later (a cpuset, taskset -p)
 *     is followed. The kernel keeps it within the cpuset; if nothing of
 *     it is left there, the leader's mask now (spawn.c).
 *   - policy: SCHED_IDLE < SCHED_BATCH < SCHED_OTHER < SCHED_RR <
 *     SCHED_FIFO, the lower; of two real-time ones, the lower priority. A
 *     leader that makes itself SCHED_FIFO after the load (the control
 *     loop again) would else make every new worker, and the manager, real
 *     time: they would preempt every ordinary thread of the machine, and
 *     a spinning worker would hold its CPU. A process started real time
 *     (chrt -f) keeps real-time workers. SCHED_DEADLINE cannot be given
 *     to another thread by sched_setscheduler() (it needs its budget): it
 *     counts as SCHED_OTHER; another policy (sched_ext) as SCHED_OTHER's
 *     rank.
 *   - nice: the higher value (a leader that calls nice(10) after the
 *     load, a process started under nice -n 10: both kept).
 *   - I/O priority: compared as the kernel applies it, class idle < best
 *     effort < real time, then the higher level; a value of no class
 *     (IOPRIO_CLASS_NONE, what ioprio_get() answers for a thread that set
 *     none, and for an ended leader) is the one its policy and nice give
 *     (real time for SCHED_FIFO and RR, idle for SCHED_IDLE, else best
 *     effort; level (nice + 20) / 5). The value taken is the reading's
 *     own: none stays none, then derived from the thread's baseline
 *     policy and nice, never more demanding than that reading's.
 * A reading that fails: the other alone.
 *
 * "At load" is when the constructor ran: at start-up for a program linked
 * with -lsyslet, at dlopen(3) otherwise (a leader already real time then
 * is the baseline). A fork child's load reading is, of its parent's and
 * of its own leader's (the forking thread's) state at its reset
 * (forked.c: in glibc's fork(), at once; after a raw fork, at its first
 * call), the less demanding: a child forked by a real-time thread of a
 * process started SCHED_OTHER is no process started real time. Its
 * affinity at load stays its parent's (the forking thread may be pinned:
 * a notifier on a worker).
 *
 * Shared state: the load-time readings, written by the constructor before
 * any thread of the library exists, and in a fork child by its reset
 * before any of its threads of the library exists (forked.c's READY
 * releases it); then only read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "baseline.h"
#include "sys.h"

static cpu_set_t load_mask;
static bool load_mask_ok;
static struct syslet__sched load_sched;
static bool load_sched_ok;

/* The leader's scheduling state now in @s: 0, or -1 if it cannot be read. */
static int read_sched(pid_t leader, struct syslet__sched *s)
{
	struct sched_param sp = { 0 };
	int pol = sched_getscheduler(leader);

	if (pol < 0 || sched_getparam(leader, &sp))
		return -1;
	s->policy = pol & ~SCHED_RESET_ON_FORK;
	s->prio = sp.sched_priority;
	if (s->policy == SCHED_DEADLINE) {
		s->policy = SCHED_OTHER;
		s->prio = 0;
	}
	errno = 0;
	s->nice = getpriority(PRIO_PROCESS, (id_t)leader);
	if (s->nice == -1 && errno)
		return -1;
	s->io = syslet__sys2(SYS_ioprio_get, IOPRIO_WHO_PROCESS, leader);
	return s->io < 0 ? -1 : 0;
}

__attribute__((constructor)) static void read_load_state(void)
{
	pid_t leader = getpid();
	int e = errno;

	/* The leader's: dlopen() may run on a thread that changed its own. */
	load_mask_ok =
		!sched_getaffinity(leader, sizeof(load_mask), &load_mask);
	load_sched_ok = !read_sched(leader, &load_sched);
	errno = e;
}

int syslet__baseline_mask(cpu_set_t *set)
{
	cpu_set_t l;

	if (sched_getaffinity(getpid(), sizeof(l), &l)) {
		if (!load_mask_ok)
			return -EPERM;
		*set = load_mask;
		return 0;
	}
	if (load_mask_ok)
		CPU_OR(set, &l, &load_mask);
	else
		*set = l;
	return 0;
}

static int policy_rank(int policy)
{
	switch (policy) {
	case SCHED_IDLE:
		return 0;
	case SCHED_BATCH:
		return 1;
	case SCHED_RR:
		return 3;
	case SCHED_FIFO:
		return 4;
	default:
		return 2;
	}
}

static bool realtime(int policy)
{
	return policy == SCHED_FIFO || policy == SCHED_RR;
}

/*
 * The I/O priority the kernel applies for reading @s, as one number that
 * grows with the demand: class idle 0, best effort 1, real time 2, times
 * 8 (levels 0-7), plus 7 - level. Hints (bits 3-12, Linux 6.5:
 * command duration limits) are not a priority: a level 0 with a hint is
 * level 0.
 */
static long io_demand(const struct syslet__sched *s)
{
	long class = s->io >> IOPRIO_CLASS_SHIFT,
	     level = s->io & IOPRIO_LEVEL_MASK, rank;

	if (class == IOPRIO_CLASS_NONE) {
		class = realtime(s->policy)	? IOPRIO_CLASS_RT :
			s->policy == SCHED_IDLE ? IOPRIO_CLASS_IDLE :
						  IOPRIO_CLASS_BE;
		level = (s->nice + 20) / 5; /* 0..7 */
	}
	rank = class == IOPRIO_CLASS_IDLE ? 0 :
	       class == IOPRIO_CLASS_RT	  ? 2 :
					    1;
	return rank * 8 + 7 - level;
}

/* In *@a, of it and *@b, each facet's less demanding. */
static void least(struct syslet__sched *a, const struct syslet__sched *b)
{
	struct syslet__sched r = *a;

	if (policy_rank(b->policy) < policy_rank(a->policy)) {
		r.policy = b->policy;
		r.prio = b->prio;
	}
	if (realtime(a->policy) && realtime(b->policy))
		r.prio = b->prio < a->prio ? b->prio : a->prio;
	if (b->nice > a->nice)
		r.nice = b->nice;
	if (io_demand(b) < io_demand(a))
		r.io = b->io;
	*a = r;
}

int syslet__baseline_sched(struct syslet__sched *s)
{
	if (read_sched(getpid(), s)) {
		if (!load_sched_ok)
			return -EPERM;
		*s = load_sched;
		return 0;
	}
	if (load_sched_ok)
		least(s, &load_sched);
	return 0;
}

void syslet__baseline_forked(void)
{
	struct syslet__sched now;

	if (read_sched(getpid(), &now))
		return;
	if (load_sched_ok)
		least(&load_sched, &now);
	else
		load_sched = now;
	load_sched_ok = true;
}
