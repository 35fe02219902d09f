/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: attacks from outside on held marks (a shard a watch found
 * not running covers nothing until one of its workers runs), real-time
 * submitters (wake.c's realtime() and the WATCH_OWN watch) and the
 * affinity baseline read at load (baseline.c). Two CPUs, a and b. Each
 * case runs in a forked child under an alarm; every wait is bounded and
 * fails loudly.
 *
 * Time bounds: as in test_realtime_holder.c, a call that only RT throttling
 * frees (sched_rt_runtime_us: 950 ms of each second) is told from one a
 * watch frees (25 ms) by BOUND_MS, 500 ms; every wait that must end is
 * bounded by BOUND_S. Figures (latencies, wake-ups) are printed, never
 * asserted.
 *
 * Groups (argv[1]): none, the cases without real-time threads; "fifo",
 * the real-time cases that pass; "own_spinner", "grow_pinned",
 * "stale_rt", "unpriv_watch", "dlopen", "dlopen_tls", "big_tls",
 * "deadline", "escape": one finding each (tests/meson.build registers
 * the open ones should_fail; each case's comment names the cause); "measure":
 * figures, not a test (spaced calls from real-time callers: the
 * manager's context switches, workers, sleeps); "own_blocked" and
 * "controls": flaky, not registered (see the cases); "launch",
 * "escape_child", "dlopen_run", "big_tls_run", "big_tls_nproc_run",
 * "cpuset_run": the exec'd
 * side of a case.
 *
 * Real-time cases run alone (is_parallel: false) and, by hand, under
 * `flock /tmp/syslet-fifo.lock` so that two such experiments never
 * overlap.
 *
 * Shared state: go, mix_done and watched, flags (seq_cst) written by one
 * thread of a case and polled by another (watched: by the holder of
 * test_hold_util.h, whose own flags it describes); the structs handed to
 * threads
 * are written before pthread_create() and read after pthread_join(),
 * but struct mixer's finished (seq_cst), polled by the signalling main
 * thread.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shard.h"
#include "test_hold_util.h"
#include "test_sched_util.h"

#define ROUNDS 3
#define GROWTH_SLACK 4 /* runaway bound: see test_realtime_holder.c */

static _Atomic int go;

/*
 * Finding (own_spinner), fixed: a SCHED_FIFO thread on CPU a reaps a call
 * with a futex wait (syslet_ring_wait), then polls the ring for its next
 * call. The worker of shard a that ran the first call claimed the spinner
 * role before posting (worker.c's run()), and the post woke the FIFO
 * thread, which preempted it at once: spinning(a) stays 1 while that
 * worker cannot run. The next call found spun(s) first in syslet__wake()
 * (wake.c) and returned: no sleeper of b woken, no watch asked. The call
 * waited for RT throttling (~950 ms), though CPU b is free. Now a
 * real-time caller (policy.c's answer, kept per thread) that counts on its
 * own shard's spinner wakes a sleeper of b, or asks a watch of its own
 * (WATCH_OWN), which starts a worker on b; a watch asked before, whose
 * look counts only older jobs, looks again for it (rt_asked). @helper:
 * shard b has a sleeping worker. @via: how the poller changes its policy,
 * each a path policy.c must see: pthread_setschedparam(), syscall() and
 * indirect() of SYS_sched_setscheduler.
 */
enum { VIA_PTHREAD, VIA_SYSCALL, VIA_INDIRECT, VIA_N };

struct poller {
	struct syslet_ring *r;
	uint64_t ms[ROUNDS];
	int caught, via;
};

static void set_policy_via(struct poller *pl, int policy)
{
	struct sched_param sp = { .sched_priority = policy == SCHED_OTHER ? 0 :
									    1 };
	struct indirect_registers regs;
	union indirect_params ip;

	switch (pl->via) {
	case VIA_PTHREAD:
		set_policy(policy);
		break;
	case VIA_SYSCALL:
		CHECK(!syscall(SYS_sched_setscheduler, 0, policy, &sp));
		break;
	default:
		memset(&ip, 0, sizeof(ip));
		ip.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)pl->r;
		FILL_IN(regs, SYS_sched_setscheduler, 0, policy, &sp);
		CHECK(!indirect(&regs, &ip, sizeof(ip), 0));
		break;
	}
}

static void *own_spinner_main(void *arg)
{
	struct poller *pl = arg;
	struct syslet_completion c;
	uint64_t t0;
	int i, tries;

	CHECK(!pin_self(cpu_a));
	quick(pl->r, 3); /* policy.c's answer read: not real-time */
	set_policy_via(pl, SCHED_FIFO); /* seen by policy.c, or round 0 fails */
	for (i = 0; i < ROUNDS; i++) {
		for (tries = 0; tries < 100; tries++) {
			quick(pl->r, 1); /* futex wait: shard a's worker runs */
			if (atomic_load(&syslet__pool.shards[cpu_a].spinning))
				break;
			/* Not caught: shard a's worker may be asleep. */
			set_policy_via(pl, SCHED_OTHER);
			quick(pl->r, 3);
			set_policy_via(pl, SCHED_FIFO);
		}
		pl->caught += tries < 100;
		t0 = syslet__now_ns();
		CHECK(!submit(pl->r, SYS_getppid, 0, 0, 0, 2));
		CHECK(!reap_polling(pl->r, &c) && c.caller_data == 2);
		pl->ms[i] = tries < 100 ? (syslet__now_ns() - t0) / NS_MS : 0;
		/* Let the preempted worker go (not sync: it ends the round). */
		set_policy_via(pl, SCHED_OTHER);
		quick(pl->r, 3);
		set_policy_via(pl, SCHED_FIFO);
	}
	set_policy_via(pl, SCHED_OTHER);
	return NULL;
}

static int own_spinner_child(long pin, int order, bool helper, int via)
{
	struct poller pl = { .r = ring_new(64), .via = via };
	uint64_t worst = 0;
	pthread_t t;
	int i;

	CHECK(pl.r);
	cpus(order);
	config(pin, -1, 0);
	/* The pool's first worker is shard a's. */
	CHECK(!pin_self(cpu_a));
	quick(pl.r, 0);
	if (helper)
		CHECK(!syslet__worker_spawn(&syslet__pool.shards[cpu_b]));
	CHECK(!pin_self(cpu_b));
	CHECK(!pthread_create(&t, NULL, own_spinner_main, &pl));
	CHECK(!pthread_join(t, NULL));
	for (i = 0; i < ROUNDS; i++)
		worst = pl.ms[i] > worst ? pl.ms[i] : worst;
	fprintf(stderr,
		"own spinner (pin %ld helper %d via %d): FIFO poller's calls "
		"%llu %llu %llu ms, spinner caught %d of %d\n",
		pin, helper, via, (unsigned long long)pl.ms[0],
		(unsigned long long)pl.ms[1], (unsigned long long)pl.ms[2],
		pl.caught, ROUNDS);
	CHECK(!syslet_drain());
	return worst <= BOUND_MS ? 0 : 2;
}

static void test_fifo_poller_own_spinner(void **state)
{
	int p, order, via, bad = 0;

	(void)state;
	for (via = 0; via < VIA_N; via++)
		for (p = 0; p < 2; p++)
			for (order = 0; order < 2; order++)
				bad += RUN_VARIANT(ROUNDS * 4 * BOUND_S,
						   own_spinner_child(1, order,
								     p, via),
						   "via %d helper %d order %d",
						   via, p, order);
	assert_int_equal(bad, 0);
}

/*
 * unseen_policy: a FIFO poller on CPU a whose policy another process set
 * (chrt -p), which policy.c cannot see, submits while its own shard's
 * worker sleeps: wake.c wakes that sleeper, which cannot run on CPU a,
 * and on policy.c's stale answer (not real-time) would ask no help: ~950
 * ms for RT throttling. That path makes a system call anyway, so it asks
 * the kernel again. The case is stale_rt's (below), the policy set by
 * chrt(1).
 */
static void chrt_self(int policy)
{
	char tid[32];
	pid_t pid;
	int st;

	snprintf(tid, sizeof(tid), "%d", (int)gettid());
	pid = fork();
	if (!pid) {
		execlp("chrt", "chrt", policy == SCHED_FIFO ? "-f" : "-o", "-p",
		       policy == SCHED_FIFO ? "1" : "0", tid, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      !WEXITSTATUS(st));
	CHECK(sched_getscheduler(0) == policy);
}

/*
 * blocked_beside: own_spinner's FIFO poller with a read of an empty pipe
 * in flight beside each polled call. A WATCH_OWN is pending, the manager
 * pinned to b; the poller then counts on a worker of b (its spinner, or a
 * sleeper woken). The rule for other callers must not move the manager
 * "here", to a, which the poller holds: later asks, finding the watch
 * asked, would leave it there (~950 ms). A real-time caller never pins
 * the manager to its own CPU, and moves a pending watch's off it.
 */
#define BESIDE_ROUNDS 8

static void *blocked_beside_main(void *arg)
{
	static char byte; /* the read's: stored by a worker, never freed */
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	uint64_t t0, ms, *worst = arg;
	int fd[2], i, tries;

	CHECK(r && !pipe(fd));
	CHECK(!pin_self(cpu_a));
	quick(r, 0);
	set_policy(SCHED_FIFO);
	for (i = 0; i < BESIDE_ROUNDS; i++) {
		CHECK(!submit(r, SYS_read, fd[0], (long)&byte, 1, 9));
		for (tries = 0; tries < 50; tries++) {
			quick(r, 1); /* futex wait: shard a's worker runs */
			if (atomic_load(&syslet__pool.shards[cpu_a].spinning))
				break;
		}
		t0 = syslet__now_ns();
		CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
		/* The read cannot end first: the pipe is empty. */
		CHECK(!reap_polling(r, &c) && c.caller_data == 2);
		ms = (syslet__now_ns() - t0) / NS_MS;
		*worst = ms > *worst ? ms : *worst;
		CHECK(write(fd[1], "x", 1) == 1);
		set_policy(SCHED_OTHER);
		CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 9 &&
		      c.status == 1);
		set_policy(SCHED_FIFO);
		/* Let a preempted worker go (not sync: it ends the round). */
		set_policy(SCHED_OTHER);
		quick(r, 3);
		set_policy(SCHED_FIFO);
	}
	set_policy(SCHED_OTHER);
	return NULL;
}

static int blocked_beside_child(int order)
{
	uint64_t worst = 0;
	pthread_t t;

	cpus(order);
	config(1, -1, 0);
	CHECK(!pthread_create(&t, NULL, blocked_beside_main, &worst));
	CHECK(!pthread_join(t, NULL));
	fprintf(stderr,
		"blocked beside (order %d): the FIFO poller's worst call of "
		"%d: %llu ms\n",
		order, BESIDE_ROUNDS, (unsigned long long)worst);
	CHECK(!syslet_drain());
	return worst <= BOUND_MS ? 0 : 2;
}

static void test_blocked_beside(void **state)
{
	int order, bad = 0;

	(void)state;
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(BESIDE_ROUNDS * 4 * BOUND_S,
				   blocked_beside_child(order), "order %d",
				   order);
	assert_int_equal(bad, 0);
}

/*
 * grow_behind: a FIFO poller on CPU a submits GROW_READS reads of empty
 * pipes, then a quick call it polls for: every worker it gets blocks in
 * a read, and the quick call is last in the queue. A look that started
 * workers on b only if nothing of a was taken during the watch would
 * serve one job per two watches after the first (833 ms for 16 reads): a
 * look of a shard marked held starts want_step workers (doubling) for the
 * jobs that waited the whole watch.
 *
 * A worker started for CPU b with the manager's mask (both CPUs) until it
 * pins itself may be queued by the kernel on CPU a behind the poller,
 * counted as a worker to come, and run at RT throttling (~950 ms in 1 of
 * 40 runs of the group alone): a pinned worker is created on its CPU
 * alone (spawn.c).
 */
#define GROW_READS 16

/*
 * Then (moved_home): with the poller back to SCHED_OTHER and the reads
 * done, a FIFO thread holds the other CPU while a thread of CPU a makes
 * quick calls. Shard a's workers, moved to the other CPU, must not sleep
 * there for good (shard a kept marked held: ~950 ms a call): they sleep
 * allowed on both CPUs (pinned home again once they run there), 0-2 ms
 * here; calls that follow the FIFO thread's start at once take 3-99 ms
 * for the first, the kernel's wake-up placement then moving the worker
 * off the held CPU.
 */
static uint64_t calls_beside_holder(struct syslet_ring *r)
{
	struct holder h = { .policy = SCHED_FIFO };
	uint64_t t0, ms, worst = 0;
	int k, a = cpu_a;

	CHECK(POLL_WITHIN(BOUND_S, shard_asleep(a)));
	/* The holder holds "cpu_a": the other CPU, now. */
	cpu_a = cpu_b;
	cpu_b = a;
	start_holder(&h);
	CHECK(!pin_self(a));
	for (k = 0; k < 5; k++) {
		t0 = syslet__now_ns();
		quick(r, 100 + (uint64_t)k);
		ms = (syslet__now_ns() - t0) / NS_MS;
		worst = ms > worst ? ms : worst;
	}
	stop_holder(&h);
	cpu_b = cpu_a;
	cpu_a = a;
	return worst;
}

static int grow_behind_child(int order, long cap, bool then)
{
	static char bytes[GROW_READS]; /* stored by workers, never freed */
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	int fd[GROW_READS][2], k, seen = 0;
	uint64_t t0, ms, then_ms = 0;
	struct syslet_stats st;

	CHECK(r);
	for (k = 0; k < GROW_READS; k++)
		CHECK(!pipe(fd[k]));
	cpus(order);
	config(1, -1, cap);
	CHECK(!pin_self(cpu_a));
	quick(r, 0);
	set_policy(SCHED_FIFO);
	for (k = 0; k < GROW_READS; k++)
		CHECK(!submit(r, SYS_read, fd[k][0], (long)&bytes[k], 1,
			      10 + (uint64_t)k));
	t0 = syslet__now_ns();
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
	/* The reads cannot end first: their pipes are empty. */
	CHECK(!reap_polling(r, &c) && c.caller_data == 2);
	ms = (syslet__now_ns() - t0) / NS_MS;
	set_policy(SCHED_OTHER);
	for (k = 0; k < GROW_READS; k++)
		CHECK(write(fd[k][1], "x", 1) == 1);
	for (k = 0; k < GROW_READS; k++) {
		CHECK(!reap_within(r, &c, BOUND_S) && c.status == 1 &&
		      c.caller_data >= 10 && c.caller_data < 10 + GROW_READS);
		seen |= 1 << (c.caller_data - 10);
	}
	CHECK(seen == (1 << GROW_READS) - 1);
	CHECK(!syslet_stats(&st, sizeof(st)));
	if (then)
		then_ms = calls_beside_holder(r);
	fprintf(stderr,
		"grow behind (order %d, cap %ld): the FIFO poller's call "
		"behind %d reads: %llu ms, workers peak %u; then %llu ms\n",
		order, cap, GROW_READS, (unsigned long long)ms, st.workers_peak,
		(unsigned long long)then_ms);
	CHECK(!syslet_drain());
	/*
	 * Growth bounded by demand: the calls and a spinner per CPU (20-29
	 * and once 47 for 17 calls if workers just started for a held shard
	 * go uncounted).
	 */
	if (st.workers_peak > GROW_READS + 1 + (unsigned)syslet__pool.nshards)
		return 3;
	return ms <= BOUND_MS && then_ms <= BOUND_MS ? 0 : 2;
}

static void test_grow_behind(void **state)
{
	int order, bad = 0;

	(void)state;
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(4 * BOUND_S,
				   grow_behind_child(order, 0, true),
				   "order %d", order);
	assert_int_equal(bad, 0);
}

/*
 * grow_cap: grow_behind with a cap of GROW_READS + 1: the reads take
 * GROW_READS workers, and the one left is shard a's first, the spinner
 * the poller preempted on CPU a (its post woke the poller). Nothing can
 * be started for the quick call (case (e) of wake.c counts that worker),
 * so unless that worker moves the call waits for RT throttling (~950 ms).
 * A look that finds a shard held moves its idle workers (the preempted
 * one included) to the covering CPU (syslet__worker_move()), and growth
 * for a shard marked held starts its workers there: 30-48 ms.
 */
static void test_grow_cap(void **state)
{
	int order, bad = 0;

	(void)state;
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(4 * BOUND_S,
				   grow_behind_child(order, GROW_READS + 1,
						     false),
				   "order %d", order);
	assert_int_equal(bad, 0);
}

/*
 * rt_gaps: a FIFO poller on CPU a with a 2 ms busy gap between its calls.
 * Its first call moves shard a's idle worker to CPU b (a watch); a worker
 * that went home, pinned, before it slept would wait there behind the
 * poller, neither running nor asleep, and the next call would pay a watch
 * again (~50 ms). It sleeps allowed on both CPUs: only the first call
 * pays the watch.
 *
 * With churn: another thread, on CPU b, sets SCHED_OTHER on itself every
 * millisecond, from SCHED_OTHER (CHURN_OTHER) or from SCHED_FIFO
 * (CHURN_FIFO: it leaves real time each time, on CPU b), or on a
 * SCHED_OTHER thread that sleeps (CHURN_VICTIM: its policy before the
 * change is asked, not taken as unknown), or sets SCHED_RR and back on a
 * thread asleep on b (CHURN_RT_VICTIM), or makes a change the kernel
 * refuses (CHURN_REFUSED). A change that unmarked every held shard would
 * send the moved worker home pinned, behind the poller, at each nap
 * (15-19 of 30 calls >= 20 ms; 1 of 30 without the churn). Only a
 * thread that leaves real time unmarks (another thread's policy asked by
 * its id), and only the shard of the CPU it runs on, or last ran on.
 */
#define GAP_CALLS 30

enum {
	CHURN_NONE,
	CHURN_OTHER,
	CHURN_FIFO,
	CHURN_VICTIM,
	CHURN_RT_VICTIM,
	CHURN_REFUSED
};

static _Atomic bool churn_stop;

/* The thread whose policy CHURN_VICTIM sets: asleep until the end. */
static void *victim(void *arg)
{
	(void)arg;
	CHECK(!pin_self(cpu_b));
	CHECK(POLL_WITHIN(BOUND_S, atomic_load(&churn_stop)));
	return NULL;
}

static void *churn(void *arg)
{
	struct timespec ms = { 0, NS_MS };
	int mode = (int)(intptr_t)arg;
	pthread_t t = pthread_self();

	CHECK(!pin_self(cpu_b));
	if (mode == CHURN_VICTIM || mode == CHURN_RT_VICTIM)
		CHECK(!pthread_create(&t, NULL, victim, NULL));
	while (!atomic_load(&churn_stop)) {
		if (mode == CHURN_FIFO)
			set_policy(SCHED_FIFO);
		if (mode == CHURN_RT_VICTIM)
			CHECK(!pthread_setschedparam(
				t, SCHED_RR, &(struct sched_param){ 1 }));
		if (mode == CHURN_REFUSED)
			CHECK(sched_setscheduler(-1, SCHED_OTHER,
						 &(struct sched_param){ 0 }) ==
				      -1 &&
			      errno == EINVAL);
		else
			CHECK(!pthread_setschedparam(
				t, SCHED_OTHER, &(struct sched_param){ 0 }));
		nanosleep(&ms, NULL); /* the program's pace, not a wait */
	}
	if (mode == CHURN_VICTIM || mode == CHURN_RT_VICTIM)
		CHECK(!pthread_join(t, NULL));
	return NULL;
}

static int rt_gaps_child(int order, int churning)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	uint64_t t0, ms, end, worst = 0;
	int k, slow = 0;
	pthread_t ch;

	CHECK(r);
	cpus(order);
	config(1, -1, 0);
	if (churning)
		CHECK(!pthread_create(&ch, NULL, churn,
				      (void *)(intptr_t)churning));
	CHECK(!pin_self(cpu_a));
	quick(r, 0);
	set_policy(SCHED_FIFO);
	for (k = 0; k < GAP_CALLS; k++) {
		t0 = syslet__now_ns();
		CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
		CHECK(!reap_polling(r, &c) && c.caller_data == 2);
		ms = (syslet__now_ns() - t0) / NS_MS;
		worst = k && ms > worst ? ms : worst;
		slow += ms >= 20;
		/* A busy gap: the poller keeps CPU a. */
		for (end = syslet__now_ns() + 2 * NS_MS;
		     syslet__now_ns() < end;)
			;
	}
	set_policy(SCHED_OTHER);
	if (churning) {
		atomic_store(&churn_stop, true);
		CHECK(!pthread_join(ch, NULL));
	}
	fprintf(stderr,
		"rt gaps (order %d, churn %d): %d of %d calls 20 ms or more, "
		"the worst after the first %llu ms\n",
		order, churning, slow, GAP_CALLS, (unsigned long long)worst);
	CHECK(!syslet_drain());
	/*
	 * The first call's watch, and a few more: a moved worker sleeps
	 * allowed on both CPUs, and the kernel may wake it on the poller's
	 * (without churn 1-3 of 30 in 100 runs alone; with it 1-3 alone,
	 * 4-6 beside a build; 15-17 of 30 before the fixes).
	 */
	return slow <= (churning ? 6 : 4) ? 0 : 2;
}

static void test_rt_gaps(void **state)
{
	int order, churning, bad = 0;

	(void)state;
	for (churning = CHURN_NONE; churning <= CHURN_REFUSED; churning++)
		for (order = 0; order < 2; order++)
			bad += RUN_VARIANT(4 * BOUND_S,
					   rt_gaps_child(order, churning),
					   "order %d churn %d", order,
					   churning);
	assert_int_equal(bad, 0);
}

/*
 * leave_other: a FIFO poller that another thread sends back to
 * SCHED_OTHER with pthread_setschedparam() lets its CPU go, so its marked
 * shard is unmarked. glibc answers pthread_getschedparam() for another
 * thread from its descriptor, where it keeps the policy it last set
 * (SCHED_OTHER, by an earlier no-op change), not the poller's own
 * sched_setscheduler(SCHED_FIFO): asked that way before the change, the
 * poller "is not real-time" and the mark would stay, so the library asks
 * the kernel, by the poller's id (policy.c's syslet__policy_after()).
 */
struct leaver {
	struct syslet_ring *r;
	_Atomic int start, polled;
	_Atomic bool marked;
};

static void *leaver_main(void *arg)
{
	struct leaver *l = arg;
	struct syslet_completion c;
	uint64_t end;

	CHECK(!pin_self(cpu_a));
	CHECK(POLL_WITHIN(BOUND_S, atomic_load(&l->start)));
	quick(l->r, 1);
	CHECK(POLL_WITHIN(BOUND_S, shard_asleep(cpu_a)));
	CHECK(!sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ 1 }));
	CHECK(!submit(l->r, SYS_getppid, 0, 0, 0, 2));
	CHECK(!reap_polling(l->r, &c) && c.caller_data == 2);
	atomic_store(&l->marked, atomic_load(&syslet__pool.shards[cpu_a].held));
	atomic_store(&l->polled, 1);
	/* Holds CPU a until the other thread sends it back (bounded). */
	for (end = now_ms() + BOUND_S * 1000;
	     sched_getscheduler(0) != SCHED_OTHER;)
		CHECK(now_ms() < end);
	return NULL;
}

