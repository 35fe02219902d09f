/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: syslet_cancel() against the cancellation-point stub's
 * window (src/cancel.c syslet__cp_syscall: a cancel lands before the
 * call or interrupts it, never after it completed), from outside, through the
 * public API: many cancels of calls that block (a
 * read of an empty pipe, a futex wait, a long nanosleep) on both CPUs
 * while other threads submit quick calls; the program's own signals sent
 * to the workers' tids (SIGSTOP and SIGCONT, real-time signals until
 * RLIMIT_SIGPENDING is spent); cancels of calls already finished. Every
 * call completes exactly once: -ECANCELED, -EINTR or its normal result,
 * never lost (each wait bounded), never twice.
 *
 * Each case runs in a forked child (no cmocka there; CHECK exits 1 with
 * the line) under an alarm.
 *
 * Shared state: storm's threads each own their ring, pipes and futex
 * words; they share the pool and the stop flag (seq_cst). stopcont's
 * child and the cmocka parent share nothing but signals.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#define ALARM_S 120 /* a case's bound: far above its run on 2 CPUs */
#define WAIT_S 30 /* a completion's bound */
#define BLOCKERS 2 /* threads submitting calls that block, one per CPU */
#define QUICK 2 /* threads submitting quick calls, one per CPU */
#define STORM_ROUNDS 150
#define STORM_BATCH 16
#define FINISHED_ROUNDS 2000
#define STOPS 20
#define FLOOD_CALLS 8

#define CHECK(c)                                                       \
	do {                                                           \
		if (!(c)) {                                            \
			fprintf(stderr, "child %s:%d: %s\n", __FILE__, \
				__LINE__, #c);                         \
			_exit(1);                                      \
		}                                                      \
	} while (0)

static struct syslet_ring *ring_alloc(uint32_t elements)
{
	size_t size = (syslet_ring_size(elements) + 63) / 64 * 64;
	struct syslet_ring *r = aligned_alloc(64, size);

	CHECK(r);
	memset(r, 0, size);
	CHECK(!syslet_ring_init(r, elements));
	return r;
}

/* indirect() of @nr(@a0, @a1, @a2) on @r: its return (errno kept). */
static long ind(struct syslet_ring *r, uint64_t cd, long nr, long a0, long a1,
		long a2)
{
	union indirect_params ip = { 0 };
	struct indirect_registers regs;

	FILL_IN(regs, nr, a0, a1, a2);
	ip.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)r;
	ip.syslet.caller_data = cd;
	return indirect(&regs, &ip, sizeof(ip), 0);
}

static bool pending(long r)
{
	return r == -1 && errno == ESYSLETPENDING;
}

/* On a lost completion: what each worker thread sits in. */
static void dump_workers(void)
{
	char path[300], buf[256];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;

	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			fprintf(stderr, "%s %s", d->d_name, buf);
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall",
			 d->d_name);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f))
			fprintf(stderr, "  %s", buf);
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 d->d_name);
		f = fopen(path, "r");
		while (f && fgets(buf, sizeof(buf), f))
			if (!strncmp(buf, "Sig", 3) || !strncmp(buf, "Shd", 3))
				fprintf(stderr, "  %s", buf);
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
}

/* The next completion of @r, waited for (WAIT_S), consumed. */
static struct syslet_completion pop(struct syslet_ring *r)
{
	struct timespec ts = { WAIT_S, 0 };
	struct syslet_completion c;
	uint32_t t = r->user_tail;

	if (syslet_ring_head(r) == t && syslet_ring_wait_timeout(r, t, &ts)) {
		fprintf(stderr, "child: no completion in %d s (errno %d)\n",
			WAIT_S, errno);
		dump_workers();
		_exit(1);
	}
	c = *syslet_ring_slot(r, t);
	syslet_ring_advance(r, 1);
	return c;
}

/* Cancel @cd; a signal that cannot be queued yet (EAGAIN) is retried. */
static int cancel(struct syslet_ring *r, uint64_t cd)
{
	int n;

	while ((n = syslet_cancel(r, cd, 0)) == -1 && errno == EAGAIN)
		sched_yield();
	return n;
}

