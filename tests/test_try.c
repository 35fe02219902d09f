/* SPDX-License-Identifier: MIT */
/*
 * Description: every try strategy on real descriptors (files in a real
 * directory on disk, pipes, sockets, eventfd): inline when the call cannot
 * block, a worker when it would, the blocking call's result either way
 * (partial transfers finished by a worker report the total; on O_NONBLOCK
 * descriptors EAGAIN and short counts are the inline answer).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/openat2.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "test_dir_util.h"

#define MIB (1024 * 1024)

/* ppc64's 82 "select" is sys_ni_syscall: select(2) is _newselect there */
#ifdef SYS__newselect
#undef SYS_select
#define SYS_select SYS__newselect
#endif

static char dir[256];
static struct syslet_ring *ring;

static void path_of(char *buf, const char *name)
{
	snprintf(buf, 512, "%s/%s", dir, name);
}

static unsigned char pat(long i)
{
	return (unsigned char)(i * 7 + i / 4096);
}

/* A file of @size pattern bytes, written back and out of the page cache. */
/*
 * Drop @fd's pages from the page cache, and check they are gone:
 * POSIX_FADV_DONTNEED leaves a page another CPU still holds in its LRU
 * batch, so it is repeated (bounded) until mincore() sees none.
 */
static void evict(int fd, long size)
{
	long pg = sysconf(_SC_PAGESIZE); /* 64 KiB on ppc64le */
	long pages = (size + pg - 1) / pg, i, tries;
	unsigned char *v = malloc((size_t)pages);
	void *m;

	assert_non_null(v);
	m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	for (tries = 0; tries < 1000; tries++) {
		assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED),
				 0);
		assert_int_equal(mincore(m, (size_t)size, v), 0);
		for (i = 0; i < pages && !(v[i] & 1); i++)
			;
		if (i == pages)
			break;
		sched_yield();
	}
	assert_true(tries < 1000);
	munmap(m, (size_t)size);
	free(v);
}

/*
 * @r = @call, made after @prep, until it goes pending (at most 20 times):
 * a read of an evicted page with RWF_NOWAIT starts its I/O, and a fast
 * disk (a virtio disk the host caches) can finish it before the read
 * looks again, so that the try is answered inline (measured: about 1 in
 * 300). Such an answer must be the whole transfer, @want. A disk that
 * answers all 20 inline (seen twice, once on a quiet machine: the host had the
 * file cached) leaves nothing pending to
 * check: the case is skipped, said on stderr, not failed.
 */
#define PEND_EVICTED(r, prep, call, want)                                   \
	do {                                                                \
		int t_;                                                     \
		for (t_ = 0; t_ < 20; t_++) {                               \
			prep;                                               \
			(r) = (call);                                       \
			if (PENDING(r))                                     \
				break;                                      \
			assert_int_equal((r), (want));                      \
		}                                                           \
		if (!PENDING(r)) {                                          \
			fprintf(stderr, "the disk answered 20 reads of "    \
					"evicted pages inline: no pending " \
					"case to check here\n");            \
			skip();                                             \
		}                                                           \
	} while (0)

static int make_file(const char *name, long size, int flags)
{
	char path[512];
	unsigned char *b = malloc((size_t)size);
	long i;
	int fd;

	assert_non_null(b);
	for (i = 0; i < size; i++)
		b[i] = pat(i);
	path_of(path, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, (size_t)size), size);
	assert_int_equal(fsync(fd), 0);
	evict(fd, size);
	free(b);
	if (flags) {
		close(fd);
		fd = open(path, flags);
		assert_true(fd >= 0);
	}
	return fd;
}

static void check_pat(const unsigned char *b, long off, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (b[i] != pat(off + i))
			fail_msg("byte %ld differs", off + i);
}

static int setup(void **state)
{
	(void)state;
	return dir_ring_setup(dir, sizeof(dir), "syslet-try", &ring);
}

static int teardown(void **state)
{
	(void)state;
	return dir_ring_teardown(dir, ring);
}

static void test_cached_read_inline(void **state)
{
	unsigned char b[4096];
	int fd = make_file("cached", 16384, 0);

	(void)state;
	need_nowait_file(dir);
	assert_int_equal(pread(fd, b, sizeof(b), 4096), 4096);
	memset(b, 0, sizeof(b));
	assert_int_equal(SYS_IND(ring, 0, SYS_pread64, fd, b, 4096, 4096),
			 4096);
	check_pat(b, 4096, 4096);
	/* positionless read: the file position moves as read(2) moves it */
	assert_int_equal(lseek(fd, 4096, SEEK_SET), 4096);
	assert_int_equal(SYS_IND(ring, 0, SYS_read, fd, b, 4096), 4096);
	check_pat(b, 4096, 4096);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 8192);
	/* a short read at the end of the file is the answer, inline */
	assert_int_equal(pread(fd, b, 4096, 12288), 4096);
	assert_int_equal(SYS_IND(ring, 0, SYS_pread64, fd, b, 4096, 14000),
			 16384 - 14000);
	check_pat(b, 14000, 16384 - 14000);
	ring_empty(ring);
	close(fd);
}

