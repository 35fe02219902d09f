/* SPDX-License-Identifier: MIT */
/*
 * A worker stands in for its submitter (SPEC 7): what it carries for it,
 * and the calls it cannot stand in for.
 *
 *   - Signals the call raises. The kernel sends SIGPIPE (a write to a pipe
 *     or socket without a reader) and SIGXFSZ (past RLIMIT_FSIZE) to the
 *     thread that made the call; a worker blocks them, so they would stay
 *     pending on it. After a call that failed with EPIPE or EFBIG, one
 *     that moved fewer bytes than it asked for (standin.h: every call
 *     that writes, vectors included), a continuation (whose last errno is
 *     hidden behind the bytes it moved) and a notifier (the program's
 *     own calls on the worker) the worker takes what is pending of the
 *     two (rt_sigtimedwait, no wait) and sends each to the submitting
 *     thread with tgkill(): it is delivered there as if that thread had
 *     made the call (ignored there, it is dropped; blocked there, it
 *     stays pending there, as for the plain call). Only what the kernel
 *     really raised is forwarded: an EPIPE of MSG_NOSIGNAL raised
 *     nothing. After a notifier the look is owed, not made (owed: a
 *     system call per notified call was a quarter of fio's punted
 *     writes' system calls): it is made once for a run of one submitting
 *     thread's notifiers and its bounded calls (a transfer or sync of a
 *     regular file or block device, worker.c), before the worker runs any
 *     other call (one that may block for ever: a read of a pipe of the
 *     same thread, test sigpipe_of_notifier_blocked) or another thread's
 *     notifier, before it sleeps or ends (after its idle spin), and after
 *     OWED_MAX notifiers; a call's own look pays it too. A signal a
 *     notifier raised reaches its thread that much later, never another
 *     thread; lost if a later notifier ends the worker's thread unseen
 *     (syslet(7) BUGS). The siginfo differs: si_code
 *     SI_TKILL instead of SI_USER. The tid is cached per thread (no system
 *     call per punt), reset in a glibc fork child.
 *   - A seccomp trap. SIGSYS is left unblocked on the library's threads
 *     (spawn.c, notify.c): a blocked forced signal makes the kernel reset
 *     the process's disposition and kill it; unblocked, the program's
 *     handler runs on the worker and the value it leaves in the context's
 *     return register is the call's result.
 *   - The signal mask of a process started from a notifier (all signals
 *     blocked there). While a notifier runs, `acting` points to its
 *     call's submitter, and a glibc fork() child (forked.c's handler) or
 *     an execve() from it takes that thread's mask, read from /proc then
 *     (no system call at submit: the mask at the fork, not at the submit;
 *     a submitter gone: the empty mask).
 *   - Thread-bound calls of a class that punts: a path naming the calling
 *     thread (/proc/thread-self/..., /proc/self/task/<own tid>/...) and a
 *     poll or select whose set holds a signalfd run on the caller.
 *
 * Shared state: none. tid and acting are per thread (written by their own
 * thread only); a glibc fork child resets them through forked.c's handler.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "class.h"
#include "fdcache.h"
#include "standin.h"
#include "sys.h"

#define KSIG(s) (1ull << ((s)-1))
#define KSIGSET 8 /* bytes of the kernel's sigset on every 64-bit arch */

#define OWED_MAX 64 /* notifiers whose look may wait */

static SYSLET_TLS pid_t tid;
static SYSLET_TLS const struct syslet__standin *acting;
static SYSLET_TLS pid_t owed; /* a notifier's submitter, its look not made */
static SYSLET_TLS unsigned int owed_n;

#define STATUS_BUF 65536

/*
 * Thread @t of process @pid's signal mask, read from its status (SigBlk)
 * when a notifier forks or execs, so that no punt pays for it: its mask
 * then, not at the submit. A buffer of its own (a notifier's stack may be a
 * page); a submitter gone or unreadable: the empty mask.
 */
static uint64_t mask_of(long pid, long t)
{
	char path[64], *buf, *p;
	uint64_t m = 0;

	buf = (char *)syslet__sys6(SYS_mmap, 0, STATUS_BUF,
				   PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((unsigned long)buf >= -4095UL)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/status", pid, t);
	p = NULL;
	if (syslet__slurp(path, buf, STATUS_BUF) > 0)
		p = strstr(buf, "\nSigBlk:");
	if (p)
		m = strtoull(p + 8, NULL, 16);
	syslet__sys2(SYS_munmap, (long)buf, STATUS_BUF);
	return m;
}

void syslet__standin_forked(void)
{
	uint64_t m;

	tid = 0;
	owed = 0; /* a child has no signal pending */
	owed_n = 0;
	if (acting) {
		/* The child's parent is the process the submitter is in. */
		m = mask_of(syslet__sys0(SYS_getppid), acting->tid);
		syslet__sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&m, 0,
			     KSIGSET);
	}
	acting = NULL;
}

