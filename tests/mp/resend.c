/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over a path that loses nothing (UDP between the ranks of one host), what
 * was not lost is not sent again, even when a rank stops listening for a
 * while, as a process on a busy host is not scheduled for a tick or more.
 * Two ranks, two floods, each rank's retransmission counter read before
 * and after each:
 *
 *  - request/reply: both ranks send --count short requests to each other
 *    at once, every one answered by a short reply (AMUDP's testping);
 *  - one way: rank 0 sends --count 1 KiB medium messages to rank 1, whose
 *    handler answers only the last.
 *
 * In each flood each rank stops listening --pauses times for --pause-ms
 * (more than the smallest retransmission timeout, FLIT_RTO_MIN_US): in its
 * request handler (its peer's requests and acknowledgements wait: the
 * peer's timers run out) and, in the request/reply flood, in its sending
 * loop too (its peer's acknowledgements wait unread in its own socket
 * while its timers run out). A stall may cost a chunk or two sent again
 * (a timeout's or a tail probe's single chunk, whose acknowledgement shows
 * the rest arrived); resending what was in flight costs hundreds. The
 * bound: --per-pause chunks a pause and --slack besides, for the pauses
 * the host adds.
 *
 *     FLIT_TRANSPORT=udp flitrun -n 2 mp_resend [--count N] [--pauses N]
 *         [--pause-ms MS] [--per-pause N] [--slack N]
 */
#include "mp.h"

enum { H_REQ = 1, H_REP, H_ONEWAY };

#define ONEWAY_BYTES 1024u

static struct {
    flit_ep_t *ep;
    uint32_t me, peer;
    uint64_t count, pauses, pause_us;
    uint64_t reqs, reps, oneway; /* handled */
    uint8_t payload[ONEWAY_BYTES];
} g;

/* Stops listening when n (1-based) is one of the --pauses evenly spaced
   points of a flood of g.count; shift puts a rank's points apart from its
   peer's. */
static void maybe_pause(uint64_t n, uint64_t shift)
{
    uint64_t step = g.count / (g.pauses + 1);
    if (step && n % step == (shift * step / 3) % step && n / step >= 1 &&
        n / step <= g.pauses)
        usleep((useconds_t)g.pause_us);
}

static void on_req(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1);
    if (args[0] != (uint32_t)g.reqs)
        FAIL("request %u, expected %llu (lost, repeated or out of order)", args[0],
             (unsigned long long)g.reqs);
    g.reqs++;
    maybe_pause(g.reqs, 1);
    CHECK_OK(flit_am_reply_short(token, flit_handler(H_REP), args, 1));
}

static void on_rep(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1 && args[0] == (uint32_t)g.reps);
    g.reps++;
}

static void on_oneway(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    (void)user;
    CHECK(nargs == 1 && args[0] == (uint32_t)g.oneway && nbytes == ONEWAY_BYTES);
    CHECK(memcmp(buf, g.payload, ONEWAY_BYTES) == 0);
    g.oneway++;
    maybe_pause(g.oneway, 1);
    uint32_t first = 0; /* the first reply of this flood */
    if (g.oneway == g.count)
        CHECK_OK(flit_am_reply_short(token, flit_handler(H_REP), &first, 1));
}

static uint64_t resent_so_far(void)
{
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(g.ep, &s));
    return s.retransmits;
}

static void request_reply_flood(void)
{
    for (uint64_t i = 0; i < g.count; i++) {
        uint32_t a = (uint32_t)i;
        CHECK_OK(flit_am_short(g.ep, flit_rank(g.peer), flit_handler(H_REQ), &a, 1, 0));
        CHECK_OK(flit_poll(g.ep));
        maybe_pause(i + 1, 2);
    }
    MP_WAIT(g.ep, g.reps == g.count && g.reqs == g.count);
}

static void one_way_flood(void)
{
    g.reps = 0;
    if (g.me == 0) {
        for (uint64_t i = 0; i < g.count; i++) {
            uint32_t a = (uint32_t)i;
            CHECK_OK(flit_am_medium(g.ep, flit_rank(g.peer), flit_handler(H_ONEWAY),
                                    g.payload, ONEWAY_BYTES, &a, 1, 0));
        }
        MP_WAIT(g.ep, g.reps == 1);
    } else {
        MP_WAIT(g.ep, g.oneway == g.count);
    }
}

/* Runs a flood; fails when this rank sent more chunks again than bound. */
static void check_flood(const char *what, void (*flood)(void), uint64_t bound)
{
    CHECK_OK(flit_barrier(g.ep));
    uint64_t before = resent_so_far();
    double t0 = mp_now();
    flood();
    double t = mp_now() - t0;
    CHECK_OK(flit_barrier(g.ep));
    uint64_t resent = resent_so_far() - before;
    printf("resend: rank %u, %s flood of %llu: %llu chunks sent again (bound %llu), "
           "%.2f s\n",
           g.me, what, (unsigned long long)g.count, (unsigned long long)resent,
           (unsigned long long)bound, t);
    fflush(stdout);
    if (resent > bound)
        FAIL("%s flood over a path that loses nothing: %llu chunks sent again, more "
             "than %llu",
             what, (unsigned long long)resent, (unsigned long long)bound);
}

int main(int argc, char **argv)
{
    g.count = test_scaled(mp_arg_u64(argc, argv, "--count", 20000));
    g.pauses = mp_arg_u64(argc, argv, "--pauses", 4);
    g.pause_us = mp_arg_u64(argc, argv, "--pause-ms", 30) * 1000u;
    uint64_t per_pause = mp_arg_u64(argc, argv, "--per-pause", 4);
    uint64_t slack = mp_arg_u64(argc, argv, "--slack", 32);
    CHECK_OK(flit_init(NULL));
    if (flit_job_size() != 2) {
        fprintf(stderr, "resend needs 2 ranks\n");
        return TEST_SKIP;
    }
    g.me = flit_job_rank().idx;
    g.peer = 1 - g.me;
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    mp_pattern_fill(g.payload, sizeof g.payload, 7);
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_req, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_rep, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ONEWAY), on_oneway, NULL));
    /* Both ranks' pauses, its own and its peer's, fall in each flood. */
    uint64_t bound = slack + per_pause * 2 * 2 * g.pauses;
    check_flood("request/reply", request_reply_flood, bound);
    check_flood("one-way", one_way_flood, bound);
    CHECK_OK(flit_finalize());
    printf("resend: rank %u OK\n", g.me);
    return 0;
}
