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

enum fl_op {
    FL_OP_AM_SHORT = 1,
    FL_OP_AM_MEDIUM = 2,
    FL_OP_AM_LONG = 3,      /* payload already in the segment (put) */
    FL_OP_AM_FRAG = 4,      /* a piece of a long payload, copied on arrival */
    FL_OP_RETURN = 5,       /* a refused packet sent back, with the reason */
    FL_OP_CTRL = 6,         /* library-internal: barrier, quiesce */
    FL_OP_STREAM = 7,       /* a packet of a stream message (src/stream) */
    FL_OP_RMA = 8,          /* one-sided communication (src/rma) */
    FL_OP_COUNT = 32
};

struct flit_ep;
typedef void (*fl_op_fn)(struct flit_ep *ep, uint32_t src, unsigned lane,
                         void *pkt, size_t len);

/* Upper layers register their opcodes once, at flit_init. */
void fl_op_register(enum fl_op op, fl_op_fn fn);

/* The transports' receive callback: checks version and opcode, dispatches. */
void fl_packet_dispatch(void *ep, uint32_t src, unsigned lane, void *pkt,
                        size_t len);

/*
 * One of our own packets came back: refused by peer (inside a returned
 * message, with the peer's reason) or reclaimed from a peer that died
 * (reclaimed, FLIT_ERR_PEER_DOWN). The layer that owns its opcode tells the
 * program; it answers false for a packet it cannot have sent (malformed).
 */
typedef bool (*fl_op_back_fn)(struct flit_ep *ep, uint32_t peer, void *pkt,
                              size_t len, flit_status reason, bool reclaimed);
void fl_op_register_back(enum fl_op op, fl_op_back_fn fn);
bool fl_packet_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                    flit_status reason, bool reclaimed);

#endif /* FL_CORE_PACKET_H */
