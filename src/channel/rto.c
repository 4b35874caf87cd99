/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The retransmission timer and the round-trip estimate (RFC 6298: srtt,
 * rttvar, a floor FLIT_RTO_MIN_US, exponential backoff), the lateness a
 * needless resend taught (the peer was descheduled, not the path lossy),
 * and the tail probe (TCP's TLP) that reveals lost last chunks sooner than
 * a timeout. The timers' pass over one peer's send lanes marks chunks due
 * again; send.c sends them, ack.c judges what their acknowledgements say.
 */
#include "channel/rto.h"

#include "channel/config.h"
#include "channel/state.h"
#include "util/config.h"

#define MAX_BACKOFF       6u /* retransmission timeout x 64 at most */
#define RTO_CAP_NS        1000000000ull /* the timeout's cap, at least */
#define PROBE_SLACK_NS    50000ull /* a tail probe waits this beyond 2 RTT + ack delay */
#define MAX_PROBES        3u       /* tail probes a stall, each waiting twice as long */
#define LATE_HALF_LIFE_NS 2000000000ull /* a learnt lateness halves every 2 s */
#define LOSSY_NS          2000000000ull /* a path lost a chunk this recently: lossy */

/* Whether the path to p lost a chunk lately (RACK found one, or a
   timeout's verdict). */
bool fl_chan_lossy(const struct chan_peer *p, uint64_t now)
{
    return p->loss_at && now - p->loss_at < LOSSY_NS;
}

/* The lateness peer p's acknowledgements showed, as it stands now. */
static uint64_t late_floor(const struct chan_peer *p, uint64_t now)
{
    uint64_t halvings = (now - p->late_at) / LATE_HALF_LIFE_NS;
    return halvings < 64 ? p->late_ns >> halvings : 0;
}

/*
 * The most backing off may make a retransmission timeout (the estimate
 * itself may say more: estimate_cap): a quarter of FLIT_PEER_TIMEOUT
 * (when the keep-alive asks a silent peer), and at least a second. Not a
 * fixed second: on a host with hundreds of ranks a core, each runs every
 * second or two, round trips take seconds, and a timeout that cannot grow
 * past them resends every chunk in flight to every peer each second, which
 * is more work for the same cores: the round trips grow, and the job
 * collapses into resends (1,024 ranks over 8 namespace hosts on 2 cores:
 * 3 million datagrams a host for 0.25 million messages, rtt 3-6 s).
 */
static uint64_t rto_cap(void)
{
    uint64_t quarter = (uint64_t)fl_cfg.peer_timeout_ms * 1000000u / 4;
    return quarter > RTO_CAP_NS ? quarter : RTO_CAP_NS;
}

/*
 * The most the estimate from round trips may say: FLIT_PEER_TIMEOUT (the
 * cap above bounds the backoff, not what was measured: a timeout shorter
 * than the round trips resends what is only waiting in the peer's socket,
 * and each resend lengthens the wait), or the cap without a timeout.
 */
static uint64_t estimate_cap(void)
{
    uint64_t all = (uint64_t)fl_cfg.peer_timeout_ms * 1000000u, cap = rto_cap();
    return all > cap ? all : cap;
}

/* The retransmission timeout: the estimate from round trips, at least
   twice the lateness learnt, backed off up to the cap, never below the
   estimate. */
uint64_t fl_chan_rto_now(const struct chan_peer *p, uint64_t now)
{
    uint64_t r = p->rto, late = 2 * late_floor(p, now), cap = rto_cap();
    r = r > late ? r : late;
    uint64_t most = estimate_cap();
    uint64_t floor = r < most ? r : most;
    r <<= p->backoff;
    if (r > cap)
        r = cap;
    return r > floor ? r : floor;
}

/*
 * A peer's first timeout, before any round trip to it was measured: the
 * initial 50 ms, or what the round trips to the other peers showed, if
 * longer. The wait for a first answer is mostly the peer's host running
 * it, as for the others: an all-to-all on a crowded host otherwise sends
 * each first message five or six times (50, 100, ... ms) before the
 * answer to the first could come.
 */
uint64_t fl_chan_first_rto(const struct fl_tp_ep *t)
{
    uint64_t r = t->srtt_all + 4 * t->rttvar_all, most = estimate_cap();
    if (r < RTO_INITIAL_NS)
        r = RTO_INITIAL_NS;
    return r < most ? r : most;
}

/*
 * The tail probe's timeout: two round trips and, when what is unacknowledged
 * is less than the receiver acknowledges at once (a quarter of the window,
 * schedule_ack), its delayed acknowledgement; doubled for each probe
 * already sent in this stall. The
 * retransmission timeout is kept long (FLIT_RTO_MIN_US) because a receiver
 * acknowledges only when its process polls; but a stream whose last chunks
 * were lost sees no later chunk acknowledged that would reveal the loss
 * (detect_losses), and would stall for a whole timeout. So when nothing
 * was acknowledged for this long, the newest chunk not known held goes
 * again (TCP's tail loss probe): its acknowledgement shows what else is
 * missing. At most MAX_PROBES a stall, then the timeout.
 */
static uint64_t probe_timeout(const struct chan_peer *p, uint64_t now)
{
    uint64_t unacked = 0;
    for (unsigned l = 0; l < FL_LANES; l++)
        unacked += p->tx[l].tail - p->tx[l].head;
    uint64_t pto = 2 * p->srtt, spread = p->srtt + 4 * p->rttvar;
    if (pto < spread) /* round trips that vary this much are no sign of loss */
        pto = spread;
    pto += PROBE_SLACK_NS;
    if (unacked < p->window / 4) /* it may be waiting to acknowledge it */
        pto += (uint64_t)fl_chan_cfg.ack_delay_us * 1000u;
    uint64_t late = late_floor(p, now); /* it was that slow, and not lossy */
    if (pto < late)
        pto = late;
    pto <<= p->probes;
    uint64_t rto = fl_chan_rto_now(p, now);
    return pto < rto ? pto : rto;
}

/* When the next tail probe is due (0: none may go now). */
uint64_t fl_chan_probe_due(const struct chan_peer *p, uint64_t now)
{
    if (p->probes >= MAX_PROBES || !p->srtt)
        return 0;
    uint64_t from = p->probe_at > p->progress_ns ? p->probe_at : p->progress_ns;
    return from + probe_timeout(p, now);
}

/* One look of the timers at a peer: the time, when its tail probe is due
   (0: none may go), and whether losses may be judged now (lane_timers). */
struct timer_pass {
    uint64_t now, due;
    bool judge, lossy;
};

/* RFC 6298's smoothing of one sample into (srtt, rttvar). */
static void smooth(uint64_t *srtt, uint64_t *rttvar, uint64_t sample)
{
    if (*srtt == 0) {
        *srtt = sample;
        *rttvar = sample / 2;
    } else {
        uint64_t err = *srtt > sample ? *srtt - sample : sample - *srtt;
        *rttvar = (3 * *rttvar + err) / 4;
        *srtt = (7 * *srtt + sample) / 8;
    }
}

void fl_chan_rtt_sample(struct fl_tp_ep *t, struct chan_peer *p, uint64_t sample)
{
    smooth(&p->srtt, &p->rttvar, sample);
    smooth(&t->srtt_all, &t->rttvar_all, sample);
    uint64_t min = (uint64_t)fl_chan_cfg.rto_min_us * 1000u;
    p->rto = p->srtt + 4 * p->rttvar;
    if (p->rto < min)
        p->rto = min;
}

/*
 * A resend was needless: the peer was silent for late (not scheduled, most
 * likely), and the timers wait that long from now on (decaying:
 * late_floor). Its silence, not how long the chunks waited: behind a hole
 * chunks wait for its repair while the peer answers all along. Only on a
 * path that lost nothing for a while: where datagrams are lost, so are
 * acknowledgements, and a resend that only seems needless (its peer's
 * acknowledgement of the first sending was lost) must not slow the timers
 * that recover from real losses.
 */
void fl_chan_learn_late(struct chan_peer *p, uint64_t late, uint64_t now)
{
    if (fl_chan_lossy(p, now))
        return;
    uint64_t cur = late_floor(p, now);
    if (late > rto_cap())
        late = rto_cap();
    p->late_ns = late > cur ? late : cur;
    p->late_at = now;
}

/* What waited for the verdict on rto_seq was lost with it: all of it goes
   again, and the path is lossy for a while. */
void fl_chan_rto_lost(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                      uint64_t now)
{
    tx->rto_wait = false;
    p->loss_at = now;
    for (uint32_t s = tx->acked; fl_seq_before(s, tx->rto_high); s++) {
        struct tx_chunk *c = fl_tx_chunk(tx, s);
        if (!c->sacked && !c->rexmit) {
            c->rexmit = true;
            fl_chan_mark(t, p);
        }
    }
}

/*
 * Lane tx's retransmission timer and tail probe. On a path that lost
 * nothing lately, a chunk unacknowledged for the timeout is not taken for
 * lost with all that was sent with it: only the oldest goes again (F-RTO),
 * and what its acknowledgement shows decides for the others (rto_verdict):
 * a peer that was only slow (not scheduled for a tick or more, on a busy
 * host) costs one chunk, not a window. On a lossy path every chunk past
 * its timeout goes again at once, as before. judge false: acknowledgements may be waiting
 * unread in our own socket (a receive took a full batch): nothing is taken for lost yet,
 * and the timers look again at once. Returns whether a chunk waits for
 * its timer and a tail probe may go for it.
 */
static bool lane_timers(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                        const struct timer_pass *tp, uint64_t *next, bool *expired,
                        bool *probe)
{
    uint64_t rto = fl_chan_rto_now(p, tp->now);
    struct tx_chunk *tail = NULL;   /* the newest not known held, in time */
    struct tx_chunk *oldest = NULL; /* the oldest past its timeout */
    uint32_t oldest_seq = 0;
    for (uint32_t s = tx->acked; s != tx->unsent; s++) {
        struct tx_chunk *c = fl_tx_chunk(tx, s);
        if (c->sacked || c->rexmit)
            continue;
        if (tx->rto_wait && s != tx->rto_seq && fl_seq_before(s, tx->rto_high))
            continue; /* waits for the verdict on rto_seq */
        if (tp->now - c->sent_ns < rto) {
            fl_chan_note_deadline(next, c->sent_ns + rto);
            if (!tail || c->sent_ns >= tail->sent_ns)
                tail = c;
        } else if (!oldest) {
            oldest = c;
            oldest_seq = s;
        } else if (tp->lossy && tp->judge) {
            c->rexmit = true; /* a lossy path: lost with the oldest, likely */
        }
    }
    bool probe_due_now = tail && tp->due && tp->now >= tp->due && !tx->rto_wait;
    if (!tp->judge) {
        if (oldest || probe_due_now)
            fl_chan_note_deadline(next, tp->now);
        return tail && !tx->rto_wait;
    }
    if (oldest) {
        /* rto_seq's own resend timing out too is no verdict: it goes again
           alone, the timer backed off (RFC 6298 5.5), and the rest waits
           for an answer. Taking all for lost then sent a whole window
           again whenever a peer stopped listening for two timeouts (a
           handler that slept 30 ms: 1,024 chunks); a peer that never
           answers is given up after FLIT_PEER_TIMEOUT (peer.c). */
        oldest->rexmit = *expired = true;
        if (!tx->rto_wait && !tp->lossy) {
            tx->rto_wait = true;
            tx->rto_seq = oldest_seq;
            tx->rto_high = tx->unsent;
            tx->rto_ts = fl_chan_usec32(tp->now) | 1u; /* <= its datagram's */
        }
        fl_chan_mark(t, p);
    } else if (probe_due_now) {
        tail->rexmit = *probe = true;
        fl_chan_mark(t, p);
    }
    /* A lane waiting for a timeout's verdict sends no probe: the probe's
       deadline is no wake-up for it (one past woke a sleeper at once,
       again and again, until the timeout). */
    return tail && !tx->rto_wait;
}

void fl_chan_tx_timers(struct fl_tp_ep *t, struct chan_peer *p, uint64_t now, bool judge,
                       uint64_t *next)
{
    bool expired = false, probe = false, waiting = false;
    struct timer_pass tp = {now, fl_chan_probe_due(p, now), judge, fl_chan_lossy(p, now)};
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct tx_lane *tx = &p->tx[l];
        if (tx->acked != tx->unsent)
            waiting |= lane_timers(t, p, tx, &tp, next, &expired, &probe);
    }
    if (probe) {
        p->probes++;
        p->probe_at = now;
    }
    if (waiting)
        fl_chan_note_deadline(next, fl_chan_probe_due(p, now));
    if (expired && p->backoff < MAX_BACKOFF)
        p->backoff++;
}
