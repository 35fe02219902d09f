/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: syslet_drain() waits for the calls submitted before it began
 * and no others, however many drain at once (syslet_drain(3)); a fork
 * child frees its parent's worker records and its syslet_drain() and
 * syslet_stats() see only its own pool (SPEC 5). Each
 * case runs in a forked child under an alarm; every wait is bounded and
 * fails loudly.
 *
 * Groups (argv[1]): none, most cases (turns and turns_most: a finding,
 * fixed since, its comment names the cause); "turns_limit", the limit of
 * the fix (should_fail, syslet_drain(3) BUGS); "raw_notifiers", fork_notifiers
 * with raw forks, a finding that is not
 * deterministic (run by hand; see fork_notifiers()).
 *
 * Shared state: storm's submitters each own a ring and publish how many
 * calls they submitted (subs[i].n, seq_cst, after the submit returned);
 * drainers read those counts before they drain and the rings' heads after
 * it; everyone polls the stop flag (seq_cst). turns' and cancel's
 * drainer threads publish their result last (seq_cst), main polls it.
 * fork_storm's forkers share only the pool and their start flag.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "shard.h"
#include "test_pool_util.h"

#define ALARM_S 120 /* a case's bound: far above its run on 2 CPUs */
#define STACK_SIZE (16 * 1024)
#define STORM_SUBS 4 /* submitter threads, two per CPU */
#define STORM_DRAINERS 4 /* drainer threads, two per CPU */
#define STORM_ROUNDS 1500 /* per submitter */
#define STORM_BATCH 8
#define FORKERS 4
#define FORK_ROUNDS 20
#define TURN_BOUND_S 5 /* the late call's own end, far past the drain */

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#if defined(UNDER_TSAN) || defined(__SANITIZE_ADDRESS__)
#define UNDER_SANITIZER 1
#endif

static void run_case(int (*fn)(void))
{
	pid_t pid = fork_case(ALARM_S);

	/* exit(), not _exit(): LeakSanitizer's check runs at exit. */
	if (!pid)
		exit(fn());
	assert_int_equal(wait_case(pid), 0);
}

/*
 * Submit through indirect(), as a program does (its punt path sets up the
 * fork detection of forked.c); the call must go pending: 0 or 1.
 */
static int punt(struct syslet_ring *r, long nr, long a0, uint64_t cd)
{
	union indirect_params ip = { 0 };
	struct indirect_registers regs;

	FILL_IN(regs, nr, a0);
	ip.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)r;
	ip.syslet.caller_data = cd;
	return indirect(&regs, &ip, sizeof(ip), 0) != -1 ||
	       errno != ESYSLETPENDING;
}

