/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side of streams: a message's first packet starts its handler
 * (inline when the packet holds the whole message, else on a fiber), later
 * packets resume it, and flit_stream_recv copies straight from the packet
 * at hand into the handler's buffers. Also refusals, messages coming back,
 * senders that die mid-message, and the endpoint's teardown.
 */
#include <stdlib.h>
#include <string.h>

#include "am/am.h"
#include "stream/stream.h"
#include "util/log.h"

/* The message whose handler runs on this thread now (the innermost): the
   only one the calls inside a handler may name (fl_stream_usable). */
static __thread struct fl_st_in *running __attribute__((tls_model("initial-exec")));

/* A slot for a new message; its handle (stream.h) valid from now on. */
static struct fl_st_in *in_get(struct fl_stream_ep *se)
{
    struct fl_st_in *s = se->free_in;
    if (__builtin_expect(s != NULL, 1))
        se->free_in = s->next;
    else if (!(s = fl_st_take(&fl_st_in_table, sizeof *s,
                              offsetof(struct fl_st_in, handle),
                              offsetof(struct fl_st_in, next), 0)))
        return NULL;
    fl_st_bump(&s->handle);
    return s;
}

/* The message is over: its handle is stale from now on. */
static void in_put(struct fl_stream_ep *se, struct fl_st_in *s)
{
    s->live = false;
    fl_st_bump(&s->handle);
    s->next = se->free_in;
    se->free_in = s;
}

/* The sender's message with stream id sid, if it is in progress (spawned
   handlers share the list, and no packet continues them). */
static struct fl_st_in **find(struct fl_stream_ep *se, uint32_t src, uint32_t sid)
{
    struct fl_st_in **pp = &se->active[src];
    while (*pp && ((*pp)->sid != sid || (*pp)->spawned))
        pp = &(*pp)->next;
    return pp;
}

/* Appends s to its sender's messages in progress (oldest first: the one
   the next packet most likely continues). */
static void link_active(struct fl_stream_ep *se, struct fl_st_in *s)
{
    struct fl_st_in **pp = &se->active[s->src];
    while (*pp)
        pp = &(*pp)->next;
    s->next = NULL;
    *pp = s;
    s->linked = true;
}

static void unlink_active(struct fl_stream_ep *se, struct fl_st_in *s)
{
    struct fl_st_in **pp = &se->active[s->src];
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (*pp)
        *pp = s->next;
    s->linked = false;
}

static void fiber_main(struct fl_fiber *f, void *arg)
{
    (void)f;
    struct fl_st_in *s = arg;
    s->fn((flit_stream_t *)fl_st_handle(&s->handle), (size_t)s->total, s->user);
}

/* The message is over for us once its handler is done and its last byte
   has arrived; until then it stays linked, to swallow what still comes. */
static void retire_if_over(struct fl_stream_ep *se, struct fl_st_in *s)
{
    if (!s->live)
        fl_stream_pull_end(s); /* a pulled message: its sender waits */
    if (s->live || s->arrived < s->total) {
        if (!s->linked)
            link_active(se, s);
        return;
    }
    if (s->linked)
        unlink_active(se, s);
    in_put(se, s);
}

/*
 * Runs s's handler, or continues it where it waits, until it returns or
 * waits for the next packet (or parks). Bytes it leaves in the packet at hand when it
 * returns are discarded.
 */
void fl_stream_run(struct flit_ep *ep, struct fl_st_in *s)
{
    struct fl_stream_ep *se = fl_stream_of(ep);
    struct fl_st_in *outer = se->current; /* a nested poll's handler */
    se->current = s;
    struct fl_st_in *outer_here = running;
    running = s;
    fl_handler_depth++;
    bool finished = true;
    if (s->fiber)
        finished = fl_fiber_resume(s->fiber);
    else
        s->fn((flit_stream_t *)fl_st_handle(&s->handle), (size_t)s->total, s->user);
    fl_handler_depth--;
    running = outer_here;
    se->current = outer;
    if (!finished)
        return; /* it waits, having taken every byte at hand */
    if (s->fiber) {
        fl_fiber_free(s->fiber);
        s->fiber = NULL;
        fl_stream_unready(se, s); /* unparked, then returned by itself */
    }
    s->live = false;
    s->taken += s->cur_len;
    s->cur_len = 0;
    retire_if_over(se, s);
}

