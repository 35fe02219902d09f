/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the stress programs: the scale knob, a watchdog that
 * turns a hang into a loud failure, rings, a child-process runner with a
 * bounded wait, and a failure macro that works from any thread.
 *
 * Shared state: none across programs; each helper documents its own.
 */
#ifndef SYSLET_STRESS_H
#define SYSLET_STRESS_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

/* Fail the whole program, from any thread, saying where and why. */
#define DIE(...) stress_die(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond)                                     \
	do {                                            \
		if (!(cond))                            \
			DIE("check failed: %s", #cond); \
	} while (0)

static inline void __attribute__((noreturn, format(printf, 3, 4)))
stress_die(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: FAIL: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (errno %d)\n", errno);
	fflush(stderr);
	_exit(1);
}

/* SYSLET_STRESS_SCALE (env) or the meson option stress_scale; >= 1. */
static inline long stress_scale(void)
{
	const char *s = getenv("SYSLET_STRESS_SCALE");
	long v = s ? strtol(s, NULL, 10) : 1;

	return v >= 1 ? v : 1;
}

/* True when the library was built to fail on demand and asked to. */
static inline int stress_faulty(void)
{
	return getenv("SYSLET_FAULT") != NULL;
}

/*
 * A wait's failure the caller should simply retry: a signal handler ran,
 * or (fault-injection runs) the library's side state could not be
 * allocated, which it reports up front as ENOMEM.
 */
static inline int stress_wait_retry(int err)
{
	return err == EINTR || (err == ENOMEM && stress_faulty());
}

static inline uint64_t stress_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Watchdog: a hang anywhere becomes a failure naming @what after @secs
 * (SIGALRM's default action would end the process silently).
 */
static const char *stress_watch_what = "?";

static inline void stress_on_alarm(int sig)
{
	static const char msg[] = "FAIL: watchdog expired: hang in ";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0 ||
	    write(2, stress_watch_what, strlen(stress_watch_what)) < 0 ||
	    write(2, "\n", 1) < 0)
		_exit(3);
	_exit(2);
}

static inline void stress_watchdog(const char *what, unsigned int secs)
{
	stress_watch_what = what;
	signal(SIGALRM, stress_on_alarm);
	alarm(secs);
}

static inline struct syslet_ring *stress_ring(uint32_t elements)
{
	/* C11: the size must be a multiple of the alignment */
	size_t size = (syslet_ring_size(elements) + 63) & ~(size_t)63;
	struct syslet_ring *r = aligned_alloc(64, size);

	CHECK(r != NULL);
	memset(r, 0, syslet_ring_size(elements));
	CHECK(syslet_ring_init(r, elements) == 0);
	return r;
}

static inline void stress_params(union indirect_params *p,
				 struct syslet_ring *r, uint64_t data)
{
	memset(p, 0, sizeof(*p));
	p->syslet.completion_ring_ptr = (uint64_t)(uintptr_t)r;
	p->syslet.caller_data = data;
}

/*
 * Wait for child @pid at most @secs seconds (pidfd + poll: no sleeping
 * loop); kill it and fail if it is still there. Returns its wait status.
 */
static inline int stress_reap(pid_t pid, int secs)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0), status;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n;

	CHECK(fd >= 0);
	do
		n = poll(&pfd, 1, secs * 1000);
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		kill(pid, SIGKILL);
		DIE("child %d still running after %d s", (int)pid, secs);
	}
	close(fd);
	CHECK(waitpid(pid, &status, 0) == pid);
	return status;
}

/* A child's wait status meant exit(0); else fail saying what it was. */
static inline void stress_child_ok(int status, const char *what)
{
	if (WIFSIGNALED(status))
		DIE("%s: child killed by signal %d", what, WTERMSIG(status));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		DIE("%s: child exit status %d", what, WEXITSTATUS(status));
}

#endif /* SYSLET_STRESS_H */
