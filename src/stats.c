/* SPDX-License-Identifier: MIT */
/*
 * syslet_stats(): the pool's counters, summed on read; syslet_stats_syscall():
 * the same by system call number.
 *
 * Shared state: per-shard counters (shard.h), each written with relaxed
 * atomic adds by the submitters or workers of any CPU; the per-thread
 * inline call tallies below (one counter per system call number); the
 * per-number punted, completed and cancelled arrays (relaxed atomic adds
 * by submitters, workers and cancellers: calls that already cost a thread
 * hand-off). Relaxed for the counts: each counter is an
 * independent tally and a snapshot read while calls run is only
 * approximately consistent across counters, as documented in
 * syslet_stats(3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <syslet/syslet.h>

#include "class.h"
#include "compiler.h"
#include "forked.h"
#include "pool.h"
#include "probe.h"
#include "shard.h"
#include "stats.h"

/*
 * Inline calls are counted per thread, so that the count costs indirect()
 * one plain add to a line no other thread writes (a shared atomic add cost
 * about 8 ns here, more than the 5% the inline path may add to a getpid).
 * A thread's first inline call claims a tally: a free one left by a thread
 * that ended (claimed by CAS on owned, acquire), else a new one pushed on
 * the list (CAS, release). Only the owner writes n (relaxed load + store);
 * a tally keeps its count when its thread ends and the next owner counts on
 * from it, so the sum over the list is every inline call ever made. Tallies
 * are never freed: there are at most as many as threads alive at once.
 */
struct tally {
	_Atomic uint64_t n[SYSLET__NR_LIMIT]; /* by system call number */
	_Atomic int owned;
	struct tally *next;
} SYSLET__ALIGNED;

static _Atomic(struct tally *) tallies;
/* The calling thread's tally's count (pool.h); NULL before its first. */
SYSLET_TLS _Atomic uint64_t *syslet__inline_n;
static pthread_key_t tally_key;

/* Runs in the ending thread, which may count again and claim anew. */
static void tally_release(void *t)
{
	syslet__inline_n = NULL;
	/* Release: the owner's last count is in n before another claims it. */
	atomic_store_explicit(&((struct tally *)t)->owned, 0,
			      memory_order_release);
}

static void tally_init(void)
{
	if (pthread_key_create(&tally_key, tally_release))
		tally_key = (pthread_key_t)-1;
}

static struct tally *tally_claim(void)
{
	struct tally *t;
	int free = 0;

	syslet__once(SYSLET__ONCE_TALLY, tally_init);
	/* Acquire: pairs with the release push, for t->next. */
	for (t = atomic_load_explicit(&tallies, memory_order_acquire); t;
	     t = t->next) {
		free = 0;
		/* Acquire: pairs with tally_release, for the count in n. */
		if (atomic_compare_exchange_strong_explicit(
			    &t->owned, &free, 1, memory_order_acquire,
			    memory_order_relaxed))
			break;
	}
	if (!t) {
		t = aligned_alloc(SYSLET_CACHELINE, sizeof(*t));
		if (!t)
			return NULL;
		memset(t, 0, sizeof(*t));
		atomic_init(&t->owned, 1);
		t->next = atomic_load_explicit(&tallies, memory_order_relaxed);
		/* Release: the tally is initialized before it is listed. */
		while (!atomic_compare_exchange_weak_explicit(
			&tallies, &t->next, t, memory_order_release,
			memory_order_relaxed))
			;
	}
	/* Without a key the tally stays owned when the thread ends: a leak. */
	if (tally_key != (pthread_key_t)-1)
		pthread_setspecific(tally_key, t);
	syslet__inline_n = t->n;
	return t;
}

void syslet__stats_inline_first(unsigned long nr)
{
	if (tally_claim())
		syslet__stats_inline(nr);
}

static _Atomic uint64_t punted[SYSLET__NR_LIMIT];
static _Atomic uint64_t completed[SYSLET__NR_LIMIT];
static _Atomic uint64_t cancelled[SYSLET__NR_LIMIT];

static void count(_Atomic uint64_t *a, long nr)
{
	if (nr >= 0 && nr < SYSLET__NR_LIMIT)
		atomic_fetch_add_explicit(&a[nr], 1, memory_order_relaxed);
}

void syslet__stats_punted(long nr, uint64_t cd)
{
	count(punted, nr);
	SYSLET_PROBE2(punt, nr, cd);
}

void syslet__stats_completed(long nr)
{
	count(completed, nr);
}

void syslet__stats_cancelled(long nr)
{
	count(cancelled, nr);
}

/* In a fork child only the forking thread lives: free the others' tallies. */
void syslet__stats_atfork_child(void)
{
	struct tally *t;

	int i;

	for (t = atomic_load_explicit(&tallies, memory_order_relaxed); t;
	     t = t->next) {
		memset(t->n, 0, sizeof(t->n));
		atomic_store_explicit(&t->owned, t->n == syslet__inline_n,
				      memory_order_relaxed);
	}
	for (i = 0; i < SYSLET__NR_LIMIT; i++) {
		atomic_store_explicit(&punted[i], 0, memory_order_relaxed);
		atomic_store_explicit(&completed[i], 0, memory_order_relaxed);
		atomic_store_explicit(&cancelled[i], 0, memory_order_relaxed);
	}
}

static uint64_t ld(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

SYSLET_EXPORT int syslet_stats(struct syslet_stats *st, size_t size)
{
	struct syslet__pool *p;
	struct syslet__shard *s;
	struct tally *t;
	long q;
	int i;

	if (!st || size < sizeof(*st)) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, size);
	/* A child forked without the atfork handlers counts from zero. */
	syslet__forked_check();
	for (t = atomic_load_explicit(&tallies, memory_order_acquire); t;
	     t = t->next)
		for (i = 0; i < SYSLET__NR_LIMIT; i++)
			st->inline_calls += ld(&t->n[i]);
	p = syslet__pool_get();
	if (!p)
		return 0;
	/* Workers dead in a notifier or a call, not looked for yet. */
	syslet__worker_reap();
	for (i = 0; i < p->nshards; i++) {
		s = &p->shards[i];
		st->submitted +=
			syslet__shard_submitted(s, memory_order_relaxed);
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
	/* A worker being started counts now before the peak catches up. */
	if (st->workers_peak < st->workers_now)
		st->workers_peak = st->workers_now;
	st->shards = (uint32_t)(p->nshards < SYSLET_STATS_MAX_SHARDS ?
					p->nshards :
					SYSLET_STATS_MAX_SHARDS);
	return 0;
}

SYSLET_EXPORT int syslet_stats_syscall(long nr, struct syslet_syscall_stats *st,
				       size_t size)
{
	struct tally *t;

	if (!st || size < sizeof(*st) || nr < 0 || nr >= SYSLET__NR_LIMIT) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, size);
	/* Acquire: pairs with tally_claim()'s release push. */
	for (t = atomic_load_explicit(&tallies, memory_order_acquire); t;
	     t = t->next)
		st->inline_calls += ld(&t->n[nr]);
	st->punted = ld(&punted[nr]);
	st->completed = ld(&completed[nr]);
	st->cancelled = ld(&cancelled[nr]);
	return 0;
}
