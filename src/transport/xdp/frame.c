/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet / IPv4 / UDP frames: writing them, and the one decoder of what
 * the wire brings (frame.h).
 */
#include <string.h>

#include "transport/xdp/frame.h"

#define ETH_LEN      14u
#define IP_LEN       20u
#define UDP_LEN      8u
#define ETHERTYPE_IP 0x0800u
#define PROTO_UDP    17u
#define IP_TTL       64u

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* The Internet checksum's running sum (RFC 1071) of n bytes, big-endian
   words, an odd last byte padded with zero. */
static uint64_t sum_bytes(uint64_t sum, const uint8_t *p, size_t n)
{
    for (; n >= 2; p += 2, n -= 2)
        sum += get16(p);
    if (n)
        sum += (uint64_t)p[0] << 8;
    return sum;
}

static uint16_t fold(uint64_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

/* The UDP pseudo-header's part of the sum: addresses as they lie in the
   IP header (ip points at it), protocol, UDP length. */
static uint64_t pseudo_sum(const uint8_t *ip, size_t udp_len)
{
    return sum_bytes(0, ip + 12, 8) + PROTO_UDP + udp_len;
}

static size_t gather(uint8_t *out, size_t cap, const struct iovec *iov, int iovcnt)
{
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > cap - n)
            return SIZE_MAX;
        if (iov[i].iov_len)
            memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
        n += iov[i].iov_len;
    }
    return n;
}

static void write_ip(uint8_t *ip, const struct fl_xdp_end *src,
                     const struct fl_xdp_end *dst, uint16_t id, size_t total)
{
    ip[0] = 0x45; /* version 4, 5 words */
    ip[1] = 0;
    put16(ip + 2, (uint16_t)total);
    put16(ip + 4, id);
    put16(ip + 6, 0x4000); /* don't fragment */
    ip[8] = IP_TTL;
    ip[9] = PROTO_UDP;
    put16(ip + 10, 0);
    memcpy(ip + 12, &src->ip, 4);
    memcpy(ip + 16, &dst->ip, 4);
    put16(ip + 10, (uint16_t)~fold(sum_bytes(0, ip, IP_LEN)));
}

size_t fl_xdp_frame_build(uint8_t *buf, size_t cap, const struct fl_xdp_end *src,
                          const struct fl_xdp_end *dst, uint16_t ip_id,
                          const struct iovec *iov, int iovcnt)
{
    if (cap < FL_XDP_HDR)
        return 0;
    size_t n = gather(buf + FL_XDP_HDR, cap - FL_XDP_HDR, iov, iovcnt);
    if (n == SIZE_MAX || n > 0xffff - IP_LEN - UDP_LEN)
        return 0;
    memcpy(buf, dst->mac, 6);
    memcpy(buf + 6, src->mac, 6);
    put16(buf + 12, ETHERTYPE_IP);
    uint8_t *ip = buf + ETH_LEN, *udp = ip + IP_LEN;
    write_ip(ip, src, dst, ip_id, IP_LEN + UDP_LEN + n);
    memcpy(udp, &src->port, 2);
    memcpy(udp + 2, &dst->port, 2);
    put16(udp + 4, (uint16_t)(UDP_LEN + n));
    put16(udp + 6, 0);
    uint16_t c =
        (uint16_t)~fold(sum_bytes(pseudo_sum(ip, UDP_LEN + n), udp, UDP_LEN + n));
    put16(udp + 6, c ? c : 0xffff); /* 0 would say "no checksum" */
    return FL_XDP_HDR + n;
}

/* The IPv4 header at ip (the frame has at least IP_LEN bytes there, avail
   in all): ours, whole, not a fragment, checksum right. */
static enum fl_xdp_verdict check_ip(const uint8_t *ip, size_t avail, uint32_t to)
{
    if (ip[0] >> 4 != 4 || ip[9] != PROTO_UDP)
        return FL_XDP_NOT_OURS;
    if ((ip[0] & 0xf) != 5) /* options: the steering program passes these on */
        return FL_XDP_MALFORMED;
    size_t total = get16(ip + 2);
    if (total > avail)
        return FL_XDP_SHORT;
    if (total < IP_LEN + UDP_LEN || (get16(ip + 6) & 0x3fff))
        return FL_XDP_MALFORMED;
    if (memcmp(ip + 16, &to, 4) != 0)
        return FL_XDP_NOT_OURS;
    if (fold(sum_bytes(0, ip, IP_LEN)) != 0xffff)
        return FL_XDP_CHECKSUM;
    return FL_XDP_OK;
}

enum fl_xdp_verdict fl_xdp_frame_parse(const uint8_t *buf, size_t len, uint32_t ip,
                                       uint16_t port, struct fl_xdp_rx *rx)
{
    if (len < FL_XDP_HDR)
        return FL_XDP_SHORT;
    if (get16(buf + 12) != ETHERTYPE_IP)
        return FL_XDP_NOT_OURS;
    const uint8_t *iph = buf + ETH_LEN, *udp = iph + IP_LEN;
    enum fl_xdp_verdict v = check_ip(iph, len - ETH_LEN, ip);
    if (v != FL_XDP_OK)
        return v;
    if (memcmp(udp + 2, &port, 2) != 0)
        return FL_XDP_NOT_OURS;
    size_t ulen = get16(udp + 4);
    if (ulen != get16(iph + 2) - IP_LEN) /* Ethernet may pad; IP may not lie */
        return FL_XDP_MALFORMED;
    if (get16(udp + 6) != 0 &&
        fold(sum_bytes(pseudo_sum(iph, ulen), udp, ulen)) != 0xffff)
        return FL_XDP_CHECKSUM;
    memcpy(&rx->src_ip, iph + 12, 4);
    memcpy(&rx->src_port, udp, 2);
    rx->off = FL_XDP_HDR;
    rx->len = ulen - UDP_LEN;
    return FL_XDP_OK;
}
