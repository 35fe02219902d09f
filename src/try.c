/* SPDX-License-Identifier: MIT */
/*
 * Try strategies (SPEC 3): attempt a call on the caller in a form that
 * cannot block; if that form says it would block, the original call goes to
 * a worker. The rules every strategy below keeps:
 *
 * Never block the caller. Only kernel interfaces that refuse instead of
 * waiting are used: RWF_NOWAIT, MSG_DONTWAIT, RESOLVE_CACHED, zero or
 * passed timeouts, WNOHANG, LOCK_NB, F_SETLK, IPC_NOWAIT. RWF_NOWAIT is not
 * such an interface on an O_DIRECT descriptor (the kernel waits for the
 * device; ~60 us per 4 KiB on 6.18), so O_DIRECT transfers go to a worker.
 * A regular file of a memory-backed file system (tmpfs, ramfs, hugetlbfs,
 * procfs but /proc/kmsg, sysfs: fdcache.c) cannot wait for a device and
 * answers EOPNOTSUPP to RWF_NOWAIT: its transfers run inline as submitted.
 * A positional one is issued directly (on a number re-bound since to a
 * pipe, socket or tty it answers ESPIPE, it cannot wait for a peer); a
 * positionless one first checks with fstat that the number still names a
 * regular file without a block device (a pty or inotify descriptor also
 * answers EOPNOTSUPP to RWF_NOWAIT, then waits for input without bound).
 * Where preadv2/pwritev2 themselves fail (ENOSYS in qemu-user, any errno
 * a seccomp filter chose), a failure is the call's answer only if the
 * same call on no descriptor fails with EBADF; else the transfer is
 * judged as on EOPNOTSUPP (below): inline on an O_NONBLOCK pipe or
 * socket, on a worker otherwise.
 *
 * No system call of overhead. The descriptor's facts come from fdcache.h
 * (one relaxed load). A stale entry may choose how a transfer is attempted,
 * never its answer: EAGAIN and short counts are judged on fresh facts; a
 * transfer that ran on the caller is timed and a slow one forgets the
 * entry; a worker re-reads an entry a few milliseconds old (exec.c). A
 * write its file system refused with RWF_NOWAIT (EOPNOTSUPP: ext4's
 * buffered writes) marks the entry, and the descriptor's next writes go
 * to a worker without that attempt, as io_uring sends them to io-wq.
 *
 * Same result as the blocking call. A non-blocking attempt that moved part
 * of the data on a descriptor the program opened blocking is finished by a
 * worker (SYSLET__CONT_REST), except a positional read, which consumed
 * nothing: the worker reads it all again, and a full ring answers EBUSY
 * instead of a short count. A short stream-socket read below SO_RCVLOWAT
 * is finished by a worker up to the low-water mark (SYSLET__CONT_LOWAT);
 * MSG_WAITALL goes to a worker whole. An O_APPEND write on a disk file is
 * never tried (a partial non-blocking append finished by a second write
 * could let another writer in between). O_NONBLOCK descriptors: EAGAIN and
 * short counts are the inline answer.
 *
 * Thread-bound calls run on the caller: a read of a signalfd, a ppoll,
 * pselect6, epoll_pwait or epoll_pwait2 with a signal mask, a wait4 or
 * waitid with __WNOTHREAD (SPEC 3). They are run as submitted and may block
 * the caller, like rt_sigtimedwait.
 *
 * No side effect repeated. A try that consumed something returns it inline
 * or hands the rest on; select's descriptor sets, which a zero-timeout
 * attempt clears, are saved and put back before punting. A punt may still
 * answer EBUSY (no ring slot), so it must have done nothing: a flock
 * conversion, whose LOCK_NB attempt drops the held lock, is never tried.
 *
 * Bad pointers give the kernel's answer. Caller memory the library must
 * read before the kernel does (a timeout, fd sets, an open_how, pselect6's
 * sigmask pack) is first handed to the kernel: a timespec through a futex
 * wait that cannot sleep (the kernel copies and checks it: EFAULT, EINVAL),
 * other memory through process_vm_readv() of our own process. When that
 * fails the call goes to a worker, which gets the kernel's own answer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "class.h"
#include "compiler.h"
#include "fdcache.h"
#include "sys.h"
#include "try.h"

#ifndef __NR_futex_wait
#define __NR_futex_wait 455
#endif
#ifndef MSG_COPY
#define MSG_COPY 040000
#endif

enum { ANSWER = 0, PUNT = 1 };

static int answer(long *res, long r)
{
	*res = r;
	return ANSWER;
}

/* The call as submitted, on the caller. */
static long as_is(long nr, const long *a)
{
	return syslet__sys6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/*
 * Copy @n bytes of caller memory at @src to @dst, the kernel reading them:
 * 0, or < 0 when they cannot be read (then the call goes to a worker and
 * gets the kernel's own answer).
 */
static long peek(void *dst, const void *src, size_t n)
{
	struct iovec l = { dst, n }, r = { (void *)src, n };
	long got;

	if (!n)
		return 0;
	got = syslet__sys6(SYS_process_vm_readv, syslet__sys0(SYS_getpid),
			   (long)&l, 1, (long)&r, 1, 0);
	return got == (long)n ? 0 : -EFAULT;
}

/*
 * The timespec at @ts, read by the kernel first: a private futex wait on a
 * word that does not hold the expected value copies and checks the timeout
 * (EFAULT, EINVAL as nanosleep/ppoll answer them), then refuses (EAGAIN)
 * without sleeping. 0 and *@out, or < 0.
 */
static long ts_read(const struct timespec *ts, struct timespec *out)
{
	int word = 0;
	long r = syslet__sys4(SYS_futex, (long)&word, FUTEX_WAIT_PRIVATE, 1,
			      (long)ts);

	if (r != -EAGAIN)
		return r < 0 ? r : -EINVAL;
	*out = *ts;
	return 0;
}

static bool ts_is_zero(const struct timespec *ts)
{
	return ts->tv_sec == 0 && ts->tv_nsec == 0;
}

/*
 * EAGAIN from a non-blocking attempt of @nr(@a), judged on fresh facts:
 * the inline answer on an O_NONBLOCK pipe, socket or device; on a blocking
 * signalfd (the cached entry was stale) the call as submitted, on the
 * caller; else a punt.
 */
static int would_block(long nr, const long *a, long *res)
{
	long f = syslet__fd_fresh(a[0]);

	if (f >= 0 && (f & SYSLET__FD_NONBLOCK) && !(f & SYSLET__FD_DISK))
		return answer(res, -EAGAIN);
	if (f >= 0 && (f & SYSLET__FD_SIGNALFD))
		return answer(res, as_is(nr, a));
	return PUNT;
}

/*
 * @r < @len bytes read from stream socket @fd opened blocking: the blocking
 * call would wait for SO_RCVLOWAT bytes (or all of @len if fewer).
 */
static bool below_lowat(long fd, long r, long len)
{
	int lowat = 1, type = 0;
	socklen_t sl = sizeof(lowat);

	if (syslet__sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_RCVLOWAT,
			 (long)&lowat, (long)&sl) < 0 ||
	    r >= (lowat < len ? lowat : len))
		return false;
	sl = sizeof(type);
	return syslet__sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE,
			    (long)&type, (long)&sl) == 0 &&
	       type == SOCK_STREAM;
}

