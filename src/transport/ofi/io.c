/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path of a libfabric endpoint (ep.h): datagrams out by fi_send,
 * in from buffers posted one per datagram, completions read without
 * blocking, and the descriptor a sleeper waits on.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "platform/le.h"
#include "platform/os.h"
#include "transport/ofi/ep.h"
#include "util/log.h"

bool fl_ofi_post(struct fl_dgram *d, struct ofi_buf *b)
{
    ssize_t ret;
    int tries = 0;
    /* No room in the provider's queue now: progress it (a read of no
       entries takes none) and ask again, a bounded number of times. */
    while ((ret = fi_recv(d->ep, b->mem, d->buf_size, d->rx_desc, FI_ADDR_UNSPEC,
                          &b->ctx)) == -FI_EAGAIN &&
           ++tries < 1000)
        fi_cq_read(d->txcq, NULL, 0);
    if (ret != 0)
        fl_ofi_fail(d, "posting a receive buffer (fi_recv)", (int)ret);
    return ret == 0;
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

/* The head and the datagram's pieces, one after another at to. */
static size_t gather(const struct fl_dgram *d, uint8_t *to, const struct fl_dgram_out *o)
{
    fl_put32(to, d->job_tag);
    fl_put32(to + 4, d->rank);
    size_t n = OFI_HEAD;
    for (int i = 0; i < o->iovcnt; i++) {
        memcpy(to + n, o->iov[i].iov_base, o->iov[i].iov_len);
        n += o->iov[i].iov_len;
    }
    return n;
}

static size_t length(const struct fl_dgram_out *o)
{
    size_t n = OFI_HEAD;
    for (int i = 0; i < o->iovcnt; i++)
        n += o->iov[i].iov_len;
    return n;
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

/* Posts again the buffers slot handed up last time. */
static void repost(struct fl_dgram *d, unsigned slot)
{
    for (unsigned i = 0; i < d->nheld[slot]; i++)
        fl_ofi_post(d, d->held[slot][i]);
    d->nheld[slot] = 0;
}

/* Who sent the datagram in b (len bytes): FL_DGRAM_STRANGER unless the
   head names this job and another rank. */
static uint32_t sender(const struct fl_dgram *d, const uint8_t *b, size_t len)
{
    if (len < OFI_HEAD || fl_get32(b) != d->job_tag)
        return FL_DGRAM_STRANGER;
    uint32_t src = fl_get32(b + 4);
    return src < d->size && src != d->rank ? src : FL_DGRAM_STRANGER;
}

static void drain_kick(struct fl_dgram *d)
{
    uint64_t v;
    if (read(d->kick, &v, sizeof v) < 0 && errno != EAGAIN)
        fl_debug("ofi: reading the wake-up descriptor: %s", strerror(errno));
}

/* Reads up to max receive completions into c; an error one's buffer is
   posted again. */
static ssize_t read_rx(struct fl_dgram *d, struct fi_cq_msg_entry *c, size_t max)
{
    ssize_t k = fi_cq_read(d->rxcq, c, max);
    if (k == -FI_EAVAIL) {
        struct fi_cq_err_entry e = {0};
        if (take_error(d, d->rxcq, &d->said_rx, &e)) /* truncated (a stranger's), */
            fl_ofi_post(d, e.op_context);            /* or cancelled at close */
    }
    return k;
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
static ssize_t take_rx(struct fl_dgram *d, struct fi_cq_msg_entry *c, size_t max)
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

int fl_ofi_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    if (slot >= FL_DGRAM_SLOTS)
        return 0;
    drain_kick(d);
    repost(d, slot);
    fl_ofi_reap(d);
    struct fi_cq_msg_entry c[FL_DGRAM_BATCH];
    ssize_t k = take_rx(d, c, FL_DGRAM_BATCH);
    int n = 0;
    for (ssize_t i = 0; i < k; i++) {
        struct ofi_buf *b = c[i].op_context;
        d->held[slot][d->nheld[slot]++] = b;
        struct fl_dgram_in *x = &d->in[slot][n++];
        x->src = sender(d, b->mem, c[i].len);
        x->buf = b->mem + OFI_HEAD;
        x->len = c[i].len >= OFI_HEAD ? c[i].len - OFI_HEAD : 0;
    }
    *in = d->in[slot];
    return n;
}

/* Readable when a completion may wait: where the provider says the queue
   is not empty (fi_trywait), the wake-up eventfd is set so that a poll of
   the descriptor sees it. */
int fl_ofi_fd(struct fl_dgram *d)
{
    if (!d->polling) {
        struct fid *f = &d->rxcq->fid;
        if (d->stash_n || fi_trywait(d->fabric, &f, 1) == -FI_EAGAIN) {
            uint64_t one = 1;
            if (write(d->kick, &one, sizeof one) < 0)
                fl_debug("ofi: writing the wake-up descriptor: %s", strerror(errno));
        }
    }
    return d->epfd;
}
