/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stream sends: begin, send (gather), end. See stream.h for the held
 * packet: the one being filled stays reserved in the transport between
 * calls until it is full or something else needs the transport.
 */
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "stream/stream.h"
#include "util/log.h"

/* Payload bytes the next packet of s may carry: a piece, or what is left
   when that is at most FL_ST_TAIL more and the transport's packet holds
   it (not over datagrams, where a piece fills one). */
static size_t piece_room(struct fl_st_out *s, size_t hdr_len)
{
    size_t room = fl_ep_piece_size(s->ep, s->dst, hdr_len);
    uint64_t left = s->total - s->sent;
    if (left <= room)
        return (size_t)left;
    if (left - room <= FL_ST_TAIL && !fl_ep_datagrams(s->ep, s->dst) &&
        left + hdr_len <= s->ep->peers[s->dst].max_packet)
        return (size_t)left;
    return room;
}

/* ---- placed pieces (stream.h) ---- */

/* Whether a message of total bytes to dst may ask for offers: its segment
   is one our transport writes into (shared memory), and it is long. */
static bool can_place(const struct flit_ep *ep, uint32_t dst, uint64_t total)
{
    const struct fl_peer *p = &ep->peers[dst];
    return total >= FL_ST_PLACE_MIN && p->put_ok && p->seg_size >= FL_ST_OFFER_MIN &&
           !fl_ep_datagrams(ep, dst);
}

/* s, placeable, takes offers from now on. */
static void place_start(struct fl_stream_ep *se, struct fl_st_out *s)
{
    s->place_from = s->place_to = s->place_seg = 0;
    s->place_next = se->placing;
    se->placing = s;
}

/* s takes no more offers: its last byte is out, it failed, or it ends. */
static void unplace(struct fl_stream_ep *se, struct fl_st_out *s)
{
    if (!s->placeable)
        return;
    s->placeable = false;
    struct fl_st_out **pp = &se->placing;
    while (*pp && *pp != s)
        pp = &(*pp)->place_next;
    if (*pp)
        *pp = s->place_next;
}

void fl_stream_offer(struct flit_ep *ep, uint32_t src, const struct fl_st_pkt *h)
{
    struct fl_stream_ep *se = fl_stream_of(ep);
    struct fl_st_out *s = se->placing;
    while (s && (s->dst != src || s->sid != h->sid))
        s = s->place_next;
    if (!s)
        return; /* its last bytes crossed the offer: nothing left to place */
    uint64_t seg = ep->peers[src].seg_size;
    if (h->place > seg || h->len > seg - h->place || h->offset > s->total ||
        h->len > s->total - h->offset) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rank %u offered a place outside its segment or the message", src);
        return;
    }
    s->place_from = h->offset;
    s->place_to = h->offset + h->len;
    s->place_seg = h->place;
}

/*
 * Between two packets of s: takes the receiver's offer, if one came and
 * covers the next byte, by writing up to n bytes from buf straight into its
 * segment, then a PLACED packet saying so. *done: the bytes placed (0: send
 * them in packets). A place the transport cannot write ends the offers.
 */
