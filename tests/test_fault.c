/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: fault injection (src/fault.c, -Dfault_injection=true) reads
 * SYSLET_FAULT once and fails exactly the chosen calls: "@N", "@N+", a
 * seeded probability (same seed, same failures), 0 and 1, and ignores
 * malformed items. Each configuration runs in a fresh child process,
 * since the configuration is read once per process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fault.h"

#define CALLS 4096

/* In a child with SYSLET_FAULT=@env: the failure pattern of @site. */
static void pattern(const char *env, enum syslet__fault_site site,
		    unsigned char out[CALLS])
{
	int p[2], status, i;
	ssize_t got = 0, r;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned char v[CALLS];

		close(p[0]);
		setenv("SYSLET_FAULT", env, 1);
		for (i = 0; i < CALLS; i++)
			v[i] = syslet__fault(site);
		_exit(write(p[1], v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : 1);
	}
	close(p[1]);
	while (got < CALLS && (r = read(p[0], out + got, CALLS - got)) > 0)
		got += r;
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(got, CALLS);
}

static int count(const unsigned char v[CALLS])
{
	int i, n = 0;

	for (i = 0; i < CALLS; i++)
		n += v[i];
	return n;
}

static void test_nth(void **state)
{
	unsigned char v[CALLS];

	(void)state;
	pattern("thread=@3,report=0", SYSLET__FAULT_THREAD, v);
	assert_int_equal(count(v), 1);
	assert_int_equal(v[2], 1);
	pattern("thread=@3,report=0", SYSLET__FAULT_ALLOC, v);
	assert_int_equal(count(v), 0);
	pattern("alloc=@100+,report=0", SYSLET__FAULT_ALLOC, v);
	assert_int_equal(count(v), CALLS - 99);
	assert_int_equal(v[98], 0);
	assert_int_equal(v[99], 1);
	assert_int_equal(v[CALLS - 1], 1);
}

static void test_random(void **state)
{
	unsigned char a[CALLS], b[CALLS], c[CALLS];
	int n;

	(void)state;
	pattern("futex=0.25,seed=42,report=0", SYSLET__FAULT_FUTEX, a);
	pattern("futex=0.25,seed=42,report=0", SYSLET__FAULT_FUTEX, b);
	pattern("futex=0.25,seed=43,report=0", SYSLET__FAULT_FUTEX, c);
	n = count(a);
	/* 4096 draws at p = 1/4: mean 1024, sd 28; 10 sd either side */
	assert_in_range(n, 1024 - 280, 1024 + 280);
	assert_memory_equal(a, b, CALLS);
	assert_memory_not_equal(a, c, CALLS);
	pattern("futex=0,report=0", SYSLET__FAULT_FUTEX, a);
	assert_int_equal(count(a), 0);
	pattern("futex=1,report=0", SYSLET__FAULT_FUTEX, a);
	assert_int_equal(count(a), CALLS);
}

static void test_malformed(void **state)
{
	unsigned char v[CALLS];

	(void)state;
	/* bad items are ignored (with a warning), good ones still apply */
	pattern("bogus=1,thread=2,thread=@0,alloc=x,,futex=@7,report=0",
		SYSLET__FAULT_FUTEX, v);
	assert_int_equal(count(v), 1);
	assert_int_equal(v[6], 1);
	pattern("bogus=1,thread=2,thread=@0,alloc=x,,futex=@7,report=0",
		SYSLET__FAULT_THREAD, v);
	assert_int_equal(count(v), 0);
	pattern("", SYSLET__FAULT_ALLOC, v);
	assert_int_equal(count(v), 0);
	pattern("alloc=1", SYSLET__FAULT_NR_SITES, v);
	assert_int_equal(count(v), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nth),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
