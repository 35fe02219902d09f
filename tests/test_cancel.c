/* SPDX-License-Identifier: MIT */
/*
 * Description: syslet_cancel(). A call blocked on a worker (pipe read,
 * accept, futex wait, nanosleep, epoll_wait) ends with -EINTR; a queued
 * call behind a full cap completes with -ECANCELED without running; a
 * cancel racing with the completion gives exactly one completion either
 * way (100,000 rounds, cancellers on the other CPU and on several threads);
 * unknown caller_data is ENOENT; the program's handler and mask for the
 * cancel signal are untouched until its first syslet_cancel(); the notifier
 * of a cancelled call runs; a fork child cancels its own calls. The first
 * test must stay first: it runs before any syslet_cancel() of the process.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "indirect_util.h"
#include "test_cancel_util.h"

#define ROUNDS 100000

static struct syslet_ring *ring;
static _Atomic int own_handler_ran;

static void own_handler(int sig)
{
	(void)sig;
	own_handler_ran = 1;
}

/*
 * Wait (bounded) until a worker thread of this process sits in system call
 * @nr (with first argument @a0 unless @any), as /proc/self/task/TID/syscall
 * shows; true if one does.
 */
static bool worker_blocked_at(long nr, bool any, unsigned long a0)
{
	return worker_in(0, nr, any, a0, WAIT_SECONDS * 1000);
}

static bool worker_blocked_in(long nr)
{
	return worker_blocked_at(nr, true, 0);
}

/* Submit @nr, check it went pending, wait until a worker blocks in it. */
#define PEND_BLOCKED(cd, nr, ...)                                 \
	do {                                                      \
		long r_ = SYS_IND(ring, (cd), (nr), __VA_ARGS__); \
		assert_true(PENDING(r_));                         \
		assert_true(worker_blocked_in(nr));               \
	} while (0)

/* Cancel @cd, expect one found and a completion carrying -EINTR. */
static void cancel_expect_eintr(uint64_t cd)
{
	struct syslet_completion c;

	assert_int_equal(syslet_cancel(ring, cd, 0), 1);
	c = ring_pop(ring);
	assert_int_equal(c.caller_data, cd);
	assert_int_equal((long)c.status, -EINTR);
	ring_empty(ring);
}

/*
 * Must run first: nothing is installed before the first syslet_cancel(),
 * which refuses (EBUSY) to replace the program's handler; once the signal
 * is free, it interrupts a call that was running on a worker since before
 * the mechanism was set up.
 */
static void test_handler_untouched_until_first_cancel(void **state)
{
	int sig = (int)syslet_config_get(SYSLET_OPT_CANCEL_SIGNAL);
	struct sigaction sa, now;
	sigset_t mask, after;
	struct syslet_completion c;
	int p[2], q[2], i;
	char b[4];

	(void)state;
	assert_true(sig >= SIGRTMIN && sig <= SIGRTMAX);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = own_handler;
	assert_int_equal(sigaction(sig, &sa, NULL), 0);
	sigemptyset(&mask);
	sigemptyset(&after);
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	/* Pending calls come and go: the handler stays the program's. */
	assert_int_equal(pipe(p), 0);
	PEND_BLOCKED(1, SYS_read, p[0], b, sizeof(b));
	assert_int_equal(write(p[1], "abc", 3), 3);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 3);
	/* A read that runs from before the first syslet_cancel(). */
	assert_int_equal(pipe(q), 0);
	PEND_BLOCKED(2, SYS_read, q[0], b, sizeof(b));
	/* The program's handler: never replaced without its word. */
	errno = 0;
	assert_int_equal(syslet_cancel(ring, 2, 0), -1);
	assert_int_equal(errno, EBUSY);
	assert_int_equal(syslet_cancel(NULL, 0, 0), -1);
	assert_int_equal(errno, EBUSY);
	assert_int_equal(sigaction(sig, NULL, &now), 0);
	assert_ptr_equal(now.sa_handler, own_handler);
	/* The program gives the signal up: now the library's handler. */
	sa.sa_handler = SIG_DFL;
	assert_int_equal(sigaction(sig, &sa, NULL), 0);
	assert_int_equal(syslet_cancel(ring, 2, 0), 1);
	c = ring_pop(ring);
	assert_int_equal(c.caller_data, 2);
	assert_int_equal((long)c.status, -EINTR);
	ring_empty(ring);
	assert_int_equal(sigaction(sig, NULL, &now), 0);
	assert_ptr_not_equal(now.sa_handler, own_handler);
	assert_ptr_not_equal(now.sa_handler, SIG_DFL);
	assert_int_equal(now.sa_flags & SA_RESTART, 0);
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	for (i = 1; i <= SIGRTMAX; i++)
		assert_int_equal(sigismember(&mask, i), sigismember(&after, i));
	assert_int_equal(own_handler_ran, 0);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

