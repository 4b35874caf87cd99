/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-amudp against flit: proc 0 measures, proc 1 serves, both through
 * AMUDP's interface (its SPMD endpoint) and through the flit calls the
 * library wraps (a flit endpoint of their own), alternately in one run.
 *
 *   flitrun -n 2 amudp-bench [--flood] [ITERS [XFER_BYTES...]]
 *   (or: amudp-bench 2 L ...)
 *
 * Figures: AMUDP's testping flood, both procs sending 10 x ITERS requests
 * to each other at once, every one replied to (the time per request each
 * way and their replies; --flood measures only this); short request +
 * reply round trip
 * (AM_Request1 / AM_Reply1 vs flit_am_short / flit_am_reply_short); a
 * stream of AM_MaxMedium() bytes
 * (AM_RequestI1 vs flit_am_medium); streams of long messages into the
 * segment, 8 B, 4 KiB, AM_MaxLong() (65000 B, AMUDP's limit) and 1 MiB
 * (AM_RequestXfer1 vs flit_am_long into a segment of program memory, as
 * AM_SetSeg's is). AM-2 moves 1 MiB as AM_MaxLong() pieces; flit in the
 * same pieces, and once more as one message, as a flit program would. One
 * reply at the end. Under each figure: the chunks both procs' endpoints
 * sent again meanwhile (their retransmission counters); on a path that
 * loses nothing, as loopback, anything but a handful is a resend of what
 * was not lost.
 */
#include <amudp.h>
#include <amudp_spmd.h>
#include <flit/flit.h>
#include <stdbool.h>
#include <string.h>

#include "compare.h"

enum { H_PING = 1, H_PONG, H_BULK, H_STOP, H_RESENT, H_RESENT_REP, H_FLOOD, H_DONE };

static eb_t eb;
static ep_t ep;
static flit_ep_t *nep;
static volatile int am_count, native_count, stop, resent_got;
/* a flood proc 0 asked proc 1 for (its requests; AMUDP's path or flit's),
   and proc 1's word that it got every reply */
static volatile int flood_iters, flood_am, flood_done;
static uint64_t resent_peer[2]; /* proc 1's: AMUDP's endpoint, flit's */
#define SEG_BYTES (1u << 20)

static unsigned char buf[SEG_BYTES];

static void ping(void *token, int32_t a0)
{
    AM_Reply1(token, H_PONG, a0);
}

static void pong(void *token, int32_t a0)
{
    (void)token, (void)a0;
    am_count++;
}

static void bulk(void *token, void *b, size_t nbytes, int32_t last)
{
    (void)b, (void)nbytes;
    if (last)
        AM_Reply1(token, H_PONG, 0);
}

static void fping(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                  void *u)
{
    (void)b, (void)n, (void)u;
    flit_am_reply_short(t, flit_handler(H_PONG), a, na);
}

static void fpong(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                  void *u)
{
    (void)t, (void)b, (void)n, (void)a, (void)na, (void)u;
    native_count++;
}

static void fbulk(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                  void *u)
{
    (void)b, (void)n, (void)na, (void)u;
    if (a[0])
        flit_am_reply_short(t, flit_handler(H_PONG), a, 1);
}

static void fflood(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)t, (void)b, (void)n, (void)na, (void)u;
    flood_am = (int)a[1];
    flood_iters = (int)a[0];
}

static void fflood_done(flit_token_t *t, void *b, size_t n, const uint32_t *a,
                        unsigned na, void *u)
{
    (void)t, (void)b, (void)n, (void)a, (void)na, (void)u;
    flood_done = 1;
}

static void fstop(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                  void *u)
{
    (void)t, (void)b, (void)n, (void)a, (void)na, (void)u;
    stop = 1;
}

/* Chunks this proc's AMUDP endpoint sent again (its statistics). */
static uint64_t am_resent(void)
{
    amudp_stats_t s;
    if (AMUDP_GetEndpointStatistics(ep, &s) != AM_OK)
        return 0;
    uint64_t n = 0;
    for (int c = 0; c < amudp_NumCategories; c++)
        n += s.RequestsRetransmitted[c] + s.RepliesRetransmitted[c];
    return n;
}

/* Chunks this proc's flit endpoint sent again. */
static uint64_t native_resent(void)
{
    flit_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    return flit_ep_stats(nep, &s) == FLIT_OK ? s.retransmits : 0;
}

/* Proc 1 tells its counts, in halves of 32 bits. */
static void fresent(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                    void *u)
{
    (void)b, (void)n, (void)a, (void)na, (void)u;
    uint64_t am = am_resent(), fl = native_resent();
    uint32_t v[4] = {(uint32_t)am, (uint32_t)(am >> 32), (uint32_t)fl,
                     (uint32_t)(fl >> 32)};
    flit_am_reply_short(t, flit_handler(H_RESENT_REP), v, 4);
}

static void fresent_rep(flit_token_t *t, void *b, size_t n, const uint32_t *a,
                        unsigned na, void *u)
{
    (void)t, (void)b, (void)n, (void)na, (void)u;
    resent_peer[0] = a[0] | (uint64_t)a[1] << 32;
    resent_peer[1] = a[2] | (uint64_t)a[3] << 32;
    resent_got = 1;
}

/*
 * Prints, under a figure, the chunks both procs sent again while it was
 * measured (warm-up included), AMUDP's path and flit's: on loopback
 * nothing is lost, so anything but 0 is a resend of what was not.
 */
static void print_resent(void)
{
    static uint64_t before[4];
    resent_got = 0;
    flit_am_short(nep, flit_rank(1), flit_handler(H_RESENT), NULL, 0, 0);
    while (!resent_got)
        flit_poll(nep);
    uint64_t now[4] = {am_resent(), resent_peer[0], native_resent(), resent_peer[1]};
    printf("%-34s %10s  resent: AMUDP %llu + %llu, native %llu + %llu chunks "
           "(proc 0 + proc 1)\n",
           "", "", (unsigned long long)(now[0] - before[0]),
           (unsigned long long)(now[1] - before[1]),
           (unsigned long long)(now[2] - before[2]),
           (unsigned long long)(now[3] - before[3]));
    fflush(stdout);
    memcpy(before, now, sizeof before);
}

static double am_latency(int iters, size_t bytes)
{
    (void)bytes;
    am_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        AM_Request1(ep, 1, H_PING, i);
        while (am_count <= i)
            AM_Poll(eb);
    }
    return compare_now() - t0;
}

