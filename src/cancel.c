/* SPDX-License-Identifier: MIT */
/*
 * syslet_cancel(): stop pending calls by caller_data (SPEC 6).
 *
 * A pending call is in one of two places, and a canceller looks at both,
 * the queues first. Queued: in a shard's liburcu queue, which cannot remove
 * from the middle; the canceller walks the queue under its dequeue lock,
 * claims the job (its cancelled flag, by CAS) and posts its -ECANCELED
 * completion at once, still under that lock (syslet__ring_post_early()):
 * it is in the ring when syslet_cancel() returns, however many workers are
 * blocked. The job stays queued; the worker that dequeues it later finds
 * it posted (cnode.posted), runs nothing, and runs its notifier (SPEC 4.4:
 * notifiers run on a worker; so does syslet_drain()'s count of it).
 * Running: each worker owns a slot in the list below that names the job it
 * took, and its tid. The worker names the job under the same dequeue lock
 * that it dequeued it under (syslet__cancel_took()), so a job the
 * canceller did not find queued is named already: no gap, no wait. The
 * canceller sets the flag and sends the cancel signal to that tid, so that
 * an interruptible wait ends as a signal would end it (the completion
 * carries -EINTR or a partial count) and an uninterruptible one finishes
 * normally. A running call's one completion is its worker's.
 *
 * The signal: a real-time signal the library owns (SYSLET_OPT_CANCEL_SIGNAL,
 * default SIGRTMAX - 2, its number fixed at its first use), with a handler
 * that does nothing but the step below, no SA_RESTART (so an interrupted
 * call returns -EINTR instead of restarting). The program's first
 * syslet_cancel() installs it, and never over a handler of the program's
 * (EBUSY) unless the program chose the number (environment or
 * syslet_config_set()). Every library thread starts with this signal
 * unblocked (spawn.c's attributes) and never blocks it: no system call per
 * job, and a call that started before the first cancel is interrupted by
 * it all the same. Before the handler exists the library sends nothing;
 * a process-directed instance may then land on a worker, whose default
 * action ends the process, as it would on any thread that leaves it
 * unblocked. A notifier runs with its worker's mask (notify.c), once
 * the slot names no job: nothing is sent to it there. Neither the
 * program's threads' masks nor any other signal changes.
 *
 * The classic race: a signal that lands after the worker checked the flag
 * but before it entered the kernel would be lost, and the call would block
 * on. As musl's cancellation points do, the call is made by an assembly
 * stub (syslet__cp_syscall): it reads the flag, then executes the syscall
 * instruction. The handler looks at the interrupted instruction pointer:
 * inside [cp_begin, cp_end), the syscall instruction not yet done (or
 * being restarted), with the flag set, it moves the thread to cp_cancel,
 * which returns -ECANCELED: the call never ran. After the syscall
 * instruction the kernel already returned what the interrupted call
 * returns. No re-sending, no backoff, no wait on the worker.
 *
 * A stale signal: the canceller sends while holding the slot's lock and
 * the worker clears its slot under that lock after its call; a worker that
 * finds its job's flag set there (a signal was sent) makes one system call,
 * whose return takes the pending signal, before its next stub: a signal
 * meant for one job never interrupts another job's call.
 *
 * Limits: a signal that cannot be queued (RLIMIT_SIGPENDING) leaves a
 * running call uncancelled: its flag is taken back and syslet_cancel()
 * says EAGAIN; a worker that got no slot (out of memory) runs calls that
 * can only be cancelled while queued; on an architecture without a stub
 * (cancel.h: there are stubs for x86_64, aarch64 and ppc64le) the check
 * and the syscall are C, and the race above stays open. Cost: two
 * uncontended mutex pairs per job, no system call (one more for a job a
 * canceller signalled).
 *
 * Shared state: slots (a list pushed by CAS, never freed, claimed by a
 * worker with a CAS of owner from 0 to a fresh claim id and given back
 * when its thread ends: by the key's destructor, or, for a thread that
 * ended without one (a raw exit in a notifier), by the manager once it
 * found the death, with a CAS from that id, which fails if the slot was
 * given back and claimed again meanwhile); a slot's job (its worker and
 * canceller, under its lock), tid (its worker, before it names a job); a
 * job's cancelled flag (CAS by a canceller, under the dequeue lock while
 * queued, taken back by it under the slot's lock if its signal could not
 * be sent, read by the worker and the handler); sig (set once by CAS,
 * relaxed); on (the handler is installed, release/acquire); chosen
 * (config.c, relaxed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "cancel.h"
#include "forked.h"
#include "probe.h"
#include "shard.h"
#include "stats.h"
#include "sys.h"
#include "try.h"

struct slot {
	pthread_mutex_t lock; /* job, against a canceller's signal */
	struct syslet__job *job; /* the job this worker runs, or NULL */
	_Atomic uint64_t owner; /* 0: free; else its claim's id */
	pid_t tid;
	struct slot *next;
};

