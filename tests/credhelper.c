/* SPDX-License-Identifier: MIT */
/*
 * A shared library linked against glibc only, as a program's plug-in or a
 * third-party library is: it changes its calling thread's effective uid
 * with a raw syscall(2) of its own (test_creds_binding.c).
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("default"))) long credhelper_seteuid(long uid)
{
	return syscall(SYS_setresuid, -1L, uid, -1L);
}
