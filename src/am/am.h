/* SPDX-License-Identifier: BSD-3-Clause */
/* The Active Message layer's internal interface. */
#ifndef FL_AM_AM_H
#define FL_AM_AM_H

#include "am/wire.h"
#include "core/ep.h"

/* Tokens rotate through a pool, so a token kept past its handler is found
   dead (FLIT_ERR_BAD_TOKEN) rather than mistaken for a later handler's,
   unless exactly a multiple of the pool's size of handlers ran since. At
   most a few are live at once (request handler -> blocked reply -> reply
   handler is 2 deep). */
#define FL_TOKEN_POOL 256

struct fl_handler_slot {
    flit_am_handler_fn fn;
    void *user;
};

struct flit_token {
    struct flit_ep *ep;
    uint32_t src;
    uint8_t live;    /* its handler is running */
    uint8_t no_send; /* reply / returned-message handler */
    uint8_t replied;
};

/* The layer's state on an endpoint (core/layer.h). */
struct fl_am_ep {
    struct fl_handler_slot *handlers; /* [ep->handler_count] */
    struct flit_token tokens[FL_TOKEN_POOL];
    unsigned token_next; /* where the search for a free one starts */
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
