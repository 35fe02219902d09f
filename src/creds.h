/* SPDX-License-Identifier: MIT */
/*
 * Credentials and confinement by construction (SPEC 5.1): the pool's
 * threads hold the process's credentials and never change them; a punted
 * call runs on one only if its submitter equals them. Design: creds.c.
 */
#ifndef SYSLET_CREDS_H
#define SYSLET_CREDS_H

#include <stdbool.h>

/*
 * Submitter, before the pool is started or the call queued: the
 * generation to record in the job (> 0), or -EPERM if this thread differs
 * from the pool's threads (or a set*id broadcast is under way): the call
 * must not go to a worker, nor this thread start the pool.
 */
long syslet__creds_submit(void);

/*
 * Worker, just before a job's call: whether a job recorded at generation
 * @g may run (no set*id broadcast began since it was submitted).
 */
bool syslet__creds_current(unsigned long g);

/*
 * System call @nr(@a) made on this thread and its answer, noted if it
 * changed this thread's credentials or confinement alone.
 */
long syslet__creds_call(long nr, const long *a);

/* A glibc set*id broadcast (every thread) begins (@begin) or ends. */
void syslet__creds_broadcast(bool begin);

/* A fork child: its only thread is the reference until the pool runs. */
void syslet__creds_forked(void);

#endif /* SYSLET_CREDS_H */
