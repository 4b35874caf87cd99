/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AM-2 requests and replies, the dispatch of arriving messages to AM-2
 * handlers, and returned messages (handler 0). The handler-index layout is
 * in amudp_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amudp_internal.h"

/* Argument lists of 1 .. 16 int32_t: types and values. */
#define AMX_T1  int32_t
#define AMX_T2  AMX_T1, int32_t
#define AMX_T3  AMX_T2, int32_t
#define AMX_T4  AMX_T3, int32_t
#define AMX_T5  AMX_T4, int32_t
#define AMX_T6  AMX_T5, int32_t
#define AMX_T7  AMX_T6, int32_t
#define AMX_T8  AMX_T7, int32_t
#define AMX_T9  AMX_T8, int32_t
#define AMX_T10 AMX_T9, int32_t
#define AMX_T11 AMX_T10, int32_t
#define AMX_T12 AMX_T11, int32_t
#define AMX_T13 AMX_T12, int32_t
#define AMX_T14 AMX_T13, int32_t
#define AMX_T15 AMX_T14, int32_t
#define AMX_T16 AMX_T15, int32_t
#define AMX_V1  (int32_t) a[0]
#define AMX_V2  AMX_V1, (int32_t)a[1]
#define AMX_V3  AMX_V2, (int32_t)a[2]
#define AMX_V4  AMX_V3, (int32_t)a[3]
#define AMX_V5  AMX_V4, (int32_t)a[4]
#define AMX_V6  AMX_V5, (int32_t)a[5]
#define AMX_V7  AMX_V6, (int32_t)a[6]
#define AMX_V8  AMX_V7, (int32_t)a[7]
#define AMX_V9  AMX_V8, (int32_t)a[8]
#define AMX_V10 AMX_V9, (int32_t)a[9]
#define AMX_V11 AMX_V10, (int32_t)a[10]
#define AMX_V12 AMX_V11, (int32_t)a[11]
#define AMX_V13 AMX_V12, (int32_t)a[12]
#define AMX_V14 AMX_V13, (int32_t)a[13]
#define AMX_V15 AMX_V14, (int32_t)a[14]
#define AMX_V16 AMX_V15, (int32_t)a[15]

/* Calls an AM-2 short handler with its n arguments, as its prototype says. */
static void call_short(amudp_handler_fn_t f, void *t, const uint32_t *a, unsigned n)
{
    switch (n) {
    case 0:
        ((void (*)(void *))f)(t);
        break;
    case 1:
        ((void (*)(void *, AMX_T1))f)(t, AMX_V1);
        break;
    case 2:
        ((void (*)(void *, AMX_T2))f)(t, AMX_V2);
        break;
    case 3:
        ((void (*)(void *, AMX_T3))f)(t, AMX_V3);
        break;
    case 4:
        ((void (*)(void *, AMX_T4))f)(t, AMX_V4);
        break;
    case 5:
        ((void (*)(void *, AMX_T5))f)(t, AMX_V5);
        break;
    case 6:
        ((void (*)(void *, AMX_T6))f)(t, AMX_V6);
        break;
    case 7:
        ((void (*)(void *, AMX_T7))f)(t, AMX_V7);
        break;
    case 8:
        ((void (*)(void *, AMX_T8))f)(t, AMX_V8);
        break;
    case 9:
        ((void (*)(void *, AMX_T9))f)(t, AMX_V9);
        break;
    case 10:
        ((void (*)(void *, AMX_T10))f)(t, AMX_V10);
        break;
    case 11:
        ((void (*)(void *, AMX_T11))f)(t, AMX_V11);
        break;
    case 12:
        ((void (*)(void *, AMX_T12))f)(t, AMX_V12);
        break;
    case 13:
        ((void (*)(void *, AMX_T13))f)(t, AMX_V13);
        break;
    case 14:
        ((void (*)(void *, AMX_T14))f)(t, AMX_V14);
        break;
    case 15:
        ((void (*)(void *, AMX_T15))f)(t, AMX_V15);
        break;
    case 16:
        ((void (*)(void *, AMX_T16))f)(t, AMX_V16);
        break;
    }
}