/* A receive handle afresh, field by field (see flit_stream_begin): nothing
   arrived, no handler yet. */
static void in_init(struct fl_st_in *s, struct flit_ep *ep, uint32_t src, uint64_t total)
{
    s->ep = ep;
    s->src = src;
    s->sid = 0;
    s->total = total;
    s->arrived = 0;
    s->taken = 0;
    s->cur = NULL;
    s->cur_len = 0;
    s->fn = NULL;
    s->user = NULL;
    s->fiber = NULL;
    s->error = FLIT_OK;
    s->live = false;
    s->linked = false;
    s->spawned = false;
    s->placeable = false;
    s->place_from = s->place_to = 0;
    s->place_at = NULL;
    s->pull = false;
    s->pull_from = s->pull_addr = s->pull_key = 0;
    s->ask = false;
    s->pull_got = s->pull_ns = s->ring_t0 = s->ring_from = 0;
    s->parked = s->wake = s->ready = false;
}

flit_status flit_stream_spawn(flit_ep_t *ep, flit_rank_t rank, flit_stream_handler_fn fn,
                              void *user)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!fn || fl_handler_depth == 0)
        return FLIT_ERR_INVALID_ARG;
    if (rank.idx >= ep->size)
        return FLIT_ERR_RANK;
    struct fl_stream_ep *se = fl_stream_of(ep);
    struct fl_st_in *s = in_get(se);
    if (!s)
        return FLIT_ERR_NO_MEMORY;
    in_init(s, ep, rank.idx, 0);
    s->fn = fn;
    s->user = user;
    s->spawned = true;
    if (!(s->fiber = fl_fiber_new(fiber_main, s))) {
        in_put(se, s);
        return FLIT_ERR_NO_MEMORY;
    }
    s->live = true;
    FL_COUNT(se->fibers, 1);
    link_active(se, s); /* the rank's death or the endpoint's end reaches it */
    fl_stream_run(ep, s);
    return FLIT_OK;
}

/* Sends the first packet's header back to its sender with the reason. */
static void refuse(struct flit_ep *ep, uint32_t src, const struct fl_st_pkt *h,
                   flit_status reason)
{
    uint8_t inner[FL_ST_FIRST_HDR];
    struct fl_st_pkt back = *h;
    back.flags = FL_STF_FIRST | (h->total == 0 ? FL_STF_LAST : 0);
    back.pad = 0;
    back.len = 0;
    fl_st_encode(inner, &back);
    fl_am_return_packet(ep, src, inner, sizeof inner, reason);
}

static flit_status judge(struct flit_ep *ep, struct fl_stream_ep *se,
                         const struct fl_st_pkt *h)
{
    if (h->tag != ep->tag)
        return FLIT_ERR_BAD_TAG;
    if (h->handler >= ep->handler_count)
        return FLIT_ERR_BAD_HANDLER;
    if (!se->handlers[h->handler].fn)
        return FLIT_ERR_NO_HANDLER;
    return FLIT_OK;
}

static void bad_packet(struct flit_ep *ep, uint32_t src, size_t len, const char *why)
{
    FL_COUNT(ep->stats.refused_packets, 1);
    fl_warn("refused a stream packet from rank %u (%zu bytes): %s", src, len, why);
}

