/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliability channel's state, shared by its files: per peer and lane
 * the send window (tx_lane, its chunks tx_chunk), the receive side (rx_lane,
 * chunks held ahead of their turn rx_chunk), the peer's clocks (chan_peer),
 * and the endpoint (struct fl_tp_ep) with what a batch of datagrams needs.
 * channel.h says what the channel guarantees, wire.h what goes on the wire.
 *
 * The files, one concept each:
 *   window.c  the send window and the retransmission buffer (reserve,
 *             commit, lent packets, reclaim)
 *   send.c    datagrams built from what is due and sent in batches
 *   ack.c     acknowledgements taken: cumulative and selective, losses
 *             they show (RACK), a timeout's verdict (F-RTO)
 *   rto.c     the round-trip estimate, the retransmission timer, tail
 *             probes
 *   recv.c    datagrams taken: in-order delivery, reordering, reassembly,
 *             delayed acknowledgements
 *   peer.c    peers' liveness: activation, keep-alives, give-up, the
 *             timers' pass over the peers
 *   path.c    several paths to a peer (rails): spreading, a silent path
 *             taken down and its chunks sent by the others, probes
 *   idle.c    quiet peers' buffers given back; the bytes held, counted
 *   channel.c the transport's glue: open, connect, poll, sleep, close
 *
 * Peers on demand: ->connect only notes a peer's address and window. The
 * peer becomes active (its clocks start, the timers and keep-alives watch
 * it) on the first send to it or the first datagram from it; each lane's
 * send buffer is allocated by its first ->reserve, its reorder buffer by
 * the first chunk that comes ahead of its turn, its reassembly buffer by
 * the first packet in several chunks. A peer never contacted costs its
 * struct chan_peer and a slot in two arrays of ranks (docs/udp-scale.md).
 * A peer quiet for a while gives all those buffers back (idle.c): they
 * are allocated again, small, by the next need.
 */
#ifndef FL_CHANNEL_STATE_H
#define FL_CHANNEL_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "channel/wire.h"
#include "transport/dgram.h"
#include "transport/transport.h"

#define CHUNK_CAP FL_CHAN_SEQ_WINDOW /* sequence numbers in flight per lane */
/* A lane's window holds at least two of the largest packets. */
#define MIN_WINDOW(t)  (2u * (uint64_t)(t)->max_packet)
#define DGRAM_CHUNKS   64u /* chunks in one datagram we build */
#define TX_BATCH       16u /* datagrams per sendmmsg */
#define RTO_INITIAL_NS 50000000ull

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
    bool went;   /* a datagram with it was taken by the transport */
    uint8_t path; /* the path its last transmission took (path.c) */
};

struct tx_lane {
    uint8_t *buf;
    uint64_t size;          /* the window */
    uint64_t head, tail;    /* [head, tail): packets not yet acknowledged */
    uint64_t reserved;      /* the open reservation */
    struct tx_chunk *chunk; /* [ncap], by sequence number: fl_tx_chunk */
    uint32_t ncap;          /* a power of two, doubling up to CHUNK_CAP */
    uint32_t acked;         /* first sequence number not acknowledged */
    /* the newest transmission the peer acknowledged (detect_losses) */
    bool rack_set;
    uint32_t rack_xmit;
    /* With several paths, the same per path (the datagrams of two paths
       overtake each other): rack_path[k], set when bit k of rack_paths is. */
    uint8_t rack_paths;
    uint32_t rack_path[FL_DGRAM_PATHS];
    uint32_t unsent; /* first never sent */
    uint32_t next;   /* next to give */
    uint32_t nlent;  /* chunks lent since the lane was last settled */
    /* A retransmission timeout sent only the oldest chunk, rto_seq, again
       (first at rto_ts, our clock in microseconds as datagrams carry it);
       the others sent before it, up to rto_high, wait for what its
       acknowledgement says (rto_verdict). */
    bool rto_wait;
    uint32_t rto_seq, rto_high, rto_ts;
};

/* The chunk of sequence number seq, one of [acked, next). */
static inline struct tx_chunk *fl_tx_chunk(const struct tx_lane *tx, uint32_t seq)
{
    return &tx->chunk[seq & (tx->ncap - 1)];
}

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

/* One of several paths to a peer (path.c). */
struct chan_path {
    uint64_t heard_ns; /* a datagram came by it */
    uint64_t asked_ns; /* the first sending by it since it was last heard; 0 */
    uint64_t probe_at; /* a probe went by it */
    bool down;         /* silent while another path was heard: not used */
    bool probe;        /* a probe is due by it */
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
    uint64_t quiet_ns; /* the silence its latest datagram ended */
    uint64_t loss_at;  /* a loss to it was last seen (RACK, a timeout's verdict) */
    bool excused;      /* a gap in our listening was forgiven; not heard since */
    bool idle;         /* quiet: gave its buffers back, allocated none since (idle.c) */
    size_t chunk_max;  /* payload bytes of a chunk to this peer */
    uint64_t window;   /* what it lets us have in flight, per lane */
    uint64_t retransmits;
    /* Several paths to it (the transport's ->paths > 1), else NULL and
       path 0 alone; reply_path: 1 + the path a probe came by, to answer by. */
    struct chan_path *path;
    uint8_t npaths, next_path, reply_path;
    struct tx_lane tx[FL_LANES];
    struct rx_lane rx[FL_LANES];
};

/* One datagram to build: which chunks go in it. */
struct plan {
    uint32_t dst;
    unsigned path;
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
    struct fl_tp_counters *counters;        /* the transports' share of ... */
    struct fl_chan_counters *chan_counters; /* ... the channel's: the same block */
    fl_tp_down_fn peer_down; /* the endpoint's, with up_ctx */
    void *up_ctx;
    uint32_t rank, size;
    uint64_t key;
    size_t max_packet; /* the largest the endpoint sends (open args) */
    uint64_t window;   /* what we let each peer have in flight to us */
    uint64_t timeout_ns;
    /* The round trips to every peer, smoothed together (rto.c): a new
       peer's first timeout. */
    uint64_t srtt_all, rttvar_all;
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
    bool trim_due;        /* quiet peers gave buffers back (idle.c) ... */
    uint64_t trimmed_ns;  /* ... the allocator last gave memory back */
    /* what sending a batch needs, reused */
    struct plan plans[TX_BATCH];
    struct fl_dgram_out out[TX_BATCH];
    struct iovec iov[TX_BATCH][1 + 4 * DGRAM_CHUNKS];
    uint8_t hdr[TX_BATCH][FL_CHAN_MAX_HDR];
    uint8_t chdr[TX_BATCH][DGRAM_CHUNKS][FL_CHAN_CHUNK_HDR];
};

inline uint32_t fl_chan_usec32(uint64_t ns)
{
    return (uint32_t)(ns / 1000u);
}

static inline void fl_chan_note_deadline(uint64_t *next, uint64_t when)
{
    if (when && (*next == 0 || when < *next))
        *next = when;
}

/* Peer p has something to send: the end of the poll pass will send it. */
static inline void fl_chan_mark(struct fl_tp_ep *t, struct chan_peer *p)
{
    p->dirty = true;
    if (!p->queued) {
        p->queued = true;
        t->sendq[t->nsendq++] = (uint32_t)(p - t->peers);
    }
}

#endif /* FL_CHANNEL_STATE_H */
