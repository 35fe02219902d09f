/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: syslet_ring_eventfd() (issue 13, item 2) through the
 * installed library: bad arguments and their errnos; level-triggered and
 * edge-triggered epoll_wait; attach while completions wait; detach with
 * -1; the documented "consume some, write 1 back" pattern; submitters on
 * both CPUs and a consumer that only sleeps in epoll_wait (100,000
 * completions, signals hitting it, every wait bounded); a raw-fork child
 * of a thread inside syslet_ring_eventfd() (1000 children, none may hang).
 * The libuv loop is
 * test_ring_eventfd_uv.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "sanitizer.h"

#include <syslet/syslet.h>

#define WAIT_MS 10000
#define STRESS_N 100000u
#define STRESS_SUBMITTERS 4
#define STRESS_ELEMENTS 256

static struct syslet_ring *new_ring(uint32_t elements)
{
	size_t size = (syslet_ring_size(elements) + 63) / 64 * 64;
	struct syslet_ring *r = aligned_alloc(64, size);

	assert_non_null(r);
	memset(r, 0, size);
	assert_int_equal(syslet_ring_init(r, elements), 0);
	return r;
}

/* A call that always goes to a worker: 0 if pending, -1/errno if not. */
static int submit(struct syslet_ring *ring, uint64_t cd)
{
	struct indirect_registers regs;
	union indirect_params p;

	memset(&regs, 0, sizeof(regs));
	SYSLET__REG_NR(&regs) = SYS_getppid;
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = cd;
	if (indirect(&regs, &p, sizeof(p), 0) == -1 && errno == ESYSLETPENDING)
		return 0;
	return -1;
}

static void submit_ok(struct syslet_ring *ring, uint64_t cd)
{
	if (submit(ring, cd))
		fail_msg("submit: %s", strerror(errno));
}

/* Consume everything up to what the program sees as the head. */
static uint32_t consume_all(struct syslet_ring *ring)
{
	uint32_t n = 0, h;

	while ((h = syslet_ring_head(ring)) != ring->user_tail) {
		n += h - ring->user_tail;
		syslet_ring_advance(ring, h - ring->user_tail);
	}
	return n;
}

