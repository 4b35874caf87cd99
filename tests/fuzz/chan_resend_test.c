/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What was not lost is not sent again.
 *
 * A slow peer: the channel sends rank 1 packets 0 .. SENT-1, which rank 1
 * gets but does not acknowledge for a while (a handler that sleeps). The
 * oldest times out and goes again alone (F-RTO). Then rank 1 answers as a
 * handler's reply after its pause does: it acknowledges packet 0 only,
 * echoing the clock of a datagram sent before that resend. It had packet
 * 0 all along (it had not seen the resend when it said so), so the resend
 * was needless and nothing else goes again; taking the acknowledgement for
 * the resend's meant "all the rest was lost", and sent SENT-1 packets
 * again (1,024 a pause in mp_resend).
 *
 * A silent peer: rank 1 never answers. The oldest packet goes again alone
 * at every timeout, backed off, the others never, and the peer is given up
 * after FLIT_PEER_TIMEOUT (1 s here): no silent hang, and no window sent
 * again each time the lone resend timed out too.
 *
 * A request that comes while its lane is not polled (a handler waiting
 * for room to reply polls replies only) is kept, as one a spent budget
 * holds back: dropped, it had to come again, and its sender took the hole
 * for a loss on the path.
 *
 * Acknowledgements waiting unread: when the timers are asked to look (the
 * core's peer check, arming to sleep) while a datagram waits in the
 * socket, they leave it to the poll that reads it first: here it
 * acknowledges everything, past its timeout.
 *
 * A datagram the socket refused never left: its chunks, sent when there
 * is room, are not counted as sent again.
 *
 * An answer behind a backlog: rank 1 went quiet, and its next datagram
 * comes just before its give-up time, but behind more datagrams than one
 * receive takes (rank 2's, 40). The poll that reads the first batch finds
 * rank 1 silent past FLIT_PEER_TIMEOUT: it is not given up while the
 * socket holds more, and the polls that read the rest hear it.
 *
 * A peer heard, that acknowledges nothing: alive, and what it has not
 * acknowledged waits in its socket; it is given up only once it falls
 * quiet too.
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

#define SENT    64u  /* packets the channel sends rank 1 */
#define LIMIT_S 30.0 /* only a broken channel, or a stalled machine, takes this */

static unsigned sends[SENT]; /* transmissions to rank 1, per sequence number */
static uint32_t first_ts;    /* the clock the datagram of packet 0 carried first */

static void seen(uint32_t dst, const uint8_t *dgram, size_t len)
{
    static uint8_t copy[65536];
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    struct fl_chan_hdr h;
    if (dst != 1)
        return;
    memcpy(copy, dgram, len);
    FUZZ_CHECK(fl_chan_decode(copy, len, &h, chunks) == FLIT_OK);
    for (unsigned i = 0; i < h.nchunks; i++) {
        if (chunks[i].lane != FL_LANE_REQ || chunks[i].seq >= SENT)
            continue;
        if (chunks[i].seq == 0 && sends[0] == 0)
            first_ts = h.ts;
        sends[chunks[i].seq]++;
    }
}

static void nothing(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    (void)ctx, (void)src, (void)lane, (void)pkt, (void)len;
    FUZZ_CHECK(!"rank 1 sent no packet");
}

static void counted(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    (void)pkt, (void)len;
    FUZZ_CHECK(src == 1 && lane == FL_LANE_REQ);
    ++*(unsigned *)ctx;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Opens the channel and sends rank 1 packets 0 .. SENT-1 (memdgram_open
   sends the first). */
static struct fl_tp_ep *open_and_send(void)
{
    memset(sends, 0, sizeof sends);
    struct fl_tp_ep *t = memdgram_open(0);
    for (unsigned i = 1; i < SENT; i++)
        memdgram_send(t, 1, FL_LANE_REQ, 32, 0);
    for (unsigned s = 0; s < SENT; s++)
        FUZZ_CHECK(sends[s] == 1);
    return t;
}

/* Transmissions of packets from..SENT-1 beyond their first. */
static unsigned resent_from(unsigned from)
{
    unsigned n = 0;
    for (unsigned s = from; s < SENT; s++)
        n += sends[s] - 1;
    return n;
}

/* Sleeps and polls as an endpoint does until packet 0 went n times. */
static void wait_sends_of_0(struct fl_tp_ep *t, unsigned n)
{
    double deadline = now_s() + LIMIT_S;
    while (sends[0] < n && now_s() < deadline)
        memdgram_sleep_poll(t, nothing, NULL);
    FUZZ_CHECK(sends[0] >= n);
}

static int slow_peer(void)
{
    struct fl_tp_ep *t = open_and_send();
    wait_sends_of_0(t, 2);
    unsigned before = resent_from(1);
    /* Rank 1's reply after its pause: packet 0 acknowledged, our clock
       echoed from before the resend. */
    memdgram_from_1(1, first_ts, false, 0, 0);
    fl_chan_poll(t, FL_LANES_ALL, nothing, NULL, 64);
    unsigned after = resent_from(1);
    printf("chan_resend: slow peer: packet 0 sent %u times; packets 1..%u sent again %u "
           "times before its acknowledgement, %u after\n",
           sends[0], SENT - 1, before, after);
    memdgram_close(t);
    if (after != before) {
        fprintf(stderr,
                "FAIL: a needless timeout's acknowledgement sent %u packets again "
                "(the peer had them all)\n",
                after - before);
        return 1;
    }
    return 0;
}

static int silent_peer(void)
{
    struct fl_tp_ep *t = open_and_send();
    double start = now_s(), deadline = start + LIMIT_S;
    while (memdgram_peers_down() == 0 && now_s() < deadline)
        memdgram_sleep_poll(t, nothing, NULL);
    double took = now_s() - start;
    unsigned down = memdgram_peers_down();
    printf("chan_resend: silent peer: down after %.2f s; packet 0 sent %u times, packets "
           "1..%u again %u times\n",
           took, sends[0], SENT - 1, resent_from(1));
    memdgram_close(t);
    if (down != 1) {
        fprintf(stderr, "FAIL: a peer that never answers was not given up in %.0f s\n",
                LIMIT_S);
        return 1;
    }
    if (resent_from(1) > 0 || sends[0] < 2) {
        fprintf(stderr,
                "FAIL: a silent peer's timeouts sent %u packets besides the oldest again "
                "(the oldest: %u times)\n",
                resent_from(1), sends[0]);
        return 1;
    }
    return 0;
}

static int masked_lane(void)
{
    struct fl_tp_ep *t = open_and_send();
    unsigned got = 0;
    memdgram_from_1(0, 0, true, 0, FL_CHAN_FIRST | FL_CHAN_LAST);
    fl_chan_poll(t, FL_LANE_MASK(FL_LANE_REP), counted, &got, 64);
    unsigned inside = got;
    fl_chan_poll(t, FL_LANES_ALL, counted, &got, 64);
    printf("chan_resend: a request that came while only replies were polled: delivered "
           "%u times then, %u after\n",
           inside, got - inside);
    memdgram_close(t);
    if (inside != 0 || got != 1) {
        fprintf(stderr,
                "FAIL: a request that came while its lane was not polled was %s (its "
                "sender would send it again)\n",
                inside ? "delivered inside the handler" : "dropped");
        return 1;
    }
    return 0;
}

static int unread_acks(void)
{
    struct fl_tp_ep *t = open_and_send();
    struct timespec nap = {0, 120000000}; /* past the first timeout (50 ms) */
    nanosleep(&nap, NULL);
    memdgram_from_1(SENT, first_ts, false, 0, 0);
    fl_chan_check_peers(t, nothing, NULL);
    (void)fl_chan_arm(t, FL_LANES_ALL);
    fl_chan_disarm(t);
    fl_chan_poll(t, FL_LANES_ALL, nothing, NULL, 64);
    unsigned resent = resent_from(0);
    printf("chan_resend: acknowledgements unread when the timers were asked: %u "
           "packets sent again\n",
           resent);
    memdgram_close(t);
    if (resent) {
        fprintf(stderr,
                "FAIL: the timers took %u packets for lost while their "
                "acknowledgement waited unread\n",
                resent);
        return 1;
    }
    return 0;
}

/* A datagram the socket refused, sent later: the retransmission counter
   says what went again on the wire, and no more (a timeout on a stalled
   machine may add to both). */
static int refused_send(void)
{
    memset(sends, 0, sizeof sends);
    struct fl_tp_ep *t = memdgram_open(0); /* packet 0 */
    memdgram_refuse_sends(1);
    memdgram_send(t, 1, FL_LANE_REQ, 32, 0);          /* packet 1, refused */
    fl_chan_poll(t, FL_LANES_ALL, nothing, NULL, 64); /* goes now */
    uint64_t counted_again = FL_READ(memdgram_counters()->retransmits);
    unsigned went_again = (sends[0] - 1) + (sends[1] - 1);
    printf("chan_resend: a packet the socket refused once, then sent: %llu counted as "
           "sent again, %u went again\n",
           (unsigned long long)counted_again, went_again);
    memdgram_close(t);
    if (sends[1] != 1 || counted_again != went_again) {
        fprintf(stderr,
                "FAIL: a datagram the socket refused counted as a retransmission\n");
        return 1;
    }
    return 0;
}

/* A datagram from rank 2 with nothing but its header. */
static void queue_from_2(void)
{
    uint8_t d[FL_CHAN_MAX_HDR] = {0};
    struct fl_chan_hdr h = {
        .kind = FL_CHAN_DATA, .src = 2, .dst = 0, .key = memdgram_key(), .ts = 1};
    size_t len = fl_chan_encode_hdr(d, &h);
    FUZZ_CHECK(memdgram_queue(2, d, len, false));
}

static int behind_backlog(void)
{
    struct fl_tp_ep *t = open_and_send();
    unsigned depth;
    memdgram_from_1(SENT, 0, false, 0, 0); /* everything acknowledged: heard */
    memdgram_poll_all(t, FL_LANES_ALL, nothing, NULL, &depth);
    double heard = now_s();
    struct timespec tick = {0, 10000000};
    while (now_s() - heard < 0.9) { /* listening, to a silent rank 1 */
        fl_chan_poll(t, FL_LANES_ALL, nothing, NULL, 64);
        nanosleep(&tick, NULL);
    }
    for (unsigned i = 0; i < 40; i++)
        queue_from_2();
    memdgram_from_1(SENT, 0, false, 0, 0);
    struct timespec nap = {0, 250000000}; /* past the give-up time */
    nanosleep(&nap, NULL);
    fl_chan_poll(t, FL_LANES_ALL, nothing, NULL, 64); /* one batch: 16 of rank 2's */
    unsigned after_first = memdgram_peers_down();
    memdgram_poll_all(t, FL_LANES_ALL, nothing, NULL, &depth);
    unsigned down = memdgram_peers_down(), left = memdgram_pending();
    printf("chan_resend: an answer behind 40 datagrams, %.2f s after the last: peers "
           "given up %u after the first batch, %u after the rest (%u left unread)\n",
           now_s() - heard, after_first, down, left);
    memdgram_close(t);
    if (down != 0 || left != 0) {
        fprintf(stderr, "FAIL: rank 1 was given up while its answer waited unread\n");
        return 1;
    }
    return 0;
}

/*
 * A peer we hear but that acknowledges nothing: rank 1 talks (a datagram
 * every 50 ms, acknowledging nothing of ours) for twice the give-up time.
 * It is alive, and our packets wait behind the rest in its socket, as on
 * a host whose processes each run a second or two apart: it is not given
 * up for them (it was, after FLIT_PEER_TIMEOUT, and a 1,024-rank job
 * ended so). Once it falls quiet, half the give-up time ends it.
 */
static int heard_behind(void)
{
    struct fl_tp_ep *t = open_and_send();
    unsigned depth;
    double start = now_s();
    struct timespec tick = {0, 50000000};
    while (now_s() - start < 2.0 && memdgram_peers_down() == 0) {
        memdgram_from_1(0, 0, false, 0, 0);
        memdgram_poll_all(t, FL_LANES_ALL, nothing, NULL, &depth);
        nanosleep(&tick, NULL);
    }
    unsigned talking = memdgram_peers_down();
    double quiet = now_s(), deadline = quiet + LIMIT_S;
    while (memdgram_peers_down() == 0 && now_s() < deadline)
        memdgram_sleep_poll(t, nothing, NULL);
    double took = now_s() - quiet;
    printf("chan_resend: a peer heard for %.2f s that acknowledged nothing: given up %u "
           "while it talked, then after %.2f s of silence\n",
           quiet - start, talking, took);
    memdgram_close(t);
    if (talking != 0) {
        fprintf(stderr, "FAIL: a peer we heard all along was given up for what it had "
                        "not acknowledged\n");
        return 1;
    }
    if (took > 1.5) {
        fprintf(stderr,
                "FAIL: a peer silent with our packets unacknowledged was given up "
                "only %.2f s later\n",
                took);
        return 1;
    }
    return 0;
}

int main(void)
{
    setenv("FLIT_PEER_TIMEOUT", "1", 1);
    memdgram_on_send = seen;
    int rc = slow_peer();
    rc |= masked_lane();
    rc |= unread_acks();
    rc |= refused_send();
    rc |= behind_backlog();
    rc |= heard_behind();
    return silent_peer() | rc;
}
