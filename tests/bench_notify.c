/* SPDX-License-Identifier: MIT */
/*
 * Description: not a test; measures the notifier. Part 1: the cost of one
 * notifier run on one thread (syslet__notify_run in a loop) when it
 * returns, calls syslet_notify_exit(), or ends with syscall(SYS_exit, 0)
 * caught by the trap, beside creating and joining a thread (what replacing
 * an exited worker costs). Part 2: a client's throughput through
 * indirect() (nanosleep of 1 ns, always pending) with each kind of
 * notifier; issue 3 wants SYS_exit >= 50% of returning.
 *
 *   bench-notify [runs-per-kind [client-calls [stacks]]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "pool.h"

#define STACK_SIZE (64 * 1024)
#define MAX_STACKS 64
#define WINDOW 128

enum how { RETURN, NOTIFY_EXIT, SYS_EXIT, NR_HOW };
static const char *const names[NR_HOW] = { "return", "syslet_notify_exit",
					   "SYS_exit (syscall())" };

static _Alignas(64) unsigned char stacks[MAX_STACKS][STACK_SIZE];
static _Atomic enum how how;
static _Atomic uint32_t done;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void notifier(void)
{
	atomic_fetch_add_explicit(&done, 1, memory_order_relaxed);
	switch (atomic_load_explicit(&how, memory_order_relaxed)) {
	case NOTIFY_EXIT:
		syslet_notify_exit();
	case SYS_EXIT:
		syscall(SYS_exit, 0);
		abort();
	default:
		return;
	}
}

/* Same, plus a futex wake for the client waiting in part 2. */
static void client_notifier(void)
{
	atomic_fetch_add(&done, 1);
	syscall(SYS_futex, &done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	switch (atomic_load_explicit(&how, memory_order_relaxed)) {
	case NOTIFY_EXIT:
		syslet_notify_exit();
	case SYS_EXIT:
		syscall(SYS_exit, 0);
		abort();
	default:
		return;
	}
}

static long runs;
static double part1[NR_HOW + 1];

static void *loop(void *arg)
{
	struct syslet_completion c = { 0, 0 };
	struct syslet__job job = {
		.ip = (uint64_t)(uintptr_t)notifier,
		.sp = (uint64_t)(uintptr_t)(stacks[0] + STACK_SIZE),
	};
	int h;
	long i;
	double t;

	(void)arg;
	if (syslet__notify_thread_init(syslet__notify_alloc()))
		fprintf(stderr, "bench-notify: no exit trap on this thread\n");
	for (h = 0; h < NR_HOW; h++) {
		atomic_store(&how, (enum how)h);
		for (i = 0; i < runs / 10; i++)
			syslet__notify_run(&job, &c);
		t = now_s();
		for (i = 0; i < runs; i++)
			syslet__notify_run(&job, &c);
		part1[h] = (now_s() - t) / (double)runs;
	}
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

static void part_one(void)
{
	pthread_t t;
	long i, n = runs / 10;
	double t0;
	int h;

	pthread_create(&t, NULL, loop, NULL);
	pthread_join(t, NULL);
	t0 = now_s();
	for (i = 0; i < n; i++) {
		pthread_create(&t, NULL, nothing, NULL);
		pthread_join(t, NULL);
	}
	part1[NR_HOW] = (now_s() - t0) / (double)n;
	printf("part 1: one notifier run on one thread (%ld runs each)\n",
	       runs);
	for (h = 0; h < NR_HOW; h++)
		printf("  %-22s %8.3f us\n", names[h], part1[h] * 1e6);
	printf("  %-22s %8.3f us\n", "thread create+join", part1[NR_HOW] * 1e6);
}

static double client(enum how h, uint32_t calls, int nstacks, int fd)
{
	size_t size = syslet_ring_size(256);
	struct syslet_ring *ring = malloc(size);
	struct indirect_registers regs;
	uint32_t i, v;
	double t;

	syslet_ring_init(ring, 256);
	atomic_store(&how, h);
	atomic_store(&done, 0);
	FILL_IN(regs, SYS_fdatasync, fd);
	t = now_s();
	for (i = 0; i < calls; i++) {
		struct syslet_args a = {
			.completion_ring_ptr = (uint64_t)(uintptr_t)ring,
			.caller_data = i,
			.frame.ip = (uint64_t)(uintptr_t)client_notifier,
			.frame.sp = (uint64_t)(uintptr_t)(stacks[i % nstacks] +
							  STACK_SIZE),
		};

		/* Keep at most WINDOW in flight; consume what completed. */
		while (i - (v = atomic_load(&done)) >= WINDOW)
			syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, v, NULL,
				NULL, 0);
		syslet_ring_advance(ring,
				    syslet_ring_head(ring) - ring->user_tail);
		if (indirect(&regs, &a, sizeof(a), 0) != -1 ||
		    errno != ESYSLETPENDING) {
			perror("bench-notify: indirect");
			exit(1);
		}
	}
	while ((v = atomic_load(&done)) < calls)
		syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
	t = now_s() - t;
	syslet_drain();
	free(ring);
	return (double)calls / t;
}

int main(int argc, char **argv)
{
	uint32_t calls;
	int nstacks, rounds, h, r, fd;
	double tput[NR_HOW] = { 0 }, t;

	runs = argc > 1 ? atol(argv[1]) : 100000;
	calls = argc > 2 ? (uint32_t)atol(argv[2]) : 20000;
	nstacks = argc > 3 ? atoi(argv[3]) : 8;
	rounds = argc > 4 ? atoi(argv[4]) : 5;
	if (runs < 10 || calls < 1 || nstacks < 1 || nstacks > MAX_STACKS ||
	    rounds < 1) {
		fprintf(stderr,
			"usage: %s [runs [calls [stacks<=%d [rounds]]]]\n",
			argv[0], MAX_STACKS);
		return 2;
	}
	fd = memfd_create("bench-notify", 0);
	if (fd < 0) {
		perror("bench-notify: memfd_create");
		return 1;
	}
	part_one();
	printf("part 2: client, %u fdatasync calls, %d stacks, %d in flight, "
	       "best of %d\n",
	       calls, nstacks, WINDOW, rounds);
	for (r = 0; r < rounds; r++) {
		for (h = 0; h < NR_HOW; h++) {
			t = client((enum how)h, calls, nstacks, fd);
			if (t > tput[h])
				tput[h] = t;
		}
	}
	for (h = 0; h < NR_HOW; h++)
		printf("  %-22s %10.0f calls/s  (%.2f of return)\n", names[h],
		       tput[h], tput[h] / tput[RETURN]);
	return 0;
}
