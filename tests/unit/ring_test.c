/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The SPSC packet ring (src/transport/ring.c) in private memory:
 * byte-exact round trips of every size, FIFO order, 64-byte records,
 * padding at the end of the buffer, full-ring behaviour, the waiter flag,
 * reclaiming unconsumed packets, rejection of corrupted records, stale
 * bytes that must never pass for a record, a randomized comparison with a
 * queue model, and a two-thread stress.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ring.h"
#include "unit.h"

#define PAD_LEN 0xffffffffu

struct ring {
    void *mem;
    size_t size;
    struct fl_ring_tx tx;
    struct fl_ring_rx rx;
};

static void ring_open(struct ring *r, size_t size)
{
    r->size = size;
    r->mem = aligned_alloc(64, fl_ring_footprint(size));
    CHECK(r->mem != NULL);
    memset(r->mem, 0, fl_ring_footprint(size));
    fl_ring_tx_attach(&r->tx, r->mem, size);
    fl_ring_rx_attach(&r->rx, r->mem, size);
}

static void ring_close(struct ring *r)
{
    free(r->mem);
    r->mem = NULL;
}

/* The data area, after the control lines. */
static uint8_t *ring_data(struct ring *r)
{
    return (uint8_t *)r->mem + sizeof(struct fl_ring_ctl);
}

static uint64_t ring_tail(struct ring *r)
{
    return atomic_load(&r->tx.tail);
}

static uint64_t ring_head(struct ring *r)
{
    return atomic_load(&r->rx.head);
}

/* Record header fields at a data offset. */
static uint32_t rec_seq(struct ring *r, uint64_t off)
{
    uint32_t v;
    memcpy(&v, ring_data(r) + off, 4);
    return v;
}

static uint32_t rec_len(struct ring *r, uint64_t off)
{
    uint32_t v;
    memcpy(&v, ring_data(r) + off + 4, 4);
    return v;
}

static void rec_write(struct ring *r, uint64_t off, uint32_t seq, uint32_t len)
{
    memcpy(ring_data(r) + off, &seq, 4);
    memcpy(ring_data(r) + off + 4, &len, 4);
}

/* The marker a record at byte position pos carries (see ring.c). */
static uint32_t marker(uint64_t pos)
{
    return (uint32_t)(pos / FL_RING_LINE) + 1;
}

static uint8_t pattern(uint32_t id, size_t i)
{
    return (uint8_t)(id * 131u + i * 7u + (i >> 8));
}

static void fill(uint8_t *buf, size_t len, uint32_t id)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(id, i);
}

static bool matches(const uint8_t *buf, size_t len, uint32_t id)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != pattern(id, i))
            return false;
    return true;
}

/* Sends buf gathered from up to three iovec pieces, as the transports do. */
static bool send_split(struct ring *r, const uint8_t *buf, size_t len)
{
    struct iovec iov[3];
    size_t a = len / 3, b = len / 2;
    iov[0] = (struct iovec){(void *)buf, a};
    iov[1] = (struct iovec){(void *)(buf + a), b - a};
    iov[2] = (struct iovec){(void *)(buf + b), len - b};
    return fl_ring_send(&r->tx, iov, 3, len);
}

static bool send_id(struct ring *r, size_t len, uint32_t id)
{
    static uint8_t buf[1 << 16];
    CHECK(len <= sizeof buf);
    fill(buf, len, id);
    return send_split(r, buf, len);
}

/* Peeks the head packet, checks it is (len, id), releases it. */
static void expect_id(struct ring *r, size_t len, uint32_t id)
{
    size_t got = (size_t)-1;
    uint8_t *p = fl_ring_peek(&r->rx, &got);
    if (!p)
        FAIL("expected packet %u of %zu bytes, ring empty (broken=%d)", id, len,
             r->rx.broken);
    if (got != len)
        FAIL("packet %u: length %zu, expected %zu", id, got, len);
    if (!matches(p, len, id))
        FAIL("packet %u of %zu bytes: contents differ", id, len);
    /* The packet starts 8 bytes into a 64-byte line of the data area. */
    CHECK((size_t)(p - ring_data(r)) % FL_RING_LINE == FL_RING_HDR);
    CHECK((uintptr_t)p % 8 == 0);
    fl_ring_release(&r->rx);
}

