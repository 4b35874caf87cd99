/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_st_decode, the one decoder of stream packets (src/stream/wire.h), on
 * any bytes: what a peer's channel or ring hands the stream layer. The
 * packet is copied to an 8-byte-aligned buffer of exactly its size (the
 * transports deliver packets aligned so), so that AddressSanitizer sees any
 * read past its end.
 *
 * The decoder must accept exactly the packets wire.h describes: a model
 * written from that description, byte by byte, gives the verdict the
 * decoder must give. When it accepts, the decoded fields are those bytes,
 * the payload is the rest of the packet after the pad (none in an offer, a
 * placed run or a pulled answer), encoding the fields again gives back the header, and
 * the packet with its length field or its size off by one, or on another op, is refused.
 */
#include <string.h>

#include "fuzz.h"
#include "platform/le.h"
#include "stream/wire.h"

/* Whether a + n wraps past 64 bits. */
static bool wraps(uint64_t a, uint64_t n)
{
    return a + n < a;
}

/* An offer (32 bytes) or a placed run (24): a header alone, no pad, no
   handler, at least a byte, nothing wrapping; LAST only on a placed run. */
static bool model_bare(const uint8_t *b, size_t size)
{
    bool offer = (b[2] & FL_STF_OFFER) != 0;
    unsigned allowed = offer ? FL_STF_OFFER : FL_STF_PLACED | FL_STF_LAST;
    uint64_t len = fl_get32(b + 12);
    if ((b[2] & ~allowed) || b[3] || fl_get16(b + 4) ||
        size != (offer ? FL_ST_FIRST_HDR : FL_ST_HDR) || len == 0)
        return false;
    return !wraps(fl_get64(b + 16), len) && !(offer && wraps(fl_get64(b + 24), len));
}

/* A pulled message's answer (32 bytes): PULLED alone, no pad, handler or
   length; at 24 bit 0 (send the rest), bit 1 (advice) and, with bit 1
   only, advice in bits 32-47; nothing else. */
static bool model_pulled(const uint8_t *b, size_t size)
{
    if (size != FL_ST_FIRST_HDR)
        return false;
    uint64_t w = fl_get64(b + 24);
    bool advised = (w & 2) != 0;
    uint64_t advice = (w >> 32) & 0xffff;
    return b[2] == FL_STF_PULLED && !b[3] && !fl_get16(b + 4) && !fl_get32(b + 12) &&
           (w & ~(3ull | 0xffffull << 32)) == 0 && (advised || advice == 0);
}

/* wire.h's packet, read as the comment there says. */
static bool model_accepts(const uint8_t *b, size_t size)
{
    if (size < FL_ST_HDR || b[0] != FL_WIRE_VERSION || b[1] != FL_OP_STREAM ||
        (b[2] & ~FL_STF_KNOWN) || b[3] >= 64 || fl_get16(b + 6) != 0)
        return false;
    if (b[2] & FL_STF_PULLED)
        return model_pulled(b, size);
    if (b[2] & (FL_STF_OFFER | FL_STF_PLACED))
        return model_bare(b, size);
    bool first = (b[2] & FL_STF_FIRST) != 0, last = (b[2] & FL_STF_LAST) != 0;
    bool placeable = (b[2] & FL_STF_PLACEABLE) != 0, pull = (b[2] & FL_STF_PULL) != 0;
    bool ask = (b[2] & FL_STF_ASK) != 0;
    size_t hl = (pull ? FL_ST_PULL_HDR : first ? FL_ST_FIRST_HDR : FL_ST_HDR) + b[3];
    if (size < hl || fl_get32(b + 12) != size - hl) /* hl: with the pad */
        return false;
    uint64_t len = fl_get32(b + 12);
    if (first) /* the payload within the message, LAST exactly at its end;
                  PLACEABLE only with more to come; PULL with neither; ASK
                  only with PULL */
        return len <= fl_get64(b + 24) && last == (len == fl_get64(b + 24)) &&
               !(last && placeable) && !(pull && (last || placeable)) && !(ask && !pull);
    return !wraps(fl_get64(b + 16), len) && !placeable && !pull && !ask;
}

