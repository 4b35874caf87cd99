/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit remote procedure calls, after Panda's RPC (the runtime under Orca),
 * built on <flit/stream.h> and <flit/am.h> alone.
 *
 * An RPC object is created collectively on an endpoint; it takes two
 * handler indices of every table with flit_ep_reserve_handlers, so it never
 * collides with the program's handlers or another layer's.
 *
 * Setting up: RPC is a layer of the endpoint (flit/layer.h). Name "rpc"
 * among the endpoint's layers (flit_ep_params_t.layers) and the endpoint
 * is created with an RPC object of its own (FLIT_RPC_PROCS procedure
 * numbers, default 64); flit_rpc_open hands it out, the endpoint destroys
 * it, and its counters are the endpoint's rpc.* (flit_ep_counters; the
 * fields of flit_rpc_stats_t). flit_rpc_create / flit_rpc_destroy, which
 * make further objects with the program's parameters, still work and are
 * deprecated: they go in the next release. Procedures are
 * registered per object by number (0 .. procs-1). A call names a rank and a
 * procedure, gives its request as pieces from anywhere in memory (gather),
 * and gets back a reply of any length: scattered into buffers the caller
 * gave, or into one the library allocates (FLIT_RPC_REPLY_ALLOC).
 *
 *     static void get(flit_rpc_req_t *req, size_t len, void *user)
 *     {
 *         char key[64];
 *         flit_rpc_recv(req, key, len);          // the request, piecewise
 *         struct iovec v = {value_of(key), value_len(key)};
 *         flit_rpc_reply(req, &v, 1);            // the reply, in pieces
 *     }
 *     flit_rpc_register(rpc, PROC_GET, get, NULL);
 *     ...
 *     struct iovec q = {key, strlen(key) + 1}, r = {buf, sizeof buf};
 *     flit_rpc_result_t res;
 *     flit_rpc_call(rpc, server, PROC_GET, &q, 1, &r, 1, NULL, &res);
 *
 * The wire. A request of up to FLIT_RPC_AM_MAX bytes is one active message
 * (a short one when empty) and its handler replies through the message's
 * token when it replies before returning with at most FLIT_AM_MAX_MEDIUM
 * bytes: a null RPC is one short active message each way. A longer request
 * is a stream, read by the procedure as it arrives. A reply that cannot go back
 * through a token (long, deferred, or answering a streamed request) is a
 * message of its own, sent from program context: at once when the replying
 * code runs outside any handler, else queued and sent by the endpoint's
 * next progress pass (an endpoint listener, <flit/flit.h>).
 *
 * Progress: calls complete while the endpoint makes progress: in the
 * waiting calls here, and in any flit_poll or flit_wait (a server needs no
 * call of this API to serve).
 *
 * Threads. On a FLIT_THREAD_SAFE endpoint any number of threads may wait
 * on their own calls at once: one of them drives the endpoint's progress
 * (flit_wait) and the others sleep, each on a condition of its own call,
 * woken only when its own reply is in (or when it is its turn to drive).
 * On a single-threaded endpoint the waiting call makes the progress.
 *
 * Handlers. A procedure runs in handler context, at once, from the handler
 * its request lands in, but on a stack of its own (flit_stream_spawn: a
 * pooled stack, a few tens of nanoseconds; a streamed request's handler
 * is on one already). It may read its request, reply, or defer, and it may
 * block: on a flit mutex or condition (below), or in a nested call. Only
 * then does it become a thread of its own (Orca's handler threads, made
 * full threads only when they block): it parks, the handler it started
 * from returns and the endpoint goes on, and it resumes in a later
 * progress pass. A procedure registered FLIT_RPC_PROC_INLINE runs on the
 * handler's own stack instead (the null RPC's shortest path) and must not
 * block: there flit_rpc_call, wait and icall answer FLIT_ERR_IN_HANDLER
 * (test only looks), and so do the mutex and condition calls that would
 * have to wait, as they do in any other handler.
 *
 * Errors, each a status in the call's result: FLIT_ERR_NO_HANDLER (no
 * procedure at that number on the server), FLIT_ERR_TOO_LARGE (request
 * above the server's max_request, or reply above the caller's buffers: the
 * bytes that fit are there), FLIT_ERR_TIMEOUT (the call's own timeout; a
 * reply arriving later is discarded and counted), FLIT_ERR_PEER_DOWN (the
 * server died: every call outstanding to it), FLIT_ERR_CLOSED (the
 * server's RPC object or endpoint was destroyed while it kept a deferred
 * reply; or this rank's own was, with the call outstanding).
 *
 * A call always ends. When the server cannot send the reply its procedure
 * made (no memory to copy it for sending, FLIT_ERR_NO_MEMORY; too large
 * for any message, FLIT_ERR_TOO_LARGE), the call ends with that status,
 * carried back in a reply of no bytes (result.length 0); flit_rpc_reply or
 * flit_rpc_reply_send returns the same status to the server, which counts
 * it (failed_replies). A reply whose status word names no status of this
 * library, a reply from a rank the call was not made to, and any malformed
 * message of this layer, is refused and counted (refused), never taken.
 */
#ifndef FLIT_RPC_H
#define FLIT_RPC_H

#include <sys/uio.h>

#include <flit/layer.h>
#include <flit/stream.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flit_rpc flit_rpc_t;
/* Server side: the request whose procedure runs; valid while it runs. */
typedef struct flit_rpc_req flit_rpc_req_t;
/* Server side: a reply kept for later (flit_rpc_defer). */
typedef struct flit_rpc_reply flit_rpc_reply_t;
/* Client side: a call in flight (flit_rpc_icall). */
typedef struct flit_rpc_call flit_rpc_call_t;

/* Requests of up to this many bytes travel as one active message. */
#define FLIT_RPC_AM_MAX 4096u

/* ---------------------------------------------------------------- object */

#define FLIT_RPC_PARAM_PROCS       (1u << 0)
#define FLIT_RPC_PARAM_MAX_REQUEST (1u << 1)

typedef struct flit_rpc_params {
    uint64_t field_mask; /* FLIT_RPC_PARAM_* bits of the fields set */
    unsigned procs;      /* procedure numbers 0 .. procs-1; default 64,
                            1 .. 65536 */
    size_t max_request;  /* longest request this rank serves; longer ones
                            answer FLIT_ERR_TOO_LARGE. Default SIZE_MAX */
} flit_rpc_params_t;

/* The layer's descriptor (flit/layer.h), opened on request: "rpc". Its
   setting: FLIT_RPC_PROCS (1 .. 65536, default 64). */
FLIT_API extern const flit_layer_t flit_rpc_layer;

/*
 * The RPC object of ep's rpc layer (the call to use: flit_rpc_create is
 * deprecated): made with the endpoint, the same each call, destroyed with
 * the endpoint, collectively (flit_rpc_destroy refuses it). Not
 * collective. FLIT_ERR_INVALID_ARG for a NULL ep or out, or an ep created
 * without "rpc" among its layers.
 */
FLIT_API flit_status flit_rpc_open(flit_ep_t *ep, flit_rpc_t **out);

/*
 * Deprecated: flit_rpc_open above gives the endpoint's object.
 * Collective over the job (with the same params): makes an RPC object on
 * ep and reserves its handler indices. params may be NULL. The endpoint
 * must outlive the object. FLIT_ERR_INVALID_ARG for a NULL ep or out, an
 * unknown field_mask bit, procs 0 or above 65536; the reservation's
 * FLIT_ERR_EXHAUSTED; FLIT_ERR_IN_HANDLER inside a handler.
 */
FLIT_API flit_status flit_rpc_create(flit_ep_t *ep, const flit_rpc_params_t *params,
                                     flit_rpc_t **out);

/*
 * Deprecated with flit_rpc_create, whose objects it frees (the endpoint's
 * own, from flit_rpc_open, answers FLIT_ERR_INVALID_ARG).
 * Collective: answers every deferred reply not sent yet with
 * FLIT_ERR_CLOSED, waits until every rank is done (a barrier), then frees
 * the object. FLIT_ERR_AGAIN, with nothing done, while calls of this rank
 * are outstanding (wait or cancel them first); FLIT_ERR_INVALID_ARG for a
 * NULL or destroyed object; FLIT_ERR_IN_HANDLER inside a handler. Messages
 * for the object that arrive later are dropped.
 */
FLIT_API flit_status flit_rpc_destroy(flit_rpc_t *rpc);

/* ---------------------------------------------------------------- server */

/*
 * A procedure. len: the request's length. It runs once per call, in
 * handler context, and answers by flit_rpc_reply or flit_rpc_defer; one
 * that returns having done neither sends an empty reply.
 */
typedef void (*flit_rpc_fn)(flit_rpc_req_t *req, size_t len, void *user);

/* Installs fn as procedure proc (fn NULL removes it). FLIT_ERR_INVALID_ARG
   for a NULL object, FLIT_ERR_BAD_HANDLER for proc >= procs. */
FLIT_API flit_status flit_rpc_register(flit_rpc_t *rpc, unsigned proc, flit_rpc_fn fn,
                                       void *user);

/* The same with flags: FLIT_RPC_PROC_INLINE, a procedure that never
   blocks, run on the stack of the handler its request lands in (no stack
   of its own: some tens of nanoseconds less a call). FLIT_ERR_INVALID_ARG
   also for unknown flags. */
#define FLIT_RPC_PROC_INLINE (1u << 0)
FLIT_API flit_status flit_rpc_register_flags(flit_rpc_t *rpc, unsigned proc,
                                             flit_rpc_fn fn, void *user, unsigned flags);

/*
 * Inside the procedure: takes exactly the next n bytes of the request into
 * buf, waiting for them as they arrive (streams). FLIT_ERR_TOO_LARGE, with
 * nothing taken, when fewer remain; FLIT_ERR_PEER_DOWN when the caller died
 * before sending them; FLIT_ERR_BAD_TOKEN once the procedure has returned;
 * FLIT_ERR_INVALID_ARG for a NULL req, or NULL buf with n > 0.
 */
FLIT_API flit_status flit_rpc_recv(flit_rpc_req_t *req, void *buf, size_t n);
/* The same, scattered over iovcnt buffers (FLIT_ERR_INVALID_ARG also for
   iovcnt < 0, NULL iov with iovcnt > 0, NULL base with a length). */
FLIT_API flit_status flit_rpc_recvv(flit_rpc_req_t *req, const struct iovec *iov,
                                    int iovcnt);
/* Bytes of the request not taken yet; 0 for NULL or a finished request. */
FLIT_API size_t flit_rpc_remaining(const flit_rpc_req_t *req);
/* The calling rank; flit_rank(UINT32_MAX) for NULL or a finished request. */
FLIT_API flit_rank_t flit_rpc_caller(const flit_rpc_req_t *req);

/*
 * Replies with the iovcnt pieces of iov, gathered in order; they may be
 * reused on return. Once per request. FLIT_ERR_ALREADY_REPLIED after a
 * reply or a defer; FLIT_ERR_BAD_TOKEN once the procedure has returned
 * (use flit_rpc_defer); FLIT_ERR_INVALID_ARG as for flit_rpc_recvv;
 * FLIT_ERR_NO_MEMORY when a reply that must be queued cannot be copied
 * (the caller's call then ends with FLIT_ERR_NO_MEMORY: the request is
 * answered); FLIT_ERR_PEER_DOWN when the caller is dead.
 */
FLIT_API flit_status flit_rpc_reply(flit_rpc_req_t *req, const struct iovec *iov,
                                    int iovcnt);

/*
 * Keeps the reply for later: *out answers the call with
 * flit_rpc_reply_send, from any thread or handler, after the procedure has
 * returned. The unread rest of the request is discarded when the
 * procedure returns. FLIT_ERR_ALREADY_REPLIED after a reply or defer,
 * FLIT_ERR_BAD_TOKEN once the procedure has returned, FLIT_ERR_NO_MEMORY.
 */
FLIT_API flit_status flit_rpc_defer(flit_rpc_req_t *req, flit_rpc_reply_t **out);

/*
 * Sends a deferred reply (as flit_rpc_reply) and frees r, whatever the
 * status; a reply that cannot be sent ends the call with its status, as
 * flit_rpc_reply does. FLIT_ERR_CLOSED when the RPC object was destroyed meanwhile (the
 * caller got FLIT_ERR_CLOSED), FLIT_ERR_PEER_DOWN when the caller died;
 * FLIT_ERR_INVALID_ARG for NULL r or bad pieces (r is then kept).
 */
FLIT_API flit_status flit_rpc_reply_send(flit_rpc_reply_t *r, const struct iovec *iov,
                                         int iovcnt);

/* ---------------------------------------------------------------- client */

/* flit_rpc_opts_t flags. */
#define FLIT_RPC_REPLY_ALLOC (1u << 0) /* reply into a malloc'ed buffer */

#define FLIT_RPC_OPT_FLAGS   (1u << 0)
#define FLIT_RPC_OPT_TIMEOUT (1u << 1)

typedef struct flit_rpc_opts {
    uint64_t field_mask; /* FLIT_RPC_OPT_* bits of the fields set */
    unsigned flags;      /* FLIT_RPC_REPLY_ALLOC */
    int64_t timeout_us;  /* the call ends with FLIT_ERR_TIMEOUT this long
                            after it was made; < 0: never (default) */
} flit_rpc_opts_t;

/* A completed call. */
typedef struct flit_rpc_result {
    flit_status status; /* the call's outcome (see the top of this file) */
    size_t length;      /* the reply's length as the server sent it */
    size_t received;    /* bytes placed in the reply buffers */
    void *data;         /* FLIT_RPC_REPLY_ALLOC: the reply (length bytes,
                           free() it; NULL when length is 0 or on error) */
} flit_rpc_result_t;

/*
 * Calls proc at dest with the request gathered from req[0 .. nreq-1] and
 * waits for the reply, scattered into rep[0 .. nrep-1] (ignored with
 * FLIT_RPC_REPLY_ALLOC). opts may be NULL. Returns the call's status and
 * fills *result (may be NULL) with what came back. The request buffers
 * may be reused on return from flit_rpc_icall; the reply buffers must stay
 * valid until the call completes. Refused at once, with nothing sent:
 * FLIT_ERR_INVALID_ARG (NULL rpc, nreq or nrep < 0, NULL iov with a count,
 * NULL base with a length, unknown opts bits or flags), FLIT_ERR_RANK,
 * FLIT_ERR_BAD_HANDLER (proc >= procs), FLIT_ERR_IN_HANDLER in a handler;
 * FLIT_ERR_PEER_DOWN for a server known dead.
 */
FLIT_API flit_status flit_rpc_call(flit_rpc_t *rpc, flit_rank_t dest, unsigned proc,
                                   const struct iovec *req, int nreq,
                                   const struct iovec *rep, int nrep,
                                   const flit_rpc_opts_t *opts,
                                   flit_rpc_result_t *result);

/* The same without waiting: *call is the call's handle until test, wait
   or cancel ends it. */
FLIT_API flit_status flit_rpc_icall(flit_rpc_t *rpc, flit_rank_t dest, unsigned proc,
                                    const struct iovec *req, int nreq,
                                    const struct iovec *rep, int nrep,
                                    const flit_rpc_opts_t *opts, flit_rpc_call_t **call);

/*
 * Complete: *done = 1, *call set to NULL, *result filled, the call's status
 * returned. Not yet: *done = 0, FLIT_OK. Makes progress once (only looks
 * inside a handler). FLIT_ERR_INVALID_ARG for NULL call or done, or a
 * handle that is not a live call.
 */
FLIT_API flit_status flit_rpc_test(flit_rpc_call_t **call, int *done,
                                   flit_rpc_result_t *result);

/*
 * Waits up to timeout_us (< 0: until the call completes) and, when the call
 * completed, ends it as test does. FLIT_ERR_AGAIN when the wait's own time
 * ran out with the call still going (the handle stays valid; the call's
 * own timeout, by contrast, completes it with FLIT_ERR_TIMEOUT). Inside a
 * procedure that may block, the wait parks it until the call completes:
 * timeout_us is not heeded there, and the call's own timeout is seen only
 * when something wakes the procedure.
 */
FLIT_API flit_status flit_rpc_wait(flit_rpc_call_t **call, int64_t timeout_us,
                                   flit_rpc_result_t *result);

/*
 * Waits for the first of n calls to complete (NULL entries are skipped),
 * ends it as wait does and sets *index to its place. FLIT_ERR_INVALID_ARG
 * also when no entry is a call, or the calls are of different RPC objects.
 */
FLIT_API flit_status flit_rpc_wait_any(size_t n, flit_rpc_call_t **calls,
                                       int64_t timeout_us, size_t *index,
                                       flit_rpc_result_t *result);

/*
 * Withdraws a call whose reply has not started arriving: *call NULL,
 * FLIT_OK; a reply that comes later is discarded and counted.
 * FLIT_ERR_AGAIN when the reply is arriving or has arrived (wait for it).
 */
FLIT_API flit_status flit_rpc_cancel(flit_rpc_call_t **call);

/* ---------------------------------------------------------------- blocking */

/*
 * A mutex and a condition variable that procedures may wait on without
 * stopping the endpoint, and program threads
 * too. req: the procedure that waits (its fiber parks: other handlers,
 * the one that will unlock included, go on), or NULL for a program thread
 * (it sleeps, making no progress: some other thread, or a progress
 * thread, must run the handler that unlocks). The mutex is handed to its
 * waiters in the order they came. A procedure must not return holding it.
 *
 * Statuses: FLIT_ERR_INVALID_ARG for NULL objects, a finished req;
 * FLIT_ERR_IN_HANDLER for a req whose procedure cannot block
 * (FLIT_RPC_PROC_INLINE), or a NULL req inside a handler, when the call would
 * have to wait; FLIT_ERR_PEER_DOWN / FLIT_ERR_FINALIZED when the caller
 * died or the endpoint closed while the procedure waited (it does not hold
 * the mutex then: return). unlock: FLIT_ERR_INVALID_ARG when the mutex is
 * not locked. destroy: FLIT_ERR_AGAIN while locked or waited on.
 */
typedef struct flit_mutex flit_mutex_t;
typedef struct flit_cond flit_cond_t;

FLIT_API flit_status flit_mutex_create(flit_mutex_t **out);
FLIT_API flit_status flit_mutex_destroy(flit_mutex_t *m);
FLIT_API flit_status flit_mutex_lock(flit_mutex_t *m, flit_rpc_req_t *req);
/* FLIT_OK and the mutex taken, or FLIT_ERR_AGAIN (held): never waits. */
FLIT_API flit_status flit_mutex_trylock(flit_mutex_t *m);
FLIT_API flit_status flit_mutex_unlock(flit_mutex_t *m);

FLIT_API flit_status flit_cond_create(flit_cond_t **out);
FLIT_API flit_status flit_cond_destroy(flit_cond_t *c);
/* Unlocks m, waits for a signal, locks m again (also on error, unless the
   error says the procedure must return: PEER_DOWN, FINALIZED). */
FLIT_API flit_status flit_cond_wait(flit_cond_t *c, flit_mutex_t *m, flit_rpc_req_t *req);
FLIT_API flit_status flit_cond_signal(flit_cond_t *c);
FLIT_API flit_status flit_cond_broadcast(flit_cond_t *c);

/* ---------------------------------------------------------------- counters */

typedef struct flit_rpc_stats {
    size_t struct_size;      /* set to sizeof(flit_rpc_stats_t) */
    uint64_t calls;          /* calls made */
    uint64_t served;         /* procedures run */
    uint64_t timeouts;       /* calls ended by their timeout */
    uint64_t late_replies;   /* replies that found no call waiting */
    uint64_t queued_replies; /* replies sent from a progress pass */
    uint64_t deferred;       /* flit_rpc_defer */
    uint64_t refused;        /* malformed messages from peers, dropped (the
                                first is logged) */
    uint64_t failed_replies; /* replies that could not be sent: their calls
                                ended with the error instead (logged once) */
} flit_rpc_stats_t;

/* FLIT_ERR_INVALID_ARG for NULL arguments, or a struct_size smaller than a
   struct up to deferred (earlier headers) or larger than this one; a
   shorter struct gets the fields it has. */
FLIT_API flit_status flit_rpc_stats(flit_rpc_t *rpc, flit_rpc_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_RPC_H */
