/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a notifier storm (SPEC 4.4). Every pending call has a
 * notifier; a third of them end with a raw syscall(SYS_exit, 0) as 2007
 * programs did, a third return, a third leave through
 * syslet_notify_exit(). All notifiers share two stacks (one sp each, as
 * 2007 clients shared one small stack): two notifiers on one sp must never
 * run at once. Every completion is posted exactly once before its
 * notifier runs, every notifier runs exactly once and sees its completion
 * the pool replaces the exited workers (calls after the storm still
 * complete) and syslet_drain() returns. With argument "identity", each
 * notifier must also find its own completion through
 * syslet_current_completion() although the program consumes completions
 * (and the library reuses their slots) while notifiers run.
 *
 * Shared state: ran[] and busy[] are atomics written by notifiers on
 * workers; seen[] only by main. ran[] uses release in the notifier and
 * acquire in main so the notifier's checks are visible to main.
 */
#include <pthread.h>

#include "stress.h"

#define BASE_CALLS 6000
#define NSTACKS 2
#define STACK_BYTES (256 * 1024)
#define ELEMENTS 256

static long calls;
static int identity;
static _Atomic long n_ran;
static _Atomic uint8_t *ran;
static _Atomic int busy[NSTACKS];
static _Atomic uint64_t n_overlap, n_bad_current, n_exits;
static char *stacks;

static int stack_of(const void *p)
{
	const char *c = p;

	if (c < stacks || c >= stacks + (size_t)NSTACKS * STACK_BYTES)
		return -1;
	return (int)((size_t)(c - stacks) / STACK_BYTES);
}

static void notifier(void)
{
	struct syslet_completion *c = syslet_current_completion();
	int here = 0, s = stack_of(&here);
	uint64_t d;

	if (s < 0) {
		atomic_fetch_add_explicit(&n_bad_current, 1,
					  memory_order_relaxed);
		syscall(SYS_exit, 0);
	}
	/* acq_rel: a second notifier on this stack must see the first's mark */
	if (atomic_fetch_add_explicit(&busy[s], 1, memory_order_acq_rel))
		atomic_fetch_add_explicit(&n_overlap, 1, memory_order_relaxed);
	/* how this notifier ends: a third of each kind */
	d = (uint64_t)atomic_fetch_add_explicit(&n_ran, 1,
						memory_order_relaxed);
	if (!c) {
		atomic_fetch_add_explicit(&n_bad_current, 1,
					  memory_order_relaxed);
		d = 0;
	} else if (identity) {
		/*
		 * The program consumes completions meanwhile: this must be
		 * the library's copy, not the ring slot (which it may reuse).
		 */
		d = c->caller_data;
		if ((int64_t)d < 0 || (long)d >= calls || c->status != 0) {
			atomic_fetch_add_explicit(&n_bad_current, 1,
						  memory_order_relaxed);
			d = 0;
		}
	}
	/* release: main reads ran[] with acquire after the ring says done */
	if (identity)
		atomic_fetch_add_explicit(&ran[d], 1, memory_order_release);
	atomic_fetch_sub_explicit(&busy[s], 1, memory_order_release);
	switch (d % 3) {
	case 0:
		atomic_fetch_add_explicit(&n_exits, 1, memory_order_relaxed);
		syscall(SYS_exit, 0);
		break;
	case 1:
		syslet_notify_exit();
	default:
		return;
	}
}

/* 0 once pending, -EBUSY when the ring is full (the caller must reap). */
static int submit(struct syslet_ring *r, uint64_t data)
{
	static const struct timespec us = { 0, 1000 };
	struct indirect_registers regs;
	union indirect_params p;

	FILL_IN(regs, SYS_nanosleep, &us, NULL);
	stress_params(&p, r, data);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(stacks + (data % NSTACKS +
							    1) * STACK_BYTES);
	for (;;) {
		errno = 0;
		if (indirect(&regs, &p, sizeof(p), 0) == -1 &&
		    errno == ESYSLETPENDING)
			return 0;
		if (errno == EBUSY)
			return -EBUSY;
		if (stress_faulty() && (errno == EAGAIN || errno == ENOMEM)) {
			sched_yield();
			continue;
		}
		DIE("submit %llu: errno %d", (unsigned long long)data, errno);
	}
}

/* Take what the ring holds; returns how many. */
static long reap(struct syslet_ring *r, uint8_t *seen, int block)
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
		uint64_t d = syslet_ring_slot(r, i)->caller_data;

		CHECK(d < (uint64_t)calls);
		if (seen[d]++)
			DIE("completion %llu twice", (unsigned long long)d);
	}
	syslet_ring_advance(r, head - tail);
	return (long)(head - tail);
}

static void *drainer(void *arg)
{
	(void)arg;
	while (syslet_drain())
		CHECK(errno == EINTR);
	return NULL;
}

int main(int argc, char **argv)
{
	struct syslet_ring *r = stress_ring(ELEMENTS);
	uint8_t *seen;
	struct timespec limit;
	long i, got = 0;
	pthread_t d;

	identity = argc > 1 && !strcmp(argv[1], "identity");
	calls = BASE_CALLS * stress_scale();
	stress_watchdog("stress_notify", (unsigned int)(300 * stress_scale()));
	seen = calloc((size_t)calls, 1);
	ran = calloc((size_t)calls, 1);
	stacks = aligned_alloc(4096, (size_t)NSTACKS * STACK_BYTES);
	CHECK(seen && ran && stacks);
	for (i = 0; i < calls; i++) {
		while (submit(r, (uint64_t)i))
			got += reap(r, seen, 1);
		got += reap(r, seen, 0);
	}
	while (got < calls)
		got += reap(r, seen, 1);
	CHECK(pthread_create(&d, NULL, drainer, NULL) == 0);
	clock_gettime(CLOCK_REALTIME, &limit);
	limit.tv_sec += 30;
	if (pthread_timedjoin_np(d, NULL, &limit))
		DIE("syslet_drain() still waiting 30 s after the last "
		    "completion (a notifier's SYS_exit not accounted?)");
	for (i = 0; i < calls; i++) {
		CHECK(seen[i] == 1);
		/* acquire: pairs with the notifier's release */
		if (identity &&
		    atomic_load_explicit(&ran[i], memory_order_acquire) != 1)
			DIE("notifier %ld ran %d times", i,
			    (int)atomic_load(&ran[i]));
	}
	if (atomic_load(&n_ran) != calls)
		DIE("%ld notifiers ran for %ld calls", atomic_load(&n_ran),
		    calls);
	if (atomic_load(&n_overlap))
		DIE("%llu notifiers ran on a stack already in use",
		    (unsigned long long)atomic_load(&n_overlap));
	CHECK(atomic_load(&n_bad_current) == 0);
	printf("stress-notify: calls %ld notifiers %ld sys-exit %llu "
	       "overlaps 0 lost 0\n",
	       calls, calls, (unsigned long long)atomic_load(&n_exits));
	free(seen);
	free((void *)ran);
	free(stacks);
	free(r);
	return 0;
}
