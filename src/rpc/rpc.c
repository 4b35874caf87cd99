/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPC on the public API alone (<flit/rpc.h> for the contract, internal.h
 * for the wire): the object, the client's calls in flight and how threads
 * wait for them, replies arriving, and the queue of messages that handler
 * context could not send.
 *
 * Calls in flight live in a hash table keyed by call id, under the
 * object's mutex. A call is SENT until its reply's handler takes it out of
 * the table (RECEIVING: from then on only that handler touches the call and
 * its reply buffers, outside the mutex) and completes it (DONE, stored last
 * with release: test and wait read it without the mutex). Cancel and the
 * call's own timeout end only SENT calls; a reply for an id no longer in
 * the table is late: discarded and counted; one from a rank the call did
 * not go to is refused.
 *
 * Waiting threads (thread-safe endpoints). One waiter at a time drives
 * the endpoint (polls, then flit_wait in slices); the others sleep, each
 * on a condition of its own (struct rpc_waiter, on its stack) that the
 * calls it waits for point to. Completing a call signals its waiter only:
 * no thundering herd, and no thread takes another's reply. A driver that
 * leaves hands the driving to the first sleeper.
 *
 * Program context. A reply made inside a handler that cannot go back
 * through a token is copied to a queue; the object's progress listener
 * (flit_ep_listen) sends it after the pass that queued it, with NONBLOCK
 * sends (what finds no room waits for the next pass).
 *
 * Handles. The object and its calls are handed out as <flit/handle.h>
 * handles (a table per type), never as pointers: a destroyed object's or
 * an ended call's value answers FLIT_ERR_INVALID_ARG for ever, also once a
 * new object or call took its memory (calls are reused from the object's
 * free list at once). A call's handle is freed under the object's mutex,
 * and cancel looks it up again under that mutex before acting.
 */
#include <flit/handle.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define POLLS_FIRST 64          /* polls before a waiter turns to flit_wait */
#define SLICE_US    10000       /* longest flit_wait of a driver */
#define NAP_US                                                                           \
    100000 /* longest sleep of a follower (a backstop:                                   \
              the hand-off signals it) */

enum call_state { C_SENT, C_RECEIVING, C_DONE };

struct rpc_waiter {
    pthread_cond_t cond;
    struct rpc_waiter *next;
    bool woken;
};

struct flit_rpc_call {
    void *self;        /* its handle, while handed out */
    _Atomic int state; /* enum call_state */
    struct flit_rpc *rpc;
    uint64_t id;
    uint32_t dest;
    unsigned flags;
    bool in_table;
    int64_t deadline; /* ns, CLOCK_MONOTONIC; 0: none */
    struct iovec *rep;
    int nrep;
    size_t cap; /* sum of the reply pieces */
    struct iovec rep_keep[RPC_IOV_KEEP];
    struct rpc_waiter *waiter; /* the thread asleep on it (under the mutex) */
    flit_stream_t *parker;     /* the procedure parked on it (under the mutex) */
    flit_rpc_result_t res;
    struct flit_rpc_call *next; /* hash chain; free list */
};

/* A message for program context: a reply (or error) to a call, or a
   request a procedure made. */
struct rpc_out {
    struct rpc_out *next;
    uint32_t dest;
    uint64_t id;
    uint32_t word; /* status (reply) or procedure (request) */
    bool request;
    size_t len, cap; /* data's bytes used, allocated */
    uint8_t data[];
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static flit_handles_t *rpcs, *calls_out;

/* The object a handle names; NULL for any other value. */
static struct flit_rpc *rpc_of(flit_rpc_t *h)
{
    return flit_handle_get(&rpcs, h);
}

/* The live call a handle names; NULL for any other value (an ended call's). */
static struct flit_rpc_call *call_of(flit_rpc_call_t *h)
{
    return flit_handle_get(&calls_out, h);
}

static bool call_done(struct flit_rpc_call *c)
{
    /* Acquire: pairs with complete(); the result and reply bytes are in. */
    return atomic_load_explicit(&c->state, memory_order_acquire) == C_DONE;
}

flit_status fl_rpc_check_iov(const struct iovec *iov, int n, size_t *total)
{
    if (n < 0 || (n && !iov))
        return FLIT_ERR_INVALID_ARG;
    size_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len && !iov[i].iov_base)
            return FLIT_ERR_INVALID_ARG;
        if (iov[i].iov_len > SIZE_MAX - sum)
            return FLIT_ERR_TOO_LARGE;
        sum += iov[i].iov_len;
    }
    *total = sum;
    return FLIT_OK;
}

void fl_rpc_gather(uint8_t *dst, const struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len)
            memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
}

/* ---------------------------------------------------------------- table */

static struct flit_rpc_call **bucket(struct flit_rpc *r, uint64_t id)
{
    return &r->buckets[id & (RPC_BUCKETS - 1)];
}

