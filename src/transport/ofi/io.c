/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path of a libfabric endpoint (ep.h): datagrams out by fi_send,
 * in from multi-receive buffers or buffers posted one per datagram,
 * completions read without blocking, and the descriptor a sleeper waits
 * on.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "platform/le.h"
#include "platform/os.h"
#include "transport/ofi/ep.h"
#include "util/log.h"

static ssize_t post_once(struct fl_dgram *d, void *buf)
{
    if (!d->multi) {
        struct ofi_buf *b = buf;
        return fi_recv(d->ep, b->mem, d->buf_size, d->rx_desc, FI_ADDR_UNSPEC, &b->ctx);
    }
    struct ofi_multi *m = buf;
    struct iovec iov = {.iov_base = m->mem, .iov_len = d->multi_size};
    struct fi_msg msg = {.msg_iov = &iov,
                         .desc = &d->rx_desc,
                         .iov_count = 1,
                         .addr = FI_ADDR_UNSPEC,
                         .context = &m->ctx};
    m->released = false;
    return fi_recvmsg(d->ep, &msg, FI_MULTI_RECV);
}

bool fl_ofi_post(struct fl_dgram *d, void *buf)
{
    ssize_t ret;
    int tries = 0;
    /* No room in the provider's queue now: progress it (a read of no
       entries takes none) and ask again, a bounded number of times. */
    while ((ret = post_once(d, buf)) == -FI_EAGAIN && ++tries < 1000)
        fi_cq_read(d->txcq, NULL, 0);
    if (ret != 0)
        fl_ofi_fail(d,
                    d->multi ? "posting a receive buffer (fi_recvmsg, FI_MULTI_RECV)"
                             : "posting a receive buffer (fi_recv)",
                    (int)ret);
    return ret == 0;
}

/* Multi-receive buffer m was released, or gave back a datagram: posted
   again once both. */
static void multi_settle(struct fl_dgram *d, struct ofi_multi *m)
{
    if (m->released && m->reading == 0)
        fl_ofi_post(d, m);
}

/* An error completion, read into *e: false when there was none. Said once
   per queue unless it is a one-sided operation's (rma.c judges those): a
   dead peer fails every send to it, the channel's timeout reports it. */
static bool take_error(struct fl_dgram *d, struct fid_cq *cq, bool *said,
                       struct fi_cq_err_entry *e)
{
    if (fi_cq_readerr(cq, e, 0) != 1 || !e->op_context)
        return false;
    if (!*said && !fl_ofi_rma_of(d, e->op_context) && e->err != FI_ECANCELED) {
        *said = true;
        fl_info("ofi (%s): %s failed: %s (%s)", d->prov,
                cq == d->txcq ? "a send" : "a receive", fi_strerror(e->err),
                fi_cq_strerror(cq, e->prov_errno, e->err_data, NULL, 0));
    }
    return true;
}

static void give_back(struct fl_dgram *d, struct ofi_buf *b)
{
    d->peers[b->dst].inflight--;
    b->next = d->tx_free;
    d->tx_free = b;
    d->tx_busy--;
}

/* A completion of the send queue: a send's buffer, or a one-sided
   operation's slot (rma.c), told apart by where the context lies. */
static void completed(struct fl_dgram *d, void *ctx, int err)
{
    struct ofi_rma *op = fl_ofi_rma_of(d, ctx);
    if (op)
        fl_ofi_rma_done(d, op, err);
    else
        give_back(d, ctx);
}

void fl_ofi_reap(struct fl_dgram *d)
{
    struct fi_cq_msg_entry c[16];
    for (;;) {
        ssize_t k = fi_cq_read(d->txcq, c, 16);
        if (k == -FI_EAVAIL) {
            struct fi_cq_err_entry e = {0};
            if (!take_error(d, d->txcq, &d->said_tx, &e))
                return;
            completed(d, e.op_context, e.err ? e.err : FI_EOTHER);
            continue;
        }
        if (k <= 0)
            return;
        for (ssize_t i = 0; i < k; i++)
            completed(d, c[i].op_context, 0);
    }
}