static _Atomic(struct slot *) slots;
static _Atomic uint64_t claims; /* claim ids, from 1 */
static SYSLET_TLS struct slot *mine;
SYSLET_TLS _Atomic int *syslet__cp_flag;
static pthread_key_t slot_key;
static bool slot_keyed;

static _Atomic int on; /* the handler is installed */
static _Atomic int sig; /* the cancel signal, fixed at its first use */
_Atomic int syslet__cancel_chosen; /* the program set the signal */

#if defined(__x86_64__)
/* rdi flag, rsi nr, rdx rcx r8 r9 8(%rsp) 16(%rsp) the arguments. */
__asm__(".text\n"
	".globl syslet__cp_syscall\n"
	".hidden syslet__cp_syscall\n"
	".globl syslet__cp_begin, syslet__cp_end, syslet__cp_cancel\n"
	".hidden syslet__cp_begin, syslet__cp_end, syslet__cp_cancel\n"
	".type syslet__cp_syscall,@function\n"
	"syslet__cp_syscall:\n"
	"	test %rdi,%rdi\n"
	"	jz 1f\n"
	"syslet__cp_begin:\n"
	"	mov (%rdi),%eax\n"
	"	test %eax,%eax\n"
	"	jnz syslet__cp_cancel\n"
	"1:	mov %rsi,%rax\n"
	"	mov %rdx,%rdi\n"
	"	mov %rcx,%rsi\n"
	"	mov %r8,%rdx\n"
	"	mov %r9,%r10\n"
	"	mov 8(%rsp),%r8\n"
	"	mov 16(%rsp),%r9\n"
	"	syscall\n"
	"syslet__cp_end:\n"
	"	ret\n"
	"syslet__cp_cancel:\n"
	"	mov $-125,%rax\n" /* -ECANCELED */
	"	ret\n"
	".size syslet__cp_syscall,.-syslet__cp_syscall\n");
#elif defined(__aarch64__)
/*
 * x0 flag, x1 nr, x2..x7 the arguments. A restarted svc is at
 * syslet__cp_end - 4 (the kernel moves pc back to it): inside the range.
 */
__asm__(".text\n"
	".globl syslet__cp_syscall\n"
	".hidden syslet__cp_syscall\n"
	".globl syslet__cp_begin, syslet__cp_end, syslet__cp_cancel\n"
	".hidden syslet__cp_begin, syslet__cp_end, syslet__cp_cancel\n"
	".type syslet__cp_syscall,%function\n"
	".p2align 2\n"
	"syslet__cp_syscall:\n"
	"	cbz x0, 1f\n"
	"syslet__cp_begin:\n"
	"	ldr w8, [x0]\n"
	"	cbnz w8, syslet__cp_cancel\n"
	"1:	mov x8, x1\n"
	"	mov x0, x2\n"
	"	mov x1, x3\n"
	"	mov x2, x4\n"
	"	mov x3, x5\n"
	"	mov x4, x6\n"
	"	mov x5, x7\n"
	"	svc 0\n"
	"syslet__cp_end:\n"
	"	ret\n"
	"syslet__cp_cancel:\n"
	"	mov x0, #-125\n" /* -ECANCELED */
	"	ret\n"
	".size syslet__cp_syscall,.-syslet__cp_syscall\n");
#elif defined(__powerpc64__) && defined(_CALL_ELF) && _CALL_ELF == 2
/*
 * ELFv2, a leaf that needs no TOC (one entry point): r3 flag, r4 nr,
 * r5..r10 the arguments. The kernel's error is r3 positive with cr0.SO
 * set: negated after the range ends (the step only needs the sc inside
 * it; a restarted sc is at syslet__cp_end - 4).
 */
