/* SPDX-License-Identifier: MIT */
/*
 * The worker pool: submit, wake-ups, growth, syslet_drain(), fork.
 *
 * Design. One shard per CPU (struct syslet__shard, shard.h). A job goes to
 * the shard of the CPU it is submitted on: a wait-free enqueue on the
 * shard's liburcu queue (cds_wfcq_enqueue), then a seq_cst increment of
 * shard->queued. Workers are homed on a shard and pinned to its CPU
 * (worker.c); they dequeue under the queue's own dequeue mutex, which only
 * dequeuers take: nothing on the submit or completion path locks.
 *
 * Waking, helping and growing follow one protocol, in wake.c, with its
 * invariant and racing pairs: after queueing, submit calls syslet__wake().
 * Workers that die are noticed by the manager thread (manager.c).
 *
 * The first submit of the pool (or of a fork child) starts the manager and
 * a worker before queueing (one such submitter at a time: first_lock), and
 * fails with -EAGAIN, the job untouched, if it cannot; the pool's last
 * worker never retires, so a later submit always has one.
 * Submit also checks the submitter's credentials (creds.c), before it may
 * start the pool.
 *
 * syslet_drain() waits for the calls that went pending before it, not for
 * those submitted after it began (a call that waits for ever, submitted by
 * another thread meanwhile, would hold it for ever). A call is counted at
 * submit in the slot of pool->drain_epoch (epoch % SYSLET__DRAIN_SLOTS);
 * per shard and per slot, drain_sub counts the calls that went pending
 * (submitters) and drain_fin those finished (workers: after the notifier,
 * or, without one, once the completion is visible and before the post
 * wakes anyone, worker.c). Invariant: a flip of the epoch from n to n + 1
 * happens only when slot (n + 1) % SLOTS has no call pending, so a slot
 * re-used by an epoch holds no call of an older one.
 *
 * A drain reads the epoch e at its start (its calls: epochs <= e), makes
 * sure the epoch moves past e (it flips e to e + 1 itself once slot e + 1
 * is empty, unless another drain flipped first: either way the calls of
 * e + 1 on came after its start), then waits until every slot is empty or
 * was re-used by an epoch after e (emptied first: the invariant). Drains
 * run at once, each with its own e: the calls submitted after one began
 * hold it only where its flip had to wait for slot e + 1, i.e. a call
 * from SLOTS - 1 flips ago is still pending (it waits for that one
 * anyway): up to SLOTS - 1 drains at once keep apart their calls exactly.
 *
 * Stragglers: a submitter that read the epoch and was held off the CPU
 * over a flip before it counted would land in the slot of an epoch that
 * a drain begun meanwhile waits for (its flip passed it), or, SLOTS - 1
 * flips later, in one re-used under it. Dekker: the flip reads the
 * counters (seq_cst) before its CAS of the epoch, the submitter adds its
 * count (seq_cst) before it reads the epoch again; if that moved, it
 * moves its count to the slot of the epoch now (drain_fin of the old
 * one, as a finish), and checks again: a call is pending in the epoch
 * that was current at its count.
 *
 * Wake-ups: drain_fin is bumped seq_cst before reading drain_waiters, a
 * flip's CAS before reading it, drain_waiters bumped seq_cst before
 * reading the counters or the epoch, so a drainer never sleeps through
 * the last finish or a re-use (Dekker again); it sleeps on drain_seq.
 *
 * Jobs are recycled through a per-shard free list (push by CAS, take all
 * by exchange: no ABA since nobody pops a single node) feeding a
 * per-thread cache, given back to a free list when the thread ends: no
 * malloc in steady state.
 *
 * fork(): the child handler rebuilds every shard empty: queued jobs, the
 * parent's workers and their counters stay in the parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "creds.h"
#include "fault.h"
#include "forked.h"
#include "pool.h"
#include "shard.h"

struct syslet__pool syslet__pool;
static _Atomic(struct syslet__pool *) ready;
static SYSLET_TLS struct syslet__job *cache;
static SYSLET_TLS bool cache_keyed;
static pthread_key_t cache_key; /* gives a thread's cache back */

