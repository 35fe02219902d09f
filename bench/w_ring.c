/* SPDX-License-Identifier: MIT */
/*
 * ring-publish: completions per second into one ring from 1, 2 and 4
 * producer threads. libsyslet's own writer (src/ring.h; internal API,
 * hence the static library) in two forms: posts only, the slots reserved
 * before the run as indirect() reserves them at submission (the completion
 * path: the row ratios are taken against), and reserve + post both timed.
 * Against them: a ring whose writers take one mutex per completion, as the
 * 2007 kernel's did (no reservation: it overwrote unconsumed slots), and a
 * mutex ring that keeps libsyslet's no-overwrite rule (lock to reserve,
 * lock to post), which splits the cost of the rule from that of the lock.
 *
 * The ring is big enough for a whole run, so no consumer runs while the
 * producers do: the figure is the writers' cost alone. Between runs the
 * main thread checks every completion arrived and consumes them.
 * Shared: the ring (writers: the producers, through the code under test)
 * and the start flag (main writes it, release; producers read, acquire).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syslet/syslet.h>

#include "bench.h"
#include "ring.h"

#define MAX_PRODUCERS 4

enum writer {
	LIB_POST, /* slots reserved before the run: the completion path */
	LIB_RESERVE_POST, /* reserve and post, both timed */
	MUTEX_2007, /* one lock per completion, overwrites when full */
	MUTEX_RESERVE, /* libsyslet's guarantee with a lock: two per call */
};

struct rp_arg {
	unsigned int producers;
	enum writer writer;
	uint32_t elements;
};

struct rp_st;

struct producer {
	struct rp_st *s;
	unsigned int id;
	uint64_t first, count; /* caller_data first..first+count-1 */
	pthread_t th;
	int err;
	/*
	 * Reused for every post: once syslet__ring_post() returns, the node
	 * is the poster's again (a worker frees its job right after), and a
	 * worker's job is hot in its cache, as this node is. Aligned: no
	 * false sharing between producers.
	 */
	_Alignas(64) struct syslet__cnode node;
};

struct rp_st {
	const struct rp_arg *a;
	struct syslet_ring *ring;
	pthread_mutex_t lock; /* the mutex rings' */
	uint32_t reserved; /* MUTEX_RESERVE's, under lock */
	struct syslet__rstate *rs; /* LIB_POST: the ring's, reserved ahead */
	_Atomic int go;
	struct producer p[MAX_PRODUCERS];
};

