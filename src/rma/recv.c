/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RMA packets arriving: the owner judges and serves requests (imports,
 * puts in pieces, gets, notifications), the initiator takes answers (acks,
 * get data, import answers). Every request is judged here on its own,
 * whatever the sender claims: the region must be live, the sender allowed,
 * the access granted, the range inside the region; a refused access is
 * counted (rma_refused), answered with the reason, and touches nothing.
 */
#include <string.h>

#include "rma/rma.h"
#include "util/log.h"

flit_status fl_rma_send(struct flit_ep *ep, uint32_t dst, struct fl_rma_pkt *p,
                        const void *payload, unsigned flags)
{
    unsigned lane = fl_rma_lane(p->kind);
    size_t fixed = fl_rma_fixed_len(p);
    size_t extra = fixed == FL_RMA_HDR ? p->len : 0;
    void *pkt;
    flit_status st = fl_ep_reserve(ep, dst, lane, fixed + extra, flags, &pkt);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    if (extra) /* the payload first, the header last (fl_ep_reserve) */
        memcpy((uint8_t *)pkt + FL_RMA_HDR, payload, extra);
    fl_rma_encode(pkt, p);
    fl_ep_commit(ep, dst, lane, pkt, fixed + extra, flags);
    return FLIT_OK;
}

/* An answer sent from inside the packet handler: a wait for room polls
   only reply lanes, as a handler's would (no chain of waits). */
static void answer(struct flit_ep *ep, uint32_t dst, struct fl_rma_pkt *p,
                   const void *payload)
{
    fl_handler_depth++;
    flit_status st = fl_rma_send(ep, dst, p, payload, 0);
    fl_handler_depth--;
    if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
        fl_error("rma: cannot answer rank %u: %s", dst, flit_strerror(st));
}

void fl_rma_notify(struct flit_ep *ep, uint64_t id, uint32_t from, uint64_t off,
                   uint64_t len)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (!r->notify_fn)
        return;
    FL_COUNT(r->notifications, 1);
    fl_handler_depth++; /* a handler: no blocking calls from it */
    r->notify_fn(ep, id, flit_rank(from), off, (size_t)len, r->notify_user);
    fl_handler_depth--;
}

static void refused(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p,
                    flit_status why)
{
    FL_COUNT(fl_rma_of(ep)->refused, 1);
    fl_debug("rma: refused kind %u from rank %u on region %llx [%llu, +%llu): %s",
             p->kind, src, (unsigned long long)p->id, (unsigned long long)p->base,
             (unsigned long long)p->total, flit_status_name(why));
}

/* ---- the owner ---- */

/*
 * A piece of a put. The pieces of one put arrive together and in order
 * (FIRST .. LAST); each is judged, and lands only while its put has not
 * been refused. The last one is answered with the put's verdict, then the
 * notification runs.
 */
static void recv_put(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct fl_rma_peer *rp = &fl_rma_of(ep)->peers[src];
    if (p->flags & FL_RMAF_FIRST) {
        rp->put_op = p->op;
        rp->put_err = FLIT_OK;
    } else if (p->op != rp->put_op && rp->put_err == FLIT_OK) {
        rp->put_op = p->op; /* a piece of no put in progress */
        rp->put_err = FLIT_ERR_BAD_PACKET;
        refused(ep, src, p, FLIT_ERR_BAD_PACKET);
    }
    if (rp->put_err == FLIT_OK) {
        struct flit_rma_region *g;
        flit_status why =
            fl_rma_judge(ep, src, p->id, FLIT_RMA_WRITE, p->base, p->total, &g);
        if (why == FLIT_OK) {
            memcpy(g->addr + p->base + p->piece, p->payload, p->len);
        } else {
            rp->put_err = why;
            refused(ep, src, p, why);
        }
    }
    if (!(p->flags & FL_RMAF_LAST))
        return;
    flit_status verdict = rp->put_err;
    if ((p->flags & FL_RMAF_ACK) || verdict != FLIT_OK) {
        struct fl_rma_pkt a = {
            .kind = FL_RMA_ACK, .op = p->op, .id = p->id, .status = (uint16_t)verdict};
        answer(ep, src, &a, NULL);
    }
    if (verdict == FLIT_OK && (p->flags & FL_RMAF_NOTIFY))
        fl_rma_notify(ep, p->id, src, p->base, p->total);
}

/* A get: its data straight from the region into the answers. */
static void recv_get(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct flit_rma_region *g;
    struct fl_rma_pkt d = {.kind = FL_RMA_GET_DATA,
                           .op = p->op,
                           .id = p->id,
                           .base = p->base,
                           .total = p->total,
                           .flags = FL_RMAF_LAST};
    flit_status why = fl_rma_judge(ep, src, p->id, FLIT_RMA_READ, p->base, p->total, &g);
    if (why != FLIT_OK) {
        refused(ep, src, p, why);
        d.status = (uint16_t)why;
        d.base = d.total = 0;
        answer(ep, src, &d, NULL);
        return;
    }
    size_t chunk = fl_ep_piece_size(ep, src, FL_RMA_HDR);
    const uint8_t *from = g->addr + p->base;
    uint64_t off = 0;
    flit_status st;
    fl_handler_depth++; /* as in answer(): waits poll reply lanes only */
    do {
        size_t n = p->total - off < chunk ? (size_t)(p->total - off) : chunk;
        bool last = off + n == p->total;
        d.piece = off;
        d.len = (uint32_t)n;
        d.flags = last ? FL_RMAF_LAST : 0;
        st = fl_rma_send(ep, src, &d, from + off, last ? 0 : FLIT_AM_MORE);
        off += n;
    } while (st == FLIT_OK && off < p->total);
    fl_handler_depth--;
    if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
        fl_error("rma: cannot answer rank %u's get: %s", src, flit_strerror(st));
}

