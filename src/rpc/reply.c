/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replies arriving (internal.h): the reply handler takes its call out of
 * the table, then (outside the mutex, as the only one touching the call)
 * places the bytes in the call's buffers, or in one it allocates
 * (FLIT_RPC_REPLY_ALLOC), and completes it. A malformed reply, or one from
 * a rank the call did not go to, is refused (refuse.c).
 */
#include <stdlib.h>

#include "internal.h"

/* Scatters up to c->cap bytes of a len-byte reply from src (NULL: a
   stream s) into the call's buffers; the rest is left. *got: bytes placed. */
static flit_status scatter(struct flit_rpc_call *c, const uint8_t *src, flit_stream_t *s,
                           size_t len, size_t *got)
{
    if (src) {
        *got = flit_iov_scatter(c->rep, c->nrep, src, len);
        return FLIT_OK;
    }
    size_t want = len < c->cap ? len : c->cap;
    *got = 0;
    for (int i = 0; i < c->nrep && *got < want; i++) {
        size_t k = c->rep[i].iov_len;
        if (k > want - *got)
            k = want - *got;
        flit_status st = k ? flit_stream_recv(s, c->rep[i].iov_base, k) : FLIT_OK;
        if (st != FLIT_OK)
            return st;
        *got += k;
    }
    return FLIT_OK;
}

/* FLIT_RPC_REPLY_ALLOC: one buffer of the reply's size, the call's only
   piece. */
static flit_status alloc_reply(struct flit_rpc_call *c, size_t len)
{
    if (!(c->res.data = malloc(len)))
        return FLIT_ERR_NO_MEMORY;
    c->rep_keep[0] = (struct iovec){.iov_base = c->res.data, .iov_len = len};
    c->rep = c->rep_keep;
    c->nrep = 1;
    c->cap = len;
    return FLIT_OK;
}

/* The reply into a call taken from the table (outside the mutex). */
static flit_status take_reply(struct flit_rpc_call *c, flit_status status,
                              const uint8_t *src, flit_stream_t *s, size_t len)
{
    c->res.length = len;
    c->res.received = 0;
    c->res.data = NULL;
    if (status != FLIT_OK || ((c->flags & FLIT_RPC_REPLY_ALLOC) && len == 0))
        return status;
    flit_status st = FLIT_OK;
    if (c->flags & FLIT_RPC_REPLY_ALLOC)
        st = alloc_reply(c, len);
    if (st == FLIT_OK)
        st = scatter(c, src, s, len, &c->res.received);
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
    struct flit_rpc_call *c = fl_rpc_table_take(r, id, from, &forged);
    rpc_unlock(r);
    if (forged)
        fl_rpc_refused(r, "a reply to a call not made to it", from);
    if (!c)
        return;
    flit_status st = take_reply(c, status, src, s, len);
    rpc_lock(r);
    fl_rpc_complete(c, st);
    rpc_unlock(r);
}

void fl_rpc_on_reply_am(flit_token_t *token, void *buf, size_t nbytes,
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

void fl_rpc_on_reply_stream(flit_stream_t *s, size_t total, void *user)
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