static void test_uncached_read_pending(void **state)
{
	unsigned char b[4096];
	struct syslet_completion c;
	int fd = make_file("uncached", 16384, 0);
	long r;

	(void)state;
	need_nowait_file(dir);
	PEND_EVICTED(r, evict(fd, 16384),
		     SYS_IND(ring, 11, SYS_pread64, fd, b, 4096, 8192), 4096);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 4096);
	assert_int_equal(c.caller_data, 11);
	check_pat(b, 8192, 4096);
	close(fd);
}

/* Cache [0, half) of @fd and make sure [half, end) is not cached. */
static void cache_first_half(int fd, long size)
{
	unsigned char *b = malloc((size_t)size / 2);

	assert_non_null(b);
	/* no readahead: it could still be reading the second half in */
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	assert_int_equal(pread(fd, b, (size_t)size / 2, 0), size / 2);
	assert_int_equal(
		posix_fadvise(fd, size / 2, size / 2, POSIX_FADV_DONTNEED), 0);
	free(b);
}

static void test_half_cached_read_total(void **state)
{
	unsigned char *b = malloc(MIB);
	struct iovec iov[2];
	struct syslet_completion c;
	int fd = make_file("half", MIB, 0);
	long r;

	(void)state;
	need_nowait_file(dir);
	assert_non_null(b);
	/* pread64: first half inline, the rest on a worker, total reported */
	PEND_EVICTED(r, cache_first_half(fd, MIB);
		     memset(b, 0, MIB),
		     SYS_IND(ring, 1, SYS_pread64, fd, b, MIB, 0), MIB);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, MIB);
	check_pat(b, 0, MIB);
	/* read(): the worker continues from the file position */
	PEND_EVICTED(r, cache_first_half(fd, MIB); memset(b, 0, MIB);
		     assert_int_equal(lseek(fd, 0, SEEK_SET), 0),
		     SYS_IND(ring, 2, SYS_read, fd, b, MIB), MIB);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, MIB);
	check_pat(b, 0, MIB);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), MIB);
	/* preadv with the split inside the second iovec */
	iov[0] = (struct iovec){ b, MIB / 4 };
	iov[1] = (struct iovec){ b + MIB / 4, MIB - MIB / 4 };
	PEND_EVICTED(r, cache_first_half(fd, MIB);
		     memset(b, 0, MIB),
		     SYS_IND(ring, 3, SYS_preadv, fd, iov, 2, 0, 0), MIB);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, MIB);
	check_pat(b, 0, MIB);
	free(b);
	close(fd);
}

/*
 * A number re-bound outside indirect() (plain close()+open(), F_SETFL) may
 * have a stale cached entry: at most one call runs on the caller (with the
 * right answer), then the entry is corrected. Through indirect() the change
 * is seen at once.
 */
static long direct_read(int fd, unsigned char *b, long off, long cd)
{
	struct syslet_completion c;
	long r = SYS_IND(ring, cd, SYS_pread64, fd, b, 4096, off);

	if (PENDING(r)) {
		c = ring_pop(ring);
		r = (long)c.status;
	} else {
		r = r * 1000;
	}
	return r;
}

