/* SPDX-License-Identifier: MIT */
/*
 * The completion writer: lossless, ordered, multi-producer, no lock
 * (SPEC 4.1, 4.2). Workers of many CPUs post into one ring at once.
 *
 * Side state and its life. A ring that has something reserved, in flight
 * or an eventfd attached has one struct syslet__rstate, found by the
 * ring's address in a hash of NR_BUCKETS chains; a ring with nothing of
 * the kind has none (a waiter never makes one: see "Wake-ups"). Each chain
 * has a bucket lock (a spinlock, held for a walk of the chain only; never
 * by a poster). rs->refs counts the holders:
 *  - one per reservation, from syslet__ring_reserve() until the post that
 *    delivers it returns or it is given back (syslet__ring_unreserve());
 *  - one while an eventfd is attached (syslet__ring_efd_set());
 *  - one per syslet__ring_get() caller until its syslet__ring_put();
 *  - one for the owner of a cnode posted early (syslet__ring_post_early(),
 *    a cancelled queued call), until the owner's own post of it.
 * Protocol: a reference is only ever taken under the bucket lock (found in
 * the chain, or created and linked there with refs = 1), or by a holder
 * of one (post_early: refs cannot reach 0 meanwhile); a reference is
 * dropped without the lock only while it is not the last (CAS refs > 1 to
 * refs - 1, release); the last one is dropped under the lock (acq_rel),
 * and the state is unlinked in the same critical section.
 * Invariant: a state is in its chain iff refs > 0, and no thread touches a
 * state it holds no reference to. So a lookup racing with the last
 * release either finds the state before it is unlinked (refs 0 -> 1 under
 * the lock: it lives on) or misses it and makes a new one; a freed state
 * is never touched. A poster holds its reservation's reference until
 * syslet__ring_post() returns, so a combiner always works on a live state
 * and so does a poster waiting for its cnode. A state whose last
 * reference goes has nothing reserved, nothing on its stack and nobody
 * combining: every completion of the ring is published and head_copy ==
 * kernel_head. A new state (a new ring at a reused address, or the same
 * ring busy again) starts with nothing reserved, and its first reserve
 * takes the head from ring->kernel_head: no stale count is inherited.
 * Memory: a chain keeps at most one unlinked state as its spare, so what
 * stays allocated is bounded by the rings live at once plus NR_BUCKETS;
 * there is no limit on how many rings a process uses over its life.
 * Cost: a reservation takes a bucket lock once and walks its chain (on
 * average the rings holding a state at once / NR_BUCKETS: ~0.4 us with
 * 100,000 such rings, ~12 us with a million); the post's release of it is
 * lock-free but for the ring's last pending call, which walks it again.
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
 *    One that finds reserved == 0 while a combiner holds the role and
 *    kernel_head != head_copy waits for the word to move: the combiner
 *    either has yet to publish (kernel_head catches up) or published and
 *    the program already initialised the ring again (it leaves the role
 *    and the next look resyncs). Found by test_ring_reclaim.c.
 *
 * Wake-ups: waiters (wait.c) count themselves in the waiter count of the
 * ring's address hash (NR_WAITC counters, process-wide, never allocated)
 * with seq_cst before they re-check kernel_head (seq_cst) and sleep on its
 * futex; the combiner exchanges kernel_head and later reads that count
 * (both seq_cst): either the waiter sees the new head or the combiner sees
 * the waiter (no lost wake-up). FUTEX_WAKE is only called when someone
 * waits on a ring of the same hash (SPEC 4.3; a waiter on another ring of
 * that hash costs a wake-up call that wakes nobody, never a lost one).
 *
 * Eventfd (syslet_ring_eventfd(3), model tests/model/ring_eventfd.pml):
 * rs->efd is the attached descriptor or -1. After its head exchange a
 * combiner that sees an eventfd counts itself in rs->efd_users (seq_cst),
 * reads efd again (seq_cst) and, if still attached, user_tail (seq_cst):
 * if user_tail equals the head before this publish, the ring was empty as
 * the consumer saw it, and the combiner writes 1 to the eventfd once it
 * has left the combiner's role; then it counts itself out (release).
 * The consumer advances user_tail (seq_cst, syslet_ring_advance()) before
 * it looks at kernel_head again (seq_cst): either it sees the new
 * completions or the combiner sees the ring empty and signals. Detaching
 * (or replacing) exchanges efd (seq_cst), then waits until efd_users is 0:
 * a combiner either saw the new value or is waited for, so once
 * syslet_ring_eventfd() returns the old descriptor is never written and
 * the ring's user_tail never read again by the library. The write never
 * blocks: rs->efd carries EFD_BLOCKING beside a descriptor that had no
 * O_NONBLOCK when attached, and such a one is polled for room first (a
 * full counter is readable already; a worker blocked in that write would
 * hold a detach spinning on efd_users until the program reads it).
 *
 * Fork: the child has none of the parent's other threads; calls pending
 * there never complete here. syslet__ring_atfork_child() frees every state
 * but those with an eventfd attached, whose reserved count, combining bit,
 * stack and users it clears; it also clears the bucket locks and the
 * waiter counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"
#include "fault.h"
#include "ring.h"

#define BUCKET_BITS 12
#define NR_BUCKETS (1u << BUCKET_BITS)
#define WAITC_BITS 8
#define NR_WAITC (1u << WAITC_BITS)

#define W_COMBINING 1ull
#define W_RES_ONE 2ull
#define W_RES_MAX 0x7fffffffu
#define W_HEAD(w) ((uint32_t)((w) >> 32))
#define W_RES(w) ((uint32_t)((w) >> 1) & W_RES_MAX)

/* Polls of its own cnode between a waiting poster's looks at the word. */
#define WORD_EVERY 8
/* Batches one combiner takes before it hands the role on. */
#define COMBINE_ROUNDS 16
/*
 * syslet__backoff(): polls, then yields (an equal's turn), then sleeps of
 * 16 us doubling up to 1 ms, which let a preempted holder run even under
 * a real-time waiter on its CPU.
 */
