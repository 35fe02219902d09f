/* SPDX-License-Identifier: MIT */
/*
 * The wake-up protocol: "a worker is awake, or will be, for every queued
 * job". Every decision to wake, help, grow or leave a role is made here;
 * worker.c, pool.c and manager.c only call in. Checked by the Promela model
 * tests/model/pool.pml (the same steps, in the same order).
 *
 * Invariant (I). For every shard s with queued(s) > 0, at least one holds:
 *   (a) a worker homed on s is idle (idle(s) > 0) and not yet asleep: it
 *       reads queued(s) before it sleeps (nap) or retires (retire), and
 *       when it takes a job anywhere it re-reads s (syslet__wake_busy);
 *   (b) a spinner covers s (spinning of s or of one of the SYSLET__NEAR
 *       shards after it): when it lets the role go it re-reads every
 *       shard it covered (spin's last look, syslet__wake_busy); when it
 *       is another shard's, the manager watches as well (d);
 *   (c) a sleeper of s, or of a shard covering s, was woken (wake_seq
 *       bumped): it looks at its own shard and the ones it covers;
 *   (d) growth was asked of the manager (want(s) set): it looks again
 *       after SYSLET__GROW_NS and starts one worker per job that waited
 *       that long and that no idle worker will take, or, when it cannot,
 *       looks again later (manager.c). A watch (want WATCH, asked when
 *       only another shard's spinner covers s) looks after
 *       SYSLET__WATCH_NS and no longer counts that spinner: it may never
 *       run (a SCHED_FIFO thread of the program holds its CPU, and RT
 *       throttling lets it run 50 ms a second, or never), while s's CPU
 *       is free. The same when a sleeper of another shard was woken for
 *       s (c). A grow ask replaces a watch, never the reverse. A look
 *       that finds the watched jobs untaken marks the shards that covered
 *       them held: they cover nothing in (b) and (c) until one of their
 *       workers runs again (a hint, relaxed: not counting on a shard
 *       costs a wake-up or a worker more, never a job). A real-time
 *       caller may hold its own CPU (it polls the ring): when it counts on
 *       a worker of s, a sleeper it wakes (c), an idle one (a) or the
 *       spinner (b, with no covering shard's spinner), it wakes one of a
 *       covering shard too, or, with
 *       none, asks a watch of its own shard (WATCH_OWN, the manager
 *       pinned to a covering shard's CPU) that, finding nothing of s
 *       taken, marks s held, moves s's idle workers to a covering
 *       shard's CPU (worker.c: they stay s's, take its jobs there, and
 *       sleep allowed on both CPUs; a worker preempted by the caller
 *       right after its post too; those moved before count) and starts
 *       the workers for the rest of the jobs there; growth for a shard
 *       marked held starts them there too;
 *   (e) the cap is reached: every worker is busy, and the next one to
 *       finish becomes idle (a) before it looks at the queues (an idle
 *       one held by a real-time caller is moved, (d)).
 * A worker that takes a job from s re-reads queued(s) and wakes again if
 * more is queued (fan-out), so (I) holds for each queued job, not only the
 * first; a dead worker is reaped by the manager, which wakes every shard
 * with queued jobs (manager.c, worker.c).
 *
 * Racing pairs (each a Dekker pair of seq_cst accesses: each side writes,
 * then reads the other's variable, so at least one sees the other):
 *   P1 submit (queued++ ; read spinning, sleepers, idle, want)
 *      against a worker entering a role (spinning, sleepers or idle
 *      written ; read queued): nap, spin, retire, spawn;
 *   P2 a spinner letting go (spinning = 0 ; read queued of every covered
 *      shard) against submit (queued++ ; read spinning): the fix of the
 *      bug where a spinner took its own shard's blocking call and never
 *      looked at the neighbour that counted on it;
 *   P3 a worker becoming busy (idle-- ; read queued of its shard and of
 *      the shards it covers) against submit (queued++ ; read idle): an
 *      idle worker may steal a blocking call from another shard;
 *   P4 the manager clearing want (want = 0 ; read queued) against a
 *      submitter that found want set, at least as strong as its own ask
 *      (queued++ ; read want);
 *   P5 a sleeper (sleepers++ ; read wake_seq ; read queued ; FUTEX_WAIT on
 *      wake_seq) against a waker (wake_seq++ ; FUTEX_WAKE);
 *   P6 at the cap, a submitter (queued++ ; read notifying, the manager's
 *      rescan flag) against the manager stopping its rescan timer
 *      (rescan = 0 ; read notifying, queued): a worker that died in a
 *      notifier is looked for while calls wait (manager.c);
 *   P7 a worker starting a call (idle-- ; read watching, set it and poke
 *      if 0) against the manager stopping its looks for deaths in calls
 *      (watching = 0 ; read idle and nworkers of each shard): a call
 *      never runs unwatched (manager.c).
 * Stores: the write of a pair is an RMW (exchange), never a seq_cst store:
 * the same cost, and qemu's TCG on an x86 host emulates arm64's stlr; ldar
 * with no barrier between them, so a store there passes the read after it
 * (the lost wake-up those pairs exist to prevent); an RMW is a full
 * barrier there as on every CPU.
 *
 * Growth is bounded by demand: nothing starts a worker because every
 * worker is busy, only because a job waited SYSLET__GROW_NS untaken with
 * no idle worker for it (the manager counts jobs by ticket: submitted(s)
 * when it was asked, against taken(s) later), so workers <= calls pending
 * + one spinner per CPU. One worker per waited job if nothing was taken
 * meanwhile and no worker of the shard is idle (every worker blocks).
 * None while a worker is idle: it takes every queued job in turn, and
 * it may just be slow to wake (tens of microseconds for an idle virtual
 * CPU; counting it as one job's taker started 63 workers for 64 calls of
 * 100 ns). None if jobs still move: the queue is
 * being served, FIFO, so the job will be taken, and the look ends as any
 * other (want = 0, then a re-read of the queue that asks again, one
 * period later, if nobody is idle for it). Starting one there made the
 * pool outgrow its calls whenever the scheduler, not the pool, was late
 * (1,005 workers for 1,004 calls and spinners in pipes-mix). The pool's
 * first worker is the exception: the first submit starts it (pool.c).
 * And not all at once: a look starts at most want_step workers, 1 after
 * a look that found the shard served, doubled after each look that still
 * had to start some. A busy worker that takes nothing for 20 us is either
 * blocked or preempted (its CPU runs another thread for a time slice,
 * milliseconds), and only the first needs more workers: new workers of a
 * preempted shard share its CPU, one of them runs and the jobs move
 * again. 10,000 blocked calls still reach 512 workers in 10 looks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "baseline.h"
#include "policy.h"
#include "shard.h"
#include "spawn.h"

/*
 * Whether @t, a shard that covers another, counts: not if a watch found
 * it held (hold(), below), unless it has no worker any more (nothing of
 * it waits for its CPU, and nothing of it would clear the mark).
 */
