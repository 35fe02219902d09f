/* SPDX-License-Identifier: MIT */
/*
 * The completion writer: lossless, ordered, multi-producer, no lock
 * (SPEC 4.1, 4.2). Workers of many CPUs post into one ring at once.
 *
 * Side state. Every ring gets a struct syslet__rstate, found by the ring's
 * address in a process-wide table mapped once, lazily, with MAP_NORESERVE
 * (pages are touched only as states are used). States are handed out in
 * order from a dense array (nr_used counts them, so a fork child resets
 * only those); an open-addressing hash of 32-bit slots (state index + 1,
 * 0 = free) finds them. A new state gets its ring pointer written, then is
 * published by a CAS of a free hash slot (release; lookups load slots with
 * acquire). States are never removed, so a state pointer stays valid
 * forever. The hash has twice as many slots as there are states, so a probe
 * always ends at a free slot. Two threads creating the state of one ring at
 * once may waste one state: the loser's stays unreachable.
 *
 * One 64-bit word per ring: head_copy (bits 63..32), reserved (31..1),
 * combining (bit 0). Every change of the word is an atomic RMW (but the
 * single-threaded fork-child reset), so an acquire load of it synchronizes
 * with every release RMW before it.
 *  - reserve (submitter): reads the word (and kernel_head when idle), then
 *    user_tail (acquire); allows
 *    if (head_copy - user_tail) + reserved + 1 <= elements; CAS reserved+1
 *    (release). A combine keeps head_copy + reserved, so every slot a
 *    combiner writes lies below user_tail + elements as read by a
 *    reservation that happens before the write: the slot's previous
 *    completion was consumed. No overwrite.
 *  - unreserve: reserved-1.
 *  - post (worker), uncontended: one CAS takes the combiner's role
 *    (combining bit) and moves the poster's completion from reserved to
 *    head_copy (acquire); the poster writes its slot and publishes it.
 *  - post, contended: push the cnode on the ring's Treiber stack (release)
 *    and wait until it is posted, taking the combiner's role whenever it is
 *    free. A combiner takes the whole stack (exchange, acquire), reverses
 *    it to push order, moves its n completions from reserved to head_copy
 *    in ONE fetch_add (acquire), writes their slots, publishes them, and
 *    repeats while the stack is not empty (a bounded number of rounds).
 *  - publish: kernel_head = head_copy (seq_cst exchange: release, so the
 *    slots are written before the head shows them), then each cnode's
 *    index and posted (release). Finally the combiner clears the
 *    combining bit (release), then makes one wake-up for all it published
 *    if someone waits (no syscall while it holds the role). A poster
 *    waits for nothing but a combiner that is writing; a poster whose
 *    cnode a finished combiner did not take takes the role itself, so no
 *    cnode is stranded. No thread blocks in a syscall on another.
 *  - Since completions leave reserved and enter head_copy in one step that
 *    comes before the kernel_head store, a program that saw a completion
 *    (kernel_head acquire), consumed it and resubmits sees the slot free:
 *    no spurious EBUSY.
 *  - Reuse: a reserve that finds reserved == 0 and combining == 0 takes
 *    head_copy from ring->kernel_head (the ring's memory may have been
 *    initialised again); its CAS on the whole word proves nothing moved.
 *
 * Wake-ups: waiters (wait.c) count themselves in rs->waiters (seq_cst)
 * before they re-check kernel_head (seq_cst) and sleep on its futex; the
 * combiner exchanges kernel_head and later reads the count (both seq_cst):
 * either the waiter sees the new head or the combiner sees the waiter (no
 * lost wake-up), and FUTEX_WAKE is only called when someone waits (SPEC
 * 4.3).
 *
 * Fork: the child has none of the parent's other threads; calls pending
 * there never complete here. syslet__ring_atfork_child() clears reserved,
 * combining, the stack and the waiter count of every state in use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"
#include "fault.h"
#include "ring.h"

#define STATE_BITS 18
#define NR_STATES (1u << STATE_BITS)
#define SLOT_BITS (STATE_BITS + 1)
#define NR_SLOTS (1u << SLOT_BITS)

#define W_COMBINING 1ull
#define W_RES_ONE 2ull
#define W_RES_MAX 0x7fffffffu
#define W_HEAD(w) ((uint32_t)((w) >> 32))
#define W_RES(w) ((uint32_t)((w) >> 1) & W_RES_MAX)

/* Polls of a waiting poster before it yields the CPU to the combiner. */
#define POST_SPINS 64
/* Polls of its own cnode between a waiting poster's looks at the word. */
#define WORD_EVERY 8
/* Batches one combiner takes before it hands the role on. */
#define COMBINE_ROUNDS 16

