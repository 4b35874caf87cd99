/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operation table: puts and gets that wait for their owner's answer
 * (over packets), imports, and the handles the program tests, waits on and
 * flushes.
 *
 * An operation is pending from its first packet until the owner's answer
 * (or the owner's death). Its handle completes either with the answer
 * (want_answer: gets, imports, puts with FLIT_RMA_REMOTE_DONE) or as soon
 * as the data left (other puts). It is freed once it is both answered and
 * let go by whoever held it; a refusal that arrives after the holder let
 * go is kept for flit_rma_flush (the peer's sticky status).
 */
#include "rma/rma.h"
#include "util/log.h"

struct flit_rma_op *fl_rma_op_new(struct flit_ep *ep, enum fl_rma_op_kind kind,
                                  uint32_t peer, struct flit_rma_remote *rm)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    struct flit_rma_op *op = (struct flit_rma_op *)fl_rma_pool_get(&r->ops);
    if (!op)
        return NULL;
    op->ep = ep;
    op->kind = (uint8_t)kind;
    op->pending = false;
    op->want_answer = true;
    op->held = true;
    op->status = FLIT_OK;
    op->peer = peer;
    op->remote = rm;
    op->dst = NULL;
    op->len = op->got = 0;
    return op;
}

/* From now on the op waits for peer's answer. */
void fl_rma_op_wait_for(struct flit_ep *ep, struct flit_rma_op *op)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    op->pending = true;
    r->peers[op->peer].outstanding++;
    r->outstanding++;
    if (op->remote)
        op->remote->outstanding++;
}

void fl_rma_op_complete(struct flit_ep *ep, struct flit_rma_op *op, flit_status st)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (!op->pending)
        return;
    op->pending = false;
    op->status = st;
    r->peers[op->peer].outstanding--;
    r->outstanding--;
    if (op->remote) {
        op->remote->outstanding--;
        if (st == FLIT_ERR_REVOKED)
            op->remote->revoked = true; /* later calls fail at once */
    }
    if (op->held)
        return;
    if (st != FLIT_OK && r->peers[op->peer].sticky == FLIT_OK)
        r->peers[op->peer].sticky = st;
    fl_rma_pool_put(&r->ops, &op->obj);
}

struct flit_rma_op *fl_rma_op_find(struct flit_ep *ep, uint32_t id, uint32_t src,
                                   enum fl_rma_op_kind kind)
{
    struct fl_rma_pool *pool = &fl_rma_of(ep)->ops;
    uint32_t idx = id & (FL_RMA_MAX_OPS - 1);
    if (idx >= pool->n)
        return NULL;
    struct flit_rma_op *op = (struct flit_rma_op *)pool->all[idx];
    if (!op->obj.live || !op->pending || fl_rma_op_id(op) != id || op->peer != src ||
        op->kind != kind)
        return NULL;
    return op;
}

bool fl_rma_op_done(const struct flit_rma_op *op)
{
    return !op->pending || !op->want_answer;
}

void fl_rma_op_release(struct flit_ep *ep, struct flit_rma_op *op)
{
    if (op->pending) {
        op->held = false; /* freed, its verdict kept, when the answer comes */
        return;
    }
    fl_rma_pool_put(&fl_rma_of(ep)->ops, &op->obj);
}

static bool op_answered(struct flit_ep *ep, void *arg)
{
    (void)ep;
    return fl_rma_op_done(arg);
}

void fl_rma_op_wait(struct flit_ep *ep, struct flit_rma_op *op)
{
    /* The endpoint closing under us (another thread destroys it) is the
       only way the wait ends early: the operation ends with it. */
    if (!fl_rma_op_done(op) &&
        fl_progress_until(ep, op_answered, op, -1) == FLIT_ERR_CLOSED)
        fl_rma_op_complete(ep, op, FLIT_ERR_CLOSED);
}

flit_status fl_rma_op_finish(struct flit_ep *ep, struct flit_rma_op *op)
{
    fl_rma_op_wait(ep, op);
    flit_status st = op->status;
    fl_rma_op_release(ep, op);
    return st;
}

/* ---- handles ---- */

/* Enters the endpoint of the held operation handle h names: *out. */
static flit_status op_enter(const flit_rma_op_t *h, struct flit_rma_op **out)
{
    struct flit_rma_op *op = *out = fl_rma_op_of(h);
    if (!op)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = fl_ep_enter(op->ep);
    if (st != FLIT_OK)
        return st;
    if (!op->obj.live || !op->held) {
        fl_ep_leave(op->ep);
        return FLIT_ERR_INVALID_ARG;
    }
    return FLIT_OK;
}

