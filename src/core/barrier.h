/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint's own collectives and the end of its traffic, carried by
 * the core's control packets (FL_OP_CTRL): the barrier, the maximum of a
 * value over every rank (what handler reservation agrees on), and the
 * quiesce that destruction runs so that nothing sent on the endpoint is
 * still in flight when it goes. The collectives are dissemination rounds:
 * in round r a rank sends to rank + 2^r and hears from rank - 2^r, and
 * after ceil(log2 N) rounds it has heard, through them, from everyone.
 * Each makes progress while it waits, so a peer waiting for our credits
 * is never stuck behind it.
 *
 * Control packet, little-endian, 16 bytes:
 *   0  1  version (FL_WIRE_VERSION)
 *   1  1  FL_OP_CTRL
 *   2  1  kind (FL_CTRL_*)
 *   3  1  0
 *   4  4  argument: BARRIER: the round; MAX: the round, and in bit 31 the
 *         parity of the collective's number (a rank can be one collective
 *         ahead of another, never two)
 *   8  8  MAX: the value; BARRIER: 1 in the quiesce's barrier from a rank
 *         that heard of a dead rank on the way, else 0; FIN: 0
 */
#ifndef FL_CORE_BARRIER_H
#define FL_CORE_BARRIER_H

#include "core/ep.h"

#define FL_CTRL_LEN 16u

enum fl_ctrl_kind {
    FL_CTRL_BARRIER = 1, /* arg: the round */
    FL_CTRL_FIN = 2,     /* quiesce: nothing more from us on this lane */
    FL_CTRL_MAX = 3,     /* arg: round | parity << 31; the value so far */
};

/* Collective over the job: *max becomes the largest value any rank gave.
   FLIT_ERR_PEER_DOWN if a rank died on the way. Called entered. */
flit_status fl_ep_allmax(struct flit_ep *ep, uint64_t *max);

/* Claims FL_OP_CTRL (once, at flit_init). */
void fl_ctrl_init(void);

/*
 * Every rank says "that was my last packet" to every peer it shares a pair
 * with (one that carried a packet either way, itself too) on each lane in
 * turn, then waits to hear it from each: by then every request sent on the
 * endpoint has been handled and its reply sent, and the replies drained.
 * Which pairs carried anything both sides agree on after a barrier that
 * follows every rank's packets reaching their receivers (see barrier.c);
 * where a rank died on the way, every rank alive, as a plain FIN to all.
 * Peers that died are not waited for.
 */
flit_status fl_ep_quiesce(struct flit_ep *ep);

/* A control packet, decoded. */
struct fl_ctrl {
    unsigned kind;
    uint32_t arg;
    uint64_t value;
};

/* Decodes a control packet; false when malformed. */
bool fl_ctrl_decode(const void *pkt, size_t len, struct fl_ctrl *c);

#endif /* FL_CORE_BARRIER_H */
