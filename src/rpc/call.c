/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client's calls (internal.h): a call is handed out as a
 * <flit/handle.h> handle, put in the table of calls in flight before its
 * request leaves (the reply may come before the send returns), and given
 * back to the object's free list when it ends: finished, or cancelled
 * while still SENT.
 */
#include <flit/handle.h>

#include <stdlib.h>

#include "internal.h"

static flit_handles_t *calls_out;

struct flit_rpc_call *fl_rpc_call_of(flit_rpc_call_t *h)
{
    return flit_handle_get(&calls_out, h);
}

/* Under the mutex: a call from the free list, or a new one. */
static struct flit_rpc_call *call_get(struct flit_rpc *r)
{
    struct flit_rpc_call *c = r->free_calls;
    if (c)
        r->free_calls = c->next;
    else if (!(c = malloc(sizeof *c)))
        return NULL;
    memset(c, 0, sizeof *c);
    if (flit_handle_new(&calls_out, c, &c->self) != FLIT_OK) {
        c->next = r->free_calls;
        r->free_calls = c;
        return NULL;
    }
    c->rpc = r;
    atomic_init(&c->state, C_SENT);
    r->live_calls++;
    return c;
}

/* Under the mutex. */
static void call_put(struct flit_rpc *r, struct flit_rpc_call *c)
{
    if (c->rep != c->rep_keep)
        free(c->rep);
    (void)flit_handle_free(&calls_out, c->self);
    c->self = NULL;
    c->next = r->free_calls;
    r->free_calls = c;
    r->live_calls--;
}

