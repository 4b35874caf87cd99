/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives' scratch buffers (packed copies, partial results),
 * kept for the next call once they are large: glibc takes a large block
 * from the top of its heap and gives the pages back at its free, so a
 * collective of a MiB, which needs two or three such blocks, faulted a
 * MiB of fresh pages in every call (a 2-rank MPI_Allreduce of 1 MiB spent
 * half its time there). Small ones are malloc's bins' business.
 *
 * Any block from malloc may be given back here (its size is malloc's
 * word for it), so a caller that mixes them up frees correctly all the
 * same. Under the library's lock, as every MPI call is.
 */
#include <malloc.h>
#include <stdlib.h>

#include "mpi_internal.h"

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
    if (!p)
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
