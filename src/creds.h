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

/* A worker thread's own credentials, kept while it runs a job switched. */
struct syslet__creds_saved {
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	int ngroups;
	gid_t *groups;
};

/*
 * On a worker, before running a job submitted with @c: if the worker's
 * credentials could grant more (it is root, the submitter was not), save
 * them in @old and switch the calling thread alone to @c with raw system
 * calls. Returns 1 if it switched (call syslet__creds_leave() after the
 * call), 0 if nothing had to change, -errno if the switch failed: the call
 * must not run, and the thread, perhaps half switched, must retire.
 */
int syslet__creds_enter(const struct syslet__creds *c,
			struct syslet__creds_saved *old);

/* Switch back to @old; 0, or -errno: the thread must then retire. */
int syslet__creds_leave(struct syslet__creds_saved *old);

#endif /* SYSLET_CREDS_H */
