/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One copy or two, chosen by measuring the messages themselves (choose.h).
 *
 * Whether a receiver pulling a large message from its sender's memory (one
 * copy, cross-memory attach) beats the two copies through the rings
 * depends on the host, and on this kind of virtual machine it changes from
 * hour to hour with where the host runs the two vCPUs: the rings moved 64
 * KiB messages at 8.3 GB/s in one hour and 2.2 GB/s in the next, while a
 * pull held 8.5-10.5. A probe of one process's own memory at first use
 * (two copies within one core's cache against one read) cannot see that,
 * and chose the rings where pulling was up to five times faster.
 *
 * So the receiver measures what its messages cost: a pull, the time inside
 * the reads; a message through the rings, from its first packet (or the
 * answer that asked for its bytes in packets) to its last byte taken. Per
 * sender and size class (below 64 KiB, then powers of two) it keeps each
 * way's nanoseconds per KiB, smoothed over the last few messages, and
 * answers each pull offer: a way not measured yet first, then the cheaper,
 * and the rings once again after FL_ST_EXPLORE pulls times how much
 * dearer they were (at most FL_ST_EXPLORE_MAX times). Its answers tell the
 * sender which classes to offer pulled (the rest go through the rings,
 * every FL_ST_EXPLORE-th offered pulled anyway, for the measurement).
 */
#include "stream/choose.h"

unsigned fl_st_class(uint64_t n)
{
    unsigned log2 = n ? 63u - (unsigned)__builtin_clzll(n) : 0;
    if (log2 <= FL_ST_CLASS_SHIFT)
        return 0;
    log2 -= FL_ST_CLASS_SHIFT;
    return log2 < FL_ST_CLASSES ? log2 : FL_ST_CLASSES - 1;
}

void fl_st_rate_note(uint32_t *rate, uint64_t bytes, uint64_t ns)
{
    if (bytes < 1024)
        return;
    uint64_t per_kib = ns / (bytes >> 10);
    if (per_kib == 0)
        per_kib = 1; /* 0 means none */
    if (per_kib > UINT32_MAX)
        per_kib = UINT32_MAX;
    /* a quarter of the new one: a stray slow message moves it little */
    *rate = *rate ? (uint32_t)((3 * (uint64_t)*rate + per_kib) / 4) : (uint32_t)per_kib;
}

static bool pull_cheaper(const struct fl_st_rates *r, unsigned c)
{
    return r->pull[c] <= r->ring[c];
}

bool fl_st_take_pull(struct fl_st_rates *r, unsigned cls)
{
    if (cls >= FL_ST_CLASSES)
        cls = FL_ST_CLASSES - 1;
    if (!r->pull[cls])
        return true;
    if (!r->ring[cls])
        return false;
    /* The rings are cheaper: an offer now is the sender's try, every
       FL_ST_EXPLORE-th message (or one it made before our advice came). */
    if (!pull_cheaper(r, cls))
        return true;
    /* The rings again after FL_ST_EXPLORE pulls, times how much dearer
       they were: the retry costs a few percent whatever the gap. */
    uint32_t times = r->ring[cls] / r->pull[cls];
    times = times < 1 ? 1 : times > FL_ST_EXPLORE_MAX ? FL_ST_EXPLORE_MAX : times;
    if (++r->since[cls] >= FL_ST_EXPLORE * times) {
        r->since[cls] = 0;
        return false;
    }
    return true;
}

uint32_t fl_st_advice(const struct fl_st_rates *r)
{
    uint32_t bits = 0;
    for (unsigned c = 0; c < FL_ST_CLASSES; c++)
        if (!r->pull[c] || !r->ring[c] || pull_cheaper(r, c))
            bits |= 1u << c;
    return bits;
}
