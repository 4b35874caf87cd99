/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP sockets on every receive queue of an interface, each with the
 * UMEM it owns, and the XDP program (steer.bpf.c) that steers the
 * endpoint's frames into the socket of the queue they arrived on (a NIC
 * spreads flows over its queues by a hash: RSS). Queue 0's socket also
 * sends.
 *
 * UMEM, per queue: FL_XSK_FRAMES frames of FL_XSK_FRAME bytes; the first half is
 * lent to the kernel for receiving (always in the fill ring or the receive
 * ring: a received frame is given back as soon as it was read), the second
 * half is ours for sending (a stack of free frames, refilled from the
 * completion ring). Rings: the socket's rx and tx, the UMEM's fill and
 * completion, each single-producer single-consumer between us and the
 * kernel (libxdp's inline accessors carry the barriers).
 *
 * The program is attached through a bpf_link held by this process: the
 * kernel detaches it when the process ends, however it ends, so a killed
 * rank leaves nothing on the interface.
 *
 * Threads: one caller at a time (the endpoint's), as the channel calls.
 */
#ifndef FL_TRANSPORT_XDP_XSK_H
#define FL_TRANSPORT_XDP_XSK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

#define FL_XSK_FRAME  4096u
#define FL_XSK_FRAMES 4096u
#define FL_XSK_QUEUES 64u /* receive queues served, at most (the program's map) */

struct fl_xsk;

/* Opens a socket on each of ifname's receive queues for frames to UDP
   port (network order), zero-copy where the driver offers it. FLIT_ERR_NOT_SUPPORTED
   when AF_XDP cannot be had here, with why (one line: not permitted, no
   XDP in the driver, the interface busy); nothing is left behind. */
flit_status fl_xsk_open(const char *ifname, uint16_t port, struct fl_xsk **out, char *why,
                        size_t why_len);
void fl_xsk_close(struct fl_xsk *x);

/* The receive queues served (1 ..). */
unsigned fl_xsk_queues(const struct fl_xsk *x);
/* Queue qi's socket: readable when a frame waits in its receive ring. */
int fl_xsk_fd(const struct fl_xsk *x, unsigned qi);
/* "zero-copy" or "copy", "/native" or "/generic" XDP: for dumps. */
const char *fl_xsk_mode(const struct fl_xsk *x);

/* A free frame to write a frame to send into (FL_XSK_FRAME bytes), or NULL
   when none is free or the send ring is full now. */
uint8_t *fl_xsk_tx_frame(struct fl_xsk *x);
/* Queues the frame fl_xsk_tx_frame gave, len bytes of it. */
void fl_xsk_tx_queue(struct fl_xsk *x, size_t len);
/* Hands what was queued to the kernel, waking it when it asks to be. */
void fl_xsk_tx_kick(struct fl_xsk *x);

/* Frames received on queue qi: up to max waiting at *idx .. *idx + n - 1;
   how many. */
unsigned fl_xsk_rx_peek(struct fl_xsk *x, unsigned qi, unsigned max, uint32_t *idx);
/* Frame idx of those: its bytes (valid until released) and length. */
const uint8_t *fl_xsk_rx_frame(struct fl_xsk *x, unsigned qi, uint32_t idx, size_t *len);
/* Gives queue qi's n frames from idx back to the kernel for receiving. */
void fl_xsk_rx_release(struct fl_xsk *x, unsigned qi, uint32_t idx, unsigned n);

#endif /* FL_TRANSPORT_XDP_XSK_H */
