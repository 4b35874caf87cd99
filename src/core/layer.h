/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The seam between the core and the layers above the progress engine (am,
 * stream, rma, and the ones to come). A layer describes itself in one
 * struct; the list of them lives above the core (src/flit.c) and is
 * handed down to flit_init's core part, so the core walks it without
 * naming any layer.
 *
 * What the core does for each layer, in list order (closing: reverse):
 *  - once per process, ->init: the layer claims its opcodes
 *    (fl_op_register; two layers claiming one opcode is our bug, caught);
 *  - per endpoint, state_size zeroed bytes of its own (fl_ep_layer), then
 *    ->ep_open; ->ep_quiesce before the endpoint's end-of-traffic
 *    handshake; ->ep_close before the transports close;
 *  - ->peer_down after the core has handed back what the dead peer never
 *    took (through the layers' returned-packet functions);
 *  - ->counters names the layer's counters, "<name>.<counter>", at offsets
 *    in its state: flit_ep_counters, flit_stats_t, dumps and FLIT_STATS=1
 *    read them from there (core/stats.h);
 *  - ->handlers_used tells, for a layer with a handler table, how far up
 *    the program has installed handlers (reservations go above).
 * Every callback but init and ep_open may be NULL. They run with the
 * endpoint entered (lock held on a thread-safe one).
 *
 * Holding a packet: a layer may keep one packet reserved in a transport
 * between calls (streams fill a packet across several sends). It points
 * ep->hold at a struct fl_hold; anything else that reserves, polls or
 * sleeps on the endpoint first calls its flush, which commits the packet
 * and clears ep->hold. The cost on every path is one predictable branch.
 */
#ifndef FL_CORE_LAYER_H
#define FL_CORE_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

#define FL_MAX_LAYERS 16

struct flit_ep;
struct fl_setting;

struct fl_layer {
    const char *name;
    size_t state_size; /* per endpoint, zeroed, owned by the core */
    void (*init)(void);
    flit_status (*ep_open)(struct flit_ep *ep, void *state);
    flit_status (*ep_quiesce)(struct flit_ep *ep, void *state);
    void (*ep_close)(struct flit_ep *ep, void *state);
    void (*peer_down)(struct flit_ep *ep, void *state, uint32_t rank);
    const struct fl_counter_desc *counters; /* ends with a NULL name; NULL: none */
    /* Its FLIT_* settings (util/config.h): a table ending with a NULL name,
       registered at flit_init; NULL: none. */
    const struct fl_setting *settings;
    /* Handler tables: 1 + the highest index below `below` with a handler
       installed (0: none). */
    uint32_t (*handlers_used)(const void *state, uint32_t below);
    unsigned slot; /* set by the core: its place in the list */
};

/* A packet a layer keeps reserved between calls (see above). */
struct fl_hold {
    void (*flush)(struct fl_hold *h);
};

/* Takes the list (NULL-terminated, bottom up): slots, then each ->init.
   Once per process. */
void fl_layers_init(struct fl_layer *const *list);

/* Endpoint life, walking the list (core/ep.c). */
flit_status fl_layers_ep_open(struct flit_ep *ep);
void fl_layers_ep_close(struct flit_ep *ep);
flit_status fl_layers_ep_quiesce(struct flit_ep *ep);
void fl_layers_peer_down(struct flit_ep *ep, uint32_t rank);
uint32_t fl_layers_handlers_used(struct flit_ep *ep, uint32_t below);

#endif /* FL_CORE_LAYER_H */
