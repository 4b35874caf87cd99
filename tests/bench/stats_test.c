/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-bench's arithmetic (bench/bench_stats.c) on made-up curves, no clock:
 * N1/2 only where the sweep can tell, ratios only against a baseline of the
 * figure's own size, percentiles by nearest rank.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"

static int fails;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
            fails++;                                                                     \
        }                                                                                \
    } while (0)

#define N_MAX 32

/* 8 B doubling up to max, as flit-bench's default sweep. */
static int doubling(double *size, double max)
{
    int n = 0;
    for (double s = 8; s <= max && n < N_MAX; s *= 2)
        size[n++] = s;
    return n;
}

/* Hockney's curve: r_inf * s / (s + n_half). */
static void hockney(const double *size, double *bw, int n, double r_inf, double n_half)
{
    for (int i = 0; i < n; i++)
        bw[i] = r_inf * size[i] / (size[i] + n_half);
}

static void sparse_sweep(void)
{
    /* --sizes 8,1M: half the peak lies somewhere in a factor of 131072 */
    double size[] = {8, 1 << 20}, bw[] = {80, 16000};
    struct bench_nhalf h = bench_nhalf(size, bw, 2);
    char cell[32], why[160];
    CHECK(h.kind == BENCH_NHALF_SPARSE);
    CHECK(isnan(h.value));
    CHECK(h.lo == 8 && h.hi == 1 << 20);
    CHECK(h.peak == 16000);
    CHECK(strcmp(bench_nhalf_cell(&h, cell, sizeof cell), "not resolved") == 0);
    bench_nhalf_why(&h, why, sizeof why);
    CHECK(strstr(why, "too sparse") != NULL);
    CHECK(strstr(why, "8 B") != NULL && strstr(why, "1 MiB") != NULL);
    CHECK(strchr(why, ',') == NULL); /* it goes into a CSV field */

    /* 8,64k,1M: a factor of 8192 and then 16 */
    double size3[] = {8, 65536, 1 << 20}, bw3[] = {80, 9000, 16000};
    h = bench_nhalf(size3, bw3, 3);
    CHECK(h.kind == BENCH_NHALF_SPARSE);
    CHECK(h.lo == 8 && h.hi == 65536);
}

static void dense_sweep(void)
{
    double size[N_MAX], bw[N_MAX];
    int n = doubling(size, 4 << 20);
    hockney(size, bw, n, 10000, 3000);
    struct bench_nhalf h = bench_nhalf(size, bw, n);
    CHECK(h.kind == BENCH_NHALF_OK);
    /* linear interpolation between 2 KiB and 4 KiB around the true 3000 */
    CHECK(h.lo == 2048 && h.hi == 4096);
    CHECK(h.value > 2700 && h.value < 3300);
    char cell[32], why[160];
    bench_nhalf_cell(&h, cell, sizeof cell);
    CHECK(strstr(cell, "KiB") != NULL);
    CHECK(strcmp(bench_nhalf_why(&h, why, sizeof why), "") == 0);

    /* exact: half of 40 is 20, halfway from 10 at 1000 to 30 at 2000 */
    double s2[] = {1000, 2000, 4000, 8000}, b2[] = {10, 30, 40, 40};
    h = bench_nhalf(s2, b2, 4);
    CHECK(h.kind == BENCH_NHALF_OK);
    CHECK(fabs(h.value - 1500) < 1e-9);

    /* a peak in the middle (a copy leaving the cache): still resolved */
    double s3[] = {1024, 2048, 4096, 8192, 16384}, b3[] = {1000, 3000, 8000, 5000, 4000};
    h = bench_nhalf(s3, b3, 5);
    CHECK(h.kind == BENCH_NHALF_OK);
    CHECK(h.peak == 8000);
    CHECK(h.value > 2048 && h.value < 4096);
}

