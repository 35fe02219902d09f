/* SPDX-License-Identifier: MIT */
/*
 * Description: the class table walks every system call number of the
 * architecture (x86_64, aarch64, ppc64le): each number the kernel headers
 * name (plus the 6.5..6.18 ones older headers lack) has a deliberate class,
 * holes are async, thread-bound calls are inline, each architecture's own
 * calls have the class their table gives; syslet_set_class/get_class check
 * their arguments and an override takes effect on the next call.
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

/* Generated from <asm/unistd.h> at build time (nr_list.h). */
static const struct named header_nrs[] = {
#include "nr_list.h"
};

/* Linux 6.5..6.18 numbers that Debian 12's headers lack (the same on
 * every architecture since 424). */
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

/*
 * The numbers each architecture leaves unassigned below 469, from its
 * kernel's syscall table: the walk checks that the headers agree.
 */
#if defined(__x86_64__)
static const long holes[][2] = { { 335, 423 } };
#define HOLES (423 - 335 + 1)
#elif defined(__aarch64__)
/* 244 is __NR_arch_specific_syscall, a base no arm64 call uses */
static const long holes[][2] = { { 244, 259 }, { 295, 423 } };
#define HOLES (259 - 244 + 1 + 423 - 295 + 1)
#elif defined(__powerpc64__)
static const long holes[][2] = { { 192, 197 }, { 204, 204 }, { 224, 224 },
				 { 226, 226 }, { 254, 254 }, { 257, 257 },
				 { 366, 377 }, { 389, 391 }, { 403, 423 },
				 { 447, 447 } };
#define HOLES (6 + 1 + 1 + 1 + 1 + 1 + 12 + 3 + 21 + 1)
#endif

static int in_hole(long nr)
{
	size_t i;

	for (i = 0; i < sizeof(holes) / sizeof(holes[0]); i++)
		if (nr >= holes[i][0] && nr <= holes[i][1])
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
	/* every number the headers name is below the table's limit */
	assert_true(highest < SYSLET__NR_LIMIT);
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
			/* never assigned here: unknown, async */
			assert_int_equal(kind, SK_UNKNOWN);
			assert_true(in_hole(nr));
			holes++;
		}
		assert_true(cls == SYSLET_CLASS_INLINE ||
			    cls == SYSLET_CLASS_TRY ||
			    cls == SYSLET_CLASS_ASYNC);
	}
	assert_int_equal(holes, HOLES);
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
#ifdef SYS_arch_prctl
		SYS_arch_prctl,
#endif
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
#ifdef SYS_fork /* aarch64: clone only */
		SYS_fork,
		SYS_vfork,
		SYS_pause,
#endif
		SYS_execve,
		SYS_execveat,
#ifdef SYS_switch_endian /* ppc64: the calling thread's byte order */
		SYS_switch_endian,
		SYS_swapcontext,
		SYS_sigprocmask,
		SYS_sigaction,
#endif
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		assert_int_equal(syslet_get_class(nrs[i]), SYSLET_CLASS_INLINE);
}

static void test_examples_of_spec(void **state)
{
	static const long try_nrs[] = {
		SYS_read,
		SYS_pread64,
		SYS_readv,
		SYS_preadv,
		SYS_preadv2,
		SYS_write,
		SYS_pwritev2,
		SYS_sendto,
		SYS_recvmsg,
		SYS_openat,
		SYS_ppoll,
		SYS_epoll_pwait,
		SYS_wait4,
		SYS_waitid,
		SYS_futex,
		SYS_nanosleep,
		SYS_accept,
		SYS_connect,
		SYS_clock_nanosleep,
		SYS_pselect6,
#ifdef SYS_poll /* aarch64 has none of these */
		SYS_poll,
		SYS_epoll_wait,
#endif
#ifdef SYS__newselect /* ppc64: 82 "select" is sys_ni_syscall */
		SYS__newselect,
#elif defined(SYS_select)
		SYS_select,
#endif
	};
	static const long async_nrs[] = {
		SYS_fsync,	SYS_fdatasync, SYS_fallocate,
		SYS_renameat,	SYS_unlinkat,  SYS_getdents64,
		SYS_sendfile,
#ifdef SYS_creat /* aarch64 has none of these */
		SYS_rename,	SYS_unlink,    SYS_creat,
#endif
#ifdef SYS_socketcall /* ppc64's multiplexers */
		SYS_socketcall, SYS_ipc,       SYS_sync_file_range2,
#endif
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
#ifdef SYS__llseek
	assert_int_equal(syslet_get_class(SYS__llseek), SYSLET_CLASS_INLINE);
	assert_int_equal(syslet_get_class(SYS_select), SYSLET_CLASS_INLINE);
#endif
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
