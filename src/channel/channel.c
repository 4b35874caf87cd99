/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliability channel; see channel.h for what it guarantees and
 * wire.h for the datagram.
 *
 * Sending: ->reserve finds room in the peer's send buffer for the lane (the
 * window: when it is full, FLIT_ERR_AGAIN is the credit stall), ->commit
 * cuts the packet into chunks with sequence numbers and sends them (or
 * holds them, FL_COMMIT_MORE, to pack several into one datagram). A chunk's
 * bytes stay in the send buffer until acknowledged: retransmissions send
 * them again from there, with fresh acknowledgements in the header. A
 * packet of one chunk may be lent instead (->commit_lent: its payload stays
 * in the caller's memory, and datagrams gather it from there) until
 * ->settle_lent copies it into its room in the buffer if it is still
 * unacknowledged by then; a long payload sent in pieces crosses the window
 * that way, and only its last window's worth is ever copied.
 *
 * Receiving: a chunk with the next sequence number is delivered at once,
 * from the datagram (no copy) when it is a whole packet; one ahead of it is
 * copied aside until the hole is filled; one behind is a duplicate, dropped.
 * Every datagram's acknowledgements free the sender's buffer.
 *
 * Timers (delayed acks, retransmissions, keep-alives, give-up) run from the
 * poll, after its receive (what came in says what was not lost); while the
 * endpoint sleeps, a timerfd set to the earliest deadline wakes it.
 *
 * Peers on demand: ->connect only notes a peer's address and window. The
 * peer becomes active (its clocks start, the timers and keep-alives watch
 * it) on the first send to it or the first datagram from it; each lane's
 * send buffer is allocated by its first ->reserve, its reorder buffer by
 * the first chunk that comes ahead of its turn, its reassembly buffer by
 * the first packet in several chunks. A peer never contacted costs its
 * struct chan_peer and a slot in two arrays of ranks (docs/udp-scale.md).
 */
#include "channel/channel.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "channel/wire.h"
#include "platform/le.h"
#include "platform/os.h"
#include "util/config.h"
#include "util/log.h"

#define CHUNK_CAP FL_CHAN_SEQ_WINDOW /* sequence numbers in flight per lane */
/* A lane's window holds at least two of the largest packets. */
#define MIN_WINDOW(t)  (2u * (uint64_t)(t)->max_packet)
#define TX_FIRST_BYTES 16384u         /* a lane's send buffer starts about this small */
#define DGRAM_CHUNKS   64u            /* chunks in one datagram we build */
#define TX_BATCH       16u            /* datagrams per sendmmsg */
#define MAX_DEPTH      FL_DGRAM_SLOTS /* nested polls: handler -> blocked reply -> ... */
#define CLOCK_EVERY    16u            /* idle polls between looks at the clock */
#define MAX_BACKOFF    6u             /* retransmission timeout x 64 at most */
#define RTO_INITIAL_NS 50000000ull
#define RTO_MAX_NS     1000000000ull
#define PROBE_SLACK_NS 50000ull    /* a tail probe waits this beyond 2 RTT + ack delay */
#define MAX_PROBES     3u          /* tail probes a stall, each waiting twice as long */
#define LATE_HALF_LIFE_NS 2000000000ull /* a learnt lateness halves every 2 s */
#define LOSSY_NS          2000000000ull /* a path lost a chunk this recently: lossy */
#define BACKLOG_BATCHES   64u           /* full receives before timers judge anyway */
#define BLOB_MAGIC     0x4843464cu /* "FLCH" */
#define BLOB_HDR       8u

/* ---- state ---- */

struct tx_chunk {
    uint64_t pos;      /* its bytes in the send buffer */
    uint64_t pkt_pos;  /* where its packet starts */
    uint64_t sent_ns;  /* last transmission; 0: never sent */
    uint64_t first_ns; /* first transmission: the give-up clock */
    /* Lent (->commit_lent): its bytes from lent_at on are still at the
       caller's, here, and their room in the send buffer is unwritten until
       fl_chan_settle_lent. Only a packet of one chunk is lent. */
    const uint8_t *lent;
    uint32_t len, pkt_len;
    uint32_t xmit; /* its last transmission's place among the peer's */
    uint8_t flags; /* FL_CHAN_FIRST, FL_CHAN_LAST */
    uint8_t lent_at;
    bool sacked; /* the receiver holds it (selective ack) */
    bool rexmit; /* due to be sent again */
};

struct tx_lane {
    uint8_t *buf;
    uint64_t size;          /* the window */
    uint64_t head, tail;    /* [head, tail): packets not yet acknowledged */
    uint64_t reserved;      /* the open reservation */
    struct tx_chunk *chunk; /* [CHUNK_CAP], by sequence number */
    uint32_t acked;         /* first sequence number not acknowledged */
    /* the newest transmission the peer acknowledged (detect_losses) */
    bool rack_set;
    uint32_t rack_xmit;
    uint32_t unsent;        /* first never sent */
    uint32_t next;          /* next to give */
    uint32_t nlent;         /* chunks lent since the lane was last settled */
    /* A retransmission timeout sent only the oldest chunk, rto_seq, again;
       the others sent before it, up to rto_high, wait for what its
       acknowledgement says (rto_verdict). */
    bool rto_wait;
    uint32_t rto_seq, rto_high;
};

struct rx_chunk {
    uint8_t *data; /* a copy: it came ahead of its turn */
    uint32_t len;
    uint8_t flags;
};

struct rx_lane {
    uint32_t next;        /* first sequence number not yet delivered */
    struct rx_chunk *ooo; /* [CHUNK_CAP], by sequence number */
    uint32_t held;        /* chunks in ooo */
    uint32_t top;         /* one past the highest held (when held) */
    uint64_t held_bytes;  /* their bytes: at most the window */
    uint8_t *asm_buf;     /* a packet arriving in chunks */
    size_t asm_len;
    bool asm_open;
    uint64_t unacked; /* bytes delivered since we last acknowledged */
    bool release;     /* ooo holds the next chunk: deliver it when
                         a poll's budget allows */
};

struct chan_peer {
    bool connected, down;
    bool active;      /* contacted, in either direction: in t->active */
    bool ack_now;     /* acknowledge at the end of this pass */
    bool dirty;       /* something to send: chunks or an ack */
    bool queued;      /* in the endpoint's queue of such peers */
    bool ping;        /* ask for an acknowledgement (keep-alive) */
    uint64_t ack_due; /* delayed acknowledgement; 0: none */
    uint32_t echo_ts; /* its latest clock reading, to echo */
    uint64_t echo_at;
    uint64_t srtt, rttvar, rto; /* ns */
    unsigned backoff;
    uint64_t last_heard, ping_at;
    uint64_t progress_ns; /* acknowledgements last moved forward */
    uint64_t probe_at;    /* the last tail probe went */
    unsigned probes;      /* tail probes since progress */
    uint32_t xmit;        /* transmissions of chunks to it, numbered */
    /* How late its acknowledgements came, at worst, when a resend turned
       out needless (the peer was slow, not the path lossy): the timers wait
       at least this long. Learnt at late_at, halving every
       LATE_HALF_LIFE_NS since. */
    uint64_t late_ns, late_at;
    uint64_t quiet_ns;    /* the silence its latest datagram ended */
    uint64_t loss_at;     /* a loss to it was last seen (RACK, a timeout's verdict) */
    bool excused;         /* a gap in our listening was forgiven; not heard since */
    size_t chunk_max;     /* payload bytes of a chunk to this peer */
    uint64_t window;      /* what it lets us have in flight, per lane */
    uint64_t retransmits;
    struct tx_lane tx[FL_LANES];
    struct rx_lane rx[FL_LANES];
};

/* One datagram to build: which chunks go in it. */
struct plan {
    uint32_t dst;
    bool ping;
    bool ack_short;          /* the acks left out selective words: a whole one follows */
    uint8_t words[FL_LANES]; /* selective words the header carries */
    unsigned n;
    uint8_t lane[DGRAM_CHUNKS];
    uint32_t seq[DGRAM_CHUNKS];
};

struct fl_tp_ep {
    const struct fl_dgram_ops *ops;
    struct fl_dgram *d;
    struct fl_tp_counters *counters;
    fl_tp_down_fn peer_down; /* the endpoint's, with up_ctx */
    void *up_ctx;
    uint32_t rank, size;
    uint64_t key;
    size_t max_packet; /* the largest the endpoint sends (open args) */
    uint64_t window;   /* what we let each peer have in flight to us */
    uint64_t timeout_ns;
    struct chan_peer *peers;
    uint32_t *active; /* the ranks of the active peers, in order of contact */
    uint32_t nactive;
    int epfd, timerfd;
    uint64_t timer_set;  /* the deadline the timerfd holds; 0: none */
    uint64_t next_timer; /* earliest deadline; 0: none */
    uint32_t *sendq;     /* peers with something to send, once each */
    uint32_t nsendq;
    unsigned depth;       /* polls in progress (nested) */
    int budget;           /* packets the poll in progress may deliver */
    uint32_t nrelease;    /* lanes with rx->release set */
    unsigned idle_polls;  /* since the clock was last read */
    uint64_t listened_ns; /* our last look at the clock, polling; 0: never */
    bool check_timers;    /* woken by the timer: look at once */
    unsigned backlog;     /* receives in a row that took a full batch */
    /* what sending a batch needs, reused */
    struct plan plans[TX_BATCH];
    struct fl_dgram_out out[TX_BATCH];
    struct iovec iov[TX_BATCH][1 + 4 * DGRAM_CHUNKS];
    uint8_t hdr[TX_BATCH][FL_CHAN_MAX_HDR];
    uint8_t chdr[TX_BATCH][DGRAM_CHUNKS][FL_CHAN_CHUNK_HDR];
};

static const uint8_t zeros[8];

static inline uint32_t usec32(uint64_t ns)
{
    return (uint32_t)(ns / 1000u);
}

/* Whether the path to p lost a chunk lately (RACK found one, or a
   timeout's verdict). */
static bool lossy(const struct chan_peer *p, uint64_t now)
{
    return p->loss_at && now - p->loss_at < LOSSY_NS;
}

/* The lateness peer p's acknowledgements showed, as it stands now. */
static uint64_t late_floor(const struct chan_peer *p, uint64_t now)
{
    uint64_t halvings = (now - p->late_at) / LATE_HALF_LIFE_NS;
    return halvings < 64 ? p->late_ns >> halvings : 0;
}

/* The retransmission timeout: the estimate from round trips, at least
   twice the lateness learnt, backed off. */
static uint64_t rto_now(const struct chan_peer *p, uint64_t now)
{
    uint64_t r = p->rto, late = 2 * late_floor(p, now);
    r = (r > late ? r : late) << p->backoff;
    return r < RTO_MAX_NS ? r : RTO_MAX_NS;
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
    uint64_t pto = 2 * p->srtt + PROBE_SLACK_NS;
    if (unacked < p->window / 4) /* it may be waiting to acknowledge it */
        pto += (uint64_t)fl_cfg.ack_delay_us * 1000u;
    uint64_t late = late_floor(p, now); /* it was that slow, and not lossy */
    if (pto < late)
        pto = late;
    pto <<= p->probes;
    uint64_t rto = rto_now(p, now);
    return pto < rto ? pto : rto;
}

/* When the next tail probe is due (0: none may go now). */
static uint64_t probe_due(const struct chan_peer *p, uint64_t now)
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

/* Peer p has something to send: the end of the poll pass will send it. */
static void mark(struct fl_tp_ep *t, struct chan_peer *p)
{
    p->dirty = true;
    if (!p->queued) {
        p->queued = true;
        t->sendq[t->nsendq++] = (uint32_t)(p - t->peers);
    }
}

/* ---- open / address / connect ---- */

/* The first use of peer r, in either direction: its clocks start, and the
   timers watch it from now on. */
static void activate(struct fl_tp_ep *t, uint32_t r, uint64_t now)
{
    struct chan_peer *p = &t->peers[r];
    p->active = true;
    FL_COUNT(t->counters->pairs, 1);
    p->rto = RTO_INITIAL_NS;
    p->last_heard = now;
    if (t->nactive == 0)
        t->listened_ns = now; /* nothing was listened to before */
    t->active[t->nactive++] = r;
}

/* The size of the chunks to peer r, from its path's datagrams: asked of
   the transport on first need (on UDP that probes the route). */
static flit_status chunk_fit(struct fl_tp_ep *t, uint32_t r)
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
   all): the peer's chunk size, its activation, the lane's send buffer. */
