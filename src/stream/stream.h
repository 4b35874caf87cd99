/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stream layer's internal interface: its state per endpoint, and the
 * hooks the core calls (the held packet, a peer going down, teardown).
 *
 * Sending. A message's packets are built in place, in the transport's
 * buffer: flit_stream_begin reserves the first packet, sized for what the
 * message still needs (up to a piece), and each flit_stream_send copies its
 * bytes straight into the open packet, committing it when full and
 * reserving the next. A packet left half full between two calls is held
 * (ep->hold): the transport allows one open reservation, so anything else
 * that sends or polls on the endpoint first commits it as it is (shorter
 * than planned) and the message goes on in a new packet. That keeps small
 * messages one packet, lets pieces leave before the message is closed, and
 * keeps the order of handlers the order of begin calls.
 *
 * Receiving. The first packet of a message starts its handler: inline when
 * the packet holds the whole message (nothing to wait for), else on a
 * fiber. Later packets of the message resume the fiber with their payload;
 * it copies what it asked for straight from the packet and yields when it
 * needs the next one, so no packet is ever kept or copied aside.
 *
 * Placed pieces: one copy instead of two on shared memory. A packet costs
 * two copies (into the ring, out of it). When a handler waits for bytes
 * that are to land in its endpoint's own segment, which the sender maps,
 * the receiver offers the sender that place (wire.h): the bytes of the
 * range the sender has not sent yet it writes there itself with the
 * transport's ->put, and a PLACED packet tells that they are in. The
 * handler's recv then finds them already where it wanted them. The sender
 * marks the messages it can do this for (a peer whose segment it reaches,
 * a message long enough) and looks for offers on the reply lane before
 * each packet of them, so an offer is taken within a piece of being made;
 * one that comes too late (the bytes already left as packets) is ignored.
 * The receiver names the place, the range and the time: its memory takes
 * only what it asked for, where it asked.
 *
 * Pulled messages: one copy into private memory too (pull.c). A whole
 * message sent in one call (flit_stream_sendmsg, or flit_stream_send of
 * every byte of a message just begun) to a peer whose transport offers
 * ->pull_min, from that size up, sends only its first packet: the bytes of
 * all but its last part, and where the last part lies. The receiver's
 * handler takes the rest straight from the sender's memory with ->get into
 * the buffer it receives into, and answers when done; the send call waits
 * for that answer, making progress, so the caller's buffer is free when it
 * returns, as before.
 */
#ifndef FL_STREAM_STREAM_H
#define FL_STREAM_STREAM_H

#include <stddef.h>

#include "core/ep.h"
#include "flit/stream.h"
#include "platform/fiber.h"
#include "stream/choose.h"
#include "stream/wire.h"

/* Placed pieces (above): a message from this long asks for offers, and a
   handler waiting for this many bytes or more in the segment makes one. */
#define FL_ST_PLACE_MIN (64u << 10)
#define FL_ST_OFFER_MIN (16u << 10)
/* The first packet of a message that asks carries at most this much: the
   handler reaches its wait, and its offer the sender, a piece sooner. */
#define FL_ST_PLACE_FIRST 4096u
#define FL_ST_OFFER_MAX (UINT32_MAX & ~(uint32_t)(FL_ST_ALIGN - 1)) /* len field */
/* A packet may run this far past the piece size rather than leave a tail
   of this much or less for a packet of its own: a layer's header in front
   of a piece-sized payload (tagged messaging's 8-byte tag before 32 KiB)
   stays one packet. */
#define FL_ST_TAIL 256u
/* flit_stream_sendmsg sends a message of one piece up to this size in one
   packet, by a path of its own (send.c, send_short). */
#define FL_ST_SHORT 256u

/*
 * Handles. flit_stream_t and flit_stream_out_t values are not addresses:
 * bit 0 set, bit 1 the kind (FL_ST_OUT), the slot's index in its table,
 * and the slot's generation, odd while the handle is in use (from
 * in_get / out_get to in_put / out_put). Putting a slot back bumps it, so
 * a kept handle never matches the slot's next message, and the check
 * (fl_st_lookup: a load of the chunk, a load of the slot's value, a
 * compare) reads only slots, which are never freed: an ended endpoint's
 * go back to the table, their generations going on. The generation has
 * 38 bits where pointers are 64-bit, 14 where they are 32-bit (a stale
 * handle could match again after 2^13 messages through its slot).
 */
#define FL_ST_OUT        2u
#define FL_ST_CHUNK_BITS 8u
#define FL_ST_CHUNK      (1u << FL_ST_CHUNK_BITS)
#if UINTPTR_MAX > 0xffffffffu
#define FL_ST_INDEX_BITS 24u /* slots in a table */
#else
#define FL_ST_INDEX_BITS 16u
#endif
#define FL_ST_CHUNKS  (1u << (FL_ST_INDEX_BITS - FL_ST_CHUNK_BITS))
#define FL_ST_GEN_ONE ((uintptr_t)1 << (2u + FL_ST_INDEX_BITS))

