/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit: user-level cluster messaging.
 *
 * This header is the whole public contract of the core: the job, endpoints,
 * progress, statuses and counters. Active Messages live in <flit/am.h>,
 * which this header includes.
 *
 * Conventions
 *  - Every call returns a flit_status; FLIT_OK is 0. flit_strerror() names
 *    every value. Outputs are the last arguments and are written only on
 *    success.
 *  - Ranks and handler indices are one-field structs so that the compiler
 *    catches one passed where the other belongs: flit_rank(3),
 *    flit_handler(7).
 *  - Parameter structs start with a field_mask: a field is read only when its
 *    bit is set, so the structs can grow without breaking the ABI.
 *  - Handles (flit_rpc_t *, flit_request_t *, ...) are opaque values, not
 *    addresses: one used after its object ended answers the call's
 *    documented status (FLIT_ERR_INVALID_ARG for most), never the object
 *    that took its memory since (<flit/handle.h>). A destroyed endpoint
 *    answers FLIT_ERR_CLOSED until flit_finalize, FLIT_ERR_FINALIZED after.
 */
#ifndef FLIT_FLIT_H
#define FLIT_FLIT_H

#include <stddef.h>
#include <stdint.h>

#define FLIT_VERSION_MAJOR 0
#define FLIT_VERSION_MINOR 1
#define FLIT_VERSION_PATCH 0
#define FLIT_VERSION                                                                     \
    (FLIT_VERSION_MAJOR * 10000 + FLIT_VERSION_MINOR * 100 + FLIT_VERSION_PATCH)

#if defined(__GNUC__)
#define FLIT_API       __attribute__((visibility("default")))
#define FLIT_NODISCARD __attribute__((warn_unused_result))
#define FLIT_NORETURN  __attribute__((noreturn))
#else
#define FLIT_API
#define FLIT_NODISCARD
#define FLIT_NORETURN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status */

typedef enum flit_status {
    FLIT_OK = 0,
    FLIT_ERR_INVALID_ARG,     /* NULL pointer, bad flag, absurd size */
    FLIT_ERR_NOT_INITIALIZED, /* flit_init has not been called */
    FLIT_ERR_ALREADY_INITIALIZED,
    FLIT_ERR_FINALIZED, /* called after flit_finalize */
    FLIT_ERR_FORKED,    /* a child made by fork() used its parent's flit */
    FLIT_ERR_THREAD,    /* single-threaded endpoint entered by two threads */
    FLIT_ERR_NO_MEMORY,
    FLIT_ERR_SYSTEM,          /* an operating-system call failed (logged) */
    FLIT_ERR_BOOT,            /* the launcher's bootstrap failed or went away */
    FLIT_ERR_RANK,            /* rank outside 0 .. size-1 */
    FLIT_ERR_NARGS,           /* more than FLIT_AM_MAX_ARGS arguments */
    FLIT_ERR_TOO_LARGE,       /* payload above the maximum of its kind */
    FLIT_ERR_BOUNDS,          /* long: offset/length outside the segment */
    FLIT_ERR_NO_SEGMENT,      /* long: the destination registered no segment */
    FLIT_ERR_AGAIN,           /* non-blocking call: no room now, try later */
    FLIT_ERR_TIMEOUT,         /* nothing happened within the timeout */
    FLIT_ERR_IN_HANDLER,      /* not allowed inside a handler (request, poll, wait) */
    FLIT_ERR_REPLY_IN_REPLY,  /* a reply or returned-message handler tried to send */
    FLIT_ERR_ALREADY_REPLIED, /* a request handler may reply only once */
    FLIT_ERR_BAD_TOKEN,       /* token of no running request handler */
    FLIT_ERR_PEER_DOWN,       /* the peer died or stopped answering */
    FLIT_ERR_NO_HANDLER,      /* no handler registered at that index */
    FLIT_ERR_BAD_HANDLER,     /* handler index outside the handler table */
    FLIT_ERR_BAD_TAG,         /* message tag differs from the endpoint's tag */
    FLIT_ERR_BAD_PACKET,      /* malformed packet refused */
    FLIT_ERR_UNREACHABLE,     /* no transport reaches that peer */
    FLIT_ERR_NOT_SUPPORTED,   /* valid request this build or transport cannot do */
    FLIT_ERR_DENIED,          /* rma: the owner did not grant this rank or access */
    FLIT_ERR_REVOKED,         /* rma: the region was unexported (or never was) */
    FLIT_ERR_CLOSED,          /* the endpoint was destroyed while the call waited */
    FLIT_ERR_EXHAUSTED,       /* none left (handler indices to reserve) */
    FLIT_ERR_NO_LAUNCHER,     /* started as one of several tasks, launcher unreachable */
    FLIT_ERR_CONFIG,          /* flit_init: a bad FLIT_* variable (logged once) */
    FLIT_ERR_NOT_FOUND,       /* no such name (flit_ep_counter) */
    FLIT_STATUS_COUNT         /* not a status: the number of them */
} flit_status;

