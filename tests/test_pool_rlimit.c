/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: thread creation failing (RLIMIT_NPROC) degrades the pool:
 * with two workers (and the manager) allowed, four blocked calls all
 * complete; with none allowed, submit fails with EAGAIN and leaves the job
 * untouched. Needs root to switch to an otherwise unused uid whose task
 * count is known.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_pool_util.h"

#define UID 54321 /* no other task runs as this uid */

/* In a child: become UID with at most @tasks tasks, run @fn. */
static void limited(rlim_t tasks, int (*fn)(void))
{
	struct rlimit rl = { tasks, tasks };
	int st;
	pid_t pid;

	if (geteuid())
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		CHECK(!setrlimit(RLIMIT_NPROC, &rl));
		CHECK(!setresgid(UID, UID, UID) && !setresuid(UID, UID, UID));
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static int two_workers(void)
{
	struct syslet_ring *r = ring_new(8);
	struct syslet_completion c;
	struct syslet_stats st;
	char buf[4];
	int fd[2], i;

	/* The default cap would follow the limit: RLIMIT_NPROC / 2. */
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 16));
	CHECK(!pipe(fd));
	for (i = 0; i < 4; i++)
		CHECK(!submit(r, SYS_read, fd[0], (long)&buf[i], 1, 1));
	/* The process, the pool's manager, two workers: the limit. Two calls
	 * wait. */
	CHECK(WAIT_STATS(st, st.workers_now == 2 && queued_total(&st) == 2));
	CHECK(write(fd[1], "abcd", 4) == 4);
	for (i = 0; i < 4; i++)
		CHECK(!reap_one(r, &c) && c.status == 1);
	CHECK(!syslet_drain());
	stats(&st);
	if (st.workers_peak != 2 || st.completed != 4)
		fprintf(stderr, "workers_peak %u, completed %llu\n",
			st.workers_peak, (unsigned long long)st.completed);
	CHECK(st.workers_peak == 2 && st.completed == 4);
	return 0;
}

static void test_degraded(void **state)
{
	(void)state;
	limited(4, two_workers);
}

static int no_worker(void)
{
	struct syslet_ring *r = ring_new(1);
	struct syslet__job *job = syslet__job_alloc(), copy;
	struct syslet_stats st;

	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 16));
	CHECK(job && !syslet__ring_reserve(r, &job->rs));
	job->nr = SYS_getppid;
	job->cnode.caller_data = 77;
	memcpy(&copy, job, sizeof(copy));
	CHECK(syslet__pool_submit(job) == -EAGAIN);
	CHECK(!memcmp(&copy, job, sizeof(copy)));
	syslet__ring_unreserve(job->rs);
	syslet__job_free(job);
	/* Nothing half done: the slot is free again, nothing counted. */
	CHECK(!syslet__ring_reserve(r, &job->rs));
	stats(&st);
	CHECK(st.submitted == 0 && st.workers_now == 0);
	return 0;
}

static void test_no_worker(void **state)
{
	(void)state;
	limited(1, no_worker);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_degraded),
		cmocka_unit_test(test_no_worker),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