__asm__(".text\n"
	".globl syslet__cp_syscall\n"
	".hidden syslet__cp_syscall\n"
	".globl syslet__cp_begin, syslet__cp_end, syslet__cp_cancel\n"
	".hidden syslet__cp_begin, syslet__cp_end, syslet__cp_cancel\n"
	".type syslet__cp_syscall,@function\n"
	".p2align 2\n"
	"syslet__cp_syscall:\n"
	"	cmpdi 3, 0\n"
	"	beq 1f\n"
	"syslet__cp_begin:\n"
	"	lwz 0, 0(3)\n"
	"	cmpwi 0, 0\n"
	"	bne syslet__cp_cancel\n"
	"1:	mr 0, 4\n"
	"	mr 3, 5\n"
	"	mr 4, 6\n"
	"	mr 5, 7\n"
	"	mr 6, 8\n"
	"	mr 7, 9\n"
	"	mr 8, 10\n"
	"	sc\n"
	"syslet__cp_end:\n"
	"	bnslr+\n"
	"	neg 3, 3\n"
	"	blr\n"
	"syslet__cp_cancel:\n"
	"	li 3, -125\n" /* -ECANCELED */
	"	blr\n"
	".size syslet__cp_syscall,.-syslet__cp_syscall\n");
#endif

#if SYSLET__CP_STUB
_Static_assert(ECANCELED == 125, "the stub's -ECANCELED");
#endif

/*
 * Signal context: the step out of the stub (see the top), on the context
 * @ctx of the interrupted thread.
 */
void syslet__cancel_step(void *ctx)
{
#if SYSLET__CP_STUB
	ucontext_t *uc = ctx;
	_Atomic int *flag = syslet__cp_flag;
	uintptr_t pc = (uintptr_t)SYSLET__CP_PC(uc);

	if (flag && atomic_load_explicit(flag, memory_order_relaxed) &&
	    pc >= (uintptr_t)syslet__cp_begin && pc < (uintptr_t)syslet__cp_end)
		SYSLET__CP_PC(uc) = (uintptr_t)syslet__cp_cancel;
#else
	(void)ctx;
#endif
}

static void on_signal(int signo, siginfo_t *si, void *ctx)
{
	(void)signo;
	(void)si;
	syslet__cancel_step(ctx);
}

int syslet__cancel_signal(void)
{
	int n = atomic_load_explicit(&sig, memory_order_relaxed), zero = 0;

	if (n)
		return n;
	n = (int)syslet__cfg(&syslet__config()->cancel_signal);
	/* Relaxed: a number; racing first uses agree on one. */
	if (!atomic_compare_exchange_strong_explicit(
		    &sig, &zero, n, memory_order_relaxed, memory_order_relaxed))
		n = zero;
	return n;
}

/*
 * Install the handler, unless the program has one of its own there and did
 * not choose the number for the library: 0 or -errno. Racing first cancels
 * install the same handler; one that failed is tried again next time.
 */
static int install(void)
{
	struct sigaction sa, old;
	int n;

	/* Acquire: pairs with the release below. */
	if (atomic_load_explicit(&on, memory_order_acquire))
		return 0;
	n = syslet__cancel_signal();
	if (sigaction(n, NULL, &old))
		return -errno;
	/*
	 * Relaxed: config.c sets it (a valid SYSLET_CANCEL_SIGNAL, or
	 * syslet_config_set()) before it answers. Chosen too late (after the
	 * number was fixed) is not chosen for this number.
	 */
	if (old.sa_handler != SIG_DFL && old.sa_sigaction != on_signal &&
	    (!atomic_load_explicit(&syslet__cancel_chosen,
				   memory_order_relaxed) ||
	     syslet__cfg(&syslet__config()->cancel_signal) != n))
		return -EBUSY;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: calls end with EINTR */
	sigfillset(&sa.sa_mask);
	if (sigaction(n, &sa, NULL))
		return -errno;
	/* Release: the handler before anyone reads on. */
	atomic_store_explicit(&on, 1, memory_order_release);
	return 0;
}

static void slot_release(void *arg)
{
	struct slot *s = arg;

	mine = NULL;
	/* Release: the slot's last writes before another worker claims it. */
	atomic_store_explicit(&s->owner, 0, memory_order_release);
}

/* In a fork child no worker lives: every slot is free. */
void syslet__cancel_forked(void)
{
	struct slot *s;

	for (s = atomic_load_explicit(&slots, memory_order_relaxed); s;
	     s = s->next) {
		pthread_mutex_init(&s->lock, NULL);
		s->job = NULL;
		atomic_store_explicit(&s->owner, 0, memory_order_relaxed);
	}
	mine = NULL;
}

static void slot_init(void)
{
	slot_keyed = !pthread_key_create(&slot_key, slot_release);
}

