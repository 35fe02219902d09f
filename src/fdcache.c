/* SPDX-License-Identifier: MIT */
/*
 * The descriptor fact cache (fdcache.h): what the try path needs to know
 * about a descriptor number (O_DIRECT, O_NONBLOCK, O_APPEND, file type,
 * memory-backed file system, signalfd) without a system call per try.
 *
 * Shared state: syslet__fd_dir[], a directory of chunks of 64-bit words,
 * one per number. A chunk is allocated on first use, installed with one
 * compare-and-swap (acq_rel) and never freed; readers load its pointer with
 * acquire. A word is (epoch << 32 | facts). Any thread may write a word:
 *  - fill (syslet__fd_fresh): read the facts with fcntl/fstat/fstatfs, then
 *    compare-and-swap them in against the word it saw before reading, so a
 *    forget that came in between (new epoch) wins and the old facts are
 *    not stored;
 *  - forget: compare-and-swap loop to (epoch + 1) << 32, no facts;
 *  - learn (syslet__fd_learn): a fact a try found (a file system that
 *    refuses RWF_NOWAIT writes) added by compare-and-swap to the facts it
 *    was found with; a forget or re-read in between wins.
 * The low 16 bits hold the facts, bits 16-31 when they were read (a coarse
 * clock, about a millisecond a unit, wrapping).
 * The facts sit inside the word, so no other memory is published with it:
 * words are loaded and stored relaxed. The read side is one relaxed load.
 *
 * Self-correction. A number re-bound outside the library (close()+open(),
 * dup2(), F_SETFL by another thread, glibc's own close in fclose) leaves a
 * stale word; the try path is built so that a stale word costs at most one
 * bounded mistake per caller thread and is then corrected:
 *  - a stale word can only pick how a transfer is attempted, never the
 *    answer: EAGAIN and short counts are judged on fresh facts;
 *  - a transfer run on the caller is timed (TSC); one far slower than a
 *    page-cache copy (it waited for a device: O_DIRECT now, or no longer
 *    a memory-backed file) forgets the word;
 *  - a worker handed a transfer (syslet__fd_punted()) checks the flags of
 *    a word that sent it there by its flags alone (O_DIRECT, O_APPEND: one
 *    fcntl) and re-reads any word older than a few milliseconds: a stale
 *    flag costs one punt, a stale "writes refused" punts for that long at
 *    most (the same answer, later), and the facts of a descriptor whose
 *    writes go to workers cost one re-read per that time, not three system
 *    calls per call;
 *  - calls through indirect() that re-bind or change a number (close,
 *    close_range, dup2, dup3, fcntl F_SETFL, and every call that returns
 *    a new descriptor, ppc64's socketcall sub-calls and spu_create among
 *    them) forget it at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <linux/net.h>

#include "fdcache.h"
#include "sys.h"

#define CHUNK_LEN (1UL << SYSLET__FD_CHUNK_SHIFT)
#define EPOCH(w) ((w) >> 32)

/* File systems whose regular files cannot wait for a device. */
#define TMPFS_MAGIC 0x01021994L /* tmpfs, /dev/shm, memfd */
#define RAMFS_MAGIC 0x858458f6L
#define HUGETLBFS_MAGIC 0x958458f6L
#define PROC_SUPER_MAGIC 0x9fa0L
#define SYSFS_MAGIC 0x62656572L
#define ANON_INODE_FS_MAGIC 0x09041934L

_Atomic(_Atomic uint64_t *) syslet__fd_dir[SYSLET__FD_CHUNKS];

static _Atomic uint64_t *word_of(unsigned long fd, int make)
{
	_Atomic(_Atomic uint64_t *) *slot;
	_Atomic uint64_t *chunk, *none = NULL;

	if (fd >= SYSLET__FD_LIMIT)
		return NULL;
	slot = &syslet__fd_dir[fd >> SYSLET__FD_CHUNK_SHIFT];
	/* acquire: the chunk's zeroed entries before its pointer */
	chunk = atomic_load_explicit(slot, memory_order_acquire);
	if (!chunk && make) {
		chunk = calloc(CHUNK_LEN, sizeof(*chunk));
		if (!chunk)
			return NULL;
		/* acq_rel: publish our zeroes, or see the winner's */
		if (!atomic_compare_exchange_strong_explicit(
			    slot, &none, chunk, memory_order_acq_rel,
			    memory_order_acquire)) {
			free(chunk);
			chunk = none;
		}
	}
	return chunk ? &chunk[fd & (CHUNK_LEN - 1)] : NULL;
}

