/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagrams in. Who sent it and whether it is this job's is checked first;
 * then its acknowledgements (ack.c), then its chunks: one with the next
 * sequence number is delivered at once, from the datagram (no copy) when
 * it is a whole packet; one ahead of it is copied aside until the hole is
 * filled; one behind is a duplicate, dropped. A packet larger than a
 * datagram is reassembled from its chunks in order. What was delivered is
 * acknowledged after a delay (FLIT_ACK_DELAY_US) when no reverse traffic
 * carries the acknowledgement sooner, at once when a quarter of the window
 * waits for it.
 */
#include "channel/recv.h"

#include <stdlib.h>
#include <string.h>

#include "channel/ack.h"
#include "channel/config.h"
#include "channel/idle.h"
#include "channel/path.h"
#include "channel/peer.h"
#include "channel/rto.h"
#include "channel/state.h"
#include "platform/os.h"
#include "util/config.h"

static void schedule_ack(struct fl_tp_ep *t, struct chan_peer *p, struct rx_lane *rx,
                         uint64_t now)
{
    if (rx->unacked >= p->window / 4) {
        p->ack_now = true; /* do not let the sender stall */
        fl_chan_mark(t, p);
    } else if (!p->ack_due) {
        p->ack_due = now + (uint64_t)fl_chan_cfg.ack_delay_us * 1000u;
        fl_chan_note_deadline(&t->next_timer, p->ack_due);
    }
}

static void deliver(struct fl_tp_ep *t, uint32_t src, unsigned lane, uint8_t flags,
                    uint8_t *data, size_t len, fl_tp_recv_fn cb, void *ctx, int *n)
{
    struct rx_lane *rx = &t->peers[src].rx[lane];
    rx->next++;
    rx->unacked += len;
    if ((flags & (FL_CHAN_FIRST | FL_CHAN_LAST)) == (FL_CHAN_FIRST | FL_CHAN_LAST)) {
        (*n)++;
        cb(ctx, src, lane, data, len); /* straight from the datagram */
        return;
    }
    if (flags & FL_CHAN_FIRST) {
        rx->asm_open = true;
        rx->asm_len = 0;
    }
    if (!rx->asm_open || rx->asm_len + len > t->max_packet) {
        FL_COUNT(t->counters->refused_packets, 1); /* broken chunk sequence */
        rx->asm_open = false;
        return;
    }
    memcpy(rx->asm_buf + rx->asm_len, data, len);
    rx->asm_len += len;
    if (flags & FL_CHAN_LAST) {
        rx->asm_open = false;
        (*n)++;
        cb(ctx, src, lane, rx->asm_buf, rx->asm_len);
    }
}

/* Whether the lane can take a chunk with flags now: a piece of a packet
   needs the reassembly buffer, allocated by the first such chunk. When
   there is no memory for it, the chunk is left unconsumed: it comes again. */
static bool asm_ready(struct fl_tp_ep *t, struct chan_peer *p, struct rx_lane *rx,
                      uint8_t flags)
{
    if ((flags & (FL_CHAN_FIRST | FL_CHAN_LAST)) == (FL_CHAN_FIRST | FL_CHAN_LAST) ||
        rx->asm_buf)
        return true;
    if (!(rx->asm_buf = malloc(t->max_packet)))
        return false;
    fl_chan_hold(t, p, t->max_packet, fl_now_ns());
    return true;
}

/* Whether we hold a copy of chunk seq (the reorder buffer exists once a
   chunk was held). */
static bool held_at(const struct rx_lane *rx, uint32_t seq)
{
    return rx->held && rx->ooo[seq % CHUNK_CAP].data;
}

/* Keeps a copy of c until its turn comes (or drops it, out of memory: it
   comes again). The lane's reorder buffer is allocated by its first use. */