static flit_status place(struct fl_st_out *s, const uint8_t *buf, size_t n, size_t *done)
{
    struct flit_ep *ep = s->ep;
    *done = 0;
    fl_progress_peer(ep, s->dst, FL_LANE_MASK(FL_LANE_REP)); /* offers come there */
    if (s->sent < s->place_from || s->sent >= s->place_to)
        return FLIT_OK;
    void *pkt;
    flit_status st = fl_ep_reserve(ep, s->dst, FL_LANE_REQ, FL_ST_HDR, 0, &pkt);
    if (st != FLIT_OK)
        return st;
    if (!s->placeable || s->sent < s->place_from || s->sent >= s->place_to) {
        fl_ep_cancel(ep, s->dst, FL_LANE_REQ, pkt); /* changed while we waited */
        return FLIT_OK;
    }
    uint64_t k = s->place_to - s->sent;
    if (k > n)
        k = n;
    struct fl_peer *p = &ep->peers[s->dst];
    st = p->tp->put(p->tpe, s->dst, p->tag, s->place_seg + (s->sent - s->place_from), buf,
                    (size_t)k);
    if (st != FLIT_OK) {
        fl_ep_cancel(ep, s->dst, FL_LANE_REQ, pkt);
        unplace(fl_stream_of(ep), s);
        if (st == FLIT_ERR_NOT_SUPPORTED)
            p->put_ok = false; /* for good, as for long AMs: packets */
        return st == FLIT_ERR_PEER_DOWN ? st : FLIT_OK; /* else: in packets */
    }
    s->sent += k;
    struct fl_st_pkt h = {
        .flags = FL_STF_PLACED | (s->sent == s->total ? FL_STF_LAST : 0),
        .sid = s->sid,
        .len = (uint32_t)k,
        .offset = s->sent - k,
    };
    fl_st_encode(pkt, &h);
    fl_ep_commit(ep, s->dst, FL_LANE_REQ, pkt, FL_ST_HDR, 0);
    if (s->sent == s->total)
        unplace(fl_stream_of(ep), s);
    FL_COUNT(fl_stream_of(ep)->placed_bytes, k);
    *done = (size_t)k;
    return FLIT_OK;
}

/*
 * Commits the open packet with what it holds; more: more follows at once.
 * The header is written here, last, next to the commit: on shared memory
 * the receiver polls the packet's cache line, and every write to it while
 * the packet is open would pull the line back across.
 */
static void close_packet(struct fl_st_out *s, unsigned more)
{
    struct flit_ep *ep = s->ep;
    s->sent -= s->cap - s->fill; /* closed early: the rest goes later */
    unsigned flags = s->first_open ? FL_STF_FIRST : 0;
    if (s->sent == s->total)
        flags |= FL_STF_LAST;
    else if (s->first_open && s->placeable)
        flags |= FL_STF_PLACEABLE;
    struct fl_st_pkt h = {
        .flags = (uint8_t)flags,
        .pad = (uint8_t)(s->hdr_len - fl_st_hdr_len(flags)),
        .handler = s->handler,
        .sid = s->sid,
        .len = (uint32_t)s->fill,
        .tag = ep->peers[s->dst].tag,
        .offset = s->sent - s->fill,
        .total = s->total,
    };
    if (s->staged) /* with the header, last: see put_bytes */
        memcpy(s->pkt + s->hdr_len, s->head, s->staged);
    s->staged = 0;
    fl_st_encode(s->pkt, &h);
    ep->hold = NULL;
    fl_ep_commit(ep, s->dst, FL_LANE_REQ, s->pkt, s->hdr_len + s->fill,
                 flags & FL_STF_LAST ? 0 : more);
    s->pkt = NULL;
    if (flags & FL_STF_LAST)
        unplace(fl_stream_of(ep), s);
}

void fl_stream_flush(struct fl_hold *h)
{
    close_packet((struct fl_st_out *)h, 0);
}

/*
 * Places the open packet's payload (nothing written in it yet), where the
 * packet has slack, so that the byte `before` bytes into it sits at the same
 * offset in its line as src in its own: the copy into the packet, and the
 * receiver's copy out of it into a buffer aligned as the sender's, then
 * move whole lines. src NULL: the payload starts a line. A small header
 * held back (put_bytes: tagged messaging's tag) is the `before`: the
 * payload is placed by the bytes after it; the message's later packets each
 * by the byte they start with
 * (with the payload on a line instead, every later piece of a tagged
 * message was copied 8 bytes off its source's lines: 0.64-0.97 of the
 * stream, by where the ring's records fell).
 */
static void align_payload(struct fl_st_out *s, const void *src, size_t before)
{
    size_t hl = s->first_open ? FL_ST_FIRST_HDR : FL_ST_HDR;
    s->hdr_len = hl;
    if (s->slack)
        s->hdr_len +=
            ((uintptr_t)src - before - ((uintptr_t)s->pkt + hl)) & (FL_ST_ALIGN - 1);
}