static void test_odirect_always_worker(void **state)
{
	char path[512];
	unsigned char *b;
	int fd, i, stale = 0;
	long r;

	(void)state;
	close(make_file("direct", 65536, 0));
	path_of(path, "direct");
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		skip();
	b = aligned_alloc(4096, 4096);
	assert_non_null(b);
	for (i = 0; i < 5; i++) {
		r = direct_read(fd, b, i * 4096, 20 + i);
		check_pat(b, i * 4096, 4096);
		if (r == 4096 * 1000 && i == 0)
			stale++;
		else
			assert_int_equal(r, 4096);
	}
	assert_true(stale <= 1);
	/* O_DIRECT set later with F_SETFL outside indirect(): one mistake */
	close(fd);
	fd = open(path, O_RDONLY);
	assert_int_equal(pread(fd, b, 4096, 0), 4096);
	/* the old number's entry says O_DIRECT: a punt, which corrects it */
	r = direct_read(fd, b, 0, 29);
	if (r != 4096 * 1000)
		assert_int_equal(r, 4096);
	assert_int_equal(SYS_IND(ring, 0, SYS_pread64, fd, b, 4096, 0), 4096);
	assert_int_equal(fcntl(fd, F_SETFL, O_DIRECT), 0);
	r = direct_read(fd, b, 0, 30);
	if (r != 4096)
		assert_int_equal(r, 4096 * 1000);
	assert_int_equal(direct_read(fd, b, 4096, 31), 4096);
	/* through indirect(): none */
	assert_int_equal(SYS_IND(ring, 0, SYS_fcntl, fd, F_SETFL, 0), 0);
	assert_int_equal(SYS_IND(ring, 0, SYS_pread64, fd, b, 4096, 0), 4096);
	assert_int_equal(SYS_IND(ring, 0, SYS_fcntl, fd, F_SETFL, O_DIRECT), 0);
	assert_int_equal(direct_read(fd, b, 0, 32), 4096);
	free(b);
	close(fd);
}

static void test_file_write(void **state)
{
	unsigned char b[4096], back[4096];
	struct syslet_completion c;
	int fd = make_file("w", 8192, 0);
	long r, i;

	(void)state;
	need_nowait_file(dir);
	for (i = 0; i < 4096; i++)
		b[i] = (unsigned char)(i ^ 0x5a);
	r = SYS_IND(ring, 40, SYS_pwrite64, fd, b, 4096, 4096);
	if (PENDING(r)) {
		c = ring_pop(ring);
		r = (long)c.status;
	}
	assert_int_equal(r, 4096);
	assert_int_equal(pread(fd, back, 4096, 4096), 4096);
	assert_memory_equal(b, back, 4096);
	close(fd);
}

static void test_pipe_read(void **state)
{
	struct syslet_completion c;
	char b[64];
	int fds[2];
	long r;

	(void)state;
	need_nowait_pipe();
	assert_int_equal(pipe(fds), 0);
	r = SYS_IND(ring, 50, SYS_read, fds[0], b, sizeof(b));
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "hello", 5), 5);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 5);
	assert_memory_equal(b, "hello", 5);
	/* data there: a short read is the blocking answer too */
	assert_int_equal(write(fds[1], "abc", 3), 3);
	assert_int_equal(SYS_IND(ring, 0, SYS_read, fds[0], b, sizeof(b)), 3);
	/* O_NONBLOCK: EAGAIN inline */
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_read, fds[0], b, sizeof(b)), -1);
	assert_int_equal(errno, EAGAIN);
	ring_empty(ring);
	close(fds[0]);
	close(fds[1]);
}

struct drain {
	int fd;
	long n;
	unsigned char *buf;
};

/* Read until @n bytes or EOF. */
static void *drainer(void *arg)
{
	struct drain *d = arg;
	long got = 0, r;

	while (got < d->n) {
		r = read(d->fd, d->buf + got, (size_t)(d->n - got));
		if (r <= 0)
			break;
		got += r;
	}
	d->n = got;
	return NULL;
}

static void test_pipe_write_1mib(void **state)
{
	unsigned char *src = malloc(MIB), *dst = malloc(MIB);
	struct syslet_completion c;
	struct drain d;
	pthread_t t;
	int fds[2];
	long r, i;

	(void)state;
	need_nowait_pipe();
	assert_non_null(src);
	assert_non_null(dst);
	for (i = 0; i < MIB; i++)
		src[i] = pat(i);
	assert_int_equal(pipe(fds), 0);
	/* nobody reads yet: part fits in the pipe, a worker writes the rest */
	r = SYS_IND(ring, 60, SYS_write, fds[1], src, MIB);
	assert_true(PENDING(r));
	d = (struct drain){ fds[0], MIB, dst };
	assert_int_equal(pthread_create(&t, NULL, drainer, &d), 0);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, MIB);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(d.n, MIB);
	assert_memory_equal(src, dst, MIB);
	/* O_NONBLOCK: the short count is the answer */
	assert_int_equal(fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
	r = SYS_IND(ring, 0, SYS_write, fds[1], src, MIB);
	assert_true(r > 0 && r < MIB);
	ring_empty(ring);
	free(src);
	free(dst);
	close(fds[0]);
	close(fds[1]);
}

