/* SPDX-License-Identifier: BSD-3-Clause */
/* Several paths to a peer (path.c). */
#ifndef FL_CHANNEL_PATH_H
#define FL_CHANNEL_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "channel/state.h"

/* Peer p is reached by n paths (the transport's ->paths): with more than
   one, their state. false: no memory. */
bool fl_chan_paths_open(struct chan_peer *p, unsigned n);
void fl_chan_paths_close(struct chan_peer *p);
/* The path the next datagram to p takes. */
unsigned fl_chan_path_pick(struct chan_peer *p);
/* A datagram of bytes went to p by path (asks: chunks or a ping, which
   the peer answers). */
void fl_chan_path_sent(struct fl_tp_ep *t, struct chan_peer *p, unsigned path,
                       size_t bytes, bool asks, uint64_t now);
/* A datagram from p came by path (asks: chunks or a ping). */
void fl_chan_path_heard(struct fl_tp_ep *t, struct chan_peer *p, unsigned path, bool asks,
                        uint64_t now);
/* The timers' look at p's paths: probes due, silent paths taken down. */
void fl_chan_path_timers(struct fl_tp_ep *t, struct chan_peer *p, uint64_t now,
                         uint64_t *next);
/* " rails up,down": p's paths' state, appended to buf. */
void fl_chan_path_state(const struct chan_peer *p, char *buf, size_t len);

#endif /* FL_CHANNEL_PATH_H */
