/* SPDX-License-Identifier: MIT */
/*
 * Description: a credential change made by another object is seen (SPEC
 * 5.1). A thread whose punted calls ran changes its effective uid through
 * a shared library linked against glibc only (its syscall() reference is
 * syscall@GLIBC_2.2.5), then punts again: the call is refused (EPERM),
 * never run by a root worker. Twice: in a program linked with -lsyslet,
 * and in one that is not, with libsyslet.so in LD_PRELOAD (its functions
 * found by dlsym()). Root only (77 else); each case in a fresh child.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "sanitizer.h"

#define NOBODY 65534

long credhelper_seteuid(long uid);

static long (*ind)(struct indirect_registers *, union indirect_params *,
		   unsigned long, unsigned long);
static int (*wait_to)(struct syslet_ring *, unsigned long,
		      const struct timespec *);
static _Alignas(64) char mem[4096];

/* fdatasync(-1) through indirect(): -EBADF ran, -EPERM refused. */
static long punt(void)
{
	struct syslet_ring *ring = (struct syslet_ring *)mem;
	struct timespec ts = { 10, 0 };
	union indirect_params p;
	struct indirect_registers r;
	struct syslet_completion c;
	uint32_t tail = ring->user_tail;
	long ret;

	memset(&p, 0, sizeof(p));
	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	FILL_IN(r, SYS_fdatasync, -1);
	ret = ind(&r, &p, sizeof(p), 0);
	if (ret >= 0 || errno != ESYSLETPENDING)
		return ret >= 0 ? ret : -errno;
	if (syslet_ring_head(ring) == tail && wait_to(ring, tail, &ts))
		return -1000;
	c = *syslet_ring_slot(ring, tail);
	syslet_ring_advance(ring, 1);
	return (long)c.status;
}

static void *thread(void *arg)
{
	long before, after;

	(void)arg;
	before = punt(); /* the thread's verdict: like the workers */
	if (credhelper_seteuid(NOBODY))
		return (void *)1L;
	after = punt();
	if (before != -EBADF || after != -EPERM) {
		fprintf(stderr, "before %ld (want %d), after %ld (want %d)\n",
			before, -EBADF, after, -EPERM);
		return (void *)2L;
	}
	return NULL;
}

/* The case, in this process: 0 if the call after the change was refused. */
static int run_case(void)
{
	pthread_t t;
	void *r, *f = dlsym(RTLD_DEFAULT, "indirect");
	void *g = dlsym(RTLD_DEFAULT, "syslet_ring_wait_timeout");

	if (!f || !g) {
		fprintf(stderr, "libsyslet.so not bound: %s\n", dlerror());
		return 3;
	}
	memcpy(&ind, &f, sizeof(ind)); /* POSIX dlsym */
	memcpy(&wait_to, &g, sizeof(wait_to));
	if (syslet_ring_init((struct syslet_ring *)mem, 16))
		return 4;
	if (pthread_create(&t, NULL, thread, NULL) || pthread_join(t, &r))
		return 5;
	return (int)(intptr_t)r;
}

#ifdef PRELOADED
int main(void)
{
	alarm(30);
	return run_case();
}
#else
/* Keep the link to libsyslet.so (--as-needed). */
int (*volatile syslet_kept)(void) = syslet_drain;

static int child(const char *what, char *const argv[], char *const envp[])
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		alarm(30);
		if (argv)
			execve(argv[0], argv, envp);
		_exit(argv ? 127 : run_case());
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s: status %#x\n", what, st);
		return 1;
	}
	printf("%s: refused after the change\n", what);
	return 0;
}

/* argv[1]: the program built without -lsyslet; argv[2]: libsyslet.so. */
int main(int argc, char **argv)
{
	char pre[4200];
	char *cargv[] = { argc > 1 ? argv[1] : NULL, NULL };
	char *cenv[] = { pre, NULL };
	int bad;

	if (geteuid()) {
		printf("not root: skipped\n");
		return 77;
	}
	if (argc < 3)
		return 2;
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", argv[2]);
	bad = child("linked", NULL, NULL);
	if (UNDER_SANITIZER) /* its runtime must be the first object */
		printf("LD_PRELOAD of a sanitized library: not run\n");
	else if (access(argv[1], X_OK) || access(argv[2], R_OK))
		printf("no %s or %s here: LD_PRELOAD not run\n", argv[1],
		       argv[2]);
	else
		bad |= child("LD_PRELOAD", cargv, cenv);
	return bad;
}
#endif