struct xfer {
	bool wr, positional;
	long off, len;
};

/* A transfer moved @r of x->len bytes (0 < @r < x->len): decide. */
static int short_rw(const struct xfer *x, const long *a, long r, long *res,
		    long *done, unsigned int *cont)
{
	long f = syslet__fd_fresh(a[0]), pos;
	struct stat st;

	if (f < 0)
		return answer(res, r);
	if (x->wr) {
		if ((f & SYSLET__FD_NONBLOCK) && !(f & SYSLET__FD_DISK))
			return answer(res, r);
		*done = r;
		*cont = SYSLET__CONT_REST;
		return PUNT;
	}
	if (!(f & SYSLET__FD_DISK)) {
		if ((f & SYSLET__FD_SOCK) && !(f & SYSLET__FD_NONBLOCK) &&
		    below_lowat(a[0], r, x->len)) {
			*done = r;
			*cont = SYSLET__CONT_LOWAT;
			return PUNT;
		}
		return answer(res, r);
	}
	if (f & SYSLET__FD_REG) {
		if (syslet__sys2(SYS_fstat, a[0], (long)&st) < 0)
			return answer(res, r);
		pos = x->positional ?
			      x->off + r :
			      syslet__sys3(SYS_lseek, a[0], 0, SEEK_CUR);
		if (pos >= st.st_size)
			return answer(res, r);
	}
	/* a positional read consumed nothing: the worker reads it all */
	if (x->positional)
		return PUNT;
	*done = r;
	*cont = SYSLET__CONT_REST;
	return PUNT;
}