void syslet__standin_fill(struct syslet__standin *st, bool notifier)
{
	if (unlikely(!tid))
		tid = (pid_t)syslet__sys0(SYS_gettid);
	st->tid = tid;
	(void)notifier;
}

/* What is pending of SIGPIPE and SIGXFSZ here, to thread @to. */
static void raise_to(pid_t to)
{
	uint64_t set = KSIG(SIGPIPE) | KSIG(SIGXFSZ);
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	long sig, pid;

	if (owed == to) {
		owed = 0;
		owed_n = 0;
	}
	/*
	 * One: the call raised at most one of the two; more would be
	 * process-directed ones, which stay for the program's own threads.
	 * A submitter that has ended gets it as its process would.
	 */
	sig = syslet__sys4(SYS_rt_sigtimedwait, (long)&set, (long)&si,
			   (long)&zero, KSIGSET);
	if (sig <= 0)
		return;
	pid = syslet__sys0(SYS_getpid);
	if (syslet__sys3(SYS_tgkill, pid, to, sig) == -ESRCH)
		syslet__sys2(SYS_kill, pid, sig);
}

void syslet__standin_raised(const struct syslet__standin *st)
{
	raise_to(st->tid);
}

void syslet__standin_settle(pid_t next)
{
	if (owed && owed != next)
		raise_to(owed);
}

void syslet__standin_notify(const struct syslet__standin *st)
{
	const struct syslet__standin *was = acting;

	/*
	 * The notifier is the program's code on this worker: a SIGPIPE or
	 * SIGXFSZ its calls raised is pending here, and would otherwise be
	 * taken for another thread's call. Owed to its thread.
	 */
	if (st)
		syslet__standin_settle(st->tid);
	acting = st;
	if (!st && was) {
		owed = was->tid;
		if (++owed_n >= OWED_MAX)
			raise_to(owed);
	}
}

/* Up to @n bytes of caller memory at @src, the kernel reading: how many. */
static long peek(void *dst, long src, size_t n)
{
	struct iovec l = { dst, n }, r = { (void *)src, n };

	return syslet__sys6(SYS_process_vm_readv, syslet__sys0(SYS_getpid),
			    (long)&l, 1, (long)&r, 1, 0);
}

/*
 * Which arguments of @nr are paths (bit i: a[i]). Those of the calls that
 * can reach a worker: the class table makes the rest inline.
 */
static unsigned int path_args(long nr)
{
	switch (nr) {
#ifdef SYS_open
	case SYS_open:
	case SYS_creat:
	case SYS_stat:
	case SYS_lstat:
	case SYS_access:
	case SYS_readlink:
	case SYS_mkdir:
	case SYS_rmdir:
	case SYS_unlink:
	case SYS_chmod:
	case SYS_chown:
	case SYS_lchown:
	case SYS_utime:
	case SYS_utimes:
	case SYS_mknod:
	case SYS_symlink:
#endif
	case SYS_truncate:
	case SYS_statfs:
	case SYS_getxattr:
	case SYS_setxattr:
	case SYS_listxattr:
	case SYS_removexattr:
	case SYS_lgetxattr:
	case SYS_lsetxattr:
	case SYS_llistxattr:
	case SYS_lremovexattr:
		return 1u << 0;
#ifdef SYS_rename
	case SYS_rename:
	case SYS_link:
		return 1u << 0 | 1u << 1;
#endif
	case SYS_symlinkat:
		return 1u << 2;
	case SYS_renameat:
	case SYS_renameat2:
	case SYS_linkat:
		return 1u << 1 | 1u << 3;
	case SYS_fanotify_mark:
		return 1u << 4;
	case SYS_openat:
	case SYS_openat2:
	case SYS_newfstatat:
	case SYS_statx:
	case SYS_faccessat:
	case SYS_faccessat2:
	case SYS_readlinkat:
	case SYS_mkdirat:
	case SYS_unlinkat:
	case SYS_fchmodat:
	case SYS_fchownat:
	case SYS_utimensat:
	case SYS_mknodat:
	case SYS_inotify_add_watch:
	case SYS_name_to_handle_at:
	case SYS_open_tree:
#ifdef SYS_futimesat
	case SYS_futimesat:
#endif
		return 1u << 1;
	default:
		return 0;
	}
}