/* The slots of one kind, in chunks of FL_ST_CHUNK; a chunk once made stays
   (layer.c). */
struct fl_st_table {
    void *_Atomic chunk[FL_ST_CHUNKS];
    pthread_mutex_t lock; /* free, made */
    void *free;           /* slots no endpoint holds */
    uint32_t made;
};
extern struct fl_st_table fl_st_in_table, fl_st_out_table;

/* The slot (of size bytes, its value at value_off) a live handle v of
   kind names, NULL for any other value. */
static inline void *fl_st_lookup(struct fl_st_table *t, uintptr_t v, uintptr_t kind,
                                 size_t size, size_t value_off)
{
    const uintptr_t want = 1u | kind | FL_ST_GEN_ONE;
    if (__builtin_expect((v & (3u | FL_ST_GEN_ONE)) != want, 0))
        return NULL;
    uintptr_t i = (v >> 2) & (((uintptr_t)1 << FL_ST_INDEX_BITS) - 1);
    uint8_t *c =
        atomic_load_explicit(&t->chunk[i >> FL_ST_CHUNK_BITS], memory_order_acquire);
    if (__builtin_expect(!c, 0))
        return NULL;
    uint8_t *e = c + (i & (FL_ST_CHUNK - 1)) * size;
    uintptr_t now =
        atomic_load_explicit((_Atomic uintptr_t *)(e + value_off), memory_order_acquire);
    return now == v ? e : NULL;
}

/* A slot for an endpoint whose own spare ones ran out: one another gave
   back, or a new one (its generation even); NULL when the table is full or
   memory short. */
void *fl_st_take(struct fl_st_table *t, size_t size, size_t value_off, size_t next_off,
                 uintptr_t kind);
/* Gives back the slots of list (linked through the field at next_off). */
void fl_st_give(struct fl_st_table *t, void *list, size_t next_off);

/* The sender's open message. */
struct fl_st_out {
    struct fl_hold hold; /* first: ep->hold points here while open */
    _Atomic uintptr_t handle; /* its flit_stream_out_t (above) */
    struct flit_ep *ep;
    uint32_t dst, sid;
    uint16_t handler;
    bool live;
    flit_status error; /* the peer went down mid-message */
    uint64_t total;
    uint64_t sent; /* bytes in packets committed or open */
    /* The open packet, when there is one (then ep->hold is this). */
    uint8_t *pkt;
    size_t hdr_len;
    size_t cap, fill;             /* payload room in it, bytes in it */
    /* The first staged bytes of fill are held here, not in the packet,
       until it closes (send.c, put_bytes): a header sent before the rest. */
    size_t staged;
    uint8_t head[FL_ST_ALIGN];
    bool first_open;              /* it is the first packet */
    bool slack;                   /* room for a pad was reserved in it */
    struct fl_st_out *next;       /* free list */
    /* Placed pieces: the first packet said PLACEABLE, and s is on the
       layer's placing list until its last byte is out; the receiver's
       latest offer: message bytes [place_from, place_to) go to its
       segment at place_seg. */
    bool placeable;
    uint64_t place_from, place_to, place_seg;
    struct fl_st_out *place_next;
};

/* A pulled message's sender waiting for its receiver's answer (pull.c),
   on the sending call's stack, listed in the layer's pulls. */
struct fl_st_pull_wait {
    uint32_t dst, sid;
    uint64_t total;
    bool answered, resend;
    bool advised;    /* the receiver chose (choose.c): not "cannot pull" */
    uint64_t offset; /* resend: from here, in packets */
    struct fl_st_pull_wait *next;
};

/* Our pulled messages to one rank (pull.c). */
struct fl_st_pull_to {
    uint64_t min;     /* the transport's smallest; UINT64_MAX never; 0: not asked */
    bool ask;         /* its receiver chooses, by measurement (choose.c) */
    uint16_t advice;  /* ask: size classes it wants offered pulled */
    uint32_t explore; /* ask: messages sent through the rings against advice */
};

