/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the worker pool through the internal job API: growth, the
 * cap, idle exit, stealing, pinning, drain, notifiers that end their
 * thread. The long runs are in test_pool_stress.c.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
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

#include "test_pool_util.h"

static void in_child(int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		_exit(fn());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_basic(void **state)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c = { 0 };

	(void)state;
	assert_int_equal(submit(r, SYS_getppid, 0, 0, 0, 7), 0);
	assert_int_equal(reap_one(r, &c), 0);
	assert_int_equal((long)c.status, getppid());
	assert_int_equal(c.caller_data, 7);
	assert_int_equal(syslet_drain(), 0);
	free(r);
}

/* ---- growth: a call never waits behind blocked calls ----------------- */

static void test_growth(void **state)
{
	const int n = 16;
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c = { 0 };
	struct syslet_stats st;
	char buf[16] = { 0 };
	int fd[2], i, reads = 0;

	(void)state;
	assert_int_equal(pipe(fd), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(
			submit(r, SYS_read, fd[0], (long)&buf[i], 1, 1), 0);
	/* Only a new worker can run this: every other one is blocked. */
	assert_int_equal(submit(r, SYS_write, fd[1], (long)buf, n, 2), 0);
	for (i = 0; i <= n; i++) {
		assert_int_equal(reap_one(r, &c), 0);
		if (c.caller_data == 1) {
			assert_int_equal(c.status, 1);
			reads++;
		} else {
			assert_int_equal(c.status, n);
		}
	}
	assert_int_equal(reads, n);
	stats(&st);
	assert_true(st.workers_peak >= (uint32_t)n + 1);
	close(fd[0]);
	close(fd[1]);
	free(r);
}

/* ---- the cap: past it calls queue, and still complete ---------------- */

static int cap_child(void)
{
	struct syslet_ring *r = ring_new(8);
	struct syslet_completion c = { 0 };
	struct syslet_stats st;
	char buf[2];
	int fd[2], i;

	/* One shard: another one's worker could run the last call. */
	CHECK(!pin_self(allowed_cpu(0)));
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	CHECK(!pipe(fd));
	CHECK(!submit(r, SYS_read, fd[0], (long)&buf[0], 1, 1));
	CHECK(!submit(r, SYS_read, fd[0], (long)&buf[1], 1, 1));
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
	CHECK(WAIT_STATS(st, st.workers_now == 2 && queued_total(&st) == 1));
	CHECK(st.workers_peak == 2);
	CHECK(syslet_ring_head(r) == 0);
	CHECK(write(fd[1], "ab", 2) == 2);
	for (i = 0; i < 3; i++)
		CHECK(!reap_one(r, &c));
	CHECK(!syslet_drain());
	return 0;
}

static void test_cap(void **state)
{
	(void)state;
	in_child(cap_child);
}

/* ---- idle workers above the floor exit ------------------------------- */

static int idle_child(void)
{
	struct syslet_ring *r = ring_new(16);
	struct syslet_completion c = { 0 };
	struct syslet_stats st;
	char buf[8];
	int fd[2], i;

	CHECK(!syslet_config_set(SYSLET_OPT_IDLE_MS, 20));
	CHECK(!syslet_config_set(SYSLET_OPT_MIN_WORKERS, 0));
	CHECK(!pipe(fd));
	for (i = 0; i < 8; i++)
		CHECK(!submit(r, SYS_read, fd[0], (long)&buf[i], 1, 1));
	CHECK(!submit(r, SYS_write, fd[1], (long)buf, 8, 2));
	for (i = 0; i < 9; i++)
		CHECK(!reap_one(r, &c));
	stats(&st);
	CHECK(st.workers_peak >= 9);
	/* The pool's last worker stays, whatever the floor. */
	CHECK(WAIT_STATS(st, st.workers_now == 1));
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 3));
	CHECK(!reap_one(r, &c) && (long)c.status == getppid());
	return 0;
}

static void test_idle_exit(void **state)
{
	(void)state;
	in_child(idle_child);
}

/* ---- stealing: idle workers of other shards help -------------------- */

