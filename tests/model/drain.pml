/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of syslet_drain()'s protocol (src/pool.c's top comment,
 * drain_count, syslet__pool_finished, pending, reached, drain_wait,
 * syslet_drain; the worker side, src/worker.c, finishes a job with its
 * slot); checked with spin by tests/model/check.sh.
 *
 * Modelled, step for step (each load or store of a shared word is one
 * step, explored in every interleaving: the code's seq_cst accesses):
 *   - J jobs, each a submit (read drain_epoch e, slot = e % SLOTS, then
 *     drain_sub[slot]++, then read the epoch again: moved, the count
 *     moves: drain_fin[slot]++ (with its poke), e = the epoch now,
 *     drain_sub[new slot]++, and again) and a worker's finish
 *     (drain_fin[slot]++, read drain_waiters, poke if non-zero);
 *   - FOREVER=1: one more job that no worker ever finishes (a read of a
 *     pipe nobody writes), submitted at any moment but one (the gate,
 *     below);
 *   - ND drainers: drain_waiters++; read the epoch e; drain_wait(PAST):
 *     the epoch is not e, else slot e + 1 has nothing pending (drain_fin,
 *     then drain_sub) and then CAS(epoch, e, e + 1), and if that won,
 *     read drain_waiters, poke if > 1; drain_wait(DONE): read the epoch
 *     now, then for d = 1..SLOTS, slot e + d unless now - e >= d: nothing
 *     pending; drain_waiters--;
 *   - drain_wait: read drain_seq, check, FUTEX_WAIT(drain_seq, seq read)
 *     if not reached, and again; a poke is drain_seq++ then FUTEX_WAKE.
 *     FUTEX_WAIT compares and sleeps in one step.
 *   - INTR=1: a drainer's sleep may end in EINTR, once: it leaves (no
 *     claim (a) then), maybe after its flip.
 * Not modelled: the manager poke for a worker that died in a notifier.
 * One shard: pending() sums the shards' drain_fin, then their drain_sub;
 * the counters only grow and a job's submit happens before its finish, so
 * a sum of 0 means what one shard's two reads mean.
 *
 * Checked:
 *   (a) safety, an assert as a drainer returns: every job pending when
 *       that drainer began (its submit returned: counted, the epoch read
 *       again) is finished;
 *   (b) no hang, in the state where nothing can move (timeout): every
 *       drainer returned, but those the forever job may hold: the ones
 *       not yet begun when its submit returned (its last read of the
 *       epoch). The forever job never reads the epoch while a begun
 *       drainer could flip at once (its epoch still e, slot e + 1 empty):
 *       that window between a drain's read of the
 *       epoch and its flip is the design's one limit (a call landing
 *       there is waited for; LIMIT=1 opens the gate and spin finds it).
 *       Where a drainer's flip has to wait (slot e + 1 holds an older
 *       call), the forever job may come, and must not hold it: the turns
 *       of the design before (OLD=1), found by spin;
 *   (c) no lost wake-up, in that same state: no drainer sleeps in
 *       FUTEX_WAIT while what it waits for holds.
 *
 * Known-bug modes, each found by spin:
 *   OLD=1: the earlier design: two parities and one drainer at a time
 *     (drain_busy): it waits until the parity that is not the epoch's has
 *     nothing pending, flips, waits for the old parity. Drain A flipped
 *     and waits for an older call X; drain B begins and waits for
 *     drain_busy; the forever call comes, in A's new parity; X ends, A
 *     returns, B flips and waits for that parity: held (b);
 *   SLOTS=2: the new design with two slots has the same limit: B's flip
 *     waits for X's slot (b);
 *   LATE_MOVE=1: the count moves only once the epoch moved SLOTS - 1 or
 *     more: a submitter that read the epoch before a drain's
 *     flip and counted after it stays in that drain's slot, and holds a
 *     drain begun before its submit returned (b);
 *   NO_MOVE=1: a submit that does not read the epoch again: a straggler
 *     that read it, then counted after SLOTS - 1 flips, lands in a slot
 *     re-used under it, which a drain begun before that flip skips (a);
 *   NO_POKE=1: a flip that does not poke: a drainer that read the epoch
 *     before it sleeps on a slot the flip re-used (c);
 *   STORE=1: the worker's drain_fin++ a plain store, made visible after
 *     its read of drain_waiters (c).
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
#ifndef SLOTS
#define SLOTS 4
#endif
#ifndef OLD
#define OLD 0
#endif
#ifndef NO_MOVE
#define NO_MOVE 0
#endif
#ifndef NO_POKE
#define NO_POKE 0
#endif
#ifndef STORE
#define STORE 0
#endif
#ifndef INTR
#define INTR 0
#endif
#ifndef LIMIT
#define LIMIT 0
#endif
#ifndef LATE_MOVE
#define LATE_MOVE 0
#endif
#if OLD
#undef SLOTS
#define SLOTS 2
#undef NO_MOVE
#define NO_MOVE 1
#endif
#define PAST 0
#define DONE 1
#define BUSY 2			/* OLD: drain_wait()'s aim, drain_busy taken */

