/* SPDX-License-Identifier: MIT */
/*
 * Turning stored figures into the table, the goal list and the JSON file.
 * Runs in the parent only, after the workload children are reaped.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "report.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(const double *src, unsigned int n, double *min,
			double *max)
{
	double v[BENCH_MAX_ROUNDS];

	memcpy(v, src, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_double);
	if (min)
		*min = v[0];
	if (max)
		*max = v[n - 1];
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_stats(const struct bench_res_contender *c, struct bench_stat *s)
{
	memset(s, 0, sizeof(*s));
	if (!c->samples)
		return;
	s->ok = true;
	s->median = median_of(c->value, c->samples, &s->min, &s->max);
	s->cpu = median_of(c->cpu, c->samples, NULL, NULL);
	s->sys = median_of(c->sys, c->samples, NULL, NULL);
}

/* The row ratios of @rc are taken against, or NULL. */
static const struct bench_res_contender *
base_of(const struct bench_res_case *rc, bool *per_ref)
{
	unsigned int i;

	*per_ref = false;
	for (i = 0; i < rc->n; i++) {
		if (rc->c[i].reference) {
			*per_ref = true;
			return &rc->c[i];
		}
	}
	for (i = 0; i < rc->n; i++)
		if (rc->c[i].libsyslet)
			return &rc->c[i];
	return NULL;
}

/* The ratio shown beside @c, or 0 when there is none. */
double bench_ratio(const struct bench_res_case *rc,
		   const struct bench_res_contender *c)
{
	const struct bench_res_contender *b;
	struct bench_stat sb, sc;
	bool per_ref;

	b = base_of(rc, &per_ref);
	if (!b || b == c || (!per_ref && c->libsyslet))
		return 0;
	bench_stats(b, &sb);
	bench_stats(c, &sc);
	if (!sb.ok || !sc.ok || sb.median <= 0 || sc.median <= 0)
		return 0;
	return per_ref ? sc.median / sb.median : sb.median / sc.median;
}

static const char *unit_name(enum bench_unit u)
{
	return u == BENCH_MS_PER_BATCH ? "ms/batch" : "ns/op";
}

void bench_print_case(FILE *f, const struct bench_res_case *rc)
{
	const struct bench_res_contender *b;
	unsigned int i;
	bool per_ref;

	b = base_of(rc, &per_ref);
	fprintf(f,
		"\n== %s: %s  [%s: median, min-max over rounds; cpu: CPU "
		"time of all threads; sys/op: their system calls]\n",
		rc->workload, rc->name, unit_name(rc->unit));
	for (i = 0; i < rc->n; i++)
		fprintf(f, "   %-20s %s\n", rc->c[i].name, rc->c[i].config);
	fprintf(f, "   %-20s %12s %23s %10s %7s %9s %26s  %s\n", "contender",
		"median", "min - max", "cpu", "sys/op", "ops/run",
		rc->latency ? "p50 / p99 / max ns" : "",
		!b	? "" :
		per_ref ? "x/ref" :
			  "libsyslet/x");
	for (i = 0; i < rc->n; i++) {
		const struct bench_res_contender *c = &rc->c[i];
		struct bench_stat s;
		double ratio = bench_ratio(rc, c);
		char range[64], rbuf[32] = "", lat[64] = "", sys[16] = "-";

		bench_stats(c, &s);
		if (c->skipped) {
			fprintf(f, "   %-20s skipped: %s\n", c->name, c->err);
			continue;
		}
		if (!s.ok) {
			/* no sample, no error: its process ended meanwhile */
			fprintf(f, "   %-20s FAILED: %s\n", c->name,
				c->err[0] ? c->err :
					    "no run completed: the workload "
					    "process ended");
			continue;
		}
		snprintf(range, sizeof(range), "%.1f - %.1f", s.min, s.max);
		if (s.sys >= 0)
			snprintf(sys, sizeof(sys), "%.2f", s.sys);
		if (ratio > 0)
			snprintf(rbuf, sizeof(rbuf), "%.3f", ratio);
		if (c->lat_n)
			snprintf(lat, sizeof(lat), "%.0f / %.0f / %.0f", c->p50,
				 c->p99, c->max);
		fprintf(f, "   %-20s %12.1f %23s %10.1f %7s %9llu %26s  %s%s\n",
			c->name, s.median, range, s.cpu, sys,
			(unsigned long long)c->ops, lat, rbuf,
			c->samples < 5 ? "  (fewer rounds: slow)" : "");
		if (c->failed)
			fprintf(f, "   %-20s %llu ops FAILED: %s\n", "",
				(unsigned long long)c->failed, c->err);
	}
	if (rc->note[0])
		fprintf(f, "   %s\n", rc->note);
}

