/* SPDX-License-Identifier: MIT */
/* Fork detection on the punt path (forked.c). */
#ifndef SYSLET_FORKED_H
#define SYSLET_FORKED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"

/* True once set up, in a process whose pool state is its own. */
bool syslet__forked_ready(void);

/* Set up, or reset the pool of a child forked without atfork handlers. */
void syslet__forked_slow(void);

/* The library's onces: a raw fork leaves no initialisation stuck. */
enum syslet__once_id {
	SYSLET__ONCE_POOL,
	SYSLET__ONCE_FORKED,
	SYSLET__ONCE_TALLY, /* stats.c */
	SYSLET__ONCE_CONFIG,
	SYSLET__ONCE_NOTIFY,
	SYSLET__ONCE_CANCEL_SLOT,
	SYSLET__ONCE_N
};

/* A once's word (forked.c); read here only for the fast path. */
enum { SYSLET__ONCE_NOT_RUN, SYSLET__ONCE_RUNNING, SYSLET__ONCE_DONE };
extern _Atomic uint32_t syslet__once_words[SYSLET__ONCE_N];

void syslet__once_slow(enum syslet__once_id id, void (*fn)(void));

/* Run @fn once per process (pthread_once() survives glibc's fork only). */
static inline void syslet__once(enum syslet__once_id id, void (*fn)(void))
{
	/* Acquire: pairs with the runner's release, for @fn's writes. */
	if (likely(atomic_load_explicit(&syslet__once_words[id],
					memory_order_acquire) ==
		   SYSLET__ONCE_DONE))
		return;
	syslet__once_slow(id, fn);
}

/* Before a punt: a child forked by any means gets a fresh pool. */
static inline void syslet__forked_check(void)
{
	if (unlikely(!syslet__forked_ready()))
		syslet__forked_slow();
}

#endif /* SYSLET_FORKED_H */