/* The calling worker's slot: a free one, else a new one; NULL if none. */
static struct slot *claim(void)
{
	/* Relaxed: a unique number is all it needs to be. */
	uint64_t id =
		atomic_fetch_add_explicit(&claims, 1, memory_order_relaxed) + 1;
	struct slot *s;
	uint64_t free;

	syslet__once(SYSLET__ONCE_CANCEL_SLOT, slot_init);
	/* Acquire: pairs with the release push, for s->next. */
	for (s = atomic_load_explicit(&slots, memory_order_acquire); s;
	     s = s->next) {
		free = 0;
		/* Acquire: pairs with slot_release and forget. */
		if (atomic_compare_exchange_strong_explicit(
			    &s->owner, &free, id, memory_order_acquire,
			    memory_order_relaxed))
			break;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		pthread_mutex_init(&s->lock, NULL);
		atomic_init(&s->owner, id);
		s->next = atomic_load_explicit(&slots, memory_order_relaxed);
		/* Release: the slot is initialised before it is listed. */
		while (!atomic_compare_exchange_weak_explicit(
			&slots, &s->next, s, memory_order_release,
			memory_order_relaxed))
			;
	}
	s->tid = (pid_t)syscall(SYS_gettid);
	if (slot_keyed)
		pthread_setspecific(slot_key, s);
	return s;
}

void syslet__cancel_ref(struct syslet__cancel_ref *ref)
{
	ref->slot = mine;
	/* Relaxed: this thread's own claim. */
	ref->id = mine ? atomic_load_explicit(&mine->owner,
					      memory_order_relaxed) :
			 0;
}

void syslet__cancel_forget(const struct syslet__cancel_ref *ref)
{
	struct slot *s = ref->slot;
	uint64_t id = ref->id;

	if (!s)
		return;
	/*
	 * Killed in its call: the slot still names the job. Not if it was
	 * given back (and maybe claimed again) meanwhile. Relaxed: as
	 * syslet__cancel_ref()'s; only the CAS below frees it.
	 */
	pthread_mutex_lock(&s->lock);
	if (atomic_load_explicit(&s->owner, memory_order_relaxed) == id)
		s->job = NULL;
	pthread_mutex_unlock(&s->lock);
	/* Release: as slot_release (the dead thread's writes were seen). */
	atomic_compare_exchange_strong_explicit(
		&s->owner, &id, 0, memory_order_release, memory_order_relaxed);
}

unsigned int syslet__cancel_owned(void)
{
	unsigned int n = 0;
	struct slot *s;

	/* Acquire: pairs with the release push, for s->next. */
	for (s = atomic_load_explicit(&slots, memory_order_acquire); s;
	     s = s->next)
		/* Relaxed: a count. */
		n += !!atomic_load_explicit(&s->owner, memory_order_relaxed);
	return n;
}

void syslet__cancel_took(struct syslet__job *job)
{
	if (unlikely(!mine))
		mine = claim();
	if (!mine)
		return;
	pthread_mutex_lock(&mine->lock);
	mine->job = job;
	pthread_mutex_unlock(&mine->lock);
}

long syslet__cancel_exec(struct syslet__job *job, long err)
{
	bool sent;
	long r;

	/* Acquire: a canceller posted it, under the lock it was taken under. */
	if (atomic_load_explicit(&job->cnode.posted, memory_order_acquire) ==
	    SYSLET__POSTED_EARLY) {
		r = (long)job->cnode.status;
	} else if (err) {
		r = err;
	} else if (atomic_load_explicit(&job->cancelled,
					memory_order_relaxed)) {
		r = syslet__job_unrun(job, -ECANCELED);
	} else {
		syslet__cp_flag = &job->cancelled;
		atomic_signal_fence(memory_order_seq_cst);
		r = syslet__job_exec(job);
		atomic_signal_fence(memory_order_seq_cst);
		syslet__cp_flag = NULL;
	}
	syslet__stats_completed(job->nr);
	if (!mine)
		return r;
	pthread_mutex_lock(&mine->lock);
	mine->job = NULL;
	/* Relaxed: a canceller sets it or takes it back under this lock. */
	sent = atomic_load_explicit(&job->cancelled, memory_order_relaxed);
	pthread_mutex_unlock(&mine->lock);
	/*
	 * A signal sent for this job is pending here by now (sent under the
	 * lock): any system call's return takes it, before the next stub.
	 */
	if (unlikely(sent))
		syslet__sys0(SYS_getppid);
	return r;
}