/*
 * The goals, issue 9's first (each from this run's own numbers), then the
 * older ones of issue 5. "Peers" are the contenders a program would use
 * instead; floors and limits are not peers.
 */
static const struct bench_goal goals[] = {
	{ GOAL_BEST,
	  "punt-qd64",
	  "fdatasync",
	  { "io_uring", "POSIX AIO", "libuv" },
	  0.5,
	  "punt QD64 <= 0.5x the best of io_uring, POSIX AIO, libuv" },
	{ GOAL_BEST,
	  "punt-qd1",
	  "fdatasync",
	  { "io_uring", "POSIX AIO", "libuv", "thread per call" },
	  0.5,
	  "punt QD1 <= 0.5x the best peer" },
	{ GOAL_CPU_BEST,
	  "punt-qd1",
	  "fdatasync",
	  { "io_uring", "POSIX AIO", "libuv", "thread per call" },
	  1,
	  "CPU per call, punt QD1 <= the best peer's" },
	{ GOAL_CPU_BEST,
	  "punt-qd64",
	  "fdatasync",
	  { "io_uring", "POSIX AIO", "libuv", "thread per call" },
	  1,
	  "CPU per call, punt QD64 <= the best peer's" },
	{ GOAL_CPU_BEST,
	  "blocking-mix",
	  "random",
	  { "io_uring", "io_uring O_DIRECT", "libaio O_DIRECT", "POSIX AIO" },
	  1,
	  "CPU per call, blocking-mix <= the best peer's" },
	{ GOAL_CPU_BEST,
	  "pipes-mix",
	  "short",
	  { "libuv", "thread per call" },
	  1,
	  "CPU per short call, pipes-mix <= the best peer's" },
	{ GOAL_WORKERS, NULL, NULL, { NULL }, 0, NULL },
	{ GOAL_VALUE,
	  "sleepers",
	  "10000 x",
	  { NULL },
	  250,
	  "sleepers <= 250 ms" },
	{ GOAL_P99,
	  "pipes-mix",
	  "short",
	  { NULL },
	  1000000,
	  "pipes-mix: short calls' p99 < 1 ms" },
	/* an earlier quick run's median (bench/README.md): noisy */
	{ GOAL_VALUE,
	  "blocking-mix",
	  "random",
	  { NULL },
	  12788.3,
	  "blocking-mix <= 12788 ns a read (an earlier run)" },
	{ GOAL_RATIO,
	  "inline",
	  "pread",
	  { "preadv2 RWF_NOWAIT" },
	  1.05,
	  "(5) inline read <= 1.05x preadv2(RWF_NOWAIT)" },
	{ GOAL_RATIO,
	  "inline",
	  "getpid",
	  { "raw syscall" },
	  1.05,
	  "(5) inline getpid <= 1.05x raw syscall" },
	{ GOAL_RATIO,
	  "punt-qd1",
	  "fdatasync",
	  { "io_uring" },
	  0.1,
	  "(5) punt QD1 <= 0.1x io_uring" },
	{ GOAL_RATIO,
	  "punt-qd1",
	  "fdatasync",
	  { "POSIX AIO" },
	  0.05,
	  "(5) punt QD1 <= 0.05x POSIX AIO" },
	{ GOAL_RATIO,
	  "punt-qd64",
	  "fdatasync",
	  { "io_uring" },
	  0.5,
	  "(5) punt QD64 <= 0.5x io_uring" },
	{ GOAL_RATIO,
	  "punt-qd64",
	  "fdatasync",
	  { "POSIX AIO" },
	  0.2,
	  "(5) punt QD64 <= 0.2x POSIX AIO" },
	{ GOAL_SPEEDUP,
	  "ring-publish",
	  "2 producers",
	  { "mutex ring" },
	  0.5,
	  "(5) ring publish, 2 producers >= 2x mutex ring" },
};

#define NGOALS (sizeof(goals) / sizeof(goals[0]))
/* Results at most: a workers goal per case, one for each other goal. */
#define MAX_GOAL_RESULTS (NGOALS + BENCH_MAX_CASES)

static const struct bench_res_case *find_case(const struct bench_results *r,
					      const char *wl, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->ncases; i++)
		if (!strcmp(r->cases[i].workload, wl) &&
		    strstr(r->cases[i].name, name))
			return &r->cases[i];
	return NULL;
}

