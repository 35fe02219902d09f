/* SPDX-License-Identifier: MIT */
/*
 * The pool's first start (SPEC 5: the first worker started by one
 * submitter at a time, any failure EAGAIN or the call served later) and
 * the try's probe (SPEC 3: a failed preadv2/pwritev2 is the answer only
 * where the blocking call would give it). Each case
 * runs in a forked child with an alarm; a child that hangs is killed by
 * SIGALRM, which the parent reports. Groups, each in its own run:
 *  (A signal handler's indirect() interrupting its own thread's first call
 *  deadlocked, on first_lock or the pool's init: indirect() is not
 *  async-signal-safe, as indirect(3) now says; no case here.)
 *  - dead: the pool's only worker dies in a notifier while no worker can
 *    be started (first_ok stays set); a later call is answered EAGAIN, or
 *    is pending and served once a worker can start again (SPEC 5).
 *  - fork: glibc fork() while another thread makes the pool's first call:
 *    the child's first call is served.
 *  - rawfork: the same with a raw fork (SYS_clone, SIGCHLD): a fork taken
 *    while the other thread is inside pool.c's pthread_once(init) leaves
 *    the child waiting for ever in pthread_once (glibc recognises an
 *    interrupted once only after its own fork(), by its fork generation).
 *  - rw2fd: a seccomp filter that refuses preadv2/pwritev2 (EPERM) on a
 *    descriptor only (fd >= 0) lets the preadv2(-1) probe through (EBADF):
 *    the filter's EPERM is taken as the answer of read(2) and write(2),
 *    which the filter allows (SPEC 3: a try's answer is the blocking
 *    call's).
 *  - real: real failures of a try stay the answer (EPERM of a sealed
 *    memfd's write, EBADF, EINVAL).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_pool_util.h"
#include "test_seccomp_util.h"

#define ROUNDS 40 /* fresh pools (grandchildren) per case */
#define ROUND_S 10 /* bound of one round */
#define NSTACK (64 * 1024)

/* A round's exit code: 0, else a short reason on stderr. */
static int round_fail(int code, const char *what, long got)
{
	fprintf(stderr, "%s: %ld\n", what, got);
	return code;
}

/* indirect() of read(@fd, @buf, 1) on @ring; its result, errno kept. */
static long ind_read(struct syslet_ring *ring, int fd, char *buf, uint64_t cd)
{
	union indirect_params p;
	struct indirect_registers r;

	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = cd;
	FILL_IN(r, SYS_read, fd, buf, 1);
	return indirect(&r, &p, sizeof(p), 0);
}

/* Run @round in ROUNDS fresh children, each with its own alarm. */
static int rounds(int (*round)(void))
{
	int i, st;

	for (i = 0; i < ROUNDS; i++) {
		pid_t pid = fork_case(ROUND_S);

		if (!pid)
			_exit(round());
		st = wait_case(pid);
		if (st) {
			fprintf(stderr, "round %d of %d: %d%s\n", i + 1, ROUNDS,
				st,
				st == 128 + SIGALRM ? " (hung: deadlock)" : "");
			return st;
		}
	}
	return 0;
}

/* ---- dead ---- */

static void die(void)
{
	end_worker();
}

struct caller {
	struct syslet_ring *r;
	int ret;
};

static void *call_getppid(void *arg)
{
	struct caller *c = arg;

	c->ret = submit(c->r, SYS_getppid, 0, 0, 0, 3);
	return NULL;
}