static void test_sockets(void **state)
{
	unsigned char *src = malloc(4 * MIB), *dst = malloc(4 * MIB);
	struct syslet_completion c;
	struct msghdr m = { 0 };
	struct iovec iov[2];
	struct drain d;
	pthread_t t;
	char b[16];
	int sv[2];
	long r, i;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (i = 0; i < 4 * MIB; i++)
		src[i] = pat(i);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* recv on an empty blocking socket: pending */
	r = SYS_IND(ring, 70, SYS_recvfrom, sv[0], b, sizeof(b), 0, 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(
		SYS_IND(ring, 0, SYS_sendto, sv[1], "ping", 4, 0, 0, 0), 4);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 4);
	assert_memory_equal(b, "ping", 4);
	/* MSG_DONTWAIT from the program: its EAGAIN, inline */
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_recvfrom, sv[0], b, sizeof(b),
				 MSG_DONTWAIT, 0, 0),
			 -1);
	assert_int_equal(errno, EAGAIN);
	/* sendmsg of 4 MiB in two iovecs: partial inline, rest by a worker */
	iov[0] = (struct iovec){ src, MIB };
	iov[1] = (struct iovec){ src + MIB, 3 * MIB };
	m.msg_iov = iov;
	m.msg_iovlen = 2;
	r = SYS_IND(ring, 71, SYS_sendmsg, sv[1], &m, 0);
	assert_true(PENDING(r));
	d = (struct drain){ sv[0], 4 * MIB, dst };
	assert_int_equal(pthread_create(&t, NULL, drainer, &d), 0);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 4 * MIB);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(d.n, 4 * MIB);
	assert_memory_equal(src, dst, 4 * MIB);
	/* recvmsg, O_NONBLOCK socket: EAGAIN inline */
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	iov[0] = (struct iovec){ b, sizeof(b) };
	m.msg_iovlen = 1;
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_recvmsg, sv[0], &m, 0), -1);
	assert_int_equal(errno, EAGAIN);
	ring_empty(ring);
	free(src);
	free(dst);
	close(sv[0]);
	close(sv[1]);
}

static void test_eventfd(void **state)
{
	struct syslet_completion c;
	uint64_t v = 0;
	int fd = eventfd(0, 0);
	long r;

	(void)state;
	r = SYS_IND(ring, 80, SYS_read, fd, &v, 8);
	assert_true(PENDING(r));
	assert_int_equal(eventfd_write(fd, 5), 0);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 8);
	assert_int_equal(v, 5);
	/* a value there: inline */
	assert_int_equal(eventfd_write(fd, 3), 0);
	assert_int_equal(SYS_IND(ring, 0, SYS_read, fd, &v, 8), 8);
	assert_int_equal(v, 3);
	close(fd);
}

static void test_accept_connect(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct syslet_completion c;
	int lfd, cfd;
	long r;

	(void)state;
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "try-%d", getpid());
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	/* blocking listener: accept goes to a worker */
	r = SYS_IND(ring, 90, SYS_accept, lfd, 0, 0);
	assert_true(PENDING(r));
	cfd = socket(AF_UNIX, SOCK_STREAM, 0);
	/* blocking socket: connect goes to a worker too */
	r = SYS_IND(ring, 91, SYS_connect, cfd, &sa, sizeof(sa));
	assert_true(PENDING(r));
	c = ring_pop(ring);
	if (c.caller_data == 90) {
		assert_true((long)c.status >= 0);
		close((int)c.status);
		c = ring_pop(ring);
		assert_int_equal(c.caller_data, 91);
		assert_int_equal((long)c.status, 0);
	} else {
		assert_int_equal(c.caller_data, 91);
		assert_int_equal((long)c.status, 0);
		c = ring_pop(ring);
		assert_true((long)c.status >= 0);
		close((int)c.status);
	}
	close(cfd);
	/* O_NONBLOCK listener: accept inline, EAGAIN when nobody waits */
	assert_int_equal(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_accept4, lfd, 0, 0, 0), -1);
	assert_int_equal(errno, EAGAIN);
	ring_empty(ring);
	close(lfd);
}