/* The same for medium and long handlers: nbytes is passed as a size_t, so
   that handlers declared with int or size_t both read it right. */
static void call_bulk(amudp_handler_fn_t f, void *t, void *buf, size_t nbytes,
                      const uint32_t *a, unsigned n)
{
    switch (n) {
    case 0:
        ((void (*)(void *, void *, size_t))f)(t, buf, nbytes);
        break;
    case 1:
        ((void (*)(void *, void *, size_t, AMX_T1))f)(t, buf, nbytes, AMX_V1);
        break;
    case 2:
        ((void (*)(void *, void *, size_t, AMX_T2))f)(t, buf, nbytes, AMX_V2);
        break;
    case 3:
        ((void (*)(void *, void *, size_t, AMX_T3))f)(t, buf, nbytes, AMX_V3);
        break;
    case 4:
        ((void (*)(void *, void *, size_t, AMX_T4))f)(t, buf, nbytes, AMX_V4);
        break;
    case 5:
        ((void (*)(void *, void *, size_t, AMX_T5))f)(t, buf, nbytes, AMX_V5);
        break;
    case 6:
        ((void (*)(void *, void *, size_t, AMX_T6))f)(t, buf, nbytes, AMX_V6);
        break;
    case 7:
        ((void (*)(void *, void *, size_t, AMX_T7))f)(t, buf, nbytes, AMX_V7);
        break;
    case 8:
        ((void (*)(void *, void *, size_t, AMX_T8))f)(t, buf, nbytes, AMX_V8);
        break;
    case 9:
        ((void (*)(void *, void *, size_t, AMX_T9))f)(t, buf, nbytes, AMX_V9);
        break;
    case 10:
        ((void (*)(void *, void *, size_t, AMX_T10))f)(t, buf, nbytes, AMX_V10);
        break;
    case 11:
        ((void (*)(void *, void *, size_t, AMX_T11))f)(t, buf, nbytes, AMX_V11);
        break;
    case 12:
        ((void (*)(void *, void *, size_t, AMX_T12))f)(t, buf, nbytes, AMX_V12);
        break;
    case 13:
        ((void (*)(void *, void *, size_t, AMX_T13))f)(t, buf, nbytes, AMX_V13);
        break;
    case 14:
        ((void (*)(void *, void *, size_t, AMX_T14))f)(t, buf, nbytes, AMX_V14);
        break;
    case 15:
        ((void (*)(void *, void *, size_t, AMX_T15))f)(t, buf, nbytes, AMX_V15);
        break;
    case 16:
        ((void (*)(void *, void *, size_t, AMX_T16))f)(t, buf, nbytes, AMX_V16);
        break;
    }
}

/* ---------------------------------------------------------------- sending */

struct amx_msg {
    unsigned kind;
    handler_t h;
    const void *src;
    size_t nbytes;
    uintptr_t off;
    unsigned nargs;
    unsigned flags; /* a request's: FLIT_AM_NONBLOCK for a polite wait */
    uint32_t args[AMUDP_MAX_SHORT + 2]; /* room for a long's offset */
};

static amudp_category_t category(unsigned kind)
{
    return kind == AMX_SHORT    ? amudp_Short
           : kind == AMX_MEDIUM ? amudp_Medium
                                : amudp_Long;
}

static void count_sent(struct amudp_ep *ep, int reply, const struct amx_msg *m,
                       size_t wire_bytes)
{
    amudp_stats_t *s = &ep->stats;
    amudp_category_t c = category(m->kind);
    uint64_t data = 4u * m->nargs + m->nbytes;
    if (reply) {
        s->RepliesSent[c]++;
        s->ReplyDataBytesSent[c] += data;
        s->ReplyTotalBytesSent[c] += wire_bytes;
    } else {
        s->RequestsSent[c]++;
        s->RequestDataBytesSent[c] += data;
        s->RequestTotalBytesSent[c] += wire_bytes;
    }
    s->TotalBytesSent += wire_bytes;
}