static void expect_empty(struct ring *r)
{
    size_t len = 12345;
    CHECK(!fl_ring_pending(&r->rx));
    CHECK(fl_ring_peek(&r->rx, &len) == NULL);
    CHECK(len == 12345);
    CHECK(!r->rx.broken);
}

/* ---------------------------------------------------------------- */

static void test_record_sizes(void)
{
    CHECK(fl_ring_record(0) == 64);
    CHECK(fl_ring_record(1) == 64);
    CHECK(fl_ring_record(56) == 64);
    CHECK(fl_ring_record(57) == 128);
    CHECK(fl_ring_record(120) == 128);
    CHECK(fl_ring_record(121) == 192);
    CHECK(fl_ring_record(2040) == 2048);
    for (size_t len = 0; len < 5000; len++) {
        uint64_t rec = fl_ring_record(len);
        CHECK(rec % FL_RING_LINE == 0);
        CHECK(rec >= len + FL_RING_HDR);
        CHECK(rec < len + FL_RING_HDR + FL_RING_LINE);
    }
    CHECK(fl_ring_max_packet(4096) == 2040);
    CHECK(fl_ring_footprint(4096) % 64 == 0);

    /* Packets of up to 56 bytes take one line each: 64 of them in 4 KiB,
       back to back. */
    struct ring r;
    ring_open(&r, 4096);
    for (uint32_t i = 0; i < 64; i++) {
        CHECK(send_id(&r, i % 57, i));
        CHECK(ring_tail(&r) == 64u * (i + 1));
    }
    CHECK(!send_id(&r, 0, 99));
    for (uint32_t i = 0; i < 64; i++) {
        size_t len;
        uint8_t *p = fl_ring_peek(&r.rx, &len);
        CHECK(p == ring_data(&r) + 64u * i + FL_RING_HDR);
        CHECK(len == i % 57);
        CHECK(matches(p, len, i));
        fl_ring_release(&r.rx);
        CHECK(ring_head(&r) == 64u * (i + 1));
    }
    expect_empty(&r);
    /* 57 bytes take two lines. */
    CHECK(send_id(&r, 57, 1));
    CHECK(ring_tail(&r) == 4096 + 128);
    expect_id(&r, 57, 1);
    ring_close(&r);
}

/* Every size from 0 to the maximum, one at a time: the ring wraps many times
   and pads wherever a record does not fit before the end. */
static void test_all_sizes(void)
{
    static const size_t sizes[] = {4096, 8192};
    for (size_t s = 0; s < 2; s++) {
        struct ring r;
        ring_open(&r, sizes[s]);
        size_t max = fl_ring_max_packet(sizes[s]);
        for (size_t len = 0; len <= max; len++) {
            CHECK(fl_ring_has_room(&r.tx, len));
            CHECK(send_id(&r, len, (uint32_t)len));
            CHECK(fl_ring_pending(&r.rx));
            expect_id(&r, len, (uint32_t)len);
            CHECK(ring_head(&r) == ring_tail(&r));
        }
        expect_empty(&r);
        ring_close(&r);
    }
}

/* Fill with a mix of sizes, drain, compare order; many rounds. */
static void test_fifo(void)
{
    struct ring r;
    ring_open(&r, 16384);
    uint64_t rng = 42;
    uint32_t next_send = 0, next_recv = 0;
    size_t lens[4096];
    for (int round = 0; round < 200; round++) {
        uint32_t first = next_send;
        for (;;) {
            size_t len = (size_t)(test_rand(&rng) % 700);
            if (!send_id(&r, len, next_send))
                break;
            lens[next_send % 4096] = len;
            next_send++;
            CHECK(next_send - first < 4096);
        }
        CHECK(next_send - first >= 16384 / 768);
        while (next_recv != next_send) {
            expect_id(&r, lens[next_recv % 4096], next_recv);
            next_recv++;
        }
        expect_empty(&r);
    }
    ring_close(&r);
}

/* A record that does not fit before the end of the buffer: a pad record
   fills the rest of the line run and the packet starts at offset 0. */
