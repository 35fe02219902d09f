/* SPDX-License-Identifier: MIT */
/*
 * The SYS_exit trap (SPEC 4.4): a 2007 notifier ends with
 * syscall(SYS_exit, 0), which would end the worker. Each worker installs a
 * seccomp filter on itself only (no TSYNC) that returns SECCOMP_RET_TRAP
 * for exit when the instruction pointer lies inside libc's syscall()
 * wrapper, and allows everything else: glibc's own thread exit (inline in
 * start_thread, with every signal blocked, where a trap would be forced to
 * SIG_DFL and kill the process) still works. The SIGSYS handler, on a
 * per-worker alternate stack, sees our trap (SYS_SECCOMP, RET_DATA tag):
 * inside a notifier it resumes the worker (syslet__notify_leave); outside
 * one it performs the exit the thread asked for, with a raw syscall the
 * filter lets through. Any other SIGSYS goes to the handler the program
 * had, or to the default action.
 *
 * Caught: exits through libc's syscall(). Not caught: an exit issued by
 * inline asm (or any code outside syscall()); that worker really ends and
 * the pool replaces it. exit_group is never trapped.
 *
 * Shared state:
 *   - range, key, old_sys: written once under pthread_once (process_init),
 *     read after it (pthread_once orders them).
 *   - The SIGSYS disposition, process-wide: set by process_init, and set
 *     again (old_sys updated, under a mutex) by syslet__exittrap_arm() before
 *     a notifier if the program installed its own SIGSYS handler since:
 *     ours then runs first and hands it every SIGSYS that is not ours. A
 *     handler installed while a notifier runs wins until the next one.
 *   - state, per thread: written by its own thread only.
 * The filter is per thread, inherited by threads a worker creates: a probe
 * (a prctl option no kernel has, which only our filter answers) keeps a
 * thread from stacking a second copy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "compiler.h"
#include "notify.h"
#include "pool.h"

#if defined(__x86_64__)
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code; <asm/siginfo.h> clashes */
#endif
#define TRAP_TAG 0x5359u /* SECCOMP_RET_DATA of our trap */
#define PROBE_OPT 0x53595354u /* prctl option only we answer */
#define PROBE_ERRNO EALREADY
#define ALTSTACK_SIZE (64 * 1024)
#define ALTSTACK_KEEP (16 * 1024) /* an existing one this big will do */

static struct {
	uintptr_t lo, hi; /* syscall(): [lo, hi) */
} range;
static struct sigaction old_sys;
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_err;

static SYSLET_TLS int state; /* 0 untried, 1 on, -errno */

static _Noreturn void raw_exit(long code)
{
	for (;;)
		__asm__ volatile("syscall"
				 :
				 : "a"((long)__NR_exit), "D"(code)
				 : "rcx", "r11", "memory");
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (old_sys.sa_flags & SA_SIGINFO) {
		old_sys.sa_sigaction(sig, si, uc);
	} else if (old_sys.sa_handler == SIG_DFL) {
		/* Delivered once the handler returns: the default action. */
		sigaction(SIGSYS, &dfl, NULL);
		raise(SIGSYS);
	} else if (old_sys.sa_handler != SIG_IGN) {
		old_sys.sa_handler(sig);
	}
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code == SYS_SECCOMP && si->si_errno == TRAP_TAG &&
	    si->si_syscall == __NR_exit) {
		if (syslet__notify_active())
			syslet__notify_leave();
		raw_exit(((ucontext_t *)uc)->uc_mcontext.gregs[REG_RDI]);
	}
	chain(sig, si, uc);
}

static void altstack_free(void *mem)
{
	stack_t ss;

	if (sigaltstack(NULL, &ss) == 0 && ss.ss_sp == mem) {
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, NULL);
	}
	munmap(mem, ALTSTACK_SIZE);
}

/* libc's syscall(): its address and its ELF symbol size. */
static int find_range(void)
{
	const ElfW(Sym) *sym = NULL;
	void *h, *f = NULL;
	Dl_info info;

	h = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		f = dlsym(h, "syscall");
		dlclose(h);
	}
	if (!f || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    !sym->st_size || !info.dli_saddr)
		return -ENOENT;
	range.lo = (uintptr_t)info.dli_saddr;
	range.hi = range.lo + sym->st_size;
	/* The filter compares the low halves under one high half. */
	if (range.lo >> 32 != range.hi >> 32)
		return -EOPNOTSUPP;
	return 0;
}

