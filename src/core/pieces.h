/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A payload larger than a packet goes in pieces: each piece is a packet of
 * the layer that sends it (its own header, then the piece's bytes), and the
 * core moves them. One routine for every layer (long active messages, puts
 * over packets, and anything later), so that the rules hold everywhere:
 *
 *  - the pieces of one payload follow each other on their lane with no
 *    other packet of this endpoint in between: the endpoint's lock is kept
 *    (thread-safe endpoints) while a piece waits for room, and the wait
 *    makes progress so the receiver's credits come back;
 *  - only the first piece may answer FLIT_ERR_AGAIN (FLIT_AM_NONBLOCK):
 *    once one is in, the rest follow;
 *  - each piece but the last carries FLIT_AM_MORE, so datagram transports
 *    pack them;
 *  - where the transport keeps what it sent until acknowledged (the
 *    reliability channel), a piece's bytes are lent to it rather than
 *    copied in (transport.h, ->commit_lent), and before returning the
 *    routine has it copy what is still unacknowledged: a payload larger
 *    than the credit window is copied at most a window's worth.
 *
 * On the receiving side one check (fl_piece_fits) judges where a piece
 * claims to lie, whatever layer decoded it.
 */
#ifndef FL_CORE_PIECES_H
#define FL_CORE_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

struct flit_ep;

/* Where one piece lies in the payload. */
struct fl_piece {
    uint64_t off; /* of its first byte in the payload */
    size_t len;
    bool first, last;
};

/* How a layer frames its pieces. */
struct fl_pieces {
    size_t max_hdr; /* the longest header: sizes the pieces */
    /* The header of piece p: its length, then written at pkt. */
    size_t (*hdr_len)(void *arg, const struct fl_piece *p);
    void (*write_hdr)(void *arg, uint8_t *pkt, const struct fl_piece *p);
    void *arg;
};

/*
 * Sends len bytes from src to dst on lane in pieces framed by f (len may
 * be 0: one empty piece). flags: FLIT_AM_NONBLOCK for the first piece.
 * Called with the endpoint entered. FLIT_OK, or the status that stopped
 * it (the pieces before it went; a dead peer's never arrive in full).
 */
flit_status fl_ep_send_pieces(struct flit_ep *ep, uint32_t dst, unsigned lane,
                              const struct fl_pieces *f, const void *src, size_t len,
                              unsigned flags);

/*
 * A piece as a packet describes it: payload [base, base + total) must not
 * wrap, the piece [off, off + len) must lie inside it, and last must say
 * whether it ends there.
 */
static inline bool fl_piece_fits(uint64_t base, uint64_t total, uint64_t off,
                                 uint64_t len, bool last)
{
    if (base + total < base || off > total || len > total - off)
        return false;
    return last == (off + len == total);
}

#endif /* FL_CORE_PIECES_H */
