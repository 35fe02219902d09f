/* SPDX-License-Identifier: MIT */
/*
 * syslet_stats(): the pool's counters, summed on read.
 *
 * Shared state: per-shard counters (shard.h), each written with relaxed
 * atomic adds by the submitters or workers of any CPU, and the inline call
 * counters below, one cache line per CPU slot, bumped by indirect() on the
 * caller. Relaxed everywhere: each counter is an independent tally and a
 * snapshot read while calls run is only approximately consistent across
 * counters, as documented in syslet_stats(3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "pool.h"
#include "shard.h"

static struct {
	_Atomic uint64_t n SYSLET__ALIGNED;
} inline_calls[SYSLET_STATS_MAX_SHARDS];

void syslet__stats_inline(void)
{
	int cpu = sched_getcpu();

	atomic_fetch_add_explicit(
		&inline_calls[(unsigned int)cpu % SYSLET_STATS_MAX_SHARDS].n, 1,
		memory_order_relaxed);
}

void syslet__stats_atfork_child(void)
{
	int i;

	for (i = 0; i < SYSLET_STATS_MAX_SHARDS; i++)
		atomic_store_explicit(&inline_calls[i].n, 0,
				      memory_order_relaxed);
}

static uint64_t ld(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

SYSLET_EXPORT int syslet_stats(struct syslet_stats *st, size_t size)
{
	struct syslet__pool *p;
	struct syslet__shard *s;
	long q;
	int i;

	if (!st || size < sizeof(*st)) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, size);
	for (i = 0; i < SYSLET_STATS_MAX_SHARDS; i++)
		st->inline_calls += ld(&inline_calls[i].n);
	p = syslet__pool_get();
	if (!p)
		return 0;
	for (i = 0; i < p->nshards; i++) {
		s = &p->shards[i];
		st->submitted += ld(&s->submitted);
		st->completed += ld(&s->completed);
		st->workers_started += ld(&s->started);
		st->workers_replaced += ld(&s->replaced);
		st->spins += ld(&s->spins);
		st->sleeps += ld(&s->sleeps);
		q = atomic_load_explicit(&s->queued, memory_order_relaxed);
		if (i < SYSLET_STATS_MAX_SHARDS)
			st->queue_depth[i] = q > 0 ? (uint32_t)q : 0;
	}
	st->workers_now = (uint32_t)atomic_load_explicit(&p->nworkers,
							 memory_order_relaxed);
	st->workers_peak =
		(uint32_t)atomic_load_explicit(&p->peak, memory_order_relaxed);
	st->shards = (uint32_t)(p->nshards < SYSLET_STATS_MAX_SHARDS ?
					p->nshards :
					SYSLET_STATS_MAX_SHARDS);
	return 0;
}
