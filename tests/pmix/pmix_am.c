/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A flit job started by a PMIx launcher (Open MPI's mpirun), not flitrun:
 * pmix_test.sh runs it under `mpirun -n N`.
 *
 * Proves: flit_init takes rank and size from PMIx (they match PMIX_RANK and
 * the N the launcher was given, and flitrun's FLIT_BOOT is absent); the
 * address exchange through PMIx connects every pair, so every rank sends
 * every rank (itself included) short requests of 0 .. 16 arguments, mediums
 * of 0 .. 64 KiB and longs of 0 .. 1 MiB into its segment, each answered by
 * a short reply; every argument and payload byte arrives as sent, every
 * handler runs exactly once; a second endpoint (more exchange rounds) works;
 * barriers and flit_finalize complete.
 *
 *     mpirun -n 4 pmix_am --size 4
 */
#include "mp.h"

enum { H_REQ = 1, H_REP = 2 };

#define NSHORT  (FLIT_AM_MAX_ARGS + 1)
#define NMEDIUM 5
#define NLONG   4
#define NMSG    (NSHORT + NMEDIUM + NLONG)

static const size_t medium_sizes[NMEDIUM] = {0, 1, 100, 4096, FLIT_AM_MAX_MEDIUM};
static const size_t long_sizes[NLONG] = {0, 8, 64u << 10, 1u << 20};

struct msg {
    flit_am_kind kind;
    unsigned nargs;
    size_t nbytes;
    uint64_t offset; /* long: inside the sender's region of the segment */
};

static struct {
    flit_ep_t *ep;
    uint32_t me, n;
    struct msg sched[NMSG];
    size_t region; /* segment bytes per sender */
    uint8_t *seg;
    uint64_t *req_seen; /* [n]: requests handled from each sender */
    uint64_t *rep_seen; /* [n]: replies handled from each destination */
    uint64_t req_total, rep_total;
} g;

static uint32_t arg_value(uint32_t src, uint32_t dst, unsigned k, unsigned i)
{
    return (uint32_t)mp_mix(src, dst, k, i);
}

static uint64_t payload_seed(uint32_t src, uint32_t dst, unsigned k)
{
    return mp_mix(src, dst, k, 1000);
}

static void build_schedule(void)
{
    unsigned k = 0;
    for (unsigned a = 0; a < NSHORT; a++)
        g.sched[k++] = (struct msg){FLIT_AM_SHORT, a, 0, 0};
    for (unsigned i = 0; i < NMEDIUM; i++)
        g.sched[k++] = (struct msg){FLIT_AM_MEDIUM, (i * 7) % NSHORT, medium_sizes[i], 0};
    uint64_t off = 0;
    for (unsigned i = 0; i < NLONG; i++) {
        g.sched[k++] =
            (struct msg){FLIT_AM_LONG, (i * 5 + 3) % NSHORT, long_sizes[i], off};
        off += long_sizes[i] + 4096;
    }
    g.region = off;
}

static void on_request(flit_token_t *token, void *buf, size_t nbytes,
                       const uint32_t *args, unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n);
    uint64_t k = g.req_seen[src]++;
    if (k >= NMSG)
        FAIL("request %llu from rank %u: only %u were sent", (unsigned long long)k, src,
             NMSG);
    const struct msg *m = &g.sched[k];
    if (nargs != m->nargs || nbytes != m->nbytes)
        FAIL("request %llu from rank %u: %u args, %zu bytes; expected %u, %zu",
             (unsigned long long)k, src, nargs, nbytes, m->nargs, m->nbytes);
    for (unsigned i = 0; i < nargs; i++)
        if (args[i] != arg_value(src, g.me, (unsigned)k, i))
            FAIL("request %llu from rank %u: argument %u is %#x", (unsigned long long)k,
                 src, i, args[i]);
    if (m->kind == FLIT_AM_LONG && buf != g.seg + src * g.region + m->offset)
        FAIL("long %llu from rank %u landed at segment offset %td", (unsigned long long)k,
             src, (uint8_t *)buf - g.seg);
    size_t bad = mp_pattern_check(buf, nbytes, payload_seed(src, g.me, (unsigned)k));
    if (bad != nbytes)
        FAIL("%s %llu from rank %u (%zu bytes): byte %zu differs",
             flit_am_kind_name(m->kind, 0), (unsigned long long)k, src, nbytes, bad);
    g.req_total++;
    uint32_t rep[2] = {(uint32_t)k, (uint32_t)mp_mix(g.me, src, k, 2000)};
    CHECK_OK(flit_am_reply_short(token, flit_handler(H_REP), rep, 2));
}

static void on_reply(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)buf;
    (void)user;
    uint32_t dst = flit_token_rank(token).idx;
    CHECK(dst < g.n);
    uint64_t k = g.rep_seen[dst]++;
    CHECK(nbytes == 0 && nargs == 2);
    if (args[0] != k || args[1] != (uint32_t)mp_mix(dst, g.me, k, 2000))
        FAIL("reply %llu from rank %u says %u, %#x", (unsigned long long)k, dst, args[0],
             args[1]);
    g.rep_total++;
}

