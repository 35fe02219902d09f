/* SPDX-License-Identifier: MIT */
/*
 * syslet-demo: a first look at libsyslet. A read of a cached file completes
 * inline (indirect() returns the byte count); a read of an empty pipe goes
 * pending (ESYSLETPENDING), its completion lands in the ring when data
 * arrives, and the notifier runs on the stack the program gave it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <syslet/syslet.h>

#define STACK_SIZE 65536

static _Alignas(16) unsigned char nstack[STACK_SIZE];

/* Runs on a worker, on nstack, after the completion is in the ring. */
static void notifier(void)
{
	struct syslet_completion *c = syslet_current_completion();
	unsigned char here;

	printf("notifier: on thread %ld, local variable at %p, inside the "
	       "program's stack [%p, %p): %s\n",
	       (long)syscall(SYS_gettid), (void *)&here, (void *)nstack,
	       (void *)(nstack + STACK_SIZE),
	       &here >= nstack && &here < nstack + STACK_SIZE ? "yes" : "NO");
	printf("notifier: announces status %ld, caller_data %lu\n",
	       (long)c->status, (unsigned long)c->caller_data);
}

static const char *say(long r)
{
	if (r >= 0)
		return "completed inline";
	return errno == ESYSLETPENDING ? "ESYSLETPENDING" : strerror(errno);
}

int main(void)
{
	struct syslet_ring *ring = aligned_alloc(8, syslet_ring_size(8));
	char path[] = "/var/tmp/syslet-demo-XXXXXX", buf[64], line[64];
	union indirect_params p = { 0 };
	struct indirect_registers regs;
	struct syslet_completion *c;
	int fds[2], fd;
	long r;

	if (!ring || pipe(fds) || syslet_ring_init(ring, 8))
		return 1;
	fd = mkstemp(path);
	if (fd < 0 || write(fd, "cached bytes", 12) != 12)
		return 1;
	unlink(path);
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(nstack + STACK_SIZE);
	printf("main: thread %ld\n", (long)syscall(SYS_gettid));

	/* 1. the file's page is in the page cache: no reason to block */
	p.syslet.caller_data = 1;
	FILL_IN(regs, SYS_pread64, fd, buf, sizeof(buf), 0);
	r = indirect(&regs, &p, sizeof(p), 0);
	printf("pread of a cached file: indirect() = %ld (%s), \"%.*s\"\n", r,
	       say(r), r > 0 ? (int)r : 0, buf);
	printf("ring: kernel_head %u (nothing posted for an inline call)\n",
	       syslet_ring_head(ring));

	/* 2. an empty pipe would block: the call goes to a worker */
	p.syslet.caller_data = 2;
	FILL_IN(regs, SYS_read, fds[0], line, sizeof(line));
	r = indirect(&regs, &p, sizeof(p), 0);
	printf("read of an empty pipe: indirect() = %ld (%s)\n", r, say(r));
	if (write(fds[1], "hello", 5) != 5)
		return 1;
	if (syslet_ring_wait(ring, ring->user_tail))
		return 1;
	c = syslet_ring_slot(ring, ring->user_tail);
	printf("completion: status %ld, caller_data %lu, \"%.5s\", "
	       "kernel_head %u\n",
	       (long)c->status, (unsigned long)c->caller_data, line,
	       syslet_ring_head(ring));
	syslet_ring_advance(ring, 1);
	syslet_drain();
	close(fd);
	free(ring);
	return 0;
}
