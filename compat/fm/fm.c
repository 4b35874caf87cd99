/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fast Messages 1.x and 2.x on flit's streams (<flit/stream.h>), which have
 * FM 2.x's semantics: one flit endpoint, FM handler id h is flit stream
 * handler h. Built on the public API alone.
 *
 * FM_stream is this library's handle over either side of a message: the
 * sender's flit_stream_out_t (from a free list, so that a message costs no
 * malloc once the list is warm) or the receiver's flit_stream_t (on the
 * stack of the dispatch, which is the handler's, valid while it runs).
 * FM_begin_message's size is an upper bound in FM programs (they declare a
 * maximum and send what they have): flit's streams are of an exact length,
 * so FM_end_message sends zeros for what was declared and not sent.
 *
 * Inside a handler flit sends nothing (its waits could need the very
 * handler that waits), yet FM 2.x programs forward from handlers (a token
 * ring). There a message is built in memory (struct fm_held) and queued
 * for its destination; the queue goes out, in order, as soon as the
 * program is outside handlers again: at the end of the FM_extract that ran
 * the handler, and before any later message of the program to that node,
 * so the order of FM_begin_message calls per destination is kept. Held
 * bytes are bounded: past FM_HELD_HIGH FM_extract sends them (waiting for
 * credits) before it takes anything more, and past FM_HELD_MAX a handler's
 * FM_begin_message answers NULL.
 */
#include <flit/handle.h>
#include <flit/stream.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "fm.h"

#define FM_HELD_HIGH ((unsigned long)1 << 20)  /* FM_extract sends before taking more */
#define FM_HELD_MAX  ((unsigned long)64 << 20) /* a handler's FM_begin_message: NULL */

/* A message built inside a handler, waiting to go to dest. */
struct fm_held {
    struct fm_held *next;
    unsigned long handler, size;
    unsigned char bytes[];
};

struct fm_queue {
    struct fm_held *head, *tail;
};

/* The program holds <flit/handle.h> handles of these, never pointers: a
   sender's stream ended (its memory reused by the next message), or a
   receiver's kept past its handler (the next handler's is in the same
   place), answers FM_FAILURE. */
struct FM_stream {
    void *self; /* its handle while open: of outs or ins */
    struct FM_stream *next_free;
    flit_stream_out_t *out;
    flit_stream_t *in;
    unsigned long size, sent;
    struct fm_held *held; /* built inside a handler: its bytes */
    unsigned long dest;
};

unsigned FM_nodeid;
unsigned FM_numnodes;

static flit_ep_t *fm_ep;
static FM_handler *handlers[FM_MAX_HANDLERS];
static struct FM_stream *free_streams;
static flit_handles_t *outs, *ins; /* senders', receivers' streams */
static int started;              /* handlers run by the current FM_extract */
static struct fm_queue *queues;  /* [FM_numnodes]: handlers' messages to send */
static unsigned long held_bytes; /* in them, and in open ones being built */

static void send_all_held(unsigned flags);
static void drop_held(unsigned long dest, const char *why);

static void fm_error(const char *what)
{
    fprintf(stderr, "FM (flit-fm) error: %s\n", what);
}

static void dispatch(flit_stream_t *s, size_t total, void *user)
{
    (void)total;
    unsigned h = (unsigned)(uintptr_t)user;
    FM_handler *fn = handlers[h];
    if (!fn) {
        fprintf(stderr,
                "FM (flit-fm) error: a message from node %u for handler %u, "
                "which is not registered: dropped\n",
                flit_stream_rank(s).idx, h);
        return;
    }
    struct FM_stream st = {.in = s, .size = total};
    if (flit_handle_new(&ins, &st, &st.self) != FLIT_OK) { /* made at start */
        fm_error("no memory for a stream handle: a message dropped");
        return;
    }
    started++;
    fn(st.self, flit_stream_rank(s).idx);
    (void)flit_handle_free(&ins, st.self);
}

