/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_group.h. */
#include "bench_group.h"

#include <flit/group.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 8u
#define NGROUPS   4u /* 2, 4, 8 ranks, and the sequencer's pair */
#define SEQ_PAIR  3u /* index of the pair whose sequencer is rank 1 */
#define LAT_BIG   1024u
#define MSGS_MAX  (1ull << 22)
/* Panda on Myrinet (Bal et al.): multicast latency, multicast throughput. */
#define PANDA_MCAST_US  273.0
#define PANDA_MCAST_MBS 5.5

enum { OP_PING, OP_PONG, OP_ACK, OP_QUIT };

static const uint32_t sizes[NGROUPS] = {2, 4, 8, 2};

static struct {
    flit_groups_t *gs;
    flit_group_t *g[NGROUPS];
    flit_handler_t h;            /* the section's active messages */
    uint64_t delivered[NGROUPS]; /* here */
    uint64_t acked[NGROUPS];     /* what this member last told rank 0 */
    /* rank 0: per group, per member, as told */
    uint64_t told[NGROUPS][MAX_RANKS];
    uint64_t pongs;
    uint8_t *buf;
    size_t bulk;
    bool quit;
} gb;

/* ---------------------------------------------------------------- handlers */

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g, (void)m, (void)total;
    gb.delivered[(uintptr_t)user]++; /* the bytes are skipped */
}

static void on_am(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                  void *user)
{
    (void)buf, (void)n, (void)na, (void)user;
    switch (a[0]) {
    case OP_PING:
        (void)flit_am_reply_short(t, gb.h, (uint32_t[]){OP_PONG}, 1);
        break;
    case OP_PONG:
        gb.pongs++;
        break;
    case OP_ACK: {
        uint64_t c = (uint64_t)a[3] << 32 | a[2];
        uint32_t r = flit_token_rank(t).idx;
        if (a[1] < NGROUPS && r < MAX_RANKS && c > gb.told[a[1]][r])
            gb.told[a[1]][r] = c;
        break;
    }
    case OP_QUIT:
        gb.quit = true;
        break;
    }
}

/* Members but rank 0: after each pass of the engine, tell rank 0 how many
   messages each group delivered here, when that moved. */
static void on_progress(flit_ep_t *ep, void *user)
{
    (void)user;
    for (uint32_t i = 0; i < NGROUPS; i++) {
        if (gb.delivered[i] == gb.acked[i])
            continue;
        uint32_t a[4] = {OP_ACK, i, (uint32_t)gb.delivered[i],
                         (uint32_t)(gb.delivered[i] >> 32)};
        if (flit_am_short(ep, flit_rank(0), gb.h, a, 4, FLIT_AM_NONBLOCK) == FLIT_OK)
            gb.acked[i] = gb.delivered[i];
    }
}

static const flit_ep_listener_t listener = {.progress = on_progress};

/* ---------------------------------------------------------------- both */

void bench_group_open(bench_t *b)
{
    uint32_t size = flit_job_size();
    bench_check(b, flit_ep_reserve_handlers(b->ep, 1, &gb.h), "flit_ep_reserve_handlers");
    bench_check(b, flit_am_register(b->ep, gb.h, on_am, NULL), "flit_am_register");
    bench_check(b, flit_groups_create(b->ep, &gb.gs), "flit_groups_create");
    if (b->rank != 0)
        bench_check(b, flit_ep_listen(b->ep, &listener, NULL), "flit_ep_listen");
    flit_rank_t m[MAX_RANKS];
    for (uint32_t i = 0; i < MAX_RANKS; i++)
        m[i] = flit_rank(i);
    for (uint32_t i = 0; i < NGROUPS; i++) {
        if (sizes[i] > size || b->rank >= sizes[i])
            continue;
        flit_group_params_t p = {0};
        if (i == SEQ_PAIR) {
            p.field_mask = FLIT_GROUP_PARAM_SEQUENCER;
            p.sequencer = flit_rank(1);
        }
        bench_check(b,
                    flit_group_create(gb.gs, 200 + i, m, sizes[i], &p, on_deliver,
                                      (void *)(uintptr_t)i, &gb.g[i]),
                    "flit_group_create");
    }
    gb.bulk = b->max_size < (1u << 20) ? b->max_size : (1u << 20);
    if (b->rank == 0 && !(gb.buf = calloc(1, gb.bulk)))
        bench_check(b, FLIT_ERR_NO_MEMORY, "calloc");
}

