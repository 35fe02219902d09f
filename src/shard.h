/* SPDX-License-Identifier: MIT */
/*
 * The pool's internals shared by pool.c (submit, spawn, drain, fork),
 * worker.c (the worker loop), stats.c and config.c. See pool.c for the
 * design and the ordering rules.
 */
#ifndef SYSLET_SHARD_H
#define SYSLET_SHARD_H

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <urcu/wfcqueue.h>

#include "compiler.h"
#include "job.h"

#define SYSLET__ALIGNED __attribute__((aligned(SYSLET_CACHELINE)))

/*
 * liburcu's queue orders a job's fields before its dequeue with its own
 * barriers, which ThreadSanitizer does not see (the library is not
 * instrumented): tell it about the hand-off.
 */
#if defined(__SANITIZE_THREAD__)
#define SYSLET__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SYSLET__TSAN 1
#endif
#endif
#ifdef SYSLET__TSAN
#include <sanitizer/tsan_interface.h>
#define syslet__handoff_release(p) __tsan_release(p)
#define syslet__handoff_acquire(p) __tsan_acquire(p)
#else
#define syslet__handoff_release(p) ((void)(p))
#define syslet__handoff_acquire(p) ((void)(p))
#endif

/* A spinner of shard c + i (0 < i <= NEAR) takes shard c's calls. */
#define SYSLET__NEAR 4

/* A job untaken this long with no idle worker for it gets one (wake.c). */
#define SYSLET__GROW_NS 20000u

/*
 * A job that only another shard's spinner covers, untaken this long, gets
 * a worker as if nothing covered it: that spinner cannot run (a real-time
 * thread holds its CPU, wake.c). Longer than a CFS period, the longest a
 * runnable thread waits for its CPU among others of its class: 6 ms times
 * 1 + log2(min(CPUs, 8)), 24 ms at most.
 */
#define SYSLET__WATCH_NS 25000000u

/*
 * A shard's want: what the manager was asked, the larger wins (wake.c).
 * WATCH_OWN: a watch asked by a real-time caller that counts on its own
 * CPU's workers, which it may keep off that CPU.
 */
enum {
	SYSLET__WANT_NONE,
	SYSLET__WANT_WATCH,
	SYSLET__WANT_WATCH_OWN,
	SYSLET__WANT_GROW
};

/*
 * syslet_drain()'s slots (pool.c): a call is counted in the slot of the
 * drain epoch at its submit; SLOTS - 1 drains at once each wait only for
 * the calls before them. A power of two (the epoch wraps).
 */
#define SYSLET__DRAIN_SLOTS 8

/*
 * One shard per CPU. Three cache lines: the queue head (dequeuers), the
 * submit side (queue tail and counters written by submitters), the worker
 * side (idle accounting and counters written by workers).
 */
struct syslet__shard {
	struct cds_wfcq_head head SYSLET__ALIGNED; /* lock: dequeue side */

	struct cds_wfcq_tail tail SYSLET__ALIGNED;
	_Atomic long queued; /* enqueued minus dequeued, may dip < 0 */
	/*
	 * Calls that went pending here, by drain slot (pool.c): their sum
	 * is the shard's submitted count (syslet__shard_submitted()).
	 */
	_Atomic uint64_t drain_sub[SYSLET__DRAIN_SLOTS];
	_Atomic uint64_t drain_moved; /* counts moved to another slot */
	_Atomic(struct syslet__job *) freelist; /* freed jobs, via qnode */

	_Atomic int idle SYSLET__ALIGNED; /* workers not running a job */
	_Atomic int spinning; /* 0 or 1: the shard's one spinner */
	_Atomic int sleepers; /* workers in (or entering) futex wait */
	_Atomic uint32_t wake_seq; /* futex word of the sleepers */
	_Atomic int nworkers; /* alive workers homed here */
	_Atomic long spin_ns; /* adaptive spin budget */
	_Atomic uint64_t completed;
	/* By drain slot: calls finished (completed, notifier done) here */
	_Atomic uint64_t drain_fin[SYSLET__DRAIN_SLOTS];
	_Atomic uint64_t spins;
	_Atomic uint64_t sleeps;
	_Atomic uint64_t started;
	_Atomic uint64_t replaced;
	_Atomic uint64_t taken; /* jobs dequeued: the tickets served */
	_Atomic int want; /* SYSLET__WANT_*: asked of the manager (wake.c) */
	_Atomic int held; /* a watch found its workers not running (wake.c) */
	_Atomic int rt_asked; /* a real-time caller asked a watch (wake.c) */
	int cpu;
	/*
	 * The manager's own: asked when and what (want_kind), the ticket,
	 * taken at that time, and how many workers the next look may start
	 * (doubles while the shard stays stuck).
	 */
	uint64_t want_ns, want_mark, want_served;
	long want_step;
	int want_kind;
};

struct syslet__pool {
	struct syslet__shard *shards;
	int nshards;
	_Atomic int nworkers SYSLET__ALIGNED; /* all shards: the cap's count */
	_Atomic int peak;
	_Atomic int drain_waiters;
	_Atomic int notifying; /* workers running a notifier */
	_Atomic int watching; /* calls ran since the manager's last look */
	_Atomic uint32_t drain_seq; /* futex word of syslet_drain() */
	_Atomic uint32_t drain_epoch; /* % SYSLET__DRAIN_SLOTS: a call's slot */
};

