/* SPDX-License-Identifier: MIT */
/*
 * Fault injection (meson option fault_injection): chosen or seeded-random
 * failures of thread creation, allocation and futex calls. Compiled out of
 * normal builds: syslet__fault() is then a constant false.
 */
#ifndef SYSLET_FAULT_H
#define SYSLET_FAULT_H

#include <stdbool.h>

enum syslet__fault_site {
	SYSLET__FAULT_THREAD, /* pthread_create fails: EAGAIN */
	SYSLET__FAULT_ALLOC, /* an allocation fails: ENOMEM */
	SYSLET__FAULT_FUTEX, /* a futex wait returns at once */
	SYSLET__FAULT_NR_SITES,
};

#ifdef SYSLET_FAULT_INJECTION
bool syslet__fault(enum syslet__fault_site site);
#else
static inline bool syslet__fault(enum syslet__fault_site site)
{
	(void)site;
	return false;
}
#endif

#endif /* SYSLET_FAULT_H */
