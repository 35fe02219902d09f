/* SPDX-License-Identifier: MIT */
/*
 * The worker: start, loop, spin, sleep, steal, retire, and the watch over
 * workers whose notifier may end the thread.
 *
 * A worker is homed on one shard, pinned to its CPU (SYSLET_OPT_PIN), runs
 * with every signal blocked on a small stack, and is named "syslet/CPU".
 * The manager moves an idle one to another CPU when a real-time thread of
 * the program holds its own (syslet__worker_move(), wake.c's (d)): it
 * stays its shard's, clears the shard's held mark only from that CPU,
 * sleeps allowed on both, and is pinned home again once it runs there.
 * Its loop: take a job from its shard; else steal one from a shard whose
 * queue waits (jobs queued and no idle worker there, or any jobs of the
 * SYSLET__NEAR shards whose submitters count on this shard's spinner);
 * after SYSLET__FAIR jobs of its own in a row, a waiting shard goes first
 * (at the cap, a home queue that never empties would otherwise keep
 * another shard's jobs waiting for ever behind its blocked workers); else
 * spin, if it can become the shard's one spinner (claimed already before
 * posting its last completion), for an adaptive budget; else sleep on the
 * shard's futex until kicked or until the idle timeout, then retire if the
 * shard keeps more than its floor and the pool more than one worker. The
 * ordering rules (seq_cst counters, Dekker with submitters) are in pool.c:
 * every change of idle, spinning or sleepers below is followed by a fresh
 * look at the queues before the worker commits to waiting or leaving.
 *
 * Spin budget: per shard, halved when a spin finds nothing, doubled when a
 * spin or a short sleep (one woken sooner than the configured budget)
 * finds work; between 1/8 of SYSLET_OPT_SPIN_NS and all of it (0: never
 * spin). Only one worker per shard spins,
 * and only after running a job, so an idle process spins at most once per
 * shard before sleeping.
 *
 * Wake-ups: every change of role (idle, spinner, sleeper, retiring) follows
 * wake.c's protocol; the racing pairs P1-P5 named here are listed there.
 *
 * Ends: a worker's thread ends by retirement (it returns from
 * worker_main) or by a death, inside a notifier (in_notify set: an
 * inline-assembly SYS_exit, pthread_exit) that the library's syscall()
 * (interpose.c) could not turn into a return. Each worker holds a robust
 * mutex (alive) for its whole life: whatever ends the thread, the kernel
 * marks the mutex's word FUTEX_OWNER_DIED as the thread exits (the robust
 * list glibc set up for it). A retiring worker unlocks it and frees its
 * own record. A dead one is found by syslet__worker_reap(), which the
 * manager runs while workers run notifiers (manager.c): one load of the
 * word per worker in a notifier; no descriptor, no signal, no thread of
 * its own, on every kernel since 2.6.17. For a death, the job (its
 * completion was posted before the notifier ran) is freed and counted
 * finished, the worker counted gone (workers_replaced), its cancel slot
 * given back (a raw exit runs no key destructor, cancel.c), and every
 * shard with queued jobs woken, which starts replacements. The thread's
 * descriptor is never touched (pthread_exit of a detached thread frees
 * it). The list of records (workers_lock) is the manager's way to them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <syslet/syslet.h>

#include "cancel.h"
#include "compiler.h"
#include "fault.h"
#include "fdcache.h"
#include "pool.h"
#include "probe.h"
#include "shard.h"
#include "spawn.h"
#include "try.h"

struct worker {
	struct syslet__shard *home;
	pthread_t thread;
	pid_t tid; /* set before it is listed */
	_Atomic bool idle; /* not in a call: syslet__worker_move()'s hint */
	bool pinned; /* to its shard's CPU; set before it is listed */
	bool wide; /* go_home() let it run on its CPU and another */
	struct syslet__job *job; /* the job whose call or notifier runs */
	struct syslet__shard *from; /* the shard job was taken from */
	_Atomic int at; /* AT_CALL, AT_NOTIFY, or 0: where a death is seen */
	pthread_mutex_t alive; /* robust, held by the thread while it lives */
	struct syslet__cancel_ref cancel; /* its cancel slot, for ended() */
	void *notify; /* its notifier state (notify.c), freed with it */
	bool spinner; /* holds its shard's spinning role */
	unsigned int streak; /* jobs taken from home in a row */
	unsigned int rot; /* where its next scan of waiting shards starts */
	struct worker *prev, *next; /* workers, under workers_lock */
};

