/* SPDX-License-Identifier: MIT */
/*
 * syslet-2007: a program written in the style of the 2007 syslets v7
 * posting's test programs, ported to libsyslet as docs/porting.md
 * describes. Each line that changed says, in a "2007:" comment, what it
 * was. It reads a file in blocks, every read through indirect(), some
 * answered at once (page cache), the others completed in the ring; a
 * notifier on its own stack counts completions and ends with SYS_exit as
 * 2007 notifiers did; main waits on the ring with syslet_ring_wait().
 *
 *   syslet-2007 [FILE]    (default: a file it writes in /var/tmp)
 *
 * Prints the blocks read inline and through the ring, and checks that
 * every byte read is the byte the file holds. Exit 0 if all is well.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * 2007: a private copy of the ABI (struct syslet_ring, union
 * indirect_params, struct indirect_registers, FILL_IN) pasted from the
 * kernel headers of the patch. Now: the library's header, same names.
 */
#include <syslet/syslet.h>

#define BLOCK 4096
#define NBLOCKS 64
#define RING_ELEMENTS 128 /* > NBLOCKS: the ring never fills (EBUSY) */
#define NOTIFY_STACK 65536

static struct syslet_ring *ring;
static unsigned char buf[NBLOCKS][BLOCK];
static unsigned char notify_stack[NOTIFY_STACK] __attribute__((aligned(16)));
static volatile int notified;

/*
 * The notifier: runs on a worker, on notify_stack, after its completion is
 * in the ring. 2007: it ran in a new kernel thread and had to end with
 * sys_exit. It still may: libsyslet turns that exit into a return to the
 * worker (syslet_notify_exit(3) is the explicit way).
 */
static void notifier(void)
{
	__atomic_add_fetch(&notified, 1, __ATOMIC_RELEASE);
	syscall(SYS_exit, 0);
}

static int make_file(char *path)
{
	unsigned char b[BLOCK];
	int fd = mkstemp(path), i, j;

	if (fd < 0)
		return -1;
	unlink(path);
	for (i = 0; i < NBLOCKS; i++) {
		for (j = 0; j < BLOCK; j++)
			b[j] = (unsigned char)(i * 7 + j);
		if (write(fd, b, BLOCK) != BLOCK)
			return -1;
	}
	/* Out of the page cache: the first reads go pending. */
	if (fsync(fd))
		return -1;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	return fd;
}

static long async_pread(int fd, int block)
{
	struct indirect_registers regs;
	union indirect_params params;

	memset(&params, 0, sizeof(params));
	params.syslet.completion_ring_ptr = (uint64_t)(unsigned long)ring;
	params.syslet.caller_data = (uint64_t)block;
	params.syslet.frame.ip = (uint64_t)(unsigned long)notifier;
	/*
	 * The TOP of the notifier's stack: it grows down from here. (fio's
	 * 2007 engine passed notify_stack itself, the lowest address: the
	 * notifier then wrote below it, into whatever lay there.)
	 */
	params.syslet.frame.sp =
		(uint64_t)(unsigned long)(notify_stack + NOTIFY_STACK);
	FILL_IN(regs, __NR_pread64, fd, buf[block], BLOCK, (long)block * BLOCK);
	/* 2007: syscall(__NR_indirect, &regs, &params, sizeof(params), 0) */
	return indirect(&regs, &params, sizeof(params), 0);
}

int main(int argc, char **argv)
{
	char path[] = "/var/tmp/syslet-2007-XXXXXX";
	int fd, i, j, inline_n = 0, ring_n = 0, bad = 0;
	struct syslet_completion *c;
	unsigned long pending = 0;
	long ret;

	fd = argc > 1 ? open(argv[1], O_RDONLY) : make_file(path);
	if (fd < 0) {
		perror("syslet-2007: open");
		return 1;
	}
	/* 2007: memset(ring, 0, ...); ring->elements = RING_ELEMENTS; */
	ring = aligned_alloc(8, syslet_ring_size(RING_ELEMENTS));
	if (!ring || syslet_ring_init(ring, RING_ELEMENTS))
		return 1;

	for (i = 0; i < NBLOCKS; i++) {
		ret = async_pread(fd, i);
		if (ret >= 0) {
			inline_n++; /* the "cachehit" path of 2007 */
		} else if (errno == ESYSLETPENDING) {
			pending++;
		} else {
			/* 2007: the kernel overwrote; now EBUSY when full. */
			perror("syslet-2007: indirect");
			return 1;
		}
	}
	while (pending) {
		/* 2007: syscall(__NR_syslet_ring_wait, ring, ring->user_tail) */
		if (syslet_ring_wait(ring, ring->user_tail) && errno != EINTR) {
			perror("syslet-2007: syslet_ring_wait");
			return 1;
		}
		/* Consume every completion there is. */
		while (syslet_ring_head(ring) != ring->user_tail) {
			c = syslet_ring_slot(ring, ring->user_tail);
			if ((long)c->status != BLOCK) {
				fprintf(stderr, "block %lu: status %ld\n",
					(unsigned long)c->caller_data,
					(long)c->status);
				bad++;
			}
			ring_n++;
			pending--;
			/* 2007: ring->user_tail++ (a plain store) */
			syslet_ring_advance(ring, 1);
		}
	}
	/* Every notifier has run once its call is finished. */
	syslet_drain();
	for (i = 0; argc == 1 && i < NBLOCKS; i++)
		for (j = 0; j < BLOCK; j++)
			bad += buf[i][j] != (unsigned char)(i * 7 + j);
	printf("%d blocks: %d inline, %d through the ring, %d notifiers, "
	       "%d bad\n",
	       NBLOCKS, inline_n, ring_n,
	       __atomic_load_n(&notified, __ATOMIC_ACQUIRE), bad);
	close(fd);
	return bad || notified != ring_n;
}
