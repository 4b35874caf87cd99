/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tagged messaging (MPI's point-to-point core) on the public stream API
 * alone: <flit/tagged.h> for the contract. Nothing in src/tagged includes a
 * header of src/; if it needs more than <flit/stream.h> and <flit/flit.h>
 * offer, the stream API is missing something. This header is the layer's
 * own interface between its files:
 *
 *   wire.h        the message as it travels (a tag, then the payload);
 *   context.c     a context's life: create, destroy, what destroy drops;
 *   layer.c       the layer's seat (<flit/layer.h>): the endpoint's own
 *                 context, opened and closed with it, and the counters;
 *   request.c     request objects: handles, free lists, completion;
 *   match.c       the posted and unexpected queues and matching;
 *   unexpected.c  messages that came before their receive: pooled entries;
 *   arrive.c      the stream handler: a message in place or streamed;
 *   progress.c    driving the endpoint until a condition holds;
 *   send.c, recv.c, complete.c, probe.c  the calls of <flit/tagged.h>.
 *
 * Matching. Two FIFO queues per context, under one mutex:
 *  - posted: receives not matched yet, in posting order;
 *  - unexpected: messages that found no posted receive, in arrival order,
 *    whether their payload has arrived in full or is still arriving.
 * The handler of an arriving message takes the first posted receive that
 * matches (source or any, tag or any) and receives the payload straight
 * into its buffer; else it appends an entry to the unexpected queue before
 * receiving the payload into a buffer of its own, so that receives match in
 * arrival order even while payloads are on the wire. A receive first takes
 * the first unexpected entry that matches; one still arriving is "claimed":
 * the handler copies it into the receive's buffer when the last byte is in.
 * Handlers of one sender start in send order (the stream layer's promise),
 * so messages of one sender never overtake each other.
 *
 * Threads. A handler may wait inside flit_stream_recv (on a fiber) and be
 * resumed on another thread of a thread-safe endpoint. The mutex is a leaf:
 * never held across a flit_* call, so it never travels between threads and
 * never orders against the endpoint's lock. The handler keeps no
 * thread-local address across stream calls.
 *
 * Completion is one atomic word per request (PENDING -> DONE), stored last
 * by whoever finishes the receive and read without the mutex by test and
 * wait. A blocking receive's request lives on its stack.
 *
 * Cost per message matters: tagged bandwidth and ping-pong latency are
 * measured against raw streams. So: one mutex round on each side of a
 * match; a message of up to WHOLE_LEN bytes sent with one stream call,
 * header and payload, through a few lines on the stack; a message the
 * packet at hand holds whole read where it arrived (flit_stream_peek), its
 * payload copied once; and no malloc for a small message, matched or not.
 * Requests come from free lists in the context: one under the mutex,
 * refilled with a single exchange from a stack that test and wait push to
 * with a compare-and-swap, without the mutex (whole-stack exchange: no ABA
 * problem). Unexpected messages of up to MEDIUM_LEN bytes (most of them,
 * when a sender streams small messages faster than receives are posted)
 * live in pooled entries that are filled and emptied under the mutex;
 * larger ones are malloc'ed, filled and emptied outside it. The files are
 * one library object built with link-time optimisation, so the hot path
 * still inlines across them.
 */
#ifndef FL_TAGGED_INTERNAL_H
#define FL_TAGGED_INTERNAL_H

#include <flit/tagged.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"

#define SMALL_LEN  64u   /* unexpected payloads in the small pool */
#define MEDIUM_LEN 4096u /* larger unexpected payloads: malloc */
/* Free pooled entries kept, per class (small, medium): the rest is freed. */
#define KEEP_SMALL  1024u
#define KEEP_MEDIUM 64u
/* Longest single flit_wait while waiting: a condition that another thread
   completes announces no message of its own on this thread. */
#define WAIT_SLICE_US 10000
/* Polls a wait makes before it turns to flit_wait (spin, then sleep). */
#define POLLS_FIRST 64

enum req_kind { REQ_FREE, REQ_SEND, REQ_RECV };
enum req_state { ST_PENDING, ST_DONE };

struct entry;

struct flit_request {
    void *self;        /* its handle while handed out (<flit/handle.h>) */
    uint8_t kind;      /* enum req_kind */
    bool posted;       /* in the posted queue (under the mutex) */
    _Atomic int state; /* enum req_state */
    struct flit_tagged *t;
    struct flit_request *prev, *next; /* posted queue; next: free list */
    uint32_t source;                  /* wanted: rank or FLIT_ANY_SOURCE */
    uint64_t tag;                     /* wanted: tag or FLIT_ANY_TAG */
    void *buf;
    size_t size;             /* bytes it takes: buf's, or iov's total */
    const struct iovec *iov; /* a scattered receive's pieces, else NULL */
    int iovcnt;
    struct entry *claimed;   /* the unexpected message it waits for */
    flit_tagged_info_t info; /* valid once DONE */
};

enum entry_class { ENTRY_MALLOC, ENTRY_SMALL, ENTRY_MEDIUM, ENTRY_CLASSES };

/* A message that arrived before its receive was posted. */
struct entry {
    struct entry *prev, *next; /* unexpected queue; next: pool */
    uint32_t source;
    uint64_t tag;
    size_t len;               /* as sent */
    size_t got;               /* bytes in data once arrived */
    bool arrived;             /* the handler is done with it */
    uint8_t cls;              /* enum entry_class */
    flit_status status;       /* FLIT_OK, NO_MEMORY, PEER_DOWN */
    struct flit_request *req; /* a receive that claimed it while arriving */
    uint8_t *data;            /* after the struct; NULL: no memory */
};

struct entry_pool {
    struct entry *head;
    unsigned count;
};

/* The counters (tagged.* by name, layer.c): the layer's state holds them
   for the endpoint's context, a context of flit_tagged_create its own.
   Written under the context's mutex only (fl_tagged_count), read from any
   thread. */
struct fl_tagged_counters {
    _Atomic uint64_t arrived;    /* messages with a whole tag */
    _Atomic uint64_t unexpected; /* of them, before their receive */
    _Atomic uint64_t malformed;  /* messages without a whole tag */
    _Atomic uint64_t lost;       /* unexpected ones with no memory at all */
};

struct flit_tagged {
    void *self; /* the handle its user holds */
    flit_ep_t *ep;
    flit_handler_t h;
    bool owned;                     /* the layer's: the endpoint destroys it */
    struct fl_tagged_counters *ctr; /* the layer's, or &own */
    struct fl_tagged_counters own;
    uint32_t size; /* of the job */
    uint32_t me;
    /* The endpoint is thread-safe: handlers and calls may run on several
       threads at once, so the context locks. On a single-threaded one
       nothing ever runs at once, and the locks and atomics are skipped. */
    bool mt;
    pthread_mutex_t lock; /* everything below */
    struct flit_request *posted_head, *posted_tail;
    struct entry *unexp_head, *unexp_tail;
    struct entry_pool pool[ENTRY_CLASSES]; /* [ENTRY_MALLOC] unused */
    struct flit_request *free_reqs;        /* free requests */
    size_t nreqs;                          /* requests allocated (free or not) */
    uint64_t handlers_left;                /* see handlers_in */
    /* Free requests given back without the mutex (fl_tagged_req_put). */
    _Atomic(struct flit_request *) returned_reqs;
    /*
     * Handlers started; each counts itself in handlers_left, under the
     * mutex, in the last section where it touches the context. destroy waits
     * until the two agree: a handler may wait for its very first bytes (a
     * first packet sent short, when another thread flushed it), so nothing
     * else would tell that it still holds the context.
     */
    _Atomic uint64_t handlers_in;
};

static inline void lock(struct flit_tagged *t)
{
    if (t->mt)
        pthread_mutex_lock(&t->lock);
}

static inline void unlock(struct flit_tagged *t)
{
    if (t->mt)
        pthread_mutex_unlock(&t->lock);
}

/* One more of a counter, under the context's mutex (its only writer): a
   plain add, no locked instruction; readers on other threads see it whole. */
static inline void fl_tagged_count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The first n bytes of a message, from src, into r's buffer or pieces. */
static inline void req_copy(struct flit_request *r, const void *src, size_t n)
{
    if (r->iov)
        (void)flit_iov_scatter(r->iov, r->iovcnt, src, n);
    else if (n)
        memcpy(r->buf, src, n);
}

/* The next n bytes of the stream into r's buffer or pieces. */
static inline flit_status req_recv(flit_stream_t *s, struct flit_request *r, size_t n)
{
    if (!r->iov)
        return flit_stream_recv(s, r->buf, n);
    flit_status st = FLIT_OK;
    for (int i = 0; st == FLIT_OK && n && i < r->iovcnt; i++) {
        size_t k = min_size(n, r->iov[i].iov_len);
        if (k)
            st = flit_stream_recv(s, r->iov[i].iov_base, k);
        n -= k;
    }
    return st;
}

static inline bool req_done(struct flit_request *r)
{
    /* Acquire: pairs with the completer's release; info is written. */
    return atomic_load_explicit(&r->state, memory_order_acquire) == ST_DONE;
}

/*
 * Marks r complete: the last touch of r by whoever completes it (a
 * blocking receive's request lives on its waiter's stack). Release: the info
 * and the payload are written before the state a waiter reads.
 */
static inline void req_complete(struct flit_request *r)
{
    atomic_store_explicit(&r->state, ST_DONE, memory_order_release);
}

/* context.c: the live context a handle names; NULL for any other value. */
struct flit_tagged *fl_tagged_ctx_of(flit_tagged_t *h);
/* flit_tagged_create counting into ctr (NULL: the context's own); owned:
   the layer's context, which flit_tagged_destroy refuses. */
flit_status fl_tagged_ctx_create(flit_ep_t *ep, flit_handler_t h,
                                 struct fl_tagged_counters *ctr, bool owned,
                                 flit_tagged_t **out);
/* flit_tagged_destroy, also of an owned context (the layer's close). */
flit_status fl_tagged_ctx_destroy(struct flit_tagged *t);

/* request.c. Requests are handed out as handles, never as pointers: an
   ended request's value answers FLIT_ERR_INVALID_ARG, also once its block
   (requests come back from the free list at once) holds a new one. */
struct flit_request *fl_tagged_req_of(flit_request_t *h);
/* A request's fields for t and kind, PENDING, no handle. */
void fl_tagged_req_init(struct flit_request *r, struct flit_tagged *t, uint8_t kind);
/* Under the mutex: a handed-out request. NULL when out of memory. */
struct flit_request *fl_tagged_req_get(struct flit_tagged *t, uint8_t kind);
/* Back to the free list; any thread, without the mutex. */
void fl_tagged_req_put(struct flit_request *r);
/* The same, under the mutex. */
void fl_tagged_req_put_locked(struct flit_tagged *t, struct flit_request *r);
/* Under the mutex: requests handed out and not given back yet. */
size_t fl_tagged_req_outstanding(struct flit_tagged *t);
/* Frees complete request r, which *reqp names: its status, info filled,
 *reqp NULL. */
flit_status fl_tagged_req_finish(struct flit_request *r, flit_request_t **reqp,
                                 flit_tagged_info_t *info);
/* Frees every free request (destroy). */
void fl_tagged_req_free_all(struct flit_tagged *t);

/* match.c, under the mutex. */
void fl_tagged_posted_unlink(struct flit_tagged *t, struct flit_request *r);
/* The first posted receive that matches, taken off. */
struct flit_request *fl_tagged_posted_take(struct flit_tagged *t, uint32_t src,
                                           uint64_t tag);
void fl_tagged_unexp_append(struct flit_tagged *t, struct entry *e);
void fl_tagged_unexp_unlink(struct flit_tagged *t, struct entry *e);
/* The first unclaimed unexpected message that matches, in arrival order. */
struct entry *fl_tagged_unexp_find(struct flit_tagged *t, uint32_t src, uint64_t tag);
/*
 * Matches receive r (its wanted source and tag, buffer and size set) with
 * the first unexpected message that fits, or posts it. Returns whether r is
 * complete: a pooled message that had arrived is taken at once. *large: an
 * arrived message to take (fl_tagged_take_large) outside the mutex.
 */
bool fl_tagged_post_locked(struct flit_tagged *t, struct flit_request *r,
                           struct entry **large);

/* unexpected.c. */
/*
 * Under the mutex: a new unexpected entry at the tail. whole: its payload,
 * already here (the entry is then complete); NULL: still to be received.
 * NULL if no memory at all (the message is then lost, and counted).
 */
struct entry *fl_tagged_unexp_new(struct flit_tagged *t, uint32_t src, uint64_t tag,
                                  size_t len, const uint8_t *whole);
/* Under the mutex for a pooled entry; a malloc'ed one is freed anywhere. */
void fl_tagged_entry_put(struct flit_tagged *t, struct entry *e);
/* Fills r's info from an entry that has arrived and copies its payload. */
void fl_tagged_take_entry(struct flit_request *r, const struct entry *e);
/* A large message that had arrived, into r: r is then complete. */
void fl_tagged_take_large(struct flit_request *r, struct entry *e);
/* Frees the unexpected queue (counting what it drops) and the pools. */
void fl_tagged_entries_free_all(struct flit_tagged *t, uint64_t *dropped,
                                uint64_t *bytes);

/* arrive.c: the stream handler of a context's messages. */
void fl_tagged_on_message(flit_stream_t *s, size_t total, void *user);

/* progress.c. */
/*
 * Makes progress on ep until done(arg) or timeout_us passed (< 0: never),
 * at least one pass unless done at once. FLIT_ERR_TIMEOUT, or flit_wait's
 * error (IN_HANDLER inside a handler: it cannot make progress there).
 */
flit_status fl_tagged_progress_until(flit_ep_t *ep, bool (*done)(void *), void *arg,
                                     int64_t timeout_us);
/* A done() for fl_tagged_progress_until: whether request arg is complete. */
bool fl_tagged_req_done_cb(void *arg);

#endif /* FL_TAGGED_INTERNAL_H */
