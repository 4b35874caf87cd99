/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint's own counters (the transports' are in struct fl_tp_counters,
 * each layer's in its state), and the API snapshot, FLIT_STATS printing and
 * state dumps that gather them all.
 */
#ifndef FL_CORE_STATS_H
#define FL_CORE_STATS_H

#include "flit/flit.h"
#include "transport/transport.h"
#include "util/counter.h"

struct fl_counters {
    fl_counter credit_stalls;
    fl_counter refused_packets;
    fl_counter polls;
    fl_counter sleeps;
    fl_counter peers_down;
    struct fl_tp_counters tp; /* given to every transport at open */
};

/* Where a dump or FLIT_STATS=1 writes; layers add their lines with: */
struct fl_report;
/* one line ("flit[rank]" first, the newline added). */
void fl_report_line(struct fl_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

struct flit_ep;
void fl_stats_snapshot(struct flit_ep *ep, flit_stats_t *out);
/* Writes the state dump of ep to fd (safe from another thread). */
void fl_stats_dump(struct flit_ep *ep, int fd);
/* Prints the counters of ep to stderr (FLIT_STATS=1). */
void fl_stats_print(struct flit_ep *ep);

#endif /* FL_CORE_STATS_H */
