/* SPDX-License-Identifier: MIT */
/* Small shared helpers: visibility, branch hints, raw syscalls. */
#ifndef SYSLET_COMPILER_H
#define SYSLET_COMPILER_H

#define SYSLET_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define SYSLET_CACHELINE 64

/*
 * Thread-local data of the library: initial-exec, so that an access is one
 * %fs-relative load instead of a __tls_get_addr() call (a few ns on every
 * inline call). The library's few words fit glibc's surplus static TLS even
 * when it is dlopen()ed.
 */
#define SYSLET_TLS _Thread_local __attribute__((tls_model("initial-exec")))

#include <stdatomic.h>

/*
 * A pause in a polling loop: lets the sibling hardware thread run (x86
 * pause, arm yield, POWER's "or 27,27,27" yield hint, as glibc spins).
 */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#elif defined(__powerpc64__)
	__asm__ volatile("or 27,27,27" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif /* SYSLET_COMPILER_H */