flit_status flit_rma_test(flit_rma_op_t *h, int *done)
{
    if (!done)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rma_op *op;
    flit_status st = op_enter(h, &op);
    if (st != FLIT_OK)
        return st;
    struct flit_ep *ep = op->ep;
    if (!fl_rma_op_done(op)) {
        fl_progress(ep, FL_LANES_ALL);
        fl_progress_check_peers(ep, false);
    }
    if (fl_rma_op_done(op)) {
        *done = 1;
        st = op->status;
        fl_rma_op_release(ep, op);
    } else {
        *done = 0;
    }
    fl_ep_leave(ep);
    return st;
}

flit_status flit_rma_wait(flit_rma_op_t *h, int64_t timeout_us)
{
    struct flit_rma_op *op;
    flit_status st = op_enter(h, &op);
    if (st != FLIT_OK)
        return st;
    struct flit_ep *ep = op->ep;
    if (!fl_rma_op_done(op))
        st = fl_progress_until(ep, op_answered, op, timeout_us);
    if (st == FLIT_OK) {
        st = op->status;
        fl_rma_op_release(ep, op);
    }
    fl_ep_leave(ep);
    return st;
}

/* ---- flush ---- */

/*
 * Puts the owner answers only to refuse are covered by a round trip behind
 * them: its answer comes after every refusal. The flush op is let go at
 * once: it counts as outstanding until the answer (or the owner's death).
 */
static flit_status flush_send(struct flit_ep *ep, uint32_t rank)
{
    struct fl_rma_peer *p = &fl_rma_of(ep)->peers[rank];
    if (p->unflushed == 0 || fl_peer_is_down(&ep->peers[rank]))
        return FLIT_OK;
    struct flit_rma_op *op = fl_rma_op_new(ep, FL_RMA_OP_FLUSH, rank, NULL);
    if (!op)
        return FLIT_ERR_NO_MEMORY;
    struct fl_rma_pkt q = {.kind = FL_RMA_FLUSH_REQ, .op = fl_rma_op_id(op)};
    fl_rma_op_wait_for(ep, op);
    flit_status st = fl_rma_send(ep, rank, &q, NULL, 0);
    if (st != FLIT_OK)
        fl_rma_op_complete(ep, op, st);
    fl_rma_op_release(ep, op);
    p->unflushed = 0;
    return st == FLIT_ERR_PEER_DOWN ? FLIT_OK : st; /* the verdict says it */
}

/* The transport's early puts to rank (xfer.c's tp_copy) waited for until
   they left; a failure among them is the flush's verdict. That they
   landed, flush_send's round trip behind them proves (they count as
   unflushed). */
static void settle(struct flit_ep *ep, uint32_t rank)
{
    struct fl_rma_peer *p = &fl_rma_of(ep)->peers[rank];
    if (!p->unsettled)
        return;
    p->unsettled = false;
    const struct fl_peer *q = &ep->peers[rank];
    flit_status st = q->tp->onesided->settle(q->tpe, rank);
    if (st == FLIT_ERR_PEER_DOWN)
        fl_ep_peer_down(ep, rank, FLIT_ERR_PEER_DOWN);
    else if (st != FLIT_OK && p->sticky == FLIT_OK)
        p->sticky = st;
}

static bool peer_quiet(struct flit_ep *ep, void *arg)
{
    return fl_rma_of(ep)->peers[*(uint32_t *)arg].outstanding == 0;
}

static bool all_quiet(struct flit_ep *ep, void *arg)
{
    (void)arg;
    return fl_rma_of(ep)->outstanding == 0;
}

/* The verdict a flush reports for rank, consumed. */
static flit_status take_verdict(struct flit_ep *ep, uint32_t rank)
{
    struct fl_rma_peer *p = &fl_rma_of(ep)->peers[rank];
    flit_status st = p->sticky;
    p->sticky = FLIT_OK;
    if (st == FLIT_OK && fl_peer_is_down(&ep->peers[rank]))
        st = FLIT_ERR_PEER_DOWN;
    return st;
}

flit_status flit_rma_flush(flit_ep_t *ep, flit_rank_t rank)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (rank.idx >= ep->size) {
        fl_ep_leave(ep);
        return FLIT_ERR_RANK;
    }
    settle(ep, rank.idx);
    st = flush_send(ep, rank.idx);
    if (st == FLIT_OK && !peer_quiet(ep, &rank.idx))
        st = fl_progress_until(ep, peer_quiet, &rank.idx, -1);
    if (st == FLIT_OK)
        st = take_verdict(ep, rank.idx);
    fl_ep_leave(ep);
    return st;
}

flit_status flit_rma_flush_all(flit_ep_t *ep)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    for (uint32_t k = 0; k < ep->size && st == FLIT_OK; k++) {
        settle(ep, k);
        st = flush_send(ep, k);
    }
    if (st == FLIT_OK && !all_quiet(ep, NULL))
        st = fl_progress_until(ep, all_quiet, NULL, -1);
    for (uint32_t k = 0; k < ep->size; k++) {
        flit_status v = take_verdict(ep, k);
        if (st == FLIT_OK)
            st = v;
    }
    fl_ep_leave(ep);
    return st;
}
