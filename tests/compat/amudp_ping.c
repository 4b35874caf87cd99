/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ping-pong, AMUDP's testping: even procs send short requests to the next
 * odd one, whose handler replies; the reply handler counts. Waiting is by
 * polling (P: AM_Poll in a loop) or blocking (B: AM_WaitSema with the
 * AM_NOTEMPTY event), on both sides. Prints the round-trip time.
 *
 *   amudp_ping [ITERS] [P|B]
 */
#include <string.h>
#include <time.h>

#include "amudp_test.h"

#define H_PING 1
#define H_PONG 2

static eb_t eb;
static ep_t ep;
static volatile int pings, pongs;
static int blocking;

static void ping_handler(void *token, int32_t seq)
{
    AMT_CHECK(seq == pings);
    pings++;
    AMT_OK(AM_Reply1(token, H_PONG, seq));
}

static void pong_handler(void *token, int32_t seq)
{
    (void)token;
    AMT_CHECK(seq == pongs);
    pongs++;
}

/* Makes progress until *counter reaches goal, the way the mode says. */
static void wait_for(volatile int *counter, int goal)
{
    while (*counter < goal) {
        if (blocking) {
            AMT_OK(AM_SetEventMask(eb, AM_NOTEMPTY));
            AMT_OK(AM_WaitSema(eb));
        }
        AMT_OK(AM_Poll(eb));
    }
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep));
    int iters = test_scaled(argc > 1 ? (uint64_t)atoi(argv[1]) : 1000);
    blocking = argc > 2 && strcmp(argv[2], "B") == 0;
    int me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    int partner = me ^ 1;
    AMT_OK(AM_SetHandler(ep, H_PING, ping_handler));
    AMT_OK(AM_SetHandler(ep, H_PONG, pong_handler));
    AMT_OK(AMUDP_SPMDBarrier());
    if (partner < n && me % 2 == 0) {
        double t0 = now_us();
        for (int i = 0; i < iters; i++) {
            AMT_OK(AM_Request1(ep, partner, H_PING, i));
            wait_for(&pongs, i + 1);
        }
        double us = (now_us() - t0) / iters;
        printf("proc %d: %d round trips with %s: %.2f us each\n", me, iters,
               blocking ? "AM_WaitSema" : "AM_Poll", us);
    } else if (partner < n) {
        wait_for(&pings, iters);
    }
    AMT_OK(AMUDP_SPMDBarrier());
    AMUDP_SPMDExit(0);
    return 1;
}
