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

/* A goal of issue 5: libsyslet / contender <= bound (NULL: ms <= bound). */
struct bench_goal {
	const char *workload;
	const char *name; /* substring of the case name */
	const char *contender;
	double bound;
	const char *text;
	bool speedup; /* shown as contender / libsyslet >= 1/bound */
};

struct bench_goal_result {
	const struct bench_goal *goal;
	double value;
	bool measured;
	bool met;
};

void bench_stats(const struct bench_res_contender *c, struct bench_stat *s);
double bench_ratio(const struct bench_res_case *rc,
		   const struct bench_res_contender *c);
void bench_print_case(FILE *f, const struct bench_res_case *rc);
unsigned int bench_goals(const struct bench_results *r,
			 struct bench_goal_result *out, unsigned int max);
void bench_print_goals(FILE *f, const struct bench_results *r);
int bench_write_json(const char *path, const struct bench_results *r,
		     const struct bench_machine *m);
/* The table and goals as Markdown, for the README. */
int bench_write_markdown(const char *path, const struct bench_results *r,
			 const struct bench_machine *m);

#endif /* SYSLET_BENCH_REPORT_H */