/* A sentence that explains the status; never NULL, even for unknown values. */
FLIT_API const char *flit_strerror(flit_status status);
/* The enumerator's name, "FLIT_ERR_AGAIN"; "FLIT_?" for unknown values. */
FLIT_API const char *flit_status_name(flit_status status);

/* ---------------------------------------------------------------- ids */

typedef struct flit_rank {
    uint32_t idx;
} flit_rank_t;
typedef struct flit_handler {
    uint16_t idx;
} flit_handler_t;

static inline flit_rank_t flit_rank(uint32_t idx)
{
    flit_rank_t r;
    r.idx = idx;
    return r;
}

static inline flit_handler_t flit_handler(uint16_t idx)
{
    flit_handler_t h;
    h.idx = idx;
    return h;
}

/* ---------------------------------------------------------------- job */

/*
 * flit_init joins the job. Rank, size and the way to reach the peers come
 * from the launcher: flitrun, or none at all (a job of one rank). It is not
 * collective by itself; endpoint creation is. params may be NULL. A bad
 * FLIT_* environment variable fails it with FLIT_ERR_CONFIG, logged by the
 * job's first task only (flitrun refuses such a job before starting ranks).
 */
typedef struct flit_init_params {
    uint64_t field_mask; /* no fields yet; must be 0 */
} flit_init_params_t;

FLIT_API flit_status flit_init(const flit_init_params_t *params);

/*
 * Collective: destroys the endpoints still open (with their barrier), leaves
 * the job, prints counters when FLIT_STATS=1. Every later call answers
 * FLIT_ERR_FINALIZED; flit_init cannot be called again. Calls other threads
 * are blocked in on thread-safe endpoints end with FLIT_ERR_CLOSED. While
 * another thread is inside a call on a single-threaded endpoint, it answers
 * FLIT_ERR_THREAD and leaves that endpoint (and the job) as they were: call
 * it again once that thread has returned.
 */
FLIT_API flit_status flit_finalize(void);

/* This process's rank and the job's size; 0 before flit_init. */
FLIT_API flit_rank_t flit_job_rank(void);
FLIT_API uint32_t flit_job_size(void);

/*
 * Ends the whole job from this rank, as MPI_Abort does: the launcher is
 * told (flitrun names the rank and why, stops every other rank and exits
 * with status; under mpirun or srun, PMIx_Abort or PMI-2's abort), and
 * only then does the process exit, with status's low byte (1 when that is
 * 0), flushing stdout and stderr but running no atexit handler. Since the
 * launcher knows first, the job's status is this one even when peers fail
 * on seeing the rank gone. why (may be NULL) is a line for the launcher's
 * message. Waits at most a few seconds for the launcher; never returns.
 * Before flit_init, after flit_finalize and in a fork() child it only
 * exits. Not async-signal-safe.
 */
FLIT_API FLIT_NORETURN void flit_job_abort(int status, const char *why);

/* ---------------------------------------------------------------- endpoint */

typedef struct flit_ep flit_ep_t;

/*
 * Signals: no flit call is async-signal-safe. A call made from a signal
 * handler that interrupted a thread inside a flit call is refused with
 * FLIT_ERR_IN_HANDLER (and logged once); one that interrupted a thread
 * elsewhere is undefined, as for malloc. Set a flag in the handler and
 * act on it outside, or wake an event loop (flit_ep_fd).
 */
typedef enum flit_thread_mode {
    FLIT_THREAD_SINGLE = 0, /* one thread at a time; concurrent entry is
                               detected and answered FLIT_ERR_THREAD */
    FLIT_THREAD_SAFE = 1    /* any thread may call any function */
} flit_thread_mode;