static int dead_round(void)
{
	struct syslet_ring *r = ring_new(16);
	char *stack = malloc(NSTACK);
	struct syslet_completion c;
	struct syslet_stats st;
	struct caller k;
	struct rlimit old, rl;
	pthread_t t;

	if (!r || !stack)
		return round_fail(10, "ring, stack", 0);
	if (syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1))
		return round_fail(10, "max workers 1", errno);
	/* The first call starts the pool (first_ok). */
	if (submit(r, SYS_getppid, 0, 0, 0, 1) || reap_one(r, &c) ||
	    (long)c.status != getppid())
		return round_fail(10, "first call", 0);
	/* No worker can start from now on: a 1 GiB stack in a bounded AS. */
	if (syslet_config_set(SYSLET_OPT_STACK_SIZE, 1L << 30) ||
	    getrlimit(RLIMIT_AS, &old))
		return round_fail(10, "stack size, getrlimit", errno);
	rl = old;
	rl.rlim_cur = (rlim_t)256 << 20;
	{
		FILE *f = fopen("/proc/self/statm", "r");
		long pages = 0;

		if (!f || fscanf(f, "%ld", &pages) != 1)
			return round_fail(10, "statm", 0);
		fclose(f);
		rl.rlim_cur += (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
	}
	if (setrlimit(RLIMIT_AS, &rl))
		return round_fail(10, "RLIMIT_AS", errno);
	/* The only worker dies in a notifier. */
	if (submit_ex(r, SYS_getppid, 0, 0, 0, 2, (uintptr_t)die,
		      (uintptr_t)(stack + NSTACK)) ||
	    reap_one(r, &c) || c.caller_data != 2)
		return round_fail(10, "dying call", 0);
	if (!WAIT_STATS(st, st.workers_now == 0 && worker_threads() == 0))
		return round_fail(10, "the worker never died", 0);
	/* A later call from another thread. */
	k.r = r;
	if (pthread_create(&t, NULL, call_getppid, &k))
		return round_fail(10, "pthread_create", errno);
	pthread_join(t, NULL);
	if (k.ret == -EAGAIN) {
		fprintf(stderr, "later call: EAGAIN\n");
		return 0;
	}
	if (k.ret)
		return round_fail(1, "later call (-errno)", k.ret);
	/* Pending: a worker can start again, the call must be served. */
	if (syslet_config_set(SYSLET_OPT_STACK_SIZE, 256 << 10) ||
	    setrlimit(RLIMIT_AS, &old))
		return round_fail(10, "restore", errno);
	if (reap_within(r, &c, 5))
		return round_fail(2, "pending call never served", 0);
	if (c.caller_data != 3 || (long)c.status != getppid())
		return round_fail(3, "wrong completion", (long)c.status);
	return 0;
}

static void test_dead_only_worker(void **state)
{
	(void)state;
	assert_int_equal(rounds(dead_round), 0);
}

/* ---- fork ---- */

static _Atomic int fork_go;
static struct syslet_ring *fork_ring;
/* first_caller's byte: the worker stores it after that thread returned. */
static char first_byte;

/*
 * The pool's first call, through indirect() as a program makes it (a read
 * of an empty pipe: pending), then served. Not the tests' internal
 * submit(), which goes straight to the pool: a raw fork taken while it
 * held first_lock, before any indirect() had set up forked.c's fork
 * detection, left the child the parent's pool and that lock (hung 1 to 7
 * in 20 runs), a state no program reaches (indirect.c: the detection
 * first, then the pool).
 */
static void *first_caller(void *arg)
{
	int p[2];

	(void)arg;
	if (pipe(p))
		return NULL;
	while (!atomic_load(&fork_go))
		;
	if (ind_read(fork_ring, p[0], &first_byte, 1) == -1 &&
	    errno == ESYSLETPENDING)
		(void)!write(p[1], "x", 1);
	return NULL;
}

/* The child's first call, served within a bound. */
static int child_first(void)
{
	struct syslet_ring *r = ring_new(16);
	struct syslet_completion c;
	char b[4];
	int p[2];
	long ret;

	alarm(ROUND_S / 2);
	if (!r || pipe(p))
		return 10;
	ret = ind_read(r, p[0], b, 9);
	if (ret != -1 || errno != ESYSLETPENDING)
		return round_fail(1, "child's first call (errno)", errno);
	if (write(p[1], "x", 1) != 1)
		return 10;
	if (reap_within(r, &c, 3) || c.caller_data != 9 || c.status != 1)
		return round_fail(2, "child's call never served", 0);
	return 0;
}

static int fork_round_with(bool raw)
{
	pthread_t t;
	pid_t pid;
	int st;

	fork_ring = ring_new(16);
	if (!fork_ring || pthread_create(&t, NULL, first_caller, NULL))
		return 10;
	atomic_store(&fork_go, 1);
	/* Racing the other thread's first start. */
	if (raw)
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	else
		pid = fork();
	if (!pid)
		_exit(child_first());
	if (pid < 0)
		return round_fail(10, "fork", errno);
	pthread_join(t, NULL);
	if (waitpid(pid, &st, 0) != pid)
		return 10;
	if (WIFSIGNALED(st))
		return round_fail(4, "child killed by signal", WTERMSIG(st));
	return WEXITSTATUS(st);
}

static int fork_round(void)
{
	return fork_round_with(false);
}

static int rawfork_round(void)
{
	return fork_round_with(true);
}

static void test_fork_first(void **state)
{
	(void)state;
	assert_int_equal(rounds(fork_round), 0);
}

static void test_rawfork_first(void **state)
{
	(void)state;
	assert_int_equal(rounds(rawfork_round), 0);
}

/* ---- rw2fd ---- */

