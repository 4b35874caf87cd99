/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters with one writer at a time (the endpoint's owner or lock holder)
 * and readers anywhere (flit_ep_stats, dumps from the boot thread): relaxed
 * atomics that compile to plain loads and stores.
 */
#ifndef FL_UTIL_COUNTER_H
#define FL_UTIL_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t fl_counter;

#define FL_COUNT(counter, n)                                                             \
    atomic_store_explicit(&(counter),                                                    \
                          atomic_load_explicit(&(counter), memory_order_relaxed) + (n),  \
                          memory_order_relaxed)

#define FL_READ(counter) atomic_load_explicit(&(counter), memory_order_relaxed)

#endif /* FL_UTIL_COUNTER_H */