static int leave_other_child(int order)
{
	struct leaver l = { .r = ring_new(64) };
	struct sched_param o = { 0 };
	pthread_t t;
	int held;

	CHECK(l.r);
	cpus(order);
	config(1, -1, 0);
	CHECK(!pin_self(cpu_b));
	CHECK(!pthread_create(&t, NULL, leaver_main, &l));
	/* A no-op change: glibc's descriptor now says SCHED_OTHER. */
	CHECK(!pthread_setschedparam(t, SCHED_OTHER, &o));
	atomic_store(&l.start, 1);
	CHECK(POLL_WITHIN(BOUND_S, atomic_load(&l.polled)));
	CHECK(!pthread_setschedparam(t, SCHED_OTHER, &o));
	held = atomic_load(&syslet__pool.shards[cpu_a].held);
	CHECK(!pthread_join(t, NULL));
	fprintf(stderr,
		"leave other (order %d): shard a marked %d by the poller's "
		"call, %d after another thread sent it back\n",
		order, (int)atomic_load(&l.marked), held);
	CHECK(!syslet_drain());
	/* Unmarked by the poller's call: nothing was tried. */
	return !atomic_load(&l.marked) ? 3 : held ? 2 : 0;
}

static void test_leave_other(void **state)
{
	int order, bad = 0;

	(void)state;
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(4 * BOUND_S, leave_other_child(order),
				   "order %d", order);
	assert_int_equal(bad, 0);
}

