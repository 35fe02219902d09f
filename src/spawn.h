/* SPDX-License-Identifier: MIT */
/* Neutral threads (spawn.c). */
#ifndef SYSLET_SPAWN_H
#define SYSLET_SPAWN_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>

#include <stddef.h>

/*
 * Start a detached thread running @fn(@arg) on a stack of @stack_size,
 * every signal blocked, in the process's baseline state (the
 * thread-group leader's credentials, scheduling, affinity, ...), never
 * the calling thread's; on CPU @cpu alone, if >= 0 and in the baseline
 * mask. 0, or -errno: -EPERM if the new thread could not shed the
 * caller's state (it then never ran @fn).
 */
int syslet__thread_spawn(void *(*fn)(void *), void *arg, size_t stack_size,
			 int cpu);

/*
 * The whole text of @path (a /proc status file: it grows with the
 * supplementary groups, 65536 of them take ~700 KiB), NUL-terminated, in
 * a buffer to free(); NULL if it cannot be read.
 */
char *syslet__read_all(const char *path);

/*
 * pthread_create() of @fn as above, from a neutral thread (the manager);
 * _checked: from any thread, the new one checks itself (the manager's own
 * start, from a program thread).
 */
int syslet__thread_create(void *(*fn)(void *), void *arg, size_t stack_size,
			  int cpu);
int syslet__thread_create_checked(void *(*fn)(void *), void *arg,
				  size_t stack_size);

/*
 * Block every signal of the calling thread but those the kernel forces
 * (SIGSYS of a seccomp trap, SIGSEGV...: blocked, they would kill the
 * process) and glibc's own two; its mask before in @old, set back by
 * syslet__sig_restore() (raw system calls: the mask exactly as it was).
 */
void syslet__sig_block(sigset_t *old);
void syslet__sig_restore(const sigset_t *old);

#endif /* SYSLET_SPAWN_H */
