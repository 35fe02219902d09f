/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a signal every 100 us at every submitter and every waiter
 * (SIGUSR1 by pthread_kill, handler without SA_RESTART). No completion is
 * lost or duplicated; indirect() never fails with EINTR for calls that
 * cannot be interrupted on the caller (getpid, eventfd write) nor for
 * pending ones (nanosleep(0), run on the caller, may: the kernel's own
 * answer to the plain call); no completion carries -EINTR (workers block
 * signals); syslet_ring_wait() and syslet_drain() give EINTR, the only
 * places SPEC lets them, and a 0 from the wait always means
 * kernel_head != user_idx.
 *
 * Shared state: seen[] bytes of a ring only by its waiter, how[] bytes
 * only by their submitter, both read by main after join; counters are
 * relaxed atomics read after join; stop is a release/acquire flag.
 */
#include <pthread.h>
#include <semaphore.h>
#include <sys/eventfd.h>

#include "stress.h"

#define NT 4
#define NR 2
#define BASE_CALLS 20000
#define SENTINEL UINT64_MAX

struct ring_ctx {
	struct syslet_ring *ring;
	_Atomic uint64_t pending;
	uint64_t consumed;
	pthread_t waiter;
};

static struct ring_ctx rings[NR];
static long calls; /* per submitter */
static uint8_t *seen, *how; /* [t][seq] */
static int efd;
static pid_t pid;
static _Atomic int stop_signals;
static _Atomic uint64_t n_signals, n_eintr_wait, n_eintr_drain, n_sent;
static _Atomic uint64_t n_eintr_inline;
/*
 * Targets stay alive until the signaller has stopped: each posts @done
 * when its work is over, then waits at @leave (main is the last to arrive).
 */
static sem_t done;
static pthread_barrier_t leave;

static void finish(void)
{
	CHECK(sem_post(&done) == 0);
	pthread_barrier_wait(&leave);
}

static void wait_done(int n)
{
	while (n--)
		while (sem_wait(&done))
			CHECK(errno == EINTR);
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&n_signals, 1, memory_order_relaxed);
}

static void *waiter(void *arg)
{
	struct ring_ctx *rc = arg;
	int stop = 0;

	for (;;) {
		struct syslet_ring *r = rc->ring;
		uint32_t tail = r->user_tail, head, i;

		if (stop && rc->consumed == atomic_load_explicit(
						    &rc->pending,
						    memory_order_relaxed)) {
			finish();
			return NULL;
		}
		if (syslet_ring_wait(r, tail)) {
			CHECK(stress_wait_retry(errno));
			atomic_fetch_add_explicit(&n_eintr_wait, 1,
						  memory_order_relaxed);
			continue;
		}
		head = syslet_ring_head(r);
		CHECK(head != tail);
		for (i = tail; i != head; i++) {
			struct syslet_completion *c = syslet_ring_slot(r, i);
			uint64_t d = c->caller_data;
			int t = (int)(d >> 32);
			long seq = (long)(d & 0xffffffff);

			if ((int64_t)c->status == -EINTR)
				DIE("completion %#llx carries -EINTR",
				    (unsigned long long)d);
			if (d == SENTINEL) {
				stop = 1;
				continue;
			}
			CHECK(t < NT && seq < calls);
			if (seen[(size_t)t * (size_t)calls + (size_t)seq]++)
				DIE("%#llx delivered twice",
				    (unsigned long long)d);
			rc->consumed++;
		}
		syslet_ring_advance(r, head - tail);
	}
}

static long submit(struct ring_ctx *rc, uint64_t data, int type)
{
	static const uint64_t one = 1;
	/* what a pending call points to must outlive it: static */
	static const struct timespec naps[] = { { 0, 0 }, { 0, 5000 } };
	struct indirect_registers regs;
	union indirect_params p;
	long ret;

	if (type == 0)
		FILL_IN(regs, SYS_getpid);
	else if (type == 1)
		FILL_IN(regs, SYS_write, efd, &one, sizeof(one));
	else
		FILL_IN(regs, SYS_nanosleep, &naps[type == 3], NULL);
	stress_params(&p, rc->ring, data);
	for (;;) {
		errno = 0;
		ret = indirect(&regs, &p, sizeof(p), 0);
		if (ret == -1 && errno == ESYSLETPENDING)
			return -ESYSLETPENDING;
		/*
		 * nanosleep(0) runs on the caller (try class) and the kernel
		 * answers EINTR to it when a handler runs: the plain call's
		 * own answer. Nothing else here may say EINTR.
		 */
		if (ret == -1 && errno == EINTR && type != 2)
			DIE("indirect(type %d) failed with EINTR", type);
		if (ret == -1 && errno == EINTR) {
			atomic_fetch_add_explicit(&n_eintr_inline, 1,
						  memory_order_relaxed);
			return -EINTR;
		}
		if (ret == -1 && (errno == EBUSY ||
				  (stress_faulty() &&
				   (errno == EAGAIN || errno == ENOMEM)))) {
			sched_yield();
			continue;
		}
		CHECK(ret == (type == 0 ? pid : type == 1 ? 8 : 0));
		return ret;
	}
}

