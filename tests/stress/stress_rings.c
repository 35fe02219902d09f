/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: 8 submitting threads x 4 rings, calls mixing the inline,
 * try and pending classes (getpid, eventfd write, nanosleep 0, nanosleep
 * of some microseconds, read of an empty O_NONBLOCK pipe); one consumer
 * thread per ring. Every caller_data of a pending call is seen exactly
 * once with the right status, an inline call never shows up in a ring,
 * every call ran exactly once (eventfd count). Phase 1 keeps the queue
 * depth of each ring <= elements (tokens): EBUSY there is a bug (SPEC
 * 4.2, no spurious EBUSY). Phase 2 oversubscribes small rings: EBUSY is
 * back-pressure, the refused call must not have run, and is retried.
 * 100,000 calls per phase at scale 1 (SYSLET_STRESS_SCALE multiplies).
 * Under SYSLET_FAULT, EAGAIN/ENOMEM are accepted as up-front refusals.
 *
 * Shared state: seen[] bytes of a ring are written only by that ring's
 * consumer, how[] bytes only by their submitter; both are read by main
 * after pthread_join. Counters are relaxed atomics (totals read after
 * join). Tokens are POSIX semaphores (their own ordering).
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/eventfd.h>

#include "stress.h"

#define NT 8
#define NR 4
#define BASE_CALLS 100000
#define SENTINEL UINT64_MAX

enum { T_GETPID, T_EFD_WRITE, T_SLEEP0, T_SLEEP, T_EMPTY_READ, NTYPES };
enum { H_NONE, H_INLINE, H_PENDING };

struct ring_ctx {
	struct syslet_ring *ring;
	sem_t tokens;
	_Atomic uint64_t pending; /* ESYSLETPENDING answers */
	pthread_t consumer;
	uint64_t consumed; /* consumer's own */
};

static struct ring_ctx rings[NR];
static int phase; /* 1 or 2; set before threads start */
static long calls; /* per (thread, ring) and phase */
static uint8_t *seen, *how; /* [t][r][seq] */
static int efd, pipe_rd;
static pid_t pid;
static _Atomic uint64_t n_ebusy, n_refused, n_inline, n_pending;
static _Atomic uint64_t n_efd_writes;

static size_t at(int t, int r, long seq)
{
	return ((size_t)t * NR + (size_t)r) * (size_t)calls + (size_t)seq;
}

static uint64_t hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static int64_t expected(int type)
{
	switch (type) {
	case T_GETPID:
		return pid;
	case T_EFD_WRITE:
		return 8;
	case T_EMPTY_READ:
		return -EAGAIN;
	default:
		return 0;
	}
}

static void consume(struct ring_ctx *rc, int *stop)
{
	struct syslet_ring *r = rc->ring;
	uint32_t tail = r->user_tail, head = syslet_ring_head(r), i;

	for (i = tail; i != head; i++) {
		struct syslet_completion *c = syslet_ring_slot(r, i);
		uint64_t d = c->caller_data;
		int type = (int)(d >> 56), t = (int)(d >> 48) & 0xff;
		int rr = (int)(d >> 40) & 0xff;
		long seq = (long)(d & 0xffffffffffULL);

		if (d == SENTINEL) {
			*stop = 1;
			CHECK(c->status == 0);
			continue;
		}
		if (type >= NTYPES || t >= NT || rr != (int)(rc - rings) ||
		    seq >= calls)
			DIE("ring %d: garbage caller_data %#llx at %u",
			    (int)(rc - rings), (unsigned long long)d, i);
		if ((int64_t)c->status != expected(type))
			DIE("caller_data %#llx: status %lld, want %lld",
			    (unsigned long long)d, (long long)c->status,
			    (long long)expected(type));
		if (seen[at(t, rr, seq)]++)
			DIE("caller_data %#llx delivered twice",
			    (unsigned long long)d);
		rc->consumed++;
	}
	syslet_ring_advance(r, head - tail);
	if (phase == 1)
		for (i = tail; i != head; i++)
			CHECK(sem_post(&rc->tokens) == 0);
}

