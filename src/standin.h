/* SPDX-License-Identifier: MIT */
/*
 * What a worker carries for its submitter (standin.c, SPEC 7): the
 * submitting thread's tid, so that a signal the call raised goes to it,
 * and, for a call with a notifier, its signal mask, so that a process the
 * notifier starts begins with it. Also the punt path's test for calls
 * that are bound to the calling thread although their class is not.
 */
#ifndef SYSLET_STANDIN_H
#define SYSLET_STANDIN_H

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <stdint.h>

#include "sys.h"

#include "compiler.h"

struct syslet__standin {
	int32_t tid; /* the submitting thread */
};

/* indirect.c, at a punt: who submits; its mask if @notifier. */
void syslet__standin_fill(struct syslet__standin *st, bool notifier);

/*
 * indirect.c, before a punt of @nr(@a) of class @kind: true if it names or
 * waits for the calling thread (a /proc/thread-self path, a poll set with
 * a signalfd) and must run on it instead.
 */
bool syslet__standin_bound(unsigned int kind, long nr, const long a[6]);

/* A call on a worker raised SIGPIPE or SIGXFSZ: hand it to @st's thread. */
void syslet__standin_raised(const struct syslet__standin *st);

/*
 * worker.c, before a call of thread @next runs (0: before the worker
 * sleeps or ends): the look owed after notifiers of another thread.
 */
void syslet__standin_settle(pid_t next);

/*
 * worker.c, once a call ended with @r (@cont: a continuation, which hides
 * its last errno behind the bytes moved before): only these may have
 * raised a signal on the worker, so only these pay for the look.
 */
static inline void syslet__standin_done(const struct syslet__standin *st,
					long r, bool cont)
{
	if (unlikely(r == -EPIPE || r == -EFBIG || cont))
		syslet__standin_raised(st);
}

/*
 * A call that moves bytes to a file, pipe or socket and moved @r of them,
 * fewer than it asked for, may have raised SIGPIPE (the reader left
 * midway) or SIGXFSZ: every such call, by where its length is; and every
 * io_submit(), whose buffered writes run inside it. A vector's
 * is read again from the caller's memory, which the kernel just read: only
 * after the call succeeded.
 */
static inline bool syslet__standin_short(long nr, const long *arg, long r)
{
	if (r < 0)
		return false;
	switch (nr) {
	case SYS_write:
	case SYS_pwrite64:
#ifdef SYS_send
	case SYS_send:
#endif
	case SYS_sendto:
	case SYS_tee:
		return (unsigned long)r < (unsigned long)arg[2];
	case SYS_sendfile:
		return (unsigned long)r < (unsigned long)arg[3];
	case SYS_splice:
	case SYS_copy_file_range:
		return (unsigned long)r < (unsigned long)arg[4];
	case SYS_sendmmsg:
		return r < (long)(unsigned int)arg[2];
	case SYS_io_submit:
		return true; /* a count of iocbs: buffered ones ran in it */
	case SYS_writev:
	case SYS_pwritev:
	case SYS_pwritev2:
	case SYS_vmsplice:
		return r <
		       syslet__iov_total((const struct iovec *)arg[1], arg[2]);
	case SYS_sendmsg:
		return r < syslet__iov_total(
				   ((const struct msghdr *)arg[1])->msg_iov,
				   (long)((const struct msghdr *)arg[1])
					   ->msg_iovlen);
	default:
		return false;
	}
}

/*
 * worker.c, around a notifier: it stands in for @st (NULL: for nobody,
 * after it, when what the notifier raised goes to @st's thread too).
 */
void syslet__standin_notify(const struct syslet__standin *st);

/* A glibc fork child (forked.c's handler): its own tid, a notifier's mask. */
void syslet__standin_forked(void);

#endif /* SYSLET_STANDIN_H */
