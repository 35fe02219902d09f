/* SPDX-License-Identifier: MIT */
/*
 * Whether the calling thread runs a real-time scheduling policy, without
 * a system call per question. Design and limits: policy.c.
 */
#ifndef SYSLET_POLICY_H
#define SYSLET_POLICY_H

#include <stdbool.h>

/* SCHED_FIFO, SCHED_RR or SCHED_DEADLINE, as last seen (policy.c). */
bool syslet__policy_realtime(void);

/* The same, asked of the kernel (a system call), and noted. */
bool syslet__policy_reread(void);

/*
 * Thread @tid's policy (0: the caller's), or -1 if the kernel does not say
 * or @tid < 0 (a thread whose id is unknown).
 */
int syslet__policy_of(long tid);

/* What a policy change let go (syslet__policy_changed()), else a CPU. */
#define SYSLET__FREED_NONE (-2) /* no thread left real time */
#define SYSLET__FREED_ANY (-1) /* one did, on a CPU not known */

/*
 * Some thread's policy changed: every thread reads its own again; the
 * shard of CPU @freed, or every shard, is no longer marked held.
 */
void syslet__policy_changed(int freed);

/*
 * Thread @tid's policy (-1: a thread whose id is unknown) changed from
 * @before (syslet__policy_of()), if @done (the call succeeded).
 */
void syslet__policy_after(long tid, int before, bool done);

/*
 * System call @nr (SYS_sched_setscheduler or SYS_sched_setattr, on the
 * thread a[0]) with @a, and syslet__policy_after(): its raw answer.
 */
long syslet__policy_sys(long nr, const long *a);

#endif /* SYSLET_POLICY_H */
