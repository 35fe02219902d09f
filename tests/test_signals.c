/* SPDX-License-Identifier: MIT */
/*
 * Description: signals a punted call raises go where the kernel would have
 * sent them for the plain call (SPEC 7). A write to a pipe whose reader
 * closes while a worker waits in it completes with -EPIPE and its SIGPIPE
 * reaches the submitting thread: its handler runs there, its default
 * action ends the process, ignored it is dropped, blocked it stays pending
 * on the submitting thread; an ftruncate past RLIMIT_FSIZE completes with
 * -EFBIG and its SIGXFSZ reaches the submitter. The same for each call
 * that moves bytes into a pipe and ends short (write, writev, pwritev2,
 * vmsplice, splice, sendfile), and for a notifier's own write: its
 * SIGPIPE reaches the call's submitter, never a later call's. No signal stays pending on
 * any thread of the library. A process forked (and exec'd) from a notifier
 * starts with the submitting thread's signal mask.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"

static struct syslet_ring *ring;
static _Atomic pid_t handled_on;
static _Atomic int handled;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&handled_on, (pid_t)syscall(SYS_gettid));
	atomic_fetch_add(&handled, 1);
}

/* The mask of field @name ("SigPnd:", "SigBlk:") in status file @path. */
static uint64_t status_mask(const char *path, const char *name)
{
	char line[256];
	uint64_t m = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0; /* the thread ended */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, strlen(name)))
			m = strtoull(line + strlen(name), NULL, 16);
	fclose(f);
	return m;
}

#define BIT(s) (1ull << ((s)-1))

/* Bits of @sigs pending on any thread but this one, or on the process. */
static uint64_t pending_elsewhere(uint64_t sigs)
{
	char path[320];
	struct dirent *e;
	uint64_t m = 0;
	DIR *d = opendir("/proc/self/task");
	long me = syscall(SYS_gettid);

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || atol(e->d_name) == me)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 e->d_name);
		m |= status_mask(path, "SigPnd:");
	}
	closedir(d);
	m |= status_mask("/proc/self/status", "ShdPnd:");
	return m & sigs;
}

/* The next completion, waiting through the handlers that interrupt it. */
static struct syslet_completion pop(void)
{
	struct timespec ts = { WAIT_SECONDS, 0 };
	struct syslet_completion c;
	uint32_t tail = ring->user_tail;
	int r;

	while (syslet_ring_head(ring) == tail) {
		r = syslet_ring_wait_timeout(ring, tail, &ts);
		assert_true(r == 0 || errno == EINTR);
	}
	c = *syslet_ring_slot(ring, tail);
	syslet_ring_advance(ring, 1);
	return c;
}

/*
 * A write that waits on a worker (the pipe is full) while the reader goes:
 * its completion. The pipe's write end is blocking (SPEC 3: a punt).
 */
static struct syslet_completion broken_pipe_write(void)
{
	static char buf[65536];
	int p[2];
	long r;

	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	while (write(p[1], buf, sizeof(buf)) > 0)
		;
	assert_int_equal(fcntl(p[1], F_SETFL, 0), 0);
	r = SYS_IND(ring, 7, SYS_write, p[1], buf, 4096);
	assert_true(PENDING(r));
	close(p[0]);
	struct syslet_completion c = pop();

	close(p[1]);
	return c;
}

/* Signals the kernel has queued for this thread are delivered by now. */
static void until_handled(int n)
{
	struct timespec tick = { 0, 1000000 };
	int i;

	for (i = 0; i < WAIT_SECONDS * 1000 && atomic_load(&handled) < n; i++)
		nanosleep(&tick, NULL);
}

static void test_sigpipe_handled_by_submitter(void **state)
{
	struct sigaction sa = { .sa_handler = on_signal }, old;
	struct syslet_completion c;

	(void)state;
	atomic_store(&handled, 0);
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	c = broken_pipe_write();
	assert_int_equal((long)c.status, -EPIPE);
	until_handled(1);
	assert_int_equal(atomic_load(&handled), 1);
	assert_int_equal(atomic_load(&handled_on), syscall(SYS_gettid));
	assert_int_equal(pending_elsewhere(BIT(SIGPIPE)), 0);
	sigaction(SIGPIPE, &old, NULL);
}

