/* SPDX-License-Identifier: MIT */
/*
 * Which sanitizer a test is built under, for the tests whose premise a
 * sanitizer's runtime changes (it makes system calls of its own, replaces
 * signal(), cannot follow raw forks), and whether it runs under full-system
 * emulation (tests/cross/init exports SYSLET_EMULATED=1), where real-time
 * bounds are no longer the code's: such tests skip themselves there (exit
 * 77) and say why. A whole registered test that cannot run in a build is
 * skipped by tests/meson.build instead (SYSLET_TEST_SKIP, tests/skip.c).
 */
#ifndef SYSLET_TEST_SANITIZER_H
#define SYSLET_TEST_SANITIZER_H

#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#else
#define UNDER_ASAN 0
#endif
#define UNDER_SANITIZER (UNDER_TSAN || UNDER_ASAN)

/* Under emulation: tests/cross/init exports SYSLET_EMULATED=1. */
static inline int under_emulation(void)
{
	const char *e = getenv("SYSLET_EMULATED");

	return e && strcmp(e, "1") == 0;
}

#endif /* SYSLET_TEST_SANITIZER_H */
