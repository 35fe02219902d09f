/* SPDX-License-Identifier: MIT */
/*
 * syslet-demo: a first look at libsyslet. A call that would block goes
 * pending (ESYSLETPENDING), its completion lands in the ring, and
 * syslet_ring_wait() sleeps until it does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <syslet/syslet.h>

int main(void)
{
	struct syslet_ring *ring = aligned_alloc(8, syslet_ring_size(8));
	union indirect_params p = { 0 };
	struct indirect_registers regs;
	struct syslet_completion *c;
	char buf[64];
	int fds[2];
	long r;

	if (!ring || pipe(fds) || syslet_ring_init(ring, 8))
		return 1;
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = 42;

	FILL_IN(regs, SYS_read, fds[0], buf, sizeof(buf));
	r = indirect(&regs, &p, sizeof(p), 0);
	printf("read of an empty pipe: indirect() = %ld, errno %s\n", r,
	       r < 0 && errno == ESYSLETPENDING ? "ESYSLETPENDING" :
						  strerror(errno));
	printf("ring: kernel_head %u, user_tail %u\n", syslet_ring_head(ring),
	       ring->user_tail);
	if (write(fds[1], "hello", 5) != 5)
		return 1;
	if (syslet_ring_wait(ring, ring->user_tail))
		return 1;
	c = syslet_ring_slot(ring, ring->user_tail);
	printf("completion: status %ld, caller_data %lu, kernel_head %u\n",
	       (long)c->status, (unsigned long)c->caller_data,
	       syslet_ring_head(ring));
	syslet_ring_advance(ring, 1);
	free(ring);
	return 0;
}