extern struct syslet__pool syslet__pool;

/* The configuration (config.c): read with relaxed loads, any time. */
struct syslet__config {
	_Atomic long max_workers;
	_Atomic long min_workers;
	_Atomic long pin;
	_Atomic long spin_ns;
	_Atomic long idle_ms;
	_Atomic long stack_size;
	_Atomic long cancel_signal; /* cancel.c reads it once */
};

const struct syslet__config *syslet__config(void);

static inline long syslet__cfg(const _Atomic long *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* Calls that went pending on @s; @mo: each slot's load. */
static inline uint64_t syslet__shard_submitted(struct syslet__shard *s,
					       memory_order mo)
{
	uint64_t n = 0;
	int i;

	/* A moved count is in two slots: once here. */
	n -= atomic_load_explicit(&s->drain_moved, mo);
	for (i = 0; i < SYSLET__DRAIN_SLOTS; i++)
		n += atomic_load_explicit(&s->drain_sub[i], mo);
	return n;
}

/* pool.c: the pool, set up on first use. NULL if it could not be. */
struct syslet__pool *syslet__pool_get(void);
/* pool.c: the pool if it is set up, else NULL (never sets it up). */
struct syslet__pool *syslet__pool_if_ready(void);

/*
 * wake.c, the wake-up protocol (its invariant is at the top of wake.c).
 * syslet__wake: make sure a worker is awake, or will be, for @s's queue.
 * syslet__wake_busy: a worker of @s leaves idle (and its spinner role if
 * @spinner) to run a job taken from @from; re-reads what it covered.
 * syslet__wake_grow: the manager starts workers for @s's jobs submitted
 * before ticket @mark and still waiting (@served: taken(s) at @mark), at
 * most @max; the number started, or -errno to retry later. @kind: what
 * was asked; a watch's ticket is SYSLET__WATCH_NS old, and the workers
 * that covered it then no longer count.
 */
void syslet__wake(struct syslet__shard *s);
/* A worker of @s runs: @s is not held (wake.c). */
void syslet__wake_ran(struct syslet__shard *s);
/* A thread left real time on CPU @cpu (< 0: any): not held (wake.c). */
void syslet__wake_unmark(int cpu);
void syslet__wake_busy(struct syslet__shard *s, struct syslet__shard *from,
		       bool spinner);
int syslet__wake_grow(struct syslet__shard *s, uint64_t mark, uint64_t served,
		      long max, int kind);

/*
 * manager.c: the pool's own thread (thread creation, growth timer).
 * start: 0 or -errno; poke: look at the shards' want flags; spawn: have
 * the manager create a thread as syslet__thread_spawn() (spawn.h) would.
 */
int syslet__manager_start(void);
void syslet__manager_poke(void);
/* A watch of @cpu's shard is pending: the manager runs on @cpu. */
void syslet__manager_watch(int cpu);
/* The CPU the manager is pinned to (a watch), or -1. */
int syslet__manager_pinned(void);
/* If the manager is pinned to @held, where a spinner we count on runs. */
void syslet__manager_unpin_from(int held, int cpu);
/*
 * If the manager is pinned (a watch), to @cpu, where its asker runs: a
 * growth ask or a spawn must not wait for a CPU a watch chose, which may
 * be held since.
 */
void syslet__manager_follow(int cpu);
/* A look for dead workers is due within SYSLET__RESCAN_NS (once armed). */
void syslet__manager_rescan(void);
/* Calls are queued or syslet_drain() waits: deaths must be looked for. */
bool syslet__manager_needed(struct syslet__pool *p);
int syslet__manager_spawn(void *(*fn)(void *), void *arg, size_t stack_size,
			  int cpu);
void syslet__manager_atfork_child(void);

/* pool.c: after finishing a job: count it and wake syslet_drain(). */
void syslet__pool_finished(struct syslet__shard *s, unsigned int slot);
/*
 * pool.c: queue @job, taken from @s by a worker that died in its call,
 * on @s again: taken back, so that it counts as one job still waiting.
 */
void syslet__pool_requeue(struct syslet__shard *s, struct syslet__job *job);

/* worker.c: start one worker homed on @s; 0 or -errno. */
int syslet__worker_spawn(struct syslet__shard *s);

/* worker.c: move up to @max idle workers of @s to CPU @cpu; how many. */
int syslet__worker_move(struct syslet__shard *s, int cpu, int max);

/*
 * worker.c: find the workers whose thread ended in a notifier and account
 * for them (the manager and syslet_stats() call it).
 */
void syslet__worker_reap(void);

/* worker.c: true on a worker thread. */
bool syslet__worker_self(void);

/* pool.c: a fork child's pool, empty (atfork handler, forked.c). */
void syslet__pool_atfork_child(void);

/* worker.c: forget every worker (fork child). */
void syslet__worker_atfork_child(void);

/* stats.c: forget the inline call counters (fork child). */
void syslet__stats_atfork_child(void);

static inline long syslet__futex(_Atomic uint32_t *uaddr, int op, uint32_t val,
				 const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

static inline uint64_t syslet__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* SYSLET_SHARD_H */