static void table_add(struct flit_rpc *r, struct flit_rpc_call *c)
{
    struct flit_rpc_call **b = bucket(r, c->id);
    c->next = *b;
    *b = c;
    c->in_table = true;
}

static void table_del(struct flit_rpc *r, struct flit_rpc_call *c)
{
    struct flit_rpc_call **pp = bucket(r, c->id);
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    c->next = NULL;
    c->in_table = false;
}

/* Under the mutex: the SENT call with that id, taken out of the table, or
   NULL (a late reply: counted). */
static struct flit_rpc_call *table_take(struct flit_rpc *r, uint64_t id, uint32_t from,
                                        bool *forged)
{
    struct flit_rpc_call *c = *bucket(r, id);
    while (c && c->id != id)
        c = c->next;
    if (c && c->dest != from) { /* only the rank called answers its call */
        *forged = true;
        return NULL;
    }
    if (c && c->deadline && now_ns() >= c->deadline)
        c = NULL; /* its time is up: the waiter will say so */
    if (!c) {
        r->st.late_replies++;
        return NULL;
    }
    table_del(r, c);
    atomic_store_explicit(&c->state, C_RECEIVING, memory_order_relaxed);
    return c;
}

/* Under the mutex: the call is over; its waiter, if asleep, is told. */
static void complete(struct flit_rpc *r, struct flit_rpc_call *c, flit_status st)
{
    (void)r;
    c->res.status = st;
    /* Release: the result and the reply bytes before the state. */
    atomic_store_explicit(&c->state, C_DONE, memory_order_release);
    if (c->waiter) {
        c->waiter->woken = true;
        pthread_cond_signal(&c->waiter->cond);
    }
    if (c->parker)
        (void)flit_stream_unpark(c->parker);
}

/* Under the mutex: ends a SENT call with st (timeout, peer down, closed). */
static void end_sent(struct flit_rpc *r, struct flit_rpc_call *c, flit_status st)
{
    table_del(r, c);
    if (st == FLIT_ERR_TIMEOUT)
        r->st.timeouts++;
    complete(r, c, st);
}

/* ---------------------------------------------------------------- replies */

/* Scatters up to c->cap bytes of a len-byte reply from src (NULL: a
   stream s) into the call's buffers; the rest is left. *got: bytes placed. */
static flit_status scatter(struct flit_rpc_call *c, const uint8_t *src, flit_stream_t *s,
                           size_t len, size_t *got)
{
    size_t want = len < c->cap ? len : c->cap;
    *got = 0;
    for (int i = 0; i < c->nrep && *got < want; i++) {
        size_t k = c->rep[i].iov_len;
        if (k > want - *got)
            k = want - *got;
        if (!k)
            continue;
        if (src) {
            memcpy(c->rep[i].iov_base, src + *got, k);
        } else {
            flit_status st = flit_stream_recv(s, c->rep[i].iov_base, k);
            if (st != FLIT_OK)
                return st;
        }
        *got += k;
    }
    return FLIT_OK;
}

/* The reply into a call taken from the table (outside the mutex). */
static flit_status take_reply(struct flit_rpc_call *c, flit_status status,
                              const uint8_t *src, flit_stream_t *s, size_t len)
{
    c->res.length = len;
    c->res.received = 0;
    c->res.data = NULL;
    if (status != FLIT_OK)
        return status;
    if (c->flags & FLIT_RPC_REPLY_ALLOC) {
        if (len == 0)
            return FLIT_OK;
        if (!(c->res.data = malloc(len)))
            return FLIT_ERR_NO_MEMORY;
        c->rep_keep[0] = (struct iovec){.iov_base = c->res.data, .iov_len = len};
        c->rep = c->rep_keep;
        c->nrep = 1;
        c->cap = len;
    }
    flit_status st = scatter(c, src, s, len, &c->res.received);
    if (st == FLIT_OK && len > c->cap)
        st = FLIT_ERR_TOO_LARGE;
    if (st != FLIT_OK && c->res.data) {
        free(c->res.data);
        c->res.data = NULL;
    }
    return st;
}

static void on_reply(struct flit_rpc *r, uint32_t from, uint64_t id, flit_status status,
                     const uint8_t *src, flit_stream_t *s, size_t len)
{
    bool forged = false;
    rpc_lock(r);
    struct flit_rpc_call *c = table_take(r, id, from, &forged);
    rpc_unlock(r);
    if (forged)
        fl_rpc_refused(r, "a reply to a call not made to it", from);
    if (!c)
        return;
    flit_status st = take_reply(c, status, src, s, len);
    rpc_lock(r);
    complete(r, c, st);
    rpc_unlock(r);
}