/* Reserves the next packet of s (the first when first). A large piece's
   payload is placed in its line (wire.h, align_payload): room for the most
   padding is reserved, and what the packet's place needs is used. Over datagrams the pad
   would only take room from the payload. */
static flit_status open_packet(struct fl_st_out *s, bool first, unsigned flags)
{
    struct flit_ep *ep = s->ep;
    size_t hl = first ? FL_ST_FIRST_HDR : FL_ST_HDR;
    size_t cap = piece_room(s, hl), slack = 0;
    if (cap >= FL_ST_ALIGN_MIN && !fl_ep_datagrams(ep, s->dst)) {
        slack = FL_ST_ALIGN - 1;
        cap = piece_room(s, hl + slack);
    }
    if (first && s->placeable && cap > FL_ST_PLACE_FIRST)
        cap = FL_ST_PLACE_FIRST; /* the receiver's offer comes back sooner */
    void *pkt;
    flit_status st =
        fl_ep_reserve(ep, s->dst, FL_LANE_REQ, hl + slack + cap, flags, &pkt);
    if (st != FLIT_OK)
        return st;
    s->pkt = pkt; /* its header is written when it is closed */
    s->slack = slack != 0;
    s->first_open = first;
    align_payload(s, NULL, 0);
    s->cap = cap;
    s->fill = 0;
    s->staged = 0;
    s->sent += cap; /* planned; a packet closed early gives some back */
    ep->hold = &s->hold;
    return FLIT_OK;
}

/* A slot for a new message; its handle (stream.h) valid from now on. */
static struct fl_st_out *out_get(struct fl_stream_ep *se)
{
    struct fl_st_out *s = se->free_out;
    if (__builtin_expect(s != NULL, 1)) {
        se->free_out = s->next;
    } else {
        s = fl_st_take(&fl_st_out_table, sizeof *s, offsetof(struct fl_st_out, handle),
                       offsetof(struct fl_st_out, next), FL_ST_OUT);
        if (!s)
            return NULL;
        s->hold.flush = fl_stream_flush;
    }
    fl_st_bump(&s->handle);
    return s;
}

/* The message is over: its handle is stale from now on. */
static void out_put(struct fl_stream_ep *se, struct fl_st_out *s)
{
    unplace(se, s);
    s->live = false;
    fl_st_bump(&s->handle);
    s->next = se->free_out;
    se->free_out = s;
}

/* What begin refuses before anything is sent; ep entered. */
static flit_status check_begin(struct flit_ep *ep, flit_rank_t dest, flit_handler_t h,
                               unsigned flags)
{
    if (flags & ~FLIT_STREAM_NONBLOCK)
        return FLIT_ERR_INVALID_ARG;
    if (dest.idx >= ep->size)
        return FLIT_ERR_RANK;
    if (h.idx >= ep->handler_count)
        return FLIT_ERR_BAD_HANDLER;
    if (fl_peer_is_down(&ep->peers[dest.idx]))
        return FLIT_ERR_PEER_DOWN;
    return FLIT_OK;
}

/* A new message s, nothing sent yet. Field by field: a compound literal
   clears the whole struct first, with a string instruction slower than
   the rest of the call. open_packet sets the packet's fields. */
static void init_out(struct fl_st_out *s, struct flit_ep *ep, uint32_t dst,
                     uint32_t handler, size_t total)
{
    s->ep = ep;
    s->dst = dst;
    s->handler = handler;
    s->live = true;
    s->error = FLIT_OK;
    s->total = total;
    s->sent = 0;
    s->pkt = NULL;
    s->placeable = false;
}

/* A message of total bytes to dst, its first packet reserved: its number,
   and it is counted. Numbered only now: waiting for room may have let
   another thread in (a thread-safe endpoint), and it may have opened a
   message to the same rank meanwhile. */
