/* SPDX-License-Identifier: MIT */
/*
 * STUB (issue #3 replaces it): a detached thread per job, so that indirect()
 * and the ring can be developed against the pool API of pool.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "pool.h"

static _Atomic long pending;

struct syslet__job *syslet__job_alloc(void)
{
	return calloc(1, sizeof(struct syslet__job));
}

void syslet__job_free(struct syslet__job *job)
{
	free(job);
}

static void *worker(void *arg)
{
	struct syslet__job *job = arg;
	struct syslet_ring *ring = syslet__ring_of(job->rs);

	job->cnode.status = (uint64_t)syslet__job_exec(job);
	syslet__ring_post(job->rs, &job->cnode);
	if (job->ip)
		syslet__notify_run(job, &ring->comp[job->cnode.index &
						    (ring->elements - 1)]);
	syslet__job_free(job);
	atomic_fetch_sub(&pending, 1);
	return NULL;
}

int syslet__pool_submit(struct syslet__job *job)
{
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	atomic_fetch_add(&pending, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &attr, worker, job);
	pthread_attr_destroy(&attr);
	if (ret) {
		atomic_fetch_sub(&pending, 1);
		return -ret;
	}
	return 0;
}

SYSLET_EXPORT int syslet_drain(void)
{
	while (atomic_load(&pending))
		sched_yield();
	return 0;
}

SYSLET_EXPORT int syslet_config_set(enum syslet_option opt, long value)
{
	(void)opt;
	(void)value;
	errno = EINVAL;
	return -1;
}

SYSLET_EXPORT long syslet_config_get(enum syslet_option opt)
{
	(void)opt;
	errno = EINVAL;
	return -1;
}

SYSLET_EXPORT int syslet_stats(struct syslet_stats *st, size_t size)
{
	if (!st || size < sizeof(*st)) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, sizeof(*st));
	return 0;
}
