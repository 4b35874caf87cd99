/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interface and the next hop's Ethernet address (neigh.h), from the
 * kernel's own tables in /proc/net: no netlink needed for a lookup made
 * once per peer.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "transport/xdp/neigh.h"

#define RTF_UP_GW    0x0003u /* RTF_UP | RTF_GATEWAY */
#define ATF_DONE     0x02u   /* ATF_COM: the entry is resolved */
#define DISCARD      9u      /* the port the nudge goes to */
#define WAIT_STEP_MS 5u

static bool iface_mac(const char *name, uint8_t mac[6])
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return false;
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    bool ok = ioctl(s, SIOCGIFHWADDR, &ifr) == 0;
    close(s);
    if (ok)
        memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
    return ok;
}

bool fl_xdp_iface_of(uint32_t ip, char name[IF_NAMESIZE], uint8_t mac[6])
{
    struct ifaddrs *all, *a;
    bool found = false;
    if (getifaddrs(&all) != 0)
        return false;
    for (a = all; a && !found; a = a->ifa_next)
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) &&
            !(a->ifa_flags & IFF_LOOPBACK) &&
            ((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr.s_addr == ip) {
            snprintf(name, IF_NAMESIZE, "%s", a->ifa_name);
            found = true;
        }
    freeifaddrs(all);
    return found && iface_mac(name, mac);
}

/* The next hop towards peer by /proc/net/route's most specific match
   (its words are the addresses as they lie in memory); 0 when the route
   leaves by another interface than ifname, or there is none. */
static uint32_t next_hop(const char *ifname, uint32_t peer)
{
    FILE *f = fopen("/proc/net/route", "re");
    if (!f)
        return 0;
    char line[256], dev[IF_NAMESIZE + 1];
    unsigned dst, gw, flags, mask;
    int best_len = -1;
    uint32_t hop = 0;
    bool ours = false;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%16s %x %x %x %*u %*u %*u %x", dev, &dst, &gw, &flags, &mask) ==
                5 &&
            (flags & 1u) && (peer & mask) == dst && __builtin_popcount(mask) > best_len) {
            best_len = __builtin_popcount(mask);
            hop = (flags & RTF_UP_GW) == RTF_UP_GW ? gw : peer;
            ours = strcmp(dev, ifname) == 0;
        }
    fclose(f);
    return ours ? hop : 0;
}

/* hop's entry in /proc/net/arp on ifname, when resolved. */
static bool arp_entry(const char *ifname, uint32_t hop, uint8_t mac[6])
{
    FILE *f = fopen("/proc/net/arp", "re");
    if (!f)
        return false;
    char line[256], ip[32], dev[IF_NAMESIZE + 1];
    unsigned flags, m[6];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        struct in_addr a;
        if (sscanf(line, "%31s %*x %x %x:%x:%x:%x:%x:%x %*s %16s", ip, &flags, &m[0],
                   &m[1], &m[2], &m[3], &m[4], &m[5], dev) != 9 ||
            inet_pton(AF_INET, ip, &a) != 1 || a.s_addr != hop || !(flags & ATF_DONE) ||
            strcmp(dev, ifname) != 0)
            continue;
        for (int i = 0; i < 6; i++)
            mac[i] = (uint8_t)m[i];
        found = true;
    }
    fclose(f);
    return found;
}

/* A datagram from self to peer's discard port: the kernel resolves the
   next hop to send it (the peer answers "port unreachable", if at all). */
static void nudge(uint32_t self, uint32_t peer)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return;
    struct sockaddr_in from = {.sin_family = AF_INET, .sin_addr.s_addr = self};
    struct sockaddr_in to = {
        .sin_family = AF_INET, .sin_port = htons(DISCARD), .sin_addr.s_addr = peer};
    if (bind(s, (struct sockaddr *)&from, sizeof from) == 0)
        sendto(s, "", 0, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof to);
    close(s);
}

bool fl_xdp_next_hop_mac(const char *ifname, uint32_t self, uint32_t peer,
                         unsigned wait_ms, uint8_t mac[6])
{
    uint32_t hop = next_hop(ifname, peer);
    if (!hop || hop == self)
        return false;
    if (arp_entry(ifname, hop, mac))
        return true;
    nudge(self, peer);
    struct timespec step = {0, WAIT_STEP_MS * 1000000l};
    for (unsigned t = 0; t < wait_ms; t += WAIT_STEP_MS) {
        nanosleep(&step, NULL);
        if (arp_entry(ifname, hop, mac))
            return true;
    }
    return false;
}