/* The tables made now (no memory later is no message lost). */
static int make_tables(void)
{
    struct FM_stream probe;
    void *h;
    if (flit_handle_new(&ins, &probe, &h) != FLIT_OK)
        return 0;
    (void)flit_handle_free(&ins, h);
    if (flit_handle_new(&outs, &probe, &h) != FLIT_OK)
        return 0;
    (void)flit_handle_free(&outs, h);
    return 1;
}

/*
 * How FM ends flit. flitrun fails a job in which a rank exits 0 without
 * flit_finalize while others run, so FM_finalize finalizes flit when
 * FM_initialize joined the job (fm_owns_flit; a program that called
 * flit_init itself finalizes it itself). FM 1.x programs may return from
 * main without FM_finalize: an exit handler, registered at the first
 * FM_initialize, calls it then for status 0. Both are collective, as
 * FM_finalize is: an early rank waits in the endpoint's destruction for
 * the others. A failing exit (status not 0) ends the job anyway, and
 * must not wait for peers that may wait for it.
 */
static int fm_owns_flit;

/* The exit handler must outlive a dlclose of this library (on_exit, unlike
   atexit, does not drop a library's handlers when it is unloaded): the
   library is pinned in memory (RTLD_NODELETE) when the handler goes in. */
static void pin_library(void)
{
    Dl_info info;
    if (dladdr(&fm_owns_flit, &info) && info.dli_fname)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void fm_at_exit(int code, void *arg)
{
    (void)arg;
    if (fm_ep && code == 0 && !flit_in_handler()) /* in a handler flit refuses */
        FM_finalize();
}

int FM_initialize(void)
{
    static int at_exit;
    if (fm_ep)
        return FM_SUCCESS;
    flit_status st = flit_init(NULL);
    if (st != FLIT_OK && st != FLIT_ERR_ALREADY_INITIALIZED) {
        fm_error(flit_strerror(st));
        return FM_FAILURE;
    }
    fm_owns_flit = fm_owns_flit || st == FLIT_OK;
    if (!at_exit && (at_exit = on_exit(fm_at_exit, NULL) == 0))
        pin_library();
    /* The queues first: no endpoint is left half set up when they fail. */
    if (!make_tables() || !(queues = calloc(flit_job_size(), sizeof *queues))) {
        fm_error("no memory for the send queues");
        return FM_FAILURE;
    }
    flit_ep_t *e = NULL;
    if ((st = flit_ep_create(NULL, &e)) == FLIT_OK)
        for (unsigned h = 0; h < FM_MAX_HANDLERS && st == FLIT_OK; h++)
            st = flit_stream_register(e, flit_handler((uint16_t)h), dispatch,
                                      (void *)(uintptr_t)h);
    if (st != FLIT_OK) {
        fm_error(flit_strerror(st));
        if (e)
            flit_ep_destroy(e);
        free(queues);
        queues = NULL;
        return FM_FAILURE;
    }
    fm_ep = e;
    FM_nodeid = flit_job_rank().idx;
    FM_numnodes = flit_job_size();
    return FM_SUCCESS;
}

void FM_finalize(void)
{
    if (!fm_ep)
        return;
    if (flit_in_handler()) { /* flit destroys nothing from a handler */
        fm_error("FM_finalize called inside a handler: nothing was ended");
        return;
    }
    send_all_held(0);
    for (unsigned d = 0; d < FM_numnodes; d++)
        while (queues[d].head)
            drop_held(d, "FM_finalize");
    free(queues);
    queues = NULL;
    flit_ep_destroy(fm_ep);
    fm_ep = NULL;
    while (free_streams) {
        struct FM_stream *s = free_streams;
        free_streams = s->next_free;
        free(s);
    }
    flit_status st = fm_owns_flit ? flit_finalize() : FLIT_OK;
    fm_owns_flit = 0;
    if (st != FLIT_OK)
        fm_error(flit_strerror(st));
}

unsigned long FM_register_handler(unsigned long handler_id, FM_handler *handler)
{
    if (!handler || handler_id >= FM_MAX_HANDLERS)
        return (unsigned long)FM_FAILURE;
    if (handler_id == 0) {
        for (handler_id = 1; handler_id < FM_MAX_HANDLERS && handlers[handler_id];)
            handler_id++;
        if (handler_id == FM_MAX_HANDLERS)
            return (unsigned long)FM_FAILURE;
    }
    handlers[handler_id] = handler;
    return handler_id;
}

/* ---------------------------------------------------------------- sending */

/* A stream from the free list, or a new one, with a handle; NULL when
   memory is short. */
static struct FM_stream *stream_get(void)
{
    struct FM_stream *s = free_streams;
    if (s)
        free_streams = s->next_free;
    else if (!(s = malloc(sizeof *s)))
        return NULL;
    if (flit_handle_new(&outs, s, &s->self) != FLIT_OK) {
        s->next_free = free_streams;
        free_streams = s;
        return NULL;
    }
    return s;
}

/* Back to the free list: its handle ends. */
static void stream_put(struct FM_stream *s)
{
    (void)flit_handle_free(&outs, s->self);
    s->next_free = free_streams;
    free_streams = s;
}

/* Inside a handler: the message is built in memory and queued at its end. */
static FM_stream *begin_held(unsigned long dest, unsigned long size,
                             unsigned long handler)
{
    if (size > FM_HELD_MAX - held_bytes) {
        fm_error("a handler's message finds the send queues full (FM_begin_message "
                 "inside handlers holds at most 64 MiB): not sent");
        return NULL;
    }
    struct fm_held *m = malloc(sizeof *m + size);
    struct FM_stream *s = m ? stream_get() : NULL;
    if (!s) {
        free(m);
        return NULL;
    }
    m->next = NULL;
    m->handler = handler;
    m->size = size;
    held_bytes += size;
    *s = (struct FM_stream){.self = s->self, .size = size, .held = m, .dest = dest};
    return s->self;
}

/* Takes dest's first held message off its queue and frees it. */
static void pop_held(unsigned long dest)
{
    struct fm_queue *q = &queues[dest];
    struct fm_held *m = q->head;
    q->head = m->next;
    if (!q->head)
        q->tail = NULL;
    held_bytes -= m->size;
    free(m);
}

static void drop_held(unsigned long dest, const char *why)
{
    fprintf(stderr,
            "FM (flit-fm) error: a message a handler sent to node %lu (handler %lu) is "
            "lost: %s\n",
            dest, queues[dest].head->handler, why);
    pop_held(dest);
}

/*
 * Sends dest's held messages, in order, outside handlers. flags 0 waits
 * for credits (making progress: handlers that run meanwhile may queue
 * more, behind these); FLIT_STREAM_NONBLOCK stops at the first message
 * that finds no room for its first packet. A message the peer can never
 * take (it died) is dropped, said so on stderr, and its status answered.
 */
static flit_status send_held(unsigned long dest, unsigned flags)
{
    struct fm_queue *q = &queues[dest];
    while (q->head) {
        struct fm_held *m = q->head; /* stays first while it is sent */
        struct iovec v = {m->bytes, m->size};
        flit_status st =
            flit_stream_sendmsg(fm_ep, flit_rank((uint32_t)dest),
                                flit_handler((uint16_t)m->handler), &v, 1, flags);
        if (st == FLIT_ERR_AGAIN)
            return st;
        if (st != FLIT_OK) {
            drop_held(dest, flit_strerror(st));
            return st;
        }
        pop_held(dest);
    }
    return FLIT_OK;
}

static void send_all_held(unsigned flags)
{
    for (unsigned long d = 0; d < FM_numnodes; d++)
        if (queues[d].head)
            send_held(d, flags);
}

FM_stream *FM_begin_message(unsigned long dest, unsigned long size, unsigned long handler)
{
    if (!fm_ep || dest >= FM_numnodes || handler >= FM_MAX_HANDLERS)
        return NULL;
    if (flit_in_handler())
        return begin_held(dest, size, handler);
    /* What handlers sent to dest before this message goes before it. */
    if (queues[dest].head && send_held(dest, 0) != FLIT_OK)
        return NULL;
    struct FM_stream *s = stream_get();
    if (!s)
        return NULL;
    flit_status st = flit_stream_begin(fm_ep, flit_rank((uint32_t)dest),
                                       flit_handler((uint16_t)handler), size, 0, &s->out);
    if (st != FLIT_OK) {
        stream_put(s);
        return NULL;
    }
    s->in = NULL;
    s->size = size;
    s->sent = 0;
    s->held = NULL;
    s->dest = dest;
    return s->self;
}

/* The open sender's stream a handle names; NULL for any other value. */
static struct FM_stream *sender_of(FM_stream *h)
{
    return flit_handle_get(&outs, h);
}

int FM_send_piece(FM_stream *h, void *buf, unsigned long bytes)
{
    struct FM_stream *stream = sender_of(h);
    if (!stream || (!buf && bytes) || bytes > stream->size - stream->sent)
        return FM_FAILURE;
    if (stream->held) {
        if (bytes)
            memcpy(stream->held->bytes + stream->sent, buf, bytes);
    } else if (flit_stream_send(stream->out, buf, bytes) != FLIT_OK) {
        return FM_FAILURE;
    }
    stream->sent += bytes;
    return FM_SUCCESS;
}

/* A held message, complete (zeros for what was not sent), joins its queue. */
static void end_held(FM_stream *stream)
{
    struct fm_held *m = stream->held;
    memset(m->bytes + stream->sent, 0, stream->size - stream->sent);
    struct fm_queue *q = &queues[stream->dest];
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    stream->held = NULL;
}

int FM_end_message(FM_stream *h)
{
    static const char zeros[4096];
    struct FM_stream *stream = sender_of(h);
    if (!stream)
        return FM_FAILURE;
    if (stream->held) {
        end_held(stream);
        stream_put(stream);
        return FM_SUCCESS;
    }
    flit_status st = FLIT_OK;
    while (st == FLIT_OK && stream->sent < stream->size) {
        unsigned long n = stream->size - stream->sent;
        n = n < sizeof zeros ? n : sizeof zeros;
        st = flit_stream_send(stream->out, zeros, n);
        stream->sent += n;
    }
    flit_status end = flit_stream_end(stream->out);
    stream_put(stream);
    return st == FLIT_OK && end == FLIT_OK ? FM_SUCCESS : FM_FAILURE;
}

int FM_send(unsigned long dest, unsigned long handler, void *buf, unsigned long size)
{
    /* Everything checked before the message opens: once open, it goes. */
    if (!buf && size)
        return FM_FAILURE;
    FM_stream *s = FM_begin_message(dest, size, handler);
    if (!s)
        return FM_FAILURE;
    int rc = FM_send_piece(s, buf, size);
    return FM_end_message(s) == FM_SUCCESS ? rc : FM_FAILURE;
}

int FM_send_4(unsigned long dest, unsigned long handler, int i0, int i1, int i2, int i3)
{
    int words[4] = {i0, i1, i2, i3};
    return FM_send(dest, handler, words, sizeof words);
}

/* ---------------------------------------------------------------- receiving */

int FM_receive(void *buf, FM_stream *h, unsigned int bytes)
{
    struct FM_stream *stream = flit_handle_get(&ins, h);
    if (!stream || (!buf && bytes))
        return FM_FAILURE;
    return flit_stream_recv(stream->in, buf, bytes) == FLIT_OK ? (int)bytes : FM_FAILURE;
}

int FM_extract_bytes(unsigned long max_bytes)
{
    if (!fm_ep)
        return FM_FAILURE;
    if (!flit_in_handler()) /* many held bytes: they go before more come in */
        send_all_held(held_bytes > FM_HELD_HIGH ? 0 : FLIT_STREAM_NONBLOCK);
    int before = started;
    /* FM_extract() and FM_extract(~0) mean everything: flit_poll, which
       also makes the progress flit_extract leaves to later */
    flit_status st = max_bytes && max_bytes < UINT32_MAX ? flit_extract(fm_ep, max_bytes)
                                                         : flit_poll(fm_ep);
    if (st != FLIT_OK && st != FLIT_ERR_AGAIN)
        return FM_FAILURE;
    send_all_held(FLIT_STREAM_NONBLOCK); /* what the handlers just sent */
    return started - before;
}
