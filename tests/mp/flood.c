/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks flood each other with requests, all at once, and every request
 * handler sends a reply: short or 64 KiB medium requests, answered by short
 * or 64 KiB medium replies (all four pairs).
 *
 * Phase 1, blocking sends: a send that finds no room polls, and the handlers
 * it runs reply into rings the other side is not draining (it is sending
 * too). Must not deadlock (replies travel on their own lane), and every
 * handler runs exactly once: per-source sequence numbers are consecutive and
 * the counts exact.
 *
 * Phase 2, FLIT_AM_NONBLOCK: keep sending until FLIT_ERR_AGAIN comes back
 * (bounded), then poll and go on. A refused send sent nothing: the counts
 * stay exact, announced by a final message per peer. The sender's
 * flit_ep_stats shows the credit stalls.
 *
 *     flitrun -n 2 mp_flood [--count N]
 */
#include "mp.h"

enum { H_REQ = 1, H_REP = 2, H_DONE = 3 };

#define BIG          FLIT_AM_MAX_MEDIUM
#define PHASE2_EXTRA 100000u  /* more messages, at most, to meet AGAIN */
#define RETRY_LIMIT  1000000u /* refusals in a row for one message */

struct peer {
    uint64_t rx[2];      /* requests handled from it, per phase */
    uint64_t rep[2];     /* replies handled from it, per phase */
    uint64_t tx[2];      /* requests sent to it, per phase */
    uint64_t done_count; /* phase 2 total it announced */
    int done;
};

static struct {
    flit_ep_t *ep;
    uint32_t me, n;
    int phase;
    struct peer *peers;
    uint8_t *big; /* a 64 KiB pattern: same for every message */
    uint8_t *reply_big;
} g;

/* Request i: even ones short, odd ones medium; replies short for i % 4 < 2. */
static int req_is_medium(uint64_t i)
{
    return i % 2 == 1;
}
static int rep_is_medium(uint64_t i)
{
    return i % 4 >= 2;
}

static void check_big(const void *buf, size_t nbytes, uint32_t src, uint64_t i,
                      const char *what)
{
    if (nbytes != BIG)
        FAIL("%s %llu from rank %u: %zu bytes, expected %u", what, (unsigned long long)i,
             src, nbytes, BIG);
    if (memcmp(buf, g.big, BIG) != 0)
        FAIL("%s %llu from rank %u: payload differs", what, (unsigned long long)i, src);
}

static void on_req(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n && src != g.me && nargs == 2);
    int ph = (int)args[1];
    CHECK(ph == 0 || ph == 1);
    struct peer *p = &g.peers[src];
    uint64_t i = p->rx[ph];
    if (args[0] != (uint32_t)i)
        FAIL("phase %d: request %u from rank %u, expected %llu (lost, repeated "
             "or out of order)",
             ph + 1, args[0], src, (unsigned long long)i);
    if (req_is_medium(i))
        check_big(buf, nbytes, src, i, "request");
    else
        CHECK(buf == NULL && nbytes == 0);
    p->rx[ph]++;
    uint32_t rargs[2] = {(uint32_t)i, (uint32_t)ph};
    /* Phase 2 answers with large replies only: a flooded rank then stops
       draining its requests, so its senders do meet AGAIN. */
    if (rep_is_medium(i) || ph == 1)
        CHECK_OK(
            flit_am_reply_medium(token, flit_handler(H_REP), g.reply_big, BIG, rargs, 2));
    else
        CHECK_OK(flit_am_reply_short(token, flit_handler(H_REP), rargs, 2));
}

static void on_rep(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n && src != g.me && nargs == 2);
    int ph = (int)args[1];
    CHECK(ph == 0 || ph == 1);
    struct peer *p = &g.peers[src];
    uint64_t i = p->rep[ph];
    if (args[0] != (uint32_t)i)
        FAIL("phase %d: reply %u from rank %u, expected %llu", ph + 1, args[0], src,
             (unsigned long long)i);
    if (i >= p->tx[ph])
        FAIL("phase %d: reply %llu from rank %u, but only %llu requests sent", ph + 1,
             (unsigned long long)i, src, (unsigned long long)p->tx[ph]);
    if (rep_is_medium(i) || ph == 1)
        check_big(buf, nbytes, src, i, "reply");
    else
        CHECK(buf == NULL && nbytes == 0);
    p->rep[ph]++;
}

static void on_done(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)user;
    (void)buf;
    (void)nbytes;
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n && nargs == 1);
    struct peer *p = &g.peers[src];
    /* Requests are ordered: all of phase 2 was handled before this one. */
    if (p->rx[1] != args[0])
        FAIL("rank %u sent %u requests in phase 2, %llu were handled", src, args[0],
             (unsigned long long)p->rx[1]);
    p->done_count = args[0];
    p->done = 1;
}

static flit_status send_req(uint32_t dst, int ph, unsigned flags)
{
    struct peer *p = &g.peers[dst];
    uint64_t i = p->tx[ph];
    uint32_t args[2] = {(uint32_t)i, (uint32_t)ph};
    /* Counted first: its reply can run inside the call. Undone if refused. */
    p->tx[ph]++;
    flit_status st;
    if (req_is_medium(i))
        st = flit_am_medium(g.ep, flit_rank(dst), flit_handler(H_REQ), g.big, BIG, args,
                            2, flags);
    else
        st = flit_am_short(g.ep, flit_rank(dst), flit_handler(H_REQ), args, 2, flags);
    if (st != FLIT_OK)
        p->tx[ph]--;
    return st;
}

