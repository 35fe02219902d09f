/* SPDX-License-Identifier: MIT */
/*
 * The class of every system call number (SPEC 3) and the per-number
 * override of syslet_set_class() (Extension).
 *
 * Shared state: syslet__kinds[], see class.h. syslet_set_class() stores one
 * relaxed byte; indirect() loads one relaxed byte. Two overrides of the same
 * number race like two stores: the last one wins.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>

#include <syslet/syslet.h>

#include "class.h"
#include "compiler.h"

#if defined(__x86_64__)
_Atomic uint8_t syslet__kinds[SYSLET__NR_LIMIT] = {
#include "class_x86_64.h"
};
static const uint8_t defaults[SYSLET__NR_LIMIT] = {
#include "class_x86_64.h"
};
#elif defined(__aarch64__) || \
	(defined(__powerpc64__) && defined(__LITTLE_ENDIAN__))
/* Generated at build time by gen_class.py (see meson.build). */
_Atomic uint8_t syslet__kinds[SYSLET__NR_LIMIT] = {
#include "class_table.h"
};
static const uint8_t defaults[SYSLET__NR_LIMIT] = {
#include "class_table.h"
};
#else
#error "libsyslet: no class table for this architecture yet"
#endif
const long syslet__nr_highest = SYSLET__NR_HIGHEST;

unsigned int syslet__kind_default(long nr)
{
	return nr >= 0 && nr < SYSLET__NR_LIMIT ? defaults[nr] : SK_UNKNOWN;
}

static int fail(int e)
{
	errno = e;
	return -1;
}

/*
 * Making a number inline runs it on the caller (it may then block there);
 * async always punts it. TRY needs a strategy, so it is only accepted for a
 * number whose table entry has one, and restores that entry. Nothing is
 * forbidden beyond that: a program that makes a thread-bound call async
 * gets what it asked for (the call acts on a worker thread), as documented
 * in syslet_set_class(3).
 */
SYSLET_EXPORT int syslet_set_class(long nr, enum syslet_class cls)
{
	uint8_t kind;

	if (nr < 0 || nr >= SYSLET__NR_LIMIT)
		return fail(EINVAL);
	/*
	 * fork, clone, credentials: only indirect.c may run them (SPEC 3).
	 * exit on a worker would end the worker, not the caller, and leave
	 * its call without a completion.
	 */
	if (defaults[nr] == SK_PROC || nr == SYS_exit)
		return cls == SYSLET_CLASS_INLINE ? 0 : fail(EINVAL);
	switch (cls) {
	case SYSLET_CLASS_INLINE:
		kind = defaults[nr] == SK_INLINE_FD ? SK_INLINE_FD : SK_INLINE;
		break;
	case SYSLET_CLASS_ASYNC:
		kind = SK_ASYNC;
		break;
	case SYSLET_CLASS_TRY:
		kind = defaults[nr];
		if (kind < SK_READ)
			return fail(EINVAL);
		break;
	default:
		return fail(EINVAL);
	}
	atomic_store_explicit(&syslet__kinds[nr], kind, memory_order_relaxed);
	return 0;
}

SYSLET_EXPORT int syslet_get_class(long nr)
{
	unsigned int kind;

	if (nr < 0 || nr >= SYSLET__NR_LIMIT)
		return fail(EINVAL);
	kind = syslet__kind((unsigned long)nr);
	if (kind == SK_INLINE || kind == SK_INLINE_FD || kind == SK_PROC)
		return SYSLET_CLASS_INLINE;
	if (kind == SK_ASYNC || kind == SK_UNKNOWN)
		return SYSLET_CLASS_ASYNC;
	return SYSLET_CLASS_TRY;
}
