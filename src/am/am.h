/* SPDX-License-Identifier: BSD-3-Clause */
/* The Active Message layer's internal interface. */
#ifndef FL_AM_AM_H
#define FL_AM_AM_H

#include "am/wire.h"
#include "core/ep.h"

/*
 * Tokens. Each endpoint takes a pool of FL_TOKEN_POOL slots; a handler's
 * token is the slot's current value, not its address: bit 0 set (never an
 * address), the slot's index, the pool's number and the slot's generation
 * (odd while its handler runs). Running a handler bumps the generation to
 * odd, its return to even, so a token kept past its handler matches its
 * slot never again and is refused (FLIT_ERR_BAD_TOKEN), even once the slot
 * serves a later handler. Pools are never freed: an ended endpoint's pool
 * goes to the next endpoint with its generations going on, so a value is
 * checked without reading freed memory (fl_token_get: a bound-free index,
 * a load and a compare). The generation has 43 bits where pointers are
 * 64-bit (it never wraps) and 17 where they are 32-bit (a stale token could
 * match again after 2^16 handlers of its slot). At most a few are live at
 * once (request handler -> blocked reply -> reply handler is 2 deep).
 */
#define FL_TOKEN_SLOT_BITS 8u
#define FL_TOKEN_POOL      (1u << FL_TOKEN_SLOT_BITS)
#if UINTPTR_MAX > 0xffffffffu
#define FL_TOKEN_POOL_BITS 12u /* endpoints open at once */
#else
#define FL_TOKEN_POOL_BITS 6u
#endif
#define FL_TOKEN_POOLS      (1u << FL_TOKEN_POOL_BITS)
#define FL_TOKEN_POOL_SHIFT (1u + FL_TOKEN_SLOT_BITS)
#define FL_TOKEN_GEN_SHIFT  (FL_TOKEN_POOL_SHIFT + FL_TOKEN_POOL_BITS)
#define FL_TOKEN_GEN_ONE    ((uintptr_t)1 << FL_TOKEN_GEN_SHIFT)

struct fl_handler_slot {
    flit_am_handler_fn fn;
    void *user;
};

/* One slot of a pool: what flit_token_t values name. */
struct fl_token {
    /* The token's value; its generation odd while its handler runs.
       Written only by the thread running the handler (release), read by
       any (acquire): plain moves on x86. */
    _Atomic uintptr_t value;
    struct flit_ep *ep;
    uint32_t src;
    uint8_t no_send; /* reply / returned-message handler */
    uint8_t replied;
};

struct fl_token_pool {
    struct fl_token slot[FL_TOKEN_POOL];
    unsigned next;                   /* where the search for a free one starts */
    struct fl_token_pool *free_next; /* pools no endpoint holds (layer.c) */
};

/* Every pool made, by number; an entry once set stays (layer.c). */
extern struct fl_token_pool *_Atomic fl_token_pools[FL_TOKEN_POOLS];

/* The live token's slot a value names; NULL for any other value (stale,
   NULL, forged). Reads only pools, which are never freed. */
static inline struct fl_token *fl_token_get(const flit_token_t *token)
{
    uintptr_t v = (uintptr_t)token;
    const uintptr_t live = 1u | FL_TOKEN_GEN_ONE;
    if (__builtin_expect((v & live) != live, 0))
        return NULL;
    struct fl_token_pool *p = atomic_load_explicit(
        &fl_token_pools[(v >> FL_TOKEN_POOL_SHIFT) & (FL_TOKEN_POOLS - 1)],
        memory_order_acquire);
    if (__builtin_expect(!p, 0))
        return NULL;
    struct fl_token *t = &p->slot[(v >> 1) & (FL_TOKEN_POOL - 1)];
    return atomic_load_explicit(&t->value, memory_order_acquire) == v ? t : NULL;
}

/* The layer's state on an endpoint (core/layer.h). */
struct fl_am_ep {
    struct fl_handler_slot *handlers; /* [ep->handler_count] */
    struct fl_token_pool *tokens;     /* this endpoint's, while it is open */
    flit_returned_fn returned_fn;
    void *returned_user;
    /* A long message arriving in pieces, per peer and lane: the reason to
       refuse it once its last piece arrives (FLIT_OK while fine). */
    flit_status *frag_error; /* [ep->size * FL_LANES] */
    fl_counter sent_msgs[FLIT_STAT_KINDS], sent_bytes[FLIT_STAT_KINDS];
    fl_counter recv_msgs[FLIT_STAT_KINDS], recv_bytes[FLIT_STAT_KINDS];
    fl_counter returned_to_us, returned_by_us;
    fl_counter long_direct; /* long payloads put straight into the segment */
};

extern struct fl_layer fl_am_layer;

static inline struct fl_am_ep *fl_am_of(const struct flit_ep *ep)
{
    return (struct fl_am_ep *)fl_ep_layer(ep, &fl_am_layer);
}

/*
 * Sends pkt (len bytes: one of src's packets, or its header) back to src
 * inside a returned message with the reason; counts it.
 */
void fl_am_return_packet(struct flit_ep *ep, uint32_t src, const void *pkt, size_t len,
                         flit_status reason);
/* Runs the returned-message handler for r (our message came back). */
void fl_am_returned(struct flit_ep *ep, uint32_t peer, const flit_returned_t *r);

/* Receive side (dispatch.c): AM packets, and returned messages. */
void fl_am_recv(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt, size_t len);
void fl_am_recv_return(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                       size_t len);
bool fl_am_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                flit_status reason, bool reclaimed);

/* Stats index of a message kind. */
static inline unsigned fl_am_stat(flit_am_kind kind, bool reply)
{
    return (unsigned)kind + (reply ? FLIT_STAT_REP_SHORT : FLIT_STAT_REQ_SHORT);
}

#endif /* FL_AM_AM_H */