/*
 * A reader that reads a page and leaves once the writer has filled the
 * pipe again: the writer's blocking write then ends short, with SIGPIPE.
 */
static int pipe_cap; /* F_GETPIPE_SZ: 16 pages */

static void *partial_reader(void *arg)
{
	static char page[65536];
	struct timespec tick = { 0, 1000000 };
	int *p = arg, n = 0, i;

	assert_int_equal(read(p[0], page, (size_t)pipe_cap / 16),
			 pipe_cap / 16);
	for (i = 0; i < WAIT_SECONDS * 1000; i++) {
		assert_int_equal(ioctl(p[0], FIONREAD, &n), 0);
		if (n == pipe_cap)
			break;
		nanosleep(&tick, NULL);
	}
	close(p[0]);
	return NULL;
}

/* How the short transfer is made: each call that writes to a pipe. */
enum transfer {
	T_WRITE,
	T_WRITEV,
	T_PWRITEV2,
	T_VMSPLICE,
	T_SPLICE,
	T_SENDFILE
};

/* The reader of a full pipe leaves without reading. */
static void *leaving_reader(void *arg)
{
	close(((int *)arg)[0]);
	return NULL;
}

/*
 * A punted @how of 4 MiB into a full pipe. @partial: the reader takes a
 * page, waits for the pipe to fill again and leaves: a write, writev or
 * pwritev2 returns its count (vmsplice, splice and sendfile return after
 * the first space, without SIGPIPE, as their plain calls do: not tried
 * here). Otherwise the reader leaves at once: -EPIPE. Either way
 * SIGPIPE reaches the submitter, nowhere else.
 */
static void sigpipe_after(enum transfer how, bool partial)
{
	static char buf[4 << 20];
	struct sigaction sa = { .sa_handler = on_signal }, old;
	char path[] = "/tmp/syslet-short-XXXXXX";
	struct iovec v[2] = { { buf, sizeof(buf) / 2 },
			      { buf + sizeof(buf) / 2, sizeof(buf) / 2 } };
	struct syslet_completion c;
	int p[2], fd = -1;
	pthread_t t;
	long r = 0;

	atomic_store(&handled, 0);
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	if (how == T_SPLICE || how == T_SENDFILE) {
		fd = mkstemp(path);
		assert_true(fd >= 0);
		unlink(path);
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
		assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	}
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	pipe_cap = fcntl(p[1], F_GETPIPE_SZ);
	assert_true(pipe_cap >= 16 && pipe_cap / 16 <= 65536);
	while (write(p[1], buf, (size_t)pipe_cap) > 0)
		;
	assert_int_equal(fcntl(p[1], F_SETFL, 0), 0);
	switch (how) {
	case T_WRITE:
		r = SYS_IND(ring, 8, SYS_write, p[1], buf, sizeof(buf));
		break;
	case T_WRITEV:
		r = SYS_IND(ring, 8, SYS_writev, p[1], v, 2);
		break;
	case T_PWRITEV2:
		r = SYS_IND(ring, 8, SYS_pwritev2, p[1], v, 2, -1, -1, 0);
		break;
	case T_VMSPLICE:
		r = SYS_IND(ring, 8, SYS_vmsplice, p[1], v, 2, 0);
		break;
	case T_SPLICE:
		r = SYS_IND(ring, 8, SYS_splice, fd, NULL, p[1], NULL,
			    sizeof(buf), 0);
		break;
	case T_SENDFILE:
		r = SYS_IND(ring, 8, SYS_sendfile, p[1], fd, NULL, sizeof(buf));
		break;
	}
	assert_true(PENDING(r));
	assert_int_equal(
		pthread_create(&t, NULL,
			       partial ? partial_reader : leaving_reader, p),
		0);
	c = pop();
	assert_int_equal(pthread_join(t, NULL), 0);
	close(p[1]);
	if (partial)
		assert_true((long)c.status > 0 &&
			    (long)c.status < (long)sizeof(buf));
	else
		assert_int_equal((long)c.status, -EPIPE);
	until_handled(1);
	assert_int_equal(atomic_load(&handled), 1);
	assert_int_equal(atomic_load(&handled_on), syscall(SYS_gettid));
	assert_int_equal(pending_elsewhere(BIT(SIGPIPE)), 0);
	sigaction(SIGPIPE, &old, NULL);
	if (fd >= 0)
		close(fd);
}