static flit_status first_send(struct fl_tp_ep *t, uint32_t dst, unsigned lane)
{
    struct chan_peer *p = &t->peers[dst];
    struct tx_lane *tx = &p->tx[lane];
    flit_status st = chunk_fit(t, dst);
    if (st != FLIT_OK)
        return st;
    if (!p->active)
        activate(t, dst, fl_now_ns());
    if (tx->buf)
        return FLIT_OK;
    /* Small at first, doubling (grow) to the window as the bytes in flight
       ask: a peer sent a few small messages, or only a FIN, holds 16 KiB. */
    uint64_t size = p->window;
    while (size % 2 == 0 && size / 2 >= TX_FIRST_BYTES)
        size /= 2;
    uint8_t *buf = malloc(size);
    struct tx_chunk *chunk = calloc(CHUNK_CAP, sizeof *chunk);
    if (!buf || !chunk) {
        free(buf);
        free(chunk);
        fl_error("%s: no memory for the send window to rank %u (%llu bytes)",
                 t->ops->name, dst, (unsigned long long)size);
        return FLIT_ERR_NO_MEMORY;
    }
    tx->buf = buf;
    tx->chunk = chunk;
    tx->size = size;
    return FLIT_OK;
}

/*
 * Doubles the lane's send buffer (at most to the window, which a doubling
 * from first_send's size reaches exactly). Bytes keep their positions: the
 * unacknowledged ones [head, tail) move to pos % the new size, where a
 * packet that did not wrap before does not wrap now (the new size is a
 * multiple of the old). Nothing outside the channel points into the
 * buffer between calls. false, the buffer as it was, without memory.
 */
