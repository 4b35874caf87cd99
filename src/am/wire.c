/* SPDX-License-Identifier: BSD-3-Clause */
/* Encoding and the one validating decoder of AM packets; see wire.h. */
#include "am/wire.h"

#include <stdbool.h>
#include <string.h>

#include "core/pieces.h"
#include "platform/le.h"

#define LITTLE_ENDIAN_HOST (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

size_t fl_am_encode(uint8_t *buf, const struct fl_am_msg *m, const uint32_t *args)
{
    /* Bytes 0..7 as one word: version, op, nargs, flags, handler, aux. */
    fl_put64(buf, (uint64_t)FL_WIRE_VERSION | (uint64_t)m->op << 8 |
                      (uint64_t)m->nargs << 16 | (uint64_t)m->flags << 24 |
                      (uint64_t)m->handler << 32 | (uint64_t)m->aux << 48);
    fl_put32(buf + 8, (uint32_t)m->payload_len);
    fl_put64(buf + 12, m->tag);
    uint8_t *p = buf + FL_AM_BASE_HDR;
    if (LITTLE_ENDIAN_HOST) {
        if (m->nargs) /* args may be NULL then */
            memcpy(p, args, 4u * m->nargs);
    } else {
        for (unsigned i = 0; i < m->nargs; i++)
            fl_put32(p + 4 * i, args[i]);
    }
    p += 4u * m->nargs;
    if (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG) {
        fl_put64(p, m->base);
        fl_put64(p + 8, m->total);
        fl_put64(p + 16, m->piece);
        p += FL_AM_LONG_EXT;
    }
    size_t hl = fl_am_hdr_len(m->op, m->nargs);
    if (p < buf + hl)
        fl_put32(p, 0); /* at most 4 bytes of padding: never leak stack */
    return hl;
}

/* Checks that only make sense per op. */
static flit_status check_op(const struct fl_am_msg *m)
{
    if ((m->flags & FL_AMF_FINAL) && m->op != FL_OP_AM_FRAG)
        return FLIT_ERR_BAD_PACKET;
    switch (m->op) {
    case FL_OP_AM_SHORT:
        return m->payload_len == 0 ? FLIT_OK : FLIT_ERR_BAD_PACKET;
    case FL_OP_AM_MEDIUM:
        return m->payload_len <= FLIT_AM_MAX_MEDIUM ? FLIT_OK : FLIT_ERR_BAD_PACKET;
    case FL_OP_AM_LONG:
        if (m->payload_len != 0 || m->piece != 0 || m->base + m->total < m->base)
            return FLIT_ERR_BAD_PACKET;
        return FLIT_OK;
    case FL_OP_AM_FRAG: {
        bool final = (m->flags & FL_AMF_FINAL) != 0;
        if (!fl_piece_fits(m->base, m->total, m->piece, m->payload_len, final))
            return FLIT_ERR_BAD_PACKET;
        /* Only the last piece carries the arguments. */
        return final || m->nargs == 0 ? FLIT_OK : FLIT_ERR_BAD_PACKET;
    }
    case FL_OP_RETURN: /* a reason, never "success" */
        return m->aux != FLIT_OK && m->aux < FLIT_STATUS_COUNT && m->nargs == 0
                   ? FLIT_OK
                   : FLIT_ERR_BAD_PACKET;
    default:
        return FLIT_ERR_BAD_PACKET;
    }
}

flit_status fl_am_decode(void *pkt, size_t len, struct fl_am_msg *m)
{
    uint8_t *b = pkt;
    if (len < FL_AM_BASE_HDR)
        return FLIT_ERR_BAD_PACKET;
    uint64_t w = fl_get64(b); /* version, op, nargs, flags, handler, aux */
    m->op = (uint8_t)(w >> 8);
    m->nargs = (uint8_t)(w >> 16);
    m->flags = (uint8_t)(w >> 24);
    m->handler = (uint16_t)(w >> 32);
    m->aux = (uint16_t)(w >> 48);
    if ((uint8_t)w != FL_WIRE_VERSION || m->nargs > FLIT_AM_MAX_ARGS ||
        (m->flags & ~FL_AMF_KNOWN) || m->op < FL_OP_AM_SHORT || m->op > FL_OP_RETURN)
        return FLIT_ERR_BAD_PACKET;
    size_t hl = fl_am_hdr_len(m->op, m->nargs);
    if (len < hl)
        return FLIT_ERR_BAD_PACKET;
    m->payload_len = fl_get32(b + 8);
    if (m->payload_len != len - hl)
        return FLIT_ERR_BAD_PACKET;
    m->tag = fl_get64(b + 12);
    const uint8_t *p = b + FL_AM_BASE_HDR;
    if (LITTLE_ENDIAN_HOST) {
        m->argv = (const uint32_t *)(const void *)p;
    } else {
        for (unsigned i = 0; i < m->nargs; i++)
            m->args[i] = fl_get32(p + 4 * i);
        m->argv = m->args;
    }
    p += 4u * m->nargs;
    m->base = m->total = m->piece = 0;
    if (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG) {
        m->base = fl_get64(p);
        m->total = fl_get64(p + 8);
        m->piece = fl_get64(p + 16);
    }
    m->payload = b + hl;
    return check_op(m);
}
