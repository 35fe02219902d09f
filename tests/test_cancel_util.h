/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the syslet_cancel() tests (test_cancel,
 * test_cancel_transfers): CHILD for a fork child, which has no cmocka; the
 * skip of the fork cases under the sanitizers; the calls queued in the
 * pool, from its stats; whether a worker thread sits in a given system
 * call, from /proc; and a fork child's bounded wait for its next
 * completion. Include after <cmocka.h> and indirect_util.h.
 */
#ifndef SYSLET_TEST_CANCEL_UTIL_H
#define SYSLET_TEST_CANCEL_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

/* In a fork child: no cmocka, an exit status naming the failed line. */
#define CHILD(c)                                                         \
	do {                                                             \
		if (!(c)) {                                              \
			fprintf(stderr, "child %d: %s\n", __LINE__, #c); \
			_exit(1);                                        \
		}                                                        \
	} while (0)

/*
 * The fork cases start workers in a child of a threaded parent, which TSan
 * does not support, and gcc 12's ASan allocator may hang in
 * (tests/meson.build).
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SKIP_FORK_UNDER_SANITIZER() skip()
#else
#define SKIP_FORK_UNDER_SANITIZER() ((void)0)
#endif

/* The calls queued in all shards, as @st counts them. */
static inline uint32_t queued(const struct syslet_stats *st)
{
	uint32_t i, n = 0;

	for (i = 0; i < st->shards; i++)
		n += st->queue_depth[i];
	return n;
}

/* Read /proc file @path into @buf of @size, 0-terminated; its length or -1. */
static inline ssize_t proc_read(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

/*
 * Look @tries times, 1 ms apart, whether a worker thread of process @pid
 * (0: this one) sits in system call @nr, with first argument @a0 unless
 * @any, as /proc/PID/task/TID/syscall shows; true once one does.
 */
static inline bool worker_in(pid_t pid, long nr, bool any, unsigned long a0,
			     int tries)
{
	char proc[32], path[320], buf[128];
	unsigned long arg = 0;
	struct dirent *d;
	bool in = false;
	long got;
	DIR *dir;
	int i;

	if (pid)
		snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	else
		snprintf(proc, sizeof(proc), "/proc/self");
	for (i = 0; i < tries && !in; i++) {
		if (i)
			usleep(1000);
		snprintf(path, sizeof(path), "%s/task", proc);
		dir = opendir(path);
		if (!dir)
			return false;
		while (!in && (d = readdir(dir))) {
			snprintf(path, sizeof(path), "%s/task/%s/comm", proc,
				 d->d_name);
			if (proc_read(path, buf, sizeof(buf)) < 7 ||
			    strncmp(buf, "syslet/", 7))
				continue;
			snprintf(path, sizeof(path), "%s/task/%s/syscall", proc,
				 d->d_name);
			if (proc_read(path, buf, sizeof(buf)) <= 0)
				continue;
			in = sscanf(buf, "%ld %lx", &got, &arg) >= 1 &&
			     got == nr && (any || arg == a0);
		}
		closedir(dir);
	}
	return in;
}

/* In a fork child: the next completion of @ring, waited for (bounded). */
static inline struct syslet_completion child_pop(struct syslet_ring *ring)
{
	struct timespec ts = { WAIT_SECONDS, 0 };
	struct syslet_completion c;
	uint32_t t = ring->user_tail;

	if (syslet_ring_head(ring) == t)
		CHILD(!syslet_ring_wait_timeout(ring, t, &ts));
	c = *syslet_ring_slot(ring, t);
	syslet_ring_advance(ring, 1);
	return c;
}

#endif /* SYSLET_TEST_CANCEL_UTIL_H */
