/* SPDX-License-Identifier: MIT */
/*
 * Submitter credentials (SPEC 5, issue 10 item 1).
 *
 * What a job carries: a reference to a credset, an immutable record of one
 * thread's real, effective, saved and fs uid and gid, supplementary groups,
 * effective, permitted and inheritable capabilities and securebits, all per
 * thread in the kernel. Bounding and ambient sets are left out: they only
 * act at execve, which never runs on a worker (inline class).
 *
 * Submitter: each thread keeps a snapshot (mine) tagged with the value of
 * the process-wide generation gen it was read under. It is read again
 * (7 system calls) only when the tag is stale: gen moves around every glibc
 * set*id call that broadcasts to all threads (interpose.c wraps them), and
 * a thread's own tag is cleared when it changes its own credentials
 * through syscall(), setfsuid(), capset(), prctl(), unshare() or setns()
 * (interpose.c) or through indirect() (indirect.c). Recording is then one
 * TLS compare and one reference count increment. Not seen, hence not
 * covered: a change made by inline assembly, or by a library that calls
 * glibc's own functions without going through the program's symbol lookup
 * (libcap's cap_set_proc() calls glibc's syscall() directly): after such a
 * change the thread must call any wrapped function (e.g. prctl(
 * PR_GET_SECUREBITS)) or indirect(SYS_capget, ...) before its next punt.
 *
 * Confinement: a call must not escape its submitter's sandbox on a
 * worker. Root, working directory and mount namespace: a worker shares
 * the thread-group leader's fs_struct (spawn.c); a submitter with its own
 * (after unshare(CLONE_FS or CLONE_NEWNS), hence perhaps its own chroot,
 * cwd or mounts) gets an unreadable snapshot (NULL): each of its punted
 * calls fails with EPERM. Seccomp: a credset also carries its thread's
 * seccomp state (mode and filter count, 0 without a filter); a worker
 * runs a job with a filter only if its own state is the same (re-read
 * when it seems not: a TSYNC filter may have come), else EPERM. Checked
 * with the snapshot, so after a change the wrappers see (unshare, setns,
 * prctl, seccomp through syscall() or indirect()) or on a thread's first
 * punt.
 *
 * Worker: keeps its own credentials (have), read again when gen moved.
 * A job whose credset is the worker's, or equal to it in everything a
 * call's permission checks use (all but the permitted set), runs as is.
 * Otherwise the worker switches its own thread with raw system calls
 * (per thread in the kernel): it raises its effective set to its
 * permitted set, sets groups, gids, fsgid, uids (with SECBIT_KEEP_CAPS so
 * that its permitted set survives), fsuid, securebits, and last the
 * effective and inheritable sets exactly. It keeps its permitted set, so
 * that it can switch back after the call: that set is only usable through
 * capset(), which never runs on a worker. If any step fails, the job gets
 * -EPERM and the worker retires. After the call it switches back the same
 * way; if gen moved meanwhile (a glibc broadcast applied to the switched
 * thread), its state is unknown and it retires instead.
 *
 * Shared state:
 *   - gen: bumped (seq_cst, one total order with every reader's acquire)
 *     before and after each glibc set*id broadcast; read acquire.
 *   - credsets: immutable after creation; ref counted (relaxed increments,
 *     acq_rel decrement so the last holder sees every use before freeing).
 *   - live: every credset, listed under live_lock (taken only when one is
 *     made or freed; made anew in a fork child by forked.c's reset,
 *     syslet__creds_forked()) so that one held by a thread that vanished
 *     without its destructors (a raw exit) is still reachable, not a leak.
 *   - mine, mine_gen, have, have_gen: per thread, their own thread only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <linux/kcmp.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "compiler.h"
#include "creds.h"
#include "forked.h"
#include "spawn.h"
#include "sys.h"

#define INLINE_GROUPS 64

struct cr {
	uint32_t uid[4], gid[4]; /* real, effective, saved, fs */
	uint32_t eff[2], prm[2], inh[2];
	uint32_t secbits;
	uint32_t ngroups;
	uint32_t sc; /* seccomp mode and filter count (sc_of()); 0 none */
};

struct syslet__credset {
	_Atomic long ref;
	struct syslet__credset *prev, *next; /* live, under live_lock */
	struct cr c;
	uint32_t groups[];
};

