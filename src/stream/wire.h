/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stream packet, little-endian:
 *
 *   off  size
 *    0    1   version (FL_WIRE_VERSION)
 *    1    1   op (FL_OP_STREAM)
 *    2    1   flags: FL_STF_FIRST, FL_STF_LAST
 *    3    1   pad: bytes between the header and the payload (0-63)
 *    4    2   stream handler index
 *    6    2   0
 *    8    4   stream id: the sender's number for the message, per destination
 *   12    4   len: payload bytes in this packet
 *   16    8   FIRST: the tag; others: the offset of this payload in the message
 *   24    8   FIRST only: the message's total length
 *   ..        pad bytes (their content is not read)
 *   ..        payload
 *
 * The pad puts a large piece's payload at the offset in a 64-byte line that
 * its bytes have in the sender's buffer; on shared memory the receiver's ring
 * is mapped line-aligned too, so senders pad only there. Copies whose source
 * and destination sit at different offsets in their lines run at half speed
 * between cores on some machines (a raw pipe of 64 KiB pieces here: 13.5 vs
 * 29 GB/s), and the users' buffers on both sides are mostly aligned alike.
 *
 * A message is one or more packets on the request lane, in order; the
 * packets of several messages may interleave. The first packet names the
 * handler and the length and is judged (tag, handler); the others only
 * continue it. The last one ends exactly at the total.
 *
 * Placed pieces (shared memory; see stream.h). A first packet flagged
 * PLACEABLE says its sender can write the rest of the message straight into
 * the receiver's segment. The receiver may then answer, on the reply lane,
 * with an OFFER: the packet of a first packet's size whose header reads
 *
 *    8    4   stream id
 *   12    4   len: bytes of the message offered a place
 *   16    8   the message offset they start at
 *   24    8   where they go: an offset into the receiver's segment
 *
 * (flags OFFER alone, handler and pad 0, no payload). Bytes of that range
 * the sender has not sent yet it may write there itself, each run followed
 * by a PLACED packet: a continuation header with no payload whose len
 * counts the bytes written, at its offset.
 *
 * Pulled messages (see pull.c). A first packet flagged PULL (never LAST
 * nor PLACEABLE) has a 48-byte header: the first's, then
 *
 *   32    8   the address of the message's byte len, under the key
 *   40    8   the key: 0, the sender's memory as a whole (cross-memory
 *             attach); else what the sender's transport gave when it
 *             exposed the bytes for reading (a libfabric registration)
 *
 * and carries the message's first len bytes; the rest, total - len bytes,
 * lie at that address, and the receiver takes them from there with the
 * transport's ->get, each as its handler asks for it. When it has them all
 * or its handler returns, it answers on the reply lane with a PULLED
 * packet, a header of a first packet's size that reads
 *
 *    8    4   stream id
 *   12    4   0
 *   16    8   bytes of the message the receiver has (taken or passed over)
 *   24    8   bit 0: 0: done, the sender's buffer is free; 1: send the
 *             bytes from that offset in packets (the receiver could not
 *             pull, or measures the rings: below);
 *             bit 1: bits 32-47 hold advice; bits 32-47: the size classes
 *             (stream/choose.h) whose messages the receiver wants offered
 *             pulled; every other bit 0
 *
 * (flags PULLED alone, handler and pad 0, no payload). A first packet
 * flagged PULL and ASK comes from a sender that lets its receiver choose:
 * the receiver may answer at once with bit 0 set, to measure what the
 * rings cost, and its advice tells the sender which sizes to offer pulled
 * (stream/choose.c). Without ASK the receiver pulls whatever it can.
 */
#ifndef FL_STREAM_WIRE_H
#define FL_STREAM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/packet.h"
#include "flit/flit.h"

#define FL_OP_STREAM 7 /* the layer's opcode (core/packet.h) */

#define FL_ST_HDR       24u /* a packet that continues a message */
#define FL_ST_FIRST_HDR 32u /* the first one */
#define FL_ST_PULL_HDR  48u /* the first one of a pulled message */

#define FL_STF_FIRST     0x01u
#define FL_STF_LAST      0x02u
#define FL_STF_PLACEABLE 0x04u /* FIRST: the sender takes an offer */
#define FL_STF_PLACED    0x08u /* not FIRST: len bytes written in place */
#define FL_STF_OFFER     0x10u /* alone, receiver to sender: a place */
#define FL_STF_PULL      0x20u /* FIRST: the rest is pulled from the sender */
#define FL_STF_PULLED    0x40u /* alone, receiver to sender: pulled (or not) */
#define FL_STF_ASK       0x80u /* FIRST and PULL: the receiver chooses, advises */
#define FL_STF_KNOWN                                                                     \
    (FL_STF_FIRST | FL_STF_LAST | FL_STF_PLACEABLE | FL_STF_PLACED | FL_STF_OFFER |      \
     FL_STF_PULL | FL_STF_PULLED | FL_STF_ASK)

#define FL_ST_ALIGN     64u   /* a large piece's payload is placed in its line */
#define FL_ST_ALIGN_MIN 1024u /* pieces from this size up are aligned */

struct fl_st_pkt {
    uint8_t flags;
    uint8_t pad; /* bytes after the header, before the payload */
    uint16_t handler;
    uint32_t sid;
    uint32_t len;
    uint64_t tag;     /* FIRST */
    uint64_t offset;  /* 0 for FIRST */
    uint64_t total;   /* FIRST; else 0 */
    uint64_t place;   /* OFFER: the segment offset; else 0 */
    uint64_t addr;    /* PULL: the address of byte len under key; else 0 */
    uint64_t key;     /* PULL: the key to ->get it under; else 0 */
    bool resend;      /* PULLED: send the rest from offset in packets */
    bool advised;     /* PULLED: advice holds the receiver's word */
    uint16_t advice;  /* PULLED: size classes to offer pulled (choose.h) */
    uint8_t *payload; /* decode: into the packet (NULL when PLACED, OFFER) */
};

static inline size_t fl_st_hdr_len(unsigned flags)
{
    if (flags & FL_STF_PULL)
        return FL_ST_PULL_HDR;
    return (flags & (FL_STF_FIRST | FL_STF_OFFER | FL_STF_PULLED)) ? FL_ST_FIRST_HDR
                                                                   : FL_ST_HDR;
}

/* Writes p's header (flags, len, pad and all) at buf; returns its length,
   not counting the pad. */
size_t fl_st_encode(uint8_t *buf, const struct fl_st_pkt *p);

/* Decodes and validates a whole packet: FLIT_ERR_BAD_PACKET unless every
   field is consistent (the payload within the message, LAST exactly at
   its end when the first packet says where that is; an offer or a placed
   run of at least a byte, with no payload). */
flit_status fl_st_decode(void *pkt, size_t len, struct fl_st_pkt *p);

#endif /* FL_STREAM_WIRE_H */
