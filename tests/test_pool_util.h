/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the pool's white-box tests: submit a call through the
 * internal job API, wait for completions with a bound, wait for a stats
 * condition or any condition with a bound, end a worker from a notifier,
 * count the worker threads, run a case in a forked child. Every wait fails
 * the test loudly when it runs out; none is used as synchronisation by
 * itself.
 */
#ifndef SYSLET_TEST_POOL_UTIL_H
#define SYSLET_TEST_POOL_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "job.h"
#include "pool.h"
#include "ring.h"

#define TEST_WAIT_S 30 /* bound of every wait in these tests */

/* In a forked child: no cmocka, just an exit status. */
#define CHECK(c)                                                       \
	do {                                                           \
		if (!(c)) {                                            \
			fprintf(stderr, "child %s:%d: %s\n", __FILE__, \
				__LINE__, #c);                         \
			_exit(1);                                      \
		}                                                      \
	} while (0)

/* The number of CPUs the process may run on. */
static inline int ncpus_allowed(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

/* The n-th CPU the process may run on. */
static inline int allowed_cpu(int n)
{
	cpu_set_t set;
	int c;

	sched_getaffinity(0, sizeof(set), &set);
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set) && !n--)
			return c;
	return -1;
}

static inline int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static inline struct syslet_ring *ring_new(uint32_t elements)
{
	size_t size = (syslet_ring_size(elements) + 63) & ~(size_t)63;
	struct syslet_ring *r = aligned_alloc(64, size);

	if (r)
		syslet_ring_init(r, elements);
	return r;
}

/* Queue syscall @nr(@a0, @a1, @a2) on the pool; 0 or -errno. */
static inline int submit_ex(struct syslet_ring *ring, long nr, long a0, long a1,
			    long a2, uint64_t data, uint64_t ip, uint64_t sp)
{
	struct syslet__job *job = syslet__job_alloc();
	int ret;

	if (!job)
		return -ENOMEM;
	ret = syslet__ring_reserve(ring, &job->rs);
	if (ret) {
		syslet__job_free(job);
		return ret;
	}
	job->nr = nr;
	job->arg[0] = a0;
	job->arg[1] = a1;
	job->arg[2] = a2;
	job->ip = ip;
	job->sp = sp;
	job->cnode.caller_data = data;
	ret = syslet__pool_submit(job);
	if (ret) {
		syslet__ring_unreserve(job->rs);
		syslet__job_free(job);
	}
	return ret;
}

static inline int submit(struct syslet_ring *ring, long nr, long a0, long a1,
			 long a2, uint64_t data)
{
	return submit_ex(ring, nr, a0, a1, a2, data, 0, 0);
}

/*
 * Wait (at most @bound_s seconds) for the completion at the ring's tail,
 * copy it to @c and consume it. 0, or -ETIMEDOUT.
 */
static inline int reap_within(struct syslet_ring *ring,
			      struct syslet_completion *c, time_t bound_s)
{
	struct timespec t = { bound_s, 0 };
	uint32_t tail = ring->user_tail;

	while (syslet_ring_head(ring) == tail)
		if (syslet_ring_wait_timeout(ring, tail, &t) &&
		    errno == ETIMEDOUT)
			return -ETIMEDOUT;
	*c = *syslet_ring_slot(ring, tail);
	syslet_ring_advance(ring, 1);
	return 0;
}

/* reap_within() with the bound TEST_WAIT_S. */
static inline int reap_one(struct syslet_ring *ring,
			   struct syslet_completion *c)
{
	return reap_within(ring, c, TEST_WAIT_S);
}

static inline void stats(struct syslet_stats *st)
{
	if (syslet_stats(st, sizeof(*st)))
		abort();
}

static inline uint32_t queued_total(const struct syslet_stats *st)
{
	uint32_t i, n = 0;

	for (i = 0; i < st->shards; i++)
		n += st->queue_depth[i];
	return n;
}

/* Poll stats every millisecond until @cond holds; false after the bound. */
#define WAIT_STATS(st, cond)                          \
	__extension__({                               \
		struct timespec ms_ = { 0, 1000000 }; \
		long n_ = TEST_WAIT_S * 1000L;        \
		for (;;) {                            \
			stats(&(st));                 \
			if ((cond) || !n_--)          \
				break;                \
			nanosleep(&ms_, NULL);        \
		}                                     \
		(cond);                               \
	})

/* Evaluate @cond every millisecond for @bound_s seconds; its last value. */
#define POLL_WITHIN(bound_s, cond)                    \
	__extension__({                               \
		struct timespec ms_ = { 0, 1000000 }; \
		long n_ = 1000L * (bound_s);          \
		while (!(cond) && n_--)               \
			nanosleep(&ms_, NULL);        \
		(cond);                               \
	})

#ifdef __x86_64__
/* End the calling thread by an inline-assembly SYS_exit: no libc sees it. */
static inline void exit_raw(void)
{
	__asm__ volatile("syscall"
			 :
			 : "a"((long)SYS_exit), "D"(0L)
			 : "rcx", "r11", "memory");
}
#endif

/*
 * End the calling worker from a notifier: exit_raw() on x86_64 (where the
 * sanitizers run: their pthread_exit() fails on a makecontext stack, see
 * test_pool_death.c), pthread_exit() elsewhere.
 */
static inline void end_worker(void)
{
#ifdef __x86_64__
	exit_raw();
#else
	pthread_exit(NULL);
#endif
}

/*
 * Call @visit(tid, name, arg) for each thread of the process, with its
 * name as /proc gives it ("\n"-ended); a thread that ended meanwhile is
 * passed over.
 */
static inline void each_thread(void (*visit)(long, const char *, void *),
			       void *arg)
{
	char path[300], name[32];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;

	CHECK(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f))
			visit(atol(d->d_name), name, arg);
		fclose(f);
	}
	closedir(dir);
}

static inline void count_worker(long tid, const char *name, void *n)
{
	(void)tid;
	if (!strncmp(name, "syslet/", 7) && strcmp(name, "syslet/mgr\n"))
		++*(uint32_t *)n;
}

/* Worker threads alive now ("syslet/CPU", not the manager). */
static inline uint32_t worker_threads(void)
{
	uint32_t n = 0;

	each_thread(count_worker, &n);
	return n;
}

/* fork() for a case; the child gets an alarm of @alarm_s seconds (0: none). */
static inline pid_t fork_case(unsigned int alarm_s)
{
	pid_t pid = fork();

	if (!pid && alarm_s)
		alarm(alarm_s);
	return pid;
}

/*
 * Wait for the case child @pid (from fork_case()): its exit status, 128 +
 * the signal that killed it (said on stderr), or -1 if there is none.
 */
static inline int wait_case(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif /* SYSLET_TEST_POOL_UTIL_H */
