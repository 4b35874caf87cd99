/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counters part of dumps and FLIT_STATS=1: a section per plug-in,
 * written from its counter table (no plug-in writes report lines of its
 * own), its counters that moved as "name value", wrapped into lines of
 * about a terminal's width.
 */
#include <stdio.h>
#include <string.h>

#include "core/ep.h"
#include "core/pub_layer.h"
#include "core/stats.h"

#define WIDTH 96

struct section {
    struct fl_report *r;
    const char *plugin;
    char line[WIDTH + FLIT_COUNTER_NAME_MAX + 32];
    size_t len;
    unsigned shown;
};

static void flush(struct section *s)
{
    if (s->len)
        fl_report_line(s->r, "%s", s->line);
    s->len = 0;
}

static void item(struct section *s, const struct fl_counter_desc *d, uint64_t v)
{
    char one[FLIT_COUNTER_NAME_MAX + 32];
    int n = snprintf(one, sizeof one, "%s %llu%s", d->name, (unsigned long long)v,
                     d->kind == FLIT_COUNTER_BYTES ? " B" : "");
    if (s->len && s->len + 2 + (size_t)n > WIDTH)
        flush(s);
    if (!s->len && s->shown) /* a section's next line */
        s->len = (size_t)snprintf(s->line, sizeof s->line, "    %s", one);
    else if (!s->len)
        s->len = (size_t)snprintf(s->line, sizeof s->line, "  %s: %s", s->plugin, one);
    else
        s->len +=
            (size_t)snprintf(s->line + s->len, sizeof s->line - s->len, ", %s", one);
    s->shown++;
}

static void section(struct fl_report *r, const struct fl_counter_src *src)
{
    struct section s = {.r = r, .plugin = src->plugin};
    unsigned all = 0;
    for (const struct fl_counter_desc *d = src->desc; d->name; d++, all++) {
        uint64_t v = fl_counter_read(src, d);
        if (v)
            item(&s, d, v);
    }
    flush(&s);
    if (!s.shown)
        fl_report_line(r, "  %s: all %u zero", src->plugin, all);
}

void fl_stats_report(struct flit_ep *ep, struct fl_report *r)
{
    flit_stats_t sum;
    fl_stats_snapshot(ep, &sum);
    fl_report_line(r, "  peers in contact %llu of %u",
                   (unsigned long long)sum.peers_in_contact, ep->size);
    for (unsigned i = 0; i < ep->ncounter_srcs; i++)
        section(r, &ep->counter_srcs[i]);
    fl_pub_report(ep, r); /* the layers on the public API */
}
