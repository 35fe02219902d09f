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

/* Some thread's policy may have changed: every thread reads its own again. */
void syslet__policy_changed(void);

#endif /* SYSLET_POLICY_H */