static void first_packet(struct flit_ep *ep, struct fl_stream_ep *se, uint32_t src,
                         const struct fl_st_pkt *h, size_t len)
{
    if (*find(se, src, h->sid)) {
        bad_packet(ep, src, len, "a message with that id is in progress");
        return;
    }
    struct fl_st_in *s = in_get(se);
    if (!s) {
        refuse(ep, src, h, FLIT_ERR_NO_MEMORY);
        return;
    }
    flit_status why = judge(ep, se, h);
    in_init(s, ep, src, h->total);
    s->sid = h->sid;
    s->placeable = (h->flags & FL_STF_PLACEABLE) != 0;
    s->pull = (h->flags & FL_STF_PULL) != 0;
    s->ask = (h->flags & FL_STF_ASK) != 0;
    s->pull_from = h->len;
    s->pull_addr = h->addr;
    s->pull_key = h->key;
    s->arrived = h->len;
    s->cur = h->payload;
    s->cur_len = h->len;
    FL_COUNT(se->recv_msgs, 1);
    FL_COUNT(se->recv_bytes, h->total);
    FL_COUNT(ep->peers[src].recv, 1);
    if (why == FLIT_OK) {
        s->fn = se->handlers[h->handler].fn;
        s->user = se->handlers[h->handler].user;
        /* Bytes still to come, or a handler that may park: it may wait. */
        bool wait =
            h->len < h->total || (se->handlers[h->handler].flags & FLIT_STREAM_FIBER);
        if (wait && !(s->fiber = fl_fiber_new(fiber_main, s)))
            why = FLIT_ERR_NO_MEMORY;
    }
    if (why != FLIT_OK) {
        refuse(ep, src, h, why);
        s->taken = s->arrived;
        retire_if_over(se, s);
        return;
    }
    s->live = true;
    if (s->fiber) {
        FL_COUNT(se->fibers, 1);
        link_active(se, s);
    }
    if (s->pull)
        fl_stream_pull_begin(s); /* or the rings: measured, or cheaper */
    else if (h->len < h->total)
        fl_stream_ring_start(s);
    fl_stream_run(ep, s);
}

static void next_packet(struct flit_ep *ep, struct fl_stream_ep *se, uint32_t src,
                        const struct fl_st_pkt *h, size_t len)
{
    struct fl_st_in *s = *find(se, src, h->sid);
    if (!s) {
        bad_packet(ep, src, len, "no message in progress with that id");
        return;
    }
    if (s->pull) {
        bad_packet(ep, src, len, "continues a message we pull");
        return;
    }
    bool last = (h->flags & FL_STF_LAST) != 0;
    if (h->offset != s->arrived || h->len > s->total - s->arrived ||
        last != (h->offset + h->len == s->total)) {
        bad_packet(ep, src, len, "out of place in its message");
        return;
    }
    uint8_t *payload = h->payload;
    if (h->flags & FL_STF_PLACED) {
        /* Written where we offered: the bytes are at hand in their place. */
        if (h->offset < s->place_from || h->offset + h->len > s->place_to) {
            bad_packet(ep, src, len, "placed where no place was offered");
            return;
        }
        payload = s->place_at + (h->offset - s->place_from);
    }
    s->arrived += h->len;
    if (!s->live) { /* its handler returned: nobody wants these bytes */
        s->taken += h->len;
        retire_if_over(se, s);
        return;
    }
    s->cur = payload;
    s->cur_len = h->len;
    /* Its last byte, timed since its first: what the rings cost (the
       handler's copy of it included; s may be over after the run). */
    uint64_t t0 = s->arrived == s->total ? s->ring_t0 : 0;
    uint64_t bytes = s->total - s->ring_from, total = s->total;
    fl_stream_run(ep, s);
    if (t0)
        fl_stream_ring_done(ep, src, total, bytes, t0);
}

void fl_stream_recv_packet(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                           size_t len)
{
    struct fl_st_pkt h;
    if (fl_st_decode(pkt, len, &h) != FLIT_OK ||
        lane !=
            ((h.flags & (FL_STF_OFFER | FL_STF_PULLED)) ? FL_LANE_REP : FL_LANE_REQ)) {
        bad_packet(ep, src, len, "malformed");
        return;
    }
    if (h.flags & FL_STF_OFFER) {
        fl_stream_offer(ep, src, &h); /* for a message we send */
        return;
    }
    if (h.flags & FL_STF_PULLED) {
        fl_stream_pulled(ep, src, &h); /* for a message we send */
        return;
    }
    struct fl_stream_ep *se = fl_stream_of(ep);
    if (h.flags & FL_STF_FIRST)
        first_packet(ep, se, src, &h, len);
    else
        next_packet(ep, se, src, &h, len);
}

/* ---- inside the handler ---- */

/* The message handle h names, if it may be used now: its handler is the
   one running on this thread. NULL is no handle at all, a caller's mistake
   like any other NULL argument; a handle that was real once but whose
   handler returned (its slot perhaps another message's now) is a dead
   token. Compares h with the running message's handle: no table lookup. */
