/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport seam: what the endpoint and its progress engine need from
 * a way of moving packets. The core never names a particular transport; it
 * asks each registered ops table whether it reaches a peer, in preference
 * order, and uses the first that does.
 *
 * A packet is an opaque run of bytes. Transports move packets whole; they
 * never look inside. They report upward (a peer died, a wake-up was sent,
 * a datagram was lost) only through what the open arguments give them:
 * callbacks and a block of counters, never the endpoint itself.
 *
 * Lanes: every ordered pair of ranks has two independent FIFO lanes,
 * FL_LANE_REQ and FL_LANE_REP. Packets on one lane arrive in the order sent;
 * the lanes are not ordered with each other. Replies (and returned messages)
 * use FL_LANE_REP, so a handler's reply never waits behind requests.
 *
 * Threads: the core serialises every call on one fl_tp_ep (the endpoint's
 * lock, or single-threaded use). The one exception is ->dump, which may run
 * on the boot thread while others run: it must read only atomics.
 */
#ifndef FL_TRANSPORT_H
#define FL_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "flit/flit.h"
#include "util/config.h"
#include "util/counter.h"

enum fl_lane { FL_LANE_REQ = 0, FL_LANE_REP = 1, FL_LANES = 2 };
#define FL_LANE_MASK(l) (1u << (l))
#define FL_LANES_ALL    (FL_LANE_MASK(FL_LANE_REQ) | FL_LANE_MASK(FL_LANE_REP))

/* ->commit flags. */
#define FL_COMMIT_MORE (1u << 0) /* more packets follow soon: pack them */

/* Capability flags. */
#define FL_TP_RELIABLE (1u << 0) /* never loses, duplicates or reorders */
#define FL_TP_PUT      (1u << 1) /* ->put writes straight into a peer's segment */

struct fl_tp_ep; /* one transport's part of one endpoint */

/*
 * Counters a transport keeps for the endpoint (relaxed atomics, one writer
 * at a time: the endpoint's caller), in a block of its own the endpoint
 * allocates (->counters_size) and names from ->counters. This struct is
 * the block of the transports here; a transport with other counters
 * declares its own struct.
 */
struct fl_tp_counters {
    fl_counter wakeups_sent;    /* system calls made to wake a peer */
    fl_counter refused_packets; /* malformed or foreign, dropped */
    fl_counter datagrams_sent, datagrams_received;
    fl_counter retransmits, duplicates, faults_injected;
    fl_counter pairs; /* peers that came in contact (->in_contact), once each */
    /* One-sided operations a datagram transport does itself (ofi): puts
       that returned before landing, operations copied through a bounce
       buffer, ones whose own memory an exposed region's registration
       covered, and registrations made for one operation (FI_MR_LOCAL). */
    fl_counter rma_early, rma_bounced, rma_kept, rma_registered;
};

/* An entry of a transport's table for a field of struct fl_tp_counters. */
#define FL_TP_COUNTER(field, name, doc)                                                  \
    FL_COUNTER(struct fl_tp_counters, field, name, FLIT_COUNTER_COUNT, doc)

/*
 * A peer is down (died, or sent what only a broken peer sends): called by
 * ->check_peers or ->poll after delivering what the peer finished sending,
 * once per peer and reason.
 */
typedef void (*fl_tp_down_fn)(void *ctx, uint32_t rank, flit_status reason);

/* What a transport needs to know about the endpoint it serves. */
struct fl_tp_open_args {
    uint64_t job_id;
    uint32_t rank, size;
    uint32_t ep_index; /* n-th endpoint of this rank */
    void *segment;     /* local segment, NULL if none */
    size_t segment_size;
    int segment_fd;          /* >= 0: segment is this shared file (peers map it) */
    uint64_t tag;            /* the endpoint's tag, as first published */
    const uint32_t *host_of; /* [size]: host number of each rank */
    uint32_t net_hint;       /* IPv4 (host order) that reaches the launcher; 0 */
    size_t max_packet;       /* the largest packet the endpoint will send */
    /* Set by a reliability channel above a datagram transport: the bytes
       each peer may have unacknowledged towards us on each lane, for
       sizing receive buffers. 0: no such bound. */
    uint64_t peer_window;
    void *counters; /* this transport's block (->counters_size), kept until close */
    fl_tp_down_fn peer_down;         /* with up_ctx */
    void *up_ctx;
};

