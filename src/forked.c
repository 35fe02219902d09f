/* SPDX-License-Identifier: MIT */
/*
 * A fork child's reset (SPEC 5, issue 10 item 4): the pool with its
 * manager, notifier stripes, credset list and cancel slots are the
 * parent's, their threads gone. One reset per child, whoever runs it first:
 * the library's one atfork child handler (child_forked(), registered by
 * the constructor, so before the program's own handlers), or the first
 * punt of a child forked without handlers (a raw fork or clone:
 * syscall(SYS_fork), inline assembly, a fork-like clone through
 * indirect()). Each module had its own handler, registered when it was
 * set up, so after a program's handler registered at start: a punt from
 * that handler reset and started the pool, then the module handlers reset
 * it again under the new threads, its calls lost (test
 * interrupted_init_atfork_punt).
 *
 * One page mapped MADV_WIPEONFORK holds a byte set to 1: every child,
 * however made, sees 0 there. The check is one load of the page's address
 * and one of the byte. Whoever finds 0 claims the reset by CAS (2) and
 * stores 1 after it; the handler then finds 1 if a handler before it
 * punted. Without the page (not set up yet, or before 4.14) the handler
 * resets unconditionally, as the module handlers did.
 *
 * Shared state: page (its address, published once with release; read
 * acquire) and its byte: 0 child not reset, 2 reset under way (one thread
 * claims it by CAS), 1 ready. The claimer's release store of 1 orders the
 * reset before every submit that reads 1 (acquire). Each module's reset
 * does nothing for a module never set up.
 *
 * syslet__once(): glibc's pthread_once() knows an initialisation under way
 * at a fork for what it is only after its own fork(); a child of a raw fork
 * taken meanwhile would wait for it for ever. Each once has a word (0 not
 * run, 1 running, 2 done) in plain memory, which a child keeps, and a
 * runner byte in a MADV_WIPEONFORK page of their own, mapped by the first
 * once that runs (installed by CAS, a loser unmaps its own: nothing at load,
 * SPEC 7; the constructor only registers the atfork handlers, no system
 * call). A caller runs the init if it claims the byte
 * (CAS), else waits on the word till done: in any fork child the byte is
 * 0, so an init its parent had under way is run again by the child's
 * first caller, while a finished one stays done; a CLONE_VM child shares
 * the byte and waits, as for pthread_once(). Its users' fast paths read
 * only the word (one acquire load). Without MADV_WIPEONFORK (before 4.14)
 * the bytes are plain statics, cleared in a glibc fork child by an atfork
 * handler registered at load (fallback_forked()). Thread cancellation is
 * off from before a claim until DONE is stored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cancel.h"
#include "compiler.h"
#include "creds.h"
#include "forked.h"
#include "notify.h"
#include "policy.h"
#include "ring.h"
#include "shard.h"
#include "spawn.h"
#include "standin.h"

enum { CHILD, READY, RESETTING };

static _Atomic(_Atomic uint8_t *) page;

/*
 * The once words stay in plain memory (a child keeps DONE); each has a
 * runner byte, in a page every fork child sees zeroed (else here).
 */
_Atomic uint32_t syslet__once_words[SYSLET__ONCE_N];
static _Atomic uint8_t fallback[SYSLET__ONCE_N];
static _Atomic(_Atomic uint8_t *) runner; /* the page, or fallback */

/* A page every fork child sees zeroed, or NULL (none: before 4.14). */
static void *wiped_page(void)
{
	size_t size = (size_t)sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	if (madvise(m, size, MADV_WIPEONFORK)) {
		munmap(m, size);
		return NULL;
	}
	return m;
}

/*
 * Without the wipe (before 4.14) a glibc fork() child, at least, finds
 * the runner bytes of the inits under way cleared, by an atfork handler
 * the constructor registers then (as pthread_once() does by its fork
 * generation): at load, so before any byte is claimed and before the
 * program's own handlers. A raw fork child then waits, as it did with
 * pthread_once().
 */
static void fallback_forked(void)
{
	int i;

	/* Relaxed: only this thread runs in the child. */
	if (atomic_load_explicit(&runner, memory_order_relaxed) != fallback)
		return;
	for (i = 0; i < SYSLET__ONCE_N; i++)
		if (atomic_load_explicit(&syslet__once_words[i],
					 memory_order_relaxed) !=
		    SYSLET__ONCE_DONE)
			atomic_store_explicit(&fallback[i], 0,
					      memory_order_relaxed);
}

/*
 * The parent's pool, notifier stripes, credsets, cancel slots, ring states
 * (also without a pool: syslet_ring_eventfd()): gone.
 */
static void reset(void)
{
	syslet__pool_atfork_child();
	syslet__ring_atfork_child(); /* again if the pool's did: idempotent */
	syslet__notify_forked();
	syslet__creds_forked();
	syslet__cancel_forked();
	syslet__policy_changed(SYSLET__FREED_ANY); /* SCHED_RESET_ON_FORK */
}

/*
 * The reset if it is this thread's: unconditionally without the page @p,
 * else if it claims the byte (CHILD to RESETTING, READY after); the byte
 * as it found it, READY once it ran the reset. Signals are blocked from
 * the claim to READY: a handler's punt on this thread would wait for ever
 * for the reset it interrupted (test fork_handlers_sig_reset). The CAS and
 * the load after it acquire another's reset; READY's store releases ours
 * to every submit that reads it.
 */
