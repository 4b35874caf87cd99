/* SPDX-License-Identifier: BSD-3-Clause */
/* Walking the layer list (layer.h): the core's only view of the layers. */
#include "core/layer.h"

#include <stdlib.h>

#include "core/ep.h"
#include "core/stats.h"
#include "util/log.h"

static struct fl_layer *const *layers;
static unsigned nlayers;

void fl_layers_init(struct fl_layer *const *list)
{
    unsigned n = 0;
    while (list[n])
        n++;
    if (n > FL_MAX_LAYERS) {
        fl_error("%u layers, at most %u: raise FL_MAX_LAYERS", n, FL_MAX_LAYERS);
        abort();
    }
    for (unsigned i = 0; i < n; i++) {
        if (!list[i]->name || !list[i]->init || !list[i]->ep_open) {
            fl_error("layer %u (%s) lacks a required part", i,
                     list[i]->name ? list[i]->name : "?");
            abort();
        }
        list[i]->slot = i;
    }
    layers = list;
    nlayers = n;
    for (unsigned i = 0; i < n; i++)
        list[i]->init();
}

flit_status fl_layers_ep_open(struct flit_ep *ep)
{
    for (unsigned i = 0; i < nlayers; i++) {
        const struct fl_layer *l = layers[i];
        ep->lstate[i] = calloc(1, l->state_size ? l->state_size : 1);
        if (!ep->lstate[i])
            return FLIT_ERR_NO_MEMORY;
        flit_status st = l->ep_open(ep, ep->lstate[i]);
        if (st != FLIT_OK) {
            free(ep->lstate[i]);
            ep->lstate[i] = NULL;
            return st;
        }
        /* Open now: a failure here closes it with the others. */
        st = fl_counters_add(ep, l->name, l->counters, ep->lstate[i]);
        if (st != FLIT_OK)
            return st;
    }
    return FLIT_OK;
}

/* Only the layers that opened (their state is there), top down. */
void fl_layers_ep_close(struct flit_ep *ep)
{
    for (unsigned i = nlayers; i-- > 0;) {
        if (!ep->lstate[i])
            continue;
        if (layers[i]->ep_close)
            layers[i]->ep_close(ep, ep->lstate[i]);
        free(ep->lstate[i]);
        ep->lstate[i] = NULL;
    }
}

flit_status fl_layers_ep_quiesce(struct flit_ep *ep)
{
    for (unsigned i = 0; i < nlayers; i++) {
        if (!layers[i]->ep_quiesce)
            continue;
        flit_status st = layers[i]->ep_quiesce(ep, ep->lstate[i]);
        if (st != FLIT_OK)
            return st;
    }
    return FLIT_OK;
}

void fl_layers_peer_down(struct flit_ep *ep, uint32_t rank)
{
    for (unsigned i = 0; i < nlayers; i++)
        if (layers[i]->peer_down)
            layers[i]->peer_down(ep, ep->lstate[i], rank);
}

uint32_t fl_layers_handlers_used(struct flit_ep *ep, uint32_t below)
{
    uint32_t used = 0;
    for (unsigned i = 0; i < nlayers; i++) {
        if (!layers[i]->handlers_used)
            continue;
        uint32_t u = layers[i]->handlers_used(ep->lstate[i], below);
        if (u > used)
            used = u;
    }
    return used;
}
