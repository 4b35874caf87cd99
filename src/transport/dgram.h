/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An unreliable datagram transport: what the reliability channel
 * (src/channel) needs underneath. Datagrams may be lost, duplicated or
 * reordered; they are never corrupted (the network's checksums) and never
 * larger than ->max_payload. The channel adds everything else.
 *
 * Implemented by UDP (src/transport/udp), AF_XDP (src/transport/xdp) and
 * libfabric's reliable datagram endpoints (src/transport/ofi).
 */
#ifndef FL_TRANSPORT_DGRAM_H
#define FL_TRANSPORT_DGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "flit/flit.h"
#include "transport/transport.h"

struct fl_dgram;

/* One datagram to send, gathered from iov. */
struct fl_dgram_out {
    uint32_t dst;
    const struct iovec *iov;
    int iovcnt;
    unsigned path; /* which of ->paths towards dst; 0 with one */
};

/* One datagram received: its bytes (8-byte aligned) and who sent it. */
struct fl_dgram_in {
    uint8_t *buf;
    size_t len;
    uint32_t src;  /* the rank it came from, or FL_DGRAM_STRANGER */
    unsigned path; /* the path it came by (the rail it arrived on); 0 with one */
};

#define FL_DGRAM_SLOTS 3  /* receive buffer sets: one per nested poll */
#define FL_DGRAM_BATCH 16 /* datagrams one receive call takes at most */

#define FL_DGRAM_STRANGER UINT32_MAX /* an address outside the job */
#define FL_DGRAM_PATHS    4u         /* paths to one peer, at most */

/*
 * Optional one-sided operations of a datagram transport whose network
 * moves memory itself (libfabric's fi_write / fi_read): what the channel
 * offers above as its struct fl_tp_onesided's ->reaches, ->expose,
 * ->unexpose, ->put and ->get (transport.h says what each does), the
 * channel adding only that a peer it gave up is not reached.
 */
struct fl_dgram_rma {
    bool (*reaches)(struct fl_dgram *d, uint32_t rank);
    flit_status (*expose)(struct fl_dgram *d, void *addr, size_t len, unsigned access,
                          uint64_t *key_out, uint64_t *raddr_out);
    void (*unexpose)(struct fl_dgram *d, uint64_t key);
    flit_status (*put)(struct fl_dgram *d, uint32_t rank, uint64_t key, uint64_t raddr,
                       const void *src, size_t len);
    flit_status (*get)(struct fl_dgram *d, uint32_t rank, uint64_t key, uint64_t raddr,
                       void *dst, size_t len);
    /* Optional, together (transport.h's ->put_early and ->settle). */
    flit_status (*put_early)(struct fl_dgram *d, uint32_t rank, uint64_t key,
                             uint64_t raddr, const void *src, size_t len);
    flit_status (*settle)(struct fl_dgram *d, uint32_t rank);
    /* Optional: the smallest stream message rank should pull from our
       memory (exposed for reading) with ->get, rather than take in
       datagrams; 0: never (transport.h's ->pull_min). */
    size_t (*pull_min)(struct fl_dgram *d, uint32_t rank);
};

struct fl_dgram_ops {
    const char *name;
    /* Opens for an endpoint; FLIT_ERR_NOT_SUPPORTED when not needed. */
    flit_status (*open)(const struct fl_tp_open_args *args, struct fl_dgram **out);
    flit_status (*address)(struct fl_dgram *d, void *buf, size_t *len);
    bool (*reachable)(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len);
    flit_status (*connect)(struct fl_dgram *d, uint32_t rank, const void *blob,
                           size_t len);
    /* Optional (NULL: one). The separate paths to rank (1 ..
       FL_DGRAM_PATHS), known once connected: rail i to the peer's rail i,
       over as many rails as both ends have. Path i of ours is path i of
       the peer's, so a datagram that came by path i answers by path i. */
    unsigned (*paths)(struct fl_dgram *d, uint32_t rank);
    /* Largest datagram payload towards rank (its path's MTU). */
    size_t (*max_payload)(struct fl_dgram *d, uint32_t rank);
    /* Sends n datagrams in as few system calls as it can; returns how many
       went (the rest would block), or -errno. Never blocks. */
    int (*send)(struct fl_dgram *d, const struct fl_dgram_out *v, int n);
    /*
     * Receives up to FL_DGRAM_BATCH datagrams without blocking into buffer
     * set slot (0 .. FL_DGRAM_SLOTS-1); *in points to their descriptions,
     * valid until the same slot is used again. Returns how many. A caller
     * that nests (a handler waiting to reply polls again) uses the next slot,
     * so what the outer call is delivering stays intact.
     */
    int (*recv)(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in);
    /* Readable when a datagram waits. */
    int (*fd)(struct fl_dgram *d);
    /* "host:port" of rank (address), and a longer line for dumps. */
    void (*address_of)(struct fl_dgram *d, uint32_t rank, char *buf, size_t len);
    void (*describe)(struct fl_dgram *d, uint32_t rank, char *buf, size_t len);
    /* Optional with one path: "host:port -> host:port" of path i to rank. */
    void (*path_of)(struct fl_dgram *d, uint32_t rank, unsigned path, char *buf,
                    size_t len);
    void (*close)(struct fl_dgram *d);
    const struct fl_dgram_rma *rma; /* optional; NULL: none */
};

#endif /* FL_TRANSPORT_DGRAM_H */
