/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-bench's object section (<flit/object.h>), rank 0 against rank 1:
 *  - ROI: an empty operation on an object owned by rank 1, beside the null
 *    RPC (an RPC object of this section's own, same run); and a 1 MiB
 *    argument, beside an RPC with a 1 MiB request;
 *  - GOI: an empty write on an object replicated on every rank, until it
 *    is applied at the writer (in the group's order), beside a group send
 *    delivered back to its sender on a group of the same members; and
 *    with a 1 MiB argument beside a 1 MiB group message;
 *  - a local read of a replicated object (8 bytes of state) beside a plain
 *    function call doing the same on the same state;
 * and prints the paper's ROI and GOI (Bal et al., Orca on Myrinet).
 */
#ifndef FLIT_BENCH_OBJECT_H
#define FLIT_BENCH_OBJECT_H

#include "bench_engine.h"
#include "bench_section.h"

/* Every rank, collective: the objects, the baselines' RPC object and group. */
void bench_object_open(bench_t *b);
/* Rank 0: the section (rank 1 serves in bench_serve's polls). */
void bench_object_section(bench_t *b, const struct bench_io *io);
/* Every rank, collective: undoes bench_object_open. */
void bench_object_close(bench_t *b);

#endif /* FLIT_BENCH_OBJECT_H */