#define BACKOFF_SPINS 64
#define BACKOFF_YIELDS 64
#define BACKOFF_MIN_NS 16000L
#define BACKOFF_DOUBLINGS 6
/* In rs->efd beside the descriptor: it was blocking when attached. */
#define EFD_BLOCKING (1L << 32)

struct syslet__rstate {
	_Atomic uint64_t word;
	struct syslet__cnode *_Atomic stack;
	_Atomic uint32_t refs;
	_Atomic uint32_t efd_users;
	_Atomic long efd; /* -1, or the descriptor | EFD_BLOCKING */
	struct syslet_ring *ring;
	struct syslet__rstate *next; /* the chain, under the bucket lock */
} __attribute__((aligned(SYSLET_CACHELINE)));

struct bucket {
	_Atomic uint32_t lock;
	struct syslet__rstate *first;
	struct syslet__rstate *spare; /* one unlinked state kept for reuse */
};

struct waitc {
	_Atomic uint32_t n;
} __attribute__((aligned(SYSLET_CACHELINE)));

static struct bucket bucket[NR_BUCKETS];
static struct waitc waitc[NR_WAITC];
static _Atomic uint64_t nr_wakes;

static _Atomic uint32_t *head_of(struct syslet_ring *ring)
{
	return (_Atomic uint32_t *)&ring->kernel_head;
}

static _Atomic uint32_t *tail_of(struct syslet_ring *ring)
{
	return (_Atomic uint32_t *)&ring->user_tail;
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

static uint64_t hash(const struct syslet_ring *ring)
{
	return (uint64_t)(uintptr_t)ring * 0x9e3779b97f4a7c15ull;
}

static struct bucket *bucket_of(const struct syslet_ring *ring)
{
	return &bucket[hash(ring) >> (64 - BUCKET_BITS)];
}

static struct waitc *waitc_of(const struct syslet_ring *ring)
{
	return &waitc[hash(ring) >> (64 - WAITC_BITS)];
}

void syslet__backoff(unsigned int *n)
{
	struct timespec ts = { 0, BACKOFF_MIN_NS };
	unsigned int k = ++*n;
	int saved = errno;

	if (k <= BACKOFF_SPINS) {
		cpu_relax();
		return;
	}
	if (k <= BACKOFF_SPINS + BACKOFF_YIELDS) {
		sched_yield();
		return;
	}
	k -= BACKOFF_SPINS + BACKOFF_YIELDS;
	ts.tv_nsec <<= k < BACKOFF_DOUBLINGS ? k : BACKOFF_DOUBLINGS;
	syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
	errno = saved;
}

static void lock(struct bucket *b)
{
	unsigned int spins = 0;

	/* Acquire: the chain as the last holder left it. */
	while (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&b->lock, memory_order_relaxed))
			syslet__backoff(&spins);
}

static void unlock(struct bucket *b)
{
	/* Release: the chain and the refs we changed, to the next holder. */
	atomic_store_explicit(&b->lock, 0, memory_order_release);
}