/*
 * Does @nr (preadv2 or pwritev2) run here? A seccomp filter or an
 * emulator answers before the descriptor is looked up, the kernel with
 * EBADF. Asked only after a failure: no system call on the fast path.
 */
static bool rw2_refused(long nr)
{
	return syslet__sys6(nr, -1, 0, 0, -1, 0, RWF_NOWAIT) != -EBADF;
}

/*
 * A signalfd read (thread-bound): what is pending now, else, on a blocking
 * signalfd still one (fresh facts), the read as submitted on the caller.
 */
static int try_signalfd(long nr, const long *a, const struct iovec *iov,
			long cnt, long *res)
{
	long r = syslet__sys6(SYS_preadv2, a[0], (long)iov, cnt, -1, 0,
			      RWF_NOWAIT);
	long f;

	if (r >= 0 ||
	    (r != -EAGAIN && r != -EOPNOTSUPP && !rw2_refused(SYS_preadv2)))
		return answer(res, r);
	f = syslet__fd_fresh(a[0]);
	if (f >= 0 && !(f & SYSLET__FD_SIGNALFD))
		return PUNT;
	if (f >= 0 && (f & SYSLET__FD_NONBLOCK) && r == -EAGAIN)
		return answer(res, r);
	return answer(res, as_is(nr, a));
}

/*
 * A positionless transfer on a number cached as a memory-backed file: is it
 * still a regular file of a file system without a block device? RWF_NOWAIT
 * cannot tell (tmpfs, a pty, an inotify descriptor all answer EOPNOTSUPP,
 * and the last two wait for input as long as it takes), so one fstat
 * replaces that attempt. A number re-bound to anything else is forgotten
 * and its transfer tried as any other's; one re-bound to a regular file of
 * another device-less file system (btrfs, NFS, FUSE) is the stale entry's
 * one mistake, which timed() corrects.
 */
static bool still_mem(long fd)
{
	struct stat st;

	if (syslet__sys2(SYS_fstat, fd, (long)&st) == 0 &&
	    S_ISREG(st.st_mode) && major(st.st_dev) == 0)
		return true;
	syslet__fd_forget(fd);
	return false;
}

/* A transfer @nr(@a) on the caller, timed: a slow one forgets the entry. */
static long timed(long nr, const long *a, long len)
{
	uint64_t t0 = syslet__fd_ticks();
	long r = as_is(nr, a);

	syslet__fd_took(a[0], len, syslet__fd_ticks() - t0);
	return r;
}

