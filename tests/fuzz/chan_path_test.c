/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two paths to a peer, one of which dies (src/channel/path.c).
 *
 * The channel sends rank 1 packets 0 .. SENT-1 over two paths. Rank 1
 * (this test) gets only what comes by path 0: path 1 is dead. It answers
 * by path 0, acknowledging cumulatively what it got in order. Path 1,
 * unanswered while path 0 answers, must be taken down within three probe
 * intervals, what went by it sent again by path 0, and every packet
 * acknowledged without the peer being given up; after that no chunk goes
 * by path 1, only probes. Then path 1 comes back: a datagram from rank 1
 * by it, and the next packets take both paths again.
 *
 * With one path (FLIT_UDP_RAILS unset) the same loss stalls the stream
 * until FLIT_PEER_TIMEOUT: the case this repairs.
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

#define SENT     64u  /* packets the channel sends rank 1 */
#define PROBE_MS 60u  /* FLIT_PATH_PROBE_MS here: above the first RTO (50 ms) */
#define LIMIT_S  10.0 /* only a broken channel, or a stalled machine, takes this */

static bool got[2 * SENT];         /* rank 1 has it (it came by path 0) */
static unsigned chunks_by[2];      /* chunks sent by each path */
static unsigned probes_by[2];      /* pings without chunks by each path */
static bool path1_dead = true;     /* what goes by path 1 is lost */
static unsigned chunks_by_1_after; /* by path 1 after it was taken down */
static const struct fl_chan_counters *cc;

static void seen(uint32_t dst, const uint8_t *dgram, size_t len)
{
    static uint8_t copy[65536];
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    struct fl_chan_hdr h;
    unsigned path = memdgram_sent_path;
    if (dst != 1)
        return;
    memcpy(copy, dgram, len);
    FUZZ_CHECK(fl_chan_decode(copy, len, &h, chunks) == FLIT_OK);
    chunks_by[path] += h.nchunks;
    if (h.kind == FL_CHAN_PING && h.nchunks == 0)
        probes_by[path]++;
    if (path == 1 && path1_dead && FL_READ(cc->path_down))
        chunks_by_1_after += h.nchunks;
    if (path == 1 && path1_dead)
        return;
    for (unsigned i = 0; i < h.nchunks; i++)
        if (chunks[i].lane == FL_LANE_REQ && chunks[i].seq < 2 * SENT)
            got[chunks[i].seq] = true;
}

static void nothing(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    (void)ctx, (void)src, (void)lane, (void)pkt, (void)len;
    FUZZ_CHECK(!"rank 1 sent no packet");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Rank 1's answer by path: what it holds in order, acknowledged. */
static uint32_t answer(unsigned path)
{
    uint32_t next = 0;
    while (next < 2 * SENT && got[next])
        next++;
    memdgram_rx_path = path;
    memdgram_from_1(next, 0, false, 0, 0);
    memdgram_rx_path = 0;
    return next;
}

/* Polls, rank 1 answering by path 0 (and by path 1 when alive), until it
   holds packets below upto; returns the seconds it took. */
static double until_held(struct fl_tp_ep *t, uint32_t upto)
{
    double start = now_s(), deadline = start + LIMIT_S;
    while (answer(0) < upto && now_s() < deadline && !memdgram_peers_down()) {
        if (!path1_dead)
            answer(1);
        memdgram_sleep_poll(t, nothing, NULL);
    }
    FUZZ_CHECK(answer(0) >= upto);
    return now_s() - start;
}

int main(void)
{
    setenv("FLIT_PEER_TIMEOUT", "5", 1);
    char probe[16];
    snprintf(probe, sizeof probe, "%u", PROBE_MS);
    setenv("FLIT_PATH_PROBE_MS", probe, 1);
    memdgram_on_send = seen;
    memdgram_paths = 2;
    struct fl_tp_ep *t = memdgram_open(0); /* packet 0 */
    cc = memdgram_chan_counters();
    for (unsigned i = 1; i < SENT; i++)
        memdgram_send(t, 1, FL_LANE_REQ, 32, 0);
    unsigned first_by_1 = chunks_by[1];
    double took = until_held(t, SENT);
    uint64_t down = FL_READ(cc->path_down);
    printf(
        "chan_path: path 1 dead: %u chunks first went by it; all %u held after %.0f ms "
        "(bound %u ms); path_down %llu; %u chunks by path 1 after, %u probes\n",
        first_by_1, SENT, took * 1e3, 3 * PROBE_MS, (unsigned long long)down,
        chunks_by_1_after, probes_by[1]);
    int rc = 0;
    if (first_by_1 == 0 || down != 1 || memdgram_peers_down() ||
        took * 1e3 > 3 * PROBE_MS || chunks_by_1_after) {
        fprintf(stderr, "FAIL: the dead path was not taken down and worked around in "
                        "time, or was still used\n");
        rc = 1;
    }
    /* Path 1 is back: rank 1 is heard by it (a probe's answer). */
    path1_dead = false;
    answer(1);
    fl_chan_poll(t, FL_LANES_ALL, nothing, NULL, 64);
    uint64_t up = FL_READ(cc->path_up);
    unsigned before = chunks_by[1];
    for (unsigned i = 0; i < SENT; i++)
        memdgram_send(t, 1, FL_LANE_REQ, 32, 0);
    until_held(t, 2 * SENT);
    printf("chan_path: path 1 back: path_up %llu; %u chunks by it since\n",
           (unsigned long long)up, chunks_by[1] - before);
    if (up != 1 || chunks_by[1] == before) {
        fprintf(stderr, "FAIL: the path that came back was not used again\n");
        rc = 1;
    }
    memdgram_close(t);
    return rc;
}
