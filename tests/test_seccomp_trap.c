/* SPDX-License-Identifier: MIT */
/*
 * Description: a sandbox of the Chromium kind (a SIGSYS handler, a filter
 * installed with SECCOMP_FILTER_FLAG_TSYNC that traps fsync, fdatasync and
 * syncfs and answers fallocate with EROFS): the same calls made plainly and
 * through indirect() give the same results. A trapped call on a worker
 * runs the program's handler there, and the value it leaves in the
 * context's return register is the completion's status; the process's
 * SIGSYS disposition stays the handler; a notifier's trapped call is
 * emulated too. Each case runs in a child of its own (a filter is for
 * good); exit 77 where the kernel refuses the filter.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

#define EMULATED 42
#define SKIP 77

static pid_t main_tid;
static _Atomic int trapped, trapped_elsewhere, trapped_nr;
static _Atomic long notifier_result;
static int fd;

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	atomic_store(&trapped_nr, si->si_syscall);
	atomic_fetch_add(&trapped, 1);
	if ((pid_t)syscall(SYS_gettid) != main_tid)
		atomic_fetch_add(&trapped_elsewhere, 1);
#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RAX] = EMULATED;
#elif defined(__aarch64__)
	uc->uc_mcontext.regs[0] = EMULATED;
#elif defined(__powerpc64__)
	uc->uc_mcontext.gp_regs[3] = EMULATED;
	uc->uc_mcontext.gp_regs[PT_CCR] &= ~(1ul << 28); /* no error */
#endif
}

static int sandbox(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fsync, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fdatasync, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_syncfs, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fallocate, 2, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EROFS),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct sigaction sa = { .sa_sigaction = on_sigsys,
				.sa_flags = SA_SIGINFO };

	if (sigaction(SIGSYS, &sa, NULL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

/* The pool started before the sandbox: TSYNC must cover its threads. */
static struct syslet_ring *setup_child(void)
{
	struct syslet_ring *ring = ring_new(16);
	char path[] = "/tmp/syslet-trap-XXXXXX";
	struct syslet_completion c;

	main_tid = (pid_t)syscall(SYS_gettid);
	fd = mkstemp(path);
	if (fd < 0)
		exit(3);
	unlink(path);
	if (!PENDING(SYS_IND(ring, 1, SYS_fsync, fd)))
		exit(4);
	c = ring_pop(ring);
	if (c.status != 0)
		exit(5);
	if (sandbox()) {
		printf("seccomp filter refused (%s): skipped\n",
		       strerror(errno));
		exit(SKIP);
	}
	return ring;
}

/* Plainly and through indirect(): @nr(fd) answers @want both ways. */
static void same(struct syslet_ring *ring, long nr, long want, int code)
{
	struct syslet_completion c;
	long r = syscall(nr, fd, 0, 0, 4096);

	if ((r < 0 ? -errno : r) != want) {
		fprintf(stderr, "plain %ld: %ld (errno %d)\n", nr, r, errno);
		exit(code);
	}
	r = SYS_IND(ring, 2, nr, fd, 0, 0, 4096);
	if (!PENDING(r)) {
		fprintf(stderr, "indirect %ld: %ld inline\n", nr, r);
		exit(code + 1);
	}
	c = ring_pop(ring);
	if ((long)c.status != want) {
		fprintf(stderr, "indirect %ld: status %ld\n", nr,
			(long)c.status);
		exit(code + 2);
	}
}

static int sandbox_child(void)
{
	struct syslet_ring *ring = setup_child();
	struct sigaction now;

	same(ring, SYS_fsync, EMULATED, 10);
	same(ring, SYS_fdatasync, EMULATED, 20);
	same(ring, SYS_syncfs, EMULATED, 30);
	same(ring, SYS_fallocate, -EROFS, 40);
	if (atomic_load(&trapped) != 6 || atomic_load(&trapped_elsewhere) != 3)
		return 50;
	if (sigaction(SIGSYS, NULL, &now) || now.sa_sigaction != on_sigsys)
		return 51;
	return 0;
}

static void run_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		alarm(WAIT_SECONDS);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == SKIP)
		skip();
	if (WIFSIGNALED(st))
		fail_msg("child killed by signal %d", WTERMSIG(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_trap_emulated(void **state)
{
	(void)state;
	run_child(sandbox_child);
}

static void trapping_notifier(void)
{
	atomic_store(&notifier_result, syscall(SYS_fsync, fd));
}

static int notifier_child(void)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	struct syslet_ring *ring = setup_child();
	struct indirect_registers regs;
	union indirect_params p;

	atomic_store(&notifier_result, -1);
	params_for(&p, ring, 3);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)trapping_notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(stack + sizeof(stack));
	FILL_IN(regs, SYS_fdatasync, fd);
	if (!PENDING(indirect(&regs, &p, sizeof(p), 0)))
		return 10;
	if (syslet_drain())
		return 11;
	if (ring_pop(ring).status != EMULATED)
		return 12;
	if (atomic_load(&notifier_result) != EMULATED)
		return 13;
	return 0;
}

static void test_trap_in_notifier(void **state)
{
	(void)state;
	run_child(notifier_child);
}

/*
 * A sandbox that traps the calls the try path makes in the place of the
 * program's (preadv2, pwritev2, openat2, the facts' fstat and fcntl):
 * with the program's calls set SYSLET_CLASS_ASYNC (syslet(7) BUGS), only
 * the program's own calls are made, on workers: no trap, the same answers
 * as the plain calls. (process_vm_readv, with which the library reads a
 * path argument before a punt, must stay allowed: syslet(7) BUGS.)
 */
static int substitutes_child(void)
{
	static const long plain[] = { SYS_read,	    SYS_write,	SYS_pread64,
				      SYS_pwrite64, SYS_openat, SYS_readv,
				      SYS_writev };
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_preadv2, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pwritev2, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fstat, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fcntl, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct syslet_ring *ring;
	char b[8] = { 0 };
	size_t i;
	long r;

	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (syslet_set_class(plain[i], SYSLET_CLASS_ASYNC))
			return 10;
	ring = setup_child();
	if (pwrite(fd, "sandbox", 7, 0) != 7)
		return 11;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_TSYNC, &prog))
		return 12;
	atomic_store(&trapped, 0);
	r = SYS_IND(ring, 4, SYS_pread64, fd, b, 7, 0);
	if (!PENDING(r) || ring_pop(ring).status != 7 ||
	    memcmp(b, "sandbox", 7))
		return 13;
	r = SYS_IND(ring, 5, SYS_pwrite64, fd, "SANDBOX", 7, 0);
	if (!PENDING(r) || ring_pop(ring).status != 7)
		return 14;
	r = SYS_IND(ring, 6, SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY);
	if (!PENDING(r) || (long)(r = ring_pop(ring).status) < 0)
		return 15;
	close((int)r);
	if (atomic_load(&trapped)) {
		fprintf(stderr, "%d calls trapped, the last %d\n",
			atomic_load(&trapped), atomic_load(&trapped_nr));
		return 16;
	}
	return 0;
}

static void test_substitutes_trapped(void **state)
{
	(void)state;
	run_child(substitutes_child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trap_emulated),
		cmocka_unit_test(test_trap_in_notifier),
		cmocka_unit_test(test_substitutes_trapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
