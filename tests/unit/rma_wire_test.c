/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RMA packet decoder (src/rma/wire.c): every kind encodes and decodes
 * back to the same fields; every rule it checks is broken once and the
 * packet refused; a valid packet cut short or with its lengths changed is
 * refused; random bytes never decode into a packet whose ranges do not add
 * up (and, under the sanitizers, are never read beyond their length).
 */
#include <string.h>

#include <flit/rma.h>

#include "rma/wire.h"
#include "stream/wire.h"
#include "transport/transport.h"
#include "unit.h"

#define ALL_ACCESS (1u | 2u)

static uint8_t buf[FL_RMA_HDR + 4096] __attribute__((aligned(8)));

static size_t build(struct fl_rma_pkt *p)
{
    memset(buf, 0, sizeof buf);
    size_t hl = fl_rma_encode(buf, p);
    if (p->kind == FL_RMA_IMPORT_REP)
        return hl;
    for (uint32_t i = 0; i < p->len; i++)
        buf[FL_RMA_HDR + i] = (uint8_t)(i * 13 + 1);
    return FL_RMA_HDR + p->len;
}

static void expect_ok(struct fl_rma_pkt p, const char *what)
{
    size_t len = build(&p);
    struct fl_rma_pkt d;
    flit_status st = fl_rma_decode(buf, len, fl_rma_lane(p.kind), &d);
    if (st != FLIT_OK)
        FAIL("%s: refused (%s)", what, flit_status_name(st));
    if (d.kind != p.kind || d.flags != p.flags || d.op != p.op || d.id != p.id ||
        d.base != p.base || d.total != p.total || d.piece != p.piece || d.len != p.len ||
        d.status != p.status || d.access != p.access)
        FAIL("%s: fields differ after decoding", what);
    if (p.kind == FL_RMA_IMPORT_REP && p.status == FLIT_OK &&
        (d.info.vaddr != p.info.vaddr || d.info.block != p.info.block ||
         d.info.file_off != p.info.file_off || d.info.file_len != p.info.file_len ||
         d.info.flags != p.info.flags))
        FAIL("%s: import info differs", what);
    if (d.payload != buf + FL_RMA_HDR)
        FAIL("%s: payload not in place", what);
    /* Either lane but its own, any shorter length: refused. */
    if (fl_rma_decode(buf, len, 1u - fl_rma_lane(p.kind), &d) != FLIT_ERR_BAD_PACKET)
        FAIL("%s: accepted on the other lane", what);
    for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : 977))
        if (fl_rma_decode(buf, cut, fl_rma_lane(p.kind), &d) != FLIT_ERR_BAD_PACKET)
            FAIL("%s: accepted cut to %zu bytes", what, cut);
}

static void expect_bad(struct fl_rma_pkt p, const char *what)
{
    size_t len = build(&p);
    struct fl_rma_pkt d;
    if (fl_rma_decode(buf, len, fl_rma_lane(p.kind), &d) != FLIT_ERR_BAD_PACKET)
        FAIL("%s: accepted", what);
}

static struct fl_rma_pkt put(uint64_t base, uint64_t total, uint64_t piece, uint32_t len)
{
    struct fl_rma_pkt p = {.kind = FL_RMA_PUT,
                           .op = 7,
                           .id = 1ull << 32,
                           .base = base,
                           .total = total,
                           .piece = piece,
                           .len = len};
    if (piece == 0)
        p.flags |= FL_RMAF_FIRST;
    if (piece + len == total)
        p.flags |= FL_RMAF_LAST;
    return p;
}