/* A quick call through indirect(), reaped: the pool runs. */
static void quick_start(struct syslet_ring *r)
{
	struct syslet_completion c;
	struct timespec ts = { 0, 1 };

	CHECK(!punt(r, SYS_nanosleep, (long)&ts, 77));
	CHECK(!reap_one(r, &c) && c.caller_data == 77);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void handle_usr1(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART */

	CHECK(!sigaction(SIGUSR1, &sa, NULL));
}

/* syslet_drain() again after each EINTR; its last result. */
static int drain_retry(unsigned long *eintr)
{
	int r;

	while ((r = syslet_drain()) == -1 && errno == EINTR)
		++*eintr;
	return r;
}

/* ---- storm: drains on both CPUs, interrupted, beside submitters ----- */

struct sub {
	int cpu;
	struct syslet_ring *ring; /* owned by the submitter */
	_Atomic uint64_t n; /* calls submitted (their submit returned) */
	_Atomic uint32_t reaped; /* completions it consumed */
};

static struct sub subs[STORM_SUBS];
static _Atomic int storm_stop;
static _Atomic uint64_t storm_drains, storm_eintr;

static void notifier_nop(void)
{
}

/*
 * A nanosleep(@ts) with caller_data @i; odd @i with the notifier @fn on
 * stack i of @stacks (STACK_SIZE each).
 */
static int submit_half(struct syslet_ring *r, long ts, int i, void (*fn)(void),
		       char *stacks)
{
	char *top = stacks + (size_t)(i + 1) * STACK_SIZE;

	if (!(i & 1))
		return submit(r, SYS_nanosleep, ts, 0, 0, (uint64_t)i);
	return submit_ex(r, SYS_nanosleep, ts, 0, 0, (uint64_t)i, (uintptr_t)fn,
			 (uintptr_t)top);
}

/*
 * A submitter: batches of quick calls (nanosleep of 0..30 µs: pending for
 * a while; half with a notifier), consumed once all of a batch came.
 */
static void *sub_main(void *arg)
{
	struct sub *s = arg;
	char *stacks = malloc((size_t)STORM_BATCH * STACK_SIZE);
	struct timespec ts[STORM_BATCH];
	struct syslet_completion c;
	int round, i;

	CHECK(stacks && !pin_self(s->cpu));
	for (round = 0; round < STORM_ROUNDS; round++) {
		for (i = 0; i < STORM_BATCH; i++) {
			ts[i] = (struct timespec){ 0, (i * 4000) % 30000 };
			CHECK(!submit_half(s->ring, (long)&ts[i], i,
					   notifier_nop, stacks));
			/* Seq_cst: after the submit, before a drainer reads. */
			atomic_fetch_add(&s->n, 1);
		}
		for (i = 0; i < STORM_BATCH; i++) {
			CHECK(!reap_one(s->ring, &c));
			CHECK(c.status == 0);
		}
		/*
		 * The batch's notifiers may still run: drain before the ts
		 * array and the stacks are reused (syslet_drain(3)).
		 */
		CHECK(!drain_retry(&(unsigned long){ 0 }));
	}
	free(stacks);
	return NULL;
}

/*
 * A drainer: read every submitter's count, drain (again after EINTR),
 * then each ring must have received at least that many completions
 * (kernel_head is free-running from 0: it counts every post), and the
 * pool's stats must count them completed.
 */
static void *drainer_main(void *arg)
{
	uint64_t before[STORM_SUBS], total;
	unsigned long eintr = 0;
	struct syslet_stats st;
	int i;

	CHECK(!pin_self((int)(intptr_t)arg));
	while (!atomic_load(&storm_stop)) {
		for (total = 0, i = 0; i < STORM_SUBS; i++)
			total += before[i] = atomic_load(&subs[i].n);
		CHECK(!drain_retry(&eintr));
		for (i = 0; i < STORM_SUBS; i++)
			if ((uint32_t)(syslet_ring_head(subs[i].ring) -
				       (uint32_t)before[i]) > (1u << 30)) {
				fprintf(stderr,
					"drained: ring %d head %u, %llu "
					"submitted before the drain\n",
					i, syslet_ring_head(subs[i].ring),
					(unsigned long long)before[i]);
				_exit(1);
			}
		stats(&st);
		CHECK(st.completed >= total);
		atomic_fetch_add(&storm_drains, 1);
	}
	atomic_fetch_add(&storm_eintr, eintr);
	return NULL;
}

/*
 * Drainers on both CPUs take turns and are interrupted by SIGUSR1 (no
 * SA_RESTART) while submitters on both CPUs keep calls in flight: after
 * every drain that returned 0, every call submitted before it began is
 * in its ring and counted completed (the two parities' stragglers
 * included), and nothing is left of the drain state at the end.
 */
static int storm(void)
{
	pthread_t st[STORM_SUBS], dt[STORM_DRAINERS];
	struct syslet_stats s;
	uint64_t kills = 0;
	int i, n = ncpus_allowed();

	handle_usr1();
	for (i = 0; i < STORM_SUBS; i++) {
		subs[i].cpu = allowed_cpu(i % n);
		subs[i].ring = ring_new(STORM_BATCH);
		CHECK(subs[i].ring);
		CHECK(!pthread_create(&st[i], NULL, sub_main, &subs[i]));
	}
	for (i = 0; i < STORM_DRAINERS; i++)
		CHECK(!pthread_create(&dt[i], NULL, drainer_main,
				      (void *)(intptr_t)allowed_cpu(i % n)));
	for (i = 0; i < STORM_SUBS; i++) {
		/* Interrupt drainers while the submitters run. */
		while (pthread_tryjoin_np(st[i], NULL) == EBUSY) {
			pthread_kill(dt[kills % STORM_DRAINERS], SIGUSR1);
			kills++;
			sched_yield();
		}
	}
	atomic_store(&storm_stop, 1);
	for (i = 0; i < STORM_DRAINERS; i++)
		CHECK(!pthread_join(dt[i], NULL));
	CHECK(!syslet_drain());
	stats(&s);
	fprintf(stderr,
		"storm: %llu drains, %llu ended by EINTR (%llu signals); "
		"submitted %llu completed %llu\n",
		(unsigned long long)atomic_load(&storm_drains),
		(unsigned long long)atomic_load(&storm_eintr),
		(unsigned long long)kills, (unsigned long long)s.submitted,
		(unsigned long long)s.completed);
	CHECK(s.submitted == (uint64_t)STORM_SUBS * STORM_ROUNDS * STORM_BATCH);
	CHECK(s.completed == s.submitted);
	CHECK(!atomic_load(&syslet__pool.drain_waiters));
	for (i = 0; i < STORM_SUBS; i++)
		free(subs[i].ring);
	return 0;
}

static void test_storm(void **state)
{
	(void)state;
	run_case(storm);
}

/* ---- a drain and a late call that never ends ------------------------- */

static _Atomic int dr_ret[SYSLET__DRAIN_SLOTS + 1],
	dr_errno[SYSLET__DRAIN_SLOTS + 1];

static void *drain_thread(void *arg)
{
	int i = (int)(intptr_t)arg, r = syslet_drain();

	atomic_store(&dr_ret[i], r);
	/* Seq_cst: the last store, the one main polls for. */
	atomic_store(&dr_errno[i], r ? errno : -1);
	return NULL;
}

static bool dr_done(int i)
{
	return atomic_load(&dr_errno[i]) != 0;
}

/*
 * A drain that had to wait for a call (a read) must return, once that
 * call ends, even though another call, submitted by this thread while the
 * drain waited, blocks for ever (syslet_drain(3): "as a rule they are
 * not" waited for; the exception, an interrupted earlier drain, is not
 * taken here: every earlier drain returned 0). Several times in a row,
 * so that the epoch flips past both parities; each round's late call is
 * ended after its drain (it went pending before the next drain, which
 * must wait for it).
 */
static int late_forever(void)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	int early[2], late[8][2], round;
	pthread_t t;
	char b[8], e;

	CHECK(r && !pipe(early));
	for (round = 0; round < 8; round++) {
		CHECK(!pipe(late[round]));
		atomic_store(&dr_errno[0], 0);
		CHECK(!submit(r, SYS_read, early[0], (long)&e, 1, 100));
		CHECK(!pthread_create(&t, NULL, drain_thread, NULL));
		/* Its second wait, for the read: the epoch flipped. */
		CHECK(POLL_WITHIN(TEST_WAIT_S,
				  atomic_load(&syslet__pool.drain_epoch) ==
					  (uint32_t)round + 1));
		CHECK(!submit(r, SYS_read, late[round][0], (long)&b[round], 1,
			      (uint64_t)round));
		CHECK(!dr_done(0));
		CHECK(write(early[1], "x", 1) == 1);
		CHECK(POLL_WITHIN(TURN_BOUND_S, dr_done(0)));
		CHECK(!pthread_join(t, NULL) && atomic_load(&dr_ret[0]) == 0);
		CHECK(!reap_one(r, &c) && c.caller_data == 100);
		/* Ended before the next drain, which must wait for it. */
		CHECK(write(late[round][1], "x", 1) == 1);
		CHECK(!reap_one(r, &c) && c.caller_data == (uint64_t)round);
	}
	free(r);
	return 0;
}

