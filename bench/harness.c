/* SPDX-License-Identifier: MIT */
/*
 * The round runner: set every contender of a case up, size its runs from a
 * warm-up run, then run interleaved rounds and store the figures.
 * Single-threaded (the workload child's main thread); nothing shared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "bench.h"

/* A contender its workload's process never reached (an alarm, a crash) */
#define ENDED "not reached: the workload process ended first"

struct bench_opts bench_opts = {
	.mode = BENCH_FULL,
	.rounds = 0,
	.disk_dir = "/var/tmp",
	.shm_dir = "/dev/shm",
	.aio_fds = -1,
	.wait_s = 30,
};

uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_fail(struct bench_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
}

uint64_t bench_pick(uint64_t smoke, uint64_t quick, uint64_t full)
{
	switch (bench_opts.mode) {
	case BENCH_SMOKE:
		return smoke;
	case BENCH_QUICK:
		return quick;
	default:
		return full;
	}
}

struct bench_contender *bench_add(struct bench_case *bc, const char *name,
				  bool libsyslet)
{
	struct bench_contender *c = &bc->c[bc->n++];

	if (bc->n > BENCH_MAX_CONTENDERS)
		abort();
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->libsyslet = libsyslet;
	return c;
}

/* Wall time one measured run should take, per mode. */
static uint64_t target_ns(void)
{
	return bench_pick(0, 25, 150) * 1000000u;
}

/* Longest a single run may take before the contender stops at fewer rounds. */
static uint64_t slow_ns(void)
{
	return bench_pick(5, 4, 20) * 1000000000ull;
}

static uint64_t calibrate(const struct bench_case *bc,
			  const struct bench_contender *c,
			  const struct bench_run *warm)
{
	uint64_t max = c->max_ops && c->max_ops < bc->ops_max ? c->max_ops :
								bc->ops_max;
	uint64_t g = bc->ops_granule ? bc->ops_granule : 1;
	uint64_t ops;

	if (bc->ops_min >= max || bench_opts.mode == BENCH_SMOKE || !warm->ns ||
	    !warm->ops)
		return bc->ops_min < max ? bc->ops_min : max;
	ops = (uint64_t)((double)target_ns() * (double)warm->ops /
			 (double)warm->ns);
	ops = ops / g * g;
	if (ops < bc->ops_min)
		ops = bc->ops_min;
	return ops > max ? max : ops;
}

static double per(const struct bench_case *bc, const struct bench_run *r,
		  uint64_t ns)
{
	if (bc->unit == BENCH_MS_PER_BATCH)
		return (double)ns / 1e6;
	return (double)ns / (double)r->ops;
}

/* User + system time of every thread of the process so far. */
static uint64_t cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
		       1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) *
		       1000u;
}

static int sys_fd = -1; /* bench_syscalls_open()'s counter */

int bench_syscalls_open(void)
{
	static const char *const ids[] = {
		"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
		"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT,
				     .size = sizeof(a),
				     .inherit = 1 };
	unsigned int i;
	FILE *f;

	for (i = 0; i < 2 && !a.config; i++) {
		f = fopen(ids[i], "r");
		if (f &&
		    fscanf(f, "%llu", (unsigned long long *)&a.config) != 1)
			a.config = 0;
		if (f)
			fclose(f);
	}
	if (!a.config)
		return -ENOENT;
	sys_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
			      PERF_FLAG_FD_CLOEXEC);
	return sys_fd < 0 ? -errno : 0;
}

void bench_syscalls_close(void)
{
	if (sys_fd >= 0)
		close(sys_fd);
	sys_fd = -1;
}

/* The count so far, live and ended threads alike; -1 if none. */
static int64_t sys_now(void)
{
	uint64_t n;

	if (sys_fd < 0 || read(sys_fd, &n, sizeof(n)) != sizeof(n))
		return -1;
	return (int64_t)n;
}

uint64_t bench_start(struct bench_run *r)
{
	r->sys0 = sys_now();
	r->cpu0 = cpu_now();
	r->lat_last = bench_now();
	return r->lat_last;
}

void bench_stop(struct bench_run *r, uint64_t t0)
{
	r->ns = bench_now() - t0;
	r->cpu_ns = cpu_now() - r->cpu0;
	/* Not the bracket's own: its two getrusage() and this read() */
	r->sys = r->sys0 < 0 ? -1 : sys_now() - r->sys0 - 3;
}

static void sample(const struct bench_case *bc, struct bench_res_contender *rc,
		   const struct bench_run *r)
{
	rc->value[rc->samples] = per(bc, r, r->ns);
	rc->cpu[rc->samples] = per(bc, r, r->cpu_ns);
	/* Per op in every unit */
	rc->sys[rc->samples] = r->sys < 0 ? -1 :
					    (double)r->sys / (double)r->ops;
	rc->samples++;
}

