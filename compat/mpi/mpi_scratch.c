/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives' scratch buffers (packed copies, partial results),
 * kept for the next call once they are large: glibc takes a large block
 * from the top of its heap and gives the pages back at its free, so a
 * collective of a MiB, which needs two or three such blocks, faulted a
 * MiB of fresh pages in every call (a 2-rank MPI_Allreduce of 1 MiB spent
 * half its time there). Small ones are malloc's bins' business.
 *
 * Small ones come from a few slots of this file first: a 2-rank
 * MPI_Allreduce of 8 bytes spent 300 of its 3,800 instructions in malloc
 * and free (callgrind). Under AddressSanitizer there are none, so that a
 * block used after it was given back is still caught.
 *
 * Any block from malloc may be given back here (its size is malloc's
 * word for it), so a caller that mixes them up frees correctly all the
 * same. Under the library's lock, as every MPI call is.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpi_internal.h"

#define SMALL_BYTES 256
#if defined(__SANITIZE_ADDRESS__)
#define SMALL_SLOTS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SMALL_SLOTS 0
#endif
#endif
#ifndef SMALL_SLOTS
#define SMALL_SLOTS 8
#endif

static _Alignas(64) unsigned char slots[SMALL_SLOTS ? SMALL_SLOTS : 1][SMALL_BYTES];
static unsigned small_out; /* bit i: slot i is handed out */

static void *small_take(size_t n)
{
    unsigned all = (1u << SMALL_SLOTS) - 1;
    if (n > SMALL_BYTES || small_out == all)
        return NULL;
    int i = __builtin_ctz(~small_out);
    small_out |= 1u << i;
    return slots[i];
}

/* Whether p is a slot's; given back if so. */
static int small_give(void *p)
{
    uintptr_t at = (uintptr_t)p, base = (uintptr_t)slots;
    if (at < base || at >= base + SMALL_SLOTS * SMALL_BYTES)
        return 0;
    small_out &= ~(1u << ((at - base) / SMALL_BYTES));
    return 1;
}

#define KEEP_MIN    (64u << 10) /* smaller: straight back to malloc */
#define KEEP_BLOCKS 8
#define KEEP_BYTES  (64u << 20) /* kept at most, all blocks together */

static struct kept {
    void *p;
    size_t size;
} kept[KEEP_BLOCKS];
static int nkept;
static size_t kept_bytes;

void *mp_scratch(size_t n)
{
    void *slot = small_take(n);
    if (slot)
        return slot;
    if (n >= KEEP_MIN) { /* the smallest kept block that holds n */
        int best = -1;
        for (int i = 0; i < nkept; i++)
            if (kept[i].size >= n && (best < 0 || kept[i].size < kept[best].size))
                best = i;
        if (best >= 0) {
            void *p = kept[best].p;
            kept_bytes -= kept[best].size;
            kept[best] = kept[--nkept];
            return p;
        }
    }
    return malloc(n ? n : 1);
}

void mp_scratch_free(void *p)
{
    if (!p || small_give(p))
        return;
    size_t size = malloc_usable_size(p);
    if (size < KEEP_MIN || size > KEEP_BYTES) {
        free(p);
        return;
    }
    /* room made by dropping the smallest kept blocks, if p is larger */
    while (nkept && (nkept == KEEP_BLOCKS || kept_bytes + size > KEEP_BYTES)) {
        int small = 0;
        for (int i = 1; i < nkept; i++)
            if (kept[i].size < kept[small].size)
                small = i;
        if (kept[small].size >= size)
            break;
        free(kept[small].p);
        kept_bytes -= kept[small].size;
        kept[small] = kept[--nkept];
    }
    if (nkept == KEEP_BLOCKS || kept_bytes + size > KEEP_BYTES) {
        free(p);
        return;
    }
    kept[nkept++] = (struct kept){p, size};
    kept_bytes += size;
}

void mp_scratch_fini(void)
{
    while (nkept)
        free(kept[--nkept].p);
    kept_bytes = 0;
}
