/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A diagnostic, not a CTest: round trips between two ranks whose endpoints
 * may be served by progress threads, reporting every one that took longer
 * than --stall-ms (default 20) and on which side the time was lost. A lost
 * wake-up shows as a stall of exactly FLIT_PEER_CHECK_MS (the progress
 * engine's nap, 100 ms by default).
 *
 *     FLIT_PROGRESS_THREAD=1 flitrun -n 2 mp_wake_latency --kind medium \
 *         --waiter wait --count 2000
 *
 * --kind short|medium|long   what rank 0 sends (rank 1 answers a short reply)
 * --bytes N                  medium / long payload (default 64)
 * --waiter wait|yield        rank 0 waits for each reply with flit_wait, or
 *                            spins on sched_yield (its progress thread runs
 *                            the reply handler); rank 1 always spins without
 *                            calling flit (needs a progress thread)
 * --strict                   exit 1 if any round trip stalled
 */
#include <sched.h>
#include <stdatomic.h>

#include "mp.h"

enum { H_REQ = 1, H_REP = 2 };

static struct {
    flit_ep_t *ep;
    uint64_t count;
    _Atomic uint64_t replies;
    _Atomic int done;
    double handled_at; /* rank 0: rank 1's clock when it ran the handler */
} g;

static void on_req(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    (void)user;
    CHECK(nargs == 1);
    double now = mp_now(); /* CLOCK_MONOTONIC: one clock for the host */
    uint32_t r[3];
    memcpy(r, &now, sizeof now);
    r[2] = args[0];
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_REP), r, 3));
    if (args[0] + 1 == g.count)
        atomic_store(&g.done, 1);
}

static void on_rep(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    (void)user;
    CHECK(nargs == 3 && args[2] == atomic_load(&g.replies));
    memcpy(&g.handled_at, args, sizeof g.handled_at);
    atomic_fetch_add(&g.replies, 1);
}

static void send_one(uint32_t i, int kind, uint8_t *buf, size_t bytes)
{
    uint32_t a[1] = {i};
    flit_rank_t to = flit_rank(1);
    if (kind == 0)
        CHECK_OK(flit_am_short(g.ep, to, flit_handler(H_REQ), a, 1, 0));
    else if (kind == 1)
        CHECK_OK(flit_am_medium(g.ep, to, flit_handler(H_REQ), buf, bytes, a, 1, 0));
    else
        CHECK_OK(flit_am_long(g.ep, to, flit_handler(H_REQ), buf, bytes, 0, a, 1, 0));
}

int main(int argc, char **argv)
{
    const char *kinds[] = {"short", "medium", "long"};
    int kind = 1, use_wait = 1;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--kind") == 0)
            kind = !strcmp(argv[i + 1], "short")  ? 0
                   : !strcmp(argv[i + 1], "long") ? 2
                                                  : 1;
        if (strcmp(argv[i], "--waiter") == 0)
            use_wait = strcmp(argv[i + 1], "yield") != 0;
    }
    g.count = mp_arg_u64(argc, argv, "--count", 2000);
    size_t bytes = (size_t)mp_arg_u64(argc, argv, "--bytes", 64);
    double stall = (double)mp_arg_u64(argc, argv, "--stall-ms", 20) / 1000;
    CHECK(bytes <= FLIT_AM_MAX_MEDIUM);
    CHECK_OK(flit_init(NULL));
    if (flit_job_size() != 2)
        return TEST_SKIP;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT, .segment_size = 1 << 20};
    CHECK_OK(flit_ep_create(&p, &g.ep));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_req, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_rep, NULL));
    CHECK_OK(flit_barrier(g.ep));
    unsigned there = 0, back = 0;
    double worst = 0, t0 = mp_now();
    if (flit_job_rank().idx == 1) {
        while (!atomic_load(&g.done))
            sched_yield();
    } else {
        uint8_t *buf = calloc(1, FLIT_AM_MAX_MEDIUM);
        CHECK(buf);
        for (uint32_t i = 0; i < g.count; i++) {
            double s = mp_now();
            send_one(i, kind, buf, bytes);
            while (atomic_load(&g.replies) <= i) {
                /* Not -1: the progress thread may run the reply just
                   before this call, and then nothing else arrives. */
                if (use_wait) {
                    flit_status st = flit_wait(g.ep, 1000000);
                    CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
                } else
                    sched_yield();
            }
            double e = mp_now();
            there += g.handled_at - s > stall;
            back += e - g.handled_at > stall;
            if (e - s > stall)
                printf("  round trip %u: %.1f ms to rank 1's handler, %.1f ms back\n", i,
                       (g.handled_at - s) * 1e3, (e - g.handled_at) * 1e3);
            worst = e - s > worst ? e - s : worst;
        }
        free(buf);
        printf("wake_latency: %llu %s round trips (%zu bytes), rank 0 %s: %.3f s; "
               "stalled on the way there %u, back %u; worst %.1f ms\n",
               (unsigned long long)g.count, kinds[kind], kind ? bytes : 0,
               use_wait ? "in flit_wait" : "spinning", mp_now() - t0, there, back,
               worst * 1e3);
    }
    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_finalize());
    return mp_arg_flag(argc, argv, "--strict") && there + back ? 1 : 0;
}
