/* SPDX-License-Identifier: MIT */
/*
 * Running a pending call on a worker (blocking allowed): the call as
 * submitted, the rest of a transfer a try started on the caller, or a
 * result the caller already has (an immediate -ERFKILL, SPEC 2).
 *
 * The rest of a transfer: job->done bytes moved inline; the worker issues
 * the same call for the remaining bytes (buffer, iovec and offset advanced;
 * a positionless call continues from the file position the try moved) and
 * the completion reports done + what it moved. If that call fails, the
 * bytes already moved are the answer, as the kernel answers a transfer
 * interrupted after progress. A sendmsg continuation carries no control
 * data: it went with the first part.
 *
 * The rest of a stream read below SO_RCVLOWAT (SYSLET__CONT_LOWAT): the
 * blocking call would have waited for min(SO_RCVLOWAT, length) bytes, then
 * taken what else was queued. The worker waits (MSG_WAITALL) for what is
 * missing to that mark, then takes what is queued (MSG_DONTWAIT). No
 * address or control data is asked for again: it came with the first part.
 *
 * A job whose submitter's credentials may differ from the worker's now
 * (creds.c) runs nothing: -EPERM, or the bytes a try already moved.
 *
 * Descriptor facts: a worker re-reads the cached facts (fdcache.h) of the
 * descriptor of a transfer it is handed once they are a few milliseconds
 * old (a punt is where a stale entry shows), forgets them when a transfer
 * says EAGAIN (the descriptor was not the blocking one the try saw), and
 * forgets the number of every descriptor a call made or re-bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "cancel.h"
#include "creds.h"
#include "fdcache.h"
#include "job.h"
#include "sys.h"
#include "try.h"

/* Every call here may be interrupted by syslet_cancel() (cancel.c). */
#define CALL(nr, a, b, c, d, e, f)                                      \
	syslet__sys6_cp(nr, (long)(a), (long)(b), (long)(c), (long)(d), \
			(long)(e), (long)(f))

/*
 * A copy of @iov[@cnt] without its first @skip bytes and cut after
 * MAX_RW_COUNT - @skip more (the blocking call moved at most MAX_RW_COUNT
 * in all); *@n its length.
 */
static struct iovec *iov_skip(const struct iovec *iov, long cnt, long skip,
			      long *n)
{
	long i = 0, j, left = MAX_RW_COUNT - skip;
	struct iovec *v;

	while (i < cnt && skip >= (long)iov[i].iov_len)
		skip -= (long)iov[i++].iov_len;
	v = malloc(sizeof(*v) * (size_t)(cnt - i + 1));
	if (!v)
		return NULL;
	for (j = 0; i < cnt && left > 0; i++, j++) {
		v[j].iov_base = (char *)iov[i].iov_base + skip;
		v[j].iov_len = iov[i].iov_len - (size_t)skip;
		skip = 0;
		if ((long)v[j].iov_len > left)
			v[j].iov_len = (size_t)left;
		left -= (long)v[j].iov_len;
	}
	*n = j;
	return v;
}

/* What is left of a single-buffer transfer of @len after @done. */
static long left_of(long len, long done)
{
	return (len < MAX_RW_COUNT ? len : MAX_RW_COUNT) - done;
}

static long rest(struct syslet__job *job)
{
	const long *a = job->arg;
	long d = job->done, r, n = 0;
	struct iovec *v = NULL;
	struct msghdr m;

	switch (job->nr) {
	case SYS_read:
	case SYS_write:
		r = CALL(job->nr, a[0], a[1] + d, left_of(a[2], d), 0, 0, 0);
		break;
	case SYS_pread64:
	case SYS_pwrite64:
		r = CALL(job->nr, a[0], a[1] + d, left_of(a[2], d), a[3] + d, 0,
			 0);
		break;
	case SYS_sendto:
		r = CALL(job->nr, a[0], a[1] + d, left_of(a[2], d), a[3], a[4],
			 a[5]);
		break;
	case SYS_sendmsg:
		memcpy(&m, (const void *)a[1], sizeof(m));
		v = iov_skip(m.msg_iov, (long)m.msg_iovlen, d, &n);
		if (!v)
			return d;
		m.msg_iov = v;
		m.msg_iovlen = (size_t)n;
		m.msg_control = NULL;
		m.msg_controllen = 0;
		r = CALL(job->nr, a[0], &m, a[2], 0, 0, 0);
		break;
	default:
		/* readv, writev, preadv, pwritev, preadv2, pwritev2 */
		v = iov_skip((const struct iovec *)a[1], a[2], d, &n);
		if (!v)
			return d;
		r = CALL(job->nr, a[0], v, n, a[3] == -1 ? -1 : a[3] + d, a[4],
			 a[5]);
		break;
	}
	free(v);
	return r < 0 ? d : d + r;
}