/* Called by ->poll for each packet; pkt is valid only during the call. */
typedef void (*fl_tp_recv_fn)(void *ctx, uint32_t src, unsigned lane, void *pkt,
                              size_t len);

/*
 * One-sided operations: what a transport offers when it reaches a peer's
 * memory without the peer's progress engine. The RMA layer (src/rma) keeps
 * export, import, permissions, revocation and notifications; it asks the
 * transport serving the owner for these, once per import, and moves the
 * data in packets (the owner's progress lands them) where the transport
 * offers none, ->reaches says no, or an op refuses.
 *
 * Memory is named by its owner's rank and a key the owner picks (the RMA
 * layer: 0 for its control words, n for its n-th flit_rma_alloc block).
 * How the pieces fit the transports:
 *   shm       ->mem_alloc a file in shared memory, ->map it in the peer,
 *             ->put / ->get by cross-memory attach to any address.
 *   libfabric no memory of its own, no ->map: ->expose registers a
 *             region's memory (the program's or a block) for the peers'
 *             fi_write / fi_read under a key of its own, ->unexpose
 *             withdraws it (revocation, for importers that cannot map the
 *             owner's control words), ->put / ->get are fi_write / fi_read
 *             at (key, address), waiting for the completion.
 *   xdp, udp  none: packets.
 * Threads: as every op, serialised by the endpoint. Blocking: the calls
 * wait for their own completion (no progress engine runs meanwhile).
 */
#define FL_TP_EXPOSE_READ  (1u << 0) /* ->expose: peers' ->get */
#define FL_TP_EXPOSE_WRITE (1u << 1) /* ->expose: peers' ->put */

#define FL_TP_MAP_WRITE (1u << 0) /* ->map: loads and stores, not loads only */
#define FL_TP_MAP_DATA  (1u << 1) /* ->map: data, not control words */

struct fl_tp_onesided {
    /* Whether peer's memory is within reach of the ops below (each may
       still refuse). Changes only when peer goes down. Pure, cheap. */
    bool (*reaches)(struct fl_tp_ep *t, uint32_t peer);

    /*
     * Memory the peers this transport reaches may ->map (and ->put / ->get
     * at with its key): len bytes, whole pages, zero, mapped read-write at
     * *addr_out. Until ->mem_free, which may run after the endpoint's
     * peers stopped using it: mappings peers made keep their pages.
     * FLIT_ERR_NO_MEMORY: this process's or the host's shortage (said once
     * in the log); other failures FLIT_ERR_SYSTEM. Blocks (setup).
     */
    flit_status (*mem_alloc)(struct fl_tp_ep *t, uint64_t key, size_t len,
                             void **addr_out);
    void (*mem_free)(struct fl_tp_ep *t, uint64_t key, void *addr, size_t len);

    /*
     * Optional: maps [off, off + len) (off whole pages) of peer's memory
     * key here, so that loads and stores reach it; writable only with
     * FL_TP_MAP_WRITE, so that the hardware refuses a write the owner did
     * not grant. FL_TP_MAP_DATA: data the caller could also move with
     * ->put / ->get, which the transport's settings may prefer. The size of
     * what peer allocated is checked against off + len. FLIT_ERR_NO_MEMORY:
     * this process's shortage (descriptors, mappings), worth a later try;
     * FLIT_ERR_NOT_SUPPORTED: not mapped (no such memory yet, refused); the
     * caller then uses ->put / ->get or packets. ->unmap gives the pages
     * back. Blocks (setup).
     */
    flit_status (*map)(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t off,
                       size_t len, unsigned flags, void **addr_out);
    void (*unmap)(struct fl_tp_ep *t, void *addr, size_t len);

    /*
     * Copies len bytes to (put) or from (get) peer's memory at its address
     * raddr, inside its memory key (0: memory the program gave, which only
     * a transport that reaches all of peer's memory, as cross-memory attach
     * does, accepts). Complete on return: put's bytes are in place before
     * any packet sent after it is delivered. The caller checked the bounds
     * and the owner's permission. FLIT_ERR_PEER_DOWN: peer's process is
     * gone; FLIT_ERR_NOT_SUPPORTED: refused (logged once by the caller),
     * nothing or part copied: the caller sends it all in packets.
     */
    flit_status (*put)(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t raddr,
                       const void *src, size_t len);
    flit_status (*get)(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t raddr,
                       void *dst, size_t len);

