/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: libFuzzer harness for syslet_ring_wait() and
 * syslet_ring_wait_timeout() (SPEC 4.3): a NULL, aligned or misaligned
 * ring, any header (kernel_head, user_tail, elements, wait_group), any
 * user_idx, and a timeout that is zero, a few nanoseconds or not a valid
 * timespec, so that no call can block for long. The answer must be:
 * EFAULT for NULL, EINVAL for misalignment, a bad elements or an invalid
 * timeout, 0 when kernel_head != user_idx, else ETIMEDOUT; and the wait
 * never writes the ring.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <syslet/syslet.h>

static _Alignas(64) unsigned char mem[sizeof(struct syslet_ring) + 4 * 16 + 8];

static uint64_t take(const uint8_t **p, size_t *n, size_t bytes)
{
	uint64_t v = 0;

	while (bytes--) {
		v = v << 8 | (*n ? **p : 0);
		if (*n) {
			(*p)++;
			(*n)--;
		}
	}
	return v;
}

static void fail(const char *what, int ret, int err, int want)
{
	fprintf(stderr, "fuzz_ring_wait: %s: returned %d errno %d, want %d\n",
		what, ret, err, want);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode = (uint8_t)take(&data, &size, 1);
	uint32_t off = mode & 8 ? (uint32_t)take(&data, &size, 1) % 8 : 0;
	struct syslet_ring *ring = (struct syslet_ring *)(void *)(mem + off),
			   hdr;
	unsigned long idx;
	struct timespec ts;
	unsigned char before[sizeof(mem)];
	int ret, err, want, valid_ts;

	hdr.kernel_head = (uint32_t)take(&data, &size, 4);
	hdr.user_tail = (uint32_t)take(&data, &size, 4);
	hdr.elements = (uint32_t)take(&data, &size, 4);
	hdr.wait_group = (uint32_t)take(&data, &size, 4);
	idx = (unsigned long)take(&data, &size, 8);
	if (mode & 0x10) /* mostly ask about the head or near it */
		idx = hdr.kernel_head + (unsigned long)(mode >> 5) % 3;
	ts.tv_sec = mode & 4 ? (time_t)(int64_t)take(&data, &size, 8) : 0;
	ts.tv_nsec = mode & 2 ? (long)(int64_t)take(&data, &size, 8) :
				(long)take(&data, &size, 1) % 1000;
	if (ts.tv_sec > 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000)
		ts.tv_sec = 0; /* never sleep for long */
	valid_ts = ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000;

	memset(mem, 0x5a, sizeof(mem));
	memcpy(ring, &hdr, sizeof(hdr));
	memcpy(before, mem, sizeof(mem));
	if ((mode & 1) == 1 && (mode & 0xc0) == 0xc0)
		ring = NULL;

	errno = 0;
	if (!(mode & 1) &&
	    (!ring || hdr.kernel_head != (uint32_t)idx || (uintptr_t)ring & 7 ||
	     !hdr.elements || (hdr.elements & (hdr.elements - 1))))
		ret = syslet_ring_wait(ring, idx); /* never blocks */
	else
		ret = syslet_ring_wait_timeout(ring, idx, &ts);
	err = errno;

	if (!ring)
		want = EFAULT;
	else if ((uintptr_t)ring & 7)
		want = EINVAL;
	else if (!hdr.elements || (hdr.elements & (hdr.elements - 1)))
		want = EINVAL;
	else if (hdr.kernel_head != (uint32_t)idx)
		want = 0;
	else if ((mode & 1) && !valid_ts)
		want = EINVAL;
	else
		want = ETIMEDOUT;

	/* user_idx past 32 bits: compared whole or truncated, both fine */
	if (want == ETIMEDOUT && idx >> 32 && ret == 0)
		want = 0;
	if (want == 0) {
		/* an invalid timeout may be refused before the head check */
		if (ret != 0 && !((mode & 1) && !valid_ts && err == EINVAL))
			fail("head != user_idx", ret, err, 0);
	} else if (ret != -1 || err != want) {
		fail("wait", ret, err, want);
	}
	if (memcmp(before, mem, sizeof(mem)))
		fail("the wait wrote the ring", ret, err, want);
	return 0;
}
