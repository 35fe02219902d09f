/* SPDX-License-Identifier: MIT */
/*
 * Which sanitizer a test is built under, for the tests whose premise a
 * sanitizer's runtime changes (it makes system calls of its own, replaces
 * signal(), cannot follow raw forks): they skip themselves there and say
 * why.
 */
#ifndef SYSLET_TEST_SANITIZER_H
#define SYSLET_TEST_SANITIZER_H

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

#endif /* SYSLET_TEST_SANITIZER_H */
