/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: a read of evicted pages goes pending, deterministically.
 * test_try.c's pending cases skip when the disk answers 20 reads
 * of evicted pages inline (a virtio disk the host caches can finish the
 * readahead before RWF_NOWAIT looks again); a try path that blocked the
 * caller (a plain pread instead of RWF_NOWAIT) gives the same whole answer
 * inline and would hide behind that skip. Here the reading process sits in
 * a blkio cgroup (v1) whose throttle lets one read I/O a second reach the
 * disk: a readahead started by RWF_NOWAIT is held in the throttle's queue,
 * so the page cannot be ready when the kernel looks again, whatever the
 * disk. First the kernel itself is asked (preadv2 RWF_NOWAIT must say
 * EAGAIN there, else the case is skipped: nothing to punt); then every
 * read through indirect() of evicted pages must go pending (never a skip)
 * and its completion carry the whole transfer, the part a try moved inline
 * included.
 *
 * Needs root, a blkio cgroup v1 hierarchy with throttling and a test
 * directory on a block device; else 77. The case runs in a fork child, the
 * only task of its cgroup, which the parent removes afterwards.
 *
 * Shared state: none between threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <syslet/syslet.h>

#define BLKIO "/sys/fs/cgroup/blkio"
#define FILE_SIZE (64 * 1024)
#define ALARM_S 60 /* throttled reads: one a second */
#define WAIT_S 30
#define SKIP 77

#define CHECK(c)                                                       \
	do {                                                           \
		if (!(c)) {                                            \
			fprintf(stderr, "child %s:%d: %s\n", __FILE__, \
				__LINE__, #c);                         \
			_exit(1);                                      \
		}                                                      \
	} while (0)

static char dir[512], cg[256];

static unsigned char pat(long i)
{
	return (unsigned char)(i * 7 + 3);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* The whole disk holding @dev (a partition's parent), as "MAJ:MIN". */
static int disk_of(dev_t dev, char *out, size_t size)
{
	char path[128], buf[32];
	ssize_t n;
	int fd;

	if (!major(dev))
		return -1; /* tmpfs, overlay: no block device */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition",
		 major(dev), minor(dev));
	if (access(path, F_OK))
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/dev",
			 major(dev), minor(dev));
	else
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../dev",
			 major(dev), minor(dev));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 1)
		return -1;
	buf[n - 1] = 0; /* the newline */
	snprintf(out, size, "%s", buf);
	return 0;
}

/* Drop @fd's pages and check (mincore) that none is left. */
static void evict(int fd)
{
	unsigned char v[FILE_SIZE / 4096 + 1];
	void *m = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	long pages = (FILE_SIZE + sysconf(_SC_PAGESIZE) - 1) /
		     sysconf(_SC_PAGESIZE),
	     i;
	int tries;

	CHECK(m != MAP_FAILED);
	for (tries = 0; tries < 1000; tries++) {
		CHECK(!posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		CHECK(!mincore(m, FILE_SIZE, v));
		for (i = 0; i < pages && !(v[i] & 1); i++)
			;
		if (i == pages)
			break;
		usleep(1000);
	}
	CHECK(tries < 1000);
	munmap(m, FILE_SIZE);
}

static struct syslet_completion pop(struct syslet_ring *r)
{
	struct timespec ts = { WAIT_S, 0 };
	struct syslet_completion c;
	uint32_t t = r->user_tail;

	if (syslet_ring_head(r) == t)
		CHECK(!syslet_ring_wait_timeout(r, t, &ts));
	c = *syslet_ring_slot(r, t);
	syslet_ring_advance(r, 1);
	return c;
}

static long ind(struct syslet_ring *r, uint64_t cd, long nr, long a0, long a1,
		long a2, long a3)
{
	union indirect_params ip = { 0 };
	struct indirect_registers regs;

	FILL_IN(regs, nr, a0, a1, a2, a3);
	ip.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)r;
	ip.syslet.caller_data = cd;
	return indirect(&regs, &ip, sizeof(ip), 0);
}

static void check_pat(const unsigned char *b, long off, long n)
{
	long i;

	for (i = 0; i < n; i++)
		CHECK(b[i] == pat(off + i));
}

