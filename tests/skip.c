/* SPDX-License-Identifier: MIT */
/*
 * A registered test that cannot run in this build skips itself: when
 * tests/meson.build sets SYSLET_TEST_SKIP (to the reason, written next to
 * the test's registration), this constructor, linked into every test
 * program, prints the reason and exits 77, meson's skip, before the test's
 * main() runs. It reads environ itself: some tests interpose getenv().
 * No shared state.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

__attribute__((constructor)) static void skip_if_asked(void)
{
	static const char key[] = "SYSLET_TEST_SKIP=";
	char **e;

	for (e = environ; e && *e; e++) {
		if (strncmp(*e, key, sizeof(key) - 1) || !(*e)[sizeof(key) - 1])
			continue;
		printf("skipped in this build: %s\n", *e + sizeof(key) - 1);
		fflush(stdout);
		_exit(77);
	}
}
