/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (provider "syslet"), listed in syslet(7): a nop and an ELF
 * note each (readelf -n shows them as stapsdt notes), for perf, bpftrace
 * and SystemTap. Without <sys/sdt.h> at build time they compile to nothing.
 */
#ifndef SYSLET_PROBE_H
#define SYSLET_PROBE_H

#ifdef SYSLET_HAVE_SDT
#include <sys/sdt.h>

/*
 * sdt.h passes empty variadic arguments, a GNU extension clang -Wpedantic
 * flags where the probes expand: not in this header's power to scope.
 */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wgnu-zero-variadic-macro-arguments"
#endif

#define SYSLET_PROBE1(name, a) STAP_PROBE1(syslet, name, a)
#define SYSLET_PROBE2(name, a, b) STAP_PROBE2(syslet, name, a, b)
#define SYSLET_PROBE3(name, a, b, c) STAP_PROBE3(syslet, name, a, b, c)
#else
#define SYSLET_PROBE1(name, a) ((void)(a))
#define SYSLET_PROBE2(name, a, b) ((void)(a), (void)(b))
#define SYSLET_PROBE3(name, a, b, c) ((void)(a), (void)(b), (void)(c))
#endif

/* A job's system call number, result and caller_data (struct syslet__job). */
#define SYSLET_PROBE_JOB(name, job)                         \
	SYSLET_PROBE3(name, (job)->nr, (job)->cnode.status, \
		      (job)->cnode.caller_data)

#endif /* SYSLET_PROBE_H */