static void test_sigpipe_after_short_write(void **state)
{
	(void)state;
	sigpipe_after(T_WRITE, true);
}

static void test_sigpipe_after_short_writev(void **state)
{
	(void)state;
	sigpipe_after(T_WRITEV, true);
}

static void test_sigpipe_after_short_pwritev2(void **state)
{
	(void)state;
	sigpipe_after(T_PWRITEV2, true);
}

static void test_sigpipe_of_punted_vmsplice(void **state)
{
	(void)state;
	sigpipe_after(T_VMSPLICE, false);
}

static void test_sigpipe_of_punted_splice(void **state)
{
	(void)state;
	sigpipe_after(T_SPLICE, false);
}

static void test_sigpipe_of_punted_sendfile(void **state)
{
	(void)state;
	sigpipe_after(T_SENDFILE, false);
}

/*
 * A punted io_submit() whose write to a pipe without a reader raises
 * SIGPIPE (buffered aio runs inside io_submit, on the worker): its answer
 * is the count of iocbs submitted, neither an error nor short, and the
 * signal reaches the submitter all the same; the event says -EPIPE.
 */
static void test_sigpipe_of_punted_io_submit(void **state)
{
	struct sigaction sa = { .sa_handler = on_signal }, old;
	struct timespec ts = { WAIT_SECONDS, 0 };
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	aio_context_t ctx = 0;
	struct syslet_completion c;
	static char buf[16];
	int p[2];

	(void)state;
	assert_int_equal(syscall(SYS_io_setup, 1, &ctx), 0);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = (uint32_t)p[1];
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = sizeof(buf);
	cb.aio_data = 9;
	atomic_store(&handled, 0);
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	assert_true(PENDING(SYS_IND(ring, 8, SYS_io_submit, ctx, 1, cbs)));
	c = pop();
	assert_int_equal(c.caller_data, 8);
	assert_int_equal((long)c.status, 1);
	assert_int_equal(syscall(SYS_io_getevents, ctx, 1, 1, &ev, &ts), 1);
	assert_int_equal(ev.data, 9);
	assert_int_equal(ev.res, -EPIPE);
	until_handled(1);
	assert_int_equal(atomic_load(&handled), 1);
	assert_int_equal(atomic_load(&handled_on), syscall(SYS_gettid));
	assert_int_equal(pending_elsewhere(BIT(SIGPIPE)), 0);
	sigaction(SIGPIPE, &old, NULL);
	close(p[1]);
	syscall(SYS_io_destroy, ctx);
}

/* The notifier's plain write to a pipe without a reader. */
static int notifier_pipe[2];

static _Atomic int notifier_wrote;

static void writing_notifier(void)
{
	if (write(notifier_pipe[1], "x", 1) != -1)
		abort();
	atomic_store(&notifier_wrote, 1);
}

/*
 * A notifier's own SIGPIPE goes to the call's submitter, at once, and is
 * not taken for a later call's: a write that succeeds raises nothing.
 */
