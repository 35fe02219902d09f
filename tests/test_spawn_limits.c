// SPDX-License-Identifier: MIT
/*
 * A library thread's stack and static TLS at their limits (stacks never
 * below PTHREAD_STACK_MIN, the static-TLS probe: the pool starts or the
 * first call fails with its documented errno), and the try when preadv2
 * and pwritev2 answer EPERM or ENOSYS (SPEC 3: the answer is the blocking
 * call's). Each case runs in a forked (or exec'd)
 * child under an alarm; a crash, a hang or a wrong answer fails it.
 *
 *  - tls_window: glibc takes the static TLS from a thread's stack and
 *    refuses (EINVAL) only a stack with less than 2 KiB left over. A
 *    static TLS just below a library thread's stack size is accepted: the
 *    thread runs on a few KiB, nothing is learnt (no EINVAL) and it
 *    crashes (SIGSEGV). The exec'd side starts the pool under
 *    GLIBC_TUNABLES=glibc.rtld.optional_static_tls=N for N from 16 KiB
 *    below the stack size to just above it: the manager's (64 KiB, or
 *    PTHREAD_STACK_MIN), and a worker's at SYSLET_STACK_SIZE's minimum.
 *  - huge_tls: a static TLS bigger than the probe's largest stack (64
 *    MiB): the pool's first call fails with EINVAL ("a check above
 *    failed", indirect(3)), not EAGAIN ("no worker could be started").
 *  - rw2_eperm, rw2_eperm_signalfd: a seccomp filter (an older sandbox's
 *    default action) makes preadv2 and pwritev2 answer EPERM, read and
 *    write allowed. A read or write through indirect() answers EPERM,
 *    which the blocking call never does (SPEC 3).
 *  - rw2_enosys_nonblock: the same filter answering ENOSYS (as
 *    under qemu-user 7.2, which has no preadv2 at all): a read of an empty
 *    O_NONBLOCK pipe or socket goes to a worker and its EAGAIN comes
 *    through the ring, where SPEC 3 and indirect(3) make it the inline
 *    answer ("the program asked for non-blocking behaviour").
 *  - first_race: no worker can be started (RLIMIT_AS below one worker's
 *    stack, SYSLET_OPT_STACK_SIZE at its 1 GiB maximum; RLIMIT_NPROC
 *    would do the same), the manager can. Threads submit the pool's first
 *    call at once: one whose spawn failed sees another's attempt counted
 *    in nworkers (pool.c takes it for a started worker) and queues its
 *    call; every attempt fails, and the calls wait, pending, for a worker
 *    that never comes. Each must get EAGAIN (ENOMEM: no memory for the
 *    call itself), or complete.
 *
 * Shared state: none between cases (each in its own process).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "test_seccomp_util.h"

/* A bound on one child; only the failing path reaches it. */
#define BOUND_S 20
/* The scan's step and reach below a stack size. */
#define TLS_STEP 64
#define TLS_BELOW (16 << 10)
#define TLS_ABOVE (1 << 10)

extern char **environ;

/* Exit code of a child: 0, else a short reason on stderr. */
static int child_fail(int code, const char *what, long got)
{
	fprintf(stderr, "%s: %ld\n", what, got);
	return code;
}

/*
 * The exec'd side: two rounds of a read of an empty pipe (pending: the
 * manager starts, then a worker), ended by a write.
 */
static int tls_run(void)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	char buf[4];
	int p[2], i;
	long ret;

	if (pipe(p))
		return child_fail(10, "pipe", errno);
	for (i = 0; i < 2; i++) {
		ret = SYS_IND(r, (uint64_t)i + 1, SYS_read, p[0], buf, 1);
		if (!PENDING(ret))
			return child_fail(11, "read of an empty pipe", -errno);
		if (write(p[1], "x", 1) != 1)
			return child_fail(12, "write", errno);
		c = ring_pop(r);
		if ((long)c.status != 1 || c.caller_data != (uint64_t)i + 1)
			return child_fail(13, "completion", (long)c.status);
	}
	syslet_drain();
	return 0;
}

