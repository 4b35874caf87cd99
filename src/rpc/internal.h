/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RPC layer's own interface between its files. Built on <flit/...>
 * alone, like src/tagged:
 *
 *   wire.h    the messages as they travel, and their validating decoders;
 *   object.c  an object's life: create, destroy, procedures, statistics,
 *             the endpoint listener;
 *   layer.c   the layer's seat (<flit/layer.h>): the endpoint's own
 *             object, opened and closed with it, its setting and counters;
 *   call.c    the client's calls: handles, issue, finish, cancel;
 *   table.c   the calls in flight, by id, and how they end;
 *   wait.c    how threads (and parked procedures) wait for calls;
 *   reply.c   replies arriving, into the calls' buffers;
 *   send.c    one message out, as an active message or a stream;
 *   queue.c   what handler context could not send, sent from program
 *             context;
 *   refuse.c  what a peer sent that is refused, and replies that failed:
 *             counted, the first logged;
 *   serve.c   requests arriving, procedures, replies;
 *   sync.c    the mutex and condition procedures block on.
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
 * Wire, little-endian:
 *  - request as an active message to handler h: args {id lo, id hi, proc},
 *    the request as a medium payload (short when empty);
 *  - reply as an active message to h + 1 (through the request's token, or
 *    as a request of its own): args {id lo, id hi, status}, the reply as a
 *    medium payload (short when empty);
 *  - request or reply as a stream to h (request) or h + 1 (reply): a
 *    16-byte header {word (proc or status) u32, magic u32, id u64}, then
 *    the bytes; the request's stream handler runs on a fiber from its
 *    start (FLIT_STREAM_FIBER), so that its procedure may park.
 *
 * Procedures: started from the request's handler on a stack of their own
 * (flit_stream_spawn for active messages; the stream handler's fiber),
 * unless registered FLIT_RPC_PROC_INLINE; one that blocks parks there.
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
 *
 * Locking: one mutex per object (skipped on single-threaded endpoints),
 * a leaf: never held across a flit_* call, so handlers (which run with the
 * endpoint entered) may take it.
 */
#ifndef FL_RPC_INTERNAL_H
#define FL_RPC_INTERNAL_H

#include <flit/layer.h>
#include <flit/rpc.h>

#include "wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define RPC_BUCKETS   256u /* calls in flight: hash buckets (power of two) */
#define RPC_IOV_KEEP  4    /* reply pieces a call keeps without malloc */
#define RPC_OUT_KEEP     4    /* queued messages' blocks kept for reuse, */
#define RPC_OUT_KEEP_MAX (2u << 20) /* each of at most this many bytes */
#define RPC_MAX_PROCS 65536u
#define POLLS_FIRST      64    /* polls before a waiter turns to flit_wait */
#define SLICE_US         10000 /* longest flit_wait of a driver */
/* Longest sleep of a follower (a backstop: the hand-off signals it). */
#define NAP_US 100000

enum call_state { C_SENT, C_RECEIVING, C_DONE };

/* A thread asleep on its calls (wait.c), on its stack. */
struct rpc_waiter {
    pthread_cond_t cond;
    struct rpc_waiter *next;
    bool woken;
};

/* A call in flight, the client's side. */
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

/* A message for program context (queue.c): a reply (or error) to a call,
   or a request a procedure made. */
struct rpc_out {
    struct rpc_out *next;
    uint32_t dest;
    uint64_t id;
    uint32_t word; /* status (reply) or procedure (request) */
    bool request;
    size_t len, cap; /* data's bytes used, allocated */
    uint8_t data[];
};

/* The counters (rpc.* by name, layer.c; flit_rpc_stats_t's fields): the
   layer's state holds them for the endpoint's object, an object of
   flit_rpc_create its own. Written under the object's mutex only
   (rpc_count), read from any thread. */
struct fl_rpc_counters {
    _Atomic uint64_t calls, served, timeouts, late_replies, queued_replies, deferred,
        refused, failed_replies;
};

struct flit_rpc {
    void *self; /* the handle its user holds (<flit/handle.h>) */
    flit_ep_t *ep;
    flit_handler_t h; /* h: requests; h + 1: replies */
    uint32_t size;
    bool mt; /* thread-safe endpoint: lock */
    bool ep_closing;
    unsigned nprocs;
    size_t max_request;
    struct {
        flit_rpc_fn fn;
        void *user;
        unsigned flags; /* FLIT_RPC_PROC_INLINE */
    } * procs;
    flit_ep_listener_t listener;
    pthread_mutex_t lock; /* everything below */
    uint64_t next_id;
    struct flit_rpc_call *buckets[RPC_BUCKETS];
    size_t live_calls; /* handed out, not ended */
    struct flit_rpc_call *free_calls;
    struct rpc_out *out_head, *out_tail;
    _Atomic size_t nout;             /* read without the lock by the listener */
    struct rpc_out *spare_out;       /* sent messages' blocks, for reuse */
    unsigned nspare_out;
    struct flit_rpc_reply *deferred; /* not sent yet */
    struct flit_rpc_req *free_reqs;  /* requests run, kept for reuse */
    bool driving;                    /* a waiting thread drives progress */
    bool logged_refusal, logged_failure; /* the first of each said */
    struct rpc_waiter *sleepers;     /* threads asleep on their calls */
    bool owned;                      /* the layer's: the endpoint destroys it */
    struct fl_rpc_counters *ctr;     /* the layer's, or &own */
    struct fl_rpc_counters own;
};

/* Server side: the request whose procedure runs. Pooled, never freed before
   the object; the procedure gets a <flit/handle.h> handle, freed when it
   returns: one used after that (also once the block serves the next
   request) answers FLIT_ERR_BAD_TOKEN. */
struct flit_rpc_req {
    struct flit_rpc_req *next; /* free list */
    void *self;                /* its handle while its procedure runs */
    struct flit_rpc *rpc;
    flit_stream_t *park;   /* may block: its handler's stream, to park */
    uint8_t *spill;        /* the request's rest, read before it first blocked */
    flit_rpc_fn fn;        /* the procedure */
    void *user;
    flit_token_t *token;   /* came as an active message: replies may use it */
    flit_stream_t *stream; /* came as a stream: read from it */
    const uint8_t *buf;    /* active message: the request bytes */
    size_t len, pos;
    uint32_t caller;
    uint64_t id;
    bool live, answered;
    /* The queue block of the status that answers the call when its reply
       cannot be sent (fl_rpc_send_status), taken before the procedure
       runs and kept with the request block across requests. */
    struct rpc_out *status;
};

struct flit_rpc_reply {
    void *self;           /* the handle its user holds, until sent */
    struct flit_rpc *rpc; /* NULL once the object answered it CLOSED */
    uint32_t caller;
    uint64_t id;
    /* Taken at defer: the queue block of the status that answers the call
       when its reply cannot be sent, or when the object closes, so that
       this answer never needs memory (fl_rpc_send_status). */
    struct rpc_out *status;
    struct flit_rpc_reply *prev, *next; /* rpc->deferred */
};

static inline void rpc_lock(struct flit_rpc *r)
{
    if (r->mt)
        pthread_mutex_lock(&r->lock);
}

static inline void rpc_unlock(struct flit_rpc *r)
{
    if (r->mt)
        pthread_mutex_unlock(&r->lock);
}

/* Adds n (or, wrapping, takes away) to a counter under the object's mutex
   (its only writer): a plain add, no locked instruction. */
static inline void rpc_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void rpc_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t rpc_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline void rpc_hdr(uint8_t *p, uint32_t word, uint64_t id)
{
    rpc_put_le32(p, word);
    rpc_put_le32(p + 4, RPC_WIRE);
    rpc_put_le32(p + 8, (uint32_t)id);
    rpc_put_le32(p + 12, (uint32_t)(id >> 32));
}

static inline bool call_done(struct flit_rpc_call *c)
{
    /* Acquire: pairs with fl_rpc_complete; the result and reply bytes are in. */
    return atomic_load_explicit(&c->state, memory_order_acquire) == C_DONE;
}

/* object.c: the object a handle names; NULL for any other value. */
struct flit_rpc *fl_rpc_of(flit_rpc_t *h);
/* flit_rpc_create counting into ctr (NULL: the object's own); owned: the
   layer's object, which flit_rpc_destroy refuses. */
flit_status fl_rpc_create(flit_ep_t *ep, const flit_rpc_params_t *params,
                          struct fl_rpc_counters *ctr, bool owned, flit_rpc_t **out);
/* flit_rpc_destroy, also of an owned object (the layer's close). */
flit_status fl_rpc_destroy(struct flit_rpc *r);

/* call.c: the live call a handle names; NULL for any other value (an
   ended call's). */
struct flit_rpc_call *fl_rpc_call_of(flit_rpc_call_t *h);
/* Ends a complete call (*cp its live handle): its result out, its handle
   freed, *cp NULL. */
flit_status fl_rpc_finish(flit_rpc_call_t **cp, flit_rpc_result_t *result);
/* Frees the object's free calls (destroy). */
void fl_rpc_calls_free(struct flit_rpc *r);

/* table.c, under the mutex. */
void fl_rpc_table_add(struct flit_rpc *r, struct flit_rpc_call *c);
void fl_rpc_table_del(struct flit_rpc *r, struct flit_rpc_call *c);
/* The SENT call with that id, taken out of the table (RECEIVING), or NULL:
   a late reply (counted), or a forged one (*forged: from a rank the call
   did not go to). */
struct flit_rpc_call *fl_rpc_table_take(struct flit_rpc *r, uint64_t id, uint32_t from,
                                        bool *forged);
/* The call is over with st; its waiter, if asleep, is told. */
void fl_rpc_complete(struct flit_rpc_call *c, flit_status st);
/* Ends a SENT call with st (timeout, peer down, closed). */
void fl_rpc_end_sent(struct flit_rpc *r, struct flit_rpc_call *c, flit_status st);
/* Ends every SENT call (to dest, or every one with dest UINT32_MAX). */
void fl_rpc_end_all(struct flit_rpc *r, uint32_t dest, flit_status st);
/* Not under the mutex: a queued request that could not be sent; its call
   ends with st. */
void fl_rpc_end_request(struct flit_rpc *r, uint64_t id, flit_status st);

/* reply.c: the reply handler, as an active message and as a stream. */
void fl_rpc_on_reply_am(flit_token_t *token, void *buf, size_t nbytes,
                        const uint32_t *args, unsigned nargs, void *user);
void fl_rpc_on_reply_stream(flit_stream_t *s, size_t total, void *user);

/* send.c. One message (request: word = proc, to h; reply: word = status,
   to h + 1) of total bytes gathered from iov, NONBLOCK: FLIT_ERR_AGAIN
   when the first packet finds no room, FLIT_ERR_IN_HANDLER in handler
   context. */
flit_status fl_rpc_send_msg(struct flit_rpc *r, uint32_t dest, bool reply, uint32_t word,
                            uint64_t id, const struct iovec *iov, int n, size_t total);

/* queue.c. A copy of the message (its header in *tmpl, its bytes gathered
   from iov) at the queue's tail. */
flit_status fl_rpc_queue(struct flit_rpc *r, const struct iovec *iov, int n, size_t total,
                         const struct rpc_out *tmpl);
/* Program context: sends what is queued, until the queue is empty or a
   message finds no room (it stays first). */
void fl_rpc_flush(struct flit_rpc *r);
/* Sends every queued message, waiting for room as it must (program
   context, with no handler to wait behind). */
void fl_rpc_drain(struct flit_rpc *r);
/* Frees the queue and the spare blocks (destroy). */
void fl_rpc_queue_free(struct flit_rpc *r);

/* wait.c. Waits until one of calls[0..n) is complete (*idx: which;
   FLIT_OK), limit passes (ns, 0: none; FLIT_ERR_AGAIN), or progress
   fails. */
flit_status fl_rpc_wait_calls(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                              int64_t limit, size_t *idx);
/* Under the mutex: ends the SENT calls among calls[0..n) whose own time
   is up; whether one of them is (now) complete. */
bool fl_rpc_any_done(flit_rpc_call_t **calls, size_t n, int64_t now, size_t *idx);

/*
 * A reply (or an error status with no bytes) to caller's call id, sent as
 * a message of its own: at once from program context, else (inside a
 * handler, or no room now) copied and queued for the next progress pass.
 */
flit_status fl_rpc_send_reply(struct flit_rpc *r, uint32_t caller, uint64_t id,
                              flit_status status, const struct iovec *iov, int n,
                              size_t total);

/* A block for a status reply of no bytes, reserved ahead (NULL: no
   memory); freed by fl_rpc_status_free unless fl_rpc_send_status took it. */
struct rpc_out *fl_rpc_status_block(void);
void fl_rpc_status_free(struct rpc_out *blk);

/* status (no bytes) to caller's call id, sent at once or queued in *blk
   (then *blk is NULL: the queue owns it) without allocating: FLIT_OK when
   sent or queued, else why not (the caller or the endpoint gone). A queued
   status that fails for a local shortage stays first in the queue for the
   next progress pass: it is never dropped while its caller may hear it. */
flit_status fl_rpc_send_status(struct flit_rpc *r, uint32_t caller, uint64_t id,
                               flit_status status, struct rpc_out **blk);

/* A message of a peer refused (what: "a malformed request", say; from:
   its rank): counted, and the object's first refusal logged. */
void fl_rpc_refused(struct flit_rpc *r, const char *what, uint32_t from);

/* A reply to caller's call id could not be sent (st): counted, the first
   logged. */
void fl_rpc_reply_failed(struct flit_rpc *r, uint32_t caller, uint64_t id, size_t total,
                         flit_status st);

/* Whether a reply that failed with st may still reach its caller (then the
   error goes back in its place): not when the caller or the endpoint is
   gone. */
static inline bool fl_rpc_caller_reachable(flit_status st)
{
    return st != FLIT_ERR_PEER_DOWN && st != FLIT_ERR_CLOSED &&
           st != FLIT_ERR_FINALIZED && st != FLIT_ERR_UNREACHABLE;
}

/* The request whose procedure is running that a handle names; NULL for any
   other value. */
struct flit_rpc_req *fl_rpc_req_of(const flit_rpc_req_t *h);

/* serve.c: the request handler, as an active message and as a stream. */
void fl_rpc_on_req_am(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user);
void fl_rpc_on_req_stream(flit_stream_t *s, size_t total, void *user);

/* Answers every deferred reply with FLIT_ERR_CLOSED (program context). */
void fl_rpc_close_deferred(struct flit_rpc *r);

/* The procedure running on this thread (NULL: none), serve.c. A parked
   procedure is nobody's: fl_rpc_block unsets it and sets it back. */
struct flit_rpc_req *fl_rpc_current(void);

/* Inside procedure q: parks it until flit_stream_unpark of q->park (the
   handler q started from has then returned: its token and its bytes are
   gone, so q's rest is copied first). FLIT_ERR_IN_HANDLER when q may not
   block (FLIT_RPC_PROC_INLINE); the stream's errors. */
flit_status fl_rpc_block(struct flit_rpc_req *q);

#endif /* FL_RPC_INTERNAL_H */