static void valid_packets(void)
{
    expect_ok((struct fl_rma_pkt){.kind = FL_RMA_IMPORT_REQ, .op = 3, .id = 99},
              "import req");
    struct fl_rma_pkt rep = {.kind = FL_RMA_IMPORT_REP,
                             .op = 3,
                             .id = 99,
                             .total = 5000,
                             .access = FLIT_RMA_READ,
                             .info = {.vaddr = 0x7f0000001000ull,
                                      .block = 4,
                                      .file_off = 8192,
                                      .file_len = 16384,
                                      .flags = FL_RMA_INFO_CTL}};
    expect_ok(rep, "import reply");
    rep.info = (struct fl_rma_info){.vaddr = 0x1000};
    expect_ok(rep, "import reply, user memory");
    expect_ok(
        (struct fl_rma_pkt){
            .kind = FL_RMA_IMPORT_REP, .op = 3, .id = 99, .status = FLIT_ERR_DENIED},
        "import refused");
    expect_ok(put(10, 100, 0, 100), "put in one piece");
    expect_ok(put(10, 100, 0, 60), "put, first piece");
    expect_ok(put(10, 100, 60, 40), "put, last piece");
    expect_ok(put(10, 100, 30, 30), "put, middle piece");
    expect_ok(put(0, 0, 0, 0), "empty put");
    struct fl_rma_pkt n = put(10, 100, 60, 40);
    n.flags |= FL_RMAF_NOTIFY;
    expect_ok(n, "put with notification");
    expect_ok((struct fl_rma_pkt){.kind = FL_RMA_ACK, .op = 7, .id = 5}, "ack");
    expect_ok(
        (struct fl_rma_pkt){
            .kind = FL_RMA_ACK, .op = 7, .id = 5, .status = FLIT_ERR_BOUNDS},
        "refusal");
    expect_ok(
        (struct fl_rma_pkt){
            .kind = FL_RMA_GET_REQ, .op = 7, .id = 5, .base = 3, .total = 1 << 30},
        "get req");
    expect_ok((struct fl_rma_pkt){.kind = FL_RMA_GET_DATA,
                                  .op = 7,
                                  .id = 5,
                                  .base = 3,
                                  .total = 200,
                                  .piece = 100,
                                  .len = 100,
                                  .flags = FL_RMAF_LAST},
              "get data, last");
    expect_ok(
        (struct fl_rma_pkt){
            .kind = FL_RMA_GET_DATA, .op = 7, .id = 5, .total = 200, .len = 100},
        "get data, first");
    expect_ok((struct fl_rma_pkt){.kind = FL_RMA_GET_DATA,
                                  .op = 7,
                                  .id = 5,
                                  .status = FLIT_ERR_REVOKED,
                                  .flags = FL_RMAF_LAST},
              "get refused");
    expect_ok((struct fl_rma_pkt){.kind = FL_RMA_NOTIFY, .id = 5, .base = 7, .total = 9},
              "notify");
    struct fl_rma_pkt acked = put(0, 64, 0, 64);
    acked.flags |= FL_RMAF_ACK;
    expect_ok(acked, "put asking for an acknowledgement");
    expect_ok(
        (struct fl_rma_pkt){
            .kind = FL_RMA_ACK, .op = 0, .id = 5, .status = FLIT_ERR_REVOKED},
        "refusal of an untracked put");
    expect_ok((struct fl_rma_pkt){.kind = FL_RMA_FLUSH_REQ, .op = 9}, "flush");
    expect_ok((struct fl_rma_pkt){.kind = FL_RMA_FLUSH_REP, .op = 9}, "flushed");
}

static void broken_rules(void)
{
    struct fl_rma_pkt p;
    p = put(10, 100, 0, 60);
    p.flags |= FL_RMAF_LAST;
    expect_bad(p, "LAST before the end");
    p = put(10, 100, 60, 40);
    p.flags |= FL_RMAF_FIRST;
    expect_bad(p, "FIRST after the start");
    p = put(10, 100, 60, 40);
    p.flags &= (uint8_t)~FL_RMAF_LAST;
    expect_bad(p, "no LAST at the end");
    p = put(10, 100, 0, 60);
    p.flags &= (uint8_t)~FL_RMAF_FIRST;
    expect_bad(p, "no FIRST at the start");
    p = put(10, 100, 90, 20);
    expect_bad(p, "piece past the total");
    p = put(UINT64_MAX - 10, 100, 0, 100);
    expect_bad(p, "range wraps");
    p = put(10, 100, UINT64_MAX, 1);
    expect_bad(p, "piece offset wraps");
    p = put(10, 100, 0, 100);
    p.id = 0;
    expect_bad(p, "request without a region");
    p = put(10, 100, 0, 100);
    p.status = FLIT_ERR_BOUNDS;
    expect_bad(p, "request with a verdict");
    p = put(10, 100, 0, 100);
    p.access = 1;
    expect_bad(p, "request with access");
    p = put(10, 100, 0, 100);
    p.flags |= 0x80;
    expect_bad(p, "unknown flag");
    expect_bad(
        (struct fl_rma_pkt){
            .kind = FL_RMA_GET_REQ, .id = 5, .total = 8, .flags = FL_RMAF_LAST},
        "flag on a get request");
    expect_bad(
        (struct fl_rma_pkt){.kind = FL_RMA_GET_REQ, .id = 5, .total = 8, .piece = 1},
        "get request with a piece");
    expect_bad((struct fl_rma_pkt){.kind = FL_RMA_GET_REQ, .id = 5, .len = 8, .total = 8},
               "get request with a payload");
    expect_bad(
        (struct fl_rma_pkt){
            .kind = FL_RMA_NOTIFY, .id = 5, .base = UINT64_MAX, .total = 2},
        "notification range wraps");
    expect_bad((struct fl_rma_pkt){.kind = FL_RMA_IMPORT_REQ, .id = 5, .total = 1},
               "import request with a range");
    expect_bad(
        (struct fl_rma_pkt){.kind = FL_RMA_ACK, .id = 5, .status = FLIT_STATUS_COUNT},
        "status that is no status");
    expect_bad((struct fl_rma_pkt){.kind = FL_RMA_ACK, .id = 5, .len = 4},
               "ack with data");
    expect_bad((struct fl_rma_pkt){.kind = FL_RMA_FLUSH_REQ, .op = 9, .id = 1},
               "flush naming a region");
    expect_bad((struct fl_rma_pkt){.kind = FL_RMA_FLUSH_REQ, .op = 9, .total = 1},
               "flush with a range");
    expect_bad(
        (struct fl_rma_pkt){.kind = FL_RMA_FLUSH_REP, .op = 9, .status = FLIT_ERR_DENIED},
        "flush answer with a verdict");
    expect_bad(
        (struct fl_rma_pkt){
            .kind = FL_RMA_GET_REQ, .id = 5, .total = 8, .flags = FL_RMAF_ACK},
        "ack flag on a get");
    expect_bad(
        (struct fl_rma_pkt){.kind = FL_RMA_GET_DATA, .id = 5, .status = FLIT_ERR_DENIED},
        "refusal without LAST");
    expect_bad((struct fl_rma_pkt){.kind = FL_RMA_GET_DATA,
                                   .id = 5,
                                   .status = FLIT_ERR_DENIED,
                                   .flags = FL_RMAF_LAST,
                                   .len = 8,
                                   .total = 8},
               "refusal with data");
    struct fl_rma_pkt rep = {.kind = FL_RMA_IMPORT_REP,
                             .id = 5,
                             .total = 100,
                             .access = FLIT_RMA_WRITE,
                             .info = {.block = 1, .file_off = 4000, .file_len = 4096}};
    expect_bad(rep, "region past its block");
    rep.info = (struct fl_rma_info){.file_off = 8};
    expect_bad(rep, "file offset without a block");
    rep.info = (struct fl_rma_info){.flags = 0x10};
    expect_bad(rep, "unknown info flag");
    rep.info = (struct fl_rma_info){.vaddr = UINT64_MAX - 5};
    expect_bad(rep, "address range wraps");
    rep.info = (struct fl_rma_info){0};
    rep.access = 0;
    expect_bad(rep, "import granting nothing");
    rep.access = 4;
    expect_bad(rep, "unknown access bit");
    rep.access = ALL_ACCESS;
    rep.total = 0;
    expect_bad(rep, "empty region");
    /* Header fields around the payload length. */
    struct fl_rma_pkt q = put(0, 100, 0, 100);
    size_t len = build(&q);
    struct fl_rma_pkt d;
    CHECK(fl_rma_decode(buf, len + 8, FL_LANE_REQ, &d) == FLIT_ERR_BAD_PACKET);
    buf[0] = FL_WIRE_VERSION + 1;
    CHECK(fl_rma_decode(buf, len, FL_LANE_REQ, &d) == FLIT_ERR_BAD_PACKET);
    build(&q);
    buf[1] = FL_OP_STREAM;
    CHECK(fl_rma_decode(buf, len, FL_LANE_REQ, &d) == FLIT_ERR_BAD_PACKET);
    build(&q);
    buf[2] = 0;
    CHECK(fl_rma_decode(buf, len, FL_LANE_REQ, &d) == FLIT_ERR_BAD_PACKET);
    buf[2] = FL_RMA_KINDS;
    CHECK(fl_rma_decode(buf, len, FL_LANE_REQ, &d) == FLIT_ERR_BAD_PACKET);
}

