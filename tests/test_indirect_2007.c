/* SPDX-License-Identifier: MIT */
/*
 * Description: a client written the 2007 way: pread/pwrite/fdatasync on a
 * buffered and an O_DIRECT file through indirect(), a ring sized to its
 * queue depth (which counts notifiers still due), one notifier stack shared
 * by every call, notifiers ending in syscall(SYS_exit, 0). 20,000
 * operations: data intact, every completion exactly once, every notifier
 * run, no O_DIRECT transfer inline, no growth in threads or memory.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define OPS 20000
#define QD 16
#define BLOCKS 256
#define BS 4096

static _Alignas(16) unsigned char nstack[65536];
static _Atomic long notified;

/* The 2007 notifier: it has nothing to return to, so it exits. */
static void notifier(void)
{
	if (syslet_current_completion())
		atomic_fetch_add_explicit(&notified, 1, memory_order_relaxed);
	syscall(SYS_exit, 0);
}

struct file {
	int fd;
	unsigned int gen[BLOCKS]; /* generation written to each block */
	unsigned char busy[BLOCKS]; /* an op on it is in flight */
};

struct slot {
	unsigned char *buf;
	int op; /* 0 read, 1 write, 2 fdatasync, -1 */
	int f, blk;
	unsigned int gen;
	long id;
};

static struct file files[2];
static struct slot slots[QD];
static unsigned char seen[OPS];
static long inline_direct, pending_calls, inline_calls;

static void fill(unsigned char *b, int f, int blk, unsigned int gen)
{
	int i;

	for (i = 0; i < BS; i += 4) {
		unsigned int v = (unsigned int)(f << 28) ^
				 (unsigned int)(blk << 16) ^ gen ^
				 (unsigned int)i;

		memcpy(b + i, &v, 4);
	}
}

static void finish(int s, long status)
{
	struct slot *sl = &slots[s];
	unsigned char want[BS];

	assert_true(sl->id >= 0 && sl->id < OPS);
	assert_int_equal(seen[sl->id], 0);
	seen[sl->id] = 1;
	if (sl->op == 2) {
		assert_int_equal(status, 0);
	} else {
		assert_int_equal(status, BS);
		if (sl->op == 0) {
			fill(want, sl->f, sl->blk, files[sl->f].gen[sl->blk]);
			assert_memory_equal(sl->buf, want, BS);
		} else {
			files[sl->f].gen[sl->blk] = sl->gen;
		}
		files[sl->f].busy[sl->blk] = 0;
	}
	sl->op = -1;
}

static long status_field(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	fclose(f);
	return v;
}

static void reap(struct syslet_ring *ring)
{
	struct syslet_completion c = ring_pop(ring);

	finish((int)(c.caller_data & 0xff), (long)c.status);
}

/*
 * A completion is published before its notifier runs, and notifiers that
 * share a stack run one at a time: a client that only counted completions
 * could leave any number of notifiers queued behind the stack. The queue
 * depth counts them too: wait (bounded) until at most @n are due.
 */
static void notifiers_within(long n)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (pending_calls - atomic_load(&notified) > n) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > WAIT_SECONDS)
			fail_msg("notifiers stuck: %ld due",
				 pending_calls - atomic_load(&notified));
		sched_yield();
	}
}