static bool unmarked(struct syslet__shard *t)
{
	/* Relaxed: a hint; trusting a held shard costs a watch. */
	return !atomic_load_explicit(&t->held, memory_order_relaxed) ||
	       !atomic_load_explicit(&t->nworkers, memory_order_relaxed);
}

/*
 * The first shard that covers @s (not @s itself) for which @fn is true,
 * or NULL. Only unmarked() ones, unless @marked.
 */
static struct syslet__shard *near_of(struct syslet__pool *p,
				     struct syslet__shard *s,
				     bool (*fn)(struct syslet__shard *),
				     bool marked)
{
	struct syslet__shard *t;
	int i;

	for (i = 1; i <= SYSLET__NEAR && i < p->nshards; i++) {
		t = &p->shards[(s->cpu + i) % p->nshards];
		if ((marked || unmarked(t)) && fn(t))
			return t;
	}
	return NULL;
}

static struct syslet__shard *near(struct syslet__pool *p,
				  struct syslet__shard *s,
				  bool (*fn)(struct syslet__shard *))
{
	return near_of(p, s, fn, false);
}

static bool spun(struct syslet__shard *t)
{
	/* Seq_cst: P1/P2 with the spinner's spinning writes. */
	return atomic_load(&t->spinning);
}

/*
 * A covering shard on a CPU of the baseline (spawn.c: a taskset is
 * kept), for work that @s's own CPU may not run: the first unmarked()
 * one if there is one, since a mark says a watch found that shard's CPU
 * kept by a real-time thread (work sent there may wait for RT
 * throttling) while an unmarked one ran when last looked at; else the
 * first marked one, since a mark is only a hint (its CPU may run again,
 * or never was held) and it beats none. NULL if no covering shard is on
 * the baseline, or it cannot be read. The baseline is read once (a
 * sched_getaffinity()), not once per shard.
 */
static struct syslet__shard *near_usable(struct syslet__pool *p,
					 struct syslet__shard *s)
{
	struct syslet__shard *t, *marked = NULL;
	cpu_set_t cpus;
	int i;

