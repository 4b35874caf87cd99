/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliability channel: turns an unreliable datagram transport
 * (src/transport/dgram.h) into a reliable, ordered fl_transport, so that
 * everything above it sees what shared memory gives: nothing lost, nothing
 * twice, in order per pair and lane, credits.
 *
 * Per peer and lane:
 *  - sequence numbers on chunks (a packet larger than a datagram is several
 *    chunks, reassembled in order);
 *  - cumulative plus selective acknowledgements on every datagram going the
 *    other way, so a reply acknowledges its request (the HPAM idea), and a
 *    delayed acknowledgement when there is no reverse traffic;
 *  - retransmission on a timer estimated from measured round trips, with
 *    exponential backoff, and at once when selective acks show a hole;
 *    on a path that lost nothing lately, a timeout sends only the oldest
 *    chunk again (alone again, backed off, if that times out too) and its
 *    acknowledgement decides about the rest (F-RTO, by sequence numbers
 *    and by the clock it echoes), and a resend it shows needless (the peer
 *    was silent, not the path lossy) makes the timers wait as long as that
 *    silence; the timers never judge while datagrams wait unread;
 *  - a credit window: the unacknowledged bytes a sender may have towards a
 *    receiver, sized so the receiver's socket never overflows. The sender's
 *    copy of what is unacknowledged lives in that window, so the window is
 *    also the retransmission buffer; a large payload is lent instead
 *    (->commit_lent): sent from the caller's memory, and only what is still
 *    unacknowledged when the caller's call ends is copied into the window;
 *  - keep-alives while idle, and a give-up time (FLIT_PEER_TIMEOUT) after
 *    which the peer is reported down and what it never acknowledged comes
 *    back as returned messages.
 *
 * Fault injection (FLIT_DROP_RATE, FLIT_DUP_RATE, FLIT_REORDER_RATE) is not
 * the channel's: it is a datagram transport of its own (transport/fault),
 * composed under the channel in src/flit.c when a rate is set.
 */
#ifndef FL_CHANNEL_CHANNEL_H
#define FL_CHANNEL_CHANNEL_H

#include "transport/dgram.h"
#include "transport/transport.h"

/* Opens a channel endpoint over the datagram transport ops. */
flit_status fl_chan_open(const struct fl_dgram_ops *ops,
                         const struct fl_tp_open_args *args, struct fl_tp_ep **out);

/* The channel's transport ops; FL_CHANNEL_OPS fills a transport's table with them. */
flit_status fl_chan_address(struct fl_tp_ep *t, void *buf, size_t *len);
bool fl_chan_reachable(struct fl_tp_ep *t, uint32_t rank, const void *blob, size_t len);
flit_status fl_chan_connect(struct fl_tp_ep *t, uint32_t rank, const void *blob,
                            size_t len);
void fl_chan_connected(struct fl_tp_ep *t);
size_t fl_chan_max_packet(struct fl_tp_ep *t);
void *fl_chan_reserve(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                      flit_status *st);
void fl_chan_commit(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                    size_t len, unsigned flags);
void fl_chan_cancel(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt);
void fl_chan_commit_lent(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                         size_t len, size_t head, const void *src, unsigned flags);
void fl_chan_settle_lent(struct fl_tp_ep *t, uint32_t dst, unsigned lane);
int fl_chan_poll(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb, void *ctx,
                 int budget);
bool fl_chan_arm(struct fl_tp_ep *t, unsigned lane_mask);
void fl_chan_disarm(struct fl_tp_ep *t);
int fl_chan_fd(struct fl_tp_ep *t);
void fl_chan_want_room(struct fl_tp_ep *t, uint32_t dst, unsigned lane);
void fl_chan_check_peers(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx);
void fl_chan_reclaim(struct fl_tp_ep *t, uint32_t dst, fl_tp_recv_fn cb, void *ctx);
bool fl_chan_settled(struct fl_tp_ep *t);
bool fl_chan_in_contact(struct fl_tp_ep *t, uint32_t peer);
void fl_chan_peer_address(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len);
size_t fl_chan_peer_datagram(struct fl_tp_ep *t, uint32_t peer);
size_t fl_chan_peer_packet_fit(struct fl_tp_ep *t, uint32_t peer);
void fl_chan_dump_peer(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len);
void fl_chan_close(struct fl_tp_ep *t);

/* The one-sided operations of a datagram transport that has them
   (struct fl_dgram_ops's rma), offered above (onesided.c): a transport's
   table names it where its datagram transport may. */
extern const struct fl_tp_onesided fl_chan_onesided;

/* The channel's counters (counters.c): the transports' struct
   fl_tp_counters first, where the datagram transport and the fault
   interposer under it count too, then the channel's gauges (idle.c). */
struct fl_chan_counters {
    struct fl_tp_counters tp;
    fl_counter buffer_bytes; /* send windows, chunk tables, reorder, reassembly */
    fl_counter idle_peers;   /* quiet peers that gave their buffers back */
    fl_counter path_down, path_up;         /* a path to a peer taken down, back up */
    fl_counter path_bytes[FL_DGRAM_PATHS]; /* sent by rail i, to every peer */
};
/* Their names: first those of a datagram transport's own one-sided
   operations (struct fl_tp_counters' rma_*, FL_CHAN_RMA_COUNTERS of them),
   then every channel's. */
extern const struct fl_counter_desc fl_chan_counters[];
#define FL_CHAN_RMA_COUNTERS 4

/* The ops of a reliable transport that is the channel over a datagram
   transport: the fields of its struct fl_transport besides its name, reach,
   settings and open function (which calls fl_chan_open). */
#define FL_CHANNEL_OPS                                                                   \
    .caps = FL_TP_RELIABLE, .address = fl_chan_address, .reachable = fl_chan_reachable,  \
    .connect = fl_chan_connect, .connected = fl_chan_connected,                          \
    .max_packet = fl_chan_max_packet, .reserve = fl_chan_reserve,                        \
    .commit = fl_chan_commit, .cancel = fl_chan_cancel,                                  \
    .commit_lent = fl_chan_commit_lent, .settle_lent = fl_chan_settle_lent,              \
    .poll = fl_chan_poll, .arm = fl_chan_arm, .disarm = fl_chan_disarm,                  \
    .fd = fl_chan_fd, .want_room = fl_chan_want_room,                                    \
    .check_peers = fl_chan_check_peers, .reclaim = fl_chan_reclaim,                      \
    .settled = fl_chan_settled, .in_contact = fl_chan_in_contact,                        \
    .peer_address = fl_chan_peer_address, .peer_datagram = fl_chan_peer_datagram,        \
    .peer_packet_fit = fl_chan_peer_packet_fit, .dump_peer = fl_chan_dump_peer,          \
    .close = fl_chan_close, .counters_size = sizeof(struct fl_chan_counters)

/* The counters and one-sided operations of a transport's table: of the
   channel alone, or with those of a datagram transport that has its own
   one-sided operations (struct fl_dgram_ops's rma). */
#define FL_CHANNEL_COUNTERS .counters = fl_chan_counters + FL_CHAN_RMA_COUNTERS
#define FL_CHANNEL_ONESIDED .counters = fl_chan_counters, .onesided = &fl_chan_onesided

#endif /* FL_CHANNEL_CHANNEL_H */
