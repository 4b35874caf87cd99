/* SPDX-License-Identifier: BSD-3-Clause */
/* The Active Message layer as the core sees it (core/layer.h). */
#include <pthread.h>
#include <stdlib.h>

#include "am/am.h"

static void am_init(void)
{
    fl_op_register(FL_OP_AM_SHORT, fl_am_recv, fl_am_back);
    fl_op_register(FL_OP_AM_MEDIUM, fl_am_recv, fl_am_back);
    fl_op_register(FL_OP_AM_LONG, fl_am_recv, fl_am_back);
    fl_op_register(FL_OP_AM_FRAG, fl_am_recv, fl_am_back);
    fl_op_register(FL_OP_RETURN, fl_am_recv_return, fl_am_back);
}

struct fl_token_pool *_Atomic fl_token_pools[FL_TOKEN_POOLS];

/* Pools no endpoint holds, and how many were made; under pools_lock. */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fl_token_pool *pools_free;
static unsigned pools_made;

/* A pool for a new endpoint: one an ended endpoint gave back (its
   generations go on), else a new one; NULL when FL_TOKEN_POOLS are out. */
static struct fl_token_pool *pool_take(void)
{
    pthread_mutex_lock(&pools_lock);
    struct fl_token_pool *p = pools_free;
    if (p) {
        pools_free = p->free_next;
    } else if (pools_made < FL_TOKEN_POOLS && (p = calloc(1, sizeof *p))) {
        uintptr_t base = 1u | (uintptr_t)pools_made << FL_TOKEN_POOL_SHIFT;
        for (uintptr_t i = 0; i < FL_TOKEN_POOL; i++)
            atomic_init(&p->slot[i].value, base | i << 1);
        atomic_store_explicit(&fl_token_pools[pools_made++], p, memory_order_release);
    }
    pthread_mutex_unlock(&pools_lock);
    return p;
}

/* Never freed: stale tokens of p stay checkable (am.h). */
static void pool_give_back(struct fl_token_pool *p)
{
    pthread_mutex_lock(&pools_lock);
    p->free_next = pools_free;
    pools_free = p;
    pthread_mutex_unlock(&pools_lock);
}

static flit_status am_open(struct flit_ep *ep, void *state)
{
    struct fl_am_ep *a = state;
    a->handlers = calloc(ep->handler_count, sizeof *a->handlers);
    a->frag_error = calloc((size_t)ep->size * FL_LANES, sizeof *a->frag_error);
    a->tokens = pool_take();
    return a->handlers && a->frag_error && a->tokens ? FLIT_OK : FLIT_ERR_NO_MEMORY;
}

static void am_close(struct flit_ep *ep, void *state)
{
    (void)ep;
    struct fl_am_ep *a = state;
    free(a->handlers);
    free(a->frag_error);
    if (a->tokens)
        pool_give_back(a->tokens);
}

static uint32_t am_handlers_used(const void *state, uint32_t below)
{
    const struct fl_am_ep *a = state;
    uint32_t n = below;
    while (n && !a->handlers[n - 1].fn)
        n--;
    return n;
}

#define AM_COUNTER(field, name, kind, doc)                                               \
    FL_COUNTER(struct fl_am_ep, field, name, kind, doc)
#define AM_KIND(k, i, what)                                                              \
    AM_COUNTER(sent_msgs[i], k "_sent", FLIT_COUNTER_COUNT, what " sent"),               \
        AM_COUNTER(sent_bytes[i], k "_sent_bytes", FLIT_COUNTER_BYTES,                   \
                   "payload bytes of " what " sent"),                                    \
        AM_COUNTER(recv_msgs[i], k "_received", FLIT_COUNTER_COUNT, what " received"),   \
        AM_COUNTER(recv_bytes[i], k "_received_bytes", FLIT_COUNTER_BYTES,               \
                   "payload bytes of " what " received")
static const struct fl_counter_desc am_counters[] = {
    AM_KIND("req_short", 0, "short requests"),
    AM_KIND("req_medium", 1, "medium requests"),
    AM_KIND("req_long", 2, "long requests"),
    AM_KIND("rep_short", 3, "short replies"),
    AM_KIND("rep_medium", 4, "medium replies"),
    AM_KIND("rep_long", 5, "long replies"),
    AM_COUNTER(returned_to_us, "returned_to_us", FLIT_COUNTER_COUNT,
               "our messages that came back"),
    AM_COUNTER(returned_by_us, "returned_by_us", FLIT_COUNTER_COUNT,
               "messages we refused and sent back"),
    AM_COUNTER(long_direct, "long_direct", FLIT_COUNTER_COUNT,
               "long payloads written straight into the destination's segment"),
    {NULL, NULL, 0, 0, NULL},
};
#undef AM_KIND
#undef AM_COUNTER

struct fl_layer fl_am_layer = {
    .name = "am",
    .state_size = sizeof(struct fl_am_ep),
    .init = am_init,
    .ep_open = am_open,
    .ep_close = am_close,
    .counters = am_counters,
    .handlers_used = am_handlers_used,
};
