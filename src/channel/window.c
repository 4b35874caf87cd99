/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send window, which is also the retransmission buffer. ->reserve
 * finds room in the peer's send buffer for the lane (when the window is
 * full, FLIT_ERR_AGAIN is the credit stall), ->commit cuts the packet into
 * chunks with sequence numbers and has them sent (or holds them,
 * FL_COMMIT_MORE, to pack several into one datagram). A chunk's bytes stay
 * in the buffer until acknowledged: retransmissions send them again from
 * there. A packet of one chunk may be lent instead (->commit_lent: its
 * payload stays in the caller's memory, and datagrams gather it from
 * there) until ->settle_lent copies it into its room in the buffer if it
 * is still unacknowledged by then; a long payload sent in pieces crosses
 * the window that way, and only its last window's worth is ever copied.
 * A dead peer's unacknowledged packets come back whole (->reclaim).
 */
#include "channel/window.h"

#include <stdlib.h>
#include <string.h>

#include "channel/channel.h"
#include "channel/idle.h"
#include "channel/peer.h"
#include "channel/send.h"
#include "channel/state.h"
#include "platform/os.h"
#include "util/log.h"

#define TX_FIRST_BYTES 16384u /* a lane's send buffer starts about this small */
#define TX_FIRST_CHUNKS 64u    /* and its chunks' table this small (4 KiB) */

/* The size of the chunks to peer r, from its path's datagrams: asked of
   the transport on first need (on UDP that probes the route). */
flit_status fl_chan_chunk_fit(struct fl_tp_ep *t, uint32_t r)
{
    struct chan_peer *p = &t->peers[r];
    if (p->chunk_max)
        return FLIT_OK;
    size_t payload = t->ops->max_payload(t->d, r);
    if (payload < FL_CHAN_MAX_HDR + FL_CHAN_CHUNK_HDR + 64) {
        fl_error("%s: rank %u's path carries %zu-byte datagrams: too small", t->ops->name,
                 r, payload);
        return FLIT_ERR_UNREACHABLE;
    }
    p->chunk_max = (payload - FL_CHAN_DATA_HDR - FL_CHAN_CHUNK_HDR) & ~(size_t)7;
    return FLIT_OK;
}

/* The first ->reserve on a lane towards dst (or the first towards dst at
   all, or the first since the peer went idle, idle.c): the peer's chunk
   size, its activation, the lane's send buffer. */
static flit_status first_send(struct fl_tp_ep *t, uint32_t dst, unsigned lane)
{
    struct chan_peer *p = &t->peers[dst];
    struct tx_lane *tx = &p->tx[lane];
    flit_status st = fl_chan_chunk_fit(t, dst);
    if (st != FLIT_OK)
        return st;
    if (!p->active)
        fl_chan_activate(t, dst, fl_now_ns());
    if (tx->buf)
        return FLIT_OK;
    /* Small at first, doubling (grow) to the window as the bytes in flight
       ask: a peer sent a few small messages, or only a FIN, holds 16 KiB. */
    uint64_t size = p->window;
    while (size % 2 == 0 && size / 2 >= TX_FIRST_BYTES)
        size /= 2;
    uint8_t *buf = malloc(size);
    struct tx_chunk *chunk = calloc(TX_FIRST_CHUNKS, sizeof *chunk);
    if (!buf || !chunk) {
        free(buf);
        free(chunk);
        fl_error("%s: no memory for the send window to rank %u (%llu bytes)",
                 t->ops->name, dst, (unsigned long long)size);
        return FLIT_ERR_NO_MEMORY;
    }
    tx->buf = buf;
    tx->chunk = chunk;
    tx->ncap = TX_FIRST_CHUNKS;
    tx->size = size;
    fl_chan_hold(t, p, size + TX_FIRST_CHUNKS * sizeof *chunk, fl_now_ns());
    return FLIT_OK;
}

/*
 * Doubles the lane's table of chunks until `want` fit, at most CHUNK_CAP
 * (the sequence numbers a lane may have in flight): a peer sent a few
 * messages holds 64 entries, not 1,024 (a 64 KiB table zeroed at first
 * contact, per lane: in a 256-rank job over 4 hosts an 8-byte all-to-all
 * zeroed 12 MiB a rank). The chunks in flight, [acked, next), keep their sequence
 * numbers and move to their places in the larger table. false, the table
 * as it was: no memory, or want is past CHUNK_CAP.
 */
static bool grow_chunks(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                        uint32_t want)
{
    uint32_t ncap = tx->ncap;
    while (ncap < want && ncap < CHUNK_CAP)
        ncap *= 2;
    if (ncap < want)
        return false;
    struct tx_chunk *chunk = calloc(ncap, sizeof *chunk);
    if (!chunk)
        return false;
    for (uint32_t s = tx->acked; s != tx->next; s++)
        chunk[s & (ncap - 1)] = *fl_tx_chunk(tx, s);
    fl_chan_hold(t, p, (uint64_t)(ncap - tx->ncap) * sizeof *chunk, fl_now_ns());
    free(tx->chunk);
    tx->chunk = chunk;
    tx->ncap = ncap;
    return true;
}

/*
 * Doubles the lane's send buffer (at most to the window, which a doubling
 * from first_send's size reaches exactly). Bytes keep their positions: the
 * unacknowledged ones [head, tail) move to pos % the new size, where a
 * packet that did not wrap before does not wrap now (the new size is a
 * multiple of the old). Nothing outside the channel points into the
 * buffer between calls. false, the buffer as it was, without memory.
 */