#define FLIT_EP_PARAM_THREAD_MODE     (1u << 0)
#define FLIT_EP_PARAM_SEGMENT         (1u << 1)
#define FLIT_EP_PARAM_TAG             (1u << 2)
#define FLIT_EP_PARAM_HANDLER_COUNT   (1u << 3)
#define FLIT_EP_PARAM_PROGRESS_THREAD (1u << 4)
#define FLIT_EP_PARAM_LAYERS          (1u << 5)

#define FLIT_HANDLER_COUNT_DEFAULT 256u
#define FLIT_HANDLER_COUNT_MAX     65536u

typedef struct flit_ep_params {
    uint64_t field_mask;          /* FLIT_EP_PARAM_* bits of the fields set */
    flit_thread_mode thread_mode; /* default FLIT_THREAD_SINGLE */
    /*
     * The segment long messages land in. segment_addr NULL with a size: the
     * library allocates it in memory its peers on this host map directly
     * (one copy, no system call). A user address: peers reach it with
     * cross-memory attach, or in pieces when the kernel forbids that. The
     * memory must stay valid until the endpoint is destroyed.
     */
    void *segment_addr;
    size_t segment_size;    /* default 0: no segment */
    uint64_t tag;           /* default: the job's tag */
    uint32_t handler_count; /* 1 .. FLIT_HANDLER_COUNT_MAX, default 256 */
    int progress_thread;    /* nonzero: serve this endpoint from a thread
                               (implies FLIT_THREAD_SAFE); default from
                               FLIT_PROGRESS_THREAD */
    /* The layers that open on request (flit/layer.h) to open with the
       endpoint, by name, comma-separated: "group,object"; the same on every
       rank; read during the call. Default: none. An unknown name, or one of
       a layer that opens on every endpoint: FLIT_ERR_INVALID_ARG. */
    const char *layers;
} flit_ep_params_t;

/*
 * Collective over the job: every rank creates its endpoints in the same
 * order, and the n-th endpoint of one rank talks to the n-th of the others.
 * params may be NULL for all defaults. Fails on every rank when one rank
 * cannot open it (its status): FLIT_ERR_NO_MEMORY when /dev/shm has no
 * room for the segment or the shared-memory rings (their pages are
 * reserved here, so a full /dev/shm is never a SIGBUS later),
 * FLIT_ERR_SYSTEM when no descriptor is left.
 */
FLIT_API flit_status flit_ep_create(const flit_ep_params_t *params, flit_ep_t **ep_out);

/* Collective: waits until every rank is done with this endpoint, then frees
   it. Not from inside a handler. On a thread-safe endpoint, calls other
   threads are blocked in (flit_wait, a send waiting for room, ...) are
   woken and answer FLIT_ERR_CLOSED before it is freed, and so do calls
   that race with the destruction or come after it until flit_finalize
   (the handle's few bytes are kept until then; everything else is freed at
   once). FLIT_ERR_THREAD on a single-threaded endpoint another thread is
   inside. */
FLIT_API flit_status flit_ep_destroy(flit_ep_t *ep);

/*
 * Collective over the job, with the same count on every rank: reserves
 * count consecutive handler indices on ep, in every handler table (active
 * messages, streams), for a layer built on the public API, so that its
 * handlers never collide with the program's or another layer's. Every rank
 * gets the same *first. Reservations are taken from the top of the tables
 * down, above every index any rank has installed a handler at; programs
 * install theirs from 0 up. FLIT_ERR_EXHAUSTED when no such range is left;
 * FLIT_ERR_INVALID_ARG for count 0, first NULL, or handler tables whose
 * size differs between ranks (FLIT_EP_PARAM_HANDLER_COUNT).
 */
FLIT_API flit_status flit_ep_reserve_handlers(flit_ep_t *ep, unsigned count,
                                              flit_handler_t *first);

/* How the endpoint was created: FLIT_THREAD_SAFE also with a progress
   thread. A layer above may skip its own locking on single-threaded
   endpoints (their handlers and calls never run at once). */
FLIT_API flit_status flit_ep_thread_mode(flit_ep_t *ep, flit_thread_mode *mode_out);

/* The local segment (NULL, 0 when none). */
FLIT_API flit_status flit_ep_segment(flit_ep_t *ep, void **addr_out, size_t *size_out);
/* The size of rank's segment on this endpoint, as that rank registered it. */
FLIT_API flit_status flit_ep_peer_segment_size(flit_ep_t *ep, flit_rank_t rank,
                                               size_t *size_out);

