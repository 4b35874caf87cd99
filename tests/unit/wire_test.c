/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Active Message wire format (src/am/wire.c): every op round-trips
 * through fl_am_encode / fl_am_decode field for field, headers keep the
 * payload 8-byte aligned, a short of up to 9 arguments is one ring line, and
 * every malformation the decoder must catch answers FLIT_ERR_BAD_PACKET.
 * A mutation loop feeds it 200k damaged packets (run it under ASan/UBSan).
 *
 * Packets under test live in heap buffers of exactly their length, so that
 * a read one byte too far is an ASan report.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am/wire.h"
#include "core/barrier.h"
#include "platform/le.h"
#include "transport/ring.h"
#include "unit.h"

static const char *op_name(unsigned op)
{
    static const char *const names[] = {"?", "SHORT", "MEDIUM", "LONG", "FRAG", "RETURN"};
    return op < 7 ? names[op] : "?";
}

/* A packet in a heap buffer of exactly len bytes. */
struct pkt {
    uint8_t *b;
    size_t len;
};

static struct pkt pkt_new(size_t len)
{
    struct pkt p = {malloc(len ? len : 1), len};
    CHECK(p.b != NULL);
    return p;
}

static void pkt_free(struct pkt *p)
{
    free(p->b);
    p->b = NULL;
}

static struct pkt pkt_copy(const uint8_t *b, size_t len)
{
    struct pkt p = pkt_new(len);
    if (len)
        memcpy(p.b, b, len);
    return p;
}

static struct fl_am_msg msg(uint8_t op, uint8_t flags, uint8_t nargs)
{
    struct fl_am_msg m;
    memset(&m, 0, sizeof m);
    m.op = op;
    m.flags = flags;
    m.nargs = nargs;
    m.handler = (uint16_t)(0x1234 + nargs);
    m.tag = 0x0123456789abcdefull ^ ((uint64_t)op << 56);
    for (unsigned i = 0; i < FLIT_AM_MAX_ARGS; i++)
        m.args[i] = i < nargs ? 0xa5000000u + i * 0x01010101u : 0;
    return m;
}

static uint8_t payload_byte(size_t i)
{
    return (uint8_t)(i * 13 + 5);
}

/* Encodes m with m->payload_len payload bytes into an exact-size packet. */
static struct pkt build(const struct fl_am_msg *m)
{
    uint8_t hdr[FL_AM_MAX_HDR + 16];
    memset(hdr, 0xee, sizeof hdr);
    size_t hl = fl_am_encode(hdr, m, m->args);
    CHECK(hl == fl_am_hdr_len(m->op, m->nargs));
    CHECK(hl <= FL_AM_MAX_HDR && hl % 8 == 0);
    /* encode writes exactly hl bytes, its padding zeroed */
    for (size_t i = hl; i < sizeof hdr; i++)
        CHECK(hdr[i] == 0xee);
    size_t used = FL_AM_BASE_HDR + 4u * m->nargs +
                  (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG ? FL_AM_LONG_EXT : 0);
    for (size_t i = used; i < hl; i++)
        CHECK(hdr[i] == 0);
    struct pkt p = pkt_new(hl + m->payload_len);
    memcpy(p.b, hdr, hl);
    for (size_t i = 0; i < m->payload_len; i++)
        p.b[hl + i] = payload_byte(i);
    return p;
}

