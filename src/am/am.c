/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Active Message sends: requests from the program, replies from request
 * handlers. Validation is complete here, so what reaches the transport is
 * always well formed; what only the destination can judge (handler, tag,
 * its segment) comes back as a returned message.
 */
#include "am/am.h"

#include <string.h>

#include "core/pieces.h"

#include "util/config.h"
#include "util/log.h"

#define KNOWN_FLAGS (FLIT_AM_NONBLOCK | FLIT_AM_MORE)

static flit_status check_args(const uint32_t *args, unsigned nargs)
{
    if (nargs > FLIT_AM_MAX_ARGS)
        return FLIT_ERR_NARGS;
    if (nargs && !args)
        return FLIT_ERR_INVALID_ARG;
    return FLIT_OK;
}

static void fill(struct fl_am_msg *m, uint8_t op, bool reply, flit_handler_t h,
                 uint64_t tag, unsigned nargs)
{
    m->op = op;
    m->flags = reply ? FL_AMF_REPLY : 0;
    m->nargs = (uint8_t)nargs;
    m->handler = h.idx;
    m->aux = 0;
    m->tag = tag;
    m->base = m->total = m->piece = 0;
    m->payload_len = 0;
}

/* One packet, built in place: header, arguments, payload. */
static flit_status send_msg(struct flit_ep *ep, uint32_t dst, unsigned lane,
                            const struct fl_am_msg *m, const uint32_t *args,
                            const void *payload, unsigned flags)
{
    size_t hl = fl_am_hdr_len(m->op, m->nargs);
    void *pkt;
    flit_status st = fl_ep_reserve(ep, dst, lane, hl + m->payload_len, flags, &pkt);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    /* The payload first, the header last (fl_ep_reserve). */
    if (m->payload_len)
        memcpy((uint8_t *)pkt + hl, payload, m->payload_len);
    fl_am_encode(pkt, m, args);
    fl_ep_commit(ep, dst, lane, pkt, hl + m->payload_len, flags);
    return FLIT_OK;
}

static void count_sent(struct flit_ep *ep, uint32_t dst, flit_am_kind kind, bool reply,
                       size_t nbytes)
{
    unsigned k = fl_am_stat(kind, reply);
    struct fl_am_ep *a = fl_am_of(ep);
    FL_COUNT(a->sent_msgs[k], 1);
    FL_COUNT(a->sent_bytes[k], nbytes);
    FL_COUNT(ep->peers[dst].sent, 1);
}

/* Framing of a long payload's pieces: FRAG packets, the arguments on the
   last one (its handler runs then). */
struct frag_frame {
    const struct fl_am_msg *m;
    const uint32_t *args;
};

static size_t frag_hdr_len(void *arg, const struct fl_piece *p)
{
    const struct frag_frame *f = arg;
    return fl_am_hdr_len(FL_OP_AM_FRAG, p->last ? f->m->nargs : 0);
}

static void frag_write_hdr(void *arg, uint8_t *pkt, const struct fl_piece *p)
{
    const struct frag_frame *f = arg;
    struct fl_am_msg piece = *f->m;
    piece.op = FL_OP_AM_FRAG;
    piece.flags = (uint8_t)(f->m->flags | (p->last ? FL_AMF_FINAL : 0));
    piece.nargs = p->last ? f->m->nargs : 0;
    piece.piece = p->off;
    piece.payload_len = p->len;
    fl_am_encode(pkt, &piece, f->args);
}

/*
 * A long payload in pieces through the lane (no direct path to the peer's
 * segment, or the destination would refuse it), by the core's one way of
 * sending in pieces (core/pieces.h).
 */
static flit_status send_pieces(struct flit_ep *ep, uint32_t dst, unsigned lane,
                               struct fl_am_msg *m, const uint32_t *args,
                               const uint8_t *src, size_t nbytes, unsigned flags)
{
    m->total = nbytes;
    struct frag_frame frame = {m, args};
    struct fl_pieces f = {.max_hdr = fl_am_hdr_len(FL_OP_AM_FRAG, m->nargs),
                          .hdr_len = frag_hdr_len,
                          .write_hdr = frag_write_hdr,
                          .arg = &frame};
    return fl_ep_send_pieces(ep, dst, lane, &f, src, nbytes, flags);
}

/*
 * Straight into the destination's segment, then the header. The header's
 * room is reserved first, so a non-blocking send that finds none leaves the
 * segment untouched. *in_pieces: the data must go in pieces instead (the
 * kernel refused the direct path; the payload is too small to be worth it;
 * or the destination would refuse the tag: in pieces it judges the message
 * before any byte lands, and returns it).
 */
