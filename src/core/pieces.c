/* SPDX-License-Identifier: BSD-3-Clause */
/* Sending a payload in pieces (pieces.h). */
#include "core/pieces.h"

#include <string.h>

#include "core/ep.h"

/* A piece's bytes are lent to a transport that keeps what it sends until
   acknowledged (ep.h, fl_ep_commit_lent) from this size on: below it the
   copy costs less than the second piece of a datagram's gather. */
#define LEND_MIN 1024u

flit_status fl_ep_send_pieces(struct flit_ep *ep, uint32_t dst, unsigned lane,
                              const struct fl_pieces *f, const void *src, size_t len,
                              unsigned flags)
{
    const uint8_t *from = src;
    size_t chunk = fl_ep_piece_size(ep, dst, f->max_hdr);
    struct fl_piece p = {.off = 0, .first = true};
    flit_status st = FLIT_OK;
    bool lend = chunk >= LEND_MIN && fl_ep_can_lend(ep, dst), lent = false;
    ep->keep_lock++; /* another thread's pieces must not come in between */
    do {
        p.len = len - p.off < chunk ? (size_t)(len - p.off) : chunk;
        p.last = p.off + p.len == len;
        size_t hl = f->hdr_len(f->arg, &p);
        unsigned pf = p.first ? flags : flags & ~FLIT_AM_NONBLOCK;
        if (!p.last)
            pf |= FLIT_AM_MORE; /* the last keeps the caller's choice */
        void *pkt;
        st = fl_ep_reserve(ep, dst, lane, hl + p.len, pf, &pkt);
        if (st != FLIT_OK)
            break;
        if (lend && p.len >= LEND_MIN) {
            /* sent from src while this call lasts; what is unacknowledged
               when it ends is copied then (below) */
            f->write_hdr(f->arg, pkt, &p);
            fl_ep_commit_lent(ep, dst, lane, pkt, hl + p.len, hl, from + p.off, pf);
            lent = true;
        } else {
            if (p.len) /* the payload first, the header last (fl_ep_reserve) */
                memcpy((uint8_t *)pkt + hl, from + p.off, p.len);
            f->write_hdr(f->arg, pkt, &p);
            fl_ep_commit(ep, dst, lane, pkt, hl + p.len, pf);
        }
        p.off += p.len;
        p.first = false;
    } while (!p.last);
    if (lent)
        fl_ep_settle_lent(ep, dst, lane); /* src is the caller's again */
    ep->keep_lock--;
    return st;
}