/* A state for @ring, linked in @b with one reference; NULL if none fits. */
static struct syslet__rstate *create(struct bucket *b, struct syslet_ring *ring)
{
	struct syslet__rstate *rs = b->spare;

	if (rs) {
		b->spare = NULL;
	} else {
		if (syslet__fault(SYSLET__FAULT_ALLOC))
			return NULL;
		rs = aligned_alloc(SYSLET_CACHELINE, sizeof(*rs));
		if (!rs)
			return NULL;
	}
	atomic_init(&rs->word, 0);
	atomic_init(&rs->stack, NULL);
	atomic_init(&rs->refs, 1);
	atomic_init(&rs->efd_users, 0);
	atomic_init(&rs->efd, -1);
	rs->ring = ring;
	rs->next = b->first;
	b->first = rs;
	return rs;
}

int syslet__ring_get(struct syslet_ring *ring, bool make,
		     struct syslet__rstate **rsp)
{
	struct bucket *b = bucket_of(ring);
	struct syslet__rstate *rs;

	lock(b);
	for (rs = b->first; rs && rs->ring != ring; rs = rs->next)
		;
	if (rs)
		/* Relaxed: the bucket lock orders it before the last put. */
		atomic_fetch_add_explicit(&rs->refs, 1, memory_order_relaxed);
	else if (make)
		rs = create(b, ring);
	unlock(b);
	if (!rs)
		return make ? -ENOMEM : -ENOENT;
	*rsp = rs;
	return 0;
}

/* Unlink @rs (refs 0) from @b; returns it if it is to be freed. */
static struct syslet__rstate *unlink_state(struct bucket *b,
					   struct syslet__rstate *rs)
{
	struct syslet__rstate **p;

	for (p = &b->first; *p != rs; p = &(*p)->next)
		;
	*p = rs->next;
	if (b->spare)
		return rs;
	b->spare = rs;
	return NULL;
}

void syslet__ring_put(struct syslet__rstate *rs)
{
	uint32_t r = atomic_load_explicit(&rs->refs, memory_order_relaxed);
	struct syslet__rstate *dead = NULL;
	struct bucket *b;

	while (r > 1) {
		/* Release: our use of @rs before whoever takes refs to 0. */
		if (atomic_compare_exchange_weak_explicit(&rs->refs, &r, r - 1,
							  memory_order_release,
							  memory_order_relaxed))
			return;
	}
	b = bucket_of(rs->ring);
	lock(b);
	/* Acq_rel: every holder's use of @rs before it is unlinked. */
	if (atomic_fetch_sub_explicit(&rs->refs, 1, memory_order_acq_rel) == 1)
		dead = unlink_state(b, rs);
	unlock(b);
	free(dead);
}

int syslet__ring_reserve(struct syslet_ring *ring, struct syslet__rstate **rsp)
{
	struct syslet__rstate *rs;
	uint32_t head, tail, res;
	unsigned int spins = 0;
	uint64_t w, nw;
	int ret;

	ret = syslet__ring_get(ring, true, &rs);
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
		 * Nothing reserved but a combiner still in its role: it has
		 * taken all there was, and kernel_head equals head_copy once
		 * it has published; if they differ, it has not yet, or the
		 * program saw its completions and initialised the ring again
		 * before it left the role. Wait for it to finish (a few
		 * stores), then read again. Acquire: read before the tail.
		 */
		if (!res) {
			uint32_t kh = atomic_load_explicit(
				head_of(ring), memory_order_acquire);

			if (!(w & W_COMBINING)) {
				head = kh;
			} else if (kh != head) {
				syslet__backoff(&spins);
				/* Acquire: as above. */
				w = atomic_load_explicit(&rs->word,
							 memory_order_acquire);
				continue;
			}
		}
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
				goto busy;
			w = nw;
			continue;
		}
		if ((uint64_t)(uint32_t)(head - tail) + res + 1 >
			    ring->elements ||
		    res == W_RES_MAX)
			goto busy;
		nw = (uint64_t)head << 32 | ((w & UINT32_MAX) + W_RES_ONE);
		/* Release: see the tail's acquire. Acquire: as above. */
		if (atomic_compare_exchange_weak_explicit(&rs->word, &w, nw,
							  memory_order_release,
							  memory_order_acquire))
			break;
	}
	*rsp = rs;
	return 0;
busy:
	syslet__ring_put(rs);
	return -EBUSY;
}

void syslet__ring_unreserve(struct syslet__rstate *rs)
{
	atomic_fetch_sub_explicit(&rs->word, W_RES_ONE, memory_order_relaxed);
	syslet__ring_put(rs);
}