/* Decodes p and checks every field against m. */
static void expect_same(const struct pkt *p, const struct fl_am_msg *m)
{
    struct fl_am_msg d;
    memset(&d, 0x5a, sizeof d);
    flit_status st = fl_am_decode(p->b, p->len, &d);
    if (st != FLIT_OK)
        FAIL("decode of a valid %s (nargs %u, flags %#x, len %zu) answered %s",
             op_name(m->op), m->nargs, m->flags, p->len, flit_status_name(st));
    CHECK(d.op == m->op && d.flags == m->flags && d.nargs == m->nargs);
    CHECK(d.handler == m->handler && d.aux == m->aux && d.tag == m->tag);
    for (unsigned i = 0; i < m->nargs; i++)
        CHECK(d.argv[i] == m->args[i]);
    if (m->op == FL_OP_AM_LONG || m->op == FL_OP_AM_FRAG)
        CHECK(d.base == m->base && d.total == m->total && d.piece == m->piece);
    else
        CHECK(d.base == 0 && d.total == 0 && d.piece == 0);
    size_t hl = fl_am_hdr_len(m->op, m->nargs);
    CHECK(d.payload == p->b + hl);
    CHECK(d.payload_len == m->payload_len);
    CHECK(((uintptr_t)d.payload - (uintptr_t)p->b) % 8 == 0);
}

static void expect_bad(const uint8_t *b, size_t len, const char *what)
{
    struct pkt p = pkt_copy(b, len);
    struct fl_am_msg d;
    flit_status st = fl_am_decode(p.b, p.len, &d);
    if (st != FLIT_ERR_BAD_PACKET)
        FAIL("%s (%zu bytes): decode answered %s, expected FLIT_ERR_BAD_PACKET", what,
             len, flit_status_name(st));
    pkt_free(&p);
}

static void roundtrip(const struct fl_am_msg *m)
{
    struct pkt p = build(m);
    expect_same(&p, m);
    pkt_free(&p);
}

/* ---------------------------------------------------------------- */

static void test_header_lengths(void)
{
    for (unsigned op = FL_OP_AM_SHORT; op <= FL_OP_RETURN; op++)
        for (unsigned n = 0; n <= FLIT_AM_MAX_ARGS; n++) {
            size_t hl = fl_am_hdr_len(op, n);
            CHECK(hl % 8 == 0);
            CHECK(hl <= FL_AM_MAX_HDR);
            size_t need =
                FL_AM_BASE_HDR + 4 * n +
                (op == FL_OP_AM_LONG || op == FL_OP_AM_FRAG ? FL_AM_LONG_EXT : 0);
            CHECK(hl >= need && hl < need + 8);
        }
    CHECK(fl_am_hdr_len(FL_OP_AM_LONG, FLIT_AM_MAX_ARGS) == FL_AM_MAX_HDR);
    /* A short with up to 9 arguments plus the ring's record header is one
       64-byte line; 10 arguments are not. */
    for (unsigned n = 0; n <= 9; n++) {
        CHECK(fl_am_hdr_len(FL_OP_AM_SHORT, n) <= 56);
        CHECK(fl_ring_record(fl_am_hdr_len(FL_OP_AM_SHORT, n)) == FL_RING_LINE);
    }
    CHECK(fl_am_hdr_len(FL_OP_AM_SHORT, 9) == 56);
    CHECK(fl_ring_record(fl_am_hdr_len(FL_OP_AM_SHORT, 10)) == 2 * FL_RING_LINE);
}

