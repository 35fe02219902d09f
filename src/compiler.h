/* SPDX-License-Identifier: MIT */
/* Small shared helpers: visibility, branch hints, raw syscalls. */
#ifndef SYSLET_COMPILER_H
#define SYSLET_COMPILER_H

#define SYSLET_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define SYSLET_CACHELINE 64

#endif /* SYSLET_COMPILER_H */
