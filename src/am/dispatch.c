/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side of Active Messages: checks each message against the
 * endpoint (tag, handler, segment), runs its handler exactly once, or sends
 * it back to its sender with the reason. Also returned messages coming back,
 * and messages reclaimed from a dead peer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am/am.h"
#include "util/log.h"

/* Handler context: what runs here may reply (requests) or nothing. The
   slot's generation turns odd: its value is the handler's token (am.h). */
static struct fl_token *token_push(struct flit_ep *ep, uint32_t src, bool no_send)
{
    struct fl_token_pool *p = fl_am_of(ep)->tokens;
    struct fl_token *t = &p->slot[p->next++ % FL_TOKEN_POOL];
    uintptr_t v = atomic_load_explicit(&t->value, memory_order_relaxed);
    for (unsigned tries = 1; __builtin_expect(v & FL_TOKEN_GEN_ONE, 0); tries++) {
        if (tries == FL_TOKEN_POOL) { /* live ones are a handful at most */
            fl_error("endpoint %u: %u handlers running at once; is a "
                     "single-threaded endpoint used by several threads?",
                     ep->index, FL_TOKEN_POOL);
            abort();
        }
        t = &p->slot[p->next++ % FL_TOKEN_POOL];
        v = atomic_load_explicit(&t->value, memory_order_relaxed);
    }
    t->ep = ep;
    t->src = src;
    t->no_send = no_send;
    t->replied = 0;
    atomic_store_explicit(&t->value, v + FL_TOKEN_GEN_ONE, memory_order_release);
    fl_handler_depth++;
    return t;
}

/* The handler returned: its token is stale from now on. */
static void token_pop(struct flit_ep *ep, struct fl_token *t)
{
    (void)ep;
    fl_handler_depth--;
    uintptr_t v = atomic_load_explicit(&t->value, memory_order_relaxed);
    atomic_store_explicit(&t->value, v + FL_TOKEN_GEN_ONE, memory_order_release);
}

static flit_am_kind kind_of(const struct fl_am_msg *m)
{
    if (m->op == FL_OP_AM_SHORT)
        return FLIT_AM_SHORT;
    return m->op == FL_OP_AM_MEDIUM ? FLIT_AM_MEDIUM : FLIT_AM_LONG;
}

/*
 * Sends a refused message back on the reply lane: a RETURN header with the
 * reason, then the refused packet. For a long message only its header goes
 * back (as a LONG), never the payload.
 */
void fl_am_return_packet(struct flit_ep *ep, uint32_t src, const void *pkt, size_t len,
                         flit_status reason)
{
    FL_COUNT(fl_am_of(ep)->returned_by_us, 1);
    if (fl_peer_is_down(&ep->peers[src]))
        return;
    struct fl_am_msg r = {.op = FL_OP_RETURN,
                          .flags = FL_AMF_REPLY,
                          .aux = (uint16_t)reason,
                          .payload_len = len};
    size_t hl = fl_am_hdr_len(FL_OP_RETURN, 0);
    /* As a handler would: a blocked send polls only reply lanes. Inside, the
       ring we read pkt from is busy, so pkt stays valid. */
    fl_handler_depth++;
    void *out;
    flit_status st = fl_ep_reserve(ep, src, FL_LANE_REP, hl + len, 0, &out);
    if (st == FLIT_OK) {
        memcpy((uint8_t *)out + hl, pkt, len); /* the header last (fl_ep_reserve) */
        fl_am_encode(out, &r, NULL);
        fl_ep_commit(ep, src, FL_LANE_REP, out, hl + len, 0);
    }
    fl_handler_depth--;
    if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
        fl_error("cannot return a message to rank %u: %s", src, flit_strerror(st));
}

static void send_back(struct flit_ep *ep, uint32_t src, const struct fl_am_msg *m,
                      void *pkt, size_t len, flit_status reason)
{
    uint8_t inner[FL_AM_MAX_HDR];
    if (m->op == FL_OP_AM_FRAG) {
        struct fl_am_msg l = *m;
        l.op = FL_OP_AM_LONG;
        l.flags = m->flags & FL_AMF_REPLY;
        l.piece = 0;
        l.payload_len = 0;
        len = fl_am_encode(inner, &l, m->argv);
        pkt = inner;
    }
    fl_debug("returning %s from rank %u (handler %u): %s",
             flit_am_kind_name(kind_of(m), m->flags & FL_AMF_REPLY), src, m->handler,
             flit_strerror(reason));
    fl_am_return_packet(ep, src, pkt, len, reason);
}