	if (syslet__baseline_mask(&cpus))
		return NULL;
	for (i = 1; i <= SYSLET__NEAR && i < p->nshards; i++) {
		t = &p->shards[(s->cpu + i) % p->nshards];
		if (!CPU_ISSET(t->cpu, &cpus))
			continue;
		if (unmarked(t))
			return t;
		if (!marked)
			marked = t;
	}
	return marked;
}

/*
 * Ask the manager for @kind (a watch, or growth) unless it was asked; a
 * watch pins it to @cpu, where it is not held: the asker's, which runs,
 * or, for WATCH_OWN or a real-time asker, a covering shard's; a growth
 * ask moves it to @cpu if a watch pinned it elsewhere, or with @cpu < 0
 * to the asker's CPU.
 */
static void ask(struct syslet__shard *s, int kind, int cpu)
{
	/* Seq_cst: P4, the manager reads queued after want = 0. */
	int w = atomic_load(&s->want);

	/* A CAS, an RMW ("Stores"): a grow ask is never lost to a watch. */
	while (w < kind)
		if (atomic_compare_exchange_weak(&s->want, &w, kind)) {
			if (kind != SYSLET__WANT_GROW)
				syslet__manager_watch(cpu);
			else /* where the asker runs, which is not held */
				syslet__manager_follow(
					cpu >= 0 ? cpu : sched_getcpu());
			syslet__manager_poke();
			return;
		}
}