static void test_late_forever(void **state)
{
	(void)state;
	run_case(late_forever);
}

/*
 * Finding (fixed): concurrent drains took turns (one at a time held
 * drain_busy), and a drain that waited for its turn waited for calls
 * submitted after it began: drain A waits for a read X (submitted before
 * it, after its flip); drain B begins and waits for drain_busy; a call Y
 * that never ends (a read of an empty pipe) is then submitted, in the
 * parity of A's new epoch; X ends, A returns; B takes its turn, finds the
 * other parity empty, flips, and waits for the old one: Y's. B was called
 * before Y went pending, and no drain was interrupted, yet B waited for
 * as long as Y does (here until the test writes Y's pipe, TURN_BOUND_S
 * later; for ever in a server whose Y is an accept()). Now drains run at
 * once, each flips past its own epoch (pool.c's slots). @n drains here,
 * each begun once the one before flipped: Y after the last one began; 2
 * the finding, SLOTS - 1 the most the design keeps apart exactly. With
 * SLOTS the last one's flip waits for X's slot: Y lands in its epoch and
 * holds it, the limit syslet_drain(3) names (turns_limit, should_fail).
 */
static char turn_bytes[2]; /* X's and Y's bytes */

static int turns_n(int n)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	pthread_t t[SYSLET__DRAIN_SLOTS + 1];
	int x[2], y[2], held = 0, i;
	uint32_t e0;

	CHECK(r && !pipe(x) && !pipe(y) && n <= SYSLET__DRAIN_SLOTS);
	quick_start(r);
	CHECK(!syslet_drain());
	e0 = atomic_load(&syslet__pool.drain_epoch);
	CHECK(!submit(r, SYS_read, x[0], (long)&turn_bytes[0], 1, 1));
	for (i = 0; i < n; i++) {
		atomic_store(&dr_errno[i], 0);
		CHECK(!pthread_create(&t[i], NULL, drain_thread,
				      (void *)(intptr_t)i));
		/* Drain i flipped, or (the last of SLOTS) waits to. */
		CHECK(POLL_WITHIN(
			TEST_WAIT_S,
			atomic_load(&syslet__pool.drain_epoch) ==
					e0 + (uint32_t)i + 1 ||
				(i == SYSLET__DRAIN_SLOTS - 1 &&
				 atomic_load(&syslet__pool.drain_waiters) ==
					 i + 1)));
	}
	/* Y: after every drain began. */
	CHECK(!submit(r, SYS_read, y[0], (long)&turn_bytes[1], 1, 2));
	for (i = 0; i < n; i++)
		CHECK(!dr_done(i));
	CHECK(write(x[1], "x", 1) == 1);
	for (i = 0; i < n; i++)
		if (!POLL_WITHIN(TURN_BOUND_S, dr_done(i)))
			held++;
	if (held)
		fprintf(stderr,
			"turns: %d of %d drains still waited for a call "
			"submitted after they began, %d s after the older "
			"call ended\n",
			held, n, TURN_BOUND_S);
	CHECK(write(y[1], "y", 1) == 1);
	for (i = 0; i < n; i++)
		CHECK(!pthread_join(t[i], NULL) &&
		      atomic_load(&dr_ret[i]) == 0);
	CHECK(!syslet_drain());
	CHECK(!reap_within(r, &c, 0) && c.caller_data == 1);
	CHECK(!reap_within(r, &c, 0) && c.caller_data == 2);
	free(r);
	return held != 0;
}