/* A long request or reply: a put and a message, or the data in a medium
   message with the offset among its arguments, or (no room for two more
   arguments) ahead of its data. */
static flit_status send_long(struct amudp_ep *ep, flit_rank_t dest, flit_token_t *ft,
                             struct amx_msg *m)
{
    unsigned kind = AMX_LONG, n = m->nargs;
    const void *src = m->src;
    size_t len = m->nbytes;
    unsigned char *tmp = NULL;
    flit_status st;
    if (!ft && amx_put_xfer(ep, dest, m->h, src, len, m->off, m->args, n, &st)) {
        if (st == FLIT_OK)
            count_sent(ep, 0, m, 4u * n + len);
        return st;
    }
    if (n <= AMX_LONG_ARGS) {
        m->args[n++] = (uint32_t)m->off;
        m->args[n++] = (uint32_t)((uint64_t)m->off >> 32);
    } else {
        kind = AMX_LONGHDR;
        if (!(tmp = malloc(AMX_LONG_HDR + len)))
            return FLIT_ERR_NO_MEMORY;
        amx_put_le(tmp, m->off, 8);
        if (len)
            memcpy(tmp + AMX_LONG_HDR, src, len);
        src = tmp;
        len += AMX_LONG_HDR;
    }
    flit_handler_t fh = flit_handler((uint16_t)AMX_H_INDEX(kind, ft != NULL, m->h));
    st = ft ? flit_am_reply_medium(ft, fh, src, len, m->args, n)
            : flit_am_medium(ep->fep, dest, fh, src, len, m->args, n, m->flags);
    free(tmp);
    if (st == FLIT_OK)
        count_sent(ep, ft != NULL, m, 4u * n + len);
    return st;
}

/* Sends m to dest as a request, or as the reply of ft when it is set (dest
   unused then). Shorts and mediums are the one flit call each. */
static inline flit_status send_msg(struct amudp_ep *ep, flit_rank_t dest,
                                   flit_token_t *ft, struct amx_msg *m)
{
    if (m->kind == AMX_LONG)
        return send_long(ep, dest, ft, m);
    flit_handler_t fh = flit_handler((uint16_t)AMX_H_INDEX(m->kind, ft != NULL, m->h));
    flit_status st;
    if (m->kind == AMX_SHORT)
        st = ft ? flit_am_reply_short(ft, fh, m->args, m->nargs)
                : flit_am_short(ep->fep, dest, fh, m->args, m->nargs, m->flags);
    else
        st = ft ? flit_am_reply_medium(ft, fh, m->src, m->nbytes, m->args, m->nargs)
                : flit_am_medium(ep->fep, dest, fh, m->src, m->nbytes, m->args, m->nargs,
                                 m->flags);
    if (st == FLIT_OK)
        count_sent(ep, ft != NULL, m, 4u * m->nargs + m->nbytes);
    return st;
}

/* Checks what every request and reply takes, and gathers the arguments. */
static inline int make_msg(struct amx_msg *m, unsigned kind, handler_t h, const void *sa,
                           size_t nbytes, uintptr_t off, int numargs, va_list ap,
                           const char *fn)
{
    if (numargs < 0 || numargs > AMUDP_MAX_SHORT)
        return amx_err(AM_ERR_BAD_ARG, fn, "numargs outside 0 .. AM_MaxShort()");
    if (kind != AMX_SHORT && (nbytes > (kind == AMX_MEDIUM ? (size_t)AMUDP_MAX_MEDIUM
                                                           : (size_t)AMUDP_MAX_LONG) ||
                              (!sa && nbytes)))
        return amx_err(AM_ERR_BAD_ARG, fn,
                       "source_addr NULL, or nbytes above the maximum");
    m->kind = kind;
    m->h = h;
    m->src = sa;
    m->nbytes = nbytes;
    m->off = off;
    m->nargs = (unsigned)numargs;
    m->flags = 0;
    for (int i = 0; i < numargs; i++)
        m->args[i] = (uint32_t)va_arg(ap, int);
    return AM_OK;
}