/*
 * Tags (AM-2). A message carries the tag its sender holds for the
 * destination; the destination refuses it unless it equals its own tag.
 */
FLIT_API flit_status flit_ep_tag(flit_ep_t *ep, uint64_t *tag_out);
FLIT_API flit_status flit_ep_set_tag(flit_ep_t *ep, uint64_t tag);
FLIT_API flit_status flit_ep_set_peer_tag(flit_ep_t *ep, flit_rank_t rank, uint64_t tag);

/* How the endpoint reaches a peer. */
typedef struct flit_peer_info {
    size_t struct_size;    /* set to sizeof(flit_peer_info_t) before the call */
    const char *transport; /* "self", "shm", "udp", "xdp" */
    char address[64];      /* udp: "10.0.0.2:4711"; shm: "pid 1234"; self: "";
                              xdp: "10.0.0.2:4711 (xdp)", or "(udp)" where
                              plain UDP serves the peer; with several
                              rails (FLIT_UDP_RAILS) the paths' state
                              follows: "10.0.0.2:4711 rails up,down" */
    size_t max_packet;     /* largest packet the transport carries */
    int down;              /* nonzero once the peer is known dead */
    size_t datagram;       /* udp: largest datagram payload to the peer
                              (the path's MTU or FLIT_UDP_MTU); else 0 */
} flit_peer_info_t;

FLIT_API flit_status flit_ep_peer_info(flit_ep_t *ep, flit_rank_t rank,
                                       flit_peer_info_t *info_out);

/* Called once per peer that dies or stops answering. */
typedef void (*flit_peer_down_fn)(flit_ep_t *ep, flit_rank_t peer, flit_status reason,
                                  void *user);
FLIT_API flit_status flit_ep_set_peer_down_handler(flit_ep_t *ep, flit_peer_down_fn fn,
                                                   void *user);

/*
 * Listeners: how a layer built on the public API (RPC, groups, shared
 * objects, a program's own) hears of an endpoint's events, beside the
 * program's one peer-down handler. Any member may be NULL; each event runs
 * the listeners in the order they were added.
 *
 *  peer_down  a peer died or stopped answering, once per peer, after the
 *             peer-down handler. Handler context: it may not send, wait or
 *             poll; note what happened and act in progress.
 *  progress   the endpoint made progress (flit_poll, flit_wait, a send
 *             waiting for room, the progress thread) outside any handler.
 *             It runs as program code, the endpoint left: it may send
 *             (use the NONBLOCK flags: a send that waits for room would
 *             hold up the call it runs in) and poll. It runs on every pass
 *             of every wait, so when it has nothing to do it should cost a
 *             test of a flag. One thread at a time runs an endpoint's
 *             progress listeners; they are not run from inside themselves,
 *             nor while a long message is going out in pieces.
 *  closing    flit_ep_destroy began on this rank, before anything is shut
 *             down: the endpoint still works, and the listener may do all a
 *             program may (send, wait, poll). Run by the destroying thread.
 *
 * A NONBLOCK send that answered FLIT_ERR_AGAIN asks its transport for a
 * wake-up when room comes back, so a flit_wait after it does not sleep
 * through the moment a queued send could go.
 */
typedef struct flit_ep_listener {
    void (*peer_down)(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user);
    void (*progress)(flit_ep_t *ep, void *user);
    void (*closing)(flit_ep_t *ep, void *user);
} flit_ep_listener_t;

#define FLIT_EP_MAX_LISTENERS 16

/* Adds (l, user): l must stay valid until removed or the endpoint is
   destroyed. FLIT_ERR_INVALID_ARG for a NULL l or a pair already listening,
   FLIT_ERR_EXHAUSTED past FLIT_EP_MAX_LISTENERS. */
FLIT_API flit_status flit_ep_listen(flit_ep_t *ep, const flit_ep_listener_t *l, void *user);
/* Removes (l, user), also from inside a listener; FLIT_ERR_INVALID_ARG when
   that pair is not listening. */
FLIT_API flit_status flit_ep_unlisten(flit_ep_t *ep, const flit_ep_listener_t *l,
                                      void *user);

/* ---------------------------------------------------------------- progress */

/* Runs every handler that can run now, without blocking. */
FLIT_API flit_status flit_poll(flit_ep_t *ep);

