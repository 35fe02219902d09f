/* SPDX-License-Identifier: MIT */
/*
 * A pending call: what indirect() hands to the pool. Filled by the
 * submitter, then owned by exactly one worker until it is freed.
 */
#ifndef SYSLET_JOB_H
#define SYSLET_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <urcu/wfcqueue.h>

#include "ring.h"
#include "standin.h"
#include "try.h"

struct syslet__job {
	struct cds_wfcq_node qnode; /* pool queue linkage */
	long nr; /* system call number */
	long arg[6];
	uint64_t ip, sp; /* notifier frame; 0, 0: none */
	struct syslet__rstate *rs; /* ring with a slot reserved */
	struct syslet__cnode cnode; /* caller_data filled at submit */
	long done; /* bytes moved already by the try path */
	unsigned int cont; /* exec.c: how to finish a partial try */
	unsigned long creds; /* creds.c: its generation at submit */
	struct syslet__standin standin; /* standin.c: its tid, its mask */
	_Atomic int cancelled; /* cancel.c: set once by syslet_cancel() */
	unsigned int slot; /* pool.c: its drain slot, counted at submit */
};

/*
 * The status of @job stopped before its system call ran (cancelled while
 * queued, its worker killed at the call's entry): @err, or what a try
 * already moved or answered on the caller (job->done), which stays.
 */
static inline long syslet__job_unrun(const struct syslet__job *job, long err)
{
	return job->cont == SYSLET__CONT_CALL ? err : job->done;
}

/* pool.c: allocate/free a job (NULL when out of memory). */
struct syslet__job *syslet__job_alloc(void);
void syslet__job_free(struct syslet__job *job);

/*
 * exec.c: run the call of @job to its end on a worker (blocking allowed)
 * and return its raw result (>= 0 or -errno), counting @job->done.
 */
long syslet__job_exec(struct syslet__job *job);

/* exec.c: a transfer of the try path (its descriptor is arg[0]). */
bool syslet__job_transfer(long nr);

#endif /* SYSLET_JOB_H */