/* What a combiner owes once it has left the role. */
struct owed {
	bool efd_user; /* counted in rs->efd_users */
	bool signal; /* published into a ring the consumer saw empty */
	struct syslet__cnode *mine; /* the poster's own cnode */
	void (*then)(void *); /* its syslet__ring_post_then() call, or NULL */
	void *arg;
};

/*
 * After the head exchange that moved kernel_head from @head: was the ring
 * empty as the consumer saw it, and is an eventfd attached to tell it?
 */
static void check_empty(struct syslet__rstate *rs, struct syslet_ring *ring,
			uint32_t head, struct owed *o)
{
	/* Seq_cst: after the head exchange (Dekker with the attacher). */
	if (atomic_load_explicit(&rs->efd, memory_order_seq_cst) < 0)
		return;
	if (!o->efd_user) {
		/* Seq_cst: counted in before efd is read again (detach). */
		atomic_fetch_add_explicit(&rs->efd_users, 1,
					  memory_order_seq_cst);
		o->efd_user = true;
	}
	/*
	 * Seq_cst, both: efd still attached, so the ring is still the
	 * program's to read; the tail load is ordered after the head exchange,
	 * the Dekker pairing with the consumer's advance-then-look.
	 */
	if (atomic_load_explicit(&rs->efd, memory_order_seq_cst) >= 0 &&
	    atomic_load_explicit(tail_of(ring), memory_order_seq_cst) == head)
		o->signal = true;
}

void syslet__efd_signal(int fd, bool blocking)
{
	static const uint64_t one = 1;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int saved = errno;

	/*
	 * A blocking eventfd is written only when it has room: one that has
	 * none holds a full counter, readable already, and a write would
	 * block until the program reads it. EAGAIN from a non-blocking one
	 * means the same.
	 */
	if (blocking && (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT)))
		return;
	/* EBADF: the program closed it while attached (its fault). */
	(void)!write(fd, &one, sizeof(one));
	errno = saved;
}

/* Outside the combiner's role: the eventfd write owed, then count out. */
static void pay(struct syslet__rstate *rs, const struct owed *o)
{
	long v;

	if (!o->efd_user)
		return;
	/* Seq_cst: as in check_empty(). */
	v = atomic_load_explicit(&rs->efd, memory_order_seq_cst);
	if (o->signal && v >= 0)
		syslet__efd_signal((int)(v & INT_MAX), v & EFD_BLOCKING);
	/* Release: our use of the descriptor before a detacher goes on. */
	atomic_fetch_sub_explicit(&rs->efd_users, 1, memory_order_release);
}

/*
 * Write the completions of @first (in order) into the slots claimed for
 * them from @head on, publish them, and mark them posted. The wake-up and
 * the eventfd write are drain()'s.
 */
static void publish(struct syslet__rstate *rs, struct syslet__cnode *first,
		    uint32_t head, struct owed *o)
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
	check_empty(rs, ring, head, o);
	for (k = 0, n = first; n; n = next, k++) {
		next = n->next;
		n->index = head + k;
		/* Release: index set before the owner may read or free @n. */
		atomic_store_explicit(&n->posted, 1, memory_order_release);
	}
}

/*
 * The poster's own step once its cnode is posted, before the wake-ups it
 * owes: a waiter it wakes may take its CPU (a real-time thread on it).
 */
static void call_then(struct owed *o)
{
	/* Acquire: as the poster's wait for its cnode. */
	if (o->then &&
	    atomic_load_explicit(&o->mine->posted, memory_order_acquire)) {
		o->then(o->arg);
		o->then = NULL;
	}
}

/*
 * As the combiner: publish what was pushed, batch by batch; hand the role
 * on; wake the waiters if any.
 */
static void drain(struct syslet__rstate *rs, struct owed *o)
{
	struct syslet_ring *ring = rs->ring;
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
		publish(rs, first, head, o);
	}
	/* Release: head_copy and kernel_head to the next combiner. */
	atomic_fetch_and_explicit(&rs->word, ~W_COMBINING,
				  memory_order_release);
	call_then(o);
	/*
	 * One wake-up for all the batches, outside the combiner's role.
	 * Seq_cst: after every head exchange above (see publish()).
	 */
	if (atomic_load_explicit(&waitc_of(ring)->n, memory_order_seq_cst)) {
		syscall(SYS_futex, head_of(ring), FUTEX_WAKE_PRIVATE, INT_MAX,
			NULL, NULL, 0);
		atomic_fetch_add_explicit(&nr_wakes, 1, memory_order_relaxed);
	}
	pay(rs, o);
	o->efd_user = false;
	o->signal = false;
}

