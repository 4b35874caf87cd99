/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliability channel's datagram (src/channel/wire.c, version 2):
 * headers with 0 .. FL_CHAN_SACK_WORDS selective words a lane and chunks
 * round-trip field for field, the header's size is what the encoder wrote,
 * and every malformation the decoder must catch answers FLIT_ERR_BAD_PACKET:
 * another version, an unknown kind, too many chunks, too many words, a
 * reserved byte set, words or chunks past the end, a bad lane or flag,
 * bytes after the last chunk.
 *
 * Datagrams under test live in heap buffers of exactly their length, so
 * that a read one byte too far is an ASan report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/wire.h"
#include "unit.h"

static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];

/* Builds a datagram: a header with words[l] selective words a lane, then n
   chunks of len[i] bytes on lane i % 2; returns its length in buf. */
static size_t build(uint8_t *buf, const unsigned words[FL_LANES], unsigned n,
                    const uint16_t *len)
{
    struct fl_chan_hdr h = {.kind = FL_CHAN_DATA,
                            .nchunks = (uint16_t)n,
                            .src = 3,
                            .dst = 5,
                            .key = 0x0123456789abcdefull,
                            .ts = 11,
                            .ts_echo = 7,
                            .echo_delay = 2};
    for (unsigned l = 0; l < FL_LANES; l++) {
        h.ack[l].next = 1000u * (l + 1);
        h.ack[l].words = (uint8_t)words[l];
        for (unsigned w = 0; w < words[l]; w++)
            h.ack[l].sack[w] = 0x9e3779b97f4a7c15ull * (w + 1) + l;
    }
    size_t pos = fl_chan_encode_hdr(buf, &h);
    CHECK(pos == fl_chan_hdr_size(&h) && pos <= FL_CHAN_MAX_HDR);
    CHECK(pos == FL_CHAN_HDR + 8u * (words[0] + words[1]));
    for (unsigned i = 0; i < n; i++) {
        struct fl_chan_chunk c = {.lane = (uint8_t)(i % 2),
                                  .flags = FL_CHAN_FIRST | FL_CHAN_LAST,
                                  .len = len[i],
                                  .seq = 77 + i};
        fl_chan_encode_chunk(buf + pos, &c);
        memset(buf + pos + FL_CHAN_CHUNK_HDR, (int)i, fl_chan_chunk_size(len[i]) - 8);
        pos += fl_chan_chunk_size(len[i]);
    }
    return pos;
}

/* Decodes a copy of buf[0 .. len) in a heap buffer of exactly that size. */
static flit_status decode(const uint8_t *buf, size_t len, struct fl_chan_hdr *h)
{
    uint8_t *copy = malloc(len ? len : 1);
    CHECK(copy != NULL);
    memcpy(copy, buf, len);
    flit_status st = fl_chan_decode(copy, len, h, chunks);
    free(copy);
    return st;
}

static void round_trips(void)
{
    static uint8_t buf[FL_CHAN_MAX_HDR + 4 * 200];
    const uint16_t len[3] = {0, 13, 64};
    for (unsigned w0 = 0; w0 <= FL_CHAN_SACK_WORDS; w0++)
        for (unsigned w1 = 0; w1 <= FL_CHAN_SACK_WORDS; w1 += 5)
            for (unsigned n = 0; n <= 3; n++) {
                unsigned words[FL_LANES] = {w0, w1};
                size_t total = build(buf, words, n, len);
                struct fl_chan_hdr h;
                CHECK(decode(buf, total, &h) == FLIT_OK);
                CHECK(h.kind == FL_CHAN_DATA && h.nchunks == n && h.src == 3 &&
                      h.dst == 5 && h.key == 0x0123456789abcdefull && h.ts == 11 &&
                      h.ts_echo == 7 && h.echo_delay == 2);
                for (unsigned l = 0; l < FL_LANES; l++) {
                    CHECK(h.ack[l].next == 1000u * (l + 1));
                    CHECK(h.ack[l].words == words[l]);
                    for (unsigned w = 0; w < words[l]; w++)
                        CHECK(h.ack[l].sack[w] == 0x9e3779b97f4a7c15ull * (w + 1) + l);
                }
                size_t pos = fl_chan_hdr_size(&h);
                for (unsigned i = 0; i < n; i++) { /* (data points into the copy) */
                    CHECK(chunks[i].lane == i % 2 && chunks[i].seq == 77 + i &&
                          chunks[i].len == len[i]);
                    pos += fl_chan_chunk_size(len[i]);
                }
                CHECK(pos == total);
            }
    /* every word of both lanes: the largest header */
    unsigned all[FL_LANES] = {FL_CHAN_SACK_WORDS, FL_CHAN_SACK_WORDS};
    CHECK(build(buf, all, 0, NULL) == FL_CHAN_MAX_HDR);
    CHECK(FL_CHAN_SACK_WORDS * 64 == FL_CHAN_SEQ_WINDOW);
    printf("chan_wire: headers of 0-%u words a lane round-trip\n", FL_CHAN_SACK_WORDS);
}

