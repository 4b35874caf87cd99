/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress thread serves a rank that never calls flit. Rank 1 registers
 * its handlers, enters a barrier, then computes: it spins on a flag (with
 * sched_yield, the machine may have fewer cores than ranks) that only its
 * own handler sets, when the last expected request arrived. Rank 0 meanwhile
 * does --count round trips (short, medium and long requests, each waiting
 * for its reply), which need rank 1's handlers to run and reply. The job
 * completes only if rank 1's progress thread runs them; they must run on a
 * thread other than rank 1's main thread.
 *
 * Needs a progress thread: FLIT_PROGRESS_THREAD=1 in the environment (every
 * rank gets one), or --param (FLIT_EP_PARAM_PROGRESS_THREAD: rank 1 only);
 * skipped otherwise, since rank 1 would wait forever by design.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "mp.h"

enum { H_REQ = 1, H_REP = 2 };

#define MEDIUM_LEN      4096u
#define LONG_LEN        65536u
#define SEG_SIZE        (4 * LONG_LEN)
#define COMPUTE_LIMIT_S 120.0

static struct {
    flit_ep_t *ep;
    uint32_t me;
    uint64_t count;
    pthread_t main_thread;
    uint8_t *seg;
    _Atomic uint64_t handled; /* rank 1: requests served */
    _Atomic uint64_t on_main; /* rank 1: handlers run by its main thread */
    _Atomic int last_arrived; /* rank 1: the flag it computes against */
    _Atomic uint64_t replies; /* rank 0 */
} g;

static flit_am_kind kind_of(uint64_t i)
{
    return (flit_am_kind)(i % 3);
}

static void on_req(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    CHECK(nargs == 1);
    uint64_t i = atomic_load(&g.handled);
    if (args[0] != (uint32_t)i)
        FAIL("request %u, expected %llu", args[0], (unsigned long long)i);
    flit_am_kind k = kind_of(i);
    size_t want = k == FLIT_AM_SHORT ? 0 : k == FLIT_AM_MEDIUM ? MEDIUM_LEN : LONG_LEN;
    CHECK(nbytes == want);
    if (k == FLIT_AM_LONG)
        CHECK((uint8_t *)buf == g.seg + (i % 4) * LONG_LEN);
    if (mp_pattern_check(buf, nbytes, i) != nbytes)
        FAIL("request %llu: payload differs", (unsigned long long)i);
    if (pthread_equal(pthread_self(), g.main_thread))
        atomic_fetch_add(&g.on_main, 1);
    uint32_t a[1] = {args[0]};
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_REP), a, 1));
    atomic_store(&g.handled, i + 1);
    if (i + 1 == g.count)
        g.last_arrived = 1;
}

static void on_rep(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    (void)user;
    CHECK(nargs == 1 && args[0] == (uint32_t)atomic_load(&g.replies));
    atomic_fetch_add(&g.replies, 1);
}

static void client(void)
{
    uint8_t *buf = malloc(LONG_LEN);
    CHECK(buf);
    for (uint64_t i = 0; i < g.count; i++) {
        uint32_t a[1] = {(uint32_t)i};
        flit_rank_t to = flit_rank(1);
        flit_am_kind k = kind_of(i);
        size_t len = k == FLIT_AM_MEDIUM ? MEDIUM_LEN : LONG_LEN;
        mp_pattern_fill(buf, k == FLIT_AM_SHORT ? 0 : len, i);
        if (k == FLIT_AM_SHORT)
            CHECK_OK(flit_am_short(g.ep, to, flit_handler(H_REQ), a, 1, 0));
        else if (k == FLIT_AM_MEDIUM)
            CHECK_OK(flit_am_medium(g.ep, to, flit_handler(H_REQ), buf, len, a, 1, 0));
        else
            CHECK_OK(flit_am_long(g.ep, to, flit_handler(H_REQ), buf, len,
                                  (i % 4) * LONG_LEN, a, 1, 0));
        MP_WAIT(g.ep, atomic_load(&g.replies) == i + 1);
    }
    free(buf);
}

/* Rank 1: no flit call until the last request has been served. */
static void compute(void)
{
    /* Requests may have been served inside the barrier, before this. */
    uint64_t before = atomic_load(&g.on_main);
    double end = mp_now() + COMPUTE_LIMIT_S;
    unsigned long spins = 0;
    while (!g.last_arrived) {
        sched_yield();
        if (++spins % 1024 == 0 && mp_now() > end)
            FAIL("computed %.0f s without the progress thread serving the "
                 "requests (%llu of %llu handled)",
                 COMPUTE_LIMIT_S, (unsigned long long)atomic_load(&g.handled),
                 (unsigned long long)g.count);
    }
    if (atomic_load(&g.on_main) != before)
        FAIL("%llu handlers ran on the main thread while it computed",
             (unsigned long long)(atomic_load(&g.on_main) - before));
    if (g.count - before < g.count / 2)
        FAIL("only %llu of %llu requests were served while computing",
             (unsigned long long)(g.count - before), (unsigned long long)g.count);
}

int main(int argc, char **argv)
{
    bool param = mp_arg_flag(argc, argv, "--param");
    const char *env = getenv("FLIT_PROGRESS_THREAD");
    if (!param && !(env && strcmp(env, "1") == 0)) {
        fprintf(stderr, "progress_thread: needs FLIT_PROGRESS_THREAD=1 or --param; "
                        "without a progress thread rank 1 would wait forever\n");
        return TEST_SKIP;
    }
    g.count = test_scaled(mp_arg_u64(argc, argv, "--count", 3000));
    g.main_thread = pthread_self();
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    if (flit_job_size() != 2) {
        fprintf(stderr, "progress_thread runs with 2 ranks\n");
        return TEST_SKIP;
    }
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT, .segment_size = SEG_SIZE};
    if (param) {
        p.field_mask |= FLIT_EP_PARAM_PROGRESS_THREAD;
        p.progress_thread = g.me == 1;
    }
    CHECK_OK(flit_ep_create(&p, &g.ep));
    void *seg;
    size_t sz;
    CHECK_OK(flit_ep_segment(g.ep, &seg, &sz));
    g.seg = seg;
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_req, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_rep, NULL));
    CHECK_OK(flit_barrier(g.ep));

    double t0 = mp_now();
    if (g.me == 0)
        client();
    else
        compute();
    double took = mp_now() - t0;
    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_finalize());
    printf("progress_thread: rank %u OK: %llu round trips, %.2f s\n", g.me,
           (unsigned long long)g.count, took);
    return 0;
}