static void on_reply_am(flit_token_t *token, void *buf, size_t nbytes,
                        const uint32_t *args, unsigned nargs, void *user)
{
    struct fl_rpc_msg m;
    if (fl_rpc_decode_am(args, nargs, nbytes, true, &m) != FLIT_OK) {
        fl_rpc_refused(user, "a malformed reply", flit_token_rank(token).idx);
        return;
    }
    on_reply(user, flit_token_rank(token).idx, m.id, (flit_status)m.word, buf, NULL,
             m.len);
}

static void on_reply_stream(flit_stream_t *s, size_t total, void *user)
{
    uint8_t hdr[RPC_HDR];
    struct fl_rpc_msg m;
    if (total >= RPC_HDR && flit_stream_recv(s, hdr, RPC_HDR) != FLIT_OK)
        return; /* its sender died */
    if (fl_rpc_decode_hdr(total >= RPC_HDR ? hdr : NULL, total, true, &m) != FLIT_OK) {
        fl_rpc_refused(user, "a malformed streamed reply", flit_stream_rank(s).idx);
        return;
    }
    on_reply(user, flit_stream_rank(s).idx, m.id, (flit_status)m.word, NULL, s, m.len);
}

/* Counts one more of a kind under the lock; true the first time, when the
   caller logs it (further ones are only counted). */
static bool count_first(struct flit_rpc *r, bool *logged, uint64_t *count)
{
    rpc_lock(r);
    bool first = !*logged;
    *logged = true;
    (*count)++;
    rpc_unlock(r);
    return first;
}

void fl_rpc_refused(struct flit_rpc *r, const char *what, uint32_t from)
{
    if (count_first(r, &r->logged_refusal, &r->st.refused))
        fprintf(stderr,
                "flit rpc: rank %u: %s from rank %u refused (further ones are only "
                "counted)\n",
                r->me, what, from);
}

void fl_rpc_reply_failed(struct flit_rpc *r, uint32_t caller, uint64_t id, size_t total,
                         flit_status st)
{
    if (count_first(r, &r->logged_failure, &r->st.failed_replies))
        fprintf(stderr,
                "flit rpc: rank %u: the reply of %zu bytes to rank %u's call %llu could "
                "not be sent (%s): the call ends with that status\n",
                r->me, total, caller, (unsigned long long)id, flit_status_name(st));
}

/* ---------------------------------------------------------------- sending */

/*
 * One message (request: word = proc, to h; reply: word = status, to h + 1)
 * of total bytes
 * gathered from iov, NONBLOCK: FLIT_ERR_AGAIN when the first packet finds
 * no room, FLIT_ERR_IN_HANDLER in handler context.
 */
static flit_status send_msg(struct flit_rpc *r, uint32_t dest, bool reply, uint32_t word,
                            uint64_t id, const struct iovec *iov, int n, size_t total)
{
    size_t am_max = reply ? FLIT_AM_MAX_MEDIUM : FLIT_RPC_AM_MAX;
    flit_handler_t h = flit_handler((uint16_t)(r->h.idx + (reply ? 1 : 0)));
    uint32_t args[RPC_NARGS] = {(uint32_t)id, (uint32_t)(id >> 32), word};
    if (total == 0)
        return flit_am_short(r->ep, flit_rank(dest), h, args, RPC_NARGS,
                             FLIT_AM_NONBLOCK);
    if (total <= am_max) {
        if (n == 1)
            return flit_am_medium(r->ep, flit_rank(dest), h, iov[0].iov_base, total, args,
                                  RPC_NARGS, FLIT_AM_NONBLOCK);
        uint8_t *buf = malloc(total);
        if (!buf)
            return FLIT_ERR_NO_MEMORY;
        fl_rpc_gather(buf, iov, n);
        flit_status st = flit_am_medium(r->ep, flit_rank(dest), h, buf, total, args,
                                        RPC_NARGS, FLIT_AM_NONBLOCK);
        free(buf);
        return st;
    }
    uint8_t hdr[RPC_HDR];
    rpc_hdr(hdr, word, id);
    flit_stream_out_t *s;
    flit_status st = flit_stream_begin(r->ep, flit_rank(dest), h, RPC_HDR + total,
                                       FLIT_STREAM_NONBLOCK, &s);
    if (st != FLIT_OK)
        return st;
    st = flit_stream_send(s, hdr, RPC_HDR);
    if (st == FLIT_OK)
        st = flit_stream_sendv(s, iov, n);
    flit_status end = flit_stream_end(s);
    return st != FLIT_OK ? st : end;
}

/* Under the mutex: appends o to the queue. */
static void out_append(struct flit_rpc *r, struct rpc_out *o)
{
    o->next = NULL;
    if (r->out_tail)
        r->out_tail->next = o;
    else
        r->out_head = o;
    r->out_tail = o;
    atomic_fetch_add_explicit(&r->nout, 1, memory_order_release);
}

