/* SPDX-License-Identifier: MIT */
/*
 * Try strategies (try.c) and how a worker finishes what a try started
 * (exec.c). Internal; every function returns 0/1 or -errno, never errno.
 */
#ifndef SYSLET_TRY_H
#define SYSLET_TRY_H

/* job->cont: what syslet__job_exec() runs. */
enum syslet__cont {
	SYSLET__CONT_CALL = 0, /* the call as submitted */
	SYSLET__CONT_REST, /* the rest of a transfer: job->done moved */
	SYSLET__CONT_RESULT, /* nothing: job->done is the result (ERFKILL) */
	SYSLET__CONT_LOWAT, /* a stream read: job->done moved, on to SO_RCVLOWAT */
};

/*
 * Attempt the call @nr(@arg) of try kind @kind on the caller without
 * blocking. 0: *@res is its answer, exactly the blocking call's. 1: a worker
 * must finish it as *@cont says; *@done bytes of it already moved (0:
 * nothing happened, SYSLET__CONT_CALL; > 0: SYSLET__CONT_REST or _LOWAT).
 */
int syslet__try(unsigned int kind, long nr, const long arg[6], long *res,
		long *done, unsigned int *cont);

#endif /* SYSLET_TRY_H */
