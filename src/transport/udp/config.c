/* SPDX-License-Identifier: BSD-3-Clause */
/* The UDP transport's settings: what they accept, and their values. */
#include "transport/udp/config.h"

#include <stddef.h>

struct fl_udp_config fl_udp_cfg;

/*
 * The smallest FLIT_UDP_MTU the UDP path works with: 28 bytes of IPv4 and
 * UDP headers (udp.c), the channel's 56-byte datagram header and 8-byte
 * chunk header (channel/wire.h), and 72 bytes of data per chunk. The data
 * is cut in multiples of 8, and the largest packet (FLIT_AM_MAX_MEDIUM +
 * 512 bytes, MAX_PACKET in channel.c) must fit in the 1024 chunks a lane
 * may have in flight (CHUNK_CAP): 64-byte chunks take 1032. Below 156
 * flit_ep_create refuses every peer as unreachable; from 156 to 163 a
 * full-size medium message would wait for room forever.
 */
#define UDP_MTU_MIN (28 + 56 + 8 + 72)

#define F(field) (&fl_udp_cfg.field)
const struct fl_setting fl_udp_settings[] = {
    {"FLIT_UDP_MTU", FL_SET_INT, F(mtu), 0, UDP_MTU_MIN, 65535, "bytes",
     "largest IP packet UDP sends (1500: no fragmentation on Ethernet)", .special = 0,
     .special_means = "the path's MTU"},
    {"FLIT_UDP_ADDR", FL_SET_IPV4, F(addr), 0, 0, 0xffffffffll, NULL,
     "IPv4 address this rank's UDP endpoints use (default: loopback when the job is on "
     "one host, else the interface that reaches the launcher)"},
    {"FLIT_UDP_RAILS", FL_SET_TEXT, NULL, 0, 0, 0, NULL,
     "several NICs: a comma list of IPv4 addresses or interface names, one socket on "
     "each; traffic to a peer with rails too spreads over rail i to its rail i and "
     "survives the loss of one (docs/rails.md)",
     .text = fl_udp_cfg.rails},
    {NULL},
};
#undef F
