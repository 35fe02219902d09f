/* SPDX-License-Identifier: MIT */
/*
 * syslet-echo: an echo server on an epoll loop whose blocking work (accept,
 * read, write on blocking sockets) goes through indirect(). A call the
 * kernel can answer at once completes inline; one that would block goes to
 * a worker and its completion lands in the ring; the epoll loop learns of
 * completions through an eventfd in its set. It shuts down on SIGINT or
 * SIGTERM (a signalfd in the set): syslet_cancel() stops the pending
 * accept, reads and writes, syslet_drain() waits for them.
 *
 *   syslet-echo [PORT]              serve on 127.0.0.1:PORT (default 7007)
 *   syslet-echo --self-test [N]     serve on a free port, run N clients
 *                                   (default 8) in a thread, shut down;
 *                                   exit 0 if every echo came back
 *
 * The loop waits on the ring through its eventfd (syslet_ring_eventfd()):
 * readable once completions arrive in an empty ring; the loop reads it,
 * then consumes to empty (syslet_ring_eventfd(3), "What readable means").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <syslet/syslet.h>

#define MAX_CONN 256
#define BUF 4096
#define RING_ELEMENTS 1024 /* > 2 calls per connection + accept */
#define ACCEPT_TAG UINT64_MAX
#define OP_READ 0
#define OP_WRITE 1

struct conn {
	int fd; /* -1: free */
	char buf[BUF];
	size_t len, off; /* bytes read, bytes echoed so far */
};

static struct conn conns[MAX_CONN];
static struct syslet_ring *ring;
static int lfd, nconn;

static uint64_t tag(int i, int op)
{
	return (uint64_t)i << 1 | (uint64_t)op;
}

/* indirect() of @nr on the ring; its result, or -ESYSLETPENDING. */
static long call(uint64_t cd, long nr, long a, long b, long c, long d)
{
	union indirect_params p = { 0 };
	struct indirect_registers regs;
	long r;

	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = cd;
	FILL_IN(regs, nr, a, b, c, d);
	r = indirect(&regs, &p, sizeof(p), 0);
	return r < 0 ? -errno : r;
}

static void done(uint64_t cd, long r);

/* Issue a call; an inline answer is handled at once. */
static void issue(uint64_t cd, long nr, long a, long b, long c, long d)
{
	long r = call(cd, nr, a, b, c, d);

	if (r != -ESYSLETPENDING)
		done(cd, r);
}

static void start_accept(void)
{
	issue(ACCEPT_TAG, SYS_accept4, lfd, 0, 0, SOCK_CLOEXEC);
}

static void start_read(int i)
{
	issue(tag(i, OP_READ), SYS_read, conns[i].fd, (long)conns[i].buf, BUF,
	      0);
}

static void start_write(int i)
{
	struct conn *c = &conns[i];

	issue(tag(i, OP_WRITE), SYS_write, c->fd, (long)(c->buf + c->off),
	      (long)(c->len - c->off), 0);
}

static void drop(int i)
{
	close(conns[i].fd);
	conns[i].fd = -1;
	nconn--;
}

/* A call ended with @r (inline or from the ring): the next step. */
static void done(uint64_t cd, long r)
{
	int i;

	if (cd == ACCEPT_TAG) {
		if (r == -EINTR || r == -ECANCELED)
			return; /* shutting down */
		if (r >= 0) {
			for (i = 0; i < MAX_CONN && conns[i].fd >= 0; i++)
				;
			if (i == MAX_CONN) {
				close((int)r);
			} else {
				conns[i].fd = (int)r;
				nconn++;
				start_read(i);
			}
		}
		start_accept();
		return;
	}
	i = (int)(cd >> 1);
	if (r <= 0) { /* closed, error, or cancelled */
		drop(i);
		return;
	}
	if ((cd & 1) == OP_READ) {
		conns[i].len = (size_t)r;
		conns[i].off = 0;
		start_write(i);
		return;
	}
	conns[i].off += (size_t)r;
	if (conns[i].off < conns[i].len)
		start_write(i);
	else
		start_read(i);
}

/* Take every completion there is. */
static void reap(void)
{
	struct syslet_completion c;

	while (syslet_ring_head(ring) != ring->user_tail) {
		c = *syslet_ring_slot(ring, ring->user_tail);
		syslet_ring_advance(ring, 1);
		done(c.caller_data, (long)c.status);
	}
}

static int ring_efd;

