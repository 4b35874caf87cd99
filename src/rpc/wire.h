/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RPC layer's wire (see internal.h for the layout), decoded by one
 * validating function per format: the active message's three words, and
 * the 16-byte header of a streamed request or reply. What a peer sent is
 * taken only through these; anything they refuse is dropped, counted and
 * logged by the caller, never trusted.
 */
#ifndef FL_RPC_WIRE_H
#define FL_RPC_WIRE_H

#include <flit/flit.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RPC_WIRE  0x31637072u /* "rpc1": stream header magic */
#define RPC_HDR   16u
#define RPC_NARGS 3u

/* A request or reply as the wire gave it. */
struct fl_rpc_msg {
    uint64_t id;   /* the caller's call */
    uint32_t word; /* request: the procedure; reply: a flit_status */
    size_t len;    /* the bytes after the words or the header */
};

static inline uint32_t fl_rpc_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* A reply's word must name a status this library has: the caller returns
   it as its call's status. A request's procedure is judged by the server
   against its table (an unknown one is answered FLIT_ERR_NO_HANDLER). */
static inline bool fl_rpc_word_ok(bool reply, uint32_t word)
{
    return !reply || word < (uint32_t)FLIT_STATUS_COUNT;
}

/* The active-message form: args {id lo, id hi, word}, nbytes of payload.
   FLIT_ERR_BAD_PACKET for another count of words or a reply's unknown
   status; *m is written only on success. */
static inline flit_status fl_rpc_decode_am(const uint32_t *args, unsigned nargs,
                                           size_t nbytes, bool reply,
                                           struct fl_rpc_msg *m)
{
    if (nargs != RPC_NARGS || !args || !fl_rpc_word_ok(reply, args[2]))
        return FLIT_ERR_BAD_PACKET;
    *m = (struct fl_rpc_msg){
        .id = args[0] | (uint64_t)args[1] << 32, .word = args[2], .len = nbytes};
    return FLIT_OK;
}

/* The stream form: the first RPC_HDR bytes (hdr) of a message of total
   bytes: {word u32, magic u32, id u64}, little-endian. FLIT_ERR_BAD_PACKET
   for a message shorter than the header, another magic, or a reply's
   unknown status; *m is written only on success. */
static inline flit_status fl_rpc_decode_hdr(const uint8_t *hdr, size_t total, bool reply,
                                            struct fl_rpc_msg *m)
{
    if (total < RPC_HDR || !hdr || fl_rpc_le32(hdr + 4) != RPC_WIRE ||
        !fl_rpc_word_ok(reply, fl_rpc_le32(hdr)))
        return FLIT_ERR_BAD_PACKET;
    *m = (struct fl_rpc_msg){.id = fl_rpc_le32(hdr + 8) | (uint64_t)fl_rpc_le32(hdr + 12)
                                                              << 32,
                             .word = fl_rpc_le32(hdr),
                             .len = total - RPC_HDR};
    return FLIT_OK;
}

#endif /* FL_RPC_WIRE_H */
