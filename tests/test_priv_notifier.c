/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a notifier runs with its submitter's credentials (issue 10
 * attacked from outside). A thread drops to uid 65534 by a raw per-thread
 * setresuid and punts a call with a notifier; the notifier (the program's
 * code, run on the worker) must not be root: its fsuid and euid are
 * 65534 and it cannot mkdir in a root-only 0700 directory, as the thread
 * itself cannot. In 2007 the notifier ran in the task that made the call,
 * a clone of the submitter, with its credentials.
 *
 * The bug it found: worker.c's run() switched back (syslet__creds_leave)
 * before notify(), so the notifier ran with the worker's own (root)
 * credentials; it now switches back after the notifier.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "test_priv_util.h"

#define NOBODY 65534
#define STACK_SIZE (64 * 1024)

static char dir[] = "/tmp/syslet-privntf-XXXXXX";
static char target[64];
static char nstack[STACK_SIZE] __attribute__((aligned(16)));
static _Atomic long seen_fsuid = -1, seen_euid = -1, seen_mkdir = 1;
static _Atomic int seen;

static void look(void)
{
	atomic_store(&seen_fsuid, syscall(SYS_setfsuid, -1));
	atomic_store(&seen_euid, syscall(SYS_geteuid));
	atomic_store(&seen_mkdir, mkdir(target, 0700) ? -errno : 0);
	atomic_store(&seen, 1);
}

static void *nobody_thread(void *arg)
{
	struct syslet_ring *ring = ring_new(64);
	union indirect_params p;
	struct indirect_registers r;
	struct timespec ts = { 0, 1000000 };
	int i;

	(void)arg;
	CHECK(!syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY));
	CHECK(mkdir(target, 0700) == -1 && errno == EACCES);
	params_for(&p, ring, 1);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)look;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(nstack + STACK_SIZE);
	FILL_IN(r, SYS_fdatasync, -1);
	CHECK(indirect(&r, &p, sizeof(p), 0) == -1 && errno == ESYSLETPENDING);
	CHECK((long)ring_pop(ring).status == -EBADF);
	/* Bounded: the notifier follows the completion. */
	for (i = 0; i < WAIT_SECONDS * 1000 && !atomic_load(&seen); i++)
		nanosleep(&ts, NULL);
	CHECK(atomic_load(&seen));
	CHECK(atomic_load(&seen_fsuid) == NOBODY);
	CHECK(atomic_load(&seen_euid) == NOBODY);
	CHECK(atomic_load(&seen_mkdir) == -EACCES);
	return NULL;
}

static int child(void)
{
	struct syslet_ring *ring = ring_new(64);
	pthread_t t;

	/* The pool starts from this root thread. */
	CHECK(PENDING(SYS_IND(ring, 1, SYS_fdatasync, -1)));
	CHECK((long)ring_pop(ring).status == -EBADF);
	CHECK(!pthread_create(&t, NULL, nobody_thread, NULL));
	CHECK(!pthread_join(t, NULL));
	return 0;
}

static void test_notifier_credentials(void **state)
{
	(void)state;
	run_child(child);
}

static int setup(void **state)
{
	(void)state;
	if (priv_dir_setup(dir))
		return -1;
	snprintf(target, sizeof(target), "%s/n", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return priv_dir_teardown(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notifier_credentials),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
