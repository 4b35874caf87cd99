/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection on received datagrams, as AMUDP does it: each datagram is
 * dropped, processed twice, or held back behind the next one with the
 * configured probabilities (FLIT_DROP_RATE, FLIT_DUP_RATE,
 * FLIT_REORDER_RATE), from a generator seeded with FLIT_FAULT_SEED + rank so
 * that a failing run can be replayed.
 */
#ifndef FL_CHANNEL_FAULT_H
#define FL_CHANNEL_FAULT_H

#include <stdbool.h>
#include <stdint.h>

enum fl_fault_action { FL_FAULT_NONE, FL_FAULT_DROP, FL_FAULT_DUP, FL_FAULT_REORDER };

struct fl_fault {
    uint64_t state;
    uint32_t drop_ppm, dup_ppm, reorder_ppm;
    bool active;
};

void fl_fault_init(struct fl_fault *f, uint64_t seed, uint32_t drop_ppm, uint32_t dup_ppm,
                   uint32_t reorder_ppm);
enum fl_fault_action fl_fault_roll(struct fl_fault *f);

#endif /* FL_CHANNEL_FAULT_H */
