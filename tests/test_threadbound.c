/* SPDX-License-Identifier: MIT */
/*
 * Description: thread-bound calls run on the calling thread: gettid,
 * rt_sigprocmask and a raw setresuid (per thread in the kernel) through
 * indirect() act on the caller and on no other thread; calls whose path
 * names the calling thread (/proc/thread-self/..., /proc/self/task/<own
 * tid>/...) and ppoll/pselect6 waits whose set holds a signalfd run on the
 * caller (SPEC 7): they answer inline, as the plain call does, and a
 * signal sent to the caller ends the wait.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

static struct syslet_ring *ring;

static void *tid_thread(void *arg)
{
	long *tid = arg;

	tid[0] = syscall(SYS_gettid);
	tid[1] = SYS_IND(ring, 0, SYS_gettid);
	return NULL;
}

static void test_gettid(void **state)
{
	long tid[2];
	pthread_t t;

	(void)state;
	assert_int_equal(SYS_IND(ring, 0, SYS_gettid), syscall(SYS_gettid));
	assert_int_equal(pthread_create(&t, NULL, tid_thread, tid), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(tid[0], tid[1]);
	assert_int_not_equal(tid[0], syscall(SYS_gettid));
	ring_empty(ring);
}

static void *mask_thread(void *arg)
{
	sigset_t set, now;
	long *ok = arg;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	*ok = SYS_IND(ring, 0, SYS_rt_sigprocmask, SIG_BLOCK, &set, 0, 8);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	if (*ok == 0 && !sigismember(&now, SIGUSR1))
		*ok = -100;
	return NULL;
}

static void test_sigprocmask(void **state)
{
	sigset_t now;
	pthread_t t;
	long ok = -1;

	(void)state;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	assert_false(sigismember(&now, SIGUSR1));
	assert_int_equal(pthread_create(&t, NULL, mask_thread, &ok), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ok, 0);
	/* the caller's mask changed, not this thread's */
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	assert_false(sigismember(&now, SIGUSR1));
	ring_empty(ring);
}

static int go[2];

static void *euid_thread(void *arg)
{
	long *euid = arg;
	char b;

	if (read(go[0], &b, 1) != 1)
		return NULL;
	*euid = syscall(SYS_geteuid);
	return NULL;
}

static void test_raw_setresuid(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long other = -1;
		pthread_t t;

		if (pipe(go) || pthread_create(&t, NULL, euid_thread, &other))
			_exit(10);
		if (SYS_IND(ring, 0, SYS_setresuid, -1, 65534, -1) != 0)
			_exit(11);
		if (syscall(SYS_geteuid) != 65534)
			_exit(12);
		if (write(go[1], "g", 1) != 1 || pthread_join(t, NULL))
			_exit(13);
		/* the raw call changed only the calling thread */
		_exit(other == 0 ? 0 : 14);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* @r inline (a completion would mean a worker ran it: consumed, then -1). */
static long inline_only(long r)
{
	if (PENDING(r)) {
		ring_pop(ring);
		return -1000;
	}
	return r;
}

static void *thread_self_thread(void *arg)
{
	char *buf = arg, plain[64] = "", ind[64] = "", path[64];
	long r, n;
	int fd;

	pthread_setname_np(pthread_self(), "tb-caller");
	n = readlink("/proc/thread-self", plain, sizeof(plain) - 1);
	r = inline_only(SYS_IND(ring, 0, SYS_readlinkat, AT_FDCWD,
				"/proc/thread-self", ind, sizeof(ind) - 1));
	if (n <= 0 || r != n || memcmp(plain, ind, (size_t)n)) {
		snprintf(buf, 64, "readlink %ld/%ld", n, r);
		return NULL;
	}
	fd = (int)inline_only(SYS_IND(ring, 0, SYS_openat, AT_FDCWD,
				      "/proc/thread-self/comm", O_RDONLY, 0));
	if (fd < 0 || read(fd, ind, sizeof(ind)) != 10 ||
	    memcmp(ind, "tb-caller\n", 10)) {
		snprintf(buf, 64, "thread-self/comm %d", fd);
		return NULL;
	}
	close(fd);
	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm",
		 syscall(SYS_gettid));
	fd = (int)inline_only(
		SYS_IND(ring, 0, SYS_openat, AT_FDCWD, path, O_RDONLY, 0));
	if (fd < 0) {
		snprintf(buf, 64, "task/tid/comm %d", fd);
		return NULL;
	}
	close(fd);
	strcpy(buf, "ok");
	return NULL;
}

