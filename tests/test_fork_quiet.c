/* SPDX-License-Identifier: MIT */
/*
 * Description: linking changes nothing (SPEC 7): a program linked with
 * -lsyslet that never uses it makes the same system calls from its start
 * to its exit as the same program without the library, but for the
 * dynamic linker's loading of the library itself, and the same in a fork
 * child (strace -f of both, built from this file); the child sees the
 * parent's errno. Run with the path of the twin built without the
 * library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sanitizer.h"

#ifdef WITH_SYSLET
#include <syslet/syslet.h>

/* Linked (a reference, --as-needed keeps it), never called. */
int (*volatile syslet_kept)(void) = syslet_drain;
#endif

static const char *twin;

/* errno 4 before fork(): the child's exit status says what it saw. */
static int child_mode(void)
{
	int st;
	pid_t pid;

	errno = 4;
	pid = fork();
	if (!pid)
		_exit(errno == 4 ? 0 : 10 + (errno & 63));
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 2;
	return WEXITSTATUS(st);
}

static void test_errno(void **state)
{
	(void)state;
	assert_int_equal(child_mode(), 0);
}

/*
 * The system calls of the fork child of @exe --child, one name a line,
 * into @out (of @size); false if strace could not run.
 */
static bool child_calls(const char *exe, char *out, size_t size)
{
	char cmd[1024], line[512], name[64];
	long parent = -1, pid;
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "strace -f -qq -o /dev/stdout %s --child 2>/dev/null", exe);
	f = popen(cmd, "r");
	if (!f)
		return false;
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%ld %63[a-z0-9_]", &pid, name) != 2)
			continue;
		if (parent < 0)
			parent = pid;
		if (pid == parent || n + strlen(name) + 2 > size)
			continue;
		n += (size_t)snprintf(out + n, size - n, "%s\n", name);
	}
	return pclose(f) != -1 && parent > 0; /* the child's status aside */
}

/* What ld.so does to load one more library: open, read, map, close. */
static bool loading(const char *name)
{
	static const char *const ld[] = { "openat",   "open",	  "read",
					  "pread64",  "fstat",	  "newfstatat",
					  "statx",    "mmap",	  "mprotect",
					  "munmap",   "close",	  "access",
					  "readlink", "faccessat" };
	size_t i;

	for (i = 0; i < sizeof(ld) / sizeof(ld[0]); i++)
		if (!strcmp(name, ld[i]))
			return true;
	return false;
}

/*
 * The system calls of @exe --exit (it returns at once), from its exec to
 * its exit, one name a line, less those loading() names, into @out.
 */
static bool run_calls(const char *exe, char *out, size_t size)
{
	char cmd[1024], line[512], name[64];
	size_t n = 0;
	bool exec_seen = false;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "strace -qq -o /dev/stdout %s --exit 2>/dev/null", exe);
	f = popen(cmd, "r");
	if (!f)
		return false;
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63[a-z0-9_]", name) != 1)
			continue;
		if (!exec_seen) { /* strace's own until the exec */
			exec_seen = !strcmp(name, "execve");
			continue;
		}
		if (loading(name) || n + strlen(name) + 2 > size)
			continue;
		n += (size_t)snprintf(out + n, size - n, "%s\n", name);
	}
	return pclose(f) != -1 && exec_seen;
}

static bool can_compare(void)
{
	if (UNDER_SANITIZER) {
		print_message("a sanitizer's runtime makes system calls of its "
			      "own\n");
		return false;
	}
	if (!twin || access(twin, X_OK) ||
	    system("strace -V >/dev/null 2>&1")) {
		printf("no strace or no twin: not compared\n");
		return false;
	}
	return true;
}

static void self_path(char *self, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", self, size - 1);

	assert_true(n > 0);
	self[n] = 0;
}

/* No system call at load, none at exit (SPEC 7). */
static void test_load_calls(void **state)
{
	static char with[8192], without[8192], self[4096];

	(void)state;
	if (!can_compare())
		skip();
	self_path(self, sizeof(self));
	assert_true(run_calls(self, with, sizeof(with)));
	assert_true(run_calls(twin, without, sizeof(without)));
	assert_string_not_equal(without, "");
	assert_string_equal(with, without);
}

static void test_same_calls(void **state)
{
	static char with[8192], without[8192], self[4096];

	(void)state;
	if (!can_compare())
		skip();
	self_path(self, sizeof(self));
	assert_true(child_calls(self, with, sizeof(with)));
	assert_true(child_calls(twin, without, sizeof(without)));
	assert_string_not_equal(without, "");
	assert_string_equal(with, without);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno),
		cmocka_unit_test(test_same_calls),
	};
	const struct CMUnitTest load[] = {
		cmocka_unit_test(test_load_calls),
	};

	if (argc > 1 && !strcmp(argv[1], "--exit"))
		return 0;
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_mode();
	if (argc > 2 && !strcmp(argv[1], "--load")) {
		twin = argv[2];
		/* should_fail: a skip must say 77, not cmocka's 0 */
		if (!can_compare())
			return 77;
		return cmocka_run_group_tests(load, NULL, NULL);
	}
	twin = argc > 1 ? argv[1] : NULL;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
