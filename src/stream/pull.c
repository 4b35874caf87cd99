/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pulled messages (stream.h, wire.h): rendezvous, as MPI libraries move
 * large messages. Through the rings a message costs two copies, into the
 * ring and out of it; pulled, the receiver copies it once, from the
 * sender's buffer into the one its handler receives into, by the
 * transport's ->get (cross-memory attach on shared memory; fi_read over
 * libfabric, the NIC's copy on hardware), once the handler says where the
 * bytes go. The sender's call waits for the answer. A transport that
 * reads only memory it was shown (->expose) gets the buffer exposed for
 * reading from the first packet to the answer, its key in the first
 * packet (fl_stream_pull_lend).
 *
 * Whether and from what size is the transport's word (->pull_min: on
 * shared memory a probe at first use, FLIT_SHM_RNDV), asked once per peer.
 * A sender pulls only outside handlers (a handler's wait polls only the
 * reply lane, so two handlers each waiting for the other's answer would
 * never see the other's message) and only for a send that may block.
 *
 * The receiver reads only at the address and length its sender gave, into
 * the buffer its handler gave, at most the bytes that handler asked for. A
 * read that fails is no crash: the sender gone (FLIT_ERR_PEER_DOWN to the
 * handler), or refused (an address outside the sender's memory, an attach
 * the kernel forbids): the receiver then asks for the rest in packets, and
 * the sender pulls to that peer no more.
 */
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "platform/os.h"
#include "stream/stream.h"
#include "util/log.h"

/* What we know of pulling to dst, asked of its transport the first time. */
static struct fl_st_pull_to *pull_to(struct fl_stream_ep *se, struct flit_ep *ep,
                                     uint32_t dst)
{
    struct fl_st_pull_to *p = &se->pull_to[dst];
    if (__builtin_expect(p->min != 0, 1))
        return p;
    const struct fl_peer *peer = &ep->peers[dst];
    const struct fl_tp_onesided *os = peer->tp->onesided;
    bool measure = false;
    size_t n = os && os->pull_min && os->get ? os->pull_min(peer->tpe, dst, &measure) : 0;
    p->min = n ? n : UINT64_MAX;
    p->ask = n && measure;
    p->advice = UINT16_MAX; /* every class, until the receiver says */
    return p;
}

bool fl_stream_pulls(struct flit_ep *ep, uint32_t dst, uint64_t total, size_t head,
                     unsigned flags)
{
    if (fl_handler_depth || (flags & FLIT_STREAM_NONBLOCK) || head > FL_ST_PULL_HEAD ||
        total <= head)
        return false;
    struct fl_st_pull_to *p = pull_to(fl_stream_of(ep), ep, dst);
    if (total < p->min)
        return false;
    if (!p->ask || (p->advice >> fl_st_class(total) & 1u))
        return true;
    /* Through the rings, as advised; now and then pulled, to be measured. */
    return ++p->explore % FL_ST_EXPLORE == 0;
}

/* ---- the sender ---- */

static bool answered(struct flit_ep *ep, void *arg)
{
    struct fl_st_pull_wait *w = arg;
    return w->answered || fl_peer_is_down(&ep->peers[w->dst]);
}

/*
 * Polls without sleeping while the receiver may still be copying: about
 * 1 us per KiB of the message (a pull at 1 GB/s or better) past the
 * endpoint's own spin time. A sender asleep when the answer comes is woken
 * by a system call on each side; fl_progress_until alone sleeps after
 * FLIT_SPIN_US (50 us) without traffic, less than a pull of a MiB takes.
 * Not where ranks outnumber cores (a spin time of a few microseconds):
 * there the spinning sender would hold the receiver's core.
 */
static void spin_for_answer(struct flit_ep *ep, struct fl_st_pull_wait *w)
{
    int64_t spin_us = fl_progress_spin_us();
    if (spin_us < 10)
        return;
    uint64_t end = fl_now_ns() + ((w->total >> 10) + (uint64_t)spin_us) * 1000u;
    while (!answered(ep, w) && !fl_ep_closed_under(ep) && fl_now_ns() < end) {
        fl_progress(ep, FL_LANES_ALL);
        fl_listeners_progress(ep);
    }
}

static void unlist(struct fl_stream_ep *se, struct fl_st_pull_wait *w)
{
    struct fl_st_pull_wait **pp = &se->pulls;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (*pp)
        *pp = w->next;
}

bool fl_stream_pull_lend(struct flit_ep *ep, uint32_t dst, const void *buf, size_t len,
                         struct fl_st_lend *l)
{
    const struct fl_peer *peer = &ep->peers[dst];
    const struct fl_tp_onesided *os = peer->tp->onesided;
    *l = (struct fl_st_lend){.addr = (uint64_t)(uintptr_t)buf};
    if (!os->expose)
        return true; /* it reads our memory as a whole (cross-memory attach) */
    flit_status st = os->expose(peer->tpe, (void *)(uintptr_t)buf, len, FL_TP_EXPOSE_READ,
                                &l->key, &l->addr);
    if (st == FLIT_OK)
        return l->exposed = true;
    if (st != FLIT_ERR_NO_MEMORY) /* a shortage passes; a refusal stays */
        fl_stream_of(ep)->pull_to[dst].min = UINT64_MAX;
    return false;
}

void fl_stream_pull_unlend(struct flit_ep *ep, uint32_t dst, struct fl_st_lend *l)
{
    if (l->exposed) {
        const struct fl_peer *peer = &ep->peers[dst];
        peer->tp->onesided->unexpose(peer->tpe, l->key);
        l->exposed = false;
    }
}

flit_status fl_stream_pull_out(struct fl_st_out *s, void *pkt, const struct iovec *iov,
                               int iovcnt, size_t head, const struct fl_st_lend *l,
                               uint64_t *from)
{
    struct flit_ep *ep = s->ep;
    struct fl_stream_ep *se = fl_stream_of(ep);
    uint8_t *at = (uint8_t *)pkt + FL_ST_PULL_HDR;
    for (int i = 0; i + 1 < iovcnt; i++) {
        if (iov[i].iov_len)
            memcpy(at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    struct fl_st_pkt h = {
        .flags = FL_STF_FIRST | FL_STF_PULL | (se->pull_to[s->dst].ask ? FL_STF_ASK : 0),
        .handler = s->handler,
        .sid = s->sid,
        .len = (uint32_t)head,
        .tag = ep->peers[s->dst].tag,
        .total = s->total,
        .addr = l->addr,
        .key = l->key,
    };
    fl_st_encode(pkt, &h);
    /* Listed before the commit: on a thread-safe endpoint another thread
       may take the answer while this one sleeps. */
    struct fl_st_pull_wait w = {
        .dst = s->dst, .sid = s->sid, .total = s->total, .next = se->pulls};
    se->pulls = &w;
    fl_ep_commit(ep, s->dst, FL_LANE_REQ, pkt, FL_ST_PULL_HDR + head, 0);
    spin_for_answer(ep, &w);
    flit_status st = fl_progress_until(ep, answered, &w, -1);
    unlist(se, &w);
    if (st == FLIT_OK && !w.answered)
        st = FLIT_ERR_PEER_DOWN;
    if (st != FLIT_OK)
        return st;
    if (w.resend && !w.advised)
        se->pull_to[s->dst].min = UINT64_MAX; /* it cannot: packets for good */
    *from = w.resend ? w.offset : s->total;
    return FLIT_OK;
}

void fl_stream_pulled(struct flit_ep *ep, uint32_t src, const struct fl_st_pkt *h)
{
    struct fl_st_pull_wait *w = fl_stream_of(ep)->pulls;
    while (w && (w->dst != src || w->sid != h->sid))
        w = w->next;
    if (!w || w->answered) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rank %u answered a pulled message we do not wait for", src);
        return;
    }
    /* Bytes to resend must start within the message, past its first
       packet; else the answer frees the buffer all the same. */
    w->answered = true;
    w->resend = h->resend && h->offset <= w->total;
    w->offset = h->offset;
    struct fl_st_pull_to *p = &fl_stream_of(ep)->pull_to[src];
    w->advised = h->advised && p->ask;
    if (w->advised)
        p->advice = h->advice;
    if (h->resend && !w->resend) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rank %u asked for the bytes of a pulled message from %llu, past its "
                "end (%llu)",
                src, (unsigned long long)h->offset, (unsigned long long)w->total);
    }
}

