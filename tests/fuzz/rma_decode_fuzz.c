/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_rma_decode, the one decoder of one-sided communication packets
 * (src/rma/wire.h), on any bytes: what a peer's channel or ring hands the
 * RMA layer. Byte 0 of the input is the lane the packet arrived on (bit 0);
 * the rest is the packet, copied to an 8-byte-aligned buffer of exactly its
 * size, so that AddressSanitizer sees any read past its end.
 *
 * The decoder must accept exactly the packets wire.h describes: a model
 * written from that description, field by field from the bytes, gives the
 * verdict the decoder must give. When it accepts, the decoded fields are
 * those bytes, encoding them again gives back the header (and an import's
 * answer, its info), and the same packet on the other lane, with its
 * length field off by one, cut short, or with a status that is none, is
 * refused.
 */
#include <string.h>

#include <flit/rma.h>

#include "fuzz.h"
#include "platform/le.h"
#include "rma/wire.h"

/* The header's fields, straight from the bytes. */
struct raw {
    unsigned kind, flags, status, access;
    uint64_t id, base, total, piece, len;
};

static struct raw raw_read(const uint8_t *b)
{
    return (struct raw){.kind = b[2],
                        .flags = b[3],
                        .id = fl_get64(b + 8),
                        .base = fl_get64(b + 16),
                        .total = fl_get64(b + 24),
                        .piece = fl_get64(b + 32),
                        .len = fl_get32(b + 40),
                        .status = fl_get16(b + 44),
                        .access = fl_get16(b + 46)};
}

/* A piece inside an operation that does not wrap: LAST exactly at its end,
   FIRST (where the kind has it) exactly at its start. */
static bool piece_inside(const struct raw *r, bool has_first)
{
    if (r->base + r->total < r->base || r->piece > r->total ||
        r->len > r->total - r->piece)
        return false;
    if (((r->flags & FL_RMAF_LAST) != 0) != (r->piece + r->len == r->total))
        return false;
    return !has_first || ((r->flags & FL_RMAF_FIRST) != 0) == (r->piece == 0);
}

/* An import's answer: where the region is, inside its block if it has one;
   or (KEY, never with CTL) the transport's key for it, any, and no block. */
static bool info_ok(const uint8_t *in, uint64_t total)
{
    uint64_t vaddr = fl_get64(in), block = fl_get64(in + 8);
    uint64_t off = fl_get64(in + 16), flen = fl_get64(in + 24);
    uint32_t flags = fl_get32(in + 32);
    const uint32_t both = FL_RMA_INFO_CTL | FL_RMA_INFO_KEY;
    if ((flags & ~both) || (flags & both) == both || fl_get32(in + 36) != 0 ||
        vaddr + total < vaddr)
        return false;
    if (flags & FL_RMA_INFO_KEY)
        return off == 0 && flen == 0;
    return block ? off <= flen && total <= flen - off : off == 0 && flen == 0;
}

/* What each kind may carry (wire.h). */
static bool kind_ok(const struct raw *r, const uint8_t *payload)
{
    bool request = r->id != 0 && r->status == 0 && r->access == 0;
    bool empty = r->len == 0, no_range = !r->base && !r->total && !r->piece;
    bool whole = r->piece == 0 && r->base + r->total >= r->base;
    switch (r->kind) {
    case FL_RMA_IMPORT_REQ:
    case FL_RMA_WITHDRAW:
    case FL_RMA_WITHDRAWN:
        return request && empty && no_range;
    case FL_RMA_IMPORT_REP:
        if (r->status != FLIT_OK)
            return empty && no_range && r->access == 0;
        return r->len == FL_RMA_INFO_LEN && !r->base && !r->piece && r->total &&
               r->access && !(r->access & ~(FLIT_RMA_READ | FLIT_RMA_WRITE)) &&
               info_ok(payload, r->total);
    case FL_RMA_PUT:
        return request && piece_inside(r, true);
    case FL_RMA_GET_REQ:
    case FL_RMA_NOTIFY:
        return request && empty && whole;
    case FL_RMA_ACK:
        return empty && r->access == 0 && whole;
    case FL_RMA_FLUSH_REQ:
    case FL_RMA_FLUSH_REP:
        return r->id == 0 && r->status == 0 && r->access == 0 && empty && no_range;
    case FL_RMA_GET_DATA:
        if (r->status != FLIT_OK)
            return r->access == 0 && empty && r->piece == 0 && (r->flags & FL_RMAF_LAST);
        return r->access == 0 && piece_inside(r, false);
    }
    return false;
}