struct syslet__rstate {
	_Atomic uint64_t word;
	struct syslet__cnode *_Atomic stack;
	_Atomic uint32_t waiters;
	_Atomic uint64_t wakes;
	struct syslet_ring *ring;
} __attribute__((aligned(SYSLET_CACHELINE)));

struct table {
	struct syslet__rstate state[NR_STATES];
	_Atomic uint32_t slot[NR_SLOTS];
};

static struct table *_Atomic table;
static _Atomic uint32_t nr_used;

static _Atomic uint32_t *head_of(struct syslet_ring *ring)
{
	return (_Atomic uint32_t *)&ring->kernel_head;
}

int syslet__ring_check(const struct syslet_ring *ring)
{
	if (!ring)
		return -EFAULT;
	if ((uintptr_t)ring & 7)
		return -EINVAL;
	if (ring->elements == 0 || (ring->elements & (ring->elements - 1)))
		return -EINVAL;
	return 0;
}

static struct table *get_table(void)
{
	struct table *t, *none = NULL;

	/* Acquire: the mapping's creator published it with release. */
	t = atomic_load_explicit(&table, memory_order_acquire);
	if (likely(t))
		return t;
	if (syslet__fault(SYSLET__FAULT_ALLOC))
		return NULL;
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	/* Release/acquire: as above; on failure, take the winner's table. */
	if (atomic_compare_exchange_strong_explicit(&table, &none, t,
						    memory_order_acq_rel,
						    memory_order_acquire))
		return t;
	munmap(t, sizeof(*t));
	return none;
}

static uint32_t home(const struct syslet_ring *ring)
{
	uint64_t h = (uint64_t)(uintptr_t)ring * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> (64 - SLOT_BITS));
}

/* A fresh state for @ring, not yet reachable: its index + 1, or 0. */
static uint32_t new_state(struct table *t, struct syslet_ring *ring)
{
	uint32_t n = atomic_load_explicit(&nr_used, memory_order_relaxed);

	if (syslet__fault(SYSLET__FAULT_ALLOC))
		return 0;
	do {
		if (n >= NR_STATES)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&nr_used, &n, n + 1,
							memory_order_relaxed,
							memory_order_relaxed));
	t->state[n].ring = ring;
	return n + 1;
}

int syslet__ring_state(struct syslet_ring *ring, struct syslet__rstate **rs)
{
	struct table *t = get_table();
	uint32_t i, s, fresh = 0;

	if (!t)
		return -ENOMEM;
	for (i = home(ring);; i = (i + 1) & (NR_SLOTS - 1)) {
		/* Acquire: the state's ring was written before its slot. */
		s = atomic_load_explicit(&t->slot[i], memory_order_acquire);
		if (!s) {
			if (!fresh)
				fresh = new_state(t, ring);
			if (!fresh)
				return -ENOMEM;
			/* Release: publish the state's ring with the slot. */
			if (atomic_compare_exchange_strong_explicit(
				    &t->slot[i], &s, fresh,
				    memory_order_release,
				    memory_order_acquire)) {
				*rs = &t->state[fresh - 1];
				return 0;
			}
		}
		if (t->state[s - 1].ring == ring) {
			*rs = &t->state[s - 1];
			return 0;
		}
	}
}

