/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the xdp transport's frames go: the interface that holds the
 * endpoint's address, and the Ethernet address of the next hop towards a
 * peer, both as the kernel knows them (its addresses, its routing table,
 * its neighbour table). AF_XDP frames bypass the kernel's stack, so the
 * transport writes these itself.
 */
#ifndef FL_TRANSPORT_XDP_NEIGH_H
#define FL_TRANSPORT_XDP_NEIGH_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

/* The interface (not loopback, up) holding IPv4 address ip (network
   order) into name, and its Ethernet address into mac; false if none. */
bool fl_xdp_iface_of(uint32_t ip, char name[IF_NAMESIZE], uint8_t mac[6]);

/* The Ethernet address of the next hop from ifname towards peer (network
   order): peer itself on its link, else the gateway of the most specific
   route. Asks the kernel to resolve it (a datagram to the peer's discard
   port) and waits for the neighbour table for at most wait_ms. False when
   the route to peer leaves by another interface or nothing answered. */
bool fl_xdp_next_hop_mac(const char *ifname, uint32_t self, uint32_t peer,
                         unsigned wait_ms, uint8_t mac[6]);

#endif /* FL_TRANSPORT_XDP_NEIGH_H */
