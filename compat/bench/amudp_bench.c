/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-amudp against flit: proc 0 measures, proc 1 serves, both through
 * AMUDP's interface (its SPMD endpoint) and through the flit calls the
 * library wraps (a flit endpoint of their own), alternately in one run.
 *
 *   flitrun -n 2 amudp-bench [ITERS [XFER_BYTES...]]   (or: amudp-bench 2 L ...)
 *
 * Figures: short request + reply round trip (AM_Request1 / AM_Reply1 vs
 * flit_am_short / flit_am_reply_short); a stream of AM_MaxMedium() bytes
 * (AM_RequestI1 vs flit_am_medium); streams of long messages into the
 * segment, 8 B, 4 KiB, AM_MaxLong() (65000 B, AMUDP's limit) and 1 MiB
 * (AM_RequestXfer1 vs flit_am_long into a segment of program memory, as
 * AM_SetSeg's is). AM-2 moves 1 MiB as AM_MaxLong() pieces; flit in the
 * same pieces, and once more as one message, as a flit program would. One
 * reply at the end.
 */
#include <amudp.h>
#include <amudp_spmd.h>
#include <flit/flit.h>
#include <string.h>

#include "compare.h"

enum { H_PING = 1, H_PONG, H_BULK, H_STOP };

static eb_t eb;
static ep_t ep;
static flit_ep_t *nep;
static volatile int am_count, native_count, stop;
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

static void fstop(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                  void *u)
{
    (void)t, (void)b, (void)n, (void)a, (void)na, (void)u;
    stop = 1;
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
    AMUDP_SPMDBarrier();
    if (me == 1) {
        while (!stop) {
            AM_Poll(eb);
            flit_poll(nep);
        }
    } else {
        printf("flit-amudp vs flit, medians of %d alternated runs; ratio > 1: "
               "AMUDP slower\n",
               COMPARE_RUNS);
        compare("AM_Request1+AM_Reply1 round trip", am_latency, native_latency, iters, 8,
                1, 1);
        compare("AM_RequestI1 stream", am_medium, native_medium,
                iters_for(iters, AM_MaxMedium()), AM_MaxMedium(), 0, 1);
        size_t sizes[16] = {8, 4096, AM_MaxLong(), SEG_BYTES}, n = 4;
        if (argc > 2) /* the sizes given, up to 1 MiB */
            for (n = 0; n < 16 && (int)n + 2 < argc; n++)
                sizes[n] = (size_t)strtoul(argv[n + 2], NULL, 0) % (SEG_BYTES + 1);
        for (size_t i = 0; i < n; i++)
            compare("AM_RequestXfer1 vs flit_am_long", am_xfer, native_long,
                    iters_for(iters, sizes[i]), sizes[i], 0, 1);
        compare("  vs one flit_am_long", am_xfer, native_one, iters_for(iters, SEG_BYTES),
                SEG_BYTES, 0, 1);
        flit_am_short(nep, flit_rank(1), flit_handler(H_STOP), NULL, 0, 0);
    }
    AMUDP_SPMDBarrier();
    AMUDP_SPMDExit(0);
    return 0;
}
