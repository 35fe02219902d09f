/* SPDX-License-Identifier: MIT */
/*
 * Submitter credentials (SPEC 5, issue 3 item 5).
 *
 * glibc applies set*id and setgroups to every thread, workers included, so a
 * call submitted after a change runs with the new credentials anyway. What
 * is left is a call queued while unprivileged and run after the process
 * became root again (seteuid(0) from a saved root uid): the worker is root
 * by then. The submitter records its effective ids and groups; a root
 * worker running a job of a non-root submitter saves its own ids and
 * groups, switches its own thread (raw setgroups/setresgid/setresuid act
 * on one thread only) for the call, and switches back after it.
 *
 * A glibc set*id broadcast landing while a worker is switched is undone by
 * the switch back: the worker may then stay root while the process has
 * only dropped its effective uid (it kept a saved root uid, or the switch
 * back would fail). That is harmless: every job is checked, and a root
 * worker switches for any job whose submitter was not root. If switching
 * back fails, the worker retires.
 *
 * A call queued by root and run after the process dropped root runs with
 * the dropped credentials: the library cannot regain what the process gave
 * up. Only privilege through uid 0 is covered; capabilities held by a
 * non-root uid and user namespaces are not.
 *
 * Shared state: never_root, a sticky flag set by submitters (relaxed: it
 * only lets later submitters skip work; a stale 0 costs a few syscalls).
 * Once the real, effective and saved uids are all non-zero and CAP_SETUID
 * is not permitted, the process can never be root again short of execve,
 * so nothing needs recording.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"
#include "creds.h"

#ifdef SYS_setresuid32
#define NR_SETRESUID SYS_setresuid32
#define NR_SETRESGID SYS_setresgid32
#define NR_SETGROUPS SYS_setgroups32
#else
#define NR_SETRESUID SYS_setresuid
#define NR_SETRESGID SYS_setresgid
#define NR_SETGROUPS SYS_setgroups
#endif

static _Atomic int never_root;

static void check_never_root(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];
	uid_t r, e, s;

	if (getresuid(&r, &e, &s) || !r || !e || !s)
		return;
	if (syscall(SYS_capget, &h, d) || (d[0].permitted & (1u << CAP_SETUID)))
		return;
	atomic_store_explicit(&never_root, 1, memory_order_relaxed);
}

void syslet__creds_record(struct syslet__creds *c)
{
	int n;

	c->ngroups = SYSLET__CREDS_NONE;
	if (atomic_load_explicit(&never_root, memory_order_relaxed))
		return;
	c->euid = geteuid();
	if (!c->euid)
		return;
	c->egid = getegid();
	n = getgroups(SYSLET__CREDS_NGROUPS, c->groups);
	c->ngroups = n >= 0 ? n : SYSLET__CREDS_MANY;
	check_never_root();
}

int syslet__creds_enter(const struct syslet__creds *c,
			struct syslet__creds_saved *old)
{
	const gid_t *groups = c->groups;
	size_t n = (size_t)c->ngroups;
	int k;

	if (c->ngroups == SYSLET__CREDS_NONE || geteuid())
		return 0;
	if (c->ngroups == SYSLET__CREDS_MANY) {
		groups = &c->egid;
		n = 1;
	}
	k = getgroups(0, NULL);
	old->groups = malloc(((size_t)(k > 0 ? k : 0) + 1) * sizeof(gid_t));
	if (k < 0 || !old->groups ||
	    (old->ngroups = getgroups(k, old->groups)) < 0 ||
	    getresuid(&old->ruid, &old->euid, &old->suid) ||
	    getresgid(&old->rgid, &old->egid, &old->sgid)) {
		free(old->groups);
		return -ENOMEM;
	}
	/* Groups and gid first: they need the root uid that goes last. */
	if (syscall(NR_SETGROUPS, n, groups) ||
	    syscall(NR_SETRESGID, -1, c->egid, -1) ||
	    syscall(NR_SETRESUID, -1, c->euid, -1)) {
		free(old->groups);
		return -errno;
	}
	return 1;
}

int syslet__creds_leave(struct syslet__creds_saved *old)
{
	int ret = 0;

	/* The uids first: the gid and groups need root back. */
	if (syscall(NR_SETRESUID, old->ruid, old->euid, old->suid) ||
	    syscall(NR_SETRESGID, old->rgid, old->egid, old->sgid) ||
	    syscall(NR_SETGROUPS, (size_t)old->ngroups, old->groups))
		ret = -errno;
	free(old->groups);
	return ret;
}
