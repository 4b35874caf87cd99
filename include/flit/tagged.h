/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit tagged messaging: the point-to-point core an MPI implementation
 * needs, built on <flit/stream.h> and nothing else.
 *
 * A message carries a 64-bit tag. A receive names a source (or
 * FLIT_ANY_SOURCE) and a tag (or FLIT_ANY_TAG) and takes the first message
 * that matches, in the order messages arrived; messages from one sender to
 * one receiver never overtake each other (MPI's rule).
 *
 * The data path: a message is one stream, a small header and the payload.
 * Its handler receives the header, looks for a matching posted receive and,
 * when one waits, receives the payload straight from the wire into the
 * user's buffer: no intermediate copy. An unexpected message is received
 * into a buffer of the library and copied once when its receive is posted.
 *
 * A context is created collectively on an endpoint and takes one index of
 * its stream-handler table on every rank; messages of different contexts
 * never match each other (MPI's communicators).
 *
 * Setting up: tagged messaging is a layer of the endpoint (flit/layer.h).
 * Name "tagged" among the endpoint's layers (flit_ep_params_t.layers) and
 * the endpoint is created with a context of its own, on a handler index the
 * layer reserves; flit_tagged_open hands it out, the endpoint destroys it,
 * and its counters are the endpoint's tagged.* (flit_ep_counters).
 * flit_tagged_create / flit_tagged_destroy, which make further contexts on
 * a handler the program picks, still work and are deprecated: they go in
 * the next release.
 *
 * Progress: receives complete while the endpoint makes progress: in
 * flit_tagged_wait / test / probe, and in any flit_poll or flit_wait.
 *
 * Handlers: a call that would have to wait for the network (send, recv of a
 * message not arrived yet, wait, probe, create, destroy) answers
 * FLIT_ERR_IN_HANDLER inside any handler, with nothing sent or received;
 * test and iprobe only look there (no progress can be made in a handler).
 *
 * Threads: a context may be used from every thread that may use its
 * endpoint (any, on a FLIT_THREAD_SAFE one).
 */
#ifndef FLIT_TAGGED_H
#define FLIT_TAGGED_H

#include <flit/layer.h>
#include <flit/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flit_tagged flit_tagged_t;
typedef struct flit_request flit_request_t;

#define FLIT_ANY_SOURCE UINT32_MAX /* as the rank of a receive */
#define FLIT_ANY_TAG    UINT64_MAX /* as the tag of a receive */

/*
 * What a completed receive (or a probe) found. For a probe, received is 0;
 * for a send request, source is this rank and received the length sent.
 */
typedef struct flit_tagged_info {
    flit_rank_t source;
    uint64_t tag;
    size_t length;      /* the message's length as sent */
    size_t received;    /* bytes placed in the buffer: min(length, size) */
    flit_status status; /* FLIT_OK, or FLIT_ERR_TOO_LARGE: truncated;
                           FLIT_ERR_PEER_DOWN: the sender died before the
                           whole message arrived (received: what did) */
} flit_tagged_info_t;

/* The layer's descriptor (flit/layer.h), opened on request: "tagged". */
FLIT_API extern const flit_layer_t flit_tagged_layer;

/*
 * The context of ep's tagged layer (the call to use: flit_tagged_create is
 * deprecated): made with the endpoint, the same each call, destroyed with
 * the endpoint (flit_tagged_destroy refuses it). Not collective.
 * FLIT_ERR_INVALID_ARG for a NULL ep or out, or an ep created without
 * "tagged" among its layers.
 */
FLIT_API flit_status flit_tagged_open(flit_ep_t *ep, flit_tagged_t **out);

/*
 * Deprecated: flit_tagged_open above gives the endpoint's context.
 * Collective over the job: a tagged context on ep using stream handler
 * index h on every rank. h must be free on this endpoint: the context
 * installs its handler there (replacing any) and ends with a barrier, so
 * that every rank can receive before anyone sends. A library that cannot
 * know which indices its program uses takes one with
 * flit_ep_reserve_handlers(ep, 1, &h) first.
 */
FLIT_API flit_status flit_tagged_create(flit_ep_t *ep, flit_handler_t h,
                                        flit_tagged_t **out);
/*
 * Deprecated with flit_tagged_create, whose contexts it frees (the
 * endpoint's own, from flit_tagged_open, answers FLIT_ERR_INVALID_ARG).
 * Frees the context; not collective, and before its endpoint is destroyed.
 * FLIT_ERR_AGAIN, with nothing freed, while requests are outstanding.
 * Unexpected messages nobody received are dropped (counted in the debug
 * log, FLIT_VERBOSE=2); messages arriving later come back to their senders'
 * returned-message handlers (kind FLIT_AM_STREAM, FLIT_ERR_NO_HANDLER).
 */
FLIT_API flit_status flit_tagged_destroy(flit_tagged_t *t);

/* ---- blocking ---- */

/*
 * Returns when buf may be reused (the message is on its way). dest must be
 * a rank of the job (FLIT_ERR_RANK), tag anything but FLIT_ANY_TAG
 * (FLIT_ERR_INVALID_ARG); len may be 0 (buf may then be NULL).
 */
FLIT_API flit_status flit_tagged_send(flit_tagged_t *t, flit_rank_t dest, uint64_t tag,
                                      const void *buf, size_t len);

/*
 * The same for a message gathered from iovcnt pieces, in order (FM 2.x's
 * gather send: data laid out in pieces goes without a staging copy); the
 * receiver sees one message of their total length. FLIT_ERR_INVALID_ARG
 * also for iovcnt < 0, a NULL iov with iovcnt > 0 or a piece with a length
 * and a NULL base.
 */
FLIT_API flit_status flit_tagged_sendv(flit_tagged_t *t, flit_rank_t dest, uint64_t tag,
                                       const struct iovec *iov, int iovcnt);

/*
 * Receives the first matching message into buf (at most size bytes).
 * source: a rank or FLIT_ANY_SOURCE; tag: a tag or FLIT_ANY_TAG. info may
 * be NULL. Truncation: FLIT_ERR_TOO_LARGE, info->received = size, the rest
 * of the message discarded. Inside a handler only a message that has
 * already arrived can be received (else FLIT_ERR_IN_HANDLER).
 */
FLIT_API flit_status flit_tagged_recv(flit_tagged_t *t, flit_rank_t source, uint64_t tag,
                                      void *buf, size_t size, flit_tagged_info_t *info);

/*
 * The same, waiting at most timeout_us (< 0: for ever): FLIT_ERR_TIMEOUT
 * when no message matched by then, and the receive is withdrawn (nothing
 * received). A message matched before the time passed is received whole.
 * For a caller that must look at other things now and then while it
 * waits, without a request of its own.
 */
FLIT_API flit_status flit_tagged_recv_for(flit_tagged_t *t, flit_rank_t source,
                                          uint64_t tag, void *buf, size_t size,
                                          int64_t timeout_us, flit_tagged_info_t *info);

/* ---- non-blocking: a request, completed by test or wait ---- */

/*
 * Sends as flit_tagged_send does (the message is handed to the stream
 * layer before it returns, waiting for credits like an eager MPI send);
 * the request is complete at once and exists so that code written for
 * isend/wait runs unchanged.
 */
FLIT_API flit_status flit_tagged_isend(flit_tagged_t *t, flit_rank_t dest, uint64_t tag,
                                       const void *buf, size_t len, flit_request_t **req);

/*
 * Posts a receive (source and tag as for flit_tagged_recv); buf must stay
 * valid until the request completes. A message that already arrived is
 * copied into buf at once (the request is then complete).
 */
FLIT_API flit_status flit_tagged_irecv(flit_tagged_t *t, flit_rank_t source, uint64_t tag,
                                       void *buf, size_t size, flit_request_t **req);

/*
 * The same, the message scattered over iovcnt pieces in order (their total
 * is the receive's size), with no staging copy; iov and the pieces must
 * stay valid until the request completes. FLIT_ERR_INVALID_ARG also for
 * iovcnt < 0, a NULL iov with iovcnt > 0 or a piece with a length and a
 * NULL base.
 */
FLIT_API flit_status flit_tagged_irecvv(flit_tagged_t *t, flit_rank_t source,
                                        uint64_t tag, const struct iovec *iov, int iovcnt,
                                        flit_request_t **req);

/*
 * Makes progress once; when *req is complete, frees it, sets *req to NULL,
 * *done to 1 and fills info (may be NULL); else *done = 0. The status
 * returned is the request's (FLIT_ERR_TOO_LARGE for a truncated receive).
 */
FLIT_API flit_status flit_tagged_test(flit_request_t **req, int *done,
                                      flit_tagged_info_t *info);

/*
 * Waits until *req completes (timeout_us < 0: for ever), then as test.
 * FLIT_ERR_TIMEOUT (or an error of flit_wait) leaves *req as it was.
 */
FLIT_API flit_status flit_tagged_wait(flit_request_t **req, int64_t timeout_us,
                                      flit_tagged_info_t *info);

/*
 * Waits for all n requests (NULL entries are skipped); infos may be NULL,
 * else infos[i] is filled for each request finished. Each request finished
 * is freed and its entry set to NULL. Returns the status of the first (by
 * index) request that was not OK, or FLIT_ERR_TIMEOUT: then the requests
 * that did complete are finished as said and the others stay in reqs.
 */
FLIT_API flit_status flit_tagged_waitall(size_t n, flit_request_t **reqs,
                                         int64_t timeout_us, flit_tagged_info_t *infos);

/*
 * Cancels a posted receive that has not matched yet: FLIT_OK and *req
 * NULL; FLIT_ERR_AGAIN if it already matched (wait for it instead), and for
 * a send request (complete already).
 */
FLIT_API flit_status flit_tagged_cancel(flit_request_t **req);

/* ---- probing ---- */

/*
 * Whether a matching message has arrived (or started to: its length is
 * known from its first bytes) and no receive has taken it yet; makes
 * progress once when none has. *found 0 or 1; info (may be NULL) is filled
 * when found.
 */
FLIT_API flit_status flit_tagged_iprobe(flit_tagged_t *t, flit_rank_t source,
                                        uint64_t tag, int *found,
                                        flit_tagged_info_t *info);
/* Waits until one has (timeout_us < 0: for ever; FLIT_ERR_TIMEOUT). */
FLIT_API flit_status flit_tagged_probe(flit_tagged_t *t, flit_rank_t source, uint64_t tag,
                                       int64_t timeout_us, flit_tagged_info_t *info);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_TAGGED_H */