    /*
     * Optional, with ->settle: ->put that may return once src may be
     * reused, its bytes still on their way (a NIC's put from its own copy
     * of them). They are still in place before any packet sent after the
     * call is delivered, and before a later ->put or ->get to peer acts.
     * ->settle(t, peer) waits until every such put to peer has left (the
     * transport's own completions) and answers the first failure among
     * them since the last ->settle (FLIT_ERR_REVOKED, FLIT_ERR_PEER_DOWN,
     * FLIT_ERR_SYSTEM), or FLIT_OK; no wait is longer than
     * FLIT_PEER_TIMEOUT. That they landed, a packet round trip behind them
     * proves (the RMA layer's flush).
     */
    flit_status (*put_early)(struct fl_tp_ep *t, uint32_t peer, uint64_t key,
                             uint64_t raddr, const void *src, size_t len);
    flit_status (*settle)(struct fl_tp_ep *t, uint32_t peer);

    /*
     * Optional, with ->put and ->get: lets the peers this transport reaches
     * write (FL_TP_EXPOSE_WRITE) and read (FL_TP_EXPOSE_READ) [addr, addr +
     * len) of this process, any memory it owns, and nothing else of it: the
     * transport (the NIC, on hardware) refuses what was not granted. Their
     * ->put / ->get reach byte i at (*key_out, *raddr_out + i). ->unexpose
     * withdraws it: once it returns no peer's access lands, and a peer's
     * later ->put / ->get at that key fails with FLIT_ERR_REVOKED (or, where
     * the transport cannot tell a withdrawn key from other trouble,
     * FLIT_ERR_NOT_SUPPORTED: the caller's packets then hear the owner's
     * verdict). FLIT_ERR_NO_MEMORY: a shortage (registrations); other
     * failures FLIT_ERR_NOT_SUPPORTED. Blocks (setup).
     */
    flit_status (*expose)(struct fl_tp_ep *t, void *addr, size_t len, unsigned access,
                          uint64_t *key_out, uint64_t *raddr_out);
    void (*unexpose)(struct fl_tp_ep *t, uint64_t key);

    /*
     * Optional: the smallest message that peer, receiving it, should pull
     * from our memory with its ->get rather than take in packets: one copy
     * instead of two (on a NIC, none by the CPU). Under key 0 where the
     * transport has no ->expose (it reaches all of our memory); else the
     * sender exposes the message's bytes for reading (FL_TP_EXPOSE_READ)
     * until the receiver answers, so ->expose and ->unexpose then run once
     * a message and must be cheap enough for it (a registration, not a
     * setup). 0: never (absent, too: packets). *measure:
     * the receiver chooses, message size by message size, by what each way
     * costs it (stream/choose.c); else it pulls every one. Any thread.
     */
    size_t (*pull_min)(struct fl_tp_ep *t, uint32_t peer, bool *measure);
};

/* Which peers a transport can serve, by where they run (struct fl_transport's
   reach; the core tells each peer's kind from the launcher's hosts). */
#define FL_REACH_SELF   (1u << 0) /* the rank itself */
#define FL_REACH_HOST   (1u << 1) /* the other ranks of this host */
#define FL_REACH_REMOTE (1u << 2) /* ranks on other hosts */

/*
 * A transport, described whole: the core never names one. Selection
 * (core/select.c): FLIT_TRANSPORT is "auto" or a list of names. For each
 * kind of peer (FL_REACH_*) the transports the list names that reach that
 * kind may serve it, or, where it names none for the kind, those that
 * serve by default; of those, a peer takes the first in the build's order
 * (src/flit.c) whose ->reachable accepts its address. An endpoint opens a
 * transport only when it comes first for a kind of peer the job has.
 */
struct fl_transport {
    const char *name; /* [a-z0-9]+, unique in the build: FLIT_TRANSPORT's word */
    uint32_t caps;    /* FL_TP_* */
    unsigned reach;   /* FL_REACH_*: the kinds of peer it may serve */
    bool by_default;  /* serves when FLIT_TRANSPORT is auto */
    /* Its FLIT_* settings: tables (util/config.h) in a NULL-terminated
       list, registered at flit_init whether or not the job uses it, so
       that every variable of the build is checked and documented. */
    const struct fl_setting *const *settings;
    /* Its counters, named "<name>.<counter>" (a table ending with a NULL
       name; NULL: none), at offsets in a zeroed block of counters_size
       bytes that the endpoint allocates and hands to ->open as
       args->counters. */
    const struct fl_counter_desc *counters;
    size_t counters_size;

