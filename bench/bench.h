/* SPDX-License-Identifier: MIT */
/*
 * syslet-bench: the harness shared by every workload.
 *
 * The parent process only parses the command line; each workload runs in a
 * child of its own (so that process-wide settings such as libuv's thread
 * pool size, glibc's aio_init() and libsyslet's pool start fresh for it)
 * and writes its figures into a struct bench_results mapped MAP_SHARED by
 * the parent before the fork. The parent reads them once the child is
 * reaped: waitpid() orders the child's writes before the parent's reads.
 *
 * A workload is a list of cases ("pread 4 KiB", "2 producers", ...); a case
 * is a list of contenders run in interleaved rounds: round r runs contender
 * (r + k) % n as its k-th. Each run reports how many operations it asked
 * for, how many completed with the expected result, and the time they took.
 */
#ifndef SYSLET_BENCH_H
#define SYSLET_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define BENCH_MAX_ROUNDS 32
#define BENCH_MAX_CONTENDERS 8
#define BENCH_MAX_CASES 24

enum bench_mode {
	BENCH_FULL,
	BENCH_QUICK,
	BENCH_SMOKE,
};

struct bench_opts {
	enum bench_mode mode;
	unsigned int rounds;
	const char *disk_dir; /* a real disk, for the blocking mix */
	const char *shm_dir; /* tmpfs, for the punted fdatasync */
	long uv_threads; /* 0: the workload's own choice */
	int aio_fds; /* POSIX AIO: -1 auto, 0 one fd, 1 one per slot */
	const char *only; /* run only the contenders of this name */
	unsigned int timeout_s; /* a workload process's alarm; 0: by mode */
	int wait_s; /* every bounded wait of a contender */
};

extern struct bench_opts bench_opts;

/* How a case's figures read. */
enum bench_unit {
	BENCH_NS_PER_OP, /* median ns per operation */
	BENCH_MS_PER_BATCH, /* the whole batch, in ms */
};

/*
 * Latencies (hist.c): log-linear buckets, 32 per power of two, so a
 * quantile is within about 3% of the true value. One per contender and
 * per case, in the workload process; merged from per-thread ones.
 */
#define BENCH_HIST_SUB 32
#define BENCH_HIST_BUCKETS (64 * BENCH_HIST_SUB)

struct bench_hist {
	uint64_t n;
	uint64_t b[BENCH_HIST_BUCKETS];
};

void bench_hist_add(struct bench_hist *h, uint64_t ns);
void bench_hist_merge(struct bench_hist *to, const struct bench_hist *from);
/* The latency (ns) at or below which a fraction @q of the samples lie. */
double bench_hist_quantile(const struct bench_hist *h, double q);

/* One run of one contender: filled by the contender's run(). */
struct bench_run {
	uint64_t ops; /* asked for */
	uint64_t done; /* completed with the expected result */
	uint64_t ns; /* time the ops took (setup excluded) */
	uint64_t cpu_ns; /* CPU time of the whole process meanwhile */
	uint64_t cpu0; /* bench_start()'s */
	/* System calls the process's threads entered meanwhile, or -1. */
	int64_t sys, sys0;
	/*
	 * Latency cases, measured rounds only (NULL otherwise): where the
	 * run records the latency of each call, and the time of the last
	 * bench_lat_tick() (bench_start() sets it).
	 */
	struct bench_hist *lat;
	uint64_t lat_last;
	char err[120]; /* why done < ops, or why it could not run */
};

struct bench_contender {
	const char *name;
	char config[200]; /* one line: how it is set up */
	bool libsyslet; /* ratios are libsyslet / this row */
	bool reference; /* notifier-style cases: ratio is row / this */
	uint64_t max_ops; /* 0: the case's limit */
	void *arg; /* for setup: the case's shared resources */
	/*
	 * 0, or -errno (r->err says why) when it cannot run here: skipped.
	 * May complete c->config with what it found.
	 */
	int (*setup)(struct bench_contender *c, void **state,
		     struct bench_run *r);
	void (*run)(void *state, struct bench_run *r);
	void (*teardown)(void *state);
};

struct bench_case {
	const char *workload;
	const char *name;
	enum bench_unit unit;
	uint64_t ops_min; /* warm-up size and floor */
	uint64_t ops_max; /* ceiling; == ops_min: fixed size */
	uint64_t ops_granule; /* ops are a multiple of it (queue depth) */
	bool latency; /* record every call's latency: p50 and p99 */
	/* calls in flight at most (the workers_peak goal); 0: no pool */
	unsigned int inflight;
	unsigned int n;
	struct bench_contender c[BENCH_MAX_CONTENDERS];
};

/* Figures of one contender, as stored in the shared results. */
struct bench_res_contender {
	char name[40];
	char config[200];
	bool libsyslet;
	bool reference;
	bool skipped;
	unsigned int samples;
	double value[BENCH_MAX_ROUNDS]; /* in the case's unit */
	double cpu[BENCH_MAX_ROUNDS]; /* CPU time, all threads, same unit */
	double sys[BENCH_MAX_ROUNDS]; /* system calls per op; < 0: none */
	uint64_t ops; /* per run, after calibration */
	uint64_t failed; /* ops lost or wrong, all runs */
	uint64_t lat_n; /* calls whose latency was recorded, all rounds */
	double p50, p99, p999, max; /* their latency, ns */
	char err[120];
};

struct bench_res_case {
	char workload[24];
	char name[64];
	char note[240]; /* what the library reported: syslet_stats() */
	enum bench_unit unit;
	bool latency;
	unsigned int inflight; /* as in struct bench_case */
	/*
	 * libsyslet's workers_peak during this case, -1 when unknown (no
	 * statistics, or the pool had workers before the case began: the
	 * library's peak then covers more than the case).
	 */
	int64_t workers_peak;
	unsigned int n;
	struct bench_res_contender c[BENCH_MAX_CONTENDERS];
};

