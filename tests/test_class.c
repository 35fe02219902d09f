/* SPDX-License-Identifier: MIT */
/*
 * Description: the class table walks every x86_64 system call number: each
 * number the kernel headers name (plus the 6.5..6.18 ones older headers
 * lack) has a deliberate class, holes are async, thread-bound calls are
 * inline; syslet_set_class/get_class check their arguments and an override
 * takes effect on the next call.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "class.h"
#include "indirect_util.h"

struct named {
	const char *name;
	long nr;
};

/* Generated from <asm/unistd_64.h> at build time (nr_list.h). */
static const struct named header_nrs[] = {
#include "nr_list.h"
};

/* Linux 6.5..6.18 numbers that Debian 12's headers lack. */
static const struct named newer_nrs[] = {
	{ "cachestat", 451 },	      { "fchmodat2", 452 },
	{ "map_shadow_stack", 453 },  { "futex_wake", 454 },
	{ "futex_wait", 455 },	      { "futex_requeue", 456 },
	{ "statmount", 457 },	      { "listmount", 458 },
	{ "lsm_get_self_attr", 459 }, { "lsm_set_self_attr", 460 },
	{ "lsm_list_modules", 461 },  { "mseal", 462 },
	{ "setxattrat", 463 },	      { "getxattrat", 464 },
	{ "listxattrat", 465 },	      { "removexattrat", 466 },
	{ "open_tree_attr", 467 },    { "file_getattr", 468 },
	{ "file_setattr", 469 },
};

static int named_nr(long nr)
{
	size_t i;

	for (i = 0; i < sizeof(header_nrs) / sizeof(header_nrs[0]); i++)
		if (header_nrs[i].nr == nr)
			return 1;
	for (i = 0; i < sizeof(newer_nrs) / sizeof(newer_nrs[0]); i++)
		if (newer_nrs[i].nr == nr)
			return 1;
	return 0;
}

static void test_walk_every_number(void **state)
{
	long nr, named = 0, holes = 0, highest = 0;
	unsigned int kind;
	size_t i;
	int cls;

	(void)state;
	for (i = 0; i < sizeof(header_nrs) / sizeof(header_nrs[0]); i++)
		if (header_nrs[i].nr > highest)
			highest = header_nrs[i].nr;
	assert_true(highest >= 450);
	assert_int_equal(syslet__nr_highest, 469);
	for (nr = 0; nr <= syslet__nr_highest; nr++) {
		kind = syslet__kind_default(nr);
		cls = syslet_get_class(nr);
		if (named_nr(nr)) {
			if (kind == SK_UNKNOWN)
				fail_msg("syscall %ld has no class", nr);
			assert_true(kind < SK_NR_KINDS);
			named++;
		} else {
			/* never assigned on x86_64: unknown, async */
			assert_int_equal(kind, SK_UNKNOWN);
			assert_true(nr >= 335 && nr <= 423);
			holes++;
		}
		assert_true(cls == SYSLET_CLASS_INLINE ||
			    cls == SYSLET_CLASS_TRY ||
			    cls == SYSLET_CLASS_ASYNC);
	}
	assert_int_equal(holes, 423 - 335 + 1);
	assert_int_equal(named, syslet__nr_highest + 1 - holes);
	/* beyond: no entry, async, up to the limit */
	for (nr = syslet__nr_highest + 1; nr < SYSLET__NR_LIMIT; nr++) {
		assert_int_equal(syslet__kind_default(nr), SK_UNKNOWN);
		assert_int_equal(syslet_get_class(nr), SYSLET_CLASS_ASYNC);
	}
}

