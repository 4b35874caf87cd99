/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A handler's reply, then both sides idle longer than the give-up time:
 * nobody is down.
 *
 * Run with two ranks over UDP, FLIT_PEER_TIMEOUT=1 and FLIT_ACK_DELAY_US
 * long (a delayed acknowledgement the requester never gets to send).
 * Rank 0 sends a request; rank 1's handler replies from inside its poll,
 * so the reply goes out after that poll's last look at the clock. Rank 0
 * stops polling as soon as the reply is in (its acknowledgement still
 * held back), rank 1 as soon as its handler ran: each stops at a
 * handshake, then idles --idle-ms (more than twice the timeout; the idle
 * is a sleep by nature: a process that does not call flit is what is
 * tested), rank 0 300 ms more. Then rank 1 polls (its timers look at
 * the reply before rank 0 can answer), both exchange a message each way
 * and meet in a barrier. No peer-down may be reported: the reply waited unacknowledged
 * only while neither side listened. (The channel forgave the time unheard
 * only to chunks sent before its last look at the clock: the reply's give-up
 * clock ran through the idle, and rank 1 declared rank 0 down.)
 */
#include <errno.h>
#include <time.h>

#include "mp.h"

#include <flit/am.h>

enum { H_REQ = 1, H_REP, H_SEQ };

static struct {
    uint32_t me, partner;
    unsigned requests, replies, seqs;
    uint64_t downs;
} g;

static void on_req(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)buf, (void)n, (void)a, (void)na, (void)u;
    g.requests++;
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_REP), NULL, 0));
}

static void on_rep(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)u;
    g.replies++;
}

static void on_seq(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)u;
    g.seqs++;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    fprintf(stderr, "idle_reply: rank %u: rank %u reported down: %s\n", g.me, peer.idx,
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
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    CHECK(flit_job_size() == 2);
    g.partner = g.me ^ 1u;
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_REQ), on_req, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_REP), on_rep, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_SEQ), on_seq, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    CHECK_OK(flit_barrier(ep)); /* handlers in, both in contact */

    if (g.me == 0) {
        CHECK_OK(
            flit_am_short(ep, flit_rank(g.partner), flit_handler(H_REQ), NULL, 0, 0));
        MP_WAIT(ep, g.replies == 1);
    } else {
        MP_WAIT(ep, g.requests == 1);
    }
    /* Neither side polls; the reply is unacknowledged. Rank 0 idles
       300 ms longer (less than the timeout), so that rank 1's timers judge the reply (in
       the flit_wait below) before anything of rank 0's can come: a rank 1 descheduled
       that long only lets the test pass. */
    idle_for(idle_ms + (g.me == 0 ? 300 : 0));
    flit_status st = flit_wait(ep, 1000);
    CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);

    uint32_t a = g.me;
    CHECK_OK(flit_am_short(ep, flit_rank(g.partner), flit_handler(H_SEQ), &a, 1, 0));
    MP_WAIT(ep, g.seqs == 1 || g.downs > 0);
    CHECK_OK(flit_barrier(ep));
    CHECK(g.downs == 0);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    printf("idle_reply: rank %u OK after %llu ms without polling\n", g.me,
           (unsigned long long)idle_ms);
    return 0;
}
