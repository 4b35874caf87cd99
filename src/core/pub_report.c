/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What layers built on the public API show: their named counters (read by
 * name, and printed in the dump and by FLIT_STATS=1) and their own section
 * of the dump.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/ep.h"
#include "core/pub_layer.h"
#include "core/stats.h"

struct flit_layer_dump {
    struct fl_report *r;
    const char *layer;
};

static uint64_t read_counter(const void *state, const flit_layer_counter_t *c)
{
    /* Relaxed: a counter orders nothing; the layer adds to it atomically. */
    return __atomic_load_n((const uint64_t *)((const char *)state + c->offset),
                           __ATOMIC_RELAXED);
}

/* The layers with a state on ep, as bits (any thread: see ep.h). */
static uint32_t made(struct flit_ep *ep)
{
    /* Acquire: pairs with open_one's release; the states are in. */
    return atomic_load_explicit(&ep->pub_made, memory_order_acquire);
}

flit_status flit_layer_counter(flit_ep_t *ep, const char *name, uint64_t *out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!name || !out)
        return FLIT_ERR_INVALID_ARG;
    uint32_t bits = made(ep);
    for (unsigned i = 0; i < FLIT_LAYER_MAX; i++) {
        const flit_layer_t *l = fl_pub_at(i);
        size_t len = (bits & (1u << i)) ? strlen(l->name) : 0;
        if (!len || strncmp(name, l->name, len) != 0 || name[len] != '.')
            continue;
        for (unsigned k = 0; k < l->ncounters; k++)
            if (strcmp(name + len + 1, l->counters[k].name) == 0) {
                *out = read_counter(ep->pub_state[i], &l->counters[k]);
                return FLIT_OK;
            }
    }
    return FLIT_ERR_INVALID_ARG;
}

void flit_layer_dump_line(flit_layer_dump_t *d, const char *fmt, ...)
{
    if (!d || !fmt)
        return;
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fl_report_line(d->r, "  %s: %s", d->layer, text);
}

/* The counters on one line: "  group: refused 0, ..." (cut when long). */
static void report_counters(const flit_layer_t *l, const void *state, struct fl_report *r)
{
    char line[400];
    size_t at = 0;
    for (unsigned k = 0; k < l->ncounters && at < sizeof line; k++) {
        int n = snprintf(line + at, sizeof line - at, "%s%s %llu", k ? ", " : "",
                         l->counters[k].name,
                         (unsigned long long)read_counter(state, &l->counters[k]));
        at += n > 0 ? (size_t)n : 0;
    }
    fl_report_line(r, "  %s: %s", l->name, line);
}

void fl_pub_report(struct flit_ep *ep, struct fl_report *r)
{
    uint32_t bits = made(ep);
    for (unsigned i = 0; i < FLIT_LAYER_MAX; i++) {
        if (!(bits & (1u << i))) /* not opened on this endpoint */
            continue;
        const flit_layer_t *l = fl_pub_at(i);
        const void *state = ep->pub_state[i];
        if (l->ncounters)
            report_counters(l, state, r);
        /* A closed layer (FLIT_STATS=1 prints after the closes) shows its
           counters, not its section: what that reads may be gone. */
        bool open = atomic_load_explicit(&ep->pub_live, memory_order_acquire) & (1u << i);
        flit_layer_dump_t d = {.r = r, .layer = l->name};
        if (l->dump && open)
            l->dump(state, &d);
    }
}