flit_status fl_stream_usable(const flit_stream_t *h, struct fl_st_in **out)
{
    struct fl_st_in *s = running;
    if (__builtin_expect(!s || fl_st_handle(&s->handle) != (uintptr_t)h || !s->live, 0))
        return h ? FLIT_ERR_BAD_TOKEN : FLIT_ERR_INVALID_ARG;
    *out = s;
    return FLIT_OK;
}

/*
 * The handler waits for the n bytes at dst with none at hand: if they are
 * to land in our segment (which the sender maps) and it can place them,
 * offers it that place (stream.h), once per range.
 */
static void offer(struct fl_st_in *s, uint8_t *dst, size_t n)
{
    struct flit_ep *ep = s->ep;
    if (!s->placeable || s->place_to > s->arrived || n < FL_ST_OFFER_MIN ||
        ep->seg_fd < 0)
        return;
    uintptr_t seg = (uintptr_t)ep->seg, at = (uintptr_t)dst;
    if (at < seg || at - seg > ep->seg_size || n > ep->seg_size - (at - seg))
        return;
    if (n > FL_ST_OFFER_MAX)
        n = FL_ST_OFFER_MAX;
    void *pkt;
    if (fl_ep_reserve(ep, s->src, FL_LANE_REP, FL_ST_FIRST_HDR, 0, &pkt) != FLIT_OK)
        return; /* the sender is down: end_all will say so */
    struct fl_st_pkt h = {
        .flags = FL_STF_OFFER,
        .sid = s->sid,
        .len = (uint32_t)n,
        .offset = s->arrived,
        .place = at - seg,
    };
    fl_st_encode(pkt, &h);
    fl_ep_commit(ep, s->src, FL_LANE_REP, pkt, FL_ST_FIRST_HDR, 0);
    s->place_from = s->arrived;
    s->place_to = s->arrived + n;
    s->place_at = dst;
    FL_COUNT(fl_stream_of(ep)->offers, 1);
}

/* Takes n bytes (n <= what remains) into dst, or passes over them (dst
   NULL), waiting on the fiber for packets still to come. */
static flit_status take(struct fl_st_in *s, uint8_t *dst, size_t n)
{
    while (n) {
        if (s->cur_len == 0) {
            if (s->error)
                return s->error;
            if (s->pull) {
                size_t k = fl_pace_take(s->ep, n); /* flit_extract's budget */
                if (k == 0) {
                    fl_stream_pace_wait(s);
                    continue;
                }
                flit_status st = fl_stream_pull_take(s, dst, k);
                if (st == FLIT_ERR_AGAIN)
                    continue; /* the sender sends the rest in packets */
                if (st != FLIT_OK)
                    return st;
                if (dst)
                    dst += k;
                n -= k;
                continue;
            }
            if (dst)
                offer(s, dst, n);
            fl_fiber_yield(s->fiber); /* run() continues us with a packet */
            continue;
        }
        size_t k = n < s->cur_len ? n : s->cur_len;
        if (dst) {
            if (dst != s->cur) /* equal: placed there by the sender */
                memcpy(dst, s->cur, k);
            dst += k;
        }
        s->cur += k;
        s->cur_len -= k;
        s->taken += k;
        n -= k;
    }
    return FLIT_OK;
}

flit_status flit_stream_recv(flit_stream_t *h, void *buf, size_t n)
{
    struct fl_st_in *s = NULL;
    flit_status st = fl_stream_usable(h, &s);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    if (n && !buf)
        return FLIT_ERR_INVALID_ARG;
    if (n > s->total - s->taken)
        return FLIT_ERR_TOO_LARGE;
    return take(s, buf, n);
}

flit_status flit_stream_recvv(flit_stream_t *h, const struct iovec *iov, int iovcnt)
{
    struct fl_st_in *s = NULL;
    flit_status st = fl_stream_usable(h, &s);
    if (st != FLIT_OK)
        return st;
    if (iovcnt < 0 || (iovcnt && !iov))
        return FLIT_ERR_INVALID_ARG;
    uint64_t sum = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len && !iov[i].iov_base)
            return FLIT_ERR_INVALID_ARG;
        sum += iov[i].iov_len;
    }
    if (sum > s->total - s->taken)
        return FLIT_ERR_TOO_LARGE;
    for (int i = 0; st == FLIT_OK && i < iovcnt; i++)
        st = take(s, iov[i].iov_base, iov[i].iov_len);
    return st;
}