/* Whatever decodes holds together. */
static void random_bytes(void)
{
    uint64_t rng = 12345;
    size_t accepted = 0;
    uint64_t rounds = test_scaled(400000);
    for (uint64_t i = 0; i < rounds; i++) {
        size_t len = (size_t)(test_rand(&rng) % (FL_RMA_HDR + 64));
        uint8_t *pkt = malloc(len ? len : 1);
        CHECK(pkt);
        for (size_t k = 0; k < len; k++)
            pkt[k] = (uint8_t)test_rand(&rng);
        if (len >= 4) { /* often a plausible start, to get further in */
            pkt[0] = FL_WIRE_VERSION;
            pkt[1] = FL_OP_RMA;
            pkt[2] = (uint8_t)(1 + test_rand(&rng) % (FL_RMA_KINDS - 1));
            pkt[3] &= 7;
        }
        if (len >= FL_RMA_HDR) {
            uint32_t plen = (uint32_t)(len - FL_RMA_HDR);
            memcpy(pkt + 40, &plen, 4);
            if (test_rand(&rng) % 2)
                memset(pkt + 16, 0, 24);
            pkt[44] = pkt[45] = 0;
            pkt[46] &= 3;
            pkt[47] = 0;
        }
        struct fl_rma_pkt d;
        unsigned lane = (unsigned)(test_rand(&rng) % 2);
        if (fl_rma_decode(pkt, len, lane, &d) == FLIT_OK) {
            accepted++;
            CHECK(d.len == len - FL_RMA_HDR);
            if (d.kind != FL_RMA_IMPORT_REP) /* its payload is the info */
                CHECK(d.piece <= d.total && d.len <= d.total - d.piece);
            CHECK(d.base + d.total >= d.base);
            CHECK(d.status < FLIT_STATUS_COUNT);
            CHECK(fl_rma_lane(d.kind) == lane);
        }
        free(pkt);
    }
    if (accepted == 0)
        FAIL("random packets: none decoded; the test reaches no further than the header");
}

int main(void)
{
    valid_packets();
    broken_rules();
    random_bytes();
    return unit_exit_status();
}