    /*
     * Optional. Once per process, in flit_init before the launcher is
     * reached: set-up that is cheap only while the process has one thread
     * (PMIx's client and flitrun's boot thread start threads of their own).
     */
    void (*prepare)(void);

    /* Opens the transport for an endpoint. Blocks (setup only). */
    flit_status (*open)(const struct fl_tp_open_args *args, struct fl_tp_ep **out);

    /*
     * The blob peers pass to ->connect, written to buf (at most *len bytes,
     * *len updated). Published through the boot exchange.
     */
    flit_status (*address)(struct fl_tp_ep *t, void *buf, size_t *len);

    /* Whether this transport reaches the rank that published blob. Pure. */
    bool (*reachable)(struct fl_tp_ep *t, uint32_t rank, const void *blob, size_t len);

    /*
     * Connects to rank: takes its address in. May block (setup only). Fails
     * only for what the addresses themselves say (each end of the pair sees
     * the same): creation then fails on both; or, where a rendezvous round
     * follows (->rendezvous), for this process's own trouble too, which that
     * round makes every rank's failure. Otherwise whatever is this process's
     * own trouble waits for first contact: the peer already gone is
     * reported down there, and a shortage (descriptors, memory, room in
     * /dev/shm) is answered by ->reserve, never as the peer's death.
     */
    flit_status (*connect)(struct fl_tp_ep *t, uint32_t rank, const void *blob,
                           size_t len);

    /*
     * Optional; asked before the exchange. Whether peers may need what this
     * endpoint published (its files by name) until every rank has connected.
     * If any rank's transport says so, creation ends with a job-wide round in
     * which every rank also says whether it connected (all fail if one
     * could not); otherwise there is no such round.
     */
    bool (*rendezvous)(struct fl_tp_ep *t);

    /*
     * Called once this rank has connected, after that round where there is
     * one: a transport drops what was only needed for the rendezvous.
     */
    void (*connected)(struct fl_tp_ep *t);

    /* Largest packet ->reserve accepts. */
    size_t (*max_packet)(struct fl_tp_ep *t);

    /*
     * Sending is two steps, so that a packet is built in place (in the
     * peer's ring, in the datagram being filled): ->reserve finds room for
     * a len-byte packet to dst on lane and returns where to write it, or
     * NULL when it cannot now, with *st FLIT_ERR_AGAIN (no room; nothing
     * reserved) or FLIT_ERR_PEER_DOWN; a transport that sets a pair up on
     * its first use may also answer what that failed with (UNREACHABLE,
     * and this process's own shortage as NO_MEMORY or SYSTEM: the pair is
     * not set up, the peer is not down, and a later call tries again; no
     * shortage of ours ever marks a peer down). Never blocks. ->commit sends what was
     * written; ->cancel gives the reservation back unsent. Nothing else is
     * reserved on the transport between a reserve and its commit or cancel.
     * With FL_COMMIT_MORE the transport may hold the packet back to send it
     * with the next ones; it goes out at the latest with the next commit
     * without the flag, or when the transport is polled or armed.
     */
    void *(*reserve)(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                     flit_status *st);
    void (*commit)(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt, size_t len,
                   unsigned flags);
    void (*cancel)(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt);

    /*
     * Optional, for transports that keep what they sent until it is
     * acknowledged: ->commit of a packet whose first head bytes were
     * written at pkt and whose other len - head bytes are lent at src
     * instead of written there. The transport sends them from src, which
     * the caller leaves untouched until ->settle_lent for the same dst and
     * lane; that copies into the reservation the lent bytes it may still
     * need (not yet acknowledged), after which src is the caller's again.
     * What was acknowledged in between was never copied: a payload larger
     * than the window is copied at most a window's worth. Both are called
     * within one call of the layer above (src is its caller's memory), and
     * nothing sent by ->commit differs for being lent.
     */
    void (*commit_lent)(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                        size_t len, size_t head, const void *src, unsigned flags);
    void (*settle_lent)(struct fl_tp_ep *t, uint32_t dst, unsigned lane);

