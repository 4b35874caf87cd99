/* SPDX-License-Identifier: BSD-3-Clause */
/* The result of an exchange, and the one blob a rank that gathered it puts. */
#include "boot/blobs.h"

#include <stdlib.h>
#include <string.h>

#include "platform/le.h"

void fl_blobs_free(struct fl_blobs *b)
{
    free(b);
}

struct fl_blobs *fl_blobs_alloc(uint32_t n, size_t total)
{
    size_t head = sizeof(struct fl_blobs) + n * (sizeof(size_t) + sizeof(uint8_t *));
    struct fl_blobs *b = calloc(1, head + total + 1);
    if (!b)
        return NULL;
    b->n = n;
    b->len = (size_t *)(b + 1);
    b->blob = (const uint8_t **)(b->len + n);
    /* Data grows after the tables; blob[i] set by fl_blobs_add. */
    b->blob[0] = (const uint8_t *)(b->blob + n);
    return b;
}

void fl_blobs_add(struct fl_blobs *b, uint32_t i, const void *data, size_t len)
{
    uint8_t *dst = (uint8_t *)(i == 0 ? b->blob[0] : b->blob[i - 1] + b->len[i - 1]);
    if (len)
        memcpy(dst, data, len);
    b->blob[i] = dst;
    b->len[i] = len;
}

/* ---- packing: each blob written against the one before it ---- */

/* A run of this many bytes like the previous blob's ends a stretch of new
   bytes (a shorter one costs more as a piece than as new bytes). */
#define MIN_SAME   3
#define VARINT_MAX 10

/* Writes v at p (p NULL: only counts); returns its length. */
static size_t varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        if (p)
            p[n] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        n++;
        v >>= 7;
    } while (v);
    return n;
}

/* Reads a varint at p[*at] (< len): false when cut short or over 64 bits. */
static bool varint_get(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
    *v = 0;
    for (unsigned i = 0; i < VARINT_MAX && *at < len; i++) {
        uint8_t byte = p[(*at)++];
        if (i == VARINT_MAX - 1 && byte > 1)
            return false;
        *v |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

/* How many bytes of cur from i on equal prev's (prev_len long). */
static size_t same_run(const uint8_t *cur, size_t len, const uint8_t *prev,
                       size_t prev_len, size_t i)
{
    size_t j = i;
    while (j < len && j < prev_len && cur[j] == prev[j])
        j++;
    return j - i;
}

/* Blob cur written against prev at p (NULL: only counted); returns its
   length. */
static size_t pack_one(uint8_t *p, const uint8_t *cur, size_t len, const uint8_t *prev,
                       size_t prev_len)
{
    size_t w = varint_put(p, len);
    for (size_t i = 0; i < len;) {
        size_t same = same_run(cur, len, prev, prev_len, i), end = i + same;
        /* New bytes up to the next run worth a piece of its own. */
        while (end < len) {
            size_t run = same_run(cur, len, prev, prev_len, end);
            if (run >= MIN_SAME)
                break;
            end += run ? run : 1;
        }
        size_t fresh = end - i - same;
        w += varint_put(p ? p + w : NULL, same);
        w += varint_put(p ? p + w : NULL, fresh);
        if (p && fresh)
            memcpy(p + w, cur + i + same, fresh);
        w += fresh;
        i = end;
    }
    return w;
}

uint8_t *fl_blobs_pack(const struct fl_blobs *b, size_t *len)
{
    /* Twice: counting, then writing into exactly that much. */
    size_t n = 4;
    for (uint32_t r = 0; r < b->n; r++)
        n += pack_one(NULL, b->blob[r], b->len[r], r ? b->blob[r - 1] : NULL,
                      r ? b->len[r - 1] : 0);
    uint8_t *p = malloc(n);
    if (!p)
        return NULL;
    fl_put32(p, b->n);
    size_t w = 4;
    for (uint32_t r = 0; r < b->n; r++)
        w += pack_one(p + w, b->blob[r], b->len[r], r ? b->blob[r - 1] : NULL,
                      r ? b->len[r - 1] : 0);
    *len = w;
    return p;
}

/*
 * Reads a packing for n ranks: with b NULL only checks it and sums the
 * blobs' lengths into *total; with b (allocated for that total) fills it.
 */
static bool unpack_pass(const uint8_t *p, size_t len, uint32_t n, struct fl_blobs *b,
                        size_t *total)
{
    if (len < 4 || fl_get32(p) != n)
        return false;
    size_t at = 4, prev_len = 0;
    *total = 0;
    uint8_t *dst = NULL;
    const uint8_t *prev = NULL;
    for (uint32_t r = 0; r < n; r++) {
        uint64_t blob_len;
        if (!varint_get(p, len, &at, &blob_len) || blob_len > SIZE_MAX - *total)
            return false;
        if (b) {
            fl_blobs_add(b, r, NULL, 0); /* where it starts */
            dst = (uint8_t *)b->blob[r];
        }
        for (uint64_t made = 0; made < blob_len;) {
            uint64_t same, fresh;
            if (!varint_get(p, len, &at, &same) || !varint_get(p, len, &at, &fresh))
                return false;
            if ((same == 0 && fresh == 0) || same > blob_len - made ||
                fresh > blob_len - made - same || made + same > prev_len ||
                fresh > len - at)
                return false;
            if (b && same)
                memcpy(dst + made, prev + made, same);
            if (b && fresh)
                memcpy(dst + made + same, p + at, fresh);
            at += fresh;
            made += same + fresh;
        }
        if (b)
            b->len[r] = blob_len;
        *total += blob_len;
        prev = b ? b->blob[r] : NULL;
        prev_len = blob_len;
    }
    return at == len;
}

flit_status fl_blobs_unpack(const uint8_t *p, size_t len, uint32_t n,
                            struct fl_blobs **out)
{
    size_t total;
    if (!unpack_pass(p, len, n, NULL, &total))
        return FLIT_ERR_BOOT;
    struct fl_blobs *b = fl_blobs_alloc(n, total);
    if (!b)
        return FLIT_ERR_NO_MEMORY;
    unpack_pass(p, len, n, b, &total);
    *out = b;
    return FLIT_OK;
}
