/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stream packet (src/stream/wire.c) and the receive side's state
 * machine (src/stream/recv.c) against packets no honest sender writes.
 *
 *  - Every field round-trips through fl_st_encode / fl_st_decode; every
 *    malformation answers FLIT_ERR_BAD_PACKET (short buffers, wrong version
 *    or opcode, unknown flags, reserved bytes, a length that disagrees with
 *    the packet, a first packet longer than its message, LAST in the wrong
 *    place, an offset that wraps; offers and placed runs with a payload,
 *    of nothing, with other flags, or wrapping); 200k mutated packets never
 *    crash it.
 *  - Fed straight to fl_stream_recv_packet on a real endpoint (a job of
 *    one): a continuation of a message nobody started, a second first
 *    packet for an id in progress, a packet out of place in its message,
 *    one on the reply lane: each is refused and counted, and the message
 *    in progress goes on intact; a handler that returns early has the rest
 *    of its message swallowed; the same id may start a new message once the
 *    old one is over; placed bytes nobody offered a place for and an offer
 *    on the request lane are refused, an offer for no message of ours is
 *    ignored; a pulled message whose address cannot be read falls back to
 *    packets, and an answer for no message of ours is refused.
 *  - PULL first packets and PULLED answers (with advice or none) round-trip;
 *    malformed ones (whole, placeable, later, with a payload, stray bits,
 *    advice unflagged or past its classes, ASK where no pull is) do not.
 */
#include <flit/stream.h>
#include <stdlib.h>
#include <string.h>

#include "core/ep.h"
#include "core/progress.h"
#include "rma/wire.h"
#include "stream/stream.h"
#include "unit.h"

/* A packet in a heap buffer of exactly its length (ASan sees overreads). */
static uint8_t *make(const struct fl_st_pkt *h, const void *payload, size_t *len)
{
    size_t hl = fl_st_hdr_len(h->flags);
    *len = hl + h->pad + h->len;
    uint8_t *b = malloc(*len);
    CHECK(b);
    CHECK(fl_st_encode(b, h) == hl);
    memset(b + hl, 0xa5, h->pad); /* never read */
    if (h->len)
        memcpy(b + hl + h->pad, payload, h->len);
    return b;
}

static void expect_bad(const uint8_t *b, size_t len, const char *what)
{
    uint8_t *copy = malloc(len ? len : 1);
    CHECK(copy);
    memcpy(copy, b, len);
    struct fl_st_pkt d;
    if (fl_st_decode(copy, len, &d) != FLIT_ERR_BAD_PACKET)
        FAIL("decoder accepted %s", what);
    free(copy);
}