byte epoch = 0;			/* drain_epoch: never wraps within a run */
byte sub[SLOTS];		/* drain_sub[slot] */
byte fin[SLOTS];		/* drain_fin[slot] */
byte waiters = 0;		/* drain_waiters */
byte seq = 0;			/* drain_seq */
bit busy = 0;			/* OLD: drain_busy */

/* ghosts */
byte subbed = 0;		/* jobs whose first drain_sub++ is done (bit k) */
byte finned = 0;		/* jobs finished (bit k) */
byte begun = 0;			/* drainers begun (bit d) */
byte excused = 0;		/* drainers the forever job may hold (bit d) */
byte must[ND];			/* jobs counted when drainer d began */
bit ended[ND];			/* drainer d returned */
bit asleep[ND];			/* drainer d in FUTEX_WAIT */
byte aim[ND];			/* what drainer d waits for */
byte ed[ND];			/* drainer d's epoch e (OLD: the epoch at its look) */
bit seen_e[ND];			/* drainer d has read its e */
bit flipped[ND];		/* drainer d flipped (OLD) */

#define EMPTY(s) (sub[(s) % SLOTS] == fin[(s) % SLOTS])
/* slot e + dd is no concern of a drain of epoch e */
#define FREE(e, dd) (epoch - (e) >= (dd) || EMPTY((e) + (dd)))
#if SLOTS == 2
#define ALL_FREE(e) (FREE(e, 1) && FREE(e, 2))
#else
#define ALL_FREE(e) (FREE(e, 1) && FREE(e, 2) && FREE(e, 3) && FREE(e, 4))
#endif

/* drainer d could flip at once: the gate of the forever job is shut */
#if OLD
#define SHUT(d) ((begun & (1 << d)) && !ended[d] && !flipped[d] && \
		 (busy == 0 || aim[d] != BUSY) && EMPTY(epoch + 1))
#else
#define SHUT(d) ((begun & (1 << d)) && !ended[d] && \
		 (!seen_e[d] || (epoch == ed[d] && EMPTY(ed[d] + 1))))
#endif
#if LIMIT
#define GATE 1
#elif ND == 1
#define GATE (!SHUT(0))
#elif ND == 2
#define GATE (!SHUT(0) && !SHUT(1))
#else
#define GATE (!SHUT(0) && !SHUT(1) && !SHUT(2))
#endif

proctype job(byte k)
{
	byte e, now, sl, w;

end_gate:
	atomic {
		k != J || GATE;
		e = epoch;
		sl = e % SLOTS;
#if NO_MOVE
		if
		:: k == J -> excused = ((1 << ND) - 1) & ~begun
		:: else -> skip
		fi
#endif
	}
#if NO_MOVE
	atomic { sub[sl]++; subbed = subbed | (1 << k) }
#else
	sub[sl]++;
	do
	:: atomic {
		/* the read after the count; its submit returns if it stays */
		k != J || GATE;
		now = epoch;
		if
#if LATE_MOVE
		:: now - e < SLOTS - 1 ->
#else
		:: now == e ->
#endif
			subbed = subbed | (1 << k);
			if
			:: k == J -> excused = ((1 << ND) - 1) & ~begun
			:: else -> skip
			fi;
			now = 0;
			break
		:: else -> skip
		fi
	   };
		/* moved: the old slot's count undone as a finish */
		fin[sl]++;
		w = waiters;
		atomic {
			if
			:: w > 0 -> seq++
			:: else -> skip
			fi;
			w = 0
		}
		atomic { e = now; sl = e % SLOTS; now = 0 }
		sub[sl]++
	od;
#endif
	if
	:: k == J -> goto done	/* the forever job: never finished */
	:: else -> skip
	fi;
#if STORE == 1
	w = waiters;
#endif
	atomic { fin[sl]++; finned = finned | (1 << k) }
#if STORE != 1
	w = waiters;
#endif
	atomic {
		if
		:: w > 0 -> seq++
		:: else -> skip
		fi;
		w = 0
	}
done:
	skip
}

