/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP datagrams over a kernel path (xdp.h): the peers, sending and
 * receiving frames, and the choice between AF_XDP and the kernel per
 * rail and per peer.
 *
 * Rails (FLIT_UDP_RAILS, docs/rails.md): the kernel path opens a socket
 * on each; this one opens an AF_XDP socket beside each, on the interface
 * holding that rail's address and for that rail's port. Path i to a peer
 * is our rail i to its rail i, as on the kernel path, and is served by
 * AF_XDP or by the kernel on its own: a rail whose interface refused
 * AF_XDP, or whose next hop did not answer, goes through the kernel's
 * socket of the same rail.
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
/* Idle receives between looks at the UDP socket: from KERNEL_MIN, doubled
   each time it had nothing, up to KERNEL_MAX (a look is a system call,
   dear in a VM: at 1 in 8 they were most of a polling rank's time). */
#define KERNEL_MIN 2u
#define KERNEL_MAX 64u

enum route { ROUTE_NEW = 0, ROUTE_XDP, ROUTE_KERNEL };

struct xdp_peer {
    struct fl_xdp_end end[FL_DGRAM_PATHS]; /* per rail; mac: the next hop's, resolved */
    _Atomic int route[FL_DGRAM_PATHS]; /* enum route; read outside the lock by dumps */
    _Atomic bool resolved;             /* every rail's route settled */
    unsigned nrails;
};

struct rail {
    struct fl_xsk *xsk; /* NULL: AF_XDP unavailable on it (why) */
    unsigned next_q;    /* the queue whose socket is read first next */
    struct fl_xdp_end self;
    char ifname[IF_NAMESIZE];
};

struct rx_slot {
    uint8_t *mem; /* FL_DGRAM_BATCH payloads, RX_ROOM apart */
    struct fl_dgram_in in[FL_DGRAM_BATCH];
};

struct fl_dgram {
    const struct fl_dgram_ops *kops; /* the kernel path, */
    struct fl_dgram *kd;             /* open on the same addresses and ports */
    struct rail rail[FL_DGRAM_PATHS];
    unsigned nrails;
    unsigned nxsk;    /* rails with an AF_XDP socket */
    unsigned rx_next; /* the rail whose socket is read first next */
    char why[192];    /* why the last rail without AF_XDP has none */
    uint32_t rank, size;
    struct xdp_peer *peers;
    uint64_t *keys; /* (address, port) -> rank, open addressing; 0 empty */
    uint32_t *ranks;
    size_t cap;
    pthread_mutex_t resolve_lock; /* peer info asks outside the endpoint's lock */
    int epfd;                     /* the sockets and the kernel path's */
    uint16_t ip_id;
    unsigned idle, kernel_every; /* idle receives since the last look; between looks */
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

static char *ip_text(uint32_t ip, char buf[16])
{
    const uint8_t *b = (const uint8_t *)&ip;
    snprintf(buf, 16, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
    return buf;
}

/* AF_XDP on the interface holding rail r's address; d->why when not. */
static void try_xsk(struct fl_dgram *d, struct rail *r)
{
    char ip[16];
    if (!fl_xdp_iface_of(r->self.ip, r->ifname, r->self.mac)) {
        snprintf(d->why, sizeof d->why, "no Ethernet interface holds %s (loopback?)",
                 ip_text(r->self.ip, ip));
        return;
    }
    if (fl_xsk_open(r->ifname, r->self.port, &r->xsk, d->why, sizeof d->why) != FLIT_OK)
        return;
    unsigned nq = fl_xsk_queues(r->xsk);
    for (unsigned q = 0; q < nq; q++) {
        struct epoll_event ev = {.events = EPOLLIN};
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fl_xsk_fd(r->xsk, q), &ev) != 0) {
            snprintf(d->why, sizeof d->why, "epoll: %s", strerror(errno));
            fl_xsk_close(r->xsk); /* its descriptors leave the epoll set as they close */
            r->xsk = NULL;
            return;
        }
    }
    d->nxsk++;
    if (nq > 1)
        fl_info("xdp: AF_XDP on %s queues 0-%u, %s", r->ifname, nq - 1,
                fl_xsk_mode(r->xsk));
    else
        fl_info("xdp: AF_XDP on %s queue 0, %s", r->ifname, fl_xsk_mode(r->xsk));
}

/* Each rail's socket where it can be had: the kernel path's blob gives
   the rails, 8 bytes each (address and port, network order). */
