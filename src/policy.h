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

/* Thread @tid's policy (0: the caller's), or -1 if the kernel does not say. */
int syslet__policy_of(long tid);

/* Whether policy @pol (-1: unknown) may be real-time. */
bool syslet__policy_maybe_rt(int pol);

/* What a policy change let go (syslet__policy_changed()), else a CPU. */
#define SYSLET__FREED_NONE (-2) /* no thread left real time */
#define SYSLET__FREED_ANY (-1) /* one did, on a CPU not known */

/*
 * Some thread's policy changed: every thread reads its own again; the
 * shard of CPU @freed, or every shard, is no longer marked held.
 */
void syslet__policy_changed(int freed);

/*
 * What a change of a thread's policy from @before to @now (-1: unknown)
 * let go: the caller's CPU if @self.
 */
int syslet__policy_freed(bool self, int before, int now);

/* Thread @tid's policy changed from @before (syslet__policy_of()). */
void syslet__policy_after(long tid, int before);

#endif /* SYSLET_POLICY_H */