/* ---- the receiver ---- */

/* Tells s's sender that its buffer is free (resend: that it sends the
   bytes from s->arrived in packets), with our advice where it asked for
   it and we could pull (advise). s is pulled no more. */
static void answer(struct fl_st_in *s, bool resend, bool advise)
{
    struct flit_ep *ep = s->ep;
    s->pull = false;
    if (fl_peer_is_down(&ep->peers[s->src]))
        return;
    void *pkt;
    /* Closing (s->error): no wait for room. */
    unsigned flags = s->error ? FLIT_AM_NONBLOCK : 0;
    if (fl_ep_reserve(ep, s->src, FL_LANE_REP, FL_ST_FIRST_HDR, flags, &pkt) != FLIT_OK)
        return;
    const struct fl_st_rates *r = fl_stream_of(ep)->rates[s->src];
    struct fl_st_pkt h = {.flags = FL_STF_PULLED,
                          .sid = s->sid,
                          .offset = s->arrived,
                          .resend = resend,
                          .advised = advise && s->ask && r,
                          .advice =
                              advise && s->ask && r ? (uint16_t)fl_st_advice(r) : 0};
    fl_st_encode(pkt, &h);
    fl_ep_commit(ep, s->src, FL_LANE_REP, pkt, FL_ST_FIRST_HDR, 0);
}

