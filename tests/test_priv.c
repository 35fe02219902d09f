/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * Description: privilege and process state through indirect() (issue 10
 * faults 1, 2, 3, 4, 6, issue 9 item 4), black-box through libsyslet.so
 * (whose syscall(), setfsuid(), capset() ... this program uses):
 *   - a thread's fsuid, dropped effective capabilities, raw per-thread
 *     setresuid/seteuid apply to its punted calls, while other threads keep
 *     root; a change between submit and run does not apply;
 *   - workers are neutral: a pool started by a thread with a lowered fsuid,
 *     SCHED_FIFO, a narrow affinity mask, nice 19, a raw uid 65534, its
 *     own seccomp filter or its own mount namespace then
 *     serves a root thread with root credentials, SCHED_OTHER, nice 0 and
 *     the whole mask (seen from a notifier on the worker and from a
 *     directory's owner); a leader that made itself SCHED_FIFO or nice
 *     -5 after the load does not pass it on, one of nice 10 does, a
 *     process started SCHED_FIFO keeps SCHED_FIFO workers;
 *   - a seccomp filter with TSYNC installed after the pool started
 *     succeeds and covers the workers;
 *   - the same facets as an unprivileged user (uids 1000/2000).
 * Each case runs in a fresh child process (a new pool) under an alarm.
 */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/ioprio.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "indirect_util.h"
#include "test_priv_util.h"

/* glibc's, taken over by libsyslet.so; <sys/capability.h> is libcap's. */
int capset(void *hdr, void *data);

#define NOBODY 65534
#define USER_A 1000
#define USER_B 2000
#define STACK_SIZE (64 * 1024)

static char dir[] = "/tmp/syslet-priv-XXXXXX";
static _Thread_local char path[128]; /* fresh()'s last */
/* Each thread its own ring: a popped completion is then its own. */
static _Thread_local struct syslet_ring *ring;
static _Atomic unsigned int seq;

/* Run @nr through indirect(); a pending call's completion, waited for. */
#define punt(nr, a0, a1, a2) \
	punt_on(&ring, nr, (long)(a0), (long)(a1), (long)(a2), 0)

/* A fresh path under the test directory. */
static const char *fresh(void)
{
	snprintf(path, sizeof(path), "%s/d%d.%u", dir, (int)getpid(),
		 atomic_fetch_add(&seq, 1));
	return path;
}

static uid_t owner(const char *p)
{
	struct stat st;

	return stat(p, &st) ? (uid_t)-1 : st.st_uid;
}

/* A punted call, to start the pool in the calling thread. */
static long start_pool(void)
{
	return punt(SYS_fdatasync, -1, 0, 0) == -EBADF ? 0 : -1;
}

/* Issue 9 item 4, fault 3: what the pool's first thread must not leave. */
enum odd {
	FSUID,
	FIFO,
	NARROW,
	NICE19,
	RAW_UID,
	FILTER,
	MNTNS,
	/* The leader changed after the load, an ordinary thread calls. */
	LEADER_FIFO,
	LEADER_NICE10,
	LEADER_NICE_NEG,
	/* I/O best effort 0 with a hint (Linux 6.5), which is no level. */
	LEADER_IO_HINT,
	/* Re-executed (exec_mode()): the process started SCHED_FIFO 1, */
	LOAD_FIFO,
	/* the same, its leader SCHED_OTHER forks, the child's goes FIFO, */
	LOAD_FIFO_FORK,
	/* nice 10 and I/O priority none, the leader then best effort 0, */
	LOAD_NICE_IO,
	/* I/O real time 4, then uid 1000 without capabilities. */
	LOAD_RT_IO,
};
static enum odd odd;

static _Alignas(64) unsigned char nstack[STACK_SIZE];
static _Atomic int seen_policy = -1, seen_nice = -100, seen_cpus = -1;
static _Atomic int seen_fsuid = -1;
static _Atomic long seen_io = -1;
static _Atomic uint32_t seen;

static void look(void)
{
	cpu_set_t set;

	sched_getaffinity(0, sizeof(set), &set);
	atomic_store(&seen_cpus, CPU_COUNT(&set));
	atomic_store(&seen_policy, sched_getscheduler(0));
	errno = 0;
	atomic_store(&seen_nice, getpriority(PRIO_PROCESS, 0));
	atomic_store(&seen_fsuid, (int)syscall(SYS_setfsuid, -1));
	atomic_store(&seen_io, syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0));
	atomic_store(&seen, 1);
}

