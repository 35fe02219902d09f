/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the attack tests on the pool under held CPUs
 * (test_realtime_callers.c, test_manager_placement.c, test_realtime_holder.c): two
 * CPUs a and b, the calling thread's scheduling policy, quick calls
 * reaped with a bound, a holder thread that keeps CPU a (SCHED_FIFO,
 * SCHED_RR, or a SCHED_OTHER busy loop), each variant of a case in a
 * forked child with its verdict said on stderr, what the shards hold.
 * Every wait is bounded and fails loudly (CHECK, in the case's child).
 *
 * Time bounds: BOUND_S is the bound of every wait that must end, one no
 * slow scheduler reaches; BOUND_MS, a call on a free CPU, is 20 watches
 * and half an RT-throttled second (sched_rt_runtime_us: 950 ms of each
 * second): only a protocol fault reaches it (each file says more).
 *
 * Shared state: cpu_a and cpu_b, written by cpus() before the case's
 * threads start (pthread_create() orders them); a struct holder's
 * holding and done (seq_cst), written by the holder thread (holding) or
 * by the thread that started it (done) and polled by the other; the rest
 * of the struct is written before the holder starts.
 */
#ifndef SYSLET_TEST_HOLD_UTIL_H
#define SYSLET_TEST_HOLD_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "shard.h"
#include "test_pool_util.h"

#define BOUND_S 5 /* a wait that no slow scheduler reaches */
#define BOUND_MS 500 /* a call on a free CPU: see the top of the file */
#define NS_MS 1000000ull

static int cpu_a, cpu_b;

/* CPU a and b: the first two allowed CPUs, in @order (0 or 1). */
static inline void cpus(int order)
{
	cpu_a = allowed_cpu(order);
	cpu_b = allowed_cpu(1 - order);
}

/* Real-time threads need root and two CPUs: true if they are missing. */
static inline bool rt_skip(void)
{
	return geteuid() || ncpus_allowed() < 2;
}

static inline uint64_t now_ms(void)
{
	return syslet__now_ns() / NS_MS;
}

/* SYSLET_OPT_PIN; the spin budget unless < 0; the cap unless 0. */
static inline void config(long pin, long spin, long cap)
{
	CHECK(!syslet_config_set(SYSLET_OPT_PIN, pin));
	if (cap > 0)
		CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, cap));
	if (spin >= 0)
		CHECK(!syslet_config_set(SYSLET_OPT_SPIN_NS, spin));
}

/* The calling thread's @policy, priority 1 if real-time. */
static inline void set_policy(int policy)
{
	struct sched_param sp = { .sched_priority = policy == SCHED_OTHER ? 0 :
									    1 };

	CHECK(!pthread_setschedparam(pthread_self(), policy, &sp));
}

/* set_policy(), and for SCHED_OTHER the nice value @nice too. */
static inline void set_policy_nice(int policy, int nice)
{
	set_policy(policy);
	if (policy == SCHED_OTHER)
		CHECK(!setpriority(PRIO_PROCESS, (id_t)gettid(), nice));
}

/* Reap one completion polling the ring only; -ETIMEDOUT after BOUND_S. */
static inline int reap_polling(struct syslet_ring *r,
			       struct syslet_completion *c)
{
	uint64_t end = syslet__now_ns() + BOUND_S * 1000000000ull;
	uint32_t tail = r->user_tail;

	while (syslet_ring_head(r) == tail)
		if (syslet__now_ns() > end)
			return -ETIMEDOUT;
	*c = *syslet_ring_slot(r, tail);
	syslet_ring_advance(r, 1);
	return 0;
}

/*
 * Reap one completion by @end_ms with futex waits that a signal may
 * interrupt (EINTR: it waits again); -ETIMEDOUT after @end_ms.
 */
static inline int reap_by(struct syslet_ring *r, struct syslet_completion *c,
			  uint64_t end_ms)
{
	struct timespec t = { 0, 10 * 1000000L };
	uint32_t tail = r->user_tail;

	while (syslet_ring_head(r) == tail) {
		if (now_ms() > end_ms)
			return -ETIMEDOUT;
		if (syslet_ring_wait_timeout(r, tail, &t))
			CHECK(errno == EINTR || errno == ETIMEDOUT);
	}
	*c = *syslet_ring_slot(r, tail);
	syslet_ring_advance(r, 1);
	return 0;
}

/* A quick call reaped with a futex wait, within BOUND_S. */
static inline void quick(struct syslet_ring *r, uint64_t data)
{
	struct syslet_completion c;

	CHECK(!submit(r, SYS_getppid, 0, 0, 0, data));
	CHECK(!reap_within(r, &c, BOUND_S) && c.caller_data == data);
}

