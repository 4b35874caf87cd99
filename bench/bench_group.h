/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-bench's group section (<flit/group.h>): rank 0 sends to groups of 2,
 * 4 and 8 ranks (as many as the job has: run it as flitrun -n 8 flit-bench
 * --only group) and times
 *  - ordered multicast latency: a send until the last member delivered it
 *    (each member tells rank 0 with a short AM from its progress
 *    listener), 0 B and 1 KiB, beside a short AM from rank 0 to each member
 *    answered by each, waiting for the last answer;
 *  - throughput of one sender, 64 KiB and 1 MiB messages, groups of 4 and
 *    8, until every member delivered the last, beside stream bandwidth to
 *    one rank;
 *  - the sequencer round trip: rank 0's message delivered back to itself
 *    in a group of two whose sequencer is rank 1, beside the short AM round
 *    trip;
 * and prints Panda's figures (Bal et al., Orca on Myrinet) for the record.
 *
 * Rank 1 takes part from bench_serve's polls (the groups' progress listener
 * forwards and delivers there); ranks 2 and up run bench_group_serve.
 */
#ifndef FLIT_BENCH_GROUP_H
#define FLIT_BENCH_GROUP_H

#include "bench_engine.h"
#include "bench_section.h"

/* Every rank, collective, after bench_init and before the barrier that
   precedes measuring: the groups and the section's handlers. */
void bench_group_open(bench_t *b);
/* Ranks 2 and up: take part until rank 0's section is over. */
void bench_group_serve(bench_t *b);
/* Rank 0: the section; at its end, ranks 2 and up return from serving. */
void bench_group_section(bench_t *b, const struct bench_io *io);
/* Every rank, after measuring: undoes bench_group_open. */
void bench_group_close(bench_t *b);

#endif /* FLIT_BENCH_GROUP_H */
