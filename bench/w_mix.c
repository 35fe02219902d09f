/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "bench.h"
void bench_mix(struct bench_results *res) { (void)res; }
