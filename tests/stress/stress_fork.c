/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: fork() while 1,000 calls are pending (SPEC 5). The parent
 * loses nothing: each of its calls completes exactly once, in the parent.
 * The child gets an empty, working pool: its own calls complete, no
 * completion of a parent call ever lands in its copy of the ring, and
 * the parent's reservations are forgotten there (once the child consumed
 * what its copy holds, it can have `elements` calls pending again with no
 * EBUSY). Repeated for several forks; the pending calls are nanosleeps of
 * 2-20 ms so that they are still in flight when fork() runs.
 */
#include <pthread.h>

#include "stress.h"

#define PENDING 1000
#define ELEMENTS 1024
#define CHILD_CALLS 200
#define PARENT_TAG 0x5000000000000000ULL
#define CHILD_TAG 0xc000000000000000ULL

static struct timespec naps[PENDING];

static void submit_nap(struct syslet_ring *r, uint64_t data,
		       const struct timespec *ts)
{
	struct indirect_registers regs;
	union indirect_params p;

	FILL_IN(regs, SYS_nanosleep, ts, NULL);
	stress_params(&p, r, data);
	for (;;) {
		errno = 0;
		if (indirect(&regs, &p, sizeof(p), 0) == -1 &&
		    errno == ESYSLETPENDING)
			return;
		if (stress_faulty() && (errno == EAGAIN || errno == ENOMEM)) {
			sched_yield();
			continue;
		}
		DIE("submit %#llx: errno %d", (unsigned long long)data, errno);
	}
}

/* Why a wait gave up: which phase, and what the pool looked like. */
static void __attribute__((noreturn))
stuck(const char *phase, long n, uint64_t waited_ns)
{
	struct syslet_stats st;
	char q[160] = "";
	uint32_t i;
	int len = 0;

	if (syslet_stats(&st, sizeof(st)))
		DIE("pid %d, %s: %ld completions missing", getpid(), phase, n);
	for (i = 0; i < st.shards && len < (int)sizeof(q) - 16; i++)
		len += snprintf(q + len, sizeof(q) - (size_t)len, " %u",
				st.queue_depth[i]);
	DIE("pid %d, %s: %ld completions missing after %.1f s without one; "
	    "pool: submitted %llu completed %llu, workers now %u peak %u "
	    "started %llu, sleeps %llu, queued per shard:%s",
	    getpid(), phase, n, (double)waited_ns / 1e9,
	    (unsigned long long)st.submitted, (unsigned long long)st.completed,
	    st.workers_now, st.workers_peak,
	    (unsigned long long)st.workers_started,
	    (unsigned long long)st.sleeps, q);
}

/* Consume @n completions of @r tagged @tag into @seen[]; 10 s bound. */
static void collect(struct syslet_ring *r, const char *phase, uint64_t tag,
		    uint8_t *seen, long n)
{
	struct timespec ten_s = { 10, 0 };

	while (n > 0) {
		uint32_t tail = r->user_tail, head, i;
		uint64_t t0 = stress_now_ns();

		if (syslet_ring_wait_timeout(r, tail, &ten_s)) {
			if (stress_wait_retry(errno))
				continue;
			stuck(phase, n, stress_now_ns() - t0);
		}
		head = syslet_ring_head(r);
		for (i = tail; i != head; i++, n--) {
			struct syslet_completion *c = syslet_ring_slot(r, i);
			uint64_t d = c->caller_data;

			if ((d & 0xf000000000000000ULL) != tag)
				DIE("pid %d: foreign completion %#llx",
				    getpid(), (unsigned long long)d);
			CHECK(c->status == 0);
			if (seen[d & 0xffffff]++)
				DIE("pid %d: %#llx twice", getpid(),
				    (unsigned long long)d);
		}
		syslet_ring_advance(r, head - tail);
	}
}

static int child(struct syslet_ring *copy)
{
	static uint8_t seen_new[CHILD_CALLS], seen_copy[ELEMENTS];
	struct timespec us = { 0, 1000 };
	struct syslet_ring *fresh = stress_ring(64);
	uint32_t head_at_fork = copy->kernel_head;
	long i;

	stress_watchdog("fork child", 60);
	/* a fresh ring works */
	for (i = 0; i < CHILD_CALLS; i++) {
		submit_nap(fresh, CHILD_TAG | (uint64_t)i, &us);
		if (i % 32 == 31)
			collect(fresh, "child, fresh ring", CHILD_TAG, seen_new,
				32);
	}
	collect(fresh, "child, fresh ring", CHILD_TAG, seen_new,
		CHILD_CALLS % 32);
	/* the copy: nothing of the parent arrived, no reservation is left */
	if (copy->kernel_head != head_at_fork)
		DIE("child: a parent completion landed in the child's ring");
	copy->user_tail = copy->kernel_head;
	for (i = 0; i < ELEMENTS; i++)
		submit_nap(copy, CHILD_TAG | (uint64_t)i, &us);
	collect(copy, "child, copied ring", CHILD_TAG, seen_copy, ELEMENTS);
	CHECK(syslet_drain() == 0);
	return 0;
}

int main(void)
{
	long forks = 4 * stress_scale(), f, i, total = 0;
	struct syslet_ring *r;
	uint8_t *seen;

#if defined(__SANITIZE_THREAD__)
	/*
	 * TSan does not support threads in the child of a threaded fork,
	 * unless told to go on (die_after_fork=0: run.sh's fork pass).
	 */
	const char *tsan = getenv("TSAN_OPTIONS");

	if (!tsan || !strstr(tsan, "die_after_fork=0")) {
		puts("stress-fork: skipped under ThreadSanitizer");
		return 77;
	}
#elif defined(__SANITIZE_ADDRESS__)
	/*
	 * gcc 12's ASan allocator does not reset its locks in a fork child:
	 * the child's first worker can block forever in ASan's thread start
	 * (AsanThread::Init -> pthread_getattr_np -> free -> a size class
	 * lock a parent thread held at fork), and the child's calls then
	 * never complete ("N completions missing (errno 110)").
	 */
	puts("stress-fork: skipped under AddressSanitizer");
	return 77;
#endif
	seen = calloc(PENDING, 1);
	r = stress_ring(ELEMENTS);
	CHECK(seen);
	stress_watchdog("stress_fork", (unsigned int)(300 * stress_scale()));
	for (i = 0; i < PENDING; i++) {
		naps[i].tv_sec = 0;
		naps[i].tv_nsec = 2000000 + (i * 7919 % 18) * 1000000;
	}
	for (f = 0; f < forks; f++) {
		pid_t pid;

		memset(seen, 0, PENDING);
		for (i = 0; i < PENDING; i++)
			submit_nap(r, PARENT_TAG | (uint64_t)i, &naps[i]);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			_exit(child(r));
		collect(r, "parent", PARENT_TAG, seen, PENDING);
		for (i = 0; i < PENDING; i++)
			CHECK(seen[i] == 1);
		stress_child_ok(stress_reap(pid, 60), "fork child");
		total += PENDING + CHILD_CALLS + ELEMENTS;
	}
	CHECK(syslet_drain() == 0);
	printf("stress-fork: forks %ld with %d pending each, calls %ld, "
	       "lost 0\n",
	       forks, PENDING, total);
	free(seen);
	free(r);
	return 0;
}
