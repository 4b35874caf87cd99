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
 * others read it whole: u32 n, n u64 lengths, then the blobs in rank order
 * (*len bytes, malloc'd; NULL when out of memory).
 */
uint8_t *fl_blobs_pack(const struct fl_blobs *b, size_t *len);

/* fl_blobs_pack's inverse for a job of n ranks, every length checked against
   what is there: FLIT_ERR_BOOT, quietly, when they do not add up (the
   caller says whose they were). */
flit_status fl_blobs_unpack(const uint8_t *p, size_t len, uint32_t n,
                            struct fl_blobs **out);

#endif /* FL_BOOT_BLOBS_H */
