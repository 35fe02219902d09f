/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a ring shared between two processes (MAP_SHARED, a fork
 * child and its parent both submitting). Known, open (syslet(7) BUGS: a
 * ring shared between processes is not supported, and not detected):
 * each process keeps its own state of the ring's reservations and head,
 * so both write the same slots and half the completions are lost. Each
 * process has 4 reads of an empty pipe pending, both reserved before
 * either posts; then both are released: 8 completions are due, 4 arrive.
 * Every wait is bounded (an alarm; 2 s for the completions).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

#define EACH 4

/* Submit EACH reads of @fd on @ring, caller_data @cd0 on: all pending. */
static int submit(struct syslet_ring *ring, int fd, uint64_t cd0)
{
	static char buf[EACH];
	int i;

	for (i = 0; i < EACH; i++)
		if (!PENDING(SYS_IND(ring, cd0 + i, SYS_read, fd, &buf[i], 1)))
			return -1;
	return 0;
}

static void test_two_processes(void **state)
{
	size_t size = syslet_ring_size(16);
	struct syslet_ring *ring;
	int data_p[2], data_c[2], ready[2], go[2], status, seen = 0, i;
	struct timespec ms = { 0, 1000000 };
	pid_t pid;
	char b;

	(void)state;
	ring = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(ring != MAP_FAILED);
	assert_int_equal(syslet_ring_init(ring, 16), 0);
	assert_int_equal(pipe(data_p), 0);
	assert_int_equal(pipe(data_c), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	alarm(WAIT_SECONDS);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (submit(ring, data_c[0], 100) ||
		    write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1 ||
		    write(data_c[1], "abcd", EACH) != EACH || syslet_drain())
			_exit(1);
		_exit(0);
	}
	assert_int_equal(submit(ring, data_p[0], 0), 0);
	assert_int_equal(read(ready[0], &b, 1), 1);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(write(data_p[1], "abcd", EACH), EACH);
	assert_int_equal(syslet_drain(), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Both processes' calls have completed: their completions are due. */
	for (i = 0;
	     i < 2000 && syslet_ring_head(ring) - ring->user_tail < 2 * EACH;
	     i++)
		nanosleep(&ms, NULL);
	while (syslet_ring_head(ring) != ring->user_tail) {
		struct syslet_completion *c =
			syslet_ring_slot(ring, ring->user_tail);

		assert_int_equal((long)c->status, 1);
		seen |= 1
			<< (c->caller_data < 100 ? c->caller_data :
						   c->caller_data - 100 + EACH);
		syslet_ring_advance(ring, 1);
	}
	assert_int_equal(seen, (1 << (2 * EACH)) - 1);
	munmap(ring, size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