static void test_roundtrip_short(void)
{
    for (unsigned n = 0; n <= FLIT_AM_MAX_ARGS; n++)
        for (unsigned reply = 0; reply < 2; reply++) {
            struct fl_am_msg m =
                msg(FL_OP_AM_SHORT, reply ? FL_AMF_REPLY : 0, (uint8_t)n);
            roundtrip(&m);
            m.handler = 0;
            m.tag = 0;
            roundtrip(&m);
            m.handler = 0xffff;
            m.tag = UINT64_MAX;
            for (unsigned i = 0; i < n; i++)
                m.args[i] = UINT32_MAX - i;
            roundtrip(&m);
        }
    /* The exact bytes of one short: the layout in wire.h. */
    struct fl_am_msg m = msg(FL_OP_AM_SHORT, FL_AMF_REPLY, 2);
    m.handler = 0x0201;
    m.aux = 0x0403;
    m.tag = 0x0c0b0a0908070605ull;
    m.args[0] = 0x100f0e0d;
    m.args[1] = 0x14131211;
    struct pkt p = build(&m);
    static const uint8_t want[32] = {1, 1, 2, 1,  1,  2,  3,  4,  0,  0,  0,  0,  5,  6,
                                     7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    CHECK(p.len == 32 && memcmp(p.b, want, 32) == 0);
    pkt_free(&p);
}

static void test_roundtrip_medium(void)
{
    /* One buffer of the largest medium; each length is a prefix of it, the
       header's len field rewritten, decoded in place. */
    for (unsigned n = 0; n <= FLIT_AM_MAX_ARGS; n++) {
        struct fl_am_msg m = msg(FL_OP_AM_MEDIUM, n % 2 ? FL_AMF_REPLY : 0, (uint8_t)n);
        m.payload_len = FLIT_AM_MAX_MEDIUM;
        struct pkt p = build(&m);
        size_t hl = fl_am_hdr_len(FL_OP_AM_MEDIUM, n);
        for (size_t len = 0; len <= FLIT_AM_MAX_MEDIUM; len++) {
            fl_put32(p.b + 8, (uint32_t)len);
            struct fl_am_msg d;
            flit_status st = fl_am_decode(p.b, hl + len, &d);
            if (st != FLIT_OK)
                FAIL("medium, %u args, %zu bytes: %s", n, len, flit_status_name(st));
            CHECK(d.payload == p.b + hl && d.payload_len == len);
            CHECK(d.nargs == n && d.op == FL_OP_AM_MEDIUM);
        }
        /* The payload is not touched by encoding or decoding. */
        for (size_t i = 0; i < FLIT_AM_MAX_MEDIUM; i++)
            CHECK(p.b[hl + i] == payload_byte(i));
        pkt_free(&p);
    }
    /* Full field checks on a few sizes, in exact-size buffers. */
    static const size_t sizes[] = {0, 1, 7, 8, 9, 63, 64, 4096, FLIT_AM_MAX_MEDIUM};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct fl_am_msg m = msg(FL_OP_AM_MEDIUM, 0, (uint8_t)(i * 2));
        m.payload_len = sizes[i];
        roundtrip(&m);
    }
}

static void test_roundtrip_long_frag(void)
{
    for (unsigned n = 0; n <= FLIT_AM_MAX_ARGS; n++) {
        struct fl_am_msg m = msg(FL_OP_AM_LONG, n % 2 ? FL_AMF_REPLY : 0, (uint8_t)n);
        m.base = 4096 + n;
        m.total = 1000000;
        roundtrip(&m);
        m.base = 0;
        m.total = 0;
        roundtrip(&m);
        m.base = UINT64_MAX - 10; /* ends exactly at the top */
        m.total = 10;
        roundtrip(&m);
    }
    /* A long payload in three pieces: first, middle, final with the args. */
    for (unsigned reply = 0; reply < 2; reply++) {
        uint8_t r = reply ? FL_AMF_REPLY : 0;
        struct fl_am_msg f = msg(FL_OP_AM_FRAG, r, 0);
        f.base = 512;
        f.total = 10000;
        f.piece = 0;
        f.payload_len = 4000;
        roundtrip(&f);
        f.piece = 4000;
        roundtrip(&f);
        struct fl_am_msg last = msg(FL_OP_AM_FRAG, r | FL_AMF_FINAL, 5);
        last.base = 512;
        last.total = 10000;
        last.piece = 8000;
        last.payload_len = 2000;
        roundtrip(&last);
        last.nargs = FLIT_AM_MAX_ARGS;
        roundtrip(&last);
        /* One piece that is first and final at once. */
        struct fl_am_msg one = msg(FL_OP_AM_FRAG, r | FL_AMF_FINAL, 3);
        one.base = 0;
        one.total = 300;
        one.piece = 0;
        one.payload_len = 300;
        roundtrip(&one);
    }
}