/* One run: returns false if the contender must not run again. */
static bool run_once(const struct bench_case *bc, struct bench_contender *c,
		     void *st, uint64_t ops, struct bench_res_contender *rc,
		     struct bench_run *r, struct bench_hist *lat)
{
	memset(r, 0, sizeof(*r));
	r->ops = ops;
	r->lat = lat;
	c->run(st, r);
	if (r->done < r->ops) {
		rc->failed += r->ops - r->done;
		if (!rc->err[0])
			snprintf(rc->err, sizeof(rc->err), "%s",
				 r->err[0] ? r->err : "ops lost");
		fprintf(stderr,
			"syslet-bench: %s/%s/%s: %llu of %llu ops: %s\n",
			bc->workload, bc->name, c->name,
			(unsigned long long)r->done, (unsigned long long)r->ops,
			rc->err);
		return false;
	}
	return r->ns <= slow_ns();
}

void bench_case_run(struct bench_case *bc, struct bench_results *res)
{
	struct bench_res_case *rcase;
	void *st[BENCH_MAX_CONTENDERS] = { 0 };
	bool live[BENCH_MAX_CONTENDERS] = { 0 };
	uint64_t ops[BENCH_MAX_CONTENDERS] = { 0 };
	unsigned int rounds = bench_opts.rounds, i, k, r;
	struct bench_hist *lat[BENCH_MAX_CONTENDERS] = { 0 };
	struct bench_run run;

	if (res->ncases >= BENCH_MAX_CASES)
		abort();
	rcase = &res->cases[res->ncases++];
	snprintf(rcase->workload, sizeof(rcase->workload), "%s", bc->workload);
	snprintf(rcase->name, sizeof(rcase->name), "%s", bc->name);
	rcase->unit = bc->unit;
	rcase->latency = bc->latency;
	rcase->inflight = bc->inflight;
	rcase->workers_peak = -1;
	rcase->n = bc->n;
	fprintf(stderr, "syslet-bench: %s: %s\n", bc->workload, bc->name);
	/* What the report says of a contender the process never reached */
	for (i = 0; i < bc->n; i++) {
		snprintf(rcase->c[i].name, sizeof(rcase->c[i].name), "%s",
			 bc->c[i].name);
		snprintf(rcase->c[i].err, sizeof(rcase->c[i].err), "%s", ENDED);
	}

	for (i = 0; i < bc->n; i++) {
		struct bench_contender *c = &bc->c[i];
		struct bench_res_contender *rc = &rcase->c[i];
		int ret = 0;

		rc->err[0] = 0;
		rc->libsyslet = c->libsyslet;
		rc->reference = c->reference;
		memset(&run, 0, sizeof(run));
		if (bench_opts.only && strcmp(bench_opts.only, c->name)) {
			rc->skipped = true;
			snprintf(rc->err, sizeof(rc->err), "not selected");
			snprintf(rc->config, sizeof(rc->config), "%s",
				 c->config);
			continue;
		}
		if (c->setup)
			ret = c->setup(c, &st[i], &run);
		/* setup may refine the configuration line */
		snprintf(rc->config, sizeof(rc->config), "%s", c->config);
		if (ret) {
			rc->skipped = true;
			snprintf(rc->err, sizeof(rc->err), "%s",
				 run.err[0] ? run.err : strerror(-ret));
			continue;
		}
		/* warm-up, unmeasured: sizes the measured runs */
		live[i] = run_once(bc, c, st[i],
				   c->max_ops && c->max_ops < bc->ops_min ?
					   c->max_ops :
					   bc->ops_min,
				   rc, &run, NULL);
		ops[i] = calibrate(bc, c, &run);
		rc->ops = ops[i];
		/* calloc: out of memory only loses the latency columns */
		if (bc->latency)
			lat[i] = calloc(1, sizeof(*lat[i]));
		if (!live[i] && !rc->failed) {
			/* too slow to repeat: the warm-up is its one sample */
			sample(bc, rc, &run);
			rc->ops = run.ops;
		}
	}

	for (r = 0; r < rounds; r++) {
		for (k = 0; k < bc->n; k++) {
			struct bench_res_contender *rc;

			i = (r + k) % bc->n;
			if (!live[i])
				continue;
			rc = &rcase->c[i];
			live[i] = run_once(bc, &bc->c[i], st[i], ops[i], rc,
					   &run, lat[i]);
			if (run.done == run.ops)
				sample(bc, rc, &run);
		}
	}

	for (i = 0; i < bc->n; i++) {
		if (!rcase->c[i].skipped && bc->c[i].teardown)
			bc->c[i].teardown(st[i]);
		if (!lat[i])
			continue;
		rcase->c[i].lat_n = lat[i]->n;
		rcase->c[i].p50 = bench_hist_quantile(lat[i], 0.50);
		rcase->c[i].p99 = bench_hist_quantile(lat[i], 0.99);
		rcase->c[i].p999 = bench_hist_quantile(lat[i], 0.999);
		rcase->c[i].max = bench_hist_quantile(lat[i], 1);
		free(lat[i]);
	}
}
