/* SPDX-License-Identifier: MIT */
/*
 * STUB (issue #2 replaces it): a mutex-serialized completion writer with a
 * tiny side-state table, only so that the rest of the library can be built
 * and tested against the internal API of ring.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring.h"

struct syslet__rstate {
	struct syslet_ring *ring;
	uint32_t reserved;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct syslet__rstate table[64];

int syslet__ring_check(const struct syslet_ring *ring)
{
	if (!ring)
		return -EFAULT;
	if ((uintptr_t)ring & 7)
		return -EINVAL;
	if (ring->elements == 0 || (ring->elements & (ring->elements - 1)))
		return -EINVAL;
	return 0;
}

int syslet__ring_state(struct syslet_ring *ring, struct syslet__rstate **rs)
{
	int i, ret = -ENOMEM;

	pthread_mutex_lock(&lock);
	for (i = 0; i < 64; i++) {
		if (table[i].ring == ring || !table[i].ring) {
			table[i].ring = ring;
			*rs = &table[i];
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

int syslet__ring_reserve(struct syslet_ring *ring, struct syslet__rstate **rs)
{
	int ret = syslet__ring_state(ring, rs);

	if (ret)
		return ret;
	pthread_mutex_lock(&lock);
	if ((uint32_t)(ring->kernel_head - ring->user_tail) + (*rs)->reserved >=
	    ring->elements)
		ret = -EBUSY;
	else
		(*rs)->reserved++;
	pthread_mutex_unlock(&lock);
	return ret;
}

void syslet__ring_unreserve(struct syslet__rstate *rs)
{
	pthread_mutex_lock(&lock);
	rs->reserved--;
	pthread_mutex_unlock(&lock);
}

void syslet__ring_post(struct syslet__rstate *rs, struct syslet__cnode *n)
{
	struct syslet_ring *ring = rs->ring;
	uint32_t h;

	pthread_mutex_lock(&lock);
	h = ring->kernel_head;
	ring->comp[h & (ring->elements - 1)].status = n->status;
	ring->comp[h & (ring->elements - 1)].caller_data = n->caller_data;
	n->index = h;
	atomic_store_explicit((_Atomic uint32_t *)&ring->kernel_head, h + 1,
			      memory_order_release);
	rs->reserved--;
	pthread_mutex_unlock(&lock);
	syscall(SYS_futex, &ring->kernel_head, FUTEX_WAKE_PRIVATE, 1 << 30,
		NULL, NULL, 0);
	atomic_store_explicit(&n->posted, 1, memory_order_release);
}

struct syslet_ring *syslet__ring_of(const struct syslet__rstate *rs)
{
	return rs->ring;
}

void syslet__ring_atfork_child(void)
{
	int i;

	for (i = 0; i < 64; i++)
		table[i].reserved = 0;
}
