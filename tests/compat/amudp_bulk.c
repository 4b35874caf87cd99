/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bulk transfer into the segment, AMUDP's testbulk: every proc fills the
 * next proc's segment with AM_MaxLong() pieces (AM_RequestXfer, one reply
 * per piece, at most DEPTH pieces unanswered), then the receiver checks
 * every byte; the same once more with medium messages copied in by the
 * handler. Prints the bandwidth.
 *
 *   amudp_bulk [MBYTES]
 */
#include <string.h>
#include <time.h>

#include "amudp_test.h"

#define H_PIECE  1
#define H_ACK    2
#define H_MEDIUM 3
#define DEPTH    8

static eb_t eb;
static ep_t ep;
static unsigned char *seg;
static size_t seglen;
static volatile int acks, pieces;
static int prev; /* the proc that fills this one's segment */

static unsigned char byte_at(size_t k, int src)
{
    return (unsigned char)((k >> 3) ^ (k * 13u) ^ (unsigned)src);
}

/* An Xfer's handler runs once all of its bytes are in place. */
static void piece_handler(void *token, void *buf, size_t nbytes, int32_t index)
{
    size_t off = (size_t)index * AM_MaxLong();
    AMT_CHECK((unsigned char *)buf == seg + off && off + nbytes <= seglen);
    for (size_t k = 0; k < nbytes; k++)
        if (seg[off + k] != byte_at(off + k, prev))
            AMT_FAIL("Xfer %d: byte %zu not in place when its handler ran", index, k);
    pieces++;
    AMT_OK(AM_Reply0(token, H_ACK));
}

static void medium_handler(void *token, void *buf, size_t nbytes, int32_t lo, int32_t hi)
{
    size_t off = (uint32_t)lo | (size_t)(uint32_t)hi << 32;
    AMT_CHECK(off + nbytes <= seglen);
    memcpy(seg + off, buf, nbytes);
    pieces++;
    AMT_OK(AM_Reply0(token, H_ACK));
}

static void ack_handler(void *token)
{
    (void)token;
    acks++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sends the whole source in pieces of max bytes, medium or long. */
static void send_all(int to, const unsigned char *src, size_t max, int medium)
{
    int sent = 0;
    acks = 0;
    for (size_t off = 0; off < seglen; off += max, sent++) {
        size_t len = seglen - off < max ? seglen - off : max;
        AMT_POLL_UNTIL(eb, acks, sent - DEPTH + 1);
        if (medium)
            AMT_OK(AM_RequestI2(ep, to, H_MEDIUM, (void *)(src + off), len,
                                (int32_t)(uint32_t)off, (int32_t)(off >> 32)));
        else
            AMT_OK(AM_RequestXfer1(ep, to, off, H_PIECE, (void *)(src + off), len,
                                   (int32_t)(off / max)));
    }
    AMT_POLL_UNTIL(eb, acks, sent);
}

static void check_segment(int from)
{
    for (size_t k = 0; k < seglen; k++)
        if (seg[k] != byte_at(k, from))
            AMT_FAIL("segment byte %zu from proc %d differs", k, from);
}

int main(int argc, char **argv)
{
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep));
    int me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    int next = (me + 1) % n;
    prev = (me + n - 1) % n;
    seglen = test_scaled((uint64_t)(argc > 1 ? atoi(argv[1]) : 8) << 20);
    seg = malloc(seglen);
    unsigned char *src = malloc(seglen);
    AMT_CHECK(seg && src);
    for (size_t k = 0; k < seglen; k++)
        src[k] = byte_at(k, me);
    AMT_OK(AM_SetSeg(ep, seg, seglen));
    AMT_OK(AM_SetHandler(ep, H_PIECE, piece_handler));
    AMT_OK(AM_SetHandler(ep, H_ACK, ack_handler));
    AMT_OK(AM_SetHandler(ep, H_MEDIUM, medium_handler));
    for (int medium = 0; medium < 2; medium++) {
        memset(seg, 0, seglen);
        AMT_OK(AMUDP_SPMDBarrier());
        double t0 = now_s();
        send_all(next, src, medium ? AM_MaxMedium() : AM_MaxLong(), medium);
        double s = now_s() - t0;
        AMT_OK(AMUDP_SPMDBarrier());
        check_segment(prev);
        if (me == 0)
            printf("%s: %zu bytes in %.3f s: %.1f MB/s\n",
                   medium ? "AM_RequestI" : "AM_RequestXfer", seglen, s,
                   seglen / s / 1e6);
    }
    AMT_OK(AMUDP_SPMDBarrier());
    AMUDP_SPMDExit(0);
    return 1;
}
