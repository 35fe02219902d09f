/* SPDX-License-Identifier: MIT */
/*
 * Description: every try strategy of try.c side by side with its blocking
 * call on the same state (the state restored in between): transfers on a
 * disk file, a tmpfs file, a pipe and sockets; accept/connect; the open
 * family; the poll, select and epoll families; wait4/waitid; futexes;
 * sleeps; locks; System V and POSIX message queues. Same raw result, same
 * effect.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/openat2.h>
#include <mqueue.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "same_result.h"
#include "test_dir_util.h"

static struct syslet_ring *ring;
static char dir[256];

static int setup(void **state)
{
	(void)state;
	return dir_ring_setup(dir, sizeof(dir), "syslet-strat", &ring);
}

static int teardown(void **state)
{
	(void)state;
	return dir_ring_teardown(dir, ring);
}

static int file_in(const char *d, const char *name, int flags)
{
	char path[512], b[8192];
	int fd, i;

	for (i = 0; i < (int)sizeof(b); i++)
		b[i] = (char)(i * 7);
	snprintf(path, sizeof(path), "%s/%s", d, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | flags, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, sizeof(b), 0), sizeof(b));
	return fd;
}

/* The read family on @fd: same count, same bytes, same file position. */
static void reads_on(int fd)
{
	char x[3000], y[3000];
	struct iovec vx[2] = { { x, 1000 }, { x + 1000, 2000 } };
	struct iovec vy[2] = { { y, 1000 }, { y + 1000, 2000 } };
	off_t px, py;

#define PAIR(call_x, call_y)                                        \
	do {                                                        \
		memset(x, 0, sizeof(x));                            \
		memset(y, 1, sizeof(y));                            \
		assert_int_equal(lseek(fd, 100, SEEK_SET), 100);    \
		long rx_ = call_x;                                  \
		px = lseek(fd, 0, SEEK_CUR);                        \
		assert_int_equal(lseek(fd, 100, SEEK_SET), 100);    \
		long ry_ = call_y;                                  \
		py = lseek(fd, 0, SEEK_CUR);                        \
		if (rx_ != ry_)                                     \
			fail_msg("%s: %ld %ld", #call_x, rx_, ry_); \
		assert_int_equal(px, py);                           \
		if (rx_ > 0)                                        \
			assert_memory_equal(x, y, (size_t)rx_);     \
	} while (0)
	PAIR(BLK(SYS_read, fd, x, 3000), IND(ring, SYS_read, fd, y, 3000));
	PAIR(BLK(SYS_pread64, fd, x, 3000, 7000),
	     IND(ring, SYS_pread64, fd, y, 3000, 7000));
	PAIR(BLK(SYS_readv, fd, vx, 2), IND(ring, SYS_readv, fd, vy, 2));
	PAIR(BLK(SYS_preadv, fd, vx, 2, 50, 0),
	     IND(ring, SYS_preadv, fd, vy, 2, 50, 0));
	PAIR(BLK(SYS_preadv2, fd, vx, 2, -1L, 0, 0),
	     IND(ring, SYS_preadv2, fd, vy, 2, -1, 0, 0));
	PAIR(BLK(SYS_preadv2, fd, vx, 2, 20, 0, 0),
	     IND(ring, SYS_preadv2, fd, vy, 2, 20, 0, 0));
	PAIR(BLK(SYS_pread64, fd, x, 3000, -1L),
	     IND(ring, SYS_pread64, fd, y, 3000, -1));
	PAIR(BLK(SYS_read, fd, x, -1L), IND(ring, SYS_read, fd, y, -1));
#undef PAIR
}

/* The write family on @fd: same count, same file afterwards. */
static void writes_on(int fd)
{
	char a[2000], bx[9000], by[9000];
	struct iovec v[2] = { { a, 500 }, { a + 500, 1500 } };
	struct stat st;
	int k;
	long rx, ry;

	memset(a, 'w', sizeof(a));
	for (k = 0; k < 5; k++) {
		long sx, sy;

		assert_int_equal(ftruncate(fd, 4096), 0);
		lseek(fd, 10, SEEK_SET);
		rx = k == 0 ? BLK(SYS_write, fd, a, 2000) :
		     k == 1 ? BLK(SYS_pwrite64, fd, a, 2000, 5000) :
		     k == 2 ? BLK(SYS_writev, fd, v, 2) :
		     k == 3 ? BLK(SYS_pwritev, fd, v, 2, 3000, 0) :
			      BLK(SYS_pwritev2, fd, v, 2, -1L, 0, 0);
		sx = lseek(fd, 0, SEEK_CUR);
		assert_int_equal(pread(fd, bx, sizeof(bx), 0) >= 0, 1);
		fstat(fd, &st);
		assert_int_equal(ftruncate(fd, 4096), 0);
		lseek(fd, 10, SEEK_SET);
		ry = k == 0 ? IND(ring, SYS_write, fd, a, 2000) :
		     k == 1 ? IND(ring, SYS_pwrite64, fd, a, 2000, 5000) :
		     k == 2 ? IND(ring, SYS_writev, fd, v, 2) :
		     k == 3 ? IND(ring, SYS_pwritev, fd, v, 2, 3000, 0) :
			      IND(ring, SYS_pwritev2, fd, v, 2, -1, 0, 0);
		sy = lseek(fd, 0, SEEK_CUR);
		assert_int_equal(rx, ry);
		assert_int_equal(sx, sy);
		assert_int_equal(pread(fd, by, sizeof(by), 0), st.st_size);
		assert_memory_equal(bx, by, (size_t)st.st_size);
	}
}

static void test_disk_file(void **state)
{
	int fd = file_in(dir, "f", 0);

	(void)state;
	reads_on(fd);
	writes_on(fd);
	close(fd);
}

static void test_tmpfs_file(void **state)
{
	int fd = file_in("/dev/shm", "syslet-strat", 0);
	char path[64];

	(void)state;
	reads_on(fd);
	writes_on(fd);
	close(fd);
	snprintf(path, sizeof(path), "/dev/shm/syslet-strat");
	unlink(path);
	fd = memfd_create("strat", 0);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 8192), 0);
	reads_on(fd);
	writes_on(fd);
	close(fd);
}

