/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One message out (internal.h for the wire): a request or a reply as a
 * short or medium active message when it fits one, else as a stream with
 * its 16-byte header. Always NONBLOCK: the callers decide what no room
 * means (wait, or queue for program context).
 */
#include <stdlib.h>

#include "internal.h"

/* A medium active message; pieces beyond the first are gathered into one
   buffer first. */
static flit_status send_medium(struct flit_rpc *r, uint32_t dest, flit_handler_t h,
                               const uint32_t *args, const struct iovec *iov, int n,
                               size_t total)
{
    if (n == 1)
        return flit_am_medium(r->ep, flit_rank(dest), h, iov[0].iov_base, total, args,
                              RPC_NARGS, FLIT_AM_NONBLOCK);
    uint8_t *buf = malloc(total);
    if (!buf)
        return FLIT_ERR_NO_MEMORY;
    flit_iov_gather(buf, iov, n);
    flit_status st = flit_am_medium(r->ep, flit_rank(dest), h, buf, total, args,
                                    RPC_NARGS, FLIT_AM_NONBLOCK);
    free(buf);
    return st;
}

/* A stream: the header, then the pieces. */
static flit_status send_stream(struct flit_rpc *r, uint32_t dest, flit_handler_t h,
                               uint32_t word, uint64_t id, const struct iovec *iov, int n,
                               size_t total)
{
    uint8_t hdr[RPC_HDR];
    rpc_hdr(hdr, word, id);
    flit_stream_out_t *s = NULL; /* set when begin answers OK: LTO cannot tell */
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

flit_status fl_rpc_send_msg(struct flit_rpc *r, uint32_t dest, bool reply, uint32_t word,
                            uint64_t id, const struct iovec *iov, int n, size_t total)
{
    size_t am_max = reply ? FLIT_AM_MAX_MEDIUM : FLIT_RPC_AM_MAX;
    flit_handler_t h = flit_handler((uint16_t)(r->h.idx + (reply ? 1 : 0)));
    uint32_t args[RPC_NARGS] = {(uint32_t)id, (uint32_t)(id >> 32), word};
    if (total == 0)
        return flit_am_short(r->ep, flit_rank(dest), h, args, RPC_NARGS,
                             FLIT_AM_NONBLOCK);
    if (total <= am_max)
        return send_medium(r, dest, h, args, iov, n, total);
    return send_stream(r, dest, h, word, id, iov, n, total);
}