#if OLD
/* The earlier design (its model, unchanged in substance) */
proctype drainer(byte d)
{
	byte old, e, f, w, what;
	bool ok, intr = 0;

	atomic { must[d] = subbed; waiters++; begun = begun | (1 << d) }
	what = BUSY;
	aim[d] = BUSY;
	do
	:: old = seq;
		if
		:: what == BUSY ->
			atomic {
				ok = (busy == 0);
				if
				:: ok -> busy = 1
				:: else -> skip
				fi
			}
		:: else ->
			f = fin[what];
			atomic { ok = (sub[what] == f); f = 0 }
		fi;
		if
		:: ok && what == BUSY ->
			atomic { e = epoch; what = (e + 1) & 1; aim[d] = what;
				 old = 0; ok = 0 }
		:: ok && what == ((e + 1) & 1) && !flipped[d] ->
			atomic {
				epoch = e + 1;
				flipped[d] = 1;
				what = e & 1; aim[d] = what; e = 0; old = 0; ok = 0
			}
		:: ok && flipped[d] -> break
		:: !ok ->
			atomic {
				asleep[d] = 1;
end_sleep:			if
				:: seq != old
#if INTR
				:: !intr -> intr = 1
#endif
				fi;
				asleep[d] = 0;
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
	if
	:: what == BUSY -> goto out
	:: else -> skip
	fi;
	busy = 0;
	w = waiters;
	atomic {
		if
		:: w > 1 -> seq++
		:: else -> skip
		fi;
		w = 0
	}
out:
	waiters--;
	atomic {
		assert(intr || (finned & must[d]) == must[d]);	/* (a) */
		ended[d] = 1;
		must[d] = 0
	}
}
#else
proctype drainer(byte d)
{
	byte old, e, f, w, what = PAST, dd, now;
	bool ok, intr = 0;

	atomic { must[d] = subbed; waiters++; begun = begun | (1 << d) }
	atomic { e = epoch; ed[d] = e; seen_e[d] = 1; aim[d] = PAST }
	do
	:: old = seq;
		if
		:: what == PAST ->
			if
			:: epoch != e -> ok = 1
			:: else ->
				f = fin[(e + 1) % SLOTS];
				atomic { ok = (sub[(e + 1) % SLOTS] == f); f = 0 }
				if
				:: ok ->
					atomic {
						if
						:: epoch == e -> epoch = e + 1; w = 1
						:: else -> w = 0
						fi
					}
#if !NO_POKE
					if
					:: w -> w = waiters
					:: else -> skip
					fi;
					atomic {
						if
						:: w > 1 -> seq++
						:: else -> skip
						fi;
						w = 0
					}
#else
					w = 0
#endif
				:: else -> skip
				fi
			fi
		:: else ->
			now = epoch;
			dd = 1;
			ok = 1;
			do
			:: dd > SLOTS -> break
			:: dd <= SLOTS && now - e >= dd -> dd++
			:: dd <= SLOTS && now - e < dd ->
				f = fin[(e + dd) % SLOTS];
				atomic {
					ok = (sub[(e + dd) % SLOTS] == f);
					f = 0;
					if
					:: ok -> dd++
					:: else -> dd = SLOTS + 1
					fi
				}
			od;
			atomic { dd = 0; now = 0 }
		fi;
		if
		:: ok && what == PAST ->
			atomic { what = DONE; aim[d] = DONE; old = 0; ok = 0 }
		:: ok && what == DONE -> break
		:: !ok ->
			atomic {
				asleep[d] = 1;
end_sleep:			if
				:: seq != old	/* FUTEX_WAIT(drain_seq, old) */
#if INTR
				:: !intr -> intr = 1	/* EINTR */
#endif
				fi;
				asleep[d] = 0;
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
	waiters--;
	atomic {
		assert(intr || (finned & must[d]) == must[d]);	/* (a) */
		ended[d] = 1;
		must[d] = 0
	}
}
#endif

/* in the state where nothing can move: (b) and (c) */
active proctype monitor()
{
	byte d = 0;

	timeout;
	do
	:: d < ND ->
#if OLD
		assert(!asleep[d] ||
		       !(aim[d] == BUSY -> busy == 0 :
			 sub[aim[d]] == fin[aim[d]]));	/* (c) */
#else
		assert(!asleep[d] ||
		       !(aim[d] == PAST ->
			 (epoch != ed[d] || EMPTY(ed[d] + 1)) :
			 ALL_FREE(ed[d])));	/* (c) */
#endif
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
