/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A late datagram must not stop a retransmission. Rank 0's channel sends
 * rank 1 packets 0 .. 999 (rank 1 acknowledges them all), then 1000 ..
 * 1099, which are "lost". Then a datagram rank 1 sent long ago arrives:
 * cumulative acknowledgement 0, and a selective acknowledgement for
 * sequence number 10 (bit 10: 0 + 10). Sequence number 10 was
 * acknowledged long ago; the selective bit is stale and says nothing about
 * 1034, which uses the same slot of the channel's table (1034 % 1024 ==
 * 10). Every unacknowledged packet, 1034 included, must still be sent again
 * when its loss is known: a packet never sent again is never delivered, and
 * the peer is given up for dead after FLIT_PEER_TIMEOUT.
 *
 * The timeout sends the oldest, 1000, again alone; rank 1 acknowledges that
 * resend (cumulatively: 1001, echoing its clock), which shows the others
 * lost with it, and they all go again; from then on the path is lossy and
 * every packet past its timeout goes again.
 *
 * The network is memory (memdgram.h); time is real. The test sleeps as an
 * endpoint does, on the channel's descriptor armed with its next deadline,
 * until every other lost packet has been sent a third time: two rounds of
 * retransmissions, the first of which had to send 1034 again too.
 */
#include <string.h>
#include <time.h>

#include "channel/wire.h"
#include "fuzz.h"
#include "memdgram.h"

#define FIRST_BATCH 1000u
#define LOST        100u
#define STALE_SEQ   10u
#define LIMIT_S     30.0 /* only a broken channel, or a stalled machine, takes this */

static unsigned sends[FIRST_BATCH + LOST]; /* transmissions per sequence number */
static uint32_t resend_ts; /* the clock the datagram resending FIRST_BATCH carried */

static void count(uint32_t dst, const uint8_t *dgram, size_t len)
{
    static uint8_t copy[65536];
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    struct fl_chan_hdr h;
    memcpy(copy, dgram, len);
    FUZZ_CHECK(fl_chan_decode(copy, len, &h, chunks) == FLIT_OK);
    for (unsigned i = 0; i < h.nchunks; i++)
        if (dst == 1 && chunks[i].lane == FL_LANE_REQ &&
            chunks[i].seq < FIRST_BATCH + LOST) {
            if (++sends[chunks[i].seq] == 2 && chunks[i].seq == FIRST_BATCH)
                resend_ts = h.ts;
        }
}

static void nothing(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    (void)ctx, (void)src, (void)lane, (void)pkt, (void)len;
    FUZZ_CHECK(!"rank 1 sent no packet");
}

/* A datagram from rank 1 that carries only acknowledgements, echoing our
   clock reading echo (0: none). */
static void ack_from_1(struct fl_tp_ep *t, uint32_t next, uint64_t sack, uint32_t echo)
{
    uint8_t d[FL_CHAN_MAX_HDR];
    struct fl_chan_hdr h = {.kind = FL_CHAN_DATA,
                            .src = 1,
                            .dst = 0,
                            .key = memdgram_key(),
                            .ts = 1,
                            .ts_echo = echo};
    h.ack[FL_LANE_REQ].next = next;
    h.ack[FL_LANE_REQ].words = sack ? 1 : 0;
    h.ack[FL_LANE_REQ].sack[0] = sack;
    FUZZ_CHECK(memdgram_queue(1, d, fl_chan_encode_hdr(d, &h), false));
    fl_chan_poll(t, FL_LANES_ALL, nothing, NULL, 64);
}

/* The fewest transmissions of a lost packet other than skip and the first
   (acknowledged once resent). */
static unsigned least_sent(unsigned skip)
{
    unsigned least = ~0u;
    for (unsigned s = FIRST_BATCH + 1; s < FIRST_BATCH + LOST; s++)
        if (s != skip && sends[s] < least)
            least = sends[s];
    return least;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    memdgram_on_send = count;
    struct fl_tp_ep *t = memdgram_open(0); /* sends rank 1 packet 0 */
    for (unsigned i = 1; i < FIRST_BATCH; i++)
        memdgram_send(t, 1, FL_LANE_REQ, 32, 0);
    ack_from_1(t, FIRST_BATCH, 0, 0);
    for (unsigned i = 0; i < LOST; i++)
        memdgram_send(t, 1, FL_LANE_REQ, 32, 0);
    for (unsigned s = FIRST_BATCH; s < FIRST_BATCH + LOST; s++)
        FUZZ_CHECK(sends[s] == 1); /* the window had room for all */
    ack_from_1(t, 0, (uint64_t)1 << STALE_SEQ, 0);

    unsigned slot_mate = FIRST_BATCH + (1024u - FIRST_BATCH % 1024u + STALE_SEQ) % 1024u;
    double deadline = now_s() + LIMIT_S;
    bool answered = false;
    while (least_sent(slot_mate) < 3 && now_s() < deadline) {
        memdgram_sleep_poll(t, nothing, NULL);
        if (!answered && sends[FIRST_BATCH] >= 2) {
            ack_from_1(t, FIRST_BATCH + 1, 0, resend_ts);
            answered = true;
        }
    }
    unsigned least = least_sent(slot_mate);
    printf("chan_sack: unacknowledged packets sent at least %u times; %u, which shares a "
           "slot with the stale selective ack's %u, %u times\n",
           least, slot_mate, STALE_SEQ, sends[slot_mate]);
    memdgram_close(t);
    FUZZ_CHECK(least > 1);
    if (sends[slot_mate] < 2) {
        fprintf(stderr,
                "FAIL: packet %u was never sent again: a stale selective "
                "acknowledgement (for %u) marked it as received\n",
                slot_mate, STALE_SEQ);
        return 1;
    }
    return 0;
}
