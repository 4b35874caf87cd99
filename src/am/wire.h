/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Active Message packet, little-endian:
 *
 *   off  size
 *    0    1   version (FL_WIRE_VERSION)
 *    1    1   op (FL_OP_AM_*, FL_OP_RETURN)
 *    2    1   nargs (0 .. 16)
 *    3    1   flags (FL_AMF_*)
 *    4    2   handler index
 *    6    2   aux: RETURN: the reason (flit_status)
 *    8    4   len: payload bytes in this packet (MEDIUM, FRAG, RETURN)
 *   12    8   tag
 *   20   4n   arguments
 *   ..   24   LONG and FRAG only: u64 base offset, u64 total length,
 *             u64 offset of this piece within the payload
 *   ..        payload, starting 8-byte aligned
 *
 * With the ring's 8-byte record header, a short message of up to 9
 * arguments is one 64-byte cache line.
 */
#ifndef FL_AM_WIRE_H
#define FL_AM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/packet.h"
#include "flit/flit.h"
#include "platform/le.h"

#define FL_AM_BASE_HDR 20u
#define FL_AM_LONG_EXT 24u
#define FL_AM_MAX_HDR  112u /* 20 + 64 + 24, rounded up to 8 */

#define FL_AMF_REPLY 0x01u /* travels on the reply lane */
#define FL_AMF_FINAL 0x02u /* FRAG: the last piece; the handler runs */
#define FL_AMF_KNOWN (FL_AMF_REPLY | FL_AMF_FINAL)

/* The layer's opcodes (core/packet.h: claimed at init). */
enum {
    FL_OP_AM_SHORT = 1,
    FL_OP_AM_MEDIUM = 2,
    FL_OP_AM_LONG = 3, /* payload already in the segment (put) */
    FL_OP_AM_FRAG = 4, /* a piece of a long payload, copied on arrival */
    FL_OP_RETURN = 5,  /* a refused packet sent back, with the reason */
};

/* A header in host order: what encode writes, what decode found. */
struct fl_am_msg {
    uint8_t op, flags, nargs;
    uint16_t handler, aux;
    uint64_t tag;
    uint64_t base, total, piece; /* LONG, FRAG */
    size_t payload_len;
    /* decode: the arguments, read in place on little-endian machines (the
       packet is 8-byte aligned, so they are 4-byte aligned), else copied
       into args[]. */
    const uint32_t *argv;
    uint32_t args[FLIT_AM_MAX_ARGS];
    uint8_t *payload; /* decode: into the packet */
};

/* Header bytes before the payload for op with nargs arguments. */
static inline size_t fl_am_hdr_len(unsigned op, unsigned nargs)
{
    size_t n = FL_AM_BASE_HDR + 4u * nargs;
    if (op == FL_OP_AM_LONG || op == FL_OP_AM_FRAG)
        n += FL_AM_LONG_EXT;
    return (n + 7u) & ~(size_t)7u;
}

/* Writes m's header and the m->nargs arguments args to buf (the packet's
   first bytes, at most FL_AM_MAX_HDR); returns the header's length, where
   the payload starts. m->payload_len goes into the len field. */
size_t fl_am_encode(uint8_t *buf, const struct fl_am_msg *m, const uint32_t *args);

/*
 * The header of a short message, written in place: what fl_am_encode writes
 * for FL_OP_AM_SHORT, field by field with no header struct and no call (the
 * latency and message-rate path). Returns the packet's length.
 */
static inline size_t fl_am_encode_short(uint8_t *buf, bool reply, uint16_t handler,
                                        uint64_t tag, const uint32_t *args,
                                        unsigned nargs)
{
    fl_put64(buf, (uint64_t)FL_WIRE_VERSION | (uint64_t)FL_OP_AM_SHORT << 8 |
                      (uint64_t)nargs << 16 | (uint64_t)(reply ? FL_AMF_REPLY : 0) << 24 |
                      (uint64_t)handler << 32);
    fl_put32(buf + 8, 0);
    fl_put64(buf + 12, tag);
    uint8_t *p = buf + FL_AM_BASE_HDR;
    for (unsigned i = 0; i < nargs; i++)
        fl_put32(p + 4 * i, args[i]);
    size_t hl = fl_am_hdr_len(FL_OP_AM_SHORT, nargs);
    if (nargs % 2 == 0)
        fl_put32(p + 4 * nargs, 0); /* the pad to 8 bytes: never leak stack */
    return hl;
}

/*
 * The arguments of a well-formed short message whose first word is w and
 * length len (a receive's fast path): NULL where fl_am_decode must judge it
 * (another op, flags, a length that does not add up, a big-endian host).
 * What it accepts, fl_am_decode accepts with the same fields.
 */
static inline const uint32_t *fl_am_short_args(const uint8_t *pkt, size_t len, uint64_t w)
{
    unsigned nargs = (uint8_t)(w >> 16);
    if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ ||
        (uint16_t)w != (FL_WIRE_VERSION | FL_OP_AM_SHORT << 8) ||
        ((w >> 24) & 0xff & ~FL_AMF_REPLY) != 0 || nargs > FLIT_AM_MAX_ARGS ||
        len != fl_am_hdr_len(FL_OP_AM_SHORT, nargs) || fl_get32(pkt + 8) != 0)
        return NULL;
    return (const uint32_t *)(const void *)(pkt + FL_AM_BASE_HDR);
}

/*
 * Decodes and validates a whole packet (8-byte aligned): known version, op
 * and flags, sizes that add up, pieces inside their long payload, medium
 * within bounds. FLIT_ERR_BAD_PACKET on anything else. m->payload and
 * (little-endian) m->argv point into pkt.
 */
flit_status fl_am_decode(void *pkt, size_t len, struct fl_am_msg *m);

#endif /* FL_AM_WIRE_H */