static void test_client_2007(void **state)
{
	struct syslet_ring *ring = ring_new(QD);
	long threads_warm = 0, rss_warm = 0, threads_max = 0;
	char dir[] = "/var/tmp/syslet-2007-XXXXXX", path[64];
	struct indirect_registers regs;
	union indirect_params p;
	unsigned int seed = 1;
	long id, r, inflight = 0;
	int s, f, blk, i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (s = 0; s < QD; s++) {
		slots[s].buf = aligned_alloc(BS, BS);
		assert_non_null(slots[s].buf);
		slots[s].op = -1;
	}
	for (f = 0; f < 2; f++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, f);
		files[f].fd =
			open(path, O_RDWR | O_CREAT | (f ? O_DIRECT : 0), 0600);
		if (files[f].fd < 0 && f == 1)
			skip();
		assert_true(files[f].fd >= 0);
		for (blk = 0; blk < BLOCKS; blk++) {
			fill(slots[0].buf, f, blk, 0);
			assert_int_equal(pwrite(files[f].fd, slots[0].buf, BS,
						(off_t)blk * BS),
					 BS);
		}
	}
	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.frame.ip = (uint64_t)(uintptr_t)notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(nstack + sizeof(nstack));

	for (id = 0; id < OPS; id++) {
		struct slot *sl;

		/* a free slot: at most QD calls pending or unconsumed */
		while (inflight == QD) {
			reap(ring);
			inflight--;
		}
		notifiers_within(QD - 1);
		for (s = 0; slots[s].op != -1; s++)
			;
		sl = &slots[s];
		sl->id = id;
		sl->f = f = (int)(rand_r(&seed) & 1);
		do {
			blk = (int)(rand_r(&seed) % BLOCKS);
		} while (files[f].busy[blk]);
		sl->blk = blk;
		i = (int)(rand_r(&seed) % 64);
		sl->op = i == 0 ? 2 : i < 40 ? 0 : 1;
		p.syslet.caller_data = (uint64_t)(id << 8 | s);
		if (sl->op == 2) {
			FILL_IN(regs, SYS_fdatasync, files[f].fd);
		} else {
			files[f].busy[blk] = 1;
			if (sl->op == 1) {
				sl->gen = (unsigned int)id + 1;
				fill(sl->buf, f, blk, sl->gen);
			}
			FILL_IN(regs, sl->op ? SYS_pwrite64 : SYS_pread64,
				files[f].fd, sl->buf, BS, (long)blk * BS);
		}
		r = indirect(&regs, &p, sizeof(p), 0);
		if (PENDING(r)) {
			pending_calls++;
			inflight++;
		} else {
			if (f == 1 && sl->op != 2)
				inline_direct++;
			inline_calls++;
			finish(s, r < 0 ? -errno : r);
		}
		if (id == OPS / 5) {
			threads_warm = status_field("Threads:");
			rss_warm = status_field("VmRSS:");
		}
		if (id % 1000 == 0 && status_field("Threads:") > threads_max)
			threads_max = status_field("Threads:");
	}
	print_message("threads warm %ld now %ld max %ld, VmRSS warm %ld now "
		      "%ld kB\n",
		      threads_warm, status_field("Threads:"), threads_max,
		      rss_warm, status_field("VmRSS:"));
	/*
	 * Growth from 1/5 to the end of the run: a thread or a job leaked per
	 * call would add thousands of threads or megabytes; the pool's own
	 * elasticity stays within a few queue depths. ASan's quarantine and
	 * TSan's shadow keep memory resident: memory is not judged under them.
	 */
	assert_true(status_field("Threads:") <= threads_warm + 4 * QD);
#if !SANITIZED
	assert_true(status_field("VmRSS:") <= rss_warm + 4096);
#endif
	while (inflight--)
		reap(ring);
	assert_int_equal(syslet_drain(), 0);
	for (id = 0; id < OPS; id++)
		assert_int_equal(seen[id], 1);
	assert_int_equal(inline_direct, 0);
	assert_int_equal(atomic_load(&notified), pending_calls);
	ring_empty(ring);
	/* every block still holds what was last written to it */
	for (f = 0; f < 2; f++)
		for (blk = 0; blk < BLOCKS; blk++) {
			unsigned char want[BS];

			assert_int_equal(pread(files[f].fd, slots[0].buf, BS,
					       (off_t)blk * BS),
					 BS);
			fill(want, f, blk, files[f].gen[blk]);
			assert_memory_equal(slots[0].buf, want, BS);
		}
	print_message("2007 client: %d ops, %ld pending, %ld inline, "
		      "threads warm %ld max %ld\n",
		      OPS, pending_calls, inline_calls, threads_warm,
		      threads_max);
	for (f = 0; f < 2; f++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, f);
		close(files[f].fd);
		unlink(path);
	}
	rmdir(dir);
	for (s = 0; s < QD; s++)
		free(slots[s].buf);
	free(ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_2007),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
