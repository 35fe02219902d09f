/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the machine under the tests keeps a thread's stores while
 * another thread of its process forks (issue 11). Not a test of the
 * library: of the platform the suites run on. Under Debian 12's
 * qemu-system-ppc64 with one host thread per vCPU (MTTCG), a vCPU may
 * keep a stale writable translation after another vCPU's broadcast tlbie;
 * when fork() write-protects the parent's pages and a thread of the
 * parent then copies one on write, a store another thread makes through
 * the stale translation lands in the child's page and is lost to the
 * parent (67 stores in 400 forks here). test_cancel's fork case then
 * failed four ways (a job never taken, a job never finished, a hung
 * child, a glibc mutex with a stale owner). tests/cross/run.sh boots
 * ppc64le with disable_tlbie (TLBs flushed by IPI, each vCPU its own),
 * where none is lost; this test fails if that ever comes back (or on any
 * machine that loses stores so).
 *
 * Shared state: one page holding each writer's counters (written by that
 * writer only: a lost store shows as reading back an older value) and a
 * word the forking thread writes after each fork, so that the parent
 * copies the page while the writers store into it; stop and started
 * (relaxed: flags, no data hangs on them).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#define WRITERS 2
#define FORKS 400
#define BUDGET_S 10 /* forks stop after this long: slow emulators */

struct line {
	volatile unsigned long plain;
	_Atomic unsigned long rmw;
	char pad[64 - 2 * sizeof(unsigned long)];
};

static struct line *page; /* WRITERS lines and the forker's */
static _Atomic int stop, started;
static unsigned long lost[WRITERS];

static void *writer(void *arg)
{
	long t = (long)arg;
	unsigned long n = 0, v;

	/* Relaxed: a flag; the counters are this thread's own. */
	atomic_fetch_add_explicit(&started, 1, memory_order_relaxed);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		v = page[t].plain;
		if (v != n)
			lost[t]++;
		page[t].plain = ++n;
		/* Relaxed: read back by this thread only. */
		v = atomic_fetch_add_explicit(&page[t].rmw, 1,
					      memory_order_relaxed);
		if (v != n - 1) {
			lost[t]++;
			atomic_store_explicit(&page[t].rmw, n,
					      memory_order_relaxed);
		}
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_no_store_lost_across_fork(void **state)
{
	long ps = sysconf(_SC_PAGESIZE);
	pthread_t th[WRITERS];
	unsigned long sum = 0;
	double t0, tw;
	int st, forks;
	long t;
	pid_t pid;

	(void)state;
	assert_true(ps >= (long)((WRITERS + 1) * sizeof(struct line)));
	page = aligned_alloc((size_t)ps, (size_t)ps);
	assert_non_null(page);
	memset(page, 0, (size_t)ps);
	for (t = 0; t < WRITERS; t++)
		assert_int_equal(
			pthread_create(&th[t], NULL, writer, (void *)t), 0);
	tw = now_s();
	while (atomic_load_explicit(&started, memory_order_relaxed) < WRITERS)
		assert_true(now_s() - tw < 60);
	t0 = now_s();
	for (forks = 0; forks < FORKS && now_s() - t0 < BUDGET_S; forks++) {
		pid = fork();
		assert_true(pid >= 0);
		if (!pid)
			_exit(0);
		/* The parent's own write: it copies the page now. */
		page[WRITERS].plain++;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && !WEXITSTATUS(st));
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	for (t = 0; t < WRITERS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		sum += lost[t];
	}
	print_message("%d forks, page size %ld: %lu stores lost\n", forks, ps,
		      sum);
	if (sum)
		fail_msg("%lu stores lost across fork(): the machine (or its "
			 "emulator) is at fault, not the library",
			 sum);
	free(page);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_store_lost_across_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