/* The rates of src's messages, made at its first message that asks. */
static struct fl_st_rates *rates_of(struct fl_stream_ep *se, uint32_t src)
{
    if (!se->rates[src])
        se->rates[src] = calloc(1, sizeof *se->rates[src]);
    return se->rates[src];
}

void fl_stream_pull_begin(struct fl_st_in *s)
{
    s->pull_got = s->pull_ns = 0;
    if (!s->ask)
        return;
    struct fl_stream_ep *se = fl_stream_of(s->ep);
    struct fl_st_rates *r = rates_of(se, s->src);
    if (!r || fl_st_take_pull(r, fl_st_class(s->total)))
        return; /* without memory for the rates: pulled, as without asking */
    FL_COUNT(se->pull_declined, 1);
    answer(s, true, true);
    fl_stream_ring_start(s);
}

void fl_stream_ring_start(struct fl_st_in *s)
{
    if (s->total >= FL_ST_RATE_MIN && fl_stream_of(s->ep)->rates[s->src]) {
        s->ring_t0 = fl_now_ns();
        s->ring_from = s->arrived;
    }
}

void fl_stream_ring_done(struct flit_ep *ep, uint32_t src, uint64_t total, uint64_t bytes,
                         uint64_t t0)
{
    struct fl_st_rates *r = fl_stream_of(ep)->rates[src];
    if (r)
        fl_st_rate_note(&r->ring[fl_st_class(total)], bytes, fl_now_ns() - t0);
}

flit_status fl_stream_pull_take(struct fl_st_in *s, uint8_t *dst, size_t n)
{
    struct flit_ep *ep = s->ep;
    struct fl_stream_ep *se = fl_stream_of(ep);
    if (dst && n) {
        struct fl_peer *p = &ep->peers[s->src];
        const struct fl_tp_onesided *os = p->tp->onesided;
        uint64_t at = s->pull_addr + (s->arrived - s->pull_from);
        uint64_t t0 = s->ask ? fl_now_ns() : 0;
        flit_status st = os && os->get ? os->get(p->tpe, s->src, s->pull_key, at, dst, n)
                                       : FLIT_ERR_NOT_SUPPORTED;
        if (s->ask) {
            s->pull_ns += fl_now_ns() - t0;
            s->pull_got += n;
        }
        if (st == FLIT_ERR_PEER_DOWN) {
            s->error = st;
            return st;
        }
        if (st != FLIT_OK) {
            FL_COUNT(se->pull_refused, 1);
            fl_info("stream: cannot pull %zu bytes from rank %u (%s): the rest of its "
                    "message comes in packets",
                    n, s->src, flit_strerror(st));
            answer(s, true, false);
            return FLIT_ERR_AGAIN;
        }
        if (s->arrived == s->pull_from)
            FL_COUNT(se->pulled_msgs, 1);
        FL_COUNT(se->pulled_bytes, n);
    }
    s->arrived += n;
    s->taken += n;
    if (s->arrived == s->total) {
        struct fl_st_rates *r = se->rates[s->src];
        if (s->ask && r && s->pull_got)
            fl_st_rate_note(&r->pull[fl_st_class(s->total)], s->pull_got, s->pull_ns);
        answer(s, false, true);
    }
    return FLIT_OK;
}

void fl_stream_pull_end(struct fl_st_in *s)
{
    if (!s->pull)
        return;
    answer(s, false, true);
    s->arrived = s->total; /* nothing more comes */
}
