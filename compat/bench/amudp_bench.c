/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-amudp against flit: proc 0 measures, proc 1 serves, both through
 * AMUDP's interface (its SPMD endpoint) and through the flit calls the
 * library wraps (a flit endpoint of their own), alternately in one run.
 *
 *   flitrun -n 2 amudp-bench [ITERS]      (or: amudp-bench 2 L [ITERS])
 *
 * Figures: short request + reply round trip (AM_Request1 / AM_Reply1 vs
 * flit_am_short / flit_am_reply_short); medium and long streams of
 * AM_MaxLong() bytes (AM_RequestI1 and AM_RequestXfer1 vs flit_am_medium,
 * which both travel as), one reply at the end.
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
static unsigned char buf[AMUDP_MAX_LONG];

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

static double am_stream(int iters, size_t bytes, int xfer)
{
    am_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++)
        if (xfer)
            AM_RequestXfer1(ep, 1, 0, H_BULK, buf, bytes, i == iters - 1);
        else
            AM_RequestI1(ep, 1, H_BULK, buf, bytes, i == iters - 1);
    while (am_count < 1)
        AM_Poll(eb);
    return compare_now() - t0;
}

static double am_medium(int iters, size_t bytes)
{
    return am_stream(iters, bytes, 0);
}

static double am_xfer(int iters, size_t bytes)
{
    return am_stream(iters, bytes, 1);
}

static double native_medium(int iters, size_t bytes)
{
    native_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        uint32_t last = i == iters - 1;
        flit_am_medium(nep, flit_rank(1), flit_handler(H_BULK), buf, bytes, &last, 1, 0);
    }
    while (native_count < 1)
        flit_poll(nep);
    return compare_now() - t0;
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
    static unsigned char seg[AMUDP_MAX_LONG];
    AM_SetSeg(ep, seg, sizeof seg);
    AM_SetHandler(ep, H_PING, ping);
    AM_SetHandler(ep, H_PONG, pong);
    AM_SetHandler(ep, H_BULK, bulk);
    if (flit_ep_create(NULL, &nep) != FLIT_OK)
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
        compare("AM_RequestI1 stream", am_medium, native_medium, iters / 4,
                AM_MaxMedium(), 0, 1);
        compare("AM_RequestXfer1 stream", am_xfer, native_medium, iters / 4, AM_MaxLong(),
                0, 1);
        flit_am_short(nep, flit_rank(1), flit_handler(H_STOP), NULL, 0, 0);
    }
    AMUDP_SPMDBarrier();
    AMUDP_SPMDExit(0);
    return 0;
}