/*
 * 1 when the calling thread is inside a handler (of any endpoint, a
 * procedure or delivery on a fiber included), where flit_poll, flit_wait
 * and the sends that may wait answer FLIT_ERR_IN_HANDLER; 0 elsewhere. A
 * thread-local read: a layer that must refuse before it acts asks this
 * rather than make a progress pass to find out.
 */
FLIT_API int flit_in_handler(void);

/*
 * Makes progress until at least one message was handled, or timeout_us
 * microseconds passed (FLIT_ERR_TIMEOUT); timeout_us < 0 waits forever.
 * Spins for FLIT_SPIN_US, then sleeps until a sender wakes it. On an
 * endpoint that other threads (or a progress thread) also serve, it returns
 * when any of them handled something; since one of them may handle the
 * message you wait for just before you call, wait with a timeout in a loop
 * that checks your condition.
 */
FLIT_API flit_status flit_wait(flit_ep_t *ep, int64_t timeout_us);

/*
 * Makes progress until everything ep sent has reached the peers' endpoints
 * (acknowledged by the transport: over UDP the reliability protocol's
 * acknowledgement, on shared memory the write itself) and everything it
 * received has been acknowledged, or timeout_us microseconds passed
 * (FLIT_ERR_TIMEOUT; < 0 waits for ever). Peers known to be down are not
 * waited for. The last words of a process that ends without
 * flit_finalize: a datagram lost after the process is gone is never sent
 * again. Handlers run meanwhile; what they send is waited for too.
 */
FLIT_API flit_status flit_ep_flush(flit_ep_t *ep, int64_t timeout_us);

/* Collective: returns when every rank has entered the barrier on ep. A
   call that meets this process's own shortage (FLIT_ERR_SYSTEM,
   FLIT_ERR_NO_MEMORY: a first contact without a descriptor or room) keeps
   its place: calling again completes the same barrier. */
FLIT_API flit_status flit_barrier(flit_ep_t *ep);

/*
 * Event-loop integration. flit_ep_fd gives a file descriptor that stays
 * readable (level-triggered) from the moment the armed endpoint has work
 * until flit_poll runs. Protocol:
 *
 *     for (;;) {
 *         flit_poll(ep);
 *         if (flit_ep_arm(ep) == FLIT_ERR_AGAIN) continue;  // work pending
 *         epoll_wait(...);      // sleeps; ep's fd turns readable on work
 *     }
 *
 * flit_ep_arm answers FLIT_OK when it is safe to sleep, FLIT_ERR_AGAIN when
 * work is already waiting (a message, or a datagram not yet read). Senders
 * make a system call only while armed. After FLIT_OK the descriptor turns
 * readable for exactly these reasons:
 *  - a message arrives, or a peer dies (its messages come back);
 *  - over UDP, the reliability protocol has work of its own that cannot
 *    wait for the next call: an acknowledgement to send (FLIT_ACK_DELAY_US
 *    after data arrived), a retransmission falling due, a peer to declare
 *    down (FLIT_PEER_TIMEOUT); a flit_poll then handles no message, and
 *    the loop arms again. On shared memory nothing but a sender wakes it;
 *  - another thread destroys the endpoint.
 * Readiness is level-triggered until flit_poll (or flit_wait) runs; only
 * arm after that, as above.
 */
FLIT_API flit_status flit_ep_fd(flit_ep_t *ep, int *fd_out);
FLIT_API flit_status flit_ep_arm(flit_ep_t *ep);

/* ---------------------------------------------------------------- counters */

enum flit_stat_kind {
    FLIT_STAT_REQ_SHORT,
    FLIT_STAT_REQ_MEDIUM,
    FLIT_STAT_REQ_LONG,
    FLIT_STAT_REP_SHORT,
    FLIT_STAT_REP_MEDIUM,
    FLIT_STAT_REP_LONG,
    FLIT_STAT_KINDS
};

