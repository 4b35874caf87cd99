/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Selective acknowledgements reach across the whole window, both ways.
 *
 * Receiving: rank 1 sends the channel (rank 0) chunks 1 .. HELD of its
 * request lane, chunk 0 lost. Every acknowledgement the channel sends back
 * must say that it holds each of them, however far past the hole (version
 * 1 of the wire said so for 64 only). Then the channel sends rank 1 a
 * packet of the largest size: its datagram has room for one selective
 * word, and a whole acknowledgement must follow it. Then chunk 0 comes
 * while the poll's budget is spent: it is held back, and the
 * acknowledgement says so too (not yet delivered, not to be sent again);
 * the next poll delivers all of them, in order.
 *
 * Sending: the channel sends rank 1 packets 0 .. SENT-1; rank 1
 * acknowledges them all but 0 and HOLE. Those two must go again (at once,
 * and at every retransmission timeout after), and no other packet ever:
 * what the acknowledgement says is held is never sent twice.
 *
 * The network is memory (memdgram.h); time is real, bounded by LIMIT_S.
 */
#include <string.h>
#include <time.h>

#include "channel/wire.h"
#include "fuzz.h"
#include "memdgram.h"

#define HELD    300u /* chunks rank 1 sends past its lost first */
#define SENT    600u /* packets the channel sends rank 1 */
#define HOLE    450u /* the second of them that rank 1 lacks */
#define LIMIT_S 30.0 /* only a broken channel, or a stalled machine, takes this */

static unsigned sends[SENT];      /* transmissions to rank 1, per sequence number */
static struct fl_chan_ack last;   /* the request lane's newest acknowledgement */
static unsigned acks, short_acks; /* datagrams to rank 1; of them, with fewer words */
static size_t last_chunks;        /* chunks in the newest datagram to rank 1 */

static void seen(uint32_t dst, const uint8_t *dgram, size_t len)
{
    static uint8_t copy[65536];
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    struct fl_chan_hdr h;
    if (dst != 1)
        return;
    memcpy(copy, dgram, len);
    FUZZ_CHECK(fl_chan_decode(copy, len, &h, chunks) == FLIT_OK);
    for (unsigned i = 0; i < h.nchunks; i++)
        if (chunks[i].lane == FL_LANE_REQ && chunks[i].seq < SENT)
            sends[chunks[i].seq]++;
    last = h.ack[FL_LANE_REQ];
    last_chunks = h.nchunks;
    acks++;
    if (h.nchunks && h.ack[FL_LANE_REQ].words < (HELD + 64) / 64)
        short_acks++;
}

static void nothing(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    (void)ctx, (void)src, (void)lane, (void)pkt, (void)len;
    FUZZ_CHECK(!"chunk 0 never came: nothing is delivered");
}

static uint32_t delivered; /* chunks of rank 1 delivered, each in its turn */

