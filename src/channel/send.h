/* SPDX-License-Identifier: BSD-3-Clause */
/* Datagrams built from what is due and sent in batches: see send.c. */
#ifndef FL_CHANNEL_SEND_H
#define FL_CHANNEL_SEND_H

#include <stdint.h>

struct fl_tp_ep;

/* Sends what peer r has due (a commit without FL_COMMIT_MORE). */
void fl_chan_flush_peer(struct fl_tp_ep *t, uint32_t r);

/* Sends what every queued peer has due, until the socket is full. */
void fl_chan_flush(struct fl_tp_ep *t);

#endif /* FL_CHANNEL_SEND_H */
