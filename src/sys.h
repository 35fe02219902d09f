/* SPDX-License-Identifier: MIT */
/*
 * Raw system calls that return the kernel's answer (>= 0 or -errno) and
 * never touch errno: the library's internal convention, and one call
 * cheaper than glibc's syscall(2) on the inline path.
 */
#ifndef SYSLET_SYS_H
#define SYSLET_SYS_H

#if defined(__x86_64__)
static inline long syslet__sys6(long nr, long a1, long a2, long a3, long a4,
				long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
#include <errno.h>
#include <unistd.h>

/* Other architectures: glibc's wrapper, its errno turned back into -errno. */
static inline long syslet__sys6(long nr, long a1, long a2, long a3, long a4,
				long a5, long a6)
{
	int saved = errno;
	long ret = syscall(nr, a1, a2, a3, a4, a5, a6);

	if (ret == -1) {
		ret = -errno;
		errno = saved;
	}
	return ret;
}
#endif

#define syslet__sys0(nr) syslet__sys6(nr, 0, 0, 0, 0, 0, 0)
#define syslet__sys1(nr, a) syslet__sys6(nr, (long)(a), 0, 0, 0, 0, 0)
#define syslet__sys2(nr, a, b) \
	syslet__sys6(nr, (long)(a), (long)(b), 0, 0, 0, 0)
#define syslet__sys3(nr, a, b, c) \
	syslet__sys6(nr, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define syslet__sys4(nr, a, b, c, d) \
	syslet__sys6(nr, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define syslet__sys5(nr, a, b, c, d, e)                              \
	syslet__sys6(nr, (long)(a), (long)(b), (long)(c), (long)(d), \
		     (long)(e), 0)

#endif /* SYSLET_SYS_H */
