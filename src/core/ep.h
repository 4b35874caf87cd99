/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint: its peers (the translation table), the transports that reach
 * them, the handler table, the segment, counters, and the rules of entry
 * (job state, thread mode, handler context).
 */
#ifndef FL_CORE_EP_H
#define FL_CORE_EP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/job.h"
#include "core/layer.h"
#include "core/progress.h"
#include "core/stats.h"
#include "flit/flit.h"
#include "flit/layer.h"
#include "transport/transport.h"

#define FL_EP_MAGIC       0x666c6974u /* "flit" */
#define FL_EP_RETIRED     0x64656164u /* "dead": destroyed, kept until finalize */
#define FL_MAX_TRANSPORTS 8
/* One entry of the translation table. */
struct fl_peer {
    const struct fl_transport *tp;
    struct fl_tp_ep *tpe;
    uint64_t tag;           /* the tag our messages to this peer carry */
    uint64_t seg_size;      /* its segment, as it registered it */
    bool put_ok;            /* its segment is reachable with ->put */
    _Atomic int down;       /* 0, or the flit_status that took it down */
    uint64_t down_reported; /* peer-down handler ran */
    bool fin[FL_LANES];     /* quiesce: it sent its last packet on the lane */
    bool paired;            /* quiesce: we say goodbye to it (fl_ep_quiesce) */
    bool fin_sent[FL_LANES];
    /* fl_ep_piece_size's inputs from the transport, read once (0: not yet) */
    uint32_t max_packet, packet_fit;
    _Atomic uint64_t sent, recv, stalls;
};

struct flit_ep {
    _Atomic uint32_t magic; /* FL_EP_MAGIC; FL_EP_RETIRED once destroyed */
    uint32_t index; /* n-th endpoint of the job */
    uint32_t rank, size;
    flit_thread_mode mode;
    pthread_mutex_t lock;    /* FLIT_THREAD_SAFE */
    _Atomic uintptr_t owner; /* FLIT_THREAD_SINGLE: thread inside a call */

    struct fl_peer *peers; /* [size] */
    const struct fl_transport *tps[FL_MAX_TRANSPORTS];
    struct fl_tp_ep *tpes[FL_MAX_TRANSPORTS];
    int ntp;
    int epfd;   /* epoll over the transports' fds + evfd */
    int evfd;   /* eventfd: pokes the thread asleep on epfd */
    bool armed; /* flit_ep_arm left the transports armed */
    /* Receiver pacing (flit_extract): while pacing, the bytes its handlers
       may still take, packets and pulled bytes alike (fl_pace_take). */
    bool pacing;
    size_t pace_left;
    /*
     * Thread-safe endpoints: at most one thread sleeps on epfd (a wake-up
     * is one datagram; two sleepers would race to consume it). Others wait
     * on progress_cond, broadcast whenever something was handled and when
     * the fd sleeper wakes. All under lock.
     */
    bool fd_sleeper;
    unsigned cond_waiters;
    unsigned keep_lock; /* a long message is going out in pieces */
    /* Thread-safe endpoints, under lock: threads inside a call (asleep in
       one too), and the endpoint is being destroyed (their waits end). */
    unsigned inside;
    bool closing;
    uintptr_t closer; /* the destroying thread (fl_thread_id) */
    pthread_cond_t progress_cond;
    uint64_t next_peer_check_ns;
    /* fl_ep_reserve's look at progress (fl_progress_on_send): reservations
       since the last look, and the poll count and time that look saw. */
    uint32_t sends_unlooked;
    uint64_t looked_polls, looked_ns;

    void *seg;
    size_t seg_size;
    int seg_fd; /* library-made segment file, -1 otherwise */
    bool seg_owned;
    uint64_t tag;

    uint32_t handler_count;      /* of each layer's handler table */
    uint32_t handler_floor;      /* reserved: [handler_floor, handler_count) */
    void *lstate[FL_MAX_LAYERS]; /* each layer's state (core/layer.h) */
    /* A packet a layer keeps reserved in its transport between calls:
       flushed before anything else reserves, polls or sleeps. */
    struct fl_hold *hold;
    flit_peer_down_fn down_fn;
    void *down_user;
    /* Listeners (listen.c): in the order added; a removed one is NULL
       until no walk is under way. nprogress: those with ->progress. */
    struct fl_listener {
        const flit_ep_listener_t *l;
        void *user;
    } listeners[FLIT_EP_MAX_LISTENERS];
    unsigned nlisteners, nprogress, walking;
    bool listener_holes;        /* a removed one left a NULL: compacted after the walk */
    uintptr_t walker;           /* the thread walking them (fl_thread_id) */
    bool in_progress_listeners; /* a thread runs them now */

