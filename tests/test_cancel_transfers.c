/* SPDX-License-Identifier: MIT */
/*
 * Description: syslet_cancel() attacked from outside (a review of issue
 * 13, item 1). Each test is a bug found by the review, kept as its
 * reproducer:
 *
 * - a transfer the try started on the caller (part of a pipe write moved
 *   inline, the rest punted) and cancelled while queued behind a full cap
 *   must report the bytes already moved, not -ECANCELED: the data is in
 *   the pipe, and a program that believes -ECANCELED loses its stream.
 *   The same for a stream read below SO_RCVLOWAT (bytes already taken).
 *
 * - RLIMIT_SIGPENDING spent: the cancel signal cannot be queued; the
 *   cancel said "found" and the blocked call never ended.
 *
 * - syslet-echo (examples/): SIGTERM while an echo write is blocked (the
 *   client sends and never reads) left the server waiting for ever.
 *
 * The cases run in a fork child, which sets its own cap and limits.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "indirect_util.h"
#include "test_cancel_util.h"

static struct syslet_ring *ring;

/* Child: the calls queued now. */
static uint32_t queued_now(void)
{
	struct syslet_stats st;

	CHILD(!syslet_stats(&st, sizeof(st)));
	return queued(&st);
}

/* Child: wait (bounded) until @n calls are queued. */
static void wait_queued(uint32_t n)
{
	int i;

	for (i = 0; i < WAIT_SECONDS * 1000 && queued_now() != n; i++)
		usleep(1000);
	CHILD(queued_now() == n);
}

/*
 * Run @fn in a fork child with a cap of one worker; it must exit 0 (77:
 * skip).
 */