/* Spin until @flag or @until_ms; false if BOUND_S passed first. */
static inline bool busy_until(_Atomic int *flag, uint64_t until_ms)
{
	uint64_t end = now_ms() + BOUND_S * 1000;

	while (!atomic_load(flag) && now_ms() < until_ms)
		if (now_ms() > end)
			return false;
	return true;
}

/* Shard @cpu has a worker, all its workers asleep, none spins. */
static inline bool shard_asleep(int cpu)
{
	struct syslet__shard *q = &syslet__pool.shards[cpu];

	return atomic_load(&q->sleepers) > 0 &&
	       atomic_load(&q->idle) == atomic_load(&q->sleepers) &&
	       !atomic_load(&q->spinning);
}

/* Shard a's spinner holds its role (and cannot run, once CPU a is held). */
static inline bool spinner_held(void)
{
	return atomic_load(&syslet__pool.shards[cpu_a].spinning);
}

/* Calls submitted and not finished (completed, notifier done), all shards. */
static inline uint64_t unfinished(void)
{
	uint64_t f = 0, n = 0;
	int i;

	for (i = 0; i < syslet__pool.nshards; i++)
		f += atomic_load(&syslet__pool.shards[i].drain_fin[0]) +
		     atomic_load(&syslet__pool.shards[i].drain_fin[1]);
	for (i = 0; i < syslet__pool.nshards; i++)
		n += syslet__shard_submitted(&syslet__pool.shards[i],
					     memory_order_seq_cst);
	return n - f;
}

/* What shard a's worker does when the holder takes CPU a. */
enum { HOLD_ANY, HOLD_SPINNER, HOLD_ASLEEP, HOLD_UNFINISHED };

struct holder {
	int policy; /* SCHED_FIFO, SCHED_RR, or SCHED_OTHER */
	int nice; /* SCHED_OTHER: the holder's nice value */
	int churn_ms; /* > 0: hold and leave in turns of this length */
	int state; /* HOLD_*: retried (spinner, unfinished), waited (asleep) */
	int hold_s; /* the longest steady hold: 0, BOUND_S */
	bool nap; /* start: wait for the hold in naps (see start_once()) */
	void (*on_hold)(void); /* if set: run once the policy is taken */
	struct syslet_ring *ring; /* its calls' (try_holder() makes one) */
	pthread_t t;
	_Atomic int holding, done;
};

/*
 * The holder: on CPU a, make shard a's worker the spinner (a quick
 * call), take the policy, say so, and keep the CPU until done; or, with
 * churn_ms, hold and sleep in turns of churn_ms, a new spinner before
 * each hold.
 */
static inline void *holder_main(void *arg)
{
	struct holder *h = arg;
	struct timespec ts;
	uint64_t data = 1, end;

	CHECK(!pin_self(cpu_a));
	quick(h->ring, data++);
	if (h->state == HOLD_ASLEEP)
		CHECK(POLL_WITHIN(BOUND_S, shard_asleep(cpu_a)));
	set_policy_nice(h->policy, h->nice);
	if (h->on_hold)
		h->on_hold();
	atomic_store(&h->holding, 1);
	if (!h->churn_ms) {
		end = now_ms() +
		      (uint64_t)(h->hold_s ? h->hold_s : BOUND_S) * 1000;
		while (!atomic_load(&h->done))
			CHECK(now_ms() < end);
		set_policy_nice(SCHED_OTHER, 0);
		return NULL;
	}
	ts = (struct timespec){ 0, h->churn_ms * 1000000L };
	while (!atomic_load(&h->done)) {
		CHECK(busy_until(&h->done, now_ms() + (uint64_t)h->churn_ms));
		set_policy_nice(SCHED_OTHER, 0);
		nanosleep(&ts, NULL); /* the holder goes away: load, not sync */
		quick(h->ring, data++);
		set_policy_nice(h->policy, h->nice);
	}
	set_policy_nice(SCHED_OTHER, 0);
	return NULL;
}

/*
 * Start the holder and wait (BOUND_S) until it holds CPU a: spinning, so
 * that the caller's CPU is busy and an unpinned spinner of shard a, held
 * on CPU a, is not moved there (HOLD_SPINNER with pinning off), or, with
 * nap, in 1 ms naps that leave the caller's CPU free.
 */
