/* SPDX-License-Identifier: MIT */
/*
 * A submitter asks the kernel for its scheduling policy only when a
 * policy may have changed (src/policy.c), not because the pool started a
 * worker: a worker's start sets its own policy with the system call, not
 * with the library's sched_setscheduler(), whose generation would make
 * every submitting thread ask again (one sched_getscheduler() per start,
 * ~1 us on a VM).
 *
 * This program defines sched_getscheduler(), which libsyslet.so's calls
 * then reach, and counts the calls of the submitting thread. 16 reads of
 * empty pipes, one at a time, each left to block on a worker of its own
 * (the pool grows for each: no worker is idle), then a byte into each.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cmocka.h>

#include "indirect_util.h"

#define NREADS 16

static _Atomic pid_t submitter;
static _Atomic int asked;

__attribute__((visibility("default"))) int sched_getscheduler(pid_t pid)
{
	if (gettid() == atomic_load(&submitter))
		atomic_fetch_add(&asked, 1);
	return (int)syscall(SYS_sched_getscheduler, pid);
}

static struct syslet_stats stats(void)
{
	struct syslet_stats st;

	assert_int_equal(syslet_stats(&st, sizeof(st)), 0);
	return st;
}

/* Bounded: until no call of the pool is queued (each is on a worker). */
static void wait_taken(void)
{
	struct timespec ts = { 0, 100000 };
	struct syslet_stats st;
	uint32_t i, queued;
	int n;

	for (n = 0; n < WAIT_SECONDS * 10000; n++) {
		st = stats();
		for (i = queued = 0; i < st.shards; i++)
			queued += st.queue_depth[i];
		if (!queued)
			return;
		nanosleep(&ts, NULL);
	}
	fail_msg("a call stayed queued for %d s", WAIT_SECONDS);
}

static void test_starts_ask_nothing(void **state)
{
	struct syslet_ring *ring = ring_new(2 * NREADS);
	int fds[NREADS][2], i, before;
	struct syslet_stats st;
	char buf[NREADS];
	long r;

	(void)state;
	/* Room for every read (SYSLET_MAX_WORKERS may say fewer). */
	assert_int_equal(syslet_config_set(SYSLET_OPT_MAX_WORKERS, 2 * NREADS),
			 0);
	atomic_store(&submitter, gettid());
	for (i = 0; i < NREADS; i++) {
		assert_int_equal(pipe(fds[i]), 0);
		r = SYS_IND(ring, (uint64_t)i, SYS_read, fds[i][0], &buf[i], 1);
		assert_true(PENDING(r));
		wait_taken();
	}
	st = stats();
	before = atomic_load(&asked);
	/* The pool grew for the reads (each blocks a worker of its own). */
	assert_true(st.workers_started >= NREADS);
	/* The first submit's question, and at most two wake-ups' (wake.c). */
	if (before > 3)
		fail_msg("%d policy questions for %llu worker starts", before,
			 (unsigned long long)st.workers_started);
	for (i = 0; i < NREADS; i++)
		assert_int_equal(write(fds[i][1], "x", 1), 1);
	for (i = 0; i < NREADS; i++) {
		struct syslet_completion c = ring_pop(ring);

		assert_int_equal(c.status, 1);
	}
	for (i = 0; i < NREADS; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
	}
	assert_int_equal(syslet_drain(), 0);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_ask_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
