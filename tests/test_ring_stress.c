/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the completion writer under contention: 8 producer threads
 * x 100,000 completions (reserve, then post, as the pool does) into rings
 * of 4, 64 and 1024 whose indices wrap u32 (they start at 0xfffffff0); a
 * consumer thread that sleeps in syslet_ring_wait_timeout() checks that
 * every completion arrives exactly once, in each producer's order, fully
 * written below kernel_head. Then a program that keeps exactly `elements`
 * calls in flight and resubmits only after consuming must never see EBUSY;
 * a ring of one ping-pongs 20,000 completions into a consumer that sleeps
 * for each (no lost wake-up); 8 threads create the side state of the same
 * 4096 rings at once and all get the same one.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

#define NPROD 8
#define PER_PROD 100000u
#define START 0xfffffff0u
#define POISON UINT64_MAX
/* Bounded waits: a stuck ring fails the test instead of hanging it. */
#define WAIT_SEC 30

static uint64_t status_of(uint64_t cd)
{
	return cd * 0x9e3779b97f4a7c15ull ^ 0x5bd1e9955bd1e995ull;
}

static struct syslet_ring *new_ring(uint32_t elements)
{
	struct syslet_ring *ring = aligned_alloc(
		64, (syslet_ring_size(elements) + 63) & ~(size_t)63);
	uint32_t i;

	assert_non_null(ring);
	assert_int_equal(syslet_ring_init(ring, elements), 0);
	ring->kernel_head = START;
	ring->user_tail = START;
	for (i = 0; i < elements; i++) {
		ring->comp[i].status = 0;
		ring->comp[i].caller_data = POISON;
	}
	return ring;
}

struct producer {
	pthread_t thread;
	struct syslet_ring *ring;
	uint32_t id;
	_Atomic int error;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct syslet__rstate *rs;
	uint32_t i, last = 0;
	int ret;

	for (i = 0; i < PER_PROD; i++) {
		struct syslet__cnode n = { 0 };

		while ((ret = syslet__ring_reserve(p->ring, &rs)) == -EBUSY)
			sched_yield();
		if (ret) {
			atomic_store(&p->error, ret);
			return NULL;
		}
		n.caller_data = (uint64_t)p->id << 32 | i;
		n.status = status_of(n.caller_data);
		syslet__ring_post(rs, &n);
		/* Posted synchronously: each lands after the one before. */
		if (i && (int32_t)(n.index - last) <= 0) {
			atomic_store(&p->error, -EPROTO);
			return NULL;
		}
		last = n.index;
	}
	return NULL;
}

static void stress(uint32_t elements)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	struct syslet_ring *ring = new_ring(elements);
	struct producer p[NPROD];
	uint32_t next[NPROD] = { 0 };
	uint64_t consumed = 0, total = (uint64_t)NPROD * PER_PROD;
	uint32_t tail = START, head;
	int i;

	memset(p, 0, sizeof(p));
	for (i = 0; i < NPROD; i++) {
		p[i].ring = ring;
		p[i].id = (uint32_t)i;
		assert_int_equal(
			pthread_create(&p[i].thread, NULL, produce, &p[i]), 0);
	}
	while (consumed < total) {
		head = syslet_ring_head(ring);
		if (head == tail) {
			if (syslet_ring_wait_timeout(ring, tail, &limit)) {
				fail_msg("wait: %s at %llu of %llu (e=%u)",
					 strerror(errno),
					 (unsigned long long)consumed,
					 (unsigned long long)total, elements);
			}
			continue;
		}
		assert_true(head - tail <= elements);
		for (; tail != head; tail++, consumed++) {
			struct syslet_completion *c =
				syslet_ring_slot(ring, tail);
			uint64_t cd = c->caller_data;
			uint32_t id = (uint32_t)(cd >> 32);

			assert_true(c->status == status_of(cd));
			assert_true(id < NPROD);
			/* Exactly once, and in each producer's order. */
			assert_int_equal((uint32_t)cd, next[id]);
			next[id]++;
			/* A slot published but not written would show this. */
			c->status = 0;
			c->caller_data = POISON;
		}
		syslet_ring_advance(ring, head - ring->user_tail);
	}
	for (i = 0; i < NPROD; i++) {
		assert_int_equal(pthread_join(p[i].thread, NULL), 0);
		assert_int_equal(atomic_load(&p[i].error), 0);
		assert_int_equal(next[i], PER_PROD);
	}
	assert_int_equal(syslet_ring_head(ring), (uint32_t)(START + total));
	free(ring);
}