/*
 * A thread's very first call names its own task directory: it runs on the
 * thread too (the library had not yet learnt the thread's id).
 */
static void *own_task_first_thread(void *arg)
{
	char *buf = arg, path[64];
	int fd;

	pthread_setname_np(pthread_self(), "tb-first");
	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm",
		 syscall(SYS_gettid));
	fd = (int)inline_only(
		SYS_IND(ring, 0, SYS_openat, AT_FDCWD, path, O_RDONLY, 0));
	if (fd < 0 || read(fd, buf, 9) != 9 || memcmp(buf, "tb-first\n", 9)) {
		snprintf(buf, 64, "first task/tid/comm %d", fd);
		return NULL;
	}
	close(fd);
	strcpy(buf, "ok");
	return NULL;
}

static void test_own_task_first_call(void **state)
{
	char buf[64] = "";
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, own_task_first_thread, buf),
			 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_string_equal(buf, "ok");
	ring_empty(ring);
}

static void test_thread_self_paths(void **state)
{
	char buf[64] = "";
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, thread_self_thread, buf), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_string_equal(buf, "ok");
	ring_empty(ring);
}

/*
 * Sends SIGUSR1 to the waiter once it sleeps in system call nr (bounded:
 * after WAIT_SECONDS it sends anyway, and the wait's answer tells).
 */
struct kick {
	pid_t tid;
	long nr;
};

static void *kicker(void *arg)
{
	struct kick *k = arg;
	struct timespec tick = { 0, 1000000 };
	char path[64];
	long nr = -1;
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", k->tid);
	for (i = 0; i < WAIT_SECONDS * 1000 && nr != k->nr; i++) {
		FILE *f = fopen(path, "r");

		if (f) {
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
		}
		nanosleep(&tick, NULL);
	}
	syscall(SYS_tgkill, getpid(), k->tid, SIGUSR1);
	return NULL;
}

/* A wait of @nr on a signalfd of SIGUSR1 answers 1 when it comes. */
static void signalfd_wait(long nr)
{
	struct kick k = { (pid_t)syscall(SYS_gettid), nr };
	struct timespec tmo = { WAIT_SECONDS, 0 };
	struct signalfd_siginfo si;
	sigset_t set, old;
	struct pollfd pfd;
	pthread_t t;
	fd_set rd;
	long r;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	assert_true(sfd >= 0);
	pfd = (struct pollfd){ .fd = sfd, .events = POLLIN };
	FD_ZERO(&rd);
	FD_SET(sfd, &rd);
	assert_int_equal(pthread_create(&t, NULL, kicker, &k), 0);
	if (nr == SYS_ppoll)
		r = SYS_IND(ring, 0, SYS_ppoll, &pfd, 1, &tmo, NULL, 8);
	else
		r = SYS_IND(ring, 0, SYS_pselect6, sfd + 1, &rd, NULL, NULL,
			    &tmo, NULL);
	r = inline_only(r);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(r, 1);
	assert_int_equal(read(sfd, &si, sizeof(si)), sizeof(si));
	assert_int_equal(si.ssi_signo, SIGUSR1);
	close(sfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ring_empty(ring);
}

static void test_signalfd_ppoll(void **state)
{
	(void)state;
	signalfd_wait(SYS_ppoll);
}

static void test_signalfd_pselect6(void **state)
{
	(void)state;
	signalfd_wait(SYS_pselect6);
}

static int setup(void **state)
{
	(void)state;
	ring = ring_new(4);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(ring);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gettid),
		cmocka_unit_test(test_sigprocmask),
		cmocka_unit_test(test_raw_setresuid),
		cmocka_unit_test(test_thread_self_paths),
		cmocka_unit_test(test_own_task_first_call),
		cmocka_unit_test(test_signalfd_ppoll),
		cmocka_unit_test(test_signalfd_pselect6),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