static bool grow(struct chan_peer *p, struct tx_lane *tx)
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
    return true;
}

static void peer_free(struct chan_peer *p)
{
    for (unsigned l = 0; l < FL_LANES; l++) {
        free(p->tx[l].buf);
        free(p->tx[l].chunk);
        if (p->rx[l].ooo)
            for (unsigned i = 0; i < CHUNK_CAP; i++)
                free(p->rx[l].ooo[i].data);
        free(p->rx[l].ooo);
        free(p->rx[l].asm_buf);
    }
}

flit_status fl_chan_open(const struct fl_dgram_ops *ops, const struct fl_tp_open_args *a,
                         struct fl_tp_ep **out)
{
    struct fl_dgram *d;
    flit_status st = ops->open(a, &d);
    if (st != FLIT_OK)
        return st;
    struct fl_tp_ep *t = calloc(1, sizeof *t);
    if (!t) {
        ops->close(d);
        return FLIT_ERR_NO_MEMORY;
    }
    t->ops = ops;
    t->d = d;
    t->counters = a->counters;
    t->peer_down = a->peer_down;
    t->up_ctx = a->up_ctx;
    t->rank = a->rank;
    t->size = a->size;
    t->key = a->job_id ^ 0x6a09e667f3bcc908ull;
    t->max_packet = a->max_packet;
    t->window = (uint64_t)fl_cfg.udp_window < MIN_WINDOW(t) ? MIN_WINDOW(t)
                                                            : (uint64_t)fl_cfg.udp_window;
    t->timeout_ns = (uint64_t)fl_cfg.peer_timeout_ms * 1000000u;
    t->epfd = epoll_create1(EPOLL_CLOEXEC);
    t->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    t->peers = calloc(a->size, sizeof *t->peers);
    t->sendq = calloc(a->size, sizeof *t->sendq);
    t->active = calloc(a->size, sizeof *t->active);
    struct epoll_event ev = {.events = EPOLLIN};
    bool ok = t->epfd >= 0 && t->timerfd >= 0 && t->peers && t->sendq && t->active &&
              epoll_ctl(t->epfd, EPOLL_CTL_ADD, ops->fd(d), &ev) == 0 &&
              epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->timerfd, &ev) == 0;
    if (!ok) {
        fl_error("%s: cannot set up the reliability channel: %s", ops->name,
                 strerror(errno));
        fl_chan_close(t);
        return FLIT_ERR_NO_MEMORY;
    }
    *out = t;
    return FLIT_OK;
}