static void check_fields(const uint8_t *b, size_t size, const struct fl_st_pkt *p)
{
    bool first = (p->flags & FL_STF_FIRST) != 0;
    bool bare = (p->flags & (FL_STF_OFFER | FL_STF_PLACED)) != 0;
    size_t hl = fl_st_hdr_len(p->flags);
    FUZZ_CHECK(p->flags == b[2] && p->pad == b[3] && p->handler == fl_get16(b + 4));
    FUZZ_CHECK(p->sid == fl_get32(b + 8) && p->len == fl_get32(b + 12));
    FUZZ_CHECK(p->addr == ((p->flags & FL_STF_PULL) ? fl_get64(b + 32) : 0));
    FUZZ_CHECK(p->key == ((p->flags & FL_STF_PULL) ? fl_get64(b + 40) : 0));
    bool pulled = (p->flags & FL_STF_PULLED) != 0;
    FUZZ_CHECK(p->resend == (pulled && (fl_get64(b + 24) & 1)));
    FUZZ_CHECK(p->advised == (pulled && (fl_get64(b + 24) & 2)));
    FUZZ_CHECK(p->advice == (pulled ? (uint16_t)(fl_get64(b + 24) >> 32) : 0));
    if (p->flags & FL_STF_PULLED) { /* a pulled answer: offset and verdict */
        FUZZ_CHECK(p->payload == NULL && size == hl && p->offset == fl_get64(b + 16));
        FUZZ_CHECK(p->place == 0 && p->tag == 0 && p->total == 0);
    } else if (bare) { /* an offer, a placed run: the fields, no payload */
        FUZZ_CHECK(p->payload == NULL && size == hl && p->offset == fl_get64(b + 16));
        FUZZ_CHECK(p->place == ((p->flags & FL_STF_OFFER) ? fl_get64(b + 24) : 0));
        FUZZ_CHECK(p->tag == 0 && p->total == 0);
    } else {
        FUZZ_CHECK(p->len == size - hl - p->pad && p->payload == b + hl + p->pad);
        FUZZ_CHECK(p->place == 0);
        if (first)
            FUZZ_CHECK(p->tag == fl_get64(b + 16) && p->total == fl_get64(b + 24) &&
                       p->offset == 0);
        else
            FUZZ_CHECK(p->offset == fl_get64(b + 16) && p->tag == 0 && p->total == 0);
        fuzz_touch(p->payload, p->len);
    }
    uint8_t again[FL_ST_PULL_HDR];
    FUZZ_CHECK(fl_st_encode(again, p) == hl);
    FUZZ_CHECK(memcmp(again, b, hl) == 0);
}

/* An accepted packet, broken in ways wire.h forbids, is refused: its
   length field off by one (a bare header's: naming nothing), its size
   short by one, another op. */
static void check_broken(uint8_t *b, size_t size)
{
    struct fl_st_pkt p;
    uint32_t len = fl_get32(b + 12);
    fl_put32(b + 12, (b[2] & (FL_STF_OFFER | FL_STF_PLACED)) ? 0 : len + 1);
    FUZZ_CHECK(fl_st_decode(b, size, &p) == FLIT_ERR_BAD_PACKET);
    fl_put32(b + 12, len);
    if (size > 0)
        FUZZ_CHECK(fl_st_decode(b, size - 1, &p) == FLIT_ERR_BAD_PACKET);
    b[1] ^= 0x80;
    FUZZ_CHECK(fl_st_decode(b, size, &p) == FLIT_ERR_BAD_PACKET);
    b[1] ^= 0x80;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FLIT_AM_MAX_MEDIUM + 4096)
        return 0; /* larger than any packet a transport delivers */
    /* malloc: aligned for any type, and exactly size bytes to AddressSanitizer */
    uint8_t *pkt = malloc(size ? size : 1);
    FUZZ_CHECK(pkt != NULL && ((uintptr_t)pkt & 7) == 0);
    memcpy(pkt, data, size);
    struct fl_st_pkt p;
    bool ok = fl_st_decode(pkt, size, &p) == FLIT_OK;
    FUZZ_CHECK(ok == model_accepts(data, size));
    FUZZ_CHECK(memcmp(pkt, data, size) == 0); /* decoding writes nothing */
    if (ok) {
        check_fields(pkt, size, &p);
        check_broken(pkt, size);
    }
    free(pkt);
    return 0;
}
