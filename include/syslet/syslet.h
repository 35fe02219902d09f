/* SPDX-License-Identifier: MIT */
/*
 * libsyslet: the syslets v7 asynchronous system call ABI in user space.
 *
 * This umbrella header brings the 2007 ABI (<syslet/abi.h>), the helpers a
 * ring consumer needs (static inline, below) and the library's extensions,
 * each marked "Extension" because the 2007 kernel did not have it.
 * See syslet(7).
 */
#ifndef SYSLET_SYSLET_H
#define SYSLET_SYSLET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <syslet/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ring consumer helpers -------------------------------------------- */

/* Bytes needed for a ring of @elements completions (header included). */
static inline size_t syslet_ring_size(uint32_t elements)
{
	return sizeof(struct syslet_ring) +
	       (size_t)elements * sizeof(struct syslet_completion);
}

/*
 * Prepare @ring (syslet_ring_size(@elements) bytes, 8-byte aligned) for use;
 * @elements must be a power of two. Returns 0, or -1 if it is not.
 */
static inline int syslet_ring_init(struct syslet_ring *ring, uint32_t elements)
{
	if (elements == 0 || (elements & (elements - 1)) != 0)
		return -1;
	ring->kernel_head = 0;
	ring->user_tail = 0;
	ring->elements = elements;
	ring->wait_group = 0;
	return 0;
}

/*
 * The library's head. Seq_cst (a plain load on x86_64 and arm64): acquire,
 * so every completion below the value returned is fully written and may be
 * read; and ordered after the program's last syslet_ring_advance() (see
 * there).
 */
static inline uint32_t syslet_ring_head(const struct syslet_ring *ring)
{
	return atomic_load_explicit((_Atomic uint32_t *)&ring->kernel_head,
				    memory_order_seq_cst);
}

/* The completion at free-running index @idx. */
static inline struct syslet_completion *
syslet_ring_slot(struct syslet_ring *ring, uint32_t idx)
{
	return &ring->comp[idx & (ring->elements - 1)];
}

/*
 * Hand @n consumed completions back to the library. Seq_cst: release, so
 * the program's reads of those slots happen before the library may write
 * them again; and ordered before the program's next syslet_ring_head(),
 * the pairing that lets syslet_ring_eventfd() signal only when the ring
 * goes from empty to non-empty without losing a wake-up. A read-modify-
 * write, not a seq_cst store (the program is the only writer): the same
 * cost, and qemu's TCG on an x86 host emulates arm64's store-release then
 * load-acquire (stlr; ldar) with no barrier between them, so a store would
 * pass the next head load there; an atomic RMW is a full barrier in it.
 */
static inline void syslet_ring_advance(struct syslet_ring *ring, uint32_t n)
{
	atomic_fetch_add_explicit((_Atomic uint32_t *)&ring->user_tail, n,
				  memory_order_seq_cst);
}

/* ---- waiting (Extension: the timeout) ---------------------------------- */

/*
 * Like syslet_ring_wait(), but gives up after @timeout (relative,
 * CLOCK_MONOTONIC; NULL waits forever) with -1/ETIMEDOUT.
 */
int syslet_ring_wait_timeout(struct syslet_ring *ring, unsigned long user_idx,
			     const struct timespec *timeout);

/* ---- a ring's eventfd (Extension) -------------------------------------- */

/*
 * Make eventfd @efd readable whenever @ring holds completions the program
 * has not consumed (-1 detaches). The library writes 1 to it when it
 * publishes into a ring the program had emptied: after a wake-up, read the
 * eventfd, then consume until syslet_ring_head() equals user_tail after
 * your last syslet_ring_advance(). Detach before freeing the ring.
 * 0, or -1 with errno EFAULT (NULL ring), EINVAL (bad ring, not an
 * eventfd), EBADF (not an open descriptor), ENOMEM. See
 * syslet_ring_eventfd(3).
 */
int syslet_ring_eventfd(struct syslet_ring *ring, int efd);

/* ---- notifier (Extensions) --------------------------------------------- */

/* Leave the running notifier; the worker carries on. Only from a notifier. */
void syslet_notify_exit(void) __attribute__((noreturn));

/* The completion the running notifier announces; NULL outside notifiers. */
struct syslet_completion *syslet_current_completion(void);