/* The exec'd side of huge_tls: the first call fails with EAGAIN. */
static int huge_run(void)
{
	struct syslet_ring *r = ring_new(4);
	char buf[4];
	int p[2];
	long ret;

	if (pipe(p))
		return child_fail(10, "pipe", errno);
	ret = SYS_IND(r, 1, SYS_read, p[0], buf, 1);
	if (PENDING(ret))
		return 0; /* a worker started: no complaint */
	if (ret == -1 && errno == EAGAIN)
		return 0;
	return child_fail(1, "no worker possible: the first call (errno)",
			  errno);
}

/* Exec this program's @what with @tls bytes of optional static TLS. */
static pid_t spawn_run(const char *what, unsigned long tls, long stack)
{
	char tun[96], st[64],
		*argv[] = { "/proc/self/exe", (char *)what, NULL };
	pid_t pid = fork();

	if (pid)
		return pid;
	alarm(BOUND_S);
	snprintf(tun, sizeof(tun), "glibc.rtld.optional_static_tls=%lu", tls);
	if (setenv("GLIBC_TUNABLES", tun, 1))
		_exit(126);
	if (stack) {
		snprintf(st, sizeof(st), "%ld", stack);
		if (setenv("SYSLET_STACK_SIZE", st, 1))
			_exit(126);
	}
	execve(argv[0], argv, environ);
	_exit(127);
}

/* 0 if @pid exited 0; else says how, with @tls. */
static int reap(pid_t pid, unsigned long tls)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return 1;
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFSIGNALED(status))
		fprintf(stderr, "static TLS %lu: signal %d\n", tls,
			WTERMSIG(status));
	else
		fprintf(stderr, "static TLS %lu: exit %d\n", tls,
			WEXITSTATUS(status));
	return 1;
}

/* Scan the static TLS around @size; @stack for SYSLET_STACK_SIZE. */
static int scan(unsigned long size, long stack)
{
	unsigned long n;
	int bad = 0;

	for (n = size - TLS_BELOW; n <= size + TLS_ABOVE; n += TLS_STEP)
		bad += reap(spawn_run("tls_run", n, stack), n);
	return bad;
}

static unsigned long manager_stack(void)
{
	return PTHREAD_STACK_MIN > 65536 ? PTHREAD_STACK_MIN : 65536;
}

static void test_tls_window_manager(void **state)
{
	(void)state;
	assert_int_equal(scan(manager_stack(), 0), 0);
}

static void test_tls_window_worker(void **state)
{
	long min = PTHREAD_STACK_MIN;

	(void)state;
	/* the manager must not be the one to fail: its stack is bigger */
	if ((unsigned long)min + TLS_ABOVE + TLS_BELOW >= manager_stack())
		skip();
	assert_int_equal(scan((unsigned long)min, min), 0);
}

static void test_huge_tls(void **state)
{
	unsigned long n = 80ul << 20;

	(void)state;
	assert_int_equal(reap(spawn_run("huge_run", n, 0), n), 0);
}

/* @ret of indirect(), or the completion's status if pending. */
static long answer_of(struct syslet_ring *r, long ret)
{
	if (PENDING(ret))
		return (long)ring_pop(r).status;
	return ret == -1 ? -errno : ret;
}

static int rw2_eperm_child(void)
{
	struct syslet_ring *r = ring_new(4);
	char buf[8] = { 0 }, path[] = "/tmp/syslet-spawn-atk-XXXXXX";
	struct iovec one = { buf, 3 };
	int p[2], fd;
	long ret;

	if (!filter_rw2(EPERM, false))
		return 77;
	if (pipe(p))
		return child_fail(10, "pipe", errno);
	ret = answer_of(r, SYS_IND(r, 1, SYS_write, p[1], "abc", 3));
	if (ret != 3)
		return child_fail(1, "write to a pipe", ret);
	ret = answer_of(r, SYS_IND(r, 2, SYS_read, p[0], buf, sizeof(buf)));
	if (ret != 3 || memcmp(buf, "abc", 3))
		return child_fail(2, "read of a pipe with 3 bytes", ret);
	fd = mkstemp(path);
	if (fd < 0)
		return child_fail(10, "mkstemp", errno);
	unlink(path);
	ret = answer_of(r, SYS_IND(r, 3, SYS_pwrite64, fd, "def", 3, 0));
	if (ret != 3)
		return child_fail(3, "pwrite of a file", ret);
	ret = answer_of(r, SYS_IND(r, 4, SYS_readv, fd, &one, 1));
	if (ret != 3 || memcmp(buf, "def", 3))
		return child_fail(4, "readv of a file", ret);
	/* the program's own preadv2: EPERM, as the blocking call answers */
	ret = answer_of(r, SYS_IND(r, 5, SYS_preadv2, fd, &one, 1, 0, 0, 0));
	if (ret != -EPERM)
		return child_fail(5, "preadv2 itself", ret);
	syslet_drain();
	return 0;
}