static void test_pipe_and_sockets(void **state)
{
	char x[64], y[64];
	int p[2], s[2], k;
	struct iovec vx = { x, sizeof(x) }, vy = { y, sizeof(y) };
	struct msghdr mx = { .msg_iov = &vx, .msg_iovlen = 1 };
	struct msghdr my = { .msg_iov = &vy, .msg_iovlen = 1 };

	(void)state;
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s),
			 0);
	/* empty, non-blocking: EAGAIN both */
	assert_int_equal(IND(ring, SYS_read, p[0], y, 64),
			 BLK(SYS_read, p[0], x, 64));
	assert_int_equal(IND(ring, SYS_recvfrom, s[0], y, 64, 0, 0, 0),
			 BLK(SYS_recvfrom, s[0], x, 64, 0, 0, 0));
	assert_int_equal(IND(ring, SYS_recvmsg, s[0], &my, 0),
			 BLK(SYS_recvmsg, s[0], &mx, 0));
	for (k = 0; k < 2; k++) {
		assert_int_equal(write(p[1], "pipe-data", 9), 9);
		assert_int_equal(k ? IND(ring, SYS_read, p[0], y, 64) :
				     BLK(SYS_read, p[0], x, 64),
				 9);
		assert_int_equal(k ? IND(ring, SYS_sendto, s[1], "dgram", 5, 0,
					 0, 0) :
				     BLK(SYS_sendto, s[1], "dgram", 5, 0, 0, 0),
				 5);
		assert_int_equal(k ? IND(ring, SYS_recvfrom, s[0], y + 9, 3, 0,
					 0, 0) :
				     BLK(SYS_recvfrom, s[0], x + 9, 3, 0, 0, 0),
				 3);
		vx.iov_base = x + 12;
		vy.iov_base = y + 12;
		assert_int_equal(k ? IND(ring, SYS_sendmsg, s[1], &my, 0) :
				     BLK(SYS_sendmsg, s[1], &mx, 0),
				 64);
		assert_int_equal(k ? IND(ring, SYS_recvmsg, s[0], &my, 0) :
				     BLK(SYS_recvmsg, s[0], &mx, 0),
				 64);
		assert_int_equal(k ? IND(ring, SYS_recvmsg, s[0], &my,
					 MSG_DONTWAIT) :
				     BLK(SYS_recvmsg, s[0], &mx, MSG_DONTWAIT),
				 -EAGAIN);
	}
	assert_memory_equal(x, y, 12);
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
}

