/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the pool's long runs: 1,000,000 short blocking calls through
 * 2 shards, each delivered exactly once (SYSLET_TEST_SOAK=N runs N million),
 * and 10,000 calls that each block 10 ms, all in parallel (< 5 s).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_pool_util.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- 1,000,000 calls, each delivered exactly once ------------------- */

struct stream {
	int cpu;
	uint64_t first, n;
	uint8_t *seen;
	long ppid;
	int err;
};

static int check_one(struct stream *s, struct syslet_ring *r)
{
	struct syslet_completion c = { 0 };

	if (reap_one(r, &c))
		return -1;
	if ((long)c.status != s->ppid || c.caller_data < s->first ||
	    c.caller_data >= s->first + s->n || s->seen[c.caller_data]++)
		return -1;
	return 0;
}

static void *producer(void *arg)
{
	struct stream *s = arg;
	struct syslet_ring *r = ring_new(1024);
	uint64_t i, out = 0;
	int ret;

	if (s->cpu >= 0)
		pin_self(s->cpu);
	for (i = s->first; i < s->first + s->n && !s->err; i++) {
		while ((ret = submit(r, SYS_getppid, 0, 0, 0, i)) == -EBUSY) {
			/* Ring full: wait for one, take all there are. */
			do {
				if (check_one(s, r)) {
					s->err = 1;
					break;
				}
				out++;
			} while (syslet_ring_head(r) != r->user_tail);
			if (s->err)
				break;
		}
		if (ret && ret != -EBUSY)
			s->err = 2;
	}
	for (; out < s->n && !s->err; out++)
		if (check_one(s, r))
			s->err = 3;
	free(r);
	return NULL;
}

static void test_million(void **state)
{
	const char *soak = getenv("SYSLET_TEST_SOAK");
	uint64_t n = 1000000 * (soak ? strtoull(soak, NULL, 0) : 1);
	int two = ncpus_allowed() >= 2;
	struct stream s[2] = { 0 };
	pthread_t t[2];
	uint64_t i;
	double t0;
	uint8_t *seen = calloc(n, 1);
	struct syslet_stats st0, st;
	int k;

	(void)state;
	assert_non_null(seen);
	stats(&st0);
	t0 = now_s();
	for (k = 0; k < 2; k++) {
		s[k].cpu = two ? allowed_cpu(k) : -1;
		s[k].first = k * (n / 2);
		s[k].n = k ? n - n / 2 : n / 2;
		s[k].seen = seen;
		s[k].ppid = getppid();
		assert_int_equal(pthread_create(&t[k], NULL, producer, &s[k]),
				 0);
	}
	for (k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
		assert_int_equal(s[k].err, 0);
	}
	for (i = 0; i < n; i++)
		if (seen[i] != 1)
			fail_msg("call %llu seen %d times",
				 (unsigned long long)i, seen[i]);
	stats(&st);
	printf("# %llu calls through %d shard(s): %.2f s, %.0f ns/call, "
	       "%llu spins, %llu sleeps, %llu workers started\n",
	       (unsigned long long)n, two ? 2 : 1, now_s() - t0,
	       (now_s() - t0) * 1e9 / (double)n,
	       (unsigned long long)(st.spins - st0.spins),
	       (unsigned long long)(st.sleeps - st0.sleeps),
	       (unsigned long long)st.workers_started);
	free(seen);
}

/* ---- 10,000 calls that each block 10 ms ------------------------------ */

static void test_ten_thousand_sleepers(void **state)
{
	static const struct timespec ten_ms = { 0, 10000000 };
	const uint32_t n = 10000;
	struct syslet_ring *r = ring_new(16384);
	struct syslet_completion c = { 0 };
	struct syslet_stats st;
	uint32_t i;
	double t0, dt;

	(void)state;
	t0 = now_s();
	for (i = 0; i < n; i++)
		assert_int_equal(
			submit(r, SYS_nanosleep, (long)&ten_ms, 0, 0, i), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(reap_one(r, &c), 0);
		assert_int_equal(c.status, 0);
	}
	dt = now_s() - t0;
	stats(&st);
	printf("# %u x 10 ms sleeps: %.3f s wall, peak %u workers\n", n, dt,
	       st.workers_peak);
	/* parallel, not 100 s in a row; SYSLET_TEST_SLOWDOWN: emulated CPUs */
	assert_true(dt < 5.0 * (getenv("SYSLET_TEST_SLOWDOWN") ?
					atof(getenv("SYSLET_TEST_SLOWDOWN")) :
					1.0));
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_ten_thousand_sleepers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
