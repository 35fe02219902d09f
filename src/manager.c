/* SPDX-License-Identifier: MIT */
/*
 * The manager: one thread per process, owned by the pool, that does what
 * a program thread must not or cannot:
 *   - creation: a program thread never creates a library thread itself
 *     (it would inherit its state, spawn.c); it queues a request and
 *     waits for the manager's pthread_create() answer.
 *   - growth: a submitter that found no worker for its job sets want(s)
 *     and pokes the manager (once until it is cleared); the manager notes
 *     submitted(s) as the job's ticket, waits SYSLET__GROW_NS, then lets
 *     syslet__wake_grow() (wake.c) start a worker per job of that ticket
 *     still untaken with no idle worker for it, at most want_step of
 *     them (doubled while the shard stays stuck). A watch (only another
 *     shard's spinner covered the job) waits SYSLET__WATCH_NS instead,
 *     and becomes a growth request, due at once, if one is asked
 *     meanwhile. A start that fails below the cap (RLIMIT_NPROC, ENOMEM)
 *     is tried again every SYSLET__RETRY_NS while want(s) stays set.
 *   - deaths: each look also reaps the workers whose thread ended in a
 *     notifier or in a call (worker.c's robust mutex). While workers run
 *     notifiers (notifying > 0) it looks again every SYSLET__RESCAN_NS
 *     while calls are queued or syslet_drain() waits (a submit at the cap
 *     and a drain poke it, wake.c, pool.c): only then does a dead
 *     notifier hold anything up (syslet_stats() reaps too, so that its
 *     counts are true). While calls run (watching, P7 of wake.c) it looks
 *     every SYSLET__CALLS_NS: a call whose worker was killed in it
 *     (seccomp's SECCOMP_RET_KILL_THREAD) is waited for by whoever waits
 *     for its completion, which the library may not see (a program that
 *     reads the ring's head itself).
 * Its CPU: a watch exists because a thread of the program may hold a CPU
 * for good (SCHED_FIFO), and the manager, like any thread, can be queued
 * behind it: its timer's wake-up is queued on the CPU it slept on, and a
 * poke's where the scheduler likes. So while a watch is pending it is
 * pinned (pin) to the CPU of the shard that asked (the asker runs there,
 * or the manager's own look re-asked): the asker moves it there at once
 * (syslet__manager_watch(), also off a held CPU), and a submit that
 * counts on a worker of the CPU the manager is pinned to moves it to its
 * own (syslet__manager_unpin_from(): the watch pending from before may be
 * that worker's shard's, and that CPU the held one). With no watch
 * pending the manager unpins itself (the baseline mask, spawn.c). No lock:
 * a worker that asks may itself be preempted by the real-time thread, and
 * a lock it held would hold the manager too. The manager settles its own
 * affinity on pin after each look, and again whenever an asker moved it
 * (moves), so the crossing of two askers' moves does not stay.
 * It holds no descriptor and handles no signal: it sleeps on a futex
 * (seq) with the nearest deadline as its timeout, so that nothing the
 * program does to its descriptors (close_range(3, ~0U) after the pool
 * started) or its signals can stop it or receive its writes.
 * It starts with the pool (from a program thread: spawn.c checks that it
 * is neutral) and lives as long as the process.
 *
 * Shared state: mgr.queue and mgr.up under mgr.lock; mgr.seq, bumped
 * (seq_cst) after a request is queued or a want set, read (seq_cst)
 * before the manager looks at the queue and the wants, so that neither
 * waits for a sleeping manager; each request's done (release by the
 * manager, acquire by the asker, who owns the request); a shard's want
 * (wake.c's protocol, seq_cst); want_ns / want_kind / want_mark /
 * want_served, which only the manager thread touches. fork(): the child has no manager
 * (atfork handler, or forked.c after a fork without handlers); its first
 * worker's start brings one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "baseline.h"
#include "shard.h"
#include "spawn.h"

#define SYSLET__RETRY_NS 10000000u /* after a failed start below the cap */
#define SYSLET__RESCAN_NS 1000000u /* deaths, while something waits */
#define SYSLET__CALLS_NS 100000000u /* deaths in calls, while calls run */
#define MANAGER_STACK (64 * 1024)
#define STEP_MAX 1024 /* workers one growth look may start */

/* A program thread's request, on the asker's stack. */
struct request {
	void *(*fn)(void *);
	void *arg;
	size_t stack_size;
	int cpu;
	int ret;
	_Atomic uint32_t done;
	struct request *next;
};

