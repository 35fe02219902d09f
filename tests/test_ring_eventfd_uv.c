/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a libuv loop waits on a ring's eventfd (issue 13, item 2):
 * a uv_poll_t on the eventfd, its callback reads it and consumes the ring
 * to empty, submitter threads on both CPUs feed the ring; 20,000
 * completions arrive, each exactly once, with a uv_timer as the bound
 * (its firing fails the test).
 */
#include <errno.h>
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
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>
#include <uv.h>

#include <syslet/syslet.h>

#define N 20000u
#define SUBMITTERS 2
#define BOUND_MS 30000

struct loop_state {
	struct syslet_ring *ring;
	int efd;
	uint32_t got;
	uint8_t *seen;
	bool timed_out;
	_Atomic uint32_t next;
	_Atomic int failed;
	uv_poll_t poll;
	uv_timer_t timer;
};

static void *submitter(void *arg)
{
	struct loop_state *s = arg;
	struct indirect_registers regs;
	union indirect_params p;
	uint32_t i;

	while ((i = atomic_fetch_add(&s->next, 1)) < N) {
		memset(&regs, 0, sizeof(regs));
		SYSLET__REG_NR(&regs) = SYS_getppid;
		memset(&p, 0, sizeof(p));
		p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)s->ring;
		p.syslet.caller_data = i;
		while (!(indirect(&regs, &p, sizeof(p), 0) == -1 &&
			 errno == ESYSLETPENDING)) {
			if (errno != EBUSY) {
				atomic_store(&s->failed, errno);
				return NULL;
			}
			sched_yield();
		}
	}
	return NULL;
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	struct loop_state *s = h->data;
	struct syslet_ring *ring = s->ring;
	uint64_t v;
	uint32_t hd, t;

	(void)events;
	if (status < 0) {
		atomic_store(&s->failed, -status);
		uv_stop(h->loop);
		return;
	}
	/* Read the eventfd, then consume until the ring is seen empty. */
	while (read(s->efd, &v, sizeof(v)) == sizeof(v))
		;
	while ((hd = syslet_ring_head(ring)) != ring->user_tail) {
		for (t = ring->user_tail; t != hd; t++) {
			uint64_t cd = syslet_ring_slot(ring, t)->caller_data;

			if (cd >= N || s->seen[cd]) {
				atomic_store(&s->failed, EPROTO);
				uv_stop(h->loop);
				return;
			}
			s->seen[cd] = 1;
			s->got++;
		}
		syslet_ring_advance(ring, hd - ring->user_tail);
	}
	if (s->got == N) {
		uv_poll_stop(&s->poll);
		uv_timer_stop(&s->timer);
	}
}

static void on_timeout(uv_timer_t *t)
{
	struct loop_state *s = t->data;

	s->timed_out = true;
	uv_poll_stop(&s->poll);
}

static void test_uv_loop(void **state)
{
	size_t size = (syslet_ring_size(128) + 63) / 64 * 64;
	struct loop_state s = { 0 };
	pthread_t sub[SUBMITTERS];
	uv_loop_t loop;
	cpu_set_t set;
	int i;

	(void)state;
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
	s.ring = aligned_alloc(64, size);
	s.seen = calloc(N, 1);
	assert_non_null(s.ring);
	assert_non_null(s.seen);
	assert_int_equal(syslet_ring_init(s.ring, 128), 0);
	s.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(s.efd >= 0);
	assert_int_equal(syslet_ring_eventfd(s.ring, s.efd), 0);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(uv_poll_init(&loop, &s.poll, s.efd), 0);
	assert_int_equal(uv_timer_init(&loop, &s.timer), 0);
	s.poll.data = &s;
	s.timer.data = &s;
	assert_int_equal(uv_poll_start(&s.poll, UV_READABLE, on_readable), 0);
	assert_int_equal(uv_timer_start(&s.timer, on_timeout, BOUND_MS, 0), 0);
	for (i = 0; i < SUBMITTERS; i++) {
		assert_int_equal(pthread_create(&sub[i], NULL, submitter, &s),
				 0);
		CPU_ZERO(&set);
		CPU_SET(i % 2, &set);
		(void)pthread_setaffinity_np(sub[i], sizeof(set), &set);
	}
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	for (i = 0; i < SUBMITTERS; i++)
		assert_int_equal(pthread_join(sub[i], NULL), 0);
	if (s.timed_out)
		fail_msg("libuv loop: %u of %u completions in %d ms", s.got, N,
			 BOUND_MS);
	assert_int_equal(atomic_load(&s.failed), 0);
	assert_int_equal(s.got, N);
	assert_int_equal(syslet_ring_eventfd(s.ring, -1), 0);
	uv_close((uv_handle_t *)&s.poll, NULL);
	uv_close((uv_handle_t *)&s.timer, NULL);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	close(s.efd);
	free(s.seen);
	free(s.ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uv_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
