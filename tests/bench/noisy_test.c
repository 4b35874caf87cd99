/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "noisy" decision flit-bench and flit-demo share (bench_noisy), on a
 * made-up series of (time the ranks waited for a CPU, time the figure
 * took), no clock: a figure is noisy when the wait is above 2% of its time.
 * And bench_others' line: CPUs, load average, busiest processes, never this
 * process itself, even while one of its threads spins. And the spread of a
 * measurement's runs (the --plot PNG's bars), from made-up run times.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

static int fails;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
            fails++;                                                                     \
        }                                                                                \
    } while (0)

#define MS 1000000ull

static void test_series(void)
{
    static const struct {
        uint64_t waited, elapsed;
        int noisy;
    } series[] = {
        {0, 100 * MS, 0},          /* a quiet row */
        {1 * MS, 100 * MS, 0},     /* 1%: a few interrupts */
        {2 * MS, 100 * MS, 0},     /* 2%: the limit itself is clean */
        {2 * MS + 1, 100 * MS, 1}, /* just above */
        {4 * MS, 100 * MS, 1},     /* one scheduler tick lost in a 100 ms row */
        {4 * MS, 4 * MS + 200, 1}, /* "3999.963 us": a tick instead of 0.2 us */
        {165 * MS, 100 * MS, 1},   /* two ranks, each waiting most of the row */
        {0, 0, 0},                 /* nothing measured: nothing to call noisy */
        {5 * MS, 0, 0},
    };
    for (size_t i = 0; i < sizeof series / sizeof series[0]; i++) {
        double share = -1;
        bool noisy = bench_noisy(series[i].waited, series[i].elapsed, &share);
        if (noisy != (series[i].noisy != 0))
            fprintf(stderr, "FAIL: waited %llu ns of %llu: %s\n",
                    (unsigned long long)series[i].waited,
                    (unsigned long long)series[i].elapsed, noisy ? "noisy" : "clean"),
                fails++;
        double want =
            series[i].elapsed ? (double)series[i].waited / series[i].elapsed : 0;
        CHECK(share == want);
        CHECK(bench_noisy(series[i].waited, series[i].elapsed, NULL) == noisy);
    }
}

static atomic_bool stop;

static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        ;
    return NULL;
}

static void test_others(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, spin, NULL) == 0);
    char line[640];
    double others = bench_others(line, sizeof line, 300);
    atomic_store(&stop, true);
    pthread_join(t, NULL);
    printf("others: %s\n", line);
    CHECK(others >= 0);
    CHECK(strstr(line, "CPUs busy with other work") != NULL);
    CHECK(strstr(line, ", load average ") != NULL);
    CHECK(strstr(line, "; busiest: ") != NULL);
    char self[32];
    snprintf(self, sizeof self, "(pid %d)", (int)getpid());
    if (strstr(line, self)) /* its spinning thread is the job's own work */
        fprintf(stderr, "FAIL: this process listed as other work: %s\n", line), fails++;
}

/* Made-up run times: 10 ns an iteration through the warm-up (until a run
   lasts a tenth of the 1 ms target), then 12, 8, 10, 11 and 30 ns. */
static uint64_t fake_run(void *ctx, uint64_t n)
{
    (void)ctx;
    static const double measured[] = {12, 8, 10, 11, 30};
    static bool warmed;
    static int k;
    if (!warmed) {
        warmed = n * 10 >= 100000;
        return n * 10;
    }
    return (uint64_t)((double)n * measured[k++ % 5]);
}

static void test_spread(void)
{
    double ns = bench_measure(fake_run, NULL, 1000000, 5, 1, 1u << 30);
    double lo, hi;
    bench_last_spread(&lo, &hi);
    printf("spread: median %.3f ns, lo %.3f, hi %.3f\n", ns, lo, hi);
    CHECK(ns > 10.99 && ns < 11.01);    /* the median of 8, 10, 11, 12, 30 */
    CHECK(fabs(lo - 8.0 / 11) < 1e-9);  /* the fastest run beside it */
    CHECK(fabs(hi - 30.0 / 11) < 1e-9); /* the slowest */
}

int main(void)
{
    test_series();
    test_spread();
    test_others();
    if (fails)
        fprintf(stderr, "%d failures\n", fails);
    return fails ? 1 : 0;
}
