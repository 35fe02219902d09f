/* SPDX-License-Identifier: MIT */
/*
 * The reaper: one thread per process that sees every worker thread end,
 * however it ends (a retirement, pthread_exit in a notifier, an
 * inline-assembly SYS_exit), and calls syslet__worker_ended() for it.
 *
 * It watches a pidfd per worker (PIDFD_THREAD, Linux >= 6.9) in an epoll
 * set. Those descriptors live in a file table of its own: the thread
 * starts with close_range(0, ~0U, CLOSE_RANGE_UNSHARE), which gives it an
 * empty private table, so that the program never sees, closes or reuses
 * them (a daemon's close_range(3, ~0U) after the pool started) and the
 * library never touches a number of the program's. Nothing else can
 * reach that table, so a worker cannot add its own pidfd: it queues a
 * struct syslet__watch with its tid and rings the doorbell, a tgkill() of
 * SYSLET__REAP_SIGNAL to the reaper thread alone. The reaper blocks every
 * signal, like every thread of the library, and takes that one from a
 * signalfd in its set: no handler, no change to any other thread, and a
 * pending standard signal needs no queue entry (RLIMIT_SIGPENDING).
 * The reaper opens the pidfd from the tid; the worker is alive then,
 * because it waits for the reaper's answer (syslet__reaper_wait) before
 * anything that can end its thread: a notifier, or its retirement.
 *
 * Without PIDFD_THREAD (older kernels) or a reaper, every watch is
 * answered SYSLET__WATCH_NONE at once; a worker then frees its own record
 * when it retires and a death in a notifier goes unseen (syslet(7)).
 *
 * Shared state, under reap.lock: reap.state, reap.tid (written by the
 * reaper once it runs) and the queue of watches; each watch's state is
 * stored by the reaper (release, futex wake) and read by its worker
 * (acquire). The epoll set, the signalfd and the pidfds are the reaper's
 * alone; every call on them is a raw system call, which sanitizers do not
 * see: their model of one descriptor table per process would take the
 * program's use of the same numbers in its own table for races.
 * fork(): the child has no reaper (its table was the forking
 * thread's: no pidfd of the parent's); the first worker starts one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "reaper.h"
#include "shard.h"
#include "spawn.h"
#include "sys.h"

#define PIDFD_THREAD_FLAG O_EXCL /* linux/pidfd.h PIDFD_THREAD, 6.9 */
#define CLOSE_RANGE_UNSHARE_FLAG (1U << 1) /* linux/close_range.h, 5.9 */
#define REAPER_STACK (64 * 1024)

enum { REAP_NONE, REAP_STARTING, REAP_RUNNING, REAP_UNSUPPORTED };

static struct {
	pthread_mutex_t lock;
	int state;
	pid_t tid;
	struct syslet__watch *queue;
} reap = { PTHREAD_MUTEX_INITIALIZER, REAP_NONE, 0, NULL };