static struct {
	pthread_mutex_t lock; /* queue, up */
	struct request *queue;
	bool up; /* the manager runs */
	_Atomic uint32_t seq; /* its futex word */
	_Atomic int rescan; /* a look for deaths is due: its timer runs */
	_Atomic pid_t tid; /* the manager's thread, 0 before it runs */
	_Atomic int pin; /* the CPU it is to run on, -1 for its mask */
	_Atomic uint32_t moves; /* askers' moves of it */
} mgr = { PTHREAD_MUTEX_INITIALIZER, NULL, false, 0, 0, 0, -1, 0 };

/* The manager's own: when its next look for deaths in calls is due. */
static uint64_t calls_ns;

void syslet__manager_poke(void)
{
	/* Seq_cst: after the queue or the want, against a lost wake-up. */
	atomic_fetch_add(&mgr.seq, 1);
	syslet__futex(&mgr.seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void syslet__manager_rescan(void)
{
	/* Seq_cst: P6 with the manager's rescan = 0 and re-read. */
	if (!atomic_load(&mgr.rescan) && !atomic_exchange(&mgr.rescan, 1))
		syslet__manager_poke();
}

/* From any thread: move the manager to @cpu now (it settles later). */
static void move_to(int cpu)
{
	/* Relaxed: the thread id, published once (0 before). */
	pid_t tid = atomic_load_explicit(&mgr.tid, memory_order_relaxed);
	cpu_set_t one;

	if (!tid)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	/* Relaxed: only makes the manager settle again. */
	atomic_fetch_add_explicit(&mgr.moves, 1, memory_order_relaxed);
	/* A CPU outside the program's cpuset, or EPERM: it stays. */
	sched_setaffinity(tid, sizeof(one), &one);
}

void syslet__manager_watch(int cpu)
{
	/* Relaxed: a placement, no data hangs on it. */
	if (atomic_exchange_explicit(&mgr.pin, cpu, memory_order_relaxed) !=
	    cpu)
		move_to(cpu);
}

int syslet__manager_pinned(void)
{
	/* Relaxed: as above. */
	return atomic_load_explicit(&mgr.pin, memory_order_relaxed);
}

void syslet__manager_unpin_from(int held, int cpu)
{
	/* Relaxed: as above. */
	if (atomic_load_explicit(&mgr.pin, memory_order_relaxed) == held &&
	    atomic_compare_exchange_strong_explicit(&mgr.pin, &held, cpu,
						    memory_order_relaxed,
						    memory_order_relaxed))
		move_to(cpu);
}

void syslet__manager_follow(int cpu)
{
	/* Relaxed: as above. */
	int pin = atomic_load_explicit(&mgr.pin, memory_order_relaxed);

	if (pin >= 0 && pin != cpu)
		syslet__manager_unpin_from(pin, cpu);
}

/* The manager's own view of its placement. */
struct place {
	int applied; /* the pin it last applied */
	uint32_t seen; /* moves then */
};

static bool watch(int kind)
{
	return kind == SYSLET__WANT_WATCH || kind == SYSLET__WANT_WATCH_OWN;
}

/*
 * The manager's own: unpin if no watch is pending, then make its affinity
 * what pin says if that, or an asker's move, changed since it last did.
 */
static void settle(struct syslet__pool *p, struct place *pl)
{
	/* Relaxed: as above. */
	int pin = atomic_load_explicit(&mgr.pin, memory_order_relaxed), i;
	uint32_t moves;
	cpu_set_t one;

	/* Relaxed: our own store; without it, no mask to go back to. */
	if (!atomic_load_explicit(&mgr.tid, memory_order_relaxed))
		return;

	for (i = 0; pin >= 0 && i < p->nshards; i++)
		/* Relaxed: a watch asked after this look moves us again. */
		if (watch(atomic_load_explicit(&p->shards[i].want,
					       memory_order_relaxed)))
			break;
	if (pin >= 0 && i == p->nshards &&
	    atomic_compare_exchange_strong_explicit(&mgr.pin, &pin, -1,
						    memory_order_relaxed,
						    memory_order_relaxed))
		pin = -1;
	/* Relaxed: as above. */
	moves = atomic_load_explicit(&mgr.moves, memory_order_relaxed);
	if (pin == pl->applied && moves == pl->seen)
		return;
	CPU_ZERO(&one);
	if (pin >= 0)
		CPU_SET(pin, &one);
	/* Unpinned: the baseline now, which may have widened (spawn.c). */
	if (pin >= 0 || !syslet__baseline_mask(&one))
		sched_setaffinity(0, sizeof(one), &one);
	pl->applied = pin;
	pl->seen = moves;
}

bool syslet__manager_needed(struct syslet__pool *p)
{
	int i;

	/* Seq_cst: a Dekker pair with worker.c's notify(). */
	if (atomic_load(&p->drain_waiters))
		return true;
	for (i = 0; i < p->nshards; i++)
		if (atomic_load(&p->shards[i].queued) > 0)
			return true;
	return false;
}

/* A worker in a notifier may have died while something waits for it. */
static bool rescan(struct syslet__pool *p)
{
	/* Seq_cst: after the reap, against a notifier started since. */
	return atomic_load(&p->notifying) && syslet__manager_needed(p);
}

/* A worker of the pool runs a job (a call, or its notifier). */
static bool busy(struct syslet__pool *p)
{
	int i;

	/* Seq_cst: P7 of wake.c, after the manager's watching = 0. */
	for (i = 0; i < p->nshards; i++)
		if (atomic_load(&p->shards[i].nworkers) >
		    atomic_load(&p->shards[i].idle))
			return true;
	return false;
}

/*
 * While calls run, a look for workers that died in one is due every
 * SYSLET__CALLS_NS (the reap of each look finds them); a look that finds
 * no worker busy stops it (watching = 0, then a re-read: P7 of wake.c),
 * and the next call started tells the manager again.
 */
static void watch_calls(struct syslet__pool *p, uint64_t now)
{
	/* Seq_cst: P7. */
	if (!atomic_load(&p->watching) || now < calls_ns)
		return;
	calls_ns = now + SYSLET__CALLS_NS;
	if (busy(p))
		return;
	/* RMWs, not stores: see "Stores" in wake.c. */
	(void)atomic_exchange(&p->watching, 0);
	if (busy(p))
		(void)atomic_exchange(&p->watching, 1);
}

/* When the request noted for @s is due. */
static uint64_t due(const struct syslet__shard *s)
{
	return s->want_ns +
	       (watch(s->want_kind) ? SYSLET__WATCH_NS : SYSLET__GROW_NS);
}

/*
 * The nearest deadline (growth request, rescan); 0 if none. rescan is 1
 * while the rescan timer runs; when it stops, rescan = 0 then a re-read
 * (seq_cst), so that a submit at the cap that found it 1 (P6, wake.c)
 * either sees 0 and pokes, or is seen here.
 */
static uint64_t deadline(struct syslet__pool *p, uint64_t now)
{
	bool r = rescan(p);
	uint64_t d;
	int i;

	if (!r && atomic_load(&mgr.rescan)) {
		/* An RMW, not a store: see "Stores" in wake.c. */
		(void)atomic_exchange(&mgr.rescan, 0);
		r = rescan(p);
	}
	if (r)
		atomic_store(&mgr.rescan, 1);
	d = r ? now + SYSLET__RESCAN_NS : 0;
	/* Seq_cst: as in watch_calls(). */
	if (atomic_load(&p->watching) && (!d || calls_ns < d))
		d = calls_ns;

	for (i = 0; i < p->nshards; i++)
		if (p->shards[i].want_ns && (!d || due(&p->shards[i]) < d))
			d = due(&p->shards[i]);
	return d;
}

/* A request of @s (@kind) noted at @ns: its ticket and what was taken. */
static void note(struct syslet__shard *s, uint64_t ns, int kind)
{
	s->want_ns = ns;
	s->want_kind = kind;
	/* Seq_cst: P4 of wake.c; the ticket after the want. */
	s->want_mark = syslet__shard_submitted(s, memory_order_seq_cst);
	s->want_served = atomic_load(&s->taken);
}

static void grow(struct syslet__pool *p, uint64_t now)
{
	struct syslet__shard *s;
	int i, n, w;

	for (i = 0; i < p->nshards; i++) {
		s = &p->shards[i];
		/* Seq_cst: P4 of wake.c, before the ticket. */
		w = atomic_load(&s->want);
		if (!s->want_ns || s->want_kind < w) {
			/* New, or a watch that became a growth request. */
			if (w)
				note(s, now, w);
			continue;
		}
		if (now < due(s))
			continue;
		s->want_ns = 0;
		n = syslet__wake_grow(s, s->want_mark, s->want_served,
				      s->want_step, s->want_kind);
		if (n < 0)
			note(s, now + SYSLET__RETRY_NS - SYSLET__GROW_NS,
			     SYSLET__WANT_GROW);
		/* Still stuck: twice as many next time (wake.c). */
		s->want_step = n <= 0		       ? 1 :
			       s->want_step < STEP_MAX ? 2 * s->want_step :
							 STEP_MAX;
	}
}

static void serve(struct request *q)
{
	struct request *next;

	for (; q; q = next) {
		next = q->next;
		q->ret = syslet__thread_create(q->fn, q->arg, q->stack_size,
					       q->cpu);
		/* Release: ret before done; the asker then frees q. */
		atomic_store_explicit(&q->done, 1, memory_order_release);
		syslet__futex(&q->done, FUTEX_WAKE_PRIVATE, 1, NULL);
	}
}

static void *manager_main(void *arg)
{
	struct syslet__pool *p = arg;
	struct place pl = { .applied = -1 };
	struct timespec ts, *tp;
	struct request *q;
	uint64_t now, d;
	uint32_t seq;

	pthread_setname_np(pthread_self(), "syslet/mgr");
	/* Relaxed: see move_to(). Without a baseline, never pinned. */
	if (!syslet__baseline_mask(&(cpu_set_t){ 0 }))
		atomic_store_explicit(&mgr.tid, gettid(), memory_order_relaxed);
	/* Its timeouts are a few microseconds: no timer slack. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	for (;;) {
		/* Seq_cst: read before the queue and the wants (poke()). */
		seq = atomic_load(&mgr.seq);
		pthread_mutex_lock(&mgr.lock);
		q = mgr.queue;
		mgr.queue = NULL;
		pthread_mutex_unlock(&mgr.lock);
		serve(q);
		/* Every look: a worker may have died in a notifier or a call. */
		syslet__worker_reap();
		now = syslet__now_ns();
		watch_calls(p, now);
		grow(p, now);
		settle(p, &pl);
		if (q)
			continue;
		d = deadline(p, now);
		tp = NULL;
		if (d) {
			d = d > now ? d - now : 0;
			ts.tv_sec = (time_t)(d / 1000000000u);
			ts.tv_nsec = (long)(d % 1000000000u);
			tp = &ts;
		}
		/* Relative timeout: FUTEX_WAIT's. */
		syslet__futex(&mgr.seq, FUTEX_WAIT_PRIVATE, seq, tp);
	}
	return NULL;
}

/* Start the manager if it does not run; under mgr.lock. */
static int start_locked(void)
{
	int ret;

	if (mgr.up)
		return 0;
	/* From a program thread: the new thread checks it is neutral. */
	ret = syslet__thread_create_checked(manager_main, &syslet__pool,
					    MANAGER_STACK);
	mgr.up = !ret;
	return ret;
}

int syslet__manager_start(void)
{
	int ret;

	pthread_mutex_lock(&mgr.lock);
	ret = start_locked();
	pthread_mutex_unlock(&mgr.lock);
	return ret;
}

int syslet__manager_spawn(void *(*fn)(void *), void *arg, size_t stack_size,
			  int cpu)
{
	struct request q = {
		.fn = fn, .arg = arg, .stack_size = stack_size, .cpu = cpu
	};
	int ret;

	atomic_init(&q.done, 0);
	pthread_mutex_lock(&mgr.lock);
	ret = start_locked();
	if (!ret) {
		q.next = mgr.queue;
		mgr.queue = &q;
	}
	pthread_mutex_unlock(&mgr.lock);
	if (ret)
		return ret;
	syslet__manager_follow(sched_getcpu());
	syslet__manager_poke();
	/* Acquire: pairs with the manager's release of done. */
	while (!atomic_load_explicit(&q.done, memory_order_acquire))
		syslet__futex(&q.done, FUTEX_WAIT_PRIVATE, 0, NULL);
	return q.ret;
}

void syslet__manager_atfork_child(void)
{
	pthread_mutex_init(&mgr.lock, NULL);
	mgr.queue = NULL;
	mgr.up = false;
	atomic_init(&mgr.tid, 0);
	atomic_init(&mgr.pin, -1);
	atomic_init(&mgr.moves, 0);
	atomic_init(&mgr.seq, 0);
	atomic_init(&mgr.rescan, 0);
	calls_ns = 0;
}