int syslet__ring_reserve(struct syslet_ring *ring, struct syslet__rstate **rsp)
{
	struct syslet__rstate *rs;
	uint32_t head, tail, res;
	uint64_t w, nw;
	int ret;

	ret = syslet__ring_state(ring, &rs);
	if (ret)
		return ret;
	/* Acquire: the last combiner's kernel_head store, for a resync. */
	w = atomic_load_explicit(&rs->word, memory_order_acquire);
	for (;;) {
		head = W_HEAD(w);
		res = W_RES(w);
		/*
		 * Idle: nothing reserved nor being written, so kernel_head is
		 * the head (and resyncs head_copy after a re-initialized ring).
		 * Acquire: read before the tail below.
		 */
		if (!res && !(w & W_COMBINING))
			head = atomic_load_explicit(head_of(ring),
						    memory_order_acquire);
		/*
		 * The tail after the head: a tail read before it could be far
		 * behind a head that completions the program has since
		 * consumed moved on, and count them twice (a spurious EBUSY).
		 * Acquire: the program's reads of the slots it consumed happen
		 * before our reservation, whose release hands them on to the
		 * combiner that writes those slots again.
		 */
		tail = atomic_load_explicit(
			(_Atomic uint32_t *)&ring->user_tail,
			memory_order_acquire);
		if ((int32_t)(head - tail) < 0) {
			/*
			 * The word is older than the tail: read it again. If it
			 * has not moved, the program's tail is past the head
			 * (a broken ring): refuse, nothing started.
			 */
			nw = atomic_load_explicit(&rs->word,
						  memory_order_acquire);
			if (nw == w)
				return -EBUSY;
			w = nw;
			continue;
		}
		if ((uint64_t)(uint32_t)(head - tail) + res + 1 >
			    ring->elements ||
		    res == W_RES_MAX)
			return -EBUSY;
		nw = (uint64_t)head << 32 | ((w & UINT32_MAX) + W_RES_ONE);
		/* Release: see the tail's acquire. Acquire: as above. */
		if (atomic_compare_exchange_weak_explicit(&rs->word, &w, nw,
							  memory_order_release,
							  memory_order_acquire))
			break;
	}
	*rsp = rs;
	return 0;
}

void syslet__ring_unreserve(struct syslet__rstate *rs)
{
	atomic_fetch_sub_explicit(&rs->word, W_RES_ONE, memory_order_relaxed);
}

/*
 * Write the completions of @first (in order) into the slots claimed for
 * them from @head on, publish them, and mark them posted. The wake-up is
 * drain()'s.
 */
static void publish(struct syslet__rstate *rs, struct syslet__cnode *first,
		    uint32_t head)
{
	struct syslet_ring *ring = rs->ring;
	uint32_t mask = ring->elements - 1;
	struct syslet__cnode *n, *next;
	uint32_t k = 0;

	for (n = first; n; n = n->next, k++) {
		struct syslet_completion *c = &ring->comp[(head + k) & mask];

		c->status = n->status;
		c->caller_data = n->caller_data;
	}
	/*
	 * Seq_cst: release, so the slots are written before the head shows
	 * them; and ordered before the load of waiters, which pairs with the
	 * waiter's count-then-check in wait.c (no lost wake-up).
	 */
	atomic_exchange_explicit(head_of(ring), head + k, memory_order_seq_cst);
	for (k = 0, n = first; n; n = next, k++) {
		next = n->next;
		n->index = head + k;
		/* Release: index set before the owner may read or free @n. */
		atomic_store_explicit(&n->posted, 1, memory_order_release);
	}
}

/*
 * As the combiner: publish what was pushed, batch by batch; hand the role
 * on; wake the waiters if any.
 */
static void drain(struct syslet__rstate *rs)
{
	struct syslet__cnode *n, *next, *first;
	uint32_t head, k;
	int round;

	for (round = 0; round < COMBINE_ROUNDS; round++) {
		/* Only the combiner takes: a stack seen non-empty stays so. */
		if (!atomic_load_explicit(&rs->stack, memory_order_relaxed))
			break;
		/* Acquire: the posters' cnode contents. */
		n = atomic_exchange_explicit(&rs->stack, NULL,
					     memory_order_acquire);
		for (first = NULL, k = 0; n; n = next, k++) {
			next = n->next;
			n->next = first;
			first = n;
		}
		/*
		 * Move k completions from reserved to head_copy. Acquire: the
		 * reservations that made room for these slots, and through
		 * them the program's last reads of the slots.
		 */
		head = W_HEAD(atomic_fetch_add_explicit(
			&rs->word, ((uint64_t)k << 32) - k * W_RES_ONE,
			memory_order_acquire));
		publish(rs, first, head);
	}
	/* Release: head_copy and kernel_head to the next combiner. */
	atomic_fetch_and_explicit(&rs->word, ~W_COMBINING,
				  memory_order_release);
	/*
	 * One wake-up for all the batches, outside the combiner's role.
	 * Seq_cst: after every head exchange above (see publish()).
	 */
	if (atomic_load_explicit(&rs->waiters, memory_order_seq_cst)) {
		syscall(SYS_futex, head_of(rs->ring), FUTEX_WAKE_PRIVATE,
			INT_MAX, NULL, NULL, 0);
		atomic_fetch_add_explicit(&rs->wakes, 1, memory_order_relaxed);
	}
}

