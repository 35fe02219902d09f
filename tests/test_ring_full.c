/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: ring side states have no fixed limit (issue 10, fault 9:
 * the old table of 262,144 states answered ENOMEM for good after that
 * many ring addresses). Held at once, 300,000 rings each get their own
 * state, found again; given back, every one is gone; a million distinct
 * ring addresses, each used by a pending call through indirect() and then
 * freed, all work with memory flat; a wait on a ring never used makes no
 * state; a ring freed and a new one made at the same address starts clean.
 */
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

#define HELD 300000u
#define MILLION 1000000u
#define BATCH 64u
#define BLOCK 4096u
/* Growth of the resident set allowed over the million rings. */
#define RSS_SLACK_KB 8192
#define WAIT_SEC 10

/* Rings are looked up by address only: these are never dereferenced. */
static struct syslet_ring *fake(uint32_t i)
{
	return (struct syslet_ring *)(uintptr_t)(0x100000000ull +
						 (uint64_t)i * 64);
}

/* A ring's bytes, rounded up for aligned_alloc(). */
static size_t bytes(uint32_t elements)
{
	return (syslet_ring_size(elements) + 63) & ~(size_t)63;
}

/*
 * Under ASan freed memory sits in a quarantine, and TSan's allocator and
 * shadow grow too: the resident set grows whatever the library does, so
 * the bound is only checked in the other builds.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif

/*
 * The heap in use, in kB: the side states are malloc'ed. Unlike RSS it
 * leaves out worker stacks, whose number follows the load of the machine
 * (the pool grows for calls that waited).
 */
static long heap_kb(void)
{
	struct mallinfo2 m = mallinfo2();

	return (long)((m.uordblks + m.hblkhd) / 1024);
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	assert_true(kb > 0);
	return kb;
}

static void test_many_held(void **state)
{
	struct syslet__rstate **got = calloc(HELD, sizeof(*got));
	struct syslet__rstate *rs;
	uint32_t i;

	(void)state;
	assert_non_null(got);
	for (i = 0; i < HELD; i++)
		assert_int_equal(syslet__ring_get(fake(i), true, &got[i]), 0);
	for (i = 0; i < HELD; i++) {
		assert_int_equal(syslet__ring_get(fake(i), false, &rs), 0);
		assert_ptr_equal(rs, got[i]);
		assert_ptr_equal(syslet__ring_of(rs), fake(i));
		syslet__ring_put(rs);
	}
	for (i = 0; i < HELD; i++)
		syslet__ring_put(got[i]);
	for (i = 0; i < HELD; i++)
		assert_int_equal(syslet__ring_get(fake(i), false, &rs),
				 -ENOENT);
	free(got);
}

/*
 * True once @ring has no side state, within WAIT_SEC: a worker gives its
 * reference back just after the completion shows.
 */
static bool gone(struct syslet_ring *ring)
{
	struct syslet__rstate *rs;
	time_t end = time(NULL) + WAIT_SEC;

	while (syslet__ring_get(ring, false, &rs) == 0) {
		syslet__ring_put(rs);
		if (time(NULL) > end)
			return false;
		sched_yield();
	}
	return true;
}

/* Submit one call through indirect() on @ring; it goes pending. */
static void submit(struct syslet_ring *ring, uint64_t cd)
{
	struct indirect_registers regs;
	union indirect_params p;
	long r;

	memset(&regs, 0, sizeof(regs));
	SYSLET__REG_NR(&regs) = SYS_getppid;
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = cd;
	/* Async class: always a worker, always pending. */
	r = indirect(&regs, &p, sizeof(p), 0);
	assert_int_equal(r, -1);
	assert_int_equal(errno, ESYSLETPENDING);
}

/* Wait for and consume the completion of submit(@ring, @cd). */
static void reap(struct syslet_ring *ring, uint64_t cd)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };

	if (syslet_ring_wait_timeout(ring, 0, &limit))
		fail_msg("no completion: %s", strerror(errno));
	assert_int_equal(syslet_ring_head(ring), 1);
	assert_int_equal(ring->comp[0].caller_data, cd);
	assert_int_equal((long)ring->comp[0].status, getppid());
	syslet_ring_advance(ring, 1);
}