static void send_request(uint8_t *sbuf, uint32_t dst, unsigned k)
{
    const struct msg *m = &g.sched[k];
    uint32_t args[FLIT_AM_MAX_ARGS];
    for (unsigned i = 0; i < m->nargs; i++)
        args[i] = arg_value(g.me, dst, k, i);
    mp_pattern_fill(sbuf, m->nbytes, payload_seed(g.me, dst, k));
    flit_rank_t d = flit_rank(dst);
    flit_handler_t h = flit_handler(H_REQ);
    switch (m->kind) {
    case FLIT_AM_SHORT:
        CHECK_OK(flit_am_short(g.ep, d, h, args, m->nargs, 0));
        break;
    case FLIT_AM_MEDIUM:
        CHECK_OK(flit_am_medium(g.ep, d, h, sbuf, m->nbytes, args, m->nargs, 0));
        break;
    default:
        CHECK_OK(flit_am_long(g.ep, d, h, sbuf, m->nbytes, g.me * g.region + m->offset,
                              args, m->nargs, 0));
        break;
    }
}

/* Started by a PMIx launcher, and not by flitrun: says so, or fails. */
static void check_launcher(uint32_t want_size)
{
    const char *pmix_rank = getenv("PMIX_RANK");
    const char *ns = getenv("PMIX_NAMESPACE");
    if (getenv("FLIT_BOOT"))
        FAIL("FLIT_BOOT is set: started by flitrun, not by a PMIx launcher");
    if (!pmix_rank || !ns)
        FAIL("PMIX_RANK or PMIX_NAMESPACE is not set: not started by a PMIx launcher");
    if (strtoul(pmix_rank, NULL, 10) != g.me)
        FAIL("flit says rank %u, PMIX_RANK says %s", g.me, pmix_rank);
    if (want_size && g.n != want_size)
        FAIL("flit says %u ranks, the launcher was asked for %u", g.n, want_size);
    if (g.me == 0)
        printf("pmix_am: launcher PMIx (namespace %s), %u ranks, no flitrun\n", ns, g.n);
}

int main(int argc, char **argv)
{
    uint32_t want_size = (uint32_t)mp_arg_u64(argc, argv, "--size", 0);
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    check_launcher(want_size);
    build_schedule();

    size_t seg_size = (size_t)g.n * g.region;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT, .segment_size = seg_size};
    CHECK_OK(flit_ep_create(&p, &g.ep));
    void *seg;
    size_t got;
    CHECK_OK(flit_ep_segment(g.ep, &seg, &got));
    CHECK(seg != NULL && got == seg_size);
    g.seg = seg;
    g.req_seen = calloc(g.n, sizeof *g.req_seen);
    g.rep_seen = calloc(g.n, sizeof *g.rep_seen);
    uint8_t *sbuf = malloc(long_sizes[NLONG - 1]);
    CHECK(g.req_seen && g.rep_seen && sbuf);
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_request, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_reply, NULL));
    CHECK_OK(flit_barrier(g.ep));

    for (unsigned k = 0; k < NMSG; k++)
        for (uint32_t j = 0; j < g.n; j++)
            send_request(sbuf, (g.me + j) % g.n, k);
    uint64_t want = (uint64_t)g.n * NMSG;
    MP_WAIT(g.ep, g.req_total == want && g.rep_total == want);
    CHECK_OK(flit_barrier(g.ep));
    /* Nothing more may arrive: the counts are exact. */
    CHECK(g.req_total == want && g.rep_total == want);
    for (uint32_t r = 0; r < g.n; r++)
        CHECK(g.req_seen[r] == NMSG && g.rep_seen[r] == NMSG);

    /* A second endpoint: its creation runs further exchange rounds. */
    flit_ep_t *ep2;
    CHECK_OK(flit_ep_create(NULL, &ep2));
    CHECK_OK(flit_barrier(ep2));

    CHECK_OK(flit_finalize());
    printf("pmix_am: rank %u of %u OK: %u messages each way with every rank\n", g.me, g.n,
           NMSG);
    free(sbuf);
    free(g.req_seen);
    free(g.rep_seen);
    return 0;
}