static void hold_chunk(struct fl_tp_ep *t, struct chan_peer *p, struct rx_lane *rx,
                       const struct fl_chan_chunk *c)
{
    if (!rx->ooo) {
        if (!(rx->ooo = calloc(CHUNK_CAP, sizeof *rx->ooo)))
            return;
        fl_chan_hold(t, p, CHUNK_CAP * sizeof *rx->ooo, fl_now_ns());
    }
    struct rx_chunk *o = &rx->ooo[c->seq % CHUNK_CAP];
    if (!(o->data = malloc(c->len ? c->len : 1)))
        return;
    memcpy(o->data, c->data, c->len);
    o->len = c->len;
    o->flags = c->flags;
    if (!rx->held || !fl_seq_before(c->seq, rx->top))
        rx->top = c->seq + 1;
    rx->held++;
    rx->held_bytes += c->len;
}

/*
 * Delivers the chunks that came ahead of their turn and wait for no hole
 * now, as many as the poll's budget allows (flit_extract paces the
 * receiver); the rest are released by the next polls.
 */
static void release_ooo(struct fl_tp_ep *t, uint32_t src, unsigned lane, fl_tp_recv_fn cb,
                        void *ctx, int *n)
{
    struct chan_peer *p = &t->peers[src];
    struct rx_lane *rx = &p->rx[lane];
    struct rx_chunk *o;
    bool more = false;
    while (!p->down && held_at(rx, rx->next)) {
        o = &rx->ooo[rx->next % CHUNK_CAP];
        if (*n >= t->budget || !asm_ready(t, p, rx, o->flags)) {
            more = true;
            break;
        }
        uint8_t *data = o->data;
        o->data = NULL;
        rx->held--;
        rx->held_bytes -= o->len;
        deliver(t, src, lane, o->flags, data, o->len, cb, ctx, n);
        free(data);
    }
    if (more != rx->release) {
        rx->release = more;
        t->nrelease += more ? 1 : (uint32_t)-1;
    }
}

/* The lanes whose chunks a budget held back, first (they are the oldest). */
void fl_chan_release_all(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb,
                         void *ctx, int *n)
{
    uint64_t now = fl_now_ns();
    for (uint32_t i = 0; i < t->nactive && t->nrelease && *n < t->budget; i++)
        for (unsigned l = 0, r = t->active[i]; l < FL_LANES; l++) {
            struct rx_lane *rx = &t->peers[r].rx[l];
            if (!rx->release || !(lane_mask & FL_LANE_MASK(l)))
                continue;
            release_ooo(t, r, l, cb, ctx, n);
            schedule_ack(t, &t->peers[r], rx, now);
        }
}

/* Chunk c is not the next in turn (or is, with the poll's budget spent or
   its lane not polled now): held until its turn, or dropped as a
   duplicate or as too far ahead. Returns whether it was dealt with so;
   false: deliver it now. */
static bool take_early(struct fl_tp_ep *t, struct chan_peer *p, struct rx_lane *rx,
                       const struct fl_chan_chunk *c, int n, bool masked)
{
    int32_t ahead = (int32_t)(c->seq - rx->next);
    if (ahead < 0) {
        FL_COUNT(t->counters->duplicates, 1);
        p->ack_now = true; /* its sender missed our ack */
        fl_chan_mark(t, p);
        return true;
    }
    if ((uint32_t)ahead >= CHUNK_CAP) {
        FL_COUNT(t->counters->refused_packets, 1);
        return true;
    }
    if (ahead == 0 && (n >= t->budget || masked) && !held_at(rx, c->seq) &&
        rx->held_bytes + c->len <= t->window) {
        /* Its turn, but the poll's budget is spent (flit_extract), or its
           lane waits (a request inside a handler): it waits with the
           chunks that came ahead of theirs. */
        hold_chunk(t, p, rx, c);
        if (!rx->release) {
            rx->release = true;
            t->nrelease++;
        }
        return true;
    }
    if (ahead == 0)
        return masked; /* masked: not held (held already, or no room) */
    if (held_at(rx, c->seq))
        FL_COUNT(t->counters->duplicates, 1);
    else if (rx->held_bytes + c->len <= t->window)
        hold_chunk(t, p, rx, c); /* or dropped, out of memory: it comes again */
    p->ack_now = true;     /* the selective ack shows the hole */
    fl_chan_mark(t, p);
    return true;
}