static flit_status open_rails(struct fl_dgram *d)
{
    uint8_t blob[BLOB_LEN * FL_DGRAM_PATHS];
    size_t len = sizeof blob;
    if (d->kops->address(d->kd, blob, &len) != FLIT_OK || len < BLOB_LEN)
        return FLIT_ERR_SYSTEM;
    d->nrails = (unsigned)(len / BLOB_LEN);
    struct epoll_event ev = {.events = EPOLLIN};
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d->epfd < 0 || epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->kops->fd(d->kd), &ev) != 0)
        return FLIT_ERR_SYSTEM;
    for (unsigned i = 0; i < d->nrails; i++) {
        struct rail *r = &d->rail[i];
        memcpy(&r->self.ip, blob + i * BLOB_LEN, 4);
        memcpy(&r->self.port, blob + i * BLOB_LEN + 4, 2);
        try_xsk(d, r);
        if (!r->xsk)
            fl_warn("xdp: %s; UDP serves %s", d->why,
                    d->nrails > 1 ? "that rail" : "this endpoint");
    }
    return FLIT_OK;
}

static bool alloc_peers(struct fl_dgram *d, uint32_t size)
{
    d->cap = 16;
    while (d->cap < 2 * (size_t)size * FL_DGRAM_PATHS)
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
    d->kernel_every = KERNEL_MIN;
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
    st = alloc_peers(d, a->size) ? open_rails(d) : FLIT_ERR_NO_MEMORY;
    if (st != FLIT_OK) {
        fl_xdp_close(d);
        return st;
    }
    *out = d;
    return FLIT_OK;
}

void fl_xdp_close(struct fl_dgram *d)
{
    for (unsigned i = 0; i < FL_DGRAM_PATHS; i++)
        if (d->rail[i].xsk)
            fl_xsk_close(d->rail[i].xsk);
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

/* The kernel path checked the blob: a whole number of rails. */
flit_status fl_xdp_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                           size_t len)
{
    flit_status st = d->kops->connect(d->kd, rank, blob, len);
    if (st != FLIT_OK)
        return st;
    struct xdp_peer *p = &d->peers[rank];
    const uint8_t *b = blob;
    p->nrails = 0;
    for (; p->nrails < FL_DGRAM_PATHS && len >= BLOB_LEN;
         len -= BLOB_LEN, b += BLOB_LEN) {
        struct fl_xdp_end *e = &p->end[p->nrails++];
        memcpy(&e->ip, b, 4);
        memcpy(&e->port, b + 4, 2);
        remember(d, e->ip, e->port, rank);
    }
    return FLIT_OK;
}

static unsigned paths_to(const struct fl_dgram *d, const struct xdp_peer *p)
{
    unsigned n = p->nrails < d->nrails ? p->nrails : d->nrails;
    return n ? n : 1;
}

/* The peer's routes, settled on first need: by AF_XDP on each rail whose
   socket we have and whose next hop towards the peer's rail is on that
   interface and answers; by the kernel's socket of the rail otherwise. */
static void resolve(struct fl_dgram *d, uint32_t rank)
{
    struct xdp_peer *p = &d->peers[rank];
    pthread_mutex_lock(&d->resolve_lock);
    for (unsigned i = 0; i < paths_to(d, p) && !atomic_load(&p->resolved); i++) {
        struct rail *r = &d->rail[i];
        bool near = r->xsk && fl_xdp_next_hop_mac(r->ifname, r->self.ip, p->end[i].ip,
                                                  RESOLVE_MS, p->end[i].mac);
        /* release: the address is written before the route says to use it */
        atomic_store_explicit(&p->route[i], near ? ROUTE_XDP : ROUTE_KERNEL,
                              memory_order_release);
        char ip[16];
        if (near)
            fl_info("xdp: rank %u (%s) through AF_XDP on %s", rank,
                    ip_text(p->end[i].ip, ip), r->ifname);
        else if (r->xsk)
            fl_info("xdp: rank %u (%s) through UDP: its next hop is not on %s or did not "
                    "answer",
                    rank, ip_text(p->end[i].ip, ip), r->ifname);
    }
    atomic_store(&p->resolved, true);
    pthread_mutex_unlock(&d->resolve_lock);
}

