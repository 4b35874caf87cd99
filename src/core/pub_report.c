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

flit_status flit_layer_counter(flit_ep_t *ep, const char *name, uint64_t *out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!name || !out)
        return FLIT_ERR_INVALID_ARG;
    const char *dot = strchr(name, '.');
    struct fl_counter_src s;
    const struct fl_counter_desc *d =
        dot ? fl_pub_counter_find(ep, name, (size_t)(dot - name), dot + 1, &s) : NULL;
    if (!d)
        return FLIT_ERR_INVALID_ARG;
    *out = fl_counter_read(&s, d);
    return FLIT_OK;
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
static void report_counters(const struct fl_counter_src *s, struct fl_report *r)
{
    char line[400];
    size_t at = 0;
    for (const struct fl_counter_desc *d = s->desc; d->name && at < sizeof line; d++) {
        int n =
            snprintf(line + at, sizeof line - at, "%s%s %llu", d == s->desc ? "" : ", ",
                     d->name, (unsigned long long)fl_counter_read(s, d));
        at += n > 0 ? (size_t)n : 0;
    }
    fl_report_line(r, "  %s: %s", s->plugin, line);
}

void fl_pub_report(struct flit_ep *ep, struct fl_report *r)
{
    struct fl_counter_src s;
    for (unsigned i = 0; i < FLIT_LAYER_MAX; i++) {
        if (!fl_pub_counter_src(ep, i, &s)) /* not opened on this endpoint */
            continue;
        const flit_layer_t *l = fl_pub_at(i);
        if (s.desc->name)
            report_counters(&s, r);
        /* A closed layer (FLIT_STATS=1 prints after the closes) shows its
           counters, not its section: what that reads may be gone. */
        bool open = atomic_load_explicit(&ep->pub_live, memory_order_acquire) & (1u << i);
        flit_layer_dump_t d = {.r = r, .layer = l->name};
        if (l->dump && open)
            l->dump(s.state, &d);
    }
}