static int stale_rt_child(int order, bool mark, void (*setp)(int));

static void test_unseen_policy(void **state)
{
	int order, bad = 0;

	(void)state;
	if (system("chrt -p $$ >/dev/null 2>&1"))
		skip(); /* no chrt(1) */
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(ROUNDS * 4 * BOUND_S,
				   stale_rt_child(order, false, chrt_self),
				   "order %d", order);
	assert_int_equal(bad, 0);
}

/*
 * Finding (grow_pinned): a watch of shard a pins the manager to CPU a
 * (wake.c's ask(): syslet__manager_watch(s->cpu)); a SCHED_FIFO thread
 * then takes CPU a before the watch's look. A call on CPU b that needs a
 * new worker (shard b's only worker blocked in a read of an empty pipe,
 * no spinner, no sleeper) asks growth: ask() moves the manager only for a
 * watch, never for SYSLET__WANT_GROW, and syslet__manager_poke() wakes it
 * where it is pinned, behind the FIFO thread. Nothing is started until RT
 * throttling lets CPU a go (~950 ms), though CPU b is free and the cap
 * allows workers (SPEC 5).
 */
static _Atomic int watched;

/*
 * The holder's look once it holds CPU a: its call there was covered by
 * shard b's spinner (shard a has no worker), so a watch of shard a may
 * be pending, the manager pinned to CPU a.
 */
static void note_watch(void)
{
	atomic_store(&watched, atomic_load(&syslet__pool.shards[cpu_a].want) ==
				       SYSLET__WANT_WATCH);
}

/* A FIFO holder of CPU a that notes the watch (a case's own ring). */
static struct holder watch_holder(struct syslet_ring *r)
{
	return (struct holder){ .policy = SCHED_FIFO,
				.hold_s = 4 * BOUND_S,
				.nap = true,
				.on_hold = note_watch,
				.ring = r };
}

static int grow_pinned_child(int order)
{
	struct syslet_ring *r = ring_new(64), *rh = ring_new(64);
	struct holder h = watch_holder(rh);
	struct syslet_completion c;
	uint64_t t0, worst = 0, ms;
	int i, caught = 0, p[2];
	char sink;

	CHECK(r && rh && !pipe(p));
	cpus(order);
	/* Shard b's worker keeps spinning between the calls. */
	config(1, 50000000, 0);
	CHECK(!pin_self(cpu_b));
	for (i = 0; i < 2 * ROUNDS && caught < ROUNDS; i++) {
		quick(r, 0); /* b's worker spins */
		start_holder(&h);
		if (atomic_load(&watched)) {
			caught++;
			CHECK(!submit(r, SYS_read, p[0], (long)&sink, 1, 7));
			t0 = syslet__now_ns();
			CHECK(!submit(r, SYS_getppid, 0, 0, 0, 8));
			CHECK(!reap_within(r, &c, BOUND_S) &&
			      c.caller_data == 8);
			ms = (syslet__now_ns() - t0) / NS_MS;
			worst = ms > worst ? ms : worst;
			fprintf(stderr,
				"grow with the manager pinned behind FIFO on "
				"CPU %d: %llu ms\n",
				cpu_a, (unsigned long long)ms);
		}
		stop_holder(&h);
		if (atomic_load(&watched)) {
			CHECK(write(p[1], "x", 1) == 1);
			CHECK(!reap_within(r, &c, BOUND_S) &&
			      c.caller_data == 7);
		}
	}
	fprintf(stderr, "grow_pinned: caught %d of %d\n", caught, i);
	CHECK(!syslet_drain());
	return worst <= BOUND_MS ? 0 : 2;
}

static void test_fifo_grow_pinned(void **state)
{
	int order, bad = 0;

	(void)state;
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(4 * ROUNDS * BOUND_S,
				   grow_pinned_child(order),
				   "grow_pinned order %d", order);
	assert_int_equal(bad, 0);
}

/*
 * Mixed: on each CPU a thread makes quick calls at QD 4 beside a read of
 * an empty pipe it refills now and then, SIGUSR1 interrupts its waits
 * (syslet_ring_wait: EINTR, then it waits again), another thread turns
 * SYSLET_OPT_PIN on and off, and a SCHED_FIFO holder takes CPU a and
 * leaves in turns of HOLD_MS (marks set and cleared). Every call
 * completes exactly once (caller_data counted), within BOUND_S; the pool
 * stays within the watch tests' runaway bound.
 */
#define MIX_QD 4
#define MIX_CALLS 3000
#define MIX_READS 40
#define HOLD_MS 30

static _Atomic int mix_done; /* the pin toggler stops */

struct mixer {
	int cpu;
	pthread_t self;
	uint8_t seen[MIX_CALLS + MIX_READS];
	uint64_t worst_ns;
	_Atomic int finished;
};

static void on_usr1(int sig)
{
	(void)sig;
}

static void *mixer_main(void *arg)
{
	struct mixer *m = arg;
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	uint64_t t0[MIX_CALLS], lat;
	int i, sent = 0, quick_out = 0, reads = 0, out_reads = 0, p[2];
	int got = 0;
	char sink[MIX_READS];

	CHECK(r && !pipe(p) && !pin_self(m->cpu));
	for (; sent < MIX_QD; sent++, quick_out++) {
		t0[sent] = syslet__now_ns();
		CHECK(!submit(r, SYS_getppid, 0, 0, 0, (uint64_t)sent));
	}
	while (got < MIX_CALLS + MIX_READS) {
		/* One read at a time, blocked until a byte comes. */
		if (reads < MIX_READS && !out_reads &&
		    (!(got % 64) || !quick_out)) {
			CHECK(!submit(r, SYS_read, p[0], (long)&sink[reads], 1,
				      (uint64_t)(MIX_CALLS + reads)));
			reads++;
			out_reads++;
		}
		if (out_reads && (!(got % 16) || !quick_out))
			CHECK(write(p[1], "x", 1) == 1);
		/* Through EINTR: SIGUSR1 interrupts the waits. */
		CHECK(!reap_by(r, &c, now_ms() + BOUND_S * 1000));
		got++;
		CHECK(c.caller_data < MIX_CALLS + MIX_READS);
		CHECK(!m->seen[c.caller_data]++);
		if (c.caller_data >= MIX_CALLS) {
			CHECK((long)c.status == 1);
			out_reads--;
			continue;
		}
		quick_out--;
		lat = syslet__now_ns() - t0[c.caller_data];
		m->worst_ns = lat > m->worst_ns ? lat : m->worst_ns;
		if (sent < MIX_CALLS) {
			t0[sent] = syslet__now_ns();
			CHECK(!submit(r, SYS_getppid, 0, 0, 0, (uint64_t)sent));
			sent++;
			quick_out++;
		}
	}
	for (i = 0; i < MIX_CALLS + MIX_READS; i++)
		CHECK(m->seen[i] == 1);
	atomic_store(&m->finished, 1);
	close(p[0]);
	close(p[1]);
	return NULL;
}