/* buf (len bytes), damaged by damage, must be refused. */
static void refused(const char *what, const uint8_t *good, size_t len,
                    size_t (*damage)(uint8_t *buf, size_t len))
{
    static uint8_t buf[FL_CHAN_MAX_HDR + 4 * 200 + 64];
    memcpy(buf, good, len);
    size_t n = damage(buf, len);
    struct fl_chan_hdr h;
    if (decode(buf, n, &h) != FLIT_ERR_BAD_PACKET) {
        fprintf(stderr, "FAIL: a datagram with %s was accepted\n", what);
        exit(1);
    }
}

static size_t v1(uint8_t *b, size_t n)
{
    b[0] = 1;
    return n;
}
static size_t v3(uint8_t *b, size_t n)
{
    b[0] = 3;
    return n;
}
static size_t kind(uint8_t *b, size_t n)
{
    b[1] = FL_CHAN_PING + 1;
    return n;
}
static size_t many_chunks(uint8_t *b, size_t n)
{
    b[2] = (uint8_t)((FL_CHAN_MAX_CHUNKS + 1) & 0xff);
    b[3] = (uint8_t)((FL_CHAN_MAX_CHUNKS + 1) >> 8);
    return n;
}
static size_t words17(uint8_t *b, size_t n)
{
    b[32 + 4] = FL_CHAN_SACK_WORDS + 1;
    return n;
}
static size_t reserved0(uint8_t *b, size_t n)
{
    b[32 + 5] = 1;
    return n;
}
static size_t reserved1(uint8_t *b, size_t n)
{
    b[40 + 7] = 0x80;
    return n;
}
static size_t words_past_end(uint8_t *b, size_t n)
{
    (void)n;
    b[2] = b[3] = 0;         /* no chunks */
    b[32 + 4] = 2;           /* two words of lane 0 */
    b[40 + 4] = 0;           /* none of lane 1 */
    return FL_CHAN_HDR + 8u; /* but room for one */
}
static size_t short_hdr(uint8_t *b, size_t n)
{
    (void)b, (void)n;
    return FL_CHAN_HDR - 1;
}
static size_t cut_chunk_hdr(uint8_t *b, size_t n)
{
    (void)b;
    return n - fl_chan_chunk_size(64) + 4; /* the last chunk's header cut */
}
static size_t cut_chunk(uint8_t *b, size_t n)
{
    (void)b;
    return n - 8; /* the last chunk's bytes cut */
}
static size_t trailing(uint8_t *b, size_t n)
{
    memset(b + n, 0, 8);
    return n + 8;
}
/* The first chunk's header sits right after the header (3 words: 72). */
#define FIRST_CHUNK (FL_CHAN_HDR + 3u * 8u)
static size_t bad_lane(uint8_t *b, size_t n)
{
    b[FIRST_CHUNK] = FL_LANES;
    return n;
}
static size_t bad_flags(uint8_t *b, size_t n)
{
    b[FIRST_CHUNK + 1] = 0x04;
    return n;
}
static size_t long_chunk(uint8_t *b, size_t n)
{
    b[FIRST_CHUNK + 2] = 0xff; /* length far past the datagram */
    b[FIRST_CHUNK + 3] = 0x7f;
    return n;
}

static void malformed(void)
{
    static uint8_t good[FL_CHAN_MAX_HDR + 4 * 200];
    const uint16_t len[3] = {0, 13, 64};
    unsigned words[FL_LANES] = {2, 1};
    size_t n = build(good, words, 3, len);
    struct fl_chan_hdr h;
    CHECK(decode(good, n, &h) == FLIT_OK);
    refused("version 1", good, n, v1);
    refused("version 3", good, n, v3);
    refused("an unknown kind", good, n, kind);
    refused("more chunks than a datagram holds", good, n, many_chunks);
    refused("17 selective words", good, n, words17);
    refused("a reserved byte of lane 0 set", good, n, reserved0);
    refused("a reserved byte of lane 1 set", good, n, reserved1);
    refused("selective words past its end", good, n, words_past_end);
    refused("a header one byte short", good, n, short_hdr);
    refused("its last chunk's header cut", good, n, cut_chunk_hdr);
    refused("its last chunk's bytes cut", good, n, cut_chunk);
    refused("bytes after its last chunk", good, n, trailing);
    refused("a chunk of lane 2", good, n, bad_lane);
    refused("a chunk with an unknown flag", good, n, bad_flags);
    refused("a chunk longer than the datagram", good, n, long_chunk);
    printf("chan_wire: 15 kinds of malformed datagram refused\n");
}

int main(void)
{
    round_trips();
    malformed();
    return 0;
}