/* A copy of the message (its header in *tmpl, its bytes gathered from iov)
   at the queue's tail. */
static flit_status queue(struct flit_rpc *r, const struct iovec *iov, int n, size_t total,
                         const struct rpc_out *tmpl)
{
    rpc_lock(r);
    struct rpc_out **pp = &r->spare_out, *o;
    while ((o = *pp) && o->cap < total)
        pp = &o->next;
    if (o) {
        *pp = o->next;
        r->nspare_out--;
    }
    rpc_unlock(r);
    size_t cap = o ? o->cap : total;
    if (!o && (total > SIZE_MAX - sizeof *o || !(o = malloc(sizeof *o + total))))
        return FLIT_ERR_NO_MEMORY;
    *o = *tmpl;
    o->len = total;
    o->cap = cap;
    fl_rpc_gather(o->data, iov, n);
    rpc_lock(r);
    out_append(r, o);
    if (!o->request)
        r->st.queued_replies++;
    rpc_unlock(r);
    return FLIT_OK;
}

/* A queued request that could not be sent: its call ends with st. */
static void end_request(struct flit_rpc *r, uint64_t id, flit_status st)
{
    rpc_lock(r);
    struct flit_rpc_call *c = *bucket(r, id);
    while (c && c->id != id)
        c = c->next;
    if (c)
        end_sent(r, c, st);
    rpc_unlock(r);
}

flit_status fl_rpc_send_reply(struct flit_rpc *r, uint32_t caller, uint64_t id,
                              flit_status status, const struct iovec *iov, int n,
                              size_t total)
{
    flit_status st = FLIT_ERR_AGAIN;
    /* Messages queued before go first, so try only with an empty queue. */
    if (atomic_load_explicit(&r->nout, memory_order_acquire) == 0)
        st = send_msg(r, caller, true, (uint32_t)status, id, iov, n, total);
    if (st != FLIT_ERR_AGAIN && st != FLIT_ERR_IN_HANDLER)
        return st;
    struct rpc_out o = {.dest = caller, .id = id, .word = (uint32_t)status};
    return queue(r, iov, n, total, &o);
}

struct rpc_out *fl_rpc_status_block(void)
{
    return malloc(sizeof(struct rpc_out));
}

void fl_rpc_status_free(struct rpc_out *blk)
{
    free(blk);
}

flit_status fl_rpc_send_status(struct flit_rpc *r, uint32_t caller, uint64_t id,
                               flit_status status, struct rpc_out **blk)
{
    flit_status st = FLIT_ERR_AGAIN;
    if (atomic_load_explicit(&r->nout, memory_order_acquire) == 0)
        st = send_msg(r, caller, true, (uint32_t)status, id, NULL, 0, 0);
    if (st == FLIT_OK || !fl_rpc_caller_reachable(st))
        return st;
    /* No room, a handler, or a local shortage: the reserved block goes in
       the queue, and flush sends it when it can. */
    struct rpc_out *o = *blk;
    *blk = NULL;
    *o = (struct rpc_out){.dest = caller, .id = id, .word = (uint32_t)status};
    rpc_lock(r);
    out_append(r, o);
    r->st.queued_replies++;
    rpc_unlock(r);
    return FLIT_OK;
}

/* A local shortage (memory, descriptors): the message may go later. */
static bool local_failure(flit_status st)
{
    return st == FLIT_ERR_NO_MEMORY || st == FLIT_ERR_SYSTEM;
}

/* A sent message's block back for the next one: a handler's large replies
   would otherwise cost a malloc and a free each, which for blocks above
   glibc's mmap threshold means fresh pages, faulted in one by one (several
   replies of 1 MiB in flight: 1 GB/s where one reaches 20). */
static void out_put(struct flit_rpc *r, struct rpc_out *o)
{
    if (o->cap <= RPC_OUT_KEEP_MAX) {
        rpc_lock(r);
        bool keep = r->nspare_out < RPC_OUT_KEEP;
        if (keep) {
            o->next = r->spare_out;
            r->spare_out = o;
            r->nspare_out++;
        }
        rpc_unlock(r);
        if (keep)
            return;
    }
    free(o);
}

/* Program context: sends what is queued, until the queue is empty or a
   message finds no room (it stays first). */
