/* SPDX-License-Identifier: BSD-3-Clause */
/* The opcode table: which layer's function receives each packet. */
#include "core/packet.h"

#include <stdlib.h>

#include "core/ep.h"
#include "util/log.h"

static fl_op_fn op_table[FL_OP_COUNT];
static fl_op_back_fn back_table[FL_OP_COUNT];

void fl_op_register(unsigned op, fl_op_fn fn, fl_op_back_fn back)
{
    if (op == 0 || op >= FL_OP_COUNT || op_table[op]) {
        fl_error("opcode %u claimed twice, or out of range: two layers disagree", op);
        abort();
    }
    op_table[op] = fn;
    back_table[op] = back;
}

bool fl_packet_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                    flit_status reason, bool reclaimed)
{
    const uint8_t *b = pkt;
    if (len < 2 || b[0] != FL_WIRE_VERSION || b[1] >= FL_OP_COUNT || !back_table[b[1]])
        return false;
    return back_table[b[1]](ep, peer, pkt, len, reason, reclaimed);
}

void fl_packet_dispatch(void *arg, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    struct flit_ep *ep = arg;
    const uint8_t *b = pkt;
    ep->events++;
    if (len >= 2 && b[0] == FL_WIRE_VERSION && b[1] < FL_OP_COUNT && op_table[b[1]]) {
        op_table[b[1]](ep, src, lane, pkt, len);
        return;
    }
    FL_COUNT(ep->stats.refused_packets, 1);
    fl_warn("refused a packet from rank %u: version %u, opcode %u, %zu bytes", src,
            len ? b[0] : 0, len > 1 ? b[1] : 0, len);
}
