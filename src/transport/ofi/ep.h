/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The state of one libfabric endpoint (ofi.h), shared by its set-up
 * (ofi.c) and its data path (io.c).
 *
 * Every datagram carries an 8-byte head: the job's tag and the sender's
 * rank, so that a receiver knows who sent it without FI_SOURCE (which not
 * every provider offers) and without the sender in its address vector
 * yet. Where the provider offers FI_MULTI_RECV and FLIT_OFI_MULTI_RECV=1
 * asks for it, a few large receive buffers are posted, each taking datagrams
 * packed one after another until less than one datagram's room is left,
 * when the provider releases it; it is posted again once every datagram
 * read from it was given back. Otherwise buffers are posted one per
 * datagram. Either way what the channel reads is 8-byte aligned, as
 * dgram.h promises: a sender pads its datagram to a multiple of 8 (the
 * head says by how much), and one a provider placed unaligned is copied.
 * A datagram handed up in a slot is given back when that slot is next
 * used.
 * Sends are copied into a send buffer of a pool, given back when the send
 * completes (io.c says why never fi_inject).
 */
#ifndef FL_TRANSPORT_OFI_EP_H
#define FL_TRANSPORT_OFI_EP_H

#include "transport/dgram.h"
#include "transport/ofi/api.h"

#define OFI_HEAD      8u
#define OFI_BUF_ALIGN 64u
#define OFI_RX_POSTED 32 /* buffers posted while every slot holds a batch */
#define OFI_RX_BUFS   (OFI_RX_POSTED + FL_DGRAM_SLOTS * FL_DGRAM_BATCH)
#define OFI_TX_BUFS   256
#define OFI_TX_PEER   32 /* sends in flight to one peer, at most */
#define OFI_NAME_MAX  256u
#define OFI_HOLD_NS   10000000u /* a peer's refused sends held back, then dropped */
#define OFI_HOLD_TRY  32u       /* ... and refused this many times in a row */

/* A posted buffer: context first (FI_CONTEXT, FI_CONTEXT2), so that a
   completion's op_context finds it. */
struct ofi_buf {
    struct fi_context2 ctx;
    uint8_t *mem;
    uint32_t dst;         /* sends: the rank, for an error's log line */
    struct ofi_buf *next; /* free sends */
};

/* The head's second word: the sender's rank, and in its top bits the bytes
   of padding after the datagram. */
#define OFI_PAD_SHIFT 29
#define OFI_RANK_MASK ((1u << OFI_PAD_SHIFT) - 1)

/* A buffer posted with FI_MULTI_RECV: context first, as a posted
   buffer's. */
#define OFI_MULTI_BUFS   4
#define OFI_MULTI_DGRAMS 32 /* full datagrams one takes, at least */
#define OFI_MIN_DGRAM    16 /* the smallest datagram, its head and padding included */
struct ofi_multi {
    struct fi_context2 ctx;
    uint8_t *mem;
    unsigned reading; /* datagrams read from it and not given back */
    bool released;    /* the provider is done with it: post it again */
};

/* A one-sided operation posted (rma.c): context first, as a send buffer's.
   Busy from its post until its completion is read, even when the caller
   stopped waiting for it (the provider owns the context until then). An
   early put's completion is waited for by nobody: it is counted off its
   peer's (settle). */
#define OFI_RMA_SLOTS  256
#define OFI_EARLY_PEER 64 /* early puts in flight to one peer, at most */
struct ofi_rma {
    struct fi_context2 ctx;
    bool busy, done;
    bool early;    /* a put that returned at once (FI_INJECT, or bounced) */
    uint32_t rank; /* the peer, for an early put */
    int bounce;    /* the bounce buffer it holds until it completes; -1 */
    int err;       /* an error completion's FI_* code; 0 */
};

/* Bounce buffers (rma.c): puts and gets of FLIT_OFI_BOUNCE_KB or less are
   copied through one, registered once, where the program's memory would
   have to be registered for the operation (FI_MR_LOCAL), and an early put
   larger than the inject size keeps its bytes in one until it completes. */
#define OFI_BOUNCE_BUFS 64

/* Memory exposed to the peers (rma.c): a registration, its key, and the
   bytes it covers (with FI_MR_LOCAL also registered for the endpoint's
   own side of a put or get: kept for those until the region goes). */
struct ofi_mr {
    uint64_t key;
    struct fid_mr *mr;
    uintptr_t lo, hi;
};

struct ofi_peer {
    uint8_t name[OFI_NAME_MAX]; /* fi_getname's blob, from its address */
    size_t namelen;
    fi_addr_t addr;         /* FI_ADDR_NOTAVAIL until first contact */
    _Atomic bool contacted; /* addr set: dumps read it outside the lock */
    unsigned inflight;      /* sends not yet completed */
    uint64_t refused_since; /* the first of refusals (-FI_EAGAIN) in a row */
    unsigned refusals;      /* sends refused in a row; 0: the last went */
    bool dropping;          /* refused for long: said, its datagrams dropped */
    unsigned early;         /* early puts to it not yet completed (rma.c) */
    int early_err;          /* the first of them that failed since the last
                               settle: its FI_* code; 0 */
};

