/* SPDX-License-Identifier: MIT */
/*
 * Description: the six places where indirect() answered differently from
 * the blocking call (issue 12), each run side by side with the blocking
 * call on the same state: msgrcv(MSG_COPY) without IPC_NOWAIT, SO_RCVLOWAT
 * and MSG_WAITALL, a partly cached positional read on a full ring, O_APPEND
 * writes, calls bound to the caller's signal state (sigmask arguments, a
 * signalfd), and bad or invalid timeout, fd_set and open_how pointers.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "same_result.h"
#include "test_dir_util.h"

#ifndef MSG_COPY
#define MSG_COPY 040000
#endif

static struct syslet_ring *ring;
static char dir[256];

static int setup(void **state)
{
	(void)state;
	return dir_ring_setup(dir, sizeof(dir), "syslet-same", &ring);
}

static int teardown(void **state)
{
	(void)state;
	return dir_ring_teardown(dir, ring);
}

/* 1. MSG_COPY needs IPC_NOWAIT: EINVAL, not a copy. */
static void test_msg_copy(void **state)
{
	struct {
		long type;
		char text[16];
	} m = { 1, "hello" }, out;
	int q = msgget(IPC_PRIVATE, 0600);

	(void)state;
	assert_true(q >= 0);
	assert_int_equal(msgsnd(q, &m, 6, 0), 0);
	if (BLK(SYS_msgrcv, q, &out, 16, 0, MSG_COPY | IPC_NOWAIT) != 6) {
		msgctl(q, IPC_RMID, NULL);
		skip(); /* no CONFIG_CHECKPOINT_RESTORE */
	}
	assert_int_equal(BLK(SYS_msgrcv, q, &out, 16, 0, MSG_COPY), -EINVAL);
	assert_int_equal(IND(ring, SYS_msgrcv, q, &out, 16, 0, MSG_COPY),
			 -EINVAL);
	assert_int_equal(IND(ring, SYS_msgrcv, q, &out, 16, 0,
			     MSG_COPY | IPC_NOWAIT),
			 6);
	assert_int_equal(msgctl(q, IPC_RMID, NULL), 0);
}

/* 2. SO_RCVLOWAT = 10, 5 bytes queued: the blocking recv waits for 10. */
static void test_rcvlowat(void **state)
{
	char buf[100], *p = "0123456789abcdef";
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int sv[2], lowat = 10, k, pend;
	struct syslet_completion c;
	long r;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_RCVLOWAT, &lowat,
				    sizeof(lowat)),
			 0);
	/* enough queued: both answer at once, the same */
	assert_int_equal(write(sv[0], p, 12), 12);
	assert_int_equal(BLK(SYS_recvfrom, sv[1], buf, 6, 0, 0, 0), 6);
	assert_int_equal(write(sv[0], p, 6), 6);
	assert_int_equal(IND(ring, SYS_recvfrom, sv[1], buf, 100, 0, 0, 0), 12);
	/* read, recvfrom, recvmsg with 5 queued: pending, then 10 */
	for (k = 0; k < 3; k++) {
		memset(buf, 0, sizeof(buf));
		assert_int_equal(write(sv[0], p, 5), 5);
		if (k == 0)
			r = SYS_IND(ring, 7, SYS_read, sv[1], buf, 100);
		else if (k == 1)
			r = SYS_IND(ring, 7, SYS_recvfrom, sv[1], buf, 100, 0,
				    0, 0);
		else
			r = SYS_IND(ring, 7, SYS_recvmsg, sv[1], &mh, 0);
		assert_true(PENDING(r));
		assert_int_equal(write(sv[0], p + 5, 7), 7);
		c = ring_pop(ring);
		assert_int_equal((long)c.status, 12);
		assert_memory_equal(buf, "0123456789ab", 12);
	}
	/* MSG_WAITALL: the blocking call waits for all 20 */
	assert_int_equal(write(sv[0], p, 5), 5);
	r = SYS_IND(ring, 8, SYS_recvfrom, sv[1], buf, 20, MSG_WAITALL, 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(write(sv[0], p, 15), 15);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 20);
	/* O_NONBLOCK: the blocking call's answer is what is there */
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(write(sv[0], p, 5), 5);
	assert_int_equal(IND_P(ring, &pend, SYS_read, sv[1], buf, 100), 5);
	assert_false(pend);
	close(sv[0]);
	close(sv[1]);
}

/* A ring of one slot, taken by a read that waits on a pipe. */
static struct syslet_ring *full_ring(int pfd[2])
{
	struct syslet_ring *r1 = ring_new(1);
	static char b;