static void test_roundtrip_return(void)
{
    struct fl_am_msg inner = msg(FL_OP_AM_MEDIUM, 0, 4);
    inner.payload_len = 100;
    struct pkt in = build(&inner);
    for (unsigned reason = 1; reason < FLIT_STATUS_COUNT; reason++) {
        struct fl_am_msg r = msg(FL_OP_RETURN, FL_AMF_REPLY, 0);
        r.aux = (uint16_t)reason;
        r.payload_len = in.len;
        struct pkt p = build(&r);
        memcpy(p.b + fl_am_hdr_len(FL_OP_RETURN, 0), in.b, in.len);
        expect_same(&p, &r);
        /* The payload is the refused packet, decodable in turn. */
        struct fl_am_msg d, di;
        CHECK_OK(fl_am_decode(p.b, p.len, &d));
        CHECK_OK(fl_am_decode(d.payload, d.payload_len, &di));
        CHECK(di.op == FL_OP_AM_MEDIUM && di.nargs == 4 && di.payload_len == 100);
        pkt_free(&p);
    }
    pkt_free(&in);
}

/* ---------------------------------------------------------------- malformed */

/* Valid packets of every op, as templates for the checks below. */
static int templates(struct pkt *out, int max)
{
    int n = 0;
    struct fl_am_msg m;
    m = msg(FL_OP_AM_SHORT, 0, 0);
    out[n++] = build(&m);
    m = msg(FL_OP_AM_SHORT, FL_AMF_REPLY, 9);
    out[n++] = build(&m);
    m = msg(FL_OP_AM_SHORT, 0, 16);
    out[n++] = build(&m);
    m = msg(FL_OP_AM_MEDIUM, 0, 3);
    m.payload_len = 77;
    out[n++] = build(&m);
    m = msg(FL_OP_AM_MEDIUM, FL_AMF_REPLY, 0);
    m.payload_len = 0;
    out[n++] = build(&m);
    m = msg(FL_OP_AM_LONG, 0, 2);
    m.base = 64;
    m.total = 4096;
    out[n++] = build(&m);
    m = msg(FL_OP_AM_FRAG, 0, 0);
    m.total = 300;
    m.payload_len = 100;
    out[n++] = build(&m);
    m = msg(FL_OP_AM_FRAG, FL_AMF_FINAL, 2);
    m.total = 300;
    m.piece = 200;
    m.payload_len = 100;
    out[n++] = build(&m);
    m = msg(FL_OP_RETURN, FL_AMF_REPLY, 0);
    m.aux = FLIT_ERR_NO_HANDLER;
    m.payload_len = out[0].len;
    out[n] = build(&m);
    memcpy(out[n].b + fl_am_hdr_len(FL_OP_RETURN, 0), out[0].b, out[0].len);
    n++;
    CHECK(n <= max);
    for (int i = 0; i < n; i++)
        CHECK_OK(fl_am_decode(out[i].b, out[i].len, &m));
    return n;
}

static void test_truncated(void)
{
    struct pkt t[16];
    int n = templates(t, 16);
    for (int i = 0; i < n; i++)
        for (size_t len = 0; len < t[i].len; len++) {
            char what[64];
            snprintf(what, sizeof what, "%s truncated", op_name(t[i].b[1]));
            expect_bad(t[i].b, len, what);
        }
    /* The largest medium cut anywhere in its header and at a sample of
       payload lengths. */
    struct fl_am_msg m = msg(FL_OP_AM_MEDIUM, 0, FLIT_AM_MAX_ARGS);
    m.payload_len = FLIT_AM_MAX_MEDIUM;
    struct pkt big = build(&m);
    for (size_t len = 0; len < big.len; len += len < 256 ? 1 : 4093)
        expect_bad(big.b, len, "max medium truncated");
    expect_bad(big.b, big.len - 1, "max medium truncated");
    pkt_free(&big);
    for (int i = 0; i < n; i++)
        pkt_free(&t[i]);
}