static void test_sigpipe_of_notifier(void **state)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	struct sigaction sa = { .sa_handler = on_signal }, old;
	struct timespec ts = { 0, 1000000 };
	struct indirect_registers regs;
	union indirect_params p;
	static char buf[1 << 16];
	ssize_t got, n;
	int q[2], i;

	(void)state;
	atomic_store(&handled, 0);
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	assert_int_equal(pipe(notifier_pipe), 0);
	close(notifier_pipe[0]);
	params_for(&p, ring, 9);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)writing_notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(stack + sizeof(stack));
	FILL_IN(regs, SYS_nanosleep, &ts, NULL);
	assert_true(PENDING(indirect(&regs, &p, sizeof(p), 0)));
	/* the forwarded SIGPIPE may interrupt the drain (EINTR): pop() */
	assert_int_equal((long)pop().status, 0);
	until_handled(1);
	assert_int_equal(atomic_load(&handled), 1);
	assert_int_equal(atomic_load(&handled_on), syscall(SYS_gettid));
	assert_int_equal(pending_elsewhere(BIT(SIGPIPE)), 0);
	/* its write done (the signal came from within it): then closed */
	for (i = 0; !atomic_load(&notifier_wrote) && i < WAIT_SECONDS * 1000;
	     i++)
		nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&notifier_wrote), 1);
	close(notifier_pipe[1]);
	/* A punted write that moves all it asked for, then: no signal. */
	assert_int_equal(pipe(q), 0);
	assert_int_equal(fcntl(q[1], F_SETPIPE_SZ, 4096) > 0, 1);
	assert_true(
		PENDING(SYS_IND(ring, 8, SYS_write, q[1], buf, sizeof(buf))));
	/* all of it read, never a read more (it would block for ever) */
	for (got = 0; got < (ssize_t)sizeof(buf); got += n)
		assert_true((n = read(q[0], buf, sizeof(buf) - (size_t)got)) >
			    0);
	assert_int_equal((long)pop().status, (long)sizeof(buf));
	close(q[0]);
	close(q[1]);
	assert_int_equal(atomic_load(&handled), 1);
	sigaction(SIGPIPE, &old, NULL);
}

/* Per thread: SIGPIPEs handled on it (owed_sigpipe_child()). */
static _Thread_local volatile sig_atomic_t pipes_here;
static struct syslet_ring *ring_b;
static int pipe_b[2];

static void count_here(int sig)
{
	(void)sig;
	pipes_here++;
}

/* B: a write queued behind A's call (one worker), its reader gone. */
static void *queue_broken_write(void *arg)
{
	struct timespec tick = { 0, 1000000 };
	static char buf[4096];
	int i;

	(void)arg;
	if (!PENDING(SYS_IND(ring_b, 2, SYS_write, pipe_b[1], buf, 1)))
		return (void *)1;
	close(pipe_b[0]);
	for (i = 0; syslet_ring_head(ring_b) == 0 && i < WAIT_SECONDS * 1000;
	     i++)
		nanosleep(&tick, NULL);
	if (syslet_ring_head(ring_b) == 0 ||
	    (long)syslet_ring_slot(ring_b, 0)->status != -EPIPE)
		return (void *)2;
	for (i = 0; !pipes_here && i < WAIT_SECONDS * 1000; i++)
		nanosleep(&tick, NULL);
	return pipes_here ? NULL : (void *)3;
}

/*
 * The look for what a notifier raised is owed until the worker runs
 * another thread's call (standin.c): A's notifier's SIGPIPE goes to A, and
 * B's own write's, run next on the same worker, to B. Taken together with
 * B's they would reach B alone.
 */
static int owed_sigpipe_child(void)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	struct sigaction sa = { .sa_handler = count_here };
	struct timespec ts = { 0, 100000000 }, tick = { 0, 1000000 };
	struct indirect_registers regs;
	union indirect_params p;
	static char buf[65536];
	pthread_t b;
	void *rb;
	int i;

	if (syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) ||
	    sigaction(SIGPIPE, &sa, NULL) || pipe(notifier_pipe) ||
	    pipe2(pipe_b, O_NONBLOCK))
		return 10;
	close(notifier_pipe[0]);
	ring_b = ring_new(8);
	while (write(pipe_b[1], buf, sizeof(buf)) > 0)
		;
	if (!ring_b || fcntl(pipe_b[1], F_SETFL, 0))
		return 11;
	params_for(&p, ring, 9);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)writing_notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(stack + sizeof(stack));
	/* A: the one worker sleeps 100 ms, then A's notifier writes. */
	FILL_IN(regs, SYS_nanosleep, &ts, NULL);
	if (!PENDING(indirect(&regs, &p, sizeof(p), 0)))
		return 12;
	if (pthread_create(&b, NULL, queue_broken_write, NULL))
		return 13;
	if ((long)pop().status != 0)
		return 14;
	for (i = 0; !pipes_here && i < WAIT_SECONDS * 1000; i++)
		nanosleep(&tick, NULL);
	if (pthread_join(b, &rb) || rb)
		return 15 + (int)(long)rb;
	return pipes_here ? 0 : 20;
}