static flit_status *frag_error(struct flit_ep *ep, uint32_t src, unsigned lane)
{
    return &fl_am_of(ep)->frag_error[(size_t)src * FL_LANES + lane];
}

/* A piece of a long payload: land it if it may land, remember if not. */
static void land_piece(struct flit_ep *ep, uint32_t src, unsigned lane,
                       const struct fl_am_msg *m)
{
    flit_status *err = frag_error(ep, src, lane);
    if (*err != FLIT_OK)
        return;
    if (m->tag != ep->tag)
        *err = FLIT_ERR_BAD_TAG;
    else if (ep->seg_size == 0)
        *err = FLIT_ERR_NO_SEGMENT;
    else if (m->base > ep->seg_size || m->total > ep->seg_size - m->base)
        *err = FLIT_ERR_BOUNDS;
    else if (m->payload_len)
        memcpy((uint8_t *)ep->seg + m->base + m->piece, m->payload, m->payload_len);
}

/* What the destination has to say against a message, FLIT_OK if nothing. */
static flit_status judge(struct flit_ep *ep, const struct fl_am_msg *m)
{
    if (m->tag != ep->tag)
        return FLIT_ERR_BAD_TAG;
    if (m->handler >= ep->handler_count)
        return FLIT_ERR_BAD_HANDLER;
    if (!fl_am_of(ep)->handlers[m->handler].fn)
        return FLIT_ERR_NO_HANDLER;
    if (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG) {
        if (ep->seg_size == 0)
            return FLIT_ERR_NO_SEGMENT;
        if (m->base > ep->seg_size || m->total > ep->seg_size - m->base)
            return FLIT_ERR_BOUNDS;
    }
    return FLIT_OK;
}

/* Runs handler slot h for a message of kind k from src, counted. */
static void invoke(struct flit_ep *ep, uint32_t src, unsigned k, bool is_reply,
                   uint16_t handler, void *buf, size_t nbytes, const uint32_t *argv,
                   unsigned nargs)
{
    struct fl_am_ep *a = fl_am_of(ep);
    FL_COUNT(a->recv_msgs[k], 1);
    if (nbytes)
        FL_COUNT(a->recv_bytes[k], nbytes);
    FL_COUNT(ep->peers[src].recv, 1);
    const struct fl_handler_slot *h = &a->handlers[handler];
    struct fl_token *t = token_push(ep, src, is_reply);
    h->fn((flit_token_t *)atomic_load_explicit(&t->value, memory_order_relaxed), buf,
          nbytes, argv, nargs, h->user);
    token_pop(ep, t);
}

static void run_handler(struct flit_ep *ep, uint32_t src, const struct fl_am_msg *m)
{
    bool is_reply = m->flags & FL_AMF_REPLY;
    void *buf = NULL;
    size_t nbytes = 0;
    if (m->op == FL_OP_AM_MEDIUM) {
        buf = m->payload;
        nbytes = m->payload_len;
    } else if (m->op != FL_OP_AM_SHORT) {
        buf = (uint8_t *)ep->seg + m->base;
        nbytes = m->total;
    }
    invoke(ep, src, fl_am_stat(kind_of(m), is_reply), is_reply, m->handler, buf, nbytes,
           m->argv, m->nargs);
}

/*
 * A short message the endpoint takes, the latency path: judged from its
 * first word, its tag and its handler's slot, and run, with no decode.
 * False, with nothing done, where the whole path must look at it (another
 * kind of message, or a short one it would refuse or send back).
 */
static bool recv_short(struct flit_ep *ep, uint32_t src, unsigned lane,
                       const uint8_t *pkt, size_t len)
{
    uint64_t w = fl_get64(pkt);
    const uint32_t *argv = fl_am_short_args(pkt, len, w);
    uint16_t handler = (uint16_t)(w >> 32);
    bool is_reply = (w >> 24) & FL_AMF_REPLY;
    if (!argv || is_reply != (lane == FL_LANE_REP) || fl_get64(pkt + 12) != ep->tag ||
        handler >= ep->handler_count || !fl_am_of(ep)->handlers[handler].fn)
        return false;
    invoke(ep, src, fl_am_stat(FLIT_AM_SHORT, is_reply), is_reply, handler, NULL, 0, argv,
           (uint8_t)(w >> 16));
    return true;
}