static int steal_child(void)
{
	struct syslet_ring *r = ring_new(8);
	struct syslet_completion c = { 0 };
	struct syslet_stats st;
	int cpu0 = allowed_cpu(0), cpu1 = allowed_cpu(1);
	char a, b;
	int p1[2], p2[2];

	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2));
	CHECK(!pipe(p1) && !pipe(p2));
	/* A blocks the only worker of shard 0. */
	CHECK(!pin_self(cpu0));
	CHECK(!submit(r, SYS_read, p1[0], (long)&a, 1, 1));
	CHECK(WAIT_STATS(st, queued_total(&st) == 0));
	/* Shard 1 gets the pool's second and last worker. */
	CHECK(!pin_self(cpu1));
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
	CHECK(!reap_one(r, &c) && c.caller_data == 2);
	/* B on shard 0: no idle worker there, no room for one: stolen. */
	CHECK(!pin_self(cpu0));
	CHECK(!submit(r, SYS_read, p2[0], (long)&b, 1, 3));
	CHECK(write(p2[1], "b", 1) == 1);
	CHECK(!reap_one(r, &c) && c.caller_data == 3 && c.status == 1);
	CHECK(write(p1[1], "a", 1) == 1);
	CHECK(!reap_one(r, &c) && c.caller_data == 1 && c.status == 1);
	stats(&st);
	CHECK(st.workers_peak == 2);
	return 0;
}

static void test_steal(void **state)
{
	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	in_child(steal_child);
}

/* ---- pinning ---------------------------------------------------------- */

static int affinity_of_worker(struct syslet_ring *r, cpu_set_t *set)
{
	struct syslet_completion c = { 0 };

	CPU_ZERO(set);
	if (submit(r, SYS_sched_getaffinity, 0, sizeof(*set), (long)set, 0) ||
	    reap_one(r, &c) || (long)c.status <= 0)
		return -1;
	return CPU_COUNT(set);
}

static void test_pinned(void **state)
{
	struct syslet_ring *r = ring_new(4);
	cpu_set_t set;
	int i;

	(void)state;
	assert_int_equal(syslet_config_get(SYSLET_OPT_PIN), 1);
	for (i = 0; i < 16; i++)
		assert_int_equal(affinity_of_worker(r, &set), 1);
	free(r);
}

static int unpinned_child(void)
{
	struct syslet_ring *r = ring_new(4);
	cpu_set_t set;

	CHECK(!syslet_config_set(SYSLET_OPT_PIN, 0));
	CHECK(affinity_of_worker(r, &set) == ncpus_allowed());
	return 0;
}

static void test_unpinned(void **state)
{
	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	in_child(unpinned_child);
}

/*
 * The leader pins itself to one CPU after the library was loaded (a
 * control loop): unpinned workers keep the process's mask at load, not
 * the leader's choice (spawn.c), else they would all queue on its CPU.
 */
static int leader_pinned_child(void)
{
	struct syslet_ring *r = ring_new(4);
	cpu_set_t set, one;
	int n = ncpus_allowed();

	CHECK(!sched_getaffinity(0, sizeof(set), &set));
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	CHECK(!sched_setaffinity(0, sizeof(one), &one));
	CHECK(!syslet_config_set(SYSLET_OPT_PIN, 0));
	CHECK(affinity_of_worker(r, &set) == n);
	return 0;
}

static void test_unpinned_leader_pinned(void **state)
{
	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	in_child(leader_pinned_child);
}

/* ---- drain ------------------------------------------------------------ */

#define NSTACK 8
#define STACK (64 * 1024)
static _Atomic int notified;

static void count_notifier(void)
{
	atomic_fetch_add(&notified, 1);
}

static void test_drain(void **state)
{
	struct syslet_ring *r = ring_new(16);
	char *stacks = malloc(NSTACK * STACK);
	char buf[NSTACK];
	int fd[2], i;

	(void)state;
	assert_non_null(stacks);
	assert_int_equal(pipe(fd), 0);
	for (i = 0; i < NSTACK; i++)
		assert_int_equal(
			submit_ex(r, SYS_read, fd[0], (long)&buf[i], 1, i,
				  (uintptr_t)count_notifier,
				  (uintptr_t)(stacks + (i + 1) * STACK)),
			0);
	assert_int_equal(write(fd[1], "abcdefgh", NSTACK), NSTACK);
	assert_int_equal(syslet_drain(), 0);
	/* Drain waits for notifiers too, not only for completions. */
	assert_int_equal(atomic_load(&notified), NSTACK);
	assert_int_equal(syslet_ring_head(r), NSTACK);
	close(fd[0]);
	close(fd[1]);
	free(stacks);
	free(r);
}

