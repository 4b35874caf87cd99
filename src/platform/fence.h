/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asymmetric fences, for the two handshakes of the shared-memory path where
 * one side is hot and the other is about to sleep:
 *
 *   sender:   publish packet      | receiver: sleeping = 1
 *             fast fence          |           slow fence
 *             read sleeping       |           look at the rings
 *
 * (and the same between a consumer freeing room and a producer waiting for
 * it). Each side must see the other's store, which takes a full fence on
 * both sides (Dekker). The hot side runs per message; the sleeping side is
 * about to make a system call anyway. So when the kernel offers
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), the slow fence issues it --
 * every thread of every registered process then passes a full barrier -- and
 * the fast fence is only a compiler barrier. Without membarrier both are
 * plain full fences.
 */
#ifndef FL_PLATFORM_FENCE_H
#define FL_PLATFORM_FENCE_H

#include <stdatomic.h>
#include <stdbool.h>

extern bool fl_fence_asymmetric;

/* Registers this process for the slow fence. Once, before any handshake. */
void fl_fence_setup(void);

static inline void fl_fence_fast(void)
{
    if (__builtin_expect(fl_fence_asymmetric, 1))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

void fl_fence_slow(void);

#endif /* FL_PLATFORM_FENCE_H */
