/* SPDX-License-Identifier: MIT */
/*
 * Between the notifier (notify.c) and the SYS_exit trap (exittrap.c).
 * Both act on the calling thread only.
 */
#ifndef SYSLET_NOTIFY_H
#define SYSLET_NOTIFY_H

#include <stdbool.h>

/* True while this thread runs a notifier (async-signal-safe). */
bool syslet__notify_active(void);

/*
 * Leave the running notifier for the worker context that started it; the
 * worker then returns from syslet__notify_run(). Callable from the SIGSYS
 * handler. Only while syslet__notify_active().
 */
_Noreturn void syslet__notify_leave(void);

/*
 * Whether the exit trap is installed on this thread, installing it on
 * first use (so a thread that never called syslet__notify_thread_init()
 * gets it before its first notifier).
 */
bool syslet__exittrap_on(void);

/*
 * Before a notifier, when the trap is on: make sure the SIGSYS handler is
 * still ours (a program may have installed its own since; ours is put
 * back in front of it).
 */
void syslet__exittrap_arm(void);

#endif /* SYSLET_NOTIFY_H */
