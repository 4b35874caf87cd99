/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Illinois Fast Messages 1.x and 2.x on flit (library flit-fm).
 *
 * FM 2.x: a message is a byte stream. The sender opens it with
 * FM_begin_message, adds pieces of any size with FM_send_piece and closes
 * it with FM_end_message; the receiver's handler, int h(FM_stream *,
 * unsigned sender), takes the bytes with FM_receive into buffers of its
 * choosing (it may wait there for bytes still on the wire) and returns
 * FM_CONTINUE. FM_extract(max_bytes) runs handlers for about that many
 * bytes of arriving data and leaves the rest, holding its senders back.
 *
 * FM 1.x: FM_send_4 (four words) and FM_send (one buffer) send a whole
 * message at once; FM_extract() with no argument takes everything waiting.
 * Their messages go to the same handlers, which FM_receive the words or
 * the buffer.
 *
 * Reliable, in order per sender and receiver, with flow control: what flit
 * guarantees. Handler ids are registered with FM_register_handler on every
 * node alike; a node's id and the number of nodes are FM_nodeid and
 * FM_numnodes once FM_initialize has returned. What differs from the
 * originals is listed in flit's docs/compat.md (section "Fast Messages").
 */
#ifndef FLIT_COMPAT_FM_H
#define FLIT_COMPAT_FM_H

#ifdef __cplusplus
extern "C" {
#endif

#define FM_CONTINUE 0    /* what a handler returns */
#define FM_SUCCESS  0    /* a call did what it was asked */
#define FM_FAILURE  (-1) /* bad input, or the message could not go */

#define FM_MAX_HANDLERS 256 /* handler ids 0 .. FM_MAX_HANDLERS - 1 */

/* A message: the sender's, from FM_begin_message to FM_end_message; the
   receiver's, while its handler runs. */
typedef struct FM_stream FM_stream;
typedef int FM_handler(FM_stream *stream, unsigned sender);

/* Collective: every node calls it once, first. FM_SUCCESS or FM_FAILURE. */
extern int FM_initialize(void);
/* Collective: the last call. It ends flit's job for this node too (when
   FM_initialize joined it), so no FM call works after it; a program that
   returns from main (or exits with 0) without it gets it at exit. */
extern void FM_finalize(void);
extern unsigned FM_nodeid;   /* this node, 0 .. FM_numnodes - 1 */
extern unsigned FM_numnodes; /* nodes in the job */

/* Installs handler under handler_id, or under a free id when handler_id is
   0; returns the id, or (unsigned long)FM_FAILURE. */
extern unsigned long FM_register_handler(unsigned long handler_id, FM_handler *handler);

/* ---- FM 2.x ---- */

/* Opens a message of at most size bytes (fewer sent: the rest is zeros) to
   dest's handler; NULL for a bad dest or handler, or a dead dest. Inside a
   handler (forwarding, as in a token ring) the message is built in memory
   and goes out once the program is outside handlers again (the end of that
   FM_extract, or its next message to dest), in order with the program's
   other messages to dest; NULL there when handlers' messages waiting to go
   hold 64 MiB already. A call that answers failure sends nothing. */
extern FM_stream *FM_begin_message(unsigned long dest, unsigned long size,
                                   unsigned long handler);
/* FM_SUCCESS, or FM_FAILURE when the piece would pass the declared size. */
extern int FM_send_piece(FM_stream *stream, void *buf, unsigned long bytes);
extern int FM_end_message(FM_stream *stream);
/* Inside the handler: the next bytes of the message into buf; the number
   received, or FM_FAILURE when fewer remain (nothing is taken). */
extern int FM_receive(void *buf, FM_stream *stream, unsigned int bytes);
/* Runs handlers for about max_bytes of arriving data (0, or 2^32 and more
   such as FM_extract(~0): all that waits);
   returns the number of handlers started. Sends what handlers sent; it
   waits (making progress) only while more than 1 MiB of that waits for
   room, so that handlers cannot pile up messages their peers do not take. */
extern int FM_extract_bytes(unsigned long max_bytes);
#define FM_extract(...) FM_extract_bytes(__VA_ARGS__ + 0)

/* ---- FM 1.x ---- */

extern int FM_send_4(unsigned long dest, unsigned long handler, int i0, int i1, int i2,
                     int i3);
extern int FM_send(unsigned long dest, unsigned long handler, void *buf,
                   unsigned long size);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_COMPAT_FM_H */
