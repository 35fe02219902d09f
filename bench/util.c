/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the workloads: scratch files, libsyslet driven through
 * its public API only, and io_uring set up the way it runs best here.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "bench.h"

int bench_tmpfile(const char *dir, const char *tag, uint64_t size, int flags)
{
	char path[256], buf[65536];
	uint64_t off;
	int fd, i;

	snprintf(path, sizeof(path), "%s/syslet-bench.%d.%s", dir, getpid(),
		 tag);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | flags, 0600);
	if (fd < 0)
		return -errno;
	unlink(path);
	for (i = 0; i < (int)sizeof(buf); i++)
		buf[i] = (char)(i * 131 + 7);
	for (off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		buf[0] = (char)(off >> 16);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			int e = errno ? errno : EIO;

			close(fd);
			return -e;
		}
	}
	if (fsync(fd)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

int bench_sl_init(struct bench_sl *s, uint32_t elements, uint64_t ip,
		  uint64_t sp)
{
	union indirect_params *p = (union indirect_params *)s->params;

	_Static_assert(sizeof(s->params) == sizeof(*p), "params size");
	memset(s, 0, sizeof(*s));
	/* aligned_alloc: the size a multiple of the alignment */
	s->ring = aligned_alloc(64, (syslet_ring_size(elements) + 63) &
					    ~(size_t)63);
	if (!s->ring)
		return -ENOMEM;
	if (syslet_ring_init(s->ring, elements)) {
		free(s->ring);
		return -EINVAL;
	}
	p->syslet.completion_ring_ptr = (uint64_t)(uintptr_t)s->ring;
	p->syslet.frame.ip = ip;
	p->syslet.frame.sp = sp;
	return 0;
}

void bench_sl_fini(struct bench_sl *s)
{
	/*
	 * Calls still pending after a failed wait will write into the ring:
	 * leave it to them rather than free it under their feet.
	 */
	if (!s->inflight)
		free(s->ring);
	s->ring = NULL;
}

int bench_sl_submit(struct bench_sl *s, struct indirect_registers *regs,
		    uint64_t caller_data, long *res)
{
	union indirect_params *p = (union indirect_params *)s->params;
	long ret;

	p->syslet.caller_data = caller_data;
	ret = indirect(regs, p, sizeof(*p), 0);
	if (ret != -1) {
		*res = ret;
		return 1;
	}
	if (errno != ESYSLETPENDING)
		return -errno;
	s->inflight++;
	return 0;
}

int bench_sl_reap(struct bench_sl *s, int64_t expect, struct bench_run *r)
{
	struct timespec to = { .tv_sec = BENCH_WAIT_S };
	struct syslet_ring *ring = s->ring;
	uint32_t tail = ring->user_tail, head;
	int n = 0;

	if (syslet_ring_head(ring) == tail &&
	    syslet_ring_wait_timeout(ring, tail, &to)) {
		int e = errno;

		bench_fail(r, "syslet_ring_wait: %s (%u in flight)",
			   strerror(e), s->inflight);
		return -e;
	}
	head = syslet_ring_head(ring);
	for (; tail != head; tail++, n++) {
		struct syslet_completion *c = syslet_ring_slot(ring, tail);

		if ((int64_t)c->status == expect)
			r->done++;
		else
			bench_fail(r, "completion status %lld, expected %lld",
				   (long long)c->status, (long long)expect);
	}
	syslet_ring_advance(ring, (uint32_t)n);
	s->inflight -= (uint32_t)n;
	return n;
}

void bench_sl_note(struct bench_results *res)
{
	static struct syslet_stats last; /* at the previous note */
	struct syslet_stats st;

	if (!res->ncases || syslet_stats(&st, sizeof(st)))
		return;
	if (st.submitted == last.submitted &&
	    st.inline_calls == last.inline_calls)
		return; /* a library without statistics */
	/*
	 * The library's peak is since the process began (each workload is a
	 * process of its own): it is this case's if no worker existed before.
	 */
	if (!last.workers_started)
		res->cases[res->ncases - 1].workers_peak = st.workers_peak;
	snprintf(
		res->cases[res->ncases - 1].note, sizeof(res->cases[0].note),
		"libsyslet stats for this case: %llu inline, %llu pending, "
		"%llu completed; workers peak %u, started %llu, replaced "
		"%llu; idle spins that found work %llu, sleeps %llu",
		(unsigned long long)(st.inline_calls - last.inline_calls),
		(unsigned long long)(st.submitted - last.submitted),
		(unsigned long long)(st.completed - last.completed),
		st.workers_peak,
		(unsigned long long)(st.workers_started - last.workers_started),
		(unsigned long long)(st.workers_replaced -
				     last.workers_replaced),
		(unsigned long long)(st.spins - last.spins),
		(unsigned long long)(st.sleeps - last.sleeps));
	last = st;
}

void bench_sl_describe(char *buf, size_t len)
{
	long w = syslet_config_get(SYSLET_OPT_MAX_WORKERS);
	long pin = syslet_config_get(SYSLET_OPT_PIN);
	long spin = syslet_config_get(SYSLET_OPT_SPIN_NS);

	if (w < 0)
		snprintf(buf, len, "library defaults (config API n/a)");
	else
		snprintf(buf, len,
			 "defaults: max_workers %ld, pin %ld, "
			 "spin %ld ns",
			 w, pin, spin);
}

int bench_uring_init(struct io_uring *ring, unsigned int entries, char *desc,
		     size_t len)
{
	unsigned int flags = IORING_SETUP_SINGLE_ISSUER |
			     IORING_SETUP_DEFER_TASKRUN;
	const char *how = "single issuer, deferred task run";
	int ret;

	ret = io_uring_queue_init(entries, ring, flags);
	if (ret == -EINVAL) {
		how = "plain setup";
		ret = io_uring_queue_init(entries, ring, 0);
	}
	if (ret < 0)
		return ret;
	ret = io_uring_register_ring_fd(ring);
	snprintf(desc, len, "%s, %s, no SQPOLL, batch reaping", how,
		 ret == 1 ? "registered ring fd" : "ring fd not registered");
	return 0;
}

int bench_aio_init(struct bench_aio *s, int fd, unsigned int qd, bool per_slot,
		   struct bench_run *r)
{
	unsigned int i;

	memset(s, 0, sizeof(*s));
#if defined(__SANITIZE_THREAD__)
	/*
	 * With several descriptors, glibc's AIO threads start more threads
	 * through its internal pthread_create, which ThreadSanitizer does
	 * not intercept: the first allocation on such a thread crashes.
	 */
	if (per_slot) {
		bench_fail(r, "not under ThreadSanitizer (glibc's AIO threads "
			      "start threads it cannot see)");
		return -ENOTSUP;
	}
#endif
	s->qd = qd;
	s->fd = fd;
	s->cb = calloc(qd, sizeof(*s->cb));
	s->list = calloc(qd, sizeof(*s->list));
	s->fds = calloc(qd, sizeof(*s->fds));
	if (!s->cb || !s->list || !s->fds) {
		bench_aio_fini(s);
		return -ENOMEM;
	}
	for (i = 0; i < qd; i++)
		s->fds[i] = -1;
	for (i = 0; i < qd; i++) {
		/* glibc runs the requests of one descriptor one at a time */
		s->fds[i] = per_slot && i ? dup(fd) : fd;
		if (s->fds[i] < 0) {
			int e = errno;

			bench_fail(r, "dup: %s", strerror(e));
			bench_aio_fini(s);
			return -e;
		}
	}
	return 0;
}

void bench_aio_fini(struct bench_aio *s)
{
	unsigned int i;

	for (i = 0; s->fds && i < s->qd; i++)
		if (s->fds[i] != s->fd && s->fds[i] >= 0)
			close(s->fds[i]);
	free(s->fds);
	free(s->list);
	free(s->cb);
	memset(s, 0, sizeof(*s));
}

void bench_aio_loop(struct bench_aio *s, struct bench_run *r,
		    int (*issue)(struct aiocb *cb, uint64_t n, void *arg),
		    void *arg, ssize_t expect)
{
	struct timespec to = { .tv_sec = BENCH_WAIT_S };
	uint64_t sub = 0, got = 0;
	unsigned int i, inflight = 0;

	while (got < r->ops) {
		for (i = 0; i < s->qd && sub < r->ops; i++) {
			struct aiocb *cb = &s->cb[i];

			if (s->list[i])
				continue;
			memset(cb, 0, sizeof(*cb));
			cb->aio_fildes = s->fds[i];
			cb->aio_sigevent.sigev_notify = SIGEV_NONE;
			if (issue(cb, sub, arg)) {
				bench_fail(r, "aio submit: %s",
					   strerror(errno));
				return;
			}
			s->list[i] = cb;
			inflight++;
			sub++;
		}
		if (aio_suspend(s->list, (int)s->qd, &to) && errno != EINTR) {
			bench_fail(r, "aio_suspend: %s (%u in flight)",
				   strerror(errno), inflight);
			return;
		}
		for (i = 0; i < s->qd; i++) {
			ssize_t ret;

			if (!s->list[i] || aio_error(s->list[i]) == EINPROGRESS)
				continue;
			ret = aio_return(&s->cb[i]);
			if (ret == expect)
				r->done++;
			else
				bench_fail(r, "aio result %zd", ret);
			s->list[i] = NULL;
			inflight--;
			got++;
			bench_lat_tick(r);
		}
	}
}
