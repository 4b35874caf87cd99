/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peers gone quiet. A lane's send window with its chunk table (72 KiB at
 * first, up to the window and 56 KiB), its reorder table and its
 * reassembly buffer are allocated on first need (window.c, recv.c) and
 * would otherwise stay for the endpoint's life: a rank that once talked
 * to every other held them for every peer. A peer whose every chunk is
 * acknowledged, that holds nothing out of order or half reassembled, and
 * that we have not heard for the idle period gives them all back; the
 * lanes keep their sequence numbers and positions, so the next send
 * allocates a small window again (first_send) and sends at once: growing
 * is local, no round trip. The idle period: eight retransmission timeouts
 * (several round trips of silence: a request-reply exchange does not pay
 * allocations each time), at least IDLE_MIN_NS and at most IDLE_MAX_NS.
 *
 * Freed memory stays in the process until the allocator gives it back to
 * the system: a pass that gave buffers back asks it to (malloc_trim), at
 * most once every TRIM_EVERY_NS, so that a quiet rank's resident memory
 * drops too.
 *
 * The counters "buffer_bytes" (a gauge: the bytes of those buffers held
 * now, every peer together) and "idle_peers" (peers that gave theirs back
 * and have allocated nothing since) say it from outside (counters.c).
 */
#include "channel/idle.h"

#include <malloc.h>
#include <stdlib.h>

#include "channel/channel.h"
#include "channel/state.h"

#define IDLE_RTOS     8u
#define IDLE_MIN_NS   250000000ull  /* 250 ms */
#define IDLE_MAX_NS   2000000000ull /* 2 s */
#define TRIM_EVERY_NS 100000000ull  /* 100 ms */

static uint64_t idle_ns(const struct chan_peer *p)
{
    uint64_t d = IDLE_RTOS * p->rto;
    return d < IDLE_MIN_NS ? IDLE_MIN_NS : d > IDLE_MAX_NS ? IDLE_MAX_NS : d;
}

void fl_chan_hold(struct fl_tp_ep *t, struct chan_peer *p, uint64_t bytes, uint64_t now)
{
    FL_COUNT(t->chan_counters->buffer_bytes, bytes);
    if (p->idle) {
        p->idle = false;
        FL_COUNT(t->chan_counters->idle_peers, (uint64_t)-1);
    }
    fl_chan_note_deadline(&t->next_timer, now + idle_ns(p));
}

static bool holds(const struct chan_peer *p)
{
    for (unsigned l = 0; l < FL_LANES; l++)
        if (p->tx[l].buf || p->rx[l].ooo || p->rx[l].asm_buf)
            return true;
    return false;
}

/* Nothing in flight either way: no chunk unacknowledged or lent, none
   held out of order or waiting for a budget, no packet half reassembled. */
static bool at_rest(const struct chan_peer *p)
{
    for (unsigned l = 0; l < FL_LANES; l++) {
        const struct tx_lane *tx = &p->tx[l];
        const struct rx_lane *rx = &p->rx[l];
        if (tx->acked != tx->next || tx->nlent || rx->held || rx->release || rx->asm_open)
            return false;
    }
    return true;
}

/* Gives p's buffers back; returns their bytes. */
static uint64_t shrink(const struct fl_tp_ep *t, struct chan_peer *p)
{
    uint64_t bytes = 0;
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct tx_lane *tx = &p->tx[l];
        struct rx_lane *rx = &p->rx[l];
        if (tx->buf)
            bytes += tx->size + (uint64_t)tx->ncap * sizeof *tx->chunk;
        if (rx->ooo)
            bytes += CHUNK_CAP * sizeof *rx->ooo;
        if (rx->asm_buf)
            bytes += t->max_packet;
        free(tx->buf);
        free(tx->chunk);
        free(rx->ooo);
        free(rx->asm_buf);
        tx->buf = NULL;
        tx->chunk = NULL;
        tx->ncap = 0;
        tx->size = 0;
        rx->ooo = NULL;
        rx->asm_buf = NULL;
    }
    return bytes;
}

void fl_chan_idle_check(struct fl_tp_ep *t, struct chan_peer *p, uint64_t now,
                        uint64_t *next)
{
    /* Not inside a handler: the poll it runs in may have a reservation
       open in a send buffer (->reserve, then ->commit). */
    if (t->depth || !holds(p) || !at_rest(p))
        return;
    uint64_t when = p->last_heard + idle_ns(p);
    if (now < when) {
        fl_chan_note_deadline(next, when);
        return;
    }
    FL_COUNT(t->chan_counters->buffer_bytes, (uint64_t)0 - shrink(t, p));
    p->idle = true;
    FL_COUNT(t->chan_counters->idle_peers, 1);
    t->trim_due = true;
}

void fl_chan_idle_trim(struct fl_tp_ep *t, uint64_t now, uint64_t *next)
{
    if (!t->trim_due)
        return;
    if (t->trimmed_ns && now - t->trimmed_ns < TRIM_EVERY_NS) {
        fl_chan_note_deadline(next, t->trimmed_ns + TRIM_EVERY_NS);
        return;
    }
    malloc_trim(0);
    t->trimmed_ns = now;
    t->trim_due = false;
}
