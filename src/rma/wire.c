/* SPDX-License-Identifier: BSD-3-Clause */
/* Encoding and the one validating decoder of RMA packets; see wire.h. */
#include "rma/wire.h"

#include "core/pieces.h"
#include "flit/rma.h"
#include "platform/le.h"

#define ACCESS_ALL (FLIT_RMA_READ | FLIT_RMA_WRITE)

static const uint8_t known_flags[FL_RMA_KINDS] = {
    [FL_RMA_PUT] = FL_RMAF_FIRST | FL_RMAF_LAST | FL_RMAF_NOTIFY | FL_RMAF_ACK,
    [FL_RMA_GET_DATA] = FL_RMAF_LAST,
};

static void encode_info(uint8_t *b, const struct fl_rma_info *in)
{
    fl_put64(b, in->vaddr);
    fl_put64(b + 8, in->block);
    fl_put64(b + 16, in->file_off);
    fl_put64(b + 24, in->file_len);
    fl_put32(b + 32, in->flags);
    fl_put32(b + 36, 0);
}

size_t fl_rma_encode(uint8_t *buf, struct fl_rma_pkt *p)
{
    bool info = p->kind == FL_RMA_IMPORT_REP && p->status == FLIT_OK;
    if (info)
        p->len = FL_RMA_INFO_LEN;
    fl_put64(buf, (uint64_t)FL_WIRE_VERSION | (uint64_t)FL_OP_RMA << 8 |
                      (uint64_t)p->kind << 16 | (uint64_t)p->flags << 24 |
                      (uint64_t)p->op << 32);
    fl_put64(buf + 8, p->id);
    fl_put64(buf + 16, p->base);
    fl_put64(buf + 24, p->total);
    fl_put64(buf + 32, p->piece);
    fl_put32(buf + 40, p->len);
    fl_put16(buf + 44, p->status);
    fl_put16(buf + 46, p->access);
    if (!info)
        return FL_RMA_HDR;
    encode_info(buf + FL_RMA_HDR, &p->info);
    return FL_RMA_HDR + FL_RMA_INFO_LEN;
}

/* [base, base + total) must not wrap; a piece must lie inside it, FIRST
   exactly at its start and LAST exactly at its end. */
static bool piece_ok(const struct fl_rma_pkt *p, bool has_first)
{
    if (!fl_piece_fits(p->base, p->total, p->piece, p->len,
                       (p->flags & FL_RMAF_LAST) != 0))
        return false;
    return !has_first || ((p->flags & FL_RMAF_FIRST) != 0) == (p->piece == 0);
}

static flit_status decode_info(const uint8_t *b, struct fl_rma_pkt *p)
{
    struct fl_rma_info *in = &p->info;
    in->vaddr = fl_get64(b);
    in->block = fl_get64(b + 8);
    in->file_off = fl_get64(b + 16);
    in->file_len = fl_get64(b + 24);
    in->flags = fl_get32(b + 32);
    if ((in->flags & ~(FL_RMA_INFO_CTL | FL_RMA_INFO_KEY)) ||
        (in->flags & FL_RMA_INFO_CTL && in->flags & FL_RMA_INFO_KEY) ||
        fl_get32(b + 36) != 0 || in->vaddr + p->total < in->vaddr)
        return FLIT_ERR_BAD_PACKET;
    if (in->flags & FL_RMA_INFO_KEY) /* block: the transport's key, any */
        return in->file_off || in->file_len ? FLIT_ERR_BAD_PACKET : FLIT_OK;
    if (in->block &&
        (in->file_off > in->file_len || p->total > in->file_len - in->file_off))
        return FLIT_ERR_BAD_PACKET;
    if (!in->block && (in->file_off || in->file_len))
        return FLIT_ERR_BAD_PACKET;
    return FLIT_OK;
}

/* A request names a region and carries no verdict. */
static bool request_ok(const struct fl_rma_pkt *p)
{
    return p->id != 0 && p->status == 0 && p->access == 0;
}

/* Checks that only make sense per kind. */
static flit_status check_kind(const struct fl_rma_pkt *p)
{
    bool empty = p->len == 0;
    bool no_range = p->base == 0 && p->total == 0 && p->piece == 0;
    bool whole = p->piece == 0 && p->base + p->total >= p->base;
    bool ok;
    switch (p->kind) {
    case FL_RMA_IMPORT_REQ:
    case FL_RMA_WITHDRAW:
    case FL_RMA_WITHDRAWN:
        ok = request_ok(p) && empty && no_range;
        break;
    case FL_RMA_IMPORT_REP:
        ok = p->status == FLIT_OK
                 ? p->len == FL_RMA_INFO_LEN && p->base == 0 && p->piece == 0 &&
                       p->total > 0 && p->access && !(p->access & ~ACCESS_ALL)
                 : empty && no_range && p->access == 0;
        break;
    case FL_RMA_PUT:
        ok = request_ok(p) && piece_ok(p, true);
        break;
    case FL_RMA_GET_REQ:
    case FL_RMA_NOTIFY:
        ok = request_ok(p) && empty && whole;
        break;
    case FL_RMA_ACK:
        ok = empty && p->access == 0 && whole;
        break;
    case FL_RMA_FLUSH_REQ:
    case FL_RMA_FLUSH_REP:
        ok = p->id == 0 && p->status == 0 && p->access == 0 && empty && no_range;
        break;
    case FL_RMA_GET_DATA:
        ok = p->access == 0 &&
             (p->status == FLIT_OK ? piece_ok(p, false)
                                   : empty && p->piece == 0 && (p->flags & FL_RMAF_LAST));
        break;
    default:
        ok = false;
    }
    return ok ? FLIT_OK : FLIT_ERR_BAD_PACKET;
}

flit_status fl_rma_decode(void *pkt, size_t len, unsigned lane, struct fl_rma_pkt *p)
{
    uint8_t *b = pkt;
    if (len < FL_RMA_HDR)
        return FLIT_ERR_BAD_PACKET;
    uint64_t w = fl_get64(b); /* version, op, kind, flags, operation id */
    p->kind = (uint8_t)(w >> 16);
    p->flags = (uint8_t)(w >> 24);
    p->op = (uint32_t)(w >> 32);
    if ((uint8_t)w != FL_WIRE_VERSION || (uint8_t)(w >> 8) != FL_OP_RMA || p->kind == 0 ||
        p->kind >= FL_RMA_KINDS || (p->flags & ~known_flags[p->kind]) ||
        fl_rma_lane(p->kind) != lane)
        return FLIT_ERR_BAD_PACKET;
    p->id = fl_get64(b + 8);
    p->base = fl_get64(b + 16);
    p->total = fl_get64(b + 24);
    p->piece = fl_get64(b + 32);
    p->len = fl_get32(b + 40);
    p->status = fl_get16(b + 44);
    p->access = fl_get16(b + 46);
    if (p->len != len - FL_RMA_HDR || p->status >= FLIT_STATUS_COUNT)
        return FLIT_ERR_BAD_PACKET;
    p->payload = b + FL_RMA_HDR;
    flit_status st = check_kind(p);
    if (st == FLIT_OK && p->kind == FL_RMA_IMPORT_REP && p->status == FLIT_OK)
        st = decode_info(p->payload, p);
    return st;
}
