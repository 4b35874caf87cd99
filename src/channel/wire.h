/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliability channel's datagram, little-endian:
 *
 *   off size
 *    0   1  version (FL_CHAN_VERSION)
 *    1   1  kind: FL_CHAN_DATA, or FL_CHAN_PING (answer with an ack at once)
 *    2   2  number of chunks
 *    4   4  source rank
 *    8   8  job key: datagrams of another job are dropped
 *   16   4  destination rank
 *   20   4  ts: the sender's clock, microseconds
 *   24   4  ts_echo: the latest ts the sender got from the destination
 *   28   4  echo_delay: microseconds between getting ts_echo and sending this
 *   32  16  per lane (request, reply): u32 next sequence number expected,
 *           u8 words of selective acknowledgement that follow (at most
 *           FL_CHAN_SACK_WORDS), three zero bytes
 *   48      the selective acknowledgements, the request lane's words then
 *           the reply lane's, u64 each: bit i of word w says that sequence
 *           number next + 64 w + i is held (next itself: held back for the
 *           receiver's poll's budget, not delivered yet)
 *           then the chunks: u8 lane, u8 flags, u16 length, u32 sequence
 *           number, then the bytes, padded to 8 (so packets stay 8-byte
 *           aligned)
 *
 * Every datagram carries the acknowledgements for both lanes: a reply
 * acknowledges its request without a packet of its own. The selective
 * words reach as far as the highest chunk the receiver holds, which is at
 * most FL_CHAN_SEQ_WINDOW past the cumulative one: they can describe every
 * chunk of a window, where version 1's 64 bits saw only the first 64 past
 * a hole (docs/udp-loss.md). A datagram with chunks may carry fewer words
 * than the receiver would say, those nearest the hole; a pure
 * acknowledgement carries them all. A packet larger than a datagram goes
 * as several chunks (FIRST ... LAST), each with a sequence number of its
 * own, reassembled in order at the receiver.
 */
#ifndef FL_CHANNEL_WIRE_H
#define FL_CHANNEL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"
#include "transport/transport.h"

#define FL_CHAN_VERSION    2
#define FL_CHAN_HDR        48u /* the fixed part */
#define FL_CHAN_CHUNK_HDR  8u
#define FL_CHAN_MAX_CHUNKS 256u  /* per datagram */
#define FL_CHAN_SEQ_WINDOW 1024u /* sequence numbers in flight per lane */
#define FL_CHAN_SACK_WORDS (FL_CHAN_SEQ_WINDOW / 64u)
/* The header of a datagram with chunks: a selective word per lane fits
   beside a chunk of the largest size (more when the chunks leave room). */
#define FL_CHAN_DATA_HDR (FL_CHAN_HDR + 8u * FL_LANES)
/* The largest header: every selective word of both lanes. */
#define FL_CHAN_MAX_HDR (FL_CHAN_HDR + 8u * FL_LANES * FL_CHAN_SACK_WORDS)

enum fl_chan_kind { FL_CHAN_DATA = 0, FL_CHAN_PING = 1 };

#define FL_CHAN_FIRST 0x01u
#define FL_CHAN_LAST  0x02u

struct fl_chan_ack {
    uint32_t next;                     /* first sequence number not yet received */
    uint8_t words;                     /* of sack that count */
    uint64_t sack[FL_CHAN_SACK_WORDS]; /* bit i of word w: next + 64w + i held */
};

struct fl_chan_hdr {
    uint8_t kind;
    uint16_t nchunks;
    uint32_t src, dst;
    uint64_t key;
    uint32_t ts, ts_echo, echo_delay;
    struct fl_chan_ack ack[FL_LANES];
};

struct fl_chan_chunk {
    uint8_t lane, flags;
    uint16_t len;
    uint32_t seq;
    uint8_t *data; /* decode: into the datagram */
};

/* Bytes a chunk of len takes in a datagram, header and padding included. */
static inline size_t fl_chan_chunk_size(size_t len)
{
    return FL_CHAN_CHUNK_HDR + ((len + 7) & ~(size_t)7);
}

/* The bytes h's header takes: the fixed part and its selective words. */
static inline size_t fl_chan_hdr_size(const struct fl_chan_hdr *h)
{
    size_t n = FL_CHAN_HDR;
    for (unsigned l = 0; l < FL_LANES; l++)
        n += 8u * h->ack[l].words;
    return n;
}

/* Writes h's header (fl_chan_hdr_size bytes, at most FL_CHAN_MAX_HDR) into
   buf; returns its size. */
size_t fl_chan_encode_hdr(uint8_t *buf, const struct fl_chan_hdr *h);
void fl_chan_encode_chunk(uint8_t buf[FL_CHAN_CHUNK_HDR], const struct fl_chan_chunk *c);

/*
 * Decodes and validates a whole datagram: known version and kind, at most
 * FL_CHAN_SACK_WORDS selective words a lane and zero reserved bytes, chunks
 * that add up to its length exactly, lanes and flags known. chunks gets
 * h->nchunks entries (at most FL_CHAN_MAX_CHUNKS). Who sent it, and with
 * which key, the caller checks. FLIT_ERR_BAD_PACKET on anything else.
 */
flit_status fl_chan_decode(uint8_t *buf, size_t len, struct fl_chan_hdr *h,
                           struct fl_chan_chunk *chunks);

/* Serial-number comparison for 32-bit sequence numbers (RFC 1982). */
static inline bool fl_seq_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

#endif /* FL_CHANNEL_WIRE_H */