static void answer(struct syslet__watch *w, uint32_t v)
{
	/* Release: the pidfd before the worker may end its thread. */
	atomic_store_explicit(&w->state, v, memory_order_release);
	syslet__futex(&w->state, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* Open and watch a pidfd on each queued worker's thread. */
static void serve(int epfd, struct syslet__watch *q)
{
	struct syslet__watch *next;
	struct epoll_event ev = { .events = EPOLLIN };

	for (; q; q = next) {
		next = q->next;
		q->pidfd = (int)syslet__sys2(SYS_pidfd_open, q->tid,
					     PIDFD_THREAD_FLAG);
		ev.data.ptr = q;
		if (q->pidfd >= 0 &&
		    syslet__sys4(SYS_epoll_ctl, epfd, EPOLL_CTL_ADD, q->pidfd,
				 &ev)) {
			syslet__sys1(SYS_close, q->pidfd);
			q->pidfd = -1;
		}
		/* EMFILE: RLIMIT_NOFILE counts this table too. */
		answer(q,
		       q->pidfd >= 0 ? SYSLET__WATCH_ON : SYSLET__WATCH_NONE);
	}
}

static struct syslet__watch *take_queue(void)
{
	struct syslet__watch *q;

	pthread_mutex_lock(&reap.lock);
	q = reap.queue;
	reap.queue = NULL;
	pthread_mutex_unlock(&reap.lock);
	return q;
}

/* An empty table of our own, an epoll set with the doorbell @sfd; or -1. */
static int setup(int *sfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int epfd, pidfd;
	sigset_t bell;

	if (syslet__sys3(SYS_close_range, 0, ~0U, CLOSE_RANGE_UNSHARE_FLAG))
		return -1;
	/* The feature probe, on its own thread. */
	pidfd = (int)syslet__sys2(SYS_pidfd_open, gettid(), PIDFD_THREAD_FLAG);
	if (pidfd < 0)
		return -1;
	syslet__sys1(SYS_close, pidfd);
	sigemptyset(&bell);
	sigaddset(&bell, SYSLET__REAP_SIGNAL);
	epfd = (int)syslet__sys1(SYS_epoll_create1, EPOLL_CLOEXEC);
	*sfd = (int)syslet__sys4(SYS_signalfd4, -1, &bell, _NSIG / 8,
				 SFD_NONBLOCK | SFD_CLOEXEC);
	if (epfd < 0 || *sfd < 0 ||
	    syslet__sys4(SYS_epoll_ctl, epfd, EPOLL_CTL_ADD, *sfd, &ev))
		return -1;
	return epfd;
}

static void *reaper_main(void *arg)
{
	struct syslet__watch *w;
	struct epoll_event ev[16];
	struct signalfd_siginfo si;
	int i, n, epfd, sfd = -1;

	(void)arg;
	/* Not "syslet/...": tools take those for workers. */
	pthread_setname_np(pthread_self(), "syslet-reap");
	epfd = setup(&sfd);
	pthread_mutex_lock(&reap.lock);
	reap.state = epfd < 0 ? REAP_UNSUPPORTED : REAP_RUNNING;
	reap.tid = gettid();
	w = reap.queue;
	reap.queue = NULL;
	pthread_mutex_unlock(&reap.lock);
	if (epfd < 0) {
		for (; w; w = w->next)
			answer(w, SYSLET__WATCH_NONE);
		return NULL; /* its private table goes with it */
	}
	serve(epfd, w);
	for (;;) {
		n = (int)syslet__sys6(SYS_epoll_pwait, epfd, (long)ev, 16, -1,
				      0, 0);
		for (i = 0; i < n; i++) {
			w = ev[i].data.ptr;
			if (!w) {
				/* The doorbell: drain it, then the queue. */
				while (syslet__sys3(SYS_read, sfd, &si,
						    sizeof(si)) > 0)
					;
				continue;
			}
			syslet__sys4(SYS_epoll_ctl, epfd, EPOLL_CTL_DEL,
				     w->pidfd, NULL);
			syslet__sys1(SYS_close, w->pidfd);
			syslet__worker_ended(w);
		}
		serve(epfd, take_queue());
	}
	return NULL;
}

void syslet__reaper_watch(struct syslet__watch *w)
{
	int st, ret = 0;
	pid_t tid;

	w->tid = gettid();
	atomic_init(&w->state, SYSLET__WATCH_PENDING);
	pthread_mutex_lock(&reap.lock);
	if (reap.state == REAP_NONE) {
		reap.state = REAP_STARTING;
		ret = syslet__thread_spawn(reaper_main, NULL, REAPER_STACK);
		if (ret)
			reap.state =
				REAP_NONE; /* the next worker tries again */
	}
	st = reap.state;
	tid = reap.tid;
	if (!ret && st != REAP_UNSUPPORTED) {
		w->next = reap.queue;
		reap.queue = w;
	}
	pthread_mutex_unlock(&reap.lock);
	if (ret || st == REAP_UNSUPPORTED)
		answer(w, SYSLET__WATCH_NONE);
	else if (st == REAP_RUNNING)
		syslet__sys3(SYS_tgkill, getpid(), tid, SYSLET__REAP_SIGNAL);
}

bool syslet__reaper_wait(struct syslet__watch *w)
{
	uint32_t v;

	/* Acquire: pairs with answer(). */
	while ((v = atomic_load_explicit(&w->state, memory_order_acquire)) ==
	       SYSLET__WATCH_PENDING)
		syslet__futex(&w->state, FUTEX_WAIT_PRIVATE,
			      SYSLET__WATCH_PENDING, NULL);
	return v == SYSLET__WATCH_ON;
}

void syslet__reaper_atfork_child(void)
{
	pthread_mutex_init(&reap.lock, NULL);
	reap.state = REAP_NONE;
	reap.tid = 0;
	reap.queue = NULL;
}
