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
 */
#include <flit/stream.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"

#define FMX_MAGIC_OUT 0x666d5f6f75740000ull /* "fm_out" */
#define FMX_MAGIC_IN  0x666d5f696e000000ull /* "fm_in" */

struct FM_stream {
    uint64_t magic;
    struct FM_stream *next_free;
    flit_stream_out_t *out;
    flit_stream_t *in;
    unsigned long size, sent;
};

unsigned FM_nodeid;
unsigned FM_numnodes;

static flit_ep_t *fm_ep;
static FM_handler *handlers[FM_MAX_HANDLERS];
static struct FM_stream *free_streams;
static int started; /* handlers run by the current FM_extract */

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
    struct FM_stream st = {FMX_MAGIC_IN, NULL, NULL, s, total, 0};
    started++;
    fn(&st, flit_stream_rank(s).idx);
    st.magic = 0;
}

int FM_initialize(void)
{
    if (fm_ep)
        return FM_SUCCESS;
    flit_status st = flit_init(NULL);
    if (st != FLIT_OK && st != FLIT_ERR_ALREADY_INITIALIZED) {
        fm_error(flit_strerror(st));
        return FM_FAILURE;
    }
    if ((st = flit_ep_create(NULL, &fm_ep)) != FLIT_OK) {
        fm_error(flit_strerror(st));
        return FM_FAILURE;
    }
    for (unsigned h = 0; h < FM_MAX_HANDLERS && st == FLIT_OK; h++)
        st = flit_stream_register(fm_ep, flit_handler((uint16_t)h), dispatch,
                                  (void *)(uintptr_t)h);
    if (st != FLIT_OK) {
        fm_error(flit_strerror(st));
        return FM_FAILURE;
    }
    FM_nodeid = flit_job_rank().idx;
    FM_numnodes = flit_job_size();
    return FM_SUCCESS;
}

void FM_finalize(void)
{
    if (!fm_ep)
        return;
    flit_ep_destroy(fm_ep);
    fm_ep = NULL;
    while (free_streams) {
        struct FM_stream *s = free_streams;
        free_streams = s->next_free;
        free(s);
    }
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

FM_stream *FM_begin_message(unsigned long dest, unsigned long size, unsigned long handler)
{
    if (!fm_ep || dest >= FM_numnodes || handler >= FM_MAX_HANDLERS)
        return NULL;
    struct FM_stream *s = free_streams;
    if (s)
        free_streams = s->next_free;
    else if (!(s = malloc(sizeof *s)))
        return NULL;
    flit_status st = flit_stream_begin(fm_ep, flit_rank((uint32_t)dest),
                                       flit_handler((uint16_t)handler), size, 0, &s->out);
    if (st != FLIT_OK) {
        s->next_free = free_streams;
        free_streams = s;
        return NULL;
    }
    s->magic = FMX_MAGIC_OUT;
    s->in = NULL;
    s->size = size;
    s->sent = 0;
    return s;
}

static int sender_ok(const FM_stream *s)
{
    return s && s->magic == FMX_MAGIC_OUT;
}

int FM_send_piece(FM_stream *stream, void *buf, unsigned long bytes)
{
    if (!sender_ok(stream) || (!buf && bytes) || bytes > stream->size - stream->sent)
        return FM_FAILURE;
    if (flit_stream_send(stream->out, buf, bytes) != FLIT_OK)
        return FM_FAILURE;
    stream->sent += bytes;
    return FM_SUCCESS;
}

int FM_end_message(FM_stream *stream)
{
    static const char zeros[4096];
    if (!sender_ok(stream))
        return FM_FAILURE;
    flit_status st = FLIT_OK;
    while (st == FLIT_OK && stream->sent < stream->size) {
        unsigned long n = stream->size - stream->sent;
        n = n < sizeof zeros ? n : sizeof zeros;
        st = flit_stream_send(stream->out, zeros, n);
        stream->sent += n;
    }
    flit_status end = flit_stream_end(stream->out);
    stream->magic = 0;
    stream->next_free = free_streams;
    free_streams = stream;
    return st == FLIT_OK && end == FLIT_OK ? FM_SUCCESS : FM_FAILURE;
}

int FM_send(unsigned long dest, unsigned long handler, void *buf, unsigned long size)
{
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

int FM_receive(void *buf, FM_stream *stream, unsigned int bytes)
{
    if (!stream || stream->magic != FMX_MAGIC_IN || (!buf && bytes))
        return FM_FAILURE;
    return flit_stream_recv(stream->in, buf, bytes) == FLIT_OK ? (int)bytes : FM_FAILURE;
}

int FM_extract_bytes(unsigned long max_bytes)
{
    if (!fm_ep)
        return FM_FAILURE;
    int before = started;
    /* FM_extract() and FM_extract(~0) mean everything: flit_poll, which
       also makes the progress flit_extract leaves to later */
    flit_status st = max_bytes && max_bytes < UINT32_MAX ? flit_extract(fm_ep, max_bytes)
                                                         : flit_poll(fm_ep);
    if (st != FLIT_OK && st != FLIT_ERR_AGAIN)
        return FM_FAILURE;
    return started - before;
}