static void test_decode(void)
{
    uint8_t data[100];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)i;
    struct fl_st_pkt h = {.flags = FL_STF_FIRST,
                          .handler = 7,
                          .sid = 99,
                          .len = 40,
                          .tag = 0x1122334455667788ull,
                          .total = 100};
    size_t len;
    uint8_t *b = make(&h, data, &len);
    struct fl_st_pkt d;
    CHECK_OK(fl_st_decode(b, len, &d));
    CHECK(d.flags == FL_STF_FIRST && d.handler == 7 && d.sid == 99 && d.len == 40 &&
          d.tag == h.tag && d.total == 100 && d.offset == 0);
    CHECK(d.payload == b + FL_ST_FIRST_HDR && memcmp(d.payload, data, 40) == 0);
    CHECK(((uintptr_t)d.payload & 7) == 0);

    expect_bad(b, FL_ST_HDR - 1, "a truncated header");
    expect_bad(b, len - 1, "a length one byte short");
    uint8_t save;
    struct {
        size_t at;
        uint8_t val;
        const char *what;
    } bytes[] = {
        {0, 2, "another version"},    {1, FL_OP_RMA, "another opcode"},
        {2, 0x80, "an unknown flag"}, {3, FL_ST_ALIGN, "a pad of a line"},
        {6, 1, "reserved bytes"},
    };
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        save = b[bytes[i].at];
        b[bytes[i].at] = bytes[i].val;
        expect_bad(b, len, bytes[i].what);
        b[bytes[i].at] = save;
    }
    free(b);

    /* Padded: the payload after the pad, for a first packet and another. */
    for (uint8_t pad = 1; pad < FL_ST_ALIGN; pad += 31) {
        struct fl_st_pkt ph = h;
        ph.pad = pad;
        b = make(&ph, data, &len);
        CHECK_OK(fl_st_decode(b, len, &d));
        CHECK(d.pad == pad && d.len == 40 && d.payload == b + FL_ST_FIRST_HDR + pad);
        CHECK(memcmp(d.payload, data, 40) == 0);
        expect_bad(b, len - pad, "a packet too short for its pad");
        free(b);
        ph = (struct fl_st_pkt){.flags = 0, .pad = pad, .len = 16, .offset = 40};
        b = make(&ph, data, &len);
        CHECK_OK(fl_st_decode(b, len, &d));
        CHECK(d.pad == pad && d.offset == 40 && d.payload == b + FL_ST_HDR + pad);
        free(b);
    }

    h.len = 100; /* the whole message, without LAST */
    b = make(&h, data, &len);
    expect_bad(b, len, "a first packet holding all of its message without LAST");
    free(b);
    h.total = 50; /* longer than its message */
    b = make(&h, data, &len);
    expect_bad(b, len, "a first packet longer than its message");
    free(b);
    h = (struct fl_st_pkt){.flags = FL_STF_FIRST | FL_STF_LAST, .len = 10, .total = 11};
    b = make(&h, data, &len);
    expect_bad(b, len, "LAST before the end");
    free(b);
    h = (struct fl_st_pkt){.flags = 0, .len = 16, .offset = UINT64_MAX - 8};
    b = make(&h, data, &len);
    expect_bad(b, len, "an offset that wraps");
    free(b);

    /* Mutations: never a crash, never a payload outside the packet. */
    uint64_t rng = 7;
    h = (struct fl_st_pkt){.flags = FL_STF_FIRST,
                           .handler = 1,
                           .sid = 3,
                           .len = 60,
                           .tag = 5,
                           .total = 1000};
    uint8_t *good = make(&h, data, &len);
    for (int i = 0; i < 200000; i++) {
        size_t n = len - test_rand(&rng) % 3;
        uint8_t *m = malloc(n);
        memcpy(m, good, n);
        for (int k = 0; k < 3; k++)
            m[test_rand(&rng) % n] ^= (uint8_t)(1u << (test_rand(&rng) % 8));
        if (fl_st_decode(m, n, &d) == FLIT_OK)
            CHECK(d.payload + d.len == m + n);
        free(m);
    }
    free(good);
}