flit_status fl_chan_address(struct fl_tp_ep *t, void *buf, size_t *len)
{
    if (*len < BLOB_HDR)
        return FLIT_ERR_INVALID_ARG;
    uint8_t *b = buf;
    fl_put32(b, BLOB_MAGIC);
    fl_put32(b + 4, (uint32_t)t->window);
    size_t n = *len - BLOB_HDR;
    flit_status st = t->ops->address(t->d, b + BLOB_HDR, &n);
    if (st == FLIT_OK)
        *len = BLOB_HDR + n;
    return st;
}

bool fl_chan_reachable(struct fl_tp_ep *t, uint32_t rank, const void *blob, size_t len)
{
    const uint8_t *b = blob;
    return len >= BLOB_HDR && fl_get32(b) == BLOB_MAGIC &&
           t->ops->reachable(t->d, rank, b + BLOB_HDR, len - BLOB_HDR);
}

flit_status fl_chan_connect(struct fl_tp_ep *t, uint32_t rank, const void *blob,
                            size_t len)
{
    const uint8_t *b = blob;
    struct chan_peer *p = &t->peers[rank];
    flit_status st = t->ops->connect(t->d, rank, b + BLOB_HDR, len - BLOB_HDR);
    if (st != FLIT_OK)
        return st;
    uint64_t theirs = fl_get32(b + 4);
    p->window = theirs < t->window ? theirs : t->window;
    if (p->window < MIN_WINDOW(t))
        p->window = MIN_WINDOW(t);
    p->connected = true; /* the rest on first use (activate, first_send) */
    return FLIT_OK;
}

void fl_chan_connected(struct fl_tp_ep *t)
{
    (void)t;
}

size_t fl_chan_max_packet(struct fl_tp_ep *t)
{
    return t->max_packet;
}

/* ---- timers ---- */

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

static void note_deadline(uint64_t *next, uint64_t when)
{
    if (when && (*next == 0 || when < *next))
        *next = when;
}

/* What waited for the verdict on rto_seq was lost with it: all of it goes
   again, and the path is lossy for a while. */
static void rto_lost(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                     uint64_t now)
{
    tx->rto_wait = false;
    p->loss_at = now;
    for (uint32_t s = tx->acked; fl_seq_before(s, tx->rto_high); s++) {
        struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
        if (!c->sacked && !c->rexmit) {
            c->rexmit = true;
            mark(t, p);
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
    uint64_t rto = rto_now(p, tp->now);
    struct tx_chunk *tail = NULL;   /* the newest not known held, in time */
    struct tx_chunk *oldest = NULL; /* the oldest past its timeout */
    uint32_t oldest_seq = 0;
    for (uint32_t s = tx->acked; s != tx->unsent; s++) {
        struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
        if (c->sacked || c->rexmit)
            continue;
        if (tx->rto_wait && s != tx->rto_seq && fl_seq_before(s, tx->rto_high))
            continue; /* waits for the verdict on rto_seq */
        if (tp->now - c->sent_ns < rto) {
            note_deadline(next, c->sent_ns + rto);
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
            note_deadline(next, tp->now);
        return tail && !tx->rto_wait;
    }
    if (oldest && tx->rto_wait && oldest_seq == tx->rto_seq) {
        /* rto_seq's resend timed out too, and nothing was heard of what it
           was to decide: no verdict will come (a peer gone quiet, a link
           down), so all of it is taken for lost, as RFC 5682 falls back to
           the conventional recovery. */
        rto_lost(t, p, tx, tp->now);
        *expired = true;
    } else if (oldest) {
        oldest->rexmit = *expired = true;
        if (!tx->rto_wait && !tp->lossy) {
            tx->rto_wait = true;
            tx->rto_seq = oldest_seq;
            tx->rto_high = tx->unsent;
        }
        mark(t, p);
    } else if (probe_due_now) {
        tail->rexmit = *probe = true;
        mark(t, p);
    }
    /* A lane waiting for a timeout's verdict sends no probe: the probe's
       deadline is no wake-up for it (one past woke a sleeper at once,
       again and again, until the timeout). */
    return tail && !tx->rto_wait;
}

/* Marks what is due for (re)transmission; returns the peer's next deadline. */
static uint64_t peer_timers(struct fl_tp_ep *t, uint32_t r, uint64_t now, bool judge)
{
    struct chan_peer *p = &t->peers[r];
    uint64_t next = 0;
    if (p->ack_due && now >= p->ack_due) {
        p->ack_now = true;
        mark(t, p);
        p->ack_due = 0;
    }
    note_deadline(&next, p->ack_due);
    bool expired = false, probe = false, waiting = false;
    struct timer_pass tp = {now, probe_due(p, now), judge, lossy(p, now)};
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct tx_lane *tx = &p->tx[l];
        if (tx->acked == tx->unsent)
            continue;
        if (now - tx->chunk[tx->acked % CHUNK_CAP].first_ns > t->timeout_ns) {
            peer_down(t, r, "messages unacknowledged for FLIT_PEER_TIMEOUT");
            return 0;
        }
        waiting |= lane_timers(t, p, tx, &tp, &next, &expired, &probe);
    }
    if (probe) {
        p->probes++;
        p->probe_at = now;
    }
    if (waiting)
        note_deadline(&next, probe_due(p, now));
    if (expired && p->backoff < MAX_BACKOFF)
        p->backoff++;
    /* Keep-alive: a silent peer is asked, then given up. */
    if (now - p->last_heard > t->timeout_ns) {
        peer_down(t, r, "silent for FLIT_PEER_TIMEOUT");
        return 0;
    }
    uint64_t ask = t->timeout_ns / 4;
    if (now - p->last_heard > ask && now - p->ping_at > ask) {
        p->ping = true;
        mark(t, p);
        p->ping_at = now;
    }
    note_deadline(&next, p->last_heard + ask > p->ping_at + ask ? p->last_heard + ask
                                                                : p->ping_at + ask);
    note_deadline(&next, p->last_heard + t->timeout_ns + 1);
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
                struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
                /* One sent after that look (the end of the pass that
                   looked: a handler's reply) waited unheard since. */
                c->first_ns += c->first_ns <= since ? gap : now - c->first_ns;
            }
        }
        p->excused = true;
        p->ping = true;
        p->ping_at = now;
        mark(t, p);
    }
}