static void flush(struct flit_rpc *r)
{
    for (;;) {
        rpc_lock(r);
        struct rpc_out *o = r->out_head;
        if (o && !(r->out_head = o->next))
            r->out_tail = NULL;
        rpc_unlock(r);
        if (!o)
            return;
        struct iovec v = {.iov_base = o->data, .iov_len = o->len};
        flit_status st = send_msg(r, o->dest, !o->request, o->word, o->id, &v, 1, o->len);
        /* No room; or a status of no bytes (the last resort of its call)
           that meets a local shortage: it stays first, for the next pass. */
        if (st == FLIT_ERR_AGAIN ||
            (!o->request && o->len == 0 && o->word != FLIT_OK && local_failure(st))) {
            rpc_lock(r);
            o->next = r->out_head;
            r->out_head = o;
            if (!o->next)
                r->out_tail = o;
            rpc_unlock(r);
            return;
        }
        if (!o->request && st != FLIT_OK && st != FLIT_ERR_IN_HANDLER &&
            (o->len || o->word == FLIT_OK) && fl_rpc_caller_reachable(st)) {
            /* A reply that cannot be sent: its status goes in its place
               (no bytes, the same block, first in the queue still). */
            fl_rpc_reply_failed(r, o->dest, o->id, o->len, st);
            o->len = 0;
            o->word = (uint32_t)st;
            rpc_lock(r);
            o->next = r->out_head;
            r->out_head = o;
            if (!o->next)
                r->out_tail = o;
            rpc_unlock(r);
            continue;
        }
        /* Sent, or never will be (a peer died, the endpoint closes). */
        atomic_fetch_sub_explicit(&r->nout, 1, memory_order_relaxed);
        if (o->request && st != FLIT_OK)
            end_request(r, o->id, st);
        out_put(r, o);
        if (st == FLIT_ERR_IN_HANDLER)
            return; /* not program context after all: cannot happen */
    }
}

/* ---------------------------------------------------------------- listener */

static void on_progress(flit_ep_t *ep, void *user)
{
    (void)ep;
    struct flit_rpc *r = user;
    if (atomic_load_explicit(&r->nout, memory_order_acquire))
        flush(r);
}

/* Under the mutex: ends every SENT call (to dest, or every one with dest
   UINT32_MAX) with st. */
static void end_all(struct flit_rpc *r, uint32_t dest, flit_status st)
{
    for (unsigned b = 0; b < RPC_BUCKETS; b++) {
        struct flit_rpc_call *c = r->buckets[b], *next;
        for (; c; c = next) {
            next = c->next;
            if (dest == UINT32_MAX || c->dest == dest)
                end_sent(r, c, st);
        }
    }
}

static void on_peer_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep;
    (void)reason;
    struct flit_rpc *r = user;
    rpc_lock(r);
    end_all(r, peer.idx, FLIT_ERR_PEER_DOWN);
    rpc_unlock(r);
}

/* Sends every queued message, waiting for room as it must (program
   context, with no handler to wait behind). */
static void drain(struct flit_rpc *r)
{
    while (atomic_load_explicit(&r->nout, memory_order_acquire)) {
        flush(r);
        if (atomic_load_explicit(&r->nout, memory_order_acquire) &&
            flit_wait(r->ep, SLICE_US) != FLIT_OK)
            if (flit_poll(r->ep) != FLIT_OK)
                return; /* the endpoint is going: nothing will leave */
    }
}

static void on_closing(flit_ep_t *ep, void *user)
{
    (void)ep;
    struct flit_rpc *r = user;
    fl_rpc_close_deferred(r);
    drain(r);
    rpc_lock(r);
    r->ep_closing = true;
    end_all(r, UINT32_MAX, FLIT_ERR_CLOSED);
    rpc_unlock(r);
}

/* ---------------------------------------------------------------- object */

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
        st = flit_am_register(r->ep, rep, on ? on_reply_am : discard_am, r);
    if (st == FLIT_OK) /* streamed requests: on a fiber, so that they may park */
        st = flit_stream_register_flags(r->ep, r->h,
                                        on ? fl_rpc_on_req_stream : discard_stream, r,
                                        on ? FLIT_STREAM_FIBER : 0);
    if (st == FLIT_OK)
        st = flit_stream_register(r->ep, rep, on ? on_reply_stream : discard_stream, r);
    return st;
}

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
    for (struct flit_rpc_call *c = r->free_calls, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    for (struct flit_rpc_req *q = r->free_reqs, *next; q; q = next) {
        next = q->next;
        fl_rpc_status_free(q->status);
        free(q);
    }
    for (struct rpc_out *o = r->out_head, *next; o; o = next) {
        next = o->next;
        free(o);
    }
    for (struct rpc_out *o = r->spare_out, *next; o; o = next) {
        next = o->next;
        free(o);
    }
    (void)flit_handle_free(&rpcs, r->self);
    pthread_mutex_destroy(&r->lock);
    free(r->procs);
    free(r);
}

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
    /* Every rank's handlers are in place before anyone calls. */
    if ((st = flit_barrier(r->ep)) != FLIT_OK)
        (void)flit_ep_unlisten(r->ep, &r->listener, r);
    return st;
}