static uint32_t number_next(struct fl_stream_ep *se, struct flit_ep *ep, uint32_t dst,
                            uint64_t total)
{
    FL_COUNT(se->sent_msgs, 1);
    FL_COUNT(se->sent_bytes, total);
    FL_COUNT(ep->peers[dst].sent, 1);
    return se->next_sid[dst]++;
}

static void number(struct fl_stream_ep *se, struct fl_st_out *s)
{
    s->sid = number_next(se, s->ep, s->dst, s->total);
}

/* Opens message s and its first packet; ep entered, check_begin passed. */
static flit_status start(struct fl_stream_ep *se, struct fl_st_out *s, struct flit_ep *ep,
                         uint32_t dst, uint32_t handler, size_t total, unsigned flags)
{
    init_out(s, ep, dst, handler, total);
    s->placeable = can_place(ep, dst, total);
    fl_ep_flush_hold(ep);
    flit_status st = open_packet(s, true, flags);
    if (st != FLIT_OK) {
        s->placeable = false; /* never listed */
        return st;
    }
    number(se, s);
    if (s->placeable)
        place_start(se, s);
    if (s->cap == 0) /* empty: the first packet is the last */
        close_packet(s, 0);
    return FLIT_OK;
}

flit_status flit_stream_begin(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                              size_t total, unsigned flags, flit_stream_out_t **out)
{
    flit_status st = fl_ep_enter(ep);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    st = out ? check_begin(ep, dest, h, flags) : FLIT_ERR_INVALID_ARG;
    struct fl_stream_ep *se = fl_stream_of(ep);
    struct fl_st_out *s = NULL;
    if (st == FLIT_OK && !(s = out_get(se)))
        st = FLIT_ERR_NO_MEMORY;
    if (st == FLIT_OK) {
        st = start(se, s, ep, dest.idx, h.idx, total, flags);
        if (st == FLIT_OK)
            *out = (flit_stream_out_t *)fl_st_handle(&s->handle);
        else
            out_put(se, s);
    }
    fl_ep_leave(ep);
    return st;
}

/*
 * Copies n bytes from buf into the message; more: the caller has more to
 * add at once (the last full packet may wait to share a system call).
 *
 * The packet's first line is the one the receiver polls (the record's
 * marker is there), and the transport's commit writes it last. Bytes
 * written into it long before that take the line from the polling receiver
 * once more: a header sent before a 1 KiB payload (the two-send idiom of
 * stream.h, or tagged messaging's tag) made the message 20-57% slower
 * between two cores than the same bytes in one send. So the first bytes of
 * a packet that do not end it and are under a line (a header) are held in
 * s->head and go in when it closes, with its header; and the payload is
 * placed by the bytes that come after them.
 */
static flit_status put_bytes(struct fl_st_out *s, const uint8_t *buf, size_t n, bool more)
{
    while (n) {
        if (!s->pkt && s->placeable) {
            size_t k;
            flit_status st = place(s, buf, n, &k);
            if (st != FLIT_OK) {
                s->error = st;
                return st;
            }
            buf += k;
            n -= k;
            if (k)
                continue;
        }
        if (!s->pkt) {
            flit_status st = open_packet(s, false, 0);
            if (st != FLIT_OK) {
                s->error = st;
                return st;
            }
        }
        size_t k = s->cap - s->fill < n ? s->cap - s->fill : n;
        if (s->fill == s->staged) { /* nothing in the packet itself yet */
            if (s->fill + k < s->cap && s->staged + k < FL_ST_ALIGN) {
                memcpy(s->head + s->staged, buf, k); /* k == n */
                s->staged += k;
                s->fill += k;
                return FLIT_OK;
            }
            align_payload(s, buf, s->staged);
        }
        memcpy(s->pkt + s->hdr_len + s->fill, buf, k);
        s->fill += k;
        buf += k;
        n -= k;
        if (s->fill == s->cap)
            close_packet(s, n || more ? FLIT_AM_MORE : 0);
    }
    return FLIT_OK;
}

