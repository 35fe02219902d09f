/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "bench.h"
void bench_punt_qd1(struct bench_results *res) { (void)res; }
void bench_punt_qd64(struct bench_results *res) { (void)res; }