static _Atomic unsigned long gen = 1;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct syslet__credset live = { .prev = &live, .next = &live };
static SYSLET_TLS struct syslet__credset *mine, *have;
static SYSLET_TLS unsigned long mine_gen, have_gen;
static SYSLET_TLS uint32_t have_sc; /* a worker's seccomp state, sc_of() */
static SYSLET_TLS bool keyed;
static pthread_key_t key;

static void put(struct syslet__credset *s)
{
	/* Acq_rel: the last holder sees every other holder's reads. */
	if (!s ||
	    atomic_fetch_sub_explicit(&s->ref, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&live_lock);
	s->prev->next = s->next;
	s->next->prev = s->prev;
	pthread_mutex_unlock(&live_lock);
	free(s);
}

static struct syslet__credset *get(struct syslet__credset *s)
{
	/* Relaxed: the caller already holds a reference. */
	if (s)
		atomic_fetch_add_explicit(&s->ref, 1, memory_order_relaxed);
	return s;
}

static void thread_end(void *arg)
{
	(void)arg;
	put(mine);
	put(have);
	mine = have = NULL;
}

static void key_init(void)
{
	if (pthread_key_create(&key, thread_end))
		key = (pthread_key_t)-1;
}

/* Release this thread's snapshots when it ends. */
static void keep_key(void)
{
	if (likely(keyed))
		return;
	syslet__once(SYSLET__ONCE_CREDS, key_init);
	keyed = key != (pthread_key_t)-1 && !pthread_setspecific(key, &keyed);
}

static bool same_call(const struct syslet__credset *a,
		      const struct syslet__credset *b)
{
	return !memcmp(a->c.uid, b->c.uid, sizeof(a->c.uid)) &&
	       !memcmp(a->c.gid, b->c.gid, sizeof(a->c.gid)) &&
	       !memcmp(a->c.eff, b->c.eff, sizeof(a->c.eff)) &&
	       !memcmp(a->c.inh, b->c.inh, sizeof(a->c.inh)) &&
	       a->c.secbits == b->c.secbits && a->c.ngroups == b->c.ngroups &&
	       !memcmp(a->groups, b->groups, a->c.ngroups * sizeof(uint32_t));
}

static bool same_all(const struct syslet__credset *a,
		     const struct syslet__credset *b)
{
	return same_call(a, b) && !memcmp(a->c.prm, b->c.prm, sizeof(a->c.prm));
}

static struct syslet__credset *alloc_set(uint32_t ngroups)
{
	struct syslet__credset *s =
		malloc(sizeof(*s) + ngroups * sizeof(uint32_t));

	if (!s)
		return NULL;
	atomic_init(&s->ref, 1);
	syslet__once(SYSLET__ONCE_CREDS, key_init);
	pthread_mutex_lock(&live_lock);
	s->next = &live;
	s->prev = live.prev;
	live.prev->next = s;
	live.prev = s;
	pthread_mutex_unlock(&live_lock);
	return s;
}

static long capget_raw(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	return syslet__sys2(SYS_capget, &h, d);
}

static long capset_raw(const uint32_t eff[2], const uint32_t prm[2],
		       const uint32_t inh[2])
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];
	int i;

	for (i = 0; i < 2; i++) {
		d[i].effective = eff[i];
		d[i].permitted = prm[i];
		d[i].inheritable = inh[i];
	}
	return syslet__sys2(SYS_capset, &h, d);
}

/* The mode and filter count of seccomp in status file @path, or -1. */
static long seccomp_of(const char *path)
{
	static const char *const keys[] = { "\nSeccomp:", "\nSeccomp_"
							  "filters:" };
	char *buf = syslet__read_all(path);
	long v = 0, f;
	const char *p;
	size_t i;

	if (!buf)
		return -1;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		p = strstr(buf, keys[i]);
		f = p ? strtol(p + strlen(keys[i]), NULL, 10) : 0;
		v = v * 65536 + f;
	}
	free(buf);
	return v;
}

/*
 * This thread's seccomp state as a number: 0 without a filter (one
 * system call), else its mode and filter count, or -1u if unreadable.
 */
static uint32_t sc_of(void)
{
	if (!syslet__sys1(SYS_prctl, PR_GET_SECCOMP))
		return 0;
	return (uint32_t)seccomp_of("/proc/thread-self/status");
}

/*
 * This thread's credentials, as a credset: @reuse (a new reference) if
 * they equal it, else a new one. NULL if they cannot be read.
 */
