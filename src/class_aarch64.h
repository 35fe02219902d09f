/* SPDX-License-Identifier: MIT */
/*
 * The aarch64 class table's own lines, read by gen_class.py (not compiled
 * on its own): one line per name, [__NR_name] = kind, taking precedence
 * over class_x86_64.h, whose kinds cover every call the architectures
 * share.
 *
 * aarch64 uses the asm-generic numbers and has no call of its own: every
 * name of its <asm/unistd.h> is also an x86_64 name. It lacks the old
 * forms (open, stat, poll, select, epoll_wait, eventfd, signalfd, pipe,
 * dup2, fork, vfork, rename, unlink, ...): programs use the *at, p*, 2
 * and clone forms, which class_x86_64.h classes. The numbers it leaves
 * unassigned (244..259, its arch range, and 295..423) have no entry:
 * async, and the kernel answers ENOSYS.
 */