bool fl_ofi_av(struct fl_dgram *d, uint32_t dst, fi_addr_t *out)
{
    struct ofi_peer *p = &d->peers[dst];
    if (p->addr == FI_ADDR_NOTAVAIL) {
        int k = p->namelen ? fi_av_insert(d->av, p->name, 1, &p->addr, 0, NULL) : 0;
        if (k != 1) {
            p->addr = FI_ADDR_NOTAVAIL;
            fl_ofi_fail(d, "fi_av_insert", k < 0 ? k : -FI_EADDRNOTAVAIL);
            return false;
        }
        atomic_store_explicit(&p->contacted, true, memory_order_relaxed);
    }
    *out = p->addr;
    return true;
}

/* A datagram's bytes, its head included, before padding. */
static size_t length(const struct fl_dgram_out *o)
{
    size_t n = OFI_HEAD;
    for (int i = 0; i < o->iovcnt; i++)
        n += o->iov[i].iov_len;
    return n;
}

/* The head, the datagram's pieces one after another, and zeros up to a
   multiple of 8 (so that the next one packed behind it in a multi-receive
   buffer is aligned), at to: the bytes to send. */
static size_t gather(const struct fl_dgram *d, uint8_t *to, const struct fl_dgram_out *o)
{
    size_t n = length(o), pad = (8 - n % 8) % 8;
    fl_put32(to, d->job_tag);
    fl_put32(to + 4, d->rank | (uint32_t)pad << OFI_PAD_SHIFT);
    n = OFI_HEAD;
    for (int i = 0; i < o->iovcnt; i++) {
        memcpy(to + n, o->iov[i].iov_base, o->iov[i].iov_len);
        n += o->iov[i].iov_len;
    }
    memset(to + n, 0, pad);
    return n + pad;
}

/*
 * The provider refused a send to rank dst for now (-FI_EAGAIN): 0, held
 * back as a full socket's is, until dst has refused OFI_HOLD_TRY tries
 * in a row over at least OFI_HOLD_NS; then 1: dst's datagrams are dropped
 * as lost until it takes one again. tcp;ofi_rxm refuses every send to a
 * peer whose connection it cannot (re)establish, a killed one's, for as
 * long as it is asked; the channel stops sending to everyone while one
 * datagram waits, so holding them starved the live peers until
 * FLIT_PEER_TIMEOUT gave them up too. Both bounds: a sender that tries
 * seldom (it was not scheduled) keeps what it sent last, as it would on
 * a full socket.
 */
static int refused(struct fl_dgram *d, uint32_t dst)
{
    struct ofi_peer *p = &d->peers[dst];
    uint64_t now = fl_now_ns();
    if (p->refusals == 0)
        p->refused_since = now;
    if (p->refusals < OFI_HOLD_TRY)
        p->refusals++;
    if (p->refusals < OFI_HOLD_TRY || now - p->refused_since < OFI_HOLD_NS)
        return 0;
    if (!p->dropping)
        fl_debug("ofi (%s): rank %u refused %u sends in %llu ms: its datagrams are "
                 "dropped as lost until it takes one",
                 d->prov, dst, p->refusals,
                 (unsigned long long)((now - p->refused_since) / 1000000));
    p->dropping = true;
    return 1;
}

/* One datagram: 1 sent (or refused for good: as if lost), 0 no room now
   (not for long to one peer: refused()).
   Always by fi_send from a send buffer of the pool, never fi_inject: a
   provider queues what it accepted (ofi_rxd behind its own window), and
   only completions tell how much waits there; with at most OFI_TX_BUFS
   sends in flight, what the channel sends again after a timeout never
   piles up behind its own first copies. A peer with OFI_TX_PEER sends in
   flight (a dead one's may never complete) gets no more: what is sent to
   it is dropped, as if lost, rather than held, for the channel stops
   sending to everyone while one datagram waits. */
