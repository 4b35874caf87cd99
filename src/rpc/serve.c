/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server half of RPC: a request arrives (an active message, or a
 * stream read as it arrives), its procedure runs in handler context, and
 * the reply goes back through the request's token when it can (an active
 * message that replied before returning, with at most a medium payload:
 * the null RPC's path) or as a message of its own (fl_rpc_send_reply).
 * Deferred replies are kept on the object's list until sent, so that its
 * destruction, or its endpoint's, answers them FLIT_ERR_CLOSED. A deferred
 * reply is handed out as a <flit/handle.h> handle: sent once, its value is
 * refused (FLIT_ERR_INVALID_ARG), also once a new reply took its block.
 */
#include <flit/handle.h>
#include <stdlib.h>

#include "internal.h"

#define GATHER_ON_STACK 256u

static flit_handles_t *replies, *requests;

struct flit_rpc_req *fl_rpc_req_of(const flit_rpc_req_t *h)
{
    return flit_handle_get(&requests, h);
}

/* ---------------------------------------------------------------- reading */

static flit_status stream_recvv(struct flit_rpc_req *q, const struct iovec *iov,
                                int iovcnt);

/* The request handle h names while its procedure runs (*out); NULL h:
   FLIT_ERR_INVALID_ARG; any other value FLIT_ERR_BAD_TOKEN. */
static flit_status req_usable(const flit_rpc_req_t *h, struct flit_rpc_req **out)
{
    if (!h)
        return FLIT_ERR_INVALID_ARG;
    *out = fl_rpc_req_of(h);
    return *out ? FLIT_OK : FLIT_ERR_BAD_TOKEN;
}

static size_t remaining_of(const struct flit_rpc_req *q)
{
    return q->stream && !q->spill ? flit_stream_remaining(q->stream) : q->len - q->pos;
}

flit_status flit_rpc_recvv(flit_rpc_req_t *h, const struct iovec *iov, int iovcnt)
{
    struct flit_rpc_req *q = NULL;
    flit_status st = req_usable(h, &q);
    size_t total;
    if (st == FLIT_OK)
        st = flit_iov_total(iov, iovcnt, &total);
    if (st != FLIT_OK)
        return st;
    if (q->stream && !q->spill)
        return stream_recvv(q, iov, iovcnt);
    if (total > q->len - q->pos)
        return FLIT_ERR_TOO_LARGE;
    q->pos += flit_iov_scatter(iov, iovcnt, q->buf + q->pos, total);
    return FLIT_OK;
}

flit_status flit_rpc_recv(flit_rpc_req_t *h, void *buf, size_t n)
{
    if (fl_rpc_req_of(h) && n && !buf)
        return FLIT_ERR_INVALID_ARG;
    struct iovec v = {.iov_base = buf, .iov_len = n};
    return flit_rpc_recvv(h, &v, 1);
}

size_t flit_rpc_remaining(const flit_rpc_req_t *h)
{
    const struct flit_rpc_req *q = fl_rpc_req_of(h);
    return q ? remaining_of(q) : 0;
}

flit_rank_t flit_rpc_caller(const flit_rpc_req_t *h)
{
    const struct flit_rpc_req *q = fl_rpc_req_of(h);
    return flit_rank(q ? q->caller : UINT32_MAX);
}

/* ---------------------------------------------------------------- replying */

/* Through the request's token: an active message reply, from the handler. */
static flit_status reply_token(struct flit_rpc_req *q, flit_status status,
                               const struct iovec *iov, int n, size_t total)
{
    uint32_t args[RPC_NARGS] = {(uint32_t)q->id, (uint32_t)(q->id >> 32),
                                (uint32_t)status};
    flit_handler_t h = flit_handler((uint16_t)(q->rpc->h.idx + 1));
    if (total == 0)
        return flit_am_reply_short(q->token, h, args, RPC_NARGS);
    if (n == 1)
        return flit_am_reply_medium(q->token, h, iov[0].iov_base, total, args, RPC_NARGS);
    /* Zeroed: flit_iov_gather is an exported call, so GCC's link-time pass
       (a program's static link with -Werror) cannot see it fill the bytes
       and warns at the reply. */
    uint8_t small[GATHER_ON_STACK] = {0};
    uint8_t *buf = total <= sizeof small ? small : calloc(1, total);
    if (!buf)
        return FLIT_ERR_NO_MEMORY;
    flit_iov_gather(buf, iov, n);
    flit_status st = flit_am_reply_medium(q->token, h, buf, total, args, RPC_NARGS);
    if (buf != small)
        free(buf);
    return st;
}