void bench_group_serve(bench_t *b)
{
    while (!gb.quit) {
        flit_status st = flit_wait(b->ep, 10000);
        if (st != FLIT_ERR_TIMEOUT)
            bench_check(b, st, "flit_wait");
    }
}

void bench_group_close(bench_t *b)
{
    for (uint32_t i = 0; i < NGROUPS; i++)
        if (gb.g[i])
            bench_check(b, flit_group_destroy(gb.g[i]), "flit_group_destroy");
    if (b->rank != 0)
        bench_check(b, flit_ep_unlisten(b->ep, &listener, NULL), "flit_ep_unlisten");
    bench_check(b, flit_groups_destroy(gb.gs), "flit_groups_destroy");
    free(gb.buf);
}

/* ---------------------------------------------------------------- rank 0 */

struct point {
    bench_t *b;
    uint32_t gi; /* group index */
    size_t size;
};

static void poll_until(bench_t *b, bool (*done)(const struct point *),
                       const struct point *p)
{
    while (!done(p))
        bench_check(b, flit_poll(b->ep), "flit_poll");
}

/* Every member has delivered everything rank 0 sent to group p->gi. */
static bool all_delivered(const struct point *p)
{
    uint64_t want = gb.delivered[p->gi];
    for (uint32_t r = 1; r < sizes[p->gi]; r++)
        if (gb.told[p->gi][r] < want)
            return false;
    return true;
}

static uint64_t sent_to(uint32_t gi)
{
    flit_group_stats_t s = {.struct_size = sizeof s};
    flit_group_stats(gb.g[gi], &s);
    return s.sent;
}

static bool own_in(const struct point *p)
{
    return gb.delivered[p->gi] == sent_to(p->gi);
}

/* n multicasts, one at a time: each until the last member delivered it. */
static uint64_t run_mcast(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        bench_check(p->b, flit_group_send(gb.g[p->gi], gb.buf, p->size),
                    "flit_group_send");
        poll_until(p->b, own_in, p);
        poll_until(p->b, all_delivered, p);
    }
    return bench_now_ns() - t0;
}

/* n times: a short AM to each other member, until the last answered. */
static uint64_t run_ams(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t want = gb.pongs + sizes[p->gi] - 1;
        for (uint32_t r = 1; r < sizes[p->gi]; r++)
            bench_check(
                p->b,
                flit_am_short(p->b->ep, flit_rank(r), gb.h, (uint32_t[]){OP_PING}, 1, 0),
                "flit_am_short");
        while (gb.pongs < want)
            bench_check(p->b, flit_poll(p->b->ep), "flit_poll");
    }
    return bench_now_ns() - t0;
}

/* n messages back to back, until every member delivered the last. */
static uint64_t run_stream(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        bench_check(p->b, flit_group_send(gb.g[p->gi], gb.buf, p->size),
                    "flit_group_send");
    poll_until(p->b, own_in, p);
    poll_until(p->b, all_delivered, p);
    return bench_now_ns() - t0;
}

static double measure(bench_run_fn fn, struct point *p, uint64_t target_ns, int reps)
{
    return bench_measure(fn, p, target_ns, reps, 1, MSGS_MAX);
}

/* Multicasts to p's group beside short AMs to its members, until an attempt
   comes out clean; microseconds each, the AMs' in *am. */
static double mcast_beside_ams(const struct bench_io *io, struct point *p, double *am)
{
    double v;
    do {
        io->begin(io->run);
        *am = measure(run_ams, p, io->lat_ns, io->lat_reps) / 1e3;
        v = measure(run_mcast, p, io->lat_ns, io->lat_reps) / 1e3;
    } while (io->again(io->run));
    return v;
}

