/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bulk transfer into the segment, AMUDP's testbulk: every proc fills the
 * next proc's segment with AM_MaxLong() pieces (AM_RequestXfer, one reply
 * per piece, at most DEPTH pieces unanswered), then the receiver checks
 * every byte; the same once more with medium messages copied in by the
 * handler. Prints the bandwidth. Last, on shared memory, an Xfer is in the
 * destination's segment before the destination makes any call: the sender
 * put it there (as a medium message it would wait for the receiver).
 *
 *   amudp_bulk [MBYTES]
 */
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "amudp_test.h"

#define H_PIECE  1
#define H_ACK    2
#define H_MEDIUM 3
#define H_GO     4
#define DEPTH    8

static eb_t eb;
static ep_t ep;
static unsigned char *seg;
static size_t seglen;
static volatile int acks, pieces, go;

static unsigned char byte_at(size_t k, int src)
{
    return (unsigned char)((k >> 3) ^ (k * 13u) ^ (unsigned)src);
}

static void piece_handler(void *token, void *buf, size_t nbytes, int32_t index)
{
    AMT_CHECK((unsigned char *)buf == seg + (size_t)index * AM_MaxLong());
    (void)nbytes;
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

/* 1 when this proc may read proc from's memory (cross-memory attach):
   then from may write proc 0's the same way, as flit's puts do. */
static int can_attach(int from, int n)
{
    struct {
        pid_t pid;
        uintptr_t addr;
    } mine = {getpid(), (uintptr_t)seg}, *all = calloc((size_t)n, sizeof *all);
    AMT_CHECK(all != NULL);
    AMT_OK(AMUDP_SPMDAllGather(&mine, all, sizeof mine));
    unsigned char b;
    struct iovec local = {&b, 1}, remote = {(void *)all[from].addr, 1};
    int ok = process_vm_readv(all[from].pid, &local, 1, &remote, 1, 0) == 1;
    free(all);
    return ok;
}

static int bytes_from(const volatile unsigned char *p, size_t len, int from)
{
    for (size_t k = 0; k < len; k++)
        if (p[k] != byte_at(k, from))
            return 0;
    return 1;
}

static void go_handler(void *token)
{
    (void)token;
    go++;
}

/* The last proc sends proc 0 an Xfer once proc 0 said it stopped making
   calls; proc 0 sees the data arrive, then polls and its handler runs. */
static void lands_before_any_call(int me, int n, const unsigned char *src)
{
    const char *tr = getenv("FLIT_TRANSPORT"), *bulk = getenv("FLIT_SHM_BULK");
    int shm = (!tr || strcmp(tr, "shm") == 0) && !(bulk && strcmp(bulk, "copy") == 0);
    if (!can_attach(n - 1, n) || !shm) { /* the same answer on every proc */
        if (me == 0)
            printf("Xfer put: not checked here (%s)\n",
                   shm ? "no cross-memory attach" : "not on shared memory");
        return;
    }
    memset(seg, 0, seglen);
    int before = pieces;
    acks = 0;
    AMT_OK(AMUDP_SPMDBarrier());
    if (me == 0) {
        AMT_OK(AM_Request0(ep, n - 1, H_GO));
        double give_up = now_s() + 60;
        while (!bytes_from(seg, AM_MaxLong(), n - 1))
            if (now_s() > give_up)
                AMT_FAIL("an Xfer's data did not land until its destination polled");
        AMT_CHECK(pieces == before); /* its handler runs in AM_Poll, after the data */
        AMT_POLL_UNTIL(eb, pieces, before + 1);
        printf("Xfer put: in the segment before the destination polled\n");
    } else if (me == n - 1) {
        AMT_POLL_UNTIL(eb, go, 1);
        AMT_OK(AM_RequestXfer1(ep, 0, 0, H_PIECE, (void *)src, AM_MaxLong(), 0));
        AMT_POLL_UNTIL(eb, acks, 1);
    }
}

int main(int argc, char **argv)
{
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep));
    int me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
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
    AMT_OK(AM_SetHandler(ep, H_GO, go_handler));
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
    lands_before_any_call(me, n, src);
    AMT_OK(AMUDP_SPMDBarrier());
    AMUDP_SPMDExit(0);
    return 1;
}