static void test_accept_connect(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l, c1, c2;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/syslet-strat-%d",
		 getpid());
	unlink(sa.sun_path);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(IND(ring, SYS_accept, l, 0, 0),
			 BLK(SYS_accept, l, 0, 0));
	assert_int_equal(IND(ring, SYS_accept4, l, 0, 0, 0),
			 BLK(SYS_accept4, l, 0, 0, 0));
	c1 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	c2 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_int_equal(BLK(SYS_connect, c1, &sa, sizeof(sa)), 0);
	assert_int_equal(IND(ring, SYS_connect, c2, &sa, sizeof(sa)), 0);
	assert_true(BLK(SYS_accept4, l, 0, 0, SOCK_CLOEXEC) >= 0);
	assert_true(IND(ring, SYS_accept4, l, 0, 0, SOCK_CLOEXEC) >= 0);
	assert_int_equal(IND(ring, SYS_accept, 999, 0, 0),
			 BLK(SYS_accept, 999, 0, 0));
	close(c1);
	close(c2);
	close(l);
	unlink(sa.sun_path);
}

static void test_open_family(void **state)
{
	struct open_how how = { .flags = O_RDONLY };
	char path[512], none[512];
	long x, y;
	int k;

	(void)state;
	close(file_in(dir, "o", 0));
	snprintf(path, sizeof(path), "%s/o", dir);
	snprintf(none, sizeof(none), "%s/none", dir);
	for (k = 0; k < 2; k++) {
		const char *p = k ? none : path;

#ifdef SYS_open
		x = BLK(SYS_open, p, O_RDONLY, 0);
		y = IND(ring, SYS_open, p, O_RDONLY, 0);
		assert_int_equal(x < 0 ? x : 0, y < 0 ? y : 0);
		close((int)x);
		close((int)y);
#endif
		x = BLK(SYS_openat, AT_FDCWD, p, O_RDONLY | O_DIRECTORY, 0);
		y = IND(ring, SYS_openat, AT_FDCWD, p, O_RDONLY | O_DIRECTORY,
			0);
		assert_int_equal(x, y);
		x = BLK(SYS_openat2, AT_FDCWD, p, &how, sizeof(how));
		y = IND(ring, SYS_openat2, AT_FDCWD, p, &how, sizeof(how));
		assert_int_equal(x < 0 ? x : 0, y < 0 ? y : 0);
		close((int)x);
		close((int)y);
		assert_int_equal(IND(ring, SYS_openat2, AT_FDCWD, p, &how, 8),
				 BLK(SYS_openat2, AT_FDCWD, p, &how, 8));
	}
}

static void test_poll_families(void **state)
{
	struct epoll_event ev = { .events = EPOLLIN }, ox, oy;
	struct timespec z = { 0, 0 };
#ifdef SYS_select
	struct timeval tz = { 0, 0 };
#endif
	struct pollfd px, py;
	fd_set fx, fy;
	int p[2], ep, k;

	(void)state;
	assert_int_equal(pipe(p), 0);
	ep = epoll_create1(0);
	ev.data.fd = p[0];
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	for (k = 0; k < 2; k++) { /* 0: not ready, zero timeouts; 1: ready */
		if (k)
			assert_int_equal(write(p[1], "r", 1), 1);
		/* Set here, not under SYS_poll (aarch64 has none). */
		px = (struct pollfd){ p[0], POLLIN, 0 };
		py = px;
#ifdef SYS_poll
		assert_int_equal(IND(ring, SYS_poll, &py, 1, 0),
				 BLK(SYS_poll, &px, 1, 0));
		assert_int_equal(px.revents, py.revents);
#endif
		assert_int_equal(IND(ring, SYS_ppoll, &py, 1, &z, 0, 8),
				 BLK(SYS_ppoll, &px, 1, &z, 0, 8));
		assert_int_equal(px.revents, py.revents);
		FD_ZERO(&fx);
		FD_SET(p[0], &fx);
		fy = fx;
#ifdef SYS_select
		assert_int_equal(IND(ring, SYS_select, p[0] + 1, &fy, 0, 0,
				     &tz),
				 BLK(SYS_select, p[0] + 1, &fx, 0, 0, &tz));
		assert_memory_equal(&fx, &fy, sizeof(fx));
#endif
		FD_SET(p[0], &fx);
		FD_SET(p[0], &fy);
		assert_int_equal(IND(ring, SYS_pselect6, p[0] + 1, &fy, 0, 0,
				     &z, 0),
				 BLK(SYS_pselect6, p[0] + 1, &fx, 0, 0, &z, 0));
		assert_memory_equal(&fx, &fy, sizeof(fx));
#ifdef SYS_epoll_wait
		assert_int_equal(IND(ring, SYS_epoll_wait, ep, &oy, 1, 0),
				 BLK(SYS_epoll_wait, ep, &ox, 1, 0));
#endif
		assert_int_equal(IND(ring, SYS_epoll_pwait, ep, &oy, 1, 0, 0,
				     8),
				 BLK(SYS_epoll_pwait, ep, &ox, 1, 0, 0, 8));
		assert_int_equal(IND(ring, SYS_epoll_pwait2, ep, &oy, 1, &z, 0,
				     8),
				 BLK(SYS_epoll_pwait2, ep, &ox, 1, &z, 0, 8));
	}
	/* ready with a long timeout: inline, the same */
#ifdef SYS_poll
	px.revents = 0;
	assert_int_equal(IND(ring, SYS_poll, &px, 1, 10000),
			 BLK(SYS_poll, &px, 1, 10000));
#endif
	close(p[0]);
	close(p[1]);
	close(ep);
}