static void *submitter(void *arg)
{
	int t = (int)(intptr_t)arg;
	long seq;

	for (seq = 0; seq < calls; seq++) {
		struct ring_ctx *rc = &rings[seq % NR];

		if (submit(rc, (uint64_t)t << 32 | (uint64_t)seq,
			   (int)(seq % 4)) == -ESYSLETPENDING) {
			atomic_fetch_add_explicit(&rc->pending, 1,
						  memory_order_relaxed);
			how[(size_t)t * (size_t)calls + (size_t)seq] = 2;
		} else {
			how[(size_t)t * (size_t)calls + (size_t)seq] = 1;
		}
	}
	finish();
	return NULL;
}

struct targets {
	pthread_t th[NT + NR + 1];
};

static void *signaller(void *arg)
{
	struct targets *tg = arg;
	struct timespec next;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &next);
	/* acquire: pairs with main's release after the last join */
	while (!atomic_load_explicit(&stop_signals, memory_order_acquire)) {
		for (i = 0; i < NT + NR + 1; i++)
			if (pthread_kill(tg->th[i], SIGUSR1) == 0)
				atomic_fetch_add_explicit(&n_sent, 1,
							  memory_order_relaxed);
		next.tv_nsec += 100000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	struct targets tg;
	pthread_t sig;
	int t, r, drain;
	size_t i;

	calls = BASE_CALLS * stress_scale() / NT;
	stress_watchdog("stress_signals", (unsigned int)(500 * stress_scale()));
	pid = getpid();
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(efd >= 0);
	seen = calloc((size_t)NT * (size_t)calls, 1);
	how = calloc((size_t)NT * (size_t)calls, 1);
	CHECK(seen && how);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1; /* no SA_RESTART: let EINTR show */
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(sem_init(&done, 0, 0) == 0);
	CHECK(pthread_barrier_init(&leave, NULL, NT + NR + 1) == 0);
	tg.th[NT + NR] = pthread_self();

	for (r = 0; r < NR; r++) {
		rings[r].ring = stress_ring(64);
		CHECK(pthread_create(&rings[r].waiter, NULL, waiter,
				     &rings[r]) == 0);
		tg.th[NT + r] = rings[r].waiter;
	}
	for (t = 0; t < NT; t++)
		CHECK(pthread_create(&tg.th[t], NULL, submitter,
				     (void *)(intptr_t)t) == 0);
	CHECK(pthread_create(&sig, NULL, signaller, &tg) == 0);
	wait_done(NT);
	for (r = 0; r < NR; r++) {
		static const struct timespec us = { 0, 1000 };
		struct indirect_registers regs;
		union indirect_params p;

		FILL_IN(regs, SYS_nanosleep, &us, NULL);
		stress_params(&p, rings[r].ring, SENTINEL);
		for (;;) {
			errno = 0;
			if (indirect(&regs, &p, sizeof(p), 0) == -1 &&
			    errno == ESYSLETPENDING)
				break;
			CHECK(errno != EINTR);
			sched_yield();
		}
	}
	wait_done(NR);
	/* main is signalled too: drain may say EINTR */
	for (;;) {
		drain = syslet_drain();
		if (drain == 0)
			break;
		CHECK(errno == EINTR);
		atomic_fetch_add_explicit(&n_eintr_drain, 1,
					  memory_order_relaxed);
	}
	/* release: the signaller stops after seeing it */
	atomic_store_explicit(&stop_signals, 1, memory_order_release);
	CHECK(pthread_join(sig, NULL) == 0);
	pthread_barrier_wait(&leave);
	for (t = 0; t < NT + NR; t++)
		CHECK(pthread_join(tg.th[t], NULL) == 0);
	for (i = 0; i < (size_t)NT * (size_t)calls; i++) {
		if (how[i] == 2 && seen[i] != 1)
			DIE("pending call %zu seen %d times", i, seen[i]);
		if (how[i] == 1 && seen[i])
			DIE("inline call %zu also completed", i);
	}
	printf("stress-signals: calls %ld signals-sent %llu handled %llu "
	       "wait-eintr %llu drain-eintr %llu nanosleep0-eintr %llu "
	       "lost 0\n",
	       (long)NT * calls, (unsigned long long)n_sent,
	       (unsigned long long)n_signals, (unsigned long long)n_eintr_wait,
	       (unsigned long long)n_eintr_drain,
	       (unsigned long long)n_eintr_inline);
	return 0;
}
