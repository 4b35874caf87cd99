/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Puts and gets, on the initiator: its own checks against what the import
 * learned (nothing moves unless they pass), then the path the import
 * chose. Direct paths (self, mapping, the transport's one-sided put and
 * get) complete in the call; over packets the owner answers
 * (src/rma/recv.c).
 */
#include <string.h>

#include "core/pieces.h"
#include "core/progress.h"
#include "platform/fence.h"
#include "rma/rma.h"
#include "util/log.h"

#define PUT_FLAGS (FLIT_RMA_REMOTE_DONE | FLIT_RMA_NOTIFY)
#define GET_FLAGS FLIT_RMA_REMOTE_DONE

/* Enters the endpoint of the live import handle h names: *out. */
static flit_status remote_enter(const flit_rma_remote_t *h, struct flit_rma_remote **out)
{
    struct flit_rma_remote *rm = *out = fl_rma_remote_of(h);
    if (!rm)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = fl_ep_enter(rm->ep);
    if (st != FLIT_OK)
        return st;
    if (!rm->obj.live || rm->releasing) {
        fl_ep_leave(rm->ep);
        return FLIT_ERR_INVALID_ARG;
    }
    return FLIT_OK;
}

static flit_status check(const struct flit_rma_remote *rm, unsigned need, uint64_t off,
                         const void *buf, size_t len, unsigned flags, unsigned known)
{
    if ((flags & ~known) || (len && !buf))
        return FLIT_ERR_INVALID_ARG;
    if (fl_peer_is_down(&rm->ep->peers[rm->owner]))
        return FLIT_ERR_PEER_DOWN;
    if (rm->revoked)
        return FLIT_ERR_REVOKED;
    if ((rm->access & need) != need)
        return FLIT_ERR_DENIED;
    if (off > rm->size || len > rm->size - off)
        return FLIT_ERR_BOUNDS;
    return FLIT_OK;
}

/* ---- direct paths ---- */

/* Raises our busy mark and checks that the region is still live (rma.h). */
static bool direct_begin(struct flit_rma_remote *rm)
{
    atomic_store_explicit(rm->busy, (uint64_t)(uint32_t)rm->id + 1, memory_order_relaxed);
    /* The mark is visible before we read the word: pairs with the owner's
       slow fence between marking the word dead and reading the marks. */
    fl_fence_fast();
    if (atomic_load_explicit(rm->word, memory_order_acquire) == rm->live_word)
        return true;
    atomic_store_explicit(rm->busy, 0, memory_order_relaxed);
    rm->revoked = true;
    return false;
}

static void direct_end(struct flit_rma_remote *rm)
{
    /* Release: the copy is complete before the owner sees the mark clear. */
    atomic_store_explicit(rm->busy, 0, memory_order_release);
}

/* The transport's one-sided put or get; FLIT_ERR_NOT_SUPPORTED (and
   packets from now on, for every import from the owner) when it refuses;
   FLIT_ERR_REVOKED when the owner withdrew the region's key. early: a put
   that may return before its bytes land, where the transport offers one
   (its failure is the next flush's verdict: op.c). */
static flit_status tp_copy(struct flit_ep *ep, struct flit_rma_remote *rm, bool write,
                           bool early, uint64_t off, void *buf, size_t len)
{
    const struct fl_peer *p = &ep->peers[rm->owner];
    const struct fl_tp_onesided *os = p->tp->onesided;
    uint64_t at = rm->raddr + off;
    flit_status st;
    if (write && early && os->put_early) {
        st = os->put_early(p->tpe, rm->owner, rm->key, at, buf, len);
        if (st == FLIT_OK) { /* landed: a flush's round trip behind it says so */
            fl_rma_of(ep)->peers[rm->owner].unsettled = true;
            fl_rma_of(ep)->peers[rm->owner].unflushed++;
        }
    } else {
        st = write ? os->put(p->tpe, rm->owner, rm->key, at, buf, len)
                   : os->get(p->tpe, rm->owner, rm->key, at, buf, len);
    }
    if (st == FLIT_ERR_REVOKED && rm->path == FL_RMA_PATH_EXPOSED) {
        rm->revoked = true; /* the owner withdrew the key */
    } else if (st == FLIT_ERR_PEER_DOWN) {
        /* The owner's process is gone: the endpoint learns it now, so
           that every path (flush, peer info, sends) agrees at once
           rather than at the next periodic check. */
        fl_ep_peer_down(ep, rm->owner, FLIT_ERR_PEER_DOWN);
    } else if (st != FLIT_OK) {
        fl_rma_of(ep)->peers[rm->owner].no_tp = true;
        rm->path = FL_RMA_PATH_PACKETS;
        st = FLIT_ERR_NOT_SUPPORTED;
    }
    return st;
}

#define PASS_EVERY 16u /* early puts between progress passes towards the owner */

/* Copies between buf and the region; write: into the region; early: see
   tp_copy. */
