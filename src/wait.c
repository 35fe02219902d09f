/* SPDX-License-Identifier: MIT */
/*
 * syslet_ring_wait{,_timeout}: sleep until kernel_head leaves user_idx
 * (SPEC 4.3).
 *
 * Shared state: ring->kernel_head (written by the combiner in ring.c,
 * release) and the waiter count of the ring's address hash (ring.c; no
 * allocation: a wait never makes the ring a side state). A waiter counts
 * itself in (seq_cst)
 * before it reads kernel_head (seq_cst) and sleeps on the futex of
 * kernel_head with user_idx as the expected value; the combiner exchanges
 * kernel_head (seq_cst), then reads the count (seq_cst) and wakes only if
 * it is non-zero.
 * Either the waiter sees the new head, or the combiner sees the waiter; and
 * a head that moves between the check and the sleep makes FUTEX_WAIT fail
 * with EAGAIN. So no wake-up is lost and an idle ring costs posts nothing.
 *
 * Before it sleeps, a waiter polls kernel_head for a short while (a
 * per-thread budget of at most WAIT_SPIN_MAX_NS, no store to shared memory):
 * a call handed to a spinning worker usually completes within a few
 * microseconds, and a futex sleep and wake-up cost more than that. The
 * budget doubles when polling found the completion and halves when the
 * waiter had to sleep anyway, so a program whose calls take long stops
 * spending its CPU on the poll (a worker may need that very CPU).
 *
 * The sleep always has an absolute CLOCK_MONOTONIC deadline (a far one when
 * the caller gave none): the kernel then answers EINTR to any signal
 * handler, SA_RESTART or not, which is what SPEC 4.3 promises. Spurious
 * wake-ups loop back to the check; the deadline does not drift.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "fault.h"
#include "ring.h"

#define NSEC_PER_SEC 1000000000L
/* The deadline of a wait without timeout: about 34 years away. */
#define FAR_SEC (1L << 30)
/*
 * Bounds of a waiter's poll before it sleeps. The floor covers one short
 * call on a worker (a buffered 4 KiB ext4 write and the worker's look at
 * the descriptor, ~3 us here): a waiter that slept at once could not
 * learn, since a completion never came within 250 ns, and on a quiet VM
 * every call then paid two wake-ups of an idle virtual CPU (a QD 1 loop
 * of such writes, --quick: 18-48 us a call with a 250 ns floor, 6.6-7.6
 * us with 4 us).
 */
#define WAIT_SPIN_MAX_NS 16000L
#define WAIT_SPIN_MIN_NS 4000L
/* Polls between two readings of the clock. */
#define WAIT_SPIN_POLLS 32

static SYSLET_TLS long spin_ns = WAIT_SPIN_MAX_NS;

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* @now + @rel, or false if it does not fit (then the far deadline). */
static bool deadline_of(struct timespec *dl, const struct timespec *now,
			const struct timespec *rel)
{
	if (rel->tv_sec > FAR_SEC)
		return false;
	dl->tv_sec = now->tv_sec + rel->tv_sec;
	dl->tv_nsec = now->tv_nsec + rel->tv_nsec;
	if (dl->tv_nsec >= NSEC_PER_SEC) {
		dl->tv_nsec -= NSEC_PER_SEC;
		dl->tv_sec++;
	}
	return true;
}

static uint32_t head(struct syslet_ring *ring)
{
	/*
	 * Seq_cst: read after counting ourselves in (the Dekker pairing with
	 * the combiner's seq_cst head exchange, then waiters load), and
	 * acquire for the caller's slot reads.
	 */
	return atomic_load_explicit((_Atomic uint32_t *)&ring->kernel_head,
				    memory_order_seq_cst);
}

static long ns_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * NSEC_PER_SEC +
	       (b->tv_nsec - a->tv_nsec);
}

/*
 * Poll kernel_head for the thread's budget, @limit_ns at most; true if it
 * left @val. @now is the time the poll starts and is updated.
 */
static bool poll_head(struct syslet_ring *ring, uint32_t val,
		      struct timespec *now, long limit_ns)
{
	struct timespec start = *now;
	long budget = spin_ns < limit_ns ? spin_ns : limit_ns;
	int i;

	while (ns_between(&start, now) < budget) {
		for (i = 0; i < WAIT_SPIN_POLLS; i++) {
			if (syslet_ring_head(ring) != val) {
				if (spin_ns < WAIT_SPIN_MAX_NS)
					spin_ns *= 2;
				return true;
			}
			cpu_relax();
		}
		clock_gettime(CLOCK_MONOTONIC, now);
	}
	if (spin_ns > WAIT_SPIN_MIN_NS)
		spin_ns /= 2;
	return false;
}

/* Sleep while kernel_head == @val, until @dl at the latest. */
static int sleep_on(struct syslet_ring *ring, uint32_t val,
		    const struct timespec *dl)
{
	int saved = errno, ret = 0;

	if (syslet__fault(SYSLET__FAULT_FUTEX))
		return 0;
	if (syscall(SYS_futex, &ring->kernel_head,
		    FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val, dl, NULL,
		    FUTEX_BITSET_MATCH_ANY) < 0 &&
	    errno != EAGAIN)
		ret = -errno;
	errno = saved;
	return ret;
}

int syslet__ring_wait(struct syslet_ring *ring, uint32_t user_idx,
		      const struct timespec *timeout)
{
	struct timespec now, dl;
	bool forever = true;
	int ret;

	ret = syslet__ring_check(ring);
	if (ret)
		return ret;
	if (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
			timeout->tv_nsec >= NSEC_PER_SEC))
		return -EINVAL;
	if (syslet_ring_head(ring) != user_idx)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (timeout)
		forever = !deadline_of(&dl, &now, timeout);
	if (poll_head(ring, user_idx, &now,
		      forever ? WAIT_SPIN_MAX_NS : ns_between(&now, &dl)))
		return 0;
	syslet__ring_waiters_add(ring, 1);
	for (;;) {
		if (head(ring) != user_idx) {
			ret = 0;
			break;
		}
		if (forever) {
			dl = now;
			dl.tv_sec += FAR_SEC;
		} else if (!before(&now, &dl)) {
			ret = -ETIMEDOUT;
			break;
		}
		ret = sleep_on(ring, user_idx, &dl);
		if (ret && ret != -ETIMEDOUT)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
	}
	syslet__ring_waiters_add(ring, -1);
	return ret;
}

SYSLET_EXPORT int syslet_ring_wait(struct syslet_ring *ring,
				   unsigned long user_idx)
{
	int ret = syslet__ring_wait(ring, (uint32_t)user_idx, NULL);

	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

SYSLET_EXPORT int syslet_ring_wait_timeout(struct syslet_ring *ring,
					   unsigned long user_idx,
					   const struct timespec *timeout)
{
	int ret = syslet__ring_wait(ring, (uint32_t)user_idx, timeout);

	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}