static void test_unknown_and_bad(void **state)
{
	(void)state;
	errno = 0;
	assert_int_equal(syslet_cancel(ring, 12345, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(syslet_cancel(ring, 12345, SYSLET_CANCEL_ALL), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(syslet_cancel(ring, 1, 0x80), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(syslet_cancel((struct syslet_ring *)3, 1, 0), -1);
	assert_int_equal(errno, EINVAL);
}

static void test_pipe_read(void **state)
{
	struct syslet_completion c;
	int p[2];
	char b[8];

	(void)state;
	need_nowait_pipe(); /* the read of 21 below runs inline */
	assert_int_equal(pipe(p), 0);
	PEND_BLOCKED(20, SYS_read, p[0], b, sizeof(b));
	cancel_expect_eintr(20);
	/* The pipe is fine and the next read is not disturbed. */
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(SYS_IND(ring, 21, SYS_read, p[0], b, sizeof(b)), 1);
	PEND_BLOCKED(22, SYS_read, p[0], b, sizeof(b));
	assert_int_equal(write(p[1], "yz", 2), 2);
	c = ring_pop(ring);
	assert_int_equal(c.caller_data, 22);
	assert_int_equal((long)c.status, 2);
	close(p[0]);
	close(p[1]);
}

static void test_accept(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s, 4), 0);
	PEND_BLOCKED(30, SYS_accept, s, NULL, NULL);
	cancel_expect_eintr(30);
	close(s);
}

static void test_futex_wait(void **state)
{
	static _Atomic uint32_t word;

	(void)state;
	assert_true(PENDING(SYS_IND(ring, 40, SYS_futex, &word,
				    FUTEX_WAIT_PRIVATE, 0, NULL)));
	/* Idle workers sleep in futex too: wait for the one on word. */
	assert_true(worker_blocked_at(SYS_futex, false, (unsigned long)&word));
	cancel_expect_eintr(40);
}

static void test_nanosleep(void **state)
{
	static struct timespec ts = { 1000, 0 };

	(void)state;
	PEND_BLOCKED(50, SYS_nanosleep, &ts, NULL);
	cancel_expect_eintr(50);
}

static void test_epoll_wait(void **state)
{
	struct epoll_event ev[2];
	int ep = epoll_create1(0);

	(void)state;
	assert_true(ep >= 0);
#ifdef SYS_epoll_wait
	PEND_BLOCKED(60, SYS_epoll_wait, ep, ev, 2, -1);
#else
	PEND_BLOCKED(60, SYS_epoll_pwait, ep, ev, 2, -1, 0, 8);
#endif
	cancel_expect_eintr(60);
	close(ep);
}

/* Three blocked reads share a caller_data: ALL finds them all. */
static void test_cancel_all(void **state)
{
	struct syslet_completion c;
	int p[3][2], i;
	char b[3][4];

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_int_equal(pipe(p[i]), 0);
		assert_true(
			PENDING(SYS_IND(ring, 70, SYS_read, p[i][0], b[i], 4)));
	}
	/* The first match only, then the two others. */
	assert_int_equal(syslet_cancel(ring, 70, 0), 1);
	c = ring_pop(ring);
	assert_int_equal(c.caller_data, 70);
	assert_true((long)c.status == -EINTR || (long)c.status == -ECANCELED);
	assert_int_equal(syslet_cancel(ring, 70, SYSLET_CANCEL_ALL), 2);
	for (i = 0; i < 2; i++) {
		c = ring_pop(ring);
		assert_int_equal(c.caller_data, 70);
		assert_true((long)c.status == -EINTR ||
			    (long)c.status == -ECANCELED);
	}
	ring_empty(ring);
	/* Nothing left to find: a second cancel is ENOENT. */
	assert_int_equal(syslet_cancel(ring, 70, SYSLET_CANCEL_ALL), -1);
	assert_int_equal(errno, ENOENT);
	for (i = 0; i < 3; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
}

static _Atomic int notified;
static _Atomic uint64_t notified_status;
static _Alignas(16) unsigned char nstack[65536];

static void notifier(void)
{
	notified_status = syslet_current_completion()->status;
	/* Seq_cst: the test reads status after seeing the count. */
	atomic_fetch_add(&notified, 1);
}

static void test_notifier_runs(void **state)
{
	union indirect_params p;
	struct indirect_registers regs;
	struct syslet_completion c;
	int fds[2], i;
	char b[4];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	params_for(&p, ring, 80);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(nstack + sizeof(nstack));
	FILL_IN(regs, SYS_read, fds[0], b, sizeof(b));
	assert_true(PENDING(indirect(&regs, &p, sizeof(p), 0)));
	assert_true(worker_blocked_in(SYS_read));
	assert_int_equal(syslet_cancel(ring, 80, 0), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, -EINTR);
	for (i = 0; i < WAIT_SECONDS * 1000 && !notified; i++)
		usleep(1000);
	assert_int_equal(notified, 1);
	assert_int_equal((long)notified_status, -EINTR);
	assert_int_equal(syslet_drain(), 0);
	close(fds[0]);
	close(fds[1]);
}

/*
 * Behind a full cap (one worker, blocked), a queued call: cancelled, its
 * -ECANCELED completion is in the ring when syslet_cancel() returns, with
 * the worker still blocked; it never runs (the data it would have read is
 * still in its pipe); its notifier runs once, on the worker, when it is
 * free. In a child: the cap applies to a fresh pool.
 */
static void test_queued_behind_cap(void **state)
{
	struct syslet_stats st;
	struct syslet_syscall_stats ss;
	struct syslet_completion c;
	union indirect_params p;
	struct indirect_registers regs;
	int a[2], b[2], status, i;
	char buf[8];
	pid_t pid;

	(void)state;
	SKIP_FORK_UNDER_SANITIZER();
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(WAIT_SECONDS);
		CHILD(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1));
		CHILD(!pipe(a) && !pipe(b));
		CHILD(PENDING(SYS_IND(ring, 90, SYS_read, a[0], buf, 8)));
		params_for(&p, ring, 91);
		p.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
		p.syslet.frame.sp =
			(uint64_t)(uintptr_t)(nstack + sizeof(nstack));
		FILL_IN(regs, SYS_read, b[0], buf, 8);
		CHILD(PENDING(indirect(&regs, &p, sizeof(p), 0)));
		for (i = 0; i < WAIT_SECONDS * 1000; i++) {
			CHILD(!syslet_stats(&st, sizeof(st)));
			if (st.workers_now == 1 && queued(&st) == 1)
				break;
			usleep(1000);
		}
		CHILD(queued(&st) == 1);
		notified = 0;
		CHILD(syslet_cancel(ring, 91, 0) == 1);
		CHILD(syslet_ring_head(ring) == ring->user_tail + 1);
		c = child_pop(ring);
		CHILD(c.caller_data == 91 && (long)c.status == -ECANCELED);
		CHILD(worker_in(0, SYS_read, false, (unsigned long)a[0], 1));
		CHILD(!notified);
		CHILD(write(b[1], "queued", 6) == 6);
		CHILD(write(a[1], "run", 3) == 3);
		c = child_pop(ring);
		CHILD(c.caller_data == 90 && (long)c.status == 3);
		CHILD(!syslet_drain());
		CHILD(notified == 1 && (long)notified_status == -ECANCELED);
		CHILD(syslet_ring_head(ring) == ring->user_tail);
		CHILD(read(b[0], buf, 8) == 6);
		CHILD(!syslet_stats_syscall(SYS_read, &ss, sizeof(ss)));
		CHILD(ss.cancelled == 1 && ss.punted == 2 && ss.completed == 2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * One round of a cancel racing with the completion of getppid on a
 * worker: exactly one completion, -ECANCELED only if found, the
 * normal answer otherwise (getppid is not interruptible).
 */
static void check_round(uint64_t cd, int found)
{
	struct syslet_completion c = ring_pop(ring);

	assert_int_equal(c.caller_data, cd);
	if ((long)c.status == -ECANCELED)
		assert_int_equal(found, 1);
	else
		assert_int_equal((long)c.status, getppid());
}

/* A delay that varies from round to round: the cancel lands anywhere. */
static void jitter(int i, int max)
{
	volatile int j;

	for (j = 0; j < (int)(((unsigned int)i * 7919u) % (unsigned int)max);
	     j++)
		;
}

static void test_race_with_completion(void **state)
{
	int i, found[2] = { 0, 0 }, n;

	(void)state;
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
	for (i = 0; i < ROUNDS; i++) {
		assert_true(PENDING(SYS_IND(ring, (uint64_t)i, SYS_getppid)));
		jitter(i, 30000);
		n = syslet_cancel(ring, (uint64_t)i, 0);
		assert_true(n == 1 || (n == -1 && errno == ENOENT));
		found[n == 1]++;
		check_round((uint64_t)i, n == 1);
	}
	assert_int_equal(syslet_drain(), 0);
	ring_empty(ring);
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_INLINE), 0);
	print_message("race: %d found, %d completed first\n", found[1],
		      found[0]);
}

/*
 * An interruptible call racing with its data and its cancel: a read of
 * one byte written just before (or, one round in four, after) the cancel.
 * Exactly one completion; the byte is read by the call (1) or left in the
 * pipe (-EINTR, -ECANCELED): never lost, never read twice.
 */
static void test_race_read(void **state)
{
	int i, n, p[2], outcome[3] = { 0, 0, 0 };
	struct syslet_completion c;
	char b;

	(void)state;
	assert_int_equal(pipe(p), 0);
	for (i = 0; i < ROUNDS / 10; i++) {
		assert_true(PENDING(
			SYS_IND(ring, (uint64_t)i, SYS_read, p[0], &b, 1)));
		/* Sleep, not spin: the worker may share this CPU. */
		if (i & 1)
			usleep((useconds_t)(i % 50));
		/* The data first, or (one round in four) the cancel. */
		if (i % 4 != 3)
			assert_int_equal(write(p[1], "r", 1), 1);
		n = syslet_cancel(ring, (uint64_t)i, 0);
		assert_true(n == 1 || (n == -1 && errno == ENOENT));
		if (i % 4 == 3)
			assert_int_equal(write(p[1], "r", 1), 1);
		c = ring_pop(ring);
		assert_int_equal(c.caller_data, (uint64_t)i);
		if ((long)c.status == 1) {
			outcome[0]++;
			continue;
		}
		assert_int_equal(n, 1);
		assert_true((long)c.status == -EINTR ||
			    (long)c.status == -ECANCELED);
		outcome[(long)c.status == -EINTR ? 1 : 2]++;
		assert_int_equal(read(p[0], &b, 1), 1);
	}
	assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(read(p[0], &b, 1), -1);
	assert_int_equal(errno, EAGAIN);
	ring_empty(ring);
	print_message("read race: %d read, %d -EINTR, %d -ECANCELED\n",
		      outcome[0], outcome[1], outcome[2]);
	close(p[0]);
	close(p[1]);
}

/*
 * A call that can never finish by itself (a read of a pipe nobody writes),
 * cancelled at every stage of its way to the kernel: queued, taken, in the
 * stub between the flag check and the syscall instruction, blocked. The
 * cancel always finds it and it always ends: a signal lost in the stub
 * would leave it blocked and the bounded wait would fail.
 */
static void test_race_blocked_forever(void **state)
{
	int i, p[2], outcome[2] = { 0, 0 };
	struct syslet_completion c;
	char b;

	(void)state;
	assert_int_equal(pipe(p), 0);
	for (i = 0; i < ROUNDS / 5; i++) {
		assert_true(PENDING(
			SYS_IND(ring, (uint64_t)i, SYS_read, p[0], &b, 1)));
		if (i % 3 == 1)
			usleep((useconds_t)(i % 40));
		else if (i % 3 == 2)
			sched_yield();
		assert_int_equal(syslet_cancel(ring, (uint64_t)i, 0), 1);
		c = ring_pop(ring);
		assert_int_equal(c.caller_data, (uint64_t)i);
		assert_true((long)c.status == -EINTR ||
			    (long)c.status == -ECANCELED);
		outcome[(long)c.status == -EINTR]++;
	}
	ring_empty(ring);
	print_message("blocked forever: %d -ECANCELED, %d -EINTR\n", outcome[0],
		      outcome[1]);
	close(p[0]);
	close(p[1]);
}

struct canceller {
	_Atomic uint64_t target; /* caller_data to cancel, 0: none */
	_Atomic int stop;
	_Atomic long found;
	int cpu;
};

static void *cancel_loop(void *arg)
{
	struct canceller *k = arg;
	cpu_set_t set;
	uint64_t t;

	CPU_ZERO(&set);
	CPU_SET(k->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!k->stop) {
		t = k->target;
		if (t && syslet_cancel(ring, t, 0) == 1)
			k->found++;
	}
	return NULL;
}

/*
 * The same race from other threads, one per CPU, all aiming at the call
 * in flight: across them a call is found at most once, every call gets
 * exactly one completion, and -ECANCELED only for a call found.
 */
static void test_race_several_threads(void **state)
{
	struct canceller k[4] = { 0 };
	struct syslet_completion c;
	pthread_t t[4];
	long sum, cancelled = 0;
	int i, j, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	(void)state;
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
	for (j = 0; j < 4; j++) {
		k[j].cpu = j % (ncpu > 0 ? ncpu : 1);
		assert_int_equal(
			pthread_create(&t[j], NULL, cancel_loop, &k[j]), 0);
	}
	for (i = 1; i <= ROUNDS / 4; i++) {
		assert_true(PENDING(SYS_IND(ring, (uint64_t)i, SYS_getppid)));
		for (j = 0; j < 4; j++)
			k[j].target = (uint64_t)i;
		c = ring_pop(ring);
		assert_int_equal(c.caller_data, (uint64_t)i);
		if ((long)c.status == -ECANCELED)
			cancelled++;
		else
			assert_int_equal((long)c.status, getppid());
	}
	for (j = 0; j < 4; j++) {
		k[j].stop = 1;
		pthread_join(t[j], NULL);
	}
	for (sum = 0, j = 0; j < 4; j++)
		sum += k[j].found;
	/* Found at most once each; every -ECANCELED was found. */
	assert_true(sum <= ROUNDS / 4);
	assert_true(cancelled <= sum);
	assert_int_equal(syslet_drain(), 0);
	ring_empty(ring);
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_INLINE), 0);
	print_message("several threads: %ld found, %ld -ECANCELED\n", sum,
		      cancelled);
}