static int turns(void)
{
	return turns_n(2);
}

static int turns_most(void)
{
	return turns_n(SYSLET__DRAIN_SLOTS - 1);
}

static int turns_limit(void)
{
	return turns_n(SYSLET__DRAIN_SLOTS);
}

static void test_turns(void **state)
{
	(void)state;
	run_case(turns);
}

static void test_turns_most(void **state)
{
	(void)state;
	run_case(turns_most);
}

static void test_turns_limit(void **state)
{
	(void)state;
	run_case(turns_limit);
}

/* ---- cancellation of a draining thread ------------------------------- */

static _Atomic int cancel_after; /* 1: the drain returned in the thread */

static void *cancelled_main(void *arg)
{
	(void)arg;
	CHECK(!pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL));
	(void)syslet_drain();
	atomic_store(&cancel_after, 1);
	pthread_testcancel();
	return NULL;
}

/*
 * pthread_cancel() of a thread that waits in syslet_drain() (deferred
 * cancellation): whether or not the wait is a cancellation point, the
 * drain state must not be left held (drain_waiters): a later
 * drain returns once the calls it waits for ended. Said on stderr: where
 * the thread was cancelled.
 */
static int cancel_drainer(void)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	pthread_t t;
	void *res;
	int p[2];
	char b;

	CHECK(r && !pipe(p));
	CHECK(!submit(r, SYS_read, p[0], (long)&b, 1, 1));
	CHECK(!pthread_create(&t, NULL, cancelled_main, NULL));
	CHECK(POLL_WITHIN(TEST_WAIT_S,
			  atomic_load(&syslet__pool.drain_waiters) == 1 &&
				  atomic_load(&syslet__pool.drain_epoch) == 1));
	CHECK(!pthread_cancel(t));
	CHECK(write(p[1], "x", 1) == 1);
	CHECK(!pthread_join(t, &res) && res == PTHREAD_CANCELED);
	fprintf(stderr, "cancel: the drainer was cancelled %s\n",
		atomic_load(&cancel_after) ? "after syslet_drain() returned" :
					     "inside syslet_drain()");
	CHECK(!atomic_load(&syslet__pool.drain_waiters));
	CHECK(!syslet_drain());
	CHECK(!reap_within(r, &c, 0) && c.status == 1);
	free(r);
	return 0;
}