/*
 * AMUDP's testping with every proc sending: each sends iters requests to
 * the other without waiting for their replies (polling after each, as
 * testping polls), then waits for its own replies; both serve the other's
 * requests meanwhile, so requests and replies cross in both directions.
 * am: through AMUDP's endpoint, else flit's.
 */
static void flood_send(int am, int iters, int to)
{
    am_count = native_count = 0;
    for (int i = 0; i < iters; i++) {
        uint32_t a = (uint32_t)i;
        if (am) {
            AM_Request1(ep, to, H_PING, i);
            AM_Poll(eb);
        } else {
            flit_am_short(nep, flit_rank((uint32_t)to), flit_handler(H_PING), &a, 1, 0);
            flit_poll(nep);
        }
    }
    while (am && am_count < iters)
        AM_Poll(eb);
    while (!am && native_count < iters)
        flit_poll(nep);
}

/* Proc 0's side: starts proc 1's flood, sends its own, and waits until
   proc 1 has all its replies too. */
static double flood(int am, int iters)
{
    flood_done = 0;
    uint32_t a[2] = {(uint32_t)iters, (uint32_t)am};
    double t0 = compare_now();
    flit_am_short(nep, flit_rank(1), flit_handler(H_FLOOD), a, 2, 0);
    flood_send(am, iters, 1);
    while (!flood_done) {
        if (am)
            AM_Poll(eb);
        flit_poll(nep);
    }
    return compare_now() - t0;
}

static double am_flood(int iters, size_t bytes)
{
    (void)bytes;
    return flood(1, iters);
}

static double native_flood(int iters, size_t bytes)
{
    (void)bytes;
    return flood(0, iters);
}

static double native_latency(int iters, size_t bytes)
{
    (void)bytes;
    native_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        uint32_t a = (uint32_t)i;
        flit_am_short(nep, flit_rank(1), flit_handler(H_PING), &a, 1, 0);
        while (native_count <= i)
            flit_poll(nep);
    }
    return compare_now() - t0;
}

/* Where the i-th medium message starts: memcpy's speed depends on where
   source and destination fall within a page of each other (by up to 15%
   here), and the two paths copy into rings of their own, at positions of
   their own: each source moves 64 bytes a message over 4 KiB, so that both
   paths see every relative placement alike. */
static const unsigned char *medium_src(int i)
{
    return buf + (size_t)(i % 64) * 64;
}

static double am_medium(int iters, size_t bytes)
{
    am_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++)
        AM_RequestI1(ep, 1, H_BULK, (void *)medium_src(i), bytes, i == iters - 1);
    while (am_count < 1)
        AM_Poll(eb);
    return compare_now() - t0;
}

/* bytes into the segment at 0, in pieces of at most AM_MaxLong(). */
static double am_xfer(int iters, size_t bytes)
{
    am_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++)
        for (size_t off = 0; off < bytes; off += AM_MaxLong()) {
            size_t n = bytes - off < AM_MaxLong() ? bytes - off : AM_MaxLong();
            int last = i == iters - 1 && off + n == bytes;
            AM_RequestXfer1(ep, 1, off, H_BULK, buf + off, n, last);
        }
    while (am_count < 1)
        AM_Poll(eb);
    return compare_now() - t0;
}

static double native_medium(int iters, size_t bytes)
{
    native_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        uint32_t last = i == iters - 1;
        flit_am_medium(nep, flit_rank(1), flit_handler(H_BULK), medium_src(i), bytes,
                       &last, 1, 0);
    }
    while (native_count < 1)
        flit_poll(nep);
    return compare_now() - t0;
}