static void test_bad_header_fields(void)
{
    struct pkt t[16];
    int n = templates(t, 16);
    for (int i = 0; i < n; i++) {
        uint8_t *b = malloc(t[i].len);
        CHECK(b != NULL);
        /* Version */
        for (unsigned v = 0; v < 256; v++) {
            if (v == FL_WIRE_VERSION)
                continue;
            memcpy(b, t[i].b, t[i].len);
            b[0] = (uint8_t)v;
            expect_bad(b, t[i].len, "wrong version");
        }
        /* Unknown flag bits, alone and on top of the valid ones. */
        for (unsigned bit = 0; bit < 8; bit++) {
            if ((1u << bit) & FL_AMF_KNOWN)
                continue;
            memcpy(b, t[i].b, t[i].len);
            b[3] |= (uint8_t)(1u << bit);
            expect_bad(b, t[i].len, "unknown flag bit");
        }
        memcpy(b, t[i].b, t[i].len);
        b[3] = 0xff;
        expect_bad(b, t[i].len, "all flag bits");
        /* len field != bytes after the header */
        uint32_t len = fl_get32(t[i].b + 8);
        static const int64_t deltas[] = {-1, 1, 8, 4096};
        for (size_t d = 0; d < 4; d++) {
            if ((int64_t)len + deltas[d] < 0)
                continue;
            memcpy(b, t[i].b, t[i].len);
            fl_put32(b + 8, (uint32_t)((int64_t)len + deltas[d]));
            expect_bad(b, t[i].len, "len field off");
        }
        memcpy(b, t[i].b, t[i].len);
        fl_put32(b + 8, UINT32_MAX);
        expect_bad(b, t[i].len, "len field huge");
        free(b);
    }
    for (int i = 0; i < n; i++)
        pkt_free(&t[i]);

    /* Unknown ops: a packet as long as that op's header would be. */
    uint8_t b[FL_AM_MAX_HDR + 64];
    for (unsigned op = 0; op < 256; op++) {
        if (op >= FL_OP_AM_SHORT && op <= FL_OP_RETURN)
            continue;
        for (size_t len = FL_AM_BASE_HDR; len <= FL_AM_MAX_HDR; len += 4) {
            memset(b, 0, sizeof b);
            b[0] = FL_WIRE_VERSION;
            b[1] = (uint8_t)op;
            b[2] = 0;
            fl_put32(b + 8, (uint32_t)(len - FL_AM_BASE_HDR));
            expect_bad(b, len, "unknown op");
        }
    }
    /* nargs above 16, with a length consistent with that many arguments. */
    static uint8_t big[FL_AM_BASE_HDR + 4 * 255 + FL_AM_LONG_EXT + 8];
    for (unsigned op = FL_OP_AM_SHORT; op <= FL_OP_RETURN; op++)
        for (unsigned na = FLIT_AM_MAX_ARGS + 1; na < 256; na++) {
            size_t hl = fl_am_hdr_len(op, na);
            CHECK(hl <= sizeof big);
            memset(big, 0, sizeof big);
            big[0] = FL_WIRE_VERSION;
            big[1] = (uint8_t)op;
            big[2] = (uint8_t)na;
            if (op == FL_OP_AM_FRAG)
                big[3] = FL_AMF_FINAL;
            if (op == FL_OP_RETURN)
                big[3] = FL_AMF_REPLY;
            expect_bad(big, hl, "nargs > 16");
        }
}

static void expect_msg_bad(const struct fl_am_msg *m, const char *what)
{
    struct pkt p = build(m);
    expect_bad(p.b, p.len, what);
    pkt_free(&p);
}

