/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one blob in which rank 0 hands every rank's exchange blob to the
 * others (src/boot/blobs.h: under PMI-2 on one node, under PMIx's "hash"
 * store), as a launcher delivers it: byte 0 is the job's size (1 .. 64),
 * the rest the packing. Held to the format: accepted exactly when the count
 * is the job's size and the lengths add up to what follows, with the blobs
 * where the lengths put them, and what is accepted packs back to the same
 * bytes.
 */
#include "boot/blobs.h"
#include "fuzz.h"
#include "platform/le.h"

/* Whether p (len bytes) is a packing for n ranks, by the format alone. */
static int well_formed(const uint8_t *p, size_t len, uint32_t n)
{
    size_t head = 4 + 8 * (size_t)n;
    if (len < head || fl_get32(p) != n)
        return 0;
    uint64_t total = 0;
    for (uint32_t r = 0; r < n; r++) {
        uint64_t size = fl_get64(p + 4 + 8 * (size_t)r);
        if (size > len - head || total + size > len - head)
            return 0;
        total += size;
    }
    return total == len - head;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t n = data[0] % 64 + 1;
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    struct fl_blobs *b = NULL;
    flit_status st = fl_blobs_unpack(p, len, n, &b);
    FUZZ_CHECK(st == (well_formed(p, len, n) ? FLIT_OK : FLIT_ERR_BOOT));
    if (st != FLIT_OK) {
        FUZZ_CHECK(b == NULL);
        return 0;
    }
    size_t at = 4 + 8 * (size_t)n;
    FUZZ_CHECK(b->n == n);
    for (uint32_t r = 0; r < n; r++) {
        FUZZ_CHECK(b->len[r] == fl_get64(p + 4 + 8 * (size_t)r));
        FUZZ_CHECK(b->len[r] == 0 || memcmp(b->blob[r], p + at, b->len[r]) == 0);
        at += b->len[r];
    }
    size_t back_len = 0;
    uint8_t *back = fl_blobs_pack(b, &back_len);
    FUZZ_CHECK(back && back_len == len && memcmp(back, p, len) == 0);
    free(back);
    fl_blobs_free(b);
    return 0;
}
