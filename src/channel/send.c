/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagrams out: for each peer with something due (the endpoint's send
 * queue), a plan of which chunks go in each datagram (retransmissions
 * first, then new chunks, replies before requests), the header with fresh
 * acknowledgements for both lanes (and as many selective words as the
 * chunks leave room for), the iovecs gathered from the send window (or the
 * lender's memory), and batches of datagrams handed to the transport's
 * ->send. A datagram the socket did not take leaves its chunks due.
 */
#include "channel/send.h"

#include <errno.h>
#include <string.h>

#include "channel/path.h"
#include "channel/rto.h"
#include "channel/state.h"
#include "platform/os.h"
#include "util/log.h"

static const uint8_t zeros[8];

/* Writes planned datagram pl's header into buf; returns its size. */
static size_t fill_hdr(struct fl_tp_ep *t, const struct plan *pl, uint8_t *buf,
                       uint64_t now)
{
    struct chan_peer *p = &t->peers[pl->dst];
    struct fl_chan_hdr h = {
        .kind = pl->ping ? FL_CHAN_PING : FL_CHAN_DATA,
        .nchunks = (uint16_t)pl->n,
        .src = t->rank,
        .dst = pl->dst,
        .key = t->key,
        .ts = fl_chan_usec32(now) | 1u, /* never 0: 0 means "nothing to echo" */
        .ts_echo = p->echo_ts,
        .echo_delay = p->echo_ts ? fl_chan_usec32(now - p->echo_at) : 0,
    };
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct rx_lane *rx = &p->rx[l];
        struct fl_chan_ack *a = &h.ack[l];
        a->next = rx->next;
        a->words = pl->words[l];
        for (unsigned w = 0; w < a->words; w++) {
            uint64_t bits = 0;
            for (unsigned i = 0; i < 64; i++)
                if (rx->ooo[(rx->next + 64 * w + i) % CHUNK_CAP].data)
                    bits |= (uint64_t)1 << i;
            a->sack[w] = bits;
        }
    }
    return fl_chan_encode_hdr(buf, &h);
}

/* The selective words lane rx needs: as far as the highest chunk held
   (the next one too, when a poll's budget held it back). */
static unsigned sack_words(const struct rx_lane *rx)
{
    if (!rx->held || !fl_seq_before(rx->next, rx->top))
        return 0;
    return (rx->top - rx->next + 63) / 64;
}

/* The iovecs of planned datagram i. */
static void build(struct fl_tp_ep *t, unsigned i, uint64_t now)
{
    const struct plan *pl = &t->plans[i];
    struct iovec *v = t->iov[i];
    int n = 0;
    v[n++] = (struct iovec){t->hdr[i], fill_hdr(t, pl, t->hdr[i], now)};
    for (unsigned k = 0; k < pl->n; k++) {
        struct tx_lane *tx = &t->peers[pl->dst].tx[pl->lane[k]];
        struct tx_chunk *c = fl_tx_chunk(tx, pl->seq[k]);
        struct fl_chan_chunk ch = {.lane = pl->lane[k],
                                   .flags = c->flags,
                                   .len = (uint16_t)c->len,
                                   .seq = pl->seq[k]};
        fl_chan_encode_chunk(t->chdr[i][k], &ch);
        v[n++] = (struct iovec){t->chdr[i][k], FL_CHAN_CHUNK_HDR};
        uint8_t *bytes = tx->buf + c->pos % tx->size;
        if (c->lent) { /* the head from the buffer, the rest from the lender */
            if (c->lent_at)
                v[n++] = (struct iovec){bytes, c->lent_at};
            v[n++] = (struct iovec){(void *)c->lent, c->len - c->lent_at};
        } else {
            v[n++] = (struct iovec){bytes, c->len};
        }
        if (c->len & 7)
            v[n++] = (struct iovec){(void *)zeros, 8 - (c->len & 7)};
    }
    t->out[i] = (struct fl_dgram_out){pl->dst, v, n, pl->path};
}