static void test_bad_semantics(void)
{
    struct fl_am_msg m;

    /* Payload where the op has none. */
    m = msg(FL_OP_AM_SHORT, 0, 2);
    m.payload_len = 8;
    expect_msg_bad(&m, "short with payload");
    m = msg(FL_OP_AM_LONG, 0, 2);
    m.total = 100;
    m.payload_len = 5;
    expect_msg_bad(&m, "long with payload");
    m.payload_len = 100;
    expect_msg_bad(&m, "long with its payload inline");

    /* Medium above the maximum. */
    m = msg(FL_OP_AM_MEDIUM, 0, 1);
    m.payload_len = FLIT_AM_MAX_MEDIUM + 1;
    expect_msg_bad(&m, "medium > max");
    m.payload_len = FLIT_AM_MAX_MEDIUM * 2;
    expect_msg_bad(&m, "medium 2 x max");

    /* Long: a piece offset, or base + total overflowing. */
    m = msg(FL_OP_AM_LONG, 0, 0);
    m.total = 100;
    m.piece = 1;
    expect_msg_bad(&m, "long with a piece offset");
    m.piece = 0;
    m.base = UINT64_MAX - 10;
    m.total = 11;
    expect_msg_bad(&m, "long base + total overflows");
    m.base = 1;
    m.total = UINT64_MAX;
    expect_msg_bad(&m, "long total overflows");

    /* Fragments. */
    m = msg(FL_OP_AM_FRAG, 0, 0);
    m.total = 100;
    m.piece = 101;
    m.payload_len = 0;
    expect_msg_bad(&m, "frag piece beyond total");
    m.flags = FL_AMF_FINAL;
    expect_msg_bad(&m, "final frag piece beyond total");
    m.flags = 0;
    m.piece = 60;
    m.payload_len = 50;
    expect_msg_bad(&m, "frag piece running past total");
    m.flags = FL_AMF_FINAL;
    expect_msg_bad(&m, "final frag running past total");
    m.total = UINT64_MAX;
    m.piece = UINT64_MAX - 10;
    m.payload_len = 20;
    expect_msg_bad(&m, "frag piece + len overflowing");

    m = msg(FL_OP_AM_FRAG, FL_AMF_FINAL, 0);
    m.total = 10000;
    m.piece = 0;
    m.payload_len = 4000;
    expect_msg_bad(&m, "FINAL on the first of three pieces");
    m.piece = 4000;
    expect_msg_bad(&m, "FINAL on a middle piece");
    m = msg(FL_OP_AM_FRAG, 0, 0);
    m.total = 10000;
    m.piece = 8000;
    m.payload_len = 2000;
    expect_msg_bad(&m, "final piece without FINAL");
    m.flags = FL_AMF_REPLY;
    expect_msg_bad(&m, "final reply piece without FINAL");

    m = msg(FL_OP_AM_FRAG, 0, 2);
    m.total = 10000;
    m.piece = 0;
    m.payload_len = 4000;
    expect_msg_bad(&m, "non-final frag with args");
    m.nargs = FLIT_AM_MAX_ARGS;
    m.piece = 4000;
    expect_msg_bad(&m, "middle frag with args");

    m = msg(FL_OP_AM_FRAG, FL_AMF_FINAL, 0);
    m.base = UINT64_MAX - 5;
    m.total = 100;
    m.piece = 0;
    m.payload_len = 100;
    expect_msg_bad(&m, "frag base + total overflows");

    /* Returned messages: the reason must be a status; no arguments. */
    static const unsigned bad_reasons[] = {FLIT_STATUS_COUNT, FLIT_STATUS_COUNT + 1, 255,
                                           0x8000, 0xffff};
    for (size_t i = 0; i < sizeof bad_reasons / sizeof bad_reasons[0]; i++) {
        m = msg(FL_OP_RETURN, FL_AMF_REPLY, 0);
        m.aux = (uint16_t)bad_reasons[i];
        m.payload_len = 24;
        expect_msg_bad(&m, "return with reason >= FLIT_STATUS_COUNT");
    }
    m = msg(FL_OP_RETURN, FL_AMF_REPLY, 1);
    m.aux = FLIT_ERR_NO_HANDLER;
    m.payload_len = 24;
    expect_msg_bad(&m, "return with arguments");
}

