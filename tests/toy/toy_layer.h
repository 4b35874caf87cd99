/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A toy layer on the public API, defined here and nowhere in src/: it
 * proves that a layer's folder, its header and one registration are all it
 * takes (flit/layer.h). Each endpoint it opens on reserves a handler; a
 * ping to every other rank counts as "sent" there and "seen" at the peer;
 * FLIT_TOY_BURST says how many pings toy_ping_all sends to each;
 * FLIT_TOY_FAIL_RANK names a rank whose open fails.
 */
#ifndef FLIT_TOY_LAYER_H
#define FLIT_TOY_LAYER_H

#include <flit/layer.h>

extern const flit_layer_t toy_layer;

/* Sends FLIT_TOY_BURST pings to every other rank of ep's job. */
flit_status toy_ping_all(flit_ep_t *ep);
/* Pings seen on ep (its counter toy.seen); UINT64_MAX when not open. */
uint64_t toy_seen(flit_ep_t *ep);
/* Whether ep's toy state was closed by the last flit_ep_destroy (counts the
   layer's close calls in this process). */
unsigned toy_closes(void);

#endif /* FLIT_TOY_LAYER_H */
