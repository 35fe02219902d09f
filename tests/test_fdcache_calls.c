/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: the descriptor fact cache forgets a number that a call
 * through indirect() makes (src/fdcache.c, syslet__fd_rebound()). White
 * box: a number's facts are cached, the number is closed outside the
 * library (its word is stale), a call through indirect() creates a new
 * descriptor on it: its word no longer holds facts. Run with socket()
 * everywhere; with ppc64's socketcall(SYS_SOCKET) and
 * socketcall(SYS_SOCKETPAIR) where the multiplexer exists (issue 11);
 * and the sub-calls and spu_create (no Cell SPU to run it on) against
 * syslet__fd_rebound() directly, including sub-calls that make nothing
 * and must leave the facts alone. A descriptor whose file system refused
 * a RWF_NOWAIT write (ext4's buffered writes) keeps that fact, and the
 * number re-bound to a pipe outside the library gets its writes inline
 * again within a bounded time.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/net.h>
#include <cmocka.h>

#include "fdcache.h"
#include "indirect_util.h"

#define TRIES 20 /* another thread may take the freed number first */

/* Whether @fd's word holds facts. */
static bool cached(int fd)
{
	_Atomic uint64_t *chunk =
		atomic_load(&syslet__fd_dir[fd >> SYSLET__FD_CHUNK_SHIFT]);

	return chunk &&
	       (atomic_load(&chunk[fd & ((1 << SYSLET__FD_CHUNK_SHIFT) - 1)]) &
		SYSLET__FD_VALID);
}

/* A number with cached facts of /dev/null, then closed: a stale word. */
static int stale_number(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_true(syslet__fd_fresh(fd) >= 0);
	assert_true(cached(fd));
	assert_int_equal(close(fd), 0); /* outside the library */
	assert_true(cached(fd));
	return fd;
}

static long result(struct syslet_ring *ring, long r)
{
	if (PENDING(r))
		return (long)ring_pop(ring).status;
	return r < 0 ? -errno : r;
}

/* Start the pool, so that its own descriptors are made before the test. */
static struct syslet_ring *ring_with_pool(void)
{
	struct syslet_ring *ring = ring_new(16);

	assert_int_equal(result(ring, SYS_IND(ring, 0, SYS_fdatasync, -1)),
			 -EBADF);
	return ring;
}

/*
 * @make (through indirect()) creates descriptors; each must land on a
 * stale number and leave it without facts. Retried while another thread
 * (the pool's) took the freed number first.
 */
static void check_made(int (*make)(struct syslet_ring *, int *))
{
	struct syslet_ring *ring = ring_with_pool();
	int i, n, fd, made[2];

	for (i = 0; i < TRIES; i++) {
		fd = stale_number();
		n = make(ring, made);
		assert_true(n > 0 && made[0] >= 0);
		if (made[0] == fd) {
			assert_false(cached(fd));
			if (n == 2)
				assert_false(cached(made[1]));
			while (n--)
				close(made[n]);
			free(ring);
			return;
		}
		while (n--)
			close(made[n]);
	}
	fail_msg("the freed number was taken %d times in a row", TRIES);
}

static int make_socket(struct syslet_ring *ring, int *made)
{
	made[0] = (int)result(ring, SYS_IND(ring, 1, SYS_socket, AF_UNIX,
					    SOCK_STREAM | SOCK_CLOEXEC, 0));
	return 1;
}

static void test_socket(void **state)
{
	(void)state;
	check_made(make_socket);
}

#ifdef SYS_socketcall
static int make_socketcall_socket(struct syslet_ring *ring, int *made)
{
	unsigned long args[3] = { AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0 };

	made[0] = (int)result(ring, SYS_IND(ring, 1, SYS_socketcall, SYS_SOCKET,
					    args));
	return 1;
}

static int make_socketcall_pair(struct syslet_ring *ring, int *made)
{
	unsigned long args[4] = { AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				  (unsigned long)made };

	made[0] = -1;
	assert_int_equal(result(ring, SYS_IND(ring, 1, SYS_socketcall,
					      SYS_SOCKETPAIR, args)),
			 0);
	return 2;
}
#endif

static void test_socketcall_socket(void **state)
{
	(void)state;
#ifdef SYS_socketcall
	check_made(make_socketcall_socket);
#else
	skip();
#endif
}

static void test_socketcall_socketpair(void **state)
{
	(void)state;
#ifdef SYS_socketcall
	check_made(make_socketcall_pair);
#else
	skip();
#endif
}

/* A number with cached facts (open): @nr's success made it, or not. */
static void rebound_forgets(long nr, long a0, bool forgets)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), two[2];
	unsigned long args[4] = { 0, 0, 0, (unsigned long)two };
	long a[6] = { a0, (long)args, 0, 0, 0, 0 };

	assert_true(fd >= 0);
	two[0] = two[1] = fd;
	assert_true(syslet__fd_fresh(fd) >= 0);
	/* A failed call makes nothing. */
	syslet__fd_rebound(nr, a, -EMFILE);
	assert_true(cached(fd));
	syslet__fd_rebound(nr, a, a0 == SYS_SOCKETPAIR ? 0 : fd);
	assert_true(cached(fd) == !forgets);
	close(fd);
}

