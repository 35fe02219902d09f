/* SPDX-License-Identifier: MIT */
/*
 * Try strategies (SPEC 3): attempt a call on the caller in a form that
 * cannot block; if that form says it would block, the original call goes to
 * a worker. Three rules hold every strategy below:
 *
 * Never block the caller. Only kernel interfaces that refuse instead of
 * waiting are used: RWF_NOWAIT, MSG_DONTWAIT, RESOLVE_CACHED, zero or
 * passed timeouts, WNOHANG, LOCK_NB, F_SETLK, IPC_NOWAIT. RWF_NOWAIT is not
 * such an interface on an O_DIRECT descriptor (the kernel waits for the
 * device; measured on 6.18: ~60 us per 4 KiB, and no RWF flag combination
 * makes it refuse), so the read/write strategies first read the
 * descriptor's flags with fcntl(F_GETFL). That costs one system call
 * (~75 ns here) per try; a cache of the flags cannot be proven right: a
 * descriptor number is re-bound by close()+open(), dup2(),
 * F_SETFL(O_DIRECT) and by glibc's own internal close in fclose(), none of
 * which the library can observe, and a stale "buffered" entry would run
 * an O_DIRECT transfer on the caller.
 *
 * Same result as the blocking call. A non-blocking attempt that moved part
 * of the data on a descriptor the program opened blocking is finished by a
 * worker (*done > 0, SYSLET__CONT_REST): the completion reports the total.
 * Where the partial count is the blocking answer too (a pipe or socket read
 * returns what is there), it is returned inline. O_NONBLOCK does not apply
 * to regular files and block devices, so EAGAIN there always punts.
 *
 * No side effect repeated. A try that consumed something returns it inline;
 * select's descriptor sets, which a zero-timeout attempt clears, are saved
 * and put back before punting.
 *
 * The caller's memory (timeouts, iovecs after a successful transfer, fd
 * sets) is read here like glibc's wrappers read it: a bad pointer there
 * faults in the caller instead of giving EFAULT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "class.h"
#include "compiler.h"
#include "sys.h"
#include "try.h"

#ifndef __NR_futex_wait
#define __NR_futex_wait 455
#endif

enum { ANSWER = 0, PUNT = 1 };

/* The kernel's cap on one transfer (INT_MAX rounded down to a page). */
#define MAX_RW_COUNT (0x7fffffffL & ~4095L)

static int answer(long *res, long r)
{
	*res = r;
	return ANSWER;
}

static long fd_flags(long fd)
{
	return syslet__sys3(SYS_fcntl, fd, F_GETFL, 0);
}

/*
 * 1 if @fd is a regular file or a block device (a transfer there is short
 * only at the end, and O_NONBLOCK does not apply), 0 if not, -errno.
 */
static int is_disk(long fd, struct stat *st)
{
	long r = syslet__sys2(SYS_fstat, fd, st);

	if (r < 0)
		return (int)r;
	return S_ISREG(st->st_mode) || S_ISBLK(st->st_mode);
}

static long iov_total(const struct iovec *iov, long cnt)
{
	long i, n = 0;

	for (i = 0; i < cnt && n < MAX_RW_COUNT; i++)
		n += (long)iov[i].iov_len;
	return n < MAX_RW_COUNT ? n : MAX_RW_COUNT;
}

/*
 * EAGAIN from a non-blocking attempt on a descriptor with flags @fl: the
 * inline answer on an O_NONBLOCK pipe, socket or device, else a punt.
 */
static int would_block(long fd, long fl, long *res)
{
	struct stat st;

	if ((fl & O_NONBLOCK) && is_disk(fd, &st) == 0)
		return answer(res, -EAGAIN);
	return PUNT;
}

