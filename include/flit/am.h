/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit Active Messages, with the semantics of AM-2.
 *
 * A message names a handler in the destination endpoint's handler table;
 * the handler runs once, in order with the other requests (or replies) from
 * the same sender, during the destination's flit_poll / flit_wait.
 *
 *  short   0 .. FLIT_AM_MAX_ARGS 32-bit arguments
 *  medium  arguments + up to FLIT_AM_MAX_MEDIUM bytes, handed to the handler
 *          in a library buffer (8-byte aligned) valid while it runs
 *  long    arguments + a payload deposited into the destination's segment
 *          at dest_offset before the handler runs; up to the segment's size
 *          (the payloads of two longs in flight to the same bytes land in
 *          no promised order: the handler's turn is ordered, the copy not)
 *
 * A request handler may send at most one reply, and only to the requester;
 * reply handlers and returned-message handlers may not send. A message that
 * cannot be delivered comes back to the sender's returned-message handler
 * with the reason.
 *
 * Ordering: requests from one rank to another start their handlers in the
 * order they were sent; so do replies. Replies travel on a lane of their own
 * so that a reply never waits behind requests; that is what keeps two ranks
 * flooding each other with requests free of deadlock.
 *
 * Blocking: a send that finds the destination without room keeps polling
 * its own endpoint (handlers may run inside it) until there is room. With
 * FLIT_AM_NONBLOCK it answers FLIT_ERR_AGAIN instead and sends nothing.
 * The source buffer may be reused as soon as any send returns.
 *
 * A shortage of this process's own met by a send (the first to a peer sets
 * the pair up: no file descriptor left, no memory or mapping, no room in
 * /dev/shm) answers FLIT_ERR_SYSTEM or FLIT_ERR_NO_MEMORY, sends nothing
 * and may be retried; it never makes the peer down. FLIT_ERR_PEER_DOWN
 * means the peer itself died or stopped answering.
 */
#ifndef FLIT_AM_H
#define FLIT_AM_H

#include <flit/flit.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLIT_AM_MAX_ARGS   16u
#define FLIT_AM_MAX_MEDIUM 65536u

/* Send flags. */
#define FLIT_AM_NONBLOCK (1u << 0) /* answer FLIT_ERR_AGAIN instead of waiting */
/*
 * More messages follow soon (like MSG_MORE): a transport that packs several
 * messages into one datagram (UDP) may hold this one back until the next
 * send without FLIT_AM_MORE or the next flit_poll / flit_wait. Shared memory
 * sends at once either way.
 */
#define FLIT_AM_MORE (1u << 1)

/*
 * Identifies the running handler's message; valid only while it runs. An
 * opaque value, not an address: one kept past its handler answers
 * FLIT_ERR_BAD_TOKEN (flit_token_rank an invalid rank, flit_token_ep NULL)
 * however many handlers ran since.
 */
typedef struct flit_token flit_token_t;

/*
 * buf, nbytes: medium: the payload in a library buffer, valid until the
 * handler returns; long: where it landed in the segment; short: NULL, 0.
 * args: the nargs arguments, valid until the handler returns.
 */
typedef void (*flit_am_handler_fn)(flit_token_t *token, void *buf, size_t nbytes,
                                   const uint32_t *args, unsigned nargs, void *user);

/* Installs fn at index h (fn NULL removes it). */
FLIT_API flit_status flit_am_register(flit_ep_t *ep, flit_handler_t h,
                                      flit_am_handler_fn fn, void *user);

FLIT_API flit_rank_t flit_token_rank(const flit_token_t *token);
FLIT_API flit_ep_t *flit_token_ep(const flit_token_t *token);

/* ---- requests ---- */

FLIT_API flit_status flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                   const uint32_t *args, unsigned nargs, unsigned flags);

FLIT_API flit_status flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                    const void *buf, size_t nbytes, const uint32_t *args,
                                    unsigned nargs, unsigned flags);

FLIT_API flit_status flit_am_long(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t nbytes, uint64_t dest_offset,
                                  const uint32_t *args, unsigned nargs, unsigned flags);

/* ---- replies: only from a request handler, at most once, to its sender ---- */

FLIT_API flit_status flit_am_reply_short(flit_token_t *token, flit_handler_t h,
                                         const uint32_t *args, unsigned nargs);

FLIT_API flit_status flit_am_reply_medium(flit_token_t *token, flit_handler_t h,
                                          const void *buf, size_t nbytes,
                                          const uint32_t *args, unsigned nargs);

FLIT_API flit_status flit_am_reply_long(flit_token_t *token, flit_handler_t h,
                                        const void *buf, size_t nbytes,
                                        uint64_t dest_offset, const uint32_t *args,
                                        unsigned nargs);

/* ---- returned messages ---- */

typedef enum flit_am_kind {
    FLIT_AM_SHORT = 0,
    FLIT_AM_MEDIUM = 1,
    FLIT_AM_LONG = 2,
    FLIT_AM_STREAM = 3 /* a stream message (<flit/stream.h>) */
} flit_am_kind;

typedef struct flit_returned {
    flit_status reason; /* why: FLIT_ERR_NO_HANDLER, _BAD_TAG, ... */
    flit_rank_t peer;   /* the destination that did not take it */
    flit_handler_t handler;
    flit_am_kind kind;
    int is_reply;
    unsigned nargs;
    const uint32_t *args;
    const void *payload; /* medium: the payload; otherwise NULL */
    size_t nbytes;       /* payload length (long: the length sent;
                            stream: the message's total) */
    uint64_t offset;     /* long: the destination offset */
} flit_returned_t;

/*
 * Runs during progress for each message that came back; info and what it
 * points to are valid until it returns. The default prints the reason, the
 * peer, the handler and the operation, then aborts.
 */
typedef void (*flit_returned_fn)(flit_ep_t *ep, const flit_returned_t *info, void *user);
FLIT_API flit_status flit_am_set_returned_handler(flit_ep_t *ep, flit_returned_fn fn,
                                                  void *user);

/* "request short", "reply long", ... for messages about an operation. */
FLIT_API const char *flit_am_kind_name(flit_am_kind kind, int is_reply);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_AM_H */
