/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tagged messaging (MPI's point-to-point core) on the public stream API
 * alone: <flit/tagged.h> for the contract. Nothing here includes a header
 * of src/; if this file needs more than <flit/stream.h> and <flit/flit.h>
 * offer, the stream API is missing something.
 *
 * Wire: a message is one stream to the context's stream handler, an 8-byte
 * little-endian tag, then the payload (total = 8 + length). The sender is
 * the stream's rank.
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
 * payload copied once; and no malloc for a small message, matched or not. Requests come from free lists in the
 * context: one under the mutex, refilled with a single exchange from a
 * stack that test and wait push to with a compare-and-swap, without the
 * mutex (whole-stack exchange: no ABA problem). Unexpected messages of up
 * to MEDIUM_LEN bytes (most of them, when a sender streams small messages
 * faster than receives are posted) live in pooled entries that are filled
 * and emptied under the mutex; larger ones are malloc'ed, filled and
 * emptied outside it.
 */
#include <flit/handle.h>
#include <flit/tagged.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HDR_LEN      8u
#define WHOLE_LEN    256u  /* payloads sent and taken whole with the header */
#define SMALL_LEN    64u   /* unexpected payloads in the small pool */
#define MEDIUM_LEN   4096u /* larger unexpected payloads: malloc */
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
    size_t size;
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

struct flit_tagged {
    void *self; /* the handle its user holds */
    flit_ep_t *ep;
    flit_handler_t h;
    uint32_t size; /* of the job */
    uint32_t me;
    int verbose; /* FLIT_VERBOSE >= 2: say what destroy drops */
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
    uint64_t malformed;                    /* messages without a whole header */
    uint64_t lost;                         /* unexpected messages with no memory at all */
    /* Free requests given back without the mutex (req_put). */
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

/* ---------------------------------------------------------------- helpers */

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

/* The wire is little-endian; a byte loop here costs ~60 instructions a
   message, a load and (on big-endian hosts) a swap cost two. */
static inline void put_le64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof v);
}

static inline uint64_t get_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline bool matches(uint32_t want_src, uint64_t want_tag, uint32_t src,
                           uint64_t tag)
{
    return (want_src == FLIT_ANY_SOURCE || want_src == src) &&
           (want_tag == FLIT_ANY_TAG || want_tag == tag);
}

/* Contexts and requests are handed out as handles of these tables, never
   as pointers: a destroyed context's or an ended request's value answers
   FLIT_ERR_INVALID_ARG, also once its block (requests come back from the
   free list at once) holds a new one. */
static flit_handles_t *contexts, *requests;

static inline struct flit_tagged *ctx_of(flit_tagged_t *h)
{
    return flit_handle_get(&contexts, h);
}

/* The live request a handle names; NULL for any other value. */
static inline struct flit_request *req_of(flit_request_t *h)
{
    return flit_handle_get(&requests, h);
}

static inline bool req_done(struct flit_request *r)
{
    /* Acquire: pairs with the completer's release; info is written. */
    return atomic_load_explicit(&r->state, memory_order_acquire) == ST_DONE;
}

static inline size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---------------------------------------------------------------- requests */

static void req_init(struct flit_request *r, struct flit_tagged *t, uint8_t kind)
{
    r->self = NULL;
    r->kind = kind;
    r->posted = false;
    atomic_init(&r->state, ST_PENDING);
    r->t = t;
    r->prev = r->next = NULL;
    r->claimed = NULL;
}

/* Under the mutex. NULL when out of memory. */
static struct flit_request *req_get(struct flit_tagged *t, uint8_t kind)
{
    struct flit_request *r = t->free_reqs;
    if (__builtin_expect(r == NULL, 0))
        /* Acquire: the writes of those who gave them back, r->next too. */
        r = atomic_exchange_explicit(&t->returned_reqs, NULL, memory_order_acquire);
    if (__builtin_expect(r != NULL, 1)) {
        t->free_reqs = r->next;
    } else {
        if (!(r = malloc(sizeof *r)))
            return NULL;
        t->nreqs++;
    }
    req_init(r, t, kind);
    if (flit_handle_new(&requests, r, &r->self) != FLIT_OK) {
        r->next = t->free_reqs;
        t->free_reqs = r;
        return NULL;
    }
    return r;
}

