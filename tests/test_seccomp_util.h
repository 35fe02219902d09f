/* SPDX-License-Identifier: MIT */
/*
 * The seccomp filter of the attack tests on the try path's preadv2 and
 * pwritev2 (test_spawn_limits.c, test_try_same_answer.c, test_first_start.c):
 * a sandbox, or an emulator (qemu-user 7.2 has neither call), that answers
 * them with an error while read(2), write(2) and every other call run.
 *
 * For good: it sets no_new_privs and installs a filter that the calling
 * thread and every thread started after it keep (nothing removes one), so
 * each test calls it in a case's own child, before that child's pool
 * starts. It keeps no state of its own.
 */
#ifndef SYSLET_TEST_SECCOMP_UTIL_H
#define SYSLET_TEST_SECCOMP_UTIL_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/*
 * preadv2 and pwritev2 answer @err from now on; with @fd_only, on a
 * descriptor only (fd >= 0: the sign bit of args[0]'s low word, the word
 * at its offset on a little-endian machine, clear), and a call on a
 * negative one (the library's preadv2(-1) probe) runs. False if the kernel
 * refused the filter.
 */
static inline bool filter_rw2(unsigned int err, bool fd_only)
{
	/* A mask of 0 never matches: every descriptor is refused. */
	unsigned int sign = fd_only ? 0x80000000u : 0;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_preadv2, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pwritev2, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, sign, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | err),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
	       !prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

#endif /* SYSLET_TEST_SECCOMP_UTIL_H */
