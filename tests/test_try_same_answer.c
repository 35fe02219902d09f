/* SPDX-License-Identifier: MIT */
/*
 * Description: the try path attacked from outside, each answer compared
 * with the plain blocking call on the same state:
 *  - a tmpfs number re-bound (dup2 outside the library) to a pty slave,
 *    which answers EOPNOTSUPP to RWF_NOWAIT: a read must not wait on the
 *    caller (it waited there until the pty had input: no bound at all);
 *  - recv(MSG_PEEK) below SO_RCVLOWAT on TCP: the blocking call waits;
 *  - futex waits and mq_timedreceive with a bad timeout pointer: the kernel
 *    reads the timeout first (EFAULT, nothing consumed);
 *  - wait4/waitid with __WNOTHREAD: only the calling thread's children, so
 *    the call is bound to the caller (a worker has none: ECHILD);
 *  - flock converting a shared lock to exclusive on a full ring: EBUSY must
 *    mean nothing happened, but a LOCK_NB conversion attempt drops the old
 *    lock before it fails;
 *  - preadv2/pwritev2 answering ENOSYS (a seccomp filter here; qemu-user
 *    7.2 has neither): a read or write answered ENOSYS, which the blocking
 *    call never does.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "test_seccomp_util.h"

#ifndef __WNOTHREAD
#define __WNOTHREAD 0x20000000
#endif

/* A bound on a wait for another thread; only the failing path reaches it. */
#define BOUND_SECONDS 5

static struct syslet_ring *ring;

static struct timespec deadline(int s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += s;
	return ts;
}

struct reader {
	struct syslet_ring *ring;
	int fd;
	char buf[16];
	long r;
	int err;
	sem_t done;
};

static void *read_once(void *arg)
{
	struct reader *rd = arg;

	rd->r = SYS_IND(rd->ring, 5, SYS_read, rd->fd, rd->buf, 3);
	rd->err = errno;
	sem_post(&rd->done);
	return NULL;
}

/*
 * A number that held a tmpfs file (cached: memory-backed) is re-bound by
 * dup2() outside the library to a pty slave with no input. The blocking
 * read waits; indirect() must hand it to a worker, not wait on the caller.
 */
static void test_tmpfs_rebound_to_pty(void **state)
{
	char path[] = "/dev/shm/syslet-atk-XXXXXX", b[8];
	struct timespec ts = deadline(BOUND_SECONDS);
	struct syslet_completion c;
	struct reader rd = { .ring = ring };
	struct termios tio;
	pthread_t t;
	int m, s, blocked;

	(void)state;
	rd.fd = mkstemp(path);
	assert_true(rd.fd >= 0);
	unlink(path);
	assert_int_equal(write(rd.fd, "abcdefgh", 8), 8);
	assert_int_equal(lseek(rd.fd, 0, SEEK_SET), 0);
	/* inline: the number's facts are now cached as a tmpfs file */
	assert_int_equal(SYS_IND(ring, 1, SYS_read, rd.fd, b, 4), 4);
	assert_memory_equal(b, "abcd", 4);

	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0)
		skip();
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	s = open(ptsname(m), O_RDWR | O_NOCTTY);
	assert_true(s >= 0);
	assert_int_equal(tcgetattr(s, &tio), 0);
	cfmakeraw(&tio);
	assert_int_equal(tcsetattr(s, TCSANOW, &tio), 0);
	assert_int_equal(dup2(s, rd.fd), rd.fd);

	assert_int_equal(sem_init(&rd.done, 0, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, read_once, &rd), 0);
	blocked = sem_timedwait(&rd.done, &ts) != 0;
	/* the pty's input ends the read, wherever it waits */
	assert_int_equal(write(m, "xyz", 3), 3);
	if (blocked)
		assert_int_equal(sem_wait(&rd.done), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_false(blocked);
	assert_true(rd.r == -1 && rd.err == ESYSLETPENDING);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 3);
	assert_int_equal(c.caller_data, 5);
	assert_memory_equal(rd.buf, "xyz", 3);
	sem_destroy(&rd.done);
	close(rd.fd);
	close(s);
	close(m);
}

/* A connected TCP pair on loopback: sv[0] sends, sv[1] receives. */
static void tcp_pair(int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, al), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	sv[0] = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(sv[0], (struct sockaddr *)&a, al), 0);
	sv[1] = accept(l, NULL, NULL);
	assert_true(sv[1] >= 0);
	close(l);
}

/*
 * recv(MSG_PEEK) on a blocking TCP socket with SO_RCVLOWAT = 10 and 5
 * bytes queued: the blocking call waits for 10, then peeks them all (an
 * AF_UNIX peek does not wait: there either answer is the kernel's).
 */
