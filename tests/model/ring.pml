/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of the completion ring protocol of SPEC 4 as src/ring.c
 * and src/wait.c implement it; checked with spin by tests/model/check.sh.
 *
 * Modelled, step for step:
 *   - the ring word {head_copy, reserved, combining} (hc, rsv, comb here),
 *     read whole and changed only by atomic read-modify-writes (one atomic
 *     step each);
 *   - reserve: load the word, then user_tail (again on every retry); if
 *     reserved == 0 and not combining, take head from kernel_head
 *     (resync); if reserved == 0, combining and kernel_head != head_copy,
 *     load the word again and retry (a combiner finishing its publish); if head - user_tail is negative (the word is older than
 *     the tail), load the word again, and answer EBUSY only if it did not
 *     move (a broken ring); allowed if (head - user_tail) + reserved + 1
 *     <= elements, else EBUSY; CAS of the whole word (reserved + 1),
 *     retried from the fresh word on failure;
 *   - unreserve (the pool could not take the call; FAULT=1): reserved - 1;
 *   - post, fast path: if not combining, one CAS takes the combiner role
 *     and moves the call from reserved to head_copy, then the combiner
 *     publishes it and drains the stack;
 *   - post, slow path: Treiber push on the ring's stack; then until the
 *     node is posted: if combining is clear, CAS it and drain;
 *   - drain (up to ROUNDS batches): take the whole stack, one fetch_add
 *     moves its k nodes from reserved to head_copy, publish; then clear
 *     combining;
 *   - publish: write slots comp[(head + k) & mask], store kernel_head =
 *     head + k (seq_cst), mark the nodes posted, read the waiter count and
 *     FUTEX_WAKE only if it is non-zero;
 *   - the program's waiter (syslet_ring_wait): return if kernel_head !=
 *     user_idx; else count itself in, then loop { re-check kernel_head;
 *     FUTEX_WAIT(kernel_head, user_idx) } (the futex compares and sleeps
 *     in one step, as the kernel does under its bucket lock), count itself
 *     out. The consumer reads slots user_tail .. kernel_head - 1, then
 *     stores user_tail.
 *
 * Indices are free-running bytes starting at START (254) so that they wrap
 * during the run, as the real 32-bit ones do (256 is a multiple of E).
 *
 * Checked:
 *   (1) no slot is written while it holds an unconsumed completion;
 *   (2) no completion lost or duplicated: every published slot holds a
 *       completion, each accepted call is consumed exactly once, and at
 *       the end reserved == 0 and the stack is empty;
 *   (3) DEPTH=1: the program keeps calls pending + completions unconsumed
 *       <= E (tokens, as a 2007 client's queue depth): EBUSY never happens;
 *   (4) no lost wake-up: the consumer cannot stay asleep while a
 *       completion is published (an invalid end state: spin reports the
 *       consumer blocked in FUTEX_WAIT), and the LTL property `wake`
 *       ([] (asleep -> <> !asleep)) under weak fairness.
 *
 * Limits: spin explores sequentially consistent interleavings; the C11
 * orders of ring.c (seq_cst where the Dekker pairing needs it) are argued
 * in its comments, not here. A poster waiting for its node spins in the
 * real code; here it blocks until it may act, which is equivalent for
 * safety and turns a starved poster into a visible invalid end state.
 *
 * Parameters (spin -D...): P producers, C calls each, E ring elements,
 * DEPTH (1: token-limited program), FAULT (1: reservations may be given
 * back), ROUNDS (batches per combiner turn).
 */
#ifndef P
#define P 3
#endif
#ifndef C
#define C 1
#endif
#ifndef E
#define E 2
#endif
#ifndef DEPTH
#define DEPTH 0
#endif
#ifndef FAULT
#define FAULT 0
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef START
#define START 254
#endif
#define N (P * C)
#define MASK (E - 1)

/* the ring, in the program's memory */
byte kernel_head = START;
byte user_tail = START;
bool filled[E];			/* slot holds an unconsumed completion */
byte sid[E];			/* which call's completion it holds */

/* the library's side state */
byte hc = START;		/* word: head_copy */
byte rsv = 0;			/* word: reserved */
bool comb = 0;			/* word: combining */
int stack = 0;			/* bit i: call i's node is on the stack */
bool posted[N];
byte waiters = 0;
bool asleep = 0;		/* the consumer sleeps in FUTEX_WAIT */

/* the program's bookkeeping, for the checks */
byte tokens = E;		/* DEPTH=1: free queue depth */
bool acc[N];			/* call went pending (slot reserved) */
bool got[N];			/* its completion was consumed */
byte accepted = 0;
byte consumed = 0;
byte ndone = 0;

ltl wake { [] (asleep -> <> !asleep) }

/* write the completions of @taken from @h on, publish, wake if needed */
inline publish(taken, h)
{
	/* the slots are the combiner's until kernel_head shows them: one step */
	atomic {
		k = 0;
		i = 0;
		do
		:: i < N ->
			if
			:: taken & (1 << i) ->
				/* (1) never overwrite an unconsumed slot */
				assert(!filled[(h + k) & MASK]);
				sid[(h + k) & MASK] = i;
				filled[(h + k) & MASK] = 1;
				k++
			:: else -> skip
			fi;
			i++
		:: else -> break
		od
	};
	kernel_head = h + k;
	atomic {
		i = 0;
		do
		:: i < N ->
			if
			:: taken & (1 << i) -> posted[i] = 1
			:: else -> skip
			fi;
			i++
		:: else -> break
		od
	};
	if
	:: waiters > 0 -> asleep = 0	/* FUTEX_WAKE */
	:: else -> skip
	fi
}

/* the combiner's loop; the caller holds comb */
inline drain()
{
	round = 0;
	do
	:: round < ROUNDS && stack != 0 ->
		atomic { taken = stack; stack = 0 };
		/* fetch_add: k completions from reserved to head_copy */
		atomic {
			h = hc;
			k = 0;
			i = 0;
			do
			:: i < N ->
				if
				:: taken & (1 << i) -> k++
				:: else -> skip
				fi;
				i++
			:: else -> break
			od;
			assert(rsv >= k);
			hc = hc + k;
			rsv = rsv - k
		};
		publish(taken, h);
		round++
	:: else -> break
	od;
	comb = 0
}

proctype producer(byte p)
{
	byte c = 0, id, lh, lwh, lr, lt, h, k, i, round;
	bool lc, ok;
	int taken;

	do
	:: c < C ->
		id = p * C + c;
#if DEPTH
		atomic { tokens > 0 -> tokens-- };
#endif
		/* reserve: the word (kernel_head if idle), then the tail */
		atomic { lwh = hc; lr = rsv; lc = comb };
		do
		:: lh = lwh;
			if
			:: lr == 0 && !lc -> lh = kernel_head
			:: lr == 0 && lc && kernel_head != lwh ->
				/* a combiner still publishing: wait for the word */
				atomic { lwh = hc; lr = rsv; lc = comb };
				goto again
			:: else -> skip
			fi;
			lt = user_tail;
			if
			:: ((lh - lt) & 255) >= 128 ->
				/* the word is older than the tail: read it again */
				atomic {
					if
					:: hc == lwh && rsv == lr && comb == lc ->
						ok = 0	/* a broken ring: EBUSY */
					:: else ->
						lwh = hc; lr = rsv; lc = comb; ok = 1
					fi
				};
				if
				:: ok -> goto again
				:: else ->
#if DEPTH
					assert(false);
#endif
					goto next
				fi
			:: ((lh - lt) & 255) < 128 &&
			   ((lh - lt) & 255) + lr + 1 > E ->
				/* EBUSY: nothing reserved, nothing run */
#if DEPTH
				/* (3) never with the queue depth <= E */
				assert(false);
#endif
				goto next
			:: else -> skip
			fi;
			/* CAS of the whole word; on failure, the fresh word */
			atomic {
				if
				:: hc == lwh && rsv == lr && comb == lc ->
					hc = lh; rsv++; ok = 1
				:: else ->
					lwh = hc; lr = rsv; lc = comb; ok = 0
				fi
			};
			if
			:: ok -> break
			:: else -> skip
			fi;
again:
			skip
		od;
#if FAULT
		if
		:: skip
		:: rsv-- ; goto next	/* unreserve: the call never started */
		fi;
#endif
		acc[id] = 1;
		accepted++;
		/* post, fast path: combiner role and the slot in one CAS */
		atomic {
			if
			:: !comb -> h = hc; hc++; rsv--; comb = 1; ok = 1
			:: else -> ok = 0
			fi
		};
		if
		:: ok ->
			taken = 1 << id;
			publish(taken, h);
			drain()
		:: else ->
			atomic { stack = stack | (1 << id) };
			do
			:: posted[id] -> break
			:: !posted[id] && !comb ->
				atomic {
					if
					:: !comb -> comb = 1; ok = 1
					:: else -> ok = 0
					fi
				};
				if
				:: ok -> drain()
				:: else -> skip
				fi
			od
		fi;
		goto done;
next:
#if DEPTH
		tokens++;
#endif
		skip;
done:
		c++
	:: else -> break
	od;
	ndone++
}

proctype consumer()
{
	byte t, id, i;

	do
	:: ndone == P && consumed == accepted -> break
	:: kernel_head != user_tail ->
		t = user_tail;
		/* (2) every published slot holds a completion, seen once */
		assert(filled[t & MASK]);
		id = sid[t & MASK];
		assert(acc[id] && !got[id]);
		got[id] = 1;
		filled[t & MASK] = 0;
		consumed++;
		user_tail = t + 1;
#if DEPTH
		tokens++;
#endif
		skip
	:: consumed < accepted && kernel_head == user_tail ->
		/* syslet_ring_wait(ring, user_tail) */
		t = user_tail;
		if
		:: kernel_head != t -> skip
		:: else ->
			waiters++;
			do
			:: kernel_head != t -> break
			:: else ->
				atomic {
					if
					:: kernel_head == t -> asleep = 1
					:: else -> skip
					fi
				};
				!asleep
			od;
			waiters--
		fi
	od;
	i = 0;
	do
	:: i < N -> assert(acc[i] == got[i]); i++
	:: else -> break
	od;
	assert(kernel_head == user_tail && hc == kernel_head && rsv == 0 &&
	       stack == 0 && !comb)
}

init
{
	byte p = 0;

	atomic {
		do
		:: p < P -> run producer(p); p++
		:: else -> break
		od;
		run consumer()
	}
}