/*
 * Enters the endpoint for a call on the open message handle h names, in
 * *out. Its handle is compared again once in: on a thread-safe endpoint
 * another thread may have ended it meanwhile (and its slot serve a new
 * message). A live handle after flit_finalize answers its status from
 * fl_ep_enter, which checks the job before it reads the endpoint.
 */
__attribute__((always_inline)) static inline flit_status
out_enter(const flit_stream_out_t *h, struct fl_st_out **out)
{
    struct fl_st_out *s = fl_st_out_of(h);
    if (__builtin_expect(!s, 0))
        return FLIT_ERR_INVALID_ARG;
    struct flit_ep *ep = s->ep;
    flit_status st = fl_ep_enter(ep);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    if (__builtin_expect(fl_st_handle(&s->handle) != (uintptr_t)h, 0)) {
        fl_ep_leave(ep);
        return FLIT_ERR_INVALID_ARG;
    }
    *out = s;
    return FLIT_OK;
}

/* Bytes of the message not yet added. */
static uint64_t unsent(const struct fl_st_out *s)
{
    return s->total - s->sent + (s->pkt ? s->cap - s->fill : 0);
}

/*
 * A gather that ends the message in its open packet, nothing in it yet (a
 * whole message sent in one call, mostly): no part is held back, the parts
 * are copied last first instead, so that the first line is written last
 * all the same (put_bytes); placed as put_bytes would, by the part after a
 * header.
 */
static void put_whole(struct fl_st_out *s, const struct iovec *iov, int iovcnt)
{
    size_t lead = iovcnt > 1 && iov[0].iov_len < FL_ST_ALIGN ? iov[0].iov_len : 0;
    align_payload(s, iov[lead ? 1 : 0].iov_base, lead);
    size_t at = s->cap;
    for (int i = iovcnt - 1; i >= 0; i--) {
        at -= iov[i].iov_len;
        if (iov[i].iov_len)
            memcpy(s->pkt + s->hdr_len + at, iov[i].iov_base, iov[i].iov_len);
    }
    s->fill = s->cap;
    close_packet(s, 0);
}

/* Adds iov's bytes (total in all) to s, in order. */
static flit_status put_iov(struct fl_st_out *s, const struct iovec *iov, int iovcnt,
                           uint64_t total)
{
    if (iovcnt > 1 && s->pkt && s->fill == 0 && total == s->cap && s->sent == s->total) {
        put_whole(s, iov, iovcnt);
        return FLIT_OK;
    }
    flit_status st = FLIT_OK;
    for (int i = 0; st == FLIT_OK && i < iovcnt; i++)
        st = put_bytes(s, iov[i].iov_base, iov[i].iov_len, i + 1 < iovcnt);
    return st;
}

/* ---- pulled messages (pull.c) ---- */

/* iov's bytes from message offset from on, in packets (the receiver of a
   pulled message could not pull them). */
static flit_status put_rest(struct fl_st_out *s, const struct iovec *iov, int iovcnt,
                            uint64_t from)
{
    s->sent = from;
    flit_status st = FLIT_OK;
    for (int i = 0; st == FLIT_OK && i < iovcnt; i++) {
        size_t len = iov[i].iov_len, skip = from < len ? (size_t)from : len;
        from -= skip;
        if (len > skip)
            st = put_bytes(s, (const uint8_t *)iov[i].iov_base + skip, len - skip,
                           i + 1 < iovcnt);
    }
    return st;
}

/* Sends s, a whole message of iov's bytes, pulled (head bytes before the
   last part, which l lends); numbered here unless fresh is false (begun
   already). */