static void *consumer(void *arg)
{
	struct ring_ctx *rc = arg;
	struct timespec ten_s = { 10, 0 };
	int stop = 0;

	for (;;) {
		uint32_t tail = rc->ring->user_tail;

		/* the sentinel goes in after every submitter was joined */
		if (stop &&
		    rc->consumed == atomic_load_explicit(&rc->pending,
							 memory_order_relaxed))
			return NULL;
		if (syslet_ring_wait_timeout(rc->ring, tail, &ten_s)) {
			if (stress_wait_retry(errno))
				continue;
			DIE("ring %d: wait at %u: no completion in 10 s",
			    (int)(rc - rings), tail);
		}
		CHECK(syslet_ring_head(rc->ring) != tail);
		consume(rc, &stop);
	}
}

/* Submit one call, retrying refusals; returns how it went. */
static int submit(int t, int r, long seq)
{
	uint64_t d =
		hash(((uint64_t)t << 40) ^ ((uint64_t)r << 32) ^ (uint64_t)seq);
	int type = (int)(d % NTYPES);
	struct ring_ctx *rc = &rings[r];
	struct indirect_registers regs;
	union indirect_params p;
	/* what a pending call points to must outlive it: static */
	static const struct timespec zero, naps[] = {
		{ 0, 1000 },
		{ 0, 3000 },
		{ 0, 7000 },
		{ 0, 20000 },
	};
	static const uint64_t one = 1;
	static char buf[8];
	long ret;

	switch (type) {
	case T_GETPID:
		FILL_IN(regs, SYS_getpid);
		break;
	case T_EFD_WRITE:
		FILL_IN(regs, SYS_write, efd, &one, sizeof(one));
		break;
	case T_SLEEP0:
		FILL_IN(regs, SYS_nanosleep, &zero, NULL);
		break;
	case T_SLEEP:
		FILL_IN(regs, SYS_nanosleep, &naps[(d >> 32) % 4], NULL);
		break;
	default:
		FILL_IN(regs, SYS_read, pipe_rd, buf, sizeof(buf));
		break;
	}
	stress_params(&p, rc->ring,
		      (uint64_t)type << 56 | (uint64_t)t << 48 |
			      (uint64_t)r << 40 | (uint64_t)seq);
	for (;;) {
		if (phase == 1)
			while (sem_wait(&rc->tokens))
				CHECK(errno == EINTR);
		errno = 0;
		ret = indirect(&regs, &p, sizeof(p), 0);
		if (ret == -1 && errno == ESYSLETPENDING) {
			atomic_fetch_add_explicit(&rc->pending, 1,
						  memory_order_relaxed);
			atomic_fetch_add_explicit(&n_pending, 1,
						  memory_order_relaxed);
			if (type == T_EFD_WRITE)
				atomic_fetch_add_explicit(&n_efd_writes, 1,
							  memory_order_relaxed);
			return H_PENDING;
		}
		if (phase == 1)
			CHECK(sem_post(&rc->tokens) == 0);
		if (ret == -1 && errno == EBUSY) {
			if (phase == 1)
				DIE("spurious EBUSY: depth <= elements");
			atomic_fetch_add_explicit(&n_ebusy, 1,
						  memory_order_relaxed);
			sched_yield();
			continue;
		}
		if (ret == -1 && stress_faulty() &&
		    (errno == EAGAIN || errno == ENOMEM) &&
		    type != T_EMPTY_READ) {
			atomic_fetch_add_explicit(&n_refused, 1,
						  memory_order_relaxed);
			sched_yield();
			continue;
		}
		break;
	}
	if ((ret == -1 ? -errno : ret) != expected(type))
		DIE("type %d inline: %ld errno %d", type, ret, errno);
	if (type == T_EFD_WRITE)
		atomic_fetch_add_explicit(&n_efd_writes, 1,
					  memory_order_relaxed);
	atomic_fetch_add_explicit(&n_inline, 1, memory_order_relaxed);
	return H_INLINE;
}

static void *submitter(void *arg)
{
	int t = (int)(intptr_t)arg, r;
	long k;

	for (k = 0; k < calls * NR; k++) {
		r = (int)((t + k) % NR);
		how[at(t, r, k / NR)] = (uint8_t)submit(t, r, k / NR);
	}
	return NULL;
}