static void test_cancel_drainer(void **state)
{
	(void)state;
	run_case(cancel_drainer);
}

/* ---- the epoch's wrap ------------------------------------------------ */

/*
 * drain_epoch wraps (uint32_t, one flip per drain): with the epoch just
 * below the wrap, drains still wait for the calls submitted before them
 * (a read held until the drain's thread is seen waiting), across it.
 */
static int epoch_wrap(void)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	pthread_t t;
	int i, p[2];
	char b;

	CHECK(r && !pipe(p));
	quick_start(r);
	CHECK(!syslet_drain());
	atomic_store(&syslet__pool.drain_epoch, UINT32_MAX - 2);
	for (i = 0; i < 6; i++) {
		atomic_store(&dr_errno[0], 0);
		CHECK(!submit(r, SYS_read, p[0], (long)&b, 1, (uint64_t)i));
		CHECK(!pthread_create(&t, NULL, drain_thread, NULL));
		CHECK(POLL_WITHIN(TEST_WAIT_S,
				  atomic_load(&syslet__pool.drain_epoch) ==
					  UINT32_MAX - 1 + (uint32_t)i));
		CHECK(!dr_done(0));
		CHECK(write(p[1], "x", 1) == 1);
		CHECK(!pthread_join(t, NULL) && atomic_load(&dr_ret[0]) == 0);
		CHECK(!reap_within(r, &c, 0) && c.caller_data == (uint64_t)i);
	}
	free(r);
	return 0;
}

static void test_epoch_wrap(void **state)
{
	(void)state;
	run_case(epoch_wrap);
}

/* ---- fork: children of a busy pool ----------------------------------- */

/*
 * In a child: nothing of the parent's is pending or counted (syslet_stats
 * first: it must reset a child forked without the handlers by itself),
 * the child's own calls go pending, drain and count.
 */
static int child_side(void)
{
	/*
	 * No malloc() here: a raw SYS_fork child of threaded parent keeps
	 * the arena locks its other threads held (seen: stuck in
	 * _mid_memalign, 2 runs in 10, with ring_new()).
	 */
	static _Alignas(64) char ring_mem[sizeof(struct syslet_ring) +
					  4 * sizeof(struct syslet_completion)];
	struct syslet_ring *r = (struct syslet_ring *)ring_mem;
	struct timespec ts = { 0, 1 };
	struct syslet_completion c;
	struct syslet_stats st;
	int i;

	syslet_ring_init(r, 4);
	stats(&st);
	CHECK(st.submitted == 0 && st.completed == 0 && st.workers_now == 0);
	for (i = 0; i < 3; i++)
		CHECK(!punt(r, SYS_nanosleep, (long)&ts, (uint64_t)i));
	CHECK(!syslet_drain());
	CHECK(syslet_ring_head(r) == 3);
	stats(&st);
	CHECK(st.submitted == 3 && st.completed == 3);
	for (i = 0; i < 3; i++)
		CHECK(!reap_within(r, &c, 0) && c.status == 0);
	return 0;
}

static _Atomic int churn_stop, fork_go;

static void notifier_spin(void)
{
	/* A notifier in flight for a while: fork()s catch some mid-way. */
	uint64_t end = syslet__now_ns() + 200000;

	while (syslet__now_ns() < end)
		;
}