/* A read through indirect() that must go pending; its total, checked. */
static void pending_read(struct syslet_ring *r, int fd, long off, long len,
			 uint64_t cd)
{
	unsigned char *b = calloc(1, (size_t)len);
	struct syslet_completion c;
	long ret;

	CHECK(b);
	ret = ind(r, cd, SYS_pread64, fd, (long)b, len, off);
	if (ret != -1 || errno != ESYSLETPENDING)
		fprintf(stderr, "pread64 of %ld at %ld: %ld (errno %d)\n", len,
			off, ret, errno);
	CHECK(ret == -1 && errno == ESYSLETPENDING);
	c = pop(r);
	CHECK(c.caller_data == cd && (long)c.status == len);
	check_pat(b, off, len);
	free(b);
}

static int throttled(void)
{
	size_t rsize = (syslet_ring_size(8) + 63) / 64 * 64;
	struct syslet_ring *r = aligned_alloc(64, rsize);
	unsigned char b[4096], *data = malloc(FILE_SIZE);
	struct iovec v = { b, sizeof(b) };
	char path[600], rule[64], disk[32], pid[32];
	struct syslet_completion c;
	struct stat st;
	long i, ret;
	int fd;

	CHECK(r && data && !syslet_ring_init(r, 8));
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && !fstat(fd, &st));
	if (disk_of(st.st_dev, disk, sizeof(disk))) {
		fprintf(stderr, "%s: not on a block device\n", dir);
		return SKIP;
	}
	for (i = 0; i < FILE_SIZE; i++)
		data[i] = pat(i);
	CHECK(write(fd, data, FILE_SIZE) == FILE_SIZE && !fsync(fd));
	/* No readahead: each read brings in only the pages it asks for. */
	CHECK(!posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM));
	evict(fd);
	snprintf(rule, sizeof(rule), "%s 1", disk);
	snprintf(path, sizeof(path), "%s/blkio.throttle.read_iops_device", cg);
	if (write_str(path, rule)) {
		fprintf(stderr, "%s: %s: %s\n", path, rule, strerror(errno));
		return SKIP;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	CHECK(!write_str(path, pid));
	/* The kernel's own answer first: EAGAIN, or nothing to punt. */
	if (preadv2(fd, &v, 1, 0, RWF_NOWAIT) != -1 || errno != EAGAIN) {
		fprintf(stderr, "RWF_NOWAIT read of an evicted page answered "
				"inline under a throttle\n");
		return SKIP;
	}
	/* An evicted page: pending, never inline. */
	pending_read(r, fd, 16384, 4096, 1);
	/* Half cached: the try takes 4 KiB inline, a worker the rest. */
	CHECK(pread(fd, b, 4096, 32768) == 4096);
	pending_read(r, fd, 32768, 16384, 2);
	/*
	 * Cached now: inline, the whole of it, as a rule. Not asserted: the
	 * page may have been reclaimed meanwhile (once in CI's TSan pass, on
	 * a loaded machine; test_try checks cached reads inline), and then a
	 * pending answer with the right bytes is the right one too.
	 */
	ret = ind(r, 3, SYS_pread64, fd, (long)b, 4096, 16384);
	if (ret == -1 && errno == ESYSLETPENDING) {
		fprintf(stderr, "the cached page went pending (reclaimed?)\n");
		c = pop(r);
		CHECK(c.caller_data == 3);
		ret = (long)c.status;
	}
	CHECK(ret == 4096);
	check_pat(b, 16384, 4096);
	CHECK(!syslet_drain());
	close(fd);
	free(data);
	free(r);
	return 0;
}

static void test_throttled(void **state)
{
	const char *base = getenv("SYSLET_TEST_DIR");
	char path[600];
	pid_t pid;
	int st, i;

	(void)state;
	if (geteuid() || access(BLKIO "/cgroup.procs", W_OK)) {
		fprintf(stderr, "no writable blkio cgroup v1 (or not root)\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/syslet-throttle-XXXXXX",
		 base ? base : "/var/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(cg, sizeof(cg), BLKIO "/syslet-test-%d", (int)getpid());
	assert_int_equal(mkdir(cg, 0700), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(ALARM_S);
		_exit(throttled());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* The child was the cgroup's only task: empty once it is gone. */
	for (i = 0; rmdir(cg) && errno == EBUSY && i < 1000; i++)
		usleep(1000);
	assert_int_equal(access(cg, F_OK), -1);
	snprintf(path, sizeof(path), "%s/file", dir);
	unlink(path);
	rmdir(dir);
	if (WIFSIGNALED(st))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st));
	if (WIFEXITED(st) && WEXITSTATUS(st) == SKIP)
		skip();
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_throttled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