/* Where a worker is (w->at), for a death there: noticed in these two. */
#define AT_CALL 1
#define AT_NOTIFY 2

/* The records of live workers and of dead ones not reaped yet. */
static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct worker workers = { .prev = &workers, .next = &workers };
static SYSLET_TLS struct worker *self;

/* Whether @w runs on its shard's CPU: pinned there, and not moved. */
static bool at_home(struct worker *w)
{
	/* rseq's cpu_id: no system call. */
	return !w->pinned || sched_getcpu() == w->home->cpu;
}

/* Its affinity: its shard's CPU, and @also if >= 0; 0 or -1. */
static int pin_to(struct worker *w, int also)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->home->cpu, &set);
	if (also >= 0)
		CPU_SET(also, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Pinned to its shard's CPU alone again. */
static void pin_home(struct worker *w)
{
	w->wide = false;
	pin_to(w, -1);
}

/*
 * Its shard's CPU ran it: clear a held mark (wake.c), and pin it there
 * again if go_home() let it run elsewhere too. Not a worker moved off
 * that CPU (syslet__worker_move()): it runs elsewhere.
 */
static void ran(struct worker *w)
{
	if (!at_home(w))
		return;
	syslet__wake_ran(w->home);
	if (w->wide)
		pin_home(w);
}

/*
 * Before it sleeps, if the manager moved it: back home, pinned, unless
 * its shard is marked held; then allowed on its shard's CPU as well as
 * where it is. Pinned home alone it would wait there, neither running
 * nor asleep, behind the real-time thread that may still hold that CPU
 * (a real-time caller with gaps between its calls: each then cost a
 * watch, ~50 ms); the kernel wakes it on whichever of the two is free,
 * and ran() pins it home when it runs there. Left where it is, a
 * real-time thread there later would hold it: a thread that leaves real
 * time unmarks its CPU's shard (policy.c), so that the first nap after
 * the real-time caller is done takes it home.
 */
static void go_home(struct worker *w)
{
	int cpu;

	if (at_home(w) || (cpu = sched_getcpu()) < 0)
		return;
	/* Relaxed: a hint, as the mark. */
	if (!atomic_load_explicit(&w->home->held, memory_order_relaxed)) {
		/* Not held (unmarked when its holder left real time). */
		pin_home(w);
		return;
	}
	pin_to(w, cpu);
	w->wide = true;
}

/* Jobs of its own shard a worker takes in a row before a waiting one's. */
#define SYSLET__FAIR 16

/*
 * Dequeue without waiting for a submitter caught between the two halves of
 * its enqueue (liburcu's blocking dequeue would sleep 10 ms on it, holding
 * the dequeue lock): yield instead, so that a preempted submitter of this
 * CPU can finish, and let the caller look again. Its queued++ and kick
 * come after the enqueue, so nothing is lost meanwhile.
 */
static struct syslet__job *take(struct syslet__shard *s)
{
	struct cds_wfcq_node *n;

	if (cds_wfcq_empty(&s->head, &s->tail))
		return NULL;
	cds_wfcq_dequeue_lock(&s->head, &s->tail);
	n = __cds_wfcq_dequeue_nonblocking(&s->head, &s->tail);
	/* Named under the lock it was taken under (cancel.c). */
	if (n && n != CDS_WFCQ_WOULDBLOCK) {
		/* TSan: the queue's hand-off, before the job is read. */
		syslet__handoff_acquire(
			caa_container_of(n, struct syslet__job, qnode));
		syslet__cancel_took(
			caa_container_of(n, struct syslet__job, qnode));
	}
	cds_wfcq_dequeue_unlock(&s->head, &s->tail);
	if (n == CDS_WFCQ_WOULDBLOCK) {
		sched_yield();
		return NULL;
	}
	if (!n)
		return NULL;
	atomic_fetch_sub_explicit(&s->queued, 1, memory_order_relaxed);
	/* Relaxed: a stale count only makes the manager wait one more turn. */
	atomic_fetch_add_explicit(&s->taken, 1, memory_order_relaxed);
	return caa_container_of(n, struct syslet__job, qnode);
}

/*
 * A shard other than @s whose queue waits: jobs and no idle worker there,
 * or, for the SYSLET__NEAR shards before @s, jobs at all: their submitters
 * count on our spinner (wake.c's (b)), and their own spinner may
 * not be running at all (it shares its CPU with the submitter). The scan
 * starts @rot shards past the nearest, so that a worker that steals
 * passes its steals around (struct worker's rot): at the cap, the nearest
 * waiting shard, if its queue never empties, would take them all.
 */
static struct syslet__shard *waiting(struct syslet__pool *p,
				     struct syslet__shard *s, unsigned int rot)
{
	struct syslet__shard *t;
	int i, k, n = p->nshards;

	for (k = 0; k < n - 1; k++) {
		i = (int)((rot + (unsigned int)k) % (unsigned int)(n - 1)) + 1;
		t = &p->shards[(s->cpu + n - i) % n];
		/* Seq_cst: Dekker with a submitter's queued++ and kick. */
		if (atomic_load(&t->queued) > 0 &&
		    (i <= SYSLET__NEAR || !atomic_load(&t->idle)))
			return t;
	}
	return NULL;
}

/* Take a job of a waiting shard (@from), the next scan starting past it. */
static struct syslet__job *steal(struct syslet__pool *p, struct worker *w,
				 struct syslet__shard **from)
{
	struct syslet__shard *s = w->home;
	int n = p->nshards;

	*from = waiting(p, s, w->rot);
	if (!*from)
		return NULL;
	/* its distance i, 1 .. n - 1: the next scan starts at i + 1 */
	w->rot = (unsigned int)((s->cpu - (*from)->cpu + n) % n) %
		 (unsigned int)(n - 1);
	return take(*from);
}

static bool work(struct syslet__pool *p, struct syslet__shard *s)
{
	/* Seq_cst: Dekker with a submitter's queued++ and kick. */
	return atomic_load(&s->queued) > 0 || waiting(p, s, 0);
}

static void adapt(struct syslet__shard *s, bool hit)
{
	long max = syslet__cfg(&syslet__config()->spin_ns);
	long v = atomic_load_explicit(&s->spin_ns, memory_order_relaxed);

	/* Never below max / 8: a shard that stopped spinning would not learn. */
	v = hit ? v * 2 : v / 2;
	v = v < max / 8 ? max / 8 : v > max ? max : v;
	/* Relaxed: a hint; racing updates only blur the average. */
	atomic_store_explicit(&s->spin_ns, v, memory_order_relaxed);
}

/* Spin as the shard's spinner; true if work turned up. */
static bool spin(struct syslet__pool *p, struct worker *w)
{
	struct syslet__shard *s = w->home;
	long budget = atomic_load_explicit(&s->spin_ns, memory_order_relaxed);
	uint64_t t0;
	bool found = false;
	int zero = 0;
	unsigned int i;

	/* Seq_cst: submitters read spinning after queueing (pool.c). */
	if (!w->spinner && (budget <= 0 || !atomic_compare_exchange_strong(
						   &s->spinning, &zero, 1)))
		return false;
	w->spinner = false;
	t0 = syslet__now_ns();
	for (i = 1;; i++) {
		if (work(p, s)) {
			found = true;
			break;
		}
		if (!(i & 31)) {
			ran(w);
			if (syslet__now_ns() - t0 >= (uint64_t)budget)
				break;
			sched_yield();
		}
		cpu_relax();
	}
	/* Seq_cst: P2, then look again, a submitter may have seen us spin. */
	(void)atomic_exchange(&s->spinning, 0);
	if (!found)
		found = work(p, s);
	adapt(s, found);
	if (found)
		atomic_fetch_add_explicit(&s->spins, 1, memory_order_relaxed);
	return found;
}

/* Sleep until kicked or idle for the idle timeout (then true). */
static bool nap(struct syslet__pool *p, struct worker *w)
{
	struct syslet__shard *s = w->home;
	long ms = syslet__cfg(&syslet__config()->idle_ms);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	uint64_t t0;
	uint32_t seq;
	bool timeout;

	/* Seq_cst: P1 and P5 with a submitter's queued++ and wake. */
	atomic_fetch_add(&s->sleepers, 1);
	seq = atomic_load(&s->wake_seq);
	if (work(p, s)) {
		atomic_fetch_sub(&s->sleepers, 1);
		return false;
	}
	atomic_fetch_add_explicit(&s->sleeps, 1, memory_order_relaxed);
	t0 = syslet__now_ns();
	timeout = syslet__futex(&s->wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts) &&
		  errno == ETIMEDOUT;
	ran(w); /* it may retire now, not pass the loop's top */
	atomic_fetch_sub(&s->sleepers, 1);
	/*
	 * Work came soon after the spin gave up: spin longer. "Soon" counts
	 * the wake-up itself, which on an idle virtual CPU alone takes tens
	 * of microseconds (a QD 1 loop, 4 KiB ext4 writes on a quiet 2-CPU
	 * VM: the budget stuck at its floor and every call cost two wake-ups;
	 * fdatasync at QD 1, --quick: 29-119 us a call, 1.3-3.7 us with this).
	 */
	if (!timeout &&
	    syslet__now_ns() - t0 <
		    4 * (uint64_t)syslet__cfg(&syslet__config()->spin_ns))
		adapt(s, true);
	return timeout;
}

/* Leave the pool if above the floors; false if the worker must stay. */
static bool retire(struct syslet__pool *p, struct syslet__shard *s)
{
	long floor = syslet__cfg(&syslet__config()->min_workers);
	int n = atomic_load_explicit(&s->nworkers, memory_order_relaxed);
	int g = atomic_load_explicit(&p->nworkers, memory_order_relaxed);

	do
		if (n <= floor)
			return false;
	while (!atomic_compare_exchange_weak_explicit(&s->nworkers, &n, n - 1,
						      memory_order_relaxed,
						      memory_order_relaxed));
	/* The pool's last worker stays: a submit may rely on it (pool.c). */
	do
		if (g <= 1)
			goto stay;
	while (!atomic_compare_exchange_weak_explicit(&p->nworkers, &g, g - 1,
						      memory_order_relaxed,
						      memory_order_relaxed));
	/* Seq_cst: P1 with a submitter that saw us idle. */
	atomic_fetch_sub(&s->idle, 1);
	if (!work(p, s))
		return true;
	atomic_fetch_add(&s->idle, 1);
	atomic_fetch_add_explicit(&p->nworkers, 1, memory_order_relaxed);
stay:
	atomic_fetch_add_explicit(&s->nworkers, 1, memory_order_relaxed);
	return false;
}

static void enlist(struct worker *w)
{
	pthread_mutex_lock(&workers_lock);
	w->next = &workers;
	w->prev = workers.prev;
	workers.prev->next = w;
	workers.prev = w;
	pthread_mutex_unlock(&workers_lock);
}

/* Under workers_lock. */
static void unlink_worker(struct worker *w)
{
	w->prev->next = w->next;
	w->next->prev = w->prev;
}

static void unlist(struct worker *w)
{
	pthread_mutex_lock(&workers_lock);
	unlink_worker(w);
	pthread_mutex_unlock(&workers_lock);
}

static void notify(struct worker *w, struct syslet__job *job,
		   struct syslet_completion *c)
{
	struct syslet__pool *p = &syslet__pool;

	w->job = job;
	syslet__cancel_ref(&w->cancel);
	/*
	 * Seq_cst: Dekker with a drain's drain_waiters++ and a submit's
	 * queued++, each followed by the manager's read of notifying: the
	 * manager looks for deaths while notifying > 0 and something waits
	 * (manager.c); the first notifier tells it if something waits now,
	 * unless its look is due anyway (rescan: a poke per notifier was
	 * 125k wake calls and 20k manager wake-ups in 2 s of fio).
	 */
	if (!atomic_fetch_add(&p->notifying, 1) && syslet__manager_needed(p))
		syslet__manager_rescan();
	/* Seq_cst: visible to the manager before the thread can die. */
	atomic_store(&w->at, AT_NOTIFY);
	SYSLET_PROBE3(notify, job->ip, job->sp, job->cnode.caller_data);
	syslet__standin_notify(&job->standin);
	syslet__notify_run(job, c);
	syslet__standin_notify(NULL);
	atomic_store_explicit(&w->at, 0, memory_order_relaxed);
	atomic_fetch_sub_explicit(&p->notifying, 1, memory_order_relaxed);
}

/*
 * Counted completed, then finished: syslet_drain()'s waiter sees both. On
 * the worker that posts @arg, its job, before it frees it.
 */
static void finished(void *arg)
{
	struct syslet__job *job = arg;
	struct syslet__shard *s = self->home;

	atomic_fetch_add_explicit(&s->completed, 1, memory_order_relaxed);
	syslet__pool_finished(s, job->slot);
}

/*
 * Whether @job's call ends within a device's time: a transfer or a sync
 * of a regular file or block device, by the cached facts (none: no). A
 * SIGPIPE a notifier of the same thread raised may wait behind it
 * (standin.c); behind any other call (a read of a pipe) it could wait for
 * ever.
 */
static bool bounded(const struct syslet__job *job)
{
	return (syslet__job_transfer(job->nr) || job->nr == SYS_fsync ||
		job->nr == SYS_fdatasync) &&
	       (syslet__fd_cached(job->arg[0]) & SYSLET__FD_DISK);
}

/* Run @job taken from @from; false if the worker must retire after it. */
static bool run(struct worker *w, struct syslet__shard *from,
		struct syslet__job *job)
{
	struct syslet__shard *s = w->home;
	/* Read now: the ring's state may go once the call is posted. */
	struct syslet_ring *ring = syslet__ring_of(job->rs);
	int zero = 0;

	/* Relaxed: a hint (syslet__worker_move()). */
	atomic_store_explicit(&w->idle, false, memory_order_relaxed);
	syslet__wake_busy(s, from, w->spinner);
	if (w->spinner) {
		w->spinner = false;
		atomic_fetch_add_explicit(&s->spins, 1, memory_order_relaxed);
	}
	/*
	 * Seq_cst: P7 of wake.c, after idle--: while calls run, the manager
	 * looks for workers that died in one (manager.c); the first call
	 * after a quiet look tells it.
	 */
	if (unlikely(!atomic_load(&syslet__pool.watching)) &&
	    !atomic_exchange(&syslet__pool.watching, 1))
		syslet__manager_poke();
	syslet__standin_settle(bounded(job) ? job->standin.tid : 0);
	/* For the manager, should the thread die in the call. */
	syslet__cancel_ref(&w->cancel);
	w->job = job;
	w->from = from;
	/*
	 * Release: job, from and the slot before it, for the manager, which
	 * reads it (acquire) only once the kernel marked the thread's death.
	 */
	atomic_store_explicit(&w->at, AT_CALL, memory_order_release);
	job->cnode.status = (uint64_t)syslet__cancel_exec(job, 0);
	atomic_store_explicit(&w->at, 0, memory_order_relaxed);
	syslet__standin_done(
		&job->standin, (long)job->cnode.status,
		job->cont == SYSLET__CONT_REST ||
			syslet__standin_short(job->nr, job->arg,
					      (long)job->cnode.status));
	/*
	 * Relaxed: as above. Past its call, on to the post, where the
	 * submitter it wakes may preempt it for good (a real-time poller).
	 */
	atomic_store_explicit(&w->idle, true, memory_order_relaxed);
	/*
	 * Become the spinner before the completion wakes the submitter: its
	 * next call then finds one, with no system call on either side. Not
	 * before a notifier, which may run long.
	 */
	if (!job->ip &&
	    atomic_load_explicit(&s->spin_ns, memory_order_relaxed) > 0)
		/* Seq_cst: as in spin(). */
		w->spinner =
			atomic_compare_exchange_strong(&s->spinning, &zero, 1);
	/*
	 * Without a notifier the call is finished once posted: counted for
	 * syslet_drain() before the post wakes the program's threads, one of
	 * which may take this CPU for long (a real-time one).
	 */
	syslet__ring_post_then(job->rs, &job->cnode, job->ip ? NULL : finished,
			       job);
	SYSLET_PROBE_JOB(complete, job);
	if (job->ip) {
		atomic_fetch_add_explicit(&s->completed, 1,
					  memory_order_relaxed);
		/*
		 * The ring is the program's, read only here: a call cancelled
		 * while queued was posted by its canceller, and without a
		 * notifier the program may free the ring before this worker
		 * takes the job (TSan, test cancel_race storm).
		 */
		notify(w, job,
		       &ring->comp[job->cnode.index & (ring->elements - 1)]);
		syslet__pool_finished(s, job->slot);
	}
	syslet__job_free(job);
	/* Seq_cst: P1, the loop then looks at the queues again. */
	atomic_fetch_add(&s->idle, 1);
	return true;
}

/* A busy worker leaves (credentials unsure, or dead): hand its queues on. */
static void leave_busy(struct syslet__pool *p, struct syslet__shard *s)
{
	int i;

	atomic_fetch_sub_explicit(&s->nworkers, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&p->nworkers, 1, memory_order_relaxed);
	for (i = 0; i < p->nshards; i++)
		/* Seq_cst: as in run(), a submitter may count on us. */
		if (atomic_load(&p->shards[i].queued) > 0)
			syslet__wake(&p->shards[i]);
}

static void *worker_main(void *arg)
{
	struct syslet__pool *p = &syslet__pool;
	struct worker *w = arg;
	struct syslet__shard *s = w->home, *from;
	struct syslet__job *job;
	char name[16];

	self = w;
	w->thread = pthread_self();
	w->tid = gettid();
	snprintf(name, sizeof(name), "syslet/%d", s->cpu);
	pthread_setname_np(w->thread, name);
	/* Not allowed on that CPU (cpuset): run unpinned. */
	if (syslet__cfg(&syslet__config()->pin))
		w->pinned = !pin_to(w, -1);
	/* Without the trap, the manager still sees a notifier's exit. */
	(void)syslet__notify_thread_init(w->notify); /* getcontext(): EFAULT */
	/* Held until the thread ends: the kernel marks it then. */
	pthread_mutex_lock(&w->alive);
	enlist(w);
	syslet__handoff_release(w);
	SYSLET_PROBE1(worker_start, s->cpu);
	for (;;) {
		ran(w);
		job = NULL;
		/* One look per SYSLET__FAIR jobs, whatever it finds */
		if (w->streak >= SYSLET__FAIR) {
			w->streak = 0;
			job = steal(p, w, &from);
		}
		if (!job)
			job = take((from = s));
		if (!job)
			job = steal(p, w, &from);
		w->streak = job && from == s ? w->streak + 1 : 0;
		if (job) {
			if (run(w, from, job))
				continue;
			leave_busy(p, s);
			break;
		}
		if (spin(p, w))
			continue;
		syslet__standin_settle(0);
		go_home(w);
		if (nap(p, w) && retire(p, s))
			break;
	}
	SYSLET_PROBE1(worker_exit, s->cpu);
	syslet__standin_settle(0);
	unlist(w);
	syslet__notify_thread_end();
	/* Off the thread's robust list before its memory goes. */
	pthread_mutex_unlock(&w->alive);
	pthread_mutex_destroy(&w->alive);
	free(w->notify);
	free(w);
	return NULL;
}

int syslet__worker_spawn(struct syslet__shard *s)
{
	struct syslet__pool *p = &syslet__pool;
	const struct syslet__config *cfg = syslet__config();
	long cap = syslet__cfg(&cfg->max_workers);
	int n = atomic_load_explicit(&p->nworkers, memory_order_relaxed);
	int peak = atomic_load_explicit(&p->peak, memory_order_relaxed);
	pthread_mutexattr_t ma;
	struct worker *w;
	int ret;

	do
		if (n >= cap)
			return -EAGAIN;
	while (!atomic_compare_exchange_weak_explicit(&p->nworkers, &n, n + 1,
						      memory_order_relaxed,
						      memory_order_relaxed));
	atomic_fetch_add_explicit(&s->nworkers, 1, memory_order_relaxed);
	/* Counted with nworkers: stats never see more workers than starts. */
	atomic_fetch_add_explicit(&s->started, 1, memory_order_relaxed);
	/* Seq_cst: idle before a submitter may skip starting another. */
	atomic_fetch_add(&s->idle, 1);
	w = calloc(1, sizeof(*w));
	if (w && !(w->notify = syslet__notify_alloc())) {
		free(w);
		w = NULL;
	}
	ret = w ? 0 : -ENOMEM;
	if (!ret && syslet__fault(SYSLET__FAULT_THREAD))
		ret = -EAGAIN;
	if (!ret) {
		w->home = s;
		atomic_init(&w->idle, true); /* as s->idle, above */
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&w->alive, &ma);
		pthread_mutexattr_destroy(&ma);
		/* Started where it is pinned (spawn.c), if it is. */
		ret = syslet__thread_spawn(
			worker_main, w, (size_t)syslet__cfg(&cfg->stack_size),
			syslet__cfg(&cfg->pin) ? s->cpu : -1);
	}
	if (ret) {
		if (w)
			free(w->notify);
		free(w);
		atomic_fetch_sub(&s->idle, 1);
		atomic_fetch_sub_explicit(&s->started, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&s->nworkers, 1,
					  memory_order_relaxed);
		atomic_fetch_sub_explicit(&p->nworkers, 1,
					  memory_order_relaxed);
		return ret;
	}
	n = atomic_load_explicit(&p->nworkers, memory_order_relaxed);
	while (peak < n && !atomic_compare_exchange_weak_explicit(
				   &p->peak, &peak, n, memory_order_relaxed,
				   memory_order_relaxed))
		;
	return 0;
}