static flit_status send_direct(struct flit_ep *ep, uint32_t dst, unsigned lane,
                               const struct fl_am_msg *m, const uint32_t *args,
                               const void *buf, size_t nbytes, unsigned flags,
                               bool *in_pieces)
{
    struct fl_peer *p = &ep->peers[dst];
    size_t hl = fl_am_hdr_len(FL_OP_AM_LONG, m->nargs);
    void *pkt;
    *in_pieces = false;
    flit_status st = fl_ep_reserve(ep, dst, lane, hl, flags, &pkt);
    if (st != FLIT_OK)
        return st;
    st = p->tp->put(p->tpe, dst, m->tag, m->base, buf, nbytes);
    if (st == FLIT_OK) {
        fl_am_encode(pkt, m, args);
        fl_ep_commit(ep, dst, lane, pkt, hl, flags);
        FL_COUNT(fl_am_of(ep)->long_direct, 1);
        return FLIT_OK;
    }
    fl_ep_cancel(ep, dst, lane, pkt);
    if (st == FLIT_ERR_NOT_SUPPORTED) {
        p->put_ok = false; /* for good: pieces from now on */
        fl_info("rank %u: no direct access to its segment; long payloads go in "
                "pieces",
                dst);
    }
    *in_pieces =
        st == FLIT_ERR_NOT_SUPPORTED || st == FLIT_ERR_BAD_TAG || st == FLIT_ERR_AGAIN;
    return st;
}

static flit_status send_long(struct flit_ep *ep, uint32_t dst, unsigned lane,
                             struct fl_am_msg *m, const uint32_t *args, const void *buf,
                             size_t nbytes, uint64_t offset, unsigned flags)
{
    struct fl_peer *p = &ep->peers[dst];
    if (p->seg_size == 0)
        return FLIT_ERR_NO_SEGMENT;
    if (offset > p->seg_size || nbytes > p->seg_size - offset)
        return FLIT_ERR_BOUNDS;
    m->base = offset;
    m->total = nbytes;
    if (p->put_ok && nbytes) {
        bool in_pieces;
        flit_status st =
            send_direct(ep, dst, lane, m, args, buf, nbytes, flags, &in_pieces);
        if (!in_pieces)
            return st;
    }
    if (nbytes == 0)
        return send_msg(ep, dst, lane, m, args, NULL, flags);
    return send_pieces(ep, dst, lane, m, args, buf, nbytes, flags);
}

/* Short messages go straight to the ring: the latency and rate path. */
static flit_status send_short(struct flit_ep *ep, uint32_t dst, bool reply,
                              flit_handler_t h, const uint32_t *args, unsigned nargs,
                              unsigned flags)
{
    struct fl_peer *p = &ep->peers[dst];
    if (fl_peer_is_down(p))
        return FLIT_ERR_PEER_DOWN;
    unsigned lane = reply ? FL_LANE_REP : FL_LANE_REQ;
    size_t len = fl_am_hdr_len(FL_OP_AM_SHORT, nargs);
    void *pkt;
    flit_status st = fl_ep_reserve(ep, dst, lane, len, flags, &pkt);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    fl_am_encode_short(pkt, reply, h.idx, p->tag, args, nargs);
    fl_ep_commit(ep, dst, lane, pkt, len, flags);
    count_sent(ep, dst, FLIT_AM_SHORT, reply, 0);
    return FLIT_OK;
}

/* Medium and long, requests and replies alike (shorts: send_short). */
static flit_status am_send(struct flit_ep *ep, uint32_t dst, bool reply,
                           flit_am_kind kind, flit_handler_t h, const void *buf,
                           size_t nbytes, uint64_t offset, const uint32_t *args,
                           unsigned nargs, unsigned flags)
{
    struct fl_peer *p = &ep->peers[dst];
    if (fl_peer_is_down(p))
        return FLIT_ERR_PEER_DOWN;
    unsigned lane = reply ? FL_LANE_REP : FL_LANE_REQ;
    struct fl_am_msg m;
    fill(&m, kind == FLIT_AM_MEDIUM ? FL_OP_AM_MEDIUM : FL_OP_AM_LONG, reply, h, p->tag,
         nargs);
    flit_status st;
    if (kind == FLIT_AM_MEDIUM) {
        m.payload_len = nbytes;
        st = send_msg(ep, dst, lane, &m, args, buf, flags);
    } else {
        st = send_long(ep, dst, lane, &m, args, buf, nbytes, offset, flags);
    }
    if (st == FLIT_OK)
        count_sent(ep, dst, kind, reply, nbytes);
    return st;
}

static flit_status check_payload(flit_am_kind kind, const void *buf, size_t nbytes)
{
    if (nbytes && !buf)
        return FLIT_ERR_INVALID_ARG;
    if (kind == FLIT_AM_MEDIUM && nbytes > FLIT_AM_MAX_MEDIUM)
        return FLIT_ERR_TOO_LARGE;
    return FLIT_OK;
}