static int try_rw(unsigned int kind, long nr, const long *a, long *res,
		  long *done)
{
	bool wr = kind >= SK_WRITE;
	struct iovec one = { (void *)a[1], (size_t)a[2] };
	const struct iovec *iov = (const struct iovec *)a[1];
	long cnt = a[2], off = -1, rwf = 0, fl, r, len, pos;
	struct stat st;

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
		off = a[3];
		break;
	case SK_PREADV:
	case SK_PWRITEV:
		off = a[3];
		break;
	case SK_PREADV2:
	case SK_PWRITEV2:
		off = a[3];
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
	if ((off < 0 && (kind == SK_PREAD || kind == SK_PWRITE ||
			 kind == SK_PREADV || kind == SK_PWRITEV)) ||
	    (iov == &one && a[2] < 0))
		return PUNT;
	fl = fd_flags(a[0]);
	if (fl < 0)
		return answer(res, fl);
	if (fl & O_DIRECT)
		return PUNT;
	if (rwf & RWF_NOWAIT)
		return answer(res, syslet__sys6(nr, a[0], a[1], a[2], a[3],
						a[4], a[5]));
	r = syslet__sys6(wr ? SYS_pwritev2 : SYS_preadv2, a[0], (long)iov, cnt,
			 off, 0, rwf | RWF_NOWAIT);
	if (r == -EAGAIN)
		return would_block(a[0], fl, res);
	if (r == -EOPNOTSUPP)
		return PUNT;
	if (r <= 0)
		return answer(res, r);
	len = iov == &one ? (a[2] < MAX_RW_COUNT ? a[2] : MAX_RW_COUNT) :
			    iov_total(iov, cnt);
	if (r >= len)
		return answer(res, r);
	/* a short transfer */
	if (wr) {
		if ((fl & O_NONBLOCK) && is_disk(a[0], &st) <= 0)
			return answer(res, r);
		*done = r;
		return PUNT;
	}
	if (is_disk(a[0], &st) <= 0)
		return answer(res, r);
	if (S_ISREG(st.st_mode)) {
		pos = off >= 0 ? off + r :
				 syslet__sys3(SYS_lseek, a[0], 0, SEEK_CUR);
		if (pos >= st.st_size)
			return answer(res, r);
	}
	*done = r;
	return PUNT;
}

static int try_sock(unsigned int kind, long nr, const long *a, long *res,
		    long *done)
{
	int fi = kind == SK_SENDMSG || kind == SK_RECVMSG ? 2 : 3;
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	const struct msghdr *m = (const struct msghdr *)a[1];
	long r, fl, len;

	if (a[fi] & MSG_DONTWAIT)
		return answer(res, syslet__sys6(nr, a[0], a[1], a[2], a[3],
						a[4], a[5]));
	if ((kind == SK_RECVFROM || kind == SK_RECVMSG) &&
	    (a[fi] & MSG_WAITALL))
		return PUNT;
	b[fi] |= MSG_DONTWAIT;
	r = syslet__sys6(nr, b[0], b[1], b[2], b[3], b[4], b[5]);
	if (r == -EAGAIN) {
		fl = fd_flags(a[0]);
		return fl >= 0 && (fl & O_NONBLOCK) ? answer(res, r) : PUNT;
	}
	if (r <= 0 || kind == SK_RECVFROM || kind == SK_RECVMSG)
		return answer(res, r);
	len = kind == SK_SENDTO ? a[2] :
				  iov_total(m->msg_iov, (long)m->msg_iovlen);
	if (r >= len)
		return answer(res, r);
	/* a stream socket took part of it: a blocking send sends all */
	fl = fd_flags(a[0]);
	if (fl < 0 || (fl & O_NONBLOCK))
		return answer(res, r);
	*done = r;
	return PUNT;
}

/* accept, accept4, connect: inline only on an O_NONBLOCK socket. */
static int try_accept(long nr, const long *a, long *res)
{
	long fl = fd_flags(a[0]);

	if (fl < 0)
		return answer(res, fl);
	if (!(fl & O_NONBLOCK))
		return PUNT;
	return answer(res, syslet__sys6(nr, a[0], a[1], a[2], a[3], 0, 0));
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
		memcpy(&how, (const void *)a[2], sizeof(how));
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
	return answer(res, r);
}