static int try_rw(unsigned int kind, long nr, const long *a, long *res,
		  long *done, unsigned int *cont)
{
	struct iovec one = { (void *)a[1], (size_t)a[2] };
	const struct iovec *iov = (const struct iovec *)a[1];
	struct xfer x = { .wr = kind >= SK_WRITE, .off = -1 };
	long cnt = a[2], rwf = 0, f, r, v[6];

	switch (kind) {
	case SK_READ:
	case SK_WRITE:
		iov = &one;
		cnt = 1;
		break;
	case SK_PREAD:
	case SK_PWRITE:
		iov = &one;
		cnt = 1;
		x.off = a[3];
		break;
	case SK_PREADV:
	case SK_PWRITEV:
		x.off = a[3];
		break;
	case SK_PREADV2:
	case SK_PWRITEV2:
		x.off = a[3];
		rwf = a[5];
		break;
	default:
		break;
	}
	/*
	 * Leave to the worker what preadv2 would answer differently: a
	 * negative offset (-1 is "current position" only for preadv2) and a
	 * count above SSIZE_MAX (EINVAL in an iovec, clamped by read(2)).
	 */
	if ((x.off < 0 && (kind == SK_PREAD || kind == SK_PWRITE ||
			   kind == SK_PREADV || kind == SK_PWRITEV)) ||
	    (iov == &one && a[2] < 0))
		return PUNT;
	x.positional = x.off >= 0;
	f = syslet__fd_facts(a[0]);
	if (f < 0)
		return answer(res, f);
	if (f & SYSLET__FD_DIRECT)
		return PUNT;
	if ((f & SYSLET__FD_SIGNALFD) && !x.wr)
		return x.positional ? answer(res, as_is(nr, a)) /* ESPIPE */ :
				      try_signalfd(nr, a, iov, cnt, res);
	if (rwf & RWF_NOWAIT)
		return answer(res, as_is(nr, a));
	if (f & SYSLET__FD_MEM) {
		/* positional: re-bound to a pipe, socket, tty, it is ESPIPE */
		if (x.positional || still_mem(a[0]))
			return answer(res,
				      timed(nr, a, iov == &one ? a[2] : 0));
		f &= ~(long)SYSLET__FD_MEM;
	}
	if (x.wr && (f & SYSLET__FD_DISK) && !(f & SYSLET__FD_MEM) &&
	    ((f & (SYSLET__FD_APPEND | SYSLET__FD_NOWAIT_WR)) ||
	     (rwf & RWF_APPEND)))
		return PUNT;
	v[0] = a[0];
	v[1] = (long)iov;
	v[2] = cnt;
	v[3] = x.off;
	v[4] = 0;
	v[5] = rwf | RWF_NOWAIT;
	r = timed(x.wr ? SYS_pwritev2 : SYS_preadv2, v, iov == &one ? a[2] : 0);
	if (r == -EOPNOTSUPP ||
	    (r < 0 && r != -EAGAIN && nr != SYS_preadv2 && nr != SYS_pwritev2 &&
	     rw2_refused(x.wr ? SYS_pwritev2 : SYS_preadv2))) {
		/* Linux 6.1's sockets, signalfd: judged on fresh facts */
		f = syslet__fd_fresh(a[0]);
		if (f >= 0 && (f & SYSLET__FD_SIGNALFD) && !x.wr)
			return x.positional ?
				       answer(res, as_is(nr, a)) :
				       try_signalfd(nr, a, iov, cnt, res);
		if (f >= 0 && (f & SYSLET__FD_NONBLOCK) &&
		    !(f & SYSLET__FD_DISK))
			return answer(res, as_is(nr, a));
		/* ext4's buffered writes: not asked again (fdcache.h) */
		if (f >= 0 && x.wr && r == -EOPNOTSUPP &&
		    (f & SYSLET__FD_DISK) && !(f & SYSLET__FD_MEM))
			syslet__fd_learn(a[0], f, SYSLET__FD_NOWAIT_WR);
		return PUNT;
	}
	if (r == -EAGAIN)
		return would_block(nr, a, res);
	if (r <= 0)
		return answer(res, r);
	x.len = iov == &one ? (a[2] < MAX_RW_COUNT ? a[2] : MAX_RW_COUNT) :
			      syslet__iov_total(iov, cnt);
	if (r >= x.len)
		return answer(res, r);
	return short_rw(&x, a, r, res, done, cont);
}

static int try_sock(unsigned int kind, long nr, const long *a, long *res,
		    long *done, unsigned int *cont)
{
	int fi = kind == SK_SENDMSG || kind == SK_RECVMSG ? 2 : 3;
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	const struct msghdr *m = (const struct msghdr *)a[1];
	bool rd = kind == SK_RECVFROM || kind == SK_RECVMSG;
	long r, f, len;

	if (a[fi] & MSG_DONTWAIT)
		return answer(res, as_is(nr, a));
	if (rd && (a[fi] & MSG_WAITALL))
		return PUNT;
	b[fi] |= MSG_DONTWAIT;
	r = as_is(nr, b);
	if (r == -EAGAIN)
		return would_block(nr, a, res);
	if (r <= 0)
		return answer(res, r);
	len = kind == SK_SENDTO || kind == SK_RECVFROM ?
		      a[2] :
		      syslet__iov_total(m->msg_iov, (long)m->msg_iovlen);
	if (r >= len)
		return answer(res, r);
	f = syslet__fd_fresh(a[0]);
	if (f < 0 || (f & SYSLET__FD_NONBLOCK))
		return answer(res, r);
	if (rd && (a[fi] & MSG_PEEK)) {
		/* a peek consumed nothing: below the mark the worker peeks */
		return (f & SYSLET__FD_SOCK) && below_lowat(a[0], r, len) ?
			       PUNT :
			       answer(res, r);
	}
	if (rd) {
		if (!below_lowat(a[0], r, len))
			return answer(res, r);
		*cont = SYSLET__CONT_LOWAT;
	} else {
		/* a stream socket took part of it: a blocking send sends all */
		*cont = SYSLET__CONT_REST;
	}
	*done = r;
	return PUNT;
}

/*
 * accept, accept4, connect: inline only on an O_NONBLOCK socket, judged on
 * flags read now (a stale "non-blocking" would block the caller).
 */
static int try_accept(long nr, const long *a, long *res)
{
	long fl = syslet__sys3(SYS_fcntl, a[0], F_GETFL, 0), r;

	if (fl < 0)
		return answer(res, fl);
	if (!(fl & O_NONBLOCK))
		return PUNT;
	r = syslet__sys6(nr, a[0], a[1], a[2], a[3], 0, 0);
	if (r >= 0 && nr != SYS_connect)
		syslet__fd_forget(r);
	return answer(res, r);
}