static inline void start_once(struct holder *h)
{
	uint64_t end = now_ms() + BOUND_S * 1000;

	atomic_store(&h->holding, 0);
	atomic_store(&h->done, 0);
	CHECK(!pthread_create(&h->t, NULL, holder_main, h));
	if (h->nap)
		CHECK(POLL_WITHIN(BOUND_S, atomic_load(&h->holding)));
	else
		while (!atomic_load(&h->holding))
			CHECK(now_ms() < end);
}

static inline void stop_holder(struct holder *h)
{
	atomic_store(&h->done, 1);
	CHECK(!pthread_join(h->t, NULL));
}

/*
 * Start the holder; HOLD_SPINNER: again until shard a's spinner kept its
 * role (it may give it up before the holder takes the CPU);
 * HOLD_UNFINISHED: until its worker was taken off CPU a before it counted
 * the holder's call finished. False after 100 tries (the holder stopped).
 */
static inline bool try_holder(struct holder *h)
{
	int tries;

	if (!h->ring)
		h->ring = ring_new(64);
	CHECK(h->ring);
	for (tries = 0; tries < 100; tries++) {
		start_once(h);
		if ((h->state != HOLD_SPINNER || spinner_held()) &&
		    (h->state != HOLD_UNFINISHED || unfinished()))
			return true;
		stop_holder(h);
	}
	return false;
}

static inline void start_holder(struct holder *h)
{
	CHECK(try_holder(h));
}

/*
 * Wait for the case child @pid of one variant; 1 if it failed, said on
 * stderr as "variant " @fmt ": status N", so that every variant runs and
 * the log names each failing one.
 */
__attribute__((format(printf, 2, 3))) static inline int
verdict(pid_t pid, const char *fmt, ...)
{
	int st = wait_case(pid);
	va_list ap;

	if (st) {
		fputs("variant ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, ": status %d\n", st);
	}
	return st != 0;
}

/*
 * One variant of a case: @status (an int expression, the case) is
 * evaluated in a child forked by fork_case(@alarm_s), which exits with
 * it; the parent waits for it: verdict() with the rest (@fmt, ...).
 */
#define RUN_VARIANT(alarm_s, status, ...)        \
	__extension__({                          \
		pid_t pid_ = fork_case(alarm_s); \
		assert_true(pid_ >= 0);          \
		if (!pid_)                       \
			_exit(status);           \
		verdict(pid_, __VA_ARGS__);      \
	})

/*
 * fork_case(@alarm_s) for a case that runs in a fresh image: the child
 * pins itself to @cpu (unless < 0) and runs @argv, with @envp (NULL: this
 * environment); 127 if it cannot.
 */
static inline pid_t fork_exec(unsigned int alarm_s, int cpu, char *const argv[],
			      char *const envp[])
{
	pid_t pid = fork_case(alarm_s);

	assert_true(pid >= 0);
	if (!pid) {
		if (cpu >= 0)
			CHECK(!pin_self(cpu));
		execve(argv[0], argv, envp ? envp : environ);
		_exit(127);
	}
	return pid;
}

static inline void add_switches(long tid, const char *name, void *sum)
{
	char path[64], line[128];
	FILE *f;

	if (strcmp(name, "syslet/mgr\n"))
		return;
	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "ctxt_switches:"))
			*(long *)sum += atol(strchr(line, ':') + 1);
	fclose(f);
}

/* The manager's voluntary + involuntary context switches so far. */
static inline long manager_switches(void)
{
	long n = 0;

	each_thread(add_switches, &n);
	return n;
}

/* Say what every shard holds, after @when (a case that was stuck). */
static inline void say_shards(const char *when)
{
	struct syslet__shard *q;
	int i;

	for (i = 0; i < syslet__pool.nshards; i++) {
		q = &syslet__pool.shards[i];
		fprintf(stderr,
			"%s: shard %d%s: queued %d idle %d sleepers %d "
			"spinning %d want %d held %d workers %d started %llu "
			"submitted %llu taken %llu completed %llu\n",
			when, i,
			i == cpu_a ? " (a)" :
			i == cpu_b ? " (b)" :
				     "",
			(int)atomic_load(&q->queued), atomic_load(&q->idle),
			atomic_load(&q->sleepers), atomic_load(&q->spinning),
			atomic_load(&q->want), atomic_load(&q->held),
			atomic_load(&q->nworkers),
			(unsigned long long)atomic_load(&q->started),
			(unsigned long long)syslet__shard_submitted(
				q, memory_order_seq_cst),
			(unsigned long long)atomic_load(&q->taken),
			(unsigned long long)atomic_load(&q->completed));
	}
}

#endif /* SYSLET_TEST_HOLD_UTIL_H */