static void sentinel(struct ring_ctx *rc)
{
	static const struct timespec us = { 0, 1000 };
	struct indirect_registers regs;
	union indirect_params p;

	FILL_IN(regs, SYS_nanosleep, &us, NULL);
	stress_params(&p, rc->ring, SENTINEL);
	for (;;) {
		if (phase == 1)
			while (sem_wait(&rc->tokens))
				CHECK(errno == EINTR);
		errno = 0;
		if (indirect(&regs, &p, sizeof(p), 0) == -1 &&
		    errno == ESYSLETPENDING)
			return;
		/* a pending-class call that completed inline: no sentinel */
		if (errno == 0 || errno == EBUSY ||
		    (stress_faulty() && (errno == EAGAIN || errno == ENOMEM))) {
			if (phase == 1)
				CHECK(sem_post(&rc->tokens) == 0);
			sched_yield();
			continue;
		}
		DIE("sentinel: errno %d", errno);
	}
}

static void run_phase(int ph, uint32_t elements)
{
	pthread_t th[NT];
	uint64_t v, want;
	int t, r;
	long seq;

	phase = ph;
	memset(seen, 0, (size_t)NT * NR * (size_t)calls);
	memset(how, 0, (size_t)NT * NR * (size_t)calls);
	atomic_store(&n_efd_writes, 0);
	for (r = 0; r < NR; r++) {
		rings[r].ring = stress_ring(elements);
		rings[r].consumed = 0;
		atomic_store(&rings[r].pending, 0);
		CHECK(sem_init(&rings[r].tokens, 0, elements) == 0);
		CHECK(pthread_create(&rings[r].consumer, NULL, consumer,
				     &rings[r]) == 0);
	}
	for (t = 0; t < NT; t++)
		CHECK(pthread_create(&th[t], NULL, submitter,
				     (void *)(intptr_t)t) == 0);
	for (t = 0; t < NT; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	for (r = 0; r < NR; r++)
		sentinel(&rings[r]);
	for (r = 0; r < NR; r++)
		CHECK(pthread_join(rings[r].consumer, NULL) == 0);
	CHECK(syslet_drain() == 0);
	for (t = 0; t < NT; t++)
		for (r = 0; r < NR; r++)
			for (seq = 0; seq < calls; seq++) {
				size_t i = at(t, r, seq);

				if (how[i] == H_PENDING && seen[i] != 1)
					DIE("phase %d: call %d/%d/%ld lost", ph,
					    t, r, seq);
				if (how[i] == H_INLINE && seen[i])
					DIE("phase %d: inline call %d/%d/%ld "
					    "also completed",
					    ph, t, r, seq);
				CHECK(how[i] != H_NONE);
			}
	/* every eventfd write ran exactly once; none of the refused ones */
	want = atomic_load(&n_efd_writes);
	v = 0;
	if (read(efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		CHECK(errno == EAGAIN && want == 0);
	if (v != want)
		DIE("phase %d: eventfd counted %llu writes, %llu answered", ph,
		    (unsigned long long)v, (unsigned long long)want);
	for (r = 0; r < NR; r++) {
		sem_destroy(&rings[r].tokens);
		free(rings[r].ring);
	}
}

int main(void)
{
	int pfd[2];

	calls = BASE_CALLS * stress_scale() / (NT * NR);
	stress_watchdog("stress_rings", (unsigned int)(500 * stress_scale()));
	pid = getpid();
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(efd >= 0);
	CHECK(pipe2(pfd, O_NONBLOCK | O_CLOEXEC) == 0);
	pipe_rd = pfd[0];
	seen = malloc((size_t)NT * NR * (size_t)calls);
	how = malloc((size_t)NT * NR * (size_t)calls);
	CHECK(seen && how);
	run_phase(1, 64);
	run_phase(2, 4);
	printf("stress-rings: calls %ld pending %llu inline %llu ebusy %llu "
	       "spurious-ebusy 0 refused %llu lost 0 duplicated 0\n",
	       2L * NT * NR * calls, (unsigned long long)n_pending,
	       (unsigned long long)n_inline, (unsigned long long)n_ebusy,
	       (unsigned long long)n_refused);
	free(seen);
	free(how);
	return 0;
}