/* Wake one sleeper of @s; false if it has none. */
static bool wake_one(struct syslet__shard *s)
{
	/* Seq_cst: P5, the sleeper compares wake_seq after sleepers++. */
	if (atomic_load(&s->sleepers) <= 0)
		return false;
	atomic_fetch_add(&s->wake_seq, 1);
	syslet__futex(&s->wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
	return true;
}

/*
 * For a real-time caller (SCHED_FIFO, RR or DEADLINE, policy.c): it may
 * keep its CPU (it polls the ring for the completion, the 2007 way), and
 * with it the workers of its shard there, pinned, or woken there and not
 * moved: its own shard's spinner too, which claimed the role before its
 * post woke the caller and was preempted by it at once. A sleeper of a
 * shard that covers the caller's is woken: it steals the job on a CPU that
 * runs. Else (none, or only one of a shard marked held, which may run or
 * not) a watch of @s's own, the manager pinned to a covering shard's CPU
 * (d).
 */
static void help_realtime(struct syslet__pool *p, struct syslet__shard *s)
{
	struct syslet__shard *t;

	if (near(p, s, wake_one))
		return;
	near_of(p, s, wake_one, true);
	/*
	 * Seq_cst, an RMW ("Stores"), before the read of want: a watch or
	 * growth asked before, whose look counts only the jobs submitted
	 * before it was noted, then sees it and looks again as for this
	 * caller (P4, syslet__wake_grow()).
	 */
	(void)atomic_exchange(&s->rt_asked, 1);
	/*
	 * Asked already, and the manager not pinned to this CPU (the
	 * caller's, which it may hold): ask() would leave it; spare the
	 * baseline's read.
	 */
	if (atomic_load(&s->want) >= SYSLET__WANT_WATCH_OWN &&
	    syslet__manager_pinned() != s->cpu)
		return;
	t = near_usable(p, s);
	if (t) {
		ask(s, SYSLET__WANT_WATCH_OWN, t->cpu);
		/* An ask of a thread that ran here may have pinned it here. */
		syslet__manager_unpin_from(s->cpu, t->cpu);
	}
}

/*
 * syslet__wake() for a caller that is real-time (@rt) or not; @caller: the
 * submitter itself, whose policy is asked of the kernel where a system
 * call is made anyway (policy.c).
 */
static void wake(struct syslet__shard *s, bool rt, bool caller)
{
	struct syslet__pool *p = &syslet__pool;
	struct syslet__shard *t;

	if (spun(s)) {
		/* A real-time caller may hold it off its CPU: (d), or (b). */
		if (rt && !near(p, s, spun))
			help_realtime(p, s);
		return; /* (b) */
	}
	t = near(p, s, spun);
	if (!t) {
		if (wake_one(s)) {
			if (rt || (caller && syslet__policy_reread()))
				help_realtime(p, s);
			return; /* (c) */
		}
		/* Seq_cst: P1, an idle worker reads queued after idle++. */
		if (atomic_load(&s->idle) > 0) {
			/* Not yet running, maybe behind a real-time caller. */
			if (rt)
				help_realtime(p, s);
			return; /* (a) */
		}
		/* Its sleeper steals from @s (worker.c). */
		t = near(p, s, wake_one);
	}
	if (t) {
		/*
		 * A real-time caller may hold its own CPU: the watch runs on
		 * the CPU of the worker we count on, held only if both are.
		 */
		if (rt) {
			ask(s, SYSLET__WANT_WATCH, t->cpu);
			return; /* (b), (c) of another shard, watched (d) */
		}
		ask(s, SYSLET__WANT_WATCH, s->cpu);
		/*
		 * The manager, pinned to the CPU of the worker we count on,
		 * is held there with it if that CPU is: here instead (a
		 * watch asked before may have pinned it there).
		 */
		syslet__manager_unpin_from(t->cpu, s->cpu);
		return; /* (b), (c) of another shard, watched (d) */
	}
	/*
	 * At the cap: (e), nothing to grow (and no manager busy loop). A
	 * worker in a notifier may have died there, though, and the manager
	 * finds it only when it looks: make sure a look is due (manager.c).
	 */
	if (atomic_load_explicit(&p->nworkers, memory_order_relaxed) >=
	    syslet__cfg(&syslet__config()->max_workers)) {
		/*
		 * Marks steer growth, and there is none: a sleeper of a
		 * shard marked held (which may run again, or never was: a
		 * mark is a hint) is all that is left, (c).
		 */
		near_of(p, s, wake_one, true);
		/* Seq_cst: Dekker with the manager's rescan = 0 (P6). */
		if (atomic_load(&p->notifying))
			syslet__manager_rescan();
		return;
	}
	/*
	 * A real-time caller: the manager grows from a covering shard's CPU
	 * (its own may be held by it), and its re-read after the look acts
	 * as for that caller: a worker started on @s that cannot run behind
	 * it is idle, and gets a WATCH_OWN (help_realtime()).
	 */
	if (rt && (t = near_usable(p, s))) {
		(void)atomic_exchange(&s->rt_asked, 1);
		ask(s, SYSLET__WANT_GROW, t->cpu);
		return;
	}
	ask(s, SYSLET__WANT_GROW, -1);
}

void syslet__wake(struct syslet__shard *s)
{
	wake(s, syslet__policy_realtime(), true);
}

void syslet__wake_ran(struct syslet__shard *s)
{
	/* Relaxed: a hint (near()); read first, the line is shared. */
	if (atomic_load_explicit(&s->held, memory_order_relaxed))
		atomic_store_explicit(&s->held, 0, memory_order_relaxed);
}

/*
 * A real-time thread left real time (policy.c) on CPU @cpu (< 0: any):
 * it may have let go a marked shard's CPU, and workers moved off it
 * (worker.c) go back only to a shard not marked held. A mark is a hint:
 * a CPU still held is found again by the next watch.
 */
void syslet__wake_unmark(int cpu)
{
	struct syslet__pool *p = syslet__pool_if_ready();
	int i;

	for (i = 0; p && i < p->nshards; i++)
		if (cpu < 0 || p->shards[i].cpu == cpu)
			syslet__wake_ran(&p->shards[i]);
}

/*
 * A watch found jobs untaken: @t, which covered them with its spinner or
 * a sleeper woken for them, did not run for SYSLET__WATCH_NS. Held (a
 * real-time thread keeps its CPU) until one of its workers runs again:
 * submitters stop counting on it, else each new call would wait a watch
 * of its own. False: near() walks every covering shard.
 */
static bool hold(struct syslet__shard *t)
{
	/* Seq_cst: as in near() and wake_one(). */
	if (atomic_load(&t->spinning) || atomic_load(&t->sleepers) > 0)
		atomic_store_explicit(&t->held, 1, memory_order_relaxed);
	return false;
}

/*
 * Wake for @t if it holds jobs (the re-read of P2, P3 and P4), as a
 * real-time caller would if @rt.
 */
static void recheck(struct syslet__shard *t, bool rt)
{
	/* Seq_cst: P2/P3 with the submitter's queued++. */
	if (atomic_load(&t->queued) > 0)
		wake(t, rt, false);
}

void syslet__wake_busy(struct syslet__shard *s, struct syslet__shard *from,
		       bool spinner)
{
	struct syslet__pool *p = &syslet__pool;
	int i, n = p->nshards;

	/* Seq_cst: P3, then read the queues this worker covered. */
	atomic_fetch_sub(&s->idle, 1);
	if (spinner)
		/* Seq_cst: P2, as above; an RMW (see "Stores" above). */
		(void)atomic_exchange(&s->spinning, 0);
	/* Its own shard and the ones its spinner (or steal) covers. */
	for (i = 0; i <= SYSLET__NEAR && i < n; i++)
		recheck(&p->shards[(s->cpu + n - i) % n], false);
	if (from != s)
		recheck(from, false); /* fan-out of the shard it took from */
}

int syslet__wake_grow(struct syslet__shard *s, uint64_t mark, uint64_t served,
		      long max, int kind)
{
	bool watched = kind != SYSLET__WANT_GROW;
	struct syslet__pool *p = &syslet__pool;
	struct syslet__shard *to = NULL;
	long cap = syslet__cfg(&syslet__config()->max_workers);
	/* Relaxed: see take(); a stale count only delays a start. */
	uint64_t t = atomic_load_explicit(&s->taken, memory_order_relaxed);
	/* Jobs submitted before @mark not taken yet: they waited. */
	long n = (long)(mark - t);
	int ret = 0, started = 0;

	/*
	 * An idle worker or a spinner that covers @s will take them all, one
	 * after another: none, (a) and (b). A worker claims the spinner role
	 * before it posts a completion and goes idle only after: a submitter
	 * on its CPU, woken by that post, may keep it off the CPU past
	 * SYSLET__GROW_NS in between (pipes-mix: 1,005 workers for 1,002
	 * calls and 2 CPUs). Another shard's spinner, only until the jobs
	 * were watched for SYSLET__WATCH_NS: then it cannot run (d).
	 * Seq_cst: P1/P2, they read queued after.
	 */
	if (watched && n > 0)
		near(p, s, hold);
	/*
	 * A real-time caller counted on @s's own workers, and nothing of @s
	 * was taken for the whole watch: @s is held too (the caller keeps its
	 * CPU). A worker of a covering shard steals the jobs (worker.c). Once
	 * @s is marked so, jobs that waited the whole watch get workers there
	 * though some were taken meanwhile (by those started before, which
	 * may block in them: one job per watch, else), want_step at a time.
	 */
	if (kind == SYSLET__WANT_WATCH_OWN && n > 0 &&
	    (t == served ||
	     atomic_load_explicit(&s->held, memory_order_relaxed)) &&
	    (to = near_usable(p, s)))
		atomic_store_explicit(&s->held, 1, memory_order_relaxed);
	else if (atomic_load(&s->idle) > 0 || atomic_load(&s->spinning) ||
		 (!watched && near(p, s, spun)))
		n = 0;
	/* Watched: what syslet__wake() skipped for that spinner, (c). */
	if (watched && !to && !atomic_load(&s->spinning) && wake_one(s))
		n = 0;
	/* Jobs still move: they are served (see the top of the file). */
	if (t != served && !to)
		n = 0;
	if (n > max)
		n = max;
	/*
	 * Marked held: what is pinned to @s's CPU may not run there. Its
	 * idle workers, moved to a covering CPU, take the jobs (new workers
	 * would be more than the calls need, and at the cap the only
	 * takers); the workers started for the rest start there too.
	 */
	if (n > 0 && !to && !unmarked(s))
		to = near_usable(p, s);
	if (to) {
		/*
		 * Seq_cst: as in near(). Idle workers of @to that do not
		 * sleep look at @s before they do ((a): a covering shard's
		 * steal) and take the jobs: those just started for them by
		 * the last look, above all (the mark of @s hides them).
		 */
		long k = atomic_load(&to->idle) - atomic_load(&to->sleepers);

		if (k > 0) /* read apart: it may look negative */
			n -= k;
		if (n > 0)
			n -= syslet__worker_move(s, to->cpu, (int)n);
	}
	while (n-- > 0 && !(ret = syslet__worker_spawn(to ? to : s)))
		started++;
	/* At the cap the next worker to finish takes them: (e). */
	if (ret == -EAGAIN &&
	    atomic_load_explicit(&p->nworkers, memory_order_relaxed) >= cap) {
		atomic_store(&s->want, 0);
		return started;
	}
	if (ret && !started)
		return ret; /* the manager keeps want set and looks later */
	/*
	 * Seq_cst: P4, then look at the queue again; an RMW ("Stores"). As
	 * for a real-time caller if one asked since the last look: a job it
	 * counted on this shard's own CPU for may be newer than this look's
	 * ticket (help_realtime()).
	 */
	(void)atomic_exchange(&s->want, 0);
	recheck(s, atomic_exchange(&s->rt_asked, 0));
	return started;
}
