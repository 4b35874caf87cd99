/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the seed corpora of the fuzz targets: valid inputs of every kind,
 * built with the library's own encoders, so that fuzzing starts from what
 * the decoders accept and mutates from there.
 *
 *   fuzz_seeds DIR   ->  DIR/chan_decode/, DIR/am_decode/, DIR/chan_recv/,
 *                        DIR/chan_order/, DIR/stream_decode/, DIR/rma_decode/,
 *                        DIR/boot_frames/, DIR/pmi2_decode/, DIR/blobs_unpack/,
 *                        DIR/rpc_decode/, DIR/group_decode/, DIR/object_decode/
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <flit/rma.h>

#include "am/wire.h"
#include "boot/blobs.h"
#include "boot/proto.h"
#include "channel/wire.h"
#include "fuzz.h"
#include "group/internal.h"
#include "object/object_int.h"
#include "platform/le.h"
#include "rma/wire.h"
#include "rpc/internal.h"
#include "stream/wire.h"

static const char *out_dir;

static void save(const char *target, const char *name, const uint8_t *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, target);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

/* ---- AM packets ---- */

/* An AM packet: header for op with nargs arguments, then payload bytes. */
static size_t am_packet(uint8_t *buf, uint8_t op, uint8_t flags, unsigned nargs,
                        uint16_t aux, uint64_t base, uint64_t total, uint64_t piece,
                        size_t payload)
{
    uint32_t args[FLIT_AM_MAX_ARGS];
    for (unsigned i = 0; i < nargs; i++)
        args[i] = 0x01010101u * (i + 1);
    struct fl_am_msg m = {.op = op,
                          .flags = flags,
                          .nargs = (uint8_t)nargs,
                          .handler = 7,
                          .aux = aux,
                          .tag = 0x5a5a5a5a5a5a5a5aull,
                          .base = base,
                          .total = total,
                          .piece = piece,
                          .payload_len = payload};
    size_t hl = fl_am_encode(buf, &m, args);
    for (size_t i = 0; i < payload; i++)
        buf[hl + i] = (uint8_t)(i * 31 + 7);
    return hl + payload;
}