static void *pin_toggler_main(void *arg)
{
	struct timespec ms = { 0, 3 * 1000000L };
	long v = 0;

	(void)arg;
	while (!atomic_load(&mix_done)) {
		CHECK(!syslet_config_set(SYSLET_OPT_PIN, v ^= 1));
		nanosleep(&ms, NULL); /* a pace, not sync */
	}
	return NULL;
}

static int mix_child(int order, bool fifo)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct timespec ms = { 0, 2 * 1000000L };
	struct mixer m[2] = { { 0 } };
	struct holder h = { .policy = SCHED_FIFO,
			    .churn_ms = HOLD_MS,
			    .nap = true };
	struct syslet_stats st;
	pthread_t tg;
	uint64_t end;
	int i;

	cpus(order);
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	atomic_store(&mix_done, 0);
	quick(ring_new(4), 0);
	for (i = 0; i < 2; i++) {
		m[i].cpu = i ? cpu_b : cpu_a;
		CHECK(!pthread_create(&m[i].self, NULL, mixer_main, &m[i]));
	}
	if (fifo)
		start_holder(&h);
	CHECK(!pthread_create(&tg, NULL, pin_toggler_main, NULL));
	end = syslet__now_ns() + 60ull * 1000000000ull;
	while (!atomic_load(&m[0].finished) || !atomic_load(&m[1].finished)) {
		CHECK(syslet__now_ns() < end);
		for (i = 0; i < 2; i++)
			if (!atomic_load(&m[i].finished))
				pthread_kill(m[i].self, SIGUSR1);
		nanosleep(&ms, NULL); /* signal pace, not sync */
	}
	for (i = 0; i < 2; i++)
		CHECK(!pthread_join(m[i].self, NULL));
	atomic_store(&mix_done, 1);
	if (fifo)
		stop_holder(&h);
	CHECK(!pthread_join(tg, NULL));
	stats(&st);
	fprintf(stderr,
		"mix (fifo %d, order %d): worst quick call %llu / %llu us, "
		"workers_peak %u (in flight <= %d)\n",
		fifo, order, (unsigned long long)m[0].worst_ns / 1000,
		(unsigned long long)m[1].worst_ns / 1000, st.workers_peak,
		2 * (MIX_QD + 1) + 1);
	CHECK(st.workers_peak <= GROWTH_SLACK * (2 * (MIX_QD + 1) + 1 + 2));
	CHECK(!syslet_drain());
	return 0;
}

static void mix_variants(bool fifo)
{
	int order, bad = 0;

	if (ncpus_allowed() < 2)
		skip();
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(90, mix_child(order, fifo),
				   "mix fifo %d order %d", fifo, order);
	assert_int_equal(bad, 0);
}

static void test_mix_other(void **state)
{
	(void)state;
	mix_variants(false);
}

static void test_fifo_mix(void **state)
{
	(void)state;
	mix_variants(true);
}

/*
 * Finding (unpriv_watch): the same pending watch of shard a (the manager
 * pinned to CPU a, a FIFO thread holding CPU a), and shard a has a
 * sleeping worker. Thread U, on CPU b, has dropped its own credentials
 * (setresuid(65534) by a raw system call: this thread only). Shard b's
 * worker is blocked in U's read; U's next call wakes shard a's sleeper
 * (it cannot run) and asks a watch of shard b: ask() moves the manager to
 * CPU b with sched_setaffinity() on the manager's thread id (manager.c's
 * move_to()), which the kernel refuses U (EPERM: another user's thread),
 * and syslet__manager_unpin_from() as well. The manager stays pinned
 * behind the FIFO thread: U's call waits for RT throttling. With U
 * privileged (the control, @unpriv false) the manager moves and the watch
 * answers in ~25 ms.
 */
struct unpriv {
	struct syslet_ring *r;
	int p0, unpriv;
	uint64_t ms;
};

static void *unpriv_main(void *arg)
{
	struct unpriv *u = arg;
	struct syslet_completion c;
	static char sink;
	uint64_t t0;

	CHECK(!pin_self(cpu_b));
	if (u->unpriv)
		CHECK(!syscall(SYS_setresuid, 65534, 65534, 65534));
	CHECK(!submit(u->r, SYS_read, u->p0, (long)&sink, 1, 7));
	/* Shard b's worker took the read and blocks in it. */
	CHECK(POLL_WITHIN(BOUND_S,
			  !atomic_load(&syslet__pool.shards[cpu_b].queued)));
	t0 = syslet__now_ns();
	CHECK(!submit(u->r, SYS_getppid, 0, 0, 0, 8));
	CHECK(!reap_within(u->r, &c, BOUND_S) && c.caller_data == 8);
	u->ms = (syslet__now_ns() - t0) / NS_MS;
	return NULL;
}

static int unpriv_child(int order, bool unpriv)
{
	struct syslet_ring *r = ring_new(64), *rh = ring_new(64);
	struct holder h = watch_holder(rh);
	struct unpriv u = { .unpriv = unpriv };
	struct syslet__shard *sa;
	struct syslet_completion c;
	int caught = 0, tries, p[2];
	pthread_t tu;

	CHECK(r && rh && !pipe(p));
	u.r = ring_new(64);
	u.p0 = p[0];
	cpus(order);
	config(1, 50000000, 0);
	CHECK(!pin_self(cpu_b));
	quick(r, 0);
	sa = &syslet__pool.shards[cpu_a];
	CHECK(!syslet__worker_spawn(sa));
	CHECK(POLL_WITHIN(BOUND_S, atomic_load(&sa->sleepers) > 0));
	for (tries = 0; tries < 50 && !caught; tries++) {
		/* Shard a's worker asleep again (it may have taken a call). */
		CHECK(POLL_WITHIN(BOUND_S,
				  atomic_load(&sa->sleepers) > 0 &&
					  !atomic_load(&sa->spinning)));
		quick(r, 0); /* b's worker spins */
		start_holder(&h);
		caught = atomic_load(&watched) &&
			 atomic_load(&sa->sleepers) > 0;
		if (caught) {
			CHECK(!pthread_create(&tu, NULL, unpriv_main, &u));
			CHECK(!pthread_join(tu, NULL));
		}
		stop_holder(&h);
	}
	CHECK(caught);
	CHECK(write(p[1], "x", 1) == 1);
	CHECK(!reap_within(u.r, &c, BOUND_S) && c.caller_data == 7);
	fprintf(stderr,
		"watch asked by a%s thread, the manager pinned behind FIFO "
		"on CPU %d: %llu ms\n",
		unpriv ? "n unprivileged" : " privileged", cpu_a,
		(unsigned long long)u.ms);
	CHECK(!syslet_drain());
	return u.ms <= BOUND_MS ? 0 : 2;
}

static void unpriv_variants(bool unpriv)
{
	int order, bad = 0;

	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(8 * BOUND_S, unpriv_child(order, unpriv),
				   "unpriv %d order %d", unpriv, order);
	assert_int_equal(bad, 0);
}

/*
 * The control, by hand ("controls"): 25-29 ms in 65 of 66 variants, 530
 * ms once (perhaps another session's real-time test).
 */
static void test_fifo_watch_privileged(void **state)
{
	(void)state;
	unpriv_variants(false);
}

static void test_fifo_watch_unprivileged(void **state)
{
	(void)state;
	unpriv_variants(true);
}

/*
 * Fork with held marks set: the child's shards are clean (held 0 on
 * every shard) and calls from both CPUs complete; the parent's calls too.
 * The marks are set by hand: a mark left by any path is inherited the
 * same way.
 */
static int fork_held_child(void)
{
	struct syslet_ring *r = ring_new(64);
	int i, j;
	pid_t pid;

	CHECK(r);
	cpus(0);
	for (j = 0; j < 2; j++) {
		CHECK(!pin_self(j ? cpu_a : cpu_b));
		quick(r, 1);
	}
	for (i = 0; i < 20; i++) {
		for (j = 0; j < syslet__pool.nshards; j++)
			atomic_store(&syslet__pool.shards[j].held, 1);
		pid = fork();
		CHECK(pid >= 0);
		if (!pid) {
			struct syslet_ring *rc = ring_new(64);

			alarm(2 * BOUND_S);
			CHECK(rc);
			for (j = 0; j < syslet__pool.nshards; j++)
				CHECK(!atomic_load(
					&syslet__pool.shards[j].held));
			for (j = 0; j < 4; j++) {
				CHECK(!pin_self(j & 1 ? cpu_a : cpu_b));
				quick(rc, 3);
			}
			CHECK(!syslet_drain());
			_exit(0);
		}
		for (j = 0; j < 4; j++) {
			CHECK(!pin_self(j & 1 ? cpu_a : cpu_b));
			quick(r, 2);
		}
		CHECK(wait_case(pid) == 0);
	}
	CHECK(!syslet_drain());
	return 0;
}

static void test_fork_held(void **state)
{
	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	assert_int_equal(
		RUN_VARIANT(20 * BOUND_S, fork_held_child(), "fork_held"), 0);
}

/*
 * A mark left on a shard that covers the caller's, with no worker there
 * (white-box: a mark the look set just before that shard's last sleeper
 * timed out and retired, worker.c's loop, where wake_ran() is not reached
 * after a retiring nap). Non-real-time callers on CPU a then never count
 * on shard b: each call of theirs must still complete (growth), and the
 * pool stay within SPEC 5's bound.
 */
static int stale_child(long pin)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_stats st;
	int i;

	CHECK(r);
	cpus(0);
	config(pin, -1, 0);
	CHECK(!pin_self(cpu_a));
	quick(r, 0);
	atomic_store(&syslet__pool.shards[cpu_b].held, 1);
	for (i = 0; i < 200; i++)
		quick(r, (uint64_t)i + 1);
	stats(&st);
	fprintf(stderr, "stale mark (pin %ld): workers_peak %u\n", pin,
		st.workers_peak);
	/* One call pending at a time, 2 CPUs: 3. */
	CHECK(st.workers_peak <= 3);
	CHECK(!syslet_drain());
	return 0;
}

static void test_stale_mark(void **state)
{
	int p, bad = 0;

	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	for (p = 0; p < 2; p++)
		bad += RUN_VARIANT(4 * BOUND_S, stale_child(p), "pin %d", p);
	assert_int_equal(bad, 0);
}

