/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The raw UDP baselines flit-bench prints beside its figures when the peer
 * is reached over UDP: what plain sendto/recvfrom between the same two
 * processes, over the same path, achieve. Nothing of flit in here.
 *
 *  - ping-pong: a message of size bytes, cut into datagrams of at most
 *    dgram bytes, goes there and back; the receiving side either spins on
 *    MSG_DONTWAIT (busy) or sleeps in the receive (blocking)
 *  - streaming: messages of size bytes (in datagrams of at most dgram bytes)
 *    one way, at most window datagrams unacknowledged; the consumer sends a
 *    small acknowledgement every window / 2 datagrams; both sides spin, as
 *    flit's ranks spin in flit_poll
 *
 * A single datagram goes with sendto and recvfrom; several go up to 16 at
 * a time with sendmmsg and recvmmsg, as flit sends and receives them. Made
 * one system call per datagram and sleeping between them, the baseline
 * measured the system calls and the wake-ups, not the path: across veth,
 * where datagrams are 1472 bytes, it read a third of what the same sockets
 * carry in batches, and flit looked 2-3x faster than raw UDP.
 *
 * Every datagram carries a sequence number. A baseline that loses a
 * datagram (the socket overflowed, or the path drops) or stops hearing
 * from its peer for 2 s gives up and returns UINT64_MAX: the figure is then
 * missing, and the other side gives up the same way, so neither hangs.
 */
#ifndef FLIT_BENCH_UDP_H
#define FLIT_BENCH_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bench_udp bench_udp_t;

/* What one figure moves: the message size, the datagram size, the mode. */
struct bench_udp_shape {
    size_t size;     /* bytes per message (0: one empty datagram) */
    size_t dgram;    /* largest datagram payload, at least 64 */
    bool blocking;   /* ping-pong: sleep in recvfrom rather than spin */
    unsigned window; /* streaming: datagrams in flight (bench_udp_window) */
};

/* A socket bound to INADDR_ANY with 8 MiB buffers (forced where allowed);
   NULL with the reason printed on failure. */
bench_udp_t *bench_udp_open(void);
void bench_udp_close(bench_udp_t *u);
/* The socket's port (host order). */
uint16_t bench_udp_port(const bench_udp_t *u);
/* Where this side sends: an IPv4 address in host order, and a port. */
void bench_udp_set_peer(bench_udp_t *u, uint32_t ip, uint16_t port);

/*
 * Streaming's window in datagrams for messages in flight: what they need,
 * but no more than the receiving socket holds without dropping (so no
 * more than this side's own socket: both are made alike). The producer's
 * side computes it and gives both sides the same shape.
 */
unsigned bench_udp_window(const bench_udp_t *u, const struct bench_udp_shape *s,
                          unsigned messages);

/*
 * n round trips. The initiator returns the nanoseconds they took, the echo
 * side 0; either UINT64_MAX when it gave up (see above). Both sides call
 * with the same shape and n.
 */
uint64_t bench_udp_ping(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n);
uint64_t bench_udp_echo(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n);

/*
 * n messages one way. The producer returns the nanoseconds from its first
 * datagram until the consumer had acknowledged the last message; the
 * consumer returns 0. UINT64_MAX as above.
 */
uint64_t bench_udp_produce(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n);
uint64_t bench_udp_consume(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n);

#endif /* FLIT_BENCH_UDP_H */
