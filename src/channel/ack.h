/* SPDX-License-Identifier: BSD-3-Clause */
/* Acknowledgements taken: see ack.c. */
#ifndef FL_CHANNEL_ACK_H
#define FL_CHANNEL_ACK_H

#include <stdint.h>

#include "channel/wire.h"

struct fl_tp_ep;
struct chan_peer;

/* Peer p's acknowledgement a of what we sent it on lane, received at now
   in a datagram echoing our clock reading echo (0: none). */
void fl_chan_take_ack(struct fl_tp_ep *t, struct chan_peer *p, unsigned lane,
                      const struct fl_chan_ack *a, uint32_t echo, uint64_t now);

#endif /* FL_CHANNEL_ACK_H */
