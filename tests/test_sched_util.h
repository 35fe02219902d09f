/* SPDX-License-Identifier: MIT */
/*
 * SCHED_DEADLINE for the tests (test_interrupted_init.c, test_realtime_callers.c):
 * the attributes sched_setattr(2) and sched_getattr(2) take (no glibc
 * wrapper and no type before 2.41), a task made DEADLINE and its
 * attributes read. Every test's DEADLINE thread has a 10 ms deadline and
 * period; the runtime and the flags are the caller's. No shared state.
 */
#ifndef SYSLET_TEST_SCHED_UTIL_H
#define SYSLET_TEST_SCHED_UTIL_H

#include <linux/sched.h> /* SCHED_DEADLINE, SCHED_FLAG_RESET_ON_FORK */
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define DL_PERIOD_NS 10000000ull /* deadline and period of every test */

struct dl_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

/* Task @tid (0: the calling thread) DEADLINE with @flags: 0, else -1. */
static inline int dl_set(pid_t tid, uint64_t flags, uint64_t runtime_ns)
{
	struct dl_attr a = { .size = sizeof(a),
			     .policy = SCHED_DEADLINE,
			     .flags = flags,
			     .runtime = runtime_ns,
			     .deadline = DL_PERIOD_NS,
			     .period = DL_PERIOD_NS };

	return (int)syscall(SYS_sched_setattr, tid, &a, 0);
}

/* Task @tid's (0: the calling thread's) attributes into @a: 0, else -1. */
static inline int dl_get(pid_t tid, struct dl_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	return (int)syscall(SYS_sched_getattr, tid, a, sizeof(*a), 0);
}

#endif