static double latency_rows(bench_t *b, const struct bench_io *io)
{
    io->title(io->run,
              "Groups: ordered multicast latency, a send until the last member "
              "delivered it",
              "rank 0 sends a short AM to each member and waits for the last answer, "
              "this run (target, 4 ranks: 2.5 on shm, 3 over UDP)",
              false);
    double four = NAN;
    for (uint32_t gi = 0; gi < 3; gi++) {
        if (!gb.g[gi])
            continue;
        for (int big = 0; big < 2; big++) {
            struct point p = {.b = b, .gi = gi, .size = big ? LAT_BIG : 0};
            double am, v = mcast_beside_ams(io, &p, &am);
            char name[48], fig[48];
            snprintf(name, sizeof name, "group_latency_%u_%zu", sizes[gi], p.size);
            snprintf(fig, sizeof fig, "%u ranks, %zu B", sizes[gi], p.size);
            v = io->emit(io->run, name, fig, (double)p.size, v, am, (double)p.size,
                         BENCH_U_US);
            if (gi == 1 && !big)
                four = v;
        }
    }
    return four;
}

static double throughput_rows(bench_t *b, const struct bench_io *io)
{
    io->title(io->run, "Groups: throughput of one sender, until every member delivered",
              "stream bandwidth to one rank, same size, this run (target, 4 ranks, "
              "1 MiB: at least 0.5)",
              true);
    static const size_t tsizes[2] = {65536, 1u << 20};
    double best = NAN;
    for (uint32_t gi = 1; gi < 3; gi++) {
        for (int k = 0; k < 2; k++) {
            size_t size = tsizes[k] < gb.bulk ? tsizes[k] : gb.bulk;
            if (!gb.g[gi])
                continue;
            struct point p = {.b = b, .gi = gi, .size = size};
            double v, st;
            do {
                io->begin(io->run);
                st = size * 1e3 /
                     bench_stream_ns(b, BENCH_STREAM, size, 16, io->bw_ns, io->bw_reps);
                v = size * 1e3 / measure(run_stream, &p, io->bw_ns, io->bw_reps);
            } while (io->again(io->run));
            char name[48], fig[48];
            snprintf(name, sizeof name, "group_throughput_%u_%zu", sizes[gi], size);
            snprintf(fig, sizeof fig, "%u ranks", sizes[gi]);
            v = io->emit(io->run, name, fig, (double)size, v, st, (double)size,
                         BENCH_U_MBS);
            if (isnan(best) || v > best)
                best = v;
        }
    }
    return best;
}

static void sequencer_row(bench_t *b, const struct bench_io *io)
{
    io->title(io->run,
              "Groups: sequencer round trip (an empty message of rank 0 delivered "
              "back to it, the sequencer being rank 1)",
              "the short AM round trip of this run", false);
    struct point p = {.b = b, .gi = SEQ_PAIR, .size = 0};
    double am, v = mcast_beside_ams(io, &p, &am);
    io->emit(io->run, "group_sequencer_round_trip", "sequencer round trip", -1, v, am, -1,
             BENCH_U_US);
}

void bench_group_section(bench_t *b, const struct bench_io *io)
{
    double lat4 = latency_rows(b, io);
    double mbs = throughput_rows(b, io);
    sequencer_row(b, io);
    io->title(io->run, "Groups: Panda on Myrinet (Bal et al.), for the record",
              "this run's figure above (ratio = Panda / flit)", false);
    do /* nothing to measure: a clean attempt, so the rows are not noisy */
        io->begin(io->run);
    while (io->again(io->run));
    io->emit(io->run, "panda_multicast_latency", "Panda multicast (vs 4 ranks, 0 B)", -1,
             PANDA_MCAST_US, lat4, -1, BENCH_U_US);
    io->emit(io->run, "panda_multicast_throughput", "Panda multicast throughput", -1,
             PANDA_MCAST_MBS, mbs, -1, BENCH_U_MBS);
    for (uint32_t r = 2; r < flit_job_size(); r++)
        bench_check(b,
                    flit_am_short(b->ep, flit_rank(r), gb.h, (uint32_t[]){OP_QUIT}, 1, 0),
                    "flit_am_short (quit)");
}