/* ---- pool (Extensions) ------------------------------------------------- */

/*
 * Wait until no call is pending (every completion posted and its notifier
 * finished). Returns 0, or -1/EINTR if a signal handler interrupted it.
 */
int syslet_drain(void);

enum syslet_option {
	SYSLET_OPT_MAX_WORKERS = 1, /* cap on workers, all shards */
	SYSLET_OPT_MIN_WORKERS, /* idle floor kept per shard */
	SYSLET_OPT_PIN, /* 1: pin workers to their CPU */
	SYSLET_OPT_SPIN_NS, /* longest idle spin before sleeping */
	SYSLET_OPT_IDLE_MS, /* idle time before a worker exits */
	SYSLET_OPT_STACK_SIZE, /* worker stack, bytes */
	SYSLET_OPT_CANCEL_SIGNAL, /* syslet_cancel()'s signal, see syslet(7) */
};

/*
 * Set or read one option. Environment variables SYSLET_MAX_WORKERS,
 * SYSLET_MIN_WORKERS, SYSLET_PIN, SYSLET_SPIN_NS, SYSLET_IDLE_MS,
 * SYSLET_STACK_SIZE and SYSLET_CANCEL_SIGNAL give the defaults (read once).
 * EINVAL for an unknown option or a value out of range.
 */
int syslet_config_set(enum syslet_option opt, long value);
long syslet_config_get(enum syslet_option opt);

#define SYSLET_STATS_MAX_SHARDS 64

struct syslet_stats {
	uint64_t submitted; /* calls that went pending */
	uint64_t completed; /* completions posted */
	uint64_t inline_calls; /* calls answered on the caller */
	uint32_t workers_now;
	uint32_t workers_peak;
	uint64_t workers_started;
	uint64_t workers_replaced; /* after a notifier's SYS_exit */
	uint64_t spins; /* idle spins that found work */
	uint64_t sleeps; /* futex sleeps of idle workers */
	uint32_t shards;
	uint32_t queue_depth[SYSLET_STATS_MAX_SHARDS];
};

/*
 * Fill @st (@size is sizeof(*st), so the struct may grow). 0, or -1/EINVAL.
 */
int syslet_stats(struct syslet_stats *st, size_t size);

/* Extension: the counters of one system call number. */
struct syslet_syscall_stats {
	uint64_t inline_calls; /* answered on the caller */
	uint64_t punted; /* went to a worker */
	uint64_t completed; /* completions posted by workers */
	uint64_t cancelled; /* found by syslet_cancel() */
};

/*
 * Fill @st for system call @nr (@size is sizeof(*st)). 0, or -1/EINVAL for
 * a bad @st, @size or @nr.
 */
int syslet_stats_syscall(long nr, struct syslet_syscall_stats *st, size_t size);

/* ---- cancellation (Extension) ------------------------------------------ */

#define SYSLET_CANCEL_ALL 1u /* every match, not just the first */

/*
 * Cancel the pending call(s) of @ring whose caller_data is @caller_data:
 * a queued one completes with -ECANCELED without running; a running one is
 * interrupted as a signal would interrupt it. Each still gets exactly one
 * completion and its notifier. Returns how many it found, or -1/ENOENT,
 * EINVAL (bad flags or ring), EFAULT. @ring NULL: only set the mechanism up
 * (the first call installs a handler for SYSLET_OPT_CANCEL_SIGNAL, see
 * syslet_cancel(3)) and return 0.
 */
int syslet_cancel(struct syslet_ring *ring, uint64_t caller_data,
		  unsigned int flags);

/* ---- classes (Extension) ----------------------------------------------- */

enum syslet_class {
	SYSLET_CLASS_INLINE = 1, /* run on the caller */
	SYSLET_CLASS_TRY = 2, /* try non-blocking, else a worker */
	SYSLET_CLASS_ASYNC = 3, /* always a worker */
};

/* Override the class of system call @nr. 0, or -1/EINVAL. */
int syslet_set_class(long nr, enum syslet_class cls);
/* The class of @nr, or -1/EINVAL for a number out of range. */
int syslet_get_class(long nr);

#ifdef __cplusplus
}
#endif

#endif /* SYSLET_SYSLET_H */
