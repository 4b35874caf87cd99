/* SPDX-License-Identifier: BSD-3-Clause */
/* Peers gone quiet give their buffers back; the gauge of what is held.
   See idle.c. */
#ifndef FL_CHANNEL_IDLE_H
#define FL_CHANNEL_IDLE_H

#include <stdint.h>

struct fl_tp_ep;
struct chan_peer;

/* p's buffers grew by bytes at now (an allocation): counted, p is no
   longer idle, and the timers look at p again once it may be quiet. */
void fl_chan_hold(struct fl_tp_ep *t, struct chan_peer *p, uint64_t bytes, uint64_t now);

/* The timers' pass at now over p (not down): its buffers are given back
   when it has been quiet for the idle period; else its deadline is noted
   in *next while it holds any. */
void fl_chan_idle_check(struct fl_tp_ep *t, struct chan_peer *p, uint64_t now,
                        uint64_t *next);

/* After the pass at now: what quiet peers gave back goes back to the
   system (at most every so often; else the deadline in *next). */
void fl_chan_idle_trim(struct fl_tp_ep *t, uint64_t now, uint64_t *next);

#endif /* FL_CHANNEL_IDLE_H */
