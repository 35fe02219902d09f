/* SPDX-License-Identifier: MIT */
/* The reaper: the end of every worker thread, seen (reaper.c). */
#ifndef SYSLET_REAPER_H
#define SYSLET_REAPER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The doorbell, sent to the reaper thread only (blocked there). */
#define SYSLET__REAP_SIGNAL SIGURG

enum {
	SYSLET__WATCH_PENDING,
	SYSLET__WATCH_ON, /* the reaper will call syslet__worker_ended() */
	SYSLET__WATCH_NONE, /* nobody will: the worker frees its record */
};

/* A worker's entry with the reaper, in its record. */
struct syslet__watch {
	pid_t tid;
	int pidfd; /* the reaper's own table */
	_Atomic uint32_t state;
	struct syslet__watch *next; /* the reaper's queue */
};

/* Ask the reaper to watch the calling thread (a worker), as @w. */
void syslet__reaper_watch(struct syslet__watch *w);

/*
 * Wait for the reaper's answer: true if the thread's end will be seen,
 * so that syslet__worker_ended(@w) will follow it.
 */
bool syslet__reaper_wait(struct syslet__watch *w);

/* A fork child: no reaper. */
void syslet__reaper_atfork_child(void);

#endif /* SYSLET_REAPER_H */
