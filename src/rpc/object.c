/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An RPC object's life (internal.h): created collectively on two reserved
 * handler indices (requests, replies), with a progress listener that sends
 * what handler context queued, ends the calls of a peer that died, and
 * closes the object with its endpoint; its procedures and statistics.
 */
#include <flit/handle.h>

#include <stddef.h>
#include <stdlib.h>

#include "internal.h"

static flit_handles_t *rpcs;

struct flit_rpc *fl_rpc_of(flit_rpc_t *h)
{
    return flit_handle_get(&rpcs, h);
}

/* ---------------------------------------------------------------- listener */

static void on_progress(flit_ep_t *ep, void *user)
{
    (void)ep;
    struct flit_rpc *r = user;
    if (atomic_load_explicit(&r->nout, memory_order_acquire))
        fl_rpc_flush(r);
}

static void on_peer_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep;
    (void)reason;
    struct flit_rpc *r = user;
    rpc_lock(r);
    fl_rpc_end_all(r, peer.idx, FLIT_ERR_PEER_DOWN);
    rpc_unlock(r);
}

static void on_closing(flit_ep_t *ep, void *user)
{
    (void)ep;
    struct flit_rpc *r = user;
    fl_rpc_close_deferred(r);
    fl_rpc_drain(r);
    rpc_lock(r);
    r->ep_closing = true;
    fl_rpc_end_all(r, UINT32_MAX, FLIT_ERR_CLOSED);
    rpc_unlock(r);
}

/* ---------------------------------------------------------------- handlers */

static void discard_am(flit_token_t *token, void *buf, size_t nbytes,
                       const uint32_t *args, unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
}

static void discard_stream(flit_stream_t *s, size_t total, void *user)
{
    (void)s, (void)total, (void)user;
}

/* Installs (or, with on false, replaces by discarding ones) the handlers. */
static flit_status install(struct flit_rpc *r, bool on)
{
    flit_handler_t rep = flit_handler((uint16_t)(r->h.idx + 1));
    flit_status st = flit_am_register(r->ep, r->h, on ? fl_rpc_on_req_am : discard_am, r);
    if (st == FLIT_OK)
        st = flit_am_register(r->ep, rep, on ? fl_rpc_on_reply_am : discard_am, r);
    if (st == FLIT_OK) /* streamed requests: on a fiber, so that they may park */
        st = flit_stream_register_flags(r->ep, r->h,
                                        on ? fl_rpc_on_req_stream : discard_stream, r,
                                        on ? FLIT_STREAM_FIBER : 0);
    if (st == FLIT_OK)
        st = flit_stream_register(r->ep, rep,
                                  on ? fl_rpc_on_reply_stream : discard_stream, r);
    return st;
}

/* ---------------------------------------------------------------- object */

static flit_status read_params(struct flit_rpc *r, const flit_rpc_params_t *p)
{
    r->nprocs = 64;
    r->max_request = SIZE_MAX;
    if (!p)
        return FLIT_OK;
    if (p->field_mask & ~(uint64_t)(FLIT_RPC_PARAM_PROCS | FLIT_RPC_PARAM_MAX_REQUEST))
        return FLIT_ERR_INVALID_ARG;
    if (p->field_mask & FLIT_RPC_PARAM_PROCS) {
        if (p->procs == 0 || p->procs > RPC_MAX_PROCS)
            return FLIT_ERR_INVALID_ARG;
        r->nprocs = p->procs;
    }
    if (p->field_mask & FLIT_RPC_PARAM_MAX_REQUEST)
        r->max_request = p->max_request;
    return FLIT_OK;
}

static void free_object(struct flit_rpc *r)
{
    fl_rpc_calls_free(r);
    for (struct flit_rpc_req *q = r->free_reqs, *next; q; q = next) {
        next = q->next;
        fl_rpc_status_free(q->status);
        free(q);
    }
    fl_rpc_queue_free(r);
    (void)flit_handle_free(&rpcs, r->self);
    pthread_mutex_destroy(&r->lock);
    free(r->procs);
    free(r);
}

/* Collective: handlers, listener, and a barrier so that every rank's
   handlers are in place before anyone calls. */
static flit_status open_object(struct flit_rpc *r)
{
    flit_thread_mode mode;
    flit_status st = flit_ep_thread_mode(r->ep, &mode);
    if (st != FLIT_OK)
        return st;
    r->mt = mode == FLIT_THREAD_SAFE;
    if (!(r->procs = calloc(r->nprocs, sizeof *r->procs)))
        return FLIT_ERR_NO_MEMORY;
    /* Collective: every rank gets the same indices. */
    if ((st = flit_ep_reserve_handlers(r->ep, 2, &r->h)) != FLIT_OK)
        return st;
    r->listener = (flit_ep_listener_t){
        .peer_down = on_peer_down, .progress = on_progress, .closing = on_closing};
    if ((st = install(r, true)) != FLIT_OK)
        return st;
    if ((st = flit_ep_listen(r->ep, &r->listener, r)) != FLIT_OK)
        return st;
    if ((st = flit_barrier(r->ep)) != FLIT_OK)
        (void)flit_ep_unlisten(r->ep, &r->listener, r);
    return st;
}

