/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completing requests (<flit/tagged.h>): test, wait, waitall and cancel.
 * Completion is read without the mutex (req_done); ending a request gives
 * it back to its context's free list.
 */
#include "internal.h"

flit_status flit_tagged_test(flit_request_t **req, int *done, flit_tagged_info_t *info)
{
    struct flit_request *r = req ? fl_tagged_req_of(*req) : NULL;
    if (!r || !done)
        return FLIT_ERR_INVALID_ARG;
    if (!req_done(r)) {
        /* Inside a handler no progress can be made: test only looks. */
        flit_status st = flit_poll(r->t->ep);
        if (st != FLIT_OK && st != FLIT_ERR_IN_HANDLER)
            return st;
        if (!req_done(r)) {
            *done = 0;
            return FLIT_OK;
        }
    }
    *done = 1;
    return fl_tagged_req_finish(r, req, info);
}

flit_status flit_tagged_wait(flit_request_t **req, int64_t timeout_us,
                             flit_tagged_info_t *info)
{
    struct flit_request *r = req ? fl_tagged_req_of(*req) : NULL;
    if (!r)
        return FLIT_ERR_INVALID_ARG;
    if (!req_done(r)) {
        flit_status st =
            fl_tagged_progress_until(r->t->ep, fl_tagged_req_done_cb, r, timeout_us);
        if (st != FLIT_OK)
            return st;
    }
    return fl_tagged_req_finish(r, req, info);
}

struct waitall {
    size_t n, next; /* reqs[next] is the first not seen complete */
    flit_request_t **reqs;
    flit_tagged_info_t *infos;
    size_t first_bad; /* index of the first non-OK status; n: none */
    flit_status bad;
};

/* Finishes reqs[i], remembering the first (by index) non-OK status. */
static void waitall_finish(struct waitall *w, struct flit_request *r, size_t i)
{
    flit_status st = fl_tagged_req_finish(r, &w->reqs[i], w->infos ? &w->infos[i] : NULL);
    if (st != FLIT_OK && i < w->first_bad) {
        w->first_bad = i;
        w->bad = st;
    }
}

/* Requests complete mostly in order: finish from next on while they are. */
static bool waitall_advance(void *arg)
{
    struct waitall *w = arg;
    while (w->next < w->n) {
        struct flit_request *r = fl_tagged_req_of(w->reqs[w->next]);
        if (r) {
            if (!req_done(r))
                return false;
            waitall_finish(w, r, w->next);
        }
        w->next++;
    }
    return true;
}

/* Every non-NULL entry names a live request. */
static bool all_live(size_t n, flit_request_t **reqs)
{
    for (size_t i = 0; i < n; i++)
        if (reqs[i] && !fl_tagged_req_of(reqs[i]))
            return false;
    return true;
}

/* After a failed wait: finishes what did complete; the rest stays. */
static void waitall_salvage(struct waitall *w)
{
    for (size_t i = w->next; i < w->n; i++) {
        struct flit_request *r = fl_tagged_req_of(w->reqs[i]);
        if (r && req_done(r))
            waitall_finish(w, r, i);
    }
}

flit_status flit_tagged_waitall(size_t n, flit_request_t **reqs, int64_t timeout_us,
                                flit_tagged_info_t *infos)
{
    if ((n && !reqs) || !all_live(n, reqs))
        return FLIT_ERR_INVALID_ARG;
    struct waitall w = {.n = n, .reqs = reqs, .infos = infos, .first_bad = n};
    while (!waitall_advance(&w)) {
        flit_ep_t *ep = fl_tagged_req_of(w.reqs[w.next])->t->ep;
        flit_status st = fl_tagged_progress_until(ep, waitall_advance, &w, timeout_us);
        if (st != FLIT_OK) {
            waitall_salvage(&w);
            return st;
        }
    }
    return w.first_bad < n ? w.bad : FLIT_OK;
}

flit_status flit_tagged_cancel(flit_request_t **req)
{
    struct flit_request *r = req ? fl_tagged_req_of(*req) : NULL;
    if (!r)
        return FLIT_ERR_INVALID_ARG;
    if (r->kind != REQ_RECV)
        return FLIT_ERR_AGAIN; /* a send is complete: wait for it */
    struct flit_tagged *t = r->t;
    lock(t);
    /* Again under the mutex that unlinks posted receives: a live, posted
       request is this one, not one that took its block meanwhile. */
    bool live = fl_tagged_req_of(*req) == r;
    bool posted = live && r->posted;
    if (posted) {
        fl_tagged_posted_unlink(t, r);
        fl_tagged_req_put_locked(t, r);
    }
    unlock(t);
    if (!live)
        return FLIT_ERR_INVALID_ARG;
    if (!posted)
        return FLIT_ERR_AGAIN;
    *req = NULL;
    return FLIT_OK;
}