static int send_one(struct fl_dgram *d, const struct fl_dgram_out *o)
{
    fi_addr_t to;
    if (!fl_ofi_av(d, o->dst, &to) || length(o) > d->buf_size)
        return 1; /* the channel's timeout takes it from here */
    if (d->peers[o->dst].inflight >= OFI_TX_PEER)
        fl_ofi_reap(d);
    if (d->peers[o->dst].inflight >= OFI_TX_PEER)
        return 1; /* dropped: the channel sends it again */
    if (!d->tx_free)
        fl_ofi_reap(d);
    struct ofi_buf *b = d->tx_free;
    if (!b)
        return 0;
    ssize_t ret = fi_send(d->ep, b->mem, gather(d, b->mem, o), d->tx_desc, to, &b->ctx);
    if (ret == -FI_EAGAIN) {
        fl_ofi_reap(d); /* progress, for the next try */
        return refused(d, o->dst);
    }
    d->peers[o->dst].refusals = 0;
    d->peers[o->dst].dropping = false;
    if (ret == 0) {
        d->tx_free = b->next;
        d->tx_busy++;
        d->peers[o->dst].inflight++;
        b->dst = o->dst;
        return 1;
    }
    static _Atomic int said;
    if (!said++)
        fl_ofi_fail(d, "sending", (int)ret);
    return 1;
}

int fl_ofi_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int i = 0;
    while (i < n && send_one(d, &v[i]))
        i++;
    return i > 0 || n == 0 ? i : -EAGAIN;
}

/* Gives back the datagrams slot handed up last time: their buffers are
   posted again (a multi-receive buffer once it holds none in use). */
static void repost(struct fl_dgram *d, unsigned slot)
{
    for (unsigned i = 0; i < d->nheld[slot]; i++) {
        if (!d->multi) {
            fl_ofi_post(d, d->held[slot][i]);
            continue;
        }
        struct ofi_multi *m = d->held[slot][i];
        m->reading--;
        multi_settle(d, m);
    }
    d->nheld[slot] = 0;
}

/* Who sent the datagram in b (len bytes): FL_DGRAM_STRANGER unless the
   head names this job and another rank and padding the datagram has. */
static uint32_t sender(const struct fl_dgram *d, const uint8_t *b, size_t len)
{
    if (len < OFI_HEAD || fl_get32(b) != d->job_tag)
        return FL_DGRAM_STRANGER;
    uint32_t w = fl_get32(b + 4), src = w & OFI_RANK_MASK;
    if (len - OFI_HEAD < w >> OFI_PAD_SHIFT)
        return FL_DGRAM_STRANGER;
    return src < d->size && src != d->rank ? src : FL_DGRAM_STRANGER;
}

static void drain_kick(struct fl_dgram *d)
{
    uint64_t v;
    if (read(d->kick, &v, sizeof v) < 0 && errno != EAGAIN)
        fl_debug("ofi: reading the wake-up descriptor: %s", strerror(errno));
}

/* Of k completions read into c from multi-receive buffers: each
   datagram's buffer counts it until it is given back, a buffer released
   is posted again once it holds none, and a completion that only says the
   release (no bytes) goes. The datagrams kept. */
static ssize_t read_multi(struct fl_dgram *d, struct fi_cq_data_entry *c, ssize_t k)
{
    ssize_t kept = 0;
    for (ssize_t i = 0; i < k; i++) {
        struct ofi_multi *m = c[i].op_context;
        if (c[i].len)
            m->reading++;
        if (c[i].flags & FI_MULTI_RECV)
            m->released = true;
        if (c[i].len)
            c[kept++] = c[i];
        else
            multi_settle(d, m);
    }
    return kept;
}

/* Reads up to max receive completions into c; an error one's buffer is
   posted again (a multi-receive one if the provider released it). */
static ssize_t read_rx(struct fl_dgram *d, struct fi_cq_data_entry *c, size_t max)
{
    ssize_t k = fi_cq_read(d->rxcq, c, max);
    if (k == -FI_EAVAIL) {
        struct fi_cq_err_entry e = {0};
        /* truncated (a stranger's), or cancelled at close */
        if (take_error(d, d->rxcq, &d->said_rx, &e) && !d->multi) {
            fl_ofi_post(d, e.op_context);
        } else if (e.op_context && (e.flags & FI_MULTI_RECV)) {
            struct ofi_multi *m = e.op_context;
            m->released = true;
            multi_settle(d, m);
        }
    }
    return d->multi && k > 0 ? read_multi(d, c, k) : k;
}