static flit_status request(flit_ep_t *ep, flit_rank_t dest, flit_am_kind kind,
                           flit_handler_t h, const void *buf, size_t nbytes,
                           uint64_t offset, const uint32_t *args, unsigned nargs,
                           unsigned flags)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (dest.idx >= ep->size)
        st = FLIT_ERR_RANK;
    else if (flags & ~KNOWN_FLAGS)
        st = FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK)
        st = check_args(args, nargs);
    if (st == FLIT_OK)
        st = check_payload(kind, buf, nbytes);
    if (st == FLIT_OK)
        st = am_send(ep, dest.idx, false, kind, h, buf, nbytes, offset, args, nargs,
                     flags);
    fl_ep_leave(ep);
    return st;
}

flit_status flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                          const uint32_t *args, unsigned nargs, unsigned flags)
{
    flit_status st = fl_ep_enter(ep);
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    if (dest.idx >= ep->size)
        st = FLIT_ERR_RANK;
    else if (flags & ~KNOWN_FLAGS)
        st = FLIT_ERR_INVALID_ARG;
    else
        st = check_args(args, nargs);
    if (st == FLIT_OK)
        st = send_short(ep, dest.idx, false, h, args, nargs, flags);
    fl_ep_leave(ep);
    return st;
}

flit_status flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                           const void *buf, size_t nbytes, const uint32_t *args,
                           unsigned nargs, unsigned flags)
{
    return request(ep, dest, FLIT_AM_MEDIUM, h, buf, nbytes, 0, args, nargs, flags);
}

flit_status flit_am_long(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                         const void *buf, size_t nbytes, uint64_t dest_offset,
                         const uint32_t *args, unsigned nargs, unsigned flags)
{
    return request(ep, dest, FLIT_AM_LONG, h, buf, nbytes, dest_offset, args, nargs,
                   flags);
}

/* The slot of a token that may reply, in *out. Replies run inside the
   request handler, on the endpoint already entered. */
static flit_status reply_check(const flit_token_t *token, struct fl_token **out)
{
    flit_status st = fl_job_check();
    if (st != FLIT_OK)
        return st;
    struct fl_token *t = fl_token_get(token);
    if (!t)
        return FLIT_ERR_BAD_TOKEN;
    if (t->no_send)
        return FLIT_ERR_REPLY_IN_REPLY;
    if (t->replied)
        return FLIT_ERR_ALREADY_REPLIED;
    *out = t;
    return FLIT_OK;
}

static flit_status reply(flit_token_t *token, flit_am_kind kind, flit_handler_t h,
                         const void *buf, size_t nbytes, uint64_t offset,
                         const uint32_t *args, unsigned nargs)
{
    struct fl_token *t = NULL;
    flit_status st = reply_check(token, &t);
    if (st == FLIT_OK)
        st = check_args(args, nargs);
    if (st == FLIT_OK)
        st = check_payload(kind, buf, nbytes);
    if (st == FLIT_OK)
        st = am_send(t->ep, t->src, true, kind, h, buf, nbytes, offset, args, nargs, 0);
    if (st == FLIT_OK)
        t->replied = 1;
    return st;
}

flit_status flit_am_reply_short(flit_token_t *token, flit_handler_t h,
                                const uint32_t *args, unsigned nargs)
{
    struct fl_token *t = NULL;
    flit_status st = reply_check(token, &t);
    if (st == FLIT_OK)
        st = check_args(args, nargs);
    if (st == FLIT_OK)
        st = send_short(t->ep, t->src, true, h, args, nargs, 0);
    if (st == FLIT_OK)
        t->replied = 1;
    return st;
}

flit_status flit_am_reply_medium(flit_token_t *token, flit_handler_t h, const void *buf,
                                 size_t nbytes, const uint32_t *args, unsigned nargs)
{
    return reply(token, FLIT_AM_MEDIUM, h, buf, nbytes, 0, args, nargs);
}

flit_status flit_am_reply_long(flit_token_t *token, flit_handler_t h, const void *buf,
                               size_t nbytes, uint64_t dest_offset, const uint32_t *args,
                               unsigned nargs)
{
    return reply(token, FLIT_AM_LONG, h, buf, nbytes, dest_offset, args, nargs);
}

flit_rank_t flit_token_rank(const flit_token_t *token)
{
    const struct fl_token *t = fl_token_get(token);
    return flit_rank(t ? t->src : UINT32_MAX);
}

flit_ep_t *flit_token_ep(const flit_token_t *token)
{
    const struct fl_token *t = fl_token_get(token);
    return t ? t->ep : NULL;
}

const char *flit_am_kind_name(flit_am_kind kind, int is_reply)
{
    static const char *const names[2][4] = {
        {"request short", "request medium", "request long", "stream"},
        {"reply short", "reply medium", "reply long", "stream"},
    };
    if ((unsigned)kind > FLIT_AM_STREAM)
        return "unknown";
    return names[is_reply ? 1 : 0][kind];
}