/*
 * Keep workers starting and retiring (a 1 ms idle timeout): bursts of
 * parallel 1 ms sleeps, half with a notifier that runs for 200 µs.
 */
static void *churn_main(void *arg)
{
	struct syslet_ring *r = ring_new(16);
	char *stacks = malloc(16 * STACK_SIZE);
	struct timespec ts = { 0, 1000000 }, gap = { 0, 3000000 };
	struct syslet_completion c;
	int i;

	CHECK(r && stacks && !pin_self((int)(intptr_t)arg));
	while (!atomic_load(&churn_stop)) {
		for (i = 0; i < 16; i++)
			CHECK(!submit_half(r, (long)&ts, i, notifier_spin,
					   stacks));
		for (i = 0; i < 16; i++)
			CHECK(!reap_one(r, &c) && c.status == 0);
		CHECK(!syslet_drain());
		nanosleep(&gap, NULL); /* idle: workers retire (load) */
	}
	free(stacks);
	free(r);
	return NULL;
}

/* A forker: FORK_ROUNDS children, each uses its pool at once. */
static void *forker_main(void *arg)
{
	int i;
	pid_t pid;

	CHECK(!pin_self((int)(intptr_t)arg));
	while (!atomic_load(&fork_go))
		sched_yield();
	for (i = 0; i < FORK_ROUNDS; i++) {
		pid = fork_case(ALARM_S);
		CHECK(pid >= 0);
		/* _exit(): see fork_storm() on LeakSanitizer in these. */
		if (!pid)
			_exit(child_side());
		CHECK(wait_case(pid) == 0);
	}
	return NULL;
}

/*
 * fork() from FORKERS threads at once on both CPUs while workers start,
 * retire and run notifiers: every child starts from an empty pool that
 * works; under ASan, its freeing of the parent's worker records
 * touches no record twice or freed. The children end with _exit():
 * LeakSanitizer would report the parent's other threads' data (rings,
 * stacks, the calls in flight: unreachable in a child) and, in some
 * children, worker records (120 bytes each, 1 to 4) that the child cannot
 * free: those of workers between their spawn and their own link into the
 * list, or between their unlink and their free, when the fork came (a
 * race: 3 of 6 LeakSanitizer reports in 2 runs, 160 children, named
 * worker records).
 */
static int fork_storm(void)
{
	pthread_t ct[2], ft[FORKERS];
	struct syslet_stats st;
	int i, n = ncpus_allowed();

	struct syslet_ring *r = ring_new(4);

	CHECK(r);
	quick_start(r);
	CHECK(!syslet_config_set(SYSLET_OPT_IDLE_MS, 1));
	CHECK(!syslet_config_set(SYSLET_OPT_MIN_WORKERS, 0));
	for (i = 0; i < 2; i++)
		CHECK(!pthread_create(&ct[i], NULL, churn_main,
				      (void *)(intptr_t)allowed_cpu(i % n)));
	for (i = 0; i < FORKERS; i++)
		CHECK(!pthread_create(&ft[i], NULL, forker_main,
				      (void *)(intptr_t)allowed_cpu(i % n)));
	CHECK(WAIT_STATS(st, st.submitted > 64));
	atomic_store(&fork_go, 1);
	for (i = 0; i < FORKERS; i++)
		CHECK(!pthread_join(ft[i], NULL));
	atomic_store(&churn_stop, 1);
	for (i = 0; i < 2; i++)
		CHECK(!pthread_join(ct[i], NULL));
	CHECK(!syslet_drain());
	stats(&st);
	fprintf(stderr,
		"fork_storm: %d children; parent: submitted %llu completed "
		"%llu, workers started %llu\n",
		FORKERS * FORK_ROUNDS, (unsigned long long)st.submitted,
		(unsigned long long)st.completed,
		(unsigned long long)st.workers_started);
	CHECK(st.completed == st.submitted);
	free(r);
	return 0;
}

static void test_fork_storm(void **state)
{
	(void)state;
#ifdef UNDER_SANITIZER
	/*
	 * Workers started in a child of a threaded parent: TSan; gcc 12's
	 * ASan allocator keeps a lock a parent thread held (run.sh): seen,
	 * a child's manager start stuck in GetFromAllocator until the alarm.
	 */
	skip();
#endif
	run_case(fork_storm);
}