static void am_seeds(void)
{
    static uint8_t buf[FLIT_AM_MAX_MEDIUM + FL_AM_MAX_HDR];
    struct {
        const char *name;
        uint8_t op, flags;
        unsigned nargs;
        uint16_t aux;
        uint64_t base, total, piece;
        size_t payload;
    } s[] = {
        {"short-0", FL_OP_AM_SHORT, 0, 0, 0, 0, 0, 0, 0},
        {"short-9", FL_OP_AM_SHORT, 0, 9, 0, 0, 0, 0, 0},
        {"short-16-reply", FL_OP_AM_SHORT, FL_AMF_REPLY, 16, 0, 0, 0, 0, 0},
        {"medium-0", FL_OP_AM_MEDIUM, 0, 0, 0, 0, 0, 0, 0},
        {"medium-100", FL_OP_AM_MEDIUM, 0, 3, 0, 0, 0, 0, 100},
        {"medium-max", FL_OP_AM_MEDIUM, FL_AMF_REPLY, 16, 0, 0, 0, 0, FLIT_AM_MAX_MEDIUM},
        {"long", FL_OP_AM_LONG, 0, 4, 0, 4096, 100000, 0, 0},
        {"frag-first", FL_OP_AM_FRAG, 0, 0, 0, 0, 100000, 0, 32768},
        {"frag-last", FL_OP_AM_FRAG, FL_AMF_FINAL, 5, 0, 64, 1000, 900, 100},
        {"frag-whole-reply", FL_OP_AM_FRAG, FL_AMF_FINAL | FL_AMF_REPLY, 2, 0, 0, 10, 0,
         10},
        {"return", FL_OP_RETURN, 0, 0, FLIT_ERR_NO_HANDLER, 0, 0, 0, 48},
        {"return-reply", FL_OP_RETURN, FL_AMF_REPLY, 0, FLIT_ERR_BAD_TAG, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        size_t len = am_packet(buf, s[i].op, s[i].flags, s[i].nargs, s[i].aux, s[i].base,
                               s[i].total, s[i].piece, s[i].payload);
        struct fl_am_msg m;
        if (fl_am_decode(buf, len, &m) != FLIT_OK) {
            fprintf(stderr, "fuzz_seeds: AM seed %s does not decode\n", s[i].name);
            exit(1);
        }
        save("am_decode", s[i].name, buf, len);
    }
}

/* ---- channel datagrams ---- */

struct chunk_spec {
    uint8_t lane, flags;
    uint16_t len;
    uint32_t seq;
    int am; /* the bytes are an AM short request */
};

/* A datagram from src to rank 0 (key 0: the chan_recv script fixes it). */
static size_t datagram(uint8_t *buf, uint8_t kind, uint32_t src, uint64_t key,
                       const uint32_t ack_next[2], const uint64_t sack[2],
                       const struct chunk_spec *c, unsigned n)
{
    struct fl_chan_hdr h = {.kind = kind,
                            .nchunks = (uint16_t)n,
                            .src = src,
                            .dst = 0,
                            .key = key,
                            .ts = 1001,
                            .ts_echo = 0,
                            .echo_delay = 0};
    for (unsigned l = 0; l < FL_LANES; l++) {
        h.ack[l].next = ack_next ? ack_next[l] : 0;
        h.ack[l].words = sack && sack[l] ? 1 : 0;
        h.ack[l].sack[0] = sack ? sack[l] : 0;
    }
    size_t pos = fl_chan_encode_hdr(buf, &h);
    for (unsigned i = 0; i < n; i++) {
        struct fl_chan_chunk ch = {
            .lane = c[i].lane, .flags = c[i].flags, .len = c[i].len, .seq = c[i].seq};
        fl_chan_encode_chunk(buf + pos, &ch);
        uint8_t *d = buf + pos + FL_CHAN_CHUNK_HDR;
        size_t size = fl_chan_chunk_size(c[i].len);
        memset(d, 0, size - FL_CHAN_CHUNK_HDR);
        if (c[i].am && c[i].len >= 32) {
            uint32_t args[3] = {c[i].seq, c[i].len, src};
            size_t hl = fl_am_encode_short(d, c[i].lane == FL_LANE_REP, 1, 0, args, 3);
            (void)hl;
        } else {
            for (size_t k = 0; k < c[i].len; k++)
                d[k] = (uint8_t)(k + c[i].seq);
        }
        pos += size;
    }
    return pos;
}

static void chan_decode_seeds(void)
{
    static uint8_t buf[65536];
    static struct chunk_spec many[FL_CHAN_MAX_CHUNKS];
    static const uint32_t next[2] = {5, 9};
    static const uint64_t sack[2] = {0x5, 0x8000000000000001ull};
    struct chunk_spec one = {0, FL_CHAN_FIRST | FL_CHAN_LAST, 32, 0, 1};
    struct chunk_spec three[3] = {
        {0, FL_CHAN_FIRST, 0, 7, 0}, {0, 0, 7, 8, 0}, {1, FL_CHAN_LAST, 100, 3, 0}};
    struct chunk_spec small = {1, FL_CHAN_FIRST | FL_CHAN_LAST, 1400, 12, 0};
    struct chunk_spec large = {0, FL_CHAN_FIRST, 65440, 1, 0};
    for (unsigned i = 0; i < FL_CHAN_MAX_CHUNKS; i++)
        many[i] = (struct chunk_spec){(uint8_t)(i & 1), FL_CHAN_FIRST | FL_CHAN_LAST, 0,
                                      i / 2, 0};
    uint64_t key = 0x0123456789abcdefull;
    save("chan_decode", "ping", buf,
         datagram(buf, FL_CHAN_PING, 1, key, next, sack, NULL, 0));
    save("chan_decode", "data-1", buf,
         datagram(buf, FL_CHAN_DATA, 1, key, next, NULL, &one, 1));
    save("chan_decode", "data-3", buf,
         datagram(buf, FL_CHAN_DATA, 2, key, NULL, sack, three, 3));
    save("chan_decode", "data-256", buf,
         datagram(buf, FL_CHAN_DATA, 3, key, next, sack, many, FL_CHAN_MAX_CHUNKS));
    save("chan_decode", "data-1400", buf,
         datagram(buf, FL_CHAN_DATA, 1, key, NULL, NULL, &small, 1));
    size_t len = datagram(buf, FL_CHAN_DATA, 1, key, next, NULL, &large, 1);
    if (len > 65507) {
        fprintf(stderr, "fuzz_seeds: the large datagram is %zu bytes\n", len);
        exit(1);
    }
    save("chan_decode", "data-65440", buf, len);
}

/* ---- chan_recv scripts ---- */

struct script {
    uint8_t buf[1 << 17];
    size_t len;
};

static void op_dgram(struct script *s, uint8_t who, const uint8_t *d, size_t len)
{
    s->buf[s->len++] = FUZZ_OP_DGRAM << 6;
    s->buf[s->len++] = who;
    fl_put16(s->buf + s->len, (uint16_t)len);
    s->len += 2;
    memcpy(s->buf + s->len, d, len);
    s->len += len;
}

static void op_send(struct script *s, uint8_t dst, uint8_t lane, uint16_t len, int more)
{
    s->buf[s->len++] = FUZZ_OP_SEND << 6;
    s->buf[s->len++] = dst;
    s->buf[s->len++] = lane;
    fl_put16(s->buf + s->len, len);
    s->len += 2;
    s->buf[s->len++] = more ? 1 : 0;
}

static void op_poll(struct script *s, uint8_t mask)
{
    s->buf[s->len++] = (uint8_t)(FUZZ_OP_POLL << 6 | mask);
}

static void op_arm(struct script *s)
{
    s->buf[s->len++] = FUZZ_OP_ARM << 6;
}

/* A datagram of src carrying the AM requests seq .. seq+n-1 on lane. */
static size_t requests(uint8_t *d, uint32_t src, uint8_t lane, uint32_t seq, unsigned n,
                       const uint32_t ack[2], const uint64_t sack[2])
{
    struct chunk_spec c[8];
    for (unsigned i = 0; i < n && i < 8; i++)
        c[i] = (struct chunk_spec){lane, FL_CHAN_FIRST | FL_CHAN_LAST, 32, seq + i, 1};
    return datagram(d, FL_CHAN_DATA, src, 0, ack, sack, c, n < 8 ? n : 8);
}

static void chan_recv_seeds(void)
{
    static struct script s;
    static uint8_t d[65536];
    const uint8_t fix1 = 1 | FUZZ_FIX_HEADER, fix2 = 2 | FUZZ_FIX_HEADER;
    static const uint32_t ack_setup[2] = {1, 0}; /* our first packet arrived */

    /* One request, in order, acknowledging our packet. */
    s.len = 0;
    s.buf[s.len++] = 0;
    op_dgram(&s, fix1, d, requests(d, 1, FL_LANE_REQ, 0, 1, ack_setup, NULL));
    op_poll(&s, 0);
    save("chan_recv", "in-order", s.buf, s.len);

    /* A packet in three chunks (1472-byte datagrams) arriving 2, 0, 1, then
       0 again; a handler that replies and polls. */
    s.len = 0;
    s.buf[s.len++] = FUZZ_SETUP_SMALL_MTU | FUZZ_SETUP_NEST;
    struct chunk_spec part[3] = {
        {0, FL_CHAN_FIRST, 1400, 0, 0}, {0, 0, 1400, 1, 0}, {0, FL_CHAN_LAST, 600, 2, 0}};
    op_dgram(&s, fix1, d, datagram(d, FL_CHAN_DATA, 1, 0, NULL, NULL, &part[2], 1));
    op_dgram(&s, fix1, d, datagram(d, FL_CHAN_DATA, 1, 0, NULL, NULL, &part[0], 1));
    op_poll(&s, 0);
    op_dgram(&s, fix1, d, datagram(d, FL_CHAN_DATA, 1, 0, NULL, NULL, &part[1], 1));
    op_dgram(&s, fix1, d, datagram(d, FL_CHAN_DATA, 1, 0, NULL, NULL, &part[0], 1));
    op_dgram(&s, fix2, d, requests(d, 2, FL_LANE_REQ, 0, 2, NULL, NULL));
    op_poll(&s, 0);
    op_arm(&s);
    save("chan_recv", "reassembly", s.buf, s.len);

    /* Both peers, both lanes, with reordering and duplication injected, our
       sends in between (some held back with FL_COMMIT_MORE), selective
       acknowledgements. */
    s.len = 0;
    s.buf[s.len++] = FUZZ_SETUP_REORDER | FUZZ_SETUP_DUP | FUZZ_SETUP_NEST;
    static const uint64_t sack[2] = {0x3, 0};
    for (uint32_t k = 0; k < 6; k++) {
        op_send(&s, (uint8_t)(k % 2), (uint8_t)(k % 3 == 0), (uint16_t)(100 * k), k % 2);
        op_dgram(&s, fix1, d, requests(d, 1, FL_LANE_REQ, 2 * k, 2, ack_setup, sack));
        op_dgram(&s, fix2, d, requests(d, 2, (uint8_t)(k % 2), k, 1, NULL, NULL));
        if (k % 2)
            op_poll(&s, 0);
    }
    op_poll(&s, 0);
    op_arm(&s);
    save("chan_recv", "faults", s.buf, s.len);

    /* Strangers, garbage, a ping, a reply-lane-only poll. */
    s.len = 0;
    s.buf[s.len++] = FUZZ_SETUP_DROP | FUZZ_SETUP_NEST;
    op_dgram(&s, FUZZ_SRC_STRANGER | FUZZ_FIX_HEADER, d,
             requests(d, 1, FL_LANE_REQ, 0, 1, NULL, NULL));
    memset(d, 0xee, 200);
    op_dgram(&s, 1, d, 200);
    op_dgram(&s, fix1, d, datagram(d, FL_CHAN_PING, 1, 0, ack_setup, NULL, NULL, 0));
    op_dgram(&s, fix1, d, requests(d, 1, FL_LANE_REP, 0, 3, NULL, NULL));
    op_poll(&s, FL_LANE_MASK(FL_LANE_REP));
    op_send(&s, 0, 0, 65000, 0);
    op_poll(&s, 0);
    op_arm(&s);
    save("chan_recv", "strangers", s.buf, s.len);
}

/* ---- chan_order scripts ---- */

/* A chan_order datagram op: peer 1 + p, lane, n chunks, first sequence
   number rel from the next expected; acks of our packets. */
static void order_dgram(struct script *s, unsigned p, unsigned lane, unsigned n, int rel,
                        uint16_t ack_req)
{
    s->buf[s->len++] = FUZZ_OP_DGRAM << 6;
    s->buf[s->len++] = (uint8_t)(p | lane << 1 | (n - 1) << 2);
    s->buf[s->len++] = (uint8_t)(int8_t)rel;
    fl_put16(s->buf + s->len, ack_req);
    fl_put16(s->buf + s->len + 2, 0);
    s->buf[s->len + 4] = 0;
    s->len += 5;
}

static void chan_order_seeds(void)
{
    static struct script s;
    /* In order, both peers and lanes. */
    s.len = 0;
    s.buf[s.len++] = 0;
    for (unsigned k = 0; k < 8; k++)
        order_dgram(&s, k % 2, (k / 2) % 2, 1 + k % 3, 0, 1);
    op_poll(&s, 0);
    save("chan_order", "in-order", s.buf, s.len);

    /* Out of order, repeated, late: what arrives ahead waits for the hole. */
    s.len = 0;
    s.buf[s.len++] = FUZZ_SETUP_NEST;
    order_dgram(&s, 0, 0, 2, 2, 0);  /* 2, 3 */
    order_dgram(&s, 0, 0, 2, 0, 0);  /* 0, 1: then 2, 3 come out */
    order_dgram(&s, 0, 0, 2, -4, 0); /* 0, 1 again: duplicates */
    op_poll(&s, 0);
    order_dgram(&s, 1, 1, 3, 1, 0);
    order_dgram(&s, 1, 1, 1, 0, 0);
    op_send(&s, 1, 0, 100, 1);
    op_poll(&s, FL_LANE_MASK(FL_LANE_REP));
    op_poll(&s, 0);
    op_arm(&s);
    save("chan_order", "holes", s.buf, s.len);

    /* Everything at once: injected reordering, duplication and loss, and
       handlers that reply and poll. */
    s.len = 0;
    s.buf[s.len++] =
        FUZZ_SETUP_REORDER | FUZZ_SETUP_DUP | FUZZ_SETUP_DROP | FUZZ_SETUP_NEST;
    for (unsigned k = 0; k < 24; k++) {
        order_dgram(&s, k % 2, k % 5 == 0, 1 + k % 4, (int)(k % 3) - 1,
                    (uint16_t)(k / 4));
        if (k % 4 == 3)
            op_poll(&s, 0);
        if (k % 6 == 5)
            op_send(&s, (uint8_t)k, 0, (uint16_t)(k * 10), 0);
    }
    op_poll(&s, 0);
    save("chan_order", "faults", s.buf, s.len);
}

/* ---- stream packets ---- */

static void stream_seeds(void)
{
    static uint8_t buf[FL_ST_FIRST_HDR + 65536] __attribute__((aligned(8)));
    struct {
        const char *name;
        uint8_t flags;
        uint64_t offset, total;
        uint32_t len;
    } s[] = {
        {"whole", FL_STF_FIRST | FL_STF_LAST, 0, 10, 10},
        {"empty-message", FL_STF_FIRST | FL_STF_LAST, 0, 0, 0},
        {"first", FL_STF_FIRST, 0, 100000, 100},
        {"first-large", FL_STF_FIRST, 0, 1u << 20, 60000},
        {"middle", 0, 100, 0, 200},
        {"last", FL_STF_LAST, 99900, 0, 100},
        {"continue-empty", 0, 4096, 0, 0},
        {"first-placeable", FL_STF_FIRST | FL_STF_PLACEABLE, 0, 1u << 20, 4096},
        {"placed", FL_STF_PLACED, 4096, 0, 1u << 19},
        {"placed-last", FL_STF_PLACED | FL_STF_LAST, 1u << 19, 0, 1u << 19},
        {"offer", FL_STF_OFFER, 4096, 0, (1u << 20) - 4096},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        /* a placed run and an offer are a header alone, naming no handler */
        bool bare = (s[i].flags & (FL_STF_PLACED | FL_STF_OFFER)) != 0;
        struct fl_st_pkt p = {.flags = s[i].flags,
                              .handler = bare ? 0 : 3,
                              .sid = 77 + (uint32_t)i,
                              .len = s[i].len,
                              .tag = 0x1122334455667788ull,
                              .offset = s[i].offset,
                              .total = s[i].total,
                              .place = bare ? 8192 : 0};
        size_t hl = fl_st_encode(buf, &p), size = hl + (bare ? 0 : p.len);
        for (size_t k = hl; k < size; k++)
            buf[k] = (uint8_t)((k - hl) * 7 + i);
        struct fl_st_pkt d;
        if (fl_st_decode(buf, size, &d) != FLIT_OK) {
            fprintf(stderr, "fuzz_seeds: stream seed %s does not decode\n", s[i].name);
            exit(1);
        }
        save("stream_decode", s[i].name, buf, size);
    }
}

/* ---- RMA packets ---- */

/* An RMA seed: the lane byte, then the packet. */
static void rma_seed(const char *name, struct fl_rma_pkt p)
{
    static uint8_t buf[1 + FL_RMA_HDR + FL_RMA_INFO_LEN + 4096]
        __attribute__((aligned(8)));
    static uint8_t pkt[FL_RMA_HDR + FL_RMA_INFO_LEN + 4096] __attribute__((aligned(8)));
    size_t hl = fl_rma_encode(pkt, &p);
    size_t len = p.kind == FL_RMA_IMPORT_REP ? hl : FL_RMA_HDR + p.len;
    for (size_t k = hl; k < len; k++)
        pkt[k] = (uint8_t)(k * 13 + 1);
    struct fl_rma_pkt d;
    if (fl_rma_decode(pkt, len, fl_rma_lane(p.kind), &d) != FLIT_OK) {
        fprintf(stderr, "fuzz_seeds: RMA seed %s does not decode\n", name);
        exit(1);
    }
    buf[0] = (uint8_t)fl_rma_lane(p.kind);
    memcpy(buf + 1, pkt, len);
    save("rma_decode", name, buf, 1 + len);
}

static void rma_seeds(void)
{
    const uint64_t id = 0x100000001ull;
    rma_seed("import-req",
             (struct fl_rma_pkt){.kind = FL_RMA_IMPORT_REQ, .op = 1, .id = id});
    rma_seed("import-rep", (struct fl_rma_pkt){.kind = FL_RMA_IMPORT_REP,
                                               .op = 1,
                                               .id = id,
                                               .total = 65536,
                                               .access = FLIT_RMA_READ | FLIT_RMA_WRITE,
                                               .info = {.vaddr = 0x7f0000001000ull,
                                                        .block = 3,
                                                        .file_off = 4096,
                                                        .file_len = 1 << 20,
                                                        .flags = FL_RMA_INFO_CTL}});
    rma_seed("import-rep-plain", (struct fl_rma_pkt){.kind = FL_RMA_IMPORT_REP,
                                                     .op = 2,
                                                     .id = id,
                                                     .total = 100,
                                                     .access = FLIT_RMA_READ,
                                                     .info = {.vaddr = 0x600000ull}});
    rma_seed("import-refused", (struct fl_rma_pkt){.kind = FL_RMA_IMPORT_REP,
                                                   .op = 3,
                                                   .id = id,
                                                   .status = FLIT_ERR_REVOKED});
    rma_seed("put-whole", (struct fl_rma_pkt){.kind = FL_RMA_PUT,
                                              .op = 4,
                                              .id = id,
                                              .flags = FL_RMAF_FIRST | FL_RMAF_LAST |
                                                       FL_RMAF_NOTIFY | FL_RMAF_ACK,
                                              .base = 64,
                                              .total = 100,
                                              .len = 100});
    rma_seed("put-first", (struct fl_rma_pkt){.kind = FL_RMA_PUT,
                                              .op = 5,
                                              .id = id,
                                              .flags = FL_RMAF_FIRST,
                                              .base = 8,
                                              .total = 10000,
                                              .len = 4096});
    rma_seed("put-middle", (struct fl_rma_pkt){.kind = FL_RMA_PUT,
                                               .op = 5,
                                               .id = id,
                                               .total = 10000,
                                               .piece = 4096,
                                               .len = 4096});
    rma_seed("put-last", (struct fl_rma_pkt){.kind = FL_RMA_PUT,
                                             .op = 5,
                                             .id = id,
                                             .flags = FL_RMAF_LAST,
                                             .total = 10000,
                                             .piece = 8192,
                                             .len = 1808});
    rma_seed("ack", (struct fl_rma_pkt){.kind = FL_RMA_ACK,
                                        .op = 4,
                                        .id = id,
                                        .base = 64,
                                        .total = 100,
                                        .status = FLIT_ERR_REVOKED});
    rma_seed("get-req",
             (struct fl_rma_pkt){
                 .kind = FL_RMA_GET_REQ, .op = 6, .id = id, .base = 16, .total = 5000});
    rma_seed("get-data", (struct fl_rma_pkt){.kind = FL_RMA_GET_DATA,
                                             .op = 6,
                                             .id = id,
                                             .total = 5000,
                                             .piece = 4096,
                                             .len = 904,
                                             .flags = FL_RMAF_LAST});
    rma_seed("get-data-first",
             (struct fl_rma_pkt){
                 .kind = FL_RMA_GET_DATA, .op = 6, .id = id, .total = 5000, .len = 4096});
    rma_seed("get-refused", (struct fl_rma_pkt){.kind = FL_RMA_GET_DATA,
                                                .op = 7,
                                                .id = id,
                                                .flags = FL_RMAF_LAST,
                                                .status = FLIT_ERR_INVALID_ARG});
    rma_seed("notify",
             (struct fl_rma_pkt){
                 .kind = FL_RMA_NOTIFY, .op = 8, .id = id, .base = 128, .total = 64});
    rma_seed("flush-req", (struct fl_rma_pkt){.kind = FL_RMA_FLUSH_REQ, .op = 9});
    rma_seed("flush-rep", (struct fl_rma_pkt){.kind = FL_RMA_FLUSH_REP, .op = 9});
}

/* ---- boot protocol streams ---- */

struct frames {
    uint8_t buf[1 << 14];
    size_t len;
};

/* Appends a frame of type with body; how: byte 0 (the input's piece sizes). */
static void frame(struct frames *f, uint8_t type, const void *body, size_t len)
{
    if (f->len == 0)
        f->buf[f->len++] = 0;
    fl_put32(f->buf + f->len, (uint32_t)len + 1);
    f->buf[f->len + 4] = type;
    if (len)
        memcpy(f->buf + f->len + 5, body, len);
    f->len += 5 + len;
}

static void hello(struct frames *f, uint32_t version)
{
    uint8_t h[FL_PROTO_HELLO_LEN], key[FL_PROTO_KEY_LEN];
    memset(key, 0x3c, sizeof key);
    fl_proto_hello_encode(h, 0x0123456789abcdefull, 2, 4242, key);
    fl_put32(h, version);
    frame(f, FL_PROTO_HELLO, h, sizeof h);
}

static void gather(struct frames *f, uint32_t round, size_t blob)
{
    uint8_t b[4 + 256];
    fl_put32(b, round);
    for (size_t k = 0; k < blob; k++)
        b[4 + k] = (uint8_t)(k + round);
    frame(f, FL_PROTO_GATHER, b, 4 + blob);
}

/* GATHERED: round, n, then n x (len, bytes). */
static void gathered(struct frames *f, uint32_t round, uint32_t n)
{
    uint8_t b[8 + 8 * (4 + 64)];
    size_t len = 8;
    fl_put32(b, round);
    fl_put32(b + 4, n);
    for (uint32_t r = 0; r < n && r < 8; r++) {
        uint32_t l = (r * 37u) % 64u;
        fl_put32(b + len, l);
        memset(b + len + 4, (int)r, l);
        len += 4 + l;
    }
    frame(f, FL_PROTO_GATHERED, b, len);
}

static void boot_seeds(void)
{
    static struct frames f;
    /* what a rank says: HELLO, two rounds, a dump, BYE; in pieces of 1..16 */
    f.len = 0;
    hello(&f, FL_PROTO_VERSION);
    gather(&f, 1, 40);
    frame(&f, FL_PROTO_DUMPED, NULL, 0);
    gather(&f, 2, 0);
    frame(&f, FL_PROTO_BYE, NULL, 0);
    f.buf[0] = 0x05;
    save("boot_frames", "rank", f.buf, f.len);
    /* what flitrun says: rounds and a dump, in pieces of up to 4096 */
    f.len = 0;
    gathered(&f, 1, 3);
    frame(&f, FL_PROTO_DUMP, NULL, 0);
    gathered(&f, 2, 8);
    f.buf[0] = 0x85;
    save("boot_frames", "flitrun", f.buf, f.len);
    /* a rank of another flit */
    f.len = 0;
    hello(&f, FL_PROTO_VERSION + 1);
    save("boot_frames", "hello-other-version", f.buf, f.len);
    /* a frame of length 0 after a HELLO: garbage */
    f.len = 0;
    hello(&f, FL_PROTO_VERSION);
    fl_put32(f.buf + f.len, 0);
    f.len += 4;
    save("boot_frames", "length-zero", f.buf, f.len);
    /* a frame that says 1000 bytes and stops after 10 */
    f.len = 0;
    gather(&f, 1, 8);
    fl_put32(f.buf + f.len, 1000);
    memset(f.buf + f.len + 4, 0x42, 10);
    f.len += 14;
    save("boot_frames", "cut-short", f.buf, f.len);
}

/* What srun --mpi=pmi2 answers, with the reader's byte in front. */
static void pmi2_seeds(void)
{
    static const char *const seeds[][2] = {
        {"len", "\00030    "},
        {"len-bad", "\0003 0   "},
        {"fullinit", "\001cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=1;"
                     "size=4;appnum=0;spawner-jobid=5.0;debugged=FALSE;pmiverbose=FALSE;"
                     "rc=0;"},
        {"get", "\001cmd=kvs-get-response;found=TRUE;value=00ff;;=x;rc=0;"},
        {"get-cut", "\001cmd=kvs-get-response;found=TRUE;value=a;;"},
        {"init", "\002cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0"},
        {"init-space", "\002cmd=response_to_init  rc=0 "},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        save("pmi2_decode", seeds[i][0], (const uint8_t *)seeds[i][1],
             strlen(seeds[i][1] + 1) + 1);
}

/* Byte 0 the job's size less one, then a packing of that many blobs. */
static void blobs_seeds(void)
{
    const uint32_t sizes[] = {1, 3, 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t n = sizes[i];
        size_t total = 0;
        for (uint32_t r = 0; r < n; r++)
            total += r % 3 * 5; /* 0, 5, 10, 0, ...: some empty */
        struct fl_blobs *b = fl_blobs_alloc(n, total);
        if (!b)
            abort();
        for (uint32_t r = 0; r < n; r++) {
            uint8_t data[10];
            memset(data, (int)(r + 1), sizeof data);
            fl_blobs_add(b, r, data, r % 3 * 5);
        }
        size_t len;
        uint8_t *p = fl_blobs_pack(b, &len), buf[512];
        if (!p || len + 1 > sizeof buf)
            abort();
        buf[0] = (uint8_t)(n - 1);
        memcpy(buf + 1, p, len);
        char name[32];
        snprintf(name, sizeof name, "ranks-%u", n);
        save("blobs_unpack", name, buf, len + 1);
        snprintf(name, sizeof name, "ranks-%u-cut", n);
        save("blobs_unpack", name, buf, len);
        free(p);
        fl_blobs_free(b);
    }
}

/* ---- the RPC, group and object layers' words ---- */

static void rpc_seed_am(const char *name, uint8_t how, uint64_t id, uint32_t word,
                        size_t payload)
{
    uint8_t buf[2 + 12 + 64];
    uint32_t a[3] = {(uint32_t)id, (uint32_t)(id >> 32), word};
    buf[0] = how;
    buf[1] = 3;
    memcpy(buf + 2, a, sizeof a);
    memset(buf + 14, 0x5a, payload);
    save("rpc_decode", name, buf, 14 + payload);
}

static void rpc_seed_hdr(const char *name, uint8_t how, uint64_t id, uint32_t word,
                         size_t payload)
{
    uint8_t buf[1 + RPC_HDR + 64];
    buf[0] = how;
    rpc_hdr(buf + 1, word, id);
    memset(buf + 1 + RPC_HDR, 0xa5, payload);
    save("rpc_decode", name, buf, 1 + RPC_HDR + payload);
}

static void rpc_decode_seeds(void)
{
    rpc_seed_am("am-request", 0, 1, 3, 0);
    rpc_seed_am("am-request-payload", 0, 0x100000001ull, 63, 40);
    rpc_seed_am("am-reply-ok", 2, 2, FLIT_OK, 16);
    rpc_seed_am("am-reply-no-memory", 2, 3, FLIT_ERR_NO_MEMORY, 0);
    rpc_seed_hdr("stream-request", 1, 4, 5, 32);
    rpc_seed_hdr("stream-reply", 3, 5, FLIT_OK, 64);
    rpc_seed_hdr("stream-reply-closed", 3, 6, FLIT_ERR_CLOSED, 0);
}

static void grp_seed(const char *name, uint32_t op, const uint32_t *rest, unsigned nrest,
                     uint32_t nbytes)
{
    uint8_t buf[1 + 4 * MAX_ARGS + 4];
    uint32_t a[MAX_ARGS] = {op_word((enum op)op), 42, 1};
    if (nrest) /* rest may be NULL then */
        memcpy(a + 3, rest, 4 * (size_t)nrest);
    unsigned n = 3 + nrest;
    buf[0] = (uint8_t)n;
    memcpy(buf + 1, a, 4 * (size_t)n);
    fl_put32(buf + 1 + 4 * n, nbytes);
    save("group_decode", name, buf, 1 + 4 * (size_t)n + 4);
}

static void group_decode_seeds(void)
{
    uint32_t frag[1] = {FRAG_MAX}, small[2] = {9, 1}, seqreq[3] = {10, 4, 2};
    uint32_t seq[3] = {10, 77, 0}, ack[2] = {5, 0}, state[3] = {3, 8, 0};
    uint32_t catchup[4] = {1, 0, 9, 0}, newview[3] = {9, 0, 2};
    uint32_t data[9] = {77, 0, 0, 1, 10, 100000, 0, 32768, 0};
    grp_seed("join", OP_JOIN, frag, 1, 0);
    grp_seed("ready", OP_READY, frag, 1, 0);
    grp_seed("small", OP_SMALL, small, 2, 300);
    grp_seed("seqreq", OP_SEQREQ, seqreq, 3, 0);
    grp_seed("seq", OP_SEQ, seq, 3, 0);
    grp_seed("data-first", OP_DATA, data, 9, 32768);
    data[7] = 98304; /* the last fragment, offset 3 * 32768 */
    grp_seed("data-last", OP_DATA, data, 9, 100000 - 98304);
    grp_seed("credreq", OP_CREDREQ, small, 1, 0);
    grp_seed("credit", OP_CREDIT, small, 1, 0);
    grp_seed("ack", OP_ACK, ack, 2, 0);
    grp_seed("leave", OP_LEAVE, NULL, 0, 0);
    grp_seed("done", OP_DONE, ack, 2, 0);
    grp_seed("fin", OP_FIN, NULL, 0, 0);
    grp_seed("closed", OP_CLOSED, NULL, 0, 0);
    grp_seed("query", OP_QUERY, small, 1, 0);
    grp_seed("state", OP_STATE, state, 3, 0);
    grp_seed("newview", OP_NEWVIEW, newview, 3, 0);
    grp_seed("catchup", OP_CATCHUP, catchup, 4, 0);
    grp_seed("caught", OP_CAUGHT, small, 1, 0);
    grp_seed("install", OP_INSTALL, NULL, 0, 0);
}

/* An object's group message: how, the total, the header (and epoch). */
static void obj_seed_msg(const char *name, uint8_t how, uint32_t op, size_t body)
{
    uint8_t buf[1 + 4 + 24];
    struct hdr h = {9, op, 0x1000};
    epoch_word e = 3;
    size_t hl = (how & 4) ? 24 : 16;
    buf[0] = how;
    fl_put32(buf + 1, (uint32_t)(hl + body));
    memcpy(buf + 5, &h, sizeof h);
    memcpy(buf + 5 + 16, &e, sizeof e);
    save("object_decode", name, buf, 5 + hl);
}

static void object_decode_seeds(void)
{
    obj_seed_msg("write", 0, 0, 100);
    obj_seed_msg("write-auto", 4, 2, 10);
    obj_seed_msg("part", 0, OP_PART, 8 + 60);
    obj_seed_msg("report", 4, OP_REPORT, 16);
    obj_seed_msg("switch", 4, OP_SWITCH, 8 + 24);
    obj_seed_msg("switch-packed", 4 | 16, OP_SWITCH, 8 + 1000);
    obj_seed_msg("place", 4, OP_PLACE, 8);
    obj_seed_msg("left", 4, OP_LEFT, 4);
    uint8_t part[1 + 12] = {1};
    uint64_t total = 100;
    fl_put32(part + 1, 8 + 60);
    memcpy(part + 5, &total, sizeof total);
    save("object_decode", "part-words", part, sizeof part);
    uint8_t mv[1 + 1 + 8] = {2 | 8, 4};
    struct move m = {FLIT_OBJECT_OWNED, 3};
    memcpy(mv + 2, &m, sizeof m);
    save("object_decode", "move-owned", mv, sizeof mv);
    uint8_t reply[1 + 4] = {3 | 4};
    uint32_t w = REDIRECT_BIT | 12;
    memcpy(reply + 1, &w, sizeof w);
    save("object_decode", "reply-redirect", reply, sizeof reply);
    w = FLIT_ERR_TOO_LARGE;
    memcpy(reply + 1, &w, sizeof w);
    save("object_decode", "reply-status", reply, sizeof reply);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    out_dir = argv[1];
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", out_dir, strerror(errno));
        return 1;
    }
    am_seeds();
    chan_decode_seeds();
    chan_recv_seeds();
    chan_order_seeds();
    stream_seeds();
    rma_seeds();
    boot_seeds();
    pmi2_seeds();
    blobs_seeds();
    rpc_decode_seeds();
    group_decode_seeds();
    object_decode_seeds();
    return 0;
}