static int phase1_done(void)
{
    for (uint32_t r = 0; r < g.n; r++)
        if (r != g.me && (g.peers[r].rx[0] != g.peers[r].tx[0] ||
                          g.peers[r].rep[0] != g.peers[r].tx[0]))
            return 0;
    return 1;
}

static int phase2_done(void)
{
    for (uint32_t r = 0; r < g.n; r++)
        if (r != g.me && (!g.peers[r].done || g.peers[r].rep[1] != g.peers[r].tx[1]))
            return 0;
    return 1;
}

/* One non-blocking send, retried (poll, then wait a little) until it goes. */
static void send_nonblock(uint32_t dst, uint64_t *agains)
{
    for (unsigned tries = 0;; tries++) {
        flit_status st = send_req(dst, 1, FLIT_AM_NONBLOCK);
        if (st == FLIT_OK)
            return;
        if (st != FLIT_ERR_AGAIN)
            FAIL("non-blocking send to rank %u: %s", dst, flit_status_name(st));
        (*agains)++;
        if (tries >= RETRY_LIMIT) {
            flit_ep_dump(g.ep, 2);
            FAIL("rank %u refused %u sends in a row", dst, tries);
        }
        if (tries == 0)
            CHECK_OK(flit_poll(g.ep));
        else {
            flit_status w = flit_wait(g.ep, 1000);
            CHECK(w == FLIT_OK || w == FLIT_ERR_TIMEOUT);
        }
    }
}

int main(int argc, char **argv)
{
    uint64_t count = test_scaled(mp_arg_u64(argc, argv, "--count", 2000));
    uint64_t count2 = test_scaled(mp_arg_u64(argc, argv, "--count2", 200));
    double t0 = mp_now();
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    if (g.n < 2) {
        fprintf(stderr, "flood needs 2 ranks or more\n");
        return TEST_SKIP;
    }
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    g.peers = calloc(g.n, sizeof *g.peers);
    g.big = malloc(BIG);
    g.reply_big = malloc(BIG);
    CHECK(g.peers && g.big && g.reply_big);
    mp_pattern_fill(g.big, BIG, 42);
    memcpy(g.reply_big, g.big, BIG);
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_req, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_rep, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_DONE), on_done, NULL));
    CHECK_OK(flit_barrier(g.ep));

    /* Phase 1: blocking, everyone at once. */
    for (uint64_t i = 0; i < count; i++)
        for (uint32_t k = 1; k < g.n; k++)
            CHECK_OK(send_req((g.me + k) % g.n, 0, 0));
    MP_WAIT(g.ep, phase1_done());
    for (uint32_t r = 0; r < g.n; r++)
        if (r != g.me)
            CHECK(g.peers[r].rx[0] == count && g.peers[r].tx[0] == count);
    CHECK_OK(flit_barrier(g.ep));
    double t1 = mp_now();
    flit_stats_t s1 = {.struct_size = sizeof s1};
    CHECK_OK(flit_ep_stats(g.ep, &s1));

    /* Phase 2: non-blocking until AGAIN has been seen, and count2 each. */
    uint64_t agains = 0;
    for (uint64_t i = 0; i < count2 || (agains == 0 && i < count2 + PHASE2_EXTRA); i++)
        for (uint32_t k = 1; k < g.n; k++)
            send_nonblock((g.me + k) % g.n, &agains);
    if (agains == 0)
        FAIL("%llu non-blocking sends never met FLIT_ERR_AGAIN",
             (unsigned long long)(count2 + PHASE2_EXTRA));
    for (uint32_t k = 1; k < g.n; k++) {
        uint32_t dst = (g.me + k) % g.n;
        uint32_t a[1] = {(uint32_t)g.peers[dst].tx[1]};
        CHECK_OK(flit_am_short(g.ep, flit_rank(dst), flit_handler(H_DONE), a, 1, 0));
    }
    MP_WAIT(g.ep, phase2_done());
    flit_stats_t s2 = {.struct_size = sizeof s2};
    CHECK_OK(flit_ep_stats(g.ep, &s2));
    if (s2.credit_stalls <= s1.credit_stalls)
        FAIL("flit_ep_stats counted no credit stall in phase 2 (%llu AGAINs)",
             (unsigned long long)agains);
    CHECK(s2.returned_to_us == 0 && s2.returned_by_us == 0);
    CHECK_OK(flit_barrier(g.ep));
    uint64_t sent2 = 0;
    for (uint32_t r = 0; r < g.n; r++)
        sent2 += g.peers[r].tx[1];
    CHECK_OK(flit_finalize());
    for (uint32_t r = 0; r < g.n; r++)
        if (r != g.me)
            CHECK(g.peers[r].rx[1] == g.peers[r].done_count);
    printf("flood: rank %u of %u OK: phase 1 %llu requests to each peer (%.2f s, "
           "%llu credit stalls); phase 2 %llu sent, %llu refused with AGAIN, "
           "%llu credit stalls\n",
           g.me, g.n, (unsigned long long)count, t1 - t0,
           (unsigned long long)s1.credit_stalls, (unsigned long long)sent2,
           (unsigned long long)agains,
           (unsigned long long)(s2.credit_stalls - s1.credit_stalls));
    free(g.big);
    free(g.reply_big);
    free(g.peers);
    return 0;
}