static void on_usr1(int sig)
{
	(void)sig;
}

struct drainer {
	_Atomic int done;
	int ret, err;
};

static void *drainer(void *arg)
{
	struct drainer *d = arg;

	d->ret = syslet_drain();
	d->err = errno;
	atomic_store(&d->done, 1);
	return NULL;
}

static void test_drain_eintr(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct timespec ms = { 0, 1000000 };
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c = { 0 };
	struct drainer d = { 0 };
	pthread_t t;
	char ch;
	int fd[2], i;

	(void)state;
	sigaction(SIGUSR1, &sa, NULL);
	assert_int_equal(pipe(fd), 0);
	assert_int_equal(submit(r, SYS_read, fd[0], (long)&ch, 1, 1), 0);
	assert_int_equal(pthread_create(&t, NULL, drainer, &d), 0);
	/* A signal before the futex wait only runs the handler: repeat. */
	for (i = 0; i < TEST_WAIT_S * 1000 && !atomic_load(&d.done); i++) {
		pthread_kill(t, SIGUSR1);
		nanosleep(&ms, NULL);
	}
	pthread_join(t, NULL);
	assert_int_equal(d.ret, -1);
	assert_int_equal(d.err, EINTR);
	assert_int_equal(write(fd[1], "x", 1), 1);
	assert_int_equal(reap_one(r, &c), 0);
	assert_int_equal(syslet_drain(), 0);
	close(fd[0]);
	close(fd[1]);
	free(r);
}

/* ---- a notifier that ends its thread with SYS_exit (2007 style) ------ */

static void exit_notifier(void)
{
	syscall(SYS_exit, 0);
}

static void run_exit_notifiers(void (*fn)(void))
{
	struct syslet_ring *r = ring_new(16);
	char *stacks = malloc(NSTACK * STACK);
	struct syslet_completion c = { 0 };
	int i;

	assert_non_null(stacks);
	alarm(TEST_WAIT_S);
	for (i = 0; i < NSTACK; i++)
		assert_int_equal(
			submit_ex(r, SYS_getppid, 0, 0, 0, i, (uintptr_t)fn,
				  (uintptr_t)(stacks + (i + 1) * STACK)),
			0);
	for (i = 0; i < NSTACK; i++) {
		assert_int_equal(reap_one(r, &c), 0);
		assert_int_equal((long)c.status, getppid());
	}
	/* Every notifier is accounted for, dead thread or not. */
	assert_int_equal(syslet_drain(), 0);
	/* And the pool still works. */
	assert_int_equal(submit(r, SYS_getppid, 0, 0, 0, 99), 0);
	assert_int_equal(reap_one(r, &c), 0);
	assert_int_equal(c.caller_data, 99);
	alarm(0);
	free(stacks);
	free(r);
}

static void test_notifier_sys_exit(void **state)
{
	(void)state;
	run_exit_notifiers(exit_notifier);
}

#ifdef __x86_64__
/* An exit no trap on libc's syscall() sees: the thread really ends. */
static void raw_exit_notifier(void)
{
	__asm__ volatile("syscall"
			 :
			 : "a"(SYS_exit), "D"(0)
			 : "rcx", "r11", "memory");
}
#endif

static void test_notifier_raw_exit(void **state)
{
	struct syslet_stats st;

	(void)state;
#ifdef __x86_64__
	stats(&st);
	run_exit_notifiers(raw_exit_notifier);
	{
		uint64_t before = st.workers_replaced;

		stats(&st);
		assert_int_equal(st.workers_replaced - before, NSTACK);
	}
#else
	(void)st;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_unpinned),
		cmocka_unit_test(test_unpinned_leader_pinned),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_idle_exit),
		cmocka_unit_test(test_steal),
		cmocka_unit_test(test_drain),
		cmocka_unit_test(test_drain_eintr),
		cmocka_unit_test(test_notifier_sys_exit),
		cmocka_unit_test(test_notifier_raw_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