static void one_call(struct syslet_ring *ring, uint64_t cd)
{
	submit(ring, cd);
	reap(ring, cd);
}

/*
 * Rings at a million distinct addresses, BATCH in flight at a time, each
 * freed (its block given back to malloc) once its call completed.
 */
static void test_million(void **state)
{
	size_t size = syslet_ring_size(1);
	char *arena = NULL;
	struct syslet_ring *ring = NULL;
	long before = 0, after;
	uint32_t i, j;

	(void)state;
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
	for (i = 0; i < MILLION; i += BATCH) {
		if (i % BLOCK == 0) {
			free(arena);
			/* A new block: its addresses shift each time. */
			arena = malloc(size * BLOCK + (i / BLOCK % 64) * 64);
			assert_non_null(arena);
		}
		for (j = 0; j < BATCH; j++) {
			ring = (struct syslet_ring *)(arena +
						      (i + j) % BLOCK * size);
			assert_int_equal(syslet_ring_init(ring, 1), 0);
			submit(ring, i + j);
		}
		for (j = 0; j < BATCH; j++)
			reap((struct syslet_ring *)(arena +
						    (i + j) % BLOCK * size),
			     i + j);
		if (!before && i >= MILLION / 10)
			before = heap_kb();
	}
	after = heap_kb();
	printf("# heap in use %ld kB at 100k rings, %ld kB at 1M (rss %ld "
	       "kB)\n",
	       before, after, rss_kb());
	if (RSS_CHECKED)
		assert_true(after - before < RSS_SLACK_KB);
	/* The last ring is idle: it has no state left. */
	assert_true(gone(ring));
	free(arena);
}

/* Fake, never-dereferenced addresses: a million states come and go. */
static void test_million_states(void **state)
{
	struct syslet__rstate *rs;
	long before = rss_kb();
	uint32_t i;

	(void)state;
	for (i = 0; i < MILLION; i++) {
		assert_int_equal(syslet__ring_get(fake(HELD + i), true, &rs),
				 0);
		syslet__ring_put(rs);
	}
	if (RSS_CHECKED)
		assert_true(rss_kb() - before < RSS_SLACK_KB);
}

static void test_wait_makes_nothing(void **state)
{
	const struct timespec tick = { .tv_nsec = 1000000 };
	struct syslet_ring *ring = aligned_alloc(64, bytes(4));
	struct syslet__rstate *rs;

	(void)state;
	assert_non_null(ring);
	assert_int_equal(syslet_ring_init(ring, 4), 0);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &tick), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_int_equal(syslet__ring_get(ring, false, &rs), -ENOENT);
	/* Detaching an eventfd that was never attached makes nothing. */
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	assert_int_equal(syslet__ring_get(ring, false, &rs), -ENOENT);
	free(ring);
}

/*
 * The program frees an idle ring and makes a new one, smaller, at the same
 * address: it starts from its own head, with all its slots free.
 */
static void test_reuse_address(void **state)
{
	void *mem = aligned_alloc(64, bytes(8));
	struct syslet_ring *ring = mem;
	struct syslet__rstate *rs;
	uint32_t i;

	(void)state;
	assert_non_null(mem);
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
	assert_int_equal(syslet_ring_init(ring, 8), 0);
	for (i = 0; i < 5; i++) {
		assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
		syslet__ring_post(rs,
				  &(struct syslet__cnode){ .caller_data = i });
	}
	assert_int_equal(syslet_ring_head(ring), 5);
	/* Not consumed: the program drops the ring (idle) and reuses it. */
	memset(mem, 0xa5, syslet_ring_size(8));
	assert_int_equal(syslet_ring_init(ring, 2), 0);
	one_call(ring, 77);
	assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	assert_int_equal(syslet__ring_reserve(ring, &rs), 0);
	assert_int_equal(syslet__ring_reserve(ring, &rs), -EBUSY);
	syslet__ring_unreserve(rs);
	syslet__ring_unreserve(rs);
	assert_true(gone(ring));
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_held),
		cmocka_unit_test(test_million_states),
		cmocka_unit_test(test_wait_makes_nothing),
		cmocka_unit_test(test_reuse_address),
		cmocka_unit_test(test_million),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