static bool ts_zero(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec == 0;
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

static int try_select(unsigned int kind, const long *a, long *res)
{
	unsigned char save[3][SEL_SAVE];
	struct timespec zts = { 0, 0 };
	struct timeval ztv = { 0, 0 };
	long n = a[0], bytes = 0, r;
	bool zero;
	int i;

	if (n > 0)
		bytes = (n + 63) / 64 * 8;
	if (bytes > SEL_SAVE)
		return PUNT;
	for (i = 0; i < 3; i++)
		if (a[1 + i])
			memcpy(save[i], (const void *)a[1 + i], (size_t)bytes);
	if (kind == SK_SELECT) {
		r = syslet__sys5(SELECT_NR, n, a[1], a[2], a[3], &ztv);
		zero = a[4] && ((const struct timeval *)a[4])->tv_sec == 0 &&
		       ((const struct timeval *)a[4])->tv_usec == 0;
	} else {
		r = syslet__sys6(SYS_pselect6, n, a[1], a[2], a[3], (long)&zts,
				 a[5]);
		zero = ts_zero((const struct timespec *)a[4]);
	}
	if (r != 0 || zero)
		return answer(res, r);
	for (i = 0; i < 3; i++)
		if (a[1 + i])
			memcpy((void *)a[1 + i], save[i], (size_t)bytes);
	return PUNT;
}

static int try_poll(unsigned int kind, const long *a, long *res)
{
	struct timespec z = { 0, 0 };
	long r;
	bool zero;

	switch (kind) {
#ifdef SYS_poll
	case SK_POLL:
		r = syslet__sys3(SYS_poll, a[0], a[1], 0);
		zero = (int)a[2] == 0;
		break;
#endif
	case SK_PPOLL:
		r = syslet__sys5(SYS_ppoll, a[0], a[1], &z, a[3], a[4]);
		zero = ts_zero((const struct timespec *)a[2]);
		break;
#ifdef SYS_epoll_wait
	case SK_EPOLL_WAIT:
		r = syslet__sys4(SYS_epoll_wait, a[0], a[1], a[2], 0);
		zero = (int)a[3] == 0;
		break;
#endif
	case SK_EPOLL_PWAIT:
		r = syslet__sys6(SYS_epoll_pwait, a[0], a[1], a[2], 0, a[4],
				 a[5]);
		zero = (int)a[3] == 0;
		break;
	default:
		r = syslet__sys6(SYS_epoll_pwait2, a[0], a[1], a[2], (long)&z,
				 a[4], a[5]);
		zero = ts_zero((const struct timespec *)a[3]);
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
		return r == -ETIMEDOUT ? PUNT : answer(res, r);
	case SK_FUTEX_WAITV:
		r = syslet__sys5(nr, a[0], a[1], a[2], &z,
				 a[3] ? a[4] : CLOCK_MONOTONIC);
		return r == -ETIMEDOUT ? PUNT : answer(res, r);
	default:
		r = syslet__sys6(nr, a[0], a[1], a[2], a[3], (long)&z,
				 a[4] ? a[5] : CLOCK_MONOTONIC);
		return r == -ETIMEDOUT ? PUNT : answer(res, r);
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
	struct timespec now;

	if (kind == SK_NANOSLEEP) {
		req = (const struct timespec *)a[0];
		if (!req || ts_zero(req))
			return answer(res, sleep_now(nr, a, 2));
		return PUNT;
	}
	req = (const struct timespec *)a[2];
	if (!req || ts_zero(req))
		return answer(res, sleep_now(nr, a, 4));
	if (!(a[1] & TIMER_ABSTIME))
		return PUNT;
	if (syslet__sys2(SYS_clock_gettime, a[0], &now) < 0 || ts_le(req, &now))
		return answer(res, sleep_now(nr, a, 4));
	return PUNT;
}

static int try_lock(unsigned int kind, long nr, const long *a, long *res)
{
	long r;

	if (kind == SK_FLOCK) {
		if (a[1] & LOCK_NB)
			return answer(res, syslet__sys2(nr, a[0], a[1]));
		r = syslet__sys2(nr, a[0], a[1] | LOCK_NB);
		return r == -EWOULDBLOCK ? PUNT : answer(res, r);
	}
	if (a[1] == F_SETLKW || a[1] == F_OFD_SETLKW) {
		r = syslet__sys3(nr, a[0],
				 a[1] == F_SETLKW ? F_SETLK : F_OFD_SETLK,
				 a[2]);
		return r == -EAGAIN || r == -EACCES ? PUNT : answer(res, r);
	}
	return answer(res, syslet__sys3(nr, a[0], a[1], a[2]));
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
		r = syslet__sys5(nr, a[0], a[1], a[2], a[3], &z);
		return r == -ETIMEDOUT ? PUNT : answer(res, r);
	}
	if (a[fi] & IPC_NOWAIT)
		return answer(res,
			      syslet__sys5(nr, a[0], a[1], a[2], a[3], a[4]));
	if (kind == SK_MSGSND)
		r = syslet__sys4(nr, a[0], a[1], a[2], a[3] | IPC_NOWAIT);
	else
		r = syslet__sys5(nr, a[0], a[1], a[2], a[3], a[4] | IPC_NOWAIT);
	return r == -EAGAIN || r == -ENOMSG ? PUNT : answer(res, r);
}

int syslet__try(unsigned int kind, long nr, const long arg[6], long *res,
		long *done)
{
	*done = 0;
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
		return try_rw(kind, nr, arg, res, done);
	case SK_SENDTO:
	case SK_SENDMSG:
	case SK_RECVFROM:
	case SK_RECVMSG:
		return try_sock(kind, nr, arg, res, done);
	case SK_ACCEPT:
		return try_accept(nr, arg, res);
	case SK_OPEN:
	case SK_OPENAT:
	case SK_OPENAT2:
		return try_open(kind, arg, res);
	case SK_SELECT:
	case SK_PSELECT6:
		return try_select(kind, arg, res);
	case SK_POLL:
	case SK_PPOLL:
	case SK_EPOLL_WAIT:
	case SK_EPOLL_PWAIT:
	case SK_EPOLL_PWAIT2:
		return try_poll(kind, arg, res);
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
