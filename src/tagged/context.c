/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A tagged context's life (internal.h): created collectively on a stream
 * handler, handed out as a <flit/handle.h> handle (a destroyed context's
 * value answers FLIT_ERR_INVALID_ARG, also once its memory holds a new
 * one), destroyed once no request is outstanding and every handler that
 * started has left it.
 */
#include <flit/handle.h>
#include <flit/layer.h>

#include <stdlib.h>

#include "internal.h"

static flit_handles_t *contexts;

struct flit_tagged *fl_tagged_ctx_of(flit_tagged_t *h)
{
    return flit_handle_get(&contexts, h);
}

/* The fields create sets before anything is installed. */
static flit_status ctx_init(struct flit_tagged *t, flit_ep_t *ep, flit_handler_t h)
{
    t->ep = ep;
    t->h = h;
    t->size = flit_job_size();
    t->me = flit_job_rank().idx;
    flit_thread_mode mode = FLIT_THREAD_SINGLE;
    flit_status st = flit_ep_thread_mode(ep, &mode);
    t->mt = mode == FLIT_THREAD_SAFE;
    return st;
}

/* Collective: the handler installed on every rank, then t's handle. */
static flit_status ctx_open(struct flit_tagged *t)
{
    flit_status st = flit_stream_register(t->ep, t->h, fl_tagged_on_message, t);
    if (st != FLIT_OK)
        return st;
    /* Every rank's handler is in place before anyone sends. */
    st = flit_barrier(t->ep);
    if (st == FLIT_OK)
        st = flit_handle_new(&contexts, t, &t->self);
    if (st != FLIT_OK)
        (void)flit_stream_register(t->ep, t->h, NULL, NULL);
    return st;
}

flit_status flit_tagged_create(flit_ep_t *ep, flit_handler_t h, flit_tagged_t **out)
{
    return fl_tagged_ctx_create(ep, h, NULL, false, out);
}

flit_status fl_tagged_ctx_create(flit_ep_t *ep, flit_handler_t h,
                                 struct fl_tagged_counters *ctr, bool owned,
                                 flit_tagged_t **out)
{
    if (!ep || !out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_tagged *t = calloc(1, sizeof *t);
    if (!t)
        return FLIT_ERR_NO_MEMORY;
    t->ctr = ctr ? ctr : &t->own;
    t->owned = owned;
    flit_status st = ctx_init(t, ep, h);
    if (st != FLIT_OK)
        goto err_free;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        st = FLIT_ERR_SYSTEM;
        goto err_free;
    }
    if ((st = ctx_open(t)) != FLIT_OK)
        goto err_destroy_lock;
    *out = t->self;
    return FLIT_OK;
err_destroy_lock:
    pthread_mutex_destroy(&t->lock);
err_free:
    free(t);
    return st;
}

static bool handlers_gone(void *arg)
{
    struct flit_tagged *t = arg;
    lock(t);
    bool gone = atomic_load(&t->handlers_in) == t->handlers_left;
    unlock(t);
    return gone;
}

static void free_context(struct flit_tagged *t)
{
    uint64_t dropped, bytes;
    fl_tagged_entries_free_all(t, &dropped, &bytes);
    fl_tagged_req_free_all(t);
    uint64_t malformed = atomic_load_explicit(&t->ctr->malformed, memory_order_relaxed);
    uint64_t lost = atomic_load_explicit(&t->ctr->lost, memory_order_relaxed);
    if (dropped || malformed || lost)
        flit_log(FLIT_LOG_DEBUG,
                 "tagged context on handler %u destroyed with %llu unexpected "
                 "messages (%llu bytes) nobody received; %llu malformed and %llu lost "
                 "for memory along the way",
                 t->h.idx, (unsigned long long)dropped, (unsigned long long)bytes,
                 (unsigned long long)malformed, (unsigned long long)lost);
    (void)flit_handle_free(&contexts, t->self);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static bool requests_out(struct flit_tagged *t)
{
    lock(t);
    bool busy = fl_tagged_req_outstanding(t) != 0;
    unlock(t);
    return busy;
}

flit_status flit_tagged_destroy(flit_tagged_t *h)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    if (!t || t->owned) /* the endpoint's own goes with the endpoint */
        return FLIT_ERR_INVALID_ARG;
    return fl_tagged_ctx_destroy(t);
}

flit_status fl_tagged_ctx_destroy(struct flit_tagged *t)
{
    /* Also the handler check: a handler must not free what it runs in. */
    flit_status st = flit_poll(t->ep);
    if (st == FLIT_ERR_FINALIZED) { /* the endpoint and its table are gone */
        free_context(t);
        return FLIT_OK;
    }
    if (st != FLIT_OK)
        return st;
    if (requests_out(t))
        return FLIT_ERR_AGAIN;
    /* No handler starts after this (it takes the endpoint, as every
       handler runs inside it); those started, seen below, finish. */
    st = flit_stream_register(t->ep, t->h, NULL, NULL);
    if (st == FLIT_OK)
        st = fl_tagged_progress_until(t->ep, handlers_gone, t, -1);
    if (st != FLIT_OK)
        return st; /* unregistered but intact: destroy may be called again */
    free_context(t);
    return FLIT_OK;
}