static void process_init(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigsys,
				.sa_flags = SA_SIGINFO | SA_ONSTACK };

	once_err = find_range();
	if (once_err)
		return;
	once_err = -pthread_key_create(&key, altstack_free);
	if (once_err)
		return;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, &old_sys))
		once_err = -errno;
}

/* Give this thread a signal stack unless it has one (ASan gives one). */
static int altstack_init(void)
{
	stack_t ss;
	void *mem;

	if (sigaltstack(NULL, &ss))
		return -errno;
	if (!(ss.ss_flags & SS_DISABLE) && ss.ss_size >= ALTSTACK_KEEP)
		return 0;
	mem = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (mem == MAP_FAILED)
		return -ENOMEM;
	ss.ss_sp = mem;
	ss.ss_size = ALTSTACK_SIZE;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL)) {
		munmap(mem, ALTSTACK_SIZE);
		return -errno;
	}
	return -pthread_setspecific(key, mem);
}

#define LD_FIELD(f) \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, f))
#define LD_AT(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))

static int filter_install(void)
{
	const uint32_t ip = offsetof(struct seccomp_data, instruction_pointer);
	const uint32_t a0 = offsetof(struct seccomp_data, args);
	/* Jump offsets count from the next instruction. */
	enum {
		ARCH = 1,
		NR = 3,
		IPHI = 5,
		IPLO = 7,
		IPEND = 8,
		TRAP = 9,
		PRCTL = 10,
		A0LO = 12,
		A0HI = 14,
		PROBE = 15,
		ALLOW = 16
	};
	struct sock_filter f[] = {
		LD_FIELD(arch),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0,
			 ALLOW - ARCH - 1),
		LD_FIELD(nr),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 0,
			 PRCTL - NR - 1),
		LD_AT(ip + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(range.lo >> 32),
			 0, ALLOW - IPHI - 1),
		LD_AT(ip),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)range.lo, 0,
			 ALLOW - IPLO - 1),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)range.hi,
			 ALLOW - IPEND - 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | TRAP_TAG),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0,
			 ALLOW - PRCTL - 1),
		LD_AT(a0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROBE_OPT, 0,
			 ALLOW - A0LO - 1),
		LD_AT(a0 + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, ALLOW - A0HI - 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | PROBE_ERRNO),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };

	_Static_assert(sizeof(f) / sizeof(f[0]) == ALLOW + 1 &&
			       TRAP == IPEND + 1 && PROBE == A0HI + 1,
		       "filter labels");
	/* Already there (inherited from the worker that made this thread)? */
	if (prctl(PROBE_OPT, 0, 0, 0, 0) == -1 && errno == PROBE_ERRNO)
		return 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return -errno;
	return 0;
}

static int thread_init(void)
{
	sigset_t sys;
	int ret;

	pthread_once(&once, process_init);
	if (once_err)
		return once_err;
	ret = altstack_init();
	if (ret)
		return ret;
	ret = filter_install();
	if (ret)
		return ret;
	/* A trap forced on a thread that blocks SIGSYS kills the process. */
	sigemptyset(&sys);
	sigaddset(&sys, SIGSYS);
	return -pthread_sigmask(SIG_UNBLOCK, &sys, NULL);
}

int syslet__notify_thread_init(void)
{
	if (!state) {
		int ret = thread_init();

		state = ret ? ret : 1;
		syslet__exittrap_arm();
	}
	return state > 0 ? 0 : state;
}

#else /* !__x86_64__ */

static SYSLET_TLS int state;

int syslet__notify_thread_init(void)
{
	state = -ENOSYS;
	return state;
}

#endif

bool syslet__exittrap_on(void)
{
	if (!state)
		syslet__notify_thread_init();
	return state > 0;
}

#if defined(__x86_64__)
void syslet__exittrap_arm(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct sigaction cur;

	if (state <= 0 || sigaction(SIGSYS, NULL, &cur) ||
	    ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigsys))
		return;
	/* Someone replaced us: put ours back in front, chaining to theirs. */
	pthread_mutex_lock(&lock);
	if (!sigaction(SIGSYS, NULL, &cur) &&
	    !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigsys)) {
		struct sigaction sa = { .sa_sigaction = on_sigsys,
					.sa_flags = SA_SIGINFO | SA_ONSTACK };

		sigfillset(&sa.sa_mask);
		old_sys = cur;
		sigaction(SIGSYS, &sa, NULL);
	}
	pthread_mutex_unlock(&lock);
}
#else
void syslet__exittrap_arm(void)
{
}
#endif