/* Placed pieces: an offer and a PLACED packet are a header alone. */
static void test_place_decode(void)
{
    uint8_t b[FL_ST_FIRST_HDR + 1];
    struct fl_st_pkt d;
    struct fl_st_pkt offer = {
        .flags = FL_STF_OFFER, .sid = 9, .len = 4096, .offset = 100, .place = 640};
    CHECK(fl_st_encode(b, &offer) == FL_ST_FIRST_HDR);
    CHECK_OK(fl_st_decode(b, FL_ST_FIRST_HDR, &d));
    CHECK(d.flags == FL_STF_OFFER && d.sid == 9 && d.len == 4096 && d.offset == 100 &&
          d.place == 640 && d.payload == NULL);
    expect_bad(b, FL_ST_FIRST_HDR + 1, "an offer with a payload");
    expect_bad(b, FL_ST_HDR, "an offer cut short");
    struct fl_st_pkt placed = {
        .flags = FL_STF_PLACED | FL_STF_LAST, .sid = 9, .len = 500, .offset = 8};
    CHECK(fl_st_encode(b, &placed) == FL_ST_HDR);
    CHECK_OK(fl_st_decode(b, FL_ST_HDR, &d));
    CHECK(d.flags == (FL_STF_PLACED | FL_STF_LAST) && d.len == 500 && d.offset == 8 &&
          d.payload == NULL);
    expect_bad(b, FL_ST_HDR + 1, "a placed run with a payload");

    struct {
        struct fl_st_pkt h;
        const char *what;
    } bad[] = {
        {{.flags = FL_STF_OFFER, .len = 0, .offset = 1}, "an offer of nothing"},
        {{.flags = FL_STF_OFFER | FL_STF_LAST, .len = 1}, "an offer with LAST"},
        {{.flags = FL_STF_OFFER | FL_STF_FIRST, .len = 1}, "an offer and a first packet"},
        {{.flags = FL_STF_OFFER, .handler = 2, .len = 1}, "an offer naming a handler"},
        {{.flags = FL_STF_OFFER, .len = 16, .place = UINT64_MAX - 8},
         "an offer whose place wraps"},
        {{.flags = FL_STF_OFFER, .len = 16, .offset = UINT64_MAX - 8},
         "an offer whose range wraps"},
        {{.flags = FL_STF_PLACED, .len = 0, .offset = 1}, "a placed run of nothing"},
        {{.flags = FL_STF_PLACED, .pad = 8, .len = 1}, "a placed run with a pad"},
        {{.flags = FL_STF_PLACED | FL_STF_OFFER, .len = 1}, "placed and an offer"},
        {{.flags = FL_STF_PLACED, .len = 16, .offset = UINT64_MAX - 8},
         "a placed run that wraps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t hl = fl_st_encode(b, &bad[i].h);
        expect_bad(b, hl, bad[i].what);
    }
    /* PLACEABLE: on a first packet that does not hold its whole message. */
    uint8_t data[8] = {0};
    size_t len;
    struct fl_st_pkt h = {
        .flags = FL_STF_FIRST | FL_STF_PLACEABLE, .len = 8, .total = 100};
    uint8_t *p = make(&h, data, &len);
    CHECK_OK(fl_st_decode(p, len, &d));
    CHECK(d.flags == (FL_STF_FIRST | FL_STF_PLACEABLE));
    free(p);
    h = (struct fl_st_pkt){
        .flags = FL_STF_FIRST | FL_STF_LAST | FL_STF_PLACEABLE, .len = 8, .total = 8};
    p = make(&h, data, &len);
    expect_bad(p, len, "PLACEABLE on a whole message");
    free(p);
    h = (struct fl_st_pkt){.flags = FL_STF_PLACEABLE, .len = 8, .offset = 8};
    p = make(&h, data, &len);
    expect_bad(p, len, "PLACEABLE after the first packet");
    free(p);
}

/* A pulled message's first packet and its answer (wire.h). */
static void test_pull_decode(void)
{
    uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[FL_ST_FIRST_HDR + 1];
    size_t len;
    struct fl_st_pkt d, h = {.flags = FL_STF_FIRST | FL_STF_PULL,
                             .handler = 3,
                             .sid = 4,
                             .len = 8,
                             .tag = 5,
                             .total = 1u << 20,
                             .addr = 0x7f0000001000ull,
                             .key = 0x8badf00d12345678ull};
    uint8_t *p = make(&h, data, &len);
    CHECK(len == FL_ST_PULL_HDR + 8);
    CHECK_OK(fl_st_decode(p, len, &d));
    CHECK(d.flags == h.flags && d.addr == h.addr && d.key == h.key &&
          d.total == h.total && d.len == 8 && memcmp(d.payload, data, 8) == 0);
    expect_bad(p, len - 1, "a pulled first packet one byte short");
    free(p);
    struct {
        struct fl_st_pkt h;
        const char *what;
    } bad[] = {
        {{.flags = FL_STF_FIRST | FL_STF_PULL | FL_STF_LAST, .len = 8, .total = 8},
         "a pulled message whole in its first packet"},
        {{.flags = FL_STF_FIRST | FL_STF_PULL | FL_STF_PLACEABLE, .len = 8, .total = 99},
         "pulled and placeable"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = make(&bad[i].h, data, &len);
        expect_bad(p, len, bad[i].what);
        free(p);
    }
    /* PULL on a continuation: its header is a continuation's, flag set. */
    h = (struct fl_st_pkt){.len = 8, .offset = 8};
    p = make(&h, data, &len);
    p[2] |= FL_STF_PULL;
    expect_bad(p, len, "PULL after the first packet");
    free(p);
    struct fl_st_pkt ans = {
        .flags = FL_STF_PULLED, .sid = 4, .offset = 77, .resend = true};
    CHECK(fl_st_encode(b, &ans) == FL_ST_FIRST_HDR);
    CHECK_OK(fl_st_decode(b, FL_ST_FIRST_HDR, &d));
    CHECK(d.flags == FL_STF_PULLED && d.sid == 4 && d.offset == 77 && d.resend &&
          d.payload == NULL);
    expect_bad(b, FL_ST_FIRST_HDR + 1, "an answer with a payload");
    expect_bad(b, FL_ST_HDR, "an answer cut short");
    b[24] = 4; /* bits 0 and 1 only, below the advice */
    expect_bad(b, FL_ST_FIRST_HDR, "an answer with bit 2 of its word set");
    b[24] = 1;
    b[28] = 1; /* advice without bit 1 */
    expect_bad(b, FL_ST_FIRST_HDR, "an answer with advice but not its bit");
    b[24] = 3;
    b[31] = 1; /* past the 16 classes */
    expect_bad(b, FL_ST_FIRST_HDR, "an answer with advice past its classes");
    /* The receiver's advice round-trips, resend or not; none reads as none. */
    ans = (struct fl_st_pkt){
        .flags = FL_STF_PULLED, .sid = 9, .offset = 5, .advised = true, .advice = 0x8005};
    fl_st_encode(b, &ans);
    CHECK_OK(fl_st_decode(b, FL_ST_FIRST_HDR, &d));
    CHECK(!d.resend && d.advised && d.advice == 0x8005 && d.offset == 5);
    ans =
        (struct fl_st_pkt){.flags = FL_STF_PULLED, .sid = 9, .resend = true, .advice = 7};
    fl_st_encode(b, &ans); /* advice unflagged is not sent */
    CHECK_OK(fl_st_decode(b, FL_ST_FIRST_HDR, &d));
    CHECK(d.resend && !d.advised && d.advice == 0);
    /* ASK only on a pulled first packet */
    h = (struct fl_st_pkt){.flags = FL_STF_FIRST | FL_STF_PULL | FL_STF_ASK,
                           .len = 8,
                           .total = 1u << 16,
                           .addr = 64};
    p = make(&h, data, &len);
    CHECK_OK(fl_st_decode(p, len, &d));
    CHECK(d.flags == h.flags);
    free(p);
    h = (struct fl_st_pkt){.flags = FL_STF_FIRST | FL_STF_ASK, .len = 8, .total = 99};
    p = make(&h, data, &len);
    expect_bad(p, len, "ASK on a first packet not pulled");
    free(p);
    h = (struct fl_st_pkt){.len = 8, .offset = 8};
    p = make(&h, data, &len);
    p[2] |= FL_STF_ASK;
    expect_bad(p, len, "ASK after the first packet");
    free(p);
    struct fl_st_pkt odd[] = {
        {.flags = FL_STF_PULLED, .len = 1},
        {.flags = FL_STF_PULLED | FL_STF_LAST},
        {.flags = FL_STF_PULLED, .handler = 1},
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        fl_st_encode(b, &odd[i]);
        expect_bad(b, FL_ST_FIRST_HDR, "an answer with a length, LAST or a handler");
    }
}

/* ---- the state machine ---- */

static struct {
    uint8_t got[4096];
    size_t got_len, stop_after;
    int runs;
    flit_status last;
} rx;

static void on_msg(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    rx.runs++;
    size_t want = total < rx.stop_after ? total : rx.stop_after;
    rx.got_len = 0;
    while (rx.got_len < want) {
        size_t k = want - rx.got_len < 7 ? want - rx.got_len : 7;
        rx.last = flit_stream_recv(s, rx.got + rx.got_len, k);
        if (rx.last != FLIT_OK)
            return;
        rx.got_len += k;
    }
}

/* Feeds one crafted packet to the stream layer as rank 0 would send it. */
static void feed(flit_ep_t *ep, unsigned lane, uint8_t flags, uint32_t sid,
                 uint64_t offset_or_tag, uint64_t total, const uint8_t *data, uint32_t n)
{
    struct fl_st_pkt h = {.flags = flags,
                          .handler = 1,
                          .sid = sid,
                          .len = n,
                          .tag = offset_or_tag,
                          .offset = offset_or_tag,
                          .total = total};
    size_t len;
    uint8_t *b = make(&h, data, &len);
    fl_stream_recv_packet(ep, 0, lane, b, len);
    free(b);
}

static uint64_t refused(flit_ep_t *ep)
{
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    return s.refused_packets;
}

static void test_state(flit_ep_t *ep, uint64_t tag)
{
    uint8_t msg[300];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 3 + 1);
    rx.stop_after = SIZE_MAX;

    /* A continuation of a message nobody started. */
    uint64_t r0 = refused(ep);
    feed(ep, FL_LANE_REQ, 0, 5, 0, 0, msg, 10);
    CHECK(refused(ep) == r0 + 1 && rx.runs == 0);

    /* A message in three packets, with garbage in between. */
    feed(ep, FL_LANE_REQ, FL_STF_FIRST, 5, tag, 300, msg, 100);
    CHECK(rx.runs == 1); /* started, waiting on its fiber */
    feed(ep, FL_LANE_REQ, FL_STF_FIRST, 5, tag, 300, msg, 10); /* same id again */
    feed(ep, FL_LANE_REQ, 0, 5, 150, 0, msg + 150, 50);        /* out of place */
    feed(ep, FL_LANE_REQ, 0, 5, 100, 0, msg, 250);             /* past the end */
    feed(ep, FL_LANE_REP, 0, 5, 100, 0, msg + 100, 100);       /* wrong lane */
    CHECK(refused(ep) == r0 + 5);
    feed(ep, FL_LANE_REQ, 0, 5, 100, 0, msg + 100, 100);
    feed(ep, FL_LANE_REQ, FL_STF_LAST, 5, 200, 0, msg + 200, 100);
    CHECK(rx.runs == 1 && rx.last == FLIT_OK && rx.got_len == 300);
    CHECK(memcmp(rx.got, msg, 300) == 0);
    CHECK(refused(ep) == r0 + 5);

    /* The id is free again; a handler stopping early has the rest swallowed. */
    rx.stop_after = 20;
    feed(ep, FL_LANE_REQ, FL_STF_FIRST, 5, tag, 300, msg, 100);
    CHECK(rx.runs == 2 && rx.got_len == 20 && memcmp(rx.got, msg, 20) == 0);
    feed(ep, FL_LANE_REQ, 0, 5, 100, 0, msg + 100, 100);
    feed(ep, FL_LANE_REQ, FL_STF_LAST, 5, 200, 0, msg + 200, 100);
    CHECK(rx.runs == 2 && refused(ep) == r0 + 5);
    /* ... and after its last packet, the id is unknown once more. */
    feed(ep, FL_LANE_REQ, 0, 5, 300, 0, msg, 1);
    CHECK(refused(ep) == r0 + 6);

    /* Placed pieces nobody offered, an offer on the request lane: refused;
       an offer for a message we do not send: ignored (it may cross the
       message's last bytes). */
    r0 = refused(ep);
    rx.stop_after = SIZE_MAX;
    feed(ep, FL_LANE_REQ, FL_STF_FIRST | FL_STF_PLACEABLE, 8, tag, 300, msg, 100);
    CHECK(rx.runs == 3);
    struct fl_st_pkt pl = {.flags = FL_STF_PLACED, .sid = 8, .len = 100, .offset = 100};
    uint8_t hdr[FL_ST_FIRST_HDR];
    fl_st_encode(hdr, &pl);
    fl_stream_recv_packet(ep, 0, FL_LANE_REQ, hdr, FL_ST_HDR);
    CHECK(refused(ep) == r0 + 1);
    struct fl_st_pkt of = {.flags = FL_STF_OFFER, .sid = 8, .len = 100, .offset = 100};
    fl_st_encode(hdr, &of);
    fl_stream_recv_packet(ep, 0, FL_LANE_REQ, hdr, FL_ST_FIRST_HDR);
    CHECK(refused(ep) == r0 + 2);
    fl_stream_recv_packet(ep, 0, FL_LANE_REP, hdr, FL_ST_FIRST_HDR);
    CHECK(refused(ep) == r0 + 2);
    feed(ep, FL_LANE_REQ, FL_STF_LAST, 8, 100, 0, msg + 100, 200);
    CHECK(rx.runs == 3 && rx.last == FLIT_OK && rx.got_len == 300);
    CHECK(memcmp(rx.got, msg, 300) == 0);

    /* A pulled message whose address no transport reaches (a job of one:
       rank 0 is ourselves, over the self transport, which offers no get;
       as a forged address would be refused): the handler's recv asks for
       the rest in packets, and gets them intact; the answer coming back to
       us, for no message we wait on, is refused and counted. */
    r0 = refused(ep);
    rx.stop_after = SIZE_MAX;
    struct fl_st_pkt pf = {.flags = FL_STF_FIRST | FL_STF_PULL,
                           .handler = 1,
                           .sid = 9,
                           .len = 50,
                           .tag = tag,
                           .total = 300,
                           .addr = 16};
    size_t pflen;
    uint8_t *pp = make(&pf, msg, &pflen);
    fl_stream_recv_packet(ep, 0, FL_LANE_REQ, pp, pflen);
    free(pp);
    CHECK(rx.runs == 4 && rx.got_len < 300);
    feed(ep, FL_LANE_REQ, FL_STF_LAST, 9, 50, 0, msg + 50, 250);
    CHECK(rx.runs == 4 && rx.last == FLIT_OK && rx.got_len == 300);
    CHECK(memcmp(rx.got, msg, 300) == 0);
    flit_counter_t c;
    CHECK_OK(flit_ep_counter(ep, "stream.pull_refused", &c));
    CHECK(c.value == 1);
    for (int i = 0; i < 100 && refused(ep) == r0; i++)
        fl_progress(ep, FL_LANES_ALL);
    CHECK(refused(ep) == r0 + 1);

    /* One packet, the whole message: inline, no fiber. */
    flit_stats_t s0 = {.struct_size = sizeof s0}, s1 = {.struct_size = sizeof s1};
    CHECK_OK(flit_ep_stats(ep, &s0));
    rx.stop_after = SIZE_MAX;
    feed(ep, FL_LANE_REQ, FL_STF_FIRST | FL_STF_LAST, 6, tag, 77, msg, 77);
    CHECK_OK(flit_ep_stats(ep, &s1));
    CHECK(rx.runs == 5 && rx.got_len == 77 && memcmp(rx.got, msg, 77) == 0);
    CHECK(s1.stream_fibers == s0.stream_fibers);
}

int main(void)
{
    unit_clean_env();
    test_decode();
    test_place_decode();
    test_pull_decode();
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_stream_register(ep, flit_handler(1), on_msg, NULL));
    uint64_t tag;
    CHECK_OK(flit_ep_tag(ep, &tag));
    /* The crafted packets arrive as if from rank 0 during progress. */
    CHECK_OK(fl_ep_enter(ep));
    test_state(ep, tag);
    fl_ep_leave(ep);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    printf("stream_wire_test: OK\n");
    return 0;
}
