/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the attack tests on the library's onces and fork
 * handling (test_interrupted_init.c, test_once_raw_fork.c, test_once_nested.c):
 * a raw fork (SYS_clone, no atfork handlers), a child reaped and a thread
 * joined within a bound, a thread found in read(2) (/proc), the calls a
 * process must get served (an inline indirect() getpid, a punted read of
 * a pipe), and the hold: a hook of a function an init calls holds the
 * first thread other than the armed process's main thread that calls it
 * while the chosen once reads RUNNING (a model of a thread preempted
 * inside the init), until released. Include it after defining
 * _GNU_SOURCE (__WALL, pthread_timedjoin_np()).
 *
 * Every wait is bounded: by its argument here, by the process's alarm()
 * in a held thread.
 *
 * Shared state: the hold_* words, held and held_tid, written by the
 * armed process's main thread (hold_id, hold_pid, main_tid, hold_on) and
 * by the held thread (held, held_tid), polled by the other; seq_cst (few,
 * test only).
 */
#ifndef SYSLET_TEST_FORK_UTIL_H
#define SYSLET_TEST_FORK_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "forked.h"

static inline double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* A fork without glibc: no atfork handler runs, in the child or here. */
static inline pid_t raw_fork(void)
{
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

/* Wait for @pid, at most @secs: its exit code, 100 + signal, 99 timeout. */
static inline int reap(pid_t pid, double secs, const char *what)
{
	double t0 = now();
	pid_t r;
	int st;

	for (;;) {
		r = waitpid(pid, &st, WNOHANG | __WALL);
		if (r == pid)
			break;
		if (r < 0)
			return 98;
		if (now() - t0 > secs) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, __WALL);
			fprintf(stderr, "%s: pid %d hung\n", what, pid);
			return 99;
		}
		usleep(1000); /* a poll interval, not a synchronization */
	}
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "%s: pid %d killed by signal %d\n", what, pid,
			WTERMSIG(st));
		return 100 + WTERMSIG(st);
	}
	if (WEXITSTATUS(st))
		fprintf(stderr, "%s: pid %d exit %d\n", what, pid,
			WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

/* pthread_join() of @t, at most @secs: 0, else ETIMEDOUT or an error. */
/*
 * @fn in a fresh process (its own library state), under an alarm of @secs
 * and with no core file: its exit status, else reap()'s answer.
 */
static inline int case_process(int (*fn)(void), const char *name,
			       unsigned int secs)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
		alarm(secs);
		_exit(fn());
	}
	return reap(pid, secs + 5, name);
}

/*
 * @n completions beyond user_tail on @ring within @secs: 0, else 1.
 * (syslet_ring_wait_timeout() may end early on a signal: it loops.)
 */
static inline int wait_n(struct syslet_ring *ring, uint32_t n, double secs)
{
	struct timespec to = { .tv_nsec = 100000000 };
	double t0 = now();

	while (syslet_ring_head(ring) - ring->user_tail < n &&
	       now() - t0 < secs)
		syslet_ring_wait_timeout(ring, syslet_ring_head(ring), &to);
	return syslet_ring_head(ring) - ring->user_tail < n;
}

static inline int join_within(pthread_t t, double secs, void **res)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)secs;
	return pthread_timedjoin_np(t, res, &dl);
}

/* Whether a thread of process @pid (0: this one) sits in read(@fd). */
static inline int pid_in_read(pid_t pid, int fd)
{
	char path[400], buf[256], dname[64];
	struct dirent *d;
	unsigned long a0;
	int found = 0, f;
	ssize_t n;
	DIR *dir;
	long nr;

	if (pid)
		snprintf(dname, sizeof(dname), "/proc/%d/task", pid);
	else
		snprintf(dname, sizeof(dname), "/proc/self/task");
	dir = opendir(dname);
	if (!dir)
		return 0;
	while (!found && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/syscall", dname, d->d_name);
		f = open(path, O_RDONLY);
		if (f < 0)
			continue;
		n = read(f, buf, sizeof(buf) - 1);
		close(f);
		if (n <= 0)
			continue;
		buf[n] = 0;
		found = sscanf(buf, "%ld %lx", &nr, &a0) == 2 &&
			nr == SYS_read && a0 == (unsigned long)fd;
	}
	closedir(dir);
	return found;
}

/* Whether a thread of this process sits in read(@fd) (/proc). */
static inline int task_in_read(int fd)
{
	return pid_in_read(0, fd);
}

/* ---- what a process must get served --------------------------------- */

/* An inline getpid through indirect() on @ring (4 KiB): 0, else a code. */
static inline int ind_getpid_on(struct syslet_ring *ring)
{
	union indirect_params p;
	struct indirect_registers r;

	if (syslet_ring_init(ring, 16))
		return 1;
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	FILL_IN(r, SYS_getpid);
	return indirect(&r, &p, sizeof(p), 0) == getpid() ? 0 : 5;
}

