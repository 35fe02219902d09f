/* SPDX-License-Identifier: MIT */
/* The process baseline of the library's threads (baseline.c). */
#ifndef SYSLET_BASELINE_H
#define SYSLET_BASELINE_H

#include <linux/ioprio.h>
#include <sched.h>

/* Linux 6.5's headers: the level's 3 bits (hints above them). */
#ifndef IOPRIO_LEVEL_MASK
#define IOPRIO_LEVEL_MASK 7
#endif

/* What a thread of the library takes of scheduling (baseline.c). */
struct syslet__sched {
	int policy; /* without SCHED_RESET_ON_FORK */
	int prio; /* sched_priority */
	int nice;
	long io; /* ioprio_get()'s value */
};

/*
 * The CPU-affinity baseline of the library's threads: the leader's mask
 * at load united with its mask now. 0 or -EPERM.
 */
int syslet__baseline_mask(cpu_set_t *set);

/*
 * The scheduling baseline: of the leader's state at load and its state
 * now, in each facet the less demanding. 0 or -EPERM.
 */
int syslet__baseline_sched(struct syslet__sched *s);

/*
 * In a fork child, at its reset (forked.c): its load-time scheduling
 * reading becomes the less demanding of its parent's and its leader's now.
 */
void syslet__baseline_forked(void);

#endif
