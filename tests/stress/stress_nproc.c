/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: RLIMIT_NPROC lowered mid-run (SPEC 5: thread creation that
 * fails degrades the pool, never loses a call nor crashes). Runs in a
 * child as an unprivileged user (root ignores RLIMIT_NPROC: as root the
 * child drops to uid/gid 65534 first). Before: every call goes pending.
 * With the soft limit at 1: every call either goes pending and completes
 * exactly once, or is refused up front with EAGAIN. After the limit is
 * raised again: the ring can hold `elements` pending calls with no EBUSY
 * (no reservation leaked by a refusal) and all of them complete.
 */
#include <grp.h>
#include <sys/resource.h>

#include "stress.h"

#define ELEMENTS 128
#define BASE_CALLS 3000

static uint8_t *seen, *how; /* by caller_data */
static long calls, n_refused, n_pending;

static int submit(struct syslet_ring *r, uint64_t data, int may_refuse)
{
	static const struct timespec nap = { 0, 20000 };
	struct indirect_registers regs;
	union indirect_params p;

	FILL_IN(regs, SYS_nanosleep, &nap, NULL);
	stress_params(&p, r, data);
	for (;;) {
		errno = 0;
		if (indirect(&regs, &p, sizeof(p), 0) == -1 &&
		    errno == ESYSLETPENDING) {
			how[data] = 1;
			n_pending++;
			return 1;
		}
		if (errno == EAGAIN && (may_refuse || stress_faulty())) {
			n_refused++;
			return 0;
		}
		if (errno == ENOMEM && stress_faulty())
			continue;
		DIE("call %llu: errno %d", (unsigned long long)data, errno);
	}
}

/* Consume what @r holds (or wait up to 10 s for one if @block). */
static long reap(struct syslet_ring *r, int block)
{
	struct timespec ten_s = { 10, 0 }, zero = { 0, 0 };
	uint32_t tail = r->user_tail, head, i;

	if (syslet_ring_wait_timeout(r, tail, block ? &ten_s : &zero)) {
		if (stress_wait_retry(errno) || (!block && errno == ETIMEDOUT))
			return 0;
		DIE("no completion in 10 s");
	}
	head = syslet_ring_head(r);
	for (i = tail; i != head; i++) {
		struct syslet_completion *c = syslet_ring_slot(r, i);

		CHECK(c->caller_data < (uint64_t)calls * 3 + ELEMENTS);
		CHECK(c->status == 0);
		if (seen[c->caller_data]++)
			DIE("%llu twice", (unsigned long long)c->caller_data);
	}
	syslet_ring_advance(r, head - tail);
	return (long)(head - tail);
}

/* Submit @n calls from @base, keeping at most ELEMENTS/2 outstanding. */
static void run_calls(struct syslet_ring *r, uint64_t base, long n,
		      int may_refuse)
{
	long i, out = 0;

	for (i = 0; i < n; i++) {
		while (out >= ELEMENTS / 2)
			out -= reap(r, 1);
		if (submit(r, base + (uint64_t)i, may_refuse))
			out++;
		out -= reap(r, 0);
	}
	while (out > 0)
		out -= reap(r, 1);
}

static int child(void)
{
	struct syslet_ring *r = stress_ring(ELEMENTS);
	struct rlimit rl, low;
	long i, got;

	if (geteuid() == 0 &&
	    (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	     setresuid(65534, 65534, 65534)))
		DIE("cannot drop to uid 65534");
	stress_watchdog("stress_nproc child", 240);
	CHECK(getrlimit(RLIMIT_NPROC, &rl) == 0);
	run_calls(r, 0, calls, 0);
	low = rl;
	low.rlim_cur = 1;
	CHECK(setrlimit(RLIMIT_NPROC, &low) == 0);
	run_calls(r, (uint64_t)calls, calls, 1);
	CHECK(setrlimit(RLIMIT_NPROC, &rl) == 0);
	run_calls(r, 2 * (uint64_t)calls, calls, 0);
	/* no reservation leaked: the whole ring can be pending at once */
	for (i = 0; i < ELEMENTS; i++)
		if (!submit(r, 3 * (uint64_t)calls + (uint64_t)i, 0))
			DIE("refused with the limit raised again");
	for (got = 0; got < ELEMENTS;)
		got += reap(r, 1);
	CHECK(syslet_drain() == 0);
	for (i = 0; i < 3 * calls + ELEMENTS; i++)
		if (seen[i] != how[i])
			DIE("call %ld: pending %d, completed %d times", i,
			    how[i], seen[i]);
	printf("stress-nproc: calls %ld pending %ld refused-eagain %ld "
	       "lost 0\n",
	       3 * calls + ELEMENTS, n_pending, n_refused);
	fflush(stdout);
	return 0;
}

int main(void)
{
	pid_t pid;

	calls = BASE_CALLS * stress_scale();
	seen = calloc((size_t)(3 * calls + ELEMENTS), 1);
	how = calloc((size_t)(3 * calls + ELEMENTS), 1);
	CHECK(seen && how);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child());
	stress_child_ok(stress_reap(pid, 250), "stress_nproc");
	return 0;
}
