/* SPDX-License-Identifier: MIT */
/* The report (report.c): statistics, table, goals, JSON. Parent only. */
#ifndef SYSLET_BENCH_REPORT_H
#define SYSLET_BENCH_REPORT_H

#include <stdio.h>

#include "bench.h"

struct bench_stat {
	bool ok;
	double median, min, max;
	double cpu; /* median CPU time, all threads, same unit */
	double sys; /* median system calls per op, all threads; < 0: none */
};

struct bench_machine {
	char kernel[96];
	char cpu[96];
	long cpus;
	char glibc[24];
	char liburing[24];
	char libuv[24];
	char load_start[64];
	char load_end[64];
};

/* How a goal is measured (report.c's table of goals says which). */
enum bench_goal_kind {
	GOAL_RATIO, /* libsyslet / contender <= bound */
	GOAL_BEST, /* libsyslet / the fastest of peers <= bound */
	GOAL_CPU_BEST, /* libsyslet's CPU / the leanest of peers <= bound */
	GOAL_VALUE, /* libsyslet's median <= bound, in the case's unit */
	GOAL_P99, /* libsyslet's p99 latency < bound ns */
	GOAL_SPEEDUP, /* contender / libsyslet >= 1 / bound */
	GOAL_WORKERS, /* workers_peak <= calls in flight + CPUs, every case */
};

struct bench_goal {
	enum bench_goal_kind kind;
	const char *workload;
	const char *name; /* substring of the case name */
	const char *peers[5]; /* GOAL_RATIO, SPEEDUP: peers[0] only */
	double bound;
	const char *text;
};

struct bench_goal_result {
	const struct bench_goal *goal;
	char text[112]; /* the goal, as printed */
	char shown[96]; /* the measurement, as printed */
	double value; /* what is compared with the bound */
	bool measured;
	bool met;
};

void bench_stats(const struct bench_res_contender *c, struct bench_stat *s);
double bench_ratio(const struct bench_res_case *rc,
		   const struct bench_res_contender *c);
void bench_print_case(FILE *f, const struct bench_res_case *rc);
unsigned int bench_goals(const struct bench_results *r, long cpus,
			 struct bench_goal_result *out, unsigned int max);
void bench_print_goals(FILE *f, const struct bench_results *r,
		       const struct bench_machine *m);
int bench_write_json(const char *path, const struct bench_results *r,
		     const struct bench_machine *m);
/* The table and goals as Markdown, for the README. */
int bench_write_markdown(const char *path, const struct bench_results *r,
			 const struct bench_machine *m);

#endif /* SYSLET_BENCH_REPORT_H */