/*
 * A read of @fd punted with @cd on @ring, its notifier @ip run on the
 * stack @sp unless @ip is NULL: 0, else -1 (not punted) or the errno.
 */
static inline int punt_read_frame(struct syslet_ring *ring, int fd, char *c,
				  uint64_t cd, void (*ip)(void), void *sp)
{
	union indirect_params p;
	struct indirect_registers r;

	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = cd;
	if (ip) {
		p.syslet.frame.ip = (uint64_t)(uintptr_t)ip;
		p.syslet.frame.sp = (uint64_t)(uintptr_t)sp;
	}
	FILL_IN(r, SYS_read, fd, c, 1);
	if (indirect(&r, &p, sizeof(p), 0) != -1)
		return -1;
	return errno == ESYSLETPENDING ? 0 : errno;
}

/* A read of @fd punted with @cd on @ring: 0, else -1 or the errno. */
static inline int punt_read_fd(struct syslet_ring *ring, int fd, char *c,
			       uint64_t cd)
{
	return punt_read_frame(ring, fd, c, cd, NULL, NULL);
}

/*
 * What a program's atfork child handler punts (atfork_punt cases): two
 * reads of fd[0] on a fresh @ring, caller_data 1 and 2, each punt's
 * answer in sub[], if on is set.
 */
struct handler_punts {
	_Atomic int on;
	int fd[2];
	int sub[2];
	char c[2];
};

static inline void handler_punts_run(struct handler_punts *h,
				     struct syslet_ring *ring)
{
	int i;

	if (!atomic_load(&h->on))
		return;
	syslet_ring_init(ring, 16);
	for (i = 0; i < 2; i++)
		h->sub[i] =
			punt_read_fd(ring, h->fd[0], &h->c[i], (uint64_t)i + 1);
}

/*
 * A read of a pipe punted with @cd (and notifier @ip, @sp unless @ip is
 * NULL) on @ring, then served within 4 s: 0, else the step that failed:
 * 1 set-up, 2 punt, 3 write, 4 wait.
 */
static inline int punt_wait_on(struct syslet_ring *ring, uint64_t cd,
			       void (*ip)(void), void *sp)
{
	struct timespec to = { .tv_sec = 4 };
	int fd[2], ret = 0;
	char c;

	if (syslet_ring_init(ring, 16) || pipe(fd))
		return 1;
	if (punt_read_frame(ring, fd[0], &c, cd, ip, sp))
		ret = 2;
	else if (write(fd[1], "x", 1) != 1)
		ret = 3;
	else if (syslet_ring_wait_timeout(ring, 0, &to))
		ret = 4;
	close(fd[0]);
	close(fd[1]);
	return ret;
}

/* A punted read (@cd) that completes within 4 s: 0, else 10 to 14. */
static inline int punt_served(uint64_t cd)
{
	_Alignas(8) char mem[4096];
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	int ret = punt_wait_on(ring, cd, NULL, NULL);

	if (ret)
		return 9 + ret;
	return ring->comp[0].status != 1 ? 14 : 0;
}

/*
 * Two reads of @fd punted on @ring into @ch (caller data 0xbee0, 0xbee1)
 * with one worker at most: till one runs (a worker in read) and the other
 * waits queued behind it, at most @secs: 0, else 2 (not punted), 3 (no
 * stats) or 4 (timeout).
 */
static inline int running_and_queued(struct syslet_ring *ring, int fd,
				     char ch[2], double secs)
{
	struct syslet_stats st;
	double t0;
	int i, q;

	for (i = 0; i < 2; i++)
		if (punt_read_fd(ring, fd, &ch[i], 0xbee0 + (uint64_t)i))
			return 2;
	t0 = now();
	for (;;) {
		if (syslet_stats(&st, sizeof(st)))
			return 3;
		for (q = 0, i = 0; i < (int)st.shards; i++)
			q += (int)st.queue_depth[i];
		if (q == 1 && task_in_read(fd))
			return 0;
		if (now() - t0 > secs)
			return 4;
		sched_yield();
	}
}

/* ---- a thread held inside an init ------------------------------------ */

static _Atomic int hold_id = -1; /* the once to hold a thread in */
static _Atomic pid_t hold_pid; /* the armed process */
static _Atomic pid_t main_tid; /* never held: it takes the fork */
static _Atomic int hold_on;
static _Atomic int held;
static _Atomic pid_t held_tid;

/* In a hooked function: hold the first thread inside the chosen init. */
static inline void maybe_hold(void)
{
	int id = atomic_load(&hold_id), zero = 0;
	pid_t tid;

	if (id < 0 || getpid() != atomic_load(&hold_pid))
		return;
	tid = gettid_();
	if (tid == atomic_load(&main_tid) ||
	    atomic_load(&syslet__once_words[id]) != SYSLET__ONCE_RUNNING ||
	    !atomic_compare_exchange_strong(&held, &zero, 1))
		return;
	atomic_store(&held_tid, tid);
	while (atomic_load(&hold_on))
		sched_yield(); /* bounded by the process's alarm */
}

#endif