/*
 * A FIFO poller on CPU a (the 2007 way: it polls the ring), shard a's
 * worker asleep (spin 0), shard b without a worker: the WATCH_OWN starts
 * a worker on shard b that steals the call (control, @mark false).
 * Finding (stale_rt), @mark true: the same with a held mark left
 * on shard b. near(p, s, any) skips a held shard (wake.c's near()), so
 * syslet__wake() asks no WATCH_OWN, and the look would not find a shard
 * to start on either: the call waits for RT throttling, CPU b idle. A
 * shard with no worker never clears its mark (only its workers run
 * syslet__wake_ran()). The mark is set by hand; its natural path is a
 * race: hold() reads spinning(b) of a spinner that has passed its last
 * wake_ran() (every 32 turns of spin()), which then naps and, above
 * SYSLET_OPT_MIN_WORKERS (0 allowed), retires without another.
 */
static void show_shards(const char *when);

static int stale_rt_child(int order, bool mark, void (*setp)(int))
{
	struct syslet_ring *r = ring_new(64);
	struct syslet__shard *sa;
	struct syslet_completion c;
	uint64_t t0, ms, worst = 0;
	int i;

	CHECK(r);
	cpus(order);
	config(1, 0, 0);
	CHECK(!pin_self(cpu_a));
	for (i = 0; i < ROUNDS; i++) {
		quick(r, 0);
		sa = &syslet__pool.shards[cpu_a];
		CHECK(POLL_WITHIN(BOUND_S,
				  atomic_load(&sa->sleepers) > 0 &&
					  atomic_load(&sa->idle) ==
						  atomic_load(&sa->sleepers)));
		if (mark)
			atomic_store(&syslet__pool.shards[cpu_b].held, 1);
		setp(SCHED_FIFO);
		t0 = syslet__now_ns();
		CHECK(!submit(r, SYS_getppid, 0, 0, 0, 1));
		/* Not done after 100 ms: say what the shards hold then. */
		while (syslet_ring_head(r) == r->user_tail &&
		       syslet__now_ns() - t0 < 100 * NS_MS)
			;
		if (syslet_ring_head(r) == r->user_tail)
			show_shards("poller after 100 ms");
		CHECK(!reap_polling(r, &c) && c.caller_data == 1);
		ms = (syslet__now_ns() - t0) / NS_MS;
		setp(SCHED_OTHER);
		worst = ms > worst ? ms : worst;
		fprintf(stderr,
			"stale_rt (mark %d): the FIFO poller's call on CPU %d: "
			"%llu ms\n",
			mark, cpu_a, (unsigned long long)ms);
	}
	CHECK(!syslet_drain());
	return worst <= BOUND_MS ? 0 : 2;
}

/*
 * Flaky, not registered (own_blocked): the same FIFO poller queues a
 * read of an empty pipe, then a quick call, and polls for the quick one.
 * WATCH_OWN's look starts one worker on shard b (want_step is 1), which
 * steals the read (FIFO order) and blocks in it; its fan-out
 * (syslet__wake_busy(), then the manager's recheck()) calls
 * syslet__wake(a) from threads that are not real-time, where wake_one(a)
 * finds sleepers(a) > 0 (the sleeper woken at submit, held behind the
 * poller, has not counted itself out) and returns (c). Seen on a loaded
 * 2-CPU VM: the quick call after 50-94 ms in most variants (a second
 * look), over BOUND_MS in 4 of 20 (344-950 ms), and over BOUND_S when
 * another session's real-time tests held the other CPU. By hand:
 * `test-realtime_callers own_blocked`.
 */
static void visit_mgr_place(long tid, const char *name, void *arg)
{
	char path[64], buf[512], *p;
	cpu_set_t m;
	FILE *f;
	int i, cpu = -1;

	if (strcmp(name, "syslet/mgr\n"))
		return;
	snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')'))) {
		/* Field 39, "processor": the 37th after the name. */
		for (i = 0; i < 37 && p; i++)
			p = strchr(p + 1, ' ');
		if (p)
			cpu = atoi(p + 1);
	}
	if (f)
		fclose(f);
	CPU_ZERO(&m);
	sched_getaffinity((pid_t)tid, sizeof(m), &m);
	fprintf(stderr, "%s: manager last on CPU %d, mask %s%s\n",
		(const char *)arg, cpu, CPU_ISSET(0, &m) ? "0 " : "",
		CPU_ISSET(1, &m) ? "1" : "");
}

/* Say where the manager is and what every shard holds (a stuck case). */
static void show_shards(const char *when)
{
	each_thread(visit_mgr_place, (void *)when);
	say_shards(when);
}

static int own_blocked_child(int order)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet__shard *sa;
	struct syslet_completion c;
	uint64_t t0, ms;
	int p[2];
	char sink;

	CHECK(r && !pipe(p));
	cpus(order);
	config(1, 0, 0);
	CHECK(!pin_self(cpu_a));
	quick(r, 0);
	sa = &syslet__pool.shards[cpu_a];
	CHECK(POLL_WITHIN(BOUND_S, atomic_load(&sa->sleepers) > 0 &&
					   atomic_load(&sa->idle) ==
						   atomic_load(&sa->sleepers)));
	set_policy(SCHED_FIFO);
	CHECK(!submit(r, SYS_read, p[0], (long)&sink, 1, 7));
	t0 = syslet__now_ns();
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 8));
	if (reap_polling(r, &c)) {
		set_policy(SCHED_OTHER);
		show_shards("own_blocked, after BOUND_S");
		t0 = syslet__now_ns();
		CHECK(!reap_within(r, &c, BOUND_S));
		fprintf(stderr,
			"own_blocked: completion %llu came %llu ms after the "
			"poller let CPU %d go\n",
			(unsigned long long)c.caller_data,
			(unsigned long long)(syslet__now_ns() - t0) / NS_MS,
			cpu_a);
		show_shards("own_blocked, then");
		return 3;
	}
	CHECK(c.caller_data == 8);
	ms = (syslet__now_ns() - t0) / NS_MS;
	set_policy(SCHED_OTHER);
	fprintf(stderr,
		"own_blocked: the FIFO poller's quick call behind its read, "
		"CPU %d: %llu ms, workers %u\n",
		cpu_a, (unsigned long long)ms, worker_threads());
	CHECK(write(p[1], "x", 1) == 1);
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 7);
	CHECK(!syslet_drain());
	return ms <= BOUND_MS ? 0 : 2;
}

static void test_fifo_poller_own_blocked(void **state)
{
	int order, bad = 0;

	(void)state;
	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(4 * BOUND_S, own_blocked_child(order),
				   "own_blocked order %d", order);
	assert_int_equal(bad, 0);
}

static void stale_rt_variants(bool mark)
{
	int order, bad = 0;

	for (order = 0; order < 2; order++)
		bad += RUN_VARIANT(4 * ROUNDS * BOUND_S,
				   stale_rt_child(order, mark, set_policy),
				   "stale_rt mark %d order %d", mark, order);
	assert_int_equal(bad, 0);
}

/*
 * The control, by hand ("controls"): 25 ms for the first call, 0 after,
 * in most rounds; 108-1,000 ms in 5 of 55 runs, all while another
 * session's SCHED_FIFO tests ran on both CPUs (ps: test-manager_placement,
 * FF, CPUs 0 and 1). 100 ms into such a poll: want(s) still WATCH_OWN,
 * no worker started yet, the manager on the covering CPU with that CPU as
 * its mask: it waited for that CPU, not a fault shown.
 */
static void test_fifo_poller_unmarked(void **state)
{
	(void)state;
	stale_rt_variants(false);
}

static void test_fifo_poller_stale_mark(void **state)
{
	(void)state;
	stale_rt_variants(true);
}

/*
 * Real-time submitters that do not hold their CPU: one thread per CPU,
 * SCHED_FIFO, SCHED_RR, SCHED_FIFO | SCHED_RESET_ON_FORK, or SCHED_OTHER
 * (the baseline), each making STREAM_CALLS quick calls at QD 1 reaped
 * with a futex wait, beside a read blocked on an empty pipe. Every call
 * completes; workers_peak stays within SPEC 5's bound (4 pending + 2
 * CPUs), with the slack the watch tests allow for a loaded machine; the
 * wake-ups per call (sleeps of workers) and the rate are printed.
 */
#define STREAM_CALLS 4000
#define STREAM_BOUND 6

struct streamer {
	int cpu, policy, flags;
	uint64_t ns;
};

static void *streamer_main(void *arg)
{
	struct streamer *s = arg;
	struct syslet_ring *r = ring_new(64), *rk = ring_new(4);
	struct syslet_completion c;
	struct sched_param sp = { .sched_priority = s->policy ? 1 : 0 };
	char sink;
	uint64_t t0;
	int i, p[2];

	CHECK(r && rk && !pipe(p));
	CHECK(!pin_self(s->cpu));
	CHECK(!sched_setscheduler(0, s->policy | s->flags, &sp));
	CHECK(!submit(rk, SYS_read, p[0], (long)&sink, 1, 9));
	while (!atomic_load(&go))
		;
	t0 = syslet__now_ns();
	for (i = 0; i < STREAM_CALLS; i++)
		quick(r, (uint64_t)i);
	s->ns = syslet__now_ns() - t0;
	sp.sched_priority = 0;
	CHECK(!sched_setscheduler(0, SCHED_OTHER, &sp));
	CHECK(write(p[1], "x", 1) == 1);
	CHECK(!reap_within(rk, &c, BOUND_S) && c.caller_data == 9);
	close(p[0]);
	close(p[1]);
	return NULL;
}

static int stream_child(int policy, int flags, long pin)
{
	struct streamer s[2];
	struct syslet_stats st;
	uint64_t sleeps, spins;
	pthread_t t[2];
	uint32_t i;

	config(pin, -1, 0);
	quick(ring_new(4), 0);
	for (i = 0; i < 2; i++) {
		s[i] = (struct streamer){ .cpu = allowed_cpu((int)i),
					  .policy = policy,
					  .flags = flags };
		CHECK(!pthread_create(&t[i], NULL, streamer_main, &s[i]));
	}
	atomic_store(&go, 1);
	for (i = 0; i < 2; i++)
		CHECK(!pthread_join(t[i], NULL));
	stats(&st);
	sleeps = st.sleeps;
	spins = st.spins;
	fprintf(stderr,
		"stream policy %d flags %#x pin %ld: %.2f / %.2f us a call, "
		"workers_peak %u (bound %d), sleeps %.3f / call, spins %.3f / "
		"call\n",
		policy, flags, pin, s[0].ns / 1000.0 / STREAM_CALLS,
		s[1].ns / 1000.0 / STREAM_CALLS, st.workers_peak, STREAM_BOUND,
		(double)sleeps / (2 * STREAM_CALLS),
		(double)spins / (2 * STREAM_CALLS));
	CHECK(st.workers_peak <= GROWTH_SLACK * STREAM_BOUND);
	CHECK(!syslet_drain());
	return 0;
}

