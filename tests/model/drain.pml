/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of syslet_drain()'s protocol (src/pool.c's top comment,
 * syslet__pool_submit, syslet__pool_finished, pending, reached, drain_wait,
 * syslet_drain; the worker side, src/worker.c, finishes a job with its
 * parity); checked with spin by tests/model/check.sh.
 *
 * Modelled, step for step (each load or store of a shared word is one
 * step, explored in every interleaving: the code's seq_cst accesses):
 *   - J jobs, each a submit (read drain_epoch, parity = its low bit, then
 *     drain_sub[parity]++: the job is queued) and a worker's finish
 *     (drain_fin[parity]++, read drain_waiters, poke if non-zero);
 *   - FOREVER=1: one more job, submitted at any moment, that no worker
 *     ever finishes (a read of a pipe nobody writes);
 *   - ND drainers: drain_waiters++; drain_wait for drain_busy (CAS 0 -> 1);
 *     read the epoch e; drain_wait until parity e + 1 has nothing pending;
 *     store e + 1; drain_wait until parity e has nothing pending; store
 *     drain_busy = 0, read drain_waiters, poke if > 1; drain_waiters--;
 *   - drain_wait: read drain_seq, check (pending(): drain_fin, then
 *     drain_sub; or the CAS), FUTEX_WAIT(drain_seq, seq read) if not
 *     reached, and again; a poke is drain_seq++ then FUTEX_WAKE(all).
 *     FUTEX_WAIT compares and sleeps in one step: "seq != old" blocks
 *     while drain_seq is the value read (EAGAIN at once if it moved).
 *   - INTR=1: a drainer's sleep may end in EINTR, once: it leaves (no
 *     claim (a) then), releasing drain_busy if it had it, maybe after its
 *     flip: the calls of the old parity are left to the next drain.
 * Not modelled: the manager poke for a worker that died in a notifier
 * (drain_waiters and notifying, manager.c).
 * One shard: pending() sums the shards' drain_fin, then their drain_sub;
 * the counters only grow and a job's submit happens before its finish, so
 * a sum of 0 means what one shard's two reads mean: every job counted when
 * the drain_sub reads began was finished.
 *
 * Checked:
 *   (a) safety, an assert as a drainer returns: every job whose
 *       drain_sub++ was done when that drainer began is finished;
 *   (b) no hang, in the state where nothing can move (timeout): every
 *       drainer returned, but one that the forever job may hold: one whose
 *       mark came after the forever job's read of the epoch. The mark is
 *       the drainer's flip of the epoch (MARK=1, the default: what the
 *       design promises, pool.c: "the second wait sees no call submitted
 *       after the flip") or its start (MARK=0: "calls submitted after it
 *       began"); MARK=2 is the start too, the forever job submitted only
 *       while a drainer that flipped holds drain_busy. check.sh keeps both
 *       as known limits, found by spin: a call that lands between a
 *       drain's start and its flip (MARK=0), or one submitted while the
 *       drain waits for drain_busy behind another drain that flipped
 *       (MARK=2: the drain flips later and waits for it), is waited for;
 *   the ghosts (subbed, finned, marked, excused, flipped, must, ended,
 *   asleep, cur) only record, atomically with the step they describe;
 *   (c) no lost wake-up, in that same state: no drainer sleeps in
 *       FUTEX_WAIT while what it waits for holds (drain_busy free, or its
 *       parity with nothing pending).
 *
 * Known-bug modes, each found by spin:
 *   OLD=1: the design before 2b3ca3a: one counter pair, the drain waits
 *     until nothing at all is pending: the forever job submitted after it
 *     began holds it (b);
 *   NO_BUSY=1: two drainers without drain_busy: A flips (0 -> 1) and waits
 *     for parity 0; B starts, flips again (1 -> 2): new calls go back into
 *     parity 0, and a forever call after A's flip holds A (b);
 *   STORE=1: the worker's drain_fin++ a plain store, made visible after
 *     its read of drain_waiters (a store buffer: seq_cst RMW is what
 *     forbids it): the drainer counts, sees one pending and sleeps, the
 *     worker saw no waiter and does not poke (c);
 *   STORE=2: the drainer's release of drain_busy the same, after its read
 *     of drain_waiters: a second drainer's CAS fails, it sleeps, the first
 *     saw one waiter and does not poke (c);
 *   ONE_WAIT=1: two drainers, each waiting only for the parity it flips
 *     away from (not first for the other one): a straggler, a job that
 *     read the epoch before the first drainer's flip and counted after
 *     that drainer's last look, is in the parity the second one never
 *     waits for: the second returns with it pending though its count was
 *     done before it began (a).
 */
#ifndef J
#define J 2
#endif
#ifndef ND
#define ND 1
#endif
#ifndef FOREVER
#define FOREVER 1
#endif
#ifndef MARK
#define MARK 1
#endif
#ifndef OLD
#define OLD 0
#endif
#ifndef NO_BUSY
#define NO_BUSY 0
#endif
#ifndef STORE
#define STORE 0
#endif
#ifndef ONE_WAIT
#define ONE_WAIT 0
#endif
#ifndef INTR
#define INTR 0
#endif
#define BUSY 2			/* drain_wait()'s aim: drain_busy taken */

