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
#include <sys/syscall.h>
#include <stdint.h>

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
 * A write of @len that moved @r < @len bytes may have raised SIGPIPE (the
 * reader left midway) or SIGXFSZ (the limit reached midway): the calls
 * whose third argument is their length (write, pwrite64, send, sendto).
 */
static inline bool syslet__standin_short(long nr, const long *arg, long r)
{
	switch (nr) {
	case SYS_write:
	case SYS_pwrite64:
#ifdef SYS_send
	case SYS_send:
#endif
	case SYS_sendto:
		return r >= 0 && r < arg[2];
	default:
		return false;
	}
}

/* worker.c, around a notifier: it stands in for @st (NULL: for nobody). */
void syslet__standin_notify(const struct syslet__standin *st);

/* A glibc fork child (forked.c's handler): its own tid, a notifier's mask. */
void syslet__standin_forked(void);

#endif /* SYSLET_STANDIN_H */