void fl_rpc_calls_free(struct flit_rpc *r)
{
    for (struct flit_rpc_call *c = r->free_calls, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    r->free_calls = NULL;
}

static flit_status check_opts(const flit_rpc_opts_t *o)
{
    if (o &&
        ((o->field_mask & ~(uint64_t)(FLIT_RPC_OPT_FLAGS | FLIT_RPC_OPT_TIMEOUT)) ||
         ((o->field_mask & FLIT_RPC_OPT_FLAGS) && (o->flags & ~FLIT_RPC_REPLY_ALLOC))))
        return FLIT_ERR_INVALID_ARG;
    return FLIT_OK;
}

static flit_status check_call(struct flit_rpc *r, flit_rank_t dest, unsigned proc,
                              const struct iovec *req, int nreq, const struct iovec *rep,
                              int nrep, const flit_rpc_opts_t *o, size_t *reqlen)
{
    if (!r)
        return FLIT_ERR_INVALID_ARG;
    if (dest.idx >= r->size)
        return FLIT_ERR_RANK;
    if (proc >= r->nprocs)
        return FLIT_ERR_BAD_HANDLER;
    if (check_opts(o) != FLIT_OK)
        return FLIT_ERR_INVALID_ARG;
    size_t cap;
    flit_status st = flit_iov_total(rep, nrep, &cap);
    if (st != FLIT_OK)
        return st == FLIT_ERR_TOO_LARGE ? FLIT_ERR_INVALID_ARG : st;
    return flit_iov_total(req, nreq, reqlen);
}

/* Fills c's reply buffers and deadline from the arguments. */
static flit_status call_setup(struct flit_rpc_call *c, const struct iovec *rep, int nrep,
                              const flit_rpc_opts_t *o)
{
    c->flags = o && (o->field_mask & FLIT_RPC_OPT_FLAGS) ? o->flags : 0;
    if (o && (o->field_mask & FLIT_RPC_OPT_TIMEOUT) && o->timeout_us >= 0)
        c->deadline = flit_clock_ns() + o->timeout_us * 1000;
    if (c->flags & FLIT_RPC_REPLY_ALLOC)
        return FLIT_OK;
    c->rep = nrep <= RPC_IOV_KEEP ? c->rep_keep : malloc(sizeof *c->rep * (size_t)nrep);
    if (!c->rep)
        return FLIT_ERR_NO_MEMORY;
    if (nrep)
        memcpy(c->rep, rep, sizeof *rep * (size_t)nrep);
    c->nrep = nrep;
    for (int i = 0; i < nrep; i++)
        c->cap += rep[i].iov_len;
    return FLIT_OK;
}

/* A new call to dest, in the table (*out); FLIT_ERR_CLOSED once the
   object closes. */
static flit_status call_new(struct flit_rpc *r, uint32_t dest, struct flit_rpc_call **out)
{
    flit_status st = FLIT_OK;
    struct flit_rpc_call *c = NULL;
    rpc_lock(r);
    if (r->ep_closing) {
        st = FLIT_ERR_CLOSED;
    } else if (!(c = call_get(r))) {
        st = FLIT_ERR_NO_MEMORY;
    } else {
        c->id = r->next_id++;
        c->dest = dest;
        rpc_count(&r->ctr->calls, 1);
        /* In the table before the request leaves: the reply may come
           before the send returns (another thread, a rank to itself). */
        fl_rpc_table_add(r, c);
    }
    rpc_unlock(r);
    *out = c;
    return st;
}

/* A call that could not be made, undone. */
static void call_undo(struct flit_rpc *r, struct flit_rpc_call *c)
{
    rpc_lock(r);
    if (c->in_table)
        fl_rpc_table_del(r, c);
    rpc_count(&r->ctr->calls, (uint64_t)-1);
    call_put(r, c);
    rpc_unlock(r);
}

/* c's request out: at once, waiting for room; from a procedure that may
   block, queued for program context (it then waits parked). */
static flit_status send_request(struct flit_rpc *r, struct flit_rpc_call *c,
                                unsigned proc, const struct iovec *req, int nreq,
                                size_t len)
{
    flit_status st = fl_rpc_send_msg(r, c->dest, false, proc, c->id, req, nreq, len);
    while (st == FLIT_ERR_AGAIN) { /* no room: wait for it, handlers running */
        (void)flit_poll(r->ep);
        st = fl_rpc_send_msg(r, c->dest, false, proc, c->id, req, nreq, len);
    }
    struct flit_rpc_req *cur;
    if (st == FLIT_ERR_IN_HANDLER && (cur = fl_rpc_current()) && cur->park) {
        struct rpc_out o = {.dest = c->dest, .id = c->id, .word = proc, .request = true};
        st = fl_rpc_queue(r, req, nreq, len, &o);
    }
    return st;
}

flit_status flit_rpc_icall(flit_rpc_t *h, flit_rank_t dest, unsigned proc,
                           const struct iovec *req, int nreq, const struct iovec *rep,
                           int nrep, const flit_rpc_opts_t *opts, flit_rpc_call_t **out)
{
    struct flit_rpc *r = fl_rpc_of(h);
    size_t len;
    flit_status st = check_call(r, dest, proc, req, nreq, rep, nrep, opts, &len);
    if (st != FLIT_OK)
        return st;
    if (!out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rpc_call *c;
    if ((st = call_new(r, dest.idx, &c)) != FLIT_OK)
        return st;
    if ((st = call_setup(c, rep, nrep, opts)) == FLIT_OK)
        st = send_request(r, c, proc, req, nreq, len);
    if (st != FLIT_OK) {
        call_undo(r, c);
        return st;
    }
    *out = c->self;
    return FLIT_OK;
}

flit_status fl_rpc_finish(flit_rpc_call_t **cp, flit_rpc_result_t *result)
{
    struct flit_rpc_call *c = fl_rpc_call_of(*cp);
    struct flit_rpc *r = c->rpc;
    flit_status st = c->res.status;
    if (result)
        *result = c->res;
    else
        free(c->res.data);
    rpc_lock(r);
    call_put(r, c);
    rpc_unlock(r);
    *cp = NULL;
    return st;
}

flit_status flit_rpc_call(flit_rpc_t *h, flit_rank_t dest, unsigned proc,
                          const struct iovec *req, int nreq, const struct iovec *rep,
                          int nrep, const flit_rpc_opts_t *opts,
                          flit_rpc_result_t *result)
{
    flit_rpc_call_t *c;
    flit_status st = flit_rpc_icall(h, dest, proc, req, nreq, rep, nrep, opts, &c);
    if (st != FLIT_OK)
        return st;
    size_t idx;
    st = fl_rpc_wait_calls(fl_rpc_of(h), &c, 1, 0, &idx);
    if (st != FLIT_OK &&
        !call_done(fl_rpc_call_of(c))) { /* progress failed: the endpoint goes */
        /* A call whose reply is being received stays: a handler holds it. */
        (void)flit_rpc_cancel(&c);
        return st;
    }
    return fl_rpc_finish(&c, result);
}

flit_status flit_rpc_cancel(flit_rpc_call_t **cp)
{
    struct flit_rpc_call *c = cp ? fl_rpc_call_of(*cp) : NULL;
    if (!c)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rpc *r = c->rpc;
    rpc_lock(r);
    /* Again under the mutex that ends calls: another thread's test or
       wait may have ended it meanwhile. */
    bool live = fl_rpc_call_of(*cp) == c;
    bool sent = live && atomic_load_explicit(&c->state, memory_order_relaxed) == C_SENT;
    if (sent) {
        fl_rpc_table_del(r, c);
        call_put(r, c);
    }
    rpc_unlock(r);
    if (!live)
        return FLIT_ERR_INVALID_ARG;
    if (!sent)
        return FLIT_ERR_AGAIN;
    *cp = NULL;
    return FLIT_OK;
}