	assert_int_equal(pipe(pfd), 0);
	assert_true(PENDING(SYS_IND(r1, 1, SYS_read, pfd[0], &b, 1)));
	return r1;
}

static void free_full_ring(struct syslet_ring *r1, int pfd[2])
{
	assert_int_equal(write(pfd[1], "x", 1), 1);
	assert_int_equal((long)ring_pop(r1).status, 1);
	close(pfd[0]);
	close(pfd[1]);
	free(r1);
}

static int half_cached(const char *name, long size)
{
	char path[512], *b = malloc((size_t)size);
	int fd;

	assert_non_null(b);
	memset(b, 'z', (size_t)size);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, (size_t)size), size);
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	assert_int_equal(pread(fd, b, 4096, 0), 4096);
	free(b);
	return fd;
}

/*
 * 3. A full ring and a partly cached file: a positional read consumed
 * nothing, so EBUSY (not started); a positionless one moved the file
 * position, so its short count is the truth.
 */
static void test_full_ring_positional(void **state)
{
	struct syslet_ring *r1;
	char *b = malloc(65536);
	struct iovec iov = { b, 65536 };
	int pfd[2], fd;
	long r;

	(void)state;
	assert_non_null(b);
	r1 = full_ring(pfd);
	fd = half_cached("half", 65536);
	r = SYS_IND(r1, 2, SYS_pread64, fd, b, 65536, 0);
	if (r != 65536) /* all of it in cache already: nothing to see */
		assert_true(r == -1 && errno == EBUSY);
	r = SYS_IND(r1, 2, SYS_preadv, fd, &iov, 1, 0);
	if (r != 65536)
		assert_true(r == -1 && errno == EBUSY);
	r = SYS_IND(r1, 2, SYS_preadv2, fd, &iov, 1, 0, 0);
	if (r != 65536)
		assert_true(r == -1 && errno == EBUSY);
	/* the worker path reads it all, as pread does */
	assert_int_equal(IND(ring, SYS_pread64, fd, b, 65536, 0), 65536);
	assert_int_equal(BLK(SYS_pread64, fd, b, 65536, 0), 65536);
	close(fd);
	/* positionless: what moved is returned */
	fd = half_cached("half2", 65536);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	r = SYS_IND(r1, 2, SYS_read, fd, b, 65536);
	assert_true(r > 0 || (r == -1 && errno == EBUSY));
	assert_int_equal(lseek(fd, 0, SEEK_CUR), r > 0 ? r : 0);
	close(fd);
	free_full_ring(r1, pfd);
	free(b);
}

/*
 * 4. An O_APPEND write is one write. Where buffered RWF_NOWAIT writes are
 * refused (ext4, tmpfs) it cannot be split anyway; where they work (XFS,
 * btrfs: SYSLET_TEST_DIR) it must go to a worker whole, never begun on
 * the caller.
 */
static void test_append_one_write(void **state)
{
	char path[512], *b = malloc(1 << 20);
	struct iovec iov = { b, 1 << 20 };
	struct stat st;
	int fd, pend, i;

	(void)state;
	assert_non_null(b);
	memset(b, 'a', 1 << 20);
	snprintf(path, sizeof(path), "%s/append", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123", 4), 4);
	assert_int_equal(IND_P(ring, &pend, SYS_write, fd, b, 1 << 20),
			 1 << 20);
	assert_int_equal(IND_P(ring, &pend, SYS_pwrite64, fd, b, 100, 0), 100);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 4 + (1 << 20) + 100);
	if (pwritev2(fd, &iov, 1, -1, RWF_NOWAIT) < 0 && errno == EOPNOTSUPP) {
		close(fd);
		free(b);
		skip(); /* no buffered RWF_NOWAIT writes here */
	}
	/* buffered RWF_NOWAIT writes work here: never tried on the caller */
	for (i = 0; i < 64; i++) {
		assert_int_equal(IND_P(ring, &pend, SYS_write, fd, b, 4096),
				 4096);
		assert_true(pend);
		assert_int_equal(IND_P(ring, &pend, SYS_pwritev2, fd, &iov, 1,
				       -1, 0, RWF_APPEND),
				 1 << 20);
		assert_true(pend);
	}
	close(fd);
	free(b);
}

/* 5. Calls bound to the caller's signal state. */
static atomic_long handled_on;
static atomic_int handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&handled_on, syscall(SYS_gettid));
	atomic_store(&handled, 1);
}

