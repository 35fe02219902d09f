/* SPDX-License-Identifier: MIT */
/*
 * Latency histograms: log-linear buckets. Values below BENCH_HIST_SUB ns
 * have a bucket each; above, each power of two is cut into BENCH_HIST_SUB
 * equal buckets. A histogram belongs to one thread; threads that record
 * in parallel keep their own and the run merges them once they are joined.
 */
#include <string.h>

#include "bench.h"

#define SUB_BITS 5 /* log2(BENCH_HIST_SUB) */

_Static_assert(BENCH_HIST_SUB == 1 << SUB_BITS, "SUB_BITS");

static unsigned int index_of(uint64_t v)
{
	unsigned int msb;

	if (v < BENCH_HIST_SUB)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	return (msb - SUB_BITS + 1) * BENCH_HIST_SUB +
	       (unsigned int)((v >> (msb - SUB_BITS)) & (BENCH_HIST_SUB - 1));
}

/* The middle of bucket @i. */
static double value_of(unsigned int i)
{
	unsigned int msb = i / BENCH_HIST_SUB + SUB_BITS - 1;
	double width;

	if (i < BENCH_HIST_SUB)
		return i;
	width = (double)(1ull << (msb - SUB_BITS));
	return (double)(1ull << msb) + (i % BENCH_HIST_SUB) * width + width / 2;
}

void bench_hist_add(struct bench_hist *h, uint64_t ns)
{
	unsigned int i = index_of(ns);

	h->b[i < BENCH_HIST_BUCKETS ? i : BENCH_HIST_BUCKETS - 1]++;
	h->n++;
}

void bench_hist_merge(struct bench_hist *to, const struct bench_hist *from)
{
	unsigned int i;

	for (i = 0; i < BENCH_HIST_BUCKETS; i++)
		to->b[i] += from->b[i];
	to->n += from->n;
}

double bench_hist_quantile(const struct bench_hist *h, double q)
{
	uint64_t want, seen = 0;
	unsigned int i;

	if (!h->n)
		return 0;
	want = (uint64_t)(q * (double)h->n);
	if (want >= h->n)
		want = h->n - 1;
	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > want)
			return value_of(i);
	}
	return value_of(BENCH_HIST_BUCKETS - 1);
}
