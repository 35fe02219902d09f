/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: syslet_config_set/get: defaults, round trips, EINVAL for
 * unknown options and out-of-range values, and the SYSLET_* environment
 * variables read once at first use (bad values ignored).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

/* The default worker stack: 64 KiB, or PTHREAD_STACK_MIN where that is more
 * (128 KiB on aarch64 and ppc64le). */
#define DEF_STACK \
	((long)PTHREAD_STACK_MIN > 65536 ? (long)PTHREAD_STACK_MIN : 65536L)

static void test_defaults(void **state)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF), cap = 256 * ncpu;
	struct rlimit rl;

	(void)state;
	if (!getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (long)(rl.rlim_cur / 2) < cap)
		cap = (long)(rl.rlim_cur / 2);
	assert_int_equal(syslet_config_get(SYSLET_OPT_MAX_WORKERS), cap);
	assert_int_equal(syslet_config_get(SYSLET_OPT_MIN_WORKERS), 1);
	assert_int_equal(syslet_config_get(SYSLET_OPT_PIN), 1);
	assert_int_equal(syslet_config_get(SYSLET_OPT_SPIN_NS), 20000);
	assert_int_equal(syslet_config_get(SYSLET_OPT_IDLE_MS), 10000);
	assert_int_equal(syslet_config_get(SYSLET_OPT_STACK_SIZE), DEF_STACK);
}

static void test_round_trip(void **state)
{
	static const struct {
		enum syslet_option opt;
		long good, bad_lo, bad_hi;
	} t[] = {
		{ SYSLET_OPT_MAX_WORKERS, 3, 0, 65537 },
		{ SYSLET_OPT_MIN_WORKERS, 0, -1, 65537 },
		{ SYSLET_OPT_PIN, 0, -1, 2 },
		{ SYSLET_OPT_SPIN_NS, 0, -1, 1000000001 },
		{ SYSLET_OPT_IDLE_MS, 1, 0, (long)INT_MAX + 1 },
		{ SYSLET_OPT_STACK_SIZE, 1 << 20, 4096, (1L << 30) + 1 },
	};
	size_t i;
	long old;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		old = syslet_config_get(t[i].opt);
		assert_int_equal(syslet_config_set(t[i].opt, t[i].good), 0);
		assert_int_equal(syslet_config_get(t[i].opt), t[i].good);
		errno = 0;
		assert_int_equal(syslet_config_set(t[i].opt, t[i].bad_lo), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(syslet_config_set(t[i].opt, t[i].bad_hi), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(syslet_config_get(t[i].opt), t[i].good);
		assert_int_equal(syslet_config_set(t[i].opt, old), 0);
	}
}

static void test_unknown(void **state)
{
	(void)state;
	errno = 0;
	assert_int_equal(syslet_config_set((enum syslet_option)0, 1), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_config_get((enum syslet_option)99), -1);
	assert_int_equal(errno, EINVAL);
}

/* Re-run this program with an environment, in "env child" mode. */
static void test_environment(void **state)
{
	char *argv[] = { "test-config", "--env-child", NULL };
	char *envp[] = { "SYSLET_MAX_WORKERS=7",
			 "SYSLET_MIN_WORKERS=2",
			 "SYSLET_PIN=0",
			 "SYSLET_SPIN_NS=0x100",
			 "SYSLET_IDLE_MS=12abc",
			 "SYSLET_STACK_SIZE=100",
			 NULL };
	int st;
	pid_t pid;

	(void)state;
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

static int env_child(void)
{
	/* Read once: later changes of the environment are not seen. */
	if (syslet_config_get(SYSLET_OPT_MAX_WORKERS) != 7)
		return 1;
	setenv("SYSLET_MAX_WORKERS", "11", 1);
	if (syslet_config_get(SYSLET_OPT_MAX_WORKERS) != 7 ||
	    syslet_config_get(SYSLET_OPT_MIN_WORKERS) != 2 ||
	    syslet_config_get(SYSLET_OPT_PIN) != 0 ||
	    syslet_config_get(SYSLET_OPT_SPIN_NS) != 256)
		return 2;
	/* Malformed or out of range: the default stays. */
	if (syslet_config_get(SYSLET_OPT_IDLE_MS) != 10000 ||
	    syslet_config_get(SYSLET_OPT_STACK_SIZE) != DEF_STACK)
		return 3;
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_environment),
	};

	if (argc > 1 && !strcmp(argv[1], "--env-child"))
		return env_child();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