/* indirect() of @nr(@fd, @buf, 1); its answer, pending or not. */
static long ind_rw(struct syslet_ring *ring, long nr, int fd, char *buf)
{
	union indirect_params p;
	struct indirect_registers r;
	struct syslet_completion c;
	long ret;

	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = 5;
	FILL_IN(r, nr, fd, buf, 1);
	ret = indirect(&r, &p, sizeof(p), 0);
	if (ret == -1 && errno == ESYSLETPENDING)
		return reap_within(ring, &c, 5) ? -ETIMEDOUT : (long)c.status;
	return ret < 0 ? -errno : ret;
}

static int rw2fd_round(void)
{
	struct syslet_ring *r = ring_new(16);
	char b[4] = "x";
	int p[2];
	long rd, wr;

	/* A pipe: tried with preadv2 on every file system and kernel */
	if (!r || pipe(p))
		return round_fail(10, "ring, pipe", errno);
	/*
	 * preadv2 and pwritev2 answer EPERM on a descriptor, and run on none;
	 * read(2) and write(2) stay allowed.
	 */
	if (!filter_rw2(EPERM, true))
		return 77;
	/* The blocking calls: a byte each. */
	if (write(p[1], "abc", 3) != 3 || read(p[0], b, 1) != 1)
		return round_fail(10, "plain read, write", errno);
	rd = ind_rw(r, SYS_read, p[0], b);
	wr = ind_rw(r, SYS_write, p[1], b);
	if (rd != 1 || wr != 1) {
		fprintf(stderr, "read %ld, write %ld (want 1, 1)\n", rd, wr);
		return 1;
	}
	return 0;
}

static void test_rw2_fd_filter(void **state)
{
	pid_t pid = fork_case(ROUND_S);
	int ret;

	(void)state;
	if (!pid)
		_exit(rw2fd_round());
	ret = wait_case(pid);
	if (ret == 77)
		skip();
	assert_int_equal(ret, 0);
}

/* ---- real ---- */

/*
 * Real failures of the try stay the answer: write(2) on a memfd sealed
 * against writes (EPERM), read(2) of a write-only descriptor (EBADF), a
 * 1-byte read(2) of an eventfd (EINVAL).
 */
static int real_round(void)
{
	struct syslet_ring *r = ring_new(16);
	char b[4] = "x";
	int m = memfd_create("first_start", MFD_ALLOW_SEALING);
	int w = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int e = eventfd(1, EFD_CLOEXEC);
	long ret;

	if (!r || m < 0 || w < 0 || e < 0 ||
	    fcntl(m, F_ADD_SEALS, F_SEAL_WRITE))
		return round_fail(10, "memfd, open, eventfd, seal", errno);
	if (write(m, b, 1) != -1 || errno != EPERM)
		return round_fail(10, "plain write of a sealed memfd", errno);
	ret = ind_rw(r, SYS_write, m, b);
	if (ret != -EPERM)
		return round_fail(1, "write of a sealed memfd", ret);
	ret = ind_rw(r, SYS_read, w, b);
	if (ret != -EBADF)
		return round_fail(2, "read of a write-only fd", ret);
	ret = ind_rw(r, SYS_read, e, b);
	if (ret != -EINVAL)
		return round_fail(3, "1-byte read of an eventfd", ret);
	return 0;
}

static void test_real_failures(void **state)
{
	(void)state;
	assert_int_equal(rounds(real_round), 0);
}

int main(int argc, char **argv)
{
	const char *g = argc > 1 ? argv[1] : "";
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_real_failures),
	};
	const struct CMUnitTest rw2fd[] = {
		cmocka_unit_test(test_rw2_fd_filter),
	};
	const struct CMUnitTest dead[] = {
		cmocka_unit_test(test_dead_only_worker),
	};
	const struct CMUnitTest forks[] = {
		cmocka_unit_test(test_fork_first),
	};
	const struct CMUnitTest rawforks[] = {
		cmocka_unit_test(test_rawfork_first),
	};

	if (!strcmp(g, "real"))
		return cmocka_run_group_tests(real, NULL, NULL);
	if (!strcmp(g, "rw2fd"))
		return cmocka_run_group_tests(rw2fd, NULL, NULL);
	if (!strcmp(g, "dead"))
		return cmocka_run_group_tests(dead, NULL, NULL);
	if (!strcmp(g, "fork"))
		return cmocka_run_group_tests(forks, NULL, NULL);
	if (!strcmp(g, "rawfork"))
		return cmocka_run_group_tests(rawforks, NULL, NULL);
	fprintf(stderr, "usage: %s dead|fork|rawfork|rw2fd|real\n", argv[0]);
	return 2;
}