/*
 * The cancel signal arriving from outside (kill(2) to the process) runs
 * the library's empty handler on a program thread and disturbs no call.
 */
static void test_stray_signal(void **state)
{
	int sig = (int)syslet_config_get(SYSLET_OPT_CANCEL_SIGNAL), p[2];
	struct syslet_completion c;
	char b[4];

	(void)state;
	assert_int_equal(pipe(p), 0);
	PEND_BLOCKED(100, SYS_read, p[0], b, sizeof(b));
	assert_int_equal(kill(getpid(), sig), 0);
	assert_true(worker_blocked_in(SYS_read));
	assert_int_equal(write(p[1], "ok", 2), 2);
	c = ring_pop(ring);
	assert_int_equal(c.caller_data, 100);
	assert_int_equal((long)c.status, 2);
	close(p[0]);
	close(p[1]);
}

/* A fork child cancels its own blocked call; the parent's is not seen. */
static void test_fork_child(void **state)
{
	struct syslet_completion c;
	int p[2], status;
	char b[4];
	pid_t pid;

	(void)state;
	SKIP_FORK_UNDER_SANITIZER();
	assert_int_equal(pipe(p), 0);
	PEND_BLOCKED(110, SYS_read, p[0], b, sizeof(b));
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int q[2];

		alarm(WAIT_SECONDS);
		/* The parent's call stays in the parent. */
		CHILD(syslet_cancel(ring, 110, 0) == -1 && errno == ENOENT);
		CHILD(!pipe(q));
		CHILD(PENDING(SYS_IND(ring, 111, SYS_read, q[0], b, 4)));
		CHILD(worker_blocked_in(SYS_read));
		CHILD(syslet_cancel(ring, 111, 0) == 1);
		for (;;) {
			c = child_pop(ring);
			if (c.caller_data == 111)
				break;
		}
		CHILD((long)c.status == -EINTR);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	cancel_expect_eintr(110);
	close(p[0]);
	close(p[1]);
}

