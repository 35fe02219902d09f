/* SPDX-License-Identifier: MIT */
/* STUB (issue #2 replaces it): futex wait on kernel_head. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "ring.h"

int syslet__ring_wait(struct syslet_ring *ring, uint32_t user_idx,
		      const struct timespec *timeout)
{
	int ret = syslet__ring_check(ring);

	if (ret)
		return ret;
	while (syslet_ring_head(ring) == user_idx) {
		if (syscall(SYS_futex, &ring->kernel_head, FUTEX_WAIT_PRIVATE,
			    user_idx, timeout, NULL, 0) < 0 &&
		    (errno == EINTR || errno == ETIMEDOUT))
			return -errno;
	}
	return 0;
}

SYSLET_EXPORT int syslet_ring_wait(struct syslet_ring *ring,
				   unsigned long user_idx)
{
	int ret = syslet__ring_wait(ring, (uint32_t)user_idx, NULL);

	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

SYSLET_EXPORT int syslet_ring_wait_timeout(struct syslet_ring *ring,
					   unsigned long user_idx,
					   const struct timespec *timeout)
{
	int ret = syslet__ring_wait(ring, (uint32_t)user_idx, timeout);

	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}
