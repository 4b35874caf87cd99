/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one blob in which rank 0 hands every rank's exchange blob to the
 * others (src/boot/blobs.h: under PMI-2 on one node, under PMIx's "hash"
 * store), as a launcher delivers it: byte 0 is the job's size (1 .. 64),
 * the rest the packing. Held to the format by a second reader written here
 * a byte at a time from the format's description: fl_blobs_unpack accepts
 * exactly what it accepts, with the same blobs; and what is accepted packs
 * again into a packing that gives the same blobs, and that packs into
 * itself (the packer's choices depend on the blobs alone).
 */
#include <stdlib.h>

#include "boot/blobs.h"
#include "fuzz.h"
#include "platform/le.h"

struct reader {
    const uint8_t *p;
    size_t len, at;
};

static int read_varint(struct reader *r, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (r->at == r->len)
            return 0;
        uint8_t byte = r->p[r->at++];
        if (shift == 63 && byte > 1)
            return 0;
        *v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return 1;
    }
    return 0;
}

/* The blobs as the format describes them, into out[] (each malloc'd) and
   lens[]; 0 when not a packing for n ranks. */
static int reference(const uint8_t *p, size_t len, uint32_t n, uint8_t **out,
                     size_t *lens)
{
    struct reader r = {p, len, 4};
    if (len < 4 || fl_get32(p) != n)
        return 0;
    const uint8_t *prev = NULL;
    uint64_t prev_len = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t blob_len;
        /* Every byte of a blob costs at least a byte of the packing or one
           of the blob before it: longer than that is malformed anyway. */
        if (!read_varint(&r, &blob_len) || blob_len > prev_len + len)
            return 0;
        uint8_t *b = malloc(blob_len ? blob_len : 1);
        FUZZ_CHECK(b);
        out[k] = b;
        lens[k] = blob_len;
        uint64_t made = 0;
        while (made < blob_len) {
            uint64_t same, fresh;
            if (!read_varint(&r, &same) || !read_varint(&r, &fresh))
                return 0;
            if (same + fresh == 0 || same > blob_len || fresh > blob_len ||
                made + same + fresh > blob_len || made + same > prev_len)
                return 0;
            for (uint64_t i = 0; i < same; i++, made++)
                b[made] = prev[made];
            for (uint64_t i = 0; i < fresh; i++, made++) {
                if (r.at == r.len)
                    return 0;
                b[made] = r.p[r.at++];
            }
        }
        prev = b;
        prev_len = blob_len;
    }
    return r.at == r.len;
}

static int same_blobs(const struct fl_blobs *b, uint8_t *const *want, const size_t *lens)
{
    for (uint32_t k = 0; k < b->n; k++)
        if (b->len[k] != lens[k] || (lens[k] && memcmp(b->blob[k], want[k], lens[k])))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t n = data[0] % 64 + 1;
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    uint8_t *want[64] = {0};
    size_t lens[64] = {0};
    int ok = reference(p, len, n, want, lens);
    struct fl_blobs *b = NULL;
    flit_status st = fl_blobs_unpack(p, len, n, &b);
    FUZZ_CHECK(st == (ok ? FLIT_OK : FLIT_ERR_BOOT));
    if (st == FLIT_OK) {
        FUZZ_CHECK(b->n == n && same_blobs(b, want, lens));
        size_t back_len = 0, again_len = 0;
        uint8_t *back = fl_blobs_pack(b, &back_len);
        FUZZ_CHECK(back);
        struct fl_blobs *b2 = NULL;
        FUZZ_CHECK(fl_blobs_unpack(back, back_len, n, &b2) == FLIT_OK);
        FUZZ_CHECK(same_blobs(b2, want, lens));
        uint8_t *again = fl_blobs_pack(b2, &again_len);
        FUZZ_CHECK(again && again_len == back_len && memcmp(again, back, back_len) == 0);
        free(again);
        free(back);
        fl_blobs_free(b2);
        fl_blobs_free(b);
    } else {
        FUZZ_CHECK(b == NULL);
    }
    for (uint32_t k = 0; k < n; k++)
        free(want[k]);
    return 0;
}
