/*
 * The endpoint's own collectives and the end of its traffic, carried by
 * the core's control packets (FL_OP_CTRL): the barrier, and the quiesce
 * that destruction runs so that nothing sent on the endpoint is still in
 * flight when it goes.
 *
 * Control packet, little-endian, 8 bytes:
 *   0  1  version (FL_WIRE_VERSION)
 *   1  1  FL_OP_CTRL
 *   2  1  kind (FL_CTRL_*)
 *   3  1  0
 *   4  4  argument (barrier: the round)
 */
#ifndef FL_CORE_BARRIER_H
#define FL_CORE_BARRIER_H

#include "core/ep.h"

#define FL_CTRL_LEN 8u

enum fl_ctrl_kind {
    FL_CTRL_BARRIER = 1,    /* arg: the round */
    FL_CTRL_FIN = 2,        /* quiesce: nothing more from us on this lane */
};

/* Claims FL_OP_CTRL (once, at flit_init). */
void fl_ctrl_init(void);

/*
 * Every rank says "that was my last packet" to every rank (itself too) on
 * each lane in turn, then waits to hear it from all: by then every request
 * sent on the endpoint has been handled and its reply sent, and the replies
 * drained. Peers that died are not waited for.
 */
flit_status fl_ep_quiesce(struct flit_ep *ep);

/* Decodes a control packet; false when malformed. */
bool fl_ctrl_decode(const void *pkt, size_t len, unsigned *kind, uint32_t *arg);

#endif /* FL_CORE_BARRIER_H */