/* After datagram i went: its chunks are in flight, its acks said. */
static void sent(struct fl_tp_ep *t, unsigned i, uint64_t now)
{
    const struct plan *pl = &t->plans[i];
    struct chan_peer *p = &t->peers[pl->dst];
    for (unsigned k = 0; k < pl->n; k++) {
        struct tx_lane *tx = &p->tx[pl->lane[k]];
        struct tx_chunk *c = fl_tx_chunk(tx, pl->seq[k]);
        if (!c->sent_ns)
            c->first_ns = now;
        c->sent_ns = now;
        c->xmit = p->xmit++;
        c->rexmit = false;
        c->path = (uint8_t)pl->path;
        if (pl->seq[k] == tx->unsent)
            tx->unsent++;
    }
    p->ack_now = pl->ack_short; /* the whole acknowledgement goes next */
    p->ping = false;
    p->ack_due = 0;
    p->rx[0].unacked = p->rx[1].unacked = 0;
    FL_COUNT(t->counters->datagrams_sent, 1);
    if (p->path) {
        size_t bytes = 0;
        for (int v = 0; v < t->out[i].iovcnt; v++)
            bytes += t->out[i].iov[v].iov_len;
        fl_chan_path_sent(t, p, pl->path, bytes, pl->n > 0 || pl->ping, now);
    }
    fl_chan_note_deadline(&t->next_timer, now + fl_chan_rto_now(p, now));
}

/* The selective words of pl's header: as many of each lane's as the
   chunks left room for (room bytes, a word per lane set aside), those
   nearest the hole first. */
static void plan_acks(struct chan_peer *p, struct plan *pl, size_t room)
{
    unsigned want[FL_LANES], total = 0;
    size_t extra = room / 8;
    for (unsigned l = 0; l < FL_LANES; l++) {
        want[l] = sack_words(&p->rx[l]);
        pl->words[l] = want[l] ? 1 : 0; /* set aside: FL_CHAN_DATA_HDR */
        extra += 1u - pl->words[l];
        total += want[l];
    }
    for (unsigned l = 0; l < FL_LANES; l++) {
        unsigned more = want[l] - pl->words[l];
        if (more > extra)
            more = (unsigned)extra;
        pl->words[l] += (uint8_t)more;
        extra -= more;
        total -= pl->words[l];
    }
    pl->ack_short = total > 0;
}

/* Fills plan pl with what peer r has to send: due retransmissions first,
   then new chunks; false when nothing (not even an ack) is due. */
static bool plan_for(struct fl_tp_ep *t, uint32_t r, struct plan *pl)
{
    struct chan_peer *p = &t->peers[r];
    size_t room = t->ops->max_payload(t->d, r) - FL_CHAN_DATA_HDR;
    pl->dst = r;
    pl->n = 0;
    pl->ping = p->ping;
    bool full = false;
    for (unsigned pass = 0; pass < 2 && !full; pass++) {
        for (unsigned l = FL_LANES; l-- > 0 && !full;) { /* replies first */
            struct tx_lane *tx = &p->tx[l];
            uint32_t from = pass == 0 ? tx->acked : tx->unsent;
            uint32_t to = pass == 0 ? tx->unsent : tx->next;
            for (uint32_t s = from; s != to && pl->n < DGRAM_CHUNKS; s++) {
                struct tx_chunk *c = fl_tx_chunk(tx, s);
                if (pass == 0 && !c->rexmit)
                    continue;
                size_t need = fl_chan_chunk_size(c->len);
                if (need > room) {
                    full = true;
                    break;
                }
                room -= need;
                pl->lane[pl->n] = (uint8_t)l;
                pl->seq[pl->n++] = s;
            }
        }
    }
    plan_acks(p, pl, room);
    if (pl->n == 0 && !p->ack_now && !p->ping)
        return false;
    pl->path = fl_chan_path_pick(p);
    return true;
}

/* Plans a probe of each path due one (path.c): a ping by it alone,
   carrying the acknowledgements; returns the new n. */
static unsigned plan_probes(struct fl_tp_ep *t, uint32_t r, unsigned n, uint64_t now)
{
    struct chan_peer *p = &t->peers[r];
    for (unsigned k = 0; k < p->npaths && n < TX_BATCH; k++) {
        if (!p->path[k].probe)
            continue;
        struct plan *pl = &t->plans[n];
        *pl = (struct plan){.dst = r, .path = k, .ping = true};
        plan_acks(p, pl, t->ops->max_payload(t->d, r) - FL_CHAN_DATA_HDR);
        bool ping = p->ping; /* the peer's keep-alive is not this probe's */
        build(t, n, now);
        sent(t, n++, now);
        p->ping = ping;
        p->path[k].probe = false;
    }
    return n;
}