static int pin(int n)
{
	cpu_set_t set;
	int c, cpu = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	n %= CPU_COUNT(&set);
	for (c = 0; c < CPU_SETSIZE && cpu < 0; c++)
		if (CPU_ISSET(c, &set) && !n--)
			cpu = c;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Run @fn in a fork child under ALARM_S; it must exit 0. */
static void in_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		alarm(ALARM_S);
		exit(fn());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st));
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The three kinds of call that block: their caller_data's low 2 bits. */
enum { K_READ, K_FUTEX, K_SLEEP, NKINDS };

struct blocked {
	int pipe[2];
	_Atomic uint32_t word;
	struct timespec ts;
	char b;
};

static long submit_blocked(struct syslet_ring *r, struct blocked *b,
			   uint64_t cd)
{
	switch (cd % NKINDS) {
	case K_READ:
		return ind(r, cd, SYS_read, b->pipe[0], (long)&b->b, 1);
	case K_FUTEX:
		return ind(r, cd, SYS_futex, (long)&b->word, FUTEX_WAIT_PRIVATE,
			   0);
	default:
		b->ts = (struct timespec){ 3600, 0 };
		return ind(r, cd, SYS_nanosleep, (long)&b->ts, 0, 0);
	}
}

/* ---- storm ------------------------------------------------------------ */

static _Atomic int storm_stop;
static _Atomic uint64_t storm_cancelled, storm_intr, storm_quick;

/*
 * Rounds of STORM_BATCH calls that block, each cancelled at once in a
 * shuffled order (some still queued, some being taken, some inside the
 * stub, some blocked in the kernel): every cancel finds its call (it can
 * end no other way), every call completes once with -ECANCELED or -EINTR.
 */
static void *blocker_main(void *arg)
{
	int id = (int)(intptr_t)arg, round, i, j, k;
	struct syslet_ring *r = ring_alloc(STORM_BATCH);
	struct blocked b[STORM_BATCH];
	struct syslet_completion c;
	uint32_t seen;
	int order[STORM_BATCH];
	long st;

	CHECK(!pin(id));
	for (i = 0; i < STORM_BATCH; i++) {
		CHECK(!pipe2(b[i].pipe, O_CLOEXEC));
		atomic_init(&b[i].word, 0);
	}
	srand((unsigned int)id + 1);
	for (round = 0; round < STORM_ROUNDS; round++) {
		for (i = 0; i < STORM_BATCH; i++) {
			/* Index in bits 2..5, kind in bits 0..1. */
			uint64_t cd = (uint64_t)i << 2 |
				      (uint64_t)((i + round) % NKINDS);

			CHECK(pending(submit_blocked(r, &b[i], cd)));
			order[i] = i;
		}
		for (i = STORM_BATCH - 1; i > 0; i--) {
			j = rand() % (i + 1);
			k = order[i];
			order[i] = order[j];
			order[j] = k;
		}
		for (i = 0; i < STORM_BATCH; i++) {
			j = order[i];
			CHECK(cancel(r, (uint64_t)j << 2 |
						(uint64_t)((j + round) %
							   NKINDS)) == 1);
		}
		for (seen = 0, i = 0; i < STORM_BATCH; i++) {
			if (syslet_ring_head(r) == r->user_tail &&
			    syslet_ring_wait_timeout(r, r->user_tail,
						     &(struct timespec){ WAIT_S,
									 0 })) {
				fprintf(stderr,
					"blocker %d round %d: seen %#x\n", id,
					round, seen);
				dump_workers();
				_exit(1);
			}
			c = pop(r);
			st = (long)c.status;
			j = (int)(c.caller_data >> 2);
			CHECK(j < STORM_BATCH && !(seen & 1u << j));
			seen |= 1u << j;
			if (st != -ECANCELED && st != -EINTR)
				fprintf(stderr, "kind %d: status %ld\n",
					(int)(c.caller_data & 3), st);
			CHECK(st == -ECANCELED || st == -EINTR);
			atomic_fetch_add(st == -EINTR ? &storm_intr :
							&storm_cancelled,
					 1);
		}
		CHECK(syslet_ring_head(r) == r->user_tail);
	}
	free(r);
	return NULL;
}