static void test_open(void **state)
{
	struct open_how how = { .flags = O_RDONLY };
	struct syslet_completion c;
	char path[512], fifo[512];
	int fd = make_file("o", 100, 0), wfd;
	struct stat st;
	long r;

	(void)state;
	close(fd);
	path_of(path, "o");
	assert_int_equal(stat(path, &st), 0);
	/* a cached path to a regular file: inline */
	r = SYS_IND(ring, 0, SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC,
		    0);
	assert_true(r >= 0);
	assert_true(fcntl((int)r, F_GETFD) & FD_CLOEXEC);
	close((int)r);
#ifdef SYS_open
	r = SYS_IND(ring, 0, SYS_open, path, O_RDONLY, 0);
	assert_true(r >= 0);
	close((int)r);
#endif
	r = SYS_IND(ring, 0, SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	assert_true(r >= 0);
	close((int)r);
	/* a missing file whose negative dentry is cached: ENOENT inline */
	path_of(fifo, "missing");
	assert_int_equal(stat(fifo, &st), -1);
	errno = 0;
	assert_int_equal(
		SYS_IND(ring, 0, SYS_openat, AT_FDCWD, fifo, O_RDONLY, 0), -1);
	assert_int_equal(errno, ENOENT);
	/* O_CREAT: a worker */
	path_of(fifo, "created");
	r = SYS_IND(ring, 100, SYS_openat, AT_FDCWD, fifo,
		    O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_true((long)c.status >= 0);
	close((int)c.status);
	/* a FIFO would block the caller until a writer comes: a worker */
	path_of(fifo, "fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	r = SYS_IND(ring, 101, SYS_openat, AT_FDCWD, fifo, O_RDONLY, 0);
	assert_true(PENDING(r));
	wfd = open(fifo, O_WRONLY);
	assert_true(wfd >= 0);
	c = ring_pop(ring);
	assert_true((long)c.status >= 0);
	close((int)c.status);
	close(wfd);
}

static void test_poll_family(void **state)
{
	struct timespec zts = { 0, 0 };
	struct syslet_completion c;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct pollfd pfd;
	int fds[2], ep;
	fd_set rs;
	char b;
	long r;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pfd = (struct pollfd){ fds[0], POLLIN, 0 };
	/* nothing ready, zero timeout: inline 0 */
	assert_int_equal(SYS_IND(ring, 0, SYS_ppoll, &pfd, 1, &zts, 0, 8), 0);
#ifdef SYS_poll /* aarch64 has only ppoll, pselect6, epoll_pwait */
	assert_int_equal(SYS_IND(ring, 0, SYS_poll, &pfd, 1, 0), 0);
	/* nothing ready, no timeout: a worker */
	r = SYS_IND(ring, 110, SYS_poll, &pfd, 1, -1);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "x", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 1);
	assert_true(pfd.revents & POLLIN);
	/* ready: inline */
	assert_int_equal(SYS_IND(ring, 0, SYS_poll, &pfd, 1, -1), 1);
	assert_int_equal(read(fds[0], &b, 1), 1);
#else
	/* nothing ready, no timeout: a worker */
	r = SYS_IND(ring, 110, SYS_ppoll, &pfd, 1, 0, 0, 8);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "x", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 1);
	assert_int_equal(read(fds[0], &b, 1), 1);
#endif
#ifdef SYS_select
	/* select: the sets the zero-timeout try cleared are put back */
	FD_ZERO(&rs);
	FD_SET(fds[0], &rs);
	r = SYS_IND(ring, 111, SYS_select, fds[0] + 1, &rs, 0, 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "y", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 1);
	assert_true(FD_ISSET(fds[0], &rs));
	assert_int_equal(read(fds[0], &b, 1), 1);
#endif
	FD_ZERO(&rs);
	FD_SET(fds[0], &rs);
	assert_int_equal(SYS_IND(ring, 0, SYS_pselect6, fds[0] + 1, &rs, 0, 0,
				 &zts, 0),
			 0);
	/* epoll_wait */
	ep = epoll_create1(0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev), 0);
#ifdef SYS_epoll_wait
	assert_int_equal(SYS_IND(ring, 0, SYS_epoll_wait, ep, &out, 1, 0), 0);
	r = SYS_IND(ring, 112, SYS_epoll_wait, ep, &out, 1, -1);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "z", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 1);
#else
	assert_int_equal(write(fds[1], "z", 1), 1);
#endif
	assert_int_equal(
		SYS_IND(ring, 0, SYS_epoll_pwait, ep, &out, 1, -1, 0, 8), 1);
	ring_empty(ring);
	close(ep);
	close(fds[0]);
	close(fds[1]);
}

static void test_wait_family(void **state)
{
	struct syslet_completion c;
	siginfo_t si;
	int fds[2], status = 0;
	pid_t pid;
	long r;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char b;

		_exit(read(fds[0], &b, 1) == 1 ? 3 : 4);
	}
	/* a child that has not exited: a worker waits for it */
	r = SYS_IND(ring, 120, SYS_wait4, pid, &status, 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "x", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	/* a child that has exited: inline */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(5);
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	memset(&si, 0, sizeof(si));
	assert_int_equal(
		SYS_IND(ring, 0, SYS_waitid, P_PID, pid, &si, WEXITED, 0), 0);
	assert_int_equal(si.si_pid, pid);
	assert_int_equal(si.si_status, 5);
	/* waitid on a running child: a worker */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char b;

		_exit(read(fds[0], &b, 1) == 1 ? 6 : 7);
	}
	r = SYS_IND(ring, 121, SYS_waitid, P_PID, pid, &si, WEXITED, 0);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "x", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	assert_int_equal(si.si_pid, pid);
	assert_int_equal(si.si_status, 6);
	close(fds[0]);
	close(fds[1]);
}