static void shut_down(void)
{
	int i;

	/*
	 * Stop the blocked accept and every blocked read and write (a
	 * client that sends and never reads blocks its echo write).
	 */
	syslet_cancel(ring, ACCEPT_TAG, SYSLET_CANCEL_ALL);
	for (i = 0; i < MAX_CONN; i++) {
		if (conns[i].fd < 0)
			continue;
		syslet_cancel(ring, tag(i, OP_READ), SYSLET_CANCEL_ALL);
		syslet_cancel(ring, tag(i, OP_WRITE), SYSLET_CANCEL_ALL);
	}
}

/* Serve until a signal; 0 on a clean shutdown. */
static int serve(int sfd)
{
	struct epoll_event ev = { .events = EPOLLIN }, got[4];
	int ep = epoll_create1(EPOLL_CLOEXEC), i, n, stopping = 0;
	uint64_t v;

	ring_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ep < 0 || ring_efd < 0)
		return 1;
	ev.data.fd = ring_efd;
	epoll_ctl(ep, EPOLL_CTL_ADD, ring_efd, &ev);
	ev.data.fd = sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	if (syslet_ring_eventfd(ring, ring_efd))
		return 1;
	/* Cancellation for every call, also those running from now on. */
	syslet_cancel(NULL, 0, 0);
	start_accept();
	while (!stopping || nconn > 0) {
		n = epoll_wait(ep, got, 4, -1);
		if (n < 0 && errno != EINTR)
			return 1;
		for (i = 0; i < n; i++) {
			if (got[i].data.fd == sfd) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					stopping = 1;
				shut_down();
				continue;
			}
			/* Read, then consume to empty: no wake-up is lost. */
			if (read(ring_efd, &v, sizeof(v)) != sizeof(v) &&
			    errno != EAGAIN)
				return 1;
			reap();
		}
		if (stopping)
			shut_down();
	}
	syslet_drain();
	reap();
	close(ep);
	return 0;
}

/* --self-test: N clients, each sends messages and checks the echoes. */
static int port, nclients = 8, client_errors;

static void *client(void *arg)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char msg[64], back[64];
	int fd, k, len;
	ssize_t got, r;

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		goto fail;
	for (k = 0; k < 100; k++) {
		len = snprintf(msg, sizeof(msg), "client %ld message %d",
			       (long)(intptr_t)arg, k);
		if (write(fd, msg, (size_t)len) != len)
			goto fail;
		for (got = 0; got < len; got += r) {
			r = read(fd, back + got, (size_t)(len - got));
			if (r <= 0)
				goto fail;
		}
		if (memcmp(msg, back, (size_t)len))
			goto fail;
	}
	close(fd);
	return NULL;
fail:
	__atomic_add_fetch(&client_errors, 1, __ATOMIC_RELAXED);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void *clients(void *arg)
{
	pthread_t t[64];
	int i, n = nclients < 64 ? nclients : 64;

	(void)arg;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, client, (void *)(intptr_t)i))
			__atomic_add_fetch(&client_errors, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	/* One client stays connected and idle: shutdown must cancel it. */
	if (!client_errors) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		a.sin_port = htons((uint16_t)port);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
			__atomic_add_fetch(&client_errors, 1, __ATOMIC_RELAXED);
		/* Give the server the time to accept it; then quit. */
		usleep(100000);
	}
	kill(getpid(), SIGTERM);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int self_test = argc > 1 && !strcmp(argv[1], "--self-test");
	int i, sfd, ret;
	pthread_t t;
	sigset_t set;

	if (self_test && argc > 2)
		nclients = atoi(argv[2]);
	else if (!self_test && argc > 1)
		port = atoi(argv[1]);
	else if (!self_test)
		port = 7007;
	for (i = 0; i < MAX_CONN; i++)
		conns[i].fd = -1;
	ring = aligned_alloc(8, syslet_ring_size(RING_ELEMENTS));
	if (!ring || syslet_ring_init(ring, RING_ELEMENTS))
		return 1;
	/* Signals for the loop: blocked here and in every thread after. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	i = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &i, sizeof(i));
	if (sfd < 0 || lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lfd, 64) || getsockname(lfd, (struct sockaddr *)&a, &alen)) {
		perror("syslet-echo");
		return 1;
	}
	port = ntohs(a.sin_port);
	printf("syslet-echo: listening on 127.0.0.1:%d\n", port);
	fflush(stdout);
	if (self_test && pthread_create(&t, NULL, clients, NULL))
		return 1;
	ret = serve(sfd);
	if (self_test) {
		pthread_join(t, NULL);
		printf("syslet-echo: %d clients, %d errors, %d connections "
		       "left\n",
		       nclients, client_errors, nconn);
		ret = ret || client_errors || nconn;
	}
	return ret;
}
