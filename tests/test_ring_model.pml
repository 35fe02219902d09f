/* SPDX-License-Identifier: MIT */
/*
 * Description: a Spin model of ring.c's protocol (sequentially consistent:
 * it checks the algorithm, the C11 orders are argued in ring.c). A program
 * submits whenever it likes (EBUSY allowed only when it has E calls pending
 * or unconsumed), consumes with the wait of wait.c; NW
 * workers post with the fast path, the Treiber stack and the combiner role.
 * Checked in every interleaving: no spurious EBUSY (reserve asserts), no
 * slot written before its previous completion was consumed, kernel_head
 * never moving back, every completion delivered exactly once, no poster
 * stranded and no lost wake-up (both would be invalid end states).
 *
 * Run (meson test ring_model does): spin -a test_ring_model.pml &&
 * cc -O2 -DCOLLAPSE -o pan pan.c && ./pan -m100000, and look for
 * "errors: 0". About 1.3M states, 2 s, 200 MB.
 */
#define E 2			/* ring elements */
#define MASK 1
#define NCALLS 4		/* calls the program makes (5: 5.4M states) */
#define NW 2			/* workers */
#define ROUNDS 1		/* COMBINE_ROUNDS, small to hand the role on */

byte h;				/* head_copy */
byte res;			/* reserved */
bit comb;			/* combining */
byte kh;			/* ring->kernel_head */
byte ut;			/* ring->user_tail */
byte slot[E];			/* call id + 1, 0 once consumed */
byte stk[NCALLS];		/* the Treiber stack, top = stk[stklen - 1] */
byte stklen;
bit posted[NCALLS];
byte waiters;
bit asleep;			/* the program sleeps in FUTEX_WAIT */
bit seen[NCALLS];
chan work = [NCALLS] of { byte };

/* Publish batch[0 .. k-1] from head hd on (publish() in ring.c). */
inline publish(hd, k) {
	i = 0;
	do
	:: i < k ->
		assert(slot[(hd + i) & MASK] == 0);	/* no overwrite */
		slot[(hd + i) & MASK] = batch[i] + 1;
		i++
	:: else -> break
	od;
	assert(kh == hd);			/* in order, never back */
	kh = hd + k;
	i = 0;
	do
	:: i < k -> posted[batch[i]] = 1; i++
	:: else -> break
	od
}

/* As the combiner: batches from the stack, hand on, wake (drain()). */
inline drain() {
	rounds = 0;
	do
	:: rounds < ROUNDS && stklen > 0 ->
		atomic {	/* exchange: take the stack, push order */
			k = 0;
			do
			:: k < stklen -> batch[k] = stk[k]; k++
			:: else -> break
			od;
			stklen = 0
		}
		atomic { hd = h; h = h + k; res = res - k }	/* fetch_add */
		publish(hd, k);
		rounds++
	:: else -> break
	od;
	comb = 0;
	if
	:: waiters > 0 -> asleep = 0		/* FUTEX_WAKE */
	:: else
	fi
}

proctype worker()
{
	byte id, hd, k, i, rounds;
	byte batch[NCALLS];

end:	do
	:: work ? id ->
		if
		:: atomic { comb == 0 ->	/* fast path: one CAS */
				comb = 1; hd = h; h++; res-- }
			batch[0] = id;
			publish(hd, 1);
			drain()
		:: else ->
			atomic { stk[stklen] = id; stklen++ }	/* push */
			do
			:: posted[id] -> break
			:: atomic { comb == 0 -> comb = 1 } -> drain()
			od
		fi
	od
}

active proctype program()
{
	byte submitted, consumed, t, id;
	bit ok;

	do
	:: submitted < NCALLS ->
		/* It may try more than E: only those may fail, with EBUSY. */
		t = ut;		/* reserve: tail first, then the word */
		atomic {
			if
			:: res == 0 && comb == 0 -> h = kh	/* resync */
			:: else
			fi;
			if
			:: h - t + res + 1 <= E -> res++; ok = 1
			:: else ->
				assert(submitted - consumed >= E); /* no spurious */
				ok = 0
			fi
		}
		if
		:: ok -> work ! submitted; submitted++
		:: else
		fi
	:: consumed < submitted ->
		waiters++;	/* syslet__ring_wait() */
		do
		:: kh != ut -> break
		:: else ->
			atomic {	/* FUTEX_WAIT: sleeps if unchanged */
				if
				:: kh == ut -> asleep = 1
				:: else
				fi
			}
			asleep == 0
		od;
		waiters--;
		id = slot[ut & MASK];
		assert(id > 0 && !seen[id - 1]);	/* written, once */
		seen[id - 1] = 1;
		slot[ut & MASK] = 0;
		ut++;
		consumed++
	:: consumed == NCALLS -> break
	od
}

init
{
	byte w;

	atomic {
		w = 0;
		do
		:: w < NW -> run worker(); w++
		:: else -> break
		od
	}
}