static unsigned known_flags(unsigned kind)
{
    if (kind == FL_RMA_PUT)
        return FL_RMAF_FIRST | FL_RMAF_LAST | FL_RMAF_NOTIFY | FL_RMAF_ACK;
    return kind == FL_RMA_GET_DATA ? FL_RMAF_LAST : 0;
}

static bool model_accepts(const uint8_t *b, size_t size, unsigned lane)
{
    if (size < FL_RMA_HDR || b[0] != FL_WIRE_VERSION || b[1] != FL_OP_RMA)
        return false;
    struct raw r = raw_read(b);
    if (r.kind == 0 || r.kind >= FL_RMA_KINDS || (r.flags & ~known_flags(r.kind)) ||
        fl_rma_lane(r.kind) != lane)
        return false;
    if (r.len != size - FL_RMA_HDR || r.status >= FLIT_STATUS_COUNT)
        return false;
    return kind_ok(&r, b + FL_RMA_HDR);
}

static void check_fields(const uint8_t *b, size_t size, const struct fl_rma_pkt *p)
{
    struct raw r = raw_read(b);
    FUZZ_CHECK(p->kind == r.kind && p->flags == r.flags && p->op == fl_get32(b + 4));
    FUZZ_CHECK(p->id == r.id && p->base == r.base && p->total == r.total &&
               p->piece == r.piece && p->len == r.len && p->len == size - FL_RMA_HDR);
    FUZZ_CHECK(p->status == r.status && p->access == r.access);
    FUZZ_CHECK(p->payload == b + FL_RMA_HDR);
    fuzz_touch(p->payload, p->len);
    /* Encode what was decoded: the same bytes (an import's info included). */
    uint8_t again[FL_RMA_HDR + FL_RMA_INFO_LEN];
    struct fl_rma_pkt q = *p;
    size_t n = fl_rma_encode(again, &q);
    FUZZ_CHECK(n == fl_rma_fixed_len(p) && n <= size && q.len == p->len);
    FUZZ_CHECK(memcmp(again, b, n) == 0);
}

/* An accepted packet, broken in ways wire.h forbids, is refused. */
static void check_broken(uint8_t *b, size_t size, unsigned lane)
{
    struct fl_rma_pkt p;
    FUZZ_CHECK(fl_rma_decode(b, size, 1u - lane, &p) == FLIT_ERR_BAD_PACKET);
    FUZZ_CHECK(fl_rma_decode(b, size - 1, lane, &p) == FLIT_ERR_BAD_PACKET);
    uint32_t len = fl_get32(b + 40);
    fl_put32(b + 40, len + 1);
    FUZZ_CHECK(fl_rma_decode(b, size, lane, &p) == FLIT_ERR_BAD_PACKET);
    fl_put32(b + 40, len);
    uint16_t status = fl_get16(b + 44);
    fl_put16(b + 44, FLIT_STATUS_COUNT);
    FUZZ_CHECK(fl_rma_decode(b, size, lane, &p) == FLIT_ERR_BAD_PACKET);
    fl_put16(b + 44, status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FLIT_AM_MAX_MEDIUM + 4096)
        return 0; /* no lane, or larger than any packet a transport delivers */
    unsigned lane = data[0] & 1u;
    size_t len = size - 1;
    uint8_t *pkt = malloc(len ? len : 1);
    FUZZ_CHECK(pkt != NULL && ((uintptr_t)pkt & 7) == 0);
    memcpy(pkt, data + 1, len);
    struct fl_rma_pkt p;
    bool ok = fl_rma_decode(pkt, len, lane, &p) == FLIT_OK;
    FUZZ_CHECK(ok == model_accepts(data + 1, len, lane));
    FUZZ_CHECK(memcmp(pkt, data + 1, len) == 0); /* decoding writes nothing */
    if (ok) {
        check_fields(pkt, len, &p);
        check_broken(pkt, len, lane);
    }
    free(pkt);
    return 0;
}
