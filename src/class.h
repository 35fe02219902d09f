/* SPDX-License-Identifier: MIT */
/*
 * The class table (class.c): one byte per system call number saying how
 * indirect() runs it (SPEC 3). The byte is a "kind": inline, async, or the
 * try strategy of try.c that fits the call; syslet_get_class() folds it to
 * the public enum syslet_class.
 *
 * Shared state: syslet__kinds[] is read by every indirect() and written
 * only by syslet_set_class(). Each entry is one _Atomic byte accessed
 * relaxed: a reader sees either the old or the new kind, both of which
 * are complete strategies, so no ordering with other memory is needed
 * (a relaxed byte load is a plain load on the architectures we build for).
 */
#ifndef SYSLET_CLASS_H
#define SYSLET_CLASS_H

#include <stdatomic.h>
#include <stdint.h>

/*
 * Numbers below this have a table entry. x86_64's own numbers are all below
 * 512 (the kernel keeps 512..547 for x32-only calls, reachable only with
 * the x32 bit); 1024 leaves room for calls newer than any kernel we know,
 * which default to async. A number at or above it, negative, or with the
 * x32 bit (0x40000000, a different ABI) is one "the architecture cannot
 * have": indirect() answers ENOSYS without running anything.
 * aarch64's and ppc64le's numbers are all below 470 too (their tables:
 * gen_class.py).
 */
#define SYSLET__NR_LIMIT 1024

enum syslet__kind {
	SK_UNKNOWN = 0, /* not in the table: async (SPEC 3) */
	SK_INLINE,
	SK_ASYNC,
	SK_INLINE_FD, /* inline, then forget fdcache facts of what it re-bound */
	SK_PROC, /* inline, run by indirect.c: fork family, credentials */
	/* try strategies (try.c) */
	SK_READ, /* read(fd, buf, n) */
	SK_PREAD, /* pread64(fd, buf, n, off) */
	SK_READV, /* readv(fd, iov, cnt) */
	SK_PREADV, /* preadv(fd, iov, cnt, off) */
	SK_PREADV2, /* preadv2(fd, iov, cnt, off, 0, rwf) */
	SK_WRITE,
	SK_PWRITE,
	SK_WRITEV,
	SK_PWRITEV,
	SK_PWRITEV2,
	SK_SENDTO, /* sendto(fd, buf, n, fl, addr, alen) */
	SK_SENDMSG, /* sendmsg(fd, msg, fl) */
	SK_RECVFROM,
	SK_RECVMSG,
	SK_ACCEPT, /* accept, accept4, connect: O_NONBLOCK only */
	SK_OPEN, /* open(path, fl, mode) */
	SK_OPENAT, /* openat(dfd, path, fl, mode) */
	SK_OPENAT2, /* openat2(dfd, path, how, size) */
	SK_POLL,
	SK_PPOLL,
	SK_SELECT,
	SK_PSELECT6,
	SK_EPOLL_WAIT,
	SK_EPOLL_PWAIT,
	SK_EPOLL_PWAIT2,
	SK_WAIT4,
	SK_WAITID,
	SK_FUTEX,
	SK_FUTEX_WAITV,
	SK_FUTEX_WAIT, /* futex_wait(2), 6.7 */
	SK_NANOSLEEP,
	SK_CLOCK_NANOSLEEP,
	SK_FCNTL, /* F_SETLKW via F_SETLK */
	SK_FLOCK, /* via LOCK_NB */
	SK_MSGSND, /* msgsnd/msgrcv via IPC_NOWAIT */
	SK_MSGRCV,
	SK_MQ, /* mq_timedsend/receive with a passed deadline */
	SK_NR_KINDS
};

/* Highest number the table names (Linux 6.18: file_setattr, 469). */
extern const long syslet__nr_highest;

extern _Atomic uint8_t syslet__kinds[SYSLET__NR_LIMIT];

/* The kind of @nr, 0 <= @nr < SYSLET__NR_LIMIT: one byte load. */
static inline unsigned int syslet__kind(unsigned long nr)
{
	return atomic_load_explicit(&syslet__kinds[nr], memory_order_relaxed);
}

/* The kind the table was built with (white-box tests). */
unsigned int syslet__kind_default(long nr);

#endif /* SYSLET_CLASS_H */
