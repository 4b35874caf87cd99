/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The state of one libfabric endpoint (ofi.h), shared by its set-up
 * (ofi.c) and its data path (io.c).
 *
 * Every datagram carries an 8-byte head: the job's tag and the sender's
 * rank, so that a receiver knows who sent it without FI_SOURCE (which not
 * every provider offers) and without the sender in its address vector
 * yet. Receive buffers are posted one per datagram, each 64-byte aligned,
 * so that what the channel reads is aligned as dgram.h promises; a buffer
 * handed up in a slot is posted again when that slot is next used.
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

struct ofi_peer {
    uint8_t name[OFI_NAME_MAX]; /* fi_getname's blob, from its address */
    size_t namelen;
    fi_addr_t addr;         /* FI_ADDR_NOTAVAIL until first contact */
    _Atomic bool contacted; /* addr set: dumps read it outside the lock */
    unsigned inflight;      /* sends not yet completed */
    uint64_t refused_since; /* the first of refusals (-FI_EAGAIN) in a row */
    unsigned refusals;      /* sends refused in a row; 0: the last went */
    bool dropping;          /* refused for long: said, its datagrams dropped */
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
    struct fid_mr *rx_mr, *tx_mr; /* FI_MR_LOCAL only */
    void *rx_desc, *tx_desc;
    int wait_fd;    /* the receive queue's FI_WAIT_FD, or -1 */
    int epfd;       /* what ->fd returns: wait_fd and kick */
    int kick;       /* eventfd (timerfd polling without a wait fd) */
    bool polling;   /* no wait fd: kick is a 1 ms timer */
    size_t payload; /* largest datagram payload */
    size_t buf_size;
    uint8_t name[OFI_NAME_MAX]; /* ours */
    size_t namelen;
    struct ofi_peer *peers;
    uint8_t *rx_mem, *tx_mem;
    struct ofi_buf rx[OFI_RX_BUFS];
    struct ofi_buf tx[OFI_TX_BUFS];
    struct ofi_buf *tx_free;
    unsigned tx_busy;
    struct ofi_buf *held[FL_DGRAM_SLOTS][FL_DGRAM_BATCH]; /* handed up */
    unsigned nheld[FL_DGRAM_SLOTS];
    struct fl_dgram_in in[FL_DGRAM_SLOTS][FL_DGRAM_BATCH];
    bool said_tx, said_rx; /* an error completion was logged */
};

/* io.c: posts a receive buffer; false (logged) when the provider refused. */
bool fl_ofi_post(struct fl_dgram *d, struct ofi_buf *b);
/* io.c: a provider error, logged naming the provider and fi_strerror. */
flit_status fl_ofi_fail(const struct fl_dgram *d, const char *what, int ret);

int fl_ofi_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n);
int fl_ofi_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in);
int fl_ofi_fd(struct fl_dgram *d);

#endif /* FL_TRANSPORT_OFI_EP_H */