static void test_wait_families(void **state)
{
	siginfo_t ix, iy;
	pid_t a, b;
	int sx, sy;

	(void)state;
	assert_int_equal(IND(ring, SYS_wait4, -1, &sy, WNOHANG, 0),
			 BLK(SYS_wait4, -1L, &sx, WNOHANG, 0));
	a = fork();
	if (!a)
		_exit(3);
	b = fork();
	if (!b)
		_exit(3);
	memset(&ix, 0, sizeof(ix));
	memset(&iy, 0, sizeof(iy));
	assert_int_equal(BLK(SYS_waitid, P_PID, a, &ix, WEXITED | WNOWAIT, 0),
			 0);
	assert_int_equal(
		IND(ring, SYS_waitid, P_PID, b, &iy, WEXITED | WNOWAIT, 0), 0);
	assert_int_equal(ix.si_status, iy.si_status);
	assert_int_equal(BLK(SYS_wait4, a, &sx, 0, 0), a);
	assert_int_equal(IND(ring, SYS_wait4, b, &sy, 0, 0), b);
	assert_int_equal(sx, sy);
	assert_int_equal(IND(ring, SYS_waitid, P_ALL, 0, &iy, WEXITED, 0),
			 BLK(SYS_waitid, P_ALL, 0, &ix, WEXITED, 0));
}

static void test_futexes_and_sleeps(void **state)
{
	struct timespec z = { 0, 0 }, past;
	uint32_t word = 1;

	(void)state;
	assert_int_equal(IND(ring, SYS_futex, &word, FUTEX_WAIT_PRIVATE, 2, 0,
			     0, 0),
			 BLK(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 2, 0, 0, 0));
	assert_int_equal(IND(ring, SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, 0,
			     0, 0),
			 BLK(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0));
	assert_int_equal(
		IND(ring, SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, &z, 0, 0),
		BLK(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, &z, 0, 0));
	assert_int_equal(IND(ring, 455, &word, 2, 1, 0x82, 0, 1),
			 BLK(455, &word, 2, 1, 0x82, 0, 1));
	assert_int_equal(IND(ring, SYS_nanosleep, &z, 0),
			 BLK(SYS_nanosleep, &z, 0));
	clock_gettime(CLOCK_MONOTONIC, &past);
	assert_int_equal(IND(ring, SYS_clock_nanosleep, CLOCK_MONOTONIC,
			     TIMER_ABSTIME, &past, 0),
			 BLK(SYS_clock_nanosleep, CLOCK_MONOTONIC,
			     TIMER_ABSTIME, &past, 0));
	z.tv_nsec = 1000;
	assert_int_equal(IND(ring, SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &z,
			     0),
			 BLK(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &z, 0));
}