static void in_order(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    (void)ctx;
    FUZZ_CHECK(src == 1 && lane == FL_LANE_REQ && len == 32);
    FUZZ_CHECK(((const uint8_t *)pkt)[0] == (uint8_t)delivered);
    delivered++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A datagram from rank 1: its acknowledgement of the request lane (words
   selective words of sack), and chunks first .. first+n-1 of 32 bytes. */
static void from_1_polled(struct fl_tp_ep *t, uint8_t kind, uint32_t next,
                          const uint64_t *sack, unsigned words, uint32_t first,
                          unsigned n, fl_tp_recv_fn cb, int budget)
{
    static uint8_t d[FL_CHAN_MAX_HDR + 16 * (FL_CHAN_CHUNK_HDR + 32)];
    struct fl_chan_hdr h = {.kind = kind,
                            .nchunks = (uint16_t)n,
                            .src = 1,
                            .dst = 0,
                            .key = memdgram_key(),
                            .ts = 1};
    h.ack[FL_LANE_REQ].next = next;
    h.ack[FL_LANE_REQ].words = (uint8_t)words;
    for (unsigned w = 0; w < words; w++)
        h.ack[FL_LANE_REQ].sack[w] = sack[w];
    size_t pos = fl_chan_encode_hdr(d, &h);
    for (unsigned i = 0; i < n; i++) {
        struct fl_chan_chunk c = {.lane = FL_LANE_REQ,
                                  .flags = FL_CHAN_FIRST | FL_CHAN_LAST,
                                  .len = 32,
                                  .seq = first + i};
        fl_chan_encode_chunk(d + pos, &c);
        memset(d + pos + FL_CHAN_CHUNK_HDR, (int)(first + i), 32);
        pos += fl_chan_chunk_size(32);
    }
    FUZZ_CHECK(memdgram_queue(1, d, pos, false));
    fl_chan_poll(t, FL_LANES_ALL, cb, NULL, budget);
}

static void from_1(struct fl_tp_ep *t, uint32_t next, const uint64_t *sack,
                   unsigned words, uint32_t first, unsigned n)
{
    from_1_polled(t, FL_CHAN_DATA, next, sack, words, first, n, nothing, 64);
}

/* Whether the acknowledgement says chunk seq is held. */
static bool says_held(const struct fl_chan_ack *a, uint32_t seq)
{
    uint32_t i = seq - a->next;
    return i / 64 < a->words && (a->sack[i / 64] >> (i % 64)) & 1;
}

static void receiving(struct fl_tp_ep *t)
{
    /* rank 1 acknowledges packet 0 of memdgram_open: nothing is in flight */
    for (uint32_t s = 1; s <= HELD; s += 10)
        from_1(t, 1, NULL, 0, s, 10);
    FUZZ_CHECK(acks > 0);
    FUZZ_CHECK(last.next == 0);
    FUZZ_CHECK(last.words == (HELD + 64) / 64);
    for (uint32_t s = 1; s <= HELD; s++)
        if (!says_held(&last, s)) {
            fprintf(stderr, "FAIL: the acknowledgement does not say chunk %u is held\n",
                    s);
            exit(1);
        }
    FUZZ_CHECK(!says_held(&last, HELD + 1));

    /* A packet as large as a datagram takes: one word beside it, then the
       whole acknowledgement in a datagram of its own. */
    size_t fit = fl_chan_peer_packet_fit(t, 1);
    unsigned before = acks;
    memdgram_send(t, 1, FL_LANE_REP, fit, 0);
    FUZZ_CHECK(acks >= before + 2);
    FUZZ_CHECK(short_acks >= 1);
    FUZZ_CHECK(last_chunks == 0 && last.words == (HELD + 64) / 64);

    /* chunk 0, its poll's budget spent: held back, and said held */
    from_1_polled(t, FL_CHAN_DATA, 1, NULL, 0, 0, 1, nothing, 0);
    from_1_polled(t, FL_CHAN_PING, 1, NULL, 0, 0, 0, nothing, 0); /* an ack, now */
    FUZZ_CHECK(last.next == 0 && says_held(&last, 0));
    for (uint32_t s = 1; s <= HELD; s++)
        FUZZ_CHECK(says_held(&last, s));
    for (unsigned i = 0; i < 100 && delivered < HELD + 1; i++) /* 64 a poll */
        fl_chan_poll(t, FL_LANES_ALL, in_order, NULL, 64);
    FUZZ_CHECK(delivered == HELD + 1);
    printf("chan_sack_wide: %u chunks past a hole said held in %u words; after a "
           "full-size packet with fewer, the whole acknowledgement followed; the "
           "first, held back for the budget, said held, then all %u delivered in "
           "order\n",
           HELD, last.words, delivered);
}

static void sending(void)
{
    memset(sends, 0, sizeof sends);
    struct fl_tp_ep *t = memdgram_open(0); /* sends rank 1 packet 0 */
    for (unsigned i = 1; i < SENT; i++)
        memdgram_send(t, 1, FL_LANE_REQ, 32, 0);
    for (unsigned s = 0; s < SENT; s++)
        FUZZ_CHECK(sends[s] == 1); /* the window had room for all */
    uint64_t sack[FL_CHAN_SACK_WORDS];
    memset(sack, 0xff, sizeof sack);
    unsigned words = (SENT + 63) / 64;
    if (SENT % 64)
        sack[words - 1] = ((uint64_t)1 << (SENT % 64)) - 1; /* up to SENT-1 */
    sack[0] &= ~(uint64_t)1;                                /* not 0 */
    sack[HOLE / 64] &= ~((uint64_t)1 << (HOLE % 64));
    from_1(t, 0, sack, words, 0, 0);
    FUZZ_CHECK(sends[0] == 2 && sends[HOLE] == 2); /* at once */

    double deadline = now_s() + LIMIT_S;
    while ((sends[0] < 4 || sends[HOLE] < 4) && now_s() < deadline)
        memdgram_sleep_poll(t, nothing, NULL);
    memdgram_close(t);
    printf("chan_sack_wide: packets 0 and %u sent %u and %u times, ", HOLE, sends[0],
           sends[HOLE]);
    FUZZ_CHECK(sends[0] >= 4 && sends[HOLE] >= 4);
    unsigned again = 0;
    for (unsigned s = 1; s < SENT; s++)
        if (s != HOLE && sends[s] != 1) {
            fprintf(stderr, "FAIL: packet %u, acknowledged as held, went %u times\n", s,
                    sends[s]);
            again++;
        }
    printf("the %u others said held once each\n", SENT - 2);
    if (again)
        exit(1);
}

int main(void)
{
    memdgram_on_send = seen;
    struct fl_tp_ep *t = memdgram_open(0);
    receiving(t);
    memdgram_close(t);
    sending();
    return 0;
}