static void stream_variants(int policy, int flags)
{
	int p, bad = 0;

	if (ncpus_allowed() < 2)
		skip();
	for (p = 0; p < 2; p++)
		bad += RUN_VARIANT(60, stream_child(policy, flags, p),
				   "policy %d pin %d", policy, p);
	assert_int_equal(bad, 0);
}

static void test_stream_other(void **state)
{
	(void)state;
	stream_variants(SCHED_OTHER, 0);
}

static void test_stream_fifo(void **state)
{
	(void)state;
	stream_variants(SCHED_FIFO, 0);
}

static void test_stream_rr(void **state)
{
	(void)state;
	stream_variants(SCHED_RR, 0);
}

static void test_stream_fifo_reset_on_fork(void **state)
{
	(void)state;
	stream_variants(SCHED_FIFO, SCHED_RESET_ON_FORK);
}

/*
 * SCHED_DEADLINE (sched_setattr; no glibc wrapper). A DEADLINE thread
 * may not create threads (clone: EAGAIN) unless SCHED_FLAG_RESET_ON_FORK.
 */
struct dl_case {
	uint64_t flags;
	bool nocap; /* the thread drops CAP_SYS_NICE once DEADLINE */
	bool same; /* its attributes after the first call: as before */
	int fork_err; /* its own raw fork after that call: 0 or errno */
	int first; /* the first submit's result */
	int again; /* after a failed first: later submits that worked */
	int calls; /* calls completed */
	uint64_t worst_us;
};

/* The calling thread is DEADLINE with exactly @flags. */
static bool same_deadline(uint64_t flags)
{
	struct dl_attr a;

	return !dl_get(0, &a) && a.policy == SCHED_DEADLINE && a.flags == flags;
}

/* A raw fork of the calling thread: 0 if it made a child, else errno. */
static int raw_fork_err(void)
{
	int st;
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);

	if (!pid)
		_exit(0);
	if (pid < 0)
		return errno;
	CHECK(waitpid(pid, &st, 0) == pid);
	return 0;
}

/* This thread's effective capabilities without CAP_SYS_NICE. */
static int drop_sys_nice(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct c[2];

	if (syscall(SYS_capget, &h, c))
		return -1;
	c[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
	return (int)syscall(SYS_capset, &h, c);
}

static void *deadline_main(void *arg)
{
	struct dl_case *d = arg;
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	uint64_t t0, us;
	int i;

	/* Unpinned: a DEADLINE thread's mask must be the root domain's. */
	CHECK(r);
	if (dl_set(0, d->flags, 2 * NS_MS)) {
		fprintf(stderr, "sched_setattr(SCHED_DEADLINE): %s\n",
			strerror(errno));
		_exit(77);
	}
	if (d->nocap)
		CHECK(!drop_sys_nice());
	d->first = submit(r, SYS_getppid, 0, 0, 0, 1);
	d->same = same_deadline(d->flags);
	d->fork_err = raw_fork_err();
	for (i = 0; d->first && i < 3; i++)
		d->again += !submit(r, SYS_getppid, 0, 0, 0, 1);
	if (d->first)
		return NULL;
	CHECK(!reap_within(r, &c, BOUND_S));
	for (i = 0; i < 500; i++) {
		t0 = syslet__now_ns();
		CHECK(!submit(r, SYS_getppid, 0, 0, 0, 2));
		CHECK(!reap_within(r, &c, BOUND_S));
		us = (syslet__now_ns() - t0) / 1000;
		d->worst_us = us > d->worst_us ? us : d->worst_us;
		d->calls++;
	}
	return NULL;
}

static int deadline_child(uint64_t flags, bool started, bool nocap)
{
	struct dl_case d = { .flags = flags, .nocap = nocap };
	pthread_t t;

	cpus(0);
	if (started)
		quick(ring_new(4), 0);
	CHECK(!pthread_create(&t, NULL, deadline_main, &d));
	CHECK(!pthread_join(t, NULL));
	fprintf(stderr,
		"deadline (flags %#llx, pool started before: %d, without "
		"CAP_SYS_NICE: %d): first submit %d (%d of 3 later ones "
		"worked), %d calls, worst %llu us; attributes after: %s, its "
		"own fork after: %s\n",
		(unsigned long long)flags, started, nocap, d.first, d.again,
		d.calls, (unsigned long long)d.worst_us,
		d.same ? "as before" : "CHANGED", strerror(d.fork_err));
	/* The thread as it was: its own forks fail as they did. */
	if (!d.same || d.fork_err != (flags ? 0 : EAGAIN))
		return 3;
	/*
	 * Without the capability the thread's sets differ from the pool's
	 * threads': its calls are refused up front (SPEC 5.1).
	 */
	if (nocap)
		return d.first == -EPERM && !d.again ? 0 : 4;
	return d.first ? 2 : 0;
}

static void deadline_variants(bool started)
{
	static const uint64_t flags[] = { 0, SCHED_FLAG_RESET_ON_FORK };
	int f, nocap, bad = 0;

	for (nocap = 0; nocap < 2; nocap++)
		for (f = 0; f < 2; f++)
			bad += RUN_VARIANT(
				4 * BOUND_S,
				deadline_child(flags[f], started, nocap),
				"deadline flags %#llx started %d nocap %d",
				(unsigned long long)flags[f], started, nocap);
	assert_int_equal(bad, 0);
}

/* A DEADLINE thread's calls once the pool runs: they complete. */
static void test_deadline_started(void **state)
{
	(void)state;
	deadline_variants(true);
}

/*
 * Finding (deadline, fixed): the pool's first call from a SCHED_DEADLINE
 * thread (without SCHED_FLAG_RESET_ON_FORK) failed with EAGAIN, and so
 * did every later one from it: the manager is created by the submitting
 * thread (manager.c's start_locked(), spawn.c), and the kernel refuses a
 * DEADLINE thread's clone (sched_fork(): -EAGAIN). Now spawn.c sets the
 * flag for the time of its pthread_create() and puts the thread back:
 * the calls complete, the thread's attributes are as before and its own
 * raw fork still fails with EAGAIN. Without CAP_SYS_NICE (needed to
 * change a DEADLINE thread) the first call is a clean EAGAIN.
 */
static void test_deadline_first_call(void **state)
{
	(void)state;
	deadline_variants(false);
}

/* ---- the affinity baseline (spawn.c) ---------------------------------- */

struct within {
	const cpu_set_t *set;
	int n;
	bool ok;
};

static void visit_within(long tid, const char *name, void *arg)
{
	struct within *w = arg;
	cpu_set_t m, and;

	if (strncmp(name, "syslet/", 7) ||
	    sched_getaffinity((pid_t)tid, sizeof(m), &m))
		return;
	w->n++;
	CPU_AND(&and, &m, w->set);
	if (!CPU_EQUAL(&and, &m)) {
		fprintf(stderr,
			"thread %ld (%.*s) runs on %d CPUs, outside the mask\n",
			tid, (int)strcspn(name, "\n"), name, CPU_COUNT(&m));
		w->ok = false;
	}
}

/* Every library thread's mask within @set; @n_out: how many looked at. */
static bool threads_within(const cpu_set_t *set, int *n_out)
{
	struct within w = { .set = set, .ok = true };

	each_thread(visit_within, &w);
	*n_out = w.n;
	return w.ok;
}

/*
 * The child exec'd by test_launch_mask under a mask of one CPU (taskset
 * -c N): with SYSLET_OPT_PIN off, the workers and the manager stay
 * within it, calls made from it complete, and from a thread that widened
 * its own mask after load too.
 */
static int launch_child(void)
{
	struct syslet_ring *r = ring_new(64);
	cpu_set_t launch;
	int i, n;

	CHECK(r && !sched_getaffinity(0, sizeof(launch), &launch));
	CHECK(CPU_COUNT(&launch) == 1);
	CHECK(!syslet_config_set(SYSLET_OPT_PIN, 0));
	for (i = 0; i < 50; i++)
		quick(r, (uint64_t)i);
	CHECK(threads_within(&launch, &n) && n >= 2);
	return 0;
}

static void test_launch_mask(void **state)
{
	char *argv[] = { "/proc/self/exe", "launch", NULL };
	int c, bad = 0;

	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	for (c = 0; c < 2; c++)
		bad += verdict(fork_exec(4 * BOUND_S, allowed_cpu(c), argv,
					 NULL),
			       "launch cpu %d", c);
	assert_int_equal(bad, 0);
}

/*
 * A cpuset that shrank after load (cgroup v1's cpuset hierarchy, where
 * this kernel keeps it): the process is loaded on CPU x alone (the load
 * mask), then moved into a cpuset of CPU y only, or loaded on both CPUs
 * and moved into CPU y's. The load mask is not allowed any more
 * (sched_setaffinity(): EINVAL, or only its intersection): spawn.c falls
 * back to the leader's mask. The pool starts, calls complete, and every
 * library thread stays within the cpuset, pinning on and off.
 */
#define CPUSET_ROOT "/sys/fs/cgroup/cpuset"

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs(text, f) >= 0;
	return fclose(f) || !ok ? -1 : 0;
}

static int cpuset_child(int cpu_y)
{
	struct syslet_ring *r = ring_new(64);
	char dir[128], path[160], val[32];
	cpu_set_t now;
	int i, n, pin, bad = 0;

	CHECK(r);
	snprintf(dir, sizeof(dir), CPUSET_ROOT "/syslet-held-%d", getpid());
	if (mkdir(dir, 0755))
		return 77;
	snprintf(path, sizeof(path), "%s/cpuset.cpus", dir);
	snprintf(val, sizeof(val), "%d", cpu_y);
	CHECK(!write_file(path, val));
	snprintf(path, sizeof(path), "%s/cpuset.mems", dir);
	CHECK(!write_file(path, "0"));
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(val, sizeof(val), "%d", getpid());
	CHECK(!write_file(path, val));
	CHECK(!sched_getaffinity(0, sizeof(now), &now));
	CHECK(CPU_COUNT(&now) == 1 && CPU_ISSET(cpu_y, &now));
	for (pin = 0; pin < 2; pin++) {
		CHECK(!syslet_config_set(SYSLET_OPT_PIN, pin));
		for (i = 0; i < 50; i++)
			quick(r, (uint64_t)i);
		if (!threads_within(&now, &n) || n < 2)
			bad = 1;
	}
	CHECK(!syslet_drain());
	/* Back to the root cpuset, then the empty one goes. */
	CHECK(!write_file(CPUSET_ROOT "/cgroup.procs", val));
	CHECK(!rmdir(dir));
	return bad ? 2 : 0;
}