static _Atomic int word = 1;

static void test_futex(void **state)
{
	struct syslet_completion c;
	int spins;
	long r;

	(void)state;
	/* the value changed already: EAGAIN inline */
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_futex, &word, FUTEX_WAIT_PRIVATE,
				 0, 0, 0, 0),
			 -1);
	assert_int_equal(errno, EAGAIN);
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_futex, &word,
				 FUTEX_WAIT_BITSET_PRIVATE, 0, 0, 0,
				 FUTEX_BITSET_MATCH_ANY),
			 -1);
	assert_int_equal(errno, EAGAIN);
	/* the value is still there: a worker waits */
	r = SYS_IND(ring, 130, SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, 0, 0,
		    0);
	assert_true(PENDING(r));
	atomic_store(&word, 2);
	/* woken, or it saw the new value: either way it ends (bounded) */
	for (spins = 0; syslet_ring_head(ring) == ring->user_tail; spins++) {
		assert_true(spins < 100000000);
		syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
		sched_yield();
	}
	c = ring_pop(ring);
	assert_true((long)c.status == 0 || (long)c.status == -EAGAIN);
	/* wakes are inline */
	assert_int_equal(SYS_IND(ring, 0, SYS_futex, &word, FUTEX_WAKE_PRIVATE,
				 1, 0, 0, 0),
			 0);
	atomic_store(&word, 1);
}

static void test_sleeps(void **state)
{
	struct timespec z = { 0, 0 }, ms = { 0, 1000000 }, past = { 1, 0 };
	struct syslet_completion c;
	long r;

	(void)state;
	assert_int_equal(SYS_IND(ring, 0, SYS_nanosleep, &z, 0), 0);
	assert_int_equal(SYS_IND(ring, 0, SYS_clock_nanosleep, CLOCK_MONOTONIC,
				 TIMER_ABSTIME, &past, 0),
			 0);
	r = SYS_IND(ring, 140, SYS_nanosleep, &ms, 0);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	r = SYS_IND(ring, 141, SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ms, 0);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
}

static void test_more_waits(void **state)
{
	struct timespec zts = { 0, 0 };
	struct syslet_completion c;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct futex_waitv w = { 0 };
	struct pollfd pfd;
	int fds[2], ep, spins;
	fd_set rs;
	char b;
	long r;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pfd = (struct pollfd){ fds[0], POLLIN, 0 };
	/* ppoll and pselect6 without a timeout: a worker */
	r = SYS_IND(ring, 160, SYS_ppoll, &pfd, 1, 0, 0, 8);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "a", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 1);
	assert_int_equal(read(fds[0], &b, 1), 1);
	FD_ZERO(&rs);
	FD_SET(fds[0], &rs);
	r = SYS_IND(ring, 161, SYS_pselect6, fds[0] + 1, &rs, 0, 0, 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "b", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 1);
	assert_true(FD_ISSET(fds[0], &rs));
	assert_int_equal(read(fds[0], &b, 1), 1);
	/* epoll_pwait2: zero timeout inline, none a worker */
	ep = epoll_create1(0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev), 0);
	assert_int_equal(
		SYS_IND(ring, 0, SYS_epoll_pwait2, ep, &out, 1, &zts, 0, 8), 0);
	r = SYS_IND(ring, 162, SYS_epoll_pwait2, ep, &out, 1, 0, 0, 8);
	assert_true(PENDING(r));
	assert_int_equal(write(fds[1], "c", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 1);
	assert_int_equal(read(fds[0], &b, 1), 1);
	/* futex_waitv: a changed value inline, the same value a worker */
	w.uaddr = (uint64_t)(uintptr_t)&word;
	w.val = 0;
	w.flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_futex_waitv, &w, 1, 0, 0,
				 CLOCK_MONOTONIC),
			 -1);
	assert_int_equal(errno, EAGAIN);
	w.val = 1;
	r = SYS_IND(ring, 163, SYS_futex_waitv, &w, 1, 0, 0, CLOCK_MONOTONIC);
	assert_true(PENDING(r));
	atomic_store(&word, 2);
	for (spins = 0; syslet_ring_head(ring) == ring->user_tail; spins++) {
		assert_true(spins < 100000000);
		syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
		sched_yield();
	}
	c = ring_pop(ring);
	assert_true((long)c.status == 0 || (long)c.status == -EAGAIN);
	atomic_store(&word, 1);
	ring_empty(ring);
	close(ep);
	close(fds[0]);
	close(fds[1]);
}

