/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every packet starts with a version byte and an opcode; the rest belongs to
 * the layer that owns the opcode. The progress engine checks those two bytes
 * and hands the packet to the layer registered for the opcode.
 */
#ifndef FL_CORE_PACKET_H
#define FL_CORE_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

#define FL_WIRE_VERSION 1

/*
 * Opcodes are the layers' own: each declares its numbers in its wire
 * header and claims them at init (fl_op_register); two claims of one
 * number stop the process (our bug). The core's own packets (barrier,
 * end of traffic: core/barrier.h) use FL_OP_CTRL.
 */
#define FL_OP_CTRL  6
#define FL_OP_COUNT 32

/* The largest packet a layer builds (the largest medium active message
   and its header): what the transports are opened for. */
#define FL_PACKET_MAX (FLIT_AM_MAX_MEDIUM + 512u)

struct flit_ep;
typedef void (*fl_op_fn)(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                         size_t len);

/*
 * One of our own packets came back: refused by peer (inside a returned
 * message, with the peer's reason) or reclaimed from a peer that died
 * (reclaimed, FLIT_ERR_PEER_DOWN). The layer that owns its opcode tells the
 * program; it answers false for a packet it cannot have sent (malformed).
 */
typedef bool (*fl_op_back_fn)(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                              flit_status reason, bool reclaimed);

/* A layer claims opcode op once, at flit_init: fn receives its packets,
   back (NULL: none can come back) hears of those that come back. */
void fl_op_register(unsigned op, fl_op_fn fn, fl_op_back_fn back);

/* The transports' receive callback: checks version and opcode, dispatches. */
void fl_packet_dispatch(void *ep, uint32_t src, unsigned lane, void *pkt, size_t len);

/* Hands a packet that came back to the layer that owns its opcode. */
bool fl_packet_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                    flit_status reason, bool reclaimed);

#endif /* FL_CORE_PACKET_H */
