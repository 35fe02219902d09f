/* SPDX-License-Identifier: MIT */
/*
 * Submitter credentials carried by a job (SPEC 5): a punted call runs with
 * the credentials its submitter had when it submitted it, or fails with
 * EPERM without running. Design and limits: creds.c.
 */
#ifndef SYSLET_CREDS_H
#define SYSLET_CREDS_H

#include <stdbool.h>
#include <sys/types.h>

/* One thread's credentials at one time: immutable, shared by reference. */
struct syslet__credset;

struct syslet__creds {
	struct syslet__credset *set; /* a reference; NULL: unknown */
};

/*
 * On the submitter, punt path only: take a reference to this thread's
 * credentials (a snapshot re-read only when something may have changed
 * them). Never fails: an unreadable state is recorded as NULL, and the
 * worker then answers EPERM.
 */
void syslet__creds_record(struct syslet__creds *c);

/* What a worker switched for a job goes back to. */
struct syslet__creds_saved {
	struct syslet__credset *back; /* the worker's own (its reference) */
	unsigned long gen; /* syslet__creds_gen when it switched */
};

/*
 * On a worker, before running a job submitted with @c (whose reference it
 * consumes): 0 if the thread already has those credentials, 1 if it
 * switched to them (call syslet__creds_leave() after the call), -EPERM if
 * it cannot reach them: the call must not run and the thread, perhaps
 * half switched, must retire.
 */
int syslet__creds_enter(struct syslet__creds *c,
			struct syslet__creds_saved *old);

/*
 * Switch back after a switched job: 0, or -errno: the thread must retire
 * (it could not switch back, or a glibc set*id broadcast reached it while
 * it was switched, so its own credentials are no longer known).
 */
int syslet__creds_leave(struct syslet__creds_saved *old);

/*
 * Whether this thread shares the thread-group leader's fs_struct (root,
 * working directory, mount namespace): spawn.c's check of a new thread.
 */
bool syslet__creds_shared_fs(void);

/* A fork child whose atfork handlers did not run (forked.c). */
void syslet__creds_forked(void);

/* This thread changed its own credentials (raw per-thread system call). */
void syslet__creds_changed_self(void);

/* A glibc set*id broadcast (every thread) begins, then ends. */
void syslet__creds_changed_all(void);

/*
 * spawn.c, on a new thread: switch to the credentials shown in
 * @leader_status (/proc/self/status of the thread-group leader), every
 * set, permitted included, and the securebits this thread has without
 * SECBIT_KEEP_CAPS. 0, or -EPERM if the thread cannot have exactly those.
 */
int syslet__creds_neutral(const char *leader_status);

#endif /* SYSLET_CREDS_H */