byte epoch = 0;			/* drain_epoch */
byte sub[2];			/* drain_sub[parity] (OLD: sub[0] alone) */
byte fin[2];			/* drain_fin[parity] */
byte waiters = 0;		/* drain_waiters */
byte seq = 0;			/* drain_seq: never wraps within a run */
bit busy = 0;			/* drain_busy */

/* ghosts */
byte subbed = 0;		/* jobs whose drain_sub++ is done (bit k) */
byte finned = 0;		/* jobs finished (bit k) */
byte marked = 0;		/* drainers past their mark (bit d) */
byte excused = 0;		/* drainers the forever job may hold (bit d) */
bit flipped = 0;		/* drain_busy's holder flipped (MARK=2) */
byte must[ND];			/* jobs counted when drainer d began */
bit ended[ND];			/* drainer d returned */
bit asleep[ND];			/* drainer d in FUTEX_WAIT */
byte cur[ND];			/* what drainer d waits for: BUSY or a parity */

proctype job(byte k)
{
	byte par, w;

end_gate:
	atomic {
#if MARK == 2
		k != J || flipped;	/* the forever job: in a flipped drain */
#endif
#if OLD
		par = 0;
#else
		par = epoch & 1;
#endif
		if
		:: k == J -> excused = ((1 << ND) - 1) & ~marked
		:: else -> skip
		fi
	}
	atomic { sub[par]++; subbed = subbed | (1 << k) }
	if
	:: k == J -> goto done	/* the forever job: never finished */
	:: else -> skip
	fi;
#if STORE == 1
	w = waiters;
#endif
	atomic { fin[par]++; finned = finned | (1 << k) }
#if STORE != 1
	w = waiters;
#endif
	atomic {
		if
		:: w > 0 -> seq++	/* poke: every sleeper's compare fails */
		:: else -> skip
		fi;
		w = 0
	}
done:
	skip
}

proctype drainer(byte d)
{
	byte old, e, f, w, what, phase;
	bool ok, intr = 0;

	atomic {
		must[d] = subbed;
		waiters++;
#if MARK != 1 || OLD
		marked = marked | (1 << d)
#endif
	}
#if OLD
	what = 0;
	phase = 2;
#else
	what = BUSY;
	phase = 0;
#endif
	/* drain_wait(), then the next step (dead locals reset: fewer states) */
	do
	:: old = seq;
		if
		:: what == BUSY ->
#if NO_BUSY
			ok = 1
#else
			atomic {
				ok = (busy == 0);
				if
				:: ok -> busy = 1
				:: else -> skip
				fi
			}
#endif
#if ONE_WAIT
		:: what != BUSY && phase == 1 -> ok = 1	/* no first wait */
		:: what != BUSY && phase != 1 ->
#else
		:: else ->
#endif
			f = fin[what];	/* pending(): finished first */
			atomic { ok = (sub[what] == f); f = 0 }
		fi;
		if
		:: ok && phase == 0 ->
			atomic { e = epoch; what = (e + 1) & 1; phase = 1;
				 old = 0; ok = 0 }
		:: ok && phase == 1 ->
			atomic {
				epoch = e + 1;
				flipped = 1;
#if MARK == 1
				marked = marked | (1 << d);
#endif
				what = e & 1; phase = 2; e = 0; old = 0; ok = 0
			}
		:: ok && phase == 2 -> break
		:: !ok ->
			atomic {
				cur[d] = what;
				asleep[d] = 1;
end_sleep:			if
				:: seq != old	/* FUTEX_WAIT(drain_seq, old) */
#if INTR
				:: !intr -> intr = 1	/* EINTR */
#endif
				fi;
				asleep[d] = 0;
				cur[d] = 0;
				old = 0
			}
#if INTR
			if
			:: intr -> break
			:: else -> skip
			fi
#endif
		fi
	od;
#if !OLD && !NO_BUSY
#if INTR
	/* EINTR before drain_busy was ours: nothing to release */
	if
	:: phase == 0 -> goto out
	:: else -> skip
	fi;
#endif
#if STORE == 2
	w = waiters;
	atomic { busy = 0; flipped = 0 }
#else
	atomic { busy = 0; flipped = 0 }
	w = waiters;
#endif
	atomic {
		if
		:: w > 1 -> seq++
		:: else -> skip
		fi;
		w = 0
	}
#endif
out:
	waiters--;
	atomic {
		assert(intr || (finned & must[d]) == must[d]);	/* (a) */
		ended[d] = 1;
		must[d] = 0
	}
}

/* in the state where nothing can move: (b) and (c) */
active proctype monitor()
{
	byte d = 0;

	timeout;
	do
	:: d < ND ->
		assert(!asleep[d] ||
		       !(cur[d] == BUSY -> busy == 0 :
			 sub[cur[d]] == fin[cur[d]]));	/* (c) */
		assert(ended[d] || (excused & (1 << d)));	/* (b) */
		d++
	:: else -> break
	od
}

init
{
	byte i = 0;

	atomic {
		do
		:: i < J -> run job(i); i++
		:: else -> break
		od;
#if FOREVER
		run job(J);
#endif
		i = 0;
		do
		:: i < ND -> run drainer(i); i++
		:: else -> break
		od
	}
}
