/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one blob a rank that gathered an exchange puts for the others
 * (src/boot/blobs.c, under PMI-2 on one node and under PMIx's "hash" store):
 * every shape of exchange survives fl_blobs_pack and fl_blobs_unpack; blobs
 * that are alike but for a few bytes, as the ranks' addresses are, pack into
 * little more than their differences; and every malformed packing is
 * refused (a count for another job size, cut anywhere, bytes left over, a
 * piece past its blob or past the previous one, an empty piece, varints too
 * long or over 64 bits, lengths that wrap), each read from a heap buffer of
 * its exact length so that the sanitizers see any read past it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/blobs.h"
#include "platform/le.h"
#include "unit.h"

/* An exchange of n ranks, rank r's blob r * 7 % 13 bytes (some empty). */
static struct fl_blobs *make(uint32_t n)
{
    size_t total = 0;
    for (uint32_t r = 0; r < n; r++)
        total += r * 7 % 13;
    struct fl_blobs *b = fl_blobs_alloc(n, total);
    CHECK(b);
    for (uint32_t r = 0; r < n; r++) {
        uint8_t data[13];
        for (size_t i = 0; i < sizeof data; i++)
            data[i] = (uint8_t)(r * 31 + i);
        fl_blobs_add(b, r, data, r * 7 % 13);
    }
    return b;
}

/* n addresses of `len` bytes alike but for a rank number at 40 and a pid
   at 100 (4 bytes each), as shared memory's are. */
static struct fl_blobs *make_alike(uint32_t n, size_t len)
{
    struct fl_blobs *b = fl_blobs_alloc(n, n * len);
    CHECK(b && len >= 104);
    uint8_t *data = malloc(len);
    CHECK(data);
    for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(i * 37 + 1);
    for (uint32_t r = 0; r < n; r++) {
        fl_put32(data + 40, r);
        fl_put32(data + 100, 4000000 + r * 3);
        fl_blobs_add(b, r, data, len);
    }
    free(data);
    return b;
}

static void same(const struct fl_blobs *a, const struct fl_blobs *b)
{
    CHECK(a->n == b->n);
    for (uint32_t r = 0; r < a->n; r++) {
        CHECK(a->len[r] == b->len[r]);
        CHECK(a->len[r] == 0 || memcmp(a->blob[r], b->blob[r], a->len[r]) == 0);
    }
}

/* Unpacks a copy of len bytes of p in a buffer of exactly that size. */
static flit_status unpack_exact(const uint8_t *p, size_t len, uint32_t n,
                                struct fl_blobs **out)
{
    uint8_t *copy = malloc(len ? len : 1);
    CHECK(copy);
    memcpy(copy, p, len);
    *out = NULL;
    flit_status st = fl_blobs_unpack(copy, len, n, out);
    free(copy);
    return st;
}

static void round_trip(struct fl_blobs *b, size_t *packed)
{
    struct fl_blobs *back;
    size_t len;
    uint8_t *p = fl_blobs_pack(b, &len);
    CHECK(p);
    CHECK_ST(unpack_exact(p, len, b->n, &back), FLIT_OK);
    same(b, back);
    fl_blobs_free(back);
    free(p);
    if (packed)
        *packed = len;
}

static void round_trips(void)
{
    const uint32_t sizes[] = {1, 2, 3, 16, 257};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct fl_blobs *b = make(sizes[i]);
        round_trip(b, NULL);
        fl_blobs_free(b);
    }
    /* Blobs longer than the one before, shorter, empty between, equal. */
    const size_t lens[] = {0, 5, 300, 300, 2, 0, 0, 1000, 999, 1001, 130};
    enum { N = sizeof lens / sizeof lens[0] };
    size_t total = 0;
    for (int r = 0; r < N; r++)
        total += lens[r];
    struct fl_blobs *b = fl_blobs_alloc(N, total);
    CHECK(b);
    uint8_t data[1001];
    for (int r = 0; r < N; r++) {
        for (size_t i = 0; i < sizeof data; i++) /* alike, with some bytes changed */
            data[i] = (uint8_t)(i % 7 == (size_t)r % 7 ? (size_t)r : i * 3);
        fl_blobs_add(b, r, data, lens[r]);
    }
    round_trip(b, NULL);
    fl_blobs_free(b);
}

/* 64 ranks' 188-byte addresses that differ in 8 bytes each: the first whole,
   each of the others in a few pieces. */
static void alike_is_small(void)
{
    struct fl_blobs *b = make_alike(64, 188);
    size_t len;
    round_trip(b, &len);
    printf("blobs_test: 64 blobs of 188 bytes, 8 differing, packed in %zu bytes\n", len);
    CHECK(len <= 4 + 2 + 188 + 63 * (2 + 3 * 2 + 8));
    fl_blobs_free(b);
}

/* ---- malformed packings, written by hand ---- */

struct buf {
    uint8_t b[256];
    size_t n;
};

static void put_byte(struct buf *w, uint8_t v)
{
    CHECK(w->n < sizeof w->b);
    w->b[w->n++] = v;
}

