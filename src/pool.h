/* SPDX-License-Identifier: MIT */
/* The worker pool (pool.c) and the notifier (notify.c). 0 or -errno. */
#ifndef SYSLET_POOL_H
#define SYSLET_POOL_H

#include "compiler.h"
#include "job.h"

/*
 * Queue @job (slot reserved, fields filled) on the current CPU's shard,
 * starting the pool or a worker if needed. -EAGAIN if no worker exists and
 * none can be created: the job is then not queued and stays the caller's.
 */
int syslet__pool_submit(struct syslet__job *job);

/*
 * Run the notifier of @job on its frame, after its completion @c is
 * posted, on the calling worker with every signal blocked.
 */
void syslet__notify_run(struct syslet__job *job, struct syslet_completion *c);

/*
 * A worker's notifier state: allocated with its record (NULL: ENOMEM),
 * made the calling thread's at its start (0 or -errno), left at its end
 * (then the owner frees it: a dead worker's reaper too).
 */
void *syslet__notify_alloc(void);
int syslet__notify_thread_init(void *state);
void syslet__notify_thread_end(void);

/*
 * stats.c: count one inline call of system call @nr (< SYSLET__NR_LIMIT).
 * The thread's own tally, one counter per number (a plain add, no atomic
 * read-modify-write); its first call claims one.
 */
extern SYSLET_TLS _Atomic uint64_t *syslet__inline_n;
void syslet__stats_inline_first(unsigned long nr);

static inline void syslet__stats_inline(unsigned long nr)
{
	_Atomic uint64_t *n = syslet__inline_n;

	if (unlikely(!n)) {
		syslet__stats_inline_first(nr);
		return;
	}
	n += nr;
	atomic_store_explicit(n,
			      atomic_load_explicit(n, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

#endif /* SYSLET_POOL_H */
