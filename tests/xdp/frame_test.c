/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The xdp transport's frame decoder (src/transport/xdp/frame.h), on what
 * the wire may bring: frames it wrote itself come back whole; every frame
 * cut short, every length that lies, a fragment, IP options, another
 * address or port, and a flipped byte anywhere past the Ethernet
 * addresses are refused, each with its verdict; and a seeded fuzz of
 * mutated and random frames (cuts, flips, overwritten fields) is never
 * accepted with a payload outside the frame, never read outside it (the
 * ASan tree runs this too).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/xdp/frame.h"

#define FUZZ_ROUNDS 200000
#define MAX_FRAME   2048

static int failures;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                         \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

static struct fl_xdp_end src = {{2, 0, 0, 0, 0, 1}, 0, 0};
static struct fl_xdp_end dst = {{2, 0, 0, 0, 0, 2}, 0, 0};

static size_t make(uint8_t *buf, size_t cap, const void *payload, size_t n)
{
    struct iovec iov[2] = {{(void *)payload, n / 2},
                           {(uint8_t *)payload + n / 2, n - n / 2}};
    return fl_xdp_frame_build(buf, cap, &src, &dst, 7, iov, 2);
}

static enum fl_xdp_verdict parse(const uint8_t *buf, size_t len, struct fl_xdp_rx *rx)
{
    return fl_xdp_frame_parse(buf, len, dst.ip, dst.port, rx);
}

static void roundtrip(void)
{
    uint8_t payload[1472], frame[MAX_FRAME];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    static const size_t sizes[] = {0, 1, 2, 7, 8, 63, 64, 1471, 1472};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k], len = make(frame, sizeof frame, payload, n);
        struct fl_xdp_rx rx;
        CHECK(len == FL_XDP_HDR + n, "built %zu bytes for %zu", len, n);
        CHECK(parse(frame, len, &rx) == FL_XDP_OK, "own frame of %zu refused", n);
        CHECK(rx.len == n && rx.off == FL_XDP_HDR && !memcmp(frame + rx.off, payload, n),
              "payload of %zu not returned whole", n);
        CHECK(rx.src_ip == src.ip && rx.src_port == src.port, "source wrong");
        /* Ethernet pads short frames to 60 bytes: the padding is not payload */
        uint8_t padded[MAX_FRAME + 64] = {0};
        memcpy(padded, frame, len);
        CHECK(parse(padded, len < 60 ? 60 : len + 4, &rx) == FL_XDP_OK && rx.len == n,
              "padded frame of %zu", n);
    }
    CHECK(make(frame, 100, payload, 100) == 0,
          "a payload larger than the frame was built");
}

/* Every cut of a frame is short; every flipped byte past the MACs refused. */
static void cuts_and_flips(void)
{
    uint8_t payload[200], frame[MAX_FRAME];
    memset(payload, 0x5a, sizeof payload);
    size_t len = make(frame, sizeof frame, payload, sizeof payload);
    struct fl_xdp_rx rx;
    for (size_t cut = 0; cut < len; cut++) {
        enum fl_xdp_verdict v = parse(frame, cut, &rx);
        CHECK(v == FL_XDP_SHORT, "frame cut to %zu of %zu: verdict %d", cut, len, v);
    }
    for (size_t at = 0; at < len; at++)
        for (int bit = 0; bit < 8; bit++) {
            frame[at] ^= (uint8_t)(1u << bit);
            enum fl_xdp_verdict v = parse(frame, len, &rx);
            CHECK(at < 12 ? v == FL_XDP_OK : v != FL_XDP_OK,
                  "byte %zu bit %d flipped: verdict %d", at, bit, v);
            frame[at] ^= (uint8_t)(1u << bit);
        }
}

/* A field of the headers set to a value that must be refused. */
struct field_case {
    const char *what;
    size_t at;
    uint8_t value[2];
    size_t n;
    enum fl_xdp_verdict want;
};

