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

uint8_t *fl_blobs_pack(const struct fl_blobs *b, size_t *len)
{
    size_t n = 4 + 8 * (size_t)b->n;
    for (uint32_t r = 0; r < b->n; r++)
        n += b->len[r];
    uint8_t *p = malloc(n);
    if (!p)
        return NULL;
    fl_put32(p, b->n);
    size_t at = 4 + 8 * (size_t)b->n;
    for (uint32_t r = 0; r < b->n; r++) {
        fl_put64(p + 4 + 8 * (size_t)r, b->len[r]);
        if (b->len[r])
            memcpy(p + at, b->blob[r], b->len[r]);
        at += b->len[r];
    }
    *len = n;
    return p;
}

flit_status fl_blobs_unpack(const uint8_t *p, size_t len, uint32_t n,
                            struct fl_blobs **out)
{
    size_t head = 4 + 8 * (size_t)n, total = 0;
    bool ok = len >= head && fl_get32(p) == n;
    for (uint32_t r = 0; ok && r < n; r++) {
        uint64_t size = fl_get64(p + 4 + 8 * (size_t)r);
        ok = size <= len - head - total;
        total += ok ? (size_t)size : 0;
    }
    if (!ok || head + total != len)
        return FLIT_ERR_BOOT;
    struct fl_blobs *b = fl_blobs_alloc(n, total);
    if (!b)
        return FLIT_ERR_NO_MEMORY;
    size_t at = head;
    for (uint32_t r = 0; r < n; r++) {
        size_t size = (size_t)fl_get64(p + 4 + 8 * (size_t)r);
        fl_blobs_add(b, r, p + at, size);
        at += size;
    }
    *out = b;
    return FLIT_OK;
}