struct kicker {
	pid_t tid;
	int sig;
	atomic_int stop;
	pthread_t t;
};

/* Send @sig to the caller every millisecond until told to stop (30 s). */
static void *kick(void *arg)
{
	struct kicker *k = arg;
	struct timespec ms = { 0, 1000000 };
	int i;

	for (i = 0; i < 30000 && !atomic_load(&k->stop); i++) {
		syscall(SYS_tgkill, getpid(), k->tid, k->sig);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

static void kick_start(struct kicker *k, int sig)
{
	k->tid = (pid_t)syscall(SYS_gettid);
	k->sig = sig;
	atomic_store(&k->stop, 0);
	assert_int_equal(pthread_create(&k->t, NULL, kick, k), 0);
}

static void kick_stop(struct kicker *k)
{
	atomic_store(&k->stop, 1);
	assert_int_equal(pthread_join(k->t, NULL), 0);
}

/*
 * ppoll, pselect6, epoll_pwait and epoll_pwait2 waiting on an empty pipe
 * with a mask that lets SIGUSR1 in while the thread blocks it: the signal
 * sent to the caller interrupts the call, and its handler runs on the
 * caller, as with the blocking call.
 */
static void test_sigmask_calls(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	sigset_t block, open_set;
	struct kicker k;
	int pfd[2], ep, which, pend;
	struct pollfd pf;
	fd_set rd;
	long r, pack[2];

	(void)state;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &block, NULL), 0);
	sigemptyset(&open_set);
	pack[0] = (long)&open_set;
	pack[1] = 8;
	assert_int_equal(pipe(pfd), 0);
	ep = epoll_create1(0);
	assert_true(ep >= 0);
	ev.data.fd = pfd[0];
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), 0);
	for (which = 0; which < 4; which++) {
		pf.fd = pfd[0];
		pf.events = POLLIN;
		FD_ZERO(&rd);
		FD_SET(pfd[0], &rd);
		atomic_store(&handled, 0);
		kick_start(&k, SIGUSR1);
		if (which == 0)
			r = IND_P(ring, &pend, SYS_ppoll, &pf, 1, 0, &open_set,
				  8);
		else if (which == 1)
			r = IND_P(ring, &pend, SYS_pselect6, pfd[0] + 1, &rd, 0,
				  0, 0, pack);
		else if (which == 2)
			r = IND_P(ring, &pend, SYS_epoll_pwait, ep, &out, 1, -1,
				  &open_set, 8);
		else
			r = IND_P(ring, &pend, SYS_epoll_pwait2, ep, &out, 1, 0,
				  &open_set, 8);
		if (pend) { /* the old way: on a worker; let it finish */
			assert_int_equal(write(pfd[1], "x", 1), 1);
			assert_int_equal(read(pfd[0], &out, 1), 1);
		}
		kick_stop(&k);
		assert_false(pend);
		assert_int_equal(r, -EINTR);
		assert_true(atomic_load(&handled));
		assert_int_equal(atomic_load(&handled_on), syscall(SYS_gettid));
	}
	/* no mask: an empty pipe is a worker's wait, as before */
	r = SYS_IND(ring, 3, SYS_ppoll, &pf, 1, 0, 0, 8);
	assert_true(PENDING(r));
	assert_int_equal(write(pfd[1], "x", 1), 1);
	assert_int_equal((long)ring_pop(ring).status, 1);
	close(pfd[0]);
	close(pfd[1]);
	close(ep);
	assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &block, NULL), 0);
}

/*
 * A blocking read of a signalfd sees the signals of the thread that reads:
 * a signal sent to the caller (tgkill) completes it, inline.
 */
