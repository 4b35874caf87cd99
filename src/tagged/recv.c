/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiving (<flit/tagged.h>): a receive matches the first unexpected
 * message that fits or is posted (match.c); a blocking one waits on its
 * own stack, and leaves only once no handler can touch it.
 */
#include <sched.h>

#include "internal.h"

static flit_status check_recv(const struct flit_tagged *t, flit_rank_t source,
                              const void *buf, size_t size)
{
    if (!t)
        return FLIT_ERR_INVALID_ARG;
    if (source.idx >= t->size && source.idx != FLIT_ANY_SOURCE)
        return FLIT_ERR_RANK;
    if (!buf && size)
        return FLIT_ERR_INVALID_ARG;
    return FLIT_OK;
}

static void recv_set(struct flit_request *r, uint32_t source, uint64_t tag, void *buf,
                     size_t size)
{
    r->source = source;
    r->tag = tag;
    r->buf = buf;
    r->size = size;
    r->iov = NULL;
    r->iovcnt = 0;
}

/* Under the mutex: withdraws r if no handler has it yet (posted, or
   waiting for a claimed message); whether it did. */
static bool withdraw_locked(struct flit_tagged *t, struct flit_request *r)
{
    bool withdrawn = r->posted || r->claimed;
    if (r->posted)
        fl_tagged_posted_unlink(t, r);
    if (r->claimed) {
        r->claimed->req = NULL;
        r->claimed = NULL;
    }
    return withdrawn;
}

/*
 * A blocking receive's wait failed with st; its request r lives on the
 * caller's stack, so it may return only once no handler can touch r.
 * Still posted, or waiting for a claimed message: withdrawn, st returned.
 * Already matched, its message is being received: waits for it (FLIT_OK,
 * the message is in) while the wait can go on. flit_wait fails only on
 * entry: FLIT_ERR_THREAD (another thread is inside: it will leave) is
 * retried; after any other error no handler can run again on this thread
 * or any other (finalized, forked, a destroyed endpoint), so returning is
 * safe. FLIT_ERR_IN_HANDLER cannot find r matched: that would take
 * progress, which no thread makes while this one runs a handler.
 */
static flit_status recv_abandon(struct flit_request *r, flit_status st)
{
    struct flit_tagged *t = r->t;
    lock(t);
    bool withdrawn = withdraw_locked(t, r);
    unlock(t);
    if (withdrawn)
        return st;
    while (!req_done(r)) {
        if (st == FLIT_ERR_THREAD)
            sched_yield();
        else if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
        st = flit_wait(t->ep, WAIT_SLICE_US);
    }
    return FLIT_OK;
}

/* irecv, into buf or (iov not NULL) into iovcnt pieces of size bytes in
   all. */
static flit_status irecv(struct flit_tagged *t, flit_rank_t source, uint64_t tag,
                         void *buf, size_t size, const struct iovec *iov, int iovcnt,
                         flit_request_t **req)
{
    if (!req)
        return FLIT_ERR_INVALID_ARG;
    lock(t);
    struct flit_request *r = fl_tagged_req_get(t, REQ_RECV);
    struct entry *large = NULL;
    bool done = false;
    if (r) {
        recv_set(r, source.idx, tag, buf, size);
        r->iov = iov;
        r->iovcnt = iovcnt;
        done = fl_tagged_post_locked(t, r, &large);
    }
    unlock(t);
    if (!r)
        return FLIT_ERR_NO_MEMORY;
    if (large)
        fl_tagged_take_large(r, large);
    void *handle = r->self; /* before it completes: another thread may end it */
    if (done || large)
        req_complete(r);
    *req = handle;
    return FLIT_OK;
}

flit_status flit_tagged_irecv(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                              void *buf, size_t size, flit_request_t **req)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    flit_status st = check_recv(t, source, buf, size);
    if (st != FLIT_OK)
        return st;
    return irecv(t, source, tag, buf, size, NULL, 0, req);
}

flit_status flit_tagged_irecvv(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                               const struct iovec *iov, int iovcnt, flit_request_t **req)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    size_t size = 0;
    flit_status st = flit_iov_total(iov, iovcnt, &size);
    if (st == FLIT_OK)
        st = check_recv(t, source, iov, size);
    if (st != FLIT_OK)
        return st;
    return irecv(t, source, tag, NULL, size, iovcnt ? iov : NULL, iovcnt, req);
}

flit_status flit_tagged_recv(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                             void *buf, size_t size, flit_tagged_info_t *info)
{
    return flit_tagged_recv_for(h, source, tag, buf, size, -1, info);
}

flit_status flit_tagged_recv_for(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                                 void *buf, size_t size, int64_t timeout_us,
                                 flit_tagged_info_t *info)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    flit_status st = check_recv(t, source, buf, size);
    if (st != FLIT_OK)
        return st;
    struct flit_request r; /* no free list: we wait for it here */
    fl_tagged_req_init(&r, t, REQ_RECV);
    recv_set(&r, source.idx, tag, buf, size);
    struct entry *large;
    lock(t);
    bool done = fl_tagged_post_locked(t, &r, &large);
    unlock(t);
    if (large)
        fl_tagged_take_large(&r, large);
    if (!done && !large) {
        st = fl_tagged_progress_until(t->ep, fl_tagged_req_done_cb, &r, timeout_us);
        if (st != FLIT_OK && (st = recv_abandon(&r, st)) != FLIT_OK)
            return st;
    }
    if (info)
        *info = r.info;
    return r.info.status;
}
