/* SPDX-License-Identifier: MIT */
/*
 * stats.c: the per-system-call counters behind syslet_stats_syscall(3)
 * (the inline one is in pool.h, on the inline path). @nr is below
 * SYSLET__NR_LIMIT: indirect() refuses the others before counting.
 */
#ifndef SYSLET_STATS_H
#define SYSLET_STATS_H

#include <stdint.h>

/* indirect(): call @nr (caller_data @cd) went to a worker. */
void syslet__stats_punted(long nr, uint64_t cd);

/* A worker: the completion of a call @nr is about to be posted. */
void syslet__stats_completed(long nr);

/* syslet_cancel(): a call @nr was cancelled (queued or running). */
void syslet__stats_cancelled(long nr);

#endif /* SYSLET_STATS_H */