/* A request that sleeps while its destination has no room for it
   (AMUDP_PoliteSync) instead of polling for FLIT_SPIN_US first. */
static int polite_request(struct amudp_ep *ep, flit_rank_t rank, struct amx_msg *m,
                          const char *fn)
{
    if (flit_in_handler()) /* flit refuses it there, as AM-2 does */
        return amx_status(send_msg(ep, rank, NULL, m), fn);
    m->flags = FLIT_AM_NONBLOCK;
    for (;;) {
        flit_status st = send_msg(ep, rank, NULL, m);
        if (st != FLIT_ERR_AGAIN)
            return amx_status(st, fn);
        if (amx_polite_sleep(ep) < 0)
            return amx_err(AM_ERR_RESOURCE, fn, "cannot sleep on the endpoint");
        if ((st = flit_poll(ep->fep)) != FLIT_OK) /* the room comes back here */
            return amx_status(st, fn);
    }
}

static int request(ep_t handle, amudp_node_t dest, unsigned kind, handler_t h,
                   const void *sa, size_t nbytes, uintptr_t off, int numargs, va_list ap,
                   const char *fn)
{
    struct amudp_ep *ep = amx_ep_of(handle);
    if (!ep)
        return amx_err(AM_ERR_BAD_ARG, fn, "not an endpoint");
    flit_rank_t rank;
    if (!amx_translate(ep, dest, &rank))
        return amx_err(AM_ERR_BAD_ARG, fn, "reply_endpoint: translation not in use");
    struct amx_msg m;
    int rc = make_msg(&m, kind, h, sa, nbytes, off, numargs, ap, fn);
    if (rc != AM_OK)
        return rc;
    if (ep->owed_head != AMX_NONE)
        amx_auto_flush(ep); /* AMUDP polls before each request */
    if (AMUDP_PoliteSync)
        return polite_request(ep, rank, &m, fn);
    return amx_status(send_msg(ep, rank, NULL, &m), fn);
}

static int reply(void *token, unsigned kind, handler_t h, const void *sa, size_t nbytes,
                 uintptr_t off, int numargs, va_list ap, const char *fn)
{
    struct amx_token *t = amx_token_of(token);
    if (!t || !t->ft || !t->is_request)
        return amx_err(AM_ERR_BAD_ARG, fn, "not the token of a running request handler");
    struct amx_msg m;
    int rc = make_msg(&m, kind, h, sa, nbytes, off, numargs, ap, fn);
    if (rc == AM_OK &&
        (rc = amx_status(send_msg(t->ep, flit_rank(0), t->ft, &m), fn)) == AM_OK)
        t->replied = 1;
    return rc;
}

int AMUDP_RequestVA(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                    int numargs, va_list argptr)
{
    return request(request_endpoint, reply_endpoint, AMX_SHORT, handler, NULL, 0, 0,
                   numargs, argptr, "AM_Request");
}

int AMUDP_RequestIVA(ep_t request_endpoint, amudp_node_t reply_endpoint,
                     handler_t handler, void *source_addr, size_t nbytes, int numargs,
                     va_list argptr)
{
    return request(request_endpoint, reply_endpoint, AMX_MEDIUM, handler, source_addr,
                   nbytes, 0, numargs, argptr, "AM_RequestI");
}

/* Asynchronous or not, the source may be reused when the call returns. */
int AMUDP_RequestXferVA(ep_t request_endpoint, amudp_node_t reply_endpoint,
                        handler_t handler, void *source_addr, size_t nbytes,
                        uintptr_t dest_offset, int async, int numargs, va_list argptr)
{
    (void)async;
    return request(request_endpoint, reply_endpoint, AMX_LONG, handler, source_addr,
                   nbytes, dest_offset, numargs, argptr, "AM_RequestXfer");
}