/*
 * fork_notifiers: each notifier's child's status (-1: not yet); nf_raw
 * (set before the case's threads start): every other fork a raw SYS_fork.
 */
static bool nf_raw;
static _Atomic int nf_status[2][FORK_ROUNDS];

static void notifier_forks(void)
{
	const struct syslet_completion *c = syslet_current_completion();
	int cpu = (int)(c->caller_data >> 8), i = (int)(c->caller_data & 0xff);
	long pid = nf_raw && i & 1 ? syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) :
				     fork();
	sigset_t none;
	int st;

	if (!pid) {
		/* The notifier's mask blocks all: let the alarm end a hang. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		alarm(20);
		_exit(child_side());
	}
	if (pid < 0 || waitpid((pid_t)pid, &st, 0) != pid)
		atomic_store(&nf_status[cpu][i], 100);
	else
		atomic_store(&nf_status[cpu][i], WIFEXITED(st) ?
							 WEXITSTATUS(st) :
							 128 + WTERMSIG(st));
}

static void *nf_main(void *arg)
{
	int k = (int)(intptr_t)arg, i;
	struct syslet_ring *r = ring_new(4);
	char *stack = malloc(STACK_SIZE);
	struct timespec ts = { 0, 1 };
	struct syslet_completion c;

	CHECK(r && stack && !pin_self(allowed_cpu(k % ncpus_allowed())));
	for (i = 0; i < FORK_ROUNDS; i++) {
		CHECK(!submit_ex(r, SYS_nanosleep, (long)&ts, 0, 0,
				 (uint64_t)k << 8 | (uint64_t)i,
				 (uintptr_t)notifier_forks,
				 (uintptr_t)(stack + STACK_SIZE)));
		CHECK(!reap_one(r, &c));
		/* The notifier (and its child) ended before its stack's reuse. */
		CHECK(POLL_WITHIN(TEST_WAIT_S,
				  atomic_load(&nf_status[k][i]) != -1));
		if (atomic_load(&nf_status[k][i]))
			fprintf(stderr,
				"fork %d/%d from a notifier: child %d\n", k, i,
				atomic_load(&nf_status[k][i]));
		CHECK(!atomic_load(&nf_status[k][i]));
	}
	free(stack);
	free(r);
	return NULL;
}

/*
 * Notifiers on both CPUs fork at the same time, by glibc's fork() (and,
 * in the group "raw_notifiers", every other one by a raw SYS_fork, no
 * atfork handlers): each child is an ordinary process with an empty pool;
 * its syslet_stats(), its first call, counts from zero; the
 * parent's pool goes on.
 * Finding (open, not deterministic): a raw SYS_fork child of this busy
 * pool hung until its 20 s alarm: 6 of 14 runs failed (20 raw forks a
 * run), each of the 4 looked at on a raw fork. Where it hung is not
 * pinned down (no backtrace taken); likely a lock of glibc that a parent
 * thread held, as in the malloc() hang of child_side()'s first version,
 * which glibc's fork() resets. A raw fork of a threaded process leaves
 * the child only async-signal-safe calls (POSIX): the library's reset
 * cannot make that safe.
 */
static int fork_notifiers(void)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_stats st;
	pthread_t t[2];
	int i, k;

	CHECK(r);
	quick_start(r);
	free(r);
	for (k = 0; k < 2; k++)
		for (i = 0; i < FORK_ROUNDS; i++)
			atomic_store(&nf_status[k][i], -1);
	for (k = 0; k < 2; k++)
		CHECK(!pthread_create(&t[k], NULL, nf_main,
				      (void *)(intptr_t)k));
	for (k = 0; k < 2; k++)
		CHECK(!pthread_join(t[k], NULL));
	CHECK(!syslet_drain());
	stats(&st);
	CHECK(st.submitted == 2 * FORK_ROUNDS + 1 &&
	      st.completed == st.submitted);
	return 0;
}

static void test_fork_notifiers(void **state)
{
	(void)state;
#ifdef UNDER_SANITIZER
	skip(); /* as fork_storm */
#endif
	run_case(fork_notifiers);
}