/*
 * Move up to @max idle workers of @s to CPU @cpu (those there already
 * too): they stay @s's, take its jobs there, and sleep allowed on both
 * CPUs (go_home()); the number that are there now. For wake.c's look of
 * a shard held by a real-time thread: its pinned workers cannot run, an
 * idle one there counts for nothing, and at the cap no other can be
 * started. Unpinned workers: the scheduler moves them itself. From the
 * manager, which never waits for a worker (one that holds workers_lock
 * may be the one held): a trylock, and 0 if it fails. Idle is a hint: a
 * worker that took a job since (it blocks in it, maybe) is counted all
 * the same, and the jobs it was moved for, still untaken, are looked at
 * again after the next watch.
 */
int syslet__worker_move(struct syslet__shard *s, int cpu, int max)
{
	struct worker *w;
	cpu_set_t one;
	int n = 0;

	if (max <= 0 || pthread_mutex_trylock(&workers_lock))
		return 0;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	for (w = workers.next; w != &workers && n < max; w = w->next)
		/* Relaxed: a hint; seq_cst: as in syslet__worker_reap(). */
		if (w->home == s && w->pinned &&
		    atomic_load_explicit(&w->idle, memory_order_relaxed) &&
		    atomic_load(&w->at) != AT_NOTIFY &&
		    !sched_setaffinity(w->tid, sizeof(one), &one))
			n++;
	pthread_mutex_unlock(&workers_lock);
	return n;
}

