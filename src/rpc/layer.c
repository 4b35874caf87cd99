/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPC as a layer of the endpoint (flit/layer.h): an endpoint created with
 * "rpc" among its layers has an RPC object of its own from birth, with
 * FLIT_RPC_PROCS procedure numbers, counting into the layer's state
 * (rpc.*, the fields of flit_rpc_stats_t); flit_rpc_open hands it out, and
 * the endpoint destroys it. flit_rpc_create is what the open does, with
 * the program's parameters.
 */
#include <stddef.h>

#include "internal.h"

struct rpc_state {
    struct fl_rpc_counters ctr; /* first: the counters' offsets below */
    flit_rpc_t *rpc;
    /* For the dump, on any thread: the request handler plus one (0 until
       open) and the procedure numbers. */
    _Atomic uint32_t handler, procs;
};

static const flit_layer_setting_t rpc_settings[] = {
    {"FLIT_RPC_PROCS", 64, 1, RPC_MAX_PROCS,
     "procedure numbers of an endpoint's RPC object (layer rpc)"},
};

static flit_status rpc_open(flit_ep_t *ep, void *state)
{
    struct rpc_state *s = state;
    int64_t procs = 0;
    flit_status st = flit_layer_setting(&flit_rpc_layer, "FLIT_RPC_PROCS", &procs);
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = (unsigned)procs};
    if (st == FLIT_OK) /* collective: handlers reserved, then a barrier */
        st = fl_rpc_create(ep, &p, &s->ctr, true, &s->rpc);
    if (st != FLIT_OK)
        return st;
    atomic_store_explicit(&s->procs, p.procs, memory_order_relaxed);
    atomic_store_explicit(&s->handler, fl_rpc_of(s->rpc)->h.idx + 1u,
                          memory_order_relaxed);
    return FLIT_OK;
}

/* Collective, as flit_ep_destroy is: the object's closing barrier. Calls
   the program left outstanding keep the object, said here. */
static void rpc_close(flit_ep_t *ep, void *state)
{
    (void)ep;
    struct rpc_state *s = state;
    flit_status st = fl_rpc_destroy(fl_rpc_of(s->rpc));
    if (st != FLIT_OK)
        flit_log(FLIT_LOG_WARN,
                 "rpc: the endpoint is destroyed before its RPC object could be (%s): "
                 "its memory is kept",
                 st == FLIT_ERR_AGAIN
                     ? "calls still outstanding: wait or cancel each first"
                     : flit_strerror(st));
}

static void rpc_dump(const void *state, flit_layer_dump_t *d)
{
    struct rpc_state *s = (void *)state; /* atomics are read, never written */
    uint32_t h = atomic_load_explicit(&s->handler, memory_order_relaxed);
    if (h)
        flit_layer_dump_line(d,
                             "object on handlers %u (requests) and %u (replies), %u "
                             "procedures",
                             h - 1, h,
                             atomic_load_explicit(&s->procs, memory_order_relaxed));
}

static const flit_layer_counter_t rpc_counters[] = {
    {"calls", offsetof(struct rpc_state, ctr.calls), "calls made"},
    {"served", offsetof(struct rpc_state, ctr.served), "procedures run"},
    {"timeouts", offsetof(struct rpc_state, ctr.timeouts),
     "calls ended by their timeout"},
    {"late_replies", offsetof(struct rpc_state, ctr.late_replies),
     "replies that found no call waiting"},
    {"queued_replies", offsetof(struct rpc_state, ctr.queued_replies),
     "replies sent from a progress pass"},
    {"deferred", offsetof(struct rpc_state, ctr.deferred),
     "replies deferred (flit_rpc_defer)"},
    {"refused", offsetof(struct rpc_state, ctr.refused),
     "malformed or forged messages from peers, dropped"},
    {"failed_replies", offsetof(struct rpc_state, ctr.failed_replies),
     "replies that could not be sent (the call got the error)"},
};

const flit_layer_t flit_rpc_layer = {
    .version = FLIT_LAYER_VERSION,
    .name = "rpc",
    .flags = FLIT_LAYER_ON_REQUEST, /* its open is collective and takes handlers */
    .state_size = sizeof(struct rpc_state),
    .open = rpc_open,
    .close = rpc_close,
    .settings = rpc_settings,
    .nsettings = sizeof rpc_settings / sizeof rpc_settings[0],
    .counters = rpc_counters,
    .ncounters = sizeof rpc_counters / sizeof rpc_counters[0],
    .dump = rpc_dump,
};

flit_status flit_rpc_open(flit_ep_t *ep, flit_rpc_t **out)
{
    void *state;
    if (!out)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = flit_layer_state(ep, &flit_rpc_layer, &state);
    if (st != FLIT_OK)
        return st == FLIT_ERR_CLOSED ? FLIT_ERR_INVALID_ARG : st;
    *out = ((struct rpc_state *)state)->rpc;
    return FLIT_OK;
}