/* Quick calls (a 1 us nanosleep each, on a worker) until told to stop. */
static void *quick_main(void *arg)
{
	struct syslet_ring *r = ring_alloc(8);
	struct timespec ts = { 0, 1000 };
	struct syslet_completion c;
	uint64_t i;
	long ret;

	CHECK(!pin((int)(intptr_t)arg));
	for (i = 0; !atomic_load(&storm_stop); i++) {
		ret = ind(r, i, SYS_nanosleep, (long)&ts, 0, 0);
		if (!pending(ret)) {
			CHECK(ret == 0);
			continue;
		}
		c = pop(r);
		CHECK(c.caller_data == i && c.status == 0);
		atomic_fetch_add(&storm_quick, 1);
	}
	free(r);
	return NULL;
}

static int storm(void)
{
	pthread_t bt[BLOCKERS], qt[QUICK];
	intptr_t i;

	/*
	 * The handler first: a call already running when it is installed
	 * is found but runs on uninterrupted (syslet_cancel(3), NOTES).
	 */
	CHECK(!syslet_cancel(NULL, 0, 0));
	/* Room for every blocked call and the quick ones. */
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS,
				 BLOCKERS * STORM_BATCH + QUICK + 2));
	for (i = 0; i < QUICK; i++)
		CHECK(!pthread_create(&qt[i], NULL, quick_main, (void *)i));
	for (i = 0; i < BLOCKERS; i++)
		CHECK(!pthread_create(&bt[i], NULL, blocker_main, (void *)i));
	for (i = 0; i < BLOCKERS; i++)
		CHECK(!pthread_join(bt[i], NULL));
	atomic_store(&storm_stop, 1);
	for (i = 0; i < QUICK; i++)
		CHECK(!pthread_join(qt[i], NULL));
	CHECK(!syslet_drain());
	fprintf(stderr,
		"storm: %llu cancelled while queued or in the stub, %llu "
		"interrupted, %llu quick calls\n",
		(unsigned long long)atomic_load(&storm_cancelled),
		(unsigned long long)atomic_load(&storm_intr),
		(unsigned long long)atomic_load(&storm_quick));
	CHECK(atomic_load(&storm_cancelled) + atomic_load(&storm_intr) ==
	      (uint64_t)BLOCKERS * STORM_ROUNDS * STORM_BATCH);
	return 0;
}

static void test_storm(void **state)
{
	(void)state;
	in_child(storm);
}

/* ---- finished: a cancel after the completion -------------------------- */

/*
 * A call that finished (its completion posted, consumed or not) is not
 * found (-1/ENOENT), and the next call with the same caller_data, whose
 * job may be the same memory, runs normally: the cancel is not carried
 * over. Racing with another thread's quick calls on the other CPU.
 */
static int finished(void)
{
	struct syslet_ring *r = ring_alloc(8);
	struct timespec ts = { 0, 1000 };
	struct syslet_completion c;
	pthread_t q;
	int i;

	CHECK(!pthread_create(&q, NULL, quick_main, (void *)(intptr_t)1));
	CHECK(!pin(0));
	for (i = 0; i < FINISHED_ROUNDS; i++) {
		CHECK(pending(ind(r, 5, SYS_nanosleep, (long)&ts, 0, 0)));
		if (i & 1) {
			/* Posted, not consumed yet. */
			while (syslet_ring_head(r) == r->user_tail)
				sched_yield();
			CHECK(!syslet_drain());
		} else {
			c = pop(r);
			CHECK(c.caller_data == 5 && c.status == 0);
		}
		errno = 0;
		CHECK(syslet_cancel(r, 5, SYSLET_CANCEL_ALL) == -1 &&
		      errno == ENOENT);
		if (i & 1) {
			c = pop(r);
			CHECK(c.caller_data == 5 && c.status == 0);
		}
	}
	atomic_store(&storm_stop, 1);
	CHECK(!pthread_join(q, NULL));
	CHECK(syslet_ring_head(r) == r->user_tail);
	free(r);
	return 0;
}