static struct sock_filter exfull[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fdatasync, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EXFULL),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};
static struct sock_fprog exfull_prog = { 4, exfull };

static int odd_thread(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	cpu_set_t one;
	long r;

	switch (odd) {
	case FSUID:
		setfsuid(NOBODY);
		break;
	case FIFO:
		CHECK(!sched_setscheduler(0, SCHED_FIFO, &sp));
		break;
	case NARROW:
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		CHECK(!sched_setaffinity(0, sizeof(one), &one));
		break;
	case NICE19:
		CHECK(!setpriority(PRIO_PROCESS, 0, 19));
		break;
	case RAW_UID:
		CHECK(!syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY));
		break;
	case FILTER:
		/* This thread only (no TSYNC): fdatasync fails EXFULL. */
		CHECK(!syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
			       &exfull_prog));
		CHECK(punt(SYS_fdatasync, -1, 0, 0) != -EBADF);
		break;
	case MNTNS:
		/* A mount namespace of its own, the test directory hidden. */
		CHECK(!unshare(CLONE_NEWNS));
		CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
		CHECK(!mount("none", dir, "tmpfs", 0, NULL));
		break;
	case LEADER_FIFO:
	case LEADER_NICE10:
	case LEADER_NICE_NEG:
	case LEADER_IO_HINT:
	case LOAD_FIFO:
	case LOAD_FIFO_FORK:
	case LOAD_NICE_IO:
	case LOAD_RT_IO:
		break; /* an ordinary thread: the leader is odd */
	}
	/* This thread's call starts the pool (or cannot: EAGAIN/EPERM). */
	r = punt(SYS_fdatasync, -1, 0, 0);
	if (odd == RAW_UID || odd == FILTER || odd == MNTNS)
		CHECK(r == -EBADF || r == -EAGAIN || r == -EPERM ||
		      (odd == FILTER && r == -EXFULL));
	else
		CHECK(r == -EBADF);
	return 0;
}

/*
 * What a worker must have taken: SPEC 5's fixed baseline, SCHED_OTHER, I/O
 * priority none, the process's nice value at load (10 under LOAD_NICE_IO,
 * else 0), whatever the process was started with or its leader did since.
 */
static int want_policy(void)
{
	return SCHED_OTHER;
}

static int want_nice(void)
{
	return odd == LOAD_NICE_IO ? 10 : 0;
}

/* I/O priority none: class none, level 0. */
static bool io_ok(long io)
{
	return io == 0;
}

static int neutral_body(void)
{
	union indirect_params p;
	struct indirect_registers r;
	cpu_set_t all;

	/* This thread's ring, for the call below (not made by punt()). */
	ring = ring_new(64);
	CHECK(on_thread(odd_thread) == 0);
	CHECK(!sched_getaffinity(0, sizeof(all), &all));
	params_for(&p, ring, 9);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)look;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(nstack + STACK_SIZE);
	FILL_IN(r, SYS_mkdirat, AT_FDCWD, fresh(), 0700);
	CHECK(indirect(&r, &p, sizeof(p), 0) == -1 && errno == ESYSLETPENDING);
	CHECK((long)ring_pop(ring).status == 0 && owner(path) == 0);
	for (int i = 0; i < 30000 && !atomic_load(&seen); i++)
		usleep(1000);
	CHECK(atomic_load(&seen));
	if (atomic_load(&seen_policy) != want_policy() ||
	    atomic_load(&seen_nice) != want_nice() ||
	    !io_ok(atomic_load(&seen_io)))
		fprintf(stderr,
			"odd %d: a worker of policy %d nice %d io %#lx\n", odd,
			atomic_load(&seen_policy), atomic_load(&seen_nice),
			atomic_load(&seen_io));
	CHECK(atomic_load(&seen_policy) == want_policy());
	CHECK(atomic_load(&seen_nice) == want_nice());
	CHECK(io_ok(atomic_load(&seen_io)));
	CHECK(atomic_load(&seen_fsuid) == 0);
	CHECK(atomic_load(&seen_cpus) == CPU_COUNT(&all));
	/* No filter on the workers, and the directory is the real one. */
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	CHECK(owner(path) == 0);
	return 0;
}