static struct syslet__credset *read_self(struct syslet__credset *reuse)
{
	union {
		struct syslet__credset s;
		char room[sizeof(struct syslet__credset) +
			  INLINE_GROUPS * sizeof(uint32_t)];
	} tmp;
	struct syslet__credset *t = &tmp.s, *out = NULL;
	struct __user_cap_data_struct d[2];
	long n, sec;
	int i;

	if (syslet__sys3(SYS_getresuid, &t->c.uid[0], &t->c.uid[1],
			 &t->c.uid[2]) ||
	    syslet__sys3(SYS_getresgid, &t->c.gid[0], &t->c.gid[1],
			 &t->c.gid[2]) ||
	    capget_raw(d))
		return NULL;
	t->c.uid[3] = (uint32_t)syslet__sys1(SYS_setfsuid, -1);
	t->c.gid[3] = (uint32_t)syslet__sys1(SYS_setfsgid, -1);
	sec = syslet__sys1(SYS_prctl, PR_GET_SECUREBITS);
	if (sec < 0)
		return NULL;
	t->c.secbits = (uint32_t)sec;
	t->c.sc = sc_of();
	for (i = 0; i < 2; i++) {
		t->c.eff[i] = d[i].effective;
		t->c.prm[i] = d[i].permitted;
		t->c.inh[i] = d[i].inheritable;
	}
	n = syslet__sys2(SYS_getgroups, INLINE_GROUPS, t->groups);
	if (n == -EINVAL) {
		/* More than fit inline: read them into the heap copy. */
		n = syslet__sys2(SYS_getgroups, 0, NULL);
		out = n >= 0 ? alloc_set((uint32_t)n) : NULL;
		if (!out)
			return NULL;
		out->c = t->c;
		n = syslet__sys2(SYS_getgroups, n, out->groups);
		if (n < 0) {
			put(out);
			return NULL;
		}
		out->c.ngroups = (uint32_t)n;
		t = out;
	} else if (n < 0) {
		return NULL;
	}
	if (!out)
		t->c.ngroups = (uint32_t)n;
	if (reuse && same_all(t, reuse) && t->c.sc == reuse->c.sc) {
		put(out);
		return get(reuse);
	}
	if (out)
		return out;
	out = alloc_set(t->c.ngroups);
	if (out) {
		out->c = t->c;
		memcpy(out->groups, t->groups, t->c.ngroups * sizeof(uint32_t));
	}
	return out;
}