static const struct bench_res_contender *
find_contender(const struct bench_res_case *rc, const char *name,
	       bool libsyslet)
{
	unsigned int i;

	for (i = 0; i < rc->n; i++)
		if (libsyslet ? rc->c[i].libsyslet :
				!strcmp(rc->c[i].name, name))
			return &rc->c[i];
	return NULL;
}

/* The peer of @g with the lowest median (or CPU time); NULL if none ran. */
static const struct bench_res_contender *
best_peer(const struct bench_res_case *rc, const struct bench_goal *g, bool cpu,
	  struct bench_stat *best)
{
	const struct bench_res_contender *b = NULL, *c;
	struct bench_stat s;
	unsigned int i;

	for (i = 0; i < 5 && g->peers[i]; i++) {
		c = find_contender(rc, g->peers[i], false);
		if (!c)
			continue;
		bench_stats(c, &s);
		if (!s.ok || (b && (cpu ? s.cpu >= best->cpu :
					  s.median >= best->median)))
			continue;
		b = c;
		*best = s;
	}
	return b;
}

/* Fill @out for goal @g on case @rc; false if the case has no libsyslet. */
static bool measure(const struct bench_goal *g, const struct bench_res_case *rc,
		    long cpus, struct bench_goal_result *out)
{
	const struct bench_res_contender *lib = find_contender(rc, NULL, true);
	const struct bench_res_contender *other;
	struct bench_stat sl, so;
	unsigned int limit;

	if (!lib)
		return false;
	memset(out, 0, sizeof(*out));
	out->goal = g;
	snprintf(out->text, sizeof(out->text), "%s", g->text ? g->text : "");
	bench_stats(lib, &sl);
	switch (g->kind) {
	case GOAL_RATIO:
	case GOAL_SPEEDUP:
		other = find_contender(rc, g->peers[0], false);
		out->value = other ? bench_ratio(rc, other) : 0;
		out->measured = out->value > 0;
		if (g->kind == GOAL_SPEEDUP)
			snprintf(out->shown, sizeof(out->shown),
				 "%.3fx the throughput",
				 out->measured ? 1 / out->value : 0);
		else
			snprintf(out->shown, sizeof(out->shown), "%.3fx",
				 out->value);
		break;
	case GOAL_BEST:
	case GOAL_CPU_BEST:
		other = best_peer(rc, g, g->kind == GOAL_CPU_BEST, &so);
		if (!other || !sl.ok)
			break;
		out->value = g->kind == GOAL_CPU_BEST ? sl.cpu / so.cpu :
							sl.median / so.median;
		out->measured = out->value > 0;
		snprintf(out->shown, sizeof(out->shown),
			 "%.3fx %s (%.1f vs %.1f)", out->value, other->name,
			 g->kind == GOAL_CPU_BEST ? sl.cpu : sl.median,
			 g->kind == GOAL_CPU_BEST ? so.cpu : so.median);
		break;
	case GOAL_VALUE:
		out->value = sl.ok ? sl.median : 0;
		out->measured = sl.ok;
		snprintf(out->shown, sizeof(out->shown), "%.1f %s", out->value,
			 rc->unit == BENCH_MS_PER_BATCH ? "ms" : "ns");
		break;
	case GOAL_P99:
		out->value = lib->p99;
		out->measured = lib->lat_n > 0;
		snprintf(out->shown, sizeof(out->shown),
			 "p99 %.1f us (p50 %.1f us)", lib->p99 / 1e3,
			 lib->p50 / 1e3);
		/* strictly below */
		out->met = out->measured && out->value < g->bound;
		return true;
	case GOAL_WORKERS:
		limit = rc->inflight + (unsigned int)cpus;
		snprintf(out->text, sizeof(out->text),
			 "workers_peak <= in flight + CPUs, %s (%u + %ld)",
			 rc->workload, rc->inflight, cpus);
		out->value = (double)rc->workers_peak;
		out->measured = rc->workers_peak >= 0;
		snprintf(out->shown, sizeof(out->shown), "%lld workers",
			 (long long)rc->workers_peak);
		out->met = out->measured && out->value <= limit;
		return true;
	}
	out->met = out->measured && out->value <= g->bound;
	return true;
}

unsigned int bench_goals(const struct bench_results *r, long cpus,
			 struct bench_goal_result *out, unsigned int max)
{
	const struct bench_res_case *rc;
	unsigned int i, k, n = 0;

