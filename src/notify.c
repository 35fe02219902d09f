/* SPDX-License-Identifier: MIT */
/* STUB (issue #3 replaces it): run the notifier with makecontext. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <ucontext.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "pool.h"

static _Thread_local ucontext_t back;
static _Thread_local struct syslet_completion *current;

int syslet__notify_thread_init(void)
{
	return -ENOSYS;
}

void syslet__notify_run(struct syslet__job *job, struct syslet_completion *c)
{
	ucontext_t uc;

	getcontext(&uc);
	uc.uc_stack.ss_sp = (void *)(uintptr_t)(job->sp - 65536);
	uc.uc_stack.ss_size = 65536;
	uc.uc_link = &back;
	makecontext(&uc, (void (*)(void))(uintptr_t)job->ip, 0);
	current = c;
	swapcontext(&back, &uc);
	current = NULL;
}

SYSLET_EXPORT void syslet_notify_exit(void)
{
	setcontext(&back);
	__builtin_unreachable();
}

SYSLET_EXPORT struct syslet_completion *syslet_current_completion(void)
{
	return current;
}