static void test_stress_4(void **state)
{
	(void)state;
	stress(4);
}

static void test_stress_64(void **state)
{
	(void)state;
	stress(64);
}

static void test_stress_1024(void **state)
{
	(void)state;
	stress(1024);
}

/* ---- no spurious EBUSY ---------------------------------------------- */

#define NWORKERS 3
#define RESUBMITS 100000u

struct call {
	_Atomic int ready; /* main -> worker: post it */
	uint64_t cd;
	struct syslet__rstate *rs;
	struct syslet__cnode n;
};

struct depth_run {
	struct call *calls;
	uint32_t ncalls;
	_Atomic int stop;
};

struct worker {
	pthread_t thread;
	struct depth_run *run;
	uint32_t id;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct depth_run *run = w->run;
	unsigned int idle = 0;
	uint32_t j;

	while (!atomic_load_explicit(&run->stop, memory_order_relaxed)) {
		int found = 0;

		for (j = w->id; j < run->ncalls; j += NWORKERS) {
			struct call *c = &run->calls[j];

			if (!atomic_load_explicit(&c->ready,
						  memory_order_acquire))
				continue;
			atomic_store_explicit(&c->ready, 0,
					      memory_order_relaxed);
			c->n.caller_data = c->cd;
			c->n.status = status_of(c->cd);
			syslet__ring_post(c->rs, &c->n);
			found = 1;
		}
		if (found)
			idle = 0;
		else if (++idle > 16)
			sched_yield();
	}
	return NULL;
}

static void submit(struct syslet_ring *ring, struct call *c, uint64_t cd)
{
	/* Queue depth <= elements: this reservation must never fail. */
	assert_int_equal(syslet__ring_reserve(ring, &c->rs), 0);
	c->cd = cd;
	atomic_store_explicit(&c->ready, 1, memory_order_release);
}

static void queue_depth(uint32_t elements)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	struct syslet_ring *ring = new_ring(elements);
	struct depth_run run = { .ncalls = elements };
	struct worker w[NWORKERS];
	uint64_t seq = 0, done = 0;
	uint32_t tail = START, j;
	int i;

	run.calls = calloc(elements, sizeof(*run.calls));
	assert_non_null(run.calls);
	for (i = 0; i < NWORKERS; i++) {
		w[i].run = &run;
		w[i].id = (uint32_t)i;
		assert_int_equal(
			pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
	}
	for (j = 0; j < elements; j++)
		submit(ring, &run.calls[j], (uint64_t)j << 32 | seq++);
	while (done < RESUBMITS) {
		struct syslet_completion *c;
		uint64_t cd;

		if (syslet_ring_head(ring) == tail) {
			if (syslet_ring_wait_timeout(ring, tail, &limit))
				fail_msg("wait: %s", strerror(errno));
			continue;
		}
		c = syslet_ring_slot(ring, tail);
		cd = c->caller_data;
		assert_true(c->status == status_of(cd));
		j = (uint32_t)(cd >> 32);
		assert_true(j < elements);
		syslet_ring_advance(ring, 1);
		tail++;
		done++;
		/* Consumed one, so one more may go pending. */
		submit(ring, &run.calls[j], (uint64_t)j << 32 | seq++);
	}
	/* Drain the calls still in flight. */
	while (tail != START + (uint32_t)seq) {
		if (syslet_ring_head(ring) == tail &&
		    syslet_ring_wait_timeout(ring, tail, &limit))
			fail_msg("drain: %s", strerror(errno));
		tail = syslet_ring_head(ring);
		syslet_ring_advance(ring, tail - ring->user_tail);
	}
	atomic_store(&run.stop, 1);
	for (i = 0; i < NWORKERS; i++)
		assert_int_equal(pthread_join(w[i].thread, NULL), 0);
	free(run.calls);
	free(ring);
}

static void test_no_spurious_ebusy_4(void **state)
{
	(void)state;
	queue_depth(4);
}

static void test_no_spurious_ebusy_64(void **state)
{
	(void)state;
	queue_depth(64);
}

