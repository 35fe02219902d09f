/* SPDX-License-Identifier: MIT */
/*
 * Submitter credentials carried by a job (SPEC 5): a call never runs with
 * more privilege than its submitter had when it submitted it.
 */
#ifndef SYSLET_CREDS_H
#define SYSLET_CREDS_H

#include <sys/types.h>

/* Supplementary groups recorded inline; more are replaced by egid alone. */
#define SYSLET__CREDS_NGROUPS 16

enum {
	SYSLET__CREDS_NONE = -1, /* nothing to enforce for this job */
	SYSLET__CREDS_MANY = -2, /* too many groups to record */
};

struct syslet__creds {
	uid_t euid;
	gid_t egid;
	int ngroups; /* >= 0, or SYSLET__CREDS_* */
	gid_t groups[SYSLET__CREDS_NGROUPS];
};

/* On the submitter: record what @c must not exceed. Never fails. */
void syslet__creds_record(struct syslet__creds *c);

/*
 * On a worker, before running a job submitted with @c: if the worker's
 * credentials could grant more (it is root, the submitter was not), switch
 * the calling thread alone to @c with raw system calls. Returns 1 if it
 * switched (the thread must then retire after the call, see creds.c), 0 if
 * nothing had to change, -errno if the switch failed (the call must not
 * run; the thread must retire: it may be half switched).
 */
int syslet__creds_enter(const struct syslet__creds *c);

#endif /* SYSLET_CREDS_H */