typedef struct flit_stats {
    size_t struct_size; /* set to sizeof(flit_stats_t) before the call */
    uint64_t sent_msgs[FLIT_STAT_KINDS];
    uint64_t sent_bytes[FLIT_STAT_KINDS]; /* payload bytes */
    uint64_t recv_msgs[FLIT_STAT_KINDS];
    uint64_t recv_bytes[FLIT_STAT_KINDS];
    uint64_t credit_stalls;   /* sends that found the receiver without room */
    uint64_t returned_to_us;  /* our messages that came back */
    uint64_t returned_by_us;  /* messages we refused and sent back */
    uint64_t refused_packets; /* malformed or foreign packets dropped */
    uint64_t polls;           /* progress passes */
    uint64_t sleeps;          /* times the endpoint went to sleep */
    uint64_t wakeups_sent;    /* system calls made to wake a sleeping peer */
    uint64_t peers_down;
    /* Datagram transports (UDP) */
    uint64_t datagrams_sent;
    uint64_t datagrams_received;
    uint64_t retransmits;     /* packets sent again after a loss or timeout */
    uint64_t duplicates;      /* packets received twice and dropped */
    uint64_t faults_injected; /* FLIT_DROP/DUP/REORDER_RATE at work */
    /* Streams (<flit/stream.h>) */
    uint64_t stream_sent_msgs;
    uint64_t stream_sent_bytes;
    uint64_t stream_recv_msgs;
    uint64_t stream_recv_bytes;
    uint64_t stream_fibers; /* handlers that got a stack of their own */
    /* One-sided communication (<flit/rma.h>) */
    uint64_t rma_puts; /* puts and gets this endpoint made */
    uint64_t rma_gets;
    uint64_t rma_put_bytes;
    uint64_t rma_get_bytes;
    uint64_t rma_notifications; /* notification handlers run here */
    uint64_t rma_refused;       /* accesses to our regions we refused */
    /* Long active messages whose payload this endpoint wrote straight into
       the destination's segment (a mapping or cross-memory attach; the
       others went in pieces: FLIT_SHM_CMA_MIN_KB, FLIT_SHM_BULK) */
    uint64_t long_direct;
    /* Peers this endpoint has exchanged a packet with, in either direction,
       itself included: the pairs set up (each on first use) */
    uint64_t peers_in_contact;
    /* Streams on shared memory: places this endpoint's handlers offered
       their senders in its segment, and stream bytes this endpoint wrote
       straight into a receiver's (one copy instead of two) */
    uint64_t stream_offers;
    uint64_t stream_placed_bytes;
} flit_stats_t;

FLIT_API flit_status flit_ep_stats(flit_ep_t *ep, flit_stats_t *stats_out);
/* Writes the endpoint's state (per peer: in flight, credits, counters) to fd. */
FLIT_API flit_status flit_ep_dump(flit_ep_t *ep, int fd);

/* ------------------------------------------------------- counters by name
 *
 * Every plug-in of an endpoint (the core, each transport, each layer, the
 * layers built on this API: flit_layer_t's counters) names its counters,
 * "<plug-in>.<counter>": "core.polls", "udp.retransmits",
 * "am.req_short_sent", "group.refused". The fields of flit_stats_t above
 * are sums of these. */

typedef enum flit_counter_kind {
    FLIT_COUNTER_COUNT = 0, /* events, only ever grows */
    FLIT_COUNTER_BYTES,     /* bytes, only ever grows */
    FLIT_COUNTER_GAUGE,     /* a level now, may go down */
} flit_counter_kind;

#define FLIT_COUNTER_NAME_MAX 64

/* One counter as read: its whole name, its doc (static text), its value. */
typedef struct flit_counter {
    char name[FLIT_COUNTER_NAME_MAX]; /* "udp.retransmits" */
    const char *doc;
    flit_counter_kind kind;
    uint64_t value;
} flit_counter_t;

/*
 * All counters of ep, plug-in by plug-in in a fixed order: the first cap
 * of them written to out (out may be NULL when cap is 0), and how many
 * there are to *n_out. FLIT_ERR_INVALID_ARG: n_out NULL, or out NULL with
 * cap > 0; FLIT_ERR_CLOSED: ep was destroyed.
 */
FLIT_API flit_status flit_ep_counters(flit_ep_t *ep, flit_counter_t *out, size_t cap,
                                      size_t *n_out);
/*
 * The counter named name ("udp.retransmits") to *out. FLIT_ERR_NOT_FOUND:
 * ep has no such counter (that plug-in is not in use, or the name is
 * wrong); FLIT_ERR_INVALID_ARG: name or out NULL; FLIT_ERR_CLOSED: ep was
 * destroyed.
 */
FLIT_API flit_status flit_ep_counter(flit_ep_t *ep, const char *name,
                                     flit_counter_t *out);

#ifdef __cplusplus
}
#endif

#include <flit/am.h>

#endif /* FLIT_FLIT_H */