/* A thread of ordinary state (SCHED_OTHER, nice 0) runs the checks. */
static int ordinary_body(void)
{
	struct sched_param sp = { 0 };

	CHECK(!sched_setscheduler(0, SCHED_OTHER, &sp));
	CHECK(!setpriority(PRIO_PROCESS, 0, 0));
	return neutral_body();
}

/*
 * Started SCHED_FIFO 1, the leader goes SCHED_OTHER and forks; the
 * child's leader goes SCHED_FIFO 1 before the child's first call: a
 * process forked by an ordinary thread, not one started real time.
 */
static int load_fifo_fork(void)
{
	struct sched_param sp = { .sched_priority = 1 }, zero = { 0 };
	pid_t pid;
	int st;

	CHECK(!sched_setscheduler(0, SCHED_OTHER, &zero));
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		CHECK(!sched_setscheduler(0, SCHED_FIFO, &sp));
		_exit(on_thread(ordinary_body));
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void look_io(void)
{
	atomic_store(&seen_io, syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0));
	atomic_store(&seen, 1);
}

/* An ordinary thread's calls, uid 1000: the pool starts, I/O none. */
static int rt_io_body(void)
{
	struct timespec ts = { 0, 1000000 };
	union indirect_params p;
	struct indirect_registers r;

	ring = ring_new(64);
	CHECK(ring);
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	params_for(&p, ring, 9);
	p.syslet.frame.ip = (uint64_t)(uintptr_t)look_io;
	p.syslet.frame.sp = (uint64_t)(uintptr_t)(nstack + STACK_SIZE);
	FILL_IN(r, SYS_nanosleep, (long)&ts, 0);
	CHECK(indirect(&r, &p, sizeof(p), 0) == -1 && errno == ESYSLETPENDING);
	CHECK((long)ring_pop(ring).status == 0);
	for (int i = 0; i < 30000 && !atomic_load(&seen); i++)
		usleep(1000);
	CHECK(atomic_load(&seen));
	if (atomic_load(&seen_io) != 0)
		fprintf(stderr, "a worker of I/O priority %#lx\n",
			atomic_load(&seen_io));
	CHECK(atomic_load(&seen_io) == 0); /* none, the fixed baseline */
	return 0;
}

/*
 * Fixed: a process started with real-time I/O
 * priority that then gave up its capabilities could not start the pool
 * (EAGAIN for ever): the manager's reset set the I/O priority it had
 * already, and the kernel refuses the real-time class without
 * CAP_SYS_NICE whatever the level.
 */
static int load_rt_io(void)
{
	CHECK(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) ==
	      (IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT | 4));
	CHECK(!setresuid(USER_A, USER_A, USER_A));
	return on_thread(rt_io_body);
}

static int neutral_child(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	/* Unpinned: the affinity a worker gets is then all its own. */
	CHECK(!syslet_config_set(SYSLET_OPT_PIN, 0));
	/*
	 * The leader (this thread: run_child() forked it) changes itself
	 * after the load, and keeps it while another thread starts the pool
	 * and looks at a worker; it waits in pthread_join() meanwhile.
	 */
	switch (odd) {
	case LEADER_FIFO:
		CHECK(!sched_setscheduler(0, SCHED_FIFO, &sp));
		return on_thread(ordinary_body);
	case LEADER_NICE10:
		CHECK(!setpriority(PRIO_PROCESS, 0, 10));
		return on_thread(ordinary_body);
	case LEADER_NICE_NEG:
		CHECK(!setpriority(PRIO_PROCESS, 0, -5));
		return on_thread(ordinary_body);
	case LEADER_IO_HINT:
		/* Before 6.5 a hint is refused: nothing to check then. */
		if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
			    IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT | 8)) {
			CHECK(errno == EINVAL);
			return 0;
		}
		return on_thread(ordinary_body);
	case LOAD_FIFO:
		/* Started real time, the leader still is. */
		CHECK(sched_getscheduler(0) == SCHED_FIFO);
		return on_thread(ordinary_body);
	case LOAD_FIFO_FORK:
		return load_fifo_fork();
	case LOAD_RT_IO:
		return load_rt_io();
	case LOAD_NICE_IO:
		CHECK(getpriority(PRIO_PROCESS, 0) == 10);
		CHECK(!syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
			       IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT));
		return on_thread(ordinary_body);
	default:
		return neutral_body();
	}
}

