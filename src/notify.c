/* SPDX-License-Identifier: MIT */
/*
 * The notifier (SPEC 4.4): once a worker has posted a completion whose
 * frame has an ip, it runs ip with its stack pointer at sp, in a context
 * built with makecontext, and comes back whichever way the notifier ends:
 *
 *   - it returns: to the worker (see the switch below);
 *   - it calls syslet_notify_exit(): syslet__notify_leave() to the worker;
 *   - it ends with syscall(SYS_exit, 0) as 2007 programs did: the
 *     library's own syscall() (interpose.c) sees the exit in notifier
 *     context and leaves the same way. An exit it cannot see (inline
 *     asm) really ends the worker; the pool replaces it.
 *
 * The switch: makecontext() gives the entry stack pointer and ip; on
 * x86_64, aarch64 and ppc64le (ELFv2) ctx_enter() below saves the
 * registers the ABI has a callee keep (with the floating-point control
 * words) on the worker's stack, keeps that stack pointer in a callee-saved
 * register, and calls ip there (so ip returns into ctx_enter(), which
 * falls into ctx_leave()); ctx_leave() restores them. No system call:
 * glibc's swapcontext()/setcontext() set the signal mask each way, on a
 * thread whose mask never changes. Elsewhere, under the sanitizers (whose
 * fiber hooks need a trampoline) and on an x86_64 shadow stack (which the
 * switch does not move), swapcontext() and setcontext(), uc_link resuming
 * the worker. Either way the notifier runs with its worker's signal mask
 * (getcontext() of the worker: a notifier that changes it must put it
 * back).
 *
 * Notifier context is this thread in this process: active is set for the
 * notifier's span, and the process's generation is copied to ns.gen; an
 * exit counts as the notifier's only if the generation is still ns.gen, so
 * in a child forked inside a notifier (by any means) syscall(SYS_exit)
 * really exits. The generation lives in a page mapped MADV_WIPEONFORK:
 * every fork child reads 0 there until its reset stores a number above any
 * its ancestors had (gen_next, kept across fork, counts up). No system
 * call: getpid() only where the kernel has no MADV_WIPEONFORK (before
 * 4.14).
 *
 * Stack: ss_sp + ss_size == sp, as makecontext needs. On x86_64 ip is
 * entered with rsp = ((sp - 8) & ~15) - 8, as the SysV ABI wants at a
 * function entry (rsp + 8 a multiple of 16), its return address at [rsp]
 * (glibc's makecontext also puts uc_link at [rsp + 8]): 24 bytes below a
 * 16-byte aligned sp (31 at worst), nothing at or above sp. aarch64: ip
 * starts with sp & ~15, its return address in x30, nothing written.
 * ppc64le (ELFv2): glibc puts a minimal 32-byte frame with a null back
 * chain below sp & ~15, for the LR and CR words ip saves in its caller's
 * frame, and ip is entered with r12 = ip for its global entry point; ip's
 * own frame and 288-byte red zone are below that, so nothing at or above
 * sp.
 * ss_size is NOTIFY_STACK (64 KiB, or less when sp is lower): glibc does
 * not use it, sanitizers take it as the notifier stack's bounds. The 2007
 * ABI gives only the top; the program owns the size.
 *
 * Signals: the notifier runs with its worker's mask, every signal blocked
 * but SIGSYS and the cancel signal, which the library sends only to a
 * worker whose call runs (cancel.c), never to one in its notifier. Nothing
 * here changes a signal mask or disposition, a seccomp filter or
 * NO_NEW_PRIVS.
 *
 * Shared state:
 *   - ns, per thread: the worker's saved context, the notifier context, a
 *     copy of the completion announced (syslet_current_completion() points
 *     to it, not to the ring slot, which the program may consume and the
 *     library reuse while the notifier runs). Written by its own thread
 *     only (active is volatile sig_atomic_t: a signal handler of the
 *     program may ask).
 *   - busy[]: notifiers that share an sp never run at once. Striped by a
 *     hash of sp: the stripe's mutex is held across the notifier, so a
 *     second worker with the same sp (or, rarely, one whose sp hashes to
 *     the same stripe) sleeps on its futex until the first leaves. The
 *     mutexes are robust: if a worker vanished inside a notifier (an exit
 *     syscall() did not see), the kernel marks its mutex owner-dead and
 *     the next notifier goes on. A fork child starts them all afresh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "forked.h"
#include "notify.h"
#include "pool.h"
#include "sys.h"

#if defined(__SANITIZE_ADDRESS__)
#define NOTIFY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NOTIFY_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define NOTIFY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NOTIFY_TSAN 1
#endif
#endif
#ifdef NOTIFY_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef NOTIFY_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#if defined(NOTIFY_ASAN) || defined(NOTIFY_TSAN)
#define NOTIFY_FIBERS 1
#elif defined(__x86_64__) || defined(__aarch64__) || \
	(defined(__powerpc64__) && defined(_CALL_ELF) && _CALL_ELF == 2)
#define NOTIFY_REGS 1
#endif

#define NOTIFY_STACK (64 * 1024)
#define SP_STRIPES_SHIFT 10
#define SP_STRIPES (1u << SP_STRIPES_SHIFT)

struct nstate {
	ucontext_t back; /* the worker, while its notifier runs */
	void *regs; /* or ctx_enter()'s saved worker stack */
	ucontext_t nctx; /* the notifier; a getcontext() template */
	struct syslet_completion *current; /* &comp while a notifier runs */
	struct syslet_completion comp; /* the one it announces, a copy */
	volatile sig_atomic_t active;
	uint64_t gen; /* the process it runs in (this_process()) */
