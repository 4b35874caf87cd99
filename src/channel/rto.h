/* SPDX-License-Identifier: BSD-3-Clause */
/* The retransmission timer and the round-trip estimate: see rto.c. */
#ifndef FL_CHANNEL_RTO_H
#define FL_CHANNEL_RTO_H

#include <stdbool.h>
#include <stdint.h>

struct fl_tp_ep;
struct chan_peer;
struct tx_lane;

/* Whether the path to p lost a chunk lately (RACK found one, or a
   timeout's verdict). */
bool fl_chan_lossy(const struct chan_peer *p, uint64_t now);

/* The retransmission timeout now: the estimate, at least twice the
   lateness learnt, backed off. */
uint64_t fl_chan_rto_now(const struct chan_peer *p, uint64_t now);

/* A new peer's first timeout: 50 ms, or what the round trips to the
   others showed, if longer. */
uint64_t fl_chan_first_rto(const struct fl_tp_ep *t);

/* When the next tail probe is due (0: none may go now). */
uint64_t fl_chan_probe_due(const struct chan_peer *p, uint64_t now);

/* A round trip of sample ns measured (the echo of our clock). */
void fl_chan_rtt_sample(struct fl_tp_ep *t, struct chan_peer *p, uint64_t sample);

/* A resend turned out needless after the peer's silence of late ns: the
   timers wait that long, decaying (not on a lossy path). */
void fl_chan_learn_late(struct chan_peer *p, uint64_t late, uint64_t now);

/* What waited for the verdict on tx's timeout resend was lost with it:
   all of it goes again, and the path is lossy for a while. */
void fl_chan_rto_lost(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                      uint64_t now);

/* The timers' look at p's send lanes at now: marks chunks due again (a
   timeout, a tail probe) and notes its next deadline in *next. judge
   false: acknowledgements may wait unread in our socket; nothing is taken
   for lost yet. */
void fl_chan_tx_timers(struct fl_tp_ep *t, struct chan_peer *p, uint64_t now, bool judge,
                       uint64_t *next);

#endif /* FL_CHANNEL_RTO_H */