/* The receiver's message, from its first packet until its last. */
struct fl_st_in {
    _Atomic uintptr_t handle; /* its flit_stream_t (above) */
    struct flit_ep *ep;
    uint32_t src, sid;
    uint64_t total;
    uint64_t arrived;   /* payload bytes delivered to us so far */
    uint64_t taken;     /* of them, taken or passed over */
    const uint8_t *cur; /* the packet at hand: bytes not yet taken */
    size_t cur_len;
    flit_stream_handler_fn fn;
    void *user;
    struct fl_fiber *fiber;   /* NULL: runs inline */
    flit_status error;        /* the sender died, or the endpoint closes */
    bool live;                /* its handler runs (or waits) */
    bool linked;              /* in its sender's messages in progress */
    bool spawned;             /* flit_stream_spawn's: no message behind it */
    bool placeable;           /* its sender takes offers (stream.h) */
    /* Our latest offer: message bytes [place_from, place_to) land at
       place_at, in our segment (place_to 0: none yet). */
    uint64_t place_from, place_to;
    uint8_t *place_at;
    /* Pulled (pull.c): message bytes [pull_from, total) lie at pull_addr
       under pull_key in the sender's memory; pull: not answered yet. */
    bool pull;
    uint64_t pull_from, pull_addr, pull_key;
    /* Measured for the choice of one copy or two (choose.c): the sender lets
       us choose (ASK); the bytes read and the time in the reads; the
       rings' start (0: not timed) and the bytes that had arrived then. */
    bool ask;
    uint64_t pull_got, pull_ns, ring_t0, ring_from;
    struct fl_st_in *next; /* the sender's messages in progress; free list */
    /* Parking (park.c), under the layer's park_lock: the handler waits in
       flit_stream_park; an unpark came; it is on the ready list. */
    bool parked, wake, ready;
    struct fl_st_in *ready_next;
};

struct fl_stream_slot {
    flit_stream_handler_fn fn;
    void *user;
    unsigned flags; /* FLIT_STREAM_FIBER */
};

/* Per endpoint, made with it. */
struct fl_stream_ep {
    struct fl_stream_slot *handlers; /* [ep->handler_count] */
    struct fl_st_in **active;        /* [ep->size]: messages arriving */
    uint32_t *next_sid;              /* [ep->size] */
    struct fl_st_out *free_out;
    struct fl_st_out *placing; /* messages out that take offers */
    struct fl_st_pull_wait *pulls; /* pulled messages out, not answered */
    struct fl_st_pull_to *pull_to; /* [ep->size]: our pulled messages to each rank */
    struct fl_st_rates **rates;    /* [ep->size]: what each rank's messages cost us */
    struct fl_st_in *free_in;
    struct fl_st_in *current; /* whose handler runs now */
    /* Parked handlers that may go on (park.c): any thread adds, the
       endpoint's progress listener resumes them. */
    pthread_mutex_t park_lock;
    bool park_lock_ok;
    struct fl_st_in *ready_head, *ready_tail;
    _Atomic unsigned nready;
    bool listening; /* the progress listener is in */
    fl_counter sent_msgs, sent_bytes, recv_msgs, recv_bytes, fibers;
    fl_counter offers, placed_bytes; /* offers made; bytes we placed */
    fl_counter pulled_msgs, pulled_bytes, pull_refused, pull_declined; /* pull.c */
};

extern struct fl_layer fl_stream_layer;

static inline struct fl_stream_ep *fl_stream_of(const struct flit_ep *ep)
{
    return (struct fl_stream_ep *)fl_ep_layer(ep, &fl_stream_layer);
}

/* The live message a handle names, NULL for any other value. */
static inline struct fl_st_in *fl_st_in_of(const flit_stream_t *h)
{
    return fl_st_lookup(&fl_st_in_table, (uintptr_t)h, 0, sizeof(struct fl_st_in),
                        offsetof(struct fl_st_in, handle));
}

static inline struct fl_st_out *fl_st_out_of(const flit_stream_out_t *h)
{
    return fl_st_lookup(&fl_st_out_table, (uintptr_t)h, FL_ST_OUT,
                        sizeof(struct fl_st_out), offsetof(struct fl_st_out, handle));
}

/* A slot's handle, handed out (its generation odd) or ended (even). */
static inline uintptr_t fl_st_handle(const _Atomic uintptr_t *h)
{
    return atomic_load_explicit(h, memory_order_relaxed);
}

/* Bumps a slot's generation: written only under its endpoint (release),
   read by any thread (fl_st_lookup, acquire). */
static inline void fl_st_bump(_Atomic uintptr_t *h)
{
    atomic_store_explicit(h, fl_st_handle(h) + FL_ST_GEN_ONE, memory_order_release);
}

/* Commits the open packet of the message ep->hold points to (core/layer.h). */
void fl_stream_flush(struct fl_hold *h);

/* The endpoint's state: made by the core, filled here; freed (waiting
   handlers let go first); a sender died. */
flit_status fl_stream_ep_open(struct flit_ep *ep, void *state);
void fl_stream_ep_close(struct flit_ep *ep, void *state);
void fl_stream_peer_down(struct flit_ep *ep, void *state, uint32_t rank);