static void shard_init(struct syslet__shard *s, int cpu)
{
	int i;

	cds_wfcq_init(&s->head, &s->tail);
	atomic_init(&s->queued, 0);
	atomic_init(&s->idle, 0);
	atomic_init(&s->spinning, 0);
	atomic_init(&s->sleepers, 0);
	atomic_init(&s->wake_seq, 0);
	atomic_init(&s->nworkers, 0);
	atomic_init(&s->spin_ns, syslet__cfg(&syslet__config()->spin_ns));
	atomic_init(&s->completed, 0);
	atomic_init(&s->drain_moved, 0);
	for (i = 0; i < SYSLET__DRAIN_SLOTS; i++) {
		atomic_init(&s->drain_sub[i], 0);
		atomic_init(&s->drain_fin[i], 0);
	}
	atomic_init(&s->spins, 0);
	atomic_init(&s->sleeps, 0);
	atomic_init(&s->started, 0);
	atomic_init(&s->replaced, 0);
	atomic_init(&s->taken, 0);
	atomic_init(&s->want, SYSLET__WANT_NONE);
	atomic_init(&s->held, 0);
	s->want_ns = 0;
	s->want_mark = 0;
	s->want_served = 0;
	s->want_step = 1;
	s->want_kind = SYSLET__WANT_NONE;
	s->cpu = cpu;
}

/*
 * The pool's first worker, started by one submitter at a time (first_lock)
 * and known started by first_ok, set once a start succeeded: nworkers
 * counts a start before its thread exists, so a racing first submit that
 * went by it would queue its job behind a start that may still fail, and
 * be left with no worker at all. Reset in a fork child.
 */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int first_ok;

static void reset(struct syslet__pool *p)
{
	int i;

	for (i = 0; i < p->nshards; i++)
		shard_init(&p->shards[i], i);
	atomic_init(&p->nworkers, 0);
	atomic_init(&p->peak, 0);
	atomic_init(&p->drain_waiters, 0);
	atomic_init(&p->notifying, 0);
	atomic_init(&p->watching, 0);
	atomic_init(&p->drain_seq, 0);
	atomic_init(&p->drain_epoch, 0);
}

void syslet__pool_atfork_child(void)
{
	/* Relaxed: a fork child runs this before any thread of its own. */
	if (!atomic_load_explicit(&ready, memory_order_relaxed))
		return; /* never set up: nothing of the parent's here */
	/* Free lists hold free jobs only: reset() keeps them. */
	reset(&syslet__pool);
	pthread_mutex_init(&first_lock, NULL);
	atomic_init(&first_ok, 0);
	syslet__worker_atfork_child();
	syslet__manager_atfork_child();
	syslet__stats_atfork_child();
	syslet__ring_atfork_child();
}

static struct syslet__shard *shard_here(struct syslet__pool *p);

/* Push the chain @first .. @last on @s's free list. */
static void push(struct syslet__shard *s, struct syslet__job *first,
		 struct syslet__job *last)
{
	struct syslet__job *old =
		atomic_load_explicit(&s->freelist, memory_order_relaxed);

	do
		last->qnode.next = old ? &old->qnode : NULL;
	/* Release: the links are written before the jobs are found. */
	while (!atomic_compare_exchange_weak_explicit(&s->freelist, &old, first,
						      memory_order_release,
						      memory_order_relaxed));
}

static struct syslet__job *next_job(struct syslet__job *job)
{
	return job->qnode.next ? caa_container_of(job->qnode.next,
						  struct syslet__job, qnode) :
				 NULL;
}

/* A thread ends: its cached jobs go back to a free list. */
static void give_back(void *arg)
{
	struct syslet__job *last = cache;

	(void)arg;
	if (!last)
		return;
	while (next_job(last))
		last = next_job(last);
	push(shard_here(&syslet__pool), cache, last);
	cache = NULL;
}

