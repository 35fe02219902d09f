/* SPDX-License-Identifier: MIT */
/* The fixed baseline of the library's threads (baseline.c). */
#ifndef SYSLET_BASELINE_H
#define SYSLET_BASELINE_H

#include <sched.h>

/* The process's CPU mask at load: 0, or -EPERM if it cannot be read. */
int syslet__baseline_mask(cpu_set_t *set);

/* The process's nice value at load. */
int syslet__baseline_nice(void);

#endif