static void in_capped_child(void (*fn)(void))
{
	int status;
	pid_t pid;

	SKIP_FORK_UNDER_SANITIZER();
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(2 * WAIT_SECONDS); /* after the bounded waits below */
		CHILD(!syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1));
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * A 256 KiB write on an empty blocking pipe: the try moves what fits
 * (the pipe's capacity) and punts the rest, which queues behind the only
 * worker, blocked in a read. Cancelled there, the completion must carry
 * what the pipe holds.
 */
static void partial_queued(void)
{
	size_t len = 256 << 10;
	char *src = calloc(1, len), *dst = malloc(len), b[4];
	struct syslet_completion c;
	long n, got = 0, wrote = -1;
	int a[2], w[2], i;

	CHILD(src && dst && !pipe(a) && !pipe(w));
	CHILD(PENDING(SYS_IND(ring, 1, SYS_read, a[0], b, sizeof(b))));
	CHILD(PENDING(SYS_IND(ring, 2, SYS_write, w[1], src, len)));
	wait_queued(1);
	CHILD(syslet_cancel(ring, 2, 0) == 1);
	CHILD(write(a[1], "go", 2) == 2);
	for (i = 0; i < 2; i++) {
		c = child_pop(ring);
		if (c.caller_data == 2)
			wrote = (long)c.status;
		else
			CHILD(c.caller_data == 1 && (long)c.status == 2);
	}
	CHILD(!fcntl(w[0], F_SETFL, O_NONBLOCK));
	while ((n = read(w[0], dst, len)) > 0)
		got += n;
	/* A kernel whose pipes refuse RWF_NOWAIT: the try moved nothing. */
	if (!got && wrote == -ECANCELED)
		_exit(77);
	if (wrote != got)
		fprintf(stderr, "completion %ld, pipe holds %ld\n", wrote, got);
	CHILD(wrote == got);
}

static void test_partial_write_cancelled_queued(void **state)
{
	(void)state;
	in_capped_child(partial_queued);
}

/*
 * The same for a stream read below SO_RCVLOWAT: the try takes the 10
 * bytes there and a worker is to wait for the rest of the mark. Cancelled
 * while queued, the completion must carry the 10 bytes taken.
 */
static void lowat_queued(void)
{
	struct syslet_completion c;
	int a[2], sv[2], i, lowat = 100;
	long got = -1;
	char b[4], rb[200];

	CHILD(!pipe(a) && !socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHILD(!setsockopt(sv[0], SOL_SOCKET, SO_RCVLOWAT, &lowat,
			  sizeof(lowat)));
	CHILD(write(sv[1], "0123456789", 10) == 10);
	CHILD(PENDING(SYS_IND(ring, 1, SYS_read, a[0], b, sizeof(b))));
	CHILD(PENDING(SYS_IND(ring, 4, SYS_read, sv[0], rb, sizeof(rb))));
	wait_queued(1);
	/* Nothing is left in the socket: the try took the 10 bytes. */
	if (recv(sv[0], rb, sizeof(rb), MSG_DONTWAIT) != -1 || errno != EAGAIN)
		_exit(77); /* no SO_RCVLOWAT continuation on this build */
	CHILD(syslet_cancel(ring, 4, 0) == 1);
	CHILD(write(a[1], "go", 2) == 2);
	for (i = 0; i < 2; i++) {
		c = child_pop(ring);
		if (c.caller_data == 4)
			got = (long)c.status;
	}
	if (got != 10)
		fprintf(stderr, "completion %ld, 10 bytes taken\n", got);
	CHILD(got == 10);
}

static void test_lowat_read_cancelled_queued(void **state)
{
	(void)state;
	in_capped_child(lowat_queued);
}

/*
 * RLIMIT_SIGPENDING spent (here set to 0; in life, the user's queued
 * signals across all its processes): tgkill cannot queue the real-time
 * signal. syslet_cancel() used to say "found" and leave the read blocked
 * for ever (and syslet_drain() with it); it must say EAGAIN, leave the
 * call findable, and cancel it once a signal can be queued again.
 */
static void sigpending_spent(void)
{
	struct rlimit rl = { 0, 0 }, old;
	struct syslet_completion c;
	int a[2];
	char b[4];

	CHILD(!pipe(a));
	CHILD(!syslet_cancel(NULL, 0, 0));
	CHILD(PENDING(SYS_IND(ring, 3, SYS_read, a[0], b, sizeof(b))));
	CHILD(worker_in(getpid(), SYS_read, true, 0, WAIT_SECONDS * 1000));
	CHILD(!getrlimit(RLIMIT_SIGPENDING, &old));
	rl.rlim_max = old.rlim_max;
	CHILD(!setrlimit(RLIMIT_SIGPENDING, &rl));
	errno = 0;
	CHILD(syslet_cancel(ring, 3, 0) == -1 && errno == EAGAIN);
	CHILD(syslet_ring_head(ring) == ring->user_tail);
	CHILD(!setrlimit(RLIMIT_SIGPENDING, &old));
	CHILD(syslet_cancel(ring, 3, 0) == 1);
	c = child_pop(ring);
	CHILD(c.caller_data == 3 && (long)c.status == -EINTR);
}

static void test_sigpending_limit(void **state)
{
	(void)state;
	in_capped_child(sigpending_spent);
}

static const char *echo_path; /* argv[1]: the syslet-echo example */

/*
 * syslet-echo's shutdown: a client that sends without reading leaves the
 * server's echo write blocked on a worker. SIGTERM must still end the
 * server (its shutdown cancelled the accept and the reads, not the writes,
 * and waited for ever for that connection).
 */
static void test_echo_shutdown_blocked_write(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char line[128], *junk;
	int out[2], fd, status = 0, port = 0, i;
	size_t len = 1 << 20;
	FILE *f;
	pid_t pid, w = 0;

	(void)state;
	if (!echo_path)
		skip();
	SKIP_FORK_UNDER_SANITIZER();
	junk = calloc(1, len);
	assert_non_null(junk);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(2 * WAIT_SECONDS);
		dup2(out[1], 1);
		execl(echo_path, echo_path, "0", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_int_equal(sscanf(line, "syslet-echo: listening on 127.0.0.1:%d",
				&port),
			 1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(!connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
		    errno == EINPROGRESS);
	/* Send and never read, until the server's echo write blocks. */
	for (i = 0; i < WAIT_SECONDS * 1000; i++) {
		if (send(fd, junk, len, MSG_NOSIGNAL) < 0)
			assert_int_equal(errno, EAGAIN);
		if (worker_in(pid, SYS_write, true, 0, 2))
			break;
	}
	assert_true(worker_in(pid, SYS_write, true, 0, 1));
	assert_int_equal(kill(pid, SIGTERM), 0);
	for (i = 0; i < WAIT_SECONDS * 1000; i++) {
		w = waitpid(pid, &status, WNOHANG);
		if (w)
			break;
		usleep(1000);
	}
	if (!w) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(fd);
	fclose(f);
	free(junk);
	assert_int_equal(w, pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partial_write_cancelled_queued),
		cmocka_unit_test(test_lowat_read_cancelled_queued),
		cmocka_unit_test(test_sigpending_limit),
		cmocka_unit_test(test_echo_shutdown_blocked_write),
	};

	if (argc > 1)
		echo_path = argv[1];
	ring = ring_new(64);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