flit_status flit_rpc_create(flit_ep_t *ep, const flit_rpc_params_t *params,
                            flit_rpc_t **out)
{
    if (!ep || !out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rpc *r = calloc(1, sizeof *r);
    if (!r)
        return FLIT_ERR_NO_MEMORY;
    flit_status st = read_params(r, params);
    if (st != FLIT_OK) {
        free(r);
        return st;
    }
    r->ep = ep;
    r->size = flit_job_size();
    r->me = flit_job_rank().idx;
    r->next_id = 1;
    atomic_init(&r->nout, 0);
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return FLIT_ERR_SYSTEM;
    }
    if ((st = flit_handle_new(&rpcs, r, &r->self)) != FLIT_OK ||
        (st = open_object(r)) != FLIT_OK) {
        free_object(r);
        return st;
    }
    *out = r->self;
    return FLIT_OK;
}

flit_status flit_rpc_destroy(flit_rpc_t *h)
{
    struct flit_rpc *r = rpc_of(h);
    if (!r)
        return FLIT_ERR_INVALID_ARG;
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
    fl_rpc_close_deferred(r);
    drain(r);
    /* Every rank has its replies out and no call outstanding. */
    if ((st = flit_barrier(r->ep)) != FLIT_OK)
        return st;
    if ((st = install(r, false)) != FLIT_OK)
        return st;
    if ((st = flit_ep_unlisten(r->ep, &r->listener, r)) != FLIT_OK)
        return st;
    free_object(r);
    return FLIT_OK;
}

flit_status flit_rpc_register_flags(flit_rpc_t *h, unsigned proc, flit_rpc_fn fn,
                                    void *user, unsigned flags)
{
    struct flit_rpc *r = rpc_of(h);
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
    struct flit_rpc *r = rpc_of(h);
    /* A program built against an earlier header knows a shorter struct (up
       to deferred): it gets what it knows. Any other size is no header's. */
    if (!r || !out ||
        (out->struct_size != offsetof(flit_rpc_stats_t, refused) &&
         out->struct_size != sizeof *out))
        return FLIT_ERR_INVALID_ARG;
    rpc_lock(r);
    flit_rpc_stats_t s = r->st;
    rpc_unlock(r);
    s.struct_size = out->struct_size;
    memcpy(out, &s, s.struct_size);
    return FLIT_OK;
}

/* ---------------------------------------------------------------- calls */

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
    if (o &&
        ((o->field_mask & ~(uint64_t)(FLIT_RPC_OPT_FLAGS | FLIT_RPC_OPT_TIMEOUT)) ||
         ((o->field_mask & FLIT_RPC_OPT_FLAGS) && (o->flags & ~FLIT_RPC_REPLY_ALLOC))))
        return FLIT_ERR_INVALID_ARG;
    size_t cap;
    flit_status st = fl_rpc_check_iov(rep, nrep, &cap);
    if (st != FLIT_OK)
        return st == FLIT_ERR_TOO_LARGE ? FLIT_ERR_INVALID_ARG : st;
    return fl_rpc_check_iov(req, nreq, reqlen);
}