static void undecided(void)
{
    struct bench_nhalf h;
    char cell[32], why[160];

    /* bandwidth doubling with the size up to the last: no peak seen */
    double size[N_MAX], bw[N_MAX];
    int n = doubling(size, 65536);
    for (int i = 0; i < n; i++)
        bw[i] = size[i] / 10;
    h = bench_nhalf(size, bw, n);
    CHECK(h.kind == BENCH_NHALF_NOT_REACHED);
    CHECK(strcmp(bench_nhalf_cell(&h, cell, sizeof cell), "not reached") == 0);
    CHECK(strstr(bench_nhalf_why(&h, why, sizeof why), "--max-size") != NULL);

    /* flat from the start: N1/2 is below the smallest size */
    for (int i = 0; i < n; i++)
        bw[i] = 5000;
    h = bench_nhalf(size, bw, n);
    CHECK(h.kind == BENCH_NHALF_BELOW);
    CHECK(strcmp(bench_nhalf_cell(&h, cell, sizeof cell), "not resolved") == 0);
    CHECK(strstr(bench_nhalf_why(&h, why, sizeof why), "8 B") != NULL);

    /* one point, and none */
    double one[] = {8}, one_bw[] = {100};
    h = bench_nhalf(one, one_bw, 1);
    CHECK(h.kind == BENCH_NHALF_NONE && h.peak == 100);
    double none_bw[] = {NAN, 0};
    h = bench_nhalf(size, none_bw, 2);
    CHECK(h.kind == BENCH_NHALF_NONE && isnan(h.peak));
    CHECK(strcmp(bench_nhalf_cell(&h, cell, sizeof cell), "n/a") == 0);

    /* a missing point (a baseline that gave up) next to the crossing
       widens the bracket to a factor of 4: too sparse, not a guess */
    n = doubling(size, 4 << 20);
    hockney(size, bw, n, 10000, 3000);
    for (int i = 0; i < n; i++)
        if (size[i] == 2048)
            bw[i] = NAN;
    h = bench_nhalf(size, bw, n);
    CHECK(h.kind == BENCH_NHALF_SPARSE);
    CHECK(h.lo == 1024 && h.hi == 4096);

    /* a noisy point (negative) anywhere: the peak itself may be the one
       that is missing, so neither N1/2 nor the peak is the curve's */
    hockney(size, bw, n, 10000, 3000);
    bw[n - 3] = -1;
    bw[n - 1] = -1;
    h = bench_nhalf(size, bw, n);
    CHECK(h.kind == BENCH_NHALF_NOISY && h.noisy == 2);
    CHECK(isnan(h.value));
    CHECK(strcmp(bench_nhalf_cell(&h, cell, sizeof cell), "noisy") == 0);
    bench_nhalf_why(&h, why, sizeof why);
    CHECK(strstr(why, "2 sizes") != NULL && strchr(why, ',') == NULL);
    double all_noisy[] = {-1, -1, -1};
    h = bench_nhalf(size, all_noisy, 3);
    CHECK(h.kind == BENCH_NHALF_NOISY && h.noisy == 3);
}

static void ratios(void)
{
    CHECK(bench_ratio(0.2, 8, 0.1, 8) == 2.0);
    CHECK(bench_ratio(1000, 65536, 2000, 65536) == 0.5);
    /* 1 MiB latency beside the 8-byte flag: no ratio */
    CHECK(isnan(bench_ratio(90.0, 1 << 20, 0.14, 8)));
    CHECK(isnan(bench_ratio(0.3, 0, 0.14, 8))); /* a short AM of 0 args */
    /* no baseline, a noisy one (negative), a failed figure */
    CHECK(isnan(bench_ratio(0.2, 8, NAN, 8)));
    CHECK(isnan(bench_ratio(0.2, 8, -1, 8)));
    CHECK(isnan(bench_ratio(0.2, 8, 0, 8)));
    CHECK(isnan(bench_ratio(NAN, 8, 0.1, 8)));
}

static void percentiles(void)
{
    double v[] = {5, 1, 4, 2, 3};
    CHECK(bench_percentile(v, 5, 50) == 3);
    CHECK(bench_percentile(v, 5, 0) == 1);
    CHECK(bench_percentile(v, 5, 100) == 5);
    CHECK(bench_percentile(v, 5, 99) == 5);
    CHECK(isnan(bench_percentile(v, 0, 50)));
    /* 990 fast round trips and 10 stalled: the median does not see the
       stalls, the 99th percentile is the first of them */
    static double w[1000];
    for (int i = 0; i < 1000; i++)
        w[i] = i % 100 == 7 ? 10000 + i : 5;
    CHECK(bench_percentile(w, 1000, 50) == 5);
    CHECK(bench_percentile(w, 1000, 99) == 5);
    CHECK(bench_percentile(w, 1000, 99.1) >= 10000);
    CHECK(w[999] == 10907); /* sorted: the last stall, at i = 907 */
}

int main(void)
{
    sparse_sweep();
    dense_sweep();
    undecided();
    ratios();
    percentiles();
    if (fails) {
        fprintf(stderr, "%d checks failed\n", fails);
        return 1;
    }
    printf("PASS: N1/2, ratios and percentiles\n");
    return 0;
}
