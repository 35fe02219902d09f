/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the indirect() tests: a ring, a syslet call in one
 * line, and a bounded wait for one completion that fails loudly.
 * Include after <cmocka.h>.
 */
#ifndef INDIRECT_UTIL_H
#define INDIRECT_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#define WAIT_SECONDS 30

static inline struct syslet_ring *ring_new(uint32_t elements)
{
	size_t size = (syslet_ring_size(elements) + 63) / 64 * 64;
	struct syslet_ring *r = aligned_alloc(64, size);

	assert_non_null(r);
	memset(r, 0, syslet_ring_size(elements));
	assert_int_equal(syslet_ring_init(r, elements), 0);
	return r;
}

static inline void params_for(union indirect_params *p,
			      struct syslet_ring *ring, uint64_t cd)
{
	memset(p, 0, sizeof(*p));
	p->syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p->syslet.caller_data = cd;
}

/* indirect() of @nr with up to six arguments on @ring, caller_data @cd. */
#define SYS_IND(ring, cd, ...)                     \
	__extension__({                            \
		union indirect_params p_;          \
		struct indirect_registers r_;      \
		params_for(&p_, (ring), (cd));     \
		FILL_IN(r_, __VA_ARGS__);          \
		indirect(&r_, &p_, sizeof(p_), 0); \
	})

/* True if the last indirect() answered -1/ESYSLETPENDING. */
#define PENDING(r) ((r) == -1 && errno == ESYSLETPENDING)

/* Wait (bounded) for the next completion of @ring and consume it. */
static inline struct syslet_completion ring_pop(struct syslet_ring *ring)
{
	struct timespec ts = { WAIT_SECONDS, 0 };
	struct syslet_completion c;
	uint32_t tail = ring->user_tail;

	if (syslet_ring_head(ring) == tail)
		assert_int_equal(syslet_ring_wait_timeout(ring, tail, &ts), 0);
	c = *syslet_ring_slot(ring, tail);
	syslet_ring_advance(ring, 1);
	return c;
}

/* No completion is there, and none arrives (ring empty and head still). */
static inline void ring_empty(struct syslet_ring *ring)
{
	assert_int_equal(syslet_ring_head(ring), ring->user_tail);
}

/*
 * The kernel's record lock commands, for raw fcntl calls: glibc's F_GETLK,
 * F_SETLK, F_SETLKW are 12..14 on ppc64 (only its fcntl() maps them back).
 */
#define KF_GETLK 5
#define KF_SETLK 6
#define KF_SETLKW 7

/*
 * Skip the calling test unless the kernel refuses, rather than waits,
 * under RWF_NOWAIT on a fresh pipe or on a fresh file in @dir: Debian 12's
 * Linux 6.1 answers EOPNOTSUPP for pipes and tmpfs, so indirect() punts
 * there the reads and writes that newer kernels let it run inline.
 */
static inline void need_nowait(int fd, const char *what)
{
	struct iovec v;
	char b = 0;
	long r;

	v.iov_base = &b;
	v.iov_len = 1;
	/* longs: syscall(2) reads its variadic arguments as long */
	r = syscall(SYS_preadv2, fd, &v, 1L, 0L, 0L, (long)RWF_NOWAIT);
	if (r < 0 && errno == ESPIPE) /* a pipe: the current position */
		r = syscall(SYS_preadv2, fd, &v, 1L, -1L, 0L, (long)RWF_NOWAIT);
	close(fd);
	if (r < 0 && errno == EOPNOTSUPP) {
		print_message("no RWF_NOWAIT on %s in this kernel: skipped\n",
			      what);
		skip();
	}
}

static inline void need_nowait_pipe(void)
{
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	close(fds[1]);
	need_nowait(fds[0], "pipes");
}

static inline void need_nowait_file(const char *dir)
{
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "%s/nowait-probe", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	unlink(path);
	need_nowait(fd, dir);
}

#endif /* INDIRECT_UTIL_H */