/* Fills c's reply buffers and deadline from the arguments. */
static flit_status call_setup(struct flit_rpc_call *c, const struct iovec *rep, int nrep,
                              const flit_rpc_opts_t *o)
{
    c->flags = o && (o->field_mask & FLIT_RPC_OPT_FLAGS) ? o->flags : 0;
    if (o && (o->field_mask & FLIT_RPC_OPT_TIMEOUT) && o->timeout_us >= 0)
        c->deadline = now_ns() + o->timeout_us * 1000;
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

flit_status flit_rpc_icall(flit_rpc_t *h, flit_rank_t dest, unsigned proc,
                           const struct iovec *req, int nreq, const struct iovec *rep,
                           int nrep, const flit_rpc_opts_t *opts, flit_rpc_call_t **out)
{
    struct flit_rpc *r = rpc_of(h);
    size_t len;
    flit_status st = check_call(r, dest, proc, req, nreq, rep, nrep, opts, &len);
    if (st != FLIT_OK)
        return st;
    if (!out)
        return FLIT_ERR_INVALID_ARG;
    rpc_lock(r);
    if (r->ep_closing) {
        rpc_unlock(r);
        return FLIT_ERR_CLOSED;
    }
    struct flit_rpc_call *c = call_get(r);
    if (c) {
        c->id = r->next_id++;
        c->dest = dest.idx;
        r->st.calls++;
        /* In the table before the request leaves: the reply may come
           before the send returns (another thread, a rank to itself). */
        table_add(r, c);
    }
    rpc_unlock(r);
    if (!c)
        return FLIT_ERR_NO_MEMORY;
    if ((st = call_setup(c, rep, nrep, opts)) == FLIT_OK) {
        st = send_msg(r, dest.idx, false, proc, c->id, req, nreq, len);
        while (st == FLIT_ERR_AGAIN) { /* no room: wait for it, handlers running */
            (void)flit_poll(r->ep);
            st = send_msg(r, dest.idx, false, proc, c->id, req, nreq, len);
        }
        struct flit_rpc_req *cur;
        if (st == FLIT_ERR_IN_HANDLER && (cur = fl_rpc_current()) && cur->park) {
            /* A procedure that may block: its call leaves from program
               context, and it waits parked. */
            struct rpc_out o = {
                .dest = dest.idx, .id = c->id, .word = proc, .request = true};
            st = queue(r, req, nreq, len, &o);
        }
    }
    if (st != FLIT_OK) {
        rpc_lock(r);
        if (c->in_table)
            table_del(r, c);
        r->st.calls--;
        call_put(r, c);
        rpc_unlock(r);
        return st;
    }
    *out = c->self;
    return FLIT_OK;
}

/* Ends a complete call (*cp its live handle): its result out, its handle
   freed. */
static flit_status finish(flit_rpc_call_t **cp, flit_rpc_result_t *result)
{
    struct flit_rpc_call *c = call_of(*cp);
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

/* Under the mutex: ends the SENT calls among calls[0..n) whose own time is
   up; whether one of them is (now) complete. */
static bool any_done(flit_rpc_call_t **calls, size_t n, int64_t now, size_t *idx)
{
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = call_of(calls[i]);
        if (!c)
            continue;
        if (c->deadline && now >= c->deadline &&
            atomic_load_explicit(&c->state, memory_order_relaxed) == C_SENT)
            end_sent(c->rpc, c, FLIT_ERR_TIMEOUT);
        if (call_done(c)) {
            *idx = i;
            return true;
        }
    }
    return false;
}

/* The earliest of the calls' own deadlines and limit (ns; 0: none). */
static int64_t next_deadline(flit_rpc_call_t **calls, size_t n, int64_t limit)
{
    int64_t d = limit;
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = call_of(calls[i]);
        if (c && c->deadline && (!d || c->deadline < d))
            d = c->deadline;
    }
    return d;
}

static bool any_done_unlocked(flit_rpc_call_t **calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = call_of(calls[i]);
        if (c && call_done(c))
            return true;
    }
    return false;
}

/* Under the mutex: the thread asleep on (w) or the procedure parked on
   (park) the live calls among calls[0..n), whichever is_thread says. */
static void set_sleeper(flit_rpc_call_t **calls, size_t n, bool is_thread,
                        struct rpc_waiter *w, flit_stream_t *park)
{
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = call_of(calls[i]);
        if (c && is_thread)
            c->waiter = w;
        else if (c)
            c->parker = park;
    }
}

/* One turn of driving: polls first, then one flit_wait up to deadline. */
static flit_status drive(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                         int64_t deadline, bool first)
{
    if (first) {
        for (int i = 0; i < POLLS_FIRST; i++) {
            flit_status st = flit_poll(r->ep);
            if (st != FLIT_OK)
                return st;
            if (any_done_unlocked(calls, n))
                return FLIT_OK;
        }
    }
    int64_t slice = SLICE_US;
    if (deadline) {
        int64_t left = (deadline - now_ns()) / 1000;
        slice = left < slice ? (left > 0 ? left : 0) : slice;
    }
    flit_status st = flit_wait(r->ep, slice);
    return st == FLIT_ERR_TIMEOUT ? FLIT_OK : st;
}

/* Under the mutex: sleeps as a follower until woken or deadline (or a
   nap at most). */
static void follow(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                   int64_t deadline)
{
    struct rpc_waiter w = {.woken = false};
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cond, &a);
    pthread_condattr_destroy(&a);
    set_sleeper(calls, n, true, &w, NULL);
    w.next = r->sleepers;
    r->sleepers = &w;
    int64_t until = now_ns() + (int64_t)NAP_US * 1000;
    if (deadline && deadline < until)
        until = deadline;
    struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
    while (!w.woken && r->driving && now_ns() < until)
        if (pthread_cond_timedwait(&w.cond, &r->lock, &ts) != 0)
            break;
    struct rpc_waiter **pp = &r->sleepers;
    while (*pp != &w)
        pp = &(*pp)->next;
    *pp = w.next;
    set_sleeper(calls, n, true, NULL, NULL);
    pthread_cond_destroy(&w.cond);
}

/* Inside procedure cur (it may block): parks it until one of the calls is
   complete. The calls' own timeouts are seen only when it is woken. */