void fl_am_recv(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    if (len >= FL_AM_BASE_HDR && recv_short(ep, src, lane, pkt, len))
        return;
    struct fl_am_msg m;
    if (fl_am_decode(pkt, len, &m) != FLIT_OK ||
        ((m.flags & FL_AMF_REPLY) != 0) != (lane == FL_LANE_REP)) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("refused a malformed packet from rank %u (%zu bytes)", src, len);
        return;
    }
    if (m.op == FL_OP_AM_FRAG) {
        land_piece(ep, src, lane, &m);
        if (!(m.flags & FL_AMF_FINAL))
            return;
    }
    flit_status why = judge(ep, &m);
    if (m.op == FL_OP_AM_FRAG) {
        flit_status *err = frag_error(ep, src, lane);
        if (why == FLIT_OK)
            why = *err;
        *err = FLIT_OK; /* the next long starts clean */
    }
    if (why != FLIT_OK)
        send_back(ep, src, &m, pkt, len, why);
    else
        run_handler(ep, src, &m);
}

/* ---- returned messages ---- */

static void default_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)ep;
    (void)user;
    fl_error("message returned by rank %u: %s (%s); handler %u, %s, %u args, "
             "%zu bytes%s",
             r->peer.idx, flit_strerror(r->reason), flit_status_name(r->reason),
             r->handler.idx, flit_am_kind_name(r->kind, r->is_reply), r->nargs, r->nbytes,
             r->kind == FLIT_AM_LONG ? " (long)" : "");
    fl_error("no returned-message handler installed: aborting");
    abort();
}

void fl_am_returned(struct flit_ep *ep, uint32_t peer, const flit_returned_t *r)
{
    struct fl_am_ep *a = fl_am_of(ep);
    FL_COUNT(a->returned_to_us, 1);
    flit_returned_fn fn = a->returned_fn ? a->returned_fn : default_returned;
    struct fl_token *t = token_push(ep, peer, true);
    fn(ep, r, a->returned_user);
    token_pop(ep, t);
}

/* Hands one of our own packets (decoded) to the returned-message handler. */
static void deliver_returned(struct flit_ep *ep, uint32_t peer, const struct fl_am_msg *m,
                             flit_status reason)
{
    flit_returned_t r = {
        .reason = reason,
        .peer = flit_rank(peer),
        .handler = flit_handler(m->handler),
        .kind = kind_of(m),
        .is_reply = (m->flags & FL_AMF_REPLY) != 0,
        .nargs = m->nargs,
        .args = m->argv,
        .payload = m->op == FL_OP_AM_MEDIUM ? m->payload : NULL,
        .nbytes = m->op == FL_OP_AM_MEDIUM ? m->payload_len : m->total,
        .offset = m->base,
    };
    fl_am_returned(ep, peer, &r);
}

/*
 * One of our AM packets came back. Refused, it is a whole message (a long
 * one as its header). Reclaimed, it may be a piece: pieces before the last
 * carry nothing the program sent on its own.
 */
bool fl_am_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                flit_status reason, bool reclaimed)
{
    struct fl_am_msg m;
    if (fl_am_decode(pkt, len, &m) != FLIT_OK)
        return false;
    if (m.op == FL_OP_AM_FRAG && (!reclaimed || !(m.flags & FL_AMF_FINAL)))
        return reclaimed;
    if (m.op == FL_OP_RETURN)
        return reclaimed; /* a refusal of theirs: nothing of ours to tell */
    deliver_returned(ep, peer, &m, reason);
    return true;
}

void fl_am_recv_return(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                       size_t len)
{
    struct fl_am_msg outer;
    bool ok = lane == FL_LANE_REP && fl_am_decode(pkt, len, &outer) == FLIT_OK &&
              fl_packet_back(ep, src, outer.payload, outer.payload_len,
                             (flit_status)outer.aux, false);
    if (!ok) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("refused a malformed returned message from rank %u", src);
    }
}

/* ---- registration ---- */

flit_status flit_am_register(flit_ep_t *ep, flit_handler_t h, flit_am_handler_fn fn,
                             void *user)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (h.idx >= ep->handler_count) {
        st = FLIT_ERR_BAD_HANDLER;
    } else {
        fl_am_of(ep)->handlers[h.idx].fn = fn;
        fl_am_of(ep)->handlers[h.idx].user = fn ? user : NULL;
    }
    fl_ep_leave(ep);
    return st;
}

flit_status flit_am_set_returned_handler(flit_ep_t *ep, flit_returned_fn fn, void *user)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    fl_am_of(ep)->returned_fn = fn;
    fl_am_of(ep)->returned_user = user;
    fl_ep_leave(ep);
    return FLIT_OK;
}
