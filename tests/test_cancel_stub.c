/* SPDX-License-Identifier: MIT */
/*
 * Description: white-box test of cancel.c's answer to the classic race
 * (a cancel signal landing after the flag check, before the syscall
 * instruction): the stub returns -ECANCELED without entering the kernel
 * when its flag is set and makes the call when it is clear or absent; the
 * handler's step moves a context stopped anywhere from the flag check up
 * to the syscall instruction to the stub's exit, only with the flag set,
 * and leaves a context after the syscall instruction (the kernel's answer
 * stands) or outside the stub alone; the exit answers -ECANCELED.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>

#include "cancel.h"

#if SYSLET__CP_STUB
static uintptr_t step_at(uintptr_t pc)
{
	ucontext_t uc;

	memset(&uc, 0, sizeof(uc));
	SYSLET__CP_PC(&uc) = pc;
	syslet__cancel_step(&uc);
	return (uintptr_t)SYSLET__CP_PC(&uc);
}
#endif

static void test_stub(void **state)
{
	_Atomic int flag = 0;
	long pg = sysconf(_SC_PAGESIZE), m; /* 64 KiB on ppc64le */
	char *page = malloc((size_t)pg);
	int fd;

	(void)state;
	assert_int_equal(syslet__cp_syscall(NULL, SYS_getpid, 0, 0, 0, 0, 0, 0),
			 getpid());
	assert_int_equal(syslet__cp_syscall(&flag, SYS_getpid, 0, 0, 0, 0, 0,
					    0),
			 getpid());
	flag = 1;
	assert_int_equal(syslet__cp_syscall(&flag, SYS_getpid, 0, 0, 0, 0, 0,
					    0),
			 -ECANCELED);
	/* Six arguments reach the kernel in their registers: an mmap. */
	flag = 0;
	fd = memfd_create("stub", 0);
	assert_true(fd >= 0);
	assert_non_null(page);
	memset(page, 'A', (size_t)pg);
	assert_int_equal(write(fd, page, (size_t)pg), pg);
	memset(page, 'B', (size_t)pg);
	assert_int_equal(write(fd, page, (size_t)pg), pg);
	m = syslet__cp_syscall(&flag, SYS_mmap, 0, pg, PROT_READ, MAP_SHARED,
			       fd, pg);
	assert_true(m > 0);
	assert_int_equal(*(const char *)m, 'B');
	munmap((void *)m, (size_t)pg);
	close(fd);
	free(page);
	/* The kernel's errors come back as -errno (ppc64le: cr0.SO). */
	assert_int_equal(syslet__cp_syscall(&flag, SYS_close, -1, 0, 0, 0, 0,
					    0),
			 -EBADF);
	assert_int_equal(syslet__cp_syscall(NULL, SYS_close, -1, 0, 0, 0, 0, 0),
			 -EBADF);
}

#if SYSLET__CP_STUB
static void test_step(void **state)
{
	uintptr_t begin = (uintptr_t)syslet__cp_begin;
	uintptr_t end = (uintptr_t)syslet__cp_end;
	uintptr_t out = (uintptr_t)syslet__cp_cancel;
	_Atomic int flag = 0;
	uintptr_t pc;

	(void)state;
	assert_true(begin < end && end < out);
	/* No call running on this thread: nothing moves. */
	syslet__cp_flag = NULL;
	assert_true(step_at(begin) == begin);
	syslet__cp_flag = &flag;
	/* A call running, not cancelled: nothing moves. */
	for (pc = begin; pc < end; pc++)
		assert_true(step_at(pc) == pc);
	/* Cancelled: anywhere before the kernel, out; after it, stay. */
	flag = 1;
	for (pc = begin; pc < end; pc++)
		assert_true(step_at(pc) == out);
	assert_true(step_at(end) == end);
	assert_true(step_at(end + 1) == end + 1);
	assert_true(step_at(begin - 1) == begin - 1);
	assert_true(step_at((uintptr_t)test_step) == (uintptr_t)test_step);
	syslet__cp_flag = NULL;
}

/* Where the step sends a thread: an exit that answers -ECANCELED. */
static void test_exit_label(void **state)
{
	long (*exit_at)(void) = (long (*)(void))(uintptr_t)syslet__cp_cancel;

	(void)state;
	assert_int_equal(exit_at(), -ECANCELED);
}
#else
/* Elsewhere the C fallback has no stub to step (cancel.h): skipped. */
static void test_step(void **state)
{
	(void)state;
	skip();
}

static void test_exit_label(void **state)
{
	(void)state;
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stub),
		cmocka_unit_test(test_step),
		cmocka_unit_test(test_exit_label),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