    uint32_t barrier_rounds[32]; /* barrier messages received per round */
    uint32_t barrier_taint;      /* rounds a quiesce's barrier said a rank died in */
    /* A flit_barrier that failed part-way (a local shortage at a first
       contact): the round the next call resumes at, and whether that
       round's message went. Restarting would send earlier rounds twice. */
    uint32_t barrier_resume;
    bool barrier_resume_sent;
    bool quiescing;              /* fl_ep_quiesce has begun */
    /* fl_ep_allmax: the value heard per round, for this collective and the
       next (by the parity of its number). */
    struct fl_max_slot {
        bool full;
        uint64_t value;
    } max_rounds[32][2];
    uint32_t max_seq; /* fl_ep_allmax calls so far */
    /* An fl_ep_allmax that failed part-way, as flit_barrier's: the next
       call resumes it (same parity, round, whether sent, maximum so far). */
    struct {
        bool active, sent;
        uint32_t round;
        uint64_t value;
    } max_resume;
    uint64_t events;  /* packets handled + peers lost, ever */

    struct fl_counters stats;
    /* Every plug-in's counters, by name (stats.h); set up by creation */
    struct fl_counter_src counter_srcs[FL_COUNTER_SRCS];
    unsigned ncounter_srcs;
    void *tp_counters[FL_MAX_TRANSPORTS]; /* each transport's (->counters_size) */
    _Atomic uint32_t blocked_dst;      /* dumps: a send waiting for room */
    _Atomic uint64_t blocked_since_ns; /* 0 when not blocked */
    /* dumps: the public call a thread is inside (its __func__, through
       fl_ep_enter); NULL when none */
    const char *_Atomic call;

    pthread_t progress_thread;
    bool has_progress_thread;
    _Atomic bool progress_stop;

    struct flit_ep *next; /* fl_job.eps; once retired, the retired list */

    /* Layers on the public API (core/pub_layer.h), at the end: no path of
       a message touches them, and the hot fields above keep their lines.
       The first npub of the list when the endpoint was made; a state for
       each opened (its bit in pub_made once it is there: a dump on another
       thread reads it), the open ones' bits in pub_live. */
    void *pub_state[FLIT_LAYER_MAX];
    unsigned npub;
    _Atomic uint32_t pub_made, pub_live;
};

/* Handlers running on this thread (any endpoint). */
extern __thread unsigned fl_handler_depth __attribute__((tls_model("initial-exec")));
/* The endpoint this thread is inside a call on (a signal handler that
   calls flit again finds it set). */
extern __thread struct flit_ep *fl_in_call __attribute__((tls_model("initial-exec")));

/* A cheap identity of the calling thread: the address of its TLS slot
   (no call, unlike pthread_self). */
static inline uintptr_t fl_thread_id(void)
{
    return (uintptr_t)&fl_handler_depth;
}

flit_status fl_ep_enter_slow(struct flit_ep *ep);

/*
 * Entry of every public call that changes an endpoint: checks the job,
 * the handle, handler context and the thread rule, then locks (thread-safe
 * mode) or marks the endpoint in use (single mode). The call's name is
 * kept for dumps (flitrun --timeout): which call a hung rank is in.
 */
#define fl_ep_enter(ep) fl_ep_enter_call((ep), __func__)

static inline flit_status fl_ep_enter_checked(struct flit_ep *ep)
{
    flit_status st = fl_job_check();
    if (__builtin_expect(st != FLIT_OK, 0))
        return st;
    if (__builtin_expect(
            !ep || ep->magic != FL_EP_MAGIC || fl_handler_depth || fl_in_call, 0))
        return fl_ep_enter_slow(ep);
    if (ep->mode == FLIT_THREAD_SAFE) {
        pthread_mutex_lock(&ep->lock);
        if (__builtin_expect(ep->closing, 0)) {
            pthread_mutex_unlock(&ep->lock);
            return FLIT_ERR_CLOSED;
        }
        ep->inside++;
        fl_in_call = ep;
        return FLIT_OK;
    }
    uintptr_t self = fl_thread_id();
    uintptr_t cur = atomic_load_explicit(&ep->owner, memory_order_relaxed);
    if (__builtin_expect(cur != 0, 0))
        return fl_ep_enter_slow(ep);
    atomic_store_explicit(&ep->owner, self, memory_order_relaxed);
    fl_in_call = ep;
    return FLIT_OK;
}

