/* SPDX-License-Identifier: BSD-3-Clause */
/* Peers' liveness: activation, keep-alives, give-up, the timers' pass.
   See peer.c. */
#ifndef FL_CHANNEL_PEER_H
#define FL_CHANNEL_PEER_H

#include <stdint.h>

struct fl_tp_ep;

/* The first use of peer r, in either direction, at now. */
void fl_chan_activate(struct fl_tp_ep *t, uint32_t r, uint64_t now);

/* We look at the clock at now, listening: a long gap since the last look
   is forgiven. */
void fl_chan_listening(struct fl_tp_ep *t, uint64_t now);

/* The timers' pass over every active peer at now: what is due is marked
   (sent by the next flush), t->next_timer set. */
void fl_chan_run_timers(struct fl_tp_ep *t, uint64_t now);

#endif /* FL_CHANNEL_PEER_H */
