/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP datagrams over a kernel path (xdp.h): the peers, sending and
 * receiving frames, and the choice between AF_XDP and the kernel per
 * endpoint and per peer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "transport/xdp/frame.h"
#include "transport/xdp/neigh.h"
#include "transport/xdp/xdp.h"
#include "transport/xdp/xsk.h"
#include "util/log.h"

#define BLOB_LEN     8u   /* the kernel path's: IPv4 and port, network order */
#define RESOLVE_MS   1000 /* how long a peer's next hop may take to answer ARP */
#define RX_ROOM      (FL_XSK_FRAME - 256u) /* a received frame after its headroom */
#define KERNEL_EVERY 8u /* idle receives between looks at the UDP socket */

enum path { PATH_NEW = 0, PATH_XDP, PATH_KERNEL };

struct xdp_peer {
    struct fl_xdp_end end; /* mac: the next hop's, once resolved */
    _Atomic int path;      /* enum path; read outside the lock by dumps */
};

struct rx_slot {
    uint8_t *mem; /* FL_DGRAM_BATCH payloads, RX_ROOM apart */
    struct fl_dgram_in in[FL_DGRAM_BATCH];
};

struct fl_dgram {
    const struct fl_dgram_ops *kops; /* the kernel path, */
    struct fl_dgram *kd;             /* open on the same address and port */
    struct fl_xsk *xsk;              /* NULL: AF_XDP unavailable (why) */
    char why[192];
    struct fl_xdp_end self;
    char ifname[IF_NAMESIZE];
    uint32_t rank, size;
    struct xdp_peer *peers;
    uint64_t *keys; /* (address, port) -> rank, open addressing; 0 empty */
    uint32_t *ranks;
    size_t cap;
    pthread_mutex_t resolve_lock; /* peer info asks outside the endpoint's lock */
    int epfd;                     /* the socket and the kernel path's */
    uint16_t ip_id;
    unsigned idle;
    bool said_checksum;
    struct fl_tp_counters *counters;
    struct rx_slot rx[FL_DGRAM_SLOTS];
};

/* ---- who sent it ---- */

static uint64_t key_of(uint32_t ip, uint16_t port)
{
    return (uint64_t)1 << 63 | (uint64_t)ip << 16 | port;
}

static size_t home(const struct fl_dgram *d, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 24) & (d->cap - 1);
}

static void remember(struct fl_dgram *d, uint32_t ip, uint16_t port, uint32_t rank)
{
    uint64_t key = key_of(ip, port);
    size_t i = home(d, key);
    while (d->keys[i] && d->keys[i] != key)
        i = (i + 1) & (d->cap - 1);
    d->keys[i] = key;
    d->ranks[i] = rank;
}

static uint32_t sender(const struct fl_dgram *d, uint32_t ip, uint16_t port)
{
    uint64_t key = key_of(ip, port);
    for (size_t i = home(d, key); d->keys[i]; i = (i + 1) & (d->cap - 1))
        if (d->keys[i] == key)
            return d->ranks[i];
    return FL_DGRAM_STRANGER;
}

/* ---- opening ---- */

/* AF_XDP on the interface holding our address; d->why when not. */
static void try_xsk(struct fl_dgram *d)
{
    char ip[16];
    const uint8_t *b = (const uint8_t *)&d->self.ip;
    snprintf(ip, sizeof ip, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
    if (!fl_xdp_iface_of(d->self.ip, d->ifname, d->self.mac)) {
        snprintf(d->why, sizeof d->why, "no Ethernet interface holds %s (loopback?)", ip);
        return;
    }
    if (fl_xsk_open(d->ifname, d->self.port, &d->xsk, d->why, sizeof d->why) != FLIT_OK)
        return;
    struct epoll_event ev = {.events = EPOLLIN};
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d->epfd < 0 || epoll_ctl(d->epfd, EPOLL_CTL_ADD, fl_xsk_fd(d->xsk), &ev) != 0 ||
        epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->kops->fd(d->kd), &ev) != 0) {
        snprintf(d->why, sizeof d->why, "epoll: %s", strerror(errno));
        fl_xsk_close(d->xsk);
        d->xsk = NULL;
    }
}

static bool alloc_peers(struct fl_dgram *d, uint32_t size)
{
    d->cap = 16;
    while (d->cap < 2 * (size_t)size)
        d->cap *= 2;
    d->keys = calloc(d->cap, sizeof *d->keys);
    d->ranks = calloc(d->cap, sizeof *d->ranks);
    d->peers = calloc(size, sizeof *d->peers);
    return d->keys && d->ranks && d->peers;
}

