/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit streams: messages as byte streams, with the semantics of Illinois
 * Fast Messages 2.x.
 *
 * A sender opens a message to a rank and a stream handler with its total
 * length, adds pieces of any size from anywhere in memory (gather: each
 * piece is copied once, straight into the packet on its way out), and
 * closes it. Packets leave as they fill, so a long message is pipelined:
 * the receiver's handler is already taking the first bytes while the sender
 * is still adding the last.
 *
 *     flit_stream_out_t *s;
 *     flit_stream_begin(ep, dest, MY_HANDLER, sizeof hdr + n, 0, &s);
 *     flit_stream_send(s, &hdr, sizeof hdr);
 *     flit_stream_send(s, payload, n);
 *     flit_stream_end(s);
 *
 * The stream handler starts when the message's first packet arrives, not
 * when the whole message has. Inside it, flit_stream_recv takes the next
 * bytes into any buffer the handler chooses (scatter): typically a header
 * first, then the payload straight into its final place.
 *
 *     static void on_msg(flit_stream_t *s, size_t total, void *user)
 *     {
 *         struct hdr h;
 *         flit_stream_recv(s, &h, sizeof h);
 *         flit_stream_recv(s, place_for(&h), total - sizeof h);
 *     }
 *
 * When the bytes asked for have not arrived yet, the handler waits there
 * while the endpoint goes on handling other messages: any number of
 * handlers of interleaved messages, from one sender or many, may be waiting
 * at once, and a long message from one sender never holds up another. A
 * handler whose whole message is in the packet at hand (every message up
 * to the transport's packet size) runs inline on the caller's stack; one
 * whose bytes are still on the wire runs on a fiber, a stack of its own
 * from a pool, so that it can wait. Bytes a handler does not take are
 * discarded when it returns.
 *
 * Guarantees, on every transport: streams from one rank to another start
 * their handlers in the order their flit_stream_begin calls were made,
 * interleaved in that order with active-message requests; each handler
 * runs exactly once; a message that cannot be delivered (no stream handler
 * at that index, wrong tag, peer down before it was taken) comes back to
 * the returned-message handler of <flit/am.h> with kind FLIT_AM_STREAM.
 *
 * One copy on shared memory: a handler that receives into its endpoint's
 * segment (flit_ep_segment) gets the bytes it waits for written there by
 * the sender itself, which maps the segment, instead of copied through the
 * rings; the receiver offers that place, only for the bytes it waits for,
 * and the sender uses it for those it has not sent yet (messages of 64 KiB
 * and more). Nothing changes in the calls: recv returns when the bytes are
 * in, wherever they came by.
 *
 * Flow control: the receiver takes packets when it makes progress
 * (flit_poll, flit_wait, a blocked send) or only as many as it asks for
 * (flit_extract). What it has not taken holds back its senders' credits:
 * a sender whose receiver is slow waits in flit_stream_begin / send (making
 * progress on its own endpoint meanwhile), nothing is dropped, and no
 * buffer grows.
 */
#ifndef FLIT_STREAM_H
#define FLIT_STREAM_H

#include <sys/uio.h>

#include <flit/flit.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The sender's handle of an open message; valid until flit_stream_end,
 * after which its calls answer FLIT_ERR_INVALID_ARG, also once a later
 * message uses its slot. Both handles are opaque values, not addresses.
 */
typedef struct flit_stream_out flit_stream_out_t;
/* The receiver's handle, given to the handler; valid while it runs, and
   only on the thread it runs on: otherwise FLIT_ERR_BAD_TOKEN. */
typedef struct flit_stream flit_stream_t;

/*
 * Runs once per message, during progress, from the moment its first packet
 * arrives. total: the message's length as its sender declared it.
 */
typedef void (*flit_stream_handler_fn)(flit_stream_t *stream, size_t total, void *user);

/*
 * Installs fn at index h of the endpoint's stream-handler table (fn NULL
 * removes it). The table is separate from the active-message handlers' and
 * has as many entries (FLIT_EP_PARAM_HANDLER_COUNT).
 */
FLIT_API flit_status flit_stream_register(flit_ep_t *ep, flit_handler_t h,
                                          flit_stream_handler_fn fn, void *user);

/*
 * The same with flags: FLIT_STREAM_FIBER starts the handler on a fiber even
 * when its whole message is in the first packet, so that it may park
 * (below). It costs a fiber switch per message (tens of nanoseconds with
 * flit's own switch). FLIT_ERR_INVALID_ARG for unknown flags.
 */
#define FLIT_STREAM_FIBER (1u << 0)
FLIT_API flit_status flit_stream_register_flags(flit_ep_t *ep, flit_handler_t h,
                                                flit_stream_handler_fn fn, void *user,
                                                unsigned flags);

/* ---- sending ---- */

/* flit_stream_begin flags. */
#define FLIT_STREAM_NONBLOCK                                                             \
    FLIT_AM_NONBLOCK /* FLIT_ERR_AGAIN instead of                                        \
                        waiting for room */

/*
 * Opens a message of exactly total bytes to dest's stream handler h.
 * Waits for room for the first packet (making progress meanwhile) unless
 * FLIT_STREAM_NONBLOCK. Refuses, rather than wait for what could never come:
 * FLIT_ERR_IN_HANDLER inside any handler (its wait could need the very
 * handler it runs in), FLIT_ERR_PEER_DOWN for a dead peer. Several messages
 * may be open at once, to one rank or many.
 */
FLIT_API flit_status flit_stream_begin(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                       size_t total, unsigned flags,
                                       flit_stream_out_t **out);

/*
 * Adds the next n bytes of the message; buf may be reused on return.
 * FLIT_ERR_TOO_LARGE (nothing sent) if they would pass the declared total.
 * Waits for room as needed; FLIT_ERR_PEER_DOWN if the peer died (the
 * message is then lost: end it).
 */
FLIT_API flit_status flit_stream_send(flit_stream_out_t *s, const void *buf, size_t n);
/* The same for iovcnt pieces gathered from iov, in order. */
FLIT_API flit_status flit_stream_sendv(flit_stream_out_t *s, const struct iovec *iov,
                                       int iovcnt);

/*
 * Closes the message and frees s. FLIT_ERR_INVALID_ARG, with s still open,
 * when fewer than total bytes were sent. After FLIT_ERR_PEER_DOWN from a
 * send it frees s and answers FLIT_ERR_PEER_DOWN again.
 */
FLIT_API flit_status flit_stream_end(flit_stream_out_t *s);

/*
 * A whole message in one call: begin, sendv of iovcnt pieces (their sum is
 * the total) and end, with the same waits, flags (FLIT_STREAM_NONBLOCK: for
 * the first packet) and errors, and FLIT_ERR_INVALID_ARG for iovcnt < 0, a
 * NULL iov with iovcnt > 0 or a NULL base with a length. Cheaper than the
 * three calls: one entry into the endpoint, no message handle. A large one
 * to a rank on this host may be pulled by its receiver from iov's last
 * part (FLIT_SHM_RNDV, docs/streams.md; so may one flit_stream_send of a
 * whole message just begun): the call then returns once the receiver's
 * handler has its bytes or has returned, making progress meanwhile.
 */
FLIT_API flit_status flit_stream_sendmsg(flit_ep_t *ep, flit_rank_t dest,
                                         flit_handler_t h, const struct iovec *iov,
                                         int iovcnt, unsigned flags);

/* ---- receiving: inside the stream's handler only ---- */

/*
 * Takes exactly the next n bytes of the message into buf, waiting for them
 * as needed (the endpoint handles other messages meanwhile).
 * FLIT_ERR_TOO_LARGE, with nothing taken, when fewer than n remain;
 * FLIT_ERR_PEER_DOWN when the sender died before sending them (the bytes
 * that did arrive are in buf); FLIT_ERR_BAD_TOKEN for a handle whose
 * handler has returned; FLIT_ERR_INVALID_ARG for a NULL handle, or a NULL
 * buf with n > 0.
 */
FLIT_API flit_status flit_stream_recv(flit_stream_t *s, void *buf, size_t n);
/* The same, scattered over iovcnt buffers in order; FLIT_ERR_INVALID_ARG
   also for iovcnt < 0, a NULL iov with iovcnt > 0, or a NULL base with a
   length. */
FLIT_API flit_status flit_stream_recvv(flit_stream_t *s, const struct iovec *iov,
                                       int iovcnt);
/* Passes over the next n bytes without copying them anywhere; the same
   statuses as flit_stream_recv. */
FLIT_API flit_status flit_stream_skip(flit_stream_t *s, size_t n);
/*
 * The bytes of the message that are here now, where they arrived: *data
 * points at the next byte flit_stream_recv would take, and *n bytes follow
 * it in the packet at hand (0 when none is at hand: the rest is still to
 * come, or nothing remains). Takes nothing and never waits: read a header
 * in place, then take or skip. The bytes stay valid until the next call on
 * s or the handler's return. FLIT_ERR_BAD_TOKEN for a handle whose handler
 * has returned; FLIT_ERR_INVALID_ARG for a NULL argument.
 */
FLIT_API flit_status flit_stream_peek(flit_stream_t *s, const void **data, size_t *n);

/* Bytes of the message not yet taken; 0 for a dead handle. */
FLIT_API size_t flit_stream_remaining(const flit_stream_t *s);
/* The sender; flit_rank(UINT32_MAX) for a dead handle. */
FLIT_API flit_rank_t flit_stream_rank(const flit_stream_t *s);
FLIT_API flit_ep_t *flit_stream_ep(const flit_stream_t *s);

/* ---- waiting inside a handler ---- */

/*
 * For layers whose handlers block (an RPC procedure waiting for a lock or a
 * nested call): a handler on a fiber that has taken every byte of its
 * message may park. flit_stream_park returns once flit_stream_unpark(s) has
 * been called (before or after it, from any thread or handler; several
 * calls before one park count once), the endpoint handling other messages
 * meanwhile; the handler resumes during the endpoint's next progress pass
 * (flit_poll, flit_wait, ...), in handler context again, possibly on
 * another thread of a thread-safe endpoint. Statuses of flit_stream_park:
 * FLIT_ERR_NOT_SUPPORTED for a handler running inline (register it with
 * FLIT_STREAM_FIBER); FLIT_ERR_AGAIN while bytes of the message remain (take
 * or skip them first); FLIT_ERR_BAD_TOKEN for a handle whose handler
 * returned, FLIT_ERR_INVALID_ARG for NULL; FLIT_ERR_PEER_DOWN or
 * FLIT_ERR_FINALIZED when the sender dies or the endpoint closes while it
 * is parked (it should then return). flit_stream_unpark: FLIT_ERR_INVALID_ARG
 * for NULL, FLIT_ERR_BAD_TOKEN for a handle whose handler returned.
 */
FLIT_API flit_status flit_stream_park(flit_stream_t *s);
FLIT_API flit_status flit_stream_unpark(flit_stream_t *s);

/*
 * From inside any handler of ep: runs fn(s, 0, user) at once, as the
 * handler of a message of no bytes from rank, on a fiber of its own (a
 * pooled stack: a few tens of nanoseconds), so that it may park like any
 * handler on a fiber. Returns when fn returns or first parks; a parked fn
 * goes on in a later progress pass and ends with FLIT_ERR_PEER_DOWN from
 * flit_stream_park if rank dies meanwhile, FLIT_ERR_FINALIZED if the
 * endpoint closes. The handler that called it keeps its own context (a
 * request handler's token stays valid until fn parks or returns). This is
 * how a layer runs code that blocks only sometimes: a procedure started
 * from an active-message handler that may wait for a lock (Orca's handler
 * threads: a stack of their own, made a thread only when they block).
 * FLIT_ERR_INVALID_ARG for a NULL fn or outside any handler, FLIT_ERR_RANK
 * for a rank outside the job, FLIT_ERR_NO_MEMORY when no stack can be had.
 */
FLIT_API flit_status flit_stream_spawn(flit_ep_t *ep, flit_rank_t rank,
                                       flit_stream_handler_fn fn, void *user);

/* ---- receiver pacing ---- */

/*
 * Runs handlers for about max_bytes of incoming data (whole packets: it
 * stops at the first packet that reaches max_bytes) and leaves the rest
 * where it is, holding back its senders. FLIT_OK when it took something,
 * FLIT_ERR_AGAIN when nothing was waiting. Never blocks. max_bytes 0 is
 * FLIT_ERR_INVALID_ARG.
 */
FLIT_API flit_status flit_extract(flit_ep_t *ep, size_t max_bytes);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_STREAM_H */