static flit_status send_pulled(struct fl_st_out *s, const struct iovec *iov, int iovcnt,
                               size_t head, struct fl_st_lend *l, bool fresh)
{
    struct flit_ep *ep = s->ep;
    void *pkt;
    flit_status st =
        fl_ep_reserve(ep, s->dst, FL_LANE_REQ, FL_ST_PULL_HDR + head, 0, &pkt);
    if (st == FLIT_OK && fresh)
        number(fl_stream_of(ep), s);
    uint64_t from;
    if (st == FLIT_OK)
        st = fl_stream_pull_out(s, pkt, iov, iovcnt, head, l, &from);
    fl_stream_pull_unlend(ep, s->dst, l);
    if (st != FLIT_OK)
        return s->error = st;
    s->sent = from;
    return from == s->total ? FLIT_OK : put_rest(s, iov, iovcnt, from);
}

/*
 * flit_stream_send of every byte of a message just begun: its first packet
 * is still open and empty, so it may go pulled instead. Returns whether it
 * went (*st its status).
 */
static bool send_whole_pulled(struct fl_st_out *s, const void *buf, size_t n,
                              flit_status *st)
{
    struct flit_ep *ep = s->ep;
    struct fl_st_lend lend;
    if (!s->pkt || !s->first_open || s->fill || ep->hold != &s->hold || n != s->total ||
        !fl_stream_pulls(ep, s->dst, n, 0, 0) ||
        !fl_stream_pull_lend(ep, s->dst, buf, n, &lend))
        return false;
    ep->hold = NULL;
    fl_ep_cancel(ep, s->dst, FL_LANE_REQ, s->pkt);
    s->pkt = NULL;
    s->sent = 0;
    unplace(fl_stream_of(ep), s);
    *st = send_pulled(s, &(struct iovec){.iov_base = (void *)buf, .iov_len = n}, 1, 0,
                      &lend, false);
    return true;
}

flit_status flit_stream_send(flit_stream_out_t *h, const void *buf, size_t n)
{
    struct fl_st_out *s = NULL;
    flit_status st = out_enter(h, &s);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    if (n && !buf)
        st = FLIT_ERR_INVALID_ARG;
    else if (s->error)
        st = s->error;
    else if (n > unsent(s))
        st = FLIT_ERR_TOO_LARGE;
    else if (!send_whole_pulled(s, buf, n, &st))
        st = put_iov(s, &(struct iovec){.iov_base = (void *)buf, .iov_len = n}, 1, n);
    fl_ep_leave(s->ep);
    return st;
}

/* Whether iov is a valid gather list; *sum: its bytes. */
static flit_status check_iov(const struct iovec *iov, int iovcnt, uint64_t *sum)
{
    *sum = 0;
    if (iovcnt < 0 || (iovcnt && !iov))
        return FLIT_ERR_INVALID_ARG;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len && !iov[i].iov_base)
            return FLIT_ERR_INVALID_ARG;
        if (iov[i].iov_len > UINT64_MAX - *sum)
            return FLIT_ERR_TOO_LARGE;
        *sum += iov[i].iov_len;
    }
    return FLIT_OK;
}

flit_status flit_stream_sendv(flit_stream_out_t *h, const struct iovec *iov, int iovcnt)
{
    struct fl_st_out *s = NULL;
    flit_status st = out_enter(h, &s);
    if (st != FLIT_OK)
        return st;
    uint64_t sum;
    st = check_iov(iov, iovcnt, &sum);
    if (st == FLIT_OK && s->error)
        st = s->error;
    if (st == FLIT_OK && sum > unsent(s))
        st = FLIT_ERR_TOO_LARGE;
    if (st == FLIT_OK)
        st = put_iov(s, iov, iovcnt, sum);
    fl_ep_leave(s->ep);
    return st;
}

/*
 * A short message in one piece goes in one packet, reserved, filled and
 * committed here: the packet the general path would make, to the byte,
 * without its message and packet state (opening both, staging the first
 * bytes, closing both took 743 instructions of a 16-byte message, by
 * callgrind). The payload is copied first and the header written last, by
 * the commit (fl_ep_reserve says why). ep entered, check_begin passed.
 */
