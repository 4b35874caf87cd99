/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tagged messaging as a layer of the endpoint (flit/layer.h): an endpoint
 * created with "tagged" among its layers has a context of its own from
 * birth, on a stream handler the layer reserves, counting into the
 * layer's state (tagged.*); flit_tagged_open hands it out, and the
 * endpoint destroys it. flit_tagged_create is what the open does, on a
 * handler the program picks.
 */
#include <stddef.h>

#include "internal.h"

struct tg_state {
    struct fl_tagged_counters ctr; /* first: the counters' offsets below */
    flit_tagged_t *t;
    _Atomic uint32_t handler; /* the context's, plus one; 0 until open; for
                                 the dump, on any thread */
};

static flit_status tg_open(flit_ep_t *ep, void *state)
{
    struct tg_state *s = state;
    flit_handler_t h;
    flit_status st = flit_ep_reserve_handlers(ep, 1, &h); /* collective */
    if (st == FLIT_OK)
        st = fl_tagged_ctx_create(ep, h, &s->ctr, true, &s->t);
    if (st == FLIT_OK)
        atomic_store_explicit(&s->handler, h.idx + 1u, memory_order_relaxed);
    return st;
}

/* The program finishes its requests before the endpoint; a request left
   keeps the context, said here. */
static void tg_close(flit_ep_t *ep, void *state)
{
    (void)ep;
    struct tg_state *s = state;
    flit_status st = fl_tagged_ctx_destroy(fl_tagged_ctx_of(s->t));
    if (st != FLIT_OK)
        flit_log(FLIT_LOG_WARN,
                 "tagged: the endpoint is destroyed before its context could be (%s): "
                 "its memory is kept",
                 st == FLIT_ERR_AGAIN ? "requests still outstanding: wait or cancel each "
                                        "first"
                                      : flit_strerror(st));
}

static void tg_dump(const void *state, flit_layer_dump_t *d)
{
    struct tg_state *s = (void *)state; /* atomics are read, never written */
    uint32_t h = atomic_load_explicit(&s->handler, memory_order_relaxed);
    if (h)
        flit_layer_dump_line(d, "context on stream handler %u", h - 1);
}

static const flit_layer_counter_t tg_counters[] = {
    {"arrived", offsetof(struct tg_state, ctr.arrived), "messages arrived (a whole tag)"},
    {"unexpected", offsetof(struct tg_state, ctr.unexpected),
     "of them, before their receive was posted"},
    {"malformed", offsetof(struct tg_state, ctr.malformed),
     "messages without a whole tag, dropped"},
    {"lost", offsetof(struct tg_state, ctr.lost),
     "unexpected messages dropped for want of any memory"},
};

const flit_layer_t flit_tagged_layer = {
    .version = FLIT_LAYER_VERSION,
    .name = "tagged",
    .flags = FLIT_LAYER_ON_REQUEST, /* its open takes a handler, collectively */
    .state_size = sizeof(struct tg_state),
    .open = tg_open,
    .close = tg_close,
    .counters = tg_counters,
    .ncounters = sizeof tg_counters / sizeof tg_counters[0],
    .dump = tg_dump,
};

flit_status flit_tagged_open(flit_ep_t *ep, flit_tagged_t **out)
{
    void *state;
    if (!out)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = flit_layer_state(ep, &flit_tagged_layer, &state);
    if (st != FLIT_OK)
        return st == FLIT_ERR_CLOSED ? FLIT_ERR_INVALID_ARG : st;
    *out = ((struct tg_state *)state)->t;
    return FLIT_OK;
}
