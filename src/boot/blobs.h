/* SPDX-License-Identifier: BSD-3-Clause */
/* Building a struct fl_blobs in one allocation, and packing one whole (for the
   launchers). */
#ifndef FL_BOOT_BLOBS_H
#define FL_BOOT_BLOBS_H

#include "boot/boot.h"

/*
 * Allocates blobs for n ranks with `total` data bytes; fill with
 * fl_blobs_add in rank order. One free() releases it (fl_blobs_free).
 */
struct fl_blobs *fl_blobs_alloc(uint32_t n, size_t total);
void fl_blobs_add(struct fl_blobs *b, uint32_t i, const void *data, size_t len);

/*
 * All blobs as one, for a launcher where one rank gathers a round and the
 * others read it whole (*len bytes, malloc'd; NULL when out of memory).
 * The ranks' blobs of a round are mostly alike (the same header and
 * settings, names that differ in a few digits), and under PMI-2 every
 * reader pays a round trip to the launcher per 500 bytes of it, so each
 * blob is written against the one before it:
 *
 *     u32 n (little-endian), then per rank: varint length, then pieces
 *     until that many bytes are made: varint same, varint new, `new` bytes
 *
 * "same" bytes are the previous rank's at the same offset (the first
 * rank's previous is empty), "new" bytes follow as they are; a piece makes
 * at least one byte. Varints are LEB128: 7 bits a byte, low first, the top
 * bit set on all but the last, at most 10 bytes.
 */
uint8_t *fl_blobs_pack(const struct fl_blobs *b, size_t *len);

/* fl_blobs_pack's inverse for a job of n ranks, every length checked against
   what is there: FLIT_ERR_BOOT, quietly, when the count is not n, a piece
   reaches past its blob or past the previous one, a varint is cut or too
   long, or bytes are missing or left over (the caller says whose they
   were). */
flit_status fl_blobs_unpack(const uint8_t *p, size_t len, uint32_t n,
                            struct fl_blobs **out);

#endif /* FL_BOOT_BLOBS_H */
