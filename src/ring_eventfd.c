/* SPDX-License-Identifier: MIT */
/*
 * syslet_ring_eventfd(): attach an eventfd that becomes readable when a
 * ring holds completions the program has not consumed (SPEC 6, extension).
 *
 * Shared state: the ring's side state (ring.c): its efd field and the
 * attachment's reference. This file owns the attachment's reference: one
 * while an eventfd is attached, taken when efd goes from -1 to a
 * descriptor and given back when it goes to -1 or is replaced (the
 * exchange in syslet__ring_efd_set() tells which, so racing calls keep
 * exactly one). The posting side (when the library writes to the eventfd,
 * and why no wake-up is lost) is ring.c's; the contract is
 * syslet_ring_eventfd(3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "forked.h"
#include "ring.h"

#define EVENTFD_LINK "anon_inode:[eventfd]"

/*
 * 0 if @fd is an open eventfd that can be written (*@blocking: without
 * O_NONBLOCK); -EBADF if not open or not open for writing (O_PATH, read
 * only: write(2) would say EBADF), -EINVAL if not an eventfd.
 */
static int check_eventfd(int fd, bool *blocking)
{
	char path[64], link[sizeof(EVENTFD_LINK) + 1];
	ssize_t n;
	int fl;

	if (fd < 0 || (fl = fcntl(fd, F_GETFL)) < 0 || (fl & O_PATH) ||
	    (fl & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	*blocking = !(fl & O_NONBLOCK);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	/* Without /proc the kind cannot be checked: take the caller's word. */
	if (n < 0)
		return 0;
	if ((size_t)n != sizeof(EVENTFD_LINK) - 1 ||
	    memcmp(link, EVENTFD_LINK, (size_t)n))
		return -EINVAL;
	return 0;
}

static int detach(struct syslet_ring *ring)
{
	struct syslet__rstate *rs;

	/* A ring with no side state has no eventfd: nothing to make. */
	if (syslet__ring_get(ring, false, &rs))
		return 0;
	if (syslet__ring_efd_set(rs, -1, false) >= 0)
		syslet__ring_put(rs);
	syslet__ring_put(rs);
	return 0;
}

static int attach(struct syslet_ring *ring, int efd, bool blocking)
{
	struct syslet__rstate *rs;
	int ret;

	ret = syslet__ring_get(ring, true, &rs);
	if (ret)
		return ret;
	/* Keep the reference as the attachment's, unless one was there. */
	if (syslet__ring_efd_set(rs, efd, blocking) >= 0)
		syslet__ring_put(rs);
	/*
	 * Completions published before the attachment found no eventfd:
	 * signal them now. Seq_cst: after the efd exchange (Dekker with a
	 * combiner's head exchange, then efd load): a publish this load
	 * misses saw the eventfd. A spurious write is harmless.
	 */
	if (atomic_load_explicit((_Atomic uint32_t *)&ring->kernel_head,
				 memory_order_seq_cst) !=
	    atomic_load_explicit((_Atomic uint32_t *)&ring->user_tail,
				 memory_order_seq_cst))
		syslet__efd_signal(efd, blocking);
	return 0;
}

static int ring_eventfd(struct syslet_ring *ring, int efd)
{
	int ret = syslet__ring_check(ring);
	bool blocking;

	if (ret)
		return ret;
	/* A raw fork child: bucket locks a parent thread held (forked.c). */
	syslet__forked_check();
	if (efd == -1)
		return detach(ring);
	ret = check_eventfd(efd, &blocking);
	if (ret)
		return ret;
	return attach(ring, efd, blocking);
}

SYSLET_EXPORT int syslet_ring_eventfd(struct syslet_ring *ring, int efd)
{
	int saved = errno, ret = ring_eventfd(ring, efd);

	if (ret) {
		errno = -ret;
		return -1;
	}
	errno = saved;
	return 0;
}
