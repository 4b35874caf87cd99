/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A transport defined outside src/, to show that one is a folder, a
 * descriptor and a line in the build's list (src/flit.c, compiled again
 * here with FLIT_EXTRA_TRANSPORT=fl_tp_toy). It is a datagram transport
 * under flit's reliability channel, as UDP is, in a few lines: datagram
 * sockets on the loopback interface, between the ranks of one host, each
 * known by its port. (AF_UNIX datagram sockets would be the obvious toy,
 * but a receiver queues only net.unix.max_dgram_qlen of them, 10, whatever
 * its buffer: a window's burst is refused.) It brings its own setting
 * (FLIT_TOY_MTU), reaches only this host's ranks, serves only when
 * FLIT_TRANSPORT names it, and counts in the channel's counters, named
 * "toy.*".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel/channel.h"
#include "channel/config.h"
#include "platform/le.h"
#include "transport/dgram.h"
#include "util/log.h"

#define MAGIC 0x594f5446u /* "FTOY" */

static struct {
    int64_t mtu; /* FLIT_TOY_MTU */
} toy_cfg;

static const struct fl_setting toy_settings[] = {
    {"FLIT_TOY_MTU", FL_SET_INT, &toy_cfg.mtu, 8192, 1024, 60000, "bytes",
     "largest datagram the toy transport sends (tests/toy)"},
    {NULL},
};

struct fl_dgram {
    int sock;
    uint32_t rank, size;
    size_t mtu;
    struct fl_tp_counters *counters;
    uint16_t *ports; /* [size]: each peer's port once connected (network order), else 0 */
    struct fl_dgram_in in[FL_DGRAM_SLOTS][FL_DGRAM_BATCH];
    uint8_t *buf; /* FL_DGRAM_SLOTS x FL_DGRAM_BATCH datagrams of mtu bytes */
};

static struct sockaddr_in loopback(uint16_t port)
{
    return (struct sockaddr_in){.sin_family = AF_INET,
                                .sin_port = port,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

static void toy_close(struct fl_dgram *d)
{
    if (d->sock >= 0)
        close(d->sock);
    free(d->ports);
    free(d->buf);
    free(d);
}

static flit_status toy_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    struct fl_dgram *d = calloc(1, sizeof *d);
    if (!d)
        return FLIT_ERR_NO_MEMORY;
    d->rank = a->rank;
    d->size = a->size;
    d->mtu = (size_t)toy_cfg.mtu;
    d->counters = a->counters;
    d->ports = calloc(a->size, sizeof *d->ports);
    d->buf = malloc(FL_DGRAM_SLOTS * FL_DGRAM_BATCH * d->mtu);
    d->sock = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = loopback(0);
    if (!d->ports || !d->buf || d->sock < 0 ||
        bind(d->sock, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fl_error("toy: cannot open a socket on the loopback interface: %s",
                 strerror(errno));
        toy_close(d);
        return FLIT_ERR_SYSTEM;
    }
    /* Every peer's window on both lanes fits in the receive queue, twice
       (the kernel counts its overhead per datagram). */
    long want = (long)a->peer_window * 2 * 2 * (a->size > 1 ? a->size - 1 : 1);
    int v = want > (64l << 20) ? 64 << 20 : want < (4l << 20) ? 4 << 20 : (int)want;
    if (setsockopt(d->sock, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
        (void)setsockopt(d->sock, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    *out = d;
    return FLIT_OK;
}

/* The address: magic, rank, port. */
static flit_status toy_address(struct fl_dgram *d, void *buf, size_t *len)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getsockname(d->sock, (struct sockaddr *)&sa, &sl) != 0)
        return FLIT_ERR_SYSTEM;
    if (*len < 10)
        return FLIT_ERR_INVALID_ARG;
    fl_put32(buf, MAGIC);
    fl_put32((uint8_t *)buf + 4, d->rank);
    memcpy((uint8_t *)buf + 8, &sa.sin_port, 2);
    *len = 10;
    return FLIT_OK;
}

static bool toy_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len)
{
    const uint8_t *b = blob;
    return len == 10 && rank < d->size && rank != d->rank && fl_get32(b) == MAGIC &&
           fl_get32(b + 4) == rank && (b[8] | b[9]) != 0;
}

static flit_status toy_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                               size_t len)
{
    if (!toy_reachable(d, rank, blob, len))
        return FLIT_ERR_INVALID_ARG;
    memcpy(&d->ports[rank], (const uint8_t *)blob + 8, 2);
    return FLIT_OK;
}

static size_t toy_max_payload(struct fl_dgram *d, uint32_t rank)
{
    (void)rank;
    return d->mtu;
}

/* A peer whose socket is gone loses what we send it, as on a network: the
   channel above retransmits, then declares it down. A full socket: the
   rest would block. */
static int toy_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        if (v[i].dst >= d->size || !d->ports[v[i].dst])
            return -EINVAL;
        struct sockaddr_in sa = loopback(d->ports[v[i].dst]);
        struct msghdr m = {.msg_name = &sa,
                           .msg_namelen = sizeof sa,
                           .msg_iov = (struct iovec *)v[i].iov,
                           .msg_iovlen = (size_t)v[i].iovcnt};
        if (sendmsg(d->sock, &m, MSG_NOSIGNAL) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            if (errno != ECONNREFUSED)
                return -errno;
        }
        atomic_fetch_add_explicit(&d->counters->datagrams_sent, 1, memory_order_relaxed);
    }
    return i;
}