int AMUDP_ReplyVA(void *token, handler_t handler, int numargs, va_list argptr)
{
    return reply(token, AMX_SHORT, handler, NULL, 0, 0, numargs, argptr, "AM_Reply");
}

int AMUDP_ReplyIVA(void *token, handler_t handler, void *source_addr, size_t nbytes,
                   int numargs, va_list argptr)
{
    return reply(token, AMX_MEDIUM, handler, source_addr, nbytes, 0, numargs, argptr,
                 "AM_ReplyI");
}

int AMUDP_ReplyXferVA(void *token, handler_t handler, void *source_addr, size_t nbytes,
                      uintptr_t dest_offset, int numargs, va_list argptr)
{
    return reply(token, AMX_LONG, handler, source_addr, nbytes, dest_offset, numargs,
                 argptr, "AM_ReplyXfer");
}

int AMUDP_Request(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                  int numargs, ...)
{
    va_list ap;
    va_start(ap, numargs);
    int rc = request(request_endpoint, reply_endpoint, AMX_SHORT, handler, NULL, 0, 0,
                     numargs, ap, "AM_Request");
    va_end(ap);
    return rc;
}

int AMUDP_RequestI(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                   void *source_addr, size_t nbytes, int numargs, ...)
{
    va_list ap;
    va_start(ap, numargs);
    int rc = request(request_endpoint, reply_endpoint, AMX_MEDIUM, handler, source_addr,
                     nbytes, 0, numargs, ap, "AM_RequestI");
    va_end(ap);
    return rc;
}

int AMUDP_RequestXfer(ep_t request_endpoint, amudp_node_t reply_endpoint,
                      handler_t handler, void *source_addr, size_t nbytes,
                      uintptr_t dest_offset, int async, int numargs, ...)
{
    va_list ap;
    va_start(ap, numargs);
    (void)async;
    int rc = request(request_endpoint, reply_endpoint, AMX_LONG, handler, source_addr,
                     nbytes, dest_offset, numargs, ap, "AM_RequestXfer");
    va_end(ap);
    return rc;
}

int AMUDP_Reply(void *token, handler_t handler, int numargs, ...)
{
    va_list ap;
    va_start(ap, numargs);
    int rc = reply(token, AMX_SHORT, handler, NULL, 0, 0, numargs, ap, "AM_Reply");
    va_end(ap);
    return rc;
}

int AMUDP_ReplyI(void *token, handler_t handler, void *source_addr, size_t nbytes,
                 int numargs, ...)
{
    va_list ap;
    va_start(ap, numargs);
    int rc = reply(token, AMX_MEDIUM, handler, source_addr, nbytes, 0, numargs, ap,
                   "AM_ReplyI");
    va_end(ap);
    return rc;
}

int AMUDP_ReplyXfer(void *token, handler_t handler, void *source_addr, size_t nbytes,
                    uintptr_t dest_offset, int numargs, ...)
{
    va_list ap;
    va_start(ap, numargs);
    int rc = reply(token, AMX_LONG, handler, source_addr, nbytes, dest_offset, numargs,
                   ap, "AM_ReplyXfer");
    va_end(ap);
    return rc;
}

/* ---------------------------------------------------------------- returned messages */

static const char *status_name(int status)
{
    static const char *const names[] = {
        "?",           "EBADARGS",     "EBADENTRY",     "EBADTAG",
        "EBADHANDLER", "EBADSEGOFF",   "EBADLENGTH",    "EBADENDPOINT",
        "ECONGESTION", "EUNREACHABLE", "EREPLYREJECTED"};
    return status > 0 && status <= EREPLYREJECTED ? names[status] : "?";
}