/* A put that went straight into our memory asks for its notification. */
static void recv_notify(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct flit_rma_region *g;
    flit_status why = fl_rma_judge(ep, src, p->id, FLIT_RMA_WRITE, p->base, p->total, &g);
    if (why == FLIT_OK)
        fl_rma_notify(ep, p->id, src, p->base, p->total);
    else
        refused(ep, src, p, why);
}

/* ---- the initiator ---- */

/* A refusal of a put nobody tracks: for the next flush, and every import of
   that region learns it is gone. */
static void untracked_refused(struct flit_ep *ep, uint32_t src,
                              const struct fl_rma_pkt *p)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (r->peers[src].sticky == FLIT_OK)
        r->peers[src].sticky = (flit_status)p->status;
    if (p->status != FLIT_ERR_REVOKED)
        return;
    for (uint32_t i = 0; i < r->remotes.n; i++) {
        struct flit_rma_remote *rm = (struct flit_rma_remote *)r->remotes.all[i];
        if (rm->obj.live && rm->owner == src && rm->id == p->id)
            rm->revoked = true;
    }
}

static void recv_ack(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    if (p->op == 0 && p->status != FLIT_OK) {
        untracked_refused(ep, src, p);
        return;
    }
    struct flit_rma_op *op = fl_rma_op_find(ep, p->op, src, FL_RMA_OP_PUT);
    if (!op) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rma: rank %u acknowledged a put nobody made", src);
        return;
    }
    fl_rma_op_complete(ep, op, (flit_status)p->status);
}

static void recv_data(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct flit_rma_op *op = fl_rma_op_find(ep, p->op, src, FL_RMA_OP_GET);
    if (!op) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rma: rank %u sent data for a get nobody made", src);
        return;
    }
    if (p->status != FLIT_OK) {
        fl_rma_op_complete(ep, op, (flit_status)p->status);
        return;
    }
    if (p->total != op->len || p->piece != op->got) {
        /* Not the answer to this get: nothing of it lands. */
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_rma_op_complete(ep, op, FLIT_ERR_BAD_PACKET);
        return;
    }
    memcpy(op->dst + p->piece, p->payload, p->len);
    op->got += p->len;
    if (p->flags & FL_RMAF_LAST)
        fl_rma_op_complete(ep, op, FLIT_OK);
}

/* Every request before it on the lane was judged and answered. */
static void recv_flush(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct fl_rma_pkt a = {.kind = FL_RMA_FLUSH_REP, .op = p->op};
    answer(ep, src, &a, NULL);
}

static void recv_flushed(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct flit_rma_op *op = fl_rma_op_find(ep, p->op, src, FL_RMA_OP_FLUSH);
    if (!op) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rma: rank %u answered a flush nobody asked for", src);
        return;
    }
    fl_rma_op_complete(ep, op, FLIT_OK);
}

/* The owner withdraws region id's key: our imports of it through the key
   are revoked, and we say so. Operations are calls of their own, never
   under a handler: none through the key is in progress now. */
static void recv_withdraw(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    for (uint32_t i = 0; i < r->remotes.n; i++) {
        struct flit_rma_remote *rm = (struct flit_rma_remote *)r->remotes.all[i];
        if (rm->obj.live && rm->owner == src && rm->id == p->id &&
            rm->path == FL_RMA_PATH_EXPOSED)
            rm->revoked = true;
    }
    struct fl_rma_pkt a = {.kind = FL_RMA_WITHDRAWN, .id = p->id};
    answer(ep, src, &a, NULL);
}

void fl_rma_recv(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    struct fl_rma_pkt p;
    if (!fl_rma_of(ep) || fl_rma_decode(pkt, len, lane, &p) != FLIT_OK) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rma: refused a malformed packet from rank %u (%zu bytes)", src, len);
        return;
    }
    switch (p.kind) {
    case FL_RMA_IMPORT_REQ:
        fl_handler_depth++;
        fl_rma_answer_import(ep, src, &p);
        fl_handler_depth--;
        break;
    case FL_RMA_IMPORT_REP:
        fl_rma_import_answered(ep, src, &p);
        break;
    case FL_RMA_PUT:
        recv_put(ep, src, &p);
        break;
    case FL_RMA_ACK:
        recv_ack(ep, src, &p);
        break;
    case FL_RMA_GET_REQ:
        recv_get(ep, src, &p);
        break;
    case FL_RMA_GET_DATA:
        recv_data(ep, src, &p);
        break;
    case FL_RMA_NOTIFY:
        recv_notify(ep, src, &p);
        break;
    case FL_RMA_FLUSH_REQ:
        recv_flush(ep, src, &p);
        break;
    case FL_RMA_WITHDRAW:
        recv_withdraw(ep, src, &p);
        break;
    case FL_RMA_WITHDRAWN:
        fl_rma_withdrawn(ep, src, p.id);
        break;
    default: /* FL_RMA_FLUSH_REP: the decoder knows no other kind */
        recv_flushed(ep, src, &p);
        break;
    }
}
