/* Encoding and the one validating decoder of AM packets; see wire.h. */
#include "am/wire.h"

#include <stdbool.h>
#include <string.h>

#include "platform/le.h"

size_t fl_am_encode(uint8_t *buf, const struct fl_am_msg *m)
{
    buf[0] = FL_WIRE_VERSION;
    buf[1] = m->op;
    buf[2] = m->nargs;
    buf[3] = m->flags;
    fl_put16(buf + 4, m->handler);
    fl_put16(buf + 6, m->aux);
    fl_put32(buf + 8, (uint32_t)m->payload_len);
    fl_put64(buf + 12, m->tag);
    uint8_t *p = buf + FL_AM_BASE_HDR;
    for (unsigned i = 0; i < m->nargs; i++, p += 4)
        fl_put32(p, m->args[i]);
    if (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG) {
        fl_put64(p, m->base);
        fl_put64(p + 8, m->total);
        fl_put64(p + 16, m->piece);
        p += FL_AM_LONG_EXT;
    }
    size_t hl = fl_am_hdr_len(m->op, m->nargs);
    if (p < buf + hl)
        fl_put32(p, 0);     /* at most 4 bytes of padding: never leak stack */
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
    case FL_OP_CTRL:
        if (m->aux != FL_CTRL_BARRIER && m->aux != FL_CTRL_FIN)
            return FLIT_ERR_BAD_PACKET;
        return m->payload_len == 0 ? FLIT_OK : FLIT_ERR_BAD_PACKET;
    case FL_OP_AM_MEDIUM:
        return m->payload_len <= FLIT_AM_MAX_MEDIUM ? FLIT_OK : FLIT_ERR_BAD_PACKET;
    case FL_OP_AM_LONG:
        if (m->payload_len != 0 || m->piece != 0 || m->base + m->total < m->base)
            return FLIT_ERR_BAD_PACKET;
        return FLIT_OK;
    case FL_OP_AM_FRAG: {
        bool inside = m->piece <= m->total &&
                      m->payload_len <= m->total - m->piece &&
                      m->base + m->total >= m->base;
        bool final = (m->flags & FL_AMF_FINAL) != 0;
        if (!inside || final != (m->piece + m->payload_len == m->total))
            return FLIT_ERR_BAD_PACKET;
        /* Only the last piece carries the arguments. */
        return final || m->nargs == 0 ? FLIT_OK : FLIT_ERR_BAD_PACKET;
    }
    case FL_OP_RETURN:     /* a reason, never "success" */
        return m->aux != FLIT_OK && m->aux < FLIT_STATUS_COUNT && m->nargs == 0
                   ? FLIT_OK : FLIT_ERR_BAD_PACKET;
    default:
        return FLIT_ERR_BAD_PACKET;
    }
}

flit_status fl_am_decode(void *pkt, size_t len, struct fl_am_msg *m)
{
    uint8_t *b = pkt;
    if (len < FL_AM_BASE_HDR || b[0] != FL_WIRE_VERSION)
        return FLIT_ERR_BAD_PACKET;
    m->op = b[1];
    m->nargs = b[2];
    m->flags = b[3];
    if (m->nargs > FLIT_AM_MAX_ARGS || (m->flags & ~FL_AMF_KNOWN))
        return FLIT_ERR_BAD_PACKET;
    if (m->op < FL_OP_AM_SHORT || m->op > FL_OP_CTRL)
        return FLIT_ERR_BAD_PACKET;
    size_t hl = fl_am_hdr_len(m->op, m->nargs);
    if (len < hl)
        return FLIT_ERR_BAD_PACKET;
    m->handler = fl_get16(b + 4);
    m->aux = fl_get16(b + 6);
    m->payload_len = fl_get32(b + 8);
    if (m->payload_len != len - hl)
        return FLIT_ERR_BAD_PACKET;
    m->tag = fl_get64(b + 12);
    const uint8_t *p = b + FL_AM_BASE_HDR;
    for (unsigned i = 0; i < m->nargs; i++, p += 4)
        m->args[i] = fl_get32(p);
    m->base = m->total = m->piece = 0;
    if (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG) {
        m->base = fl_get64(p);
        m->total = fl_get64(p + 8);
        m->piece = fl_get64(p + 16);
    }
    m->payload = b + hl;
    return check_op(m);
}
