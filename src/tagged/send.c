/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sending (<flit/tagged.h>): a message is one stream call, complete when
 * it returns; isend's request is born complete.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    flit_status st = check_send(t, dest, tag, buf, len);
    if (st != FLIT_OK)
        return st;
    return send_message(t, dest, tag, buf, len);
}

/* Pieces gathered with the header from an array on the stack; more take
   one from the heap. */
#define SENDV_STACK 16

flit_status flit_tagged_sendv(flit_tagged_t *h, flit_rank_t dest, uint64_t tag,
                              const struct iovec *iov, int iovcnt)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    size_t len = 0;
    flit_status st = flit_iov_total(iov, iovcnt, &len);
    if (st != FLIT_OK)
        return st;
    st = check_send(t, dest, tag, iov, len); /* iov: not NULL when len > 0 */
    if (st != FLIT_OK)
        return st;
    if (iovcnt <= 1)
        return send_message(t, dest, tag, iovcnt ? iov[0].iov_base : NULL, len);
    _Alignas(8) uint8_t small[HDR_LEN + WHOLE_LEN];
    put_le64(small, tag);
    if (len <= WHOLE_LEN) { /* as send_message: one piece from the stack */
        flit_iov_gather(small + HDR_LEN, iov, iovcnt);
        struct iovec one = {.iov_base = small, .iov_len = HDR_LEN + len};
        return flit_stream_sendmsg(t->ep, dest, t->h, &one, 1, 0);
    }
    struct iovec stack[SENDV_STACK], *v = stack;
    if ((size_t)iovcnt + 1 > SENDV_STACK &&
        !(v = malloc(((size_t)iovcnt + 1) * sizeof *v)))
        return FLIT_ERR_NO_MEMORY;
    v[0] = (struct iovec){.iov_base = small, .iov_len = HDR_LEN};
    memcpy(v + 1, iov, (size_t)iovcnt * sizeof *v);
    st = flit_stream_sendmsg(t->ep, dest, t->h, v, iovcnt + 1, 0);
    if (v != stack)
        free(v);
    return st;
}

flit_status flit_tagged_isend(flit_tagged_t *h, flit_rank_t dest, uint64_t tag,
                              const void *buf, size_t len, flit_request_t **req)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    flit_status st = check_send(t, dest, tag, buf, len);
    if (st != FLIT_OK)
        return st;
    if (!req)
        return FLIT_ERR_INVALID_ARG;
    /* The request first: once the message is sent, nothing may fail. */
    lock(t);
    struct flit_request *r = fl_tagged_req_get(t, REQ_SEND);
    unlock(t);
    if (!r)
        return FLIT_ERR_NO_MEMORY;
    st = send_message(t, dest, tag, buf, len);
    if (st != FLIT_OK) {
        fl_tagged_req_put(r);
        return st;
    }
    r->info = (flit_tagged_info_t){.source = flit_rank(t->me),
                                   .tag = tag,
                                   .length = len,
                                   .received = len,
                                   .status = FLIT_OK};
    req_complete(r);
    *req = r->self;
    return FLIT_OK;
}
