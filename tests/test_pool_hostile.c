/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the pool attacked from outside, as a hostile program would.
 * A program that closes every descriptor above 2 with close_range() after
 * the pool started (daemons do, before exec or after a fork) must neither
 * find the library's writes in its own files nor lose the pool's growth:
 *   - fd reuse: the manager's poke (an eventfd write) must not land in a
 *     pipe the program opened on the same descriptor number; today the
 *     program's blocked read of its own empty pipe returns 8 bytes that
 *     nobody wrote;
 *   - growth: with a read of an empty pipe blocking the pool's only
 *     worker, a 1 ms call must still complete (the cap allows workers,
 *     SPEC 5); today the manager sleeps for ever in epoll_pwait2() on a
 *     set whose eventfd is gone, and the call never completes.
 * Nor may the library hold descriptors in the program's table at all: the
 * set of open descriptors is the same before the pool starts and after
 * it ran, retired and replaced workers; and after close_range(), workers
 * that end in a notifier (pthread_exit) are still seen and replaced,
 * while the program's own descriptors on the numbers the library used to
 * take are never closed by it.
 * And the pool's first calls, made at once by several threads with a cap
 * of one worker: one starts the worker, the others found no worker and
 * tried to start one too, at the cap; they got EAGAIN (indirect() failed)
 * although the pool existed. Past the cap calls queue (SPEC 5): each of
 * them is queued and completes.
 * Each case runs in a fresh process; every wait is bounded (BOUND_S).
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shard.h"
#include "test_pool_util.h"

#define BOUND_S 5 /* every wait of a case */
#define HIGH_FD 200 /* above anything the library opened */

static const struct timespec one_ms = { 0, 1000000 };

/* Every worker asleep and no growth request left to the manager. */
static bool quiet(void)
{
	struct syslet__pool *p = &syslet__pool;
	int i, sleepers = 0;

	for (i = 0; i < p->nshards; i++) {
		if (atomic_load(&p->shards[i].want) || p->shards[i].want_ns)
			return false;
		sleepers += atomic_load(&p->shards[i].sleepers);
	}
	return sleepers == atomic_load(&p->nworkers);
}

/* Start the pool (manager, first worker), then wait until it is idle. */
static struct syslet_ring *pool_started(void)
{
	struct syslet_ring *r = ring_new(16);
	struct syslet_completion c;
	long n = TEST_WAIT_S * 1000L;

	CHECK(r && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 8));
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 1));
	CHECK(!reap_within(r, &c, BOUND_S) && (long)c.status == getppid());
	/* Workers asleep, no growth request pending: the manager waits. */
	while (!quiet())
		CHECK(n-- > 0 && !nanosleep(&one_ms, NULL));
	return r;
}

/* A pipe on the lowest free descriptors, or moved above them (@high). */
static void program_pipe(int fd[2], bool high)
{
	CHECK(!pipe(fd));
	if (!high)
		return;
	CHECK(dup2(fd[0], HIGH_FD) == HIGH_FD &&
	      dup2(fd[1], HIGH_FD + 1) == HIGH_FD + 1);
	CHECK(!close(fd[0]) && !close(fd[1]));
	fd[0] = HIGH_FD;
	fd[1] = HIGH_FD + 1;
}

/*
 * After close_range(), a read of the program's empty pipe blocks the only
 * worker and a 1 ms call follows: it completes, and the read returns only
 * what the program wrote.
 */
static int after_close_range(bool high)
{
	static char buf[64];
	struct syslet_completion c;
	struct syslet_ring *r = pool_started();
	int fd[2];

	alarm(4 * BOUND_S);
	CHECK(!syscall(SYS_close_range, 3, ~0U, 0));
	program_pipe(fd, high);
	CHECK(!submit(r, SYS_read, fd[0], (long)buf, sizeof(buf), 2));
	CHECK(!submit(r, SYS_nanosleep, (long)&one_ms, 0, 0, 3));
	if (reap_within(r, &c, BOUND_S)) {
		fprintf(stderr, "nothing completed within %d s\n", BOUND_S);
		return 1;
	}
	if (c.caller_data == 2) {
		fprintf(stderr, "the read of an empty pipe returned %ld\n",
			(long)c.status);
		return 1;
	}
	CHECK(c.caller_data == 3 && c.status == 0);
	CHECK(write(fd[1], "x", 1) == 1);
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 2 &&
	      c.status == 1);
	CHECK(!syslet_drain());
	return 0;
}

/* The open descriptors of the process, as a bitmap of the first 1024. */
static void open_fds(uint64_t set[16])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long fd;

	CHECK(d);
	memset(set, 0, 16 * sizeof(set[0]));
	while ((e = readdir(d))) {
		fd = strtol(e->d_name, NULL, 10);
		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		CHECK(fd < 1024);
		set[fd / 64] |= 1ull << (fd % 64);
	}
	closedir(d);
}

#define DEATHS 8
#define NOTIFY_STACK (64 * 1024)