    /*
     * FL_TP_PUT only: copies len bytes from src to dst's segment at offset,
     * complete on return; the caller checked the bounds. Packets sent after
     * it on any lane are seen after the data. The receiver decides what
     * lands in its memory: FLIT_ERR_BAD_TAG, with nothing written, when tag
     * is not the tag dst publishes (->set_tag); FLIT_ERR_NOT_SUPPORTED when
     * the peer's segment cannot be reached directly; FLIT_ERR_AGAIN when
     * this payload is cheaper in packets (too small for the direct path's
     * fixed cost), the direct path staying open for the next. In each case
     * the caller then sends the data in packets, which the receiver judges
     * itself.
     */
    flit_status (*put)(struct fl_tp_ep *t, uint32_t dst, uint64_t tag, uint64_t offset,
                       const void *src, size_t len);

    /* Publishes this endpoint's tag to the peers that ->put to it. */
    void (*set_tag)(struct fl_tp_ep *t, uint64_t tag);

    /*
     * Delivers up to budget received packets from the lanes in lane_mask to
     * cb, in order per (source, lane). Re-entrant for other lanes: cb may
     * send, and may poll lanes other than the one it was called for (never
     * between a reserve and its commit). Returns the number delivered.
     */
    int (*poll)(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb, void *ctx,
                int budget);

    /*
     * Sleep protocol. ->arm says the endpoint is about to sleep and returns
     * true when packets on lane_mask are already waiting (then the caller
     * must not sleep). After ->arm returned false, the transport's ->fd
     * turns readable when a packet arrives, room appears that ->want_room
     * asked for, or a peer dies. ->disarm is called after waking.
     */
    bool (*arm)(struct fl_tp_ep *t, unsigned lane_mask);
    void (*disarm)(struct fl_tp_ep *t);
    int (*fd)(struct fl_tp_ep *t);

    /* Asks to be woken (via ->fd) when dst's lane has room again. */
    void (*want_room)(struct fl_tp_ep *t, uint32_t dst, unsigned lane);

    /*
     * Looks for peers that died. For each newly dead one it first delivers,
     * through cb, the packets the peer finished sending, then calls the
     * open arguments' peer_down. Cheap enough to call every few
     * milliseconds.
     */
    void (*check_peers)(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx);

    /*
     * For a dead peer: hands each packet that was sent to it but never
     * consumed to cb (so the sender can return it). Then forgets them.
     */
    void (*reclaim)(struct fl_tp_ep *t, uint32_t dst, fl_tp_recv_fn cb, void *ctx);

    /*
     * Nothing in flight: every packet sent was acknowledged and every packet
     * received has been acknowledged (reliable transports over an unreliable
     * one; others are always settled). Endpoint destruction waits for it,
     * briefly, so that a peer does not wait for an acknowledgement that
     * never comes.
     */
    bool (*settled)(struct fl_tp_ep *t);

    /*
     * Whether the pair (t, peer) has carried anything, in either direction:
     * we sent to peer, or a packet from peer reached this transport (taken
     * by it, delivered or not). Set up on first use, a pair never carried
     * anything costs nothing, and endpoint destruction says goodbye only to
     * pairs that did. Once every packet sent was acknowledged (->settled
     * on both sides), it gives the same answer on both sides of a pair.
     */
    bool (*in_contact)(struct fl_tp_ep *t, uint32_t peer);

    /* The peer's address as this transport knows it ("" when none). */
    void (*peer_address)(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len);

    /* Optional, for datagram transports: the largest datagram payload
       towards peer, and the largest packet that travels in one datagram
       (a long payload is cut into pieces of that size, less their header). */
    size_t (*peer_datagram)(struct fl_tp_ep *t, uint32_t peer);
    size_t (*peer_packet_fit)(struct fl_tp_ep *t, uint32_t peer);

    /* Optional: one-sided operations (below); NULL: it offers none. */
    const struct fl_tp_onesided *onesided;

    /* One line of state about the pair (t, peer) for dumps; atomics only. */
    void (*dump_peer)(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len);

    void (*close)(struct fl_tp_ep *t);
};

/* The number that marks tp's part of an endpoint's address (FNV-1a of its
   name): no numbers handed out by hand; the core checks they differ. */
static inline uint32_t fl_tp_id(const struct fl_transport *tp)
{
    uint32_t h = 2166136261u;
    for (const char *c = tp->name; *c; c++)
        h = (h ^ (uint8_t)*c) * 16777619u;
    return h;
}

/* Transports in preference order, NULL-terminated; validated once. */
const struct fl_transport *const *fl_transports(void);

#endif /* FL_TRANSPORT_H */
