/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliability channel's receive path (src/channel/recv.c, ack.c) on any
 * sequence of datagrams, without sockets (memdgram.h): a datagram goes from
 * the input through fault injection, the decoder, the address / key / rank
 * checks, acknowledgements (against packets this endpoint really sent),
 * in-order delivery, out-of-order holding, duplicates and reassembly, to
 * the receive callback. The input is a script (fuzz.h): datagrams, sends,
 * polls, sleeps. A header can be made right (version, key, ranks) so that
 * the fuzzer reaches what lies behind the checks.
 *
 * The callback decodes each packet as the AM layer would and checks what
 * the channel promises it: a known source and lane, 8-byte alignment, no
 * packet larger than the channel's maximum. With the nesting bit it also
 * does what a request handler does: replies (a send from inside the
 * callback) and polls the reply lane (a reply that found no room).
 */
#include <string.h>

#include "am/wire.h"
#include "channel/wire.h"
#include "fuzz.h"
#include "memdgram.h"
#include "platform/le.h"

struct run {
    struct fl_tp_ep *t;
    bool nest;
    unsigned depth;
};

static void on_packet(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    struct run *r = ctx;
    FUZZ_CHECK(src > 0 && src < FUZZ_RANKS && lane < FL_LANES);
    FUZZ_CHECK(((uintptr_t)pkt & 7) == 0);
    FUZZ_CHECK(len <= fl_chan_max_packet(r->t));
    fuzz_touch(pkt, len);
    struct fl_am_msg m;
    (void)fl_am_decode(pkt, len, &m);
    if (r->nest && lane == FL_LANE_REQ && r->depth < 2) {
        r->depth++;
        memdgram_send(r->t, src, FL_LANE_REP, 40, 0);
        fl_chan_poll(r->t, FL_LANE_MASK(FL_LANE_REP), on_packet, r, 64);
        r->depth--;
    }
}

static void poll_all(struct run *r, unsigned mask)
{
    memdgram_poll_all(r->t, mask, on_packet, r, &r->depth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned setup = memdgram_setup(data[0]);
    struct run r = {.nest = (setup & FUZZ_SETUP_NEST) != 0};
    r.t = memdgram_open(setup);
    size_t i = 1;
    while (i < size) {
        uint8_t op = data[i++];
        if (op >> 6 == FUZZ_OP_DGRAM) {
            if (size - i < 3)
                break;
            uint8_t who = data[i];
            size_t len = fl_get16(data + i + 1);
            i += 3;
            if (len > size - i)
                len = size - i;
            uint32_t src = who & 3u;
            memdgram_queue(src == FUZZ_SRC_STRANGER ? FL_DGRAM_STRANGER : src, data + i,
                           len, (who & FUZZ_FIX_HEADER) != 0);
            i += len;
        } else if (op >> 6 == FUZZ_OP_SEND) {
            size_t used =
                memdgram_op_send(r.t, data + i, size - i, fl_chan_max_packet(r.t));
            if (!used)
                break;
            i += used;
        } else if (op >> 6 == FUZZ_OP_POLL) {
            poll_all(&r, op & 3u ? op & 3u : FL_LANES_ALL);
        } else {
            memdgram_op_state(r.t);
        }
    }
    poll_all(&r, FL_LANES_ALL);
    (void)fl_chan_settled(r.t);
    memdgram_close(r.t);
    return 0;
}