static op_t opcode_of(unsigned kind, int is_reply)
{
    static const op_t ops[2][3] = {{AM_REQUEST_M, AM_REQUEST_IM, AM_REQUEST_XFER_M},
                                   {AM_REPLY_M, AM_REPLY_IM, AM_REPLY_XFER_M}};
    return ops[is_reply ? 1 : 0][category(kind)];
}

/* Hands a message that came back to handler 0, or stops the program as
   AMUDP's default handler does. */
static void deliver_returned(struct amudp_ep *ep, flit_rank_t peer, int status,
                             op_t opcode, unsigned h)
{
    struct amx_token t = {.ep = ep, .peer = peer};
    ep->stats.ReturnedMessages++;
    amudp_handler_fn_t f = ep->handler[0];
    if (!f)
        AMUDP_FatalErr("returned message: %s, opcode %d, handler %u, destination rank %u",
                       status_name(status), opcode, h, peer.idx);
    if (flit_handle_new(&amx_tokens, &t, &t.self) != FLIT_OK) /* made at AM_Init */
        AMUDP_FatalErr("returned message: no memory for its token");
    int is_req = opcode <= AM_REQUEST_XFER_M; /* AM_REQUEST_M ... AM_REPLY_XFER_M */
    amudp_category_t c =
        (amudp_category_t)((opcode - AM_REQUEST_M) % amudp_NumCategories);
    if (ep->pre)
        ep->pre(c, is_req, 0, t.self, NULL, 0, 0, NULL);
    ((void (*)(int, op_t, void *))f)(status, opcode, t.self);
    if (ep->post)
        ep->post(c, is_req);
    (void)flit_handle_free(&amx_tokens, t.self);
}

static int status_of(flit_status reason)
{
    switch (reason) {
    case FLIT_ERR_NO_HANDLER:
    case FLIT_ERR_BAD_HANDLER:
        return EBADHANDLER;
    case FLIT_ERR_BAD_TAG:
        return EBADTAG;
    case FLIT_ERR_PEER_DOWN:
    case FLIT_ERR_UNREACHABLE:
        return EUNREACHABLE;
    case FLIT_ERR_NO_SEGMENT:
        return EBADSEGOFF;
    case FLIT_ERR_BOUNDS:
        return EBADLENGTH;
    default:
        return EBADARGS;
    }
}

void amx_returned(flit_ep_t *fep, const flit_returned_t *info, void *user)
{
    (void)fep;
    struct amudp_ep *ep = (struct amudp_ep *)user;
    if (amx_seg_returned(ep, info))
        return;
    unsigned idx = info->handler.idx;
    if (idx == AMX_H_AUTO && info->nargs == 1)
        amx_auto_refused(ep, info->peer.idx, info->args[0]);
    if (idx >= AMX_H_AUTO && idx < AMX_H_COUNT)
        return; /* the library's own word, refused or to a peer gone: not the program's */
    op_t op = idx < AMX_H_REFUSED ? opcode_of(AMX_H_KIND(idx), AMX_H_IS_REPLY(idx))
                                  : AM_REQUEST_M;
    deliver_returned(ep, info->peer, status_of(info->reason), op, idx & 255);
}

/* A refusal: [status, opcode, handler]. */
void amx_refused(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                 unsigned nargs, void *user)
{
    struct amx_slot *s = (struct amx_slot *)user;
    (void)buf;
    (void)nbytes;
    if (nargs != 3)
        return;
    deliver_returned(s->ep, flit_token_rank(ft), (int)args[0], (op_t)args[1],
                     args[2] & 255);
}

/* ---------------------------------------------------------------- arriving */

/* Where a long message lands; 0 when its bounds are refused (*status). */
static int long_target(struct amudp_ep *ep, uint64_t off, size_t len, int *status)
{
    if (!ep->seg || off > ep->seglen)
        *status = EBADSEGOFF;
    else if (len > ep->seglen - off)
        *status = EBADLENGTH;
    else
        return 1;
    return 0;
}

