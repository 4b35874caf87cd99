/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank that only sends still answers its peers.
 *
 * Three ranks, FLIT_PEER_TIMEOUT=1, over two "hosts" of this machine
 * (flitrun --hosts localhost,127.0.0.1 --map-by host --launch 'unshare
 * --ipc': ranks 0 and 2 share memory, rank 1 is reached over UDP). After a barrier, rank
 * 1 sends rank 0 one message and waits. Rank 0, for --send-ms (more than twice the
 * give-up time), sends rank 2 a short message every millisecond and computes in between:
 * it never polls, and never waits for room (the messages fit in the ring, so its sends
 * never stall and poll on their own). Rank 1's message must still be acknowledged and
 * handled within the loop, and nobody reported down: a sender polls when nothing polled
 * for 10 ms (fl_progress_on_send). Before that, rank 1 gave rank 0 up after one second,
 * its message unacknowledged, and rank 0 ran rank 1's handler only after the loop.
 */

#include "mp.h"

#include <flit/am.h>

enum { H_MSG = 1, H_DONE };

static struct {
    uint32_t me;
    volatile unsigned msgs, dones;
    uint64_t downs;
} g;

static void on_msg(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)u;
    g.msgs++;
}

static void on_done(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *u)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)u;
    g.dones++;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    fprintf(stderr, "send_listen: rank %u: rank %u reported down: %s\n", g.me, peer.idx,
            flit_status_name(reason));
    g.downs++;
}

int main(int argc, char **argv)
{
    double send_s = (double)mp_arg_u64(argc, argv, "--send-ms", 3000) / 1e3;
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    CHECK(flit_job_size() == 3);
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_MSG), on_msg, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_DONE), on_done, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    CHECK_OK(flit_barrier(ep));

    if (g.me == 0) {
        uint64_t polls0 = mp_counter(ep, "core.send_polls");
        double start = mp_now(), next = start;
        unsigned sent = 0, got_in_loop = 0;
        while (mp_now() - start < send_s) {
            if (mp_now() >= next) {
                CHECK_OK(
                    flit_am_short(ep, flit_rank(2), flit_handler(H_MSG), NULL, 0, 0));
                sent++;
                next += 1e-3;
            }
            got_in_loop = g.msgs;
        }
        uint64_t send_polls = mp_counter(ep, "core.send_polls") - polls0;
        CHECK_OK(flit_am_short(ep, flit_rank(1), flit_handler(H_DONE), NULL, 0, 0));
        CHECK_OK(flit_am_short(ep, flit_rank(2), flit_handler(H_DONE), NULL, 0, 0));
        printf("send_listen: rank 0 sent %u in %.1f s without polling; rank 1's message "
               "handled in the loop: %s; %llu polls by sends\n",
               sent, send_s, got_in_loop ? "yes" : "no", (unsigned long long)send_polls);
        CHECK(got_in_loop == 1);
        CHECK(send_polls > 0);
    } else if (g.me == 1) {
        CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_MSG), NULL, 0, 0));
        MP_WAIT(ep, g.dones == 1 || g.downs > 0);
    } else {
        MP_WAIT(ep, g.dones == 1 || g.downs > 0);
    }
    CHECK(g.downs == 0);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
