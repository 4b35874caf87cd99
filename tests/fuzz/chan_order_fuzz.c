/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The channel's promise, checked: whatever the network does to the
 * datagrams (loss, duplication, reordering, late copies) the packets of
 * one peer on one lane are delivered each exactly once, in the order they
 * were sent, intact.
 *
 * The input decides which datagrams a peer sends and in what order; the
 * harness builds them (right header and key, chunks of single-chunk
 * packets), so every chunk with sequence number s on (peer, lane) carries
 * the AM short request (s, lane, peer, MAGIC). The callback checks that it
 * sees s = 0, 1, 2, ... per (peer, lane), nothing else. Fault injection and
 * nested polls (a request handler whose reply found no room) come from the
 * setup byte, as in chan_recv.
 *
 *   byte 0   setup (fuzz.h)
 *   then operations; the top two bits of the first byte choose:
 *     00  datagram: byte: bit 0 the peer (1 + b), bit 1 the lane, bits 2-4
 *         chunks - 1 (1..8), bit 5: a ping; byte: the first sequence
 *         number, relative to the next one the peer's lane expects (signed);
 *         u16 request-lane acknowledgement, u16 reply-lane acknowledgement
 *         (of what we sent), byte selective-ack bits
 *     01, 10, 11  send, poll, arm as in fuzz.h
 */
#include <string.h>

#include "am/wire.h"
#include "channel/wire.h"
#include "fuzz.h"
#include "memdgram.h"
#include "platform/le.h"

#define MAGIC      0x0c0de5eeu
#define MIN_PACKET 32u

struct run {
    struct fl_tp_ep *t;
    bool nest;
    unsigned depth;
    uint32_t expect[FUZZ_RANKS][FL_LANES]; /* next sequence number to deliver */
};

static void on_packet(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    struct run *r = ctx;
    FUZZ_CHECK(src > 0 && src < FUZZ_RANKS && lane < FL_LANES);
    FUZZ_CHECK(((uintptr_t)pkt & 7) == 0);
    struct fl_am_msg m;
    FUZZ_CHECK(fl_am_decode(pkt, len, &m) == FLIT_OK);
    FUZZ_CHECK(m.op == FL_OP_AM_SHORT && m.nargs == 4 && m.argv[3] == MAGIC);
    FUZZ_CHECK(m.argv[2] == src && m.argv[1] == lane);
    if (m.argv[0] != r->expect[src][lane]) {
        fprintf(stderr, "rank %u lane %u: delivered sequence number %u, expected %u\n",
                src, lane, m.argv[0], r->expect[src][lane]);
        FUZZ_CHECK(!"packets of a peer and lane delivered once each, in order");
    }
    r->expect[src][lane]++;
    if (r->nest && lane == FL_LANE_REQ && r->depth < 2) {
        r->depth++;
        memdgram_send(r->t, src, FL_LANE_REP, 40, 0);
        fl_chan_poll(r->t, FL_LANE_MASK(FL_LANE_REP), on_packet, r, 64);
        r->depth--;
    }
}

/* The datagram op: builds and queues it; returns the bytes of input used. */
static size_t datagram(struct run *r, const uint8_t *in, size_t left)
{
    static uint8_t buf[FL_CHAN_MAX_HDR + 8 * (FL_CHAN_CHUNK_HDR + 40)];
    if (left < 7)
        return left;
    uint32_t src = 1 + (in[0] & 1u);
    unsigned lane = (in[0] >> 1) & 1u, n = 1 + ((in[0] >> 2) & 7u);
    uint32_t seq = r->expect[src][lane] + (uint32_t)(int32_t)(int8_t)in[1];
    struct fl_chan_hdr h = {.kind = in[0] & 0x20 ? FL_CHAN_PING : FL_CHAN_DATA,
                            .nchunks = (uint16_t)n,
                            .src = src,
                            .dst = 0,
                            .key = memdgram_key(),
                            .ts = 1};
    h.ack[FL_LANE_REQ].next = fl_get16(in + 2);
    h.ack[FL_LANE_REP].next = fl_get16(in + 4);
    /* one selective word, or two (the second reaching 64 on) */
    for (unsigned l = 0; l < FL_LANES; l++) {
        h.ack[l].words = (uint8_t)(1u + ((in[6] >> (7 - l)) & 1u));
        h.ack[l].sack[0] = (uint64_t)in[6] << (3 * l);
        h.ack[l].sack[1] = (uint64_t)in[6] << 40;
    }
    size_t pos = fl_chan_encode_hdr(buf, &h);
    for (unsigned i = 0; i < n; i++) {
        struct fl_chan_chunk c = {
            .lane = (uint8_t)lane, .flags = FL_CHAN_FIRST | FL_CHAN_LAST, .seq = seq + i};
        uint32_t args[4] = {seq + i, lane, src, MAGIC};
        c.len = (uint16_t)fl_am_encode_short(buf + pos + FL_CHAN_CHUNK_HDR,
                                             lane == FL_LANE_REP, 1, 0, args, 4);
        fl_chan_encode_chunk(buf + pos, &c);
        pos += fl_chan_chunk_size(c.len);
    }
    memdgram_queue(src, buf, pos, false);
    return 7;
}

static void poll_all(struct run *r, unsigned mask)
{
    memdgram_poll_all(r->t, mask, on_packet, r, &r->depth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned setup = memdgram_setup(data[0]);
    struct run r = {.nest = (setup & FUZZ_SETUP_NEST) != 0};
    r.t = memdgram_open(setup & ~FUZZ_SETUP_SMALL_MTU);
    size_t i = 1;
    while (i < size) {
        uint8_t op = data[i++];
        if (op >> 6 == FUZZ_OP_DGRAM) {
            i += datagram(&r, data + i, size - i);
        } else if (op >> 6 == FUZZ_OP_SEND) {
            size_t used =
                memdgram_op_send(r.t, data + i, size - i, 4096u + MIN_PACKET - 1);
            if (!used)
                break;
            i += used;
        } else if (op >> 6 == FUZZ_OP_POLL) {
            poll_all(&r, op & 3u ? op & 3u : FL_LANES_ALL);
        } else {
            memdgram_op_state(r.t);
        }
    }
    poll_all(&r, FL_LANES_ALL);
    memdgram_close(r.t);
    return 0;
}