static void test_peek_below_lowat(void **state)
{
	char buf[64], *p = "0123456789";
	struct syslet_completion c;
	int sv[2], lowat = 10;
	long r;

	(void)state;
	tcp_pair(sv);
	assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_RCVLOWAT, &lowat,
				    sizeof(lowat)),
			 0);
	assert_int_equal(write(sv[0], p, 5), 5);
	r = SYS_IND(ring, 9, SYS_recvfrom, sv[1], buf, sizeof(buf), MSG_PEEK, 0,
		    0);
	assert_true(PENDING(r));
	assert_int_equal(write(sv[0], p + 5, 5), 5);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 10);
	assert_memory_equal(buf, p, 10);
	/* a peek consumed nothing: all ten are still there */
	assert_int_equal(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), 10);
	close(sv[0]);
	close(sv[1]);
}

/* Futex waits read their timeout before anything else: EFAULT, EINVAL. */
static void test_futex_bad_timeout(void **state)
{
	struct timespec bad = { 0, 2000000000L };
	void *fault = (void *)8;
	int word = 0;
	long k, ki;

	(void)state;
	/* the value differs: without the timeout's check this is EAGAIN */
	k = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, fault, 0, 0);
	ki = errno;
	assert_int_equal(k, -1);
	assert_int_equal(ki, EFAULT);
	assert_int_equal(SYS_IND(ring, 0, SYS_futex, &word, FUTEX_WAIT_PRIVATE,
				 1, fault, 0, 0),
			 -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(SYS_IND(ring, 0, SYS_futex, &word,
				 FUTEX_WAIT_BITSET_PRIVATE, 1, fault, 0,
				 FUTEX_BITSET_MATCH_ANY),
			 -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(SYS_IND(ring, 0, SYS_futex, &word, FUTEX_WAIT_PRIVATE,
				 1, &bad, 0, 0),
			 -1);
	assert_int_equal(errno, EINVAL);
	ring_empty(ring);
}

/* mq_timedreceive: a bad deadline is EFAULT and takes no message. */
static void test_mq_bad_timeout(void **state)
{
	struct mq_attr at = { .mq_maxmsg = 4, .mq_msgsize = 16 };
	char name[64], buf[16];
	unsigned int prio;
	mqd_t q;

	(void)state;
	snprintf(name, sizeof(name), "/syslet-atk-%d", (int)getpid());
	q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &at);
	if (q == (mqd_t)-1)
		skip();
	mq_unlink(name);
	assert_int_equal(mq_send(q, "m", 1, 0), 0);
	assert_int_equal(syscall(SYS_mq_timedreceive, q, buf, sizeof(buf),
				 &prio, (void *)8),
			 -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(SYS_IND(ring, 0, SYS_mq_timedreceive, q, buf,
				 sizeof(buf), &prio, (void *)8),
			 -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(SYS_IND(ring, 0, SYS_mq_timedsend, q, "n", 1, 0,
				 (void *)8),
			 -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(mq_getattr(q, &at), 0);
	assert_int_equal(at.mq_curmsgs, 1);
	ring_empty(ring);
	mq_close(q);
}

struct releaser {
	pid_t tid;
	int fd;
};

/* Close the child's pipe once @rl->tid waits in a system call (bounded). */
static void *release_when_waiting(void *arg)
{
	struct releaser *rl = arg;
	struct timespec end, now, tick = { 0, 1000000 };
	char path[64], line[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", rl->tid);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += BOUND_SECONDS;
	do {
		f = fopen(path, "r");
		line[0] = '\0';
		if (f) {
			if (!fgets(line, sizeof(line), f))
				line[0] = '\0';
			fclose(f);
		}
		if (atoi(line) == SYS_wait4 || atoi(line) == SYS_waitid)
			break;
		nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec ||
		 (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	close(rl->fd);
	return NULL;
}

/* A child of the calling thread that exits once its pipe is closed. */
static pid_t child_until_closed(struct releaser *rl, pthread_t *t)
{
	int p[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		_exit(read(p[0], &c, 1) == 0 ? 7 : 1);
	}
	close(p[0]);
	rl->tid = gettid();
	rl->fd = p[1];
	assert_int_equal(pthread_create(t, NULL, release_when_waiting, rl), 0);
	return pid;
}

/*
 * __WNOTHREAD: wait for children of the calling thread only. The blocking
 * call waits for the child and reaps it; on a worker (no children) it is
 * ECHILD.
 */
static void test_wait_wnothread(void **state)
{
	struct releaser rl;
	siginfo_t si;
	pthread_t t;
	int st = 0;
	pid_t pid;
	long r;

	(void)state;
	pid = child_until_closed(&rl, &t);
	r = SYS_IND(ring, 0, SYS_wait4, pid, &st, __WNOTHREAD, 0);
	if (PENDING(r))
		r = (long)ring_pop(ring).status;
	assert_int_equal(pthread_join(t, NULL), 0);
	if (r != pid)
		waitpid(pid, NULL, 0);
	assert_int_equal(r, pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 7);

	pid = child_until_closed(&rl, &t);
	memset(&si, 0, sizeof(si));
	r = SYS_IND(ring, 0, SYS_waitid, P_PID, pid, &si, WEXITED | __WNOTHREAD,
		    0);
	if (PENDING(r))
		r = (long)ring_pop(ring).status;
	assert_int_equal(pthread_join(t, NULL), 0);
	if (r != 0)
		waitpid(pid, NULL, 0);
	assert_int_equal(r, 0);
	assert_int_equal(si.si_pid, pid);
	assert_int_equal(si.si_status, 7);
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

/*
 * flock(LOCK_EX) on a file description holding LOCK_SH while another holds
 * LOCK_SH too, no ring slot free: EBUSY, and the shared lock still held.
 */
static void test_flock_convert_full_ring(void **state)
{
	char path[] = "/tmp/syslet-atk-XXXXXX";
	struct syslet_ring *r1;
	int fd1, fd2, fd3, pfd[2];
	bool busy, kept;
	long r;

	(void)state;
	fd1 = mkstemp(path);
	assert_true(fd1 >= 0);
	fd2 = open(path, O_RDWR);
	fd3 = open(path, O_RDWR);
	assert_true(fd2 >= 0 && fd3 >= 0);
	unlink(path);
	assert_int_equal(flock(fd1, LOCK_SH), 0);
	assert_int_equal(flock(fd2, LOCK_SH), 0);
	r1 = full_ring(pfd);
	r = SYS_IND(r1, 2, SYS_flock, fd1, LOCK_EX);
	busy = r == -1 && errno == EBUSY;
	/* fd1 still holds its shared lock: no one else can lock exclusive */
	assert_int_equal(flock(fd2, LOCK_UN), 0);
	kept = flock(fd3, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK;
	/* the full ring's pending read ends before anything can fail */
	free_full_ring(r1, pfd);
	assert_int_equal(flock(fd3, LOCK_UN), 0);
	assert_true(busy);
	assert_true(kept);
	/* with a free slot: pending, then exclusive once fd2 is gone */
	assert_int_equal(flock(fd2, LOCK_SH), 0);
	assert_true(PENDING(SYS_IND(ring, 3, SYS_flock, fd1, LOCK_EX)));
	assert_int_equal(flock(fd2, LOCK_UN), 0);
	assert_int_equal((long)ring_pop(ring).status, 0);
	r = flock(fd3, LOCK_SH | LOCK_NB);
	assert_true(r == -1 && errno == EWOULDBLOCK);
	close(fd1);
	close(fd2);
	close(fd3);
}

/* In a child: preadv2 and pwritev2 answer ENOSYS; reads and writes work. */
static int no_rw2_child(void)
{
	struct syslet_ring *r = ring_new(4);
	struct syslet_completion c;
	char buf[8] = { 0 };
	struct iovec one = { buf, 1 };
	int p[2];
	long ret;

	if (!filter_rw2(ENOSYS, false))
		return 77;
	if (pipe(p))
		return 10;
	/* a write, then a read of what is there: 3 bytes each */
	ret = SYS_IND(r, 1, SYS_write, p[1], "abc", 3);
	if (PENDING(ret))
		ret = (long)ring_pop(r).status;
	if (ret != 3)
		return 1;
	ret = SYS_IND(r, 2, SYS_read, p[0], buf, sizeof(buf));
	if (PENDING(ret))
		ret = (long)ring_pop(r).status;
	if (ret != 3 || memcmp(buf, "abc", 3))
		return 2;
	/* a read of the empty pipe: pending, then the byte written */
	ret = SYS_IND(r, 3, SYS_read, p[0], buf, sizeof(buf));
	if (!PENDING(ret) || write(p[1], "d", 1) != 1)
		return 3;
	c = ring_pop(r);
	if ((long)c.status != 1 || c.caller_data != 3 || buf[0] != 'd')
		return 4;
	/* preadv2 itself: ENOSYS, as the blocking call answers */
	ret = SYS_IND(r, 5, SYS_preadv2, p[0], &one, 1, -1, 0, 0);
	if (PENDING(ret))
		ret = (long)ring_pop(r).status;
	else if (ret == -1)
		ret = -errno;
	if (ret != -ENOSYS)
		return 5;
	syslet_drain();
	return 0;
}

static void test_no_rw2(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(4 * BOUND_SECONDS);
		_exit(no_rw2_child());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int setup(void **state)
{
	(void)state;
	ring = ring_new(16);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	syslet_drain();
	free(ring);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: it forks, before any case started the pool's threads */
		cmocka_unit_test(test_no_rw2),
		cmocka_unit_test_setup_teardown(test_tmpfs_rebound_to_pty,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_peek_below_lowat, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_futex_bad_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mq_bad_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wait_wnothread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flock_convert_full_ring,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