static int rw2_eperm_signalfd_child(void)
{
	struct syslet_ring *r = ring_new(4);
	struct signalfd_siginfo si;
	sigset_t set;
	long ret;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return child_fail(10, "sigprocmask", errno);
	fd = signalfd(-1, &set, 0);
	if (fd < 0)
		return child_fail(10, "signalfd", errno);
	if (!filter_rw2(EPERM, false))
		return 77;
	if (raise(SIGUSR1))
		return child_fail(10, "raise", errno);
	ret = answer_of(r, SYS_IND(r, 1, SYS_read, fd, &si, sizeof(si)));
	if (ret != (long)sizeof(si) || si.ssi_signo != SIGUSR1)
		return child_fail(1, "read of a signalfd with SIGUSR1 pending",
				  ret);
	syslet_drain();
	return 0;
}

/* Run @fn in a forked child under an alarm: 0 (passed), 77 (skip). */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		alarm(BOUND_S);
		_exit(fn());
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "child: signal %d\n", WTERMSIG(status));
		return -1;
	}
	return WEXITSTATUS(status);
}

static void test_rw2_eperm(void **state)
{
	int ret = in_child(rw2_eperm_child);

	(void)state;
	if (ret == 77)
		skip();
	assert_int_equal(ret, 0);
}

static void test_rw2_eperm_signalfd(void **state)
{
	int ret = in_child(rw2_eperm_signalfd_child);

	(void)state;
	if (ret == 77)
		skip();
	assert_int_equal(ret, 0);
}

/* @fd is an empty O_NONBLOCK descriptor: its read is EAGAIN, inline. */
static int nonblock_read(struct syslet_ring *r, int fd, uint64_t cd)
{
	char buf[8];
	long ret = SYS_IND(r, cd, SYS_read, fd, buf, sizeof(buf));

	if (PENDING(ret))
		return child_fail((int)cd, "O_NONBLOCK read pending, then",
				  (long)ring_pop(r).status);
	if (ret != -1 || errno != EAGAIN)
		return child_fail((int)cd, "O_NONBLOCK read (errno)", errno);
	return 0;
}

static int rw2_enosys_nonblock_child(void)
{
	struct syslet_ring *r = ring_new(4);
	int p[2], s[2], ret;

	if (pipe2(p, O_NONBLOCK) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s))
		return child_fail(10, "pipe, socketpair", errno);
	/* no seccomp (qemu-user): its own preadv2 may answer ENOSYS */
	if (!filter_rw2(ENOSYS, false) &&
	    (syscall(SYS_preadv2, -1, NULL, 0, 0L, 0L, 0) != -1 ||
	     errno != ENOSYS))
		return 77;
	ret = nonblock_read(r, p[0], 1);
	if (!ret)
		ret = nonblock_read(r, s[0], 2);
	syslet_drain();
	return ret;
}

static void test_rw2_enosys_nonblock(void **state)
{
	int ret = in_child(rw2_enosys_nonblock_child);

	(void)state;
	if (ret == 77)
		skip();
	assert_int_equal(ret, 0);
}

#define RACERS 8

struct racer {
	struct syslet_ring *r;
	pthread_barrier_t *go;
	int fd;
	uint64_t cd;
	long ret;
	int err;
	char b; /* its read's byte: stored after race() returned */
};

static void *race(void *arg)
{
	struct racer *x = arg;

	pthread_barrier_wait(x->go);
	x->ret = SYS_IND(x->r, x->cd, SYS_read, x->fd, &x->b, 1);
	x->err = errno;
	return NULL;
}