/* bytes into the segment at 0, in pieces of at most piece bytes. */
static double native_pieces(int iters, size_t bytes, size_t piece)
{
    native_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++)
        for (size_t off = 0; off < bytes; off += piece) {
            size_t n = bytes - off < piece ? bytes - off : piece;
            uint32_t last = i == iters - 1 && off + n == bytes;
            flit_am_long(nep, flit_rank(1), flit_handler(H_BULK), buf + off, n, off,
                         &last, 1, 0);
        }
    while (native_count < 1)
        flit_poll(nep);
    return compare_now() - t0;
}

static double native_long(int iters, size_t bytes)
{
    return native_pieces(iters, bytes, AM_MaxLong());
}

static double native_one(int iters, size_t bytes)
{
    return native_pieces(iters, bytes, bytes);
}

/* Enough messages of that size for a stable figure, not more. */
static int iters_for(int iters, size_t bytes)
{
    size_t cap = (64u << 20) / bytes;
    return cap < (size_t)iters ? (cap < 20 ? 20 : (int)cap) : iters;
}

int main(int argc, char **argv)
{
    if (AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep) != AM_OK)
        return 1;
    bool flood_only = argc > 1 && strcmp(argv[1], "--flood") == 0;
    if (flood_only) {
        argv[1] = argv[0];
        argc--, argv++;
    }
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    int me = AMUDP_SPMDMyProc();
    if (AMUDP_SPMDNumProcs() != 2) {
        if (me == 0)
            fprintf(stderr, "amudp-bench: run it on 2 procs\n");
        AMUDP_SPMDExit(2);
    }
    static unsigned char seg[SEG_BYTES], nseg[SEG_BYTES];
    AM_SetSeg(ep, seg, sizeof seg);
    AM_SetHandler(ep, H_PING, ping);
    AM_SetHandler(ep, H_PONG, pong);
    AM_SetHandler(ep, H_BULK, bulk);
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT,
                          .segment_addr = nseg,
                          .segment_size = sizeof nseg};
    if (flit_ep_create(&p, &nep) != FLIT_OK)
        return 1;
    flit_am_register(nep, flit_handler(H_PING), fping, NULL);
    flit_am_register(nep, flit_handler(H_PONG), fpong, NULL);
    flit_am_register(nep, flit_handler(H_BULK), fbulk, NULL);
    flit_am_register(nep, flit_handler(H_STOP), fstop, NULL);
    flit_am_register(nep, flit_handler(H_RESENT), fresent, NULL);
    flit_am_register(nep, flit_handler(H_RESENT_REP), fresent_rep, NULL);
    flit_am_register(nep, flit_handler(H_FLOOD), fflood, NULL);
    flit_am_register(nep, flit_handler(H_DONE), fflood_done, NULL);
    AMUDP_SPMDBarrier();
    if (me == 1) {
        while (!stop) {
            AM_Poll(eb);
            flit_poll(nep);
            if (flood_iters) { /* in the loop, not the handler: it sends */
                flood_send(flood_am, flood_iters, 0);
                flood_iters = 0;
                flit_am_short(nep, flit_rank(0), flit_handler(H_DONE), NULL, 0, 0);
            }
        }
    } else {
        printf("flit-amudp vs flit, medians of %d alternated runs; ratio > 1: "
               "AMUDP slower\n",
               COMPARE_RUNS);
        compare("AM_Request1 flood, both ways", am_flood, native_flood, 10 * iters, 8, 1,
                1);
        print_resent();
        if (flood_only)
            goto done;
        compare("AM_Request1+AM_Reply1 round trip", am_latency, native_latency, iters, 8,
                1, 1);
        print_resent();
        compare("AM_RequestI1 stream", am_medium, native_medium,
                iters_for(iters, AM_MaxMedium()), AM_MaxMedium(), 0, 1);
        print_resent();
        size_t sizes[16] = {8, 4096, AM_MaxLong(), SEG_BYTES}, n = 4;
        if (argc > 2) /* the sizes given, up to 1 MiB */
            for (n = 0; n < 16 && (int)n + 2 < argc; n++)
                sizes[n] = (size_t)strtoul(argv[n + 2], NULL, 0) % (SEG_BYTES + 1);
        for (size_t i = 0; i < n; i++) {
            compare("AM_RequestXfer1 vs flit_am_long", am_xfer, native_long,
                    iters_for(iters, sizes[i]), sizes[i], 0, 1);
            print_resent();
        }
        compare("  vs one flit_am_long", am_xfer, native_one, iters_for(iters, SEG_BYTES),
                SEG_BYTES, 0, 1);
        print_resent();
    done:
        flit_am_short(nep, flit_rank(1), flit_handler(H_STOP), NULL, 0, 0);
    }
    AMUDP_SPMDBarrier();
    AMUDP_SPMDExit(0);
    return 0;
}