/* The rank whose port sent from sa, or FL_DGRAM_STRANGER. */
static uint32_t sender(struct fl_dgram *d, const struct sockaddr_in *sa, socklen_t sl)
{
    if (sl != sizeof *sa || sa->sin_addr.s_addr != htonl(INADDR_LOOPBACK))
        return FL_DGRAM_STRANGER;
    for (uint32_t r = 0; r < d->size; r++) /* a toy: no table by port */
        if (d->ports[r] == sa->sin_port)
            return r;
    return FL_DGRAM_STRANGER;
}

static int toy_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    int n = 0;
    while (n < FL_DGRAM_BATCH) {
        uint8_t *buf = d->buf + ((size_t)slot * FL_DGRAM_BATCH + (size_t)n) * d->mtu;
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        ssize_t got =
            recvfrom(d->sock, buf, d->mtu, MSG_TRUNC, (struct sockaddr *)&sa, &sl);
        if (got < 0)
            break; /* EAGAIN: nothing more waits */
        uint32_t src = sender(d, &sa, sl);
        if ((size_t)got > d->mtu || src == FL_DGRAM_STRANGER) {
            atomic_fetch_add_explicit(&d->counters->refused_packets, 1,
                                      memory_order_relaxed);
            continue;
        }
        atomic_fetch_add_explicit(&d->counters->datagrams_received, 1,
                                  memory_order_relaxed);
        d->in[slot][n++] =
            (struct fl_dgram_in){.buf = buf, .len = (size_t)got, .src = src};
    }
    *in = d->in[slot];
    return n;
}

static int toy_fd(struct fl_dgram *d)
{
    return d->sock;
}

static void toy_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    snprintf(buf, len, "127.0.0.1:%u", rank < d->size ? ntohs(d->ports[rank]) : 0u);
}

static const struct fl_dgram_ops toy_dgram = {
    .name = "toy",
    .open = toy_open,
    .address = toy_address,
    .reachable = toy_reachable,
    .connect = toy_connect,
    .max_payload = toy_max_payload,
    .send = toy_send,
    .recv = toy_recv,
    .fd = toy_fd,
    .address_of = toy_address_of,
    .describe = toy_address_of,
    .close = toy_close,
};

static flit_status toy_transport_open(const struct fl_tp_open_args *a,
                                      struct fl_tp_ep **out)
{
    return fl_chan_open(&toy_dgram, a, out);
}

static const struct fl_setting *const toy_tables[] = {toy_settings, fl_chan_settings,
                                                      NULL};

const struct fl_transport fl_tp_toy = {
    .name = "toy",
    .reach = FL_REACH_HOST,
    .settings = toy_tables,
    .open = toy_transport_open,
    FL_CHANNEL_OPS,
    FL_CHANNEL_COUNTERS,
};
