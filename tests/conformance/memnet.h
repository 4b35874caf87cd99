/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A datagram network made of memory (the fl_dgram_ops seam of
 * src/transport/dgram.h) between the processes of one test: a shared
 * mapping made before fork holds one queue of datagrams per ordered pair
 * of ranks, and each rank has an eventfd that turns readable when a
 * datagram is queued for it. It loses nothing on its own (a full queue
 * refuses the rest of a batch: "would block"); the fault interposer
 * (transport/fault) over it does the losing.
 */
#ifndef FLIT_TESTS_MEMNET_H
#define FLIT_TESTS_MEMNET_H

#include <stddef.h>

#include "transport/dgram.h"

#define MEMNET_RANKS 2u
#define MEMNET_MTU   4096u /* smaller than the largest packet: chunks */

/* Maps the network; call before fork. 0 or -errno. */
int memnet_create(void);

extern const struct fl_dgram_ops memnet_ops;

#endif /* FLIT_TESTS_MEMNET_H */
