/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: submitter credentials (SPEC 5), as root: a call queued
 * unprivileged and run after seteuid(0)/setgroups does not run as root nor
 * with the new groups; a call queued as root and run after a temporary
 * drop (seteuid) runs as root, as its submitter was; one run after a drop
 * for good (no way back to root) fails with EPERM and does not run. Each
 * case runs in a child whose pool has one worker, held by a blocking call
 * so that the credentials change between submit and run.
 */
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_pool_util.h"

#define NOBODY 65534
#define GROUP 4242

static char dir[] = "/tmp/syslet-creds-XXXXXX";
static char secret[64], grpfile[64];

static int setup(void **state)
{
	int fd;

	(void)state;
	if (geteuid())
		return 0;
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return -1;
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	snprintf(grpfile, sizeof(grpfile), "%s/group", dir);
	fd = open(secret, O_CREAT | O_WRONLY, 0600);
	if (fd < 0 || close(fd))
		return -1;
	fd = open(grpfile, O_CREAT | O_WRONLY, 0040);
	if (fd < 0 || close(fd) || chown(grpfile, 0, GROUP) ||
	    chmod(grpfile, 0040))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (geteuid())
		return 0;
	unlink(secret);
	unlink(grpfile);
	rmdir(dir);
	return 0;
}

static struct syslet_ring *ring;
static int gate[2];
static char gate_byte;

/* A child with a one-worker pool, that worker blocked on the gate. */
static void hold_worker(void)
{
	struct syslet_stats st;

	ring = ring_new(8);
	CHECK(ring && !pipe(gate));
	CHECK(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1));
	CHECK(!submit(ring, SYS_read, gate[0], (long)&gate_byte, 1, 1));
	CHECK(WAIT_STATS(st, queued_total(&st) == 0));
}

/* Open the gate; return the status of the call queued behind it. */
static long release(void)
{
	struct syslet_completion c = { 0 };
	long status = 0;
	int i;

	CHECK(write(gate[1], "g", 1) == 1);
	for (i = 0; i < 2; i++) {
		CHECK(!reap_one(ring, &c));
		if (c.caller_data == 2)
			status = (long)c.status;
	}
	return status;
}

static void run_child(int (*fn)(void))
{
	int st;
	pid_t pid;

	if (geteuid())
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(fn());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static int gain_child(void)
{
	struct syslet_completion c;

	hold_worker();
	CHECK(!seteuid(NOBODY));
	CHECK(!submit(ring, SYS_openat, AT_FDCWD, (long)secret, O_RDONLY, 2));
	CHECK(!seteuid(0));
	/* Queued as nobody, run while the process is root again. */
	CHECK(release() == -EACCES);
	/* The pool goes on, and a call submitted as root runs as root. */
	CHECK(!submit(ring, SYS_openat, AT_FDCWD, (long)secret, O_RDONLY, 3));
	CHECK(!reap_one(ring, &c) && (long)c.status >= 0);
	return 0;
}

static void test_gain(void **state)
{
	(void)state;
	run_child(gain_child);
}

static int groups_child(void)
{
	const gid_t g = GROUP;
	int fd;

	/* Control: nobody with the group may read the file. */
	CHECK(!setgroups(1, &g) && !seteuid(NOBODY));
	fd = open(grpfile, O_RDONLY);
	CHECK(fd >= 0 && !close(fd));
	CHECK(!seteuid(0));

	hold_worker();
	CHECK(!setgroups(0, NULL) && !setegid(NOBODY) && !seteuid(NOBODY));
	CHECK(!submit(ring, SYS_openat, AT_FDCWD, (long)grpfile, O_RDONLY, 2));
	CHECK(!seteuid(0) && !setegid(0) && !setgroups(1, &g));
	/* Run while the process is root with the group: neither applies. */
	CHECK(release() == -EACCES);
	return 0;
}

static void test_groups(void **state)
{
	(void)state;
	run_child(groups_child);
}

static int drop_child(void)
{
	long r;

	hold_worker();
	CHECK(!submit(ring, SYS_openat, AT_FDCWD, (long)secret, O_RDONLY, 2));
	CHECK(!seteuid(NOBODY));
	/* Queued as root, run after a temporary drop: runs as root. */
	r = release();
	CHECK(r >= 0 && !close((int)r));
	CHECK(!seteuid(0));
	return 0;
}

static int drop_for_good_child(void)
{
	hold_worker();
	CHECK(!submit(ring, SYS_openat, AT_FDCWD, (long)secret, O_RDONLY, 2));
	CHECK(!setresuid(NOBODY, NOBODY, NOBODY));
	/* Queued as root, run when root is out of reach: EPERM, not run. */
	CHECK(release() == -EPERM);
	return 0;
}

static void test_drop_for_good(void **state)
{
	(void)state;
	run_child(drop_for_good_child);
}

static void test_drop(void **state)
{
	(void)state;
	run_child(drop_child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gain),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_drop_for_good),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