struct bench_results {
	unsigned int ncases;
	struct bench_res_case cases[BENCH_MAX_CASES];
};

/* harness.c: run @bc's rounds and append its figures to @res. */
void bench_case_run(struct bench_case *bc, struct bench_results *res);

/* A contender's name/config/functions, in one line at the call site. */
struct bench_contender *bench_add(struct bench_case *bc, const char *name,
				  bool libsyslet);

/* Monotonic time in ns. */
uint64_t bench_now(void);

/*
 * Bracket the measured part of a run: bench_start() returns the start
 * time, bench_stop() sets @r->ns and @r->cpu_ns (user + system time of
 * every thread of the process) from it. Setup outside them counts in
 * neither.
 */
uint64_t bench_start(struct bench_run *r);
void bench_stop(struct bench_run *r, uint64_t t0);

/*
 * Count the system calls of this process's threads, those it starts later
 * included (raw_syscalls:sys_enter, perf_event_open() with inherit): call
 * in a workload's process before it starts a thread. 0, or -errno and
 * bench_start() counts nothing.
 */
int bench_syscalls_open(void);
/* Close it (before a fork: the children would inherit it). */
void bench_syscalls_close(void);

/*
 * Latency cases at queue depth 1: call once after each call's completion
 * was consumed. Records the time since the previous tick (the first: since
 * bench_start()) as that call's latency, so the figure includes the loop
 * around the call, as the median per op does. One clock read; nothing
 * outside the measured rounds.
 */
static inline void bench_lat_tick(struct bench_run *r)
{
	uint64_t now;

	if (!r->lat)
		return;
	now = bench_now();
	bench_hist_add(r->lat, now - r->lat_last);
	r->lat_last = now;
}

/* Record an error in @r once (the first one is the useful one). */
void bench_fail(struct bench_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A file of @size bytes of data under @dir, unlinked at once; -errno. */
int bench_tmpfile(const char *dir, const char *tag, uint64_t size, int flags);

/* Ops per run for the current mode: smoke, quick, full. */
uint64_t bench_pick(uint64_t smoke, uint64_t quick, uint64_t full);

/* The timeout every bounded wait of a contender uses (--wait, 30 s). */
#define BENCH_WAIT_S (bench_opts.wait_s)

/* ---- libsyslet through its public API (util.c) ------------------------ */

struct syslet_ring;
struct indirect_registers;

struct bench_sl {
	struct syslet_ring *ring;
	uint64_t params[4]; /* union indirect_params, as the ABI has it */
	uint32_t inflight; /* pending calls not yet reaped */
};

/* A ring of @elements completions, notifier frame @ip/@sp (0: none). */
int bench_sl_init(struct bench_sl *s, uint32_t elements, uint64_t ip,
		  uint64_t sp);
void bench_sl_fini(struct bench_sl *s);

/*
 * Issue @regs through indirect(): 1 and *@res set when it completed inline,
 * 0 when it went pending, -errno (EBUSY included) when it failed.
 */
int bench_sl_submit(struct bench_sl *s, struct indirect_registers *regs,
		    uint64_t caller_data, long *res);

/*
 * Wait (bounded) until the ring holds a completion, then consume all of
 * them: those with status @expect count as done in @r, others fail it.
 * Returns how many were consumed, or -errno after a failed wait.
 */
int bench_sl_reap(struct bench_sl *s, int64_t expect, struct bench_run *r);

/*
 * Put libsyslet's own counters (syslet_stats(), summed over the workload
 * process so far) in the note of the case just run.
 */
void bench_sl_note(struct bench_results *res);

/* "max_workers 8, spin 2000 ns, ..." or "defaults (no config API)". */
void bench_sl_describe(char *buf, size_t len);

/* ---- glibc POSIX AIO (util.c) ------------------------------------------ */

struct aiocb;

struct bench_aio {
	unsigned int qd;
	int fd;
	struct aiocb *cb;
	const struct aiocb **list; /* in flight; NULL: a free slot */
	int *fds; /* the fd of each slot */
};

/* @qd slots on @fd, or on a dup of it per slot if @per_slot. */
int bench_aio_init(struct bench_aio *s, int fd, unsigned int qd, bool per_slot,
		   struct bench_run *r);
void bench_aio_fini(struct bench_aio *s);

/*
 * Keep @s->qd requests in flight, each started by @issue on a cleared
 * aiocb holding its slot's fd, until @r->ops completed; those returning
 * @expect count as done. aio_suspend() waits, bounded.
 */
void bench_aio_loop(struct bench_aio *s, struct bench_run *r,
		    int (*issue)(struct aiocb *cb, uint64_t n, void *arg),
		    void *arg, ssize_t expect);

/* ---- io_uring, in its best configuration here (util.c) ---------------- */

struct io_uring;

/*
 * Set @ring up with @entries: single issuer + deferred task work if the
 * kernel has them, ring fd registered. @desc gets what was used.
 */
int bench_uring_init(struct io_uring *ring, unsigned int entries, char *desc,
		     size_t len);

/* Workloads (w_*.c). Each appends its cases to @res. */
void bench_inline(struct bench_results *res);
void bench_try_fs(struct bench_results *res);
void bench_punt_qd1(struct bench_results *res);
void bench_punt_qd64(struct bench_results *res);
void bench_mix(struct bench_results *res);
void bench_sleepers(struct bench_results *res);
void bench_ring(struct bench_results *res);
void bench_notifier(struct bench_results *res);
void bench_pipes_mix(struct bench_results *res);

#endif /* SYSLET_BENCH_H */