/* The address space now, in bytes. */
static long vm_now(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = -1;

	if (f) {
		if (fscanf(f, "%ld", &pages) != 1)
			pages = -1;
		fclose(f);
	}
	return pages < 0 ? -1 : pages * sysconf(_SC_PAGESIZE);
}

static int first_race_child(void)
{
	struct syslet_ring *r = ring_new(16);
	struct racer x[RACERS];
	pthread_barrier_t go;
	pthread_t t[RACERS];
	struct timespec ts = { 5, 0 };
	struct rlimit rl;
	int p[2], i, pend = 0;
	long vm;

	if (pipe(p) || pthread_barrier_init(&go, NULL, RACERS + 1))
		return child_fail(10, "pipe, barrier", errno);
	if (syslet_config_set(SYSLET_OPT_STACK_SIZE, 1L << 30))
		return child_fail(10, "stack size 1 GiB", errno);
	for (i = 0; i < RACERS; i++) {
		x[i] = (struct racer){
			.r = r, .go = &go, .fd = p[0], .cd = (uint64_t)i + 1
		};
		if (pthread_create(&t[i], NULL, race, &x[i]))
			return child_fail(10, "pthread_create", i);
	}
	vm = vm_now();
	if (vm < 0)
		return child_fail(10, "statm", vm);
	/* room for the manager's 64 KiB, not for a 1 GiB stack */
	rl.rlim_cur = rl.rlim_max = (rlim_t)vm + (256ul << 20);
	if (setrlimit(RLIMIT_AS, &rl))
		return child_fail(10, "RLIMIT_AS", errno);
	pthread_barrier_wait(&go);
	for (i = 0; i < RACERS; i++) {
		pthread_join(t[i], NULL);
		if (x[i].ret == -1 && x[i].err == ESYSLETPENDING)
			pend++;
		/* EAGAIN: no worker; ENOMEM: no memory for the call itself */
		else if (x[i].ret != -1 ||
			 (x[i].err != EAGAIN && x[i].err != ENOMEM))
			return child_fail(1, "a first call (errno)", x[i].err);
	}
	if (!pend)
		return 0;
	if (write(p[1], "xxxxxxxx", (size_t)pend) != pend)
		return child_fail(10, "write", errno);
	for (i = 0; i < pend; i++) {
		if (syslet_ring_head(r) == r->user_tail &&
		    syslet_ring_wait_timeout(r, r->user_tail, &ts))
			return child_fail(2, "pending first calls never served",
					  pend - i);
		syslet_ring_advance(r, 1);
	}
	syslet_drain();
	return 0;
}

static void test_first_race(void **state)
{
	int ret = in_child(first_race_child);

	(void)state;
	assert_int_equal(ret, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tls[] = {
		cmocka_unit_test(test_tls_window_manager),
		cmocka_unit_test(test_tls_window_worker),
	};
	const struct CMUnitTest huge[] = {
		cmocka_unit_test(test_huge_tls),
	};
	const struct CMUnitTest rw2[] = {
		cmocka_unit_test(test_rw2_eperm),
		cmocka_unit_test(test_rw2_eperm_signalfd),
		cmocka_unit_test(test_rw2_enosys_nonblock),
	};
	const struct CMUnitTest first[] = {
		cmocka_unit_test(test_first_race),
	};
	const char *g = argc > 1 ? argv[1] : "";

	if (!strcmp(g, "tls_run"))
		return tls_run();
	if (!strcmp(g, "huge_run"))
		return huge_run();
	if (!strcmp(g, "tls"))
		return cmocka_run_group_tests(tls, NULL, NULL);
	if (!strcmp(g, "huge"))
		return cmocka_run_group_tests(huge, NULL, NULL);
	if (!strcmp(g, "rw2"))
		return cmocka_run_group_tests(rw2, NULL, NULL);
	if (!strcmp(g, "first"))
		return cmocka_run_group_tests(first, NULL, NULL);
	fprintf(stderr, "usage: %s tls|huge|rw2|first\n", argv[0]);
	return 2;
}