static void init(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	struct syslet__shard *sh;

	if (n < 1)
		n = 1;
	if (posix_memalign((void **)&sh, SYSLET_CACHELINE,
			   (size_t)n * sizeof(*sh)))
		return;
	memset(sh, 0, (size_t)n * sizeof(*sh));
	syslet__pool.shards = sh;
	syslet__pool.nshards = (int)n;
	reset(&syslet__pool);
	if (pthread_key_create(&cache_key, give_back)) {
		free(sh);
		return;
	}
	/* Release: the shards are initialised before anyone finds them. */
	atomic_store_explicit(&ready, &syslet__pool, memory_order_release);
}

struct syslet__pool *syslet__pool_if_ready(void)
{
	/* Acquire: as in syslet__pool_get(). */
	return atomic_load_explicit(&ready, memory_order_acquire);
}

struct syslet__pool *syslet__pool_get(void)
{
	/* Acquire: pairs with init()'s release of the shards. */
	struct syslet__pool *p =
		atomic_load_explicit(&ready, memory_order_acquire);

	if (likely(p))
		return p;
	syslet__once(SYSLET__ONCE_POOL, init);
	/* Acquire: as above, after another thread ran init(). */
	return atomic_load_explicit(&ready, memory_order_acquire);
}

static struct syslet__shard *shard_here(struct syslet__pool *p)
{
	int cpu = sched_getcpu();

	return &p->shards[cpu > 0 ? cpu % p->nshards : 0];
}

struct syslet__job *syslet__job_alloc(void)
{
	struct syslet__pool *p = syslet__pool_get();
	struct syslet__job *job = cache;

	struct syslet__shard *here;
	int i;

	if (!job && p) {
		here = shard_here(p);
		/*
		 * Its own CPU's list first, then the others': a worker frees a
		 * job on its CPU's list, which a submitter that stays on
		 * another CPU (stolen jobs) would otherwise never take back.
		 */
		for (i = 0; !job && i < p->nshards; i++)
			/* Acquire: the links were written before the push. */
			job = atomic_exchange_explicit(
				&p->shards[(here->cpu + i) % p->nshards]
					 .freelist,
				NULL, memory_order_acquire);
	}
	if (!job) {
		if (syslet__fault(SYSLET__FAULT_ALLOC))
			return NULL;
		return calloc(1, sizeof(*job));
	}
	cache = next_job(job);
	if (cache && !cache_keyed)
		cache_keyed = !pthread_setspecific(cache_key, &cache_keyed);
	memset(job, 0, sizeof(*job));
	return job;
}

void syslet__job_free(struct syslet__job *job)
{
	struct syslet__pool *p = syslet__pool_get();

	if (!p)
		free(job);
	else
		push(shard_here(p), job, job);
}

/* 0, or -EAGAIN: no worker could be started (indirect(3)). */
static int start_first(struct syslet__shard *s)
{
	int ret = 0, cs;

	/*
	 * No thread cancellation inside: the start reaches cancellation
	 * points (spawn.c's pthread_join() of its probe) with first_lock
	 * and the manager's lock held, which a cancelled submitter would
	 * keep for ever.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	pthread_mutex_lock(&first_lock);
	/* Relaxed: written under the lock. */
	if (!atomic_load_explicit(&first_ok, memory_order_relaxed)) {
		ret = syslet__manager_start();
		if (!ret)
			ret = syslet__worker_spawn(s);
		atomic_store_explicit(&first_ok, !ret, memory_order_relaxed);
	}
	pthread_mutex_unlock(&first_lock);
	pthread_setcancelstate(cs, NULL);
	return ret ? -EAGAIN : 0;
}

/*
 * Count a call going pending on @s in the slot of the drain epoch: its
 * slot. A straggler moves (top of file).
 */
