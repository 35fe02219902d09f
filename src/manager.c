/* SPDX-License-Identifier: MIT */
/*
 * The manager: one thread per process, owned by the pool, that does what
 * nobody else would notice when no program thread calls again:
 *   - growth: a submitter that found no worker for its job sets want(s)
 *     and pokes the manager (an eventfd write, once until it is cleared);
 *     the manager notes submitted(s) as the job's ticket, waits
 *     SYSLET__GROW_NS, then lets syslet__wake_grow() (wake.c) start a
 *     worker per job of that ticket still untaken with no idle worker for
 *     it. A start that fails below the cap (RLIMIT_NPROC, ENOMEM) is tried
 *     again every SYSLET__RETRY_NS while want(s) stays set.
 *   - deaths: every worker opens a pidfd on its own thread (PIDFD_THREAD)
 *     and adds it to the manager's epoll set; it becomes readable when the
 *     thread ends, however it ends (a return, pthread_exit in a notifier,
 *     an inline-assembly SYS_exit). syslet__worker_ended() (worker.c) then
 *     tells a retirement from a death, corrects the counts and wakes every
 *     shard with queued jobs (wake.c), which asks for replacements.
 *
 * Shared state: the epoll and eventfd descriptors (set once under
 * start_lock before the manager or any worker exists, read by all), a
 * shard's want (wake.c's protocol, seq_cst), and want_ns / want_mark,
 * which only the manager thread touches. fork(): the child closes the
 * parent's descriptors and starts its own manager with its first worker.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "shard.h"
#include "spawn.h"

#define SYSLET__RETRY_NS 10000000u /* after a failed start below the cap */

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int started; /* the manager runs in this process */
static int epfd = -1, evfd = -1;

void syslet__manager_poke(void)
{
	uint64_t one = 1;

	if (write(evfd, &one, sizeof(one)) < 0)
		return; /* the counter is full: the manager is awake anyway */
}

int syslet__manager_watch(int pidfd, void *rec)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = rec };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, pidfd, &ev) ? -errno : 0;
}

void syslet__manager_unwatch(int pidfd)
{
	/*
	 * Explicitly: close() leaves the set only with the last reference
	 * to the file, and a fork child may still hold one.
	 */
	epoll_ctl(epfd, EPOLL_CTL_DEL, pidfd, NULL);
}

/* The nearest deadline of a shard's growth request; 0 if none. */
static uint64_t deadline(struct syslet__pool *p)
{
	uint64_t d = 0;
	int i;

	for (i = 0; i < p->nshards; i++)
		if (p->shards[i].want_ns &&
		    (!d || p->shards[i].want_ns + SYSLET__GROW_NS < d))
			d = p->shards[i].want_ns + SYSLET__GROW_NS;
	return d;
}

static void grow(struct syslet__pool *p, uint64_t now)
{
	struct syslet__shard *s;
	int i;

	for (i = 0; i < p->nshards; i++) {
		s = &p->shards[i];
		if (!s->want_ns) {
			/* Seq_cst: P4 of wake.c; the ticket after the want. */
			if (atomic_load(&s->want)) {
				s->want_ns = now;
				s->want_mark = atomic_load(&s->submitted);
				s->want_served = atomic_load(&s->taken);
			}
			continue;
		}
		if (now - s->want_ns < SYSLET__GROW_NS)
			continue;
		s->want_ns = 0;
		if (syslet__wake_grow(s, s->want_mark, s->want_served)) {
			s->want_ns = now + SYSLET__RETRY_NS - SYSLET__GROW_NS;
			s->want_mark = atomic_load(&s->submitted);
			s->want_served = atomic_load(&s->taken);
		}
	}
}

static void *manager_main(void *arg)
{
	struct syslet__pool *p = arg;
	struct epoll_event ev[16];
	struct timespec ts, *tp;
	uint64_t now, d, buf;
	int i, n;

	pthread_setname_np(pthread_self(), "syslet/mgr");
	/* Its timeouts are a few microseconds: no timer slack. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	for (;;) {
		d = deadline(p);
		tp = NULL;
		if (d) {
			now = syslet__now_ns();
			d = d > now ? d - now : 0;
			ts.tv_sec = (time_t)(d / 1000000000u);
			ts.tv_nsec = (long)(d % 1000000000u);
			tp = &ts;
		}
		n = epoll_pwait2(epfd, ev, 16, tp, NULL);
		for (i = 0; i < n; i++)
			if (ev[i].data.ptr)
				syslet__worker_ended(ev[i].data.ptr);
			else if (read(evfd, &buf, sizeof(buf)) < 0)
				continue; /* EAGAIN: another read took it */
		grow(p, syslet__now_ns());
	}
	return NULL;
}

int syslet__manager_start(struct syslet__pool *p)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int ret = 0;

	/* Acquire: the descriptors are set before started. */
	if (atomic_load_explicit(&started, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&start_lock);
	if (atomic_load_explicit(&started, memory_order_relaxed))
		goto out;
	if (epfd < 0)
		epfd = epoll_create1(EPOLL_CLOEXEC);
	if (evfd < 0)
		evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (epfd < 0 || evfd < 0 ||
	    (epoll_ctl(epfd, EPOLL_CTL_ADD, evfd, &ev) && errno != EEXIST)) {
		ret = -errno;
		goto out;
	}
	/* Neutral, as workers are: it starts them (spawn.c). */
	ret = syslet__thread_spawn(manager_main, p, 64 * 1024);
	if (!ret)
		/* Release: pairs with the acquire above. */
		atomic_store_explicit(&started, 1, memory_order_release);
out:
	pthread_mutex_unlock(&start_lock);
	return ret;
}

void syslet__manager_atfork_child(void)
{
	pthread_mutex_init(&start_lock, NULL);
	atomic_store_explicit(&started, 0, memory_order_relaxed);
	if (epfd >= 0)
		close(epfd);
	if (evfd >= 0)
		close(evfd);
	epfd = evfd = -1;
}