static int neutral_run(enum odd o)
{
	odd = o;
	return neutral_child();
}

static int neutral_leader_fifo(void)
{
	return neutral_run(LEADER_FIFO);
}

static int neutral_leader_nice10(void)
{
	return neutral_run(LEADER_NICE10);
}

static int neutral_leader_nice_neg(void)
{
	return neutral_run(LEADER_NICE_NEG);
}

/* The re-executed modes (main()'s argv[1]), each a state at load. */
static const char *const exec_modes[] = { "load_fifo", "load_fifo_fork",
					  "load_nice_io", "load_rt_io" };

/* This test re-executed in state @o from before the load; its status. */
static int exec_mode(enum odd o)
{
	struct sched_param sp = { .sched_priority = 1 };
	char *argv[] = { "test-priv", NULL, dir, NULL };

	if (o == LOAD_NICE_IO) {
		CHECK(!setpriority(PRIO_PROCESS, 0, 10));
		CHECK(!syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, 0));
	} else if (o == LOAD_RT_IO) {
		CHECK(!syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
			       IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT | 4));
	} else {
		CHECK(!sched_setscheduler(0, SCHED_FIFO, &sp));
	}
	argv[1] = (char *)exec_modes[o - LOAD_FIFO];
	execv("/proc/self/exe", argv);
	CHECK(0);
	return 1;
}

static int neutral_load_fifo(void)
{
	return exec_mode(LOAD_FIFO);
}

static int neutral_load_fifo_fork(void)
{
	return exec_mode(LOAD_FIFO_FORK);
}

static int neutral_load_nice_io(void)
{
	return exec_mode(LOAD_NICE_IO);
}

static int neutral_load_rt_io(void)
{
	return exec_mode(LOAD_RT_IO);
}

static int neutral_leader_io_hint(void)
{
	return neutral_run(LEADER_IO_HINT);
}

static int neutral_fifo(void)
{
	return neutral_run(FIFO);
}

static int neutral_narrow(void)
{
	return neutral_run(NARROW);
}

static int neutral_nice(void)
{
	return neutral_run(NICE19);
}

static int neutral_raw_uid(void)
{
	return neutral_run(RAW_UID);
}

static int neutral_filter(void)
{
	return neutral_run(FILTER);
}

static int neutral_mntns(void)
{
	return neutral_run(MNTNS);
}

/*
 * Bug, fixed: a leader that made itself SCHED_FIFO (a real-time control
 * loop) made every worker started after it SCHED_FIFO. The baseline is
 * fixed now (SPEC 5): SCHED_OTHER always, and the nice value of the
 * load (0), not the leader's 10 or -5 of later.
 */
static void test_neutral_leader_fifo(void **state)
{
	(void)state;
	run_child(neutral_leader_fifo);
}

static void test_neutral_leader_nice(void **state)
{
	(void)state;
	run_child(neutral_leader_nice10);
	run_child(neutral_leader_nice_neg);
}

/*
 * A process started SCHED_FIFO 1 gets SCHED_OTHER workers, and so does
 * its fork child; one started at nice 10 with I/O priority none, its
 * leader then best effort 0, gets workers at nice 10 and none.
 */
static void test_neutral_load_fifo(void **state)
{
	(void)state;
	run_child(neutral_load_fifo);
	run_child(neutral_load_fifo_fork);
	run_child(neutral_load_nice_io);
}