/* What /proc/self/fd/@fd names ("" when it cannot be read). */
static void name_of(long fd, char *buf, size_t len)
{
	char path[40];
	long n;

	snprintf(path, sizeof(path), "/proc/self/fd/%ld", fd);
	n = syslet__sys4(SYS_readlinkat, AT_FDCWD, (long)path, (long)buf,
			 (long)len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

static long fs_facts(long fd, long type)
{
	char name[64];

	switch (type) {
	case PROC_SUPER_MAGIC:
		/* /proc/kmsg waits for kernel messages */
		name_of(fd, name, sizeof(name));
		return strcmp(name, "/proc/kmsg") ? SYSLET__FD_MEM : 0;
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
	case HUGETLBFS_MAGIC:
	case SYSFS_MAGIC:
		return SYSLET__FD_MEM;
	default:
		return 0;
	}
}

/* The facts of @fd read now, or -errno. */
static long read_facts(long fd)
{
	struct statfs sf;
	struct stat st;
	long fl, f = SYSLET__FD_VALID;
	char name[64];

	fl = syslet__sys3(SYS_fcntl, fd, F_GETFL, 0);
	if (fl < 0)
		return fl;
	if (syslet__sys2(SYS_fstat, fd, (long)&st) < 0)
		return fl;
	if (fl & O_DIRECT)
		f |= SYSLET__FD_DIRECT;
	if (fl & O_NONBLOCK)
		f |= SYSLET__FD_NONBLOCK;
	if (fl & O_APPEND)
		f |= SYSLET__FD_APPEND;
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		f |= SYSLET__FD_DISK;
	if (S_ISSOCK(st.st_mode))
		f |= SYSLET__FD_SOCK;
	if (S_ISREG(st.st_mode)) {
		f |= SYSLET__FD_REG;
		if (syslet__sys2(SYS_fstatfs, fd, (long)&sf) == 0)
			f |= fs_facts(fd, (long)sf.f_type);
	} else if (!(st.st_mode & S_IFMT)) {
		/* an anonymous inode: eventfd, timerfd, signalfd, ... */
		name_of(fd, name, sizeof(name));
		if (!strcmp(name, "anon_inode:[signalfd]"))
			f |= SYSLET__FD_SIGNALFD;
	}
	return f;
}

/* When facts are read, in the word's bits 16-31 (fdcache.h). */
static uint64_t stamp(void)
{
	return (uint64_t)(uint16_t)(syslet__fd_ticks() >> SYSLET__FD_AGE_SHIFT)
	       << 16;
}

long syslet__fd_fresh(long fd)
{
	_Atomic uint64_t *w = word_of((unsigned long)fd, 1);
	uint64_t old = 0;
	long f;

	if (w)
		old = atomic_load_explicit(w, memory_order_relaxed);
	f = read_facts(fd);
	if (f < 0 || !w)
		return f;
	/* relaxed: the facts are the whole message; a forget in between wins */
	atomic_compare_exchange_strong_explicit(
		w, &old, (EPOCH(old) << 32) | stamp() | (uint64_t)f,
		memory_order_relaxed, memory_order_relaxed);
	return f;
}

void syslet__fd_learn(long fd, long f, long bit)
{
	_Atomic uint64_t *w = word_of((unsigned long)fd, 0);
	uint64_t old;

	if (!w)
		return;
	old = atomic_load_explicit(w, memory_order_relaxed);
	if (!(old & SYSLET__FD_VALID) ||
	    (old & SYSLET__FD_FACTS) != (uint64_t)f)
		return;
	/* relaxed: as a fill; a forget or re-read in between wins */
	atomic_compare_exchange_strong_explicit(w, &old, old | (uint64_t)bit,
						memory_order_relaxed,
						memory_order_relaxed);
}

void syslet__fd_punted(long fd)
{
	_Atomic uint64_t *w = word_of((unsigned long)fd, 0);
	uint64_t v, now = syslet__fd_ticks() >> SYSLET__FD_AGE_SHIFT;
	long fl, f;

	if (!w)
		return;
	v = atomic_load_explicit(w, memory_order_relaxed);
	if (!(v & SYSLET__FD_VALID))
		return;
	f = (long)(v & SYSLET__FD_FACTS);
	if ((uint16_t)(now - (uint16_t)(v >> 16)) > SYSLET__FD_MAX_AGE) {
		syslet__fd_fresh(fd);
		return;
	}
	if (!(f & (SYSLET__FD_DIRECT | SYSLET__FD_APPEND)))
		return;
	/* sent here by its flags alone: are they still so? */
	fl = syslet__sys3(SYS_fcntl, fd, F_GETFL, 0);
	if (fl < 0 || !(fl & O_DIRECT) != !(f & SYSLET__FD_DIRECT) ||
	    !(fl & O_APPEND) != !(f & SYSLET__FD_APPEND) ||
	    !(fl & O_NONBLOCK) != !(f & SYSLET__FD_NONBLOCK))
		syslet__fd_fresh(fd);
}

void syslet__fd_forget(long fd)
{
	/* The kernel takes the low 32 bits: close(0x100000005) closes 5. */
	_Atomic uint64_t *w = word_of((unsigned int)fd, 0);
	uint64_t old;

	if (!w)
		return;
	old = atomic_load_explicit(w, memory_order_relaxed);
	/* relaxed: only the word itself changes */
	while (!atomic_compare_exchange_weak_explicit(
		w, &old, (EPOCH(old) + 1) << 32, memory_order_relaxed,
		memory_order_relaxed))
		;
}

void syslet__fd_forget_range(unsigned long lo, unsigned long hi)
{
	unsigned long fd;

	if (hi >= SYSLET__FD_LIMIT)
		hi = SYSLET__FD_LIMIT - 1;
	for (fd = lo; fd <= hi; fd++) {
		if (!(fd & (CHUNK_LEN - 1)) && !word_of(fd, 0)) {
			fd += CHUNK_LEN - 1;
			continue;
		}
		syslet__fd_forget((long)fd);
	}
}

#ifdef SYS_socketcall
/*
 * socketcall(@call, @args) (ppc64; i386's multiplexer): the sub-calls that
 * make descriptors, as their own numbers do below. @args was read by the
 * kernel, so a call that succeeded had it readable.
 */
static void socketcall_rebound(long call, const unsigned long *args, long r)
{
	const int *two;

	if (r < 0)
		return;
	switch (call) {
	case SYS_SOCKETPAIR:
		two = (const int *)args[3];
		syslet__fd_forget(two[0]);
		syslet__fd_forget(two[1]);
		break;
	case SYS_SOCKET:
	case SYS_ACCEPT:
	case SYS_ACCEPT4:
		syslet__fd_forget(r);
		break;
	default:
		break;
	}
}
#endif

void syslet__fd_rebound(long nr, const long arg[6], long r)
{
	const int *two;

	switch (nr) {
#ifdef SYS_socketcall
	case SYS_socketcall:
		socketcall_rebound(arg[0], (const unsigned long *)arg[1], r);
		break;
#endif
	case SYS_close:
		syslet__fd_forget(arg[0]);
		break;
	case SYS_fcntl:
		if (arg[1] == F_SETFL)
			syslet__fd_forget(arg[0]);
		else if ((arg[1] == F_DUPFD || arg[1] == F_DUPFD_CLOEXEC) &&
			 r >= 0)
			syslet__fd_forget(r);
		break;
	case SYS_close_range:
		syslet__fd_forget_range((unsigned int)arg[0],
					(unsigned int)arg[1]);
		break;
#ifdef SYS_dup2
	case SYS_dup2:
#endif
	case SYS_dup3:
		syslet__fd_forget(arg[1]);
		break;
#ifdef SYS_pipe
	case SYS_pipe:
#endif
	case SYS_pipe2:
	case SYS_socketpair:
		if (r < 0)
			break;
		two = (const int *)arg[nr == SYS_socketpair ? 3 : 0];
		syslet__fd_forget(two[0]);
		syslet__fd_forget(two[1]);
		break;
	case SYS_dup:
	case SYS_socket:
	case SYS_accept:
	case SYS_accept4:
#ifdef SYS_open
	case SYS_open:
#endif
	case SYS_openat:
	case SYS_openat2:
#ifdef SYS_creat
	case SYS_creat:
#endif
	case SYS_open_by_handle_at:
#ifdef SYS_eventfd
	case SYS_eventfd:
#endif
	case SYS_eventfd2:
#ifdef SYS_signalfd
	case SYS_signalfd:
#endif
	case SYS_signalfd4:
	case SYS_timerfd_create:
#ifdef SYS_epoll_create
	case SYS_epoll_create:
#endif
	case SYS_epoll_create1:
#ifdef SYS_inotify_init
	case SYS_inotify_init:
#endif
	case SYS_inotify_init1:
	case SYS_memfd_create:
#ifdef SYS_memfd_secret
	case SYS_memfd_secret:
#endif
	case SYS_userfaultfd:
	case SYS_pidfd_open:
	case SYS_pidfd_getfd:
	case SYS_perf_event_open:
	case SYS_fanotify_init:
	case SYS_io_uring_setup:
	case SYS_mq_open:
	case SYS_open_tree:
	case SYS_fsopen:
	case SYS_fsmount:
	case SYS_fspick:
#ifdef SYS_spu_create
	case SYS_spu_create: /* ppc64 (Cell): a directory descriptor */
#endif
		if (r >= 0)
			syslet__fd_forget(r);
		break;
	default:
		break;
	}
}