/* We look at the clock, listening: after a long gap, forgive it. */
static void listening(struct fl_tp_ep *t, uint64_t now)
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

static void run_timers(struct fl_tp_ep *t, uint64_t now)
{
    uint64_t next = 0;
    bool judge = may_judge(t);
    listening(t, now);
    for (uint32_t i = 0; i < t->nactive; i++)
        if (!t->peers[t->active[i]].down)
            note_deadline(&next, peer_timers(t, t->active[i], now, judge));
    t->next_timer = next;
}

/* ---- sending ---- */

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
        .ts = usec32(now) | 1u, /* never 0: 0 means "nothing to echo" */
        .ts_echo = p->echo_ts,
        .echo_delay = p->echo_ts ? usec32(now - p->echo_at) : 0,
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
        struct tx_chunk *c = &tx->chunk[pl->seq[k] % CHUNK_CAP];
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
    t->out[i] = (struct fl_dgram_out){pl->dst, v, n};
}

/* After datagram i went: its chunks are in flight, its acks said. */
static void sent(struct fl_tp_ep *t, unsigned i, uint64_t now)
{
    const struct plan *pl = &t->plans[i];
    struct chan_peer *p = &t->peers[pl->dst];
    for (unsigned k = 0; k < pl->n; k++) {
        struct tx_lane *tx = &p->tx[pl->lane[k]];
        struct tx_chunk *c = &tx->chunk[pl->seq[k] % CHUNK_CAP];
        if (c->sent_ns) {
            FL_COUNT(t->counters->retransmits, 1);
            p->retransmits++;
        } else {
            c->first_ns = now;
        }
        c->sent_ns = now;
        c->xmit = p->xmit++;
        c->rexmit = false;
        if (pl->seq[k] == tx->unsent)
            tx->unsent++;
    }
    p->ack_now = pl->ack_short; /* the whole acknowledgement goes next */
    p->ping = false;
    p->ack_due = 0;
    p->rx[0].unacked = p->rx[1].unacked = 0;
    FL_COUNT(t->counters->datagrams_sent, 1);
    note_deadline(&t->next_timer, now + rto_now(p, now));
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
                struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
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
    return pl->n > 0 || p->ack_now || p->ping;
}

