/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of the life of a ring's side state (src/ring.c, "Side
 * state and its life"); checked with spin by tests/model/check.sh.
 *
 * Modelled, step for step: R ring addresses whose states share one bucket
 * (the worst case: one chain, one lock, one spare); P threads, each making
 * C uses of a ring it picks: get (under the bucket lock: find the ring's
 * state in the chain and take a reference, else take the spare or a free
 * state, reset it, refs = 1, link it), reserve (reserved + 1), then either
 * give the reservation back or post it (reserved - 1), then put: while
 * refs > 1, CAS refs - 1 without the lock; else under the lock refs - 1
 * and, at 0, unlink (to the spare if it is free, else free the state).
 * An eventfd attacher (EFD=1) takes a reference (get), keeps it while
 * attached, then detaches (put).
 *
 * Checked: every use of a state (reserve, post, put) is of a state that is
 * allocated, linked and belongs to the ring the thread asked for (no use
 * after free, no state shared between rings); a state is unlinked only
 * with nothing reserved (no stale count for the next ring at that
 * address), and a new state starts with nothing reserved; at the end every
 * state is unlinked and refs are 0 (nothing leaked).
 *
 * Known-bug mode NAIVE=1: the last put decrements without the lock, then
 * takes the lock and unlinks: a get that found the state between the two
 * revives a state that is then freed (a use after free, found by spin).
 * NAIVE=2: get takes its reference without the lock, as a lock-free lookup
 * would without type-stable memory: the same race, seen from the other
 * side.
 */
#ifndef P
#define P 3
#endif
#ifndef C
#define C 2
#endif
#ifndef R
#define R 2
#endif
#ifndef EFD
#define EFD 1
#endif
#ifndef NAIVE
#define NAIVE 0
#endif
#define NS 4			/* states the allocator can hand out */
#define NONE 255

bit lck = 0;			/* the bucket lock */
byte linked[R];			/* state of ring r in the chain, or NONE */
byte spare = NONE;
bool alloc[NS];			/* allocated (linked or spare) */
byte owner[NS];			/* ring a linked state belongs to */
byte refs[NS];
byte rsv[NS];			/* the word's reserved count */
byte ndone = 0;

inline lock() { atomic { lck == 0 -> lck = 1 } }
inline unlock() { lck = 0 }

/* a state that is alive and ring r's: every use checks it */
inline check_use(s, r)
{
	assert(s != NONE && alloc[s] && linked[r] == s && owner[s] == r &&
	       refs[s] > 0)
}

inline get(r, s)
{
#if NAIVE == 2
	s = linked[r];
	if
	:: s != NONE -> refs[s]++
	:: else ->
#endif
	lock();
	s = linked[r];
	if
	:: s != NONE -> refs[s]++
	:: else ->
		if
		:: spare != NONE -> s = spare; spare = NONE
		:: else ->
			atomic {
				s = 0;
				do
				:: s < NS && alloc[s] -> s++
				:: else -> break
				od;
				assert(s < NS);
				alloc[s] = 1
			}
		fi;
		assert(rsv[s] == 0);	/* a new state starts clean */
		owner[s] = r;
		refs[s] = 1;
		linked[r] = s
	fi;
	unlock()
#if NAIVE == 2
	fi
#endif
}

inline unlink_state(s, r)
{
	assert(rsv[s] == 0 && linked[r] == s);	/* nothing left reserved */
	linked[r] = NONE;
	if
	:: spare == NONE -> spare = s
	:: else -> alloc[s] = 0
	fi
}

inline put(s, r)
{
	check_use(s, r);
#if NAIVE == 1
	atomic { refs[s]--; ok = refs[s] == 0 };
	if
	:: ok -> lock(); unlink_state(s, r); unlock()
	:: else -> skip
	fi
#else
	atomic {
		if
		:: refs[s] > 1 -> refs[s]--; ok = 1
		:: else -> ok = 0
		fi
	};
	if
	:: !ok ->
		lock();
		refs[s]--;
		if
		:: refs[s] == 0 -> unlink_state(s, r)
		:: else -> skip
		fi;
		unlock()
	:: else -> skip
	fi
#endif
}

proctype user(byte p)
{
	byte c = 0, r, s;
	bool ok;

	do
	:: c < C ->
		if
		:: r = 0
		:: R > 1 -> r = 1
		fi;
		get(r, s);
		/* reserve */
		atomic { check_use(s, r); rsv[s]++ };
		/* post (or the call never started: unreserve) */
		atomic { check_use(s, r); rsv[s]-- };
		put(s, r);
		c++
	:: else -> break
	od;
	ndone++
}

proctype attacher()
{
	byte s;
	bool ok;

	get(0, s);		/* attach: the reference stays */
	check_use(s, 0);
	put(s, 0);		/* detach */
	ndone++
}

init
{
	byte p = 0, s;

	atomic {
		s = 0;
		do
		:: s < R -> linked[s] = NONE; s++
		:: else -> break
		od;
		do
		:: p < P -> run user(p); p++
		:: else -> break
		od;
#if EFD
		run attacher()
#endif
	};
	(ndone == P + EFD);
	s = 0;
	do
	:: s < R -> assert(linked[s] == NONE); s++
	:: else -> break
	od;
	s = 0;
	do
	:: s < NS -> assert(refs[s] == 0 && rsv[s] == 0); s++
	:: else -> break
	od
}
