/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: libFuzzer harness for indirect()'s argument validation
 * (SPEC 3). The input chooses flags, a NULL or real regs, paramslen (up to
 * past the union), NULL or real params and their bytes, the ring pointer
 * (none, the harness's ring, or the ring plus 1..7 bytes), the ring header
 * (kernel_head, user_tail, any elements), the frame (none, ip only, sp
 * only, both) and a call from a harmless subset: getpid, gettid, getppid,
 * sched_yield, read/write on a non-blocking pipe the harness owns,
 * nanosleep of at most 1 us, close of an fd >= 100000, eventfd2 and
 * numbers no kernel has. The answer must be the one SPEC 3's table gives,
 * in its order; a pending call's completion must arrive (10 s bound) with
 * its caller_data, and nothing may be written outside the ring's slots.
 *
 * Shared state: ring, stack and notified are the harness's; a call's
 * notifier runs on a worker, and main waits for it with syslet_drain().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#define SLOTS 256
#define STACK_BYTES (128 * 1024)

struct input {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct input *in, size_t bytes)
{
	uint64_t v = 0;

	while (bytes--) {
		v = v << 8 | (in->n ? *in->p : 0);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

static _Alignas(64) unsigned char ring_mem[sizeof(struct syslet_ring) +
					   SLOTS * 16 + 64];
static _Alignas(16) unsigned char stack[STACK_BYTES];
static _Atomic int notified;
static int pipe_rd, pipe_wr, efd;
static char iobuf[64];
static const struct timespec naps[] = { { 0, 0 }, { 0, 1 }, { 0, 1000 } };
static const uint64_t one = 1;

static void notifier(void)
{
	atomic_fetch_add_explicit(&notified, 1, memory_order_relaxed);
}

static void setup(void)
{
	int p[2];

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
		abort();
	pipe_rd = p[0];
	pipe_wr = p[1];
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		abort();
}

enum call {
	C_GETPID,
	C_GETTID,
	C_GETPPID,
	C_YIELD,
	C_READ,
	C_WRITE,
	C_SLEEP,
	C_CLOSE,
	C_EVENTFD,
	C_EFD_WRITE,
	C_BADNR,
	NCALLS
};

static int creates_fd(enum call c)
{
	return c == C_EVENTFD;
}

/* Fill @regs with a harmless call; returns it. */
static enum call pick(struct input *in, struct indirect_registers *regs)
{
	enum call c = (enum call)(take(in, 1) % NCALLS);
	uint64_t a = take(in, 2);
	static const long bad[] = {
		-1,    1023,	     4095, 0x40000000 + 1023, (long)1 << 40,
		-4096, (long)1 << 32
	};

	switch (c) {
	case C_GETPID:
		FILL_IN(*regs, SYS_getpid);
		break;
	case C_GETTID:
		FILL_IN(*regs, SYS_gettid);
		break;
	case C_GETPPID:
		FILL_IN(*regs, SYS_getppid);
		break;
	case C_YIELD:
		FILL_IN(*regs, SYS_sched_yield);
		break;
	case C_READ:
		FILL_IN(*regs, SYS_read, pipe_rd, iobuf, a % sizeof(iobuf));
		break;
	case C_WRITE:
		FILL_IN(*regs, SYS_write, pipe_wr, iobuf, a % sizeof(iobuf));
		break;
	case C_SLEEP:
		FILL_IN(*regs, SYS_nanosleep, &naps[a % 3], NULL);
		break;
	case C_CLOSE:
		FILL_IN(*regs, SYS_close, 100000 + a);
		break;
	case C_EVENTFD:
		FILL_IN(*regs, SYS_eventfd2, a & 7,
			a & 0x100 ? EFD_CLOEXEC :
			a & 0x200 ? 0x7000 :
				    0);
		break;
	case C_EFD_WRITE:
		FILL_IN(*regs, SYS_write, efd, &one, sizeof(one));
		break;
	default:
		FILL_IN(*regs, bad[a % (sizeof(bad) / sizeof(bad[0]))]);
		break;
	}
	return c;
}

static void fail(const char *what, long ret, int err, int want)
{
	fprintf(stderr, "fuzz_indirect: %s: returned %ld errno %d, want %d\n",
		what, ret, err, want);
	abort();
}

/* Keep the harness's pipe and eventfd from filling up. */
static void drain_fds(void)
{
	char sink[4096];
	uint64_t v;

	while (read(pipe_rd, sink, sizeof(sink)) > 0)
		;
	if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		abort();
}

/* Wait for the one completion of a pending call, check it, consume it. */
static void collect(struct syslet_ring *ring, uint32_t head, uint64_t data,
		    enum call c)
{
	struct timespec ten_s = { 10, 0 };
	struct syslet_completion *comp;
	int ret;

	/* EINTR: libFuzzer's own SIGALRM interrupted the wait */
	while ((ret = syslet_ring_wait_timeout(ring, head, &ten_s)) &&
	       errno == EINTR)
		;
	if (ret)
		fail("pending call: no completion in 10 s", -1, errno, 0);
	if (syslet_ring_head(ring) != head + 1)
		fail("one call, several completions", syslet_ring_head(ring), 0,
		     (int)(head + 1));
	comp = syslet_ring_slot(ring, head);
	if (comp->caller_data != data)
		fail("caller_data", (long)comp->caller_data, 0, (int)data);
	if (c == C_BADNR && (int64_t)comp->status != -ENOSYS)
		fail("unknown number's completion", (long)comp->status, 0,
		     -ENOSYS);
	if (creates_fd(c) && (int64_t)comp->status >= 0)
		close((int)comp->status);
	syslet_ring_advance(ring, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct syslet_ring *ring = (struct syslet_ring *)(void *)ring_mem;
	struct input in = { data, size };
	struct indirect_registers regs, *rp = &regs;
	union indirect_params params, eff;
	void *pp = &params;
	uint8_t mode = (uint8_t)take(&in, 1), rmode = (uint8_t)take(&in, 1);
	int flags = 0, want, err, presyslet;
	size_t len, i;
	uint32_t head, tail, elements, off = 0;
	enum call c;
	long ret;

	if (!pipe_wr)
		setup();
	if (mode & 1)
		flags = (int)take(&in, 4);
	if ((mode & 6) == 6)
		rp = NULL;
	len = mode & 8 ? (size_t)take(&in, 1) % 48 : sizeof(params);
	if ((mode & 0x30) == 0x30)
		pp = NULL;
	c = pick(&in, &regs);
	memset(&params, 0, sizeof(params));
	for (i = 0; i < sizeof(params); i++)
		((uint8_t *)&params)[i] = (uint8_t)take(&in, 1);

	/* the ring: header from the input; power-of-two sizes fit SLOTS */
	head = (uint32_t)take(&in, 4);
	tail = (uint32_t)take(&in, 4);
	elements = (uint32_t)take(&in, 4);
	if (elements && !(elements & (elements - 1)))
		elements = 1u << (__builtin_ctz(elements) % 9);
	if ((rmode & 3) == 2)
		tail = head -
		       (uint32_t)(take(&in, 1) % ((uint64_t)elements + 1));
	memset(ring_mem, 0xa5, sizeof(ring_mem));
	ring->kernel_head = head;
	ring->user_tail = tail;
	ring->elements = elements;
	ring->wait_group = 0;
	switch (rmode >> 2 & 3) {
	case 0:
		params.syslet.completion_ring_ptr = 0;
		break;
	case 1:
		off = (uint32_t)take(&in, 1) % 8;
		/* fall through */
	default:
		params.syslet.completion_ring_ptr =
			(uint64_t)(uintptr_t)(ring_mem + off);
		break;
	}
	switch (rmode >> 4 & 3) {
	case 0:
		params.syslet.frame.ip = params.syslet.frame.sp = 0;
		break;
	case 1:
		params.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
		params.syslet.frame.sp = 0;
		break;
	case 2:
		params.syslet.frame.ip = 0;
		params.syslet.frame.sp =
			(uint64_t)(uintptr_t)(stack + sizeof(stack));
		break;
	default:
		params.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
		params.syslet.frame.sp =
			(uint64_t)(uintptr_t)(stack + sizeof(stack));
		break;
	}

	/*
	 * A block that ends inside frame.sp would hand the library a cut
	 * stack address, which no check can catch (the program's fault, not
	 * the library's): such a block carries no sp.
	 */
	if (len > offsetof(struct syslet_args, frame.sp) &&
	    len < sizeof(params))
		params.syslet.frame.sp = 0;
	/* what indirect() sees: the first len bytes, the rest zero */
	memset(&eff, 0, sizeof(eff));
	if (pp && len <= sizeof(eff))
		memcpy(&eff, &params, len);
	/*
	 * No ring: the pre-syslet path. In the 2007 ABI file_flags.flags
	 * overlays the low bytes of completion_ring_ptr, so a block shorter
	 * than the pointer, or one holding only O_CLOEXEC|O_NONBLOCK bits, is
	 * a flags block (as indirect.c reads it).
	 */
	presyslet = len < sizeof(uint64_t) ||
		    !(eff.syslet.completion_ring_ptr &
		      ~(uint64_t)(O_CLOEXEC | O_NONBLOCK));

	errno = 0;
	ret = indirect(rp, pp, len, flags);
	err = errno;

	/* SPEC 3, in its order */
	if (flags)
		want = EINVAL;
	else if (!rp)
		want = EFAULT;
	else if (len > sizeof(params))
		want = EINVAL;
	else if (!pp && len)
		want = EFAULT;
	else if (presyslet)
		want = c == C_EVENTFD ? -1 : EINVAL;
	else if (!eff.syslet.frame.ip != !eff.syslet.frame.sp)
		want = EINVAL;
	else if (eff.syslet.completion_ring_ptr & 7)
		want = EINVAL;
	else if (!elements || (elements & (elements - 1)))
		want = EINVAL;
	else if (eff.syslet.completion_ring_ptr !=
		 (uint64_t)(uintptr_t)ring_mem)
		abort(); /* the ring pointer came from a short params */
	else if (c == C_BADNR && ((int64_t)SYSLET__REG_NR(&regs) < 0 ||
				  SYSLET__REG_NR(&regs) >> 32))
		want = ENOSYS;
	else
		want = -1;

	if (want > 0) {
		if (ret != -1 || err != want)
			fail("refused call", ret, err, want);
	} else if (ret == -1 && err == ESYSLETPENDING) {
		if (presyslet)
			fail("pending without a ring", ret, err, 0);
		if ((uint32_t)(head - tail) >= elements)
			fail("pending into a full ring", ret, err, EBUSY);
		collect(ring, head, eff.syslet.caller_data, c);
	} else if (ret == -1 && err == EBUSY) {
		if (presyslet || (uint32_t)(head - tail) < elements)
			fail("EBUSY with a free slot", ret, err, 0);
	} else if (creates_fd(c) && ret >= 0) {
		close((int)ret);
	} else if (c == C_BADNR && !(ret == -1 && err == ENOSYS)) {
		fail("unknown number", ret, err, ENOSYS);
	}
	/* EINTR: libFuzzer's own SIGALRM interrupted the drain */
	while (syslet_drain())
		if (errno != EINTR)
			abort();
	/* nothing but the slots of a valid ring may change */
	if (want > 0 || presyslet) {
		for (i = sizeof(struct syslet_ring); i < sizeof(ring_mem); i++)
			if (ring_mem[i] != 0xa5)
				fail("ring written by a refused call", (long)i,
				     0, 0);
	}
	for (i = 0; i < 64; i++)
		if (ring_mem[sizeof(struct syslet_ring) + SLOTS * 16 + i] !=
		    0xa5)
			fail("written past the ring", (long)i, 0, 0);
	drain_fds();
	return 0;
}