static void test_wrap_pad(void)
{
    struct ring r;
    ring_open(&r, 4096);
    /* Three records of 1024 bytes: tail at 3072. */
    for (uint32_t i = 0; i < 3; i++)
        CHECK(send_id(&r, 1016, i));
    CHECK(ring_tail(&r) == 3072);
    expect_id(&r, 1016, 0); /* head 1024 */
    /* 1500 bytes need 1536: 1024 of pad + 1536 = 2560 > 2048 free. */
    CHECK(!fl_ring_has_room(&r.tx, 1500));
    CHECK(!send_id(&r, 1500, 10));
    CHECK(ring_tail(&r) == 3072); /* nothing written */
    CHECK(rec_seq(&r, 3072) != marker(3072));
    /* ...though 1016 bytes still fit exactly at the end, without a pad. */
    CHECK(fl_ring_has_room(&r.tx, 1016));
    expect_id(&r, 1016, 1); /* head 2048 */
    CHECK(fl_ring_has_room(&r.tx, 1500));
    CHECK(send_id(&r, 1500, 10));
    CHECK(ring_tail(&r) == 4096 + 1536);
    /* The pad record at 3072, the packet at 0. */
    CHECK(rec_len(&r, 3072) == PAD_LEN);
    CHECK(rec_seq(&r, 3072) == marker(3072));
    CHECK(rec_len(&r, 0) == 1500);
    CHECK(rec_seq(&r, 0) == marker(4096));
    expect_id(&r, 1016, 2); /* head 3072: the pad is next */
    size_t len;
    uint8_t *p = fl_ring_peek(&r.rx, &len);
    CHECK(p == ring_data(&r) + FL_RING_HDR);
    CHECK(len == 1500 && matches(p, len, 10));
    fl_ring_release(&r.rx);
    CHECK(ring_head(&r) == 4096 + 1536);
    expect_empty(&r);

    /* A record ending exactly at the end of the buffer needs no pad. */
    for (uint32_t i = 0; i < 2; i++) {
        CHECK(send_id(&r, 504, 20 + i)); /* 512 each: 5632 .. 6656 */
        expect_id(&r, 504, 20 + i);
    }
    CHECK(ring_tail(&r) % 4096 == 2560);
    CHECK(send_id(&r, 1528, 30)); /* 1536: ends at 4096 exactly */
    CHECK(ring_tail(&r) == 8192);
    CHECK(send_id(&r, 0, 31)); /* next lap, offset 0 */
    CHECK(ring_tail(&r) == 8192 + 64);
    expect_id(&r, 1528, 30);
    expect_id(&r, 0, 31);
    expect_empty(&r);
    ring_close(&r);
}

/* A full ring refuses and keeps refusing until the consumer releases. */
static void test_full(void)
{
    struct ring r;
    ring_open(&r, 4096);
    CHECK(!fl_ring_pending(&r.rx));
    uint32_t n = 0;
    while (send_id(&r, 200, n)) { /* 256-byte records */
        n++;
        CHECK(n <= 16);
    }
    CHECK(n == 16);
    CHECK(fl_ring_tx_inflight(&r.tx) == 4096);
    for (int i = 0; i < 3; i++) {
        CHECK(!fl_ring_has_room(&r.tx, 0));
        CHECK(!send_id(&r, 0, 1000));
    }
    CHECK(fl_ring_pending(&r.rx));
    /* A peek alone gives nothing back. */
    size_t len;
    CHECK(fl_ring_peek(&r.rx, &len) != NULL);
    CHECK(fl_ring_pending(&r.rx));
    CHECK(!fl_ring_has_room(&r.tx, 0));
    fl_ring_release(&r.rx);
    /* One record of 256 bytes came back: 248 bytes fit, 249 do not. */
    CHECK(fl_ring_has_room(&r.tx, 248));
    CHECK(!fl_ring_has_room(&r.tx, 249));
    CHECK(send_id(&r, 248, n++));
    CHECK(!fl_ring_has_room(&r.tx, 0));
    CHECK(!send_id(&r, 0, 1001));
    for (uint32_t i = 1; i < n; i++)
        expect_id(&r, i == n - 1 ? 248 : 200, i);
    expect_empty(&r);
    CHECK(fl_ring_tx_inflight(&r.tx) == 0);
    CHECK(fl_ring_has_room(&r.tx, fl_ring_max_packet(4096)));
    ring_close(&r);
}