/* DEATHS calls whose notifiers end their worker, cap 2: all replaced. */
static void deaths(struct syslet_ring *r)
{
	char *stacks = malloc((size_t)DEATHS * NOTIFY_STACK);
	struct syslet_completion c;
	struct syslet_stats st;
	int i;

	CHECK(stacks && !syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	for (i = 0; i < DEATHS; i++)
		CHECK(!submit_ex(
			r, SYS_getppid, 0, 0, 0, 100 + (uint64_t)i,
			(uintptr_t)end_worker,
			(uintptr_t)(stacks + (size_t)(i + 1) * NOTIFY_STACK)));
	for (i = 0; i < DEATHS; i++)
		CHECK(!reap_within(r, &c, BOUND_S) &&
		      (long)c.status == getppid());
	CHECK(!syslet_drain());
	CHECK(WAIT_STATS(st, st.workers_replaced == DEATHS));
	/* The pool still works. */
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 7));
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 7);
}

/* The pool started, ran, lost workers: not one descriptor more or less. */
static int no_library_fds(bool deaths_too)
{
	uint64_t before[16], after[16];
	struct syslet_ring *r;

	alarm(4 * BOUND_S);
	open_fds(before);
	r = pool_started();
	if (deaths_too)
		deaths(r);
	open_fds(after);
	if (memcmp(before, after, sizeof(before))) {
		fprintf(stderr, "the library holds descriptors of the program's"
				" table\n");
		return 1;
	}
	return 0;
}

/*
 * After close_range(), the program fills the low numbers with pipes;
 * workers die in notifiers: each death is seen (replaced), and each pipe
 * still carries the program's bytes.
 */
static int deaths_after_close_range(bool unused)
{
	struct syslet_ring *r;
	int fd[2 * 32], i;
	char b;

	(void)unused;
	alarm(4 * BOUND_S);
	r = pool_started();

	CHECK(!syscall(SYS_close_range, 3, ~0U, 0));
	for (i = 0; i < 32; i++)
		CHECK(!pipe(&fd[2 * i]));
	deaths(r);
	for (i = 0; i < 32; i++) {
		CHECK(write(fd[2 * i + 1], "p", 1) == 1);
		CHECK(read(fd[2 * i], &b, 1) == 1 && b == 'p');
	}
	return 0;
}

#define RACERS 8
#define RACE_ROUNDS 20

static pthread_barrier_t start_line;

static void *first_call(void *arg)
{
	struct syslet_ring *r = arg;
	struct syslet_completion c;
	int ret;

	pthread_barrier_wait(&start_line);
	ret = submit(r, SYS_getppid, 0, 0, 0, 7);
	if (ret) {
		fprintf(stderr, "first call failed: %d\n", ret);
		_exit(1);
	}
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 7 &&
	      (long)c.status == getppid());
	return NULL;
}

/* RACERS threads make the pool's first call at once, with a cap of 1. */
static int first_calls(bool unused)
{
	struct syslet_ring *r[RACERS];
	pthread_t t[RACERS];
	int i;

	(void)unused;
	alarm(4 * BOUND_S);
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1));
	CHECK(!pthread_barrier_init(&start_line, NULL, RACERS));
	for (i = 0; i < RACERS; i++) {
		r[i] = ring_new(4);
		CHECK(r[i] && !pthread_create(&t[i], NULL, first_call, r[i]));
	}
	for (i = 0; i < RACERS; i++)
		CHECK(!pthread_join(t[i], NULL));
	CHECK(!syslet_drain());
	return 0;
}

static void in_child(int (*fn)(bool), bool arg)
{
	pid_t pid = fork_case(0);

	if (!pid)
		_exit(fn(arg));
	assert_int_equal(wait_case(pid), 0);
}

static void test_close_range_fd_reuse(void **state)
{
	(void)state;
	in_child(after_close_range, false);
}

static void test_close_range_growth(void **state)
{
	(void)state;
	in_child(after_close_range, true);
}

static void test_no_library_fds(void **state)
{
	(void)state;
	in_child(no_library_fds, true);
}

static void test_close_range_deaths(void **state)
{
	(void)state;
	in_child(deaths_after_close_range, false);
}

static void test_first_calls_at_cap(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < RACE_ROUNDS; i++)
		in_child(first_calls, false);
}

/* "close_range": only the close_range cases; else the others. */
int main(int argc, char **argv)
{
	const struct CMUnitTest others[] = {
		cmocka_unit_test(test_first_calls_at_cap),
		cmocka_unit_test(test_no_library_fds),
	};
	const struct CMUnitTest close_range[] = {
		cmocka_unit_test(test_close_range_fd_reuse),
		cmocka_unit_test(test_close_range_growth),
		cmocka_unit_test(test_close_range_deaths),
	};

	if (argc == 2 && !strcmp(argv[1], "close_range"))
		return cmocka_run_group_tests(close_range, NULL, NULL);
	return cmocka_run_group_tests(others, NULL, NULL);
}