void fl_ofi_stash(struct fl_dgram *d)
{
    while (d->stash_n < OFI_RX_BUFS) {
        unsigned at = (d->stash_head + d->stash_n) % OFI_RX_BUFS;
        size_t room = at < d->stash_head ? d->stash_head - at : OFI_RX_BUFS - at;
        ssize_t k = read_rx(d, &d->stash[at], room);
        if (k <= 0)
            return;
        d->stash_n += (unsigned)k;
    }
}

/* Up to max completions: the stashed ones first, then the queue's. */
static ssize_t take_rx(struct fl_dgram *d, struct fi_cq_data_entry *c, size_t max)
{
    if (!d->stash_n)
        return read_rx(d, c, max);
    size_t n = 0;
    for (; n < max && d->stash_n; n++, d->stash_n--) {
        c[n] = d->stash[d->stash_head];
        d->stash_head = (d->stash_head + 1) % OFI_RX_BUFS;
    }
    return (ssize_t)n;
}

/* A datagram the provider placed at an address not 8-byte aligned (senders
   pad theirs, so one packed behind another is aligned where the provider
   packs them back to back): copied to the i-th place of slot's, NULL when
   there is no memory for those. */
static uint8_t *aligned_copy(struct fl_dgram *d, unsigned slot, unsigned i,
                             const struct fl_dgram_in *x)
{
    if (!d->unaligned &&
        !(d->unaligned = aligned_alloc(OFI_BUF_ALIGN,
                                       d->buf_size * FL_DGRAM_SLOTS * FL_DGRAM_BATCH)))
        return NULL;
    if (x->len > d->buf_size)
        return NULL;
    uint8_t *to = d->unaligned + ((size_t)slot * FL_DGRAM_BATCH + i) * d->buf_size;
    return memcpy(to, x->buf, x->len);
}

int fl_ofi_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    if (slot >= FL_DGRAM_SLOTS)
        return 0;
    if (d->kicked) { /* a system call only after fl_ofi_fd's wake-up */
        d->kicked = false;
        drain_kick(d);
    }
    repost(d, slot);
    /* The send queue only while something on it may complete: each read
       runs the provider's progress (locks, on shm most of an idle pass),
       which the receive queue's read below runs as well. */
    if (d->tx_busy || d->rma_busy)
        fl_ofi_reap(d);
    struct fi_cq_data_entry c[FL_DGRAM_BATCH];
    ssize_t k = take_rx(d, c, FL_DGRAM_BATCH);
    int n = 0;
    for (ssize_t i = 0; i < k; i++) {
        uint8_t *mem = d->multi ? c[i].buf : ((struct ofi_buf *)c[i].op_context)->mem;
        d->held[slot][d->nheld[slot]++] = c[i].op_context;
        struct fl_dgram_in *x = &d->in[slot][n++];
        x->src = sender(d, mem, c[i].len);
        x->buf = mem + OFI_HEAD;
        x->len = c[i].len >= OFI_HEAD ? c[i].len - OFI_HEAD : 0;
        if (x->src != FL_DGRAM_STRANGER)
            x->len -= fl_get32(mem + 4) >> OFI_PAD_SHIFT;
        if ((uintptr_t)x->buf % 8 && !(x->buf = aligned_copy(d, slot, (unsigned)i, x)))
            n--; /* no memory for the copy: as if lost */
    }
    *in = d->in[slot];
    return n;
}

/* Readable when a completion may wait: where the provider says the queue
   is not empty (fi_trywait), the wake-up eventfd is set so that a poll of
   the descriptor sees it. */
int fl_ofi_fd(struct fl_dgram *d)
{
    if (d->polling) {
        /* The millisecond's ticks while awake: the sleep about to begin
           waits for the next one. */
        drain_kick(d);
    } else {
        struct fid *f = &d->rxcq->fid;
        if (d->stash_n || fi_trywait(d->fabric, &f, 1) == -FI_EAGAIN) {
            uint64_t one = 1;
            if (write(d->kick, &one, sizeof one) < 0)
                fl_debug("ofi: writing the wake-up descriptor: %s", strerror(errno));
            d->kicked = true;
        }
    }
    return d->epfd;
}