static inline flit_status fl_ep_enter_call(struct flit_ep *ep, const char *call)
{
    flit_status st = fl_ep_enter_checked(ep);
    if (__builtin_expect(st == FLIT_OK, 1))
        atomic_store_explicit(&ep->call, call, memory_order_relaxed);
    return st;
}

/* Two threads were inside a single-threaded endpoint: state may be torn. */
_Noreturn void fl_ep_thread_clash(struct flit_ep *ep);

/* A thread left a closing endpoint: the destroyer may be waiting for it. */
void fl_ep_left_closing(struct flit_ep *ep);

static inline void fl_ep_leave(struct flit_ep *ep)
{
    fl_in_call = NULL;
    atomic_store_explicit(&ep->call, NULL, memory_order_relaxed);
    if (ep->mode == FLIT_THREAD_SAFE) {
        ep->inside--;
        if (__builtin_expect(ep->closing, 0))
            fl_ep_left_closing(ep);
        pthread_mutex_unlock(&ep->lock);
        return;
    }
    /*
     * The entry check is a plain load and store (a locked instruction on
     * every call would cost more than the call). Two threads entering in
     * the same instant can both pass it, but then the owner is no longer
     * the same for both when they leave: at least one of them sees it here.
     */
    if (__builtin_expect(
            atomic_load_explicit(&ep->owner, memory_order_relaxed) != fl_thread_id(), 0))
        fl_ep_thread_clash(ep);
    atomic_store_explicit(&ep->owner, 0, memory_order_relaxed);
}

/* A wait of this thread must end: another thread destroys the endpoint. */
static inline bool fl_ep_closed_under(const struct flit_ep *ep)
{
    return __builtin_expect(ep->closing, 0) && ep->closer != fl_thread_id();
}

/* Entry of read-only queries: job and handle only, allowed in handlers. */
flit_status fl_ep_check(struct flit_ep *ep);

/* Every transport of ep has nothing in flight (->settled); a condition for
   fl_progress_until. */
bool fl_ep_settled(struct flit_ep *ep, void *arg);

static inline bool fl_peer_is_down(const struct fl_peer *p)
{
    return atomic_load_explicit(&p->down, memory_order_relaxed) != 0;
}

/* The layer's state on ep. */
static inline void *fl_ep_layer(const struct flit_ep *ep, const struct fl_layer *l)
{
    return ep->lstate[l->slot];
}

/* Commits the packet a layer holds (layer.h), if any. */
static inline void fl_ep_flush_hold(struct flit_ep *ep)
{
    if (__builtin_expect(ep->hold != NULL, 0))
        ep->hold->flush(ep->hold);
}

/*
 * Room for a len-byte packet to dst on lane: *pkt is where to build it; then
 * fl_ep_commit sends it (or fl_ep_cancel drops it), with nothing polled in
 * between. Waits for room (fl_ep_reserve_slow) unless FLIT_AM_NONBLOCK.
 *
 * Build the payload first and the header last, just before the commit. On
 * shared memory the packet's first line holds the record's marker, which
 * the receiver is polling: a header written there before a payload copy
 * hands the line to the polling receiver and takes it back for the marker,
 * a second transfer per message. Writing it last, medium AMs of 4 KiB went
 * from 17 to 31 GB/s between two cores (AMD EPYC, 2026-11-25).
 */
static inline flit_status fl_ep_reserve(struct flit_ep *ep, uint32_t dst, unsigned lane,
                                        size_t len, unsigned flags, void **pkt)
{
    struct fl_peer *p = &ep->peers[dst];
    flit_status st;
    fl_ep_flush_hold(ep); /* one reservation at a time */
    if (__builtin_expect(++ep->sends_unlooked >= FL_SENDS_PER_LOOK, 0) &&
        !(flags & FLIT_AM_NONBLOCK))
        fl_progress_on_send(ep);
    void *b = p->tp->reserve(p->tpe, dst, lane, len, &st);
    if (__builtin_expect(b != NULL, 1)) {
        *pkt = b;
        return FLIT_OK;
    }
    if (st != FLIT_ERR_AGAIN)
        return st;
    return fl_ep_reserve_slow(ep, dst, lane, len, flags, pkt);
}

/* flags: FLIT_AM_MORE (the caller sends more soon). Inside a handler a
   packet may always wait for the end of the poll pass that runs it. */