flit_status fl_xdp_open(const struct fl_dgram_ops *kernel,
                        const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    struct fl_dgram *d = calloc(1, sizeof *d);
    if (!d)
        return FLIT_ERR_NO_MEMORY;
    d->kops = kernel;
    d->epfd = -1;
    pthread_mutex_init(&d->resolve_lock, NULL);
    flit_status st = kernel->open(a, &d->kd);
    if (st != FLIT_OK) {
        d->kd = NULL;
        fl_xdp_close(d);
        return st;
    }
    d->rank = a->rank;
    d->size = a->size;
    d->counters = a->counters;
    uint8_t blob[BLOB_LEN];
    size_t len = sizeof blob;
    if (!alloc_peers(d, a->size) || kernel->address(d->kd, blob, &len) != FLIT_OK) {
        fl_xdp_close(d);
        return FLIT_ERR_NO_MEMORY;
    }
    memcpy(&d->self.ip, blob, 4);
    memcpy(&d->self.port, blob + 4, 2);
    try_xsk(d);
    if (d->xsk)
        fl_info("xdp: AF_XDP on %s queue 0, %s", d->ifname, fl_xsk_mode(d->xsk));
    else
        fl_warn("xdp: %s; UDP serves this endpoint", d->why);
    *out = d;
    return FLIT_OK;
}

void fl_xdp_close(struct fl_dgram *d)
{
    if (d->xsk)
        fl_xsk_close(d->xsk);
    if (d->epfd >= 0)
        close(d->epfd);
    if (d->kd)
        d->kops->close(d->kd);
    pthread_mutex_destroy(&d->resolve_lock);
    for (int i = 0; i < FL_DGRAM_SLOTS; i++)
        free(d->rx[i].mem);
    free(d->keys);
    free(d->ranks);
    free(d->peers);
    free(d);
}

/* ---- peers ---- */

flit_status fl_xdp_address(struct fl_dgram *d, void *buf, size_t *len)
{
    return d->kops->address(d->kd, buf, len);
}

bool fl_xdp_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len)
{
    return d->kops->reachable(d->kd, rank, blob, len);
}

flit_status fl_xdp_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                           size_t len)
{
    flit_status st = d->kops->connect(d->kd, rank, blob, len);
    if (st != FLIT_OK || len < 6)
        return st;
    struct xdp_peer *p = &d->peers[rank];
    memcpy(&p->end.ip, blob, 4);
    memcpy(&p->end.port, (const uint8_t *)blob + 4, 2);
    remember(d, p->end.ip, p->end.port, rank);
    return FLIT_OK;
}

/* The peer's path, settled on first need: AF_XDP when its next hop is on
   our interface and answers, else the kernel's. */
static void resolve(struct fl_dgram *d, struct xdp_peer *p)
{
    pthread_mutex_lock(&d->resolve_lock);
    if (atomic_load_explicit(&p->path, memory_order_relaxed) == PATH_NEW) {
        bool near =
            fl_xdp_next_hop_mac(d->ifname, d->self.ip, p->end.ip, RESOLVE_MS, p->end.mac);
        /* release: the address is written before the path says to use it */
        atomic_store_explicit(&p->path, near ? PATH_XDP : PATH_KERNEL,
                              memory_order_release);
        char addr[48];
        d->kops->address_of(d->kd, (uint32_t)(p - d->peers), addr, sizeof addr);
        if (near)
            fl_info("xdp: rank %u (%s) through AF_XDP on %s", (unsigned)(p - d->peers),
                    addr, d->ifname);
        else
            fl_info("xdp: rank %u (%s) through UDP: its next hop is not on %s or did not "
                    "answer",
                    (unsigned)(p - d->peers), addr, d->ifname);
    }
    pthread_mutex_unlock(&d->resolve_lock);
}

size_t fl_xdp_max_payload(struct fl_dgram *d, uint32_t rank)
{
    size_t payload = d->kops->max_payload(d->kd, rank);
    if (!d->xsk)
        return payload;
    struct xdp_peer *p = &d->peers[rank];
    if (atomic_load_explicit(&p->path, memory_order_acquire) == PATH_NEW)
        resolve(d, p);
    return payload < RX_ROOM - FL_XDP_HDR ? payload : RX_ROOM - FL_XDP_HDR;
}

static bool by_xsk(struct fl_dgram *d, uint32_t rank)
{
    return d->xsk &&
           atomic_load_explicit(&d->peers[rank].path, memory_order_acquire) == PATH_XDP;
}

/* ---- sending ---- */

/* v[0 .. n) by the kernel path, as far as it takes them. */
static int send_kernel_run(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int run = 1;
    while (run < n && !by_xsk(d, v[run].dst))
        run++;
    return d->kops->send(d->kd, v, run);
}

/* v[0 .. n) into AF_XDP frames, as long as they are ours and there is room. */
static int send_xsk_run(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int i = 0;
    for (; i < n && by_xsk(d, v[i].dst); i++) {
        uint8_t *frame = fl_xsk_tx_frame(d->xsk);
        if (!frame)
            break;
        size_t len =
            fl_xdp_frame_build(frame, FL_XSK_FRAME, &d->self, &d->peers[v[i].dst].end,
                               d->ip_id++, v[i].iov, v[i].iovcnt);
        if (!len) { /* larger than max_payload said: as if lost */
            static _Atomic int said;
            if (!said++)
                fl_error("xdp: a datagram to rank %u does not fit a frame", v[i].dst);
            continue;
        }
        fl_xsk_tx_queue(d->xsk, len);
    }
    return i;
}

