/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Barriers and flit_wait, on any number of ranks (1, 2, 3, 5, 8).
 *
 * 1. --count barriers in a row (200 by default), interleaved with messages:
 *    after leaving barrier b each rank sends a request carrying b to rank
 *    (me + b) % n (itself at times). The handler checks that its own rank has
 *    entered barrier b already: a rank that left barrier b proves every rank
 *    entered it. At the end each rank has received exactly the messages the
 *    schedule says, in order per source.
 * 2. flit_wait with nothing to do: timeout 0 and 1000 us answer
 *    FLIT_ERR_TIMEOUT (and the latter not before 1 ms). On a second endpoint
 *    that carries no traffic: on the first, another rank may already be in
 *    the next barrier, whose message would rightly end the wait.
 * 3. flit_wait answers FLIT_OK once a message arrived (on the quiet
 *    endpoint again, where nothing but flit_wait can handle it).
 */
#include "mp.h"

enum { H_MSG = 1, H_PING = 2 };

static struct {
    flit_ep_t *ep, *quiet;
    uint32_t me, n;
    uint64_t entered; /* barriers this rank has entered */
    uint64_t *rx;     /* messages handled, by source */
    uint64_t rx_total;
    int pinged;
} g;

static void on_msg(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(t).idx;
    CHECK(src < g.n && nargs == 2);
    uint32_t b = args[0];
    if (args[1] != g.rx[src])
        FAIL("message %u from rank %u, expected %llu", args[1], src,
             (unsigned long long)g.rx[src]);
    if (g.entered < (uint64_t)b + 1)
        FAIL("rank %u left barrier %u, but this rank has entered only %llu barriers", src,
             b, (unsigned long long)g.entered);
    if (b % 3 == 2)
        CHECK(nbytes == 100 && mp_pattern_check(buf, nbytes, b) == nbytes);
    else
        CHECK(nbytes == 0);
    g.rx[src]++;
    g.rx_total++;
}

static void on_ping(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    (void)args;
    (void)nargs;
    (void)user;
    g.pinged++;
}

/* Messages src sends dst over the barriers. */
static uint64_t expected_from(uint32_t src, uint64_t nbarriers)
{
    uint64_t c = 0;
    for (uint64_t b = 0; b < nbarriers; b++)
        c += (src + b) % g.n == g.me;
    return c;
}

int main(int argc, char **argv)
{
    uint64_t nbarriers = mp_arg_u64(argc, argv, "--count", 200);
    CHECK(nbarriers < UINT32_MAX);
    double t0 = mp_now();
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    g.rx = calloc(g.n, sizeof *g.rx);
    CHECK(g.rx);
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_ep_create(NULL, &g.quiet));
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_MSG), on_msg, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_PING), on_ping, NULL));
    g.entered++;
    CHECK_OK(flit_barrier(g.ep)); /* handlers are in place everywhere */

    /* 1. Barriers in a row, messages in between. */
    uint64_t *tx = calloc(g.n, sizeof *tx);
    uint8_t pay[100];
    CHECK(tx);
    for (uint64_t b = 0; b < nbarriers; b++) {
        g.entered = b + 1;
        CHECK_OK(flit_barrier(g.ep));
        uint32_t dst = (uint32_t)((g.me + b) % g.n);
        uint32_t a[2] = {(uint32_t)b, (uint32_t)tx[dst]++};
        if (b % 3 == 2) {
            mp_pattern_fill(pay, sizeof pay, b);
            CHECK_OK(flit_am_medium(g.ep, flit_rank(dst), flit_handler(H_MSG), pay,
                                    sizeof pay, a, 2, 0));
        } else {
            CHECK_OK(flit_am_short(g.ep, flit_rank(dst), flit_handler(H_MSG), a, 2, 0));
        }
    }
    g.entered = nbarriers + 1;
    uint64_t want = 0;
    for (uint32_t s = 0; s < g.n; s++)
        want += expected_from(s, nbarriers);
    MP_WAIT(g.ep, g.rx_total == want);
    CHECK_OK(flit_barrier(g.ep));
    for (uint32_t s = 0; s < g.n; s++)
        if (g.rx[s] != expected_from(s, nbarriers))
            FAIL("%llu messages from rank %u, expected %llu", (unsigned long long)g.rx[s],
                 s, (unsigned long long)expected_from(s, nbarriers));
    double t1 = mp_now();

    /* 2. Nothing to do: flit_wait times out, and not early. */
    CHECK_ST(flit_wait(g.quiet, 0), FLIT_ERR_TIMEOUT);
    double w0 = mp_now();
    CHECK_ST(flit_wait(g.quiet, 1000), FLIT_ERR_TIMEOUT);
    double waited = mp_now() - w0;
    if (waited < 0.001)
        FAIL("flit_wait(1000 us) timed out after %.0f us", waited * 1e6);
    CHECK(g.rx_total == want && g.pinged == 0);
    CHECK_OK(flit_barrier(g.ep));

    /* 3. A message arrives: flit_wait says so. On the quiet endpoint, where
       only flit_wait can handle it (a barrier on the first could). */
    CHECK_OK(flit_am_register(g.quiet, flit_handler(H_PING), on_ping, NULL));
    CHECK_OK(flit_barrier(g.ep)); /* registered everywhere */
    CHECK_OK(flit_am_short(g.quiet, flit_rank((g.me + 1) % g.n), flit_handler(H_PING),
                           NULL, 0, 0));
    flit_status st = FLIT_ERR_TIMEOUT;
    double end = mp_now() + MP_WAIT_LIMIT_S;
    while (!g.pinged) {
        st = flit_wait(g.quiet, 1000000);
        CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
        if (mp_now() > end)
            FAIL("the ping never arrived");
    }
    CHECK_ST(st, FLIT_OK);
    CHECK_OK(flit_barrier(g.ep));
    CHECK(g.pinged == 1);

    CHECK_OK(flit_finalize());
    printf("barrier_wait: rank %u of %u OK: %llu barriers in %.2f s, timed wait "
           "%.0f us\n",
           g.me, g.n, (unsigned long long)nbarriers, t1 - t0, waited * 1e6);
    free(tx);
    free(g.rx);
    return 0;
}
