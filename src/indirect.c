/* SPDX-License-Identifier: MIT */
/*
 * indirect(): the checks of SPEC 3 in their order, the pre-syslet path, and
 * the syslet path: one byte of the class table decides whether the call
 * runs on the caller (inline), is tried there without blocking (try.c), or
 * goes to a worker with a ring slot reserved for its completion.
 *
 * No state of its own: the argument block and the registers are copied at
 * entry, the class table is read with one relaxed byte load (class.h), and
 * a pending call's job belongs to the pool once syslet__pool_submit() took
 * it. The inline path takes no lock, no atomic read-modify-write and no
 * allocation.
 *
 * Which calls are "pre-syslet": a 2007 program that passes file_flags puts
 * its flags where completion_ring_ptr lives (the union). So the syslet path
 * is taken only when params covers completion_ring_ptr and that pointer is
 * neither 0 nor a value made only of O_CLOEXEC and O_NONBLOCK (0x800,
 * 0x80000, 0x80800: addresses in the first megabyte, where no ring lives).
 *
 * Partial progress and a full ring: a try that consumed part of the data
 * on a blocking descriptor (a stream read, a write, a file position moved)
 * needs a slot for the rest. If none is free (or no worker can be had),
 * EBUSY would claim the call never started, which is false: indirect() then
 * returns the bytes already moved, a short transfer as a signal would have
 * produced. A positional read consumed nothing: try.c hands it on whole
 * (done 0), so a full ring answers EBUSY there. Reserving before every try
 * would put a read-modify-write on the inline path instead.
 *
 * Calls that re-bind a descriptor number (kind SK_INLINE_FD: close, dup2,
 * socket, ...) run inline, then forget the number's cached facts
 * (fdcache.h), off the plain inline path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "class.h"
#include "compiler.h"
#include "fdcache.h"
#include "creds.h"
#include "forked.h"
#include "policy.h"
#include "pool.h"
#include "probe.h"
#include "standin.h"
#include "stats.h"
#include "sys.h"
#include "try.h"

#define FILE_FLAGS (O_CLOEXEC | O_NONBLOCK)

_Static_assert(SOCK_CLOEXEC == O_CLOEXEC && SOCK_NONBLOCK == O_NONBLOCK,
	       "file_flags map to SOCK_* as they are");
_Static_assert(EFD_CLOEXEC == O_CLOEXEC && EFD_NONBLOCK == O_NONBLOCK,
	       "file_flags map to EFD_* as they are");
_Static_assert(SFD_CLOEXEC == O_CLOEXEC && SFD_NONBLOCK == O_NONBLOCK,
	       "file_flags map to SFD_* as they are");
_Static_assert(TFD_CLOEXEC == O_CLOEXEC && TFD_NONBLOCK == O_NONBLOCK,
	       "file_flags map to TFD_* as they are");
_Static_assert(ESYSLETPENDING == ERFKILL, "the clash SPEC 2 resolves");

static long fail(int e)
{
	errno = e;
	return -1;
}

/* glibc syscall(2) convention: [-4095, -1] is -1 and errno. */
static inline long ret(long r)
{
	if (unlikely((unsigned long)r >= -4095UL))
		return fail((int)-r);
	return r;
}

/* The 2007 list, with file_flags applied through today's calls. */
static long presyslet(unsigned long nr, const long *a, int ff)
{
	long r;

	if (ff & ~FILE_FLAGS)
		return fail(EINVAL);
	switch (nr) {
	case SYS_accept:
		r = syslet__sys4(SYS_accept4, a[0], a[1], a[2], ff);
		break;
	case SYS_accept4:
		r = syslet__sys4(SYS_accept4, a[0], a[1], a[2], a[3] | ff);
		break;
	case SYS_socket:
		r = syslet__sys3(SYS_socket, a[0], a[1] | ff, a[2]);
		break;
	case SYS_socketpair:
		r = syslet__sys4(SYS_socketpair, a[0], a[1] | ff, a[2], a[3]);
		break;
#ifdef SYS_eventfd
	case SYS_eventfd:
		r = syslet__sys2(SYS_eventfd2, a[0], ff);
		break;
#endif
	case SYS_eventfd2:
		r = syslet__sys2(SYS_eventfd2, a[0], a[1] | ff);
		break;
#ifdef SYS_signalfd
	case SYS_signalfd:
		r = syslet__sys4(SYS_signalfd4, a[0], a[1], a[2], ff);
		break;
#endif
	case SYS_signalfd4:
		r = syslet__sys4(SYS_signalfd4, a[0], a[1], a[2], a[3] | ff);
		break;
	case SYS_timerfd_create:
		r = syslet__sys2(SYS_timerfd_create, a[0], a[1] | ff);
		break;
	default:
		return fail(EINVAL);
	}
	return ret(r);
}

/*
 * Hand a call to a worker with a slot of @ring reserved (SPEC 4.2).
 * @cont/@done: what the worker runs (try.h). Nothing is started when this
 * fails, except the @done bytes a try moved, which are then the answer.
 */
static long submit(struct syslet_ring *ring, const union indirect_params *p,
		   unsigned long nr, const long *a, unsigned int cont,
		   long done)
{
	struct syslet__rstate *rs;
	struct syslet__job *job;
	int err, i;

	syslet__forked_check();
	err = syslet__ring_reserve(ring, &rs);
	if (err)
		goto out;
	job = syslet__job_alloc();
	if (!job) {
		err = -ENOMEM;
		goto unreserve;
	}
	job->nr = (long)nr;
	for (i = 0; i < 6; i++)
		job->arg[i] = a[i];
	job->ip = p->syslet.frame.ip;
	job->sp = p->syslet.frame.sp;
	job->rs = rs;
	job->cnode.status = 0;
	job->cnode.caller_data = p->syslet.caller_data;
	job->done = done;
	job->cont = cont;
	syslet__standin_fill(&job->standin, job->ip != 0);
	err = syslet__pool_submit(job);
	if (!err) {
		syslet__stats_punted((long)nr, p->syslet.caller_data);
		return fail(ESYSLETPENDING);
	}
	syslet__job_free(job);
unreserve:
	syslet__ring_unreserve(rs);
out:
	if (cont == SYSLET__CONT_REST || cont == SYSLET__CONT_LOWAT)
		return done;
	return fail(-err);
}

