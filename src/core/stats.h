/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint's counters by name: each plug-in (the core, each transport,
 * each layer, the layers built on the public API) declares a table of
 * struct fl_counter_desc next to its code, saying where each counter lives in
 * its per-endpoint state; the endpoint keeps the list of (plug-in, table,
 * state). Everything that reads counters walks that list: flit_ep_counters,
 * flit_ep_counter, the flit_stats_t snapshot (its fields are sums of named
 * counters), FLIT_STATS=1 and state dumps. Writers only ever bump a field.
 */
#ifndef FL_CORE_STATS_H
#define FL_CORE_STATS_H

#include "flit/flit.h"
#include "transport/transport.h"
#include "util/counter.h"

/* The core's own counters ("core.*"). */
struct fl_counters {
    fl_counter credit_stalls;
    fl_counter refused_packets;
    fl_counter polls;
    fl_counter sleeps;
    fl_counter peers_down;
    fl_counter send_polls;
};
extern const struct fl_counter_desc fl_core_counters[];

/* One plug-in's counters on one endpoint. */
struct fl_counter_src {
    const char *plugin; /* the prefix of its counters' names */
    const struct fl_counter_desc *desc;
    const void *state; /* what desc's offsets count from */
};

/* Plug-ins with counters on one endpoint, at most. */
#define FL_COUNTER_SRCS 48

struct flit_ep;
/*
 * Adds plugin's counters (desc, ending with a NULL name; NULL for none)
 * kept in state to ep's. Setup only: before the endpoint is handed out,
 * as nothing else reads the list then. FLIT_ERR_INVALID_ARG (logged): a
 * name too long or not [a-z0-9_], one already there, or too many plug-ins.
 */
flit_status fl_counters_add(struct flit_ep *ep, const char *plugin,
                            const struct fl_counter_desc *desc, const void *state);

/* The public-API layers' counter plugin.name (plugin plen bytes) on ep,
   and *src its source; NULL if no layer with a state on ep has it. */
const struct fl_counter_desc *fl_pub_counter_find(struct flit_ep *ep, const char *plugin,
                                                  size_t plen, const char *name,
                                                  struct fl_counter_src *src);

/* The value of counter d of source s. */
uint64_t fl_counter_read(const struct fl_counter_src *s, const struct fl_counter_desc *d);

/* Where a dump or FLIT_STATS=1 writes; */
struct fl_report;
/* one line ("flit[rank]" first, the newline added). */
void fl_report_line(struct fl_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void fl_stats_snapshot(struct flit_ep *ep, flit_stats_t *out);
/* Writes the state dump of ep to fd (safe from another thread). */
void fl_stats_dump(struct flit_ep *ep, int fd);
/* Prints the counters of ep to stderr (FLIT_STATS=1). */
void fl_stats_print(struct flit_ep *ep);
/* Writes every plug-in's counters, a section each (report.c). */
void fl_stats_report(struct flit_ep *ep, struct fl_report *r);

#endif /* FL_CORE_STATS_H */