static bool grow(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx)
{
    uint64_t size = tx->size * 2, old = tx->size;
    if (size > p->window)
        return false;
    uint8_t *buf = malloc(size);
    if (!buf)
        return false;
    for (uint64_t pos = tx->head; pos < tx->tail;) {
        uint64_t run = tx->tail - pos;
        if (run > old - pos % old)
            run = old - pos % old;
        if (run > size - pos % size)
            run = size - pos % size;
        memcpy(buf + pos % size, tx->buf + pos % old, run);
        pos += run;
    }
    free(tx->buf);
    tx->buf = buf;
    tx->size = size;
    fl_chan_hold(t, p, size - old, fl_now_ns());
    return true;
}

void *fl_chan_reserve(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                      flit_status *st)
{
    struct chan_peer *p = &t->peers[dst];
    struct tx_lane *tx = &p->tx[lane];
    *st = FLIT_ERR_AGAIN;
    if (p->down) {
        *st = FLIT_ERR_PEER_DOWN;
        return NULL;
    }
    if (__builtin_expect(!tx->buf, 0) && (*st = first_send(t, dst, lane)) != FLIT_OK)
        return NULL;
    *st = FLIT_ERR_AGAIN;
    size_t chunks = len ? (len + p->chunk_max - 1) / p->chunk_max : 1;
    uint64_t want = (uint64_t)(tx->next - tx->acked) + chunks;
    if (want > tx->ncap && (want > CHUNK_CAP || !grow_chunks(t, p, tx, (uint32_t)want)))
        return NULL;
    uint64_t pos;
    for (;;) {
        pos = (tx->tail + 7) & ~(uint64_t)7;
        if (pos % tx->size + len > tx->size)
            pos += tx->size - pos % tx->size; /* packets never wrap */
        if (pos + len - tx->head <= tx->size)
            break;
        if (!grow(t, p, tx))
            return NULL; /* the window is full: the credit stall */
    }
    tx->reserved = pos;
    return tx->buf + pos % tx->size;
}

/* Cuts the reserved packet of len bytes into chunks and sends them (or
   holds them, FL_COMMIT_MORE). lent: its bytes from head on, for a packet
   of one chunk (fl_chan_commit_lent). */
static void commit(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                   const uint8_t *lent, size_t head, unsigned flags)
{
    struct chan_peer *p = &t->peers[dst];
    struct tx_lane *tx = &p->tx[lane];
    uint64_t pos = tx->reserved;
    size_t off = 0;
    do {
        size_t n = len - off < p->chunk_max ? len - off : p->chunk_max;
        struct tx_chunk *c = fl_tx_chunk(tx, tx->next++);
        *c = (struct tx_chunk){.pos = pos + off,
                               .pkt_pos = pos,
                               .lent = lent,
                               .len = (uint32_t)n,
                               .pkt_len = (uint32_t)len,
                               .flags = (uint8_t)((off == 0 ? FL_CHAN_FIRST : 0) |
                                                  (off + n == len ? FL_CHAN_LAST : 0)),
                               .lent_at = (uint8_t)(lent ? head : 0)};
        off += n;
    } while (off < len);
    tx->nlent += lent != NULL;
    tx->tail = pos + len;
    fl_chan_mark(t, p);
    if (!(flags & FL_COMMIT_MORE))
        fl_chan_flush_peer(t, dst);
}

void fl_chan_commit(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                    size_t len, unsigned flags)
{
    (void)pkt;
    commit(t, dst, lane, len, NULL, 0, flags);
}

void fl_chan_commit_lent(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                         size_t len, size_t head, const void *src, unsigned flags)
{
    /* Lent only whole in one chunk, behind a head the chunk can say: a
       packet of several chunks is handed back whole (->reclaim) even when
       its first chunks were acknowledged, so all its bytes must stay. */
    if (len > t->peers[dst].chunk_max || head > UINT8_MAX || head >= len) {
        memcpy((uint8_t *)pkt + head, src, len - head);
        commit(t, dst, lane, len, NULL, 0, flags);
        return;
    }
    commit(t, dst, lane, len, src, head, flags);
}

void fl_chan_settle_lent(struct fl_tp_ep *t, uint32_t dst, unsigned lane)
{
    struct tx_lane *tx = &t->peers[dst].tx[lane];
    if (!tx->nlent)
        return;
    for (uint32_t s = tx->acked; s != tx->next; s++) {
        struct tx_chunk *c = fl_tx_chunk(tx, s);
        if (c->lent) {
            memcpy(tx->buf + c->pos % tx->size + c->lent_at, c->lent,
                   c->len - c->lent_at);
            c->lent = NULL;
        }
    }
    tx->nlent = 0;
}

void fl_chan_cancel(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt)
{
    (void)t, (void)dst, (void)lane, (void)pkt; /* nothing was taken */
}

void fl_chan_reclaim(struct fl_tp_ep *t, uint32_t dst, fl_tp_recv_fn cb, void *ctx)
{
    struct chan_peer *p = &t->peers[dst];
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct tx_lane *tx = &p->tx[l];
        fl_chan_settle_lent(t, dst, l); /* within the lender's call: still there */
        uint32_t s = tx->acked;
        while (s != tx->next) {
            /* The packet s is part of: whole, even if its first chunks were
               acknowledged (its handler cannot have run). */
            const struct tx_chunk *c = fl_tx_chunk(tx, s);
            cb(ctx, dst, l, tx->buf + c->pkt_pos % tx->size, c->pkt_len);
            do
                s++;
            while (s != tx->next && fl_tx_chunk(tx, s)->pkt_pos == c->pkt_pos);
        }
        tx->acked = tx->unsent = tx->next;
        tx->head = tx->tail;
        tx->rto_wait = false;
    }
}