/* The producer's "wake me on room" flag and its consumer-side check. */
static void test_waiter(void)
{
    struct ring r;
    ring_open(&r, 4096);
    CHECK(!fl_ring_take_waiter(&r.rx));
    /* With room, want_room answers true (and still leaves the flag). */
    CHECK(fl_ring_want_room(&r.tx, 100));
    CHECK(fl_ring_take_waiter(&r.rx));
    CHECK(!fl_ring_take_waiter(&r.rx));
    uint32_t n = 0;
    while (send_id(&r, 500, n))
        n++;
    CHECK(n == 8);
    CHECK(!fl_ring_want_room(&r.tx, 500));
    CHECK(!fl_ring_want_room(&r.tx, 0));
    expect_id(&r, 500, 0);
    CHECK(fl_ring_take_waiter(&r.rx)); /* cleared by the first take */
    CHECK(!fl_ring_take_waiter(&r.rx));
    CHECK(fl_ring_has_room(&r.tx, 500));
    CHECK(fl_ring_want_room(&r.tx, 500));
    CHECK(fl_ring_take_waiter(&r.rx));
    for (uint32_t i = 1; i < n; i++)
        expect_id(&r, 500, i);
    CHECK(!fl_ring_take_waiter(&r.rx));
    ring_close(&r);
}

struct walk {
    uint32_t ids[256];
    size_t lens[256];
    int n;
};

static void walk_fn(void *ctx, void *pkt, size_t len)
{
    struct walk *w = ctx;
    CHECK(w->n < 256);
    uint32_t id = 0;
    if (len >= 4)
        memcpy(&id, pkt, 4);
    w->ids[w->n] = id;
    w->lens[w->n++] = len;
}

/* Packets that carry their id in their first four bytes (len >= 4). */
static bool send_tagged(struct ring *r, size_t len, uint32_t id)
{
    uint8_t buf[4096];
    CHECK(len >= 4 && len <= sizeof buf);
    fill(buf, len, id);
    memcpy(buf, &id, 4);
    return send_split(r, buf, len);
}

static void test_walk(void)
{
    struct ring r;
    ring_open(&r, 4096);
    struct walk w = {.n = 0};
    fl_ring_walk_unconsumed(&r.tx, walk_fn, &w);
    CHECK(w.n == 0);

    /* Three packets, one consumed, then one that wraps behind a pad. */
    for (uint32_t i = 0; i < 3; i++)
        CHECK(send_tagged(&r, 1016, i));
    size_t len;
    CHECK(fl_ring_peek(&r.rx, &len) != NULL);
    fl_ring_release(&r.rx);
    CHECK(fl_ring_peek(&r.rx, &len) != NULL);
    fl_ring_release(&r.rx);
    CHECK(send_tagged(&r, 1500, 3)); /* pad at 3072, packet at 0 */
    CHECK(send_tagged(&r, 4, 4));
    CHECK(rec_len(&r, 3072) == PAD_LEN);
    /* Packet 2 peeked but not released is still unconsumed. */
    CHECK(fl_ring_peek(&r.rx, &len) != NULL);
    fl_ring_walk_unconsumed(&r.tx, walk_fn, &w);
    CHECK(w.n == 3);
    CHECK(w.ids[0] == 2 && w.lens[0] == 1016);
    CHECK(w.ids[1] == 3 && w.lens[1] == 1500);
    CHECK(w.ids[2] == 4 && w.lens[2] == 4);
    /* Afterwards the ring is empty for the producer... */
    CHECK(fl_ring_tx_inflight(&r.tx) == 0);
    CHECK(fl_ring_has_room(&r.tx, fl_ring_max_packet(4096)));
    w.n = 0;
    fl_ring_walk_unconsumed(&r.tx, walk_fn, &w);
    CHECK(w.n == 0);
    /* ...and for a consumer that attaches now; new packets flow again. */
    fl_ring_rx_attach(&r.rx, r.mem, 4096);
    expect_empty(&r);
    CHECK(send_id(&r, 77, 77));
    expect_id(&r, 77, 77);
    expect_empty(&r);

    /* A ring that went round many times and is full when walked. */
    uint32_t n = 0;
    while (send_tagged(&r, 100, 1000 + n))
        n++;
    w.n = 0;
    fl_ring_walk_unconsumed(&r.tx, walk_fn, &w);
    CHECK(w.n == (int)n);
    for (int i = 0; i < w.n; i++)
        CHECK(w.ids[i] == 1000u + (uint32_t)i && w.lens[i] == 100);
    CHECK(fl_ring_tx_inflight(&r.tx) == 0);
    ring_close(&r);
}