flit_status flit_rpc_create(flit_ep_t *ep, const flit_rpc_params_t *params,
                            flit_rpc_t **out)
{
    return fl_rpc_create(ep, params, NULL, false, out);
}

flit_status fl_rpc_create(flit_ep_t *ep, const flit_rpc_params_t *params,
                          struct fl_rpc_counters *ctr, bool owned, flit_rpc_t **out)
{
    if (!ep || !out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rpc *r = calloc(1, sizeof *r);
    if (!r)
        return FLIT_ERR_NO_MEMORY;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return FLIT_ERR_SYSTEM;
    }
    r->ctr = ctr ? ctr : &r->own;
    r->owned = owned;
    r->ep = ep;
    r->size = flit_job_size();
    r->next_id = 1;
    atomic_init(&r->nout, 0);
    flit_status st = read_params(r, params);
    if (st == FLIT_OK)
        st = flit_handle_new(&rpcs, r, &r->self);
    if (st == FLIT_OK)
        st = open_object(r);
    if (st != FLIT_OK) {
        free_object(r);
        return st;
    }
    *out = r->self;
    return FLIT_OK;
}

/* Every rank has its replies out and no call outstanding; then the
   handlers and the listener go. */
static flit_status close_object(struct flit_rpc *r)
{
    fl_rpc_close_deferred(r);
    fl_rpc_drain(r);
    flit_status st = flit_barrier(r->ep);
    if (st == FLIT_OK)
        st = install(r, false);
    if (st == FLIT_OK)
        st = flit_ep_unlisten(r->ep, &r->listener, r);
    return st;
}

flit_status flit_rpc_destroy(flit_rpc_t *h)
{
    struct flit_rpc *r = fl_rpc_of(h);
    if (!r || r->owned) /* the endpoint's own goes with the endpoint */
        return FLIT_ERR_INVALID_ARG;
    return fl_rpc_destroy(r);
}

flit_status fl_rpc_destroy(struct flit_rpc *r)
{
    if (r->ep_closing) { /* its endpoint was destroyed: nothing left to undo */
        free_object(r);
        return FLIT_OK;
    }
    /* Also the handler check: a handler must not free what it runs in. */
    flit_status st = flit_poll(r->ep);
    if (st != FLIT_OK)
        return st;
    rpc_lock(r);
    bool busy = r->live_calls != 0;
    rpc_unlock(r);
    if (busy)
        return FLIT_ERR_AGAIN;
    if ((st = close_object(r)) != FLIT_OK)
        return st;
    free_object(r);
    return FLIT_OK;
}

flit_status flit_rpc_register_flags(flit_rpc_t *h, unsigned proc, flit_rpc_fn fn,
                                    void *user, unsigned flags)
{
    struct flit_rpc *r = fl_rpc_of(h);
    if (!r || (flags & ~FLIT_RPC_PROC_INLINE))
        return FLIT_ERR_INVALID_ARG;
    if (proc >= r->nprocs)
        return FLIT_ERR_BAD_HANDLER;
    rpc_lock(r);
    r->procs[proc].fn = fn;
    r->procs[proc].user = fn ? user : NULL;
    r->procs[proc].flags = fn ? flags : 0;
    rpc_unlock(r);
    return FLIT_OK;
}

flit_status flit_rpc_register(flit_rpc_t *r, unsigned proc, flit_rpc_fn fn, void *user)
{
    return flit_rpc_register_flags(r, proc, fn, user, 0);
}

flit_status flit_rpc_stats(flit_rpc_t *h, flit_rpc_stats_t *out)
{
    struct flit_rpc *r = fl_rpc_of(h);
    /* A program built against an earlier header knows a shorter struct (up
       to deferred): it gets what it knows. Any other size is no header's. */
    if (!r || !out ||
        (out->struct_size != offsetof(flit_rpc_stats_t, refused) &&
         out->struct_size != sizeof *out))
        return FLIT_ERR_INVALID_ARG;
    struct fl_rpc_counters *c = r->ctr;
    flit_rpc_stats_t s = {
        .struct_size = out->struct_size,
        .calls = atomic_load_explicit(&c->calls, memory_order_relaxed),
        .served = atomic_load_explicit(&c->served, memory_order_relaxed),
        .timeouts = atomic_load_explicit(&c->timeouts, memory_order_relaxed),
        .late_replies = atomic_load_explicit(&c->late_replies, memory_order_relaxed),
        .queued_replies = atomic_load_explicit(&c->queued_replies, memory_order_relaxed),
        .deferred = atomic_load_explicit(&c->deferred, memory_order_relaxed),
        .refused = atomic_load_explicit(&c->refused, memory_order_relaxed),
        .failed_replies = atomic_load_explicit(&c->failed_replies, memory_order_relaxed),
    };
    memcpy(out, &s, s.struct_size);
    return FLIT_OK;
}
