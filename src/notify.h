/* SPDX-License-Identifier: MIT */
/*
 * Between the notifier (notify.c) and the syscall() of interpose.c.
 * Both act on the calling thread only.
 */
#ifndef SYSLET_NOTIFY_H
#define SYSLET_NOTIFY_H

#include <stdbool.h>

/* True while this thread runs a notifier (async-signal-safe). */
bool syslet__notify_active(void);

/*
 * Leave the running notifier for the worker context that started it; the
 * worker then returns from syslet__notify_run(). Only while
 * syslet__notify_active().
 */
_Noreturn void syslet__notify_leave(void);

/*
 * True if this thread runs a notifier of this process: a SYS_exit issued
 * now must return to the worker (interpose.c). False in a process forked
 * inside a notifier, whose thread is an ordinary thread.
 */
bool syslet__notify_exit_here(void);

/* A fork child whose atfork handlers did not run (pool.c): start afresh. */
void syslet__notify_forked(void);

#endif /* SYSLET_NOTIFY_H */