/*
 * Account for @w, whose thread ended in a notifier or in a call, and free
 * it. A notifier's job is done (its completion was posted). A call's job
 * is completed here, once: -EOWNERDEAD, or the bytes a try moved before
 * (a continuation), posted at once; then queued again, where a worker
 * finds it posted (as a cancelled queued call, cancel.c) and does the
 * rest: its notifier, its count for syslet_drain(). The call never runs
 * again: the kill came at its system call's entry (seccomp).
 */
static void ended(struct syslet__pool *p, struct worker *w)
{
	struct syslet__shard *s = w->home;
	struct syslet__job *job = w->job;
	bool in_call = atomic_load_explicit(&w->at, memory_order_relaxed) ==
		       AT_CALL;

	/* The worker's own writes came before: tell TSan. */
	syslet__handoff_acquire(w);
	/* Its thread's last use: notify.c's release, or the queue's. */
	syslet__handoff_acquire(job);
	/* Its slot names no job now: no canceller reaches the job there. */
	syslet__cancel_forget(&w->cancel);
	atomic_fetch_add_explicit(&s->replaced, 1, memory_order_relaxed);
	if (!in_call)
		atomic_fetch_sub_explicit(&p->notifying, 1,
					  memory_order_relaxed);
	leave_busy(p, s);
	if (in_call) {
		/* Relaxed: nor in its queue (cancel.c's mark() fails). */
		atomic_store_explicit(&job->cancelled, 1, memory_order_relaxed);
		job->cnode.status =
			(uint64_t)syslet__job_unrun(job, -EOWNERDEAD);
		syslet__ring_post_early(job->rs, &job->cnode);
		syslet__pool_requeue(w->from, job);
	} else {
		syslet__pool_finished(s, job->slot);
		syslet__job_free(job);
	}
	free(w->notify);
	free(w);
}

