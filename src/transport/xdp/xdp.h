/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP datagrams: an unreliable datagram transport (transport/dgram.h)
 * whose frames bypass the kernel's stack, for the reliability channel
 * above it (composed in src/flit.c).
 *
 * On the wire it is UDP/IPv4, on the same address and port as a UDP
 * socket the endpoint keeps open: a peer on plain UDP (the udp transport,
 * or an xdp endpoint that could not attach) talks to it unchanged, and its
 * address blob is the udp transport's. Frames to the endpoint's port are
 * steered into the AF_XDP socket of the queue they arrive on, on the
 * interface holding the endpoint's address (xsk.h: one per receive queue);
 * everything else goes on to the kernel.
 *
 * Where AF_XDP cannot be had (not permitted, the driver has no XDP, the
 * interface busy) the endpoint serves through its UDP socket alone, and
 * says once why. Peers not reached through that interface (the route
 * leaves elsewhere, the neighbour never answered) are served through the
 * UDP socket too.
 *
 * With rails (FLIT_UDP_RAILS: the kernel path's sockets, one per
 * interface), one AF_XDP socket per rail, each path to a peer served by
 * AF_XDP or by the kernel on its own (docs/rails.md).
 */
#ifndef FL_TRANSPORT_XDP_XDP_H
#define FL_TRANSPORT_XDP_XDP_H

#include "transport/dgram.h"

/* Opens for the endpoint over kernel, the plain UDP datagrams that keep
   the port and serve where AF_XDP does not (src/flit.c gives the udp
   transport's). What fails opening kernel fails the same way. */
flit_status fl_xdp_open(const struct fl_dgram_ops *kernel,
                        const struct fl_tp_open_args *a, struct fl_dgram **out);

/* The operations other than open. */
flit_status fl_xdp_address(struct fl_dgram *d, void *buf, size_t *len);
bool fl_xdp_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len);
flit_status fl_xdp_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                           size_t len);
unsigned fl_xdp_paths(struct fl_dgram *d, uint32_t rank);
size_t fl_xdp_max_payload(struct fl_dgram *d, uint32_t rank);
int fl_xdp_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n);
int fl_xdp_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in);
int fl_xdp_fd(struct fl_dgram *d);
void fl_xdp_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len);
void fl_xdp_path_of(struct fl_dgram *d, uint32_t rank, unsigned path, char *buf,
                    size_t len);
void fl_xdp_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len);
void fl_xdp_close(struct fl_dgram *d);

/* A datagram table for AF_XDP over one kernel path: open_fn calls
   fl_xdp_open with it. */
#define FL_XDP_DGRAM(open_fn)                                                            \
    {                                                                                    \
        .name = "xdp", .open = (open_fn), .address = fl_xdp_address,                     \
        .reachable = fl_xdp_reachable, .connect = fl_xdp_connect, .paths = fl_xdp_paths, \
        .path_of = fl_xdp_path_of, .max_payload = fl_xdp_max_payload,                    \
        .send = fl_xdp_send, .recv = fl_xdp_recv, .fd = fl_xdp_fd,                       \
        .address_of = fl_xdp_address_of, .describe = fl_xdp_describe,                    \
        .close = fl_xdp_close,                                                           \
    }

#endif /* FL_TRANSPORT_XDP_XDP_H */
