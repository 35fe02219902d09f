/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a program that exits with calls pending does so cleanly:
 * status 0, no signal, within 30 s. Each case is a fresh child process:
 * exit() with 1,000 calls pending; the same with notifiers (some ending
 * in SYS_exit) on one shared stack; exit() while another thread sleeps in
 * syslet_ring_wait(); returning from a thread-created pool right after
 * the first call went pending; _exit() mid-storm.
 */
#include <pthread.h>

#include "stress.h"

#define PENDING 1000
#define STACK_BYTES (128 * 1024)

#define NAPS 30

static struct syslet_ring *ring;
/* 1..30 ms, filled before the first fork: calls read them until exit */
static struct timespec naps[NAPS];
static char *stack;

static void notifier(void)
{
	struct syslet_completion *c = syslet_current_completion();

	if (c && c->caller_data % 2)
		syscall(SYS_exit, 0);
}

static void submit_many(long n, int with_notifier)
{
	struct indirect_registers regs;
	union indirect_params p;
	long i;

	for (i = 0; i < n; i++) {
		FILL_IN(regs, SYS_nanosleep, &naps[i % NAPS], NULL);
		stress_params(&p, ring, (uint64_t)i);
		if (with_notifier) {
			p.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
			p.syslet.frame.sp =
				(uint64_t)(uintptr_t)(stack + STACK_BYTES);
		}
		errno = 0;
		if (indirect(&regs, &p, sizeof(p), 0) == -1 &&
		    errno == ESYSLETPENDING)
			continue;
		if (errno == EBUSY || errno == EAGAIN || errno == ENOMEM)
			break;
		DIE("submit %ld: errno %d", i, errno);
	}
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		if (syslet_ring_wait(ring, ring->user_tail) == 0)
			syslet_ring_advance(ring, syslet_ring_head(ring) -
							  ring->user_tail);
	return NULL;
}

static void exit_pending(void)
{
	submit_many(PENDING, 0);
	exit(0);
}

static void exit_notifiers(void)
{
	submit_many(PENDING, 1);
	exit(0);
}

static void exit_while_waiting(void)
{
	pthread_t t;
	struct timespec ts = { 0, 0 };

	CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
	submit_many(PENDING / 10, 0);
	CHECK(syslet_ring_wait_timeout(ring, 0, &ts) == 0 ||
	      errno == ETIMEDOUT);
	exit(0);
}

static void *first_call(void *arg)
{
	(void)arg;
	submit_many(1, 1);
	return NULL;
}

static void exit_after_first(void)
{
	pthread_t t;

	CHECK(pthread_create(&t, NULL, first_call, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	exit(0);
}

static void underscore_exit(void)
{
	submit_many(PENDING, 1);
	_exit(0);
}

static const struct {
	const char *name;
	void (*fn)(void);
	int notifiers;
} cases[] = {
	{ "exit with 1000 pending", exit_pending, 0 },
	{ "exit with 1000 pending notifiers", exit_notifiers, 1 },
	{ "exit while a thread waits", exit_while_waiting, 0 },
	{ "exit right after the pool started", exit_after_first, 1 },
	{ "_exit with 1000 pending notifiers", underscore_exit, 1 },
};

/* argv[1]: "plain" runs the cases without notifiers, "notify" the rest. */
int main(int argc, char **argv)
{
	long rounds = 2 * stress_scale(), k, n = 0;
	int notify = argc > 1 && !strcmp(argv[1], "notify");
	size_t i;

	for (i = 0; i < NAPS; i++)
		naps[i].tv_nsec = 1000000 + (long)i * 1000000;
	stack = aligned_alloc(4096, STACK_BYTES);
	ring = stress_ring(2048);
	CHECK(stack);
	for (k = 0; k < rounds; k++)
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			pid_t pid;

			if (cases[i].notifiers != notify)
				continue;
			pid = fork();

			CHECK(pid >= 0);
			if (pid == 0) {
				stress_watchdog(cases[i].name, 25);
				cases[i].fn();
			}
			stress_child_ok(stress_reap(pid, 30), cases[i].name);
			n++;
		}
	printf("stress-exit: %ld clean exits with calls pending\n", n);
	return 0;
}
