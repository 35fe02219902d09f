/* SPDX-License-Identifier: MIT */
/* STUB (issue #4 replaces it): validation and an always-pending path. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include <syslet/syslet.h>

#include "compiler.h"
#include "pool.h"

static long fail(int e)
{
	errno = e;
	return -1;
}

SYSLET_EXPORT long indirect(struct indirect_registers *regs, void *params,
			    size_t paramslen, int flags)
{
	union indirect_params p = { 0 };
	struct syslet_ring *ring;
	struct syslet__job *job;
	int i, ret;

	if (flags)
		return fail(EINVAL);
	if (!regs)
		return fail(EFAULT);
	if (paramslen > sizeof(p))
		return fail(EINVAL);
	if (!params && paramslen)
		return fail(EFAULT);
	memcpy(&p, params, paramslen);
	if (!p.syslet.completion_ring_ptr)
		return fail(EINVAL);
	ring = (struct syslet_ring *)(uintptr_t)p.syslet.completion_ring_ptr;
	ret = syslet__ring_check(ring);
	if (ret)
		return fail(-ret);
	job = syslet__job_alloc();
	if (!job)
		return fail(ENOMEM);
	ret = syslet__ring_reserve(ring, &job->rs);
	if (ret) {
		syslet__job_free(job);
		return fail(-ret);
	}
	job->nr = (long)SYSLET__REG_NR(regs);
	for (i = 0; i < 6; i++)
		job->arg[i] = (long)SYSLET__REG_ARGS(regs)[i];
	job->ip = p.syslet.frame.ip;
	job->sp = p.syslet.frame.sp;
	job->cnode.caller_data = p.syslet.caller_data;
	ret = syslet__pool_submit(job);
	if (ret) {
		syslet__ring_unreserve(job->rs);
		syslet__job_free(job);
		return fail(-ret);
	}
	return fail(ESYSLETPENDING);
}

SYSLET_EXPORT int syslet_set_class(long nr, enum syslet_class cls)
{
	(void)nr;
	(void)cls;
	return fail(EINVAL);
}

SYSLET_EXPORT int syslet_get_class(long nr)
{
	(void)nr;
	return fail(EINVAL);
}