struct fl_dgram {
    uint32_t rank, size;
    uint32_t job_tag;
    struct fl_tp_counters *counters;
    char prov[64]; /* the provider's name, for log lines */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_cq *rxcq, *txcq;
    bool mr_local;                /* FI_MR_LOCAL, or FLIT_OFI_MR_LOCAL=1 */
    struct fid_mr *rx_mr, *tx_mr; /* mr_local only */
    void *rx_desc, *tx_desc;
    int wait_fd;    /* the receive queue's FI_WAIT_FD, or -1 */
    int epfd;       /* what ->fd returns: wait_fd and kick */
    int kick;       /* eventfd (timerfd polling without a wait fd) */
    bool kicked;    /* the eventfd was written: drained at the next receive */
    bool polling;   /* no wait fd: kick is a 1 ms timer */
    size_t payload; /* largest datagram payload */
    size_t buf_size;
    uint8_t name[OFI_NAME_MAX]; /* ours */
    size_t namelen;
    struct ofi_peer *peers;
    uint8_t *rx_mem, *tx_mem;
    bool multi;        /* receives by FI_MULTI_RECV (multis), else rx */
    size_t multi_size; /* bytes of one of multis */
    struct ofi_buf rx[OFI_RX_BUFS];
    struct ofi_multi multis[OFI_MULTI_BUFS];
    uint8_t *unaligned; /* copies of datagrams placed unaligned, per slot */
    struct ofi_buf tx[OFI_TX_BUFS];
    struct ofi_buf *tx_free;
    unsigned tx_busy;
    unsigned rma_busy; /* one-sided operations posted, not completed (rma.c) */
    void *held[FL_DGRAM_SLOTS][FL_DGRAM_BATCH]; /* handed up: rx or multis */
    unsigned nheld[FL_DGRAM_SLOTS];
    struct fl_dgram_in in[FL_DGRAM_SLOTS][FL_DGRAM_BATCH];
    bool said_tx, said_rx; /* an error completion was logged */
    /* One-sided operations (rma.c), where the provider has FI_RMA. */
    bool rma;
    bool said_mr;   /* a registration failed: said */
    size_t rma_max; /* the longest one fi_write / fi_read */
    size_t pull_min;   /* stream messages pulled by fi_read (FLIT_OFI_RNDV_KB) */
    size_t early_max;  /* the longest put posted with FI_INJECT; 0: none */
    bool early_bounce; /* early puts up to bounce_size through bounce buffers */
    uint64_t next_key;
    struct ofi_rma ops[OFI_RMA_SLOTS];
    struct ofi_mr *mrs; /* exposed memory, unordered */
    size_t nmrs, mrs_cap;
    size_t bounce_size;       /* a bounce buffer's bytes (FLIT_OFI_BOUNCE_KB); 0: none */
    uint8_t *bounce_mem;      /* OFI_BOUNCE_BUFS of them, at the first use */
    struct fid_mr *bounce_mr; /* mr_local only */
    void *bounce_desc;
    uint8_t bounce_free[OFI_BOUNCE_BUFS];
    unsigned nbounce_free;
    /* Receives completed while a put or get waited (fl_ofi_stash), handed
       up first by the next fl_ofi_recv. */
    struct fi_cq_data_entry stash[OFI_RX_BUFS];
    unsigned stash_head, stash_n;
};

/* ofi.c: registers [mem, mem + len) for access under key (ignored where
   the provider picks keys), bound to the endpoint and enabled where the
   provider asks (FI_MR_ENDPOINT): 0, or the provider's error. */
int fl_ofi_reg(struct fl_dgram *d, const void *mem, size_t len, uint64_t access,
               uint64_t key, struct fid_mr **mr);
/* io.c: posts a receive buffer (one of rx, or of multis where d->multi);
   false (logged) when the provider refused. */
bool fl_ofi_post(struct fl_dgram *d, void *buf);
/* io.c: a provider error, logged naming the provider and fi_strerror. */
flit_status fl_ofi_fail(const struct fl_dgram *d, const char *what, int ret);

/* The one-sided operation's slot a completion's context is; NULL: a
   buffer's. */
static inline struct ofi_rma *fl_ofi_rma_of(struct fl_dgram *d, void *ctx)
{
    uintptr_t c = (uintptr_t)ctx, lo = (uintptr_t)d->ops;
    return c >= lo && c < lo + sizeof d->ops ? (struct ofi_rma *)ctx : NULL;
}

/* io.c: rank's address vector entry, inserted at first contact. */
bool fl_ofi_av(struct fl_dgram *d, uint32_t rank, fi_addr_t *out);
/* io.c: reads the send queue's completions (sends and one-sided
   operations), which also moves a provider of manual progress on. */
void fl_ofi_reap(struct fl_dgram *d);
/* rma.c: a one-sided operation's completion, err its FI_* code or 0. */
void fl_ofi_rma_done(struct fl_dgram *d, struct ofi_rma *op, int err);
/* rma.c: the registrations left, at close. */
void fl_ofi_rma_close(struct fl_dgram *d);
extern const struct fl_dgram_rma fl_ofi_rma;

/* io.c: takes the receive queue's completions aside, to be handed up by
   the next fl_ofi_recv: while a put or get waits, what peers send keeps
   flowing (a provider over a byte stream stops reading one whose messages
   nobody takes, and a write's answer may be behind them). */
void fl_ofi_stash(struct fl_dgram *d);

int fl_ofi_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n);
int fl_ofi_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in);
int fl_ofi_fd(struct fl_dgram *d);

#endif /* FL_TRANSPORT_OFI_EP_H */