/* ---------------------------------------------------------------- mutation */

/* When a damaged packet is accepted, what decode says must be a valid
   packet: re-encoding it gives back the same header bytes (padding aside). */
static void check_accepted(const uint8_t *b, size_t len, const struct fl_am_msg *d)
{
    CHECK(d->op >= FL_OP_AM_SHORT && d->op <= FL_OP_RETURN);
    CHECK(d->nargs <= FLIT_AM_MAX_ARGS);
    CHECK((d->flags & ~FL_AMF_KNOWN) == 0);
    size_t hl = fl_am_hdr_len(d->op, d->nargs);
    CHECK(hl <= len && d->payload == b + hl && d->payload_len == len - hl);
    switch (d->op) {
    case FL_OP_AM_SHORT:
    case FL_OP_AM_LONG:
        CHECK(d->payload_len == 0);
        break;
    case FL_OP_AM_MEDIUM:
        CHECK(d->payload_len <= FLIT_AM_MAX_MEDIUM);
        break;
    case FL_OP_AM_FRAG:
        CHECK(d->piece <= d->total && d->payload_len <= d->total - d->piece);
        CHECK(((d->flags & FL_AMF_FINAL) != 0) ==
              (d->piece + d->payload_len == d->total));
        CHECK((d->flags & FL_AMF_FINAL) || d->nargs == 0);
        break;
    case FL_OP_RETURN:
        CHECK(d->aux < FLIT_STATUS_COUNT && d->nargs == 0);
        break;
    }
    if (d->op == FL_OP_AM_LONG || d->op == FL_OP_AM_FRAG)
        CHECK(d->base + d->total >= d->base);
    uint8_t re[FL_AM_MAX_HDR];
    CHECK(fl_am_encode(re, d, d->argv) == hl);
    size_t used = FL_AM_BASE_HDR + 4u * d->nargs +
                  (d->op == FL_OP_AM_LONG || d->op == FL_OP_AM_FRAG ? FL_AM_LONG_EXT : 0);
    if (memcmp(re, b, used) != 0)
        FAIL("accepted packet does not re-encode to the same header");
}

static void test_mutation(void)
{
    struct pkt t[16];
    int n = templates(t, 16);
    uint64_t rng = 0xf1e1d;
    uint64_t iters = test_scaled(200000), accepted = 0;
    uint8_t work[1024];
    for (uint64_t it = 0; it < iters; it++) {
        const struct pkt *src = &t[test_rand(&rng) % (uint64_t)n];
        CHECK(src->len <= sizeof work);
        memcpy(work, src->b, src->len);
        size_t len = src->len;
        /* Sometimes a new length: shorter, or longer with random bytes. */
        uint64_t x = test_rand(&rng);
        if (x % 8 == 0)
            len = (size_t)(test_rand(&rng) % (src->len + 1));
        else if (x % 8 == 1) {
            size_t extra = (size_t)(test_rand(&rng) % 64);
            for (size_t i = 0; i < extra; i++)
                work[len + i] = (uint8_t)test_rand(&rng);
            len += extra;
        }
        /* Flip 1..4 random bytes, mostly in the header. */
        unsigned flips = 1 + (unsigned)(test_rand(&rng) % 4);
        for (unsigned f = 0; f < flips && len; f++) {
            uint64_t y = test_rand(&rng);
            size_t at =
                y % 4 ? (size_t)(y >> 8) % (len < 48 ? len : 48) : (size_t)(y >> 8) % len;
            work[at] ^= (uint8_t)(1 + (y >> 32) % 255);
        }
        /* Keep the len field consistent half the time, so that the checks
           behind it are reached. */
        if (len >= 12 && (test_rand(&rng) & 1) && work[1] >= 1 && work[1] <= 6 &&
            work[2] <= FLIT_AM_MAX_ARGS) {
            size_t hl = fl_am_hdr_len(work[1], work[2]);
            if (hl <= len)
                fl_put32(work + 8, (uint32_t)(len - hl));
        }
        struct pkt p = pkt_copy(work, len);
        struct fl_am_msg d;
        flit_status st = fl_am_decode(p.b, p.len, &d);
        if (st == FLIT_OK) {
            check_accepted(p.b, p.len, &d);
            accepted++;
        } else {
            CHECK_ST(st, FLIT_ERR_BAD_PACKET);
        }
        pkt_free(&p);
    }
    /* Both outcomes were exercised. */
    CHECK(accepted > 0 && accepted < iters);
    for (int i = 0; i < n; i++)
        pkt_free(&t[i]);
}

