/* SPDX-License-Identifier: MIT */
/*
 * Raw system calls that return the kernel's answer (>= 0 or -errno) and
 * never touch errno: the library's internal convention, and one call
 * cheaper than glibc's syscall(2) on the inline path.
 */
#ifndef SYSLET_SYS_H
#define SYSLET_SYS_H

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

/* The most one read or write moves (the kernel's MAX_RW_COUNT). */
#define MAX_RW_COUNT (0x7fffffffL & ~4095L)

/* The bytes @cnt iovecs at @iov ask for, as the kernel caps them. */
static inline long syslet__iov_total(const struct iovec *iov, long cnt)
{
	long i, n = 0;

	for (i = 0; i < cnt && n < MAX_RW_COUNT; i++)
		n += (long)iov[i].iov_len;
	return n < MAX_RW_COUNT ? n : MAX_RW_COUNT;
}

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
#elif defined(__aarch64__)
static inline long syslet__sys6(long nr, long a1, long a2, long a3, long a4,
				long a5, long a6)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#elif defined(__powerpc64__)
/*
 * sc: number in r0, arguments in r3..r8, the answer in r3 with cr0.SO set
 * on error (r3 is then the positive errno: negated here). The kernel may
 * change r0, r4..r12, ctr, xer and cr0 (glibc's list, plus cr1/cr5-7).
 */
static inline long syslet__sys6(long nr, long a1, long a2, long a3, long a4,
				long a5, long a6)
{
	register long r0 __asm__("r0") = nr;
	register long r3 __asm__("r3") = a1;
	register long r4 __asm__("r4") = a2;
	register long r5 __asm__("r5") = a3;
	register long r6 __asm__("r6") = a4;
	register long r7 __asm__("r7") = a5;
	register long r8 __asm__("r8") = a6;

	__asm__ volatile("sc\n\t"
			 "bns+ 1f\n\t"
			 "neg %1, %1\n"
			 "1:"
			 : "+r"(r0), "+r"(r3), "+r"(r4), "+r"(r5), "+r"(r6),
			   "+r"(r7), "+r"(r8)
			 :
			 : "r9", "r10", "r11", "r12", "cr0", "cr1", "cr5",
			   "cr6", "cr7", "ctr", "xer", "memory");
	return r3;
}
#else
#error "libsyslet: no raw system call for this architecture yet"
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

/*
 * File @path (a /proc text), NUL-terminated, into @buf of @n by raw system
 * calls (no allocation, safe in a handler or a fork child): its length, or
 * -1 if it could not be opened. A length of @n - 1 may be a cut text.
 */
static inline long syslet__slurp(const char *path, char *buf, long n)
{
	long len = 0, r;
	long fd = syslet__sys4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC,
			       0);

	if (fd < 0)
		return -1;
	while (len < n - 1 &&
	       (r = syslet__sys3(SYS_read, fd, buf + len, n - 1 - len)) > 0)
		len += r;
	syslet__sys1(SYS_close, fd);
	buf[len] = 0;
	return len;
}

#endif /* SYSLET_SYS_H */
