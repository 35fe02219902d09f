/* SPDX-License-Identifier: MIT */
/*
 * Side by side: the blocking call's answer and indirect()'s on the same
 * state, both as raw results (>= 0 or -errno). indirect()'s is its inline
 * answer, or, when it went pending, its completion's status (waited for,
 * bounded). Include after indirect_util.h.
 */
#ifndef SAME_RESULT_H
#define SAME_RESULT_H

#include <sys/syscall.h>
#include <unistd.h>

/* The raw answer of a plain system call (pass negative numbers as long). */
#define BLK(...)                                \
	__extension__({                         \
		long b_ = syscall(__VA_ARGS__); \
		b_ == -1 ? -(long)errno : b_;   \
	})

/* indirect()'s raw answer; *pend set when it went to a worker. */
#define IND_P(ring, pend, ...)                             \
	__extension__({                                    \
		long i_ = SYS_IND((ring), 0, __VA_ARGS__); \
		*(pend) = PENDING(i_);                     \
		if (*(pend))                               \
			i_ = (long)ring_pop(ring).status;  \
		else if (i_ == -1)                         \
			i_ = -(long)errno;                 \
		i_;                                        \
	})

#define IND(ring, ...)                            \
	__extension__({                           \
		int p__;                          \
		IND_P((ring), &p__, __VA_ARGS__); \
	})

#endif /* SAME_RESULT_H */