/* Lets every waiting handler of src's messages return (its recv answers
   why), then forgets the messages (recv.c). */
void fl_stream_end_all(struct flit_ep *ep, uint32_t src, flit_status why);

/* The message handle h names, in *out, if it may be used now: its handler
   is the one running (recv.c). */
flit_status fl_stream_usable(const flit_stream_t *h, struct fl_st_in **out);
/* Runs s's handler, or continues it where it waits (recv.c). */
void fl_stream_run(struct flit_ep *ep, struct fl_st_in *s);

/* Parking (park.c): s's handler will not run again; off the ready list. */
void fl_stream_unready(struct fl_stream_ep *se, struct fl_st_in *s);
/* Endpoint entered, program context: resumes the ready handlers, oldest
   first; under flit_extract's pacing, only while its budget lasts. Whether
   it resumed any. */
bool fl_stream_resume_ready(struct flit_ep *ep);
/* s's handler, pulling, has spent flit_extract's budget: it waits on the
   ready list for a later pass (or its message's end). */
void fl_stream_pace_wait(struct fl_st_in *s);
/* The layer's progress listener, added when a FIBER handler is, or
   flit_extract is first called. */
flit_status fl_stream_park_listen(struct flit_ep *ep);
extern const flit_ep_listener_t fl_stream_park_listener;

/* Receive side (recv.c). */
void fl_stream_recv_packet(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                           size_t len);
bool fl_stream_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                    flit_status reason, bool reclaimed);

/* Placed pieces (send.c): a receiver's offer for one of our messages. */
void fl_stream_offer(struct flit_ep *ep, uint32_t src, const struct fl_st_pkt *h);

/* ---- pulled messages (pull.c) ---- */

/* The most bytes a pulled message's first packet carries (all its parts
   but the last: a layer's header). */
#define FL_ST_PULL_HEAD 1024u

/* Whether a whole message of total bytes to dst, head of them before its
   last part, goes pulled. */
bool fl_stream_pulls(struct flit_ep *ep, uint32_t dst, uint64_t total, size_t head,
                     unsigned flags);
/* Where a pulled message's bytes lie for its receiver's ->get: key 0 and
   their address where dst's transport reaches our memory as a whole;
   else exposed for reading by ->expose for the message's time. */
struct fl_st_lend {
    uint64_t key, addr;
    bool exposed;
};
/* Lends [buf, buf + len), a pulled message's last part, to dst's
   receiver: false where the transport would not expose it (the message
   then goes in packets; pulls to dst stop where it never will). */
bool fl_stream_pull_lend(struct flit_ep *ep, uint32_t dst, const void *buf, size_t len,
                         struct fl_st_lend *l);
/* Withdraws what fl_stream_pull_lend lent, once the receiver answered or
   the message failed. */
void fl_stream_pull_unlend(struct flit_ep *ep, uint32_t dst, struct fl_st_lend *l);
/*
 * Sends pulled message s (numbered, counted) in pkt, reserved for its
 * first packet: iov's parts but the last inline (head bytes), the last
 * lent as l says, then waits for the receiver's answer. *from: the bytes
 * it took (total), or where packets must take over (it could not pull).
 */
flit_status fl_stream_pull_out(struct fl_st_out *s, void *pkt, const struct iovec *iov,
                               int iovcnt, size_t head, const struct fl_st_lend *l,
                               uint64_t *from);
/* A receiver's answer to one of our pulled messages (PULLED). */
void fl_stream_pulled(struct flit_ep *ep, uint32_t src, const struct fl_st_pkt *h);
/* take()'s part while s is pulled and no packet is at hand: n bytes into
   dst (NULL: passed over). FLIT_ERR_AGAIN: it could not pull, the sender
   now sends the rest in packets. */
flit_status fl_stream_pull_take(struct fl_st_in *s, uint8_t *dst, size_t n);
/* s's handler is done: answers its sender if it has not yet (and nothing
   more comes). */
void fl_stream_pull_end(struct fl_st_in *s);
/* The first packet of s, pulled, has come: pulls it, or asks at once for
   its bytes in packets where its sender lets us choose and the rings are
   to be measured or are cheaper (choose.c). */
void fl_stream_pull_begin(struct fl_st_in *s);
/* Times s through the rings from now, for the choice, if its sender lets
   us choose (s->total bytes, s->arrived of them here). */
void fl_stream_ring_start(struct fl_st_in *s);
/* s's last packet is in and taken: notes what the rings cost (s timed). */
void fl_stream_ring_done(struct flit_ep *ep, uint32_t src, uint64_t total, uint64_t bytes,
                         uint64_t t0);

#endif /* FL_STREAM_STREAM_H */