static void test_thread_bound_inline(void **state)
{
	static const long nrs[] = {
		SYS_gettid,
		SYS_rt_sigprocmask,
		SYS_rt_sigsuspend,
		SYS_sigaltstack,
		SYS_sched_setaffinity,
		SYS_prctl,
		SYS_arch_prctl,
		SYS_setns,
		SYS_unshare,
		SYS_seccomp,
		SYS_capset,
		SYS_setuid,
		SYS_setresuid,
		SYS_setgroups,
		SYS_set_robust_list,
		SYS_set_tid_address,
		SYS_rseq,
		SYS_exit,
		SYS_clone,
		SYS_clone3,
		SYS_fork,
		SYS_vfork,
		SYS_execve,
		SYS_execveat,
		SYS_pause,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		assert_int_equal(syslet_get_class(nrs[i]), SYSLET_CLASS_INLINE);
}

static void test_examples_of_spec(void **state)
{
	static const long try_nrs[] = {
		SYS_read,    SYS_pread64,	  SYS_readv,	   SYS_preadv,
		SYS_preadv2, SYS_write,		  SYS_pwritev2,	   SYS_sendto,
		SYS_recvmsg, SYS_openat,	  SYS_poll,	   SYS_select,
		SYS_ppoll,   SYS_epoll_wait,	  SYS_epoll_pwait, SYS_wait4,
		SYS_waitid,  SYS_futex,		  SYS_nanosleep,   SYS_accept,
		SYS_connect, SYS_clock_nanosleep,
	};
	static const long async_nrs[] = {
		SYS_fsync,  SYS_fdatasync,  SYS_fallocate, SYS_rename,
		SYS_unlink, SYS_getdents64, SYS_creat,	   SYS_sendfile,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(try_nrs) / sizeof(try_nrs[0]); i++)
		assert_int_equal(syslet_get_class(try_nrs[i]),
				 SYSLET_CLASS_TRY);
	for (i = 0; i < sizeof(async_nrs) / sizeof(async_nrs[0]); i++)
		assert_int_equal(syslet_get_class(async_nrs[i]),
				 SYSLET_CLASS_ASYNC);
	assert_int_equal(syslet_get_class(SYS_getpid), SYSLET_CLASS_INLINE);
}

static void test_set_get_errors(void **state)
{
	(void)state;
	errno = 0;
	assert_int_equal(syslet_get_class(-1), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_get_class(SYSLET__NR_LIMIT), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_set_class(-1, SYSLET_CLASS_ASYNC), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_set_class(SYSLET__NR_LIMIT, SYSLET_CLASS_ASYNC),
			 -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_set_class(SYS_getpid, (enum syslet_class)0),
			 -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(syslet_set_class(SYS_getpid, (enum syslet_class)4),
			 -1);
	assert_int_equal(errno, EINVAL);
	/* TRY only where a strategy exists */
	errno = 0;
	assert_int_equal(syslet_set_class(SYS_fsync, SYSLET_CLASS_TRY), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(syslet_get_class(SYS_fsync), SYSLET_CLASS_ASYNC);
	assert_int_equal(syslet_get_class(SYS_getpid), SYSLET_CLASS_INLINE);
}

static void test_override_takes_effect(void **state)
{
	struct syslet_ring *ring = ring_new(4);
	struct syslet_completion c;
	long r, me = syscall(SYS_gettid);

	(void)state;
	/* gettid inline answers the caller's id */
	assert_int_equal(SYS_IND(ring, 0, SYS_gettid), me);
	/* made async, it runs on a worker: another thread's id */
	assert_int_equal(syslet_set_class(SYS_gettid, SYSLET_CLASS_ASYNC), 0);
	assert_int_equal(syslet_get_class(SYS_gettid), SYSLET_CLASS_ASYNC);
	r = SYS_IND(ring, 1, SYS_gettid);
	assert_true(PENDING(r));
	c = ring_pop(ring);
	assert_true((long)c.status > 0 && (long)c.status != me);
	assert_int_equal(syslet_set_class(SYS_gettid, SYSLET_CLASS_INLINE), 0);
	assert_int_equal(SYS_IND(ring, 0, SYS_gettid), me);
	/* read made inline then back to its try strategy */
	assert_int_equal(syslet_set_class(SYS_read, SYSLET_CLASS_INLINE), 0);
	assert_int_equal(syslet__kind(SYS_read), SK_INLINE);
	assert_int_equal(syslet_set_class(SYS_read, SYSLET_CLASS_TRY), 0);
	assert_int_equal(syslet__kind(SYS_read), SK_READ);
	assert_int_equal(syslet_drain(), 0);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_every_number),
		cmocka_unit_test(test_thread_bound_inline),
		cmocka_unit_test(test_examples_of_spec),
		cmocka_unit_test(test_set_get_errors),
		cmocka_unit_test(test_override_takes_effect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
