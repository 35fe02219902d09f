/* SPDX-License-Identifier: MIT */
/*
 * The fixed baseline (SPEC 5): the state every thread of the library (the
 * manager, a worker) sets itself to when it starts, whichever program
 * thread caused it: SCHED_OTHER, I/O priority none (spawn.c sets those),
 * and the process's nice value and CPU affinity as they were when the
 * library was loaded, which this file keeps. No "less demanding of two
 * readings" rule: a leader that later makes itself real time, calls
 * nice(2) or pins itself (a real-time control loop on one CPU) changes
 * nothing here, and a process started real time (chrt(1)) gets SCHED_OTHER
 * workers.
 *
 * "When loaded" is the constructor: at start-up for a program linked
 * with -lsyslet (nice(1), taskset(1), the parent's), at dlopen(3)
 * otherwise; the thread-group leader's, since dlopen() may run on a thread
 * that narrowed its own mask. Those are three system calls at load
 * (getpid() too), against SPEC 7 (syslet(7) BUGS, test load_quiet):
 * the load-time mask cannot be read later, and a pool that took the mask
 * of its first caller's time would queue every worker behind a leader that
 * pinned itself to one CPU. A fork child keeps its parent's reading (the
 * child's leader is the thread that forked, perhaps a pinned notifier). A
 * reading that failed (none does on Linux) is made again when asked.
 *
 * Shared state: the readings, written by the constructor before any
 * thread of the library exists, then only read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <unistd.h>

#include "baseline.h"

static int nice_value;
static bool nice_ok;
static cpu_set_t mask;
static bool mask_ok;

__attribute__((constructor)) static void read_at_load(void)
{
	pid_t leader = getpid();
	int e = errno;

	mask_ok = !sched_getaffinity(leader, sizeof(mask), &mask);
	errno = 0;
	nice_value = getpriority(PRIO_PROCESS, (id_t)leader);
	nice_ok = nice_value != -1 || !errno;
	errno = e;
}

int syslet__baseline_mask(cpu_set_t *set)
{
	if (mask_ok) {
		*set = mask;
		return 0;
	}
	return sched_getaffinity(getpid(), sizeof(*set), set) ? -EPERM : 0;
}

int syslet__baseline_nice(void)
{
	int e = errno, n;

	if (nice_ok)
		return nice_value;
	errno = 0;
	n = getpriority(PRIO_PROCESS, (id_t)getpid());
	if (n == -1 && errno)
		n = 0;
	errno = e;
	return n;
}