static flit_status send_short(struct flit_ep *ep, uint32_t dst, uint32_t handler,
                              const void *buf, size_t len, unsigned flags)
{
    void *pkt;
    flit_status st =
        fl_ep_reserve(ep, dst, FL_LANE_REQ, FL_ST_FIRST_HDR + len, flags, &pkt);
    if (st != FLIT_OK)
        return st;
    if (len)
        memcpy((uint8_t *)pkt + FL_ST_FIRST_HDR, buf, len);
    struct fl_st_pkt h = {
        .flags = FL_STF_FIRST | FL_STF_LAST,
        .handler = handler,
        .sid = number_next(fl_stream_of(ep), ep, dst, len),
        .len = (uint32_t)len,
        .tag = ep->peers[dst].tag,
        .total = len,
    };
    fl_st_encode(pkt, &h);
    fl_ep_commit(ep, dst, FL_LANE_REQ, pkt, FL_ST_FIRST_HDR + len, 0);
    return FLIT_OK;
}

/* Whether a message of iovcnt pieces, total bytes, goes by send_short:
   one piece (or none) of at most FL_ST_SHORT bytes that one packet holds,
   and not pulled. */
static bool is_short(struct flit_ep *ep, uint32_t dst, int iovcnt, uint64_t total,
                     unsigned flags)
{
    return iovcnt <= 1 && total <= FL_ST_SHORT &&
           total <= fl_ep_piece_size(ep, dst, FL_ST_FIRST_HDR) &&
           !(iovcnt && fl_stream_pulls(ep, dst, total, 0, flags));
}

flit_status flit_stream_sendmsg(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                const struct iovec *iov, int iovcnt, unsigned flags)
{
    flit_status st = fl_ep_enter(ep);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    uint64_t total;
    st = check_iov(iov, iovcnt, &total);
    if (st == FLIT_OK && total > SIZE_MAX)
        st = FLIT_ERR_TOO_LARGE;
    if (st == FLIT_OK)
        st = check_begin(ep, dest, h, flags);
    if (st == FLIT_OK && is_short(ep, dest.idx, iovcnt, total, flags)) {
        fl_ep_flush_hold(ep);
        st = send_short(ep, dest.idx, h.idx, iovcnt ? iov[0].iov_base : NULL,
                        (size_t)total, flags);
    } else if (st == FLIT_OK) {
        /* The message ends inside this call (its last packet closes when
           its last byte is in), so it lives on the stack. */
        struct fl_st_out s;
        s.hold.flush = fl_stream_flush;
        size_t head = iovcnt ? (size_t)total - iov[iovcnt - 1].iov_len : 0;
        struct fl_st_lend lend;
        if (iovcnt && fl_stream_pulls(ep, dest.idx, total, head, flags) &&
            fl_stream_pull_lend(ep, dest.idx, iov[iovcnt - 1].iov_base,
                                iov[iovcnt - 1].iov_len, &lend)) {
            init_out(&s, ep, dest.idx, h.idx, (size_t)total);
            fl_ep_flush_hold(ep);
            st = send_pulled(&s, iov, iovcnt, head, &lend, true);
        } else if ((st = start(fl_stream_of(ep), &s, ep, dest.idx, h.idx, (size_t)total,
                               flags)) == FLIT_OK) {
            st = put_iov(&s, iov, iovcnt, total);
            unplace(fl_stream_of(ep), &s); /* still listed after a failure */
        }
    }
    fl_ep_leave(ep);
    return st;
}

flit_status flit_stream_end(flit_stream_out_t *h)
{
    struct fl_st_out *s = NULL;
    flit_status st = out_enter(h, &s);
    if (st != FLIT_OK)
        return st;
    struct flit_ep *ep = s->ep;
    if (s->error) { /* no packet is open: opening one failed */
        st = s->error;
        out_put(fl_stream_of(ep), s);
    } else if (unsent(s)) {
        st = FLIT_ERR_INVALID_ARG;
    } else {
        out_put(fl_stream_of(ep), s);
    }
    fl_ep_leave(ep);
    return st;
}
