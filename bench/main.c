/* SPDX-License-Identifier: MIT */
/*
 * syslet-bench: libsyslet side by side with io_uring, libaio, glibc POSIX
 * AIO, libuv and a thread per call (issue 5).
 *
 * The parent stays single-threaded and touches none of the libraries under
 * test: every workload runs in a fresh child (see bench.h), under an alarm
 * so that a hung contender cannot hang the run. The exit status is 0 when
 * every contender that could run completed every operation with the
 * expected result; timings never change it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "bench.h"
#include "report.h"

#ifndef BENCH_LIBURING_VERSION
#define BENCH_LIBURING_VERSION "?"
#endif

static const struct workload {
	const char *name;
	void (*fn)(struct bench_results *res);
	const char *what;
} workloads[] = {
	{ "inline", bench_inline, "cached 4 KiB pread and getpid, inline" },
	{ "try-fs", bench_try_fs, "tmpfs pread inline, ext4 pwrite punted" },
	{ "punt-qd1", bench_punt_qd1, "fdatasync on tmpfs, queue depth 1" },
	{ "punt-qd64", bench_punt_qd64, "fdatasync on tmpfs, queue depth 64" },
	{ "blocking-mix", bench_mix, "uncached random 4 KiB reads, QD 32" },
	{ "sleepers", bench_sleepers, "10,000 calls blocking 10 ms at once" },
	{ "ring-publish", bench_ring, "completions/s into one ring" },
	{ "notifier", bench_notifier, "cost of the notifier's ways out" },
	{ "pipes-mix", bench_pipes_mix,
	  "short calls on every CPU while 1,000 block on pipes" },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

static const char usage_text[] =
	"usage: syslet-bench [--quick | --smoke] [--rounds N] [--workload "
	"NAME]...\n"
	"                    [--json FILE] [--markdown FILE]\n"
	"                    [--disk-dir DIR] [--shm-dir DIR]\n"
	"                    [--uv-threads N] [--aio-fds one|slot]\n"
	"  --quick          the whole run in well under a minute (run.sh "
	"main)\n"
	"  --smoke          tiny sizes: every contender completes every op "
	"(CI)\n"
	"  --rounds N       interleaved rounds (default 9; quick and smoke 5)\n"
	"  --workload NAME  run only NAME (repeatable)\n"
	"  --only NAME      run only the contenders called NAME (profiling)\n"
	"  --json FILE      every figure, every sample, the goals\n"
	"  --markdown FILE  the table and the goals, for the README\n"
	"  --disk-dir DIR   a real disk for blocking-mix (default /var/tmp)\n"
	"  --shm-dir DIR    tmpfs for the punts (default /dev/shm)\n"
	"  --uv-threads N   UV_THREADPOOL_SIZE for the punts (default: CPUs)\n"
	"  --aio-fds HOW    POSIX AIO on one fd or one per slot\n"
	"  --timeout S      bound of each workload's process (default 60 s "
	"smoke,\n"
	"                   120 s quick, 600 s full; raise it under "
	"emulation)\n"
	"  --wait S         bound of every wait inside a contender "
	"(default 30 s)\n"
	"Exit status 1 when an operation was lost or failed; never for "
	"timings.\n"
	"workloads:\n";

static void usage(FILE *f)
{
	unsigned int i;

	fputs(usage_text, f);
	for (i = 0; i < NWORKLOADS; i++)
		fprintf(f, "  %-13s %s\n", workloads[i].name,
			workloads[i].what);
}

static void read_line(const char *path, const char *key, char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *v = line;

		if (key) {
			if (strncmp(line, key, strlen(key)))
				continue;
			v = strchr(line, ':');
			if (!v)
				continue;
			v += 2;
		}
		v[strcspn(v, "\n")] = 0;
		snprintf(buf, len, "%.*s", (int)len - 1, v);
		break;
	}
	fclose(f);
}

static void machine(struct bench_machine *m)
{
	struct utsname u;

	memset(m, 0, sizeof(*m));
	uname(&u);
	snprintf(m->kernel, sizeof(m->kernel), "%.15s %.64s", u.sysname,
		 u.release);
	read_line("/proc/cpuinfo", "model name", m->cpu, sizeof(m->cpu));
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(m->glibc, sizeof(m->glibc), "%s", gnu_get_libc_version());
	snprintf(m->liburing, sizeof(m->liburing), "%s",
		 BENCH_LIBURING_VERSION);
	snprintf(m->libuv, sizeof(m->libuv), "%s", uv_version_string());
	read_line("/proc/loadavg", NULL, m->load_start, sizeof(m->load_start));
}

/* Run one workload in a child; false if it did not finish cleanly. */
static bool run_workload(const struct workload *w, struct bench_results *res)
{
	unsigned int first = res->ncases, i, k;
	bool ok = true;
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("syslet-bench: fork");
		return false;
	}
	if (pid == 0) {
		/* Before any thread: each is counted from its start. */
		bench_syscalls_open();
		alarm(bench_opts.timeout_s ?
			      bench_opts.timeout_s :
			      (unsigned int)bench_pick(60, 120, 600));
		w->fn(res);
		fflush(NULL);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("syslet-bench: waitpid");
			return false;
		}
	}
	for (i = first; i < res->ncases; i++) {
		bench_print_case(stdout, &res->cases[i]);
		for (k = 0; k < res->cases[i].n; k++)
			if (res->cases[i].c[k].failed)
				ok = false;
	}
	if (WIFSIGNALED(status)) {
		printf("\n== %s: the workload process died of signal %d "
		       "(%s)%s\n",
		       w->name, WTERMSIG(status), strsignal(WTERMSIG(status)),
		       WTERMSIG(status) == SIGALRM ? ": timed out" : "");
		ok = false;
	} else if (WEXITSTATUS(status)) {
		printf("\n== %s: the workload process exited with %d\n",
		       w->name, WEXITSTATUS(status));
		ok = false;
	}
	fflush(stdout);
	return ok;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "smoke", no_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "workload", required_argument, NULL, 'w' },
		{ "json", required_argument, NULL, 'j' },
		{ "markdown", required_argument, NULL, 'M' },
		{ "only", required_argument, NULL, 'o' },
		{ "disk-dir", required_argument, NULL, 'd' },
		{ "shm-dir", required_argument, NULL, 'm' },
		{ "uv-threads", required_argument, NULL, 'u' },
		{ "aio-fds", required_argument, NULL, 'a' },
		{ "timeout", required_argument, NULL, 't' },
		{ "wait", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool want[NWORKLOADS] = { 0 }, any = false, ok = true;
	struct bench_results *res;
	struct bench_machine m;
	const char *json = NULL, *md = NULL;
	unsigned int i;
	int c, sys;

	while ((c = getopt_long(argc, argv, "qsr:w:j:M:o:d:m:u:a:t:W:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'q':
			bench_opts.mode = BENCH_QUICK;
			break;
		case 's':
			bench_opts.mode = BENCH_SMOKE;
			break;
		case 'r':
			bench_opts.rounds = (unsigned int)atoi(optarg);
			if (bench_opts.rounds < 1 ||
			    bench_opts.rounds > BENCH_MAX_ROUNDS) {
				fprintf(stderr, "syslet-bench: rounds 1-%d\n",
					BENCH_MAX_ROUNDS);
				return 2;
			}
			break;
		case 'w':
			for (i = 0; i < NWORKLOADS; i++)
				if (!strcmp(optarg, workloads[i].name))
					break;
			if (i == NWORKLOADS) {
				fprintf(stderr,
					"syslet-bench: no workload "
					"'%s'\n",
					optarg);
				usage(stderr);
				return 2;
			}
			want[i] = any = true;
			break;
		case 'j':
			json = optarg;
			break;
		case 'M':
			md = optarg;
			break;
		case 'o':
			bench_opts.only = optarg;
			break;
		case 'd':
			bench_opts.disk_dir = optarg;
			break;
		case 'm':
			bench_opts.shm_dir = optarg;
			break;
		case 'u':
			bench_opts.uv_threads = atol(optarg);
			if (bench_opts.uv_threads < 1 ||
			    bench_opts.uv_threads > 1024) {
				fprintf(stderr, "syslet-bench: uv-threads "
						"1-1024\n");
				return 2;
			}
			break;
		case 'a':
			if (strcmp(optarg, "one") && strcmp(optarg, "slot")) {
				usage(stderr);
				return 2;
			}
			bench_opts.aio_fds = !strcmp(optarg, "slot");
			break;
		case 't':
			bench_opts.timeout_s = (unsigned int)atoi(optarg);
			if (bench_opts.timeout_s < 1 ||
			    bench_opts.timeout_s > 86400) {
				fprintf(stderr, "syslet-bench: timeout "
						"1-86400 s\n");
				return 2;
			}
			break;
		case 'W':
			bench_opts.wait_s = atoi(optarg);
			if (bench_opts.wait_s < 1 || bench_opts.wait_s > 3600) {
				fprintf(stderr, "syslet-bench: wait 1-3600 "
						"s\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!bench_opts.rounds)
		bench_opts.rounds = (unsigned int)bench_pick(5, 5, 9);

	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		perror("syslet-bench: mmap");
		return 1;
	}
	machine(&m);
	printf("syslet-bench: %s, %ld CPUs (%s), glibc %s, liburing %s, "
	       "libuv %s\n",
	       m.kernel, m.cpus, m.cpu, m.glibc, m.liburing, m.libuv);
	printf("mode %s, %u interleaved rounds (round r runs contender "
	       "(r+k) mod n k-th), load average %s\n",
	       bench_opts.mode == BENCH_SMOKE ? "smoke" :
	       bench_opts.mode == BENCH_QUICK ? "quick" :
						"full",
	       bench_opts.rounds, m.load_start);
	/* The children count only if the parent could. */
	sys = bench_syscalls_open();
	bench_syscalls_close();
	if (sys)
		printf("sys/op: not counted (perf_event_open of "
		       "raw_syscalls:sys_enter: %s)\n",
		       strerror(-sys));
	else
		printf("sys/op: system calls per op of every thread of the "
		       "workload's process (raw_syscalls:sys_enter)\n");
	for (i = 0; i < NWORKLOADS; i++)
		if (!any || want[i])
			ok &= run_workload(&workloads[i], res);
	read_line("/proc/loadavg", NULL, m.load_end, sizeof(m.load_end));
	bench_print_goals(stdout, res, &m);
	printf("\nload average at the end: %s\n", m.load_end);
	if (json && bench_write_json(json, res, &m)) {
		fprintf(stderr, "syslet-bench: %s: %s\n", json,
			strerror(errno));
		ok = false;
	}
	if (md && bench_write_markdown(md, res, &m)) {
		fprintf(stderr, "syslet-bench: %s: %s\n", md, strerror(errno));
		ok = false;
	}
	if (!ok)
		printf("syslet-bench: some operations FAILED (see above)\n");
	return ok ? 0 : 1;
}
