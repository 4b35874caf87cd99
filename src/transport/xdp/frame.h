/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet / IPv4 / UDP frames as the xdp transport writes and reads them:
 * what the kernel's stack would put around a datagram, written by hand
 * because an AF_XDP socket sends and receives whole frames.
 *
 * Frames from the wire are untrusted: fl_xdp_frame_parse is the one
 * decoder of them and checks every field it relies on (lengths against
 * the frame, IP version and header length, fragments, protocol, the
 * destination, both checksums) before it hands out the payload.
 */
#ifndef FL_TRANSPORT_XDP_FRAME_H
#define FL_TRANSPORT_XDP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define FL_XDP_HDR 42u /* Ethernet 14 + IPv4 20 + UDP 8 */

/* One end of a flow: addresses in network byte order. */
struct fl_xdp_end {
    uint8_t mac[6];
    uint32_t ip;
    uint16_t port;
};

/* Writes a frame from src to dst around the bytes of iov into buf (cap
   bytes); its length, or 0 when it does not fit. ip_id: the IP header's
   identification (any value: the frame is never fragmented). */
size_t fl_xdp_frame_build(uint8_t *buf, size_t cap, const struct fl_xdp_end *src,
                          const struct fl_xdp_end *dst, uint16_t ip_id,
                          const struct iovec *iov, int iovcnt);

/* What a frame said, once it passed. */
struct fl_xdp_rx {
    uint32_t src_ip;   /* network order */
    uint16_t src_port; /* network order */
    size_t off, len;   /* the payload: buf + off, len bytes */
};

enum fl_xdp_verdict {
    FL_XDP_OK = 0,
    FL_XDP_SHORT,     /* shorter than the headers, or than its lengths say */
    FL_XDP_NOT_OURS,  /* not IPv4/UDP, or to another address or port */
    FL_XDP_MALFORMED, /* bad version, header length, lengths, a fragment */
    FL_XDP_CHECKSUM,  /* an IP or UDP checksum that does not add up */
};

/* Decodes frame buf[0 .. len) addressed to ip:port (network order); on
   FL_XDP_OK fills *rx. Never reads outside the frame. */
enum fl_xdp_verdict fl_xdp_frame_parse(const uint8_t *buf, size_t len, uint32_t ip,
                                       uint16_t port, struct fl_xdp_rx *rx);

#endif /* FL_TRANSPORT_XDP_FRAME_H */
