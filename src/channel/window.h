/* SPDX-License-Identifier: BSD-3-Clause */
/* The send window and retransmission buffer: see window.c. The channel's
   ->reserve, ->commit, ->commit_lent, ->settle_lent, ->cancel and ->reclaim
   are declared in channel.h. */
#ifndef FL_CHANNEL_WINDOW_H
#define FL_CHANNEL_WINDOW_H

#include <stdint.h>

#include "flit/flit.h"

struct fl_tp_ep;

/* The size of the chunks to peer r, from its path's datagrams: asked of
   the transport on first need (on UDP that probes the route). */
flit_status fl_chan_chunk_fit(struct fl_tp_ep *t, uint32_t r);

#endif /* FL_CHANNEL_WINDOW_H */