static void test_signalfd_read(void **state)
{
	struct signalfd_siginfo si;
	sigset_t set;
	struct kicker k;
	int sfd, pend;
	long r;

	(void)state;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
	sfd = signalfd(-1, &set, 0);
	assert_true(sfd >= 0);
	/* side by side, a signal pending on the caller */
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR2);
	assert_int_equal(BLK(SYS_read, sfd, &si, sizeof(si)), sizeof(si));
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR2);
	assert_int_equal(IND(ring, SYS_read, sfd, &si, sizeof(si)), sizeof(si));
	assert_int_equal(si.ssi_signo, SIGUSR2);
	/* a positional read: ESPIPE, no signal taken */
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR2);
	assert_int_equal(IND(ring, SYS_pread64, sfd, &si, sizeof(si), 0),
			 BLK(SYS_pread64, sfd, &si, sizeof(si), 0));
	assert_int_equal(BLK(SYS_read, sfd, &si, sizeof(si)), sizeof(si));
	/* nothing pending: the caller waits for its own signal */
	kick_start(&k, SIGUSR2);
	r = IND_P(ring, &pend, SYS_read, sfd, &si, sizeof(si));
	if (pend) /* the old way never completes: a process signal does */
		kill(getpid(), SIGUSR2);
	kick_stop(&k);
	assert_false(pend);
	assert_int_equal(r, sizeof(si));
	close(sfd);
	sfd = signalfd(-1, &set, SFD_NONBLOCK);
	while (read(sfd, &si, sizeof(si)) > 0) /* the kicker's extra ones */
		;
	assert_int_equal(IND(ring, SYS_read, sfd, &si, sizeof(si)), -EAGAIN);
	close(sfd);
	assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &set, NULL), 0);
}

/*
 * 6. Bad and invalid pointers: the kernel's EFAULT or EINVAL, never a
 * SIGSEGV in the caller, and never a ready count the kernel would not
 * have given.
 */
static void test_bad_pointers(void **state)
{
	void *bad =
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec inval = { 0, 2000000000L };
#ifdef SYS_select
	struct timeval tv_inval = { 0, -1 };
#endif
	struct pollfd pf;
	int pfd[2], ep;
	fd_set rd;
	long pack[2] = { 0, 8 };
	struct epoll_event ev = { .events = EPOLLIN }, out;

	(void)state;
	assert_true(bad != MAP_FAILED);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(write(pfd[1], "x", 1), 1); /* readable */
	pf.fd = pfd[0];
	pf.events = POLLIN;
	ep = epoll_create1(0);
	ev.data.fd = pfd[0];
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), 0);
#define SAME(...) assert_int_equal(IND(ring, __VA_ARGS__), BLK(__VA_ARGS__))
	SAME(SYS_nanosleep, bad, 0);
	SAME(SYS_nanosleep, &inval, 0);
	SAME(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, bad, 0);
	SAME(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, bad, 0);
	SAME(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &inval, 0);
	SAME(SYS_clock_nanosleep, 12345, 0, bad, 0);
	SAME(SYS_ppoll, &pf, 1, bad, 0, 8);
	SAME(SYS_ppoll, &pf, 1, &inval, 0, 8);
	SAME(SYS_ppoll, bad, 1, 0, 0, 8);
	SAME(SYS_epoll_pwait2, ep, &out, 1, bad, 0, 8);
	SAME(SYS_epoll_pwait2, ep, &out, 1, &inval, 0, 8);
	FD_ZERO(&rd);
	FD_SET(pfd[0], &rd);
#ifdef SYS_select
	SAME(SYS_select, pfd[0] + 1, bad, 0, 0, 0);
	SAME(SYS_select, pfd[0] + 1, &rd, 0, 0, bad);
	FD_SET(pfd[0], &rd);
	SAME(SYS_select, pfd[0] + 1, &rd, 0, 0, &tv_inval);
#endif
	FD_SET(pfd[0], &rd);
	SAME(SYS_pselect6, pfd[0] + 1, bad, 0, 0, 0, 0);
	SAME(SYS_pselect6, pfd[0] + 1, &rd, 0, 0, bad, 0);
	FD_SET(pfd[0], &rd);
	SAME(SYS_pselect6, pfd[0] + 1, &rd, 0, 0, &inval, 0);
	FD_SET(pfd[0], &rd);
	SAME(SYS_pselect6, pfd[0] + 1, &rd, 0, 0, 0, bad);
	FD_SET(pfd[0], &rd);
	SAME(SYS_pselect6, pfd[0] + 1, &rd, 0, 0, 0, pack);
	SAME(SYS_openat2, AT_FDCWD, "/", bad, sizeof(struct open_how));
	SAME(SYS_openat2, AT_FDCWD, bad, bad, sizeof(struct open_how));
#ifdef SYS_open
	SAME(SYS_open, bad, O_RDONLY, 0);
#endif
#undef SAME
	close(pfd[0]);
	close(pfd[1]);
	close(ep);
	munmap(bad, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_msg_copy),
		cmocka_unit_test(test_rcvlowat),
		cmocka_unit_test(test_full_ring_positional),
		cmocka_unit_test(test_append_one_write),
		cmocka_unit_test(test_sigmask_calls),
		cmocka_unit_test(test_signalfd_read),
		cmocka_unit_test(test_bad_pointers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