/* The core's control packets (core/barrier.h): exactly 16 bytes, a known
   kind, a round below 32, no value where the kind has none (a barrier's
   is 0 or 1). */
static void test_ctrl(void)
{
    uint8_t b[FL_CTRL_LEN + 1];
    struct fl_ctrl c;
    for (unsigned k = FL_CTRL_BARRIER; k <= FL_CTRL_MAX; k++) {
        uint8_t v[16] = {FL_WIRE_VERSION, FL_OP_CTRL, (uint8_t)k, 0};
        if (k != FL_CTRL_FIN)
            v[4] = 7;
        if (k == FL_CTRL_MAX) {
            v[7] = 0x80; /* parity */
            v[8] = 42;
        }
        memcpy(b, v, 16);
        CHECK(fl_ctrl_decode(b, FL_CTRL_LEN, &c) && c.kind == k);
        CHECK(c.arg == (k == FL_CTRL_FIN ? 0 : k == FL_CTRL_MAX ? 0x80000007u : 7));
        CHECK(c.value == (k == FL_CTRL_MAX ? 42 : 0));
        for (size_t len = 0; len <= FL_CTRL_LEN + 1; len++)
            CHECK(len == FL_CTRL_LEN || !fl_ctrl_decode(b, len, &c));
        for (int i = 0; i < 4; i++) { /* version, opcode, kind, padding */
            memcpy(b, v, 16);
            b[i] ^= i == 2 ? 0x40 : 0x01;
            CHECK(!fl_ctrl_decode(b, FL_CTRL_LEN, &c));
        }
        memcpy(b, v, 16);
        b[4] = 32; /* no round 32; FIN has no argument */
        CHECK(!fl_ctrl_decode(b, FL_CTRL_LEN, &c));
        if (k != FL_CTRL_MAX) {
            memcpy(b, v, 16);
            b[9] = 1; /* a value where the kind has none */
            CHECK(!fl_ctrl_decode(b, FL_CTRL_LEN, &c));
        }
        if (k == FL_CTRL_BARRIER) { /* the quiesce's barrier: 1, a rank died on the way */
            memcpy(b, v, 16);
            b[8] = 1;
            CHECK(fl_ctrl_decode(b, FL_CTRL_LEN, &c) && c.value == 1);
            b[8] = 2;
            CHECK(!fl_ctrl_decode(b, FL_CTRL_LEN, &c));
        }
    }
    uint8_t none[16] = {FL_WIRE_VERSION, FL_OP_CTRL, 0, 0};
    CHECK(!fl_ctrl_decode(none, FL_CTRL_LEN, &c));
}

int main(void)
{
    test_ctrl();
    test_header_lengths();
    test_roundtrip_short();
    test_roundtrip_medium();
    test_roundtrip_long_frag();
    test_roundtrip_return();
    test_truncated();
    test_bad_header_fields();
    test_bad_semantics();
    test_mutation();
    return 0;
}
