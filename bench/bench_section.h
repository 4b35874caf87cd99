/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How a section of flit-bench written in a file of its own (bench_rpc.c,
 * ...) measures and prints: through flit-bench's own machinery, so that its
 * figures are retried when noisy, printed as a table row or CSV line, and
 * shown beside their baseline like every other figure:
 *
 *     io->title(io->run, "TITLE", "baseline: ...", false);
 *     do {
 *         io->begin(io->run);
 *         v = ...; base = ...;
 *     } while (io->again(io->run));
 *     io->emit(io->run, "csv_name", "figure", size, v, base, base_size, BENCH_U_US);
 */
#ifndef FLIT_BENCH_SECTION_H
#define FLIT_BENCH_SECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum bench_unit { BENCH_U_US, BENCH_U_MBS, BENCH_U_RATE, BENCH_U_COUNT };

struct bench_io {
    void *run;
    void (*title)(void *run, const char *title, const char *baseline, bool gbs);
    void (*begin)(void *run);
    bool (*again)(void *run);
    /* size < 0: none; base NAN: none; ratio shown when base_size == size.
       Returns value, or a negative number when it never came out clean. */
    double (*emit)(void *run, const char *name, const char *figure, double size,
                   double value, double base, double base_size, enum bench_unit u);
    uint64_t lat_ns, bw_ns; /* time per point */
    int lat_reps, bw_reps;
    bool udp; /* the peer is reached over UDP */
};

#endif /* FLIT_BENCH_SECTION_H */