/*
 * A transfer that moved data before it was interrupted: a 1 MiB write to
 * a pipe nobody reads fills the pipe, the rest blocks on a worker; the
 * cancel ends it and the completion carries the bytes moved, as a signal
 * would leave them.
 */
static void test_partial_count(void **state)
{
	/* above a pipe's capacity (1 MiB with ppc64le's 64 KiB pages) */
	size_t mib = 4 << 20;
	char *src = calloc(1, mib), *dst = malloc(mib);
	struct syslet_completion c;
	long n, got = 0;
	int p[2];

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	assert_int_equal(pipe(p), 0);
	PEND_BLOCKED(120, SYS_write, p[1], src, mib);
	assert_int_equal(syslet_cancel(ring, 120, 0), 1);
	c = ring_pop(ring);
	assert_int_equal(c.caller_data, 120);
	assert_true((long)c.status > 0 && (long)c.status < (long)mib);
	/* What the pipe holds is exactly what the completion says. */
	assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	while ((n = read(p[0], dst, mib)) > 0)
		got += n;
	assert_int_equal(got, (long)c.status);
	close(p[0]);
	close(p[1]);
	free(src);
	free(dst);
}

static int nested_pipe[2];
static _Atomic long nested_found;

/* A notifier (on a worker) cancels another blocked call. */
static void cancel_from_notifier(void)
{
	nested_found = syslet_cancel(ring, 131, 0);
}

