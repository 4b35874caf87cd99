/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_ep_flush: a process's last words arrive although it ends at once.
 *
 * Rank 0 sends --count numbered short AMs to rank 1, flushes its endpoint
 * and ends with _exit(0): no flit_finalize, no further progress, so a
 * datagram lost on the way (FLIT_DROP_RATE) can only have been sent again
 * during the flush. Rank 1 must receive every message exactly once, in
 * order; it then serves its endpoint until rank 0 is down (what answers a
 * flush is the receiver's acknowledgement, and the last one sent may be
 * lost too: the receiver must outlive the sender, as a server outlives
 * its clients). It calls flit_ep_flush from a handler once
 * (FLIT_ERR_IN_HANDLER) and checks bad input. Run under flitrun
 * --allow-exit-without-finalize: neither rank finalizes (rank 0 is gone
 * when rank 1 would); over UDP with a short FLIT_PEER_TIMEOUT.
 */
#include "mp.h"

#define H_SEQ 1

static struct {
    uint32_t next; /* the number rank 1 expects next */
    bool in_handler_checked;
    bool down; /* rank 0 is gone */
} g;

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)reason, (void)user;
    CHECK(peer.idx == 0);
    g.down = true;
}

static void on_seq(flit_token_t *t, void *buf, size_t len, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)len, (void)user;
    CHECK(nargs == 1);
    if (args[0] != g.next)
        FAIL("message %u arrived when %u was due", args[0], g.next);
    g.next++;
    if (!g.in_handler_checked) {
        CHECK(flit_ep_flush(flit_token_ep(t), 0) == FLIT_ERR_IN_HANDLER);
        g.in_handler_checked = true;
    }
}

int main(int argc, char **argv)
{
    uint32_t count = (uint32_t)mp_arg_u64(argc, argv, "--count", 500);
    CHECK_OK(flit_init(NULL));
    CHECK(flit_job_size() == 2);
    uint32_t me = flit_job_rank().idx;
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_SEQ), on_seq, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    CHECK(flit_ep_flush(NULL, 0) == FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_barrier(ep)); /* handlers in on both */
    if (me == 0) {
        for (uint32_t i = 0; i < count; i++)
            CHECK_OK(flit_am_short(ep, flit_rank(1), flit_handler(H_SEQ), &i, 1, 0));
        CHECK_OK(flit_ep_flush(ep, (int64_t)MP_WAIT_LIMIT_S * 1000000));
        printf("flush: rank 0 sent %u and flushed\n", count);
        fflush(stdout);
        _exit(0); /* the process is gone: nothing is sent again after this */
    }
    MP_WAIT(ep, g.next == count);
    CHECK(g.in_handler_checked);
    MP_WAIT(ep, g.down);
    printf("flush: rank 1 got all %u in order\n", count);
    return 0;
}
