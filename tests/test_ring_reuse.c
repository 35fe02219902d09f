/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the completion ring attacked from outside (review of
 * SPEC 4 and syslet_ring_eventfd(3)): a queue depth of exactly `elements`
 * on many rings from several threads and across a producer/consumer pair
 * never sees EBUSY, nothing lost or duplicated; a ring re-initialised
 * with another `elements` while calls are pending writes nothing outside
 * the ring and recovers once idle, and one re-initialised as soon as its
 * last completion is consumed (its poster maybe still in its post) holds
 * exactly its new `elements`; waits on rings never used make no
 * state; bad eventfds are refused with the documented errno, one eventfd
 * serves two rings; no worker blocks writing a full blocking eventfd
 * (that hung syslet_ring_eventfd()'s detach); memory exhausted
 * (RLIMIT_AS) while states are made gives ENOMEM and leaks nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#include "ring.h"

#define WAIT_SEC 30
#define THREADS 4
#define RINGS 16
#define DEPTH 4
#define CALLS_PER_THREAD 20000u
#define XCALLS 50000u
#define XDEPTH 8

static struct syslet_ring *new_ring(uint32_t elements)
{
	struct syslet_ring *ring = aligned_alloc(
		64, (syslet_ring_size(elements) + 63) & ~(size_t)63);

	assert_non_null(ring);
	memset(ring, 0xa5, syslet_ring_size(elements));
	assert_int_equal(syslet_ring_init(ring, elements), 0);
	return ring;
}

/* indirect(@nr, a0..a2) on @ring: the raw answer, errno kept. */
static long call3(struct syslet_ring *ring, uint64_t cd, long nr, long a0,
		  long a1, long a2)
{
	struct indirect_registers regs;
	union indirect_params p;

	memset(&regs, 0, sizeof(regs));
	FILL_IN(regs, nr, a0, a1, a2);
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = cd;
	return indirect(&regs, &p, sizeof(p), 0);
}

/* An async getppid on @ring: 0 if pending, else errno. */
static int submit(struct syslet_ring *ring, uint64_t cd)
{
	if (call3(ring, cd, SYS_getppid, 0, 0, 0) == -1 &&
	    errno == ESYSLETPENDING)
		return 0;
	return errno ? errno : -1;
}

static void setup_class(void)
{
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
}

struct depth_arg {
	int id;
	_Atomic uint8_t *seen;
	_Atomic int err;
	_Atomic int dup;
};

/*
 * Each thread keeps exactly DEPTH calls pending on each of its RINGS rings
 * of DEPTH elements: every completion consumed is replaced at once.
 */
static void *depth_thread(void *arg)
{
	struct depth_arg *a = arg;
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	struct syslet_ring *ring[RINGS];
	uint32_t pending[RINGS];
	uint64_t base = (uint64_t)a->id * CALLS_PER_THREAD, next = 0;
	uint32_t done = 0;
	int i, e;

	for (i = 0; i < RINGS; i++) {
		ring[i] = new_ring(DEPTH);
		pending[i] = DEPTH;
		for (e = 0; e < DEPTH; e++) {
			int err = submit(ring[i], base + next++);

			if (err) {
				atomic_store(&a->err, err);
				return NULL;
			}
		}
	}
	while (done < next) {
		for (i = 0; i < RINGS; i++) {
			struct syslet_ring *r = ring[i];
			uint32_t tail = r->user_tail, head;

			if (!pending[i])
				continue;
			if (syslet_ring_head(r) == tail &&
			    syslet_ring_wait_timeout(r, tail, &limit)) {
				atomic_store(&a->err, errno);
				return NULL;
			}
			head = syslet_ring_head(r);
			for (; tail != head; tail++) {
				uint64_t cd =
					syslet_ring_slot(r, tail)->caller_data;

				if (cd >= (uint64_t)THREADS *
						    CALLS_PER_THREAD ||
				    atomic_fetch_add(&a->seen[cd], 1))
					atomic_store(&a->dup, 1);
				syslet_ring_advance(r, 1);
				done++;
				pending[i]--;
				if (next < CALLS_PER_THREAD) {
					pending[i]++;
					int err = submit(r, base + next++);

					if (err) {
						atomic_store(&a->err, err);
						return NULL;
					}
				}
			}
		}
	}
	for (i = 0; i < RINGS; i++)
		free(ring[i]);
	return NULL;
}

/* SPEC 4.2: depth == elements on many rings, from several threads. */
static void test_depth_exact(void **state)
{
	size_t total = (size_t)THREADS * CALLS_PER_THREAD;
	_Atomic uint8_t *seen = calloc(total, 1);
	struct depth_arg a[THREADS];
	pthread_t t[THREADS];
	size_t i;

	(void)state;
	setup_class();
	assert_non_null(seen);
	for (i = 0; i < THREADS; i++) {
		a[i] = (struct depth_arg){ .id = (int)i, .seen = seen };
		assert_int_equal(
			pthread_create(&t[i], NULL, depth_thread, &a[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (i = 0; i < THREADS; i++) {
		if (atomic_load(&a[i].err))
			fail_msg("thread %zu: %s", i,
				 strerror(atomic_load(&a[i].err)));
		assert_int_equal(atomic_load(&a[i].dup), 0);
	}
	for (i = 0; i < total; i++)
		if (atomic_load(&seen[i]) != 1)
			fail_msg("call %zu seen %u times", i,
				 (unsigned)atomic_load(&seen[i]));
	free(seen);
}

struct xpair {
	struct syslet_ring *ring;
	_Atomic uint32_t credits; /* slots the consumer handed back */
	uint8_t seen[XCALLS];
	_Atomic int err;
	_Atomic bool stop;
};

/* The consumer: consumes, then hands each slot back to the producer. */
static void *xconsumer(void *arg)
{
	struct xpair *x = arg;
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	uint32_t n = 0, tail = 0;

	while (n < XCALLS && !atomic_load(&x->stop)) {
		if (syslet_ring_head(x->ring) == tail &&
		    syslet_ring_wait_timeout(x->ring, tail, &limit)) {
			atomic_store(&x->err, errno);
			break;
		}
		while (syslet_ring_head(x->ring) != tail) {
			uint64_t cd =
				syslet_ring_slot(x->ring, tail)->caller_data;

			/* Completions come in finishing order: a set. */
			if (cd >= XCALLS || x->seen[cd]++) {
				atomic_store(&x->err, EPROTO);
				return NULL;
			}
			syslet_ring_advance(x->ring, 1);
			tail++;
			n++;
			/* Release: our advance before the producer's submit. */
			atomic_fetch_add_explicit(&x->credits, 1,
						  memory_order_release);
		}
	}
	return NULL;
}

/*
 * SPEC 4.2 across threads: the producer submits only on a credit the
 * consumer gave after consuming, so depth never exceeds elements.
 */
static void test_depth_cross_thread(void **state)
{
	static struct xpair x;
	time_t end = time(NULL) + WAIT_SEC;
	pthread_t c;
	uint32_t i;
	int err;

	(void)state;
	setup_class();
	x.ring = new_ring(XDEPTH);
	atomic_init(&x.credits, XDEPTH);
	assert_int_equal(pthread_create(&c, NULL, xconsumer, &x), 0);
	for (i = 0; i < XCALLS && !atomic_load(&x.err); i++) {
		/* Acquire: the consumer's advance that freed the slot. */
		while (!atomic_load_explicit(&x.credits,
					     memory_order_acquire)) {
			if (time(NULL) > end || atomic_load(&x.err))
				break;
			sched_yield();
		}
		if (!atomic_load(&x.credits))
			break;
		atomic_fetch_sub(&x.credits, 1);
		err = submit(x.ring, i);
		if (err) {
			atomic_store(&x.err, err);
			break;
		}
		end = time(NULL) + WAIT_SEC;
	}
	if (i < XCALLS)
		atomic_store(&x.stop, true);
	assert_int_equal(pthread_join(c, NULL), 0);
	if (atomic_load(&x.err))
		fail_msg("after %u calls: %s", i,
			 strerror(atomic_load(&x.err)));
	assert_int_equal(i, XCALLS);
	assert_int_equal(syslet_drain(), 0);
	free(x.ring);
}

#define BIG 64u
#define SMALL 4u
#define PIPES 8
#define CANARY 0x5a

#define CANARY_BYTES 4096

/* A ring of BIG slots followed by a canary another ring could own. */
#define RING_BYTES \
	(sizeof(struct syslet_ring) + BIG * sizeof(struct syslet_completion))
static _Alignas(64) unsigned char fenced[RING_BYTES + CANARY_BYTES];
static unsigned char *const canary = fenced + RING_BYTES;

static bool canary_intact(void)
{
	size_t i;

	for (i = 0; i < CANARY_BYTES; i++)
		if (canary[i] != CANARY)
			return false;
	return true;
}

/*
 * The program's fault, handled without harm: re-initialising a ring with
 * another elements while reads are pending on it. Every completion lands
 * inside the ring (nothing past its buffer), none is lost (kernel_head
 * counts them all) and once idle and initialised again the ring works.
 */
static void test_reinit_busy(void **state)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	struct syslet_ring *ring = (struct syslet_ring *)fenced;
	uint32_t round, i, head;
	uint64_t mask;
	int fds[PIPES][2];
	char buf[PIPES][8];

	(void)state;
#ifdef __SANITIZE_THREAD__
	/* The program's fault is a data race on elements: TSan says so. */
	skip();
#endif
	setup_class();
	memset(canary, CANARY, CANARY_BYTES);
	assert_int_equal(syslet_ring_init(ring, BIG), 0);
	for (round = 0; round < 50; round++) {
		uint32_t elements = round & 1 ? SMALL : BIG;

		for (i = 0; i < PIPES; i++) {
			assert_int_equal(pipe(fds[i]), 0);
			errno = 0;
			if (call3(ring, i, SYS_read, fds[i][0], (long)buf[i],
				  sizeof(buf[i])) != -1 ||
			    errno != ESYSLETPENDING)
				fail_msg("read %u not pending: %s", i,
					 strerror(errno));
		}
		/* The program's fault: not idle. */
		assert_int_equal(syslet_ring_init(ring, elements), 0);
		for (i = 0; i < PIPES; i++)
			assert_int_equal(write(fds[i][1], "x", 1), 1);
		head = 0;
		while (head - ring->user_tail < PIPES) {
			if (syslet_ring_wait_timeout(ring, head, &limit))
				fail_msg("round %u: %u of %u completions: %s",
					 round, head, PIPES, strerror(errno));
			head = syslet_ring_head(ring);
		}
		assert_true(canary_intact());
		assert_int_equal(syslet_drain(), 0);
		for (i = 0; i < PIPES; i++) {
			close(fds[i][0]);
			close(fds[i][1]);
		}
		/* Idle again: initialised, it holds exactly elements. */
		assert_int_equal(syslet_ring_init(ring, elements ^ BIG ^ SMALL),
				 0);
		for (i = 0; i < ring->elements; i++)
			assert_int_equal(submit(ring, i), 0);
		assert_int_equal(submit(ring, i), EBUSY);
		assert_int_equal(syslet_drain(), 0);
		assert_int_equal(syslet_ring_head(ring), ring->elements);
		mask = 0;
		for (i = 0; i < ring->elements; i++)
			mask |= 1ull << ring->comp[i].caller_data;
		assert_int_equal(mask, UINT64_MAX >> (64 - ring->elements));
		assert_true(canary_intact());
		assert_int_equal(syslet_ring_init(ring, BIG), 0);
	}
}

/*
 * Idle as the program sees it (every completion consumed) is idle: the
 * ring initialised again at once, with another elements, while the
 * worker that posted the last completion may still be inside its post,
 * holds exactly its new elements, never one less.
 */
static void test_reinit_idle_race(void **state)
{
	const struct timespec limit = { .tv_sec = WAIT_SEC };
	struct syslet_ring *ring = new_ring(8);
	uint32_t round, i, n, k, seen;

	(void)state;
	setup_class();
	for (round = 0; round < 20000; round++) {
		n = round & 1 ? 8 : 1u << (round % 3);
		assert_int_equal(syslet_ring_init(ring, n), 0);
		for (i = 0; i < n; i++) {
			int err = submit(ring, i);

			if (err)
				fail_msg("round %u, call %u of %u: %s", round,
					 i, n, strerror(err));
		}
		for (seen = 0; seen < n;) {
			uint32_t tail = ring->user_tail;

			if (syslet_ring_head(ring) == tail &&
			    syslet_ring_wait_timeout(ring, tail, &limit))
				fail_msg("round %u: %u of %u: %s", round, seen,
					 n, strerror(errno));
			k = syslet_ring_head(ring) - tail;
			seen += k;
			syslet_ring_advance(ring, k);
		}
		assert_int_equal(seen, n);
	}
	assert_int_equal(syslet_drain(), 0);
	free(ring);
}

/* Waits on rings never used (timeouts, zero and short) make no state. */
static void test_wait_unused(void **state)
{
	const struct timespec zero = { 0 }, shortt = { 0, 100000 };
	struct syslet__rstate *rs;
	struct syslet_ring *ring;
	int i;

	(void)state;
	for (i = 0; i < 2000; i++) {
		ring = new_ring(1u << (i % 10));
		assert_int_equal(syslet_ring_wait_timeout(
					 ring, 0, i & 1 ? &zero : &shortt),
				 -1);
		assert_int_equal(errno, ETIMEDOUT);
		assert_int_equal(syslet_ring_wait(ring, 1), 0);
		assert_int_equal(syslet__ring_get(ring, false, &rs), -ENOENT);
		free(ring);
	}
}

/* Bad descriptors get the documented errno; nothing is attached. */
static void test_efd_bad(void **state)
{
	struct syslet_ring *ring = new_ring(4);
	struct syslet__rstate *rs;
	int p[2], efd, closed;

	(void)state;
	assert_int_equal(pipe(p), 0);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	closed = eventfd(0, EFD_NONBLOCK);
	assert_true(efd >= 0 && closed >= 0);
	close(closed);
	static const int bad_fd[] = { INT_MAX, 1 << 20, -2, INT_MIN };
	for (size_t i = 0; i < sizeof(bad_fd) / sizeof(bad_fd[0]); i++) {
		assert_int_equal(syslet_ring_eventfd(ring, bad_fd[i]), -1);
		assert_int_equal(errno, EBADF);
	}
	assert_int_equal(syslet_ring_eventfd(ring, closed), -1);
	assert_int_equal(errno, EBADF);
	/* read-only: refused for that first (syslet_ring_eventfd(3)) */
	assert_int_equal(syslet_ring_eventfd(ring, p[0]), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(syslet_ring_eventfd(ring, p[1]), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(syslet_ring_eventfd(NULL, efd), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(syslet_ring_eventfd((void *)((char *)ring + 4), efd),
			 -1);
	assert_int_equal(errno, EINVAL);
	/* Nothing attached: no state left behind by the refusals. */
	assert_int_equal(syslet__ring_get(ring, false, &rs), -ENOENT);
	close(p[0]);
	close(p[1]);
	close(efd);
	free(ring);
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* One eventfd on two rings: each ring's completions make it readable. */
static void test_efd_two_rings(void **state)
{
	struct syslet_ring *a = new_ring(4), *b = new_ring(8);
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t v;
	int round;

	(void)state;
	setup_class();
	assert_true(efd >= 0);
	assert_int_equal(syslet_ring_eventfd(a, efd), 0);
	assert_int_equal(syslet_ring_eventfd(b, efd), 0);
	for (round = 0; round < 200; round++) {
		struct syslet_ring *r = round & 1 ? a : b;

		assert_false(readable(efd, 0));
		assert_int_equal(submit(r, (uint64_t)round), 0);
		if (!readable(efd, WAIT_SEC * 1000))
			fail_msg("round %d: no wake-up", round);
		assert_int_equal(read(efd, &v, sizeof(v)), sizeof(v));
		assert_int_equal(syslet_drain(), 0);
		assert_int_equal(syslet_ring_head(r) - r->user_tail, 1);
		syslet_ring_advance(r, 1);
	}
	assert_int_equal(syslet_ring_eventfd(a, -1), 0);
	assert_int_equal(submit(a, 1), 0);
	assert_int_equal(syslet_drain(), 0);
	assert_false(readable(efd, 0));
	syslet_ring_advance(a, 1);
	assert_int_equal(syslet_ring_eventfd(b, -1), 0);
	close(efd);
	free(a);
	free(b);
}

struct detacher {
	struct syslet_ring *ring;
	_Atomic int done;
	int ret;
};

static void *detach_thread(void *arg)
{
	struct detacher *d = arg;

	d->ret = syslet_ring_eventfd(d->ring, -1);
	atomic_store(&d->done, 1);
	return NULL;
}

/* True once a thread of ours sits in write(@fd) (bounded: @sec). */
static bool writer_blocked(int fd, int sec)
{
	time_t end = time(NULL) + sec;
	char want[32], path[320], buf[128];
	struct dirent *e;
	DIR *d;
	bool found = false;

	snprintf(want, sizeof(want), "%d 0x%x ", SYS_write, fd);
	while (!found && time(NULL) <= end) {
		d = opendir("/proc/self/task");
		assert_non_null(d);
		while (!found && (e = readdir(d))) {
			FILE *f;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path),
				 "/proc/self/task/%s/syscall", e->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(buf, sizeof(buf), f) &&
			    !strncmp(buf, want, strlen(want)))
				found = true;
			fclose(f);
		}
		closedir(d);
		if (!found)
			sched_yield();
	}
	return found;
}

/*
 * A blocking eventfd whose counter is full (the program wrote
 * 0xfffffffffffffffe to it itself): the library's write of 1 would block
 * its worker in the middle of a post, and the program's detach, which
 * waits for that write, with it. The library never blocks on the
 * program's descriptor: a full counter is readable already.
 */
static void test_efd_full_blocking(void **state)
{
	const uint64_t full = UINT64_MAX - 1;
	struct syslet_ring *ring = new_ring(4);
	int efd = eventfd(0, EFD_CLOEXEC);
	struct detacher d = { .ring = ring };
	bool blocked;
	time_t end;
	pthread_t t;
	uint64_t v;

	(void)state;
	setup_class();
	assert_true(efd >= 0);
	assert_int_equal(write(efd, &full, sizeof(full)), sizeof(full));
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	assert_int_equal(submit(ring, 7), 0);
	assert_int_equal(syslet_ring_wait(ring, 0), 0);
	/* A worker stuck in the write shows within a second or so. */
	blocked = writer_blocked(efd, 2);
	assert_int_equal(pthread_create(&t, NULL, detach_thread, &d), 0);
	end = time(NULL) + 5;
	while (!atomic_load(&d.done) && time(NULL) <= end)
		sched_yield();
	/* Unblock whatever waits, then judge. */
	assert_int_equal(read(efd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(syslet_drain(), 0);
	assert_false(blocked);
	assert_true(atomic_load(&d.done));
	assert_int_equal(d.ret, 0);
	assert_int_equal(v, full);
	close(efd);
	free(ring);
}

#define AS_RINGS (1u << 19)
#define AS_SLOT 64u

/* This process's address-space size, bytes (/proc/self/statm). */
static size_t vm_size(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * Memory exhausted for real (RLIMIT_AS, not fault injection) while side
 * states are made: reservations fail with ENOMEM and nothing else, nothing
 * is reserved by a failed one, every state goes once given back, and with
 * memory back every ring works. In a child: the limit is process-wide.
 */
static void test_rlimit_as(void **state)
{
	pid_t pid;
	int st;

	(void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* Their allocators abort when out of memory instead of failing. */
	skip();
#endif
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *arena =
			aligned_alloc(AS_SLOT, (size_t)AS_RINGS * AS_SLOT);
		struct syslet__rstate **held;
		struct syslet__rstate *rs;
		struct rlimit old, lim;
		uint32_t i, ok = 0, nomem = 0;
		int ret;

		held = calloc(AS_RINGS, sizeof(*held));
		if (!arena || !held)
			_exit(10);
		for (i = 0; i < AS_RINGS; i++)
			syslet_ring_init((void *)(arena + (size_t)i * AS_SLOT),
					 1);
		if (getrlimit(RLIMIT_AS, &old))
			_exit(11);
		lim = old;
		lim.rlim_cur = vm_size() + (1u << 20);
		if (setrlimit(RLIMIT_AS, &lim))
			_exit(12);
		for (i = 0; i < AS_RINGS; i++) {
			ret = syslet__ring_reserve(
				(void *)(arena + (size_t)i * AS_SLOT),
				&held[i]);
			if (ret == 0)
				ok++;
			else if (ret == -ENOMEM)
				nomem++;
			else
				_exit(13);
		}
		if (!nomem || !ok) {
			fprintf(stderr, "%u states made, %u ENOMEM\n", ok,
				nomem);
			_exit(14);
		}
		for (i = 0; i < AS_RINGS; i++)
			if (held[i])
				syslet__ring_unreserve(held[i]);
		for (i = 0; i < AS_RINGS; i++)
			if (!syslet__ring_get(
				    (void *)(arena + (size_t)i * AS_SLOT),
				    false, &rs))
				_exit(15);
		if (setrlimit(RLIMIT_AS, &old))
			_exit(16);
		for (i = 0; i < AS_RINGS; i++) {
			struct syslet_ring *r =
				(void *)(arena + (size_t)i * AS_SLOT);

			if (syslet__ring_reserve(r, &rs))
				_exit(17);
			/* Reserved slot plus one: full at elements 1. */
			if (syslet__ring_reserve(r, &held[i]) != -EBUSY)
				_exit(18);
			syslet__ring_unreserve(rs);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail_msg("child: status %#x", st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: the fork child's heap has little free memory yet. */
		cmocka_unit_test(test_rlimit_as),
		cmocka_unit_test(test_depth_exact),
		cmocka_unit_test(test_depth_cross_thread),
		cmocka_unit_test(test_reinit_busy),
		cmocka_unit_test(test_reinit_idle_race),
		cmocka_unit_test(test_wait_unused),
		cmocka_unit_test(test_efd_bad),
		cmocka_unit_test(test_efd_two_rings),
		cmocka_unit_test(test_efd_full_blocking),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
