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

static void am_stats(const void *state, flit_stats_t *out)
{
    const struct fl_am_ep *a = state;
    for (int k = 0; k < FLIT_STAT_KINDS; k++) {
        out->sent_msgs[k] = FL_READ(a->sent_msgs[k]);
        out->sent_bytes[k] = FL_READ(a->sent_bytes[k]);
        out->recv_msgs[k] = FL_READ(a->recv_msgs[k]);
        out->recv_bytes[k] = FL_READ(a->recv_bytes[k]);
    }
    out->returned_to_us = FL_READ(a->returned_to_us);
    out->returned_by_us = FL_READ(a->returned_by_us);
    out->long_direct = FL_READ(a->long_direct);
}

static void am_report(const flit_stats_t *s, struct fl_report *r)
{
    static const char *const kind[FLIT_STAT_KINDS] = {
        "req short", "req medium", "req long", "rep short", "rep medium", "rep long",
    };
    for (int k = 0; k < FLIT_STAT_KINDS; k++)
        if (s->sent_msgs[k] || s->recv_msgs[k])
            fl_report_line(r, "  %-10s sent %llu msgs %llu B, received %llu msgs %llu B",
                           kind[k], (unsigned long long)s->sent_msgs[k],
                           (unsigned long long)s->sent_bytes[k],
                           (unsigned long long)s->recv_msgs[k],
                           (unsigned long long)s->recv_bytes[k]);
    if (s->long_direct)
        fl_report_line(r, "  long payloads put straight into the segment %llu",
                       (unsigned long long)s->long_direct);
    if (s->returned_to_us || s->returned_by_us)
        fl_report_line(r, "  messages returned to us %llu, returned by us %llu",
                       (unsigned long long)s->returned_to_us,
                       (unsigned long long)s->returned_by_us);
}

static uint32_t am_handlers_used(const void *state, uint32_t below)
{
    const struct fl_am_ep *a = state;
    uint32_t n = below;
    while (n && !a->handlers[n - 1].fn)
        n--;
    return n;
}

struct fl_layer fl_am_layer = {
    .name = "am",
    .state_size = sizeof(struct fl_am_ep),
    .init = am_init,
    .ep_open = am_open,
    .ep_close = am_close,
    .stats = am_stats,
    .report = am_report,
    .handlers_used = am_handlers_used,
};
