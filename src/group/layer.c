/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Groups as a layer of the endpoint (flit/layer.h): an endpoint created
 * with "group" among its layers has its group machinery from birth, and
 * flit_group_open takes the endpoint; flit_groups_create is what the
 * layer's open does, and the handle stays in its state.
 */
#include <stddef.h>

#include "internal.h"

struct grp_state {
    struct fl_grp_counters ctr; /* first: the counters' offsets below */
    flit_groups_t *gs;
};

static flit_status grp_open(flit_ep_t *ep, void *state)
{
    struct grp_state *s = state;
    return fl_grp_sets_create(ep, &s->ctr, &s->gs);
}

/* The program destroys its groups before the endpoint (each destroy is
   collective over its members, which this cannot be); one left keeps
   the set, said once here. */
static void grp_close(flit_ep_t *ep, void *state)
{
    (void)ep;
    struct grp_state *s = state;
    flit_status st = flit_groups_destroy(s->gs);
    if (st != FLIT_OK)
        flit_log(
            FLIT_LOG_WARN,
            "group: the endpoint is destroyed with %llu groups still live "
            "(flit_group_destroy each before it): their memory is kept",
            (unsigned long long)atomic_load_explicit(&s->ctr.live, memory_order_relaxed));
}

static const flit_layer_counter_t grp_counters[] = {
    {"unknown", offsetof(struct grp_state, ctr.unknown), "messages for a group not here"},
    {"refused", offsetof(struct grp_state, ctr.refused),
     "malformed messages, or ones for another role, dropped"},
    {"live", offsetof(struct grp_state, ctr.live), "groups on this endpoint now",
     FLIT_COUNTER_GAUGE},
};

const flit_layer_t flit_group_layer = {
    .version = FLIT_LAYER_VERSION,
    .name = "group",
    .flags = FLIT_LAYER_ON_REQUEST, /* its open is collective and takes a handler */
    .state_size = sizeof(struct grp_state),
    .open = grp_open,
    .close = grp_close,
    .counters = grp_counters,
    .ncounters = sizeof grp_counters / sizeof grp_counters[0],
};

flit_status flit_group_open(flit_ep_t *ep, uint32_t id, const flit_rank_t *members,
                            unsigned n, const flit_group_params_t *params,
                            flit_group_deliver_fn fn, void *user, flit_group_t **out)
{
    void *state;
    flit_status st = flit_layer_state(ep, &flit_group_layer, &state);
    if (st != FLIT_OK)
        return st == FLIT_ERR_CLOSED ? FLIT_ERR_INVALID_ARG : st;
    return flit_group_create(((struct grp_state *)state)->gs, id, members, n, params, fn,
                             user, out);
}
