/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The XDP program of the xdp transport: steers the endpoint's frames into
 * its AF_XDP socket and passes everything else to the kernel.
 *
 * Ours are unfragmented UDP/IPv4 frames without IP options whose
 * destination port is the endpoint's (flit_port[0], network order). The
 * rest (ARP, other ports, fragments, frames with options, anything short)
 * goes on to the kernel's stack, which is also where a frame of ours lands
 * when no socket is bound to the queue it came in on: the endpoint's UDP
 * socket on the same port receives it there. Nothing is judged here beyond
 * what steering needs: the receive path (frame.c) validates every field.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} flit_xsks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} flit_port SEC(".maps");

SEC("xdp")
int flit_steer(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = (void *)(eth + 1);
    struct udphdr *udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
        return XDP_PASS;
    if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
        (ip->frag_off & bpf_htons(0x3fff)))
        return XDP_PASS; /* options or a fragment: the kernel's to handle */
    __u32 zero = 0;
    __u32 *port = bpf_map_lookup_elem(&flit_port, &zero);
    if (!port || udp->dest != (__u16)*port)
        return XDP_PASS;
    /* No socket on this queue: XDP_PASS, to the endpoint's UDP socket. */
    return bpf_redirect_map(&flit_xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