static inline void fl_ep_commit(struct flit_ep *ep, uint32_t dst, unsigned lane,
                                void *pkt, size_t len, unsigned flags)
{
    struct fl_peer *p = &ep->peers[dst];
    unsigned more = (flags & FLIT_AM_MORE) || fl_handler_depth ? FL_COMMIT_MORE : 0;
    p->tp->commit(p->tpe, dst, lane, pkt, len, more);
}

/*
 * The same for a packet whose bytes from head on are lent at src instead
 * of written at pkt (transport.h, ->commit_lent; only where
 * fl_ep_can_lend): src stays untouched until fl_ep_settle_lent(dst, lane),
 * which the caller reaches before its own call returns.
 */
static inline bool fl_ep_can_lend(const struct flit_ep *ep, uint32_t dst)
{
    return ep->peers[dst].tp->commit_lent != NULL;
}

static inline void fl_ep_commit_lent(struct flit_ep *ep, uint32_t dst, unsigned lane,
                                     void *pkt, size_t len, size_t head, const void *src,
                                     unsigned flags)
{
    struct fl_peer *p = &ep->peers[dst];
    unsigned more = (flags & FLIT_AM_MORE) || fl_handler_depth ? FL_COMMIT_MORE : 0;
    p->tp->commit_lent(p->tpe, dst, lane, pkt, len, head, src, more);
}

static inline void fl_ep_settle_lent(struct flit_ep *ep, uint32_t dst, unsigned lane)
{
    struct fl_peer *p = &ep->peers[dst];
    p->tp->settle_lent(p->tpe, dst, lane);
}

/*
 * Payload bytes a piece of a message cut into packets carries to dst when
 * each packet has a header of hdr_len: FLIT_LONG_CHUNK_KB within what the
 * transport carries; over datagrams, what fills one datagram.
 */
size_t fl_ep_piece_size(struct flit_ep *ep, uint32_t dst, size_t hdr_len);

/* Whether packets to dst travel in datagrams (copied into and out of them),
   not in a ring the receiver reads where the sender wrote: where a payload
   sits in the sender's packet then says nothing of where it lands. */
static inline bool fl_ep_datagrams(const struct flit_ep *ep, uint32_t dst)
{
    return ep->peers[dst].tp->peer_datagram != NULL;
}

static inline void fl_ep_cancel(struct flit_ep *ep, uint32_t dst, unsigned lane,
                                void *pkt)
{
    struct fl_peer *p = &ep->peers[dst];
    p->tp->cancel(p->tpe, dst, lane, pkt);
}

/*
 * rank is down (died, silent past its timeout, or sent what only a broken
 * peer sends): marks it so everywhere at once, hands back what it never
 * took, tells the layers, then the program's peer-down handler. Once per
 * peer; transports report through their open callback, layers call it
 * when they are first to know (a failed cross-memory attach).
 */
void fl_ep_peer_down(struct flit_ep *ep, uint32_t rank, flit_status reason);

/* Listeners (listen.c). peer_down: in handler context, from
   fl_ep_peer_down. closing: first thing flit_ep_destroy does, endpoint not
   entered. progress: after a pass of the engine, endpoint entered (or the
   progress thread's lock held); runs them where the caller may let go of
   the endpoint for a while. */
void fl_listeners_peer_down(struct flit_ep *ep, uint32_t rank, flit_status reason);
void fl_listeners_closing(struct flit_ep *ep);
void fl_listeners_progress_slow(struct flit_ep *ep);
static inline void fl_listeners_progress(struct flit_ep *ep)
{
    if (__builtin_expect(ep->nprogress != 0, 0))
        fl_listeners_progress_slow(ep);
}

/* Receiver pacing: of n bytes a handler would take now, those flit_extract
   lets it take (all of them outside it), charged to its budget. */
static inline size_t fl_pace_take(struct flit_ep *ep, size_t n)
{
    if (__builtin_expect(!ep->pacing, 1))
        return n;
    if (n > ep->pace_left)
        n = ep->pace_left;
    ep->pace_left -= n;
    return n;
}

/* Every endpoint of the job (finalize, dumps). */
flit_status fl_ep_destroy_all(void);
/* Frees the destroyed endpoints' last bytes: at the end of flit_finalize,
   once no new call can reach them (the job is no longer active). */
void fl_ep_free_retired(void);
void fl_ep_dump_all(int fd);

#endif /* FL_CORE_EP_H */