static void test_more_transfers(void **state)
{
	unsigned char b[4096], *src = malloc(MIB), *dst = malloc(MIB);
	struct iovec iov[2], one = { b, sizeof(b) };
	struct syslet_completion c;
	struct drain d;
	pthread_t t;
	int fd = make_file("more", 16384, 0), fds[2], sv[2];
	long r, i;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	/*
	 * No readahead: the EAGAIN read below starts I/O for its page, and
	 * readahead would bring in the block at 4096 too, so that under load
	 * it could be cached before the read that must go to a worker.
	 */
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	/*
	 * preadv2 with the program's own RWF_NOWAIT: its EAGAIN, inline (or,
	 * as PEND_EVICTED says, the block when the disk was that fast)
	 */
	for (i = 0; i < 20; i++) {
		evict(fd, 16384);
		errno = 0;
		r = SYS_IND(ring, 0, SYS_preadv2, fd, &one, 1, 0, 0,
			    RWF_NOWAIT);
		if (r == -1)
			break;
		assert_int_equal(r, 4096);
	}
	assert_int_equal(r, -1);
	assert_int_equal(errno, EAGAIN);
	/* without it: a worker reads the uncached block */
	PEND_EVICTED(r, evict(fd, 16384),
		     SYS_IND(ring, 170, SYS_preadv2, fd, &one, 1, 4096, 0, 0),
		     4096);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 4096);
	check_pat(b, 4096, 4096);
	/* cached now: inline, through preadv2 and readv */
	assert_int_equal(SYS_IND(ring, 0, SYS_preadv2, fd, &one, 1, 4096, 0, 0),
			 4096);
	assert_int_equal(lseek(fd, 4096, SEEK_SET), 4096);
	assert_int_equal(SYS_IND(ring, 0, SYS_readv, fd, &one, 1), 4096);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 8192);
	/* writev of 1 MiB in two parts into a blocking pipe: the total */
	for (i = 0; i < MIB; i++)
		src[i] = pat(i);
	assert_int_equal(pipe(fds), 0);
	iov[0] = (struct iovec){ src, 1000 };
	iov[1] = (struct iovec){ src + 1000, MIB - 1000 };
	r = SYS_IND(ring, 171, SYS_writev, fds[1], iov, 2);
	assert_true(PENDING(r));
	d = (struct drain){ fds[0], MIB, dst };
	assert_int_equal(pthread_create(&t, NULL, drainer, &d), 0);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, MIB);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_memory_equal(src, dst, MIB);
	/* recv with MSG_WAITALL waits for all of it: a worker */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(write(sv[1], "abc", 3), 3);
	r = SYS_IND(ring, 172, SYS_recvfrom, sv[0], b, 6, MSG_WAITALL, 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(write(sv[1], "def", 3), 3);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 6);
	assert_memory_equal(b, "abcdef", 6);
	ring_empty(ring);
	free(src);
	free(dst);
	close(fd);
	close(fds[0]);
	close(fds[1]);
	close(sv[0]);
	close(sv[1]);
}

struct small_msg {
	long type;
	char text[8];
};