static void test_cpuset_shrank(void **state)
{
	char arg[16], *argv[] = { "/proc/self/exe", "cpuset_run", arg, NULL };
	int v, bad = 0, st;

	(void)state;
	if (ncpus_allowed() < 2 || geteuid() ||
	    access(CPUSET_ROOT "/cgroup.procs", W_OK))
		skip();
	/* Loaded on x alone, then on both; the cpuset is y's. */
	for (v = 0; v < 4; v++) {
		snprintf(arg, sizeof(arg), "%d", allowed_cpu(1 - (v & 1)));
		st = wait_case(fork_exec(4 * BOUND_S,
					 v < 2 ? allowed_cpu(v & 1) : -1, argv,
					 NULL));
		if (st == 77)
			skip();
		if (st)
			fprintf(stderr, "cpuset variant %d: status %d\n", v,
				st);
		bad += st != 0;
	}
	assert_int_equal(bad, 0);
}

/*
 * Finding (dlopen): the library dlopen()ed by a thread whose own mask is
 * one CPU (a plugin loaded from a pinned I/O thread), the process's (the
 * leader's) mask both CPUs. The constructor reads the loading thread's
 * mask (spawn.c's read_load_mask(): sched_getaffinity(0)), not the
 * process's: every unpinned worker, and the manager, is confined to that
 * one CPU for good. The loaded copy is driven through its public ABI only
 * (a read of an empty pipe goes pending, a worker runs it).
 */
static void visit_narrow(long tid, const char *name, void *arg)
{
	cpu_set_t m;

	if (!strncmp(name, "syslet/", 7) && strcmp(name, "syslet/mgr\n") &&
	    !sched_getaffinity((pid_t)tid, sizeof(m), &m) &&
	    !CPU_EQUAL(&m, (const cpu_set_t *)((void **)arg)[0]))
		++*(int *)((void **)arg)[1];
}

/* Workers whose mask is not @set. */
static int workers_narrower(const cpu_set_t *set)
{
	int n = 0;
	void *arg[2] = { (void *)set, &n };

	each_thread(visit_narrow, arg);
	return n;
}

struct loader {
	int cpu; /* -1: the full mask */
	void *h;
};

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	char so[4096], exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	CHECK(n > 0);
	exe[n] = 0;
	snprintf(so, sizeof(so), "%s/../src/libsyslet.so", dirname(exe));
	if (l->cpu >= 0)
		CHECK(!pin_self(l->cpu));
	l->h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!l->h)
		fprintf(stderr, "dlopen: %s\n", dlerror());
	return NULL;
}

static int dlopen_child(int cpu)
{
	struct loader l = { .cpu = cpu };
	struct syslet_ring *r = ring_new(4);
	union indirect_params ip = { 0 };
	struct indirect_registers regs;
	int (*cfg_set)(enum syslet_option, long);
	long (*ind)(struct indirect_registers *, void *, size_t, int);
	cpu_set_t leader;
	char sink;
	pthread_t t;
	int p[2], n;
	long ret;

	CHECK(r && !pipe(p));
	CHECK(!sched_getaffinity(0, sizeof(leader), &leader));
	CHECK(CPU_COUNT(&leader) >= 2);
	CHECK(!pthread_create(&t, NULL, loader_main, &l));
	CHECK(!pthread_join(t, NULL));
	if (!l.h)
		return 3;
	/* POSIX's way from dlsym()'s object pointer to a function's. */
	*(void **)&cfg_set = dlsym(l.h, "syslet_config_set");
	*(void **)&ind = dlsym(l.h, "indirect");
	CHECK(cfg_set && ind);
	CHECK(!cfg_set(SYSLET_OPT_PIN, 0));
	FILL_IN(regs, SYS_read, p[0], &sink, 1);
	ip.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)r;
	ip.syslet.caller_data = 5;
	ret = ind(&regs, &ip, sizeof(ip), 0);
	if (ret != -1 || errno != ESYSLETPENDING)
		fprintf(stderr, "indirect: %ld errno %d\n", ret, errno);
	CHECK(ret == -1 && errno == ESYSLETPENDING);
	CHECK(POLL_WITHIN(BOUND_S, worker_threads() >= 1));
	n = workers_narrower(&leader);
	if (n)
		fprintf(stderr,
			"dlopen from a thread on CPU %d: %d workers narrower "
			"than the process's mask\n",
			cpu, n);
	CHECK(write(p[1], "x", 1) == 1);
	CHECK(POLL_WITHIN(BOUND_S, syslet_ring_head(r) != r->user_tail));
	return n ? 2 : 0;
}

/*
 * Run dlopen_child() in a fresh process (the case's own binary, exec'd:
 * no thread of it runs yet): the loader thread on @cpu (-1: the full
 * mask). @tls: with glibc's surplus of static TLS raised (see below).
 */
static int dlopen_exec(int cpu, bool tls)
{
	char arg[16], *argv[] = { "/proc/self/exe", "dlopen_run", arg, NULL };
	char *env[] = { "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096",
			NULL };

	snprintf(arg, sizeof(arg), "%d", cpu);
	/* Without @tls, an empty environment (env + 1). */
	return verdict(fork_exec(4 * BOUND_S, -1, argv, tls ? env : env + 1),
		       "dlopen cpu %d tls %d", cpu, tls);
}

/* Loaded by a thread with the process's mask: workers keep it. */
static void test_dlopen_wide(void **state)
{
	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	assert_int_equal(dlopen_exec(-1, true), 0);
}

static void test_dlopen_narrow_thread(void **state)
{
	(void)state;
	if (ncpus_allowed() < 2)
		skip();
	assert_int_equal(dlopen_exec(allowed_cpu(0), true) +
				 dlopen_exec(allowed_cpu(1), true),
			 0);
}

/*
 * Finding (dlopen_tls): libsyslet.so cannot be dlopen()ed by a program
 * that did not link it: "cannot allocate memory in static TLS block".
 * Its initial-exec TLS (compiler.h's SYSLET_TLS; 2,096 bytes, 1,976 of
 * them notify.c's struct nstate) is more than glibc's surplus for
 * libraries loaded later (glibc.rtld.optional_static_tls, 512 bytes by
 * default). The same from python3's ctypes.CDLL().
 */
static void test_dlopen_plain(void **state)
{
	(void)state;
	assert_int_equal(dlopen_exec(-1, false), 0);
}

/*
 * Finding (big_tls): a program with a large static TLS (here glibc's
 * surplus raised to 128 KiB, the same as 128 KiB of __thread data in the
 * program: every thread's static TLS block lives on its stack) cannot
 * start the pool: the manager's stack is a fixed 64 KiB (manager.c's
 * MANAGER_STACK), the workers' SYSLET_OPT_STACK_SIZE (64 KiB), and
 * glibc's pthread_create() refuses a stack smaller than the static TLS
 * (EINVAL). The pool's first call fails, with EINVAL, every time.
 */
static int big_tls_child(void)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	int ret;

	CHECK(r);
	ret = submit(r, SYS_getppid, 0, 0, 0, 1);
	if (ret) {
		fprintf(stderr, "big static TLS: the first submit: %d\n", ret);
		return 2;
	}
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == 1);
	quick(r, 2);
	return 0;
}

static char big_tls_env[] = "GLIBC_TUNABLES=glibc.rtld.optional_static_tls="
			    "131072";

static void test_big_tls(void **state)
{
	char *argv[] = { "/proc/self/exe", "big_tls_run", NULL };
	char *env[] = { big_tls_env, NULL };

	(void)state;
	assert_int_equal(verdict(fork_exec(4 * BOUND_S, -1, argv, env), "big "
									"tls"),
			 0);
}

/*
 * Finding (aarch64 and ppc64le): under a small RLIMIT_STACK (64 or 128
 * KiB) and the same static TLS, a 64 KiB stack is below PTHREAD_STACK_MIN
 * (128 KiB there): glibc refuses the size, and where that goes unchecked
 * the thread gets glibc's default, which for such a limit is the static
 * TLS plus 2 KiB: SIGSEGV. Every stack the library sets is at least
 * PTHREAD_STACK_MIN (spawn.c). On x86_64 the same limit checks that the
 * learnt extra is enough.
 */
static void test_big_tls_small_rlimit(void **state)
{
	static const rlim_t kib[] = { 64, 128, 160 };
	char *argv[] = { "/proc/self/exe", "big_tls_run", NULL };
	char *env[] = { big_tls_env, NULL };
	struct rlimit rl;
	int bad = 0;
	size_t i;
	pid_t pid;

	(void)state;
	for (i = 0; i < sizeof(kib) / sizeof(kib[0]); i++) {
		pid = fork_case(4 * BOUND_S);
		assert_true(pid >= 0);
		if (!pid) {
			rl.rlim_cur = rl.rlim_max = kib[i] << 10;
			CHECK(!setrlimit(RLIMIT_STACK, &rl));
			execve(argv[0], argv, env);
			_exit(127);
		}
		bad += verdict(pid, "RLIMIT_STACK %lu KiB",
			       (unsigned long)kib[i]);
	}
	assert_int_equal(bad, 0);
}

/*
 * Finding (the same attack): with RLIMIT_NPROC reached and a big static
 * TLS, the pool's first call failed with EINVAL (the TLS probe could not
 * start a thread and its EINVAL was passed on), not SPEC 5's EAGAIN. The
 * exec'd side drops to an unprivileged uid with room for no thread.
 */
static int big_tls_nproc_child(void)
{
	struct rlimit rl = { 1, 1 };
	struct syslet_ring *r = ring_new(4);
	int ret;

	CHECK(r && !setrlimit(RLIMIT_NPROC, &rl));
	CHECK(!setresgid(65534, 65534, 65534) &&
	      !setresuid(65534, 65534, 65534));
	ret = submit(r, SYS_getppid, 0, 0, 0, 1);
	if (ret != -EAGAIN) {
		fprintf(stderr, "no thread possible: the first submit: %d\n",
			ret);
		return 1;
	}
	return 0;
}

static void test_big_tls_nproc(void **state)
{
	char *argv[] = { "/proc/self/exe", "big_tls_nproc_run", NULL };
	char *env[] = { big_tls_env, NULL };

	(void)state;
	if (geteuid())
		skip();
	assert_int_equal(verdict(fork_exec(4 * BOUND_S, -1, argv, env), "big "
									"tls, "
									"npro"
									"c"),
			 0);
}