static void test_rebound_direct(void **state)
{
	(void)state;
#ifdef SYS_socketcall
	rebound_forgets(SYS_socketcall, SYS_SOCKET, true);
	rebound_forgets(SYS_socketcall, SYS_ACCEPT, true);
	rebound_forgets(SYS_socketcall, SYS_ACCEPT4, true);
	rebound_forgets(SYS_socketcall, SYS_SOCKETPAIR, true);
	rebound_forgets(SYS_socketcall, SYS_SEND, false);
	rebound_forgets(SYS_socketcall, SYS_CONNECT, false);
#endif
#ifdef SYS_spu_create
	rebound_forgets(SYS_spu_create, 0, true);
#endif
	rebound_forgets(SYS_socket, 0, true);
	rebound_forgets(SYS_getppid, 0, false);
}

/* Facts of @fd as cached (0: none). */
static long facts(int fd)
{
	_Atomic uint64_t *chunk =
		atomic_load(&syslet__fd_dir[fd >> SYSLET__FD_CHUNK_SHIFT]);

	return chunk ? (long)(atomic_load(
				      &chunk[fd & ((1 << SYSLET__FD_CHUNK_SHIFT) -
						   1)]) &
			      SYSLET__FD_FACTS) :
		       0;
}

static void test_writes_refused(void **state)
{
	struct syslet_ring *ring = ring_with_pool();
	const char *d = getenv("SYSLET_TEST_DIR");
	char path[512], b[4096] = { 'w' };
	struct iovec v = { b, sizeof(b) }, v1 = { b, 1 };
	struct timespec t0, t;
	int fd, p[2], i, inl = 0, nowait, done;
	long r;

	(void)state;
	snprintf(path, sizeof(path), "%s/syslet-refused-XXXXXX",
		 d ? d : "/var/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	if (syscall(SYS_pwritev2, fd, &v, 1, 0, 0, RWF_NOWAIT) != -1 ||
	    errno != EOPNOTSUPP) {
		print_message("this file system takes RWF_NOWAIT writes\n");
		close(fd);
		free(ring);
		skip();
	}
	assert_int_equal(result(ring,
				SYS_IND(ring, 1, SYS_pwrite64, fd, b, 4096, 0)),
			 4096);
	assert_true(facts(fd) & SYSLET__FD_NOWAIT_WR);
	/* still known after more writes */
	for (i = 0; i < 4; i++)
		assert_int_equal(result(ring, SYS_IND(ring, 2, SYS_pwrite64, fd,
						      b, 4096, 4096 * i)),
				 4096);
	assert_true(facts(fd) & SYSLET__FD_NOWAIT_WR);
	/*
	 * Re-bound outside the library: the facts are read again and a pipe
	 * takes a byte inline again where the kernel takes RWF_NOWAIT writes
	 * to a pipe (6.1's pipes refuse them: there every such write punts).
	 */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(dup2(p[1], fd), fd);
	nowait = syscall(SYS_pwritev2, fd, &v1, 1, -1, RWF_NOWAIT) == 1;
	if (nowait)
		assert_int_equal(read(p[0], b, 1), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		r = SYS_IND(ring, 3, SYS_write, fd, b, 1);
		inl = !PENDING(r);
		assert_int_equal(result(ring, r), 1);
		assert_int_equal(read(p[0], b, 1), 1);
		clock_gettime(CLOCK_MONOTONIC, &t);
		done = nowait ? inl : !(facts(fd) & SYSLET__FD_DISK);
	} while (!done && t.tv_sec - t0.tv_sec < 5);
	assert_true(done);
	assert_false(facts(fd) & SYSLET__FD_NOWAIT_WR);
	close(p[0]);
	close(p[1]);
	close(fd);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writes_refused),
		cmocka_unit_test(test_socket),
		cmocka_unit_test(test_socketcall_socket),
		cmocka_unit_test(test_socketcall_socketpair),
		cmocka_unit_test(test_rebound_direct),
	};

	alarm(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