static void test_cancel_from_notifier(void **state)
{
	union indirect_params p;
	struct indirect_registers regs;
	struct syslet_completion c[2];
	int q[2], i;
	char b[4], b2[4];

	(void)state;
	assert_int_equal(pipe(q), 0);
	assert_int_equal(pipe(nested_pipe), 0);
	PEND_BLOCKED(131, SYS_read, nested_pipe[0], b2, sizeof(b2));
	params_for(&p, ring, 130);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)cancel_from_notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(nstack + sizeof(nstack));
	FILL_IN(regs, SYS_read, q[0], b, sizeof(b));
	assert_true(PENDING(indirect(&regs, &p, sizeof(p), 0)));
	assert_int_equal(write(q[1], "go", 2), 2);
	c[0] = ring_pop(ring);
	c[1] = ring_pop(ring);
	for (i = 0; i < 2; i++) {
		if (c[i].caller_data == 130)
			assert_int_equal((long)c[i].status, 2);
		else
			assert_int_equal((long)c[i].status, -EINTR);
	}
	assert_int_equal(syslet_drain(), 0);
	assert_int_equal(nested_found, 1);
	close(q[0]);
	close(q[1]);
	close(nested_pipe[0]);
	close(nested_pipe[1]);
}

static _Atomic int fork_stop;
/* How far a forked child got, told by its alarm: where it hung. */
static volatile sig_atomic_t child_step;