flit_status flit_stream_skip(flit_stream_t *h, size_t n)
{
    struct fl_st_in *s = NULL;
    flit_status st = fl_stream_usable(h, &s);
    if (st != FLIT_OK)
        return st;
    if (n > s->total - s->taken)
        return FLIT_ERR_TOO_LARGE;
    return take(s, NULL, n);
}

flit_status flit_stream_peek(flit_stream_t *h, const void **data, size_t *n)
{
    struct fl_st_in *s = NULL;
    flit_status st = fl_stream_usable(h, &s);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    if (!data || !n)
        return FLIT_ERR_INVALID_ARG;
    *data = s->cur;
    *n = s->cur_len;
    return FLIT_OK;
}

size_t flit_stream_remaining(const flit_stream_t *h)
{
    const struct fl_st_in *s = fl_st_in_of(h);
    return s && s->live ? (size_t)(s->total - s->taken) : 0;
}

flit_rank_t flit_stream_rank(const flit_stream_t *h)
{
    const struct fl_st_in *s = fl_st_in_of(h);
    return flit_rank(s && s->live ? s->src : UINT32_MAX);
}

flit_ep_t *flit_stream_ep(const flit_stream_t *h)
{
    const struct fl_st_in *s = fl_st_in_of(h);
    return s && s->live ? s->ep : NULL;
}

flit_status flit_stream_register_flags(flit_ep_t *ep, flit_handler_t h,
                                       flit_stream_handler_fn fn, void *user,
                                       unsigned flags)
{
    flit_status st = fl_ep_check(ep);
    if (st == FLIT_OK && (flags & ~FLIT_STREAM_FIBER))
        st = FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK && fn && (flags & FLIT_STREAM_FIBER))
        st = fl_stream_park_listen(ep); /* before entering: it enters */
    if (st == FLIT_OK)
        st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    bool ok = h.idx < ep->handler_count;
    if (ok)
        fl_stream_of(ep)->handlers[h.idx] =
            (struct fl_stream_slot){fn, fn ? user : NULL, fn ? flags : 0};
    fl_ep_leave(ep);
    return ok ? FLIT_OK : FLIT_ERR_BAD_HANDLER;
}

flit_status flit_stream_register(flit_ep_t *ep, flit_handler_t h,
                                 flit_stream_handler_fn fn, void *user)
{
    return flit_stream_register_flags(ep, h, fn, user, 0);
}

/* ---- our own messages coming back ---- */

bool fl_stream_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                    flit_status reason, bool reclaimed)
{
    struct fl_st_pkt h;
    if (fl_st_decode(pkt, len, &h) != FLIT_OK)
        return false;
    /* A refusal returns the first packet's header; a dead peer, every
       packet it did not take: the message counts once, with its last. */
    if (reclaimed ? !(h.flags & FL_STF_LAST) : !(h.flags & FL_STF_FIRST))
        return reclaimed;
    flit_returned_t r = {
        .reason = reason,
        .peer = flit_rank(peer),
        .handler = flit_handler(h.handler),
        .kind = FLIT_AM_STREAM,
        .nbytes = (size_t)((h.flags & FL_STF_FIRST) ? h.total : h.offset + h.len),
    };
    fl_am_returned(ep, peer, &r);
    return true;
}

/* ---- senders that die, endpoints that close ---- */

/* Lets every waiting handler of src's messages return (its recv answers
   why), then forgets the messages. */
void fl_stream_end_all(struct flit_ep *ep, uint32_t src, flit_status why)
{
    struct fl_stream_ep *se = fl_stream_of(ep);
    struct fl_st_in *s;
    while ((s = se->active[src]) != NULL) {
        s->error = why;
        s->cur_len = 0;
        s->arrived = s->total; /* nothing more will come */
        if (s->live)
            fl_stream_run(ep, s); /* its recv answers why: it returns */
        else
            retire_if_over(se, s);
        if (se->active[src] == s) { /* cannot happen: recv never waits now */
            fl_error("a stream handler from rank %u keeps waiting after %s", src,
                     flit_strerror(why));
            unlink_active(se, s);
        }
    }
}