size_t fl_xdp_max_payload(struct fl_dgram *d, uint32_t rank)
{
    size_t payload = d->kops->max_payload(d->kd, rank);
    if (!d->nxsk)
        return payload;
    if (!atomic_load_explicit(&d->peers[rank].resolved, memory_order_acquire))
        resolve(d, rank);
    return payload < RX_ROOM - FL_XDP_HDR ? payload : RX_ROOM - FL_XDP_HDR;
}

unsigned fl_xdp_paths(struct fl_dgram *d, uint32_t rank)
{
    return d->kops->paths ? d->kops->paths(d->kd, rank) : 1;
}

/* Path to rank by AF_XDP (a path the kernel path does not have is its
   path 0, as there). */
static bool by_xsk(const struct fl_dgram *d, uint32_t rank, unsigned path)
{
    path = path < d->nrails ? path : 0;
    return d->rail[path].xsk && atomic_load_explicit(&d->peers[rank].route[path],
                                                     memory_order_acquire) == ROUTE_XDP;
}

/* ---- sending ---- */

/* v[0 .. n) by the kernel path, as far as it takes them. */
static int send_kernel_run(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int run = 1;
    while (run < n && !by_xsk(d, v[run].dst, v[run].path))
        run++;
    return d->kops->send(d->kd, v, run);
}

/* v[0 .. n) into AF_XDP frames of one rail, as long as they go by it and
   there is room. */
static int send_xsk_run(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    unsigned path = v[0].path < d->nrails ? v[0].path : 0;
    struct rail *r = &d->rail[path];
    int i = 0;
    for (; i < n && v[i].path == v[0].path && by_xsk(d, v[i].dst, path); i++) {
        uint8_t *frame = fl_xsk_tx_frame(r->xsk);
        if (!frame)
            break;
        size_t len = fl_xdp_frame_build(frame, FL_XSK_FRAME, &r->self,
                                        &d->peers[v[i].dst].end[path], d->ip_id++,
                                        v[i].iov, v[i].iovcnt);
        if (!len) { /* larger than max_payload said: as if lost */
            static _Atomic int said;
            if (!said++)
                fl_error("xdp: a datagram to rank %u does not fit a frame", v[i].dst);
            continue;
        }
        fl_xsk_tx_queue(r->xsk, len);
    }
    return i;
}

static void kick_all(struct fl_dgram *d)
{
    for (unsigned i = 0; i < d->nrails; i++)
        if (d->rail[i].xsk)
            fl_xsk_tx_kick(d->rail[i].xsk);
}

int fl_xdp_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int done = 0;
    while (done < n) {
        bool ours = by_xsk(d, v[done].dst, v[done].path);
        int k = ours ? send_xsk_run(d, v + done, n - done)
                     : send_kernel_run(d, v + done, n - done);
        if (k <= 0) {
            if (!done && k < 0)
                return k;
            break;
        }
        done += k;
    }
    kick_all(d);
    return done ? done : -EAGAIN;
}

/* ---- receiving ---- */

static bool slot_ready(struct rx_slot *r)
{
    if (!r->mem)
        r->mem = aligned_alloc(64, (size_t)FL_DGRAM_BATCH * RX_ROOM);
    return r->mem != NULL;
}

/* One frame from rail r's socket into in; false when refused. */
static bool take_frame(struct fl_dgram *d, const struct rail *r, const uint8_t *frame,
                       size_t len, struct fl_dgram_in *in)
{
    struct fl_xdp_rx rx;
    enum fl_xdp_verdict v = fl_xdp_frame_parse(frame, len, r->self.ip, r->self.port, &rx);
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
    in->path = (unsigned)(r - d->rail);
    return true;
}

/* One queue's frames of rail r into s; how many passed. */
static int recv_queue(struct fl_dgram *d, struct rail *r, unsigned q, struct rx_slot *s)
{
    uint32_t idx = 0;
    unsigned got = fl_xsk_rx_peek(r->xsk, q, FL_DGRAM_BATCH, &idx);
    int n = 0;
    for (unsigned i = 0; i < got; i++) {
        size_t len;
        const uint8_t *frame = fl_xsk_rx_frame(r->xsk, q, idx + i, &len);
        s->in[n].buf = s->mem + (size_t)n * RX_ROOM;
        n += take_frame(d, r, frame, len, &s->in[n]);
    }
    if (got)
        fl_xsk_rx_release(r->xsk, q, idx, got);
    return n;
}

