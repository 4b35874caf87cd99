/* SPDX-License-Identifier: BSD-3-Clause */
/* Datagrams in: in-order delivery, reordering, reassembly, delayed
   acknowledgements. See recv.c. */
#ifndef FL_CHANNEL_RECV_H
#define FL_CHANNEL_RECV_H

#include <stddef.h>
#include <stdint.h>

#include "transport/dgram.h"
#include "transport/transport.h"

struct fl_tp_ep;

/* Delivers, on the lanes of lane_mask, the chunks a poll's budget held
   back (they are the oldest), while *n stays under the poll's budget. */
void fl_chan_release_all(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb,
                         void *ctx, int *n);

/* Takes datagram buf of len from src (FL_DGRAM_STRANGER: unknown): its
   acknowledgements, then its chunks on the lanes of lane_mask (the others
   come again), packets delivered to cb and counted in *n. */
void fl_chan_take_dgram(struct fl_tp_ep *t, const struct fl_dgram_in *in,
                        unsigned lane_mask, fl_tp_recv_fn cb, void *ctx, int *n);

#endif /* FL_CHANNEL_RECV_H */
