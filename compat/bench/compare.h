/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the compatibility benchmarks share: one figure measured through the
 * old API and through the flit call it wraps, alternately (A B A B ...) in
 * the same run, and printed as medians with their ratio.
 */
#ifndef FLIT_COMPAT_COMPARE_H
#define FLIT_COMPAT_COMPARE_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define COMPARE_RUNS 15

/* Runs one measurement of iters operations; returns seconds. */
typedef double (*compare_fn)(int iters, size_t bytes);

static inline double compare_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int compare_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double compare_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_cmp);
    return v[n / 2];
}

/*
 * Alternates compat and native COMPARE_RUNS times each. latency: prints
 * microseconds per operation; otherwise MB/s of bytes per operation; both
 * medians. The ratio is compat over native (times per operation: above
 * 1.00 the old API is slower), the median of the ratios of each pair: the
 * two runs of a pair are back to back, so a change of the machine's pace
 * between pairs (this host's virtual CPUs move) cancels in it, where it
 * would not in the ratio of the two medians. print: this rank prints.
 */
static inline void compare(const char *what, compare_fn compat, compare_fn native,
                           int iters, size_t bytes, int latency, int print)
{
    double c[COMPARE_RUNS], n[COMPARE_RUNS], q[COMPARE_RUNS];
    compat(iters / 10 + 1, bytes); /* warm both paths */
    native(iters / 10 + 1, bytes);
    for (int r = 0; r < COMPARE_RUNS; r++) {
        c[r] = compat(iters, bytes) / iters;
        n[r] = native(iters, bytes) / iters;
        q[r] = c[r] / n[r];
    }
    double mc = compare_median(c, COMPARE_RUNS), mn = compare_median(n, COMPARE_RUNS);
    double mq = compare_median(q, COMPARE_RUNS);
    if (!print)
        return;
    if (latency)
        printf("%-34s %8zu B  %10.2f us  native %10.2f us  ratio %.3f\n", what, bytes,
               mc * 1e6, mn * 1e6, mq);
    else
        printf("%-34s %8zu B  %10.1f MB/s  native %10.1f MB/s  ratio %.3f\n", what, bytes,
               bytes / mc / 1e6, bytes / mn / 1e6, mq);
    fflush(stdout);
}

#endif /* FLIT_COMPAT_COMPARE_H */