/* Whether peer r still has anything to send after its last plan. */
static bool more_for(const struct chan_peer *p)
{
    for (unsigned l = 0; l < FL_LANES; l++) {
        const struct tx_lane *tx = &p->tx[l];
        if (tx->unsent != tx->next)
            return true;
        for (uint32_t s = tx->acked; s != tx->unsent; s++)
            if (fl_tx_chunk(tx, s)->rexmit)
                return true;
    }
    return p->ack_now || p->ping;
}

/* Plans datagrams for peer r into t->plans from n on; returns the new n.
   Clears p->dirty when nothing more is due. */
static unsigned plan_peer(struct fl_tp_ep *t, uint32_t r, unsigned n, uint64_t now)
{
    struct chan_peer *p = &t->peers[r];
    if (!p->dirty || p->down) {
        p->dirty = false;
        return n;
    }
    if (p->path)
        n = plan_probes(t, r, n, now);
    while (n < TX_BATCH && plan_for(t, r, &t->plans[n])) {
        build(t, n, now);
        sent(t, n, now); /* provisionally: undone if it did not go */
        n++;
        if (!more_for(p)) {
            p->dirty = false;
            return n;
        }
    }
    if (n < TX_BATCH)
        p->dirty = false;
    return n;
}

/* Sends the planned datagrams; false when the socket took not all. */
/* Datagram i was taken by the transport: a chunk in it that went before
   is a retransmission (one whose earlier datagram the socket refused is
   not: it never left). */
static void went(struct fl_tp_ep *t, unsigned i)
{
    const struct plan *pl = &t->plans[i];
    struct chan_peer *p = &t->peers[pl->dst];
    for (unsigned k = 0; k < pl->n; k++) {
        struct tx_chunk *c = fl_tx_chunk(&p->tx[pl->lane[k]], pl->seq[k]);
        if (c->went) {
            FL_COUNT(t->counters->retransmits, 1);
            p->retransmits++;
        }
        c->went = true;
    }
}

static bool send_planned(struct fl_tp_ep *t, unsigned n)
{
    int k = t->ops->send(t->d, t->out, (int)n);
    for (int i = 0; i < k && i < (int)n; i++)
        went(t, (unsigned)i);
    if (k >= (int)n)
        return true;
    /* The socket is full: what did not go is still due. */
    for (unsigned i = k < 0 ? 0 : (unsigned)k; i < n; i++) {
        struct plan *pl = &t->plans[i];
        struct chan_peer *p = &t->peers[pl->dst];
        for (unsigned c = 0; c < pl->n; c++)
            fl_tx_chunk(&p->tx[pl->lane[c]], pl->seq[c])->rexmit = true;
        p->ack_now = true;
        fl_chan_mark(t, p);
    }
    if (k < 0 && k != -EAGAIN)
        fl_error("%s: sending: %s", t->ops->name, strerror(-k));
    return false;
}

/* Sends what peer r has due. */
void fl_chan_flush_peer(struct fl_tp_ep *t, uint32_t r)
{
    uint64_t now = fl_now_ns();
    unsigned n;
    while ((n = plan_peer(t, r, 0, now)) > 0 && send_planned(t, n) && t->peers[r].dirty)
        ;
}

/*
 * Sends what every queued peer has due, in batches of datagrams. A peer
 * leaves the queue when nothing more is due; one that filled a batch stays
 * and is served again, until the socket is full.
 */
void fl_chan_flush(struct fl_tp_ep *t)
{
    uint64_t now = fl_now_ns();
    bool again = true;
    while (again && t->nsendq > 0) {
        again = false;
        uint32_t i = 0, kept = 0;
        while (i < t->nsendq) {
            uint32_t from = i;
            unsigned n = 0;
            while (i < t->nsendq && n < TX_BATCH)
                n = plan_peer(t, t->sendq[i++], n, now);
            bool ok = n == 0 || send_planned(t, n);
            for (uint32_t j = from; j < i; j++) { /* compact in place */
                struct chan_peer *p = &t->peers[t->sendq[j]];
                if (p->dirty)
                    t->sendq[kept++] = t->sendq[j];
                else
                    p->queued = false;
                again |= ok && p->dirty;
            }
            if (!ok) { /* the socket is full: the rest waits, in order */
                memmove(t->sendq + kept, t->sendq + i,
                        (t->nsendq - i) * sizeof *t->sendq);
                kept += t->nsendq - i;
                i = t->nsendq;
                again = false;
            }
        }
        t->nsendq = kept;
    }
}