void syslet__ring_post(struct syslet__rstate *rs, struct syslet__cnode *n)
{
	syslet__ring_post_then(rs, n, NULL, NULL);
}

void syslet__ring_post_then(struct syslet__rstate *rs, struct syslet__cnode *n,
			    void (*fn)(void *), void *arg)
{
	struct owed o = { .mine = n, .then = fn, .arg = arg };
	struct syslet__cnode *top;
	unsigned int spins = 0, waits = 0;
	uint64_t w;

	/* Acquire: posted early (syslet__ring_post_early()): its index. */
	if (atomic_load_explicit(&n->posted, memory_order_acquire) ==
	    SYSLET__POSTED_EARLY) {
		if (fn)
			fn(arg);
		syslet__ring_put(rs);
		return;
	}
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
		publish(rs, n, W_HEAD(w), &o);
		drain(rs, &o);
		syslet__ring_put(rs);
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
			break;
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
			drain(rs, &o);
			continue;
		}
		syslet__backoff(&waits);
	}
	call_then(&o); /* posted by another combiner */
	/* Our reservation's reference: the state may go now. */
	syslet__ring_put(rs);
}

void syslet__ring_post_early(struct syslet__rstate *rs, struct syslet__cnode *n)
{
	/*
	 * The owner's reference, taken without the bucket lock: the
	 * caller's reservation holds one, so refs cannot reach 0 meanwhile.
	 * Relaxed: as syslet__ring_get()'s.
	 */
	atomic_fetch_add_explicit(&rs->refs, 1, memory_order_relaxed);
	syslet__ring_post(rs, n);
	/* Relaxed: the owner reads it after a lock the caller holds. */
	atomic_store_explicit(&n->posted, SYSLET__POSTED_EARLY,
			      memory_order_relaxed);
}

struct syslet_ring *syslet__ring_of(const struct syslet__rstate *rs)
{
	return rs->ring;
}

void syslet__ring_waiters_add(const struct syslet_ring *ring, int delta)
{
	/* Seq_cst: pairs with publish()'s head exchange (no lost wake-up). */
	atomic_fetch_add_explicit(&waitc_of(ring)->n, (uint32_t)delta,
				  memory_order_seq_cst);
}

uint64_t syslet__ring_wakes(void)
{
	return atomic_load_explicit(&nr_wakes, memory_order_relaxed);
}

int syslet__ring_efd_set(struct syslet__rstate *rs, int efd, bool blocking)
{
	long v = efd < 0 ? -1 : efd | (blocking ? EFD_BLOCKING : 0), old;
	unsigned int spins = 0;

	/* Seq_cst: Dekker with check_empty()'s count-in then efd load. */
	old = atomic_exchange_explicit(&rs->efd, v, memory_order_seq_cst);
	/*
	 * Seq_cst: the other load of that Dekker pairing (acquire alone may
	 * pass the exchange on a weak machine); it is also acquire, for the
	 * combiners' last use of the old descriptor.
	 */
	while (atomic_load_explicit(&rs->efd_users, memory_order_seq_cst))
		syslet__backoff(&spins);
	return old < 0 ? -1 : (int)(old & INT_MAX);
}

void syslet__ring_atfork_child(void)
{
	struct syslet__rstate *rs, **p;
	struct bucket *b;
	uint32_t i;

	for (i = 0; i < NR_WAITC; i++)
		atomic_store_explicit(&waitc[i].n, 0, memory_order_relaxed);
	for (i = 0; i < NR_BUCKETS; i++) {
		b = &bucket[i];
		atomic_store_explicit(&b->lock, 0, memory_order_relaxed);
		for (p = &b->first; (rs = *p);) {
			if (atomic_load_explicit(&rs->efd,
						 memory_order_relaxed) < 0) {
				*p = rs->next;
				free(rs);
				continue;
			}
			atomic_store_explicit(
				&rs->word,
				atomic_load_explicit(&rs->word,
						     memory_order_relaxed) &
					~(uint64_t)UINT32_MAX,
				memory_order_relaxed);
			atomic_store_explicit(&rs->stack, NULL,
					      memory_order_relaxed);
			atomic_store_explicit(&rs->refs, 1,
					      memory_order_relaxed);
			atomic_store_explicit(&rs->efd_users, 0,
					      memory_order_relaxed);
			p = &rs->next;
		}
	}
}