static flit_status wait_parked(struct flit_rpc *r, struct flit_rpc_req *cur,
                               flit_rpc_call_t **calls, size_t n, size_t *idx)
{
    for (;;) {
        rpc_lock(r);
        bool done = any_done(calls, n, now_ns(), idx);
        set_sleeper(calls, n, false, NULL, done ? NULL : cur->park);
        rpc_unlock(r);
        if (done)
            return FLIT_OK;
        flit_status st = fl_rpc_block(cur);
        if (st != FLIT_OK) {
            rpc_lock(r);
            set_sleeper(calls, n, false, NULL, NULL);
            rpc_unlock(r);
            return st;
        }
    }
}

/*
 * Waits until one of calls[0..n) is complete (*idx: which; FLIT_OK),
 * limit passes (ns, 0: none; FLIT_ERR_AGAIN), or progress fails.
 */
static flit_status wait_calls(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                              int64_t limit, size_t *idx)
{
    struct flit_rpc_req *cur = fl_rpc_current();
    if (cur && cur->park)
        return wait_parked(r, cur, calls, n, idx);
    flit_status st = FLIT_OK;
    bool first = true;
    rpc_lock(r);
    for (;;) {
        int64_t now = now_ns();
        if (any_done(calls, n, now, idx))
            break;
        if (limit && now >= limit && !first) { /* one pass at least */
            st = FLIT_ERR_AGAIN;
            break;
        }
        int64_t deadline = next_deadline(calls, n, limit);
        if (r->mt && r->driving) {
            follow(r, calls, n, deadline);
            first = false;
            continue;
        }
        r->driving = true;
        rpc_unlock(r);
        st = drive(r, calls, n, deadline, first);
        first = false;
        rpc_lock(r);
        r->driving = false;
        if (st != FLIT_OK)
            break;
    }
    /* Hand the driving to a sleeper, if there is one. */
    if (r->mt && !r->driving && r->sleepers) {
        r->sleepers->woken = true;
        pthread_cond_signal(&r->sleepers->cond);
    }
    rpc_unlock(r);
    return st;
}

flit_status flit_rpc_test(flit_rpc_call_t **cp, int *done, flit_rpc_result_t *result)
{
    struct flit_rpc_call *c = cp ? call_of(*cp) : NULL;
    if (!c || !done)
        return FLIT_ERR_INVALID_ARG;
    size_t idx;
    if (!call_done(c)) {
        /* Inside a handler no progress can be made: test only looks. */
        flit_status st = flit_poll(c->rpc->ep);
        if (st != FLIT_OK && st != FLIT_ERR_IN_HANDLER)
            return st;
        rpc_lock(c->rpc);
        bool d = any_done(cp, 1, now_ns(), &idx);
        rpc_unlock(c->rpc);
        if (!d) {
            *done = 0;
            return FLIT_OK;
        }
    }
    *done = 1;
    return finish(cp, result);
}

static int64_t limit_of(int64_t timeout_us)
{
    return timeout_us < 0 ? 0 : now_ns() + timeout_us * 1000 + 1;
}

flit_status flit_rpc_wait_any(size_t n, flit_rpc_call_t **calls, int64_t timeout_us,
                              size_t *index, flit_rpc_result_t *result)
{
    if (!calls || !index)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rpc *r = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!calls[i])
            continue;
        struct flit_rpc_call *c = call_of(calls[i]);
        if (!c || (r && c->rpc != r))
            return FLIT_ERR_INVALID_ARG;
        r = c->rpc;
    }
    if (!r)
        return FLIT_ERR_INVALID_ARG;
    size_t idx;
    flit_status st = wait_calls(r, calls, n, limit_of(timeout_us), &idx);
    if (st != FLIT_OK)
        return st;
    *index = idx;
    return finish(&calls[idx], result);
}

flit_status flit_rpc_wait(flit_rpc_call_t **cp, int64_t timeout_us,
                          flit_rpc_result_t *result)
{
    if (!cp || !call_of(*cp))
        return FLIT_ERR_INVALID_ARG;
    size_t idx;
    return flit_rpc_wait_any(1, cp, timeout_us, &idx, result);
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
    st = wait_calls(rpc_of(h), &c, 1, 0, &idx);
    if (st != FLIT_OK &&
        !call_done(call_of(c))) { /* progress failed: the endpoint goes */
        /* A call whose reply is being received stays: a handler holds it. */
        (void)flit_rpc_cancel(&c);
        return st;
    }
    return finish(&c, result);
}

flit_status flit_rpc_cancel(flit_rpc_call_t **cp)
{
    struct flit_rpc_call *c = cp ? call_of(*cp) : NULL;
    if (!c)
        return FLIT_ERR_INVALID_ARG;
    struct flit_rpc *r = c->rpc;
    rpc_lock(r);
    /* Again under the mutex that ends calls: another thread's test or
       wait may have ended it meanwhile. */
    bool live = call_of(*cp) == c;
    bool sent = live && atomic_load_explicit(&c->state, memory_order_relaxed) == C_SENT;
    if (sent) {
        table_del(r, c);
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
