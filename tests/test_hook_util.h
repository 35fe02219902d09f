/* SPDX-License-Identifier: MIT */
/*
 * Hooks of the C library for attack tests that interpose its functions
 * (the test executable exports them: export_dynamic in tests/meson.build).
 *
 * REAL(name, decl, var): inside a hook, @var (declared by @decl) is the
 * next definition of @name (dlsym(RTLD_NEXT)), looked up once.
 *
 * NOWIPE_HOOKS(env): defines nowipe() and a madvise() that refuses
 * MADV_WIPEONFORK (EINVAL) when the environment variable @env is "1": a
 * kernel before 4.14. getenv is looked up through REAL, so that a test's
 * own getenv hook does not see it.
 */
#ifndef SYSLET_TEST_HOOK_UTIL_H
#define SYSLET_TEST_HOOK_UTIL_H

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define REAL(name, decl, var)                  \
	static void *_Atomic slot_;            \
	void *sym_ = atomic_load(&slot_);      \
	decl;                                  \
	if (!sym_) {                           \
		sym_ = dlsym(RTLD_NEXT, name); \
		atomic_store(&slot_, sym_);    \
	}                                      \
	memcpy(&var, &sym_, sizeof(var))

#define NOWIPE_HOOKS(env)                                                     \
	static int nowipe(void)                                               \
	{                                                                     \
		REAL("getenv", char *(*real)(const char *), real);            \
		const char *v = real(env);                                    \
                                                                              \
		return v && !strcmp(v, "1");                                  \
	}                                                                     \
                                                                              \
	__attribute__((visibility("default"))) int madvise(void *p, size_t l, \
							   int adv)           \
	{                                                                     \
		REAL("madvise", int (*real)(void *, size_t, int), real);      \
                                                                              \
		if (adv == MADV_WIPEONFORK && nowipe()) {                     \
			errno = EINVAL;                                       \
			return -1;                                            \
		}                                                             \
		return real(p, l, adv);                                       \
	}

#endif /* SYSLET_TEST_HOOK_UTIL_H */
