/* SPDX-License-Identifier: BSD-3-Clause */
/* The toy layer (toy_layer.h): public headers only, as src/ layers on the
   public API. */
#include "toy_layer.h"

#include <flit/am.h>
#include <stdatomic.h>
#include <stddef.h>

struct toy_state {
    _Atomic uint64_t sent, seen, down; /* the counters */
    flit_handler_t h;
    int64_t burst;
    flit_ep_t *ep;
};

static atomic_uint closes;

static const flit_layer_setting_t toy_settings[] = {
    {"FLIT_TOY_BURST", 3, 1, 1000, "pings toy_ping_all sends each peer"},
    {"FLIT_TOY_FAIL_RANK", -1, -1, 1 << 20, "the rank whose open fails (-1: none)"},
};

static void on_ping(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)n, (void)args, (void)nargs;
    struct toy_state *s = user;
    atomic_fetch_add_explicit(&s->seen, 1, memory_order_relaxed);
}

static flit_status toy_open(flit_ep_t *ep, void *state)
{
    struct toy_state *s = state;
    s->ep = ep;
    flit_status st = flit_layer_setting(&toy_layer, "FLIT_TOY_BURST", &s->burst);
    if (st == FLIT_OK) /* collective: every rank opens the layer */
        st = flit_ep_reserve_handlers(ep, 1, &s->h);
    if (st == FLIT_OK)
        st = flit_am_register(ep, s->h, on_ping, s);
    int64_t fail = -1;
    if (st == FLIT_OK &&
        flit_layer_setting(&toy_layer, "FLIT_TOY_FAIL_RANK", &fail) == FLIT_OK &&
        fail == (int64_t)flit_job_rank().idx)
        st = FLIT_ERR_NO_MEMORY; /* after the collective part, as a late shortage */
    flit_log(FLIT_LOG_INFO, "toy: open on handler %u: %s", s->h.idx, flit_strerror(st));
    return st;
}

static void toy_close(flit_ep_t *ep, void *state)
{
    struct toy_state *s = state;
    (void)flit_am_register(ep, s->h, NULL, NULL);
    atomic_fetch_add(&closes, 1);
}

static void toy_peer_down(flit_ep_t *ep, void *state, flit_rank_t rank, flit_status why)
{
    (void)ep, (void)rank, (void)why;
    struct toy_state *s = state;
    atomic_fetch_add_explicit(&s->down, 1, memory_order_relaxed);
}

static void toy_dump(const void *state, flit_layer_dump_t *d)
{
    const struct toy_state *s = state;
    flit_layer_dump_line(d, "burst %lld on handler %u", (long long)s->burst, s->h.idx);
}

static const flit_layer_counter_t toy_counters[] = {
    {"sent", offsetof(struct toy_state, sent), "pings sent"},
    {"seen", offsetof(struct toy_state, seen), "pings received"},
    {"down", offsetof(struct toy_state, down), "peers reported down"},
};

const flit_layer_t toy_layer = {
    .version = FLIT_LAYER_VERSION,
    .name = "toy",
    .state_size = sizeof(struct toy_state),
    .open = toy_open,
    .close = toy_close,
    .peer_down = toy_peer_down,
    .settings = toy_settings,
    .nsettings = 2,
    .counters = toy_counters,
    .ncounters = 3,
    .dump = toy_dump,
};

static struct toy_state *state_of(flit_ep_t *ep)
{
    void *s;
    return flit_layer_state(ep, &toy_layer, &s) == FLIT_OK ? s : NULL;
}

flit_status toy_ping_all(flit_ep_t *ep)
{
    struct toy_state *s = state_of(ep);
    if (!s)
        return FLIT_ERR_INVALID_ARG;
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    for (uint32_t r = 0; r < n; r++)
        for (int64_t k = 0; k < s->burst && r != me; k++) {
            flit_status st = flit_am_short(ep, flit_rank(r), s->h, NULL, 0, 0);
            if (st != FLIT_OK)
                return st;
            atomic_fetch_add_explicit(&s->sent, 1, memory_order_relaxed);
        }
    return FLIT_OK;
}

uint64_t toy_seen(flit_ep_t *ep)
{
    struct toy_state *s = state_of(ep);
    return s ? atomic_load_explicit(&s->seen, memory_order_relaxed) : UINT64_MAX;
}

unsigned toy_closes(void)
{
    return atomic_load(&closes);
}
