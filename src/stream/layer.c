/* SPDX-License-Identifier: BSD-3-Clause */
/* The stream layer as the core sees it (core/layer.h). */
#include <stdlib.h>

#include "stream/stream.h"

struct fl_st_table fl_st_in_table = {.lock = PTHREAD_MUTEX_INITIALIZER};
struct fl_st_table fl_st_out_table = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void **next_of(void *slot, size_t next_off)
{
    return (void **)((uint8_t *)slot + next_off);
}

/* A new slot of t: the next of its chunk, a new chunk when that is full. */
static void *slot_new(struct fl_st_table *t, size_t size, size_t value_off,
                      uintptr_t kind)
{
    uint32_t i = t->made;
    if (i == (uint32_t)FL_ST_CHUNKS * FL_ST_CHUNK)
        return NULL;
    uint8_t *c =
        atomic_load_explicit(&t->chunk[i >> FL_ST_CHUNK_BITS], memory_order_relaxed);
    if (!c) {
        if (!(c = calloc(FL_ST_CHUNK, size)))
            return NULL;
        atomic_store_explicit(&t->chunk[i >> FL_ST_CHUNK_BITS], c, memory_order_release);
    }
    t->made++;
    uint8_t *e = c + (i & (FL_ST_CHUNK - 1)) * size;
    atomic_store_explicit((_Atomic uintptr_t *)(e + value_off),
                          1u | kind | (uintptr_t)i << 2, memory_order_release);
    return e;
}

void *fl_st_take(struct fl_st_table *t, size_t size, size_t value_off, size_t next_off,
                 uintptr_t kind)
{
    pthread_mutex_lock(&t->lock);
    void *e = t->free;
    if (e)
        t->free = *next_of(e, next_off);
    else
        e = slot_new(t, size, value_off, kind);
    pthread_mutex_unlock(&t->lock);
    return e;
}

void fl_st_give(struct fl_st_table *t, void *list, size_t next_off)
{
    if (!list)
        return;
    void *last = list;
    while (*next_of(last, next_off))
        last = *next_of(last, next_off);
    pthread_mutex_lock(&t->lock);
    *next_of(last, next_off) = t->free;
    t->free = list;
    pthread_mutex_unlock(&t->lock);
}

static void stream_init(void)
{
    fl_op_register(FL_OP_STREAM, fl_stream_recv_packet, fl_stream_back);
}

flit_status fl_stream_ep_open(struct flit_ep *ep, void *state)
{
    struct fl_stream_ep *se = state;
    se->handlers = calloc(ep->handler_count, sizeof *se->handlers);
    se->active = calloc(ep->size, sizeof *se->active);
    se->next_sid = calloc(ep->size, sizeof *se->next_sid);
    se->pull_to = calloc(ep->size, sizeof *se->pull_to);
    se->rates = calloc(ep->size, sizeof *se->rates);
    se->park_lock_ok = pthread_mutex_init(&se->park_lock, NULL) == 0;
    if (!se->park_lock_ok)
        return FLIT_ERR_SYSTEM;
    return se->handlers && se->active && se->next_sid && se->pull_to && se->rates
               ? FLIT_OK
               : FLIT_ERR_NO_MEMORY;
}

void fl_stream_ep_close(struct flit_ep *ep, void *state)
{
    struct fl_stream_ep *se = state;
    if (se->active)
        for (uint32_t r = 0; r < ep->size; r++)
            fl_stream_end_all(ep, r, FLIT_ERR_FINALIZED);
    /* Their handles stay checkable: the slots go back, never freed. */
    fl_st_give(&fl_st_in_table, se->free_in, offsetof(struct fl_st_in, next));
    fl_st_give(&fl_st_out_table, se->free_out, offsetof(struct fl_st_out, next));
    se->free_in = NULL;
    se->free_out = NULL;
    free(se->handlers);
    free(se->active);
    free(se->next_sid);
    free(se->pull_to);
    if (se->rates)
        for (uint32_t r = 0; r < ep->size; r++)
            free(se->rates[r]);
    free(se->rates);
    if (se->park_lock_ok)
        pthread_mutex_destroy(&se->park_lock);
}

void fl_stream_peer_down(struct flit_ep *ep, void *state, uint32_t rank)
{
    (void)state;
    fl_stream_end_all(ep, rank, FLIT_ERR_PEER_DOWN);
}

static uint32_t stream_handlers_used(const void *state, uint32_t below)
{
    const struct fl_stream_ep *se = state;
    uint32_t n = below;
    while (n && !se->handlers[n - 1].fn)
        n--;
    return n;
}

#define STREAM_COUNTER(field, kind, doc)                                                 \
    FL_COUNTER(struct fl_stream_ep, field, #field, kind, doc)
static const struct fl_counter_desc stream_counters[] = {
    STREAM_COUNTER(sent_msgs, FLIT_COUNTER_COUNT, "stream messages sent"),
    STREAM_COUNTER(sent_bytes, FLIT_COUNTER_BYTES, "stream bytes sent"),
    STREAM_COUNTER(recv_msgs, FLIT_COUNTER_COUNT, "stream messages received"),
    STREAM_COUNTER(recv_bytes, FLIT_COUNTER_BYTES, "stream bytes received"),
    STREAM_COUNTER(fibers, FLIT_COUNTER_COUNT, "handlers that got a stack of their own"),
    STREAM_COUNTER(offers, FLIT_COUNTER_COUNT,
                   "places our handlers offered their senders in our segment"),
    STREAM_COUNTER(placed_bytes, FLIT_COUNTER_BYTES,
                   "stream bytes we wrote straight into a receiver's segment"),
    STREAM_COUNTER(pulled_msgs, FLIT_COUNTER_COUNT,
                   "stream messages we pulled from their sender's memory (one copy)"),
    STREAM_COUNTER(pulled_bytes, FLIT_COUNTER_BYTES,
                   "stream bytes we pulled from their sender's memory"),
    STREAM_COUNTER(pull_refused, FLIT_COUNTER_COUNT,
                   "pulls that failed: the rest of the message came in packets"),
    STREAM_COUNTER(pull_declined, FLIT_COUNTER_COUNT,
                   "messages offered pulled that we asked for in packets instead, to "
                   "measure the rings or because they were cheaper"),
    {NULL, NULL, 0, 0, NULL},
};
#undef STREAM_COUNTER

struct fl_layer fl_stream_layer = {
    .name = "stream",
    .state_size = sizeof(struct fl_stream_ep),
    .init = stream_init,
    .ep_open = fl_stream_ep_open,
    .ep_close = fl_stream_ep_close,
    .peer_down = fl_stream_peer_down,
    .counters = stream_counters,
    .handlers_used = stream_handlers_used,
};
