/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a ring's side state is reclaimed when nothing holds it and
 * made again on the next use (issue 10, item 5), attacked from outside:
 * posters on both CPUs whose ring goes idle between almost every call (a
 * reserve racing with the last release), get/put churn on other rings of
 * the same buckets, rings freed and made again at the same address while
 * idle (a new ring never inherits counts), an eventfd attached, replaced
 * and detached while posters post (a detached descriptor is never written
 * again), and fork with calls pending and an eventfd attached.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

#define WAIT_SEC 20
#define POSTERS 4
#define RACE_POSTS 50000u
#define REUSE_ROUNDS 20000u
#define EFD_ROUNDS 2000u

static struct syslet_ring *new_ring(uint32_t elements)
{
	struct syslet_ring *ring = aligned_alloc(
		64, (syslet_ring_size(elements) + 63) & ~(size_t)63);

	assert_non_null(ring);
	memset(ring, 0xa5, syslet_ring_size(elements));
	assert_int_equal(syslet_ring_init(ring, elements), 0);
	return ring;
}

static void pin_self(int cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % (n > 0 ? n : 1), &set);
	/* Best effort: a smaller affinity mask only makes it gentler. */
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Bounded: true once @ring has no side state. */
static bool gone(struct syslet_ring *ring)
{
	time_t end = time(NULL) + WAIT_SEC;
	struct syslet__rstate *rs;

	while (syslet__ring_get(ring, false, &rs) == 0) {
		syslet__ring_put(rs);
		if (time(NULL) > end)
			return false;
		sched_yield();
	}
	return true;
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/* ---- reserve racing with the last release ------------------------------ */

struct race {
	struct syslet_ring *ring;
	_Atomic uint32_t next;
	_Atomic int err;
	_Atomic int stop;
};

struct poster {
	pthread_t thread;
	struct race *race;
	int cpu;
};

static void *poster(void *arg)
{
	struct poster *p = arg;
	struct race *r = p->race;
	struct syslet__rstate *rs;
	uint32_t i;
	int ret;

	pin_self(p->cpu);
	while ((i = atomic_fetch_add(&r->next, 1)) < RACE_POSTS) {
		struct syslet__cnode n = { .status = i, .caller_data = i };

		while ((ret = syslet__ring_reserve(r->ring, &rs)) == -EBUSY)
			sched_yield();
		if (ret) {
			atomic_store(&r->err, ret);
			return NULL;
		}
		/* Every few calls, one given back: unreserve drops too. */
		if (i % 7 == 0) {
			syslet__ring_unreserve(rs);
			while ((ret = syslet__ring_reserve(r->ring, &rs)) ==
			       -EBUSY)
				sched_yield();
			if (ret) {
				atomic_store(&r->err, ret);
				return NULL;
			}
		}
		syslet__ring_post(rs, &n);
	}
	return NULL;
}

/* Other rings hashed anywhere: their states come and go all along. */
static void *churn(void *arg)
{
	struct race *r = arg;
	struct syslet__rstate *rs;
	uintptr_t a;

	pin_self(1);
	for (a = 0; !atomic_load(&r->stop); a = (a + 1) % 8192) {
		if (syslet__ring_get(
			    (struct syslet_ring *)(0x7f0000000000ull + a * 64),
			    true, &rs)) {
			atomic_store(&r->err, -ENOMEM);
			return NULL;
		}
		syslet__ring_put(rs);
	}
	return NULL;
}

static void test_reserve_vs_release(void **state)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	struct race r = { .ring = new_ring(2) };
	struct poster p[POSTERS];
	uint8_t *seen = calloc(RACE_POSTS, 1);
	uint32_t got = 0, t = 0;
	pthread_t ch;
	int i;

	(void)state;
	assert_non_null(seen);
	assert_int_equal(pthread_create(&ch, NULL, churn, &r), 0);
	for (i = 0; i < POSTERS; i++) {
		p[i].race = &r;
		p[i].cpu = i;
		assert_int_equal(
			pthread_create(&p[i].thread, NULL, poster, &p[i]), 0);
	}
	while (got < RACE_POSTS) {
		struct syslet_completion *c;

		if (syslet_ring_head(r.ring) == t &&
		    syslet_ring_wait_timeout(r.ring, t, &limit))
			fail_msg("%u of %u: %s", got, RACE_POSTS,
				 strerror(errno));
		c = syslet_ring_slot(r.ring, t);
		assert_true(c->caller_data < RACE_POSTS);
		assert_int_equal(c->status, c->caller_data);
		assert_false(seen[c->caller_data]);
		seen[c->caller_data] = 1;
		got++;
		t++;
		syslet_ring_advance(r.ring, 1);
	}
	for (i = 0; i < POSTERS; i++)
		assert_int_equal(pthread_join(p[i].thread, NULL), 0);
	atomic_store(&r.stop, 1);
	assert_int_equal(pthread_join(ch, NULL), 0);
	assert_int_equal(atomic_load(&r.err), 0);
	assert_true(gone(r.ring));
	free(seen);
	free(r.ring);
}

/* ---- a ring freed and made again at the same address, while idle ----- */

struct remote {
	pthread_t thread;
	struct syslet__rstate *_Atomic rs; /* main -> poster: post it */
	_Atomic int stop;
};

static void *remote_post(void *arg)
{
	struct remote *r = arg;
	struct syslet__rstate *rs;

	pin_self(1);
	while (!atomic_load(&r->stop)) {
		rs = atomic_exchange(&r->rs, NULL);
		if (!rs) {
			sched_yield();
			continue;
		}
		syslet__ring_post(rs, &(struct syslet__cnode){ .status = 5 });
	}
	return NULL;
}