/* As libsyslet's reserve (SPEC 4.2), under the lock: 0 or -EBUSY. */
static int mutex_reserve(struct rp_st *s)
{
	struct syslet_ring *ring = s->ring;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if ((uint32_t)(ring->kernel_head - ring->user_tail) + s->reserved >=
	    ring->elements)
		ret = -EBUSY;
	else
		s->reserved++;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static void mutex_post(struct rp_st *s, uint64_t v)
{
	struct syslet_ring *ring = s->ring;
	struct syslet_completion *c;
	uint32_t h;

	pthread_mutex_lock(&s->lock);
	if (s->a->writer == MUTEX_RESERVE)
		s->reserved--;
	h = ring->kernel_head;
	c = syslet_ring_slot(ring, h);
	c->status = v;
	c->caller_data = v;
	/* release: the slot is written before the program sees the head */
	atomic_store_explicit((_Atomic uint32_t *)&ring->kernel_head, h + 1,
			      memory_order_release);
	pthread_mutex_unlock(&s->lock);
}

static void *producer(void *arg)
{
	struct producer *p = arg;
	struct rp_st *s = p->s;
	uint64_t i;

	/* acquire: the run's setup is seen before the first post */
	while (!atomic_load_explicit(&s->go, memory_order_acquire))
		sched_yield();
	for (i = p->first; i < p->first + p->count; i++) {
		struct syslet__cnode *n = &p->node;
		struct syslet__rstate *rs = s->rs;
		int ret = 0;

		switch (s->a->writer) {
		case LIB_POST:
			break;
		case LIB_RESERVE_POST:
			ret = syslet__ring_reserve(s->ring, &rs);
			break;
		case MUTEX_RESERVE:
			ret = mutex_reserve(s);
			/* fall through */
		case MUTEX_2007:
			if (!ret)
				mutex_post(s, i);
			break;
		}
		if (ret) {
			p->err = ret;
			break;
		}
		if (s->a->writer == LIB_POST ||
		    s->a->writer == LIB_RESERVE_POST) {
			n->status = i;
			n->caller_data = i;
			syslet__ring_post(rs, n);
		}
	}
	return NULL;
}

static int rp_setup(struct bench_contender *c, void **state,
		    struct bench_run *r)
{
	struct rp_st *s = calloc(1, sizeof(*s));

	(void)r;
	if (!s)
		return -ENOMEM;
	s->a = c->arg;
	/* aligned_alloc: the size a multiple of the alignment */
	s->ring = aligned_alloc(64, (syslet_ring_size(s->a->elements) + 63) &
					    ~(size_t)63);
	if (!s->ring) {
		free(s);
		return -ENOMEM;
	}
	/* fault every page in before anything is timed */
	memset(s->ring, 0, syslet_ring_size(s->a->elements));
	syslet_ring_init(s->ring, s->a->elements);
	pthread_mutex_init(&s->lock, NULL);
	*state = s;
	return 0;
}

static void rp_teardown(void *state)
{
	struct rp_st *s = state;

	pthread_mutex_destroy(&s->lock);
	free(s->ring);
	free(s);
}

/* Every value 0..ops-1 arrived exactly once: count them, consume them. */
static void rp_check(struct rp_st *s, struct bench_run *r)
{
	struct syslet_ring *ring = s->ring;
	uint32_t tail = ring->user_tail, head = syslet_ring_head(ring);
	uint64_t n = (uint32_t)(head - tail), sum = 0, i;

	if (n != r->ops) {
		bench_fail(r, "%llu completions for %llu posts",
			   (unsigned long long)n, (unsigned long long)r->ops);
	}
	for (i = 0; i < n; i++) {
		struct syslet_completion *c = syslet_ring_slot(ring, tail + i);

		if (c->status != c->caller_data || c->status >= r->ops)
			bench_fail(r, "completion %llu garbled",
				   (unsigned long long)i);
		else
			sum += c->status;
	}
	if (n == r->ops && sum == r->ops * (r->ops - 1) / 2 && !r->err[0])
		r->done = r->ops;
	else
		bench_fail(r, "completions lost or duplicated");
	syslet_ring_advance(ring, (uint32_t)n);
}

static void run_rp(void *state, struct bench_run *r)
{
	struct rp_st *s = state;
	unsigned int np = s->a->producers, i, started = 0;
	uint64_t t0, per = r->ops / np;

	atomic_store_explicit(&s->go, 0, memory_order_relaxed);
	if (s->a->writer == LIB_POST) {
		/* what indirect() does at submission, untimed here */
		for (i = 0; i < r->ops; i++) {
			int ret = syslet__ring_reserve(s->ring, &s->rs);

			if (ret) {
				bench_fail(r, "syslet__ring_reserve: %s",
					   strerror(-ret));
				while (i--)
					syslet__ring_unreserve(s->rs);
				return;
			}
		}
	}
	for (i = 0; i < np; i++) {
		struct producer *p = &s->p[i];
		int e;

		p->s = s;
		p->id = i;
		p->first = per * i;
		p->count = i + 1 < np ? per : r->ops - per * i;
		p->err = 0;
		e = pthread_create(&p->th, NULL, producer, p);
		if (e) {
			bench_fail(r, "pthread_create: %s", strerror(e));
			break;
		}
		started++;
	}
	t0 = bench_start(r);
	/* release: the counts above are set before any post */
	atomic_store_explicit(&s->go, 1, memory_order_release);
	for (i = 0; i < started; i++) {
		pthread_join(s->p[i].th, NULL);
		if (s->p[i].err)
			bench_fail(r, "syslet__ring_reserve: %s",
				   strerror(-s->p[i].err));
	}
	bench_stop(r, t0);
	if (started == np)
		rp_check(s, r);
}

void bench_ring(struct bench_results *res)
{
	static const unsigned int nprod[] = { 1, 2, 4 };
	static struct rp_arg args[3][4];
	uint32_t elements = (uint32_t)bench_pick(1024, 1 << 18, 1 << 20);
	static char names[3][32];
	unsigned int k;

	for (k = 0; k < 3; k++) {
		struct bench_case bc = {
			.workload = "ring-publish",
			.unit = BENCH_NS_PER_OP,
			.ops_min = bench_pick(1024, 16384, 65536),
			.ops_max = elements,
			.ops_granule = 4,
		};
		struct bench_contender *c;

		snprintf(names[k], sizeof(names[k]), "%u producer%s", nprod[k],
			 nprod[k] > 1 ? "s" : "");
		bc.name = names[k];
		args[k][0] = (struct rp_arg){ nprod[k], LIB_POST, elements };
		args[k][1] =
			(struct rp_arg){ nprod[k], LIB_RESERVE_POST, elements };
		args[k][2] = (struct rp_arg){ nprod[k], MUTEX_2007, elements };
		args[k][3] =
			(struct rp_arg){ nprod[k], MUTEX_RESERVE, elements };
		c = bench_add(&bc, "libsyslet", true);
		snprintf(c->config, sizeof(c->config),
			 "syslet__ring_post (src/ring.h), slots reserved "
			 "before the run as indirect() does; ring of %u, no "
			 "consumer running",
			 elements);
		c->arg = &args[k][0];
		c->setup = rp_setup;
		c->run = run_rp;
		c->teardown = rp_teardown;
		c = bench_add(&bc, "libsyslet+reserve", true);
		snprintf(c->config, sizeof(c->config),
			 "syslet__ring_reserve + syslet__ring_post, both "
			 "timed");
		c->arg = &args[k][1];
		c->setup = rp_setup;
		c->run = run_rp;
		c->teardown = rp_teardown;
		c = bench_add(&bc, "mutex ring", false);
		snprintf(c->config, sizeof(c->config),
			 "2007 style: one pthread mutex per completion, no "
			 "reservation, ring of %u",
			 elements);
		c->arg = &args[k][2];
		c->setup = rp_setup;
		c->run = run_rp;
		c->teardown = rp_teardown;
		c = bench_add(&bc, "mutex ring+reserve", false);
		snprintf(c->config, sizeof(c->config),
			 "libsyslet's no-overwrite rule with the mutex: lock "
			 "to "
			 "reserve, lock to post");
		c->arg = &args[k][3];
		c->setup = rp_setup;
		c->run = run_rp;
		c->teardown = rp_teardown;
		bench_case_run(&bc, res);
	}
}
