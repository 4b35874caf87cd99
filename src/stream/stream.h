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
 */
#ifndef FL_STREAM_STREAM_H
#define FL_STREAM_STREAM_H

#include "core/ep.h"
#include "flit/stream.h"
#include "platform/fiber.h"
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

/* The sender's open message. */
struct flit_stream_out {
    struct fl_hold hold; /* first: ep->hold points here while open */
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
    struct flit_stream_out *next; /* free list */
    /* Placed pieces: the first packet said PLACEABLE, and s is on the
       layer's placing list until its last byte is out; the receiver's
       latest offer: message bytes [place_from, place_to) go to its
       segment at place_seg. */
    bool placeable;
    uint64_t place_from, place_to, place_seg;
    struct flit_stream_out *place_next;
};

/* The receiver's message, from its first packet until its last. */
struct flit_stream {
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
    struct flit_stream *next; /* the sender's messages in progress; free list */
    /* Parking (park.c), under the layer's park_lock: the handler waits in
       flit_stream_park; an unpark came; it is on the ready list. */
    bool parked, wake, ready;
    struct flit_stream *ready_next;
};

struct fl_stream_slot {
    flit_stream_handler_fn fn;
    void *user;
    unsigned flags; /* FLIT_STREAM_FIBER */
};

/* Per endpoint, made with it. */
struct fl_stream_ep {
    struct fl_stream_slot *handlers; /* [ep->handler_count] */
    struct flit_stream **active;     /* [ep->size]: messages arriving */
    uint32_t *next_sid;              /* [ep->size] */
    struct flit_stream_out *free_out;
    struct flit_stream_out *placing; /* messages out that take offers */
    struct flit_stream *free_in;
    struct flit_stream *current; /* whose handler runs now */
    /* Parked handlers that may go on (park.c): any thread adds, the
       endpoint's progress listener resumes them. */
    pthread_mutex_t park_lock;
    bool park_lock_ok;
    struct flit_stream *ready_head, *ready_tail;
    _Atomic unsigned nready;
    bool listening; /* the progress listener is in */
    fl_counter sent_msgs, sent_bytes, recv_msgs, recv_bytes, fibers;
    fl_counter offers, placed_bytes; /* offers made; bytes we placed */
};

extern struct fl_layer fl_stream_layer;

static inline struct fl_stream_ep *fl_stream_of(const struct flit_ep *ep)
{
    return (struct fl_stream_ep *)fl_ep_layer(ep, &fl_stream_layer);
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

/* s may be used now: its handler is the one running (recv.c). */
flit_status fl_stream_usable(const struct flit_stream *s);
/* Runs s's handler, or continues it where it waits (recv.c). */
void fl_stream_run(struct flit_ep *ep, struct flit_stream *s);

/* Parking (park.c): s's handler will not run again; off the ready list. */
void fl_stream_unready(struct fl_stream_ep *se, struct flit_stream *s);
/* The layer's progress listener, added when a FIBER handler is. */
flit_status fl_stream_park_listen(struct flit_ep *ep);
extern const flit_ep_listener_t fl_stream_park_listener;

/* Receive side (recv.c). */
void fl_stream_recv_packet(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                           size_t len);
bool fl_stream_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                    flit_status reason, bool reclaimed);

/* Placed pieces (send.c): a receiver's offer for one of our messages. */
void fl_stream_offer(struct flit_ep *ep, uint32_t src, const struct fl_st_pkt *h);

#endif /* FL_STREAM_STREAM_H */
