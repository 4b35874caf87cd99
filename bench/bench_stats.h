/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arithmetic flit-bench applies to what it measured, kept apart from
 * the measuring so that it can be tested without a clock
 * (tests/bench/stats_test.c):
 *
 *  - N1/2, the message size that reaches half the peak bandwidth, from a
 *    sweep of sizes; or why the sweep cannot tell
 *  - the ratio of a figure to its baseline, which means something only
 *    when both were measured at the same message size
 *  - percentiles of a set of samples
 *
 * Nothing of flit in here.
 */
#ifndef FLIT_BENCH_STATS_H
#define FLIT_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>

/* ---- N1/2 ---- */

/*
 * The largest step between two neighbouring sizes across which N1/2 is
 * still interpolated: the default sweep doubles. A sparser sweep (--sizes
 * 8,1M) says only that N1/2 lies somewhere between the two.
 */
#define BENCH_NHALF_MAX_STEP 2.0

enum bench_nhalf_kind {
    BENCH_NHALF_OK,          /* value: interpolated between lo and hi */
    BENCH_NHALF_NONE,        /* fewer than two sizes measured */
    BENCH_NHALF_BELOW,       /* the smallest size (hi) already reaches it */
    BENCH_NHALF_SPARSE,      /* lo and hi bracket it, too far apart */
    BENCH_NHALF_NOT_REACHED, /* still rising steeply at the largest size:
                                the sweep never saw the peak */
    BENCH_NHALF_NOISY,       /* some sizes were noisy (bw < 0): the peak or
                                the half-peak point may be among them */
};

struct bench_nhalf {
    enum bench_nhalf_kind kind;
    double value;  /* bytes; NAN unless BENCH_NHALF_OK */
    double lo, hi; /* the measured sizes around the half-peak point */
    double peak;   /* the sweep's largest bandwidth; NAN when none */
    int noisy;     /* how many sizes were noisy */
};

/*
 * N1/2 of a bandwidth curve: size[0..n-1] ascending, bw[i] the bandwidth
 * at size[i]: NAN or 0 where missing (such points are skipped), negative
 * where it was measured but noisy (then there is no N1/2: NOISY). The
 * peak is the largest bandwidth of the sweep; N1/2 is the smallest size
 * reaching half of it, interpolated linearly between the two measured
 * sizes that bracket that point, when they are at most
 * BENCH_NHALF_MAX_STEP apart. The curve must also have levelled off: when
 * the peak is the largest size and the size before it had less than 90% of
 * it, the peak (and so half of it) lies beyond the sweep: NOT_REACHED.
 */
struct bench_nhalf bench_nhalf(const double *size, const double *bw, int n);

/*
 * The figure as a table cell: "3.12 KiB", "not resolved", "not reached",
 * "noisy", "n/a"; returns buf.
 */
const char *bench_nhalf_cell(const struct bench_nhalf *h, char *buf, size_t len);
/*
 * Why there is no figure, in a sentence ("the sweep is too sparse: half
 * the peak lies between 8 B and 1 MiB"); "" when there is one.
 */
const char *bench_nhalf_why(const struct bench_nhalf *h, char *buf, size_t len);

/* ---- ratios ---- */

/*
 * value / base when the baseline is a figure (finite, positive) measured at
 * the figure's own size; NAN otherwise: an 8-byte flag ping-pong says
 * nothing about a 1 MiB message's latency.
 */
double bench_ratio(double value, double size, double base, double base_size);

/* ---- samples ---- */

/*
 * The p-th percentile (0..100) of v[0..n-1], nearest rank (the smallest
 * sample with at least p% of the samples at or below it); sorts v. NAN
 * when n is 0.
 */
double bench_percentile(double *v, int n, double p);

#endif /* FLIT_BENCH_STATS_H */