static uint8_t claim_reset(_Atomic uint8_t *p)
{
	uint8_t v = CHILD;
	sigset_t old;

	syslet__sig_block(&old);
	if (!p) {
		reset();
		v = READY;
	} else if (atomic_compare_exchange_strong_explicit(
			   p, &v, RESETTING, memory_order_acquire,
			   memory_order_acquire)) {
		reset();
		atomic_store_explicit(p, READY, memory_order_release);
		v = READY;
	}
	syslet__sig_restore(&old);
	return v;
}

/*
 * The atfork child handler: the reset, unless a program handler before
 * this one (registered before the library was loaded) punted and ran it.
 * Only this thread runs here, but threads that punt started. Nothing at
 * all (no system call) in a process none of whose onces began (pool,
 * configuration, statistics, ...): there is nothing of the parent's to
 * reset. errno is the parent's.
 */
static void child_forked(void)
{
	int saved = errno, i;

	/* Relaxed: only this thread runs here; used means a once began. */
	for (i = 0; i < SYSLET__ONCE_N; i++)
		if (atomic_load_explicit(&syslet__once_words[i],
					 memory_order_relaxed) !=
		    SYSLET__ONCE_NOT_RUN)
			break;
	if (i == SYSLET__ONCE_N)
		return;
	/* Acquire: as in syslet__forked_slow(). */
	claim_reset(atomic_load_explicit(&page, memory_order_acquire));
	syslet__standin_forked();
	errno = saved;
}

/* At load: two atfork handlers, no system call (SPEC 7). */
__attribute__((constructor)) static void handlers(void)
{
	pthread_atfork(NULL, NULL, fallback_forked); /* before 4.14 */
	pthread_atfork(NULL, NULL, child_forked);
}

/*
 * The runner bytes: the wiped page, mapped by the first caller (a raw
 * fork child of a parent that had it keeps it, zeroed); where the kernel
 * has no MADV_WIPEONFORK, fallback. Acquire: the page's mapping before
 * its bytes are used (the mapping's own zeroes).
 */
static _Atomic uint8_t *runner_bytes(void)
{
	_Atomic uint8_t *r =
		atomic_load_explicit(&runner, memory_order_acquire);
	_Atomic uint8_t *none = NULL;
	void *m;

	if (likely(r))
		return r;
	m = wiped_page();
	r = m ? (_Atomic uint8_t *)m : fallback;
	/* acq_rel: ours published, or the winner's acquired */
	if (!atomic_compare_exchange_strong_explicit(&runner, &none, r,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		if (m)
			munmap(m, (size_t)sysconf(_SC_PAGESIZE));
		r = none;
	}
	return r;
}

void syslet__once_slow(enum syslet__once_id id, void (*fn)(void))
{
	_Atomic uint32_t *w = &syslet__once_words[id];
	_Atomic uint8_t *bytes = runner_bytes();
	uint32_t v;
	uint8_t zero;
	int cs;

	/*
	 * A cancelled runner would leave it running for ever: off from
	 * before the claim until DONE is out (a pending asynchronous cancel
	 * acts as soon as it is back on).
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	/* Acquire: pairs with the runner's release of SYSLET__ONCE_DONE. */
	while ((v = atomic_load_explicit(w, memory_order_acquire)) !=
	       SYSLET__ONCE_DONE) {
		/*
		 * Relaxed: the byte elects the runner, the word carries the
		 * result. A fork child's byte is 0: a run its parent had
		 * under way is its to do again.
		 */
		zero = 0;
		if (!atomic_compare_exchange_strong_explicit(
			    &bytes[id], &zero, 1, memory_order_relaxed,
			    memory_order_relaxed)) {
			syslet__futex(w, FUTEX_WAIT_PRIVATE, v, NULL);
			continue;
		}
		atomic_store_explicit(w, SYSLET__ONCE_RUNNING,
				      memory_order_relaxed);
		fn();
		/* Release: @fn's writes before every later load of DONE. */
		atomic_store_explicit(w, SYSLET__ONCE_DONE,
				      memory_order_release);
		syslet__futex(w, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
		break;
	}
	pthread_setcancelstate(cs, NULL);
}

static void init(void)
{
	void *m = wiped_page();

	/* Before 4.14 no wipe: only the atfork handler then. */
	if (!m)
		return;
	atomic_init((_Atomic uint8_t *)m, READY);
	/* Release: the byte is set before the page is found. */
	atomic_store_explicit(&page, (_Atomic uint8_t *)m,
			      memory_order_release);
}

void syslet__forked_slow(void)
{
	/* Acquire: the page was set up before its address was published. */
	_Atomic uint8_t *p = atomic_load_explicit(&page, memory_order_acquire);
	unsigned int waits = 0;
	uint8_t v;
	int cs;

	if (!p) {
		syslet__once(SYSLET__ONCE_FORKED, init);
		return;
	}
	/* A cancelled claimer would leave the others waiting. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	v = claim_reset(p);
	pthread_setcancelstate(cs, NULL);
	while (v != READY) {
		syslet__backoff(&waits);
		v = atomic_load_explicit(p, memory_order_acquire);
	}
}

bool syslet__forked_ready(void)
{
	/* Acquire: the page was set up before its address was published. */
	_Atomic uint8_t *p = atomic_load_explicit(&page, memory_order_acquire);

	/* Acquire: a reset's release of READY before this submit. */
	return p && atomic_load_explicit(p, memory_order_acquire) == READY;
}