/*
 * open, openat, openat2 via openat2(RESOLVE_CACHED). Opening a FIFO or a
 * device may wait (for a peer, for hardware) whatever the path cache says,
 * so an O_PATH probe, which opens nothing, first finds what the path names;
 * only regular files and directories are opened inline. A path replaced
 * between the probe and the open by another thread or process may still
 * make that open wait; a lease held on the file too (break_lease).
 */
static int try_open(unsigned int kind, const long *a, long *res)
{
	struct open_how how = { 0 }, probe = { 0 };
	long dfd = AT_FDCWD, path, fd, r;
	struct stat st;

	switch (kind) {
	case SK_OPEN:
		path = a[0];
		how.flags = (unsigned int)a[1];
		break;
	case SK_OPENAT:
		dfd = a[0];
		path = a[1];
		how.flags = (unsigned int)a[2];
		break;
	default:
		if (!a[2] || (size_t)a[3] != sizeof(how))
			return PUNT;
		dfd = a[0];
		path = a[1];
		if (peek(&how, (const void *)a[2], sizeof(how)) < 0)
			return PUNT;
		break;
	}
	if (how.flags & (O_CREAT | O_TRUNC | (O_TMPFILE & ~O_DIRECTORY)))
		return PUNT;
	probe.flags = O_PATH | O_CLOEXEC |
		      (how.flags & (O_NOFOLLOW | O_DIRECTORY));
	probe.resolve = how.resolve | RESOLVE_CACHED;
	fd = syslet__sys4(SYS_openat2, dfd, path, &probe, sizeof(probe));
	if (fd == -ENOENT || fd == -ENOTDIR)
		return answer(res, fd);
	if (fd < 0)
		return PUNT;
	r = syslet__sys2(SYS_fstat, fd, &st);
	syslet__sys1(SYS_close, fd);
	if (r < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		return PUNT;
	how.resolve |= RESOLVE_CACHED;
	r = syslet__sys4(SYS_openat2, dfd, path, &how, sizeof(how));
	if (r == -EAGAIN || r == -EINVAL)
		return PUNT;
	if (r >= 0)
		syslet__fd_forget(r);
	return answer(res, r);
}

/* Bytes of one fd_set of select(@n), or -1 if too big to save here. */
#define SEL_SAVE 128

/*
 * The select(2) of the class table's SK_SELECT: ppc64's 82 "select" is
 * sys_ni_syscall (its table makes it inline), _newselect is the real one;
 * aarch64 has only pselect6 (no SK_SELECT entry: -1 is never called).
 */
#if defined(SYS__newselect)
#define SELECT_NR SYS__newselect
#elif defined(SYS_select)
#define SELECT_NR SYS_select
#else
#define SELECT_NR (-1L)
#endif

/*
 * The 16 bytes at a select() or pselect6() timeout: zero, or a valid
 * non-zero timeout. Invalid ones go to a worker (the kernel says EINVAL).
 */
static bool sel_tmo_valid(unsigned int kind, const long *t)
{
	if (t[0] < 0 || t[1] < 0)
		return false;
	return kind == SK_SELECT || t[1] < 1000000000L;
}

static int try_select(unsigned int kind, long nr, const long *a, long *res)
{
	/* three fd sets, the timeout and pselect6's {sigmask, size} pack */
	unsigned char save[3][SEL_SAVE];
	long tmo[2] = { 0, 0 }, pack[2] = { 0, 0 };
	struct timespec zts = { 0, 0 };
	struct timeval ztv = { 0, 0 };
	long n = a[0], bytes = 0, r;
	int i;

	if (n > 0)
		bytes = (n + 63) / 64 * 8;
	if (bytes > SEL_SAVE)
		return PUNT;
	for (i = 0; i < 3; i++)
		if (a[1 + i] &&
		    peek(save[i], (const void *)a[1 + i], (size_t)bytes) < 0)
			return PUNT;
	if ((a[4] && (peek(tmo, (const void *)a[4], sizeof(tmo)) < 0 ||
		      !sel_tmo_valid(kind, tmo))) ||
	    (kind == SK_PSELECT6 && a[5] &&
	     peek(pack, (const void *)a[5], sizeof(pack)) < 0))
		return PUNT;
	/* a signal mask binds the call to the caller's signal state */
	if (pack[0])
		return answer(res, as_is(nr, a));
	if (kind == SK_SELECT)
		r = syslet__sys5(SELECT_NR, n, a[1], a[2], a[3], (long)&ztv);
	else
		r = syslet__sys6(SYS_pselect6, n, a[1], a[2], a[3], (long)&zts,
				 a[5]);
	if (r != 0 || (a[4] && tmo[0] == 0 && tmo[1] == 0))
		return answer(res, r);
	for (i = 0; i < 3; i++)
		if (a[1 + i])
			memcpy((void *)a[1 + i], save[i], (size_t)bytes);
	return PUNT;
}

/*
 * The zero-timeout form of a poll-family call, once its own timeout (if a
 * timespec) was read and checked by the kernel: -EAGAIN when it would wait.
 */
static int try_poll(unsigned int kind, long nr, const long *a, long *res)
{
	struct timespec z = { 0, 0 }, ts = { 0, 0 };
	const struct timespec *tp = NULL;
	long r, mask = 0;
	bool zero;

	switch (kind) {
	case SK_PPOLL:
		tp = (const struct timespec *)a[2];
		mask = a[3];
		break;
	case SK_EPOLL_PWAIT:
		mask = a[4];
		break;
	case SK_EPOLL_PWAIT2:
		tp = (const struct timespec *)a[3];
		mask = a[4];
		break;
	default:
		break;
	}
	/* a signal mask binds the call to the caller's signal state */
	if (mask)
		return answer(res, as_is(nr, a));
	if (tp && ts_read(tp, &ts) < 0)
		return PUNT;
	switch (kind) {
#ifdef SYS_poll
	case SK_POLL:
		r = syslet__sys3(SYS_poll, a[0], a[1], 0);
		zero = (int)a[2] == 0;
		break;
#endif
	case SK_PPOLL:
		r = syslet__sys5(SYS_ppoll, a[0], a[1], (long)&z, 0, a[4]);
		zero = tp && ts_is_zero(&ts);
		break;
#ifdef SYS_epoll_wait
	case SK_EPOLL_WAIT:
		r = syslet__sys4(SYS_epoll_wait, a[0], a[1], a[2], 0);
		zero = (int)a[3] == 0;
		break;
#endif
	case SK_EPOLL_PWAIT:
		r = syslet__sys6(SYS_epoll_pwait, a[0], a[1], a[2], 0, 0, a[5]);
		zero = (int)a[3] == 0;
		break;
	default:
		r = syslet__sys6(SYS_epoll_pwait2, a[0], a[1], a[2], (long)&z,
				 0, a[5]);
		zero = tp && ts_is_zero(&ts);
		break;
	}
	if (r != 0 || zero)
		return answer(res, r);
	return PUNT;
}

static int try_wait(unsigned int kind, long nr, const long *a, long *res)
{
	siginfo_t *info = (siginfo_t *)a[2];
	long r;

	/* children of the calling thread only: bound to the caller */
	if (a[kind == SK_WAIT4 ? 2 : 3] & __WNOTHREAD)
		return answer(res, as_is(nr, a));
	if (kind == SK_WAIT4) {
		if (a[2] & WNOHANG)
			return answer(res,
				      syslet__sys4(nr, a[0], a[1], a[2], a[3]));
		r = syslet__sys4(nr, a[0], a[1], a[2] | WNOHANG, a[3]);
		return r != 0 ? answer(res, r) : PUNT;
	}
	if (a[3] & WNOHANG)
		return answer(res,
			      syslet__sys5(nr, a[0], a[1], a[2], a[3], a[4]));
	/* without infop, a reaped child could not be told from none */
	if (!info)
		return PUNT;
	r = syslet__sys5(nr, a[0], a[1], a[2], a[3] | WNOHANG, a[4]);
	if (r < 0 || info->si_pid != 0)
		return answer(res, r);
	return PUNT;
}

/*
 * The answer @r of a try that replaced the program's timeout @ts by a
 * passed one: ETIMEDOUT is a punt; any other answer is the call's only if
 * the kernel could read and accept @ts, which it does before anything else
 * (EFAULT, EINVAL, nothing taken). Checked only here, on an answer: a
 * punted call gets the kernel's own check on the worker.
 */
static int timed_answer(long r, const struct timespec *ts, long *res)
{
	struct timespec out;
	long e;

	if (r == -ETIMEDOUT)
		return PUNT;
	if (ts) {
		e = ts_read(ts, &out);
		if (e < 0)
			return answer(res, e);
	}
	return answer(res, r);
}

/*
 * Futex waits with a timeout that has already passed: the kernel checks the
 * value (EAGAIN when it changed), queues, and times out at once.
 */
static int try_futex(unsigned int kind, long nr, const long *a, long *res)
{
	struct timespec z = { 0, 0 };
	long r, cmd;

	switch (kind) {
	case SK_FUTEX:
		cmd = a[1] & FUTEX_CMD_MASK;
		if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET)
			break;
		r = syslet__sys6(nr, a[0], a[1], a[2], (long)&z, a[4], a[5]);
		return timed_answer(r, (const struct timespec *)a[3], res);
	case SK_FUTEX_WAITV:
		r = syslet__sys5(nr, a[0], a[1], a[2], &z,
				 a[3] ? a[4] : CLOCK_MONOTONIC);
		return timed_answer(r, (const struct timespec *)a[3], res);
	default:
		r = syslet__sys6(nr, a[0], a[1], a[2], a[3], (long)&z,
				 a[4] ? a[5] : CLOCK_MONOTONIC);
		return timed_answer(r, (const struct timespec *)a[4], res);
	}
	/* wakes, requeues, PI operations: inline */
	return answer(res,
		      syslet__sys6(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}

static bool ts_le(const struct timespec *x, const struct timespec *y)
{
	return x->tv_sec < y->tv_sec ||
	       (x->tv_sec == y->tv_sec && x->tv_nsec <= y->tv_nsec);
}

/*
 * Sleeps that end at once run inline; every other sleep is a worker's.
 * A signal can still cut a zero-length sleep short (-EINTR) if it arrives
 * before the kernel's timer fires; the whole zero interval has passed by
 * then, so that is not the sleep's answer: ask again.
 */
static long sleep_now(long nr, const long *a, int nargs)
{
	long r;

	do
		r = nargs == 2 ? syslet__sys2(nr, a[0], a[1]) :
				 syslet__sys4(nr, a[0], a[1], a[2], a[3]);
	while (r == -EINTR);
	return r;
}

static int try_sleep(unsigned int kind, long nr, const long *a, long *res)
{
	const struct timespec *req;
	struct timespec ts, now;

	req = (const struct timespec *)(kind == SK_NANOSLEEP ? a[0] : a[2]);
	if (!req)
		return answer(res,
			      sleep_now(nr, a, kind == SK_NANOSLEEP ? 2 : 4));
	if (ts_read(req, &ts) < 0)
		return PUNT;
	if (kind == SK_NANOSLEEP)
		return ts_is_zero(&ts) ? answer(res, sleep_now(nr, a, 2)) :
					 PUNT;
	if (ts_is_zero(&ts))
		return answer(res, sleep_now(nr, a, 4));
	if (!(a[1] & TIMER_ABSTIME))
		return PUNT;
	if (syslet__sys2(SYS_clock_gettime, a[0], (long)&now) < 0 ||
	    ts_le(&ts, &now))
		return answer(res, sleep_now(nr, a, 4));
	return PUNT;
}

/*
 * Does the file description of @fd hold a flock() lock? A LOCK_NB attempt
 * to convert one (shared to exclusive or back) drops it before it fails,
 * so such a try would have done something a punt answered EBUSY must not
 * have. /proc/thread-self/fdinfo lists this description's locks; when it
 * cannot be read, assume one (the call then goes to a worker).
 */
static bool holds_flock(long fd)
{
	char path[48], buf[512 + 5];
	long pfd, n, keep = 0;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/thread-self/fdinfo/%d", (int)fd);
	pfd = syslet__sys4(SYS_openat, AT_FDCWD, (long)path,
			   O_RDONLY | O_CLOEXEC, 0);
	if (pfd < 0)
		return true;
	while (!found && (n = syslet__sys3(SYS_read, pfd, (long)buf + keep,
					   (long)sizeof(buf) - 1 - keep)) > 0) {
		/* the last 4 bytes stay: "FLOCK" may span two reads */
		n += keep;
		buf[n] = '\0';
		found = strstr(buf, "FLOCK") != NULL;
		keep = n < 4 ? n : 4;
		memmove(buf, buf + n - keep, (size_t)keep);
	}
	syslet__sys1(SYS_close, pfd);
	return found;
}

/*
 * The kernel's record lock commands (asm-generic/fcntl.h, every 64-bit
 * architecture): glibc's F_SETLK/F_SETLKW are F_SETLK64/F_SETLKW64 (13,
 * 14) on ppc64 with a 64-bit off_t, values only its fcntl() maps back.
 */
#define KERNEL_F_SETLK 6
#define KERNEL_F_SETLKW 7

static int try_lock(unsigned int kind, long nr, const long *a, long *res)
{
	long r;

	if (kind == SK_FLOCK) {
		if (a[1] & LOCK_NB)
			return answer(res, syslet__sys2(nr, a[0], a[1]));
		if (!(a[1] & LOCK_UN) && holds_flock(a[0]))
			return PUNT;
		r = syslet__sys2(nr, a[0], a[1] | LOCK_NB);
		return r == -EWOULDBLOCK ? PUNT : answer(res, r);
	}
	if (a[1] == KERNEL_F_SETLKW || a[1] == F_OFD_SETLKW) {
		r = syslet__sys3(nr, a[0],
				 a[1] == KERNEL_F_SETLKW ? KERNEL_F_SETLK :
							   F_OFD_SETLK,
				 a[2]);
		return r == -EAGAIN || r == -EACCES ? PUNT : answer(res, r);
	}
	r = syslet__sys3(nr, a[0], a[1], a[2]);
	syslet__fd_rebound(nr, a, r);
	return answer(res, r);
}

/*
 * System V message queues via IPC_NOWAIT (EAGAIN: full, ENOMSG: empty);
 * POSIX message queues with a deadline already passed (ETIMEDOUT).
 */
static int try_ipc(unsigned int kind, long nr, const long *a, long *res)
{
	struct timespec z = { 0, 0 };
	int fi = kind == SK_MSGSND ? 3 : 4;
	long r;

	if (kind == SK_MQ) {
		/* the deadline first: a bad one must not take a message */
		if (a[4]) {
			r = ts_read((const struct timespec *)a[4], &z);
			if (r < 0)
				return answer(res, r);
		}
		z = (struct timespec){ 0, 0 };
		r = syslet__sys5(nr, a[0], a[1], a[2], a[3], &z);
		return r == -ETIMEDOUT ? PUNT : answer(res, r);
	}
	/* MSG_COPY never waits: without IPC_NOWAIT the kernel says EINVAL */
	if ((a[fi] & IPC_NOWAIT) || (kind == SK_MSGRCV && (a[fi] & MSG_COPY)))
		return answer(res,
			      syslet__sys5(nr, a[0], a[1], a[2], a[3], a[4]));
	if (kind == SK_MSGSND)
		r = syslet__sys4(nr, a[0], a[1], a[2], a[3] | IPC_NOWAIT);
	else
		r = syslet__sys5(nr, a[0], a[1], a[2], a[3], a[4] | IPC_NOWAIT);
	return r == -EAGAIN || r == -ENOMSG ? PUNT : answer(res, r);
}

int syslet__try(unsigned int kind, long nr, const long arg[6], long *res,
		long *done, unsigned int *cont)
{
	*done = 0;
	*cont = SYSLET__CONT_CALL;
	switch (kind) {
	case SK_READ:
	case SK_PREAD:
	case SK_READV:
	case SK_PREADV:
	case SK_PREADV2:
	case SK_WRITE:
	case SK_PWRITE:
	case SK_WRITEV:
	case SK_PWRITEV:
	case SK_PWRITEV2:
		return try_rw(kind, nr, arg, res, done, cont);
	case SK_SENDTO:
	case SK_SENDMSG:
	case SK_RECVFROM:
	case SK_RECVMSG:
		return try_sock(kind, nr, arg, res, done, cont);
	case SK_ACCEPT:
		return try_accept(nr, arg, res);
	case SK_OPEN:
	case SK_OPENAT:
	case SK_OPENAT2:
		return try_open(kind, arg, res);
	case SK_SELECT:
	case SK_PSELECT6:
		return try_select(kind, nr, arg, res);
	case SK_POLL:
	case SK_PPOLL:
	case SK_EPOLL_WAIT:
	case SK_EPOLL_PWAIT:
	case SK_EPOLL_PWAIT2:
		return try_poll(kind, nr, arg, res);
	case SK_WAIT4:
	case SK_WAITID:
		return try_wait(kind, nr, arg, res);
	case SK_FUTEX:
	case SK_FUTEX_WAITV:
	case SK_FUTEX_WAIT:
		return try_futex(kind, nr, arg, res);
	case SK_NANOSLEEP:
	case SK_CLOCK_NANOSLEEP:
		return try_sleep(kind, nr, arg, res);
	case SK_FCNTL:
	case SK_FLOCK:
		return try_lock(kind, nr, arg, res);
	case SK_MSGSND:
	case SK_MSGRCV:
	case SK_MQ:
		return try_ipc(kind, nr, arg, res);
	default:
		return PUNT;
	}
}
