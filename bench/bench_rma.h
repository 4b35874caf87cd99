/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication figures (<flit/rma.h>), between rank 0 (which
 * drives and times) and rank 1 (which serves from bench_serve), through the
 * public API only. Each rank exports a region of flit_rma_alloc memory and
 * imports the other's: on shared memory a put is then one memcpy into the
 * other process's memory, over UDP it travels as packets that the other
 * rank's progress engine deposits.
 *
 * Rank 1 takes part through the engine's command mechanism: the engine's
 * CMD_RMA carries a 64-bit argument to bench_rma_ctrl, which answers inside
 * the command's handler and may ask for bench_rma_serve to run afterwards,
 * outside it (RMA calls are refused inside handlers), from bench_serve's
 * loop.
 */
#ifndef FLIT_BENCH_RMA_H
#define FLIT_BENCH_RMA_H

#include <flit/rma.h>
#include <stdbool.h>

#include "bench_engine.h"

/*
 * Rank 0: sets up both ranks' regions, max_size bytes each (at least 8),
 * and the imports. False, with the reason printed, when that fails: the
 * figures are then missing. Call after the barrier that precedes measuring.
 */
bool bench_rma_setup(bench_t *b, size_t max_size);
/* Rank 0: releases, unexports and frees both ranks' side. */
void bench_rma_teardown(bench_t *b);

/*
 * Rank 0; each returns nanoseconds, the median of reps runs lasting about
 * target_ns together; NAN when a run could not finish (the peer stopped
 * answering for 10 s).
 *
 * bench_rma_put_latency_ns: one way, until the data is visible at the
 * target: size bytes (at least 8) put into rank 1's region (the last 8
 * bytes in a put of their own, after the rest: a sequence number); rank 1
 * sees them by watching its memory, then puts the same back; round trip
 * / 2. On shared memory neither side makes a flit call while it watches.
 *
 * bench_rma_notify_latency_ns: the same with one put of size bytes made
 * with FLIT_RMA_NOTIFY: the round trip ends in each side's notification
 * handler.
 *
 * bench_rma_get_latency_ns: one blocking get of size bytes from rank 1's
 * region (complete when the bytes are in rank 0's buffer).
 */
double bench_rma_put_latency_ns(bench_t *b, size_t size, uint64_t target_ns, int reps);
double bench_rma_notify_latency_ns(bench_t *b, size_t size, uint64_t target_ns, int reps);
double bench_rma_get_latency_ns(bench_t *b, size_t size, uint64_t target_ns, int reps);

/*
 * Rank 0: bandwidth in MB/s (1e6 bytes) of size-byte puts made with
 * handles and FLIT_RMA_REMOTE_DONE, window of them in flight, then
 * flit_rma_flush: the time until all of them are in rank 1's memory.
 * NAN when it could not measure.
 */
double bench_rma_put_mbps(bench_t *b, size_t size, unsigned window, uint64_t target_ns,
                          int reps);

/* ---- the engine's side (bench_engine.c) ---- */

/* Rank 1, inside the CMD_RMA handler: the command's result; *defer asks
   for bench_rma_serve(b, arg) once the handler has returned. */
uint32_t bench_rma_ctrl(bench_t *b, uint64_t arg, bool *defer);
void bench_rma_serve(bench_t *b, uint64_t arg);
/* Rank 0: sends CMD_RMA with arg to rank 1 and waits for its result
   (defined in bench_engine.c, beside the other commands). */
uint32_t bench_rma_command(bench_t *b, uint64_t arg);

#endif /* FLIT_BENCH_RMA_H */