static void child_alarm(int sig)
{
	char m[] = "child: alarm at step 0\n";

	(void)sig;
	m[sizeof(m) - 3] = (char)('0' + child_step);
	(void)!write(2, m, sizeof(m) - 1);
	_exit(3);
}

static void *cancel_all_loop(void *arg)
{
	uint64_t cd = 0;

	(void)arg;
	while (!fork_stop)
		syslet_cancel(ring, 1000 + (cd++ % 8), SYSLET_CANCEL_ALL);
	return NULL;
}

/* ring_pop(), but a timeout shows the pool's state (where a call stuck). */
static struct syslet_completion pop_or_report(int iter)
{
	struct timespec ts = { WAIT_SECONDS, 0 };
	uint32_t tl = ring->user_tail, i;
	struct syslet_completion c;
	struct syslet_stats st;

	if (syslet_ring_head(ring) == tl &&
	    syslet_ring_wait_timeout(ring, tl, &ts)) {
		assert_int_equal(syslet_stats(&st, sizeof(st)), 0);
		print_message("round %d: no completion in %d s: head %u tail "
			      "%u submitted %lu completed %lu workers %u\n",
			      iter, WAIT_SECONDS, syslet_ring_head(ring), tl,
			      (unsigned long)st.submitted,
			      (unsigned long)st.completed, st.workers_now);
		for (i = 0; i < st.shards && i < SYSLET_STATS_MAX_SHARDS; i++)
			print_message("shard %u: %u queued\n", i,
				      st.queue_depth[i]);
		fail();
	}
	c = *syslet_ring_slot(ring, tl);
	syslet_ring_advance(ring, 1);
	return c;
}

/*
 * fork() while another thread cancels without pause (holding queue locks
 * and worker slots at random moments): each child still cancels its own
 * blocked call, and the parent's calls each complete once.
 */