static void test_finished(void **state)
{
	(void)state;
	in_child(finished);
}

/* ---- the program's own signals to the workers ------------------------ */

/* The tids of this process's worker threads ("syslet/N"), at most @max. */
static int worker_tids(pid_t *tids, int max)
{
	char path[300], name[32];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;
	int n = 0;

	CHECK(dir);
	while (n < max && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) &&
		    !strncmp(name, "syslet/", 7) &&
		    strcmp(name, "syslet/mgr\n"))
			tids[n++] = atoi(d->d_name);
		fclose(f);
	}
	closedir(dir);
	return n;
}

/* The worker threads sitting in system call @nr now. */
static int workers_in(long nr)
{
	char path[300], buf[128];
	pid_t tids[256];
	int i, n = worker_tids(tids, 256), in = 0;
	FILE *f;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
			 (int)tids[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		in += fgets(buf, sizeof(buf), f) && atol(buf) == nr;
		fclose(f);
	}
	return in;
}

/* Wait (bounded) until @n workers exist; their count. */
static int wait_workers(pid_t *tids, int max, int n)
{
	struct timespec ms = { 0, 1000000 };
	int i, got = 0;

	for (i = 0; i < WAIT_S * 1000 && (got = worker_tids(tids, max)) < n;
	     i++)
		nanosleep(&ms, NULL);
	return got;
}

/*
 * The process stopped and continued (the program's own SIGSTOP to a
 * worker's tid, the parent's SIGCONT) STOPS times while calls block and
 * others are cancelled: a stop is not a cancel. The sleeps and the read
 * not cancelled complete with their normal result (nanosleep restarted,
 * 0; the read, its byte), the cancelled read with -EINTR, -ECANCELED or,
 * if the write came before it saw the signal, its byte.
 */
static int stopcont(void)
{
	struct syslet_ring *r = ring_alloc(16);
	struct timespec sl = { 0, 400000000 }; /* 400 ms */
	struct syslet_completion c;
	pid_t tids[64];
	int p[2], i, n, seen = 0;
	char b[4];

	CHECK(!pipe(p));
	CHECK(!syslet_cancel(NULL, 0, 0)); /* the handler in place */
	for (i = 0; i < 4; i++)
		CHECK(pending(ind(r, 10 + i, SYS_nanosleep, (long)&sl, 0, 0)));
	CHECK(pending(ind(r, 20, SYS_read, p[0], (long)b, 1)));
	CHECK(pending(ind(r, 21, SYS_read, p[0], (long)b + 1, 1)));
	n = wait_workers(tids, 64, 2);
	CHECK(n >= 2);
	for (i = 0; i < STOPS; i++) {
		/* Stops the whole process; the parent continues it. */
		CHECK(!syscall(SYS_tgkill, getpid(), tids[i % n], SIGSTOP));
		if (i == STOPS / 2)
			CHECK(cancel(r, 21) == 1);
	}
	CHECK(write(p[1], "xy", 2) == 2);
	for (i = 0; i < 6; i++) {
		c = pop(r);
		if (c.caller_data >= 10 && c.caller_data < 14) {
			CHECK(c.status == 0);
		} else if (c.caller_data == 21) {
			/*
			 * Or its byte: a read woken by the write before it
			 * saw the signal returns the data (pipe_read() looks
			 * at the pipe first), as it would for any signal.
			 */
			CHECK((long)c.status == -EINTR ||
			      (long)c.status == -ECANCELED || c.status == 1);
		} else {
			CHECK(c.caller_data == 20 && c.status == 1);
		}
		CHECK(!(seen & 1 << (c.caller_data - 10)));
		seen |= 1 << (c.caller_data - 10);
	}
	CHECK(!syslet_drain());
	return 0;
}

