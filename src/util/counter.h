/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters with one writer at a time (the endpoint's owner or lock holder)
 * and readers anywhere (flit_ep_stats, dumps from the boot thread): relaxed
 * atomics that compile to plain loads and stores.
 */
#ifndef FL_UTIL_COUNTER_H
#define FL_UTIL_COUNTER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

typedef _Atomic uint64_t fl_counter;

#define FL_COUNT(counter, n)                                                             \
    atomic_store_explicit(&(counter),                                                    \
                          atomic_load_explicit(&(counter), memory_order_relaxed) + (n),  \
                          memory_order_relaxed)

#define FL_READ(counter) atomic_load_explicit(&(counter), memory_order_relaxed)

/*
 * How a plug-in inside the library (the core, a transport, a layer of
 * core/layer.h) declares one counter, in a table next to its code that
 * ends with an entry whose name is NULL: the fl_counter at offset in its
 * per-endpoint state, shown as "<plug-in>.<name>" (core/stats.h). One
 * that lives elsewhere (in memory its peers write) gives read instead.
 * Layers on the public API declare theirs in flit_layer_t
 * (flit_layer_counter_t), converted to this form when they are registered
 * (core/pub_layer.c), so that one path reads, finds and reports them all.
 */
struct fl_counter_desc {
    const char *name; /* [a-z0-9_], unique in the plug-in */
    const char *doc;  /* one line */
    flit_counter_kind kind;
    size_t offset;
    uint64_t (*read)(const void *state); /* NULL: the fl_counter at offset */
};

/* An entry of such a table: the fl_counter field of struct_type. */
#define FL_COUNTER(struct_type, field, name, kind, doc)                                  \
    {                                                                                    \
        (name), (doc), (kind), offsetof(struct_type, field), NULL                        \
    }

#endif /* FL_UTIL_COUNTER_H */