static void test_locks(void **state)
{
	struct flock lx = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct flock ly = lx;
	int fd = file_in(dir, "lock", 0);

	(void)state;
	assert_int_equal(IND(ring, SYS_fcntl, fd, KF_SETLKW, &ly),
			 BLK(SYS_fcntl, fd, KF_SETLKW, &lx));
	assert_int_equal(IND(ring, SYS_fcntl, fd, KF_GETLK, &ly),
			 BLK(SYS_fcntl, fd, KF_GETLK, &lx));
	assert_memory_equal(&lx, &ly, sizeof(lx));
	lx.l_type = ly.l_type = F_UNLCK;
	assert_int_equal(IND(ring, SYS_fcntl, fd, KF_SETLK, &ly),
			 BLK(SYS_fcntl, fd, KF_SETLK, &lx));
	lx.l_type = ly.l_type = F_RDLCK;
	lx.l_pid = ly.l_pid = 0;
	assert_int_equal(IND(ring, SYS_fcntl, fd, F_OFD_SETLKW, &ly),
			 BLK(SYS_fcntl, fd, F_OFD_SETLKW, &lx));
	assert_int_equal(IND(ring, SYS_flock, fd, LOCK_EX, 0),
			 BLK(SYS_flock, fd, LOCK_EX, 0));
	assert_int_equal(IND(ring, SYS_flock, fd, LOCK_UN | LOCK_NB, 0),
			 BLK(SYS_flock, fd, LOCK_UN | LOCK_NB, 0));
	assert_int_equal(IND(ring, SYS_fcntl, fd, F_GETFL, 0),
			 BLK(SYS_fcntl, fd, F_GETFL, 0));
	close(fd);
}

static void test_message_queues(void **state)
{
	struct {
		long type;
		char text[8];
	} m = { 1, "abc" }, out;
	struct mq_attr at = { .mq_maxmsg = 1, .mq_msgsize = 8 };
	struct timespec past = { 1, 0 };
	char name[64], buf[8];
	int q = msgget(IPC_PRIVATE, 0600);
	mqd_t mq;

	(void)state;
	assert_int_equal(IND(ring, SYS_msgrcv, q, &out, 8, 0, IPC_NOWAIT),
			 BLK(SYS_msgrcv, q, &out, 8, 0, IPC_NOWAIT));
	assert_int_equal(IND(ring, SYS_msgsnd, q, &m, 4, 0),
			 BLK(SYS_msgsnd, q, &m, 4, 0));
	assert_int_equal(IND(ring, SYS_msgrcv, q, &out, 8, 0, 0),
			 BLK(SYS_msgrcv, q, &out, 8, 0, 0));
	assert_int_equal(IND(ring, SYS_msgrcv, q, &out, 2, 0, IPC_NOWAIT),
			 -ENOMSG);
	msgctl(q, IPC_RMID, NULL);
	snprintf(name, sizeof(name), "/syslet-strat-%d", getpid());
	mq = mq_open(name, O_RDWR | O_CREAT, 0600, &at);
	if (mq == (mqd_t)-1)
		skip();
	mq_unlink(name);
	assert_int_equal(IND(ring, SYS_mq_timedreceive, mq, buf, 8, 0, &past),
			 BLK(SYS_mq_timedreceive, mq, buf, 8, 0, &past));
	/* one at a time: the queue holds one message */
	assert_int_equal(BLK(SYS_mq_timedsend, mq, "y", 1, 0, &past), 0);
	assert_int_equal(BLK(SYS_mq_timedsend, mq, "y", 1, 0, &past),
			 -ETIMEDOUT);
	assert_int_equal(IND(ring, SYS_mq_timedsend, mq, "x", 1, 0, &past),
			 -ETIMEDOUT);
	assert_int_equal(BLK(SYS_mq_timedreceive, mq, buf, 8, 0, &past), 1);
	assert_int_equal(IND(ring, SYS_mq_timedsend, mq, "x", 1, 0, &past), 0);
	assert_int_equal(IND(ring, SYS_mq_timedreceive, mq, buf, 8, 0, &past),
			 1);
	mq_close(mq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disk_file),
		cmocka_unit_test(test_tmpfs_file),
		cmocka_unit_test(test_pipe_and_sockets),
		cmocka_unit_test(test_accept_connect),
		cmocka_unit_test(test_open_family),
		cmocka_unit_test(test_poll_families),
		cmocka_unit_test(test_wait_families),
		cmocka_unit_test(test_futexes_and_sleeps),
		cmocka_unit_test(test_locks),
		cmocka_unit_test(test_message_queues),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