/* Whether this thread's link @b names what the leader's @a names. */
static bool same_file(const char *a, const char *b)
{
	struct stat x, y;

	if (stat(a, &x))
		return true; /* the leader ended: no baseline */
	return !stat(b, &y) && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

/*
 * Whether this thread's fs_struct is the leader's (see Confinement). A
 * leader that ended (pthread_exit) has none: nothing to compare with.
 */
static bool shared_fs(long pid, long tid)
{
	long r;

	if (tid == pid)
		return true;
	r = syslet__sys5(SYS_kcmp, pid, tid, KCMP_VM, 0, 0);
	if (r > 0)
		return true; /* the leader ended: its mm is gone */
	if (!r)
		return !syslet__sys5(SYS_kcmp, pid, tid, KCMP_FS, 0, 0);
	/* No kcmp (kernel, or a sandbox's filter): compare what it holds. */
	return same_file("/proc/self/root", "/proc/thread-self/root") &&
	       same_file("/proc/self/cwd", "/proc/thread-self/cwd") &&
	       same_file("/proc/self/ns/mnt", "/proc/thread-self/ns/mnt");
}

/* Whether this thread's root, cwd, mounts are its own (Confinement). */
static bool apart(void)
{
	return !shared_fs(syslet__sys0(SYS_getpid), syslet__sys0(SYS_gettid));
}

/*
 * On a worker: whether a job submitted under seccomp state @sc may run
 * here. A submitter without a filter may (the worker is as confined, or
 * more); one with filters only on a worker with the same (re-read when
 * they seem to differ: a TSYNC filter may have come since).
 */
static bool sc_ok(uint32_t sc)
{
	if (!sc || sc == have_sc)
		return sc != (uint32_t)-1;
	have_sc = sc_of();
	return sc == have_sc;
}

bool syslet__creds_shared_fs(void)
{
	return shared_fs(syslet__sys0(SYS_getpid), syslet__sys0(SYS_gettid));
}

/* A fork child: live_lock may have been held by a thread it lacks. */
void syslet__creds_forked(void)
{
	pthread_mutex_init(&live_lock, NULL);
}

void syslet__creds_changed_self(void)
{
	mine_gen = 0;
	have_gen = 0;
}

void syslet__creds_changed_all(void)
{
	/* Seq_cst: ordered before (or after) the broadcast's signals. */
	atomic_fetch_add(&gen, 1);
}

void syslet__creds_record(struct syslet__creds *c)
{
	/* Acquire: pairs with the bump before a broadcast reached us. */
	unsigned long g = atomic_load_explicit(&gen, memory_order_acquire);
	struct syslet__credset *s;

	if (unlikely(mine_gen != g || !mine)) {
		keep_key();
		s = apart() ? NULL : read_self(mine);
		put(mine);
		mine = s;
		mine_gen = s ? g : 0;
	}
	c->set = get(mine);
}

/* The kernel's setfs[ug]id answers the old value: ask again to check. */
static int setfs(long nr, uint32_t id)
{
	syslet__sys1(nr, id);
	return (uint32_t)syslet__sys1(nr, -1) == id ? 0 : -EPERM;
}

/*
 * Switch this thread from @from (with permitted set @prm_now) to @to, its
 * permitted set ending as @prm_final. 0 or -EPERM (perhaps half done).
 */
static int apply(const struct cr *from, const uint32_t *from_groups,
		 const struct syslet__credset *to, const uint32_t prm_now[2],
		 const uint32_t prm_final[2])
{
	const struct cr *t = &to->c;
	bool groups =
		from->ngroups != t->ngroups ||
		memcmp(from_groups, to->groups, t->ngroups * sizeof(uint32_t));
	uint32_t sec = from->secbits, fsid;
	bool uids = memcmp(from->uid, t->uid, 3 * sizeof(uint32_t));
	bool gids = memcmp(from->gid, t->gid, 3 * sizeof(uint32_t));

	/* Whatever the thread may use, effective for the steps below. */
	if (memcmp(from->eff, prm_now, sizeof(from->eff)) &&
	    capset_raw(prm_now, prm_now, from->inh))
		return -EPERM;
	if (groups && syslet__sys2(SYS_setgroups, t->ngroups, to->groups))
		return -EPERM;
	if (gids &&
	    syslet__sys3(SYS_setresgid, t->gid[0], t->gid[1], t->gid[2]))
		return -EPERM;
	fsid = gids ? t->gid[1] : from->gid[3];
	if (fsid != t->gid[3] && setfs(SYS_setfsgid, t->gid[3]))
		return -EPERM;
	if (uids) {
		/* Keep the permitted set across a move away from uid 0. */
		if (!(sec & SECBIT_KEEP_CAPS) &&
		    !syslet__sys2(SYS_prctl, PR_SET_KEEPCAPS, 1))
			sec |= SECBIT_KEEP_CAPS;
		if (syslet__sys3(SYS_setresuid, t->uid[0], t->uid[1],
				 t->uid[2]) ||
		    capset_raw(prm_now, prm_now, from->inh))
			return -EPERM;
	}
	fsid = uids ? t->uid[1] : from->uid[3];
	if (fsid != t->uid[3] && setfs(SYS_setfsuid, t->uid[3]))
		return -EPERM;
	/* KEEP_CAPS alone needs no privilege; other bits CAP_SETPCAP. */
	if ((sec ^ t->secbits) & ~(uint32_t)SECBIT_KEEP_CAPS) {
		if (syslet__sys2(SYS_prctl, PR_SET_SECUREBITS, t->secbits))
			return -EPERM;
	} else if (sec != t->secbits &&
		   syslet__sys2(SYS_prctl, PR_SET_KEEPCAPS,
				!!(t->secbits & SECBIT_KEEP_CAPS))) {
		return -EPERM;
	}
	if (capset_raw(t->eff, prm_final, t->inh))
		return -EPERM;
	return 0;
}

int syslet__creds_enter(struct syslet__creds *c,
			struct syslet__creds_saved *old)
{
	/* Acquire: as in syslet__creds_record(). */
	unsigned long g = atomic_load_explicit(&gen, memory_order_acquire);
	struct syslet__credset *j = c->set, *s;
	int ret;

	c->set = NULL;
	if (!j)
		return -EPERM;
	if (unlikely(have_gen != g || !have)) {
		keep_key();
		s = read_self(have);
		put(have);
		have = s;
		have_gen = s ? g : 0;
		if (!s) {
			put(j);
			return -EPERM;
		}
	}
	if (!sc_ok(j->c.sc)) {
		put(j);
		return -EPERM;
	}
	if (j == have || same_call(j, have)) {
		put(j);
		return 0;
	}
	ret = apply(&have->c, have->groups, j, have->c.prm, have->c.prm);
	if (ret) {
		put(j);
		have_gen = 0;
		syslet__thread_tainted();
		return ret;
	}
	/* The job's set stays referenced until the switch back. */
	old->back = j;
	old->gen = g;
	return 1;
}

int syslet__creds_leave(struct syslet__creds_saved *old)
{
	struct syslet__credset *j = old->back;
	struct cr now = j->c;
	int ret = -ESTALE;

	memcpy(now.prm, have->c.prm, sizeof(now.prm));
	/* Acquire: as in syslet__creds_record(). */
	if (atomic_load_explicit(&gen, memory_order_acquire) == old->gen)
		ret = apply(&now, j->groups, have, have->c.prm, have->c.prm);
	if (ret) {
		have_gen = 0;
		syslet__thread_tainted();
	}
	put(j);
	return ret;
}

/* "Key:\t" followed by @n numbers in base @base, into @out. */
static int parse(const char *st, const char *key, int base, uint64_t *out,
		 int n)
{
	const char *p = strstr(st, key);
	char *end;
	int i;

	if (!p)
		return -EINVAL;
	p += strlen(key);
	for (i = 0; i < n; i++) {
		out[i] = strtoull(p, &end, base);
		if (end == p)
			return -EINVAL;
		p = end;
	}
	return 0;
}

/* The numbers of the "Groups:" line starting at @p, into @g if not NULL. */
static uint32_t groups_line(const char *p, uint32_t *g)
{
	uint32_t n = 0;
	char *end;

	while (*p && *p != '\n') {
		if (*p < '0' || *p > '9') {
			p++;
			continue;
		}
		if (g)
			g[n] = (uint32_t)strtoul(p, &end, 10);
		else
			strtoul(p, &end, 10);
		p = end;
		n++;
	}
	return n;
}

static struct syslet__credset *from_status(const char *st, uint32_t secbits)
{
	const char *p = strstr(st, "\nGroups:");
	struct syslet__credset *s;
	uint64_t v[4], cap;
	uint32_t n;
	int i;

	if (!p)
		return NULL;
	p += strlen("\nGroups:");
	n = groups_line(p, NULL);
	s = alloc_set(n);
	if (!s)
		return NULL;
	groups_line(p, s->groups);
	s->c.ngroups = n;
	s->c.secbits = secbits;
	s->c.sc = 0; /* not compared: spawn.c checks seccomp */
	if (parse(st, "\nUid:", 10, v, 4))
		goto bad;
	for (i = 0; i < 4; i++)
		s->c.uid[i] = (uint32_t)v[i];
	if (parse(st, "\nGid:", 10, v, 4))
		goto bad;
	for (i = 0; i < 4; i++)
		s->c.gid[i] = (uint32_t)v[i];
	if (parse(st, "\nCapInh:", 16, &cap, 1))
		goto bad;
	s->c.inh[0] = (uint32_t)cap, s->c.inh[1] = (uint32_t)(cap >> 32);
	if (parse(st, "\nCapPrm:", 16, &cap, 1))
		goto bad;
	s->c.prm[0] = (uint32_t)cap, s->c.prm[1] = (uint32_t)(cap >> 32);
	if (parse(st, "\nCapEff:", 16, &cap, 1))
		goto bad;
	s->c.eff[0] = (uint32_t)cap, s->c.eff[1] = (uint32_t)(cap >> 32);
	return s;
bad:
	put(s);
	return NULL;
}

int syslet__creds_neutral(const char *leader_status)
{
	struct syslet__credset *cur = read_self(NULL), *want = NULL, *now;
	uint32_t sec;
	int ret = -EPERM;

	if (!cur)
		return -EPERM;
	sec = cur->c.secbits;
	if (!(sec & SECBIT_KEEP_CAPS_LOCKED))
		sec &= ~(uint32_t)SECBIT_KEEP_CAPS;
	want = from_status(leader_status, sec);
	if (want && (same_all(cur, want) || !apply(&cur->c, cur->groups, want,
						   cur->c.prm, want->c.prm))) {
		now = read_self(NULL);
		if (now && same_all(now, want))
			ret = 0;
		put(now);
	}
	put(want);
	put(cur);
	return ret;
}
