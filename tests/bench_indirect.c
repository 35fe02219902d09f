/* SPDX-License-Identifier: MIT */
/*
 * bench-indirect: the cost of indirect()'s inline paths against their
 * floors (issue 4): an inline-class call (getpid) against the raw system
 * call, and a cached 4 KiB read against preadv2(RWF_NOWAIT) and pread.
 * Tight loops through libsyslet.so; the median of ROUNDS rounds, ns/op.
 * A measuring program, not a test.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "sys.h"

#define ROUNDS 11
#define N 200000

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum { RAW_GETPID, IND_GETPID, PREAD, PREADV2, IND_PREAD, NCASES };
static const char *names[NCASES] = {
	"raw getpid",		"indirect(getpid)",
	"pread 4K cached",	"preadv2(RWF_NOWAIT) 4K",
	"indirect(pread64) 4K",
};

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/var/tmp/bench-indirect.dat";
	struct syslet_ring *ring = aligned_alloc(64, syslet_ring_size(64) + 48);
	static char buf[4096] __attribute__((aligned(4096)));
	double t[NCASES][ROUNDS], t0;
	struct iovec v = { buf, sizeof(buf) };
	struct indirect_registers rg, rr;
	union indirect_params p;
	int fd, c, k, i;

	fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || !ring || syslet_ring_init(ring, 64))
		return 1;
	memset(buf, 'a', sizeof(buf));
	if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf))
		return 1;
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	FILL_IN(rg, SYS_getpid);
	FILL_IN(rr, SYS_pread64, fd, buf, sizeof(buf), 0);
	for (k = 0; k < ROUNDS; k++) {
		for (c = 0; c < NCASES; c++) {
			t0 = now();
			switch (c) {
			case RAW_GETPID:
				for (i = 0; i < N; i++)
					syslet__sys0(SYS_getpid);
				break;
			case IND_GETPID:
				for (i = 0; i < N; i++)
					indirect(&rg, &p, sizeof(p), 0);
				break;
			case PREAD:
				for (i = 0; i < N; i++)
					syslet__sys4(SYS_pread64, fd, buf,
						     sizeof(buf), 0);
				break;
			case PREADV2:
				for (i = 0; i < N; i++)
					syslet__sys6(SYS_preadv2, fd, (long)&v,
						     1, 0, 0, RWF_NOWAIT);
				break;
			default:
				for (i = 0; i < N; i++)
					if (indirect(&rr, &p, sizeof(p), 0) !=
					    sizeof(buf))
						return 2;
				break;
			}
			t[c][k] = (now() - t0) / N;
		}
	}
	for (c = 0; c < NCASES; c++) {
		qsort(t[c], ROUNDS, sizeof(double), cmp);
		printf("%-26s %7.1f ns/op (min %.1f, max %.1f)\n", names[c],
		       t[c][ROUNDS / 2], t[c][0], t[c][ROUNDS - 1]);
	}
	printf("indirect(getpid) / raw getpid      = %.3f\n",
	       t[IND_GETPID][ROUNDS / 2] / t[RAW_GETPID][ROUNDS / 2]);
	printf("indirect(pread64) / preadv2 NOWAIT = %.3f\n",
	       t[IND_PREAD][ROUNDS / 2] / t[PREADV2][ROUNDS / 2]);
	printf("preadv2 NOWAIT / pread             = %.3f\n",
	       t[PREADV2][ROUNDS / 2] / t[PREAD][ROUNDS / 2]);
	close(fd);
	unlink(path);
	free(ring);
	return 0;
}
