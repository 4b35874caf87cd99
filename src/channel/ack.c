/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Acknowledgements taken. Every datagram from a peer carries, for both
 * lanes, the next sequence number it expects (cumulative) and selective
 * words for what it holds past a hole (wire.h). They free the send window,
 * show losses by the order of transmissions (RACK: a chunk sent before one
 * the peer got, and not got itself, is lost), and give the verdict on a
 * timeout's lone resend (F-RTO): the peer was only slow, or the rest was
 * lost too.
 */
#include "channel/ack.h"

#include "channel/rto.h"
#include "channel/state.h"

/* What an acknowledgement told of a lane: the newest transmission it
   acknowledged; whether it acknowledged the chunk a timeout sent again
   (rto_seq), and whether a resend was needless: chunks sent only once,
   before a resend that waits for a verdict (a timeout's or a tail
   probe's), which the peer got, or a resent chunk acknowledged before the
   peer saw its resend. */
struct news {
    bool set;
    uint32_t xmit;
    bool rto_seq, needless;
    uint64_t probe_at; /* a tail probe went then, in this stall; 0: none */
    uint32_t echo;     /* the datagram's echo of our clock (usec); 0: none */
    uint8_t paths;     /* several paths: bit k, path_xmit[k] is set */
    uint32_t path_xmit[FL_DGRAM_PATHS];
};

/* Whether the acknowledgement r came before the peer saw what we sent at
   ts (our clock, as a datagram carries it): it echoes an older reading.
   The datagrams of a path arrive in order, so the peer had not seen that
   sending: it acknowledged an earlier one (Eifel, RFC 3522). */
static bool echo_before(const struct news *r, uint32_t ts)
{
    return r->echo && (int32_t)(r->echo - ts) < 0;
}

/*
 * Chunk s (c) is newly known held. Its transmission is the newest told of
 * if none later was; a chunk that was sent again and is acknowledged
 * before the peer saw that resend, or sooner than half a round trip
 * after it, may be acknowledged for its first sending, and tells nothing.
 * A timeout's resend of rto_seq acknowledged before the peer saw it was
 * needless: the peer had the chunk, and was only slow to say so (a
 * handler's reply after a pause acknowledges only what came before).
 */
static void acked_now(const struct chan_peer *p, const struct tx_lane *tx, uint32_t s,
                      const struct tx_chunk *c, struct news *r, uint64_t now)
{
    bool once = c->sent_ns == c->first_ns;
    if (tx->rto_wait && s == tx->rto_seq) {
        r->rto_seq = true;
        r->needless |= echo_before(r, tx->rto_ts);
    }
    if (once && ((tx->rto_wait && fl_seq_before(s, tx->rto_high)) ||
                 (r->probe_at && c->first_ns < r->probe_at)))
        r->needless = true;
    if (!once && (echo_before(r, fl_chan_usec32(c->sent_ns) | 1u) ||
                  now - c->sent_ns < p->srtt / 2))
        return;
    if (!r->set || fl_seq_before(r->xmit, c->xmit)) {
        r->set = true;
        r->xmit = c->xmit;
    }
    unsigned k = c->path;
    if (p->path && (!(r->paths >> k & 1) || fl_seq_before(r->path_xmit[k], c->xmit))) {
        r->paths |= (uint8_t)(1u << k);
        r->path_xmit[k] = c->xmit;
    }
}

/* With several paths, what acknowledgement r told of each goes to tx. */
static void news_by_path(struct tx_lane *tx, const struct news *r)
{
    for (unsigned k = 0; k < FL_DGRAM_PATHS; k++)
        if ((r->paths >> k & 1) && (!(tx->rack_paths >> k & 1) ||
                                    fl_seq_before(tx->rack_path[k], r->path_xmit[k]))) {
            tx->rack_paths |= (uint8_t)(1u << k);
            tx->rack_path[k] = r->path_xmit[k];
        }
}

/* Whether c's last transmission came before the newest one acknowledged:
   by its own path, with several. */
static bool sent_before_rack(const struct chan_peer *p, const struct tx_lane *tx,
                             const struct tx_chunk *c)
{
    if (!p->path)
        return fl_seq_before(c->xmit, tx->rack_xmit);
    return (tx->rack_paths >> c->path & 1) &&
           fl_seq_before(c->xmit, tx->rack_path[c->path]);
}

/*
 * The verdict on a timeout's resend of rto_seq alone (F-RTO, RFC 5682, by
 * sequence numbers and timestamps): chunks sent once before it and
 * acknowledged now were got, or rto_seq was acknowledged before the peer
 * saw its resend, so the peer was slow and the path loses nothing: the
 * rest is not sent again. rto_seq acknowledged for its resend, with
 * nothing sent before it: they were lost with it, and all go again. Else
 * the verdict waits for the answer (a resend of rto_seq that times out
 * too goes again alone: lane_timers in rto.c).
 */