/* The reply (or the error status) to q's caller, by the token or as a
   message of its own. */
static flit_status send_answer(struct flit_rpc_req *q, flit_status status,
                               const struct iovec *iov, int n, size_t total)
{
    if (q->token && total <= FLIT_AM_MAX_MEDIUM)
        return reply_token(q, status, iov, n, total);
    return fl_rpc_send_reply(q->rpc, q->caller, q->id, status, iov, n, total);
}

/*
 * Answers q's call: with the reply, or, when that cannot be sent (no memory
 * to copy it, too large for any message), with the status that stopped it,
 * in a reply of no bytes, so that the caller's call ends with that status
 * instead of waiting for ever. The request is answered only once this has
 * been tried: nothing else will be sent for it. The reply's own status
 * goes back to the procedure.
 */
static flit_status answer(struct flit_rpc_req *q, flit_status status,
                          const struct iovec *iov, int n, size_t total)
{
    flit_status st = send_answer(q, status, iov, n, total);
    if (st != FLIT_OK && fl_rpc_caller_reachable(st)) {
        fl_rpc_reply_failed(q->rpc, q->caller, q->id, total, st);
        /* A message of its own, in the block reserved with the request (no
           memory needed): a token whose reply failed is not used again. */
        if (status == FLIT_OK)
            (void)fl_rpc_send_status(q->rpc, q->caller, q->id, st, &q->status);
    }
    q->answered = true;
    return st;
}

flit_status flit_rpc_reply(flit_rpc_req_t *h, const struct iovec *iov, int iovcnt)
{
    struct flit_rpc_req *q = NULL;
    flit_status st = req_usable(h, &q);
    if (st != FLIT_OK)
        return st;
    if (q->answered)
        return FLIT_ERR_ALREADY_REPLIED;
    size_t total;
    if ((st = flit_iov_total(iov, iovcnt, &total)) != FLIT_OK)
        return st;
    return answer(q, FLIT_OK, iov, iovcnt, total);
}

