/* SPDX-License-Identifier: MIT */
/*
 * Set-up and tear-down shared by the tests that run calls on files in a
 * real directory (test_try, test_same_result, test_same_strategies): a
 * fresh directory under $SYSLET_TEST_DIR (/var/tmp by default, a disk
 * rather than tmpfs) and a ring of 64 completions; at the end the pool
 * drained, the ring freed and the directory removed with all in it.
 * Include after <cmocka.h> and indirect_util.h.
 */
#ifndef SYSLET_TEST_DIR_UTIL_H
#define SYSLET_TEST_DIR_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include <syslet/syslet.h>

/*
 * Make the directory $SYSLET_TEST_DIR/@name-XXXXXX, its path in @dir of
 * @size, and a ring in *@ring; 0, or -1 if the directory is not made.
 */
static inline int dir_ring_setup(char *dir, size_t size, const char *name,
				 struct syslet_ring **ring)
{
	const char *base = getenv("SYSLET_TEST_DIR");

	snprintf(dir, size, "%s/%s-XXXXXX", base ? base : "/var/tmp", name);
	if (!mkdtemp(dir))
		return -1;
	*ring = ring_new(64);
	return 0;
}

/* Drain the pool, free @ring, remove @dir; 0, or system()'s failure. */
static inline int dir_ring_teardown(const char *dir, struct syslet_ring *ring)
{
	char cmd[300];

	syslet_drain();
	free(ring);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

#endif /* SYSLET_TEST_DIR_UTIL_H */
