/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peers' liveness. A peer is activated by the first send to it or the
 * first datagram from it; from then on the timers' pass (run from the
 * poll, after its receive, and before sleeping) looks at it: its delayed
 * acknowledgement, its retransmission timers (rto.c), and keep-alives: a
 * silent peer is asked (a ping) after a quarter of FLIT_PEER_TIMEOUT, and
 * reported down after all of it, or when what it has not acknowledged
 * waited that long. Time this process did not listen (it did not poll) is
 * forgiven once per peer, so a process that computes for a while does not
 * take its peers for dead.
 */
#include "channel/peer.h"

#include "channel/channel.h"
#include "channel/idle.h"
#include "channel/path.h"
#include "channel/rto.h"
#include "channel/send.h"
#include "channel/state.h"
#include "platform/os.h"
#include "util/log.h"

#define BACKLOG_BATCHES        64u /* full receives before timers judge anyway */
#define UNACKED_HEARD_TIMEOUTS 4u  /* an unacknowledged chunk of a peer we hear */

/* The first use of peer r, in either direction: its clocks start, and the
   timers watch it from now on. */
void fl_chan_activate(struct fl_tp_ep *t, uint32_t r, uint64_t now)
{
    struct chan_peer *p = &t->peers[r];
    p->active = true;
    FL_COUNT(t->counters->pairs, 1);
    p->rto = fl_chan_first_rto(t);
    p->last_heard = now;
    if (t->nactive == 0)
        t->listened_ns = now; /* nothing was listened to before */
    t->active[t->nactive++] = r;
}

static void peer_down(struct fl_tp_ep *t, uint32_t r, const char *why)
{
    struct chan_peer *p = &t->peers[r];
    if (p->down)
        return;
    char who[64];
    t->ops->describe(t->d, r, who, sizeof who);
    fl_info("%s: rank %u (%s) is down: %s", t->ops->name, r, who, why);
    p->down = true;
    p->dirty = false;
    t->peer_down(t->up_ctx, r, FLIT_ERR_PEER_DOWN);
}

/* The delayed acknowledgement, when due, goes at the end of the pass. */
static void ack_timer(struct fl_tp_ep *t, struct chan_peer *p, uint64_t now,
                      uint64_t *next)
{
    if (p->ack_due && now >= p->ack_due) {
        p->ack_now = true;
        fl_chan_mark(t, p);
        p->ack_due = 0;
    }
    fl_chan_note_deadline(next, p->ack_due);
}

/*
 * Whether a wait of age ns gives a peer up: past FLIT_PEER_TIMEOUT, and
 * our socket read to its end (the last receive took less than a full
 * batch), for the peer's answer may be among what waits unread: on a host
 * whose processes each run every second or two, hundreds of datagrams
 * queue between two turns, and a receive pass takes one batch of them. A
 * socket that never empties (a flood from elsewhere) gives up after twice
 * the timeout.
 */
static bool gives_up(const struct fl_tp_ep *t, uint64_t age)
{
    return age > t->timeout_ns && (t->backlog == 0 || age > 2 * t->timeout_ns);
}

/*
 * Whether something p has not acknowledged waited FLIT_PEER_TIMEOUT while
 * p fell quiet too (half of it unheard): a peer we hear is alive, and what
 * it has not acknowledged waits in its socket behind the rest (a host of
 * many processes, each run once a second or two, holds thousands of
 * datagrams a socket), or in its receive budget (a receiver that paces
 * itself with flit_extract). Were our direction broken, the peer stops
 * hearing us, gives us up and falls silent itself. Bounded all the same:
 * UNACKED_HEARD_TIMEOUTS of the give-up time, heard or not.
 */
static bool unacked_too_long(const struct fl_tp_ep *t, const struct chan_peer *p,
                             uint64_t now)
{
    bool heard = now - p->last_heard <= t->timeout_ns / 2;
    for (unsigned l = 0; l < FL_LANES; l++) {
        const struct tx_lane *tx = &p->tx[l];
        if (tx->acked == tx->unsent)
            continue;
        uint64_t age = now - fl_tx_chunk(tx, tx->acked)->first_ns;
        if (gives_up(t, age) && (!heard || age > UNACKED_HEARD_TIMEOUTS * t->timeout_ns))
            return true;
    }
    return false;
}

/* Keep-alive: a silent peer is asked (a ping), then given up. false: it
   was given up. */
static bool keep_alive(struct fl_tp_ep *t, uint32_t r, uint64_t now, uint64_t *next)
{
    struct chan_peer *p = &t->peers[r];
    if (gives_up(t, now - p->last_heard)) {
        peer_down(t, r, "silent for FLIT_PEER_TIMEOUT");
        return false;
    }
    /* A quarter of the give-up time; half of it while our socket holds
       more than one receive takes: the peer's word may be there, unread,
       and a ping answered is two datagrams more for a host already behind;
       but the ping is also the peer's only word from us while we read. */
    uint64_t ask = t->timeout_ns / (t->backlog ? 2 : 4);
    if (now - p->last_heard > ask && now - p->ping_at > ask) {
        p->ping = true;
        fl_chan_mark(t, p);
        p->ping_at = now;
    }
    fl_chan_note_deadline(next, p->last_heard + ask > p->ping_at + ask
                                    ? p->last_heard + ask
                                    : p->ping_at + ask);
    fl_chan_note_deadline(next, p->last_heard + t->timeout_ns + 1);
    return true;
}