static int epoll_for(int efd, uint32_t events)
{
	struct epoll_event ev = { .events = events };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
	return ep;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* epoll_wait for up to @ms in all, through EINTR; its count. */
static int wait_ep(int ep, int ms)
{
	long end = now_ms() + ms, left = ms;
	struct epoll_event ev;
	int n;

	for (;;) {
		n = epoll_wait(ep, &ev, 1, (int)left);
		if (n >= 0 || errno != EINTR)
			break;
		left = end - now_ms();
		if (left < 0)
			left = 0;
	}
	assert_true(n >= 0);
	return n;
}

static void drain_efd(int efd)
{
	uint64_t v;

	while (read(efd, &v, sizeof(v)) == sizeof(v))
		;
	assert_int_equal(errno, EAGAIN);
}

static bool readable_now(int efd)
{
	int ep = epoll_for(efd, EPOLLIN);
	bool r = wait_ep(ep, 0) == 1;

	close(ep);
	return r;
}

static void setup_class(void)
{
	assert_int_equal(syslet_set_class(SYS_getppid, SYSLET_CLASS_ASYNC), 0);
}

static void test_bad_args(void **state)
{
	uint64_t buf[16] = { 0 };
	struct syslet_ring *ring = new_ring(4);
	struct syslet_ring *odd = (struct syslet_ring *)((char *)buf + 4);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), fds[2], opath;
	char path[64];

	(void)state;
	assert_true(efd >= 0);
	assert_int_equal(syslet_ring_eventfd(NULL, efd), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(syslet_ring_eventfd(odd, efd), -1);
	assert_int_equal(errno, EINVAL);
	ring->elements = 3;
	assert_int_equal(syslet_ring_eventfd(ring, efd), -1);
	assert_int_equal(errno, EINVAL);
	ring->elements = 4;
	assert_int_equal(syslet_ring_eventfd(ring, -2), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(syslet_ring_eventfd(ring, INT32_MAX), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	assert_int_equal(syslet_ring_eventfd(ring, fds[1]), -1);
	assert_int_equal(errno, EINVAL);
	/* Read-only: refused before its kind is looked at. */
	assert_int_equal(syslet_ring_eventfd(ring, fds[0]), -1);
	assert_int_equal(errno, EBADF);
	close(fds[0]);
	close(fds[1]);
	/* An O_PATH descriptor of the eventfd cannot be written. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", efd);
	opath = open(path, O_PATH | O_CLOEXEC);
	assert_true(opath >= 0);
	assert_int_equal(syslet_ring_eventfd(ring, opath), -1);
	assert_int_equal(errno, EBADF);
	close(opath);
	/* Detaching what was never attached succeeds, errno untouched. */
	errno = 1234;
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	assert_int_equal(errno, 1234);
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	assert_int_equal(errno, 1234);
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	close(efd);
	free(ring);
}

static void test_level(void **state)
{
	struct syslet_ring *ring = new_ring(8);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ep, round;

	(void)state;
	setup_class();
	assert_true(efd >= 0);
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	ep = epoll_for(efd, EPOLLIN);
	assert_int_equal(wait_ep(ep, 0), 0);
	for (round = 0; round < 100; round++) {
		submit_ok(ring, round);
		if (wait_ep(ep, WAIT_MS) != 1)
			fail_msg("round %d: no event in %d ms", round, WAIT_MS);
		/* Level-triggered: readable until the program reads it. */
		assert_int_equal(wait_ep(ep, 0), 1);
		drain_efd(efd);
		while (!consume_all(ring))
			;
		/* Empty as the program sees it, and no completion since. */
		assert_int_equal(syslet_drain(), 0);
		if (syslet_ring_head(ring) == ring->user_tail)
			assert_false(readable_now(efd));
		else
			consume_all(ring);
	}
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	close(ep);
	close(efd);
	free(ring);
}

static void test_edge(void **state)
{
	struct syslet_ring *ring = new_ring(16);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ep, round, i;
	uint32_t got;

	(void)state;
	setup_class();
	assert_true(efd >= 0);
	ep = epoll_for(efd, EPOLLIN | EPOLLET);
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	for (round = 0; round < 200; round++) {
		for (i = 0; i < 1 + round % 16; i++)
			submit_ok(ring, i);
		got = 0;
		/* Edge-triggered, the eventfd never read: each edge counts. */
		while (got < (uint32_t)(1 + round % 16)) {
			if (wait_ep(ep, WAIT_MS) != 1)
				fail_msg("round %d: %u of %d, no edge", round,
					 got, 1 + round % 16);
			got += consume_all(ring);
		}
	}
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	close(ep);
	close(efd);
	free(ring);
}

static void test_attach_nonempty(void **state)
{
	struct syslet_ring *ring = new_ring(4);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	const struct timespec limit = { .tv_sec = WAIT_MS / 1000 };

	(void)state;
	setup_class();
	submit_ok(ring, 1);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &limit), 0);
	/* A completion waits: attaching makes the eventfd readable at once. */
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	assert_true(readable_now(efd));
	drain_efd(efd);
	consume_all(ring);
	/* Replacing the eventfd by another: the old one is not written. */
	{
		int efd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ep;

		assert_int_equal(syslet_ring_eventfd(ring, efd2), 0);
		ep = epoll_for(efd2, EPOLLIN);
		submit_ok(ring, 2);
		assert_int_equal(wait_ep(ep, WAIT_MS), 1);
		assert_int_equal(syslet_drain(), 0);
		assert_false(readable_now(efd));
		assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
		close(ep);
		close(efd2);
	}
	close(efd);
	free(ring);
}

static void test_detach(void **state)
{
	struct syslet_ring *ring = new_ring(4);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	const struct timespec limit = { .tv_sec = WAIT_MS / 1000 };

	(void)state;
	setup_class();
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	submit_ok(ring, 1);
	assert_int_equal(syslet_ring_wait_timeout(ring, 0, &limit), 0);
	assert_int_equal(syslet_drain(), 0);
	assert_false(readable_now(efd));
	consume_all(ring);
	/* Detached twice: still fine. */
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	close(efd);
	free(ring);
}

/*
 * The program reads the eventfd and consumes only some: the rule is to
 * write 1 back (or not read it); then the eventfd stays readable.
 */
static void test_partial_rewrite(void **state)
{
	struct syslet_ring *ring = new_ring(8);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ep, i;
	const uint64_t one = 1;

	(void)state;
	setup_class();
	ep = epoll_for(efd, EPOLLIN);
	assert_int_equal(syslet_ring_eventfd(ring, efd), 0);
	for (i = 0; i < 4; i++)
		submit_ok(ring, i);
	assert_int_equal(syslet_drain(), 0);
	assert_int_equal(wait_ep(ep, WAIT_MS), 1);
	drain_efd(efd);
	syslet_ring_advance(ring, 1);
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(wait_ep(ep, 0), 1);
	drain_efd(efd);
	assert_int_equal(consume_all(ring), 3);
	assert_int_equal(syslet_ring_eventfd(ring, -1), 0);
	close(ep);
	close(efd);
	free(ring);
}

/* ---- submitters on both CPUs, a consumer asleep in epoll_wait -------- */

struct stress {
	struct syslet_ring *ring;
	_Atomic uint32_t next; /* calls handed out to submitters */
	_Atomic int failed;
	_Atomic int done;
	pthread_t consumer;
};

/* Signals at the consumer while it sleeps in epoll_wait (pacing only). */
static void *signaller(void *arg)
{
	const struct timespec pace = { .tv_nsec = 200000 };
	struct stress *s = arg;

	while (!atomic_load(&s->done)) {
		pthread_kill(s->consumer, SIGUSR1);
		nanosleep(&pace, NULL);
	}
	return NULL;
}

static void *submitter(void *arg)
{
	struct stress *s = arg;
	uint32_t i;

	while ((i = atomic_fetch_add(&s->next, 1)) < STRESS_N) {
		while (submit(s->ring, i)) {
			if (errno != EBUSY) {
				atomic_store(&s->failed, errno);
				return NULL;
			}
			sched_yield();
		}
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void pin(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % CPU_SETSIZE, &set);
	/* Best effort: one CPU only is fine too. */
	(void)pthread_setaffinity_np(t, sizeof(set), &set);
}

static void test_stress_epoll(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct stress s = { .ring = new_ring(STRESS_ELEMENTS) };
	pthread_t sub[STRESS_SUBMITTERS], sig;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ep, i;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t got = 0, sleeps = 0;
	uint8_t *seen = calloc(STRESS_N, 1);

	(void)state;
	setup_class();
	assert_non_null(seen);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	ep = epoll_for(efd, EPOLLIN);
	assert_int_equal(syslet_ring_eventfd(s.ring, efd), 0);
	s.consumer = pthread_self();
	assert_int_equal(pthread_create(&sig, NULL, signaller, &s), 0);
	for (i = 0; i < STRESS_SUBMITTERS; i++) {
		assert_int_equal(pthread_create(&sub[i], NULL, submitter, &s),
				 0);
		pin(sub[i], (int)(i % (ncpu > 0 ? ncpu : 1)));
	}
	while (got < STRESS_N) {
		uint32_t h, t;

		/*
		 * head != user_tail: completions sat unsignalled (a lost
		 * wake-up); equal: none came (a stalled pool, or a slow one)
		 */
		if (wait_ep(ep, WAIT_MS) != 1)
			fail_msg("no event in %d ms: %u of %u consumed, head "
				 "%u,"
				 " user_tail %u, %u handed out",
				 WAIT_MS, got, STRESS_N,
				 syslet_ring_head(s.ring), s.ring->user_tail,
				 atomic_load(&s.next));
		sleeps++;
		drain_efd(efd);
		while ((h = syslet_ring_head(s.ring)) != s.ring->user_tail) {
			for (t = s.ring->user_tail; t != h; t++) {
				struct syslet_completion *c =
					syslet_ring_slot(s.ring, t);

				assert_true(c->caller_data < STRESS_N);
				assert_false(seen[c->caller_data]);
				seen[c->caller_data] = 1;
				got++;
			}
			syslet_ring_advance(s.ring, h - s.ring->user_tail);
		}
	}
	atomic_store(&s.done, 1);
	assert_int_equal(pthread_join(sig, NULL), 0);
	for (i = 0; i < STRESS_SUBMITTERS; i++)
		assert_int_equal(pthread_join(sub[i], NULL), 0);
	assert_int_equal(atomic_load(&s.failed), 0);
	printf("# %u completions, %u epoll wake-ups\n", got, sleeps);
	assert_int_equal(syslet_ring_eventfd(s.ring, -1), 0);
	close(ep);
	close(efd);
	free(seen);
	free(s.ring);
}

/*
 * A child made with syscall(SYS_fork) while another thread is inside
 * syslet_ring_eventfd() (maybe holding a lock of the ring states) does not
 * hang at its own first syslet_ring_eventfd(): 1000 children, each bounded.
 */
#define RAW_FORKS 1000

struct flipper {
	struct syslet_ring *ring;
	int efd;
	_Atomic int stop;
};

static void *flip(void *arg)
{
	struct flipper *f = arg;

	while (!atomic_load(&f->stop)) {
		syslet_ring_eventfd(f->ring, f->efd);
		syslet_ring_eventfd(f->ring, -1);
	}
	return NULL;
}

static void test_raw_fork_child(void **state)
{
	struct flipper f = { .ring = new_ring(4) };
	struct syslet_ring *mine = new_ring(4);
	int i, st, hung = 0, failed = 0;
	pthread_t t;
	pid_t pid;

	(void)state;
	if (UNDER_TSAN) {
		print_message("TSan cannot follow raw forks\n");
		skip();
	}
	f.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(f.efd >= 0);
	assert_int_equal(pthread_create(&t, NULL, flip, &f), 0);
	for (i = 0; i < RAW_FORKS; i++) {
		/* a raw fork: clone(SIGCHLD) (no SYS_fork on aarch64) */
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
		assert_true(pid >= 0);
		if (!pid) {
			alarm(2);
			/* The flipper's ring: the bucket it may hold. */
			_exit(syslet_ring_eventfd(f.ring, f.efd) ||
			      syslet_ring_eventfd(mine, f.efd) ||
			      syslet_ring_eventfd(mine, -1));
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		hung += WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM;
		failed += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	atomic_store(&f.stop, 1);
	pthread_join(t, NULL);
	if (failed)
		fail_msg("%d of %d raw-fork children failed, %d hung", failed,
			 RAW_FORKS, hung);
	syslet_ring_eventfd(f.ring, -1);
	close(f.efd);
	free(f.ring);
	free(mine);
}

/*
 * A SCHED_FIFO thread on the CPU of the pool's only worker detaches the
 * eventfd while that worker, woken by the call, is inside its eventfd
 * write: the write wakes the real-time thread, which preempts the worker
 * before it counts itself out. The detach must not spin on it (with
 * sched_yield() it held for the RT throttling's ~950 ms, for ever without
 * throttling). In a child: a fresh pool of one worker, where it is pinned.
 */
#define FIFO_BOUND_MS 200

struct fifo_detacher {
	struct syslet_ring *ring;
	int efd, cpu;
	long ms; /* how long the detach took, or < 0: why not run */
};

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void *fifo_detach(void *arg)
{
	struct fifo_detacher *d = arg;
	struct pollfd pf = { .fd = d->efd, .events = POLLIN };
	struct timespec t0;

	if (poll(&pf, 1, WAIT_MS) != 1) {
		d->ms = -2;
		return NULL;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (syslet_ring_eventfd(d->ring, -1)) {
		d->ms = -3;
		return NULL;
	}
	d->ms = ms_since(&t0);
	return NULL;
}

/* The child's run: 0, 77 without the privilege, else the failed step. */
static int fifo_child(void)
{
	struct fifo_detacher d = { .ring = new_ring(4), .ms = -1 };
	struct sched_param sp = { .sched_priority = 1 };
	struct indirect_registers regs;
	union indirect_params p;
	pthread_attr_t a;
	cpu_set_t set;
	pthread_t t;
	char b[4];
	int fd[2];

	alarm(WAIT_MS / 1000);
	if (sched_getaffinity(0, sizeof(set), &set))
		return 2;
	for (d.cpu = 0; !CPU_ISSET(d.cpu, &set); d.cpu++)
		;
	CPU_ZERO(&set);
	CPU_SET(d.cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) ||
	    syslet_config_set(SYSLET_OPT_PIN, 1) || pipe(fd))
		return 3;
	d.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d.efd < 0 || syslet_ring_eventfd(d.ring, d.efd))
		return 4;
	/* A read of an empty pipe: pending, on the worker of this CPU. */
	memset(&regs, 0, sizeof(regs));
	SYSLET__REG_NR(&regs) = SYS_read;
	SYSLET__REG_ARGS(&regs)[0] = (uint64_t)fd[0];
	SYSLET__REG_ARGS(&regs)[1] = (uint64_t)(uintptr_t)b;
	SYSLET__REG_ARGS(&regs)[2] = 1;
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)d.ring;
	if (indirect(&regs, &p, sizeof(p), 0) != -1 || errno != ESYSLETPENDING)
		return 5;
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	if (pthread_create(&t, &a, fifo_detach, &d))
		return 77; /* EPERM: no CAP_SYS_NICE */
	/*
	 * The real-time thread ran first (it preempts us on this CPU) and
	 * sleeps in poll(): the completion's eventfd write wakes it.
	 */
	if (write(fd[1], "x", 1) != 1)
		return 6;
	pthread_join(t, NULL);
	if (d.ms < 0)
		return (int)(10 - d.ms);
	if (d.ms > FIFO_BOUND_MS) {
		fprintf(stderr, "detach stalled %ld ms behind the worker\n",
			d.ms);
		return 20;
	}
	return 0;
}

static void test_detach_fifo(void **state)
{
	int st;
	pid_t pid;

	(void)state;
	if (UNDER_TSAN) {
		print_message("its bound is a native time\n");
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(fifo_child());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st)); /* SIGALRM: stalled for ever */
	if (WEXITSTATUS(st) == 77) {
		printf("no SCHED_FIFO here (CAP_SYS_NICE): not run\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_level),
		cmocka_unit_test(test_edge),
		cmocka_unit_test(test_attach_nonempty),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_partial_rewrite),
		cmocka_unit_test(test_stress_epoll),
		cmocka_unit_test(test_raw_fork_child),
		cmocka_unit_test(test_detach_fifo),
	};

	alarm(300);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