static void rto_verdict(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                        const struct news *r, uint64_t now)
{
    if (r->needless || !fl_seq_before(tx->acked, tx->rto_high)) {
        tx->rto_wait = false;
        return;
    }
    if (r->rto_seq)
        fl_chan_rto_lost(t, p, tx, now);
}

/*
 * Loss by the order of transmissions, as TCP's RACK: a chunk not held
 * whose last transmission came before the newest one the peer acknowledged
 * is lost, and goes again at once; a lost retransmission is found the same
 * way, as soon as a chunk sent after it is acknowledged. Only chunks below
 * high, the highest the acknowledgement described: of the others it knows
 * nothing (in flight, or past the words it carried). No reordering window:
 * the paths flit runs on (loopback, a LAN) do not reorder, and a window
 * taken from a false sign of it waits on every loss (measured: half the
 * goodput at 5% loss, docs/udp-loss.md). A path that does reorder costs a
 * retransmission per reordered chunk, which the receiver drops.
 */
static void detect_losses(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                          uint32_t high, uint64_t now)
{
    for (uint32_t s = tx->acked; fl_seq_before(s, high); s++) {
        struct tx_chunk *c = fl_tx_chunk(tx, s);
        if (c->sacked || c->rexmit || !sent_before_rack(p, tx, c))
            continue;
        c->rexmit = true;
        p->loss_at = now;
        fl_chan_mark(t, p);
    }
}

/* The cumulative part of a: chunks below a->next are held; the window's
   head moves past them. */
static void take_cumulative(struct chan_peer *p, struct tx_lane *tx,
                            const struct fl_chan_ack *a, struct news *rack, uint64_t now)
{
    if (!fl_seq_before(tx->acked, a->next))
        return;
    p->progress_ns = now;
    p->probes = 0;
    for (uint32_t s = tx->acked; s != a->next; s++)
        if (!fl_tx_chunk(tx, s)->sacked)
            acked_now(p, tx, s, fl_tx_chunk(tx, s), rack, now);
    tx->acked = a->next;
    tx->head = tx->acked == tx->next ? tx->tail : fl_tx_chunk(tx, tx->acked)->pkt_pos;
    p->backoff = 0;
}

/* The selective words of a: chunks held past the hole need not go again.
   Returns one past the highest chunk they name (a->next: none). */
static uint32_t take_selective(struct chan_peer *p, struct tx_lane *tx,
                               const struct fl_chan_ack *a, struct news *rack,
                               uint64_t now)
{
    uint32_t high = a->next;
    for (unsigned w = 0; w < a->words; w++) {
        uint64_t bits = a->sack[w];
        while (bits) {
            uint32_t s = a->next + 64 * w + (uint32_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            if (!fl_seq_before(s, tx->unsent))
                break;
            /* A stale ack's bits may name packets acknowledged long ago,
               whose slots now hold newer packets: those say nothing. */
            if (fl_seq_before(s, tx->acked))
                continue;
            struct tx_chunk *c = fl_tx_chunk(tx, s);
            if (!c->sacked)
                acked_now(p, tx, s, c, rack, now);
            c->sacked = true;
            c->rexmit = false; /* held: it need not go again */
            high = s + 1;
        }
    }
    return high;
}

void fl_chan_take_ack(struct fl_tp_ep *t, struct chan_peer *p, unsigned lane,
                      const struct fl_chan_ack *a, uint32_t echo, uint64_t now)
{
    struct tx_lane *tx = &p->tx[lane];
    struct news rack = {.probe_at = p->probes ? p->probe_at : 0, .echo = echo};
    /* Never beyond what we sent: that would be a forged or broken ack. */
    if (fl_seq_before(tx->unsent, a->next))
        return;
    take_cumulative(p, tx, a, &rack, now);
    uint32_t high = take_selective(p, tx, a, &rack, now);
    if (rack.set && (!tx->rack_set || fl_seq_before(tx->rack_xmit, rack.xmit))) {
        tx->rack_set = true;
        tx->rack_xmit = rack.xmit;
        p->probes = 0; /* news: a stall after this may be probed again */
    }
    if (rack.paths)
        news_by_path(tx, &rack);
    if (rack.needless)
        fl_chan_learn_late(p, p->quiet_ns, now);
    if (tx->rto_wait)
        rto_verdict(t, p, tx, &rack, now);
    if (tx->rack_set && tx->acked != tx->unsent)
        detect_losses(t, p, tx, high, now);
}
