/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: issue 9 fault 1, the exact scenario: thread A on one CPU
 * submits a short call (its shard's worker becomes the spinner), then a
 * read of an empty pipe, and keeps its CPU; thread B on the other CPU
 * submits a 1 ms nanosleep while that spinner still holds its role. The
 * old protocol saw "a neighbour spins" and did nothing; the spinner then
 * took its own shard's blocking read and B's call waited forever. The 1 ms
 * call must complete within 5 s. Each case runs in a fresh process: the
 * blocking call on either CPU; pinning on and off; spin budget 0 and the
 * default; configured through syslet_config_set() and through SYSLET_*
 * variables (the test re-executes itself with them).
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

#include "shard.h"
#include "test_pool_util.h"

#define BOUND_S 5 /* every wait of the scenario */

static int cpu_a, cpu_b, fd[2];
static _Atomic int go, done, saw_spinner;
static struct syslet_ring *ring_a, *ring_b;

/* Spin (keeping the CPU) until @flag is set; false after BOUND_S. */
static bool hold_cpu_until(_Atomic int *flag)
{
	uint64_t end = syslet__now_ns() + BOUND_S * 1000000000ull;

	while (!atomic_load(flag))
		if (syslet__now_ns() > end)
			return false;
	return true;
}

static void *thread_a(void *arg)
{
	static char byte;
	struct syslet_completion c;

	(void)arg;
	CHECK(!pin_self(cpu_a));
	CHECK(!submit(ring_a, SYS_getppid, 0, 0, 0, 1));
	CHECK(!reap_within(ring_a, &c, BOUND_S) && (long)c.status == getppid());
	/* The shard's worker now spins (its spin budget permitting). */
	CHECK(!submit(ring_a, SYS_read, fd[0], (long)&byte, 1, 2));
	atomic_store(&go, 1);
	/* Keep this CPU, so that the spinner does not run meanwhile. */
	CHECK(hold_cpu_until(&done));
	return NULL;
}

static void *thread_b(void *arg)
{
	static const struct timespec ms = { 0, 1000000 };
	struct syslet_completion c;
	int ret;

	(void)arg;
	CHECK(!pin_self(cpu_b));
	CHECK(hold_cpu_until(&go));
	/* The pool exists once A's first call was made. */
	atomic_store(&saw_spinner,
		     atomic_load(&syslet__pool.shards[cpu_a].spinning));
	CHECK(!submit(ring_b, SYS_nanosleep, (long)&ms, 0, 0, 3));
	atomic_store(&done, 1);
	ret = reap_within(ring_b, &c, BOUND_S);
	if (ret)
		fprintf(stderr, "1 ms call not done after %d s (spinner %s)\n",
			BOUND_S,
			atomic_load(&saw_spinner) ? "seen" : "not seen");
	CHECK(!ret && c.caller_data == 3 && c.status == 0);
	return NULL;
}

/* The scenario, in a fresh process; the exit status of a child. */
static int scenario(int a, int b)
{
	struct syslet_completion c = { 0 };
	pthread_t ta, tb;
	int ret;

	cpu_a = a;
	cpu_b = b;
	ring_a = ring_new(4);
	ring_b = ring_new(4);
	CHECK(ring_a && ring_b && !pipe(fd));
	alarm(4 * BOUND_S);
	CHECK(!pthread_create(&ta, NULL, thread_a, NULL));
	CHECK(!pthread_create(&tb, NULL, thread_b, NULL));
	CHECK(!pthread_join(tb, NULL) && !pthread_join(ta, NULL));
	/* Then the blocked read, released, completes too. */
	CHECK(write(fd[1], "x", 1) == 1);
	ret = reap_within(ring_a, &c, BOUND_S);
	if (ret || c.caller_data != 2 || c.status != 1)
		fprintf(stderr,
			"the released read: reap %d, caller_data %llu, "
			"status %lld\n",
			ret, (unsigned long long)c.caller_data,
			(long long)c.status);
	CHECK(!ret && c.caller_data == 2 && c.status == 1);
	CHECK(!syslet_drain());
	return 0;
}

static void need_two_cpus(void)
{
	if (ncpus_allowed() < 2)
		skip();
}

/* Each order of the two CPUs, configured by syslet_config_set(). */
static void by_config(long pin, long spin)
{
	int order, st;
	pid_t pid;

	need_two_cpus();
	for (order = 0; order < 2; order++) {
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			CHECK(!syslet_config_set(SYSLET_OPT_PIN, pin));
			if (spin >= 0)
				CHECK(!syslet_config_set(SYSLET_OPT_SPIN_NS,
							 spin));
			_exit(scenario(allowed_cpu(order),
				       allowed_cpu(1 - order)));
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

/* Each order of the two CPUs, configured by SYSLET_PIN, SYSLET_SPIN_NS. */
static void by_env(const char *pin, const char *spin)
{
	char a[16], b[16], pe[32], se[32];
	int order, st;
	pid_t pid;

	need_two_cpus();
	for (order = 0; order < 2; order++) {
		snprintf(a, sizeof(a), "%d", allowed_cpu(order));
		snprintf(b, sizeof(b), "%d", allowed_cpu(1 - order));
		snprintf(pe, sizeof(pe), "SYSLET_PIN=%s", pin);
		snprintf(se, sizeof(se), "SYSLET_SPIN_NS=%s", spin);
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			char *argv[] = { "test-pool_wake", "scenario", a, b,
					 NULL };
			char *envp[] = { pe, se, NULL };

			execve("/proc/self/exe", argv, envp);
			_exit(127);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

static void test_pinned_spin(void **state)
{
	(void)state;
	by_config(1, -1);
}

static void test_pinned_nospin(void **state)
{
	(void)state;
	by_config(1, 0);
}

static void test_unpinned_spin(void **state)
{
	(void)state;
	by_config(0, -1);
}

static void test_unpinned_nospin(void **state)
{
	(void)state;
	by_config(0, 0);
}

static void test_env_pinned_spin(void **state)
{
	(void)state;
	by_env("1", "20000");
}

static void test_env_unpinned_nospin(void **state)
{
	(void)state;
	by_env("0", "0");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned_spin),
		cmocka_unit_test(test_pinned_nospin),
		cmocka_unit_test(test_unpinned_spin),
		cmocka_unit_test(test_unpinned_nospin),
		cmocka_unit_test(test_env_pinned_spin),
		cmocka_unit_test(test_env_unpinned_nospin),
	};

	if (argc == 4 && !strcmp(argv[1], "scenario"))
		return scenario(atoi(argv[2]), atoi(argv[3]));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