/*
 * Calls run here rather than as a plain system call (SK_PROC):
 *   - fork goes through glibc's fork(), so that the atfork handlers run
 *     and the child gets an empty, working pool (SPEC 5);
 *   - vfork, clone3, and a clone that shares memory or gives a stack are
 *     refused (EINVAL): their child would return through this frame on a
 *     shared stack, or start on a new one with this frame's locals gone.
 *     A fork-like clone runs as such (the child's pool is reset by
 *     forked.c at its first punt);
 *   - a call that changes this thread's credentials or confinement
 *     (seccomp) is made through creds.c, which notes it.
 *   - a call that changes a scheduling policy moves every thread's
 *     answer of policy.c (a real-time caller gets help from another CPU).
 */
static long proc(unsigned long nr, const long *a)
{
	switch (nr) {
#ifdef SYS_fork
	case SYS_fork: {
		long r = fork();

		return r < 0 ? -errno : r;
	}
#endif
#ifdef SYS_vfork
	case SYS_vfork:
#endif
	case SYS_clone3:
		return -EINVAL;
	case SYS_clone:
		if (a[1] || (a[0] & (CLONE_VM | CLONE_THREAD | CLONE_SIGHAND)))
			return -EINVAL;
		return syslet__sys6(SYS_clone, a[0], 0, a[2], a[3], a[4], 0);
	case SYS_sched_setscheduler:
	case SYS_sched_setattr:
		return syslet__policy_sys((long)nr, a);
	default:
		return syslet__creds_call((long)nr, a);
	}
}

/*
 * An inline answer. -ERFKILL would read as ESYSLETPENDING (both 132), so
 * it is delivered through the ring like a pending call's result (SPEC 2);
 * a call failing with ERFKILL did nothing, so if no slot is free, EBUSY
 * ("not started") is still the truth. Always inlined: its probe's asm
 * would otherwise make gcc call it, a dozen instructions more per call.
 */
static inline __attribute__((always_inline)) long
inline_answer(struct syslet_ring *ring, const union indirect_params *p,
	      unsigned long nr, const long *a, long r)
{
	if (unlikely(r == -ERFKILL))
		return submit(ring, p, nr, a, SYSLET__CONT_RESULT, r);
	syslet__stats_inline(nr);
	SYSLET_PROBE2(inline, nr, r);
	return ret(r);
}

SYSLET_EXPORT long indirect(struct indirect_registers *regs, void *params,
			    size_t paramslen, int flags)
{
	union indirect_params p;
	struct syslet_ring *ring;
	unsigned long nr;
	unsigned int kind;
	unsigned int cont;
	long a[6], r, done;
	uint64_t rp;

	if (unlikely(flags))
		return fail(EINVAL);
	if (unlikely(!regs))
		return fail(EFAULT);
	if (likely(paramslen == sizeof(p) && params)) {
		memcpy(&p, params, sizeof(p));
	} else {
		if (paramslen > sizeof(p))
			return fail(EINVAL);
		if (!params && paramslen)
			return fail(EFAULT);
		memset(&p, 0, sizeof(p));
		if (paramslen)
			memcpy(&p, params, paramslen);
	}
	nr = (unsigned long)SYSLET__REG_NR(regs);
	memcpy(a, SYSLET__REG_ARGS(regs), sizeof(a));

	rp = p.syslet.completion_ring_ptr;
	if (unlikely(paramslen < sizeof(rp) || !(rp & ~(uint64_t)FILE_FLAGS)))
		return presyslet(nr, a, p.file_flags.flags);
	if (unlikely(!p.syslet.frame.ip != !p.syslet.frame.sp))
		return fail(EINVAL);
	ring = (struct syslet_ring *)(uintptr_t)rp;
	if (unlikely((rp & 7) || !ring->elements ||
		     (ring->elements & (ring->elements - 1))))
		return fail(EINVAL);
	if (unlikely(nr >= SYSLET__NR_LIMIT))
		return fail(ENOSYS);

	SYSLET_PROBE2(submit, nr, p.syslet.caller_data);
	kind = syslet__kind(nr);
	if (likely(kind == SK_INLINE)) {
		r = syslet__sys6((long)nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		return inline_answer(ring, &p, nr, a, r);
	}
	if (unlikely(kind == SK_PROC))
		return inline_answer(ring, &p, nr, a, proc(nr, a));
	if (kind >= SK_READ) {
		if (syslet__try(kind, (long)nr, a, &r, &done, &cont) == 0)
			return inline_answer(ring, &p, nr, a, r);
		if (done)
			return submit(ring, &p, nr, a, cont, done);
	} else if (kind == SK_INLINE_FD) {
		r = syslet__creds_call((long)nr, a);
		syslet__fd_rebound((long)nr, a, r);
		return inline_answer(ring, &p, nr, a, r);
	}
	/* bound to this thread, though of a class that punts (standin.c) */
	if (unlikely(syslet__standin_bound(kind, (long)nr, a)))
		return inline_answer(ring, &p, nr, a,
				     syslet__sys6((long)nr, a[0], a[1], a[2],
						  a[3], a[4], a[5]));
	return submit(ring, &p, nr, a, SYSLET__CONT_CALL, 0);
}