/* Does @s (its first @n bytes) name /proc/thread-self or our task dir? */
static bool names_thread(const char *s, long n)
{
	static const char self[] = "/proc/self/task/";
	const char *p;
	long id = 0;

	if (n < 17 || memcmp(s, "/proc/", 6))
		return false;
	if (!memcmp(s + 6, "thread-self", 11) &&
	    (n == 17 || s[17] == '/' || !s[17]))
		return true;
	if (memcmp(s, self, sizeof(self) - 1))
		return false;
	for (p = s + sizeof(self) - 1; p < s + n && *p >= '0' && *p <= '9'; p++)
		id = id * 10 + (*p - '0');
	if (unlikely(!tid)) /* before this thread's first punt */
		tid = (pid_t)syslet__sys0(SYS_gettid);
	return p > s + sizeof(self) - 1 && p < s + n && (*p == '/' || !*p) &&
	       id == tid;
}

/* A path argument of @nr(@a) names the calling thread. */
static bool path_bound(long nr, const long *a)
{
	unsigned int m = path_args(nr);
	char buf[40];
	long n;
	int i;

	for (i = 0; m; i++, m >>= 1) {
		if (!(m & 1) || !a[i])
			continue;
		n = peek(buf, a[i], sizeof(buf));
		if (n > 0 && names_thread(buf, n))
			return true;
	}
	return false;
}

/* @fd is a signalfd: cached facts, confirmed fresh (a stale one misleads). */
static bool is_signalfd(long fd)
{
	long f = syslet__fd_facts(fd);

	return f >= 0 && (f & SYSLET__FD_SIGNALFD) &&
	       (f = syslet__fd_fresh(fd)) >= 0 && (f & SYSLET__FD_SIGNALFD);
}

/*
 * A poll set: the try's zero-timeout attempt has just read it whole (a
 * set the kernel could not read was answered there, EFAULT).
 */
static bool poll_bound(const long *a)
{
	const struct pollfd *p = (const struct pollfd *)a[0];
	unsigned long i;

	for (i = 0; i < (unsigned long)a[1]; i++)
		if (p[i].fd >= 0 && is_signalfd(p[i].fd))
			return true;
	return false;
}

/* The descriptors of select's sets (read by the kernel: a bad one gives 0). */
static bool select_bound(const long *a)
{
	uint64_t set[3][16];
	long n = a[0], i, j;

	if (n <= 0 || n > 1024)
		return false;
	memset(set, 0, sizeof(set));
	for (j = 0; j < 3; j++)
		if (a[1 + j] &&
		    peek(set[j], a[1 + j], (size_t)(n + 63) / 64 * 8) < 0)
			return false;
	for (i = 0; i < n; i++)
		if (((set[0][i / 64] | set[1][i / 64] | set[2][i / 64]) >>
		     (i % 64)) &
			    1 &&
		    is_signalfd(i))
			return true;
	return false;
}

bool syslet__standin_bound(unsigned int kind, long nr, const long a[6])
{
	switch (kind) {
	case SK_POLL:
	case SK_PPOLL:
		return poll_bound(a);
	case SK_SELECT:
	case SK_PSELECT6:
		return select_bound(a);
	case SK_EPOLL_WAIT:
	case SK_EPOLL_PWAIT:
	case SK_EPOLL_PWAIT2:
		return false;
	default:
		return path_bound(nr, a);
	}
}

/*
 * execve(), as glibc's, but from a notifier with the submitter's signal
 * mask (the old one back if it fails). Async-signal-safe: no lookup.
 */
SYSLET_EXPORT int execve(const char *path, char *const argv[],
			 char *const envp[])
{
	const struct syslet__standin *st = acting;
	uint64_t was = 0, m;
	long r;

	if (st) {
		m = mask_of(syslet__sys0(SYS_getpid), st->tid);
		syslet__sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&m,
			     (long)&was, KSIGSET);
	}
	r = syslet__sys3(SYS_execve, (long)path, (long)argv, (long)envp);
	if (st)
		syslet__sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&was, 0,
			     KSIGSET);
	errno = (int)-r;
	return -1;
}