/* Walking records a dead consumer (or a scribbler) left garbled. */
static void test_walk_garbage(void)
{
    struct ring r;
    ring_open(&r, 4096);
    CHECK(send_tagged(&r, 100, 1));
    CHECK(send_tagged(&r, 100, 2));
    /* The second record's len is garbage: the walk stops before it. */
    rec_write(&r, 128, marker(128), 100000);
    struct walk w = {.n = 0};
    fl_ring_walk_unconsumed(&r.tx, walk_fn, &w);
    CHECK(w.n == 1 && w.ids[0] == 1);
    CHECK(fl_ring_tx_inflight(&r.tx) == 0);

    /* A len that would run past the end of the buffer. */
    CHECK(send_tagged(&r, 100, 3));        /* 256 .. 384 */
    rec_write(&r, 256, marker(256), 2040); /* 256 + 2048 fits: fine */
    w.n = 0;
    fl_ring_walk_unconsumed(&r.tx, walk_fn, &w);
    CHECK(w.n == 1 && w.lens[0] == 2040);
    CHECK(fl_ring_tx_inflight(&r.tx) == 0);

    /* A head the consumer scribbled on (ahead of the tail, or more than a
       ring behind it) is ignored. */
    static const int64_t skew[] = {64, -8192, 1 << 30};
    for (int i = 0; i < 3; i++) {
        CHECK(send_tagged(&r, 100, 4));
        atomic_store(&r.tx.ctl->head, ring_tail(&r) + (uint64_t)skew[i]);
        w.n = 0;
        fl_ring_walk_unconsumed(&r.tx, walk_fn, &w);
        CHECK(w.n == 0);
        CHECK(fl_ring_tx_inflight(&r.tx) == 0);
    }
    ring_close(&r);
}

/* A producer that writes garbage must not make the consumer read wild
   memory: the ring is declared broken instead. */
static void test_corruption(void)
{
    static const uint32_t bad_lens[] = {2041, 4096, 65536, 0x7fffffffu, 0xfffffffeu};
    for (size_t i = 0; i < sizeof bad_lens / sizeof bad_lens[0]; i++) {
        struct ring r;
        ring_open(&r, 4096);
        CHECK(send_id(&r, 100, 1));
        rec_write(&r, 0, marker(0), bad_lens[i]);
        CHECK(fl_ring_pending(&r.rx));
        size_t len = 777;
        CHECK(fl_ring_peek(&r.rx, &len) == NULL);
        CHECK(r.rx.broken);
        CHECK(len == 777);
        /* Abandoned for good, even once the record looks sane again. */
        rec_write(&r, 0, marker(0), 100);
        CHECK(fl_ring_peek(&r.rx, &len) == NULL);
        CHECK(len == 777 && r.rx.broken);
        ring_close(&r);
    }

    /* A legal size that would run past the end of the buffer. */
    struct ring r;
    ring_open(&r, 4096);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK(send_id(&r, 1016, i));
        expect_id(&r, 1016, i);
    }
    rec_write(&r, 3072, marker(3072), 1100); /* 3072 + 1152 > 4096 */
    size_t len;
    CHECK(fl_ring_peek(&r.rx, &len) == NULL);
    CHECK(r.rx.broken);
    ring_close(&r);

    /* A pad record at offset 0: a pad never starts a lap. */
    ring_open(&r, 4096);
    rec_write(&r, 0, marker(0), PAD_LEN);
    CHECK(fl_ring_peek(&r.rx, &len) == NULL);
    CHECK(r.rx.broken);
    ring_close(&r);

    /* A pad at the end followed by another pad at offset 0. */
    ring_open(&r, 4096);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK(send_id(&r, 1016, i));
        expect_id(&r, 1016, i);
    }
    rec_write(&r, 3072, marker(3072), PAD_LEN);
    rec_write(&r, 0, marker(4096), PAD_LEN);
    CHECK(fl_ring_peek(&r.rx, &len) == NULL);
    CHECK(r.rx.broken);
    ring_close(&r);

    /* A record of an earlier lap (wrong marker) is simply not there yet. */
    ring_open(&r, 4096);
    rec_write(&r, 0, marker(0) + 1, 8);
    expect_empty(&r);
    rec_write(&r, 0, 0, 8);
    expect_empty(&r);
    ring_close(&r);
}

/*
 * Bytes left in the buffer by an earlier lap must never pass for a record.
 * A packet's payload covers the first bytes of the lines after its own
 * first line; on the next lap one of those lines becomes a record start.
 * Until the producer writes that record, the consumer polling the head
 * sees the old payload bytes there. Payload is user data, so it may hold
 * exactly the marker the next record will carry.
 */
