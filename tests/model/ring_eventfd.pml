/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of a ring's eventfd (src/ring.c "Eventfd",
 * src/ring_eventfd.c, man/syslet_ring_eventfd.3); checked with spin by
 * tests/model/check.sh.
 *
 * Modelled: P producers post C completions each. A post takes the
 * combiner's role, exchanges kernel_head from h to h + 1 (seq_cst), reads
 * whether an eventfd is attached and then user_tail (seq_cst), leaves the
 * role, and writes 1 to the eventfd if user_tail was h (the ring was empty
 * as the consumer saw it). (ring.pml checks the batching combiner; each
 * batch makes this same test with the head it started from.)
 * The program attaches the eventfd while producers already post (attach:
 * efd set, then kernel_head != user_tail means write 1 at once), then
 * loops as an epoll client: sleep until the eventfd is readable (level-
 * triggered epoll_wait; with edge-triggered epoll each write is an edge,
 * the same condition), read it (counter to 0), then consume: look at
 * kernel_head, consume up to it, advance user_tail (seq_cst), look again,
 * until it sees kernel_head == user_tail. PATTERN=1: consume to empty
 * first, then read the eventfd, then consume to empty again.
 *
 * Checked: no lost wake-up: the program never sleeps in epoll_wait for
 * good while a completion is unconsumed (spin reports an invalid end
 * state); every completion is consumed.
 *
 * Known-bug modes, each found by spin:
 *   NAIVE=1: the poster reads user_tail before its head exchange (the
 *     "was it empty" test done first): a consumer that empties the ring in
 *     between sleeps with the new completion unsignalled;
 *   NAIVE=2: the program's advance of user_tail is not ordered before its
 *     next look at kernel_head (a release store and an acquire load, which
 *     a store buffer reorders): the same lost wake-up from the other side;
 *   PARTIAL=1: a program that reads the eventfd, consumes one completion
 *     and goes back to epoll_wait with others left (the contract the man
 *     page states forbids it).
 */
#ifndef P
#define P 2
#endif
#ifndef C
#define C 2
#endif
#ifndef NAIVE
#define NAIVE 0
#endif
#ifndef PATTERN
#define PATTERN 0
#endif
#ifndef PARTIAL
#define PARTIAL 0
#endif
#define N (P * C)
#define START 254

byte kernel_head = START;
byte user_tail = START;
bit comb = 0;
bool efd_on = 0;		/* an eventfd is attached */
byte efd_count = 0;		/* the eventfd's counter */
byte consumed = 0;
byte ndone = 0;

proctype producer()
{
	byte c = 0, h, t;
	bool sig;

	do
	:: c < C ->
		atomic { comb == 0 -> comb = 1 };
		sig = 0;
#if NAIVE == 1
		t = user_tail;
#endif
		h = kernel_head;
		kernel_head = h + 1;
		if
		:: efd_on ->
#if NAIVE != 1
			t = user_tail;
#endif
			sig = (t == h)
		:: else -> skip
		fi;
		comb = 0;
		if
		:: sig -> efd_count++	/* write(efd, 1): wakes epoll */
		:: else -> skip
		fi;
		c++
	:: else -> break
	od;
	ndone++
}

/* consume until the program sees kernel_head == user_tail */
inline consume_all()
{
	do
	:: true ->
#if NAIVE == 2
		/* the tail store may land after the next head load */
		if
		:: user_tail = lt; h = kernel_head
		:: h = kernel_head; user_tail = lt
		fi;
#else
		user_tail = lt;
		h = kernel_head;
#endif
		if
		:: h == lt -> break
		:: else ->
			lt = h;		/* consume the slots up to h */
			consumed = consumed + ((h - user_tail) & 255)
		fi
	od
}

proctype program()
{
	byte h, lt = START;

	/* syslet_ring_eventfd(ring, efd) */
	efd_on = 1;
	if
	:: kernel_head != user_tail -> efd_count++
	:: else -> skip
	fi;
	do
	:: consumed == N -> break
	:: consumed < N ->
		/* epoll_wait: sleeps until the eventfd is readable */
		efd_count > 0;
#if PATTERN == 0
		efd_count = 0;		/* read(efd) */
#endif
#if PARTIAL
		h = kernel_head;
		if
		:: h != lt -> lt = lt + 1; consumed++; user_tail = lt
		:: else -> skip
		fi
#else
		consume_all();
#endif
#if PATTERN == 1
		efd_count = 0;		/* read(efd) */
		consume_all()
#endif
	od;
	assert(kernel_head == user_tail)
}

init
{
	byte p = 0;

	atomic {
		do
		:: p < P -> run producer(); p++
		:: else -> break
		od;
		run program()
	}
}
