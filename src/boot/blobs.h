/* SPDX-License-Identifier: BSD-3-Clause */
/* Building a struct fl_blobs in one allocation (for the launchers). */
#ifndef FL_BOOT_BLOBS_H
#define FL_BOOT_BLOBS_H

#include "boot/boot.h"

/*
 * Allocates blobs for n ranks with `total` data bytes; fill with
 * fl_blobs_add in rank order. One free() releases it (fl_blobs_free).
 */
struct fl_blobs *fl_blobs_alloc(uint32_t n, size_t total);
void fl_blobs_add(struct fl_blobs *b, uint32_t i, const void *data, size_t len);

#endif /* FL_BOOT_BLOBS_H */