static void test_stale_payload(void)
{
    static const uint32_t fake_lens[] = {0, 5000};
    for (int k = 0; k < 2; k++) {
        struct ring r;
        ring_open(&r, 4096);
        /* Lap 1: a 200-byte packet at 0 covers lines 0..3. Its payload bytes
           56..63 are the first 8 bytes of line 1. */
        uint8_t buf[200];
        memset(buf, 0xab, sizeof buf);
        uint32_t m = marker(4096 + 64), l = fake_lens[k];
        memcpy(buf + 56, &m, 4);
        memcpy(buf + 60, &l, 4);
        struct iovec iov = {buf, sizeof buf};
        CHECK(fl_ring_send(&r.tx, &iov, 1, sizeof buf));
        size_t len;
        CHECK(fl_ring_peek(&r.rx, &len) != NULL && len == 200);
        fl_ring_release(&r.rx);
        /* The rest of lap 1 in one-line packets. */
        for (uint32_t i = 0; ring_tail(&r) < 4096; i++) {
            CHECK(send_id(&r, 0, i));
            expect_id(&r, 0, i);
        }
        /* Lap 2: one one-line packet at offset 0; the head moves to line 1. */
        CHECK(send_id(&r, 0, 9));
        expect_id(&r, 0, 9);
        CHECK(ring_head(&r) == 4096 + 64);
        /* Nothing was sent since: the ring is empty. */
        bool pending = fl_ring_pending(&r.rx);
        uint8_t *p = fl_ring_peek(&r.rx, &len);
        if (pending || p != NULL || r.rx.broken)
            SOFT_FAIL("stale payload bytes at offset 64 (\"%u, %u\") read as a record "
                      "after the ring wrapped: pending=%d, peek %s, broken=%d",
                      m, l, pending, p ? "returned a phantom packet" : "NULL",
                      r.rx.broken);
        ring_close(&r);
    }
}

/*
 * The same at every size and position, in a ring whose map of payload
 * lines spans many words: every packet carries, at each of its lines'
 * starts, the marker the next lap's record there would carry (and a
 * plausible length). Packets of random lengths, each consumed at once;
 * after each the ring must be empty, and a packet must come back as sent.
 */
static void test_stale_payload_lines(void)
{
    const size_t size = 1u << 16;
    static uint8_t buf[1u << 16], got[1u << 16];
    struct ring r;
    ring_open(&r, size);
    uint64_t rng = 11, steps = test_scaled(20000);
    size_t max = fl_ring_max_packet(size);
    for (uint64_t step = 0; step < steps; step++) {
        uint64_t x = test_rand(&rng);
        size_t len = (x & 3) ? (size_t)((x >> 8) % 4096) : (size_t)((x >> 8) % (max + 1));
        uint64_t tail = ring_tail(&r);
        if ((tail % size) + fl_ring_record(len) > size)
            tail += size - tail % size; /* it pads to the next lap */
        memset(buf, 0x5a, len);
        /* Payload byte o sits at tail + 8 + o: a line starts at o = 64k - 8. */
        for (size_t o = FL_RING_LINE - 8; o + 8 <= len; o += FL_RING_LINE) {
            uint32_t m = marker(tail + 8 + o + size), l = 8;
            memcpy(buf + o, &m, 4);
            memcpy(buf + o + 4, &l, 4);
        }
        struct iovec iov = {buf, len};
        CHECK(fl_ring_send(&r.tx, &iov, 1, len));
        size_t n = (size_t)-1;
        uint8_t *p = fl_ring_peek(&r.rx, &n);
        if (!p || n != len)
            FAIL("step %llu: sent %zu bytes, peek gave %s of %zu",
                 (unsigned long long)step, len, p ? "a packet" : "nothing", n);
        memcpy(got, p, n);
        fl_ring_release(&r.rx);
        if (memcmp(got, buf, len) != 0)
            FAIL("step %llu: a packet of %zu bytes came back changed",
                 (unsigned long long)step, len);
        if (fl_ring_pending(&r.rx) || fl_ring_peek(&r.rx, &n) != NULL || r.rx.broken)
            FAIL("step %llu: after a packet of %zu bytes at %llu, stale payload read "
                 "as a record (broken=%d)",
                 (unsigned long long)step, len, (unsigned long long)tail, r.rx.broken);
    }
    ring_close(&r);
}