static void put_varint(struct buf *w, uint64_t v)
{
    do {
        put_byte(w, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
}

static void put_count(struct buf *w, uint32_t n)
{
    w->n = 0;
    for (int i = 0; i < 4; i++)
        put_byte(w, (uint8_t)(n >> (8 * i)));
}

static void put_bytes(struct buf *w, const char *s)
{
    while (*s)
        put_byte(w, (uint8_t)*s++);
}

static flit_status try(const struct buf *w, uint32_t n)
{
    struct fl_blobs *back;
    flit_status st = unpack_exact(w->b, w->n, n, &back);
    if (st == FLIT_OK)
        fl_blobs_free(back);
    else
        CHECK(back == NULL);
    return st;
}

static void refused(void)
{
    struct fl_blobs *b = make_alike(4, 120), *back;
    size_t len;
    uint8_t *p = fl_blobs_pack(b, &len);
    CHECK(p && len > 4);
    /* A packing for another number of ranks. */
    CHECK_ST(unpack_exact(p, len, 5, &back), FLIT_ERR_BOOT);
    CHECK_ST(unpack_exact(p, len, 3, &back), FLIT_ERR_BOOT);
    CHECK(back == NULL);
    /* Cut anywhere. */
    for (size_t cut = 0; cut < len; cut++)
        CHECK_ST(unpack_exact(p, cut, 4, &back), FLIT_ERR_BOOT);
    /* A byte left over. */
    uint8_t *bad = malloc(len + 1);
    CHECK(bad);
    memcpy(bad, p, len);
    bad[len] = 0;
    CHECK_ST(unpack_exact(bad, len + 1, 4, &back), FLIT_ERR_BOOT);
    free(bad);
    free(p);
    fl_blobs_free(b);

    struct buf w;
    /* Well formed, to show the pieces below fail for the reason named:
       "abc", then "abXc" as 2 same + "X" + 1 more new. */
    put_count(&w, 2);
    put_varint(&w, 3), put_varint(&w, 0), put_varint(&w, 3), put_bytes(&w, "abc");
    put_varint(&w, 4), put_varint(&w, 2), put_varint(&w, 2), put_bytes(&w, "Xc");
    CHECK_ST(unpack_exact(w.b, w.n, 2, &back), FLIT_OK);
    CHECK(back->len[0] == 3 && memcmp(back->blob[0], "abc", 3) == 0);
    CHECK(back->len[1] == 4 && memcmp(back->blob[1], "abXc", 4) == 0);
    fl_blobs_free(back);
    /* "same" bytes past the previous blob (3 long). */
    put_count(&w, 2);
    put_varint(&w, 3), put_varint(&w, 0), put_varint(&w, 3), put_bytes(&w, "abc");
    put_varint(&w, 4), put_varint(&w, 4), put_varint(&w, 0);
    CHECK_ST(try(&w, 2), FLIT_ERR_BOOT);
    /* The first rank has no previous blob. */
    put_count(&w, 1);
    put_varint(&w, 1), put_varint(&w, 1), put_varint(&w, 0);
    CHECK_ST(try(&w, 1), FLIT_ERR_BOOT);
    /* A piece past its blob's length. */
    put_count(&w, 1);
    put_varint(&w, 2), put_varint(&w, 0), put_varint(&w, 3), put_bytes(&w, "abc");
    CHECK_ST(try(&w, 1), FLIT_ERR_BOOT);
    /* An empty piece (it would never end). */
    put_count(&w, 1);
    put_varint(&w, 2), put_varint(&w, 0), put_varint(&w, 0);
    CHECK_ST(try(&w, 1), FLIT_ERR_BOOT);
    /* New bytes missing at the end. */
    put_count(&w, 1);
    put_varint(&w, 3), put_varint(&w, 0), put_varint(&w, 3), put_bytes(&w, "ab");
    CHECK_ST(try(&w, 1), FLIT_ERR_BOOT);
    /* A varint of 11 bytes, and one of 10 whose last byte goes past 64 bits. */
    put_count(&w, 1);
    for (int i = 0; i < 10; i++)
        put_byte(&w, 0x80);
    put_byte(&w, 0);
    CHECK_ST(try(&w, 1), FLIT_ERR_BOOT);
    put_count(&w, 1);
    for (int i = 0; i < 9; i++)
        put_byte(&w, 0xff);
    put_byte(&w, 0x02);
    CHECK_ST(try(&w, 1), FLIT_ERR_BOOT);
    /* The largest length there is, with nothing behind it; and two blobs
       whose lengths would wrap the total. */
    put_count(&w, 1);
    put_varint(&w, UINT64_MAX);
    CHECK_ST(try(&w, 1), FLIT_ERR_BOOT);
    put_count(&w, 2);
    put_varint(&w, 1), put_varint(&w, 0), put_varint(&w, 1), put_bytes(&w, "a");
    put_varint(&w, SIZE_MAX), put_varint(&w, 1), put_varint(&w, 0);
    CHECK_ST(try(&w, 2), FLIT_ERR_BOOT);
    /* A varint written longer than it needs is still the number. */
    put_count(&w, 1);
    put_byte(&w, 0x81), put_byte(&w, 0x00), put_varint(&w, 0), put_varint(&w, 1);
    put_bytes(&w, "z");
    CHECK_ST(try(&w, 1), FLIT_OK);
}

int main(void)
{
    round_trips();
    alike_is_small();
    refused();
    printf("blobs_test: ok\n");
    return 0;
}