#ifdef NOTIFY_FIBERS
	uint64_t ip;
#endif
#ifdef NOTIFY_ASAN
	void *fake_stack;
	const void *wbottom;
	size_t wsize;
#endif
#ifdef NOTIFY_TSAN
	void *wfiber, *nfiber;
#endif
};

/*
 * The worker's state, which it owns (syslet__notify_alloc()): a pointer
 * only in static TLS, whose surplus is small (glibc's 512 bytes): two
 * ucontext_t in it made dlopen() of the library fail.
 */
static SYSLET_TLS struct nstate *ns;

static struct {
	pthread_mutex_t m;
} __attribute__((aligned(SYSLET_CACHELINE))) busy[SP_STRIPES];
static _Atomic uint64_t *gen_page; /* 0 in a fork child until reset */
static uint64_t gen_next;

/* Which process this is, without a system call where the kernel can. */
static uint64_t this_process(void)
{
	if (gen_page)
		return atomic_load_explicit(gen_page, memory_order_relaxed);
	return (uint64_t)syslet__sys0(SYS_getpid);
}

/*
 * Set up, and again in a fork child (no notifier runs there: stripes held
 * by the parent's workers, threads the child lacks, would stay held).
 */
static void busy_reset(void)
{
	pthread_mutexattr_t a;
	unsigned int i;
	void *m;

	if (!gen_page) {
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED && madvise(m, 4096, MADV_WIPEONFORK)) {
			munmap(m, 4096);
			m = MAP_FAILED;
		}
		if (m != MAP_FAILED)
			gen_page = m; /* before any notifier: in the once */
	}
	/* relaxed: read by this process's notifiers, after the once */
	if (gen_page)
		atomic_store_explicit(gen_page, ++gen_next,
				      memory_order_relaxed);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	for (i = 0; i < SP_STRIPES; i++)
		pthread_mutex_init(&busy[i].m, &a);
	pthread_mutexattr_destroy(&a);
}

static pthread_mutex_t *sp_lock(uint64_t sp)
{
	uint64_t h = (sp >> 4) * 0x9e3779b97f4a7c15ull;
	pthread_mutex_t *m = &busy[h >> (64 - SP_STRIPES_SHIFT)].m;

	syslet__once(SYSLET__ONCE_NOTIFY, busy_reset);
	if (pthread_mutex_lock(m) == EOWNERDEAD)
		pthread_mutex_consistent(m);
	return m;
}