static void refuse(struct amx_token *t, int status, unsigned kind, unsigned h)
{
    op_t op = opcode_of(kind, !t->is_request);
    if (t->is_request) {
        uint32_t words[3] = {(uint32_t)status, (uint32_t)op, h};
        flit_am_reply_short(t->ft, flit_handler(AMX_H_REFUSED), words, 3);
        return;
    }
    fprintf(stderr, "AMUDP: refused a reply from rank %u: %s, opcode %d, handler %u\n",
            amx_token_peer(t).idx, status_name(status), op, h);
}

/*
 * A long message's offset and length, and where its data is (NULL: put in
 * place already), from what it carries; 0 when it is not from this library.
 */
static int long_header(unsigned kind, const unsigned char *buf, size_t nbytes,
                       const uint32_t *args, unsigned *nargs, uint64_t *off,
                       const unsigned char **data, size_t *len)
{
    unsigned n = *nargs;
    *data = NULL;
    *len = nbytes;
    if (kind == AMX_LONG && n >= 2) {
        *nargs = n - 2;
        *off = args[n - 2] | (uint64_t)args[n - 1] << 32;
        *data = buf;
    } else if (kind == AMX_LONGHDR && nbytes >= AMX_LONG_HDR) {
        *off = amx_get_le(buf, 8);
        *data = buf + AMX_LONG_HDR;
        *len = nbytes - AMX_LONG_HDR;
    } else if (kind == AMX_PUT && n >= 3) {
        *nargs = n - 3;
        *off = args[n - 3] | (uint64_t)args[n - 2] << 32;
        *len = args[n - 1];
    } else if (kind == AMX_PUTHDR && nbytes == AMX_PUT_HDR) {
        *off = amx_get_le(buf, 8);
        *len = (size_t)amx_get_le(buf + 8, 4);
    } else {
        return 0;
    }
    return 1;
}

void amx_dispatch(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user)
{
    struct amx_slot *s = (struct amx_slot *)user;
    struct amudp_ep *ep = s->ep;
    unsigned idx = s->index, h = idx & 255, kind = AMX_H_KIND(idx);
    int is_reply = AMX_H_IS_REPLY(idx);
    struct amx_token t = {.ep = ep, .ft = ft, .is_request = !is_reply};
    if (kind >= AMX_LONG) {
        uint64_t off;
        const unsigned char *data;
        size_t len;
        int status;
        if (!long_header(kind, (const unsigned char *)buf, nbytes, args, &nargs, &off,
                         &data, &len))
            return; /* not from this library */
        if (!long_target(ep, off, len, &status)) {
            refuse(&t, status, kind, h);
            return;
        }
        buf = (char *)ep->seg + off;
        nbytes = len;
        if (data && len)
            memcpy(buf, data, len);
    }
    amudp_category_t c = category(kind);
    if (is_reply)
        ep->stats.RepliesReceived[c]++;
    else
        ep->stats.RequestsReceived[c]++;
    ep->handled++;
    if (flit_handle_new(&amx_tokens, &t, &t.self) != FLIT_OK) { /* made at AM_Init */
        refuse(&t, AM_ERR_RESOURCE, kind, h);
        return;
    }
    if (ep->pre) /* AMUDP's tracing hooks: a short shows no payload */
        ep->pre(c, !is_reply, (int)h, t.self, kind == AMX_SHORT ? NULL : buf,
                kind == AMX_SHORT ? 0 : nbytes, (int)nargs, (uint32_t *)args);
    if (kind == AMX_SHORT)
        call_short(ep->handler[h], t.self, args, nargs);
    else
        call_bulk(ep->handler[h], t.self, buf, nbytes, args, nargs);
    if (ep->post)
        ep->post(c, !is_reply);
    (void)flit_handle_free(&amx_tokens, t.self);
    if (!is_reply && !t.replied)
        amx_auto_owe(ep, flit_token_rank(ft)); /* AMUDP replies for it */
}