/* ---- children that share the parent's memory ------------------------- */

/* clone_vm's ways: clone(CLONE_VM), vfork() (TSan runs it as a fork()). */
#ifdef UNDER_TSAN
#define VM_WAYS 1
#else
#define VM_WAYS 2
#endif

static _Atomic int vm_drain = 1, vm_stats = 1;
static _Atomic uint64_t vm_submitted;

static int vm_child(void *arg)
{
	struct syslet_stats st;

	(void)arg;
	atomic_store(&vm_stats, syslet_stats(&st, sizeof(st)));
	atomic_store(&vm_submitted, st.submitted);
	atomic_store(&vm_drain, syslet_drain());
	return 0;
}

/*
 * A child that shares the parent's memory (clone(CLONE_VM | CLONE_VFORK),
 * as posix_spawn() makes, and vfork()) is not a fork for the pool: the
 * wipe-on-fork page is the parent's, so syslet_stats() and syslet_drain()
 * must not reset the pool (they would empty the parent's, in the memory
 * they share); they see the parent's calls, as a thread would. After it:
 * the parent's pending call completes, its counts are intact.
 */
static int clone_vm(void)
{
	struct syslet_ring *r = ring_new(4);
	struct timespec ts = { 0, 20000000 };
	char *stack = malloc(64 * 1024);
	struct syslet_completion c;
	struct syslet_stats st;
	int w, i;
	pid_t pid;

	CHECK(r && stack);
	quick_start(r);
	for (i = 0; i < VM_WAYS; i++) {
		atomic_store(&vm_drain, 1);
		CHECK(!submit(r, SYS_nanosleep, (long)&ts, 0, 0, 1));
		if (!i) {
			pid = clone(vm_child, stack + 64 * 1024,
				    CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		} else {
			pid = vfork();
			if (!pid) {
				vm_child(NULL);
				_exit(0);
			}
		}
		CHECK(pid > 0 && waitpid(pid, &w, 0) == pid);
		CHECK(WIFEXITED(w) && !WEXITSTATUS(w));
		CHECK(atomic_load(&vm_stats) == 0);
		if (atomic_load(&vm_submitted) != (uint64_t)(2 + i))
			fprintf(stderr, "clone_vm %d: child saw %llu\n", i,
				(unsigned long long)atomic_load(&vm_submitted));
		CHECK(atomic_load(&vm_submitted) == (uint64_t)(2 + i));
		CHECK(atomic_load(&vm_drain) == 0);
		/* The child's drain waited for the parent's call. */
		CHECK(syslet_ring_head(r) == r->user_tail + 1);
		CHECK(!reap_within(r, &c, 0) && c.caller_data == 1);
	}
	stats(&st);
	CHECK(st.submitted == 1 + VM_WAYS && st.completed == st.submitted &&
	      st.workers_now > 0);
	quick_start(r);
	CHECK(!syslet_drain());
	free(stack);
	free(r);
	return 0;
}

static void test_clone_vm(void **state)
{
	(void)state;
	run_case(clone_vm);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest plain[] = {
		cmocka_unit_test(test_storm),
		cmocka_unit_test(test_late_forever),
		cmocka_unit_test(test_cancel_drainer),
		cmocka_unit_test(test_epoch_wrap),
		cmocka_unit_test(test_fork_storm),
		cmocka_unit_test(test_fork_notifiers),
		cmocka_unit_test(test_clone_vm),
		cmocka_unit_test(test_turns),
		cmocka_unit_test(test_turns_most),
	};
	const struct CMUnitTest turns_limit_bug[] = {
		cmocka_unit_test(test_turns_limit),
	};
	const struct CMUnitTest raw[] = {
		cmocka_unit_test(test_fork_notifiers),
	};
	const char *g = argc > 1 ? argv[1] : "";

	if (!strcmp(g, "turns_limit"))
		return cmocka_run_group_tests(turns_limit_bug, NULL, NULL);
	if (!strcmp(g, "raw_notifiers")) {
		nf_raw = true;
		return cmocka_run_group_tests(raw, NULL, NULL);
	}
	return cmocka_run_group_tests(plain, NULL, NULL);
}
