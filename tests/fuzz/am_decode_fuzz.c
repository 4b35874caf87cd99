/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_am_decode, the one decoder of Active Message packets (src/am/wire.h),
 * on any bytes: what a peer's channel or ring hands the AM layer. The
 * packet is copied to an 8-byte-aligned buffer of exactly its size (the
 * transports deliver packets aligned so), so that AddressSanitizer sees any
 * read past its end.
 *
 * When the decoder accepts, the packet must hold together: the header and
 * the arguments inside it, the payload exactly the rest, the per-op rules
 * of wire.h (medium within FLIT_AM_MAX_MEDIUM, a piece inside its long
 * payload, a returned packet with a reason), and encoding the decoded
 * header again gives back the same bytes, padding aside.
 *
 * The receive path's shortcut for short messages (fl_am_short_args) takes
 * exactly the short messages the decoder accepts, with the same arguments,
 * and fl_am_encode_short writes what fl_am_encode writes for them.
 */
#include <string.h>

#include "am/wire.h"
#include "fuzz.h"

static void check_accepted(const uint8_t *buf, size_t size, const struct fl_am_msg *m)
{
    size_t hl = fl_am_hdr_len(m->op, m->nargs);
    FUZZ_CHECK(m->nargs <= FLIT_AM_MAX_ARGS && hl <= size && hl <= FL_AM_MAX_HDR);
    FUZZ_CHECK(m->payload == buf + hl && m->payload_len == size - hl);
    FUZZ_CHECK((m->flags & ~FL_AMF_KNOWN) == 0);
    fuzz_touch(m->argv, 4u * m->nargs); /* the arguments are inside the packet */
    fuzz_touch(m->payload, m->payload_len);
    switch (m->op) {
    case FL_OP_AM_SHORT:
        FUZZ_CHECK(m->payload_len == 0);
        break;
    case FL_OP_AM_MEDIUM:
        FUZZ_CHECK(m->payload_len <= FLIT_AM_MAX_MEDIUM);
        break;
    case FL_OP_AM_LONG:
        FUZZ_CHECK(m->payload_len == 0 && m->piece == 0);
        FUZZ_CHECK(m->base + m->total >= m->base);
        break;
    case FL_OP_AM_FRAG:
        FUZZ_CHECK(m->piece <= m->total && m->payload_len <= m->total - m->piece);
        FUZZ_CHECK(m->base + m->total >= m->base);
        FUZZ_CHECK(!(m->flags & FL_AMF_FINAL) == (m->piece + m->payload_len != m->total));
        break;
    case FL_OP_RETURN:
        FUZZ_CHECK(m->aux != FLIT_OK && m->aux < FLIT_STATUS_COUNT && m->nargs == 0);
        break;
    default:
        FUZZ_CHECK(!"an op the decoder should have refused");
    }
    /* Encode what was decoded: the same header bytes, up to the padding. */
    uint8_t again[FL_AM_MAX_HDR];
    size_t hl2 = fl_am_encode(again, m, m->argv);
    FUZZ_CHECK(hl2 == hl);
    size_t fields =
        FL_AM_BASE_HDR + 4u * m->nargs +
        (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG ? FL_AM_LONG_EXT : 0);
    FUZZ_CHECK(memcmp(again, buf, fields) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FLIT_AM_MAX_MEDIUM + 4096)
        return 0; /* larger than any packet a transport delivers */
    /* malloc: aligned for any type (8 is what decoding needs), and exactly
       size bytes to AddressSanitizer. */
    uint8_t *pkt = malloc(size ? size : 1);
    FUZZ_CHECK(pkt != NULL && ((uintptr_t)pkt & 7) == 0);
    memcpy(pkt, data, size);
    struct fl_am_msg m;
    flit_status st = fl_am_decode(pkt, size, &m);
    if (st == FLIT_OK)
        check_accepted(pkt, size, &m);
    const uint32_t *argv =
        size >= FL_AM_BASE_HDR ? fl_am_short_args(pkt, size, fl_get64(pkt)) : NULL;
    FUZZ_CHECK((argv != NULL) == (st == FLIT_OK && m.op == FL_OP_AM_SHORT));
    if (argv) {
        FUZZ_CHECK(argv == m.argv);
        uint8_t a[FL_AM_MAX_HDR], b[FL_AM_MAX_HDR];
        memset(a, 0xa5, sizeof a);
        memset(b, 0x5a, sizeof b);
        size_t la = fl_am_encode(a, &m, m.argv);
        size_t lb = fl_am_encode_short(b, m.flags & FL_AMF_REPLY, m.handler, m.tag,
                                       m.argv, m.nargs);
        /* aux is 0 on what the encoders write; the decoder ignores it here */
        a[6] = a[7] = 0;
        FUZZ_CHECK(la == lb && memcmp(a, b, la) == 0);
    }
    free(pkt);
    return 0;
}
