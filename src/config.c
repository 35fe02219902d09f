/* SPDX-License-Identifier: MIT */
/*
 * The pool's options: defaults, SYSLET_* environment variables (read once,
 * on first use), syslet_config_set/get.
 *
 * Shared state: one struct of atomic longs. Writers: the first user (under
 * syslet__once) and syslet_config_set(); readers: everyone, with relaxed
 * loads, because each option is an independent value and a change only has
 * to be seen by decisions made after it (the next spawn, the next idle
 * spin or sleep): no other data is published through it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <syslet/syslet.h>

#include "cancel.h"
#include "compiler.h"
#include "forked.h"
#include "shard.h"

#define MAX_CAP 65536L /* workers: well above any rlimit */
#define DEF_SPIN_NS 20000L /* 20 us: a punt round trip or two */
#define DEF_IDLE_MS 10000L
/* 64 KiB, or PTHREAD_STACK_MIN where higher (128 KiB: aarch64, ppc64le) */
#define DEF_STACK \
	((long)PTHREAD_STACK_MIN > 65536 ? (long)PTHREAD_STACK_MIN : 65536L)
#define MAX_STACK (1L << 30)

static struct syslet__config cfg;

static long default_max_workers(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	long cap = 256 * (ncpu > 0 ? ncpu : 1);
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (long)(rl.rlim_cur / 2) < cap)
		cap = (long)(rl.rlim_cur / 2);
	if (cap > MAX_CAP)
		cap = MAX_CAP;
	return cap > 0 ? cap : 1;
}

/* 0 and the stored value if @v is in range for @opt, else -EINVAL. */
static int check(enum syslet_option opt, long v, _Atomic long **slot)
{
	long lo, hi;

	*slot = NULL;
	switch (opt) {
	case SYSLET_OPT_MAX_WORKERS:
		*slot = &cfg.max_workers;
		lo = 1;
		hi = MAX_CAP;
		break;
	case SYSLET_OPT_MIN_WORKERS:
		*slot = &cfg.min_workers;
		lo = 0;
		hi = MAX_CAP;
		break;
	case SYSLET_OPT_PIN:
		*slot = &cfg.pin;
		lo = 0;
		hi = 1;
		break;
	case SYSLET_OPT_SPIN_NS:
		*slot = &cfg.spin_ns;
		lo = 0;
		hi = 1000000000L;
		break;
	case SYSLET_OPT_IDLE_MS:
		*slot = &cfg.idle_ms;
		lo = 1;
		hi = INT_MAX;
		break;
	case SYSLET_OPT_STACK_SIZE:
		*slot = &cfg.stack_size;
		lo = PTHREAD_STACK_MIN;
		hi = MAX_STACK;
		break;
	case SYSLET_OPT_CANCEL_SIGNAL:
		*slot = &cfg.cancel_signal;
		lo = SIGRTMIN;
		hi = SIGRTMAX;
		break;
	default:
		return -EINVAL;
	}
	return v < lo || v > hi ? -EINVAL : 0;
}

static void from_env(enum syslet_option opt, const char *name)
{
	const char *s = getenv(name);
	_Atomic long *slot;
	char *end;
	long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || check(opt, v, &slot))
		return;
	atomic_store_explicit(slot, v, memory_order_relaxed);
	/* Relaxed: as in syslet_config_set(). An invalid value chose none. */
	if (opt == SYSLET_OPT_CANCEL_SIGNAL)
		atomic_store_explicit(&syslet__cancel_chosen, 1,
				      memory_order_relaxed);
}

static void init(void)
{
	atomic_store_explicit(&cfg.max_workers, default_max_workers(),
			      memory_order_relaxed);
	atomic_store_explicit(&cfg.min_workers, 1, memory_order_relaxed);
	atomic_store_explicit(&cfg.pin, 1, memory_order_relaxed);
	atomic_store_explicit(&cfg.spin_ns, DEF_SPIN_NS, memory_order_relaxed);
	atomic_store_explicit(&cfg.idle_ms, DEF_IDLE_MS, memory_order_relaxed);
	atomic_store_explicit(&cfg.stack_size, DEF_STACK, memory_order_relaxed);
	from_env(SYSLET_OPT_MAX_WORKERS, "SYSLET_MAX_WORKERS");
	from_env(SYSLET_OPT_MIN_WORKERS, "SYSLET_MIN_WORKERS");
	from_env(SYSLET_OPT_PIN, "SYSLET_PIN");
	from_env(SYSLET_OPT_SPIN_NS, "SYSLET_SPIN_NS");
	from_env(SYSLET_OPT_IDLE_MS, "SYSLET_IDLE_MS");
	from_env(SYSLET_OPT_STACK_SIZE, "SYSLET_STACK_SIZE");
	atomic_store_explicit(&cfg.cancel_signal, SIGRTMAX - 2,
			      memory_order_relaxed);
	from_env(SYSLET_OPT_CANCEL_SIGNAL, "SYSLET_CANCEL_SIGNAL");
}

const struct syslet__config *syslet__config(void)
{
	syslet__once(SYSLET__ONCE_CONFIG, init);
	return &cfg;
}

SYSLET_EXPORT int syslet_config_set(enum syslet_option opt, long value)
{
	_Atomic long *slot;
	int ret;

	syslet__config();
	ret = check(opt, value, &slot);
	if (ret) {
		errno = -ret;
		return -1;
	}
	atomic_store_explicit(slot, value, memory_order_relaxed);
	/* Relaxed: read by a later syslet_cancel() of this thread or not. */
	if (opt == SYSLET_OPT_CANCEL_SIGNAL)
		atomic_store_explicit(&syslet__cancel_chosen, 1,
				      memory_order_relaxed);
	return 0;
}

SYSLET_EXPORT long syslet_config_get(enum syslet_option opt)
{
	_Atomic long *slot;

	syslet__config();
	check(opt, 0, &slot);
	if (!slot) {
		errno = EINVAL;
		return -1;
	}
	return atomic_load_explicit(slot, memory_order_relaxed);
}
