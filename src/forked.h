/* SPDX-License-Identifier: MIT */
/* Fork detection on the punt path (forked.c). */
#ifndef SYSLET_FORKED_H
#define SYSLET_FORKED_H

#include <stdbool.h>

#include "compiler.h"

/* True once set up, in a process whose pool state is its own. */
bool syslet__forked_ready(void);

/* Set up, or reset the pool of a child forked without atfork handlers. */
void syslet__forked_slow(void);

/* The library's onces: a raw fork leaves no initialisation stuck. */
enum syslet__once_id { SYSLET__ONCE_POOL, SYSLET__ONCE_FORKED, SYSLET__ONCE_N };

/* Run @fn once per process (pthread_once() survives glibc's fork only). */
void syslet__once(enum syslet__once_id id, void (*fn)(void));

/* Before a punt: a child forked by any means gets a fresh pool. */
static inline void syslet__forked_check(void)
{
	if (unlikely(!syslet__forked_ready()))
		syslet__forked_slow();
}

#endif /* SYSLET_FORKED_H */