/*
 * Whatever the leader's I/O priority (best effort 0 with a hint, Linux
 * 6.5; real time 4), workers take none.
 */
static void test_neutral_io(void **state)
{
	(void)state;
	run_child(neutral_leader_io_hint);
	run_child(neutral_load_rt_io);
}

static void test_neutral_filter(void **state)
{
	(void)state;
	run_child(neutral_filter);
}

static void test_neutral_mntns(void **state)
{
	(void)state;
	run_child(neutral_mntns);
}

static void test_neutral_fifo(void **state)
{
	(void)state;
	run_child(neutral_fifo);
}

static void test_neutral_narrow(void **state)
{
	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	run_child(neutral_narrow);
}

static void test_neutral_nice(void **state)
{
	(void)state;
	run_child(neutral_nice);
}

static void test_neutral_raw_uid(void **state)
{
	(void)state;
	run_child(neutral_raw_uid);
}

/* Fault 4: a program's TSYNC filter after the pool started. */
static int tsync_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fdatasync, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EXFULL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { 4, f };

	CHECK(!start_pool());
	CHECK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		      SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0);
	CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EXFULL);
	return 0;
}

static void test_tsync_filter(void **state)
{
	(void)state;
	run_child(tsync_child);
}

/*
 * Finding (fixed baseline): an unprivileged process that lowers its own
 * priority after the load (nice(10), SCHED_IDLE: a background indexer)
 * could start no thread of the library: the manager could not take the
 * load's nice 0 or SCHED_OTHER back, and every call answered EAGAIN for
 * ever (100 of 100). A facet the kernel refuses stays less demanding.
 */
static int lowered_child(int how)
{
	struct sched_param zero = { 0 };

	CHECK(!setresgid(NOBODY, NOBODY, NOBODY));
	CHECK(!setresuid(NOBODY, NOBODY, NOBODY));
	if (how)
		CHECK(!sched_setscheduler(0, SCHED_IDLE, &zero));
	else
		CHECK(!setpriority(PRIO_PROCESS, 0, 10));
	for (int i = 0; i < 3; i++)
		CHECK(punt(SYS_fdatasync, -1, 0, 0) == -EBADF);
	return 0;
}

static int lowered_nice(void)
{
	return lowered_child(0);
}

static int lowered_idle(void)
{
	return lowered_child(1);
}

static void test_unpriv_lowered_after_load(void **state)
{
	(void)state;
	run_child(lowered_nice);
	run_child(lowered_idle);
}

static int setup(void **state)
{
	(void)state;
	return priv_dir_setup(dir);
}

static int teardown(void **state)
{
	(void)state;
	return priv_dir_teardown(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_neutral_fifo),
		cmocka_unit_test(test_neutral_narrow),
		cmocka_unit_test(test_neutral_nice),
		cmocka_unit_test(test_neutral_raw_uid),
		cmocka_unit_test(test_neutral_filter),
		cmocka_unit_test(test_neutral_mntns),
		cmocka_unit_test(test_neutral_leader_fifo),
		cmocka_unit_test(test_neutral_leader_nice),
		cmocka_unit_test(test_neutral_load_fifo),
		cmocka_unit_test(test_neutral_io),
		cmocka_unit_test(test_tsync_filter),
		cmocka_unit_test(test_unpriv_lowered_after_load),
	};

	/* exec_mode()'s process; argv[2]: dir */
	for (size_t i = 0;
	     argc == 3 && i < sizeof(exec_modes) / sizeof(*exec_modes); i++) {
		if (strcmp(argv[1], exec_modes[i]) ||
		    strlen(argv[2]) != strlen(dir))
			continue;
		alarm(ALARM_S);
		strcpy(dir, argv[2]);
		odd = (enum odd)(LOAD_FIFO + (int)i);
		return neutral_child();
	}
	/*
	 * The cases want the workers at nice 0, the process's at load: a
	 * process started with another nice (under nice(1)) passes that on.
	 */
	errno = 0;
	if (getpriority(PRIO_PROCESS, 0) != 0 && !errno) {
		printf("skipped: started at nice %d, the cases want 0\n",
		       getpriority(PRIO_PROCESS, 0));
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