static void take_chunk(struct fl_tp_ep *t, uint32_t src, const struct fl_chan_chunk *c,
                       unsigned lane_mask, fl_tp_recv_fn cb, void *ctx, int *n,
                       uint64_t now)
{
    struct chan_peer *p = &t->peers[src];
    struct rx_lane *rx = &p->rx[c->lane];
    /* A lane not polled now (requests, inside a handler) keeps its chunks
       as a spent budget does: dropped, they were sent again, and the
       sender took the hole they left for a loss on the path. */
    if (take_early(t, p, rx, c, *n, !(lane_mask & FL_LANE_MASK(c->lane))))
        return;
    if (held_at(rx, c->seq)) {
        /* We hold it already: a budget left it waiting (rx->release). */
        FL_COUNT(t->counters->duplicates, 1);
    } else if (!asm_ready(t, p, rx, c->flags)) {
        return; /* no memory to reassemble: it comes again */
    } else {
        deliver(t, src, c->lane, c->flags, c->data, c->len, cb, ctx, n);
    }
    release_ooo(t, src, c->lane, cb, ctx, n);
    schedule_ack(t, p, rx, now);
}

/* A datagram from peer p, with header h, came at now: it is heard, its
   clock echo is a round trip. */
static void heard(struct fl_tp_ep *t, uint32_t src, const struct fl_chan_hdr *h,
                  uint64_t now)
{
    struct chan_peer *p = &t->peers[src];
    fl_chan_listening(t, now);
    if (!p->active)
        fl_chan_activate(t, src, now);
    FL_COUNT(t->counters->datagrams_received, 1);
    p->quiet_ns = now - p->last_heard;
    p->last_heard = now;
    p->excused = false;
    if (h->ts_echo) {
        uint32_t us = fl_chan_usec32(now) - h->ts_echo - h->echo_delay;
        if (us < 10000000u)
            fl_chan_rtt_sample(t, p,
                               (uint64_t)us * 1000u + 1000u); /* + clock granularity */
    }
    p->echo_ts = h->ts;
    p->echo_at = now;
}

/* Who sent it, and is it ours? Then its acks, then its chunks. */
void fl_chan_take_dgram(struct fl_tp_ep *t, const struct fl_dgram_in *in,
                        unsigned lane_mask, fl_tp_recv_fn cb, void *ctx, int *n)
{
    struct fl_chan_hdr h;
    struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    uint32_t src = in->src;
    if (src == FL_DGRAM_STRANGER ||
        fl_chan_decode(in->buf, in->len, &h, chunks) != FLIT_OK || h.key != t->key ||
        h.src != src || h.dst != t->rank) {
        FL_COUNT(t->counters->refused_packets, 1);
        return;
    }
    struct chan_peer *p = &t->peers[src];
    if (!p->connected || p->down)
        return;
    uint64_t now = fl_now_ns();
    heard(t, src, &h, now);
    if (p->path)
        fl_chan_path_heard(t, p, in->path, h.kind == FL_CHAN_PING || h.nchunks, now);
    for (unsigned l = 0; l < FL_LANES; l++)
        fl_chan_take_ack(t, p, l, &h.ack[l], h.ts_echo, now);
    if (h.kind == FL_CHAN_PING) {
        p->ack_now = true;
        fl_chan_mark(t, p);
    }
    for (unsigned i = 0; i < h.nchunks && !p->down; i++)
        take_chunk(t, src, &chunks[i], lane_mask, cb, ctx, n, now);
}