/*
 * Finding (escape): the program runs under `taskset -c B` (its mask at
 * load, and every thread's, is CPU b), pinning on. Its SCHED_FIFO thread
 * on CPU b polls for a call; shard b's worker sleeps, no other shard has
 * one: syslet__wake() asks WATCH_OWN with a covering shard's CPU, a,
 * which the program excluded. ask() pins the manager to CPU a
 * (manager.c's move_to(): sched_setaffinity() checks the cpuset, not the
 * process's mask), and the look starts a worker homed on shard a, pinned
 * to CPU a (wake.c's syslet__wake_grow(), worker.c): library threads run
 * where `taskset` said the program must not. Checked here: every library
 * thread's mask within the launch mask, after the poller's call.
 */
static int escape_child(void)
{
	struct syslet_ring *r = ring_new(64);
	struct syslet_completion c;
	cpu_set_t launch;
	uint64_t t0, ms;
	int n, i;
	bool ok;

	CHECK(r && !sched_getaffinity(0, sizeof(launch), &launch));
	CHECK(CPU_COUNT(&launch) == 1);
	CHECK(!syslet_config_set(SYSLET_OPT_PIN, 1));
	CHECK(!syslet_config_set(SYSLET_OPT_SPIN_NS, 0));
	quick(r, 0);
	/* Shard b's worker asleep (spin 0: no spinner). */
	i = sched_getcpu();
	CHECK(POLL_WITHIN(BOUND_S,
			  atomic_load(&syslet__pool.shards[i].sleepers) > 0));
	set_policy(SCHED_FIFO);
	t0 = syslet__now_ns();
	CHECK(!submit(r, SYS_getppid, 0, 0, 0, 1));
	CHECK(!reap_polling(r, &c) && c.caller_data == 1);
	ms = (syslet__now_ns() - t0) / NS_MS;
	set_policy(SCHED_OTHER);
	ok = threads_within(&launch, &n);
	/* A worker homed outside the mask pins itself there (worker.c). */
	for (i = 0; i < syslet__pool.nshards; i++)
		if (!CPU_ISSET(i, &launch) &&
		    atomic_load(&syslet__pool.shards[i].started)) {
			fprintf(stderr,
				"escape: %llu workers started for shard %d, "
				"outside the launch mask\n",
				(unsigned long long)atomic_load(
					&syslet__pool.shards[i].started),
				i);
			ok = false;
		}
	fprintf(stderr,
		"escape: the FIFO poller's call took %llu ms, %d "
		"library threads, %s\n",
		(unsigned long long)ms, n,
		ok ? "all within the launch mask" : "some outside it");
	CHECK(!syslet_drain());
	return ok ? 0 : 2;
}

static void test_escape_launch_mask(void **state)
{
	char *argv[] = { "/proc/self/exe", "escape_child", NULL };
	int c, bad = 0;

	(void)state;
	for (c = 0; c < 2; c++)
		bad += verdict(fork_exec(4 * BOUND_S, allowed_cpu(c), argv,
					 NULL),
			       "escape cpu %d", c);
	assert_int_equal(bad, 0);
}

/* ---- figures, not a test ("measure") ---------------------------------- */

/*
 * Spaced calls (1 ms apart, spin 0: every call wakes a sleeper) from one
 * thread on CPU a, SCHED_OTHER or SCHED_FIFO (@policy), that blocks in
 * syslet_ring_wait (it holds nothing): the manager's context switches
 * (WATCH_OWN asks), workers started, sleeps, per call. @leader_fifo: the
 * main thread is SCHED_FIFO when the pool starts (workers take its
 * policy, spawn.c), the caller SCHED_OTHER.
 */
static int spaced_child(int policy, bool leader_fifo)
{
	struct syslet_ring *r = ring_new(64);
	struct timespec gap = { 0, 1000000L };
	struct syslet_stats st0, st;
	long sw0;
	int i, n = 500;
	uint64_t t0, total = 0;

	CHECK(r);
	cpus(0);
	config(1, 0, 0);
	CHECK(!pin_self(cpu_a));
	if (leader_fifo)
		set_policy(SCHED_FIFO);
	quick(r, 0);
	if (leader_fifo)
		set_policy(SCHED_OTHER);
	CHECK(!pin_self(cpu_b));
	quick(r, 0);
	CHECK(!pin_self(cpu_a));
	quick(r, 0);
	stats(&st0);
	sw0 = manager_switches();
	set_policy(policy);
	for (i = 0; i < n; i++) {
		nanosleep(&gap, NULL); /* spacing, not sync */
		t0 = syslet__now_ns();
		quick(r, 1);
		total += syslet__now_ns() - t0;
	}
	set_policy(SCHED_OTHER);
	stats(&st);
	printf("spaced calls, caller policy %d, leader FIFO %d: %.1f us a "
	       "call, manager switches %.2f / call, workers started %llu, "
	       "sleeps %.2f / call, workers_peak %u\n",
	       policy, leader_fifo, total / 1000.0 / n,
	       (double)(manager_switches() - sw0) / n,
	       (unsigned long long)(st.workers_started - st0.workers_started),
	       (double)(st.sleeps - st0.sleeps) / n, st.workers_peak);
	return 0;
}

static int measure(void)
{
	static const int cases[][2] = { { SCHED_OTHER, 0 },
					{ SCHED_FIFO, 0 },
					{ SCHED_RR, 0 },
					{ SCHED_OTHER, 1 } };
	size_t i;
	pid_t pid;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fflush(stdout);
		pid = fork_case(60);
		if (!pid) {
			spaced_child(cases[i][0], cases[i][1]);
			fflush(stdout);
			_exit(0);
		}
		if (wait_case(pid))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest open[] = {
		cmocka_unit_test(test_fork_held),
		cmocka_unit_test(test_stale_mark),
		cmocka_unit_test(test_stream_other),
		cmocka_unit_test(test_launch_mask),
		cmocka_unit_test(test_dlopen_wide),
		cmocka_unit_test(test_mix_other),
		cmocka_unit_test(test_cpuset_shrank),
	};
	const struct CMUnitTest fifo[] = {
		cmocka_unit_test(test_stream_fifo),
		cmocka_unit_test(test_stream_rr),
		cmocka_unit_test(test_stream_fifo_reset_on_fork),
		cmocka_unit_test(test_deadline_started),
		cmocka_unit_test(test_fifo_mix),
	};
	const struct CMUnitTest controls[] = {
		cmocka_unit_test(test_fifo_poller_unmarked),
		cmocka_unit_test(test_fifo_watch_privileged),
	};
	const struct CMUnitTest unpriv_watch[] = {
		cmocka_unit_test(test_fifo_watch_unprivileged),
	};
	const struct CMUnitTest own_blocked[] = {
		cmocka_unit_test(test_fifo_poller_own_blocked),
	};
	const struct CMUnitTest stale_rt[] = {
		cmocka_unit_test(test_fifo_poller_stale_mark),
	};
	const struct CMUnitTest own_spinner[] = {
		cmocka_unit_test(test_fifo_poller_own_spinner),
		cmocka_unit_test(test_unseen_policy),
		cmocka_unit_test(test_blocked_beside),
		cmocka_unit_test(test_grow_behind),
		cmocka_unit_test(test_grow_cap),
		cmocka_unit_test(test_rt_gaps),
		cmocka_unit_test(test_leave_other),
	};
	const struct CMUnitTest dlopen_narrow[] = {
		cmocka_unit_test(test_dlopen_narrow_thread),
	};
	const struct CMUnitTest big_tls[] = {
		cmocka_unit_test(test_big_tls),
		cmocka_unit_test(test_big_tls_small_rlimit),
		cmocka_unit_test(test_big_tls_nproc),
	};
	const struct CMUnitTest dlopen_tls[] = {
		cmocka_unit_test(test_dlopen_plain),
	};
	const struct CMUnitTest grow_pinned[] = {
		cmocka_unit_test(test_fifo_grow_pinned),
	};
	const struct CMUnitTest deadline[] = {
		cmocka_unit_test(test_deadline_first_call),
	};
	const struct CMUnitTest escape[] = {
		cmocka_unit_test(test_escape_launch_mask),
	};
	const char *g = argc > 1 ? argv[1] : "";

	if (!strcmp(g, "launch"))
		return launch_child();
	if (!strcmp(g, "escape_child"))
		return escape_child();
	if (!strcmp(g, "dlopen_run") && argc > 2)
		return dlopen_child(atoi(argv[2]));
	if (!strcmp(g, "cpuset_run") && argc > 2)
		return cpuset_child(atoi(argv[2]));
	if (!strcmp(g, "big_tls_run"))
		return big_tls_child();
	if (!strcmp(g, "big_tls_nproc_run"))
		return big_tls_nproc_child();
	if (!strcmp(g, "big_tls"))
		return cmocka_run_group_tests(big_tls, NULL, NULL);
	if (!strcmp(g, "dlopen_tls"))
		return cmocka_run_group_tests(dlopen_tls, NULL, NULL);
	if (!*g)
		return cmocka_run_group_tests(open, NULL, NULL);
	if (!strcmp(g, "dlopen"))
		return cmocka_run_group_tests(dlopen_narrow, NULL, NULL);
	/* Real-time threads: root only; 77 is meson's skip. */
	if (rt_skip())
		return 77;
	if (!strcmp(g, "fifo"))
		return cmocka_run_group_tests(fifo, NULL, NULL);
	if (!strcmp(g, "measure"))
		return measure();
	if (!strcmp(g, "own_spinner")) {
		if (argc > 2) /* one case by name, e.g. test_grow_behind */
			cmocka_set_test_filter(argv[2]);
		return cmocka_run_group_tests(own_spinner, NULL, NULL);
	}
	if (!strcmp(g, "unpriv_watch"))
		return cmocka_run_group_tests(unpriv_watch, NULL, NULL);
	if (!strcmp(g, "controls"))
		return cmocka_run_group_tests(controls, NULL, NULL);
	if (!strcmp(g, "own_blocked"))
		return cmocka_run_group_tests(own_blocked, NULL, NULL);
	if (!strcmp(g, "stale_rt"))
		return cmocka_run_group_tests(stale_rt, NULL, NULL);
	if (!strcmp(g, "grow_pinned"))
		return cmocka_run_group_tests(grow_pinned, NULL, NULL);
	if (!strcmp(g, "deadline"))
		return cmocka_run_group_tests(deadline, NULL, NULL);
	if (!strcmp(g, "escape"))
		return cmocka_run_group_tests(escape, NULL, NULL);
	return 1;
}
