/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Both sides idle longer than the give-up time, then talk: nobody is down.
 *
 * Run with two ranks over UDP and FLIT_PEER_TIMEOUT=1. After a barrier
 * (the handshake that says both are done with the traffic before), every
 * rank stops polling for --idle-ms (2500: more than twice the timeout).
 * The idle itself is a sleep by nature: a process that does not call flit
 * is what is tested. Then each rank polls once (flit_wait, 1 ms: its peer
 * timers run before anything from its partner can have come, since the
 * partner sends only after its own such poll) and the two exchange --count
 * messages each way, in order, and meet in a barrier. No peer-down may be
 * reported and no send may fail: silence while neither side listened says
 * nothing about the peer. (The give-up clock ran in wall time, so at its
 * next poll an endpoint declared its idle partner down.)
 */
#include <errno.h>
#include <time.h>

#include "mp.h"

#include <flit/am.h>

enum { H_SEQ = 1 };

static struct {
    uint32_t me, partner;
    uint32_t next; /* the partner's next sequence number */
    uint64_t downs;
} g;

static void on_seq(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)buf, (void)n, (void)u;
    uint32_t src = flit_token_rank(t).idx;
    if (src != g.partner || na != 1 || a[0] != g.next)
        FAIL("rank %u: message from %u out of order (seq %u, expected %u)", g.me, src,
             na ? a[0] : 0, g.next);
    g.next++;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    fprintf(stderr, "idle: rank %u: rank %u reported down: %s\n", g.me, peer.idx,
            flit_status_name(reason));
    g.downs++;
}

/* Sleeps ms milliseconds whatever signals come. */
static void idle_for(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        CHECK(errno == EINTR);
}

int main(int argc, char **argv)
{
    uint64_t idle_ms = mp_arg_u64(argc, argv, "--idle-ms", 2500);
    uint32_t count = (uint32_t)test_scaled(mp_arg_u64(argc, argv, "--count", 200));
    if (count == 0)
        count = 1;
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    CHECK(flit_job_size() == 2);
    g.partner = g.me ^ 1u;
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_SEQ), on_seq, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    /* Traffic first, so that both have heard from each other. */
    uint32_t a = 0;
    CHECK_OK(flit_am_short(ep, flit_rank(g.partner), flit_handler(H_SEQ), &a, 1, 0));
    MP_WAIT(ep, g.next == 1);
    CHECK_OK(flit_barrier(ep));

    idle_for(idle_ms); /* neither side polls */

    flit_status st = flit_wait(ep, 1000);
    CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
    for (uint32_t i = 1; i <= count; i++) {
        a = i;
        CHECK_OK(flit_am_short(ep, flit_rank(g.partner), flit_handler(H_SEQ), &a, 1, 0));
    }
    MP_WAIT(ep, g.next == count + 1 || g.downs > 0);
    CHECK_OK(flit_barrier(ep));
    CHECK(g.downs == 0);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    printf("idle: rank %u OK after %llu ms without polling\n", g.me,
           (unsigned long long)idle_ms);
    return 0;
}