/*
 * A ring declared broken is abandoned: nothing is pending on it any more.
 * The transports' arm() asks fl_ring_pending whether it is safe to sleep;
 * if an abandoned ring still says "pending", the endpoint can never sleep
 * again (flit_ep_arm answers FLIT_ERR_AGAIN for ever, flit_wait spins).
 */
static void test_broken_is_quiet(void)
{
    struct ring r;
    ring_open(&r, 4096);
    CHECK(send_id(&r, 100, 1));
    rec_write(&r, 0, marker(0), 5000);
    size_t len;
    CHECK(fl_ring_peek(&r.rx, &len) == NULL && r.rx.broken);
    if (fl_ring_pending(&r.rx))
        SOFT_FAIL("fl_ring_pending still reports a packet on a ring declared broken "
                  "(rx->broken set by fl_ring_peek)");
    ring_close(&r);
}

/* ---------------------------------------------------------------- model */

struct model {
    uint32_t ids[8192];
    size_t lens[8192];
    unsigned first, count;
};

/* Whether a record of len fits: what the ring must answer, from what was
   sent and released (tail and head positions kept here, not read). */
static bool model_fits(uint64_t tail, uint64_t head, size_t size, size_t len)
{
    uint64_t rec = fl_ring_record(len);
    uint64_t off = tail % size;
    uint64_t pad = off + rec > size ? size - off : 0;
    return tail + pad + rec - head <= size;
}

static void test_model(void)
{
    const size_t size = 8192;
    struct ring r;
    ring_open(&r, size);
    struct model *q = calloc(1, sizeof *q);
    CHECK(q != NULL);
    uint64_t rng = 7, tail = 0, head = 0;
    uint64_t heads[8192];
    uint32_t next = 0;
    uint64_t steps = test_scaled(400000), sent = 0, refused = 0;
    for (uint64_t step = 0; step < steps; step++) {
        uint64_t x = test_rand(&rng);
        unsigned op = (unsigned)(x % 100);
        if (op < 50) {
            /* Sizes: mostly small, sometimes up to the maximum. */
            size_t len = (x >> 8) % 4
                             ? (size_t)((x >> 16) % 120)
                             : (size_t)((x >> 16) % (fl_ring_max_packet(size) + 1));
            bool fits = model_fits(tail, head, size, len);
            CHECK(fl_ring_has_room(&r.tx, len) == fits);
            bool ok = send_id(&r, len, next);
            if (ok != fits)
                FAIL("step %llu: send of %zu bytes answered %d, model says %d",
                     (unsigned long long)step, len, ok, fits);
            if (ok) {
                uint64_t rec = fl_ring_record(len);
                uint64_t off = tail % size;
                tail += (off + rec > size ? size - off : 0) + rec;
                unsigned slot = (q->first + q->count++) % 8192;
                q->ids[slot] = next++;
                q->lens[slot] = len;
                heads[slot] = tail;
                CHECK(ring_tail(&r) == tail);
                sent++;
            } else {
                refused++;
            }
        } else if (op < 95) {
            CHECK(fl_ring_pending(&r.rx) == (q->count > 0));
            if (q->count == 0) {
                expect_empty(&r);
                continue;
            }
            unsigned slot = q->first;
            if (op < 55) { /* peek twice: the same packet */
                size_t len;
                uint8_t *p1 = fl_ring_peek(&r.rx, &len);
                uint8_t *p2 = fl_ring_peek(&r.rx, &len);
                CHECK(p1 != NULL && p1 == p2 && len == q->lens[slot]);
            }
            expect_id(&r, q->lens[slot], q->ids[slot]);
            head = heads[slot];
            CHECK(ring_head(&r) == head);
            q->first = (q->first + 1) % 8192;
            q->count--;
        } else {
            CHECK(fl_ring_tx_inflight(&r.tx) == tail - head);
        }
    }
    CHECK(sent > steps / 4 && refused > 100);
    while (q->count) {
        expect_id(&r, q->lens[q->first], q->ids[q->first]);
        q->first = (q->first + 1) % 8192;
        q->count--;
    }
    expect_empty(&r);
    free(q);
    ring_close(&r);
}

/* ---------------------------------------------------------------- threads */

#define STRESS_RING (64u << 10)
#define STRESS_MAX  512

struct stress {
    struct ring r;
    uint64_t n;
    uint64_t seed;
    _Atomic int failed;
};

/* Packet i: length and contents from a stream both threads replay. For
   len >= 8 it starts with the sequence number and a checksum of the rest. */