void syslet__notify_forked(void)
{
	/* Acquire: as the once's fast path. Never set up: nothing to do. */
	if (atomic_load_explicit(&syslet__once_words[SYSLET__ONCE_NOTIFY],
				 memory_order_acquire) == SYSLET__ONCE_DONE)
		busy_reset();
}

bool syslet__notify_active(void)
{
	return ns && ns->active;
}

bool syslet__notify_exit_here(void)
{
	return ns && ns->active && ns->gen == this_process();
}

#ifdef NOTIFY_REGS
/*
 * void ctx_enter(void **back, uintptr_t sp, uintptr_t ip): save the
 * callee-saved registers on this stack, store its pointer at *back and in
 * a callee-saved register, call ip at sp as makecontext() set them; when
 * ip returns, or someone calls ctx_leave(*back), return.
 */
__attribute__((visibility("hidden"))) void
syslet__ctx_enter(void **back, uintptr_t sp, uintptr_t ip);
__attribute__((visibility("hidden"))) _Noreturn void
syslet__ctx_leave(void *back);

/* clang-format off */
#define CTX_FN(name) \
	".globl " name "\n.hidden " name "\n.type " name ", %function\n" name ":\n"
#define CTX_END(name) ".size " name ", .-" name "\n"
#if defined(__x86_64__)
/* rbx, rbp, r12-r15, MXCSR and x87 control words; ip entered at sp - 8. */
__asm__(".text\n" CTX_FN("syslet__ctx_enter")
	"pushq %rbp\n pushq %rbx\n pushq %r12\n pushq %r13\n"
	"pushq %r14\n pushq %r15\n subq $8, %rsp\n"
	"stmxcsr (%rsp)\n fnstcw 4(%rsp)\n"
	"movq %rsp, (%rdi)\n movq %rsp, %rbx\n"
	"leaq 8(%rsi), %rsp\n callq *%rdx\n movq %rbx, %rdi\n"
	CTX_FN("syslet__ctx_leave")
	"movq %rdi, %rsp\n ldmxcsr (%rsp)\n fldcw 4(%rsp)\n addq $8, %rsp\n"
	"popq %r15\n popq %r14\n popq %r13\n popq %r12\n"
	"popq %rbx\n popq %rbp\n ret\n"
	CTX_END("syslet__ctx_enter") CTX_END("syslet__ctx_leave"));
#define CTX_SP(uc) ((uc)->uc_mcontext.gregs[REG_RSP])
#define CTX_IP(uc) ((uc)->uc_mcontext.gregs[REG_RIP])
#elif defined(__aarch64__)
/* x19-x30, d8-d15, FPCR; the frame chain ends at ip (x29 = 0). */
__asm__(".text\n" CTX_FN("syslet__ctx_enter")
	"sub sp, sp, #176\n"
	"stp x19, x20, [sp, #0]\n stp x21, x22, [sp, #16]\n"
	"stp x23, x24, [sp, #32]\n stp x25, x26, [sp, #48]\n"
	"stp x27, x28, [sp, #64]\n stp x29, x30, [sp, #80]\n"
	"stp d8, d9, [sp, #96]\n stp d10, d11, [sp, #112]\n"
	"stp d12, d13, [sp, #128]\n stp d14, d15, [sp, #144]\n"
	"mrs x9, fpcr\n str x9, [sp, #160]\n"
	"mov x19, sp\n str x19, [x0]\n mov sp, x1\n mov x29, #0\n"
	"blr x2\n mov x0, x19\n"
	CTX_FN("syslet__ctx_leave")
	"mov sp, x0\n ldr x9, [sp, #160]\n msr fpcr, x9\n"
	"ldp x19, x20, [sp, #0]\n ldp x21, x22, [sp, #16]\n"
	"ldp x23, x24, [sp, #32]\n ldp x25, x26, [sp, #48]\n"
	"ldp x27, x28, [sp, #64]\n ldp x29, x30, [sp, #80]\n"
	"ldp d8, d9, [sp, #96]\n ldp d10, d11, [sp, #112]\n"
	"ldp d12, d13, [sp, #128]\n ldp d14, d15, [sp, #144]\n"
	"add sp, sp, #176\n ret\n"
	CTX_END("syslet__ctx_enter") CTX_END("syslet__ctx_leave"));
