/* SPDX-License-Identifier: MIT */
/*
 * The syslets v7 ABI (December 2007), exactly: names, field order and sizes
 * are those of the patch series, so that programs written against it build
 * unchanged.  Nothing here is a libsyslet invention; the library's own
 * functions and extensions are in <syslet/syslet.h>.
 */
#ifndef SYSLET_ABI_H
#define SYSLET_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * indirect() failed with this errno: the call went on elsewhere and its
 * result will appear in the completion ring.  The 2007 value; Linux later
 * gave 132 to ERFKILL (see syslet(7) for how the two are kept apart).
 */
#define ESYSLETPENDING 132

/* The notification function and the stack it runs on (top of the stack). */
struct syslet_frame {
	uint64_t ip;
	uint64_t sp;
};

struct syslet_args {
	uint64_t completion_ring_ptr; /* struct syslet_ring *, 0: no syslet */
	uint64_t caller_data; /* copied into the completion */
	struct syslet_frame frame;
};

struct syslet_completion {
	uint64_t status; /* raw result: >= 0, or -errno */
	uint64_t caller_data;
};

/* 8-byte aligned, in the program's memory. Indices are free-running. */
struct syslet_ring {
	uint32_t kernel_head; /* next slot the library fills */
	uint32_t user_tail; /* next slot the program consumes */
	uint32_t elements; /* power of two, > 0 */
	uint32_t wait_group; /* the program's; 0 normally */
	struct syslet_completion comp[];
};

union indirect_params {
	struct {
		int flags;
	} file_flags; /* the pre-syslet use of indirect() */
	struct syslet_args syslet;
};

/* The system call registers, syscall number first. */
#if defined(__x86_64__)
struct indirect_registers {
	uint64_t rax, rdi, rsi, rdx, r10, r8, r9;
};
#define SYSLET__REG_NR(r) ((r)->rax)
#define SYSLET__REG_ARGS(r) (&(r)->rdi)
#elif defined(__aarch64__)
struct indirect_registers {
	uint64_t x8, x0, x1, x2, x3, x4, x5;
};
#define SYSLET__REG_NR(r) ((r)->x8)
#define SYSLET__REG_ARGS(r) (&(r)->x0)
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
struct indirect_registers {
	uint64_t r0, r3, r4, r5, r6, r7, r8;
};
#define SYSLET__REG_NR(r) ((r)->r0)
#define SYSLET__REG_ARGS(r) (&(r)->r3)
#else
#error "libsyslet: this architecture has no indirect_registers layout yet"
#endif

_Static_assert(sizeof(struct syslet_frame) == 16, "syslet_frame ABI");
_Static_assert(sizeof(struct syslet_args) == 32, "syslet_args ABI");
_Static_assert(offsetof(struct syslet_args, completion_ring_ptr) == 0, "syslet_"
								       "args "
								       "ABI");
_Static_assert(offsetof(struct syslet_args, caller_data) == 8, "syslet_args "
							       "ABI");
_Static_assert(offsetof(struct syslet_args, frame) == 16, "syslet_args ABI");
_Static_assert(sizeof(struct syslet_completion) == 16, "syslet_completion ABI");
_Static_assert(offsetof(struct syslet_completion, caller_data) == 8, "syslet_"
								     "completio"
								     "n ABI");
_Static_assert(sizeof(struct syslet_ring) == 16, "syslet_ring header ABI");
_Static_assert(offsetof(struct syslet_ring, user_tail) == 4, "syslet_ring ABI");
_Static_assert(offsetof(struct syslet_ring, elements) == 8, "syslet_ring ABI");
_Static_assert(offsetof(struct syslet_ring, wait_group) == 12, "syslet_ring "
							       "ABI");
_Static_assert(offsetof(struct syslet_ring, comp) == 16, "syslet_ring ABI");
_Static_assert(sizeof(union indirect_params) == 32, "indirect_params ABI");
_Static_assert(sizeof(struct indirect_registers) == 56, "indirect_registers "
							"ABI");

/*
 * Fill @regs from a system call number and up to six arguments, as the 2007
 * test programs' FILL_IN did:  FILL_IN(regs, __NR_pread64, fd, buf, 4096, 0);
 * Arguments may be integers or pointers; missing ones are zero.
 */
static inline void syslet_fill_in(struct indirect_registers *regs, uint64_t nr,
				  uint64_t a1, uint64_t a2, uint64_t a3,
				  uint64_t a4, uint64_t a5, uint64_t a6)
{
	uint64_t *arg = SYSLET__REG_ARGS(regs);

	SYSLET__REG_NR(regs) = nr;
	arg[0] = a1;
	arg[1] = a2;
	arg[2] = a3;
	arg[3] = a4;
	arg[4] = a5;
	arg[5] = a6;
}

#define SYSLET__U(x) ((uint64_t)(uintptr_t)(x))
#define SYSLET__NARG(...) SYSLET__NARG_(__VA_ARGS__, 7, 6, 5, 4, 3, 2, 1, 0)
#define SYSLET__NARG_(a, b, c, d, e, f, g, n, ...) n
#define SYSLET__CAT(a, b) SYSLET__CAT_(a, b)
#define SYSLET__CAT_(a, b) a##b
#define SYSLET__FILL1(r, n) syslet_fill_in(&(r), SYSLET__U(n), 0, 0, 0, 0, 0, 0)
#define SYSLET__FILL2(r, n, a) \
	syslet_fill_in(&(r), SYSLET__U(n), SYSLET__U(a), 0, 0, 0, 0, 0)
#define SYSLET__FILL3(r, n, a, b)                                            \
	syslet_fill_in(&(r), SYSLET__U(n), SYSLET__U(a), SYSLET__U(b), 0, 0, \
		       0, 0)
#define SYSLET__FILL4(r, n, a, b, c)                                   \
	syslet_fill_in(&(r), SYSLET__U(n), SYSLET__U(a), SYSLET__U(b), \
		       SYSLET__U(c), 0, 0, 0)
#define SYSLET__FILL5(r, n, a, b, c, d)                                \
	syslet_fill_in(&(r), SYSLET__U(n), SYSLET__U(a), SYSLET__U(b), \
		       SYSLET__U(c), SYSLET__U(d), 0, 0)
#define SYSLET__FILL6(r, n, a, b, c, d, e)                             \
	syslet_fill_in(&(r), SYSLET__U(n), SYSLET__U(a), SYSLET__U(b), \
		       SYSLET__U(c), SYSLET__U(d), SYSLET__U(e), 0)
#define SYSLET__FILL7(r, n, a, b, c, d, e, f)                          \
	syslet_fill_in(&(r), SYSLET__U(n), SYSLET__U(a), SYSLET__U(b), \
		       SYSLET__U(c), SYSLET__U(d), SYSLET__U(e), SYSLET__U(f))
#define FILL_IN(regs, ...) \
	SYSLET__CAT(SYSLET__FILL, SYSLET__NARG(__VA_ARGS__))(regs, __VA_ARGS__)

long indirect(struct indirect_registers *regs, void *params, size_t paramslen,
	      int flags);
int syslet_ring_wait(struct syslet_ring *ring, unsigned long user_idx);

#ifdef __cplusplus
}
#endif

#endif /* SYSLET_ABI_H */
