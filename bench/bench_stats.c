/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_stats.h. */
#include "bench_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

/* The peak counts as reached once the size before it had this share. */
#define LEVELLED 0.9

static bool have(double bw)
{
    return isfinite(bw) && bw > 0;
}

struct bench_nhalf bench_nhalf(const double *size, const double *bw, int n)
{
    struct bench_nhalf h = {
        .kind = BENCH_NHALF_NONE, .value = NAN, .lo = NAN, .hi = NAN, .peak = NAN};
    int points = 0, at_peak = -1, last = -1;
    for (int i = 0; i < n; i++) {
        h.noisy += bw[i] < 0;
        if (!have(bw[i]))
            continue;
        points++;
        last = i;
        if (at_peak < 0 || bw[i] > bw[at_peak])
            at_peak = i;
    }
    if (points == 0) {
        h.kind = h.noisy ? BENCH_NHALF_NOISY : BENCH_NHALF_NONE;
        return h;
    }
    h.peak = bw[at_peak];
    if (h.noisy) {
        /* the sweep's peak, but not the curve's: it may be a noisy one */
        h.kind = BENCH_NHALF_NOISY;
        return h;
    }
    if (points < 2)
        return h; /* one point is no curve */
    /* The first size at or above half the peak, and the one measured
       before it. */
    int prev = -1, i = 0;
    for (; i < n; i++) {
        if (!have(bw[i]))
            continue;
        if (bw[i] >= h.peak / 2)
            break;
        prev = i;
    }
    h.hi = size[i];
    if (prev < 0) {
        h.kind = BENCH_NHALF_BELOW;
        return h;
    }
    h.lo = size[prev];
    if (size[i] > size[prev] * BENCH_NHALF_MAX_STEP) {
        h.kind = BENCH_NHALF_SPARSE;
        return h;
    }
    if (at_peak == last) {
        int before = last - 1;
        while (before >= 0 && !have(bw[before]))
            before--;
        if (bw[before] < LEVELLED * h.peak) {
            h.kind = BENCH_NHALF_NOT_REACHED;
            return h;
        }
    }
    double f = (h.peak / 2 - bw[prev]) / (bw[i] - bw[prev]);
    h.value = size[prev] + f * (size[i] - size[prev]);
    h.kind = BENCH_NHALF_OK;
    return h;
}

const char *bench_nhalf_cell(const struct bench_nhalf *h, char *buf, size_t len)
{
    switch (h->kind) {
    case BENCH_NHALF_OK:
        return bench_fmt_size(buf, len, h->value);
    case BENCH_NHALF_NOT_REACHED:
        snprintf(buf, len, "not reached");
        break;
    case BENCH_NHALF_BELOW:
    case BENCH_NHALF_SPARSE:
        snprintf(buf, len, "not resolved");
        break;
    case BENCH_NHALF_NOISY:
        snprintf(buf, len, "noisy");
        break;
    case BENCH_NHALF_NONE:
        snprintf(buf, len, "n/a");
        break;
    }
    return buf;
}

const char *bench_nhalf_why(const struct bench_nhalf *h, char *buf, size_t len)
{
    char lo[32], hi[32];
    if (isfinite(h->lo))
        bench_fmt_size(lo, sizeof lo, h->lo);
    if (isfinite(h->hi))
        bench_fmt_size(hi, sizeof hi, h->hi);
    switch (h->kind) {
    case BENCH_NHALF_OK:
        snprintf(buf, len, "%s", "");
        break;
    case BENCH_NHALF_NONE:
        snprintf(buf, len, "fewer than two sizes measured");
        break;
    case BENCH_NHALF_BELOW:
        snprintf(buf, len, "the smallest size (%s) already reaches half the peak", hi);
        break;
    case BENCH_NHALF_SPARSE:
        snprintf(buf, len,
                 "the sweep is too sparse: half the peak lies between %s and %s "
                 "(more than %.0fx apart)",
                 lo, hi, BENCH_NHALF_MAX_STEP);
        break;
    case BENCH_NHALF_NOT_REACHED:
        snprintf(buf, len,
                 "bandwidth still rises at the largest size: the sweep did not "
                 "reach the peak (try a larger --max-size)");
        break;
    case BENCH_NHALF_NOISY:
        snprintf(buf, len,
                 "%d size%s of the sweep came out noisy: the peak or the half-peak "
                 "point may be among them",
                 h->noisy, h->noisy == 1 ? "" : "s");
        break;
    }
    return buf;
}

double bench_ratio(double value, double size, double base, double base_size)
{
    if (!have(base) || !isfinite(value) || size != base_size)
        return NAN;
    return value / base;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_percentile(double *v, int n, double p)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    /* nearest rank: ceil(p/100 * n), 1-based */
    double rank = ceil(p / 100 * n);
    int k = rank < 1 ? 0 : rank > n ? n - 1 : (int)rank - 1;
    return v[k];
}