static bool matches(const struct syslet__job *job,
		    const struct syslet_ring *ring, uint64_t caller_data)
{
	return job->cnode.caller_data == caller_data &&
	       syslet__ring_of(job->rs) == ring;
}

/* Claim @job's cancellation: true for the one canceller that does. */
static bool mark(struct syslet__job *job)
{
	int zero = 0;

	/* Relaxed: the worker reads it after the dequeue lock or the signal. */
	return atomic_compare_exchange_strong_explicit(&job->cancelled, &zero,
						       1, memory_order_relaxed,
						       memory_order_relaxed);
}

/* @job is found: count it. */
static void found(struct syslet__job *job, int running)
{
	syslet__stats_cancelled(job->nr);
	SYSLET_PROBE3(cancel, job->nr, job->cnode.caller_data, running);
}

static int cancel_queued(struct syslet__shard *s,
			 const struct syslet_ring *ring, uint64_t caller_data,
			 bool all)
{
	struct cds_wfcq_node *node;
	struct syslet__job *job;
	int n = 0;

	cds_wfcq_dequeue_lock(&s->head, &s->tail);
	__cds_wfcq_for_each_blocking(&s->head, &s->tail, node)
	{
		job = caa_container_of(node, struct syslet__job, qnode);
		syslet__handoff_acquire(job);
		if (!matches(job, ring, caller_data) || !mark(job))
			continue;
		found(job, 0);
		job->cnode.status =
			(uint64_t)syslet__job_unrun(job, -ECANCELED);
		syslet__ring_post_early(job->rs, &job->cnode);
		n++;
		if (!all)
			break;
	}
	cds_wfcq_dequeue_unlock(&s->head, &s->tail);
	return n;
}

/*
 * The job @s runs, if it matches: 1 if cancelled, 0 if not, -EAGAIN if the
 * signal could not be queued (RLIMIT_SIGPENDING: real-time signals sent
 * with tgkill are never queued over it). Then the flag is taken back: the
 * call runs on, or completes with -ECANCELED if it saw the flag before it
 * entered the kernel (a true answer either way), and a later
 * syslet_cancel() may find it again.
 */
static int cancel_running(struct slot *s, const struct syslet_ring *ring,
			  uint64_t caller_data)
{
	int n_sig = syslet__cancel_signal();
	struct syslet__job *job;
	int n = 0;
	long r;

	pthread_mutex_lock(&s->lock);
	job = s->job;
	if (job && matches(job, ring, caller_data) && mark(job)) {
		n = 1;
		r = syslet__sys3(SYS_tgkill, getpid(), s->tid, n_sig);
		if (r < 0 && r != -ESRCH) {
			/* Relaxed: as in mark(). */
			atomic_store_explicit(&job->cancelled, 0,
					      memory_order_relaxed);
			n = -EAGAIN;
		} else {
			/*
			 * ESRCH: its worker was killed in the call, not
			 * reaped yet; the call completes, as an
			 * uninterruptible one, with its status (worker.c).
			 */
			found(job, 1);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

SYSLET_EXPORT int syslet_cancel(struct syslet_ring *ring, uint64_t caller_data,
				unsigned int flags)
{
	bool all = flags & SYSLET_CANCEL_ALL;
	struct syslet__pool *p;
	struct slot *s;
	int i, n = 0, err, r, unsent = 0, cs;

	if (flags & ~(unsigned int)SYSLET_CANCEL_ALL) {
		errno = EINVAL;
		return -1;
	}
	err = install();
	if (!err && !ring)
		return 0;
	if (!err)
		err = syslet__ring_check(ring);
	if (err) {
		errno = -err;
		return -1;
	}
	/*
	 * No thread cancellation inside: liburcu's queue walk may poll() (a
	 * cancellation point) with the shard's dequeue lock held.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	/* A raw fork child: not the parent's calls (forked.c). */
	syslet__forked_check();
	p = syslet__pool_get();
	for (i = 0; p && i < p->nshards && (all || !n); i++)
		n += cancel_queued(&p->shards[i], ring, caller_data, all);
	/* Acquire: pairs with claim()'s push; after the queues (see top). */
	for (s = atomic_load_explicit(&slots, memory_order_acquire);
	     s && (all || (!n && !unsent)); s = s->next) {
		r = cancel_running(s, ring, caller_data);
		if (r < 0)
			unsent = 1;
		else
			n += r;
	}
	pthread_setcancelstate(cs, NULL);
	if (unsent) {
		errno = EAGAIN;
		return -1;
	}
	if (!n) {
		errno = ENOENT;
		return -1;
	}
	return n;
}