/* @fn in a fork child, a fresh pool (its configuration is its own): 0. */
static void in_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid)
		_exit(fn());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_sigpipe_of_notifier_owed(void **state)
{
	(void)state;
	in_child(owed_sigpipe_child);
}

/*
 * Finding (owed look): A's notifier raises SIGPIPE, then A's own read of
 * an empty pipe runs on the one worker: the look owed to A waited behind
 * that read, for as long as it blocked (3 s of 3 s, 10 of 10), for ever if
 * it never ends. A call that may block pays the look before it runs.
 */
static int blocked_sigpipe_child(void)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	struct sigaction sa = { .sa_handler = count_here };
	struct timespec ts = { 0, 50000000 }, tick = { 0, 1000000 };
	struct indirect_registers regs;
	union indirect_params p;
	int q[2], i;
	char c = 0;

	if (syslet_config_set(SYSLET_OPT_MAX_WORKERS, 1) ||
	    sigaction(SIGPIPE, &sa, NULL) || pipe(notifier_pipe) || pipe(q))
		return 10;
	close(notifier_pipe[0]);
	params_for(&p, ring, 9);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)writing_notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(stack + sizeof(stack));
	/* The one worker sleeps 50 ms, then runs the notifier, */
	FILL_IN(regs, SYS_nanosleep, &ts, NULL);
	if (!PENDING(indirect(&regs, &p, sizeof(p), 0)))
		return 11;
	/* then this thread's read of an empty pipe, queued meanwhile. */
	if (!PENDING(SYS_IND(ring, 3, SYS_read, q[0], &c, 1)))
		return 12;
	if ((long)pop().status != 0)
		return 13;
	for (i = 0; !pipes_here && i < 5000; i++)
		nanosleep(&tick, NULL); /* 5 s, the read still blocked */
	if (!pipes_here)
		return 14;
	if (write(q[1], "x", 1) != 1 || (long)pop().status != 1)
		return 15;
	return 0;
}

static void test_sigpipe_of_notifier_blocked(void **state)
{
	(void)state;
	in_child(blocked_sigpipe_child);
}

static void test_sigpipe_ignored(void **state)
{
	struct sigaction sa = { .sa_handler = SIG_IGN }, old;
	struct syslet_completion c;
	sigset_t pend;

	(void)state;
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	c = broken_pipe_write();
	assert_int_equal((long)c.status, -EPIPE);
	assert_int_equal(pending_elsewhere(BIT(SIGPIPE)), 0);
	sigpending(&pend);
	assert_false(sigismember(&pend, SIGPIPE));
	sigaction(SIGPIPE, &old, NULL);
}