static void test_reuse_same_address(void **state)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	size_t size = syslet_ring_size(8);
	char *mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	struct remote r = { 0 };
	struct syslet__rstate *rs;
	uint32_t i, start, el;

	(void)state;
	assert_non_null(mem);
	pin_self(0);
	assert_int_equal(pthread_create(&r.thread, NULL, remote_post, &r), 0);
	for (i = 0; i < REUSE_ROUNDS; i++) {
		/* A new ring: other size, other start, garbage slots. */
		el = 1u << (i % 4);
		start = i * 2654435761u;
		memset(mem, (int)i, size);
		assert_int_equal(syslet_ring_init(ring, el), 0);
		ring->kernel_head = start;
		ring->user_tail = start;
		/* Fill it: exactly @el reservations fit, whatever came before. */
		assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
		atomic_store(&r.rs, rs);
		if (syslet_ring_wait_timeout(ring, start, &limit))
			fail_msg("round %u: %s", i, strerror(errno));
		assert_int_equal(syslet_ring_head(ring), start + 1);
		assert_int_equal(syslet_ring_slot(ring, start)->status, 5);
		syslet_ring_advance(ring, 1);
		/* The poster may still hold its reference: el more fit. */
		for (uint32_t k = 0; k < el; k++)
			assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
		assert_int_equal(syslet__ring_reserve(ring, &rs), -EBUSY);
		for (uint32_t k = 0; k < el; k++)
			syslet__ring_unreserve(rs);
	}
	atomic_store(&r.stop, 1);
	assert_int_equal(pthread_join(r.thread, NULL), 0);
	assert_true(gone(ring));
	free(mem);
}

/* ---- eventfd attached, replaced, detached while posters post ---------- */

struct feeder {
	struct syslet_ring *ring;
	_Atomic int stop;
	_Atomic int err;
	pthread_t thread[2];
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	struct syslet__rstate *rs;
	int ret;

	while (!atomic_load(&f->stop)) {
		struct syslet__cnode n = { 0 };

		ret = syslet__ring_reserve(f->ring, &rs);
		if (ret == -EBUSY) {
			sched_yield();
			continue;
		}
		if (ret) {
			atomic_store(&f->err, ret);
			return NULL;
		}
		syslet__ring_post(rs, &n);
	}
	return NULL;
}

/* Consume until at least @n more completions were seen (bounded). */
static void consume_at_least(struct syslet_ring *ring, uint32_t n)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	uint32_t h, got = 0;

	while (got < n) {
		h = syslet_ring_head(ring);
		if (h == ring->user_tail) {
			if (syslet_ring_wait_timeout(ring, h, &limit))
				fail_msg("no completion: %s", strerror(errno));
			continue;
		}
		got += h - ring->user_tail;
		syslet_ring_advance(ring, h - ring->user_tail);
	}
}

static void drain_fd(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

static void test_efd_churn(void **state)
{
	struct feeder f = { .ring = new_ring(4) };
	int a = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int b = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint32_t i;
	int k;

	(void)state;
	assert_true(a >= 0 && b >= 0);
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&f.thread[k], NULL, feed, &f),
				 0);
	for (i = 0; i < EFD_ROUNDS; i++) {
		assert_int_equal(syslet_ring_eventfd(f.ring, a), 0);
		consume_at_least(f.ring, 4);
		if (i % 2) {
			/* Replaced: a is never written again. */
			assert_int_equal(syslet_ring_eventfd(f.ring, b), 0);
			drain_fd(a);
			consume_at_least(f.ring, 8);
			assert_false(readable(a));
			assert_int_equal(syslet_ring_eventfd(f.ring, -1), 0);
			drain_fd(b);
		} else {
			/* Detached: a is never written again. */
			assert_int_equal(syslet_ring_eventfd(f.ring, -1), 0);
			drain_fd(a);
			consume_at_least(f.ring, 8);
			assert_false(readable(a));
		}
	}
	atomic_store(&f.stop, 1);
	/* Posters stopped reserving: let the last posts through. */
	for (k = 0; k < 2; k++) {
		while (syslet_ring_head(f.ring) != f.ring->user_tail ||
		       pthread_tryjoin_np(f.thread[k], NULL) == EBUSY) {
			syslet_ring_advance(f.ring, syslet_ring_head(f.ring) -
							    f.ring->user_tail);
			sched_yield();
		}
	}
	assert_int_equal(atomic_load(&f.err), 0);
	/* Nothing attached, nothing pending: no state left. */
	assert_true(gone(f.ring));
	close(a);
	close(b);
	free(f.ring);
}

/* ---- fork: the child keeps nothing pending, keeps its eventfd --------- */

static void test_fork_efd(void **state)
{
	struct syslet_ring *ring = new_ring(4);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), st, i;
	struct syslet__rstate *rs[3];
	pid_t pid;

	(void)state;
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(syslet__ring_reserve(ring, &rs[i]), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct syslet__rstate *c;

		syslet__ring_atfork_child();
		for (i = 0; i < 4; i++)
			if (syslet__ring_reserve(ring, &c))
				_exit(1);
		syslet__ring_post(c, &(struct syslet__cnode){ 0 });
		if (!readable(efd))
			_exit(2);
		for (i = 0; i < 3; i++)
			syslet__ring_unreserve(c);
		if (syslet_ring_eventfd(ring, -1))
			_exit(3);
		/* Nothing pending, nothing attached: the state is gone. */
		_exit(syslet__ring_get(ring, false, &c) == -ENOENT ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (i = 0; i < 3; i++)
		syslet__ring_unreserve(rs[i]);
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	assert_true(gone(ring));
	close(efd);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve_vs_release),
		cmocka_unit_test(test_reuse_same_address),
		cmocka_unit_test(test_efd_churn),
		cmocka_unit_test(test_fork_efd),
	};

	alarm(600);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