static unsigned int drain_count(struct syslet__pool *p, struct syslet__shard *s)
{
	/* Relaxed: a stale epoch is an older one, checked below. */
	uint32_t e =
		atomic_load_explicit(&p->drain_epoch, memory_order_relaxed);
	unsigned int slot = e % SYSLET__DRAIN_SLOTS;

	/*
	 * Seq_cst, the add and the read after it: Dekker with a flip's
	 * read of the counters before its CAS. The queue hand-off orders
	 * the count before the job's finish.
	 */
	atomic_fetch_add(&s->drain_sub[slot], 1);
	for (;;) {
		uint32_t now = atomic_load(&p->drain_epoch);

		if (likely(now == e))
			return slot;
		/*
		 * A flip came between the read and the count: the slot may be
		 * re-used without it, or be one a drain begun since waits
		 * for (the call is pending only after this check).
		 */
		syslet__pool_finished(s, slot);
		e = now;
		slot = e % SYSLET__DRAIN_SLOTS;
		atomic_fetch_add(&s->drain_sub[slot], 1);
		/* Relaxed: only syslet__shard_submitted() reads it. */
		atomic_fetch_add_explicit(&s->drain_moved, 1,
					  memory_order_relaxed);
	}
}

int syslet__pool_submit(struct syslet__job *job)
{
	struct syslet__pool *p = syslet__pool_get();
	struct syslet__shard *s;
	long g;
	int ret;

	if (unlikely(!p))
		return -ENOMEM;
	/* Before the start: the pool's threads inherit this thread's. */
	g = syslet__creds_submit();
	if (unlikely(g < 0))
		return (int)g;
	s = shard_here(p);
	/*
	 * Relaxed: a stale 0 only takes the lock. Once started, the pool
	 * keeps a worker: the last never retires, the manager replaces the
	 * dead.
	 */
	if (unlikely(!atomic_load_explicit(&first_ok, memory_order_relaxed))) {
		ret = start_first(s);
		if (ret)
			return ret;
	}
	job->creds = (unsigned long)g;
	cds_wfcq_node_init(&job->qnode);
	job->slot = drain_count(p, s);
	syslet__handoff_release(job);
	cds_wfcq_enqueue(&s->head, &s->tail, &job->qnode);
	/* Seq_cst: P1 of wake.c. */
	atomic_fetch_add(&s->queued, 1);
	syslet__wake(s);
	return 0;
}

void syslet__pool_requeue(struct syslet__shard *s, struct syslet__job *job)
{
	cds_wfcq_node_init(&job->qnode);
	syslet__handoff_release(job);
	/* Relaxed: as take()'s. */
	atomic_fetch_sub_explicit(&s->taken, 1, memory_order_relaxed);
	cds_wfcq_enqueue(&s->head, &s->tail, &job->qnode);
	/* Seq_cst: P1 of wake.c. */
	atomic_fetch_add(&s->queued, 1);
	syslet__wake(s);
}

