/* SPDX-License-Identifier: MIT */
/* STUB (issue #4 replaces it): run a pending call on a worker. */
#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>

#include "job.h"

long syslet__job_exec(struct syslet__job *job)
{
	long r = syscall(job->nr, job->arg[0], job->arg[1], job->arg[2],
			 job->arg[3], job->arg[4], job->arg[5]);

	return r == -1 ? -errno : r;
}