static flit_status direct_copy(struct flit_ep *ep, struct flit_rma_remote *rm, bool write,
                               bool early, uint64_t off, void *buf, size_t len)
{
    if (rm->path == FL_RMA_PATH_SELF) {
        if (!fl_rma_region_find(fl_rma_of(ep), rm->id)) {
            rm->revoked = true;
            return FLIT_ERR_REVOKED;
        }
        memmove(write ? rm->base + off : buf, write ? buf : rm->base + off, len);
        return FLIT_OK;
    }
    if (rm->path == FL_RMA_PATH_EXPOSED) {
        /* The owner withdraws the key by a message (region.c) and keeps
           the memory registered until we answer it, behind our last access
           through the key: an access before we heard it is safe. A program
           that only puts and gets hears it here, before a blocking access
           and every PASS_EVERY early puts, so that the owner's unexport
           does not wait on us for long. */
        if (fl_handler_depth == 0 && (!early || ++rm->unheard >= PASS_EVERY)) {
            rm->unheard = 0;
            fl_progress_peer(ep, rm->owner, FL_LANES_ALL);
        }
        if (rm->revoked)
            return FLIT_ERR_REVOKED;
        return tp_copy(ep, rm, write, early, off, buf, len);
    }
    if (!direct_begin(rm))
        return FLIT_ERR_REVOKED;
    flit_status st = FLIT_OK;
    if (rm->path == FL_RMA_PATH_MAP)
        memcpy(write ? rm->base + off : buf, write ? buf : rm->base + off, len);
    else
        st = tp_copy(ep, rm, write, early, off, buf, len);
    direct_end(rm);
    return st;
}

/* ---- packets ---- */

/* Framing of a put's pieces: PUT packets, FIRST and LAST marked. */
struct put_frame {
    struct fl_rma_pkt p;
    uint8_t always; /* flags of every piece */
};

static size_t put_hdr_len(void *arg, const struct fl_piece *pc)
{
    (void)arg, (void)pc;
    return FL_RMA_HDR;
}

static void put_write_hdr(void *arg, uint8_t *pkt, const struct fl_piece *pc)
{
    struct put_frame *f = arg;
    f->p.piece = pc->off;
    f->p.len = (uint32_t)pc->len;
    f->p.flags = (uint8_t)((pc->first ? FL_RMAF_FIRST : 0) |
                           (pc->last ? FL_RMAF_LAST : 0) | f->always);
    fl_rma_encode(pkt, &f->p);
}

/* The put in pieces, by the core's one way of sending in pieces
   (core/pieces.h); op NULL: an untracked put (rma.h), else op waits for
   the owner's acknowledgement. */
static flit_status put_packets(struct flit_ep *ep, struct flit_rma_remote *rm,
                               uint64_t off, const uint8_t *src, size_t len,
                               unsigned flags, struct flit_rma_op *op)
{
    struct put_frame frame = {
        .p = {.kind = FL_RMA_PUT,
              .op = op ? fl_rma_op_id(op) : 0,
              .id = rm->id,
              .base = off,
              .total = len},
        .always = (uint8_t)((flags & FLIT_RMA_NOTIFY ? FL_RMAF_NOTIFY : 0) |
                            (op ? FL_RMAF_ACK : 0)),
    };
    struct fl_pieces f = {.max_hdr = FL_RMA_HDR,
                          .hdr_len = put_hdr_len,
                          .write_hdr = put_write_hdr,
                          .arg = &frame};
    if (op)
        fl_rma_op_wait_for(ep, op);
    else
        fl_rma_of(ep)->peers[rm->owner].unflushed++;
    flit_status st =
        fl_ep_send_pieces(ep, rm->owner, fl_rma_lane(FL_RMA_PUT), &f, src, len, 0);
    if (st != FLIT_OK && op)
        fl_rma_op_complete(ep, op, st);
    return st;
}

static flit_status get_packets(struct flit_ep *ep, struct flit_rma_remote *rm,
                               uint64_t off, void *dst, size_t len,
                               struct flit_rma_op *op)
{
    op->kind = FL_RMA_OP_GET;
    op->dst = dst;
    op->len = len;
    op->got = 0;
    op->want_answer = true;
    struct fl_rma_pkt q = {.kind = FL_RMA_GET_REQ,
                           .op = fl_rma_op_id(op),
                           .id = rm->id,
                           .base = off,
                           .total = len};
    fl_rma_op_wait_for(ep, op);
    flit_status st = fl_rma_send(ep, rm->owner, &q, NULL, 0);
    if (st != FLIT_OK)
        fl_rma_op_complete(ep, op, st);
    return st;
}

/* ---- the calls ---- */

