/* SPDX-License-Identifier: MIT */
/*
 * A registered test that cannot run in this build, or under emulation,
 * skips itself: tests/meson.build sets the reason, written next to the
 * test's registration, in SYSLET_TEST_SKIP (this build) or
 * SYSLET_TEST_SKIP_EMULATED (when SYSLET_EMULATED=1, which
 * tests/cross/init exports), and this constructor, linked into every test
 * program, prints it and exits 77, meson's skip, before the test's main()
 * runs. It reads environ itself: some tests interpose getenv(). Built
 * with SKIP_MAIN it is test-skip, which stands in for a test that cannot
 * even start in a build. No shared state.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* The value of NAME=, NULL if unset or empty */
static const char *env(const char *name)
{
	size_t n = strlen(name);
	char **e;

	for (e = environ; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=' && (*e)[n + 1])
			return *e + n + 1;
	return NULL;
}

__attribute__((constructor)) static void skip_if_asked(void)
{
	const char *why = env("SYSLET_TEST_SKIP");
	const char *emulated = env("SYSLET_EMULATED");

	if (!why && emulated && !strcmp(emulated, "1"))
		why = env("SYSLET_TEST_SKIP_EMULATED");
	if (!why)
		return;
	printf("skipped here: %s\n", why);
	fflush(stdout);
	_exit(77);
}

#ifdef SKIP_MAIN
int main(void)
{
	fputs("test-skip: SYSLET_TEST_SKIP is not set\n", stderr);
	return 1;
}
#endif
