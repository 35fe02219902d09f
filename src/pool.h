/* SPDX-License-Identifier: MIT */
/* The worker pool (pool.c) and the notifier (notify.c). 0 or -errno. */
#ifndef SYSLET_POOL_H
#define SYSLET_POOL_H

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
 * Called once by each worker at its start, all signals blocked: installs
 * the SYS_exit trap on the calling thread. 0 or -errno; on failure the
 * worker still works, but a notifier's SYS_exit then really ends it.
 */
int syslet__notify_thread_init(void);

/* stats.c: count a call answered on the caller (for indirect()). */
void syslet__stats_inline(void);

#endif /* SYSLET_POOL_H */
