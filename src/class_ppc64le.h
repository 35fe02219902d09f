/* SPDX-License-Identifier: MIT */
/*
 * The ppc64le class table's own lines, read by gen_class.py (not compiled
 * on its own): one line per name, [__NR_name] = kind, taking precedence
 * over class_x86_64.h, whose kinds cover every call the architectures
 * share. Classes as in class_x86_64.h: inline if it cannot usefully block
 * or is bound to the calling thread, async if it may block with no
 * non-blocking form; calls the 64-bit kernel wires to sys_ni_syscall
 * answer ENOSYS at once, so they are inline.
 */
/* clang-format off */

/* 82 "select" is sys_ni_syscall on ppc64: the real one is _newselect */
[__NR_select] = SK_INLINE,
[__NR__newselect] = SK_SELECT,

/* waitpid: wait4 without its rusage argument; no exact try */
[__NR_waitpid] = SK_ASYNC,
/* the old stat family and readdir look up paths or ask the file system */
[__NR_oldstat] = SK_ASYNC,
[__NR_oldfstat] = SK_ASYNC,
[__NR_oldlstat] = SK_ASYNC,
[__NR_readdir] = SK_ASYNC,
[__NR_statfs64] = SK_ASYNC,
[__NR_fstatfs64] = SK_ASYNC,
[__NR_umount] = SK_ASYNC,
/* socketcall and ipc multiplex calls that block (accept, recv, semop) */
[__NR_socketcall] = SK_ASYNC,
[__NR_ipc] = SK_ASYNC,
/* send/recv: sendto/recvfrom without the address; no exact try */
[__NR_send] = SK_ASYNC,
[__NR_recv] = SK_ASYNC,
/* sync_file_range2 waits for writeback, as sync_file_range does */
[__NR_sync_file_range2] = SK_ASYNC,
/* PCI config space and firmware (RTAS) calls wait for the hardware */
[__NR_pciconfig_read] = SK_ASYNC,
[__NR_pciconfig_write] = SK_ASYNC,
[__NR_rtas] = SK_ASYNC,
/* spu_run runs a Cell SPU until it stops; spu_create makes a file */
[__NR_spu_run] = SK_ASYNC,
[__NR_spu_create] = SK_ASYNC,

/* _llseek is lseek; ugetrlimit is getrlimit */
[__NR__llseek] = SK_INLINE,
[__NR_ugetrlimit] = SK_INLINE,
/* the calling thread's signals, mask and context */
[__NR_signal] = SK_INLINE,
[__NR_sigaction] = SK_INLINE,
[__NR_sigprocmask] = SK_INLINE,
[__NR_sigpending] = SK_INLINE,
[__NR_sigsuspend] = SK_INLINE,
[__NR_sigreturn] = SK_INLINE,
[__NR_sgetmask] = SK_INLINE,
[__NR_ssetmask] = SK_INLINE,
[__NR_swapcontext] = SK_INLINE,
[__NR_sys_debug_setcontext] = SK_INLINE,
/* switch_endian changes the calling thread's byte order */
[__NR_switch_endian] = SK_INLINE,
/* nice changes the calling thread's priority */
[__NR_nice] = SK_INLINE,
/* the page protection map of the calling process, now */
[__NR_subpage_prot] = SK_INLINE,
[__NR_pciconfig_iobase] = SK_INLINE,
[__NR_stime] = SK_INLINE,
[__NR_olduname] = SK_INLINE,
[__NR_oldolduname] = SK_INLINE,
/* never implemented on ppc64 (sys_ni_syscall): ENOSYS at once */
[__NR_break] = SK_INLINE,
[__NR_stty] = SK_INLINE,
[__NR_gtty] = SK_INLINE,
[__NR_ftime] = SK_INLINE,
[__NR_prof] = SK_INLINE,
[__NR_lock] = SK_INLINE,
[__NR_mpx] = SK_INLINE,
[__NR_ulimit] = SK_INLINE,
[__NR_profil] = SK_INLINE,
[__NR_idle] = SK_INLINE,
[__NR_vm86] = SK_INLINE,
[__NR_bdflush] = SK_INLINE,
[__NR_multiplexer] = SK_INLINE,
	/* clang-format on */