void syslet__ring_post(struct syslet__rstate *rs, struct syslet__cnode *n)
{
	struct syslet__cnode *top;
	unsigned int spins = 0;
	uint64_t w;

	atomic_store_explicit(&n->posted, 0, memory_order_relaxed);
	w = atomic_load_explicit(&rs->word, memory_order_relaxed);
	/*
	 * Uncontended: take the combiner's role and move @n's reservation
	 * into head_copy in one step, then publish @n without the stack.
	 * Acquire: the previous combiner's writes and the reservations (as
	 * in drain()).
	 */
	if (!(w & W_COMBINING) &&
	    atomic_compare_exchange_strong_explicit(
		    &rs->word, &w, w + (1ull << 32) - W_RES_ONE + W_COMBINING,
		    memory_order_acquire, memory_order_relaxed)) {
		n->next = NULL;
		publish(rs, n, W_HEAD(w));
		drain(rs);
		return;
	}
	top = atomic_load_explicit(&rs->stack, memory_order_relaxed);
	do {
		n->next = top;
		/* Release: the cnode is filled before a combiner takes it. */
	} while (!atomic_compare_exchange_weak_explicit(&rs->stack, &top, n,
							memory_order_release,
							memory_order_relaxed));
	for (;;) {
		/* Acquire: the combiner that posted @n wrote its index. */
		if (atomic_load_explicit(&n->posted, memory_order_acquire))
			return;
		/*
		 * Look at the word only now and then: each look pulls its
		 * cache line away from the combiner, which writes it for
		 * every batch.
		 */
		if (++spins % WORD_EVERY) {
			cpu_relax();
			continue;
		}
		w = atomic_load_explicit(&rs->word, memory_order_relaxed);
		/* Acquire: the previous combiner's writes (its release). */
		if (!(w & W_COMBINING) &&
		    atomic_compare_exchange_weak_explicit(
			    &rs->word, &w, w | W_COMBINING,
			    memory_order_acquire, memory_order_relaxed)) {
			drain(rs);
			continue;
		}
		if (spins < POST_SPINS * WORD_EVERY)
			cpu_relax();
		else
			sched_yield();
	}
}

struct syslet_ring *syslet__ring_of(const struct syslet__rstate *rs)
{
	return rs->ring;
}

void syslet__ring_waiters_add(struct syslet__rstate *rs, int delta)
{
	/* Seq_cst: pairs with publish()'s head exchange (no lost wake-up). */
	atomic_fetch_add_explicit(&rs->waiters, (uint32_t)delta,
				  memory_order_seq_cst);
}

uint64_t syslet__ring_wakes(const struct syslet__rstate *rs)
{
	return atomic_load_explicit(&rs->wakes, memory_order_relaxed);
}

void syslet__ring_atfork_child(void)
{
	struct table *t = atomic_load_explicit(&table, memory_order_relaxed);
	uint32_t i, n = atomic_load_explicit(&nr_used, memory_order_relaxed);
	struct syslet__rstate *rs;

	for (i = 0; t && i < n; i++) {
		rs = &t->state[i];
		atomic_store_explicit(
			&rs->word,
			atomic_load_explicit(&rs->word, memory_order_relaxed) &
				~(uint64_t)UINT32_MAX,
			memory_order_relaxed);
		atomic_store_explicit(&rs->stack, NULL, memory_order_relaxed);
		atomic_store_explicit(&rs->waiters, 0, memory_order_relaxed);
	}
}
