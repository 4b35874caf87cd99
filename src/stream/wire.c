/* SPDX-License-Identifier: BSD-3-Clause */
/* Encoding and the validating decoder of stream packets; see wire.h. */
#include "stream/wire.h"

#include "platform/le.h"

size_t fl_st_encode(uint8_t *buf, const struct fl_st_pkt *p)
{
    fl_put64(buf, (uint64_t)FL_WIRE_VERSION | (uint64_t)FL_OP_STREAM << 8 |
                      (uint64_t)p->flags << 16 | (uint64_t)p->pad << 24 |
                      (uint64_t)p->handler << 32);
    fl_put32(buf + 8, p->sid);
    fl_put32(buf + 12, p->len);
    if (p->flags & (FL_STF_OFFER | FL_STF_PULLED)) {
        fl_put64(buf + 16, p->offset);
        fl_put64(buf + 24, (p->flags & FL_STF_OFFER)
                               ? p->place
                               : (uint64_t)p->resend | (uint64_t)p->advised << 1 |
                                     (uint64_t)(p->advised ? p->advice : 0) << 32);
        return FL_ST_FIRST_HDR;
    }
    if (p->flags & FL_STF_FIRST) {
        fl_put64(buf + 16, p->tag);
        fl_put64(buf + 24, p->total);
        if (!(p->flags & FL_STF_PULL))
            return FL_ST_FIRST_HDR;
        fl_put64(buf + 32, p->addr);
        fl_put64(buf + 40, p->key);
        return FL_ST_PULL_HDR;
    }
    fl_put64(buf + 16, p->offset);
    return FL_ST_HDR;
}

/* An offer, or a placed run: a header alone, at least a byte named, the
   range within 64 bits (and the segment's, for an offer). */
static flit_status decode_place(const uint8_t *b, size_t len, struct fl_st_pkt *p)
{
    bool offer = (p->flags & FL_STF_OFFER) != 0;
    unsigned allowed = offer ? FL_STF_OFFER : FL_STF_PLACED | FL_STF_LAST;
    if ((p->flags & ~allowed) || p->pad || p->handler || p->len == 0 ||
        len != fl_st_hdr_len(p->flags))
        return FLIT_ERR_BAD_PACKET;
    p->tag = 0;
    p->total = 0;
    p->offset = fl_get64(b + 16);
    p->place = offer ? fl_get64(b + 24) : 0;
    if (p->offset + p->len < p->offset || p->place + p->len < p->place)
        return FLIT_ERR_BAD_PACKET;
    return FLIT_OK;
}

/* A receiver's answer to a pulled message: a header alone. */
static flit_status decode_pulled(const uint8_t *b, size_t len, struct fl_st_pkt *p)
{
    if (p->flags != FL_STF_PULLED || p->pad || p->handler || p->len ||
        len != FL_ST_FIRST_HDR)
        return FLIT_ERR_BAD_PACKET;
    p->tag = 0;
    p->total = 0;
    p->offset = fl_get64(b + 16);
    uint64_t w = fl_get64(b + 24);
    p->resend = (w & 1) != 0;
    p->advised = (w & 2) != 0;
    p->advice = (uint16_t)(w >> 32);
    if ((w & ~(3ull | 0xffffull << 32)) || (!p->advised && p->advice))
        return FLIT_ERR_BAD_PACKET;
    return FLIT_OK;
}

flit_status fl_st_decode(void *pkt, size_t len, struct fl_st_pkt *p)
{
    uint8_t *b = pkt;
    if (len < FL_ST_HDR)
        return FLIT_ERR_BAD_PACKET;
    uint64_t w = fl_get64(b);
    p->flags = (uint8_t)(w >> 16);
    p->pad = (uint8_t)(w >> 24);
    p->handler = (uint16_t)(w >> 32);
    if ((uint8_t)w != FL_WIRE_VERSION || (uint8_t)(w >> 8) != FL_OP_STREAM ||
        (p->flags & ~FL_STF_KNOWN) || p->pad >= FL_ST_ALIGN || (uint16_t)(w >> 48))
        return FLIT_ERR_BAD_PACKET;
    size_t hl = fl_st_hdr_len(p->flags) + p->pad;
    p->sid = fl_get32(b + 8);
    p->len = fl_get32(b + 12);
    p->place = 0;
    p->addr = 0;
    p->key = 0;
    p->resend = false;
    p->advised = false;
    p->advice = 0;
    p->payload = NULL;
    if (p->flags & FL_STF_PULLED)
        return decode_pulled(b, len, p);
    if (p->flags & (FL_STF_OFFER | FL_STF_PLACED))
        return decode_place(b, len, p);
    if (len < hl || p->len != len - hl)
        return FLIT_ERR_BAD_PACKET;
    if (p->flags & FL_STF_FIRST) {
        p->tag = fl_get64(b + 16);
        p->total = fl_get64(b + 24);
        p->offset = 0;
        bool last = (p->flags & FL_STF_LAST) != 0;
        bool pull = (p->flags & FL_STF_PULL) != 0;
        if (p->len > p->total || last != (p->len == p->total) ||
            (last && (p->flags & FL_STF_PLACEABLE)) ||
            (pull && (p->flags & (FL_STF_LAST | FL_STF_PLACEABLE))) ||
            (!pull && (p->flags & FL_STF_ASK)))
            return FLIT_ERR_BAD_PACKET;
        p->addr = pull ? fl_get64(b + 32) : 0;
        p->key = pull ? fl_get64(b + 40) : 0;
    } else {
        p->tag = 0;
        p->total = 0;
        p->offset = fl_get64(b + 16);
        if (p->offset + p->len < p->offset ||
            (p->flags & (FL_STF_PLACEABLE | FL_STF_PULL | FL_STF_ASK)))
            return FLIT_ERR_BAD_PACKET;
    }
    p->payload = b + hl;
    return FLIT_OK;
}
