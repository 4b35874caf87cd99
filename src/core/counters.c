/* SPDX-License-Identifier: BSD-3-Clause */
/* Counters by name (stats.h): each endpoint's list of plug-ins' tables,
   and the public calls that read them, with the counters of the layers on
   the public API (core/pub_layer.h) after them. */
#include <stdio.h>
#include <string.h>

#include "core/ep.h"
#include "core/pub_layer.h"
#include "core/stats.h"
#include "util/log.h"

#define C(field, kind, doc) FL_COUNTER(struct fl_counters, field, #field, kind, doc)
const struct fl_counter_desc fl_core_counters[] = {
    C(credit_stalls, FLIT_COUNTER_COUNT, "sends that found the receiver without room"),
    C(refused_packets, FLIT_COUNTER_COUNT, "malformed or foreign packets dropped"),
    C(polls, FLIT_COUNTER_COUNT, "progress passes"),
    C(sleeps, FLIT_COUNTER_COUNT, "times the endpoint went to sleep"),
    C(send_polls, FLIT_COUNTER_COUNT,
      "progress passes a sender ran because nothing polled for 10 ms"),
    C(peers_down, FLIT_COUNTER_COUNT, "peers found dead or gone"),
    {NULL, NULL, 0, 0, NULL},
};
#undef C

static bool name_ok(const char *plugin, const char *name)
{
    if (!name[0] || strlen(plugin) + 1 + strlen(name) >= FLIT_COUNTER_NAME_MAX)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

/* s's counter called plugin.name (plugin plen bytes), NULL if none. */
static const struct fl_counter_desc *
named(const struct fl_counter_src *s, const char *plugin, size_t plen, const char *name)
{
    if (strlen(s->plugin) != plen || memcmp(s->plugin, plugin, plen) != 0)
        return NULL;
    for (const struct fl_counter_desc *d = s->desc; d->name; d++)
        if (strcmp(d->name, name) == 0)
            return d;
    return NULL;
}

/* The source holding the counter called plugin.name, NULL if none. */
static const struct fl_counter_desc *find(struct flit_ep *ep, const char *plugin,
                                          size_t plen, const char *name,
                                          const struct fl_counter_src **src)
{
    for (unsigned i = 0; i < ep->ncounter_srcs; i++) {
        const struct fl_counter_desc *d = named(&ep->counter_srcs[i], plugin, plen, name);
        if (d) {
            *src = &ep->counter_srcs[i];
            return d;
        }
    }
    return NULL;
}

static flit_status check_table(struct flit_ep *ep, const char *plugin,
                               const struct fl_counter_desc *desc)
{
    for (const struct fl_counter_desc *d = desc; d->name; d++) {
        const struct fl_counter_src *s;
        if (!name_ok(plugin, d->name) || !d->doc) {
            fl_error("counter %s.%s: a name of [a-z0-9_] up to %d bytes and a doc",
                     plugin, d->name, FLIT_COUNTER_NAME_MAX - 1);
            return FLIT_ERR_INVALID_ARG;
        }
        if (find(ep, plugin, strlen(plugin), d->name, &s)) {
            fl_error("counter %s.%s named twice", plugin, d->name);
            return FLIT_ERR_INVALID_ARG;
        }
    }
    return FLIT_OK;
}

flit_status fl_counters_add(struct flit_ep *ep, const char *plugin,
                            const struct fl_counter_desc *desc, const void *state)
{
    if (!desc || !desc->name)
        return FLIT_OK;
    if (ep->ncounter_srcs == FL_COUNTER_SRCS) {
        fl_error("more than %d plug-ins with counters: raise FL_COUNTER_SRCS",
                 FL_COUNTER_SRCS);
        return FLIT_ERR_INVALID_ARG;
    }
    flit_status st = check_table(ep, plugin, desc);
    if (st != FLIT_OK)
        return st;
    ep->counter_srcs[ep->ncounter_srcs++] =
        (struct fl_counter_src){.plugin = plugin, .desc = desc, .state = state};
    return FLIT_OK;
}

uint64_t fl_counter_read(const struct fl_counter_src *s, const struct fl_counter_desc *d)
{
    if (d->read)
        return d->read(s->state);
    /* fl_counter (_Atomic uint64_t) or a public layer's uint64_t (its
       flit_layer_counter_t converted): the same bytes, both written with
       relaxed atomics. */
    return __atomic_load_n((const uint64_t *)((const char *)s->state + d->offset),
                           __ATOMIC_RELAXED);
}

static void fill(flit_counter_t *out, const char *plugin, const char *name,
                 const char *doc, flit_counter_kind kind, uint64_t value)
{
    snprintf(out->name, sizeof out->name, "%s.%s", plugin, name);
    out->doc = doc;
    out->kind = kind;
    out->value = value;
}

static void fill_src(flit_counter_t *out, const struct fl_counter_src *s,
                     const struct fl_counter_desc *d)
{
    fill(out, s->plugin, d->name, d->doc, d->kind, fl_counter_read(s, d));
}

/* The public-API layers' counters, numbered on from n; returns the next. */
static size_t pub_counters(struct flit_ep *ep, flit_counter_t *out, size_t cap, size_t n)
{
    struct fl_counter_src s;
    for (unsigned i = 0; i < FLIT_LAYER_MAX; i++)
        for (const struct fl_counter_desc *d = fl_pub_counter_src(ep, i, &s) ? s.desc
                                                                             : NULL;
             d && d->name; d++, n++)
            if (n < cap)
                fill_src(&out[n], &s, d);
    return n;
}

const struct fl_counter_desc *fl_pub_counter_find(struct flit_ep *ep, const char *plugin,
                                                  size_t plen, const char *name,
                                                  struct fl_counter_src *src)
{
    for (unsigned i = 0; i < FLIT_LAYER_MAX; i++) {
        const struct fl_counter_desc *d =
            fl_pub_counter_src(ep, i, src) ? named(src, plugin, plen, name) : NULL;
        if (d)
            return d;
    }
    return NULL;
}

flit_status flit_ep_counters(flit_ep_t *ep, flit_counter_t *out, size_t cap,
                             size_t *n_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!n_out || (!out && cap))
        return FLIT_ERR_INVALID_ARG;
    size_t n = 0;
    for (unsigned i = 0; i < ep->ncounter_srcs; i++) {
        const struct fl_counter_src *s = &ep->counter_srcs[i];
        for (const struct fl_counter_desc *d = s->desc; d->name; d++, n++)
            if (n < cap)
                fill_src(&out[n], s, d);
    }
    *n_out = pub_counters(ep, out, cap, n);
    return FLIT_OK;
}

flit_status flit_ep_counter(flit_ep_t *ep, const char *name, flit_counter_t *out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!name || !out)
        return FLIT_ERR_INVALID_ARG;
    const char *dot = strchr(name, '.');
    if (!dot)
        return FLIT_ERR_NOT_FOUND;
    size_t plen = (size_t)(dot - name);
    const struct fl_counter_src *s;
    const struct fl_counter_desc *d = find(ep, name, plen, dot + 1, &s);
    if (d) {
        fill_src(out, s, d);
        return FLIT_OK;
    }
    struct fl_counter_src ps;
    if (!(d = fl_pub_counter_find(ep, name, plen, dot + 1, &ps)))
        return FLIT_ERR_NOT_FOUND;
    fill_src(out, &ps, d);
    return FLIT_OK;
}
