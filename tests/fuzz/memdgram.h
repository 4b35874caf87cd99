/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A datagram transport made of memory (the fl_dgram_ops seam of
 * src/transport/dgram.h), so that the fuzz targets run the reliability
 * channel without sockets. The channel is rank 0 of a job of FUZZ_RANKS;
 * ranks 1 and 2 are peers. Datagrams "from" them wait in a queue until the
 * channel polls; what the channel sends is read (AddressSanitizer checks
 * where from) and dropped.
 */
#ifndef FLIT_FUZZ_MEMDGRAM_H
#define FLIT_FUZZ_MEMDGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel/channel.h"

#define FUZZ_RANKS 3u

/* The setup byte of an input less the bits in FUZZ_SETUP_MASK (hex, from
   the environment): to explore around a known bug, e.g. FUZZ_SETUP_MASK=2
   (no reordering) while a fix for one is pending. */
unsigned memdgram_setup(uint8_t setup);

/* Opens the channel with the setup bits of fuzz.h (datagram size, fault
   injection), connects ranks 1 and 2 and sends rank 1 one packet, so that
   acknowledgements have something to acknowledge. */
struct fl_tp_ep *memdgram_open(unsigned setup);
/* Closes it and drops what is still queued. */
void memdgram_close(struct fl_tp_ep *t);

/* Queues a datagram from src (FL_DGRAM_STRANGER: from outside the job);
   with fix, its version, job key, source and destination are made right.
   False when the queue is full. */
bool memdgram_queue(uint32_t src, const uint8_t *data, size_t len, bool fix);
/* Queues a datagram from rank 1 acknowledging our request lane up to
   next (echoing our clock reading echo: 0, none), with its request chunk
   seq of 32 bytes and flags (FL_CHAN_FIRST, _LAST) when with_chunk. */
void memdgram_from_1(uint32_t next, uint32_t echo, bool with_chunk, uint32_t seq,
                     uint8_t flags);
/* Datagrams queued and not yet received. */
unsigned memdgram_pending(void);
/* Polls t on mask: once, then again (at most 8 times in all) while
   datagrams are queued, since one poll takes one batch. *depth (the
   callback's nesting count) is set to 0 before each. */
void memdgram_poll_all(struct fl_tp_ep *t, unsigned mask, fl_tp_recv_fn cb, void *ctx,
                       unsigned *depth);

/*
 * The script operations the channel targets share (see fuzz.h).
 * memdgram_op_send: the send op's 5 bytes at in (left of them there): a
 * packet of 32 .. max_len bytes; returns the bytes used, 0 when too few.
 * memdgram_op_state: arm, disarm, ask whether settled.
 */
size_t memdgram_op_send(struct fl_tp_ep *t, const uint8_t *in, size_t left,
                        size_t max_len);
void memdgram_op_state(struct fl_tp_ep *t);
/* The next n sends take nothing (-EAGAIN), as a full socket. */
void memdgram_refuse_sends(unsigned n);
/* Counters the channel keeps. */
const struct fl_tp_counters *memdgram_counters(void);
/* The same with the channel's own (its gauges of buffers held). */
const struct fl_chan_counters *memdgram_chan_counters(void);
/* Peers the channel gave up on (its peer_down callback) since the last
   memdgram_open. */
unsigned memdgram_peers_down(void);
/* The job key the channel uses. */
uint64_t memdgram_key(void);

/* When set, sees every datagram the channel sends, as one run of bytes. */
extern void (*memdgram_on_send)(uint32_t dst, const uint8_t *dgram, size_t len);
/* Paths to each peer (->paths, set before memdgram_open; 1 by default);
   the path of the datagram memdgram_on_send sees; the path datagrams
   queued from now on come by. */
extern unsigned memdgram_paths, memdgram_sent_path, memdgram_rx_path;

/* Sends a packet of len bytes (at least 32: an AM short request) to dst on
   lane, as the AM layer would; nothing when the channel has no room. */
void memdgram_send(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                   unsigned flags);

/* Sleeps as an endpoint does, on the channel's descriptor armed with its
   next deadline (at most a second), then polls t on every lane. */
void memdgram_sleep_poll(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx);

#endif /* FLIT_FUZZ_MEMDGRAM_H */