static size_t stress_packet(uint64_t *rng, uint32_t seq, uint8_t *buf)
{
    size_t len = (size_t)(test_rand(rng) % (STRESS_MAX + 1));
    uint64_t v = test_rand(rng);
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(v >> ((i & 7) * 8)) ^ (uint8_t)i;
    if (len >= 4)
        memcpy(buf, &seq, 4);
    if (len >= 8) {
        uint32_t sum = test_checksum(buf + 8, len - 8);
        memcpy(buf + 4, &sum, 4);
    }
    return len;
}

static void *stress_producer(void *arg)
{
    struct stress *s = arg;
    uint64_t rng = s->seed, spins = 0;
    uint8_t buf[STRESS_MAX];
    double last = unit_now();
    for (uint64_t i = 0; i < s->n && !atomic_load(&s->failed); i++) {
        size_t len = stress_packet(&rng, (uint32_t)i, buf);
        struct iovec iov = {buf, len};
        while (!fl_ring_send(&s->r.tx, &iov, 1, len)) {
            if (atomic_load(&s->failed))
                return NULL;
            /* Ask to be told about room now and then, as the transport does. */
            if ((spins & 255) == 0 && fl_ring_want_room(&s->r.tx, len))
                continue;
            unit_pause(&spins);
            if ((spins & 4095) == 0 && unit_now() - last > UNIT_HANG_S) {
                fprintf(stderr, "producer: no room for %.0f s at packet %llu\n",
                        UNIT_HANG_S, (unsigned long long)i);
                atomic_store(&s->failed, 1);
                return NULL;
            }
        }
        last = (i & 1023) == 0 ? unit_now() : last;
    }
    return NULL;
}

static void stress_consume(struct stress *s)
{
    uint64_t rng = s->seed, spins = 0;
    uint8_t want[STRESS_MAX];
    double last = unit_now();
    for (uint64_t i = 0; i < s->n; i++) {
        size_t wlen = stress_packet(&rng, (uint32_t)i, want);
        size_t len;
        uint8_t *p;
        while ((p = fl_ring_peek(&s->r.rx, &len)) == NULL) {
            if (s->r.rx.broken || atomic_load(&s->failed)) {
                atomic_store(&s->failed, 1);
                FAIL("packet %llu: ring broken=%d", (unsigned long long)i,
                     s->r.rx.broken);
            }
            unit_pause(&spins);
            if ((spins & 4095) == 0 && unit_now() - last > UNIT_HANG_S) {
                atomic_store(&s->failed, 1);
                FAIL("consumer: nothing for %.0f s at packet %llu", UNIT_HANG_S,
                     (unsigned long long)i);
            }
        }
        if (len != wlen || memcmp(p, want, len) != 0) {
            atomic_store(&s->failed, 1);
            uint32_t seq = 0;
            if (len >= 4)
                memcpy(&seq, p, 4);
            FAIL("packet %llu: got %zu bytes (seq %u), expected %zu bytes",
                 (unsigned long long)i, len, seq, wlen);
        }
        if (len >= 8) {
            uint32_t sum;
            memcpy(&sum, p + 4, 4);
            CHECK(sum == test_checksum(p + 8, len - 8));
        }
        fl_ring_release(&s->r.rx);
        if ((i & 63) == 0)
            (void)fl_ring_take_waiter(&s->r.rx);
        last = (i & 1023) == 0 ? unit_now() : last;
    }
    size_t len;
    CHECK(fl_ring_peek(&s->r.rx, &len) == NULL && !s->r.rx.broken);
}

static void test_threads(void)
{
    struct stress s = {.n = test_scaled(1000000), .seed = 0x5eed};
    atomic_init(&s.failed, 0);
    ring_open(&s.r, STRESS_RING);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, stress_producer, &s) == 0);
    stress_consume(&s);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(!atomic_load(&s.failed));
    CHECK(fl_ring_tx_inflight(&s.r.tx) == 0);
    ring_close(&s.r);
}

int main(void)
{
    test_record_sizes();
    test_all_sizes();
    test_fifo();
    test_wrap_pad();
    test_full();
    test_waiter();
    test_walk();
    test_walk_garbage();
    test_corruption();
    test_model();
    test_threads();
    test_stale_payload_lines();
    /* Last, and failing softly: each documents a defect of its own. */
    test_broken_is_quiet();
    test_stale_payload();
    return unit_exit_status();
}
