/* SPDX-License-Identifier: BSD-3-Clause */
/* Seeded fault injection; see fault.h. */
#include "channel/fault.h"

/* splitmix64: a good stream from any seed, including 0. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fl_fault_init(struct fl_fault *f, uint64_t seed, uint32_t drop_ppm, uint32_t dup_ppm,
                   uint32_t reorder_ppm)
{
    f->state = seed;
    f->drop_ppm = drop_ppm;
    f->dup_ppm = dup_ppm;
    f->reorder_ppm = reorder_ppm;
    f->active = drop_ppm || dup_ppm || reorder_ppm;
}

enum fl_fault_action fl_fault_roll(struct fl_fault *f)
{
    if (!f->active)
        return FL_FAULT_NONE;
    uint32_t x = (uint32_t)(next(&f->state) % 1000000u);
    if (x < f->drop_ppm)
        return FL_FAULT_DROP;
    x -= f->drop_ppm;
    if (x < f->dup_ppm)
        return FL_FAULT_DUP;
    x -= f->dup_ppm;
    return x < f->reorder_ppm ? FL_FAULT_REORDER : FL_FAULT_NONE;
}