static void test_message_queues(void **state)
{
	struct small_msg m = { 1, "abcdefg" }, got;
	struct mq_attr attr = { .mq_maxmsg = 1, .mq_msgsize = 8 };
	struct syslet_completion c;
	struct msqid_ds ds;
	char name[64], b[8];
	unsigned int prio;
	int q;
	mqd_t mq;
	long r;

	(void)state;
	/* System V: an empty queue makes msgrcv wait on a worker */
	q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	assert_true(q >= 0);
	r = SYS_IND(ring, 180, SYS_msgrcv, q, &got, sizeof(got.text), 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(msgsnd(q, &m, sizeof(m.text), 0), 0);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, sizeof(got.text));
	assert_string_equal(got.text, "abcdefg");
	/* a message there: inline; the program's IPC_NOWAIT: its ENOMSG */
	assert_int_equal(SYS_IND(ring, 0, SYS_msgsnd, q, &m, sizeof(m.text), 0),
			 0);
	assert_int_equal(SYS_IND(ring, 0, SYS_msgrcv, q, &got, sizeof(got.text),
				 0, 0),
			 sizeof(got.text));
	errno = 0;
	assert_int_equal(SYS_IND(ring, 0, SYS_msgrcv, q, &got, sizeof(got.text),
				 0, IPC_NOWAIT),
			 -1);
	assert_int_equal(errno, ENOMSG);
	/* a full queue makes msgsnd wait on a worker */
	assert_int_equal(msgctl(q, IPC_STAT, &ds), 0);
	ds.msg_qbytes = sizeof(m.text);
	assert_int_equal(msgctl(q, IPC_SET, &ds), 0);
	assert_int_equal(msgsnd(q, &m, sizeof(m.text), 0), 0);
	r = SYS_IND(ring, 181, SYS_msgsnd, q, &m, sizeof(m.text), 0);
	assert_true(PENDING(r));
	assert_int_equal(msgrcv(q, &got, sizeof(got.text), 0, 0),
			 sizeof(got.text));
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	assert_int_equal(msgctl(q, IPC_RMID, NULL), 0);
	/* POSIX: mq_timedreceive on an empty queue, no deadline: a worker */
	snprintf(name, sizeof(name), "/syslet-try-%d", getpid());
	mq = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
	if (mq == (mqd_t)-1)
		skip();
	mq_unlink(name);
	r = SYS_IND(ring, 182, SYS_mq_timedreceive, mq, b, 8, &prio, 0);
	assert_true(PENDING(r));
	assert_int_equal(mq_send(mq, "xyz", 4, 3), 0);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 4);
	assert_string_equal(b, "xyz");
	/* room: mq_timedsend inline; full: a worker */
	assert_int_equal(SYS_IND(ring, 0, SYS_mq_timedsend, mq, "one", 4, 0, 0),
			 0);
	r = SYS_IND(ring, 183, SYS_mq_timedsend, mq, "two", 4, 0, 0);
	assert_true(PENDING(r));
	assert_int_equal(mq_receive(mq, b, 8, NULL), 4);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	assert_int_equal(mq_receive(mq, b, 8, NULL), 4);
	assert_string_equal(b, "two");
	ring_empty(ring);
	mq_close(mq);
}

static void test_locks(void **state)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct syslet_completion c;
	int fd = make_file("lock", 100, 0), fd2, go[2], ready[2];
	char path[512], b;
	pid_t pid;
	long r;

	(void)state;
	path_of(path, "lock");
	fd2 = open(path, O_RDWR);
	/* flock: free lock inline, a held one on a worker */
	assert_int_equal(SYS_IND(ring, 0, SYS_flock, fd2, LOCK_EX), 0);
	assert_int_equal(flock(fd2, LOCK_UN), 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	r = SYS_IND(ring, 150, SYS_flock, fd2, LOCK_EX);
	assert_true(PENDING(r));
	assert_int_equal(flock(fd, LOCK_UN), 0);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	assert_int_equal(flock(fd2, LOCK_UN), 0);
	/* F_SETLKW: a record lock another process holds */
	assert_int_equal(SYS_IND(ring, 0, SYS_fcntl, fd, KF_SETLKW, &fl), 0);
	fl.l_type = F_UNLCK;
	assert_int_equal(fcntl(fd, F_SETLK, &fl), 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

		if (fcntl(fd, F_SETLK, &l) || write(ready[1], "r", 1) != 1 ||
		    read(go[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(read(ready[0], &b, 1), 1);
	fl.l_type = F_WRLCK;
	r = SYS_IND(ring, 151, SYS_fcntl, fd, KF_SETLKW, &fl);
	assert_true(PENDING(r));
	assert_int_equal(write(go[1], "g", 1), 1);
	c = ring_pop(ring);
	assert_int_equal((long)c.status, 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
	close(fd);
	close(fd2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cached_read_inline),
		cmocka_unit_test(test_uncached_read_pending),
		cmocka_unit_test(test_half_cached_read_total),
		cmocka_unit_test(test_odirect_always_worker),
		cmocka_unit_test(test_file_write),
		cmocka_unit_test(test_pipe_read),
		cmocka_unit_test(test_pipe_write_1mib),
		cmocka_unit_test(test_sockets),
		cmocka_unit_test(test_eventfd),
		cmocka_unit_test(test_accept_connect),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_poll_family),
		cmocka_unit_test(test_wait_family),
		cmocka_unit_test(test_futex),
		cmocka_unit_test(test_sleeps),
		cmocka_unit_test(test_more_waits),
		cmocka_unit_test(test_more_transfers),
		cmocka_unit_test(test_locks),
		cmocka_unit_test(test_message_queues),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
