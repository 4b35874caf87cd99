/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-bench's rpc section (<flit/rpc.h>), between rank 0 (which calls and
 * times) and rank 1 (which serves): a null RPC's round trip beside the
 * short AM's, a 1 MiB request answered by a 1 MiB reply beside stream
 * bandwidth, calls per second from 1, 2 and 8 threads of a thread-safe
 * endpoint, and Panda's figures (Bal et al., Orca on Myrinet) for the
 * record.
 *
 * Rank 1 serves the calls on the bench's endpoint in bench_serve's polls
 * (the RPC object's progress listener sends what its handlers queue), and
 * those on a second, thread-safe endpoint from a thread of its own.
 */
#ifndef FLIT_BENCH_RPC_H
#define FLIT_BENCH_RPC_H

#include "bench_engine.h"
#include "bench_section.h"

/* Both ranks, collective, after bench_init and before the barrier that
   precedes measuring: the RPC objects, the second endpoint, rank 1's
   serving thread. */
void bench_rpc_open(bench_t *b);
/* Rank 0: the section. */
void bench_rpc_section(bench_t *b, const struct bench_io *io);
/* Both ranks, collective, after measuring: undoes bench_rpc_open. */
void bench_rpc_close(bench_t *b);

#endif /* FLIT_BENCH_RPC_H */