static void req_clear(struct flit_request *r)
{
    (void)flit_handle_free(&requests, r->self);
    r->self = NULL;
    r->kind = REQ_FREE;
}

/* Back to the free list; any thread, without the mutex. */
static void req_put(struct flit_request *r)
{
    struct flit_tagged *t = r->t;
    req_clear(r);
    if (!t->mt) { /* no one else: the plain free list */
        r->next = t->free_reqs;
        t->free_reqs = r;
        return;
    }
    struct flit_request *head =
        atomic_load_explicit(&t->returned_reqs, memory_order_relaxed);
    do
        r->next = head;
    /* Release: r's fields are written before it is seen on the stack. */
    while (!atomic_compare_exchange_weak_explicit(
        &t->returned_reqs, &head, r, memory_order_release, memory_order_relaxed));
}

/* The same, under the mutex. */
static void req_put_locked(struct flit_tagged *t, struct flit_request *r)
{
    req_clear(r);
    r->next = t->free_reqs;
    t->free_reqs = r;
}

/* Under the mutex: requests handed out and not given back yet. */
static size_t req_outstanding(struct flit_tagged *t)
{
    size_t free_n = 0;
    for (struct flit_request *r = t->free_reqs; r; r = r->next)
        free_n++;
    /* Pushes only add above the head read here. */
    for (struct flit_request *r =
             atomic_load_explicit(&t->returned_reqs, memory_order_acquire);
         r; r = r->next)
        free_n++;
    return t->nreqs - free_n;
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

/* ---------------------------------------------------------------- queues */

static void posted_append(struct flit_tagged *t, struct flit_request *r)
{
    r->next = NULL;
    r->prev = t->posted_tail;
    if (t->posted_tail)
        t->posted_tail->next = r;
    else
        t->posted_head = r;
    t->posted_tail = r;
    r->posted = true;
}

static void posted_unlink(struct flit_tagged *t, struct flit_request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        t->posted_head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        t->posted_tail = r->prev;
    r->posted = false;
    r->prev = r->next = NULL;
}

static void unexp_append(struct flit_tagged *t, struct entry *e)
{
    e->next = NULL;
    e->prev = t->unexp_tail;
    if (t->unexp_tail)
        t->unexp_tail->next = e;
    else
        t->unexp_head = e;
    t->unexp_tail = e;
}

static void unexp_unlink(struct flit_tagged *t, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        t->unexp_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        t->unexp_tail = e->prev;
    e->prev = e->next = NULL;
}

/* The first unclaimed unexpected message that matches, in arrival order. */
static struct entry *unexp_find(struct flit_tagged *t, uint32_t src, uint64_t tag)
{
    for (struct entry *e = t->unexp_head; e; e = e->next)
        if (!e->req && matches(src, tag, e->source, e->tag))
            return e;
    return NULL;
}

/* ---------------------------------------------------------------- entries */

static const size_t class_room[ENTRY_CLASSES] = {0, SMALL_LEN, MEDIUM_LEN};
static const unsigned class_keep[ENTRY_CLASSES] = {0, KEEP_SMALL, KEEP_MEDIUM};

/* Under the mutex: an entry with room for len bytes, its class and data set;
   data NULL (status NO_MEMORY) when there is memory for the entry alone. */
static struct entry *entry_get(struct flit_tagged *t, size_t len)
{
    uint8_t cls = len <= SMALL_LEN    ? ENTRY_SMALL
                  : len <= MEDIUM_LEN ? ENTRY_MEDIUM
                                      : ENTRY_MALLOC;
    struct entry_pool *p = &t->pool[cls];
    struct entry *e = NULL;
    if (cls != ENTRY_MALLOC && p->head) {
        e = p->head;
        p->head = e->next;
        p->count--;
    } else if (cls != ENTRY_MALLOC) {
        e = malloc(sizeof *e + class_room[cls]);
    } else if (len <= SIZE_MAX - sizeof *e) {
        e = malloc(sizeof *e + len);
    }
    if (e) {
        e->cls = cls;
        e->data = (uint8_t *)(e + 1);
        e->status = FLIT_OK;
    } else if ((e = malloc(sizeof *e))) {
        e->cls = ENTRY_MALLOC;
        e->data = NULL;
        e->status = FLIT_ERR_NO_MEMORY;
    }
    return e;
}

/* Under the mutex for a pooled entry; a malloc'ed one is freed anywhere. */
static void entry_put(struct flit_tagged *t, struct entry *e)
{
    struct entry_pool *p = &t->pool[e->cls];
    if (e->cls == ENTRY_MALLOC || p->count >= class_keep[e->cls]) {
        free(e);
        return;
    }
    e->next = p->head;
    p->head = e;
    p->count++;
}

/* Fills r's info from an entry that has arrived and copies its payload. */
static void take_entry(struct flit_request *r, const struct entry *e)
{
    size_t n = min_size(e->got, r->size);
    if (n)
        memcpy(r->buf, e->data, n);
    flit_status st = e->status;
    if (st == FLIT_OK && e->len > r->size)
        st = FLIT_ERR_TOO_LARGE;
    r->info = (flit_tagged_info_t){.source = flit_rank(e->source),
                                   .tag = e->tag,
                                   .length = e->len,
                                   .received = n,
                                   .status = st};
}

/* ---------------------------------------------------------------- handler */

/* Receives the payload into a posted receive's buffer, then completes it. */
static void deliver_posted(flit_stream_t *s, struct flit_request *r, uint32_t src,
                           uint64_t tag, size_t len)
{
    size_t n = min_size(len, r->size);
    flit_status st = FLIT_OK;
    if (n) {
        st = flit_stream_recv(s, r->buf, n);
        if (st != FLIT_OK) /* the sender died: what did arrive is in buf */
            n = min_size(n, len - flit_stream_remaining(s));
    }
    if (st == FLIT_OK && n < len) {
        (void)flit_stream_skip(s, len - n); /* the tail is discarded anyway */
        st = FLIT_ERR_TOO_LARGE;
    }
    r->info = (flit_tagged_info_t){
        .source = flit_rank(src), .tag = tag, .length = len, .received = n, .status = st};
    req_complete(r);
}

/* Receives an unexpected message into its entry; hands it to a receive
   that claimed it meanwhile. */
static void deliver_unexpected(struct flit_tagged *t, flit_stream_t *s, struct entry *e)
{
    flit_status st = e->status;
    size_t got = 0;
    if (st == FLIT_OK && e->len) {
        st = flit_stream_recv(s, e->data, e->len);
        got =
            st == FLIT_OK ? e->len : min_size(e->len, e->len - flit_stream_remaining(s));
    }
    lock(t);
    e->status = st;
    e->got = got;
    e->arrived = true;
    struct flit_request *r = e->req;
    bool pooled = e->cls != ENTRY_MALLOC;
    if (r) {
        unexp_unlink(t, e);
        r->claimed = NULL;
        if (pooled) {
            take_entry(r, e);
            entry_put(t, e);
        }
    }
    t->handlers_left++;
    unlock(t);
    if (r) {
        if (!pooled) { /* large: copied outside the mutex */
            take_entry(r, e);
            free(e);
        }
        req_complete(r);
    }
}

/*
 * Under the mutex: a new unexpected entry at the tail. whole: its payload,
 * already here (the entry is then complete); NULL: still to be received.
 * NULL if no memory at all (the message is then lost, and counted).
 */
static struct entry *unexp_new(struct flit_tagged *t, uint32_t src, uint64_t tag,
                               size_t len, const uint8_t *whole)
{
    struct entry *e = entry_get(t, len);
    if (!e) {
        t->lost++;
        return NULL;
    }
    e->source = src;
    e->tag = tag;
    e->len = len;
    e->got = 0;
    e->req = NULL;
    e->arrived = whole != NULL;
    if (whole && e->data) {
        if (len)
            memcpy(e->data, whole, len);
        e->got = len;
    }
    unexp_append(t, e);
    return e;
}

/* Under the mutex: the first posted receive that matches, taken off. */
static struct flit_request *posted_take(struct flit_tagged *t, uint32_t src, uint64_t tag)
{
    struct flit_request *r;
    for (r = t->posted_head; r; r = r->next)
        if (matches(r->source, r->tag, src, tag))
            break;
    if (r)
        posted_unlink(t, r);
    return r;
}

static void on_message(flit_stream_t *s, size_t total, void *user)
{
    struct flit_tagged *t = user;
    /*
     * A message that the packet at hand holds whole (most of them: a piece
     * is 32 KiB) is read where it arrived: the tag in place, the payload
     * copied once, into the receive's buffer or an unexpected entry (taking
     * it onto the stack first cost a second copy: 2-5% of the instructions
     * of a message sent and received, 8 B to 1 KiB). A small one goes into
     * its unexpected entry under the mutex; a larger one, or one still
     * arriving, is taken outside it, header first.
     */
    const void *here = NULL;
    size_t at_hand = 0;
    (void)flit_stream_peek(s, &here, &at_hand);
    bool in_place = at_hand == total && total >= HDR_LEN;
    bool small = in_place && total <= HDR_LEN + WHOLE_LEN;
    _Alignas(8) uint8_t hdr[HDR_LEN];
    const uint8_t *head = in_place ? here : hdr, *payload = head + HDR_LEN;
    if (t->mt)
        atomic_fetch_add_explicit(&t->handlers_in, 1, memory_order_relaxed);
    else /* a plain add: no locked instruction */
        atomic_store_explicit(
            &t->handlers_in,
            atomic_load_explicit(&t->handlers_in, memory_order_relaxed) + 1,
            memory_order_relaxed);
    if (__builtin_expect(total < HDR_LEN ||
                             (!in_place && flit_stream_recv(s, hdr, HDR_LEN) != FLIT_OK),
                         0)) {
        lock(t);
        t->malformed++;
        t->handlers_left++;
        unlock(t);
        return;
    }
    uint64_t tag = get_le64(head);
    uint32_t src = flit_stream_rank(s).idx;
    size_t len = total - HDR_LEN;

    struct entry *e = NULL;
    lock(t);
    struct flit_request *r = t->posted_head ? posted_take(t, src, tag) : NULL;
    if (!r)
        e = unexp_new(t, src, tag, len, small ? payload : NULL);
    /* Done with the context, unless a payload is to come into e. */
    if (!e || small)
        t->handlers_left++;
    unlock(t);

    if (r && in_place) {
        size_t n = min_size(len, r->size);
        if (n)
            memcpy(r->buf, payload, n);
        r->info = (flit_tagged_info_t){.source = flit_rank(src),
                                       .tag = tag,
                                       .length = len,
                                       .received = n,
                                       .status = n < len ? FLIT_ERR_TOO_LARGE : FLIT_OK};
        req_complete(r);
    } else if (r) {
        deliver_posted(s, r, src, tag, len);
    } else if (e && !small) {
        if (in_place) /* the stream's next byte is the payload's first */
            (void)flit_stream_skip(s, HDR_LEN);
        deliver_unexpected(t, s, e);
    }
}

/* ---------------------------------------------------------------- progress */

/*
 * Makes progress on ep until done(arg) or timeout_us passed (< 0: never),
 * at least one pass unless done at once. FLIT_ERR_TIMEOUT, or flit_wait's
 * error (IN_HANDLER inside a handler: it cannot make progress there).
 */
static flit_status progress_until(flit_ep_t *ep, bool (*done)(void *), void *arg,
                                  int64_t timeout_us)
{
    /* Another thread may have done it for us: flit_wait would then sleep
       until the next message, or its slice. */
    if (done(arg))
        return FLIT_OK;
    /* Polls first: the message is usually a few hundred nanoseconds away,
       and flit_wait (like now_us) reads the clock on every call. */
    for (int i = 0; i < POLLS_FIRST; i++) {
        flit_status st = flit_poll(ep);
        if (done(arg))
            return FLIT_OK;
        if (st != FLIT_OK)
            return st;
    }
    int64_t deadline = timeout_us >= 0 ? now_us() + timeout_us : 0;
    for (;;) {
        int64_t slice = WAIT_SLICE_US;
        if (timeout_us >= 0) {
            int64_t left = deadline - now_us();
            if (left < slice)
                slice = left > 0 ? left : 0;
        }
        flit_status st = flit_wait(ep, slice);
        if (done(arg))
            return FLIT_OK;
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
        if (timeout_us >= 0 && slice < WAIT_SLICE_US && now_us() >= deadline)
            return FLIT_ERR_TIMEOUT;
    }
}

static bool req_done_cb(void *arg)
{
    return req_done(arg);
}

/* Frees a complete request: its status, info filled, *reqp NULL. */
static flit_status req_finish(flit_request_t **reqp, flit_tagged_info_t *info)
{
    struct flit_request *r = req_of(*reqp);
    flit_status st = r->info.status;
    if (info)
        *info = r->info;
    req_put(r);
    *reqp = NULL;
    return st;
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
    bool withdrawn = r->posted || r->claimed;
    if (r->posted)
        posted_unlink(t, r);
    if (r->claimed) {
        r->claimed->req = NULL;
        r->claimed = NULL;
    }
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

/* ---------------------------------------------------------------- context */

flit_status flit_tagged_create(flit_ep_t *ep, flit_handler_t h, flit_tagged_t **out)
{
    if (!ep || !out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_tagged *t = calloc(1, sizeof *t);
    if (!t)
        return FLIT_ERR_NO_MEMORY;
    t->ep = ep;
    t->h = h;
    t->size = flit_job_size();
    t->me = flit_job_rank().idx;
    const char *v = getenv("FLIT_VERBOSE");
    t->verbose = v ? atoi(v) : 0;
    flit_thread_mode mode;
    flit_status mst = flit_ep_thread_mode(ep, &mode);
    if (mst != FLIT_OK) {
        free(t);
        return mst;
    }
    t->mt = mode == FLIT_THREAD_SAFE;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t);
        return FLIT_ERR_SYSTEM;
    }
    flit_status st = flit_stream_register(ep, h, on_message, t);
    if (st == FLIT_OK) {
        /* Every rank's handler is in place before anyone sends. */
        st = flit_barrier(ep);
        if (st != FLIT_OK)
            (void)flit_stream_register(ep, h, NULL, NULL);
    }
    if (st == FLIT_OK && (st = flit_handle_new(&contexts, t, &t->self)) != FLIT_OK)
        (void)flit_stream_register(ep, h, NULL, NULL);
    if (st != FLIT_OK) {
        pthread_mutex_destroy(&t->lock);
        free(t);
        return st;
    }
    *out = t->self;
    return FLIT_OK;
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
    uint64_t dropped = 0, bytes = 0;
    for (struct entry *e = t->unexp_head, *next; e; e = next) {
        next = e->next;
        dropped++;
        bytes += e->len;
        free(e);
    }
    for (struct flit_request *r = t->free_reqs, *next; r; r = next) {
        next = r->next;
        free(r);
    }
    for (struct flit_request *r = atomic_load(&t->returned_reqs), *next; r; r = next) {
        next = r->next;
        free(r);
    }
    for (int c = 0; c < ENTRY_CLASSES; c++)
        for (struct entry *e = t->pool[c].head, *next; e; e = next) {
            next = e->next;
            free(e);
        }
    if (t->verbose >= 2 && (dropped || t->malformed || t->lost))
        fprintf(stderr,
                "flit: rank %u: tagged context on handler %u destroyed with %llu "
                "unexpected messages (%llu bytes) nobody received; %llu malformed "
                "and %llu lost for memory along the way\n",
                t->me, t->h.idx, (unsigned long long)dropped, (unsigned long long)bytes,
                (unsigned long long)t->malformed, (unsigned long long)t->lost);
    (void)flit_handle_free(&contexts, t->self);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

flit_status flit_tagged_destroy(flit_tagged_t *h)
{
    struct flit_tagged *t = ctx_of(h);
    if (!t)
        return FLIT_ERR_INVALID_ARG;
    /* Also the handler check: a handler must not free what it runs in. */
    flit_status st = flit_poll(t->ep);
    if (st == FLIT_ERR_FINALIZED) { /* the endpoint and its table are gone */
        free_context(t);
        return FLIT_OK;
    }
    if (st != FLIT_OK)
        return st;
    lock(t);
    bool busy = req_outstanding(t) != 0;
    unlock(t);
    if (busy)
        return FLIT_ERR_AGAIN;
    /* No handler starts after this (it takes the endpoint, as every
       handler runs inside it); those started, seen below, finish. */
    st = flit_stream_register(t->ep, t->h, NULL, NULL);
    if (st != FLIT_OK)
        return st;
    st = progress_until(t->ep, handlers_gone, t, -1);
    if (st != FLIT_OK)
        return st; /* unregistered but intact: destroy may be called again */
    free_context(t);
    return FLIT_OK;
}

/* ---------------------------------------------------------------- sending */

static flit_status check_send(const struct flit_tagged *t, flit_rank_t dest, uint64_t tag,
                              const void *buf, size_t len)
{
    if (!t)
        return FLIT_ERR_INVALID_ARG;
    if (dest.idx >= t->size) /* FLIT_ANY_SOURCE included */
        return FLIT_ERR_RANK;
    if (tag == FLIT_ANY_TAG || (!buf && len))
        return FLIT_ERR_INVALID_ARG;
    if (len > SIZE_MAX - HDR_LEN)
        return FLIT_ERR_TOO_LARGE;
    return FLIT_OK;
}

static flit_status send_message(struct flit_tagged *t, flit_rank_t dest, uint64_t tag,
                                const void *buf, size_t len)
{
    /* One call for the whole message (begin, send and end were three
       entries into the endpoint). A small message goes as one piece from the
       stack (a copy of up to 256 bytes costs less than a gather and a second
       take: 1801 -> 1658 instructions a 128-byte message, both sides, by
       callgrind); a larger one gathers the header and the user's buffer. */
    _Alignas(8) uint8_t small[HDR_LEN + WHOLE_LEN];
    put_le64(small, tag);
    struct iovec iov[2] = {{.iov_base = small, .iov_len = HDR_LEN},
                           {.iov_base = (void *)buf, .iov_len = len}};
    if (len <= WHOLE_LEN) {
        if (len)
            memcpy(small + HDR_LEN, buf, len);
        iov[0].iov_len = HDR_LEN + len;
        return flit_stream_sendmsg(t->ep, dest, t->h, iov, 1, 0);
    }
    return flit_stream_sendmsg(t->ep, dest, t->h, iov, 2, 0);
}

flit_status flit_tagged_send(flit_tagged_t *h, flit_rank_t dest, uint64_t tag,
                             const void *buf, size_t len)
{
    struct flit_tagged *t = ctx_of(h);
    flit_status st = check_send(t, dest, tag, buf, len);
    if (st != FLIT_OK)
        return st;
    return send_message(t, dest, tag, buf, len);
}

flit_status flit_tagged_isend(flit_tagged_t *h, flit_rank_t dest, uint64_t tag,
                              const void *buf, size_t len, flit_request_t **req)
{
    struct flit_tagged *t = ctx_of(h);
    flit_status st = check_send(t, dest, tag, buf, len);
    if (st != FLIT_OK)
        return st;
    if (!req)
        return FLIT_ERR_INVALID_ARG;
    /* The request first: once the message is sent, nothing may fail. */
    lock(t);
    struct flit_request *r = req_get(t, REQ_SEND);
    unlock(t);
    if (!r)
        return FLIT_ERR_NO_MEMORY;
    st = send_message(t, dest, tag, buf, len);
    if (st != FLIT_OK) {
        req_put(r);
        return st;
    }
    r->info = (flit_tagged_info_t){.source = flit_rank(t->me),
                                   .tag = tag,
                                   .length = len,
                                   .received = len,
                                   .status = FLIT_OK};
    atomic_store_explicit(&r->state, ST_DONE, memory_order_release);
    *req = r->self;
    return FLIT_OK;
}

/* ---------------------------------------------------------------- receiving */

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

/*
 * Under the mutex: matches receive r (its wanted source and tag, buffer and
 * size set) with the first unexpected message that fits, or posts it.
 * Returns whether r is complete: a pooled message that had arrived is taken
 * at once. *large: an arrived message to take (take_large) outside the
 * mutex.
 */
static bool post_locked(struct flit_tagged *t, struct flit_request *r,
                        struct entry **large)
{
    *large = NULL;
    struct entry *e = t->unexp_head ? unexp_find(t, r->source, r->tag) : NULL;
    if (!e) {
        posted_append(t, r);
        return false;
    }
    if (!e->arrived) {
        e->req = r; /* its handler hands it over when it is in */
        r->claimed = e;
        return false;
    }
    unexp_unlink(t, e);
    if (e->cls == ENTRY_MALLOC) {
        *large = e;
        return false;
    }
    take_entry(r, e);
    entry_put(t, e);
    return true;
}

/* A large message that had arrived, into r: r is then complete. */
static void take_large(struct flit_request *r, struct entry *e)
{
    take_entry(r, e);
    free(e);
}

static void recv_set(struct flit_request *r, uint32_t source, uint64_t tag, void *buf,
                     size_t size)
{
    r->source = source;
    r->tag = tag;
    r->buf = buf;
    r->size = size;
}

flit_status flit_tagged_irecv(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                              void *buf, size_t size, flit_request_t **req)
{
    struct flit_tagged *t = ctx_of(h);
    flit_status st = check_recv(t, source, buf, size);
    if (st != FLIT_OK)
        return st;
    if (!req)
        return FLIT_ERR_INVALID_ARG;
    lock(t);
    struct flit_request *r = req_get(t, REQ_RECV);
    struct entry *large = NULL;
    bool done = false;
    if (r) {
        recv_set(r, source.idx, tag, buf, size);
        done = post_locked(t, r, &large);
    }
    unlock(t);
    if (!r)
        return FLIT_ERR_NO_MEMORY;
    if (large)
        take_large(r, large);
    void *handle = r->self; /* before it completes: another thread may end it */
    if (done || large)
        req_complete(r);
    *req = handle;
    return FLIT_OK;
}

flit_status flit_tagged_recv(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                             void *buf, size_t size, flit_tagged_info_t *info)
{
    struct flit_tagged *t = ctx_of(h);
    flit_status st = check_recv(t, source, buf, size);
    if (st != FLIT_OK)
        return st;
    struct flit_request r; /* no free list: we wait for it here */
    req_init(&r, t, REQ_RECV);
    recv_set(&r, source.idx, tag, buf, size);
    struct entry *large;
    lock(t);
    bool done = post_locked(t, &r, &large);
    unlock(t);
    if (large)
        take_large(&r, large);
    if (!done && !large) {
        st = progress_until(t->ep, req_done_cb, &r, -1);
        if (st != FLIT_OK && (st = recv_abandon(&r, st)) != FLIT_OK)
            return st;
    }
    if (info)
        *info = r.info;
    return r.info.status;
}

/* ---------------------------------------------------------------- completion */

flit_status flit_tagged_test(flit_request_t **req, int *done, flit_tagged_info_t *info)
{
    struct flit_request *r = req ? req_of(*req) : NULL;
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
    return req_finish(req, info);
}

flit_status flit_tagged_wait(flit_request_t **req, int64_t timeout_us,
                             flit_tagged_info_t *info)
{
    struct flit_request *r = req ? req_of(*req) : NULL;
    if (!r)
        return FLIT_ERR_INVALID_ARG;
    if (!req_done(r)) {
        flit_status st = progress_until(r->t->ep, req_done_cb, r, timeout_us);
        if (st != FLIT_OK)
            return st;
    }
    return req_finish(req, info);
}

struct waitall {
    size_t n, next; /* reqs[next] is the first not seen complete */
    flit_request_t **reqs;
    flit_tagged_info_t *infos;
    size_t first_bad; /* index of the first non-OK status; n: none */
    flit_status bad;
};

/* Finishes reqs[i], remembering the first (by index) non-OK status. */
static void waitall_finish(struct waitall *w, size_t i)
{
    flit_status st = req_finish(&w->reqs[i], w->infos ? &w->infos[i] : NULL);
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
        struct flit_request *r = req_of(w->reqs[w->next]);
        if (r) {
            if (!req_done(r))
                return false;
            waitall_finish(w, w->next);
        }
        w->next++;
    }
    return true;
}

flit_status flit_tagged_waitall(size_t n, flit_request_t **reqs, int64_t timeout_us,
                                flit_tagged_info_t *infos)
{
    if (n && !reqs)
        return FLIT_ERR_INVALID_ARG;
    for (size_t i = 0; i < n; i++)
        if (reqs[i] && !req_of(reqs[i]))
            return FLIT_ERR_INVALID_ARG;
    struct waitall w = {.n = n, .reqs = reqs, .infos = infos, .first_bad = n};
    flit_status st = FLIT_OK;
    while (!waitall_advance(&w)) {
        st = progress_until(req_of(w.reqs[w.next])->t->ep, waitall_advance, &w,
                            timeout_us);
        if (st != FLIT_OK)
            break;
    }
    if (st != FLIT_OK) { /* finish what did complete; the rest stays */
        for (size_t i = w.next; i < n; i++)
            if (req_of(reqs[i]) && req_done(req_of(reqs[i])))
                waitall_finish(&w, i);
        return st;
    }
    return w.first_bad < n ? w.bad : FLIT_OK;
}

flit_status flit_tagged_cancel(flit_request_t **req)
{
    struct flit_request *r = req ? req_of(*req) : NULL;
    if (!r)
        return FLIT_ERR_INVALID_ARG;
    if (r->kind != REQ_RECV)
        return FLIT_ERR_AGAIN; /* a send is complete: wait for it */
    struct flit_tagged *t = r->t;
    lock(t);
    /* Again under the mutex that unlinks posted receives: a live, posted
       request is this one, not one that took its block meanwhile. */
    bool live = req_of(*req) == r;
    bool posted = live && r->posted;
    if (posted) {
        posted_unlink(t, r);
        req_put_locked(t, r);
    }
    unlock(t);
    if (!live)
        return FLIT_ERR_INVALID_ARG;
    if (!posted)
        return FLIT_ERR_AGAIN;
    *req = NULL;
    return FLIT_OK;
}

/* ---------------------------------------------------------------- probing */

struct probe {
    struct flit_tagged *t;
    uint32_t source;
    uint64_t tag;
    flit_tagged_info_t info;
};

static bool probe_look(void *arg)
{
    struct probe *p = arg;
    struct flit_tagged *t = p->t;
    lock(t);
    struct entry *e = t->unexp_head ? unexp_find(t, p->source, p->tag) : NULL;
    if (e)
        p->info = (flit_tagged_info_t){.source = flit_rank(e->source),
                                       .tag = e->tag,
                                       .length = e->len,
                                       .received = 0,
                                       .status = FLIT_OK};
    unlock(t);
    return e != NULL;
}

static flit_status check_probe(const struct flit_tagged *t, flit_rank_t source)
{
    if (!t)
        return FLIT_ERR_INVALID_ARG;
    if (source.idx >= t->size && source.idx != FLIT_ANY_SOURCE)
        return FLIT_ERR_RANK;
    return FLIT_OK;
}

flit_status flit_tagged_iprobe(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                               int *found, flit_tagged_info_t *info)
{
    struct flit_tagged *t = ctx_of(h);
    flit_status st = check_probe(t, source);
    if (st != FLIT_OK)
        return st;
    if (!found)
        return FLIT_ERR_INVALID_ARG;
    struct probe p = {.t = t, .source = source.idx, .tag = tag};
    bool hit = probe_look(&p);
    if (!hit) {
        st = flit_poll(t->ep);
        if (st != FLIT_OK && st != FLIT_ERR_IN_HANDLER)
            return st;
        hit = probe_look(&p);
    }
    *found = hit;
    if (hit && info)
        *info = p.info;
    return FLIT_OK;
}

flit_status flit_tagged_probe(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                              int64_t timeout_us, flit_tagged_info_t *info)
{
    struct flit_tagged *t = ctx_of(h);
    flit_status st = check_probe(t, source);
    if (st != FLIT_OK)
        return st;
    struct probe p = {.t = t, .source = source.idx, .tag = tag};
    if (!probe_look(&p)) {
        st = progress_until(t->ep, probe_look, &p, timeout_us);
        if (st != FLIT_OK)
            return st;
    }
    if (info)
        *info = p.info;
    return FLIT_OK;
}
