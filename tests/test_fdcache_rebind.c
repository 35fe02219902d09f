/* SPDX-License-Identifier: MIT */
/*
 * Description: the descriptor fact cache under re-binding. Reader threads
 * read one descriptor number through indirect() while another thread
 * re-binds that number outside the library, round after round: dup2() of
 * an O_DIRECT descriptor, close()+open(O_DIRECT) of the same number, and
 * fcntl(F_SETFL, O_DIRECT), each followed by a return to a buffered file.
 * A "stalled" call is one answered on the caller while the number was
 * O_DIRECT (it waited for the device there): at most one per reader per
 * re-binding, and every answer is right.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

#define READERS 2
#define ROUNDS 30
#define CALLS_PER_PHASE 4
#define SIZE 65536

static char dir[256], path[512];
static int target, fd_buf;
/*
 * phase: 2k+1 while round k has the number O_DIRECT, 2k+2 after, -1 while
 * it is being re-bound
 */
static atomic_int phase;
static atomic_int calls[READERS];
static atomic_int stop;

struct reader {
	int id;
	long stalls[ROUNDS];
	long bad;
	struct syslet_ring *ring;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	unsigned char *b = aligned_alloc(4096, 4096);
	long i = 0, res;
	int ph;

	while (!atomic_load(&stop)) {
		ph = atomic_load(&phase);
		res = SYS_IND(r->ring, 0, SYS_pread64, target, b, 4096,
			      (i++ % 16) * 4096);
		if (PENDING(res))
			res = (long)ring_pop(r->ring).status;
		else if (ph > 0 && (ph & 1) && ph == atomic_load(&phase))
			r->stalls[ph / 2]++;
		/* a call during close()+open() may meet no descriptor */
		if (ph > 0 && ph == atomic_load(&phase) &&
		    (res != 4096 || b[0] != 'd'))
			r->bad++;
		atomic_fetch_add(&calls[r->id], 1);
	}
	free(b);
	return NULL;
}

/* Let every reader make CALLS_PER_PHASE calls (bounded: 30 s). */
static void let_read(void)
{
	int seen[READERS], i, n;

	for (i = 0; i < READERS; i++)
		seen[i] = atomic_load(&calls[i]);
	for (n = 0; n < 300000; n++) {
		for (i = 0; i < READERS; i++)
			if (atomic_load(&calls[i]) < seen[i] + CALLS_PER_PHASE)
				break;
		if (i == READERS)
			return;
		usleep(100);
	}
	fail_msg("readers stopped making progress");
}

static void test_rebind_under_load(void **state)
{
	struct reader rd[READERS];
	pthread_t t[READERS];
	char *b = malloc(SIZE);
	long total = 0;
	int i, k, fd_dir, fd;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/syslet-rebind-XXXXXX",
		 getenv("SYSLET_TEST_DIR") ? getenv("SYSLET_TEST_DIR") :
					     "/var/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	fd_buf = open(path, O_RDWR | O_CREAT, 0600);
	memset(b, 'd', SIZE);
	assert_int_equal(write(fd_buf, b, SIZE), SIZE);
	assert_int_equal(fsync(fd_buf), 0);
	fd_dir = open(path, O_RDONLY | O_DIRECT);
	if (fd_dir < 0)
		skip();
	target = dup(fd_buf);
	atomic_store(&phase, 0);
	for (i = 0; i < READERS; i++) {
		rd[i] = (struct reader){ .id = i, .ring = ring_new(64) };
		assert_int_equal(pthread_create(&t[i], NULL, read_loop, &rd[i]),
				 0);
	}
	let_read();
	for (k = 0; k < ROUNDS; k++) {
		atomic_store(&phase, -1);
		switch (k % 3) {
		case 0:
			assert_int_equal(dup2(fd_dir, target), target);
			break;
		case 1:
			close(target);
			fd = open(path, O_RDONLY | O_DIRECT);
			assert_int_equal(fd, target);
			break;
		default:
			assert_int_equal(fcntl(target, F_SETFL, O_DIRECT), 0);
			break;
		}
		/* no cached pages: an O_DIRECT read then waits for the disk */
		assert_int_equal(
			posix_fadvise(fd_buf, 0, 0, POSIX_FADV_DONTNEED), 0);
		atomic_store(&phase, 2 * k + 1);
		let_read();
		atomic_store(&phase, -1);
		assert_int_equal(dup2(fd_buf, target), target);
		atomic_store(&phase, 2 * k + 2);
		let_read();
	}
	atomic_store(&stop, 1);
	for (i = 0; i < READERS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(rd[i].bad, 0);
		for (k = 0; k < ROUNDS; k++) {
			assert_true(rd[i].stalls[k] <= 1);
			total += rd[i].stalls[k];
		}
		free(rd[i].ring);
	}
	print_message("%d re-bindings, %d readers: %ld stalled calls\n", ROUNDS,
		      READERS, total);
	close(target);
	close(fd_dir);
	close(fd_buf);
	unlink(path);
	rmdir(dir);
	free(b);
}

/*
 * A tmpfs file's number re-bound to an empty blocking pipe outside the
 * library: the stale "memory-backed" entry must not make a read block the
 * caller (positionless: tried with RWF_NOWAIT first; positional: ESPIPE).
 */
static void test_tmpfs_to_pipe(void **state)
{
	struct syslet_ring *ring = ring_new(8);
	char b[16];
	int fd, p[2];
	long r;

	(void)state;
	fd = memfd_create("rebind", 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "memory", 6), 6);
	assert_int_equal(SYS_IND(ring, 0, SYS_pread64, fd, b, 6, 0), 6);
	close(fd);
	assert_int_equal(pipe(p), 0);
	if (p[0] != fd) { /* another thread took the number */
		close(p[0]);
		close(p[1]);
		free(ring);
		skip();
	}
	r = SYS_IND(ring, 0, SYS_pread64, p[0], b, 6, 0);
	assert_true(r == -1 && errno == ESPIPE);
	r = SYS_IND(ring, 5, SYS_read, p[0], b, 6);
	assert_true(PENDING(r));
	assert_int_equal(write(p[1], "pipe!", 5), 5);
	assert_int_equal((long)ring_pop(ring).status, 5);
	close(p[0]);
	close(p[1]);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rebind_under_load),
		cmocka_unit_test(test_tmpfs_to_pipe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
