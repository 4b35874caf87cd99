/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UDP datagrams: one socket per endpoint. An unreliable datagram transport
 * (transport/dgram.h); what the core uses is the reliability channel over
 * it, composed where the build's transports are listed (src/flit.c).
 */
#ifndef FL_TRANSPORT_UDP_UDP_H
#define FL_TRANSPORT_UDP_UDP_H

#include "transport/dgram.h"

extern const struct fl_dgram_ops fl_dgram_udp;

#endif /* FL_TRANSPORT_UDP_UDP_H */