void syslet__worker_reap(void)
{
	struct syslet__pool *p = &syslet__pool;
	struct worker *w, *next, *dead = NULL;

	pthread_mutex_lock(&workers_lock);
	for (w = workers.next; w != &workers; w = next) {
		next = w->next;
		/*
		 * Acquire: the kernel marks it after the thread's last store
		 * (its exit), w->at included. A death elsewhere (in the
		 * library's own system calls) is not seen.
		 */
		if (!(__atomic_load_n(&w->alive.__data.__lock,
				      __ATOMIC_ACQUIRE) &
		      FUTEX_OWNER_DIED) ||
		    /* Acquire: pairs with its store (release, seq_cst). */
		    !atomic_load_explicit(&w->at, memory_order_acquire))
			continue;
		unlink_worker(w);
		w->next = dead;
		dead = w;
	}
	pthread_mutex_unlock(&workers_lock);
	for (w = dead; w; w = next) {
		next = w->next;
		ended(p, w);
	}
}

bool syslet__worker_self(void)
{
	return self;
}

void syslet__worker_atfork_child(void)
{
	struct worker *w, *next;

	/*
	 * The parent's workers do not exist here: free their records, but
	 * that of a worker forking in a notifier (this thread runs on it).
	 */
	for (w = workers.next; w != &workers; w = next) {
		next = w->next;
		if (w == self)
			continue;
		free(w->notify);
		free(w);
	}
	pthread_mutex_init(&workers_lock, NULL);
	workers.prev = &workers;
	workers.next = &workers;
	self = NULL;
}
