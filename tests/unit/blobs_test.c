/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one blob a rank that gathered an exchange puts for the others
 * (src/boot/blobs.c, under PMI-2 on one node and under PMIx's "hash" store):
 * every shape of exchange survives fl_blobs_pack and fl_blobs_unpack, and
 * every malformed packing is refused (a count for another job size, a
 * length past the end, lengths that overflow, bytes left over, a header cut
 * short), each read from a heap buffer of its exact length so that the
 * sanitizers see any read past it.
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

static void round_trips(void)
{
    const uint32_t sizes[] = {1, 2, 3, 16, 257};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct fl_blobs *b = make(sizes[i]), *back;
        size_t len;
        uint8_t *p = fl_blobs_pack(b, &len);
        CHECK(p);
        CHECK(len == 4 + 8 * (size_t)sizes[i] + (size_t)(b->blob[b->n - 1] - b->blob[0]) +
                         b->len[b->n - 1]);
        CHECK_ST(unpack_exact(p, len, sizes[i], &back), FLIT_OK);
        same(b, back);
        fl_blobs_free(back);
        free(p);
        fl_blobs_free(b);
    }
}

static void refused(void)
{
    struct fl_blobs *b = make(4), *back;
    size_t len;
    uint8_t *p = fl_blobs_pack(b, &len);
    CHECK(p && len > 4 + 8 * 4);
    uint8_t *bad = malloc(len + 1);
    CHECK(bad);

    /* A packing for another number of ranks. */
    CHECK_ST(unpack_exact(p, len, 5, &back), FLIT_ERR_BOOT);
    CHECK_ST(unpack_exact(p, len, 3, &back), FLIT_ERR_BOOT);
    CHECK(back == NULL);
    /* Cut anywhere: in the count, in the lengths, in the data. */
    for (size_t cut = 0; cut < len; cut++)
        CHECK_ST(unpack_exact(p, cut, 4, &back), FLIT_ERR_BOOT);
    /* A byte left over. */
    memcpy(bad, p, len);
    bad[len] = 0;
    CHECK_ST(unpack_exact(bad, len + 1, 4, &back), FLIT_ERR_BOOT);
    /* A length one past what is there, and lengths whose sum wraps. */
    memcpy(bad, p, len);
    fl_put64(bad + 4 + 8 * 3, fl_get64(bad + 4 + 8 * 3) + 1);
    CHECK_ST(unpack_exact(bad, len, 4, &back), FLIT_ERR_BOOT);
    memcpy(bad, p, len);
    fl_put64(bad + 4, UINT64_MAX);
    fl_put64(bad + 4 + 8, 2);
    CHECK_ST(unpack_exact(bad, len, 4, &back), FLIT_ERR_BOOT);
    /* Lengths moved between ranks still add up: accepted, blobs shifted. */
    memcpy(bad, p, len);
    fl_put64(bad + 4 + 8 * 1, fl_get64(p + 4 + 8 * 1) + 1);
    fl_put64(bad + 4 + 8 * 2, fl_get64(p + 4 + 8 * 2) - 1);
    CHECK_ST(unpack_exact(bad, len, 4, &back), FLIT_OK);
    CHECK(back->len[1] == b->len[1] + 1 && back->len[2] == b->len[2] - 1);
    fl_blobs_free(back);

    free(bad);
    free(p);
    fl_blobs_free(b);
}

int main(void)
{
    round_trips();
    refused();
    printf("blobs_test: ok\n");
    return 0;
}