#define CTX_SP(uc) ((uc)->uc_mcontext.sp)
#define CTX_IP(uc) ((uc)->uc_mcontext.pc)
#else
/*
 * ppc64le: LR and CR (cr2-cr4) in the caller's frame, as a callee keeps
 * them; a 528-byte frame: TOC at 24, r14-r31 at 32, f14-f31 at 176, FPSCR
 * at 320, VRSAVE at 328, v20-v31 at 336. ip entered with r12 = ip.
 */
#define PPC_GPR(op, n) op " " #n ", " #n "*8-80(1)\n"
#define PPC_FPR(op, n) op " " #n ", " #n "*8+64(1)\n"
#define PPC_VR(op, n) "li 0, " #n "*16+16\n " op " " #n ", 1, 0\n"
#define PPC_6(M, op, a, b, c, d, e, f) \
	M(op, a) M(op, b) M(op, c) M(op, d) M(op, e) M(op, f)
#define PPC_14_31(M, op)                                            \
	PPC_6(M, op, 14, 15, 16, 17, 18, 19)                         \
	PPC_6(M, op, 20, 21, 22, 23, 24, 25)                         \
	PPC_6(M, op, 26, 27, 28, 29, 30, 31)
#define PPC_V20_31(op)                                              \
	PPC_6(PPC_VR, op, 20, 21, 22, 23, 24, 25)                    \
	PPC_6(PPC_VR, op, 26, 27, 28, 29, 30, 31)
__asm__(".text\n" CTX_FN("syslet__ctx_enter")
	"mflr 0\n std 0, 16(1)\n mfcr 12\n stw 12, 8(1)\n"
	"stdu 1, -528(1)\n std 2, 24(1)\n"
	PPC_14_31(PPC_GPR, "std") PPC_14_31(PPC_FPR, "stfd")
	"mffs 0\n stfd 0, 320(1)\n mfspr 0, 256\n stw 0, 328(1)\n"
	PPC_V20_31("stvx")
	"std 1, 0(3)\n mr 31, 1\n mr 1, 4\n mr 12, 5\n mtctr 5\n bctrl\n"
	"mr 3, 31\n"
	CTX_FN("syslet__ctx_leave")
	"mr 1, 3\n ld 2, 24(1)\n"
	PPC_14_31(PPC_GPR, "ld") PPC_14_31(PPC_FPR, "lfd")
	"lfd 0, 320(1)\n mtfsf 0xff, 0\n lwz 0, 328(1)\n mtspr 256, 0\n"
	PPC_V20_31("lvx")
	"addi 1, 1, 528\n ld 0, 16(1)\n mtlr 0\n lwz 12, 8(1)\n"
	"mtcrf 0x38, 12\n blr\n"
	CTX_END("syslet__ctx_enter") CTX_END("syslet__ctx_leave"));
#define CTX_SP(uc) ((uc)->uc_mcontext.gp_regs[PT_R1])
#define CTX_IP(uc) ((uc)->uc_mcontext.gp_regs[PT_NIP])
#endif

/* clang-format on */

/* Not on an x86_64 shadow stack, which ctx_leave() would not unwind. */
static bool regs_switch(void)
{
#ifdef __x86_64__
	uint64_t ssp = 0;

	/* A no-op where shadow stacks are off or absent. */
	__asm__ volatile("rdsspq %0" : "+r"(ssp));
	return !ssp;
#else
	return true;
#endif
}
#endif

#ifdef NOTIFY_FIBERS
/* Sanitizer builds enter through here, so that the switch is announced. */
static void fiber_entry(void)
{
#ifdef NOTIFY_ASAN
	__sanitizer_finish_switch_fiber(NULL, &ns->wbottom, &ns->wsize);
#endif
	((void (*)(void))(uintptr_t)ns->ip)();
	syslet__notify_leave();
}
#endif

