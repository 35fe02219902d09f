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
 *   - policy: SCHED_IDLE < SCHED_OTHER, SCHED_BATCH < SCHED_FIFO,
 *     SCHED_RR; the lower rank, or at equal rank the policy now, with the
 *     lower real-time priority. A leader that makes itself SCHED_FIFO
 *     after the load (the control loop again) would else make every new
 *     worker, and the manager, real time: they would preempt every
 *     ordinary thread of the machine, and a spinning worker would hold
 *     its CPU. A process started real time (chrt -f) keeps real-time
 *     workers. SCHED_DEADLINE cannot be given to another thread by
 *     sched_setscheduler() (it needs its budget): it counts as
 *     SCHED_OTHER.
 *   - nice: the higher value (a leader that calls nice(10) after the
 *     load, a process started under nice -n 10: both kept).
 *   - I/O priority: class idle < best effort (or none, derived from the
 *     nice value) < real time; the lower class, at equal class the lower
 *     priority (the higher level).
 * A reading that fails: the other alone (the load-time one is missing
 * when the leader had already ended, under a dlopen() from a thread).
 *
 * Shared state: the load-time readings, written once by the constructor
 * before any thread of the library exists, then only read.
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

#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_DATA_MASK ((1L << IOPRIO_CLASS_SHIFT) - 1)
#define IOPRIO_CLASS_RT 1
#define IOPRIO_CLASS_IDLE 3

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
	int e = errno;

	/* The leader's: dlopen() may run on a thread that changed its own. */
	load_mask_ok =
		!sched_getaffinity(getpid(), sizeof(load_mask), &load_mask);
	load_sched_ok = !read_sched(getpid(), &load_sched);
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
	case SCHED_FIFO:
	case SCHED_RR:
		return 2;
	default:
		return 1;
	}
}

/* IOPRIO_CLASS_NONE (0) and BE (2): the nice-derived best effort. */
static int io_rank(long io)
{
	long class = io >> IOPRIO_CLASS_SHIFT;

	return class == IOPRIO_CLASS_IDLE ? 0 :
	       class == IOPRIO_CLASS_RT	  ? 2 :
					    1;
}

static long io_least(long now, long load)
{
	if (io_rank(now) != io_rank(load))
		return io_rank(now) < io_rank(load) ? now : load;
	if (now >> IOPRIO_CLASS_SHIFT != load >> IOPRIO_CLASS_SHIFT)
		return now;
	/* The same class: a higher level is a lower priority. */
	return (now & IOPRIO_DATA_MASK) >= (load & IOPRIO_DATA_MASK) ? now :
								       load;
}

int syslet__baseline_sched(struct syslet__sched *s)
{
	struct syslet__sched now;
	const struct syslet__sched *l = &load_sched;

	if (read_sched(getpid(), &now)) {
		if (!load_sched_ok)
			return -EPERM;
		*s = *l;
		return 0;
	}
	*s = now;
	if (!load_sched_ok)
		return 0;
	if (policy_rank(l->policy) < policy_rank(now.policy)) {
		s->policy = l->policy;
		s->prio = l->prio;
	} else if (policy_rank(l->policy) == policy_rank(now.policy) &&
		   l->prio < now.prio) {
		s->prio = l->prio;
	}
	if (l->nice > now.nice)
		s->nice = l->nice;
	s->io = io_least(now.io, l->io);
	return 0;
}
