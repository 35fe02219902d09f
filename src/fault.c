/* SPDX-License-Identifier: MIT */
/*
 * Fault injection (meson -Dfault_injection=true): decides whether the call
 * site asking now must fail. Configured once, from the environment:
 *
 *   SYSLET_FAULT="thread=0.1,alloc=0.05,futex=0.1,seed=42"
 *   SYSLET_FAULT="thread=@3"	the 3rd thread creation fails, no other
 *   SYSLET_FAULT="alloc=@5+"	the 5th allocation and every later one fail
 *   SYSLET_FAULT="...,report=0"	no summary line at exit
 *
 * A probability draws from a hash of (seed, site, call number), so a run
 * with the same seed and the same order of calls fails at the same points.
 * When SYSLET_FAULT is set, a summary ("libsyslet-fault: thread 3/120 ...",
 * injected/asked per site) goes to stderr at exit, for the stress suite's
 * figures.
 *
 * Shared state: the configuration (written once under pthread_once, read
 * after it: pthread_once orders the two) and per-site counters, bumped by
 * every thread with relaxed atomics: each is a plain event count, read only
 * at exit, and no other memory is published through them.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

enum mode {
	OFF,
	RANDOM, /* fail with probability thresh / 2^64 */
	NTH, /* fail call number nth only */
	FROM_NTH, /* fail call number nth and every later one */
};

struct site {
	const char *name;
	enum mode mode;
	uint64_t thresh;
	uint64_t nth;
	_Atomic uint64_t asked;
	_Atomic uint64_t injected;
};

static struct site sites[SYSLET__FAULT_NR_SITES] = {
	[SYSLET__FAULT_THREAD] = { .name = "thread" },
	[SYSLET__FAULT_ALLOC] = { .name = "alloc" },
	[SYSLET__FAULT_FUTEX] = { .name = "futex" },
};
static uint64_t seed = 1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static uint64_t mix(uint64_t x)
{
	/* splitmix64's finalizer: every input bit moves every output bit */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void report(void)
{
	char line[256];
	int i, len;

	len = snprintf(line, sizeof(line), "libsyslet-fault: seed %llu",
		       (unsigned long long)seed);
	for (i = 0; i < SYSLET__FAULT_NR_SITES && len < (int)sizeof(line); i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len,
				" %s %llu/%llu", sites[i].name,
				(unsigned long long)atomic_load_explicit(
					&sites[i].injected,
					memory_order_relaxed),
				(unsigned long long)atomic_load_explicit(
					&sites[i].asked, memory_order_relaxed));
	fprintf(stderr, "%s\n", line);
}

static int parse_value(struct site *s, const char *v, size_t len)
{
	char buf[32], *end;
	enum mode mode;
	uint64_t nth;
	double p;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, v, len);
	buf[len] = '\0';
	if (buf[0] == '@') {
		nth = strtoull(buf + 1, &end, 10);
		mode = NTH;
		if (*end == '+') {
			mode = FROM_NTH;
			end++;
		}
		if (end == buf + 1 || *end || nth == 0)
			return -1;
		s->nth = nth;
		s->mode = mode;
		return 0;
	}
	p = strtod(buf, &end);
	if (*end || !(p >= 0.0 && p <= 1.0))
		return -1;
	s->mode = RANDOM;
	/* 2^64 * p, saturated: p == 1.0 must fail every call */
	s->thresh = p >= 1.0 ? UINT64_MAX :
			       (uint64_t)(p * 18446744073709551616.0);
	return 0;
}

/* One "key=value" item of SYSLET_FAULT; -1 if it means nothing. */
static int parse_item(const char *item, size_t len, int *quiet)
{
	const char *eq = memchr(item, '=', len);
	size_t klen, vlen;
	char *end;
	int i;

	if (!eq)
		return -1;
	klen = (size_t)(eq - item);
	vlen = len - klen - 1;
	if (klen == 4 && !strncmp(item, "seed", 4)) {
		seed = strtoull(eq + 1, &end, 0);
		return end == eq + 1 + vlen && vlen ? 0 : -1;
	}
	if (klen == 6 && !strncmp(item, "report", 6)) {
		*quiet = vlen == 1 && eq[1] == '0';
		return 0;
	}
	for (i = 0; i < SYSLET__FAULT_NR_SITES; i++)
		if (strlen(sites[i].name) == klen &&
		    !strncmp(item, sites[i].name, klen))
			return parse_value(&sites[i], eq + 1, vlen);
	return -1;
}

static void configure(void)
{
	const char *env = getenv("SYSLET_FAULT"), *p, *comma;
	int quiet = 0;

	if (!env)
		return;
	for (p = env; *p; p = *comma ? comma + 1 : comma) {
		comma = strchrnul(p, ',');
		if (comma > p && parse_item(p, (size_t)(comma - p), &quiet))
			fprintf(stderr, "libsyslet-fault: ignoring \"%.*s\"\n",
				(int)(comma - p), p);
	}
	if (!quiet)
		atexit(report);
}

bool syslet__fault(enum syslet__fault_site site)
{
	struct site *s;
	uint64_t n;
	bool fail;

	if ((unsigned int)site >= SYSLET__FAULT_NR_SITES)
		return false;
	pthread_once(&once, configure);
	s = &sites[site];
	n = atomic_fetch_add_explicit(&s->asked, 1, memory_order_relaxed) + 1;
	switch (s->mode) {
	case RANDOM:
		fail = s->thresh == UINT64_MAX ||
		       mix(seed ^ mix(((uint64_t)site << 56) ^ n)) < s->thresh;
		break;
	case NTH:
		fail = n == s->nth;
		break;
	case FROM_NTH:
		fail = n >= s->nth;
		break;
	default:
		fail = false;
		break;
	}
	if (fail)
		atomic_fetch_add_explicit(&s->injected, 1,
					  memory_order_relaxed);
	return fail;
}