/* The buffers of a read of kind @nr: *@cnt iovecs, *@fl its MSG_ flags. */
static const struct iovec *read_iov(const struct syslet__job *job,
				    struct iovec *one, long *cnt, long *fl)
{
	const long *a = job->arg;
	const struct msghdr *m = (const struct msghdr *)a[1];

	*fl = 0;
	*cnt = 1;
	switch (job->nr) {
	case SYS_read:
		*one = (struct iovec){ (void *)a[1], (size_t)a[2] };
		return one;
	case SYS_recvfrom:
		*one = (struct iovec){ (void *)a[1], (size_t)a[2] };
		*fl = a[3];
		return one;
	case SYS_recvmsg:
		*fl = a[2];
		*cnt = (long)m->msg_iovlen;
		return m->msg_iov;
	default:
		*cnt = a[2];
		return (const struct iovec *)a[1];
	}
}

static long recv_iov(long fd, struct iovec *v, long n, long fl)
{
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n };

	return CALL(SYS_recvmsg, fd, &m, fl, 0, 0, 0);
}

static long lowat_rest(struct syslet__job *job)
{
	long d = job->done, fd = job->arg[0], cnt, fl, n, i, need, r, r2;
	const struct iovec *iov;
	struct iovec one, *v;
	socklen_t sl = sizeof(int);
	int lowat = 1;

	iov = read_iov(job, &one, &cnt, &fl);
	fl &= ~(long)MSG_DONTWAIT;
	syslet__sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_RCVLOWAT, (long)&lowat,
		     (long)&sl);
	v = iov_skip(iov, cnt, d, &n);
	if (!v)
		return d;
	need = lowat - d;
	for (i = 0, r = 0; i < n; r += (long)v[i++].iov_len)
		if (r + (long)v[i].iov_len >= need) {
			v[i].iov_len = (size_t)(need - r);
			n = i + 1;
			break;
		}
	r = need > 0 ? recv_iov(fd, v, n, fl | MSG_WAITALL) : 0;
	free(v);
	if (r < 0 || r < need)
		return r < 0 ? d : d + r;
	v = iov_skip(iov, cnt, d + r, &n);
	if (!v)
		return d + r;
	r2 = n ? recv_iov(fd, v, n, fl | MSG_DONTWAIT) : 0;
	free(v);
	return d + r + (r2 > 0 ? r2 : 0);
}

bool syslet__job_transfer(long nr)
{
	switch (nr) {
	case SYS_read:
	case SYS_write:
	case SYS_pread64:
	case SYS_pwrite64:
	case SYS_readv:
	case SYS_writev:
	case SYS_preadv:
	case SYS_pwritev:
	case SYS_preadv2:
	case SYS_pwritev2:
	case SYS_recvfrom:
	case SYS_sendto:
	case SYS_recvmsg:
	case SYS_sendmsg:
		return true;
	default:
		return false;
	}
}

long syslet__job_exec(struct syslet__job *job)
{
	long r;

	/* Refused (creds.c): nothing runs; what a try moved is the answer. */
	if (job->cont != SYSLET__CONT_RESULT &&
	    !syslet__creds_current(job->creds))
		return job->cont == SYSLET__CONT_CALL ? -EPERM : job->done;
	switch (job->cont) {
	case SYSLET__CONT_REST:
		return rest(job);
	case SYSLET__CONT_LOWAT:
		return lowat_rest(job);
	case SYSLET__CONT_RESULT:
		return job->done;
	default:
		if (syslet__job_transfer(job->nr))
			syslet__fd_punted(job->arg[0]);
		r = CALL(job->nr, job->arg[0], job->arg[1], job->arg[2],
			 job->arg[3], job->arg[4], job->arg[5]);
		/* a blocking transfer does not say EAGAIN: a stale entry */
		if (r == -EAGAIN && syslet__job_transfer(job->nr))
			syslet__fd_forget(job->arg[0]);
		syslet__fd_rebound(job->nr, job->arg, r);
		return r;
	}
}
