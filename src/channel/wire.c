/* SPDX-License-Identifier: BSD-3-Clause */
/* The channel's datagram codec; see wire.h. */
#include "channel/wire.h"

#include "platform/le.h"

size_t fl_chan_encode_hdr(uint8_t *buf, const struct fl_chan_hdr *h)
{
    buf[0] = FL_CHAN_VERSION;
    buf[1] = h->kind;
    fl_put16(buf + 2, h->nchunks);
    fl_put32(buf + 4, h->src);
    fl_put64(buf + 8, h->key);
    fl_put32(buf + 16, h->dst);
    fl_put32(buf + 20, h->ts);
    fl_put32(buf + 24, h->ts_echo);
    fl_put32(buf + 28, h->echo_delay);
    size_t pos = FL_CHAN_HDR;
    for (unsigned l = 0; l < FL_LANES; l++) {
        uint8_t *a = buf + 32 + 8 * l;
        fl_put32(a, h->ack[l].next);
        a[4] = h->ack[l].words;
        a[5] = a[6] = a[7] = 0;
        for (unsigned w = 0; w < h->ack[l].words; w++, pos += 8)
            fl_put64(buf + pos, h->ack[l].sack[w]);
    }
    return pos;
}

void fl_chan_encode_chunk(uint8_t buf[FL_CHAN_CHUNK_HDR], const struct fl_chan_chunk *c)
{
    buf[0] = c->lane;
    buf[1] = c->flags;
    fl_put16(buf + 2, c->len);
    fl_put32(buf + 4, c->seq);
}

flit_status fl_chan_decode(uint8_t *buf, size_t len, struct fl_chan_hdr *h,
                           struct fl_chan_chunk *chunks)
{
    if (len < FL_CHAN_HDR || buf[0] != FL_CHAN_VERSION)
        return FLIT_ERR_BAD_PACKET;
    h->kind = buf[1];
    h->nchunks = fl_get16(buf + 2);
    if (h->kind > FL_CHAN_PING || h->nchunks > FL_CHAN_MAX_CHUNKS)
        return FLIT_ERR_BAD_PACKET;
    h->src = fl_get32(buf + 4);
    h->key = fl_get64(buf + 8);
    h->dst = fl_get32(buf + 16);
    h->ts = fl_get32(buf + 20);
    h->ts_echo = fl_get32(buf + 24);
    h->echo_delay = fl_get32(buf + 28);
    size_t pos = FL_CHAN_HDR;
    for (unsigned l = 0; l < FL_LANES; l++) {
        const uint8_t *a = buf + 32 + 8 * l;
        h->ack[l].next = fl_get32(a);
        h->ack[l].words = a[4];
        if (a[4] > FL_CHAN_SACK_WORDS || a[5] || a[6] || a[7] || len - pos < 8u * a[4])
            return FLIT_ERR_BAD_PACKET;
        for (unsigned w = 0; w < a[4]; w++, pos += 8)
            h->ack[l].sack[w] = fl_get64(buf + pos);
    }
    for (unsigned i = 0; i < h->nchunks; i++) {
        if (len - pos < FL_CHAN_CHUNK_HDR)
            return FLIT_ERR_BAD_PACKET;
        struct fl_chan_chunk *c = &chunks[i];
        c->lane = buf[pos];
        c->flags = buf[pos + 1];
        c->len = fl_get16(buf + pos + 2);
        c->seq = fl_get32(buf + pos + 4);
        if (c->lane >= FL_LANES || (c->flags & ~(FL_CHAN_FIRST | FL_CHAN_LAST)) ||
            fl_chan_chunk_size(c->len) > len - pos)
            return FLIT_ERR_BAD_PACKET;
        c->data = buf + pos + FL_CHAN_CHUNK_HDR;
        pos += fl_chan_chunk_size(c->len);
    }
    return pos == len ? FLIT_OK : FLIT_ERR_BAD_PACKET;
}