int fl_xdp_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int done = 0;
    while (done < n) {
        bool ours = by_xsk(d, v[done].dst);
        int k = ours ? send_xsk_run(d, v + done, n - done)
                     : send_kernel_run(d, v + done, n - done);
        if (k <= 0) {
            if (!done && k < 0)
                return k;
            break;
        }
        done += k;
    }
    if (d->xsk)
        fl_xsk_tx_kick(d->xsk);
    return done ? done : -EAGAIN;
}

/* ---- receiving ---- */

static bool slot_ready(struct rx_slot *r)
{
    if (!r->mem)
        r->mem = aligned_alloc(64, (size_t)FL_DGRAM_BATCH * RX_ROOM);
    return r->mem != NULL;
}

/* One frame from the socket into r's next place; false when refused. */
static bool take_frame(struct fl_dgram *d, const uint8_t *frame, size_t len,
                       struct fl_dgram_in *in)
{
    struct fl_xdp_rx rx;
    enum fl_xdp_verdict v = fl_xdp_frame_parse(frame, len, d->self.ip, d->self.port, &rx);
    if (v != FL_XDP_OK || rx.len > RX_ROOM) {
        FL_COUNT(d->counters->refused_packets, 1);
        if (v == FL_XDP_CHECKSUM && !d->said_checksum) {
            d->said_checksum = true;
            fl_warn("xdp: refused a frame with a wrong checksum (and will refuse more: "
                    "refused packets counts them); a peer on plain UDP across veth sends "
                    "checksums unfinished unless its host turns offload off (ethtool -K "
                    "IF tx off)");
        }
        return false;
    }
    memcpy(in->buf, frame + rx.off, rx.len);
    in->len = rx.len;
    in->src = sender(d, rx.src_ip, rx.src_port);
    return true;
}

static int recv_xsk(struct fl_dgram *d, struct rx_slot *r)
{
    uint32_t idx = 0;
    unsigned got = fl_xsk_rx_peek(d->xsk, FL_DGRAM_BATCH, &idx);
    int n = 0;
    for (unsigned i = 0; i < got; i++) {
        size_t len;
        const uint8_t *frame = fl_xsk_rx_frame(d->xsk, idx + i, &len);
        r->in[n].buf = r->mem + (size_t)n * RX_ROOM;
        n += take_frame(d, frame, len, &r->in[n]);
    }
    if (got)
        fl_xsk_rx_release(d->xsk, idx, got);
    return n;
}

/* The socket's frames first; the kernel path's (a peer's fragments, a
   queue without our socket) when the socket had none a few times running:
   a sleeper woken by the kernel path's descriptor finds it readable again
   until then, so nothing waits there for long. */
int fl_xdp_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    if (!d->xsk || slot >= FL_DGRAM_SLOTS)
        return slot < FL_DGRAM_SLOTS ? d->kops->recv(d->kd, slot, in) : 0;
    struct rx_slot *r = &d->rx[slot];
    fl_xsk_tx_kick(d->xsk); /* what the last send left in the ring */
    int n = slot_ready(r) ? recv_xsk(d, r) : 0;
    if (n) {
        *in = r->in;
        return n;
    }
    if (++d->idle % KERNEL_EVERY)
        return 0;
    return d->kops->recv(d->kd, slot, in);
}

int fl_xdp_fd(struct fl_dgram *d)
{
    return d->xsk ? d->epfd : d->kops->fd(d->kd);
}

/* ---- describing ---- */

/* Which path serves rank: "xdp", the kernel path's name ("udp"), or ""
   before the first contact. */
static const char *path_name(struct fl_dgram *d, uint32_t rank)
{
    if (!d->xsk)
        return d->kops->name;
    if (rank == d->rank)
        return "";
    int path = atomic_load_explicit(&d->peers[rank].path, memory_order_relaxed);
    return path == PATH_XDP ? "xdp" : path == PATH_KERNEL ? d->kops->name : "";
}

/* "host:port (xdp)": flit_ep_peer_info's address says which path serves. */
void fl_xdp_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    char addr[48];
    const char *path = path_name(d, rank);
    d->kops->address_of(d->kd, rank, addr, sizeof addr);
    snprintf(buf, len, *path ? "%s (%s)" : "%s", addr, path);
}

/* Short: dumps give it 64 bytes. */
void fl_xdp_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    char addr[48];
    d->kops->address_of(d->kd, rank, addr, sizeof addr);
    if (!d->xsk)
        snprintf(buf, len, "%s %s (no xdp)", d->kops->name, addr);
    else if (rank != d->rank && by_xsk(d, rank))
        snprintf(buf, len, "xdp %s %s %s", d->ifname, fl_xsk_mode(d->xsk), addr);
    else
        snprintf(buf, len, "%s %s via %s", *path_name(d, rank) ? d->kops->name : "xdp",
                 addr, d->ifname);
}