static void test_fork_while_cancelling(void **state)
{
	struct syslet_completion c;
	int i, st, q[2];
	pthread_t t;
	pid_t pid;
	char b[4];

	(void)state;
	SKIP_FORK_UNDER_SANITIZER();
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
	assert_int_equal(pthread_create(&t, NULL, cancel_all_loop, NULL), 0);
	for (i = 0; i < 100; i++) {
		assert_true(PENDING(
			SYS_IND(ring, 1000 + (uint64_t)(i % 8), SYS_getppid)));
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			signal(SIGALRM, child_alarm);
			alarm(WAIT_SECONDS);
			CHILD(!pipe(q));
			child_step = 1;
			CHILD(PENDING(SYS_IND(ring, 77, SYS_read, q[0], b, 4)));
			child_step = 2;
			CHILD(worker_blocked_in(SYS_read));
			child_step = 3;
			CHILD(syslet_cancel(ring, 77, 0) == 1);
			child_step = 4;
			for (;;) {
				struct timespec ts = { WAIT_SECONDS, 0 };
				uint32_t tl = ring->user_tail;

				if (syslet_ring_head(ring) == tl)
					CHILD(!syslet_ring_wait_timeout(
						ring, tl, &ts));
				c = *syslet_ring_slot(ring, tl);
				syslet_ring_advance(ring, 1);
				if (c.caller_data == 77)
					break;
			}
			CHILD((long)c.status == -EINTR);
			_exit(0);
		}
		c = pop_or_report(i);
		assert_int_equal(c.caller_data, 1000 + (uint64_t)(i % 8));
		assert_true((long)c.status == getppid() ||
			    (long)c.status == -ECANCELED);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st))
			fail_msg("child %d killed by signal %d", i,
				 WTERMSIG(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	fork_stop = 1;
	pthread_join(t, NULL);
	assert_int_equal(syslet_drain(), 0);
	ring_empty(ring);
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_INLINE), 0);
}

/*
 * The signal is the option's: SYSLET_CANCEL_SIGNAL in the environment (a
 * fresh process, since it is read once) picks SIGRTMIN + 3; the first
 * syslet_cancel() installs that one and leaves the default alone.
 */
static int signal_child(void)
{
	struct sigaction sa;
	int sig = SIGRTMIN + 3;

	if (syslet_config_get(SYSLET_OPT_CANCEL_SIGNAL) != sig)
		return 1;
	if (sigaction(sig, NULL, &sa) || sa.sa_handler != SIG_DFL)
		return 2;
	if (syslet_cancel(NULL, 0, 0))
		return 3;
	if (sigaction(sig, NULL, &sa) || sa.sa_handler == SIG_DFL)
		return 4;
	if (sigaction(SIGRTMAX - 2, NULL, &sa) || sa.sa_handler != SIG_DFL)
		return 5;
	return 0;
}

/*
 * A program that chose the signal (syslet_config_set()) gives it to the
 * library, its own handler there or not.
 */
static int chosen_child(void)
{
	struct sigaction sa;
	int sig = SIGRTMIN + 4;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = own_handler;
	if (sigaction(sig, &sa, NULL) ||
	    syslet_config_set(SYSLET_OPT_CANCEL_SIGNAL, sig) ||
	    syslet_cancel(NULL, 0, 0))
		return 1;
	if (sigaction(sig, NULL, &sa) || sa.sa_handler == own_handler ||
	    sa.sa_handler == SIG_DFL)
		return 2;
	return 0;
}

/*
 * The process's first syslet_cancel() interrupts a read that was running
 * on a worker since before it (a fresh process: nothing set up before).
 */
static int first_child(void)
{
	struct timespec two = { 2, 0 };
	struct syslet_completion *c;
	int p[2];
	char b[4];

	CHILD(!pipe(p));
	CHILD(PENDING(SYS_IND(ring, 7, SYS_read, p[0], b, sizeof(b))));
	CHILD(worker_in(0, SYS_read, false, (unsigned long)p[0],
			WAIT_SECONDS * 1000));
	CHILD(syslet_cancel(ring, 7, 0) == 1);
	CHILD(!syslet_ring_wait_timeout(ring, ring->user_tail, &two));
	c = syslet_ring_slot(ring, ring->user_tail);
	CHILD(c->caller_data == 7 && (long)c->status == -EINTR);
	return 0;
}

/*
 * A program whose SYSLET_CANCEL_SIGNAL is no signal the library takes,
 * or set only after the library read it, chose nothing: its own handler
 * on the default signal stays, and syslet_cancel() says EBUSY.
 */
static int unchosen_child(int late)
{
	int sig = SIGRTMAX - 2;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = own_handler;
	if (sigaction(sig, &sa, NULL) ||
	    syslet_config_get(SYSLET_OPT_CANCEL_SIGNAL) != sig)
		return 1;
	if (late && setenv("SYSLET_CANCEL_SIGNAL", "40", 1))
		return 2;
	errno = 0;
	if (syslet_cancel(NULL, 0, 0) != -1 || errno != EBUSY)
		return 3;
	if (sigaction(sig, NULL, &sa) || sa.sa_handler != own_handler)
		return 4;
	return 0;
}

