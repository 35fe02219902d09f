/* SPDX-License-Identifier: MIT */
/*
 * Submitter credentials carried by a job (SPEC 5): a call never runs with
 * more privilege than its submitter had when it submitted it.
 */
#ifndef SYSLET_CREDS_H
#define SYSLET_CREDS_H

#include <sys/types.h>

struct syslet__creds {
	uid_t euid;
	gid_t egid;
};

#endif /* SYSLET_CREDS_H */
