/* SPDX-License-Identifier: MIT */
/*
 * Cancellation of pending calls (cancel.c, syslet_cancel(3)): the worker's
 * side. A worker says which job it took, under the dequeue lock it took it
 * under, and runs the job's call through syslet__cancel_exec(), which
 * skips a call cancelled while queued and lets a canceller interrupt it
 * while it runs. exec.c makes the system call through syslet__sys6_cp().
 */
#ifndef SYSLET_CANCEL_H
#define SYSLET_CANCEL_H

#include <stdatomic.h>
#include <stdint.h>

#include "compiler.h"

struct syslet__job;

/*
 * The calling worker's slot (see cancel.c), taken before a notifier that
 * may end its thread without its key destructor (a raw exit); once the
 * death is seen, syslet__cancel_forget() gives the slot back unless the
 * destructor did.
 */
struct syslet__cancel_ref {
	void *slot;
	uint64_t id;
};
void syslet__cancel_ref(struct syslet__cancel_ref *ref);
void syslet__cancel_forget(const struct syslet__cancel_ref *ref);

/* A fork child, however made: no worker lives, every slot is free. */
void syslet__cancel_forked(void);

/* The slots that workers hold (white-box tests). */
unsigned int syslet__cancel_owned(void);

/* Worker, under the dequeue lock @job was taken under: it owns @job. */
void syslet__cancel_took(struct syslet__job *job);

/*
 * The cancel signal, fixed at its first use (the pool's first thread or
 * the first syslet_cancel()): library threads start with it unblocked.
 */
int syslet__cancel_signal(void);

/* The program chose the cancel signal (syslet_config_set(), config.c). */
extern _Atomic int syslet__cancel_chosen;

/*
 * Worker: run @job's call (syslet__job_exec) as a cancellable call and
 * return its result; without running it if it was cancelled: the status
 * a canceller posted already (while queued: -ECANCELED, or what a try
 * already moved or answered, job->done), or the same for one cancelled
 * before its call began; @err without running it if @err < 0 (the worker
 * could not take the submitter's credentials). Unregisters the job.
 */
long syslet__cancel_exec(struct syslet__job *job, long err);

/*
 * The flag of the call the calling worker runs (NULL outside one), read by
 * the stub below and by the signal handler. Written by its thread only.
 */
extern SYSLET_TLS _Atomic int *syslet__cp_flag;

#if defined(__x86_64__) || defined(__aarch64__) || \
	(defined(__powerpc64__) && defined(_CALL_ELF) && _CALL_ELF == 2)
#define SYSLET__CP_STUB 1
/*
 * cancel.c's assembly stub: if *@flag is set, -ECANCELED without entering
 * the kernel, else the system call @nr. The signal handler moves a thread
 * interrupted between the flag check and the syscall instruction to the
 * -ECANCELED exit (see cancel.c).
 */
long syslet__cp_syscall(_Atomic int *flag, long nr, long a1, long a2, long a3,
			long a4, long a5, long a6);

/* The stub's labels: the flag check, after the syscall, the exit. */
extern const char syslet__cp_begin[], syslet__cp_end[], syslet__cp_cancel[];

/* The program counter of a ucontext_t *@uc (an lvalue): the step's. */
#if defined(__x86_64__)
#define SYSLET__CP_PC(uc) ((uc)->uc_mcontext.gregs[REG_RIP])
#elif defined(__aarch64__)
#define SYSLET__CP_PC(uc) ((uc)->uc_mcontext.pc)
#else
#define SYSLET__CP_PC(uc) ((uc)->uc_mcontext.gp_regs[32]) /* PT_NIP */
#endif
#else
#define SYSLET__CP_STUB 0
#include <errno.h>

#include "sys.h"

/* Elsewhere: the flag checked in C, with the race cancel.c describes. */
static inline long syslet__cp_syscall(_Atomic int *flag, long nr, long a1,
				      long a2, long a3, long a4, long a5,
				      long a6)
{
	if (flag && atomic_load_explicit(flag, memory_order_relaxed))
		return -ECANCELED;
	return syslet__sys6(nr, a1, a2, a3, a4, a5, a6);
}
#endif

/*
 * The cancel signal handler's work on the interrupted context @ctx (a
 * ucontext_t): out of the stub if the thread's flag is set and it has not
 * yet entered the kernel. Signal-safe.
 */
void syslet__cancel_step(void *ctx);

/* A system call a syslet_cancel() may interrupt (exec.c). */
static inline long syslet__sys6_cp(long nr, long a1, long a2, long a3, long a4,
				   long a5, long a6)
{
	return syslet__cp_syscall(syslet__cp_flag, nr, a1, a2, a3, a4, a5, a6);
}

#endif /* SYSLET_CANCEL_H */
