/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * ring-bench: completions per second into one ring from 1, 2 and 4
 * producer threads (reserve, then post, as the pool does), with one
 * consumer thread, for ring.c's combining writer against a writer
 * serialized by one mutex (as the 2007 kernel serialized it). Not a test:
 * it prints figures.
 * Usage: ring-bench [completions per run] [elements] [runs] [spin|wait]
 *                   [only this many producers]
 * 0 producers: one thread reserves, posts and consumes (no contention).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "ring.h"

/* ---- the baseline: one mutex around reservation and posting ---------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t locked_reserved;
static _Atomic uint32_t locked_waiters;

static int locked_reserve(struct syslet_ring *ring)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if ((uint32_t)(ring->kernel_head -
		       atomic_load_explicit((_Atomic uint32_t *)&ring->user_tail,
					    memory_order_acquire)) +
		    locked_reserved >=
	    ring->elements)
		ret = -EBUSY;
	else
		locked_reserved++;
	pthread_mutex_unlock(&lock);
	return ret;
}

static void locked_post(struct syslet_ring *ring, struct syslet__cnode *n)
{
	uint32_t h;

	pthread_mutex_lock(&lock);
	h = ring->kernel_head;
	ring->comp[h & (ring->elements - 1)].status = n->status;
	ring->comp[h & (ring->elements - 1)].caller_data = n->caller_data;
	n->index = h;
	/* As ring.c: release the slot, then order before the waiters load. */
	atomic_exchange_explicit((_Atomic uint32_t *)&ring->kernel_head, h + 1,
				 memory_order_seq_cst);
	locked_reserved--;
	pthread_mutex_unlock(&lock);
	if (atomic_load_explicit(&locked_waiters, memory_order_seq_cst))
		syscall(SYS_futex, &ring->kernel_head, FUTEX_WAKE_PRIVATE,
			INT_MAX, NULL, NULL, 0);
}

static void locked_wait(struct syslet_ring *ring, uint32_t idx)
{
	atomic_fetch_add(&locked_waiters, 1);
	while (syslet_ring_head(ring) == idx)
		syscall(SYS_futex, &ring->kernel_head, FUTEX_WAIT_PRIVATE, idx,
			NULL, NULL, 0);
	atomic_fetch_sub(&locked_waiters, 1);
}

/* ---- the run ---------------------------------------------------------- */

/* 1: the consumer polls (sched_yield) instead of sleeping in a wait. */
static int spin_consumer;

struct run {
	struct syslet_ring *ring;
	int locked;
	uint64_t per_thread;
};

static void *produce(void *arg)
{
	struct run *r = arg;
	struct syslet__cnode n = { 0 };
	struct syslet__rstate *rs = NULL;
	uint64_t i;

	for (i = 0; i < r->per_thread; i++) {
		while (r->locked ? locked_reserve(r->ring) :
				   syslet__ring_reserve(r->ring, &rs))
			sched_yield();
		n.status = i;
		n.caller_data = i;
		if (r->locked)
			locked_post(r->ring, &n);
		else
			syslet__ring_post(rs, &n);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One thread reserves, posts and consumes: the uncontended cost. */
static double run_inline(int locked, uint64_t total, uint32_t elements)
{
	struct syslet_ring *ring = aligned_alloc(
		64, (syslet_ring_size(elements) + 63) & ~(size_t)63);
	struct syslet__cnode n = { 0 };
	struct syslet__rstate *rs = NULL;
	uint64_t i, sum = 0;
	double t0;

	if (!ring || syslet_ring_init(ring, elements))
		exit(1);
	t0 = now();
	for (i = 0; i < total; i++) {
		if (locked ? locked_reserve(ring) :
			     syslet__ring_reserve(ring, &rs))
			exit(1);
		n.caller_data = i;
		if (locked)
			locked_post(ring, &n);
		else
			syslet__ring_post(rs, &n);
		sum += syslet_ring_slot(ring, ring->user_tail)->caller_data;
		syslet_ring_advance(ring, 1);
	}
	t0 = now() - t0;
	if (sum != total * (total - 1) / 2)
		exit(1);
	free(ring);
	return (double)total / t0;
}

static double run(int nthreads, int locked, uint64_t total, uint32_t elements)
{
	struct run r = { .locked = locked };
	pthread_t t[4];
	uint64_t done = 0, sum = 0;
	uint32_t tail = 0, head;
	double t0;
	int i;

	if (!nthreads)
		return run_inline(locked, total, elements);
	r.per_thread = total / nthreads;
	r.ring = aligned_alloc(64,
			       (syslet_ring_size(elements) + 63) & ~(size_t)63);
	if (!r.ring || syslet_ring_init(r.ring, elements))
		exit(1);
	total = r.per_thread * nthreads;
	t0 = now();
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, produce, &r))
			exit(1);
	while (done < total) {
		head = syslet_ring_head(r.ring);
		if (head == tail) {
			if (spin_consumer)
				sched_yield();
			else if (locked)
				locked_wait(r.ring, tail);
			else if (syslet_ring_wait(r.ring, tail))
				exit(1);
			continue;
		}
		for (; tail != head; tail++, done++)
			sum += syslet_ring_slot(r.ring, tail)->caller_data;
		syslet_ring_advance(r.ring, head - r.ring->user_tail);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	t0 = now() - t0;
	if (sum != nthreads * (r.per_thread * (r.per_thread - 1) / 2)) {
		fprintf(stderr, "ring-bench: lost or doubled completions\n");
		exit(1);
	}
	free(r.ring);
	return (double)total / t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint32_t elements = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) :
				       1024;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	int only = argc > 5 ? atoi(argv[5]) : -1;
	const int threads[] = { 0, 1, 2, 4 };
	double c[32], m[32];
	size_t i;
	int k;

	spin_consumer = argc > 4 && argv[4][0] == 's';
	if (reps < 1 || reps > 32)
		return 1;
	printf("ring-bench: %llu completions per run, ring of %u, %d runs "
	       "each (interleaved), consumer %s, %ld CPUs\n",
	       (unsigned long long)total, elements, reps,
	       spin_consumer ? "polls" : "waits",
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("producers  combining M/s (median, best)  "
	       "mutex M/s (median, best)  median ratio\n");
	for (i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		if (only >= 0 && threads[i] != only)
			continue;
		for (k = 0; k < reps; k++) {
			c[k] = run(threads[i], 0, total, elements) / 1e6;
			m[k] = run(threads[i], 1, total, elements) / 1e6;
		}
		qsort(c, (size_t)reps, sizeof(c[0]), cmp);
		qsort(m, (size_t)reps, sizeof(m[0]), cmp);
		printf("%9d  %14.2f %6.2f  %20.2f %6.2f  %12.2f\n", threads[i],
		       c[reps / 2], c[reps - 1], m[reps / 2], m[reps - 1],
		       c[reps / 2] / m[reps / 2]);
	}
	return 0;
}
