/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared memory between the ranks of one host: rings per ordered pair and
 * lane in files under /dev/shm, wake-ups only for a receiver that said it
 * sleeps, long payloads straight into a peer's mapped segment.
 */
#ifndef FL_TRANSPORT_SHM_SHM_H
#define FL_TRANSPORT_SHM_SHM_H

#include "transport/transport.h"

extern const struct fl_transport fl_tp_shm;

#endif /* FL_TRANSPORT_SHM_SHM_H */