_Noreturn void syslet__notify_leave(void)
{
#ifdef NOTIFY_ASAN
	__sanitizer_start_switch_fiber(NULL, ns->wbottom, ns->wsize);
#endif
#ifdef NOTIFY_TSAN
	__tsan_switch_to_fiber(ns->wfiber, 0);
#endif
#ifdef NOTIFY_REGS
	if (ns->regs)
		syslet__ctx_leave(ns->regs);
#endif
	setcontext(&ns->back);
	abort();
}

void *syslet__notify_alloc(void)
{
	return calloc(1, sizeof(struct nstate));
}

int syslet__notify_thread_init(void *state)
{
	struct nstate *s = state;

	/* The worker's mask (spawn.c), which it never changes. */
	if (getcontext(&s->nctx))
		return -errno;
	ns = s;
	return 0;
}

void syslet__notify_thread_end(void)
{
	ns = NULL;
}

void syslet__notify_run(struct syslet__job *job, struct syslet_completion *c)
{
	struct nstate *s = ns;
	size_t size = job->sp < NOTIFY_STACK ? job->sp : NOTIFY_STACK;
	pthread_mutex_t *m;

	/* First: makecontext writes below sp, where a notifier may run. */
	m = sp_lock(job->sp);
	s->nctx.uc_stack.ss_sp = (void *)(uintptr_t)(job->sp - size);
	s->nctx.uc_stack.ss_size = size;
	s->nctx.uc_stack.ss_flags = 0;
	s->nctx.uc_link = &s->back;
#ifdef NOTIFY_FIBERS
	s->ip = job->ip;
	makecontext(&s->nctx, fiber_entry, 0);
#else
	makecontext(&s->nctx, (void (*)(void))(uintptr_t)job->ip, 0);
#endif
	/*
	 * A copy: the program may consume the ring slot @c while the notifier
	 * runs, and the library then reuse it for another completion.
	 */
	(void)c;
	s->comp.status = job->cnode.status;
	s->comp.caller_data = job->cnode.caller_data;
	s->current = &s->comp;
	s->gen = this_process();
	s->active = 1;
#ifdef NOTIFY_ASAN
	__sanitizer_start_switch_fiber(&s->fake_stack, s->nctx.uc_stack.ss_sp,
				       size);
#endif
#ifdef NOTIFY_TSAN
	/*
	 * The job's last use on this thread: a notifier that ends the thread
	 * hands it to the manager through a pidfd, which TSan cannot see.
	 */
	__tsan_release(job);
	s->wfiber = __tsan_get_current_fiber();
	s->nfiber = __tsan_create_fiber(0);
	__tsan_switch_to_fiber(s->nfiber, 0);
#endif
#ifdef NOTIFY_REGS
	if (likely(regs_switch()))
		syslet__ctx_enter(&s->regs, (uintptr_t)CTX_SP(&s->nctx),
				  (uintptr_t)CTX_IP(&s->nctx));
	else
#endif
		swapcontext(&s->back, &s->nctx);
	s->regs = NULL;
#ifdef NOTIFY_ASAN
	__sanitizer_finish_switch_fiber(s->fake_stack, NULL, NULL);
#endif
#ifdef NOTIFY_TSAN
	__tsan_destroy_fiber(s->nfiber);
#endif
	/*
	 * Back in a child forked inside the notifier (by any means: its
	 * generation is 0 or its own): an ordinary
	 * process, whose pool and queues are not this worker's. Nothing in
	 * it is left to go back to: it ends, status 0, as _exit(0) would end
	 * it (its thread alone would leave the library's threads in it, the
	 * process alive for ever).
	 */
	if (unlikely(s->gen != this_process()))
		syslet__sys1(SYS_exit_group, 0);
	s->active = 0;
	s->current = NULL;
	pthread_mutex_unlock(m);
}

SYSLET_EXPORT void syslet_notify_exit(void)
{
	if (!syslet__notify_active())
		abort();
	syslet__notify_leave();
}

SYSLET_EXPORT struct syslet_completion *syslet_current_completion(void)
{
	struct nstate *s = ns;

	if (!s || !s->current)
		return NULL;
	/* A child forked inside a notifier is an ordinary process. */
	return s->gen == this_process() ? s->current : NULL;
}
