/* SPDX-License-Identifier: MIT */
/*
 * The completion writer (internal API, ring.c) and the waiter's side of it
 * (wait.c). Every function returns 0 or -errno; none sets errno.
 */
#ifndef SYSLET_RING_H
#define SYSLET_RING_H

#include <stdbool.h>
#include <stdint.h>

#include <syslet/abi.h>

/*
 * The library's side state of one ring, found by the ring's address; it
 * exists while something holds a reference to it (see ring.c).
 */
struct syslet__rstate;

/* A completion on its way into a ring. Owned by the poster until posted. */
struct syslet__cnode {
	struct syslet__cnode *next; /* ring.c's use only */
	uint64_t status;
	uint64_t caller_data;
	_Atomic uint32_t posted; /* ring.c sets it, release, last */
	uint32_t index; /* free-running index it landed at */
};

/* -EFAULT for NULL, -EINVAL for misalignment or a bad elements. */
int syslet__ring_check(const struct syslet_ring *ring);

/*
 * The side state of @ring with a reference the caller gives back with
 * syslet__ring_put(). If @ring has none: made when @make (-ENOMEM if none
 * fits), else -ENOENT.
 */
int syslet__ring_get(struct syslet_ring *ring, bool make,
		     struct syslet__rstate **rs);

/* Give back a reference; the last one frees the state. */
void syslet__ring_put(struct syslet__rstate *rs);

/*
 * Reserve one slot of @ring for a call about to go pending (SPEC 4.2):
 * succeeds only if completions unconsumed + calls reserved + 1 <= elements.
 * -EBUSY when full (nothing reserved), -ENOMEM if no side state fits.
 * The reservation holds a reference to *@rs until its post returns or it
 * is given back.
 */
int syslet__ring_reserve(struct syslet_ring *ring, struct syslet__rstate **rs);

/* Give back a reservation whose call was never started, and its reference. */
void syslet__ring_unreserve(struct syslet__rstate *rs);

/*
 * Post @n (status, caller_data filled) into the slot reserved for it, in
 * index order, and wake waiters and the eventfd if any. Returns once @n is
 * visible to the program (kernel_head past it); @n->index tells where it
 * landed. Drops the reservation's reference: @rs may be gone after. Never
 * from a signal handler that may have interrupted a post to the same ring
 * (it would wait for itself): workers post with signals blocked.
 */
void syslet__ring_post(struct syslet__rstate *rs, struct syslet__cnode *n);

/*
 * The same, calling @fn(@arg) once @n is visible and before the wake-ups
 * this post makes (of the ring's waiters, its eventfd): what @fn does is
 * seen by the woken, and is not held up when one of them takes the CPU.
 * After @fn the program may reuse the ring's memory (syslet_drain()
 * returned): the post's own FUTEX_WAKE on it may then be spurious, which
 * futex users must allow anyway.
 */
void syslet__ring_post_then(struct syslet__rstate *rs, struct syslet__cnode *n,
			    void (*fn)(void *), void *arg);

/*
 * Post @n now, for a call that will not run (syslet_cancel()): its owner
 * posts @n later all the same, which then only calls its @fn and drops
 * the reference this takes for it. The caller holds a reservation of @rs
 * and a lock the owner takes before it may post (the dequeue lock).
 */
void syslet__ring_post_early(struct syslet__rstate *rs,
			     struct syslet__cnode *n);

/* cnode.posted of a cnode posted early, until its owner's post. */
#define SYSLET__POSTED_EARLY 2u

/* The ring a state belongs to (the caller holds a reference). */
struct syslet_ring *syslet__ring_of(const struct syslet__rstate *rs);

/* In a fork child: forget reservations of calls that stay in the parent. */
void syslet__ring_atfork_child(void);

/*
 * Count a waiter of @ring in (@delta 1) or out (-1); allocates nothing.
 * Seq_cst: a waiter counts itself in before it re-checks kernel_head and
 * sleeps on its futex, so a post either sees it and wakes it, or is seen
 * by it.
 */
void syslet__ring_waiters_add(const struct syslet_ring *ring, int delta);

/* How many FUTEX_WAKE calls posts have made, process-wide (tests). */
uint64_t syslet__ring_wakes(void);

/*
 * Attach eventfd @efd to @rs (-1: detach); @blocking: it lacks O_NONBLOCK.
 * Returns the previous one (or -1). Once it returns no post writes the
 * previous descriptor. The caller manages the attachment's reference
 * (ring_eventfd.c).
 */
int syslet__ring_efd_set(struct syslet__rstate *rs, int efd, bool blocking);

/*
 * Add 1 to eventfd @fd without ever blocking: a @blocking one is polled
 * first and left alone when full (readable already). Errors (EAGAIN: full
 * too) are ignored; errno is kept.
 */
void syslet__efd_signal(int fd, bool blocking);

/*
 * One more round of a wait for another thread (@n counts them, from 0):
 * polls, then sched_yield(), then short sleeps, so that a waiter of any
 * priority lets the thread it waits for run on its CPU (issue 25: a
 * SCHED_FIFO caller spinning with sched_yield() on a preempted worker
 * held it off for ever). Keeps errno.
 */
void syslet__backoff(unsigned int *n);

/* wait.c: the futex wait behind syslet_ring_wait{,_timeout}. */
int syslet__ring_wait(struct syslet_ring *ring, uint32_t user_idx,
		      const struct timespec *timeout);

#endif /* SYSLET_RING_H */