static void poke_drainers(struct syslet__pool *p)
{
	/* Seq_cst: a sleeper's read of drain_seq comes before its check. */
	atomic_fetch_add(&p->drain_seq, 1);
	syslet__futex(&p->drain_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

void syslet__pool_finished(struct syslet__shard *s, unsigned int slot)
{
	struct syslet__pool *p = &syslet__pool;

	/* Seq_cst: Dekker with syslet_drain()'s drain_waiters++. */
	atomic_fetch_add(&s->drain_fin[slot], 1);
	if (atomic_load(&p->drain_waiters))
		poke_drainers(p);
}

/* The calls of @slot pending. */
static uint64_t pending(struct syslet__pool *p, unsigned int slot)
{
	uint64_t f = 0, sub = 0;
	int i;

	/*
	 * Finished first, then submitted (seq_cst): every finish seen has
	 * its submit seen, so 0 means all submitted before the call ended.
	 */
	for (i = 0; i < p->nshards; i++)
		f += atomic_load(&p->shards[i].drain_fin[slot]);
	for (i = 0; i < p->nshards; i++)
		sub += atomic_load(&p->shards[i].drain_sub[slot]);
	return sub - f;
}

/* drain_wait()'s aims for a drain of epoch @e. */
enum { PAST, DONE };

/*
 * PAST: the epoch moved past @e, flipped here if slot @e + 1 is empty.
 * DONE: every slot empty or re-used after @e.
 */
static bool reached(struct syslet__pool *p, uint32_t e, int what)
{
	/* Seq_cst: after drain_waiters++ and the read of drain_seq. */
	uint32_t now = atomic_load(&p->drain_epoch), d;

	if (what == PAST) {
		if (now != e)
			return true;
		if (pending(p, (e + 1) % SYSLET__DRAIN_SLOTS))
			return false;
		/*
		 * Seq_cst: after the counters' reads (a straggler's Dekker),
		 * before the read of drain_waiters: a drain waiting for a
		 * slot this re-uses is poked. Failed: another drain flipped.
		 */
		if (atomic_compare_exchange_strong(&p->drain_epoch, &e,
						   e + 1) &&
		    atomic_load(&p->drain_waiters) > 1)
			poke_drainers(p);
		return true;
	}
	/* Slot (e + d) % SLOTS was re-used by epoch e + d if that is <= now. */
	for (d = 1; d <= SYSLET__DRAIN_SLOTS; d++)
		if (now - e < d && pending(p, (e + d) % SYSLET__DRAIN_SLOTS))
			return false;
	return true;
}

/*
 * Sleep on drain_seq until @what is reached; 0 or EINTR. The sleep has an
 * absolute deadline (about 34 years away), so the kernel answers EINTR to
 * every handler, SA_RESTART or not, as for syslet_ring_wait() (wait.c).
 */
static int drain_wait(struct syslet__pool *p, uint32_t e, int what)
{
	struct timespec far;
	uint32_t seq;

	clock_gettime(CLOCK_MONOTONIC, &far);
	far.tv_sec += 1L << 30;
	for (;;) {
		/* Seq_cst: read before the check (see poke_drainers()). */
		seq = atomic_load(&p->drain_seq);
		if (reached(p, e, what))
			return 0;
		if (syscall(SYS_futex, &p->drain_seq, FUTEX_WAIT_BITSET_PRIVATE,
			    seq, &far, NULL, FUTEX_BITSET_MATCH_ANY) &&
		    errno == EINTR)
			return EINTR;
	}
}

SYSLET_EXPORT int syslet_drain(void)
{
	struct syslet__pool *p =
		atomic_load_explicit(&ready, memory_order_acquire);
	uint32_t e;
	int ret, cs;

	/* Acquire above: the shards are set up if the pool is. */
	if (!p)
		return 0;
	/* A child forked without the atfork handlers: not the parent's. */
	syslet__forked_check();
	if (syslet__worker_self()) {
		errno = EDEADLK; /* it would wait for its own job */
		return -1;
	}
	/*
	 * No thread cancellation inside (its waits are raw futex calls, no
	 * cancellation points): an asynchronous one would leave
	 * drain_waiters counted.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	atomic_fetch_add(&p->drain_waiters, 1);
	/*
	 * A worker that died in a notifier holds a job: have it looked for.
	 * Seq_cst: a Dekker pair with notify()'s notifying++ (worker.c),
	 * which pokes if it sees drain_waiters; no notifier, no poke.
	 */
	if (atomic_load(&p->notifying))
		syslet__manager_poke();
	/* Seq_cst: after drain_waiters++ (a flip's poke). */
	e = atomic_load(&p->drain_epoch);
	ret = drain_wait(p, e, PAST);
	if (!ret)
		ret = drain_wait(p, e, DONE);
	atomic_fetch_sub(&p->drain_waiters, 1);
	pthread_setcancelstate(cs, NULL);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}