static void test_stopcont(void **state)
{
	pid_t pid = fork();
	int st, stops = 0;

	(void)state;
	assert_true(pid >= 0);
	if (!pid) {
		alarm(ALARM_S);
		exit(stopcont());
	}
	for (;;) {
		assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
		if (!WIFSTOPPED(st))
			break;
		stops++;
		assert_int_equal(kill(pid, SIGCONT), 0);
	}
	fprintf(stderr, "stopcont: %d stops\n", stops);
	if (WIFSIGNALED(st))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st));
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * The program queues real-time signals to the workers' tids (they block
 * them: each stays pending and counts against RLIMIT_SIGPENDING) until the
 * limit refuses more. Calls blocked meanwhile are not interrupted by
 * them; a cancel then says EAGAIN or finds its call; every call completes
 * once (the reads, once their pipe is written, with their byte unless a
 * cancel got through). The program's signals never end a call.
 */
static int sigflood(void)
{
	struct syslet_ring *r = ring_alloc(16);
	struct rlimit rl, old;
	struct syslet_completion c;
	pid_t tids[64];
	int p[FLOOD_CALLS][2], i, n, sent = 0, found = 0, eagain = 0;
	char b[FLOOD_CALLS];
	union sigval v = { 0 };
	siginfo_t si;

	CHECK(!syslet_cancel(NULL, 0, 0));
	CHECK(!getrlimit(RLIMIT_SIGPENDING, &old));
	rl = (struct rlimit){ 64, old.rlim_max };
	CHECK(!setrlimit(RLIMIT_SIGPENDING, &rl));
	for (i = 0; i < FLOOD_CALLS; i++) {
		CHECK(!pipe(p[i]));
		CHECK(pending(ind(r, (uint64_t)i, SYS_read, p[i][0],
				  (long)&b[i], 1)));
	}
	/* Every read running: a cancel needs a signal for each. */
	for (i = 0; i < WAIT_S * 1000 && workers_in(SYS_read) < FLOOD_CALLS;
	     i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	CHECK(workers_in(SYS_read) == FLOOD_CALLS);
	n = wait_workers(tids, 64, 1);
	CHECK(n >= 1);
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGRTMIN + 3;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value = v;
	for (i = 0; i < 4096; i++) {
		if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tids[i % n],
			    SIGRTMIN + 3, &si)) {
			CHECK(errno == EAGAIN);
			break;
		}
		sent++;
	}
	CHECK(i < 4096); /* the limit was reached */
	for (i = 0; i < FLOOD_CALLS; i += 2) {
		errno = 0;
		n = syslet_cancel(r, (uint64_t)i, 0);
		CHECK(n == 1 || (n == -1 && errno == EAGAIN));
		found += n == 1;
		eagain += n == -1;
	}
	for (i = 0; i < FLOOD_CALLS; i++)
		CHECK(write(p[i][1], "x", 1) == 1);
	for (i = 0; i < FLOOD_CALLS; i++) {
		c = pop(r);
		CHECK(c.caller_data < FLOOD_CALLS);
		CHECK(c.status == 1 || (long)c.status == -EINTR ||
		      (long)c.status == -ECANCELED);
		/* Only a call a cancel found may end otherwise. */
		CHECK(c.status == 1 || (c.caller_data % 2 == 0 && found));
	}
	CHECK(!syslet_drain());
	CHECK(!setrlimit(RLIMIT_SIGPENDING, &old));
	fprintf(stderr,
		"sigflood: %d signals queued to workers, cancels: "
		"%d found, %d EAGAIN\n",
		sent, found, eagain);
	return 0;
}

static void test_sigflood(void **state)
{
	(void)state;
	in_child(sigflood);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_storm),
		cmocka_unit_test(test_finished),
		cmocka_unit_test(test_stopcont),
		cmocka_unit_test(test_sigflood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