/* A handle for the call, made before anything moves, when one is asked for. */
static flit_status handle_new(struct flit_ep *ep, struct flit_rma_remote *rm,
                              enum fl_rma_op_kind kind, flit_rma_op_t **op_out,
                              struct flit_rma_op **op)
{
    *op = NULL;
    if (op_out && !(*op = fl_rma_op_new(ep, kind, rm->owner, rm)))
        return FLIT_ERR_NO_MEMORY;
    if (*op && fl_rma_pool_handle(&fl_rma_of(ep)->ops, &(*op)->obj) != FLIT_OK) {
        fl_rma_op_release(ep, *op);
        *op = NULL;
        return FLIT_ERR_NO_MEMORY;
    }
    return FLIT_OK;
}

/* After a direct transfer: hands out the (complete) handle, or drops it. */
static flit_status direct_done(struct flit_ep *ep, struct flit_rma_op *op, flit_status st,
                               flit_rma_op_t **op_out)
{
    if (!op)
        return st;
    if (st == FLIT_OK)
        *op_out = op->obj.self;
    else
        fl_rma_op_release(ep, op);
    return st;
}

static flit_status put(struct flit_ep *ep, struct flit_rma_remote *rm, uint64_t off,
                       const void *src, size_t len, unsigned flags,
                       flit_rma_op_t **op_out)
{
    struct flit_rma_op *op;
    flit_status st = handle_new(ep, rm, FL_RMA_OP_PUT, op_out, &op);
    if (st != FLIT_OK)
        return st;
    FL_COUNT(fl_rma_of(ep)->puts, 1);
    FL_COUNT(fl_rma_of(ep)->put_bytes, len);
    if (rm->path != FL_RMA_PATH_PACKETS) {
        st = direct_copy(ep, rm, true, !(flags & FLIT_RMA_REMOTE_DONE), off, (void *)src,
                         len);
        if (st != FLIT_ERR_NOT_SUPPORTED) {
            if (st == FLIT_OK && (flags & FLIT_RMA_NOTIFY)) {
                struct fl_rma_pkt n = {
                    .kind = FL_RMA_NOTIFY, .id = rm->id, .base = off, .total = len};
                st = fl_rma_send(ep, rm->owner, &n, NULL, 0);
            }
            return direct_done(ep, op, st, op_out);
        }
    }
    /* Only a put whose completion is its landing waits for an answer. */
    bool track = (flags & FLIT_RMA_REMOTE_DONE) != 0;
    if (track && !op && !(op = fl_rma_op_new(ep, FL_RMA_OP_PUT, rm->owner, rm)))
        return FLIT_ERR_NO_MEMORY;
    st = put_packets(ep, rm, off, src, len, flags, track ? op : NULL);
    if (op_out && st == FLIT_OK) {
        *op_out = op->obj.self; /* untracked: complete already */
        return FLIT_OK;
    }
    if (track)
        return fl_rma_op_finish(ep, op);
    if (op)
        fl_rma_op_release(ep, op);
    return st;
}

flit_status flit_rma_put(flit_rma_remote_t *remote, uint64_t offset, const void *src,
                         size_t len, unsigned flags, flit_rma_op_t **op)
{
    struct flit_rma_remote *rm;
    flit_status st = remote_enter(remote, &rm);
    if (st != FLIT_OK)
        return st;
    st = check(rm, FLIT_RMA_WRITE, offset, src, len, flags, PUT_FLAGS);
    if (st == FLIT_OK)
        st = put(rm->ep, rm, offset, src, len, flags, op);
    fl_ep_leave(rm->ep);
    return st;
}

static flit_status get(struct flit_ep *ep, struct flit_rma_remote *rm, uint64_t off,
                       void *dst, size_t len, flit_rma_op_t **op_out)
{
    struct flit_rma_op *op;
    flit_status st = handle_new(ep, rm, FL_RMA_OP_GET, op_out, &op);
    if (st != FLIT_OK)
        return st;
    FL_COUNT(fl_rma_of(ep)->gets, 1);
    FL_COUNT(fl_rma_of(ep)->get_bytes, len);
    if (rm->path != FL_RMA_PATH_PACKETS) {
        st = direct_copy(ep, rm, false, false, off, dst, len);
        if (st != FLIT_ERR_NOT_SUPPORTED)
            return direct_done(ep, op, st, op_out);
    }
    if (!op && !(op = fl_rma_op_new(ep, FL_RMA_OP_GET, rm->owner, rm)))
        return FLIT_ERR_NO_MEMORY;
    st = get_packets(ep, rm, off, dst, len, op);
    if (op_out && st == FLIT_OK) {
        *op_out = op->obj.self;
        return FLIT_OK;
    }
    return fl_rma_op_finish(ep, op);
}

flit_status flit_rma_get(flit_rma_remote_t *remote, uint64_t offset, void *dst,
                         size_t len, unsigned flags, flit_rma_op_t **op)
{
    struct flit_rma_remote *rm;
    flit_status st = remote_enter(remote, &rm);
    if (st != FLIT_OK)
        return st;
    st = check(rm, FLIT_RMA_READ, offset, dst, len, flags, GET_FLAGS);
    if (st == FLIT_OK)
        st = get(rm->ep, rm, offset, dst, len, op);
    fl_ep_leave(rm->ep);
    return st;
}