flit_status flit_rpc_defer(flit_rpc_req_t *h, flit_rpc_reply_t **out)
{
    struct flit_rpc_req *q = NULL;
    flit_status st = req_usable(h, &q);
    if (st != FLIT_OK)
        return st;
    if (q->answered)
        return FLIT_ERR_ALREADY_REPLIED;
    if (!out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rpc_reply *d = malloc(sizeof *d);
    struct rpc_out *status = fl_rpc_status_block();
    struct flit_rpc *r = q->rpc;
    st = FLIT_ERR_NO_MEMORY;
    if (d && status) {
        *d = (struct flit_rpc_reply){
            .rpc = r, .caller = q->caller, .id = q->id, .status = status};
        st = flit_handle_new(&replies, d, &d->self);
    }
    if (st != FLIT_OK) { /* nothing answered: the procedure may still reply */
        fl_rpc_status_free(status);
        free(d);
        return st;
    }
    rpc_lock(r);
    d->next = r->deferred;
    if (d->next)
        d->next->prev = d;
    r->deferred = d;
    rpc_count(&r->ctr->deferred, 1);
    rpc_unlock(r);
    q->answered = true;
    *out = d->self;
    return FLIT_OK;
}

static void deferred_unlink(struct flit_rpc *r, struct flit_rpc_reply *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        r->deferred = d->next;
    if (d->next)
        d->next->prev = d->prev;
    d->prev = d->next = NULL;
}

/* Deferred reply d, of an open object, out of its list and sent; if it
   cannot be, its status goes in its place. */
static flit_status send_deferred(struct flit_rpc_reply *d, const struct iovec *iov,
                                 int iovcnt, size_t total)
{
    struct flit_rpc *r = d->rpc;
    rpc_lock(r);
    deferred_unlink(r, d);
    rpc_unlock(r);
    flit_status st = fl_rpc_send_reply(r, d->caller, d->id, FLIT_OK, iov, iovcnt, total);
    if (st != FLIT_OK && fl_rpc_caller_reachable(st)) {
        /* The reply is lost, not the call: its status goes back instead. */
        fl_rpc_reply_failed(r, d->caller, d->id, total, st);
        (void)fl_rpc_send_status(r, d->caller, d->id, st, &d->status);
    }
    return st;
}

flit_status flit_rpc_reply_send(flit_rpc_reply_t *h, const struct iovec *iov, int iovcnt)
{
    struct flit_rpc_reply *d = flit_handle_get(&replies, h);
    if (!d)
        return FLIT_ERR_INVALID_ARG;
    size_t total;
    flit_status st = flit_iov_total(iov, iovcnt, &total);
    if (st != FLIT_OK)
        return st;
    if (flit_handle_free(&replies, h) != d)
        return FLIT_ERR_INVALID_ARG; /* another thread sent it meanwhile */
    /* NULL: the object answered it when it closed. */
    st = d->rpc ? send_deferred(d, iov, iovcnt, total) : FLIT_ERR_CLOSED;
    fl_rpc_status_free(d->status);
    free(d);
    return st;
}

void fl_rpc_close_deferred(struct flit_rpc *r)
{
    for (;;) {
        rpc_lock(r);
        struct flit_rpc_reply *d = r->deferred;
        if (d) {
            deferred_unlink(r, d);
            d->rpc = NULL; /* its owner's reply_send frees it */
        }
        rpc_unlock(r);
        if (!d)
            return;
        /* In the block reserved at defer: this answer needs no memory. */
        (void)fl_rpc_send_status(r, d->caller, d->id, FLIT_ERR_CLOSED, &d->status);
    }
}

/* ---------------------------------------------------------------- blocking */

static __thread struct flit_rpc_req *current;

/* Out of line, so that no caller keeps the thread's slot address across a
   park (the fiber may come back on another thread). */
__attribute__((noinline)) struct flit_rpc_req *fl_rpc_current(void)
{
    return current;
}

__attribute__((noinline)) static void set_current(struct flit_rpc_req *q)
{
    current = q;
}

/* Reads q's stream. Bytes still to come make the handler's fiber wait for
   them, and the thread that runs it goes back to the engine meanwhile; it
   must not carry q as its procedure there (a program thread would take
   itself for q's handler), and the one that continues the fiber takes q. */
static flit_status stream_recvv(struct flit_rpc_req *q, const struct iovec *iov,
                                int iovcnt)
{
    set_current(NULL);
    flit_status st = flit_stream_recvv(q->stream, iov, iovcnt);
    set_current(q); /* perhaps another thread now */
    return st;
}

/* The rest of the request into memory before the procedure first parks: a
   parked fiber cannot take packets, and its stream's bytes must all be in;
   an active message's bytes go when the handler that started it returns. */
static flit_status spill(struct flit_rpc_req *q)
{
    size_t left = remaining_of(q);
    if (!left || q->spill)
        return FLIT_OK;
    size_t done = q->len - left;
    if (!(q->spill = malloc(q->len)))
        return FLIT_ERR_NO_MEMORY;
    flit_status st = FLIT_OK;
    if (q->stream) {
        struct iovec v = {.iov_base = q->spill + done, .iov_len = left};
        st = stream_recvv(q, &v, 1);
    } else {
        memcpy(q->spill + done, q->buf + done, left);
    }
    q->buf = q->spill;
    q->pos = done;
    return st;
}

flit_status fl_rpc_block(struct flit_rpc_req *q)
{
    if (!q->park)
        return FLIT_ERR_IN_HANDLER;
    flit_status st = spill(q);
    if (st != FLIT_OK)
        return st;
    q->token = NULL;   /* its handler returns as q parks: reply by message */
    set_current(NULL); /* the thread goes back to the engine */
    st = flit_stream_park(q->park);
    set_current(q); /* perhaps another thread now */
    return st;
}

/* ---------------------------------------------------------------- running */

/* The procedure for proc, or the status that refuses the request. */
static flit_status judge(struct flit_rpc *r, uint32_t proc, size_t len, flit_rpc_fn *fn,
                         void **user, unsigned *flags)
{
    if (proc >= r->nprocs)
        return FLIT_ERR_NO_HANDLER;
    rpc_lock(r);
    *fn = r->procs[proc].fn;
    *user = r->procs[proc].user;
    *flags = r->procs[proc].flags;
    rpc_unlock(r);
    if (!*fn)
        return FLIT_ERR_NO_HANDLER;
    return len > r->max_request ? FLIT_ERR_TOO_LARGE : FLIT_OK;
}

/* A request from the object's pool, filled from *init; NULL: no memory. */
static struct flit_rpc_req *req_get(const struct flit_rpc_req *init)
{
    struct flit_rpc *r = init->rpc;
    rpc_lock(r);
    struct flit_rpc_req *q = r->free_reqs;
    if (q)
        r->free_reqs = q->next;
    rpc_unlock(r);
    struct rpc_out *status = q ? q->status : NULL;
    if (!q && !(q = malloc(sizeof *q)))
        return NULL;
    *q = *init;
    q->status = status ? status : fl_rpc_status_block();
    if (!q->status || flit_handle_new(&requests, q, &q->self) != FLIT_OK) {
        rpc_lock(r);
        q->next = r->free_reqs;
        r->free_reqs = q;
        rpc_unlock(r);
        return NULL; /* answered FLIT_ERR_NO_MEMORY */
    }
    return q;
}

/* q's handle ends: its procedure returned (or never ran). */
static void req_end(struct flit_rpc_req *q)
{
    (void)flit_handle_free(&requests, q->self);
    q->self = NULL;
    q->live = false;
}

static void req_put(struct flit_rpc_req *q, bool served)
{
    struct flit_rpc *r = q->rpc;
    req_end(q);
    rpc_lock(r);
    q->next = r->free_reqs;
    r->free_reqs = q;
    rpc_count(&r->ctr->served, served);
    rpc_unlock(r);
}

/* Runs q's procedure where the caller stands, and ends the request. */
static void run(struct flit_rpc_req *q)
{
    q->live = true;
    set_current(q); /* procedures do not nest: handlers make no progress */
    q->fn(q->self, q->len, q->user);
    set_current(NULL);
    req_end(q);
    free(q->spill);
    q->spill = NULL;
    if (!q->answered) /* a procedure with nothing to say: an empty reply */
        (void)answer(q, FLIT_OK, NULL, 0, 0);
    req_put(q, true);
}

/* A procedure on a stack of its own, started from an active message. */
static void run_spawned(flit_stream_t *task, size_t total, void *arg)
{
    (void)total;
    struct flit_rpc_req *q = arg;
    q->park = task;
    run(q);
}

static void serve(const struct flit_rpc_req *init, uint32_t proc)
{
    struct flit_rpc *r = init->rpc;
    flit_rpc_fn fn;
    void *user;
    unsigned flags;
    flit_status why = judge(r, proc, init->len, &fn, &user, &flags);
    struct flit_rpc_req *q = why == FLIT_OK ? req_get(init) : NULL;
    if (q) {
        q->fn = fn;
        q->user = user;
        if (flags & FLIT_RPC_PROC_INLINE)
            q->park = NULL; /* it does not block */
        if (q->stream || (flags & FLIT_RPC_PROC_INLINE)) {
            run(q); /* a streamed request's handler is on a fiber already */
            return;
        }
        why = flit_stream_spawn(r->ep, flit_rank(q->caller), run_spawned, q);
        if (why == FLIT_OK)
            return;
        req_put(q, false);
    }
    struct flit_rpc_req refused = *init;
    (void)answer(&refused, why == FLIT_OK ? FLIT_ERR_NO_MEMORY : why, NULL, 0, 0);
}

void fl_rpc_on_req_am(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    struct fl_rpc_msg m;
    uint32_t from = flit_token_rank(token).idx;
    if (fl_rpc_decode_am(args, nargs, nbytes, false, &m) != FLIT_OK) {
        /* (only this layer sends to its index) */
        fl_rpc_refused(user, "a malformed request", from);
        return;
    }
    struct flit_rpc_req q = {.rpc = user,
                             .token = token,
                             .buf = buf,
                             .len = m.len,
                             .caller = from,
                             .id = m.id};
    serve(&q, m.word);
}

void fl_rpc_on_req_stream(flit_stream_t *s, size_t total, void *user)
{
    uint8_t hdr[RPC_HDR];
    struct fl_rpc_msg m;
    uint32_t from = flit_stream_rank(s).idx;
    if (total >= RPC_HDR && flit_stream_recv(s, hdr, RPC_HDR) != FLIT_OK)
        return; /* its sender died: nothing to answer */
    if (fl_rpc_decode_hdr(total >= RPC_HDR ? hdr : NULL, total, false, &m) != FLIT_OK) {
        /* dropped with the rest of its bytes */
        fl_rpc_refused(user, "a malformed streamed request", from);
        return;
    }
    struct flit_rpc_req q = {
        .rpc = user, .stream = s, .park = s, .len = m.len, .caller = from, .id = m.id};
    serve(&q, m.word);
}