/* Whether peer r still has anything to send after its last plan. */
static bool more_for(const struct chan_peer *p)
{
    for (unsigned l = 0; l < FL_LANES; l++) {
        const struct tx_lane *tx = &p->tx[l];
        if (tx->unsent != tx->next)
            return true;
        for (uint32_t s = tx->acked; s != tx->unsent; s++)
            if (tx->chunk[s % CHUNK_CAP].rexmit)
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
static bool send_planned(struct fl_tp_ep *t, unsigned n)
{
    int k = t->ops->send(t->d, t->out, (int)n);
    if (k >= (int)n)
        return true;
    /* The socket is full: what did not go is still due. */
    for (unsigned i = k < 0 ? 0 : (unsigned)k; i < n; i++) {
        struct plan *pl = &t->plans[i];
        struct chan_peer *p = &t->peers[pl->dst];
        for (unsigned c = 0; c < pl->n; c++)
            p->tx[pl->lane[c]].chunk[pl->seq[c] % CHUNK_CAP].rexmit = true;
        p->ack_now = true;
        mark(t, p);
    }
    if (k < 0 && k != -EAGAIN)
        fl_error("%s: sending: %s", t->ops->name, strerror(-k));
    return false;
}

/* Sends what peer r has due. */
static void flush_peer(struct fl_tp_ep *t, uint32_t r)
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
static void flush(struct fl_tp_ep *t)
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
    if ((tx->next - tx->acked) + chunks > CHUNK_CAP)
        return NULL;
    uint64_t pos;
    for (;;) {
        pos = (tx->tail + 7) & ~(uint64_t)7;
        if (pos % tx->size + len > tx->size)
            pos += tx->size - pos % tx->size; /* packets never wrap */
        if (pos + len - tx->head <= tx->size)
            break;
        if (!grow(p, tx))
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
        struct tx_chunk *c = &tx->chunk[tx->next++ % CHUNK_CAP];
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
    mark(t, p);
    if (!(flags & FL_COMMIT_MORE))
        flush_peer(t, dst);
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
        struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
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

/* ---- acknowledgements ---- */

static void rtt_sample(struct chan_peer *p, uint64_t sample)
{
    if (p->srtt == 0) {
        p->srtt = sample;
        p->rttvar = sample / 2;
    } else {
        uint64_t err = p->srtt > sample ? p->srtt - sample : sample - p->srtt;
        p->rttvar = (3 * p->rttvar + err) / 4;
        p->srtt = (7 * p->srtt + sample) / 8;
    }
    uint64_t min = (uint64_t)fl_cfg.rto_min_us * 1000u;
    p->rto = p->srtt + 4 * p->rttvar;
    if (p->rto < min)
        p->rto = min;
}

/* What an acknowledgement told of a lane: the newest transmission it
   acknowledged; whether it acknowledged the chunk a timeout sent again
   (rto_seq), and chunks sent only once, before a resend that waits for a
   verdict (a timeout's or a tail probe's), which the peer got: that resend
   was needless. */
struct news {
    bool set;
    uint32_t xmit;
    bool rto_seq, needless;
    uint64_t probe_at; /* a tail probe went then, in this stall; 0: none */
};

/*
 * Chunk s (c) is newly known held. Its transmission is the newest told of
 * if none later was; a chunk that was sent again and is acknowledged
 * sooner than half a round trip after may be acknowledged for its first
 * sending, and tells nothing.
 */
static void acked_now(const struct chan_peer *p, const struct tx_lane *tx, uint32_t s,
                      const struct tx_chunk *c, struct news *r, uint64_t now)
{
    bool once = c->sent_ns == c->first_ns;
    if (tx->rto_wait && s == tx->rto_seq)
        r->rto_seq = true;
    if (once && ((tx->rto_wait && fl_seq_before(s, tx->rto_high)) ||
                 (r->probe_at && c->first_ns < r->probe_at)))
        r->needless = true;
    if (!once && now - c->sent_ns < p->srtt / 2)
        return;
    if (!r->set || fl_seq_before(r->xmit, c->xmit)) {
        r->set = true;
        r->xmit = c->xmit;
    }
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
static void learn_late(struct chan_peer *p, uint64_t late, uint64_t now)
{
    if (lossy(p, now))
        return;
    uint64_t cur = late_floor(p, now);
    if (late > RTO_MAX_NS)
        late = RTO_MAX_NS;
    p->late_ns = late > cur ? late : cur;
    p->late_at = now;
}

/*
 * The verdict on a timeout's resend of rto_seq alone (F-RTO, RFC 5682, by
 * sequence numbers): chunks sent once before it and acknowledged now were
 * got, so the peer was slow and the path loses nothing: the rest is not
 * sent again. rto_seq acknowledged with nothing sent before it: they were
 * lost with it, and all go again. Else the verdict waits (for the answer,
 * or for rto_seq's own timeout: lane_timers).
 */
static void rto_verdict(struct fl_tp_ep *t, struct chan_peer *p, struct tx_lane *tx,
                        const struct news *r, uint64_t now)
{
    if (r->needless || !fl_seq_before(tx->acked, tx->rto_high)) {
        tx->rto_wait = false;
        return;
    }
    if (r->rto_seq)
        rto_lost(t, p, tx, now);
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
        struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
        if (c->sacked || c->rexmit || !fl_seq_before(c->xmit, tx->rack_xmit))
            continue;
        c->rexmit = true;
        p->loss_at = now;
        mark(t, p);
    }
}

static void take_ack(struct fl_tp_ep *t, struct chan_peer *p, unsigned lane,
                     const struct fl_chan_ack *a, uint64_t now)
{
    struct tx_lane *tx = &p->tx[lane];
    struct news rack = {.probe_at = p->probes ? p->probe_at : 0};
    /* Never beyond what we sent: that would be a forged or broken ack. */
    if (fl_seq_before(tx->unsent, a->next))
        return;
    if (fl_seq_before(tx->acked, a->next)) {
        p->progress_ns = now;
        p->probes = 0;
        for (uint32_t s = tx->acked; s != a->next; s++)
            if (!tx->chunk[s % CHUNK_CAP].sacked)
                acked_now(p, tx, s, &tx->chunk[s % CHUNK_CAP], &rack, now);
        tx->acked = a->next;
        tx->head =
            tx->acked == tx->next ? tx->tail : tx->chunk[tx->acked % CHUNK_CAP].pkt_pos;
        p->backoff = 0;
    }
    uint32_t high = a->next; /* past the highest chunk selectively acked */
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
            struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
            if (!c->sacked)
                acked_now(p, tx, s, c, &rack, now);
            c->sacked = true;
            c->rexmit = false; /* held: it need not go again */
            high = s + 1;
        }
    }
    if (rack.set && (!tx->rack_set || fl_seq_before(tx->rack_xmit, rack.xmit))) {
        tx->rack_set = true;
        tx->rack_xmit = rack.xmit;
        p->probes = 0; /* news: a stall after this may be probed again */
    }
    if (rack.needless)
        learn_late(p, p->quiet_ns, now);
    if (tx->rto_wait)
        rto_verdict(t, p, tx, &rack, now);
    if (tx->rack_set && tx->acked != tx->unsent)
        detect_losses(t, p, tx, high, now);
}

/* ---- receiving ---- */

static void schedule_ack(struct fl_tp_ep *t, struct chan_peer *p, struct rx_lane *rx,
                         uint64_t now)
{
    if (rx->unacked >= p->window / 4) {
        p->ack_now = true; /* do not let the sender stall */
        mark(t, p);
    } else if (!p->ack_due) {
        p->ack_due = now + (uint64_t)fl_cfg.ack_delay_us * 1000u;
        note_deadline(&t->next_timer, p->ack_due);
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
static bool asm_ready(struct fl_tp_ep *t, struct rx_lane *rx, uint8_t flags)
{
    if ((flags & (FL_CHAN_FIRST | FL_CHAN_LAST)) == (FL_CHAN_FIRST | FL_CHAN_LAST) ||
        rx->asm_buf)
        return true;
    return (rx->asm_buf = malloc(t->max_packet)) != NULL;
}

/* Whether we hold a copy of chunk seq (the reorder buffer exists once a
   chunk was held). */
static bool held_at(const struct rx_lane *rx, uint32_t seq)
{
    return rx->held && rx->ooo[seq % CHUNK_CAP].data;
}

/* Keeps a copy of c until its turn comes (or drops it, out of memory: it
   comes again). The lane's reorder buffer is allocated by its first use. */
static void hold_chunk(struct rx_lane *rx, const struct fl_chan_chunk *c)
{
    if (!rx->ooo && !(rx->ooo = calloc(CHUNK_CAP, sizeof *rx->ooo)))
        return;
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
        if (*n >= t->budget || !asm_ready(t, rx, o->flags)) {
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
static void release_all(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb,
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

static void take_chunk(struct fl_tp_ep *t, uint32_t src, const struct fl_chan_chunk *c,
                       unsigned lane_mask, fl_tp_recv_fn cb, void *ctx, int *n,
                       uint64_t now)
{
    struct chan_peer *p = &t->peers[src];
    struct rx_lane *rx = &p->rx[c->lane];
    if (!(lane_mask & FL_LANE_MASK(c->lane)))
        return; /* not now (inside a handler): it will come again */
    int32_t ahead = (int32_t)(c->seq - rx->next);
    if (ahead < 0) {
        FL_COUNT(t->counters->duplicates, 1);
        p->ack_now = true; /* its sender missed our ack */
        mark(t, p);
        return;
    }
    if ((uint32_t)ahead >= CHUNK_CAP) {
        FL_COUNT(t->counters->refused_packets, 1);
        return;
    }
    if (ahead == 0 && *n >= t->budget && !held_at(rx, c->seq) &&
        rx->held_bytes + c->len <= t->window) {
        /* Its turn, but the poll's budget is spent (flit_extract): it waits
           with the chunks that came ahead of theirs. */
        hold_chunk(rx, c);
        if (!rx->release) {
            rx->release = true;
            t->nrelease++;
        }
        return;
    }
    if (ahead > 0) {
        if (held_at(rx, c->seq)) {
            FL_COUNT(t->counters->duplicates, 1);
        } else if (rx->held_bytes + c->len <= t->window) {
            hold_chunk(rx, c); /* or dropped, out of memory: it comes again */
        }
        p->ack_now = true; /* the selective ack shows the hole */
        mark(t, p);
        return;
    }
    if (held_at(rx, c->seq)) {
        /* We hold it already: a budget left it waiting (rx->release). */
        FL_COUNT(t->counters->duplicates, 1);
    } else if (!asm_ready(t, rx, c->flags)) {
        return; /* no memory to reassemble: it comes again */
    } else {
        deliver(t, src, c->lane, c->flags, c->data, c->len, cb, ctx, n);
    }
    release_ooo(t, src, c->lane, cb, ctx, n);
    schedule_ack(t, p, rx, now);
}

/* Who sent it, and is it ours? Then its acks, then its chunks. */
static void take_dgram(struct fl_tp_ep *t, uint32_t src, uint8_t *buf, size_t len,
                       unsigned lane_mask, fl_tp_recv_fn cb, void *ctx, int *n)
{
    struct fl_chan_hdr h;
    struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    if (src == FL_DGRAM_STRANGER || fl_chan_decode(buf, len, &h, chunks) != FLIT_OK ||
        h.key != t->key || h.src != src || h.dst != t->rank) {
        FL_COUNT(t->counters->refused_packets, 1);
        return;
    }
    struct chan_peer *p = &t->peers[src];
    if (!p->connected || p->down)
        return;
    uint64_t now = fl_now_ns();
    listening(t, now);
    if (!p->active)
        activate(t, src, now);
    FL_COUNT(t->counters->datagrams_received, 1);
    p->quiet_ns = now - p->last_heard;
    p->last_heard = now;
    p->excused = false;
    if (h.ts_echo) {
        uint32_t us = usec32(now) - h.ts_echo - h.echo_delay;
        if (us < 10000000u)
            rtt_sample(p, (uint64_t)us * 1000u + 1000u); /* + clock granularity */
    }
    p->echo_ts = h.ts;
    p->echo_at = now;
    for (unsigned l = 0; l < FL_LANES; l++)
        take_ack(t, p, l, &h.ack[l], now);
    if (h.kind == FL_CHAN_PING) {
        p->ack_now = true;
        mark(t, p);
    }
    for (unsigned i = 0; i < h.nchunks && !p->down; i++)
        take_chunk(t, src, &chunks[i], lane_mask, cb, ctx, n, now);
}

int fl_chan_poll(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb, void *ctx,
                 int budget)
{
    int n = 0;
    int outer_budget = t->budget;
    t->budget = budget;
    if (t->nrelease)
        release_all(t, lane_mask, cb, ctx, &n);
    /* Even with the budget spent: what it cannot deliver now waits in our
       buffers, selectively acknowledged (not sent again) but not
       cumulatively (the sender's window stays taken: it is held back). */
    if (t->depth < MAX_DEPTH) {
        struct fl_dgram_in *in;
        int got = t->ops->recv(t->d, t->depth, &in);
        t->depth++;
        for (int i = 0; i < got; i++)
            take_dgram(t, in[i].src, in[i].buf, in[i].len, lane_mask, cb, ctx, &n);
        t->depth--;
        if (got > 0)
            t->idle_polls = CLOCK_EVERY; /* traffic: look at the timers now */
        t->backlog = got == FL_DGRAM_BATCH ? t->backlog + 1 : 0;
    }
    t->budget = outer_budget;
    /* Timers need the clock; a busy poll loop need not read it every pass.
       After the receive: what came in says what was not lost. */
    if (t->next_timer && (t->check_timers || ++t->idle_polls >= CLOCK_EVERY)) {
        uint64_t now = fl_now_ns();
        t->idle_polls = 0;
        t->check_timers = false;
        if (now >= t->next_timer)
            run_timers(t, now);
        else
            listening(t, now);
    }
    if (t->nsendq)
        flush(t);
    return n;
}

/* ---- sleeping ---- */

bool fl_chan_arm(struct fl_tp_ep *t, unsigned lane_mask)
{
    (void)lane_mask;
    flush(t); /* nothing held back while we sleep */
    uint64_t now = fl_now_ns();
    run_timers(t, now);
    /* The timerfd keeps its deadline between sleeps: set it only when that
       changed, or when it has passed (setting it also clears a firing). A
       deadline left in it while we are awake fires at worst once more, and
       a wake-up finds nothing to do. */
    if (t->next_timer != t->timer_set || (t->timer_set && t->timer_set <= now)) {
        struct itimerspec its = {0};
        if (t->next_timer) {
            its.it_value.tv_sec = (time_t)(t->next_timer / 1000000000u);
            its.it_value.tv_nsec = (long)(t->next_timer % 1000000000u);
        }
        timerfd_settime(t->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
        t->timer_set = t->next_timer;
    }
    if (t->nrelease != 0)
        return true;
    /* A datagram that came in since the last poll is work now: say so,
       rather than let the caller sleep on a descriptor readable already. */
    struct pollfd pfd = {.fd = t->ops->fd(t->d), .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

void fl_chan_disarm(struct fl_tp_ep *t)
{
    t->check_timers = true; /* whatever woke us, a deadline may be due */
}

int fl_chan_fd(struct fl_tp_ep *t)
{
    return t->epfd;
}

void fl_chan_want_room(struct fl_tp_ep *t, uint32_t dst, unsigned lane)
{
    (void)t, (void)dst, (void)lane; /* room comes with acks: they wake us */
}

void fl_chan_check_peers(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx)
{
    (void)cb, (void)ctx;
    run_timers(t, fl_now_ns());
    flush(t);
}

/* ---- a dead peer: what it never acknowledged comes back ---- */

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
            const struct tx_chunk *c = &tx->chunk[s % CHUNK_CAP];
            cb(ctx, dst, l, tx->buf + c->pkt_pos % tx->size, c->pkt_len);
            do
                s++;
            while (s != tx->next && tx->chunk[s % CHUNK_CAP].pkt_pos == c->pkt_pos);
        }
        tx->acked = tx->unsent = tx->next;
        tx->head = tx->tail;
        tx->rto_wait = false;
    }
}

bool fl_chan_settled(struct fl_tp_ep *t)
{
    for (uint32_t i = 0; i < t->nactive; i++) {
        struct chan_peer *p = &t->peers[t->active[i]];
        if (p->down)
            continue;
        if (p->ack_due || p->rx[0].unacked || p->rx[1].unacked) {
            p->ack_now = true; /* say it now, not after a delay */
            mark(t, p);
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

void fl_chan_peer_address(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    t->ops->address_of(t->d, peer, buf, len);
}

size_t fl_chan_peer_datagram(struct fl_tp_ep *t, uint32_t peer)
{
    return t->ops->max_payload(t->d, peer);
}

size_t fl_chan_peer_packet_fit(struct fl_tp_ep *t, uint32_t peer)
{
    return chunk_fit(t, peer) == FLIT_OK ? t->peers[peer].chunk_max : 0;
}

void fl_chan_dump_peer(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    struct chan_peer *p = &t->peers[peer];
    char who[64];
    t->ops->describe(t->d, peer, who, sizeof who);
    if (!p->active) {
        snprintf(buf, len, "%s; no traffic yet, no state", who);
        return;
    }
    snprintf(buf, len,
             "%s, rtt %.1f us, rto %.1f ms; in flight req %llu B, rep %llu B "
             "of a %llu B window; retransmits %llu; receiving req #%u, rep #%u",
             who, p->srtt / 1e3, rto_now(p, fl_now_ns()) / 1e6,
             (unsigned long long)(p->tx[0].tail - p->tx[0].head),
             (unsigned long long)(p->tx[1].tail - p->tx[1].head),
             (unsigned long long)p->window, (unsigned long long)p->retransmits,
             p->rx[0].next, p->rx[1].next);
}

void fl_chan_close(struct fl_tp_ep *t)
{
    if (t->peers) {
        for (uint32_t i = 0; i < t->nactive; i++)
            peer_free(&t->peers[t->active[i]]);
        free(t->peers);
    }
    free(t->active);
    free(t->sendq);
    if (t->epfd >= 0)
        close(t->epfd);
    if (t->timerfd >= 0)
        close(t->timerfd);
    if (t->d)
        t->ops->close(t->d);
    free(t);
}