/* ---- ping-pong: every completion wakes a sleeping consumer ------------ */

#define PINGS 20000u

static void *ping(void *arg)
{
	struct syslet_ring *ring = arg;
	struct syslet__rstate *rs;
	uint32_t i;

	for (i = 0; i < PINGS; i++) {
		struct syslet__cnode n = { .caller_data = i };

		/* A ring of one: free again once the consumer took it. */
		while (syslet__ring_reserve(ring, &rs) == -EBUSY)
			sched_yield();
		n.status = status_of(i);
		syslet__ring_post(rs, &n);
	}
	return NULL;
}

/* No lost wake-up between the consumer's check and its sleep. */
static void test_ping_pong(void **state)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	struct syslet_ring *ring = new_ring(1);
	uint32_t tail = START, i;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, ping, ring), 0);
	for (i = 0; i < PINGS; i++) {
		struct syslet_completion *c;

		if (syslet_ring_wait_timeout(ring, tail, &limit))
			fail_msg("wait %u: %s", i, strerror(errno));
		assert_int_equal(syslet_ring_head(ring), tail + 1);
		c = syslet_ring_slot(ring, tail);
		assert_int_equal(c->caller_data, i);
		assert_true(c->status == status_of(i));
		syslet_ring_advance(ring, 1);
		tail++;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	free(ring);
}

/* ---- side state created by many threads at once ----------------------- */

#define RACERS 8
#define RACE_RINGS 4096u

struct racer {
	pthread_t thread;
	pthread_barrier_t *start;
	uint32_t id;
	struct syslet__rstate *got[RACE_RINGS];
	int err;
};

/* Addresses no real ring has: looked up, never dereferenced. */
static struct syslet_ring *race_ring(uint32_t i)
{
	return (struct syslet_ring *)(uintptr_t)(0x7e0000000000ull +
						 (uint64_t)i * 64);
}

static void *race(void *arg)
{
	struct racer *r = arg;
	uint32_t i, j;

	pthread_barrier_wait(r->start);
	for (i = 0; i < RACE_RINGS; i++) {
		/* Each racer walks the rings in its own order. */
		j = (i * 2654435761u + r->id * 977u) % RACE_RINGS;
		if (syslet__ring_get(race_ring(j), true, &r->got[j]))
			r->err = 1;
	}
	return NULL;
}

static void test_state_race(void **state)
{
	static struct racer r[RACERS];
	pthread_barrier_t start;
	struct syslet__rstate *rs;
	uint32_t i, j;

	(void)state;
	assert_int_equal(pthread_barrier_init(&start, NULL, RACERS), 0);
	for (i = 0; i < RACERS; i++) {
		r[i].start = &start;
		r[i].id = i;
		assert_int_equal(
			pthread_create(&r[i].thread, NULL, race, &r[i]), 0);
	}
	for (i = 0; i < RACERS; i++) {
		assert_int_equal(pthread_join(r[i].thread, NULL), 0);
		assert_int_equal(r[i].err, 0);
	}
	/* One state per ring, the same for every thread, and distinct. */
	for (j = 0; j < RACE_RINGS; j++) {
		assert_int_equal(syslet__ring_get(race_ring(j), false, &rs), 0);
		assert_ptr_equal(syslet__ring_of(rs), race_ring(j));
		for (i = 0; i < RACERS; i++)
			assert_ptr_equal(r[i].got[j], rs);
		if (j)
			assert_ptr_not_equal(r[0].got[j - 1], rs);
		syslet__ring_put(rs);
	}
	/* Every reference given back: every state is gone. */
	for (i = 0; i < RACERS; i++)
		for (j = 0; j < RACE_RINGS; j++)
			syslet__ring_put(r[i].got[j]);
	for (j = 0; j < RACE_RINGS; j++)
		assert_int_equal(syslet__ring_get(race_ring(j), false, &rs),
				 -ENOENT);
	pthread_barrier_destroy(&start);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress_4),
		cmocka_unit_test(test_stress_64),
		cmocka_unit_test(test_stress_1024),
		cmocka_unit_test(test_no_spurious_ebusy_4),
		cmocka_unit_test(test_no_spurious_ebusy_64),
		cmocka_unit_test(test_ping_pong),
		cmocka_unit_test(test_state_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
