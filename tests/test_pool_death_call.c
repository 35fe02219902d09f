/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a worker killed inside its call (SPEC 5, "every worker
 * death is noticed"). A seccomp filter, installed before the pool starts
 * so that every library thread has it too, answers SECCOMP_RET_KILL_THREAD
 * for fsync: the worker that runs a queued fsync dies in the call. With a
 * cap of one worker, the call completes exactly once with EOWNERDEAD
 * (syslet(7)), the statistics stop counting the dead worker, and the pool
 * still runs calls after it; syslet_drain() returns. Also with a
 * notifier (it runs once, on another worker, with that status), and for a
 * program that reads the ring's head itself, never waiting in the
 * library (the manager's look while calls run finds the death). In a
 * forked child under an alarm: every wait is bounded and fails loudly.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_pool_util.h"

#define DEATHS 4
#define CANCELS 40

static _Atomic int notified;
static _Atomic long notified_status;
static char nstack[64 * 1024] __attribute__((aligned(16)));

static void notifier(void)
{
	const struct syslet_completion *c = syslet_current_completion();

	atomic_store(&notified_status, c ? (long)c->status : 0);
	atomic_fetch_add(&notified, 1);
}

/* The completion at the tail, by reading the head only (bounded). */
static int poll_one(struct syslet_ring *r, struct syslet_completion *c)
{
	if (!POLL_WITHIN(TEST_WAIT_S, syslet_ring_head(r) != r->user_tail))
		return -ETIMEDOUT;
	*c = *syslet_ring_slot(r, r->user_tail);
	syslet_ring_advance(r, 1);
	return 0;
}

/* fsync kills the calling thread; every other call is allowed. */
static int kill_fsync(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fsync, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_THREAD),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static int killed_in_call(void)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	struct syslet_stats st;
	char path[] = "/tmp/syslet-death-XXXXXX";
	int fd = mkstemp(path), i, n, deaths = 0;

	CHECK(r && fd >= 0);
	unlink(path);
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1));
	CHECK(!kill_fsync());
	alarm(TEST_WAIT_S);
	for (i = 0; i < DEATHS; i++) {
		/* Killed in the call: completed once, with EOWNERDEAD. */
		CHECK(!submit(r, SYS_fsync, fd, 0, 0, 100 + (uint64_t)i));
		CHECK(!reap_one(r, &c) && c.caller_data == 100 + (uint64_t)i &&
		      (long)c.status == -EOWNERDEAD);
		/* The one worker allowed is a live one again. */
		CHECK(!submit(r, SYS_getppid, 0, 0, 0, 200 + (uint64_t)i));
		CHECK(!reap_one(r, &c) && c.caller_data == 200 + (uint64_t)i &&
		      (long)c.status == getppid());
	}
	/* With a notifier: it runs once, with the completion's status. */
	CHECK(!submit_ex(r, SYS_fsync, fd, 0, 0, 300, (uintptr_t)notifier,
			 (uintptr_t)(nstack + sizeof(nstack))));
	CHECK(!reap_one(r, &c) && c.caller_data == 300 &&
	      (long)c.status == -EOWNERDEAD);
	/* Read by the head alone: nothing of the library waits. */
	CHECK(!submit(r, SYS_fsync, fd, 0, 0, 400));
	CHECK(!poll_one(r, &c) && c.caller_data == 400 &&
	      (long)c.status == -EOWNERDEAD);
	/*
	 * Cancelled at any moment of its death (queued, dying, dead but not
	 * reaped, reaped): found (1) or gone (ENOENT), never EAGAIN (a
	 * signal sent to a dead thread); completed once, -ECANCELED or
	 * -EOWNERDEAD.
	 */
	for (i = 0; i < CANCELS; i++) {
		CHECK(!submit(r, SYS_fsync, fd, 0, 0, 500 + (uint64_t)i));
		nanosleep(&(struct timespec){ 0, (i % 20) * 100000L }, NULL);
		n = syslet_cancel(r, 500 + (uint64_t)i, 0);
		CHECK(n == 1 || (n == -1 && errno == ENOENT));
		CHECK(!reap_one(r, &c) && c.caller_data == 500 + (uint64_t)i);
		CHECK((long)c.status == -EOWNERDEAD ||
		      (n == 1 && (long)c.status == -ECANCELED));
		deaths += (long)c.status == -EOWNERDEAD;
	}
	CHECK(!syslet_drain());
	CHECK(atomic_load(&notified) == 1 &&
	      atomic_load(&notified_status) == -EOWNERDEAD);
	/* No completion posted twice. */
	CHECK(syslet_ring_head(r) == r->user_tail);
	CHECK(WAIT_STATS(st, st.workers_replaced ==
					     (uint64_t)(DEATHS + 2 + deaths) &&
				     st.workers_now == worker_threads()));
	CHECK(st.completed == 2 * DEATHS + 2 + CANCELS && st.workers_peak <= 1);
	alarm(0);
	return 0;
}

static void test_killed_in_call(void **state)
{
	pid_t pid;

	(void)state;
	pid = fork_case(0);
	if (!pid)
		_exit(killed_in_call());
	assert_int_equal(wait_case(pid), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_killed_in_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