static void test_sigpipe_blocked_stays_on_submitter(void **state)
{
	struct timespec zero = { 0, 0 };
	struct syslet_completion c;
	sigset_t set, old, pend;

	(void)state;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	c = broken_pipe_write();
	assert_int_equal((long)c.status, -EPIPE);
	/* as for the plain write: pending on this thread, nowhere else */
	assert_int_equal(pending_elsewhere(BIT(SIGPIPE)), 0);
	sigpending(&pend);
	assert_true(sigismember(&pend, SIGPIPE));
	assert_int_equal(sigtimedwait(&set, NULL, &zero), SIGPIPE);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void test_sigpipe_default_ends_process(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct timespec tick = { 0, 1000000 };
		int i;

		alarm(WAIT_SECONDS);
		signal(SIGPIPE, SIG_DFL);
		ring = ring_new(16);
		if ((long)broken_pipe_write().status != -EPIPE)
			_exit(2);
		for (i = 0; i < WAIT_SECONDS * 1000; i++)
			nanosleep(&tick, NULL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGPIPE);
}

static void test_sigxfsz_to_submitter(void **state)
{
	struct sigaction sa = { .sa_handler = on_signal }, old;
	char path[] = "/tmp/syslet-xfsz-XXXXXX";
	struct rlimit was, lim;
	struct syslet_completion c;
	int fd;

	(void)state;
	atomic_store(&handled, 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(sigaction(SIGXFSZ, &sa, &old), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	lim = was;
	lim.rlim_cur = 4096;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_true(PENDING(SYS_IND(ring, 8, SYS_ftruncate, fd, 8192)));
	c = pop();
	setrlimit(RLIMIT_FSIZE, &was);
	assert_int_equal((long)c.status, -EFBIG);
	until_handled(1);
	assert_int_equal(atomic_load(&handled), 1);
	assert_int_equal(atomic_load(&handled_on), syscall(SYS_gettid));
	assert_int_equal(pending_elsewhere(BIT(SIGXFSZ)), 0);
	sigaction(SIGXFSZ, &old, NULL);
	close(fd);
}

/* The notifier's child writes its SigBlk (or the exec'd cat its status). */
static int report[2];
static _Atomic int exec_it;
static _Atomic pid_t child;

static void forking_notifier(void)
{
	char line[64];
	pid_t pid = fork();

	if (pid == 0) {
		if (atomic_load(&exec_it)) {
			char *argv[] = { "cat", "/proc/self/status", NULL };

			dup2(report[1], 1);
			execve("/bin/cat", argv, environ);
			_exit(127);
		}
		snprintf(line, sizeof(line), "SigBlk:\t%016" PRIx64 "\n",
			 status_mask("/proc/self/status", "SigBlk:"));
		if (write(report[1], line, strlen(line)) < 0)
			_exit(1);
		_exit(0);
	}
	atomic_store(&child, pid);
}

static void notifier_child_mask(bool exec)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	struct timespec ts = { 0, 1000000 };
	struct indirect_registers regs;
	union indirect_params p;
	char buf[4096], *at;
	uint64_t want, got;
	sigset_t set, old;
	ssize_t n, len = 0;
	int st;

	atomic_store(&exec_it, exec);
	assert_int_equal(pipe(report), 0);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	want = status_mask("/proc/thread-self/status", "SigBlk:");
	params_for(&p, ring, 9);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)forking_notifier;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(stack + sizeof(stack));
	FILL_IN(regs, SYS_nanosleep, &ts, NULL);
	assert_true(PENDING(indirect(&regs, &p, sizeof(p), 0)));
	/* Kept until the child is reaped: the mask at its fork (indirect(3)). */
	assert_int_equal(syslet_drain(), 0);
	assert_int_equal((long)pop().status, 0);
	close(report[1]);
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(report[0], buf + len, sizeof(buf) - 1 - (size_t)len)) >
		       0)
		len += n;
	buf[len] = '\0';
	close(report[0]);
	assert_int_equal(waitpid(atomic_load(&child), &st, 0),
			 atomic_load(&child));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	at = strstr(buf, "SigBlk:");
	assert_non_null(at);
	got = strtoull(at + 7, NULL, 16);
	assert_int_equal(got, want);
}

static void test_notifier_fork_has_submitter_mask(void **state)
{
	(void)state;
	notifier_child_mask(false);
}

static void test_notifier_exec_has_submitter_mask(void **state)
{
	(void)state;
	if (access("/bin/cat", X_OK))
		skip();
	notifier_child_mask(true);
}

static int setup(void **state)
{
	(void)state;
	ring = ring_new(16);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigpipe_handled_by_submitter),
		cmocka_unit_test(test_sigpipe_after_short_write),
		cmocka_unit_test(test_sigpipe_after_short_writev),
		cmocka_unit_test(test_sigpipe_after_short_pwritev2),
		cmocka_unit_test(test_sigpipe_of_punted_vmsplice),
		cmocka_unit_test(test_sigpipe_of_punted_splice),
		cmocka_unit_test(test_sigpipe_of_punted_sendfile),
		cmocka_unit_test(test_sigpipe_of_punted_io_submit),
		cmocka_unit_test(test_sigpipe_of_notifier),
		cmocka_unit_test(test_sigpipe_of_notifier_owed),
		cmocka_unit_test(test_sigpipe_of_notifier_blocked),
		cmocka_unit_test(test_sigpipe_ignored),
		cmocka_unit_test(test_sigpipe_blocked_stays_on_submitter),
		cmocka_unit_test(test_sigpipe_default_ends_process),
		cmocka_unit_test(test_sigxfsz_to_submitter),
		cmocka_unit_test(test_notifier_fork_has_submitter_mask),
		cmocka_unit_test(test_notifier_exec_has_submitter_mask),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
