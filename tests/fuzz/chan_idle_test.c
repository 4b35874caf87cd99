/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A quiet peer gives its buffers back, and traffic grows them again.
 *
 * Rank 1 gets a packet from the channel and acknowledges it, and sends one
 * packet in two chunks, the second first: the channel holds a send window
 * and chunk table, a reorder table and a reassembly buffer for it
 * ("buffer_bytes"). Once rank 1 has been quiet for the idle period
 * (idle.c: at least 250 ms) they are all given back: the gauge drops to 0
 * and "idle_peers" counts it, waited for by sleeping as an endpoint does,
 * bounded. Then traffic returns both ways: the next packet to rank 1 goes
 * within the send call (no round trip: the window is allocated locally)
 * with the next sequence number, rank 1's next packets (one whole, one in
 * chunks) are delivered once each, and the gauges say the peer is busy.
 *
 * A peer with a packet unacknowledged keeps its buffers, however long it
 * is silent (rank 2 here): the retransmission buffer is what resends it.
 *
 * The network is memory (memdgram.h); time is real, bounded by LIMIT_S.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "channel/wire.h"
#include "fuzz.h"
#include "memdgram.h"
#include "util/counter.h"

#define LIMIT_S  20.0 /* only a broken channel, or a stalled machine, takes this */
#define IDLE_MIN 0.25 /* idle.c's IDLE_MIN_NS */
#define NEXT_SEQ 1u   /* our packet after the quiet: memdgram_open sent 0 */

static uint32_t sent_to[FUZZ_RANKS]; /* chunks sent to each rank, first sends */
static uint32_t top_seq[FUZZ_RANKS]; /* one past the highest request seq sent */

static void seen(uint32_t dst, const uint8_t *dgram, size_t len)
{
    static uint8_t copy[65536];
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    struct fl_chan_hdr h;
    memcpy(copy, dgram, len);
    FUZZ_CHECK(dst < FUZZ_RANKS && fl_chan_decode(copy, len, &h, chunks) == FLIT_OK);
    for (unsigned i = 0; i < h.nchunks; i++)
        if (chunks[i].lane == FL_LANE_REQ && chunks[i].seq + 1 > top_seq[dst]) {
            top_seq[dst] = chunks[i].seq + 1;
            sent_to[dst]++;
        }
}

static void counted(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    (void)pkt;
    FUZZ_CHECK(src == 1 && lane == FL_LANE_REQ && (len == 32 || len == 64));
    ++*(unsigned *)ctx;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t held(void)
{
    return FL_READ(memdgram_chan_counters()->buffer_bytes);
}

static uint64_t idle_peers(void)
{
    return FL_READ(memdgram_chan_counters()->idle_peers);
}

static int fail(const char *why)
{
    fprintf(stderr, "FAIL: %s (buffer_bytes %llu, idle_peers %llu)\n", why,
            (unsigned long long)held(), (unsigned long long)idle_peers());
    return 1;
}

/* Rank 1 acknowledges packet 0 and sends a packet of two chunks, the
   second first (held aside, then reassembled): every kind of buffer. */
static int busy_then_quiet(struct fl_tp_ep *t, unsigned *got)
{
    memdgram_from_1(1, 0, true, 1, FL_CHAN_LAST);
    memdgram_from_1(1, 0, true, 0, FL_CHAN_FIRST);
    memdgram_poll_all(t, FL_LANES_ALL, counted, got, &(unsigned){0});
    if (*got != 1)
        return fail("rank 1's packet in two chunks was not delivered once");
    uint64_t busy = held();
    double start = now_s(), deadline = start + LIMIT_S;
    while (idle_peers() == 0 && now_s() < deadline)
        memdgram_sleep_poll(t, counted, got);
    double took = now_s() - start;
    printf("chan_idle: %llu bytes held for a busy peer; given back after %.2f s quiet, "
           "%llu held then\n",
           (unsigned long long)busy, took, (unsigned long long)held());
    if (busy < 16384 + 1024 * sizeof(uint64_t))
        return fail("a busy peer's send window and receive buffers were not counted");
    if (idle_peers() != 1 || held() != 0)
        return fail("a peer quiet past the idle period kept its buffers");
    if (took < IDLE_MIN * 0.9)
        return fail("buffers given back before the idle period");
    return 0;
}

/* Traffic again: our packet goes at once, in sequence; rank 1's are
   delivered once each, one whole and one reassembled. */
static int traffic_again(struct fl_tp_ep *t, unsigned *got)
{
    uint32_t before = sent_to[1];
    memdgram_send(t, 1, FL_LANE_REQ, 64, 0);
    if (sent_to[1] != before + 1 || top_seq[1] != NEXT_SEQ + 1)
        return fail("the first packet after the quiet did not go at once, in sequence");
    if (idle_peers() != 0 || held() == 0)
        return fail("a peer that talks again counts as idle");
    memdgram_from_1(NEXT_SEQ + 1, 0, true, 2, FL_CHAN_FIRST | FL_CHAN_LAST);
    memdgram_from_1(NEXT_SEQ + 1, 0, true, 3, FL_CHAN_FIRST);
    memdgram_from_1(NEXT_SEQ + 1, 0, true, 4, FL_CHAN_LAST);
    memdgram_poll_all(t, FL_LANES_ALL, counted, got, &(unsigned){0});
    if (*got != 3)
        return fail("rank 1's packets after the quiet were not delivered once each");
    if (memdgram_peers_down())
        return fail("a quiet peer was given up");
    printf("chan_idle: after the quiet: sent at once as #%u, %u packets taken, %llu "
           "bytes held\n",
           top_seq[1] - 1, *got, (unsigned long long)held());
    return 0;
}

static int quiet_peer(void)
{
    struct fl_tp_ep *t = memdgram_open(0); /* packet 0 to rank 1 */
    unsigned got = 0;
    int rc = busy_then_quiet(t, &got);
    if (rc == 0)
        rc = traffic_again(t, &got);
    memdgram_close(t);
    return rc;
}

/* Rank 2 never acknowledges: its buffers stay past the idle period. */
static int unacknowledged_peer(void)
{
    struct fl_tp_ep *t = memdgram_open(0);
    memdgram_from_1(1, 0, false, 0, 0); /* rank 1 at rest */
    fl_chan_poll(t, FL_LANES_ALL, counted, &(unsigned){0}, 64);
    memdgram_send(t, 2, FL_LANE_REQ, 64, 0);
    double deadline = now_s() + LIMIT_S;
    while (idle_peers() == 0 && now_s() < deadline)
        memdgram_sleep_poll(t, counted, &(unsigned){0});
    double until = now_s() + 1.0; /* well past rank 2's idle period too */
    while (now_s() < until)
        memdgram_sleep_poll(t, counted, &(unsigned){0});
    uint64_t left = held(), idle = idle_peers();
    printf("chan_idle: a peer with a packet unacknowledged: %llu bytes held, %llu idle "
           "peers\n",
           (unsigned long long)left, (unsigned long long)idle);
    memdgram_close(t);
    if (idle != 1 || left == 0)
        return fail("a peer with a packet unacknowledged gave its buffers back");
    return 0;
}

int main(void)
{
    memdgram_on_send = seen;
    int rc = quiet_peer();
    memset(sent_to, 0, sizeof sent_to);
    memset(top_seq, 0, sizeof top_seq);
    return unacknowledged_peer() | rc;
}