static void bad_fields(void)
{
    static const struct field_case cases[] = {
        {"ARP ethertype", 12, {0x08, 0x06}, 2, FL_XDP_NOT_OURS},
        {"IPv6 version", 14, {0x65}, 1, FL_XDP_NOT_OURS},
        {"TCP protocol", 23, {6}, 1, FL_XDP_NOT_OURS},
        {"IP options (ihl 6)", 14, {0x46}, 1, FL_XDP_MALFORMED},
        {"ihl 4", 14, {0x44}, 1, FL_XDP_MALFORMED},
        {"more fragments", 20, {0x20, 0x00}, 2, FL_XDP_MALFORMED},
        {"fragment offset", 20, {0x00, 0x10}, 2, FL_XDP_MALFORMED},
        {"IP length past the frame", 16, {0x7f, 0xff}, 2, FL_XDP_SHORT},
        {"IP length under the headers", 16, {0x00, 0x1b}, 2, FL_XDP_MALFORMED},
        {"another destination address", 33, {99}, 1, FL_XDP_NOT_OURS},
        {"another port", 36, {0x12, 0x34}, 2, FL_XDP_NOT_OURS},
        {"UDP length too long", 38, {0x01, 0x00}, 2, FL_XDP_MALFORMED},
        {"UDP length too short", 38, {0x00, 0x07}, 2, FL_XDP_MALFORMED},
        {"IP checksum", 24, {0xde, 0xad}, 2, FL_XDP_CHECKSUM},
        {"UDP checksum", 40, {0xde, 0xad}, 2, FL_XDP_CHECKSUM},
    };
    uint8_t payload[100], frame[MAX_FRAME];
    memset(payload, 0xa5, sizeof payload);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct field_case *c = &cases[i];
        size_t len = make(frame, sizeof frame, payload, sizeof payload);
        memcpy(frame + c->at, c->value, c->n);
        struct fl_xdp_rx rx;
        enum fl_xdp_verdict v = parse(frame, len, &rx);
        CHECK(v == c->want, "%s: verdict %d, want %d", c->what, v, c->want);
    }
    /* UDP checksum 0: "none", allowed for IPv4 */
    size_t len = make(frame, sizeof frame, payload, sizeof payload);
    frame[40] = frame[41] = 0;
    struct fl_xdp_rx rx;
    CHECK(parse(frame, len, &rx) == FL_XDP_OK, "a frame without UDP checksum refused");
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

/* Mutates a valid frame (or writes noise) into a buffer exactly len long,
   on the heap so that ASan sees a read past it. */
static void fuzz(void)
{
    uint8_t payload[1472], good[MAX_FRAME];
    unsigned accepted = 0;
    for (int round = 0; round < FUZZ_ROUNDS; round++) {
        size_t n = next() % sizeof payload;
        for (size_t i = 0; i < n; i++)
            payload[i] = (uint8_t)next();
        size_t len = make(good, sizeof good, payload, n);
        if (next() % 4 == 0)
            len = next() % (len + 1);
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf)
            exit(1);
        memcpy(buf, good, len);
        for (unsigned k = next() % 4; len && k > 0; k--)
            buf[next() % len] = (uint8_t)next();
        struct fl_xdp_rx rx;
        if (parse(buf, len, &rx) == FL_XDP_OK) {
            accepted++;
            CHECK(rx.off + rx.len <= len,
                  "accepted payload %zu+%zu past a %zu-byte frame", rx.off, rx.len, len);
        }
        free(buf);
    }
    CHECK(accepted > 0, "the fuzz accepted nothing: it tested only refusals");
    printf("fuzz: %d frames, %u accepted\n", FUZZ_ROUNDS, accepted);
}

int main(void)
{
    dst.ip = htonl(0x0a4d0102);
    dst.port = htons(40000);
    src.ip = htonl(0x0a4d0101);
    src.port = htons(40001);
    roundtrip();
    cuts_and_flips();
    bad_fields();
    fuzz();
    if (failures)
        return 1;
    printf("ok: frame decoder\n");
    return 0;
}