	for (i = 0; i < NGOALS && n < max; i++) {
		const struct bench_goal *g = &goals[i];

		if (g->kind != GOAL_WORKERS) {
			rc = find_case(r, g->workload, g->name);
			if (rc && measure(g, rc, cpus, &out[n]))
				n++;
			continue;
		}
		for (k = 0; k < r->ncases && n < max; k++)
			if (r->cases[k].inflight &&
			    measure(g, &r->cases[k], cpus, &out[n]))
				n++;
	}
	return n;
}

void bench_print_goals(FILE *f, const struct bench_results *r,
		       const struct bench_machine *m)
{
	struct bench_goal_result g[MAX_GOAL_RESULTS];
	unsigned int i, n = bench_goals(r, m->cpus, g, MAX_GOAL_RESULTS);

	if (!n)
		return;
	fprintf(f, "\n== goals (issue 9; (5): issue 5), from this run's "
		   "numbers\n");
	for (i = 0; i < n; i++)
		fprintf(f, "   %-62s %s %s\n", g[i].text,
			!g[i].measured ? "not measured" :
			g[i].met       ? "met   " :
					 "MISSED",
			g[i].measured ? g[i].shown : "");
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void json_contender(FILE *f, const struct bench_res_case *rc,
			   const struct bench_res_contender *c)
{
	struct bench_stat s;
	unsigned int i;

	bench_stats(c, &s);
	fprintf(f, "        {\"name\": ");
	json_str(f, c->name);
	fprintf(f, ", \"config\": ");
	json_str(f, c->config);
	fprintf(f,
		",\n         \"libsyslet\": %s, \"reference\": %s, "
		"\"skipped\": %s, \"ops_per_run\": %llu, \"failed_ops\": %llu",
		c->libsyslet ? "true" : "false",
		c->reference ? "true" : "false", c->skipped ? "true" : "false",
		(unsigned long long)c->ops, (unsigned long long)c->failed);
	if (c->err[0]) {
		fprintf(f, ", \"error\": ");
		json_str(f, c->err);
	}
	if (s.ok) {
		double ratio = bench_ratio(rc, c);

		fprintf(f,
			",\n         \"median\": %.3f, \"min\": %.3f, "
			"\"max\": %.3f, \"cpu_median\": %.3f, ",
			s.median, s.min, s.max, s.cpu);
		if (s.sys >= 0)
			fprintf(f, "\"syscalls_per_op\": %.3f, ", s.sys);
		else
			fprintf(f, "\"syscalls_per_op\": null, ");
		fprintf(f, "\"ratio\": ");
		if (ratio > 0)
			fprintf(f, "%.4f", ratio);
		else
			fprintf(f, "null");
		if (c->lat_n)
			fprintf(f,
				", \"latency_p50_ns\": %.1f, "
				"\"latency_p99_ns\": %.1f, "
				"\"latency_p999_ns\": "
				"%.1f, \"latency_max_ns\": %.1f, "
				"\"latency_calls\": %llu",
				c->p50, c->p99, c->p999, c->max,
				(unsigned long long)c->lat_n);
		fprintf(f, ", \"samples\": [");
		for (i = 0; i < c->samples; i++)
			fprintf(f, "%s%.3f", i ? ", " : "", c->value[i]);
		fprintf(f, "]");
	}
	fprintf(f, "}");
}

int bench_write_json(const char *path, const struct bench_results *r,
		     const struct bench_machine *m)
{
	struct bench_goal_result g[MAX_GOAL_RESULTS];
	unsigned int i, k, n;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "{\n  \"tool\": \"syslet-bench\",\n  \"machine\": {"
		   "\"kernel\": ");
	json_str(f, m->kernel);
	fprintf(f, ", \"cpu\": ");
	json_str(f, m->cpu);
	fprintf(f, ", \"cpus\": %ld, \"glibc\": ", m->cpus);
	json_str(f, m->glibc);
	fprintf(f, ", \"liburing\": ");
	json_str(f, m->liburing);
	fprintf(f, ", \"libuv\": ");
	json_str(f, m->libuv);
	fprintf(f, ", \"loadavg_start\": ");
	json_str(f, m->load_start);
	fprintf(f, ", \"loadavg_end\": ");
	json_str(f, m->load_end);
	fprintf(f, "},\n  \"mode\": \"%s\", \"rounds\": %u,\n  \"cases\": [\n",
		bench_opts.mode == BENCH_SMOKE ? "smoke" :
		bench_opts.mode == BENCH_QUICK ? "quick" :
						 "full",
		bench_opts.rounds);
	for (i = 0; i < r->ncases; i++) {
		const struct bench_res_case *rc = &r->cases[i];

		fprintf(f, "    {\"workload\": ");
		json_str(f, rc->workload);
		fprintf(f, ", \"case\": ");
		json_str(f, rc->name);
		fprintf(f,
			", \"unit\": \"%s\", \"in_flight\": %u, "
			"\"workers_peak\": %lld, \"note\": ",
			unit_name(rc->unit), rc->inflight,
			(long long)rc->workers_peak);
		json_str(f, rc->note);
		fprintf(f, ",\n      \"contenders\": [\n");
		for (k = 0; k < rc->n; k++) {
			json_contender(f, rc, &rc->c[k]);
			fprintf(f, "%s\n", k + 1 < rc->n ? "," : "");
		}
		fprintf(f, "      ]}%s\n", i + 1 < r->ncases ? "," : "");
	}
	fprintf(f, "  ],\n  \"goals\": [\n");
	n = bench_goals(r, m->cpus, g, MAX_GOAL_RESULTS);
	for (i = 0; i < n; i++) {
		fprintf(f, "    {\"goal\": ");
		json_str(f, g[i].text);
		fprintf(f, ", \"shown\": ");
		json_str(f, g[i].measured ? g[i].shown : "not measured");
		fprintf(f,
			", \"value\": %.4f, \"measured\": %s, \"met\": "
			"%s}%s\n",
			g[i].value, g[i].measured ? "true" : "false",
			g[i].met ? "true" : "false", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return fclose(f) ? -1 : 0;
}

int bench_write_markdown(const char *path, const struct bench_results *r,
			 const struct bench_machine *m)
{
	struct bench_goal_result g[MAX_GOAL_RESULTS];
	unsigned int i, k, n;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f,
		"Machine: %s, %ld CPUs (%s), glibc %s, liburing %s, "
		"libuv %s; mode %s, %u rounds; load average %s at the start, "
		"%s at the end.\n\n",
		m->kernel, m->cpus, m->cpu, m->glibc, m->liburing, m->libuv,
		bench_opts.mode == BENCH_SMOKE ? "smoke" :
		bench_opts.mode == BENCH_QUICK ? "quick" :
						 "full",
		bench_opts.rounds, m->load_start, m->load_end);
	fprintf(f, "| workload | contender | median | min - max | cpu | "
		   "sys/op | p50 | p99 | ratio |\n"
		   "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < r->ncases; i++) {
		const struct bench_res_case *rc = &r->cases[i];
		bool per_ref;

		per_ref = false;
		for (k = 0; k < rc->n; k++)
			per_ref |= rc->c[k].reference;
		for (k = 0; k < rc->n; k++) {
			const struct bench_res_contender *c = &rc->c[k];
			double ratio = bench_ratio(rc, c);
			struct bench_stat s;

			bench_stats(c, &s);
			if (k)
				fprintf(f, "| | %s | ", c->name);
			else
				fprintf(f, "| %s: %s (%s) | %s | ",
					rc->workload, rc->name,
					unit_name(rc->unit), c->name);
			if (c->skipped) {
				fprintf(f, "skipped | | | | | | |\n");
				continue;
			}
			if (!s.ok) {
				fprintf(f, "FAILED | | | | | | |\n");
				continue;
			}
			fprintf(f, "%.1f | %.1f - %.1f | %.1f | ", s.median,
				s.min, s.max, s.cpu);
			if (s.sys >= 0)
				fprintf(f, "%.2f | ", s.sys);
			else
				fprintf(f, "| ");
			if (c->lat_n)
				fprintf(f, "%.0f | %.0f | ", c->p50, c->p99);
			else
				fprintf(f, "| | ");
			if (ratio > 0)
				fprintf(f, "%.3f%s |\n", ratio,
					per_ref ? " (x/ref)" : "");
			else
				fprintf(f, "|\n");
		}
		if (rc->note[0])
			fprintf(f, "| | *%s* | | | | | | | |\n", rc->note);
	}
	n = bench_goals(r, m->cpus, g, MAX_GOAL_RESULTS);
	if (n)
		fprintf(f, "\n| goal | measured | |\n|---|---:|---|\n");
	for (i = 0; i < n; i++) {
		if (!g[i].measured)
			fprintf(f, "| %s | not measured | |\n", g[i].text);
		else
			fprintf(f, "| %s | %s | %s |\n", g[i].text, g[i].shown,
				g[i].met ? "met" : "**missed**");
	}
	return fclose(f) ? -1 : 0;
}
