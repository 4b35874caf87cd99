/*
 * Per-endpoint counters. One writer at a time (the endpoint's owner or lock
 * holder), readers anywhere (flit_ep_stats, dumps from the boot thread):
 * relaxed atomics that compile to plain loads and stores.
 */
#ifndef FL_CORE_STATS_H
#define FL_CORE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "flit/flit.h"

struct fl_counters {
    _Atomic uint64_t sent_msgs[FLIT_STAT_KINDS];
    _Atomic uint64_t sent_bytes[FLIT_STAT_KINDS];
    _Atomic uint64_t recv_msgs[FLIT_STAT_KINDS];
    _Atomic uint64_t recv_bytes[FLIT_STAT_KINDS];
    _Atomic uint64_t credit_stalls;
    _Atomic uint64_t returned_to_us;
    _Atomic uint64_t returned_by_us;
    _Atomic uint64_t refused_packets;
    _Atomic uint64_t polls;
    _Atomic uint64_t sleeps;
    _Atomic uint64_t wakeups_sent;
    _Atomic uint64_t peers_down;
    _Atomic uint64_t datagrams_sent;
    _Atomic uint64_t datagrams_received;
    _Atomic uint64_t retransmits;
    _Atomic uint64_t duplicates;
    _Atomic uint64_t faults_injected;
    _Atomic uint64_t stream_sent_msgs;
    _Atomic uint64_t stream_sent_bytes;
    _Atomic uint64_t stream_recv_msgs;
    _Atomic uint64_t stream_recv_bytes;
    _Atomic uint64_t stream_fibers;
    _Atomic uint64_t rma_puts;
    _Atomic uint64_t rma_gets;
    _Atomic uint64_t rma_put_bytes;
    _Atomic uint64_t rma_get_bytes;
    _Atomic uint64_t rma_notifications;
    _Atomic uint64_t rma_refused;
};

#define FL_COUNT(counter, n)                                                  \
    atomic_store_explicit(&(counter),                                         \
        atomic_load_explicit(&(counter), memory_order_relaxed) + (n),         \
        memory_order_relaxed)

#define FL_READ(counter) atomic_load_explicit(&(counter), memory_order_relaxed)

struct flit_ep;
void fl_stats_snapshot(struct flit_ep *ep, flit_stats_t *out);
/* Writes the state dump of ep to fd (safe from another thread). */
void fl_stats_dump(struct flit_ep *ep, int fd);
/* Prints the counters of ep to stderr (FLIT_STATS=1). */
void fl_stats_print(struct flit_ep *ep);

#endif /* FL_CORE_STATS_H */
