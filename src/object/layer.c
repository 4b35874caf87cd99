/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared objects as a layer of the endpoint (flit/layer.h): an endpoint
 * created with "object" among its layers has its object machinery (an RPC
 * object and a group set of its own) from birth, and flit_object_open and
 * flit_object_find take the endpoint; flit_objects_create is what the
 * layer's open does, and the handle stays in its state.
 */
#include "object_int.h"

#include <stddef.h>

struct obj_state {
    struct fl_obj_counters ctr;
    flit_objects_t *objs;
};

static flit_status obj_open(flit_ep_t *ep, void *state)
{
    struct obj_state *s = state;
    return object_sets_create(ep, &s->ctr, &s->objs);
}

/* Collective, as flit_ep_destroy is: the RPC object's closing barrier. A
   program that left objects live, or a job that lost a rank, keeps the
   machinery's memory, said here. */
static void obj_close(flit_ep_t *ep, void *state)
{
    (void)ep;
    flit_status st = flit_objects_destroy(((struct obj_state *)state)->objs);
    if (st != FLIT_OK)
        flit_log(FLIT_LOG_WARN,
                 "object: the endpoint is destroyed before its objects could be "
                 "(%s): their memory is kept",
                 st == FLIT_ERR_AGAIN
                     ? "objects still live: flit_object_destroy each first"
                     : flit_strerror(st));
}

static const flit_layer_counter_t obj_counters[] = {
    {"live", offsetof(struct obj_state, ctr.live), "objects on this endpoint now",
     FLIT_COUNTER_GAUGE},
};

const flit_layer_t flit_object_layer = {
    .version = FLIT_LAYER_VERSION,
    .name = "object",
    .flags = FLIT_LAYER_ON_REQUEST, /* its open is collective and takes handlers */
    .state_size = sizeof(struct obj_state),
    .open = obj_open,
    .close = obj_close,
    .counters = obj_counters,
    .ncounters = sizeof obj_counters / sizeof obj_counters[0],
};

/* The layer's set of ep; FLIT_ERR_INVALID_ARG when ep has no such layer. */
static flit_status objs_on(flit_ep_t *ep, flit_objects_t **objs)
{
    void *state;
    flit_status st = flit_layer_state(ep, &flit_object_layer, &state);
    if (st != FLIT_OK)
        return st == FLIT_ERR_CLOSED ? FLIT_ERR_INVALID_ARG : st;
    *objs = ((struct obj_state *)state)->objs;
    return FLIT_OK;
}

flit_status flit_object_open(flit_ep_t *ep, uint32_t id, const flit_object_type_t *type,
                             const flit_rank_t *members, unsigned n,
                             flit_object_strategy strategy, flit_rank_t owner,
                             const void *init_arg, size_t init_len, flit_object_t **out)
{
    flit_objects_t *objs;
    flit_status st = objs_on(ep, &objs);
    if (st != FLIT_OK)
        return st;
    return flit_object_create(objs, id, type, members, n, strategy, owner, init_arg,
                              init_len, out);
}

flit_status flit_object_find(flit_ep_t *ep, uint32_t id, flit_object_t **out)
{
    flit_objects_t *objs;
    flit_status st = objs_on(ep, &objs);
    if (st != FLIT_OK)
        return st;
    return flit_object_lookup(objs, id, out);
}