/* Rail r's queues, each its turn first. */
static int recv_xsk(struct fl_dgram *d, struct rail *r, struct rx_slot *s)
{
    unsigned nq = fl_xsk_queues(r->xsk);
    for (unsigned tries = 0; tries < nq; tries++) {
        unsigned q = (r->next_q + tries) % nq;
        int n = recv_queue(d, r, q, s);
        if (n) {
            r->next_q = (q + 1) % nq;
            return n;
        }
    }
    return 0;
}

/* The kernel path's datagrams (a peer's fragments, a rail or NIC queue
   without our socket), looked for less often while it has none. */
static int recv_kernel(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    if (++d->idle < d->kernel_every)
        return 0;
    d->idle = 0;
    int n = d->kops->recv(d->kd, slot, in);
    d->kernel_every = n > 0                          ? KERNEL_MIN
                      : d->kernel_every < KERNEL_MAX ? 2 * d->kernel_every
                                                     : KERNEL_MAX;
    return n;
}

/* The rails' sockets first, each its turn first; the kernel path's when
   they had none (recv_kernel): a sleeper woken by the kernel path's
   descriptor finds it readable again until it is read, at most
   KERNEL_MAX idle receives later, so nothing waits there for long. */
int fl_xdp_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    if (!d->nxsk || slot >= FL_DGRAM_SLOTS)
        return slot < FL_DGRAM_SLOTS ? d->kops->recv(d->kd, slot, in) : 0;
    struct rx_slot *s = &d->rx[slot];
    kick_all(d); /* what the last send left in the rings */
    if (!slot_ready(s))
        return 0;
    for (unsigned tries = 0; tries < d->nrails; tries++) {
        struct rail *r = &d->rail[(d->rx_next + tries) % d->nrails];
        int n = r->xsk ? recv_xsk(d, r, s) : 0;
        if (n) {
            d->rx_next = (unsigned)(r - d->rail + 1) % d->nrails;
            *in = s->in;
            return n;
        }
    }
    return recv_kernel(d, slot, in);
}

int fl_xdp_fd(struct fl_dgram *d)
{
    return d->nxsk ? d->epfd : d->kops->fd(d->kd);
}

/* ---- describing ---- */

/* Which route serves rank's path: "xdp", the kernel path's name ("udp"),
   or "" before the first contact. */
static const char *route_name(struct fl_dgram *d, uint32_t rank, unsigned path)
{
    if (!d->nxsk)
        return d->kops->name;
    if (rank == d->rank)
        return "";
    int route = atomic_load_explicit(&d->peers[rank].route[path], memory_order_relaxed);
    return route == ROUTE_XDP ? "xdp" : route == ROUTE_KERNEL ? d->kops->name : "";
}

/* "host:port (xdp)": flit_ep_peer_info's address says which route serves
   (path 0's; path_of says each path's). */
void fl_xdp_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    char addr[48];
    const char *route = route_name(d, rank, 0);
    d->kops->address_of(d->kd, rank, addr, sizeof addr);
    snprintf(buf, len, *route ? "%s (%s)" : "%s", addr, route);
}

void fl_xdp_path_of(struct fl_dgram *d, uint32_t rank, unsigned path, char *buf,
                    size_t len)
{
    char addr[64];
    const char *route = route_name(d, rank, path);
    if (d->kops->path_of)
        d->kops->path_of(d->kd, rank, path, addr, sizeof addr);
    else
        d->kops->address_of(d->kd, rank, addr, sizeof addr);
    snprintf(buf, len, *route ? "%s (%s)" : "%s", addr, route);
}

/* Short: dumps give it 64 bytes. */
void fl_xdp_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    char addr[48];
    const struct rail *r = &d->rail[0];
    d->kops->address_of(d->kd, rank, addr, sizeof addr);
    const char *more =
        d->nrails > 1 && rank != d->rank && paths_to(d, &d->peers[rank]) > 1 ? " +rails"
                                                                             : "";
    if (!d->nxsk)
        snprintf(buf, len, "%s %s (no xdp)%s", d->kops->name, addr, more);
    else if (rank != d->rank && by_xsk(d, rank, 0))
        snprintf(buf, len, "xdp %s %s %s%s", r->ifname, fl_xsk_mode(r->xsk), addr, more);
    else
        snprintf(buf, len, "%s %s via %s%s",
                 *route_name(d, rank, 0) ? d->kops->name : "xdp", addr,
                 r->xsk ? r->ifname : d->kops->name, more);
}