/* Run this program again with @arg (and @env, if not NULL): its status. */
static int run_self_env(char *arg, char *env)
{
	char *argv[] = { "/proc/self/exe", arg, NULL };
	char *envp[] = { env, NULL };
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int run_self(char *arg)
{
	return run_self_env(arg, NULL);
}

static void test_signal_env_unchosen(void **state)
{
	(void)state;
	assert_int_equal(run_self_env("--unchosen-child", "SYSLET_CANCEL_"
							  "SIGNAL=garbage"),
			 0);
	assert_int_equal(run_self_env("--unchosen-child", "SYSLET_CANCEL_"
							  "SIGNAL=999"),
			 0);
	assert_int_equal(run_self_env("--unchosen-child", "SYSLET_CANCEL_"
							  "SIGNAL= "),
			 0);
	assert_int_equal(run_self("--late-child"), 0);
}

static void test_first_cancel_interrupts(void **state)
{
	(void)state;
	assert_int_equal(run_self("--first-child"), 0);
}

static void test_signal_chosen(void **state)
{
	(void)state;
	assert_int_equal(run_self("--chosen-child"), 0);
}

static void test_signal_option(void **state)
{
	long def = syslet_config_get(SYSLET_OPT_CANCEL_SIGNAL);
	char env[64], *argv[] = { "/proc/self/exe", "--signal-child", NULL };
	char *envp[] = { env, NULL };
	int st;
	pid_t pid;

	(void)state;
	assert_int_equal(def, SIGRTMAX - 2);
	assert_int_equal(
		syslet_config_set(SYSLET_OPT_CANCEL_SIGNAL, SIGRTMIN - 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(
		syslet_config_set(SYSLET_OPT_CANCEL_SIGNAL, SIGRTMAX + 1), -1);
	assert_int_equal(errno, EINVAL);
	snprintf(env, sizeof(env), "SYSLET_CANCEL_SIGNAL=%d", SIGRTMIN + 3);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_stats_by_syscall(void **state)
{
	struct syslet_syscall_stats s;

	(void)state;
	assert_int_equal(syslet_stats_syscall(SYS_futex, &s, sizeof(s)), 0);
	assert_true(s.cancelled >= 1);
	assert_true(s.punted >= 1);
	assert_true(s.completed >= s.cancelled);
	assert_int_equal(syslet_stats_syscall(-1, &s, sizeof(s)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(syslet_stats_syscall(0, &s, sizeof(s) - 1), -1);
	assert_int_equal(errno, EINVAL);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		/* first: nothing installed before the first syslet_cancel */
		cmocka_unit_test(test_handler_untouched_until_first_cancel),
		cmocka_unit_test(test_unknown_and_bad),
		cmocka_unit_test(test_pipe_read),
		cmocka_unit_test(test_accept),
		cmocka_unit_test(test_futex_wait),
		cmocka_unit_test(test_nanosleep),
		cmocka_unit_test(test_epoll_wait),
		cmocka_unit_test(test_cancel_all),
		cmocka_unit_test(test_notifier_runs),
		cmocka_unit_test(test_queued_behind_cap),
		cmocka_unit_test(test_race_with_completion),
		cmocka_unit_test(test_race_read),
		cmocka_unit_test(test_race_blocked_forever),
		cmocka_unit_test(test_race_several_threads),
		cmocka_unit_test(test_stray_signal),
		cmocka_unit_test(test_fork_child),
		cmocka_unit_test(test_partial_count),
		cmocka_unit_test(test_cancel_from_notifier),
		cmocka_unit_test(test_fork_while_cancelling),
		cmocka_unit_test(test_stats_by_syscall),
		cmocka_unit_test(test_signal_option),
		cmocka_unit_test(test_signal_chosen),
		cmocka_unit_test(test_first_cancel_interrupts),
		cmocka_unit_test(test_signal_env_unchosen),
	};

	if (argc > 1 && !strcmp(argv[1], "--signal-child"))
		return signal_child();
	ring = ring_new(256);
	if (argc > 1 && !strcmp(argv[1], "--chosen-child"))
		return chosen_child();
	if (argc > 1 && !strcmp(argv[1], "--first-child"))
		return first_child();
	if (argc > 1 && !strcmp(argv[1], "--unchosen-child"))
		return unchosen_child(0);
	if (argc > 1 && !strcmp(argv[1], "--late-child"))
		return unchosen_child(1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