/* Marks what is due for (re)transmission; returns the peer's next deadline. */
static uint64_t peer_timers(struct fl_tp_ep *t, uint32_t r, uint64_t now, bool judge)
{
    struct chan_peer *p = &t->peers[r];
    uint64_t next = 0;
    ack_timer(t, p, now, &next);
    if (unacked_too_long(t, p, now)) {
        peer_down(t, r, "messages unacknowledged for FLIT_PEER_TIMEOUT");
        return 0;
    }
    if (p->path)
        fl_chan_path_timers(t, p, now, &next);
    fl_chan_tx_timers(t, p, now, judge, &next);
    if (!keep_alive(t, r, now, &next))
        return 0;
    fl_chan_idle_check(t, p, now, &next);
    return next;
}

/*
 * Silence, and the age of what a peer has not acknowledged, count only
 * time we were listening. A process that did not poll for a while (it
 * computed, or sat idle between phases, as its peers may have) heard
 * nothing because it did not look, not because its peers died. Polling,
 * or asleep in flit_wait, the timers look at the clock at least every
 * quarter of the give-up time (the keep-alive deadline); a gap since
 * their last look longer than half of it is time we were not listening:
 * it is taken off the peer's clocks (a chunk first sent after that look,
 * as the pass that looked ended, from its sending on), and the peer is
 * asked (a ping)
 * before it is judged. Once per peer until it is heard again, so a
 * program that polls only every few seconds still learns of a dead peer:
 * within two such gaps and the give-up time.
 */
static void forgive_gap(struct fl_tp_ep *t, uint64_t now)
{
    uint64_t since = t->listened_ns, gap = now - since;
    for (uint32_t i = 0; i < t->nactive; i++) {
        struct chan_peer *p = &t->peers[t->active[i]];
        if (p->down || p->excused)
            continue;
        if (p->last_heard <= since)
            p->last_heard += gap;
        for (unsigned l = 0; l < FL_LANES; l++) {
            struct tx_lane *tx = &p->tx[l];
            for (uint32_t s = tx->acked; s != tx->unsent; s++) {
                struct tx_chunk *c = fl_tx_chunk(tx, s);
                /* One sent after that look (the end of the pass that
                   looked: a handler's reply) waited unheard since. */
                c->first_ns += c->first_ns <= since ? gap : now - c->first_ns;
            }
        }
        p->excused = true;
        p->ping = true;
        p->ping_at = now;
        fl_chan_mark(t, p);
    }
}

/* We look at the clock, listening: after a long gap, forgive it. */
void fl_chan_listening(struct fl_tp_ep *t, uint64_t now)
{
    if (t->listened_ns && now - t->listened_ns > t->timeout_ns / 2)
        forgive_gap(t, now);
    t->listened_ns = now;
}

/*
 * Whether the timers may take chunks for lost now: not while the last
 * receive took a full batch, for their acknowledgements may be among what
 * waits unread. A process that was not scheduled for a while finds its
 * timers due and its socket full of the acknowledgements that came
 * meanwhile; it reads them first. Bounded: a socket that stays that full
 * (a peer's flood) is judged after BACKLOG_BATCHES receives.
 */
static bool may_judge(const struct fl_tp_ep *t)
{
    return t->backlog == 0 || t->backlog >= BACKLOG_BATCHES;
}

void fl_chan_run_timers(struct fl_tp_ep *t, uint64_t now)
{
    uint64_t next = 0;
    bool judge = may_judge(t);
    fl_chan_listening(t, now);
    for (uint32_t i = 0; i < t->nactive; i++)
        if (!t->peers[t->active[i]].down)
            fl_chan_note_deadline(&next, peer_timers(t, t->active[i], now, judge));
    fl_chan_idle_trim(t, now, &next);
    t->next_timer = next;
}

bool fl_chan_settled(struct fl_tp_ep *t)
{
    for (uint32_t i = 0; i < t->nactive; i++) {
        struct chan_peer *p = &t->peers[t->active[i]];
        if (p->down)
            continue;
        if (p->ack_due || p->rx[0].unacked || p->rx[1].unacked) {
            p->ack_now = true; /* say it now, not after a delay */
            fl_chan_mark(t, p);
            return false;
        }
        for (unsigned l = 0; l < FL_LANES; l++)
            if (p->tx[l].acked != p->tx[l].next)
                return false;
    }
    return true;
}

/* A peer is activated by our first send to it or its first datagram to us. */
bool fl_chan_in_contact(struct fl_tp_ep *t, uint32_t peer)
{
    return t->peers[peer].active;
}
