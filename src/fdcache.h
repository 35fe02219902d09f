/* SPDX-License-Identifier: MIT */
/*
 * Facts about a descriptor number (flags, file type, file system kind),
 * cached so that a try costs no system call beyond the transfer itself.
 * The cache cannot be proven fresh (a number is re-bound by close()+open(),
 * dup2(), F_SETFL outside the library); it is self-correcting instead, see
 * fdcache.c. Internal; functions return facts (>= 0) or -errno.
 */
#ifndef SYSLET_FDCACHE_H
#define SYSLET_FDCACHE_H

#include <stdatomic.h>
#include <stdint.h>
#if !defined(__x86_64__)
#include <time.h>
#endif

enum {
	SYSLET__FD_VALID = 1 << 0, /* the word holds facts */
	SYSLET__FD_DIRECT = 1 << 1, /* O_DIRECT */
	SYSLET__FD_NONBLOCK = 1 << 2, /* O_NONBLOCK */
	SYSLET__FD_APPEND = 1 << 3, /* O_APPEND */
	SYSLET__FD_DISK = 1 << 4, /* regular file or block device */
	SYSLET__FD_REG = 1 << 5, /* regular file */
	SYSLET__FD_MEM = 1 << 6, /* regular file of a memory-backed fs */
	SYSLET__FD_SOCK = 1 << 7, /* socket */
	SYSLET__FD_SIGNALFD = 1 << 8, /* signalfd: bound to the caller */
	SYSLET__FD_NOWAIT_WR = 1 << 9, /* its fs refused a RWF_NOWAIT write */
	SYSLET__FD_FACTS = 0xffff, /* the facts; above: when they were read */
};

/*
 * A word's facts are re-read on a worker once they are older than this
 * (2^SYSLET__FD_AGE_SHIFT ticks a unit, about a millisecond; 16 bits).
 */
#define SYSLET__FD_AGE_SHIFT 21
#define SYSLET__FD_MAX_AGE 8

/* Numbers below this are cached (chunks of 1024, allocated on first use). */
#define SYSLET__FD_CHUNK_SHIFT 10
#define SYSLET__FD_CHUNKS 1024
#define SYSLET__FD_LIMIT (SYSLET__FD_CHUNKS << SYSLET__FD_CHUNK_SHIFT)

extern _Atomic(_Atomic uint64_t *) syslet__fd_dir[SYSLET__FD_CHUNKS];

/* Read the facts of @fd now, store them, return them (or -errno). */
long syslet__fd_fresh(long fd);

/*
 * Add @bit to the facts of @fd if they are still @f (what the caller
 * learnt by a try, e.g. SYSLET__FD_NOWAIT_WR).
 */
void syslet__fd_learn(long fd, long f, long bit);

/* Forget what is cached about @fd (a call re-bound or changed it). */
void syslet__fd_forget(long fd);

/* Forget [@lo, @hi] (close_range). */
void syslet__fd_forget_range(unsigned long lo, unsigned long hi);

/*
 * After a call through indirect() that ran on the caller or a worker:
 * forget the cached facts of every descriptor number it re-bound or made
 * (close, dup2, fcntl F_SETFL, socket, ...), given its result @r.
 */
void syslet__fd_rebound(long nr, const long arg[6], long r);

/* Cached facts of @fd (one relaxed load), or 0 if none are. */
static inline long syslet__fd_cached(long fd)
{
	_Atomic uint64_t *chunk;
	uint64_t w;

	if ((unsigned long)fd < SYSLET__FD_LIMIT) {
		/* acquire: the chunk's zeroed entries before its pointer */
		chunk = atomic_load_explicit(
			&syslet__fd_dir[fd >> SYSLET__FD_CHUNK_SHIFT],
			memory_order_acquire);
		if (chunk) {
			w = atomic_load_explicit(
				&chunk[fd & ((1 << SYSLET__FD_CHUNK_SHIFT) - 1)],
				memory_order_relaxed);
			if (w & SYSLET__FD_VALID)
				return (long)(w & SYSLET__FD_FACTS);
		}
	}
	return 0;
}

/* Facts of @fd: one relaxed load when cached, else syslet__fd_fresh(). */
static inline long syslet__fd_facts(long fd)
{
	long f = syslet__fd_cached(fd);

	return f ? f : syslet__fd_fresh(fd);
}

/* A cheap clock (TSC ticks on x86_64) for the stall check. */
static inline uint64_t syslet__fd_ticks(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/*
 * A transfer of @len bytes that ran on the caller took @ticks: if that is
 * far longer than a cached transfer could take (it waited for a device:
 * the entry of @fd was stale, e.g. O_DIRECT now), forget @fd.
 */
static inline void syslet__fd_took(long fd, long len, uint64_t ticks)
{
	/* ~10 us at 2 GHz plus 1 ns a byte: a page-cache copy is far faster */
	if (ticks > 20000 + 2 * (uint64_t)len)
		syslet__fd_forget(fd);
}

/*
 * A worker was handed a transfer on @fd: the caller chose to punt it on the
 * cached facts, where a stale entry shows. See fdcache.c.
 */
void syslet__fd_punted(long fd);

#endif /* SYSLET_FDCACHE_H */
