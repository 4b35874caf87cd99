/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UDP datagrams for the reliability channel: the path between hosts (and,
 * with FLIT_TRANSPORT=udp, between ranks of one host).
 *
 * One socket per endpoint (one per rail with FLIT_UDP_RAILS: path i goes
 * from our rail i to the peer's rail i, docs/rails.md), batched system calls (sendmmsg,
 * recvmmsg), and a table from source address to rank: a datagram from an address outside
 * the job is marked a stranger, and the channel drops and counts it. Datagrams are as
 * large as the path carries without fragmentation (the route's MTU: 64 KiB on loopback,
 * 1500 on Ethernet), or FLIT_UDP_MTU. The socket's receive buffer is sized for every
 * peer's credit window, so that the kernel never drops for lack of room.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/le.h"
#include "transport/udp/config.h"
#include "transport/udp/udp.h"
#include "util/config.h"
#include "util/log.h"

#define UDP_BLOB        8u /* per rail */
#define MAX_BATCH       32
#define IP_UDP_OVERHEAD 28u /* IPv4 + UDP headers */
#define MAX_UDP_PAYLOAD 65507u

struct udp_peer {
    struct sockaddr_in sa[FL_DGRAM_PATHS]; /* its rails */
    unsigned nrails;
    /* 0: its route not yet asked (first use). Atomic: flit_ep_peer_info
       and dumps read it outside the endpoint's lock. */
    _Atomic size_t max_payload;
};

/* A set of receive buffers with their headers, prepared once. */
struct rx_slot {
    uint8_t *mem; /* FL_DGRAM_BATCH x RX_BUF, allocated at first use */
    struct mmsghdr msgs[FL_DGRAM_BATCH];
    struct sockaddr_in names[FL_DGRAM_BATCH];
    struct iovec iov[FL_DGRAM_BATCH];
    struct fl_dgram_in in[FL_DGRAM_BATCH];
};

struct fl_dgram {
    int sock[FL_DGRAM_PATHS]; /* one per rail */
    unsigned nrails;
    unsigned rx_next;     /* the rail the next receive tries first */
    int epfd;             /* with several rails: readable when one is */
    uint64_t peer_window; /* the channel's, per peer and lane (size_buffers) */
    int probe; /* asks routes their MTU: taken at open, so first use needs none */
    pthread_mutex_t probe_lock; /* peer info asks outside the endpoint's lock */
    uint32_t rank, size;
    struct sockaddr_in self[FL_DGRAM_PATHS];
    struct udp_peer *peers;
    /* source address -> rank, open addressing; key 0 is empty */
    uint64_t *keys;
    uint32_t *vals;
    size_t cap;
    struct mmsghdr msgs[MAX_BATCH]; /* sending */
    struct rx_slot rx[FL_DGRAM_SLOTS];
};

#define RX_BUF 65536u

static uint64_t addr_key(const struct sockaddr_in *sa)
{
    return (uint64_t)ntohl(sa->sin_addr.s_addr) << 16 | ntohs(sa->sin_port) |
           (uint64_t)1 << 63; /* never 0 */
}

static size_t slot(const struct fl_dgram *d, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (d->cap - 1);
}

static void table_put(struct fl_dgram *d, const struct sockaddr_in *sa, uint32_t rank)
{
    uint64_t key = addr_key(sa);
    size_t i = slot(d, key);
    while (d->keys[i] && d->keys[i] != key)
        i = (i + 1) & (d->cap - 1);
    d->keys[i] = key;
    d->vals[i] = rank;
}

static uint32_t table_get(const struct fl_dgram *d, const struct sockaddr_in *sa)
{
    uint64_t key = addr_key(sa);
    for (size_t i = slot(d, key); d->keys[i]; i = (i + 1) & (d->cap - 1))
        if (d->keys[i] == key)
            return d->vals[i];
    return FL_DGRAM_STRANGER;
}

/* ---- choosing the address ---- */

/* The first interface that is up, not loopback, with an IPv4 address. */
static uint32_t first_interface(void)
{
    struct ifaddrs *all, *a;
    uint32_t ip = 0;
    if (getifaddrs(&all) != 0)
        return 0;
    for (a = all; a && !ip; a = a->ifa_next)
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) &&
            !(a->ifa_flags & IFF_LOOPBACK))
            ip = ntohl(((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr.s_addr);
    freeifaddrs(all);
    return ip;
}

static uint32_t choose_ip(const struct fl_tp_open_args *a, bool one_host)
{
    if (fl_udp_cfg.addr)
        return (uint32_t)fl_udp_cfg.addr;
    if (one_host)
        return INADDR_LOOPBACK;
    if (a->net_hint)
        return a->net_hint;
    uint32_t ip = first_interface();
    if (!ip)
        fl_warn("udp: no network interface is up; using loopback (set FLIT_UDP_ADDR)");
    return ip ? ip : INADDR_LOOPBACK;
}

/* An IPv4 address (dotted) or the first IPv4 address of an interface
   (by name); 0 when neither. */
static uint32_t rail_ip(const char *word)
{
    struct in_addr in;
    if (inet_pton(AF_INET, word, &in) == 1)
        return ntohl(in.s_addr);
    struct ifaddrs *all, *a;
    uint32_t ip = 0;
    if (getifaddrs(&all) != 0)
        return 0;
    for (a = all; a && !ip; a = a->ifa_next)
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
            !strcmp(a->ifa_name, word))
            ip = ntohl(((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr.s_addr);
    freeifaddrs(all);
    return ip;
}

/* FLIT_UDP_RAILS into ip[]: how many, or 0 with a warning when one is
   neither an address nor an interface with one. */
static unsigned parse_rails(const char *list, uint32_t ip[FL_DGRAM_PATHS])
{
    char word[FL_CONFIG_WORD];
    unsigned n = 0;
    for (const char *s = list; *s;) {
        size_t len = strcspn(s, ",");
        snprintf(word, sizeof word, "%.*s", (int)len, s);
        s += len + (s[len] == ',');
        if (!len)
            continue;
        if (n == FL_DGRAM_PATHS || !(ip[n] = rail_ip(word))) {
            fl_error("udp: FLIT_UDP_RAILS: %s: %s", word,
                     n == FL_DGRAM_PATHS ? "more than 4 rails"
                                         : "no such IPv4 address or interface");
            return 0;
        }
        n++;
    }
    return n;
}

/* Room in the kernel for every peer's window on both lanes, twice over
   (the kernel counts its own overhead per datagram). As root the system's
   limit does not apply. */
static void size_buffers(const struct fl_dgram *d, int sock)
{
    long want = (long)d->peer_window * 2 * 2 * (d->size > 1 ? d->size - 1 : 1);
    if (want < (4l << 20))
        want = 4l << 20;
    if (want > (256l << 20))
        want = 256l << 20;
    int v = (int)want;
    if (setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
        setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    if (setsockopt(sock, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) != 0)
        setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    int got = 0;
    socklen_t len = sizeof got;
    getsockopt(sock, SOL_SOCKET, SO_RCVBUF, &got, &len);
    if (got < want)
        fl_info("udp: receive buffer %d bytes, not %ld: a burst from every peer at "
                "once may be dropped by the kernel (retransmission recovers)",
                got, want);
}

/* ---- the datagram ops ---- */

static void udp_close(struct fl_dgram *d);

/* Rail i's socket, bound to ip (host order) on a port of the kernel's
   choosing, and watched by the epoll set when there are several. */
static bool open_rail(struct fl_dgram *d, unsigned i, uint32_t ip)
{
    struct sockaddr_in *self = &d->self[i];
    *self = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(ip)};
    socklen_t len = sizeof *self;
    struct epoll_event ev = {.events = EPOLLIN};
    d->sock[i] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->sock[i] < 0 || bind(d->sock[i], (struct sockaddr *)self, sizeof *self) != 0 ||
        getsockname(d->sock[i], (struct sockaddr *)self, &len) != 0 ||
        (d->epfd >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sock[i], &ev) != 0)) {
        char at[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &self->sin_addr, at, sizeof at);
        fl_error("udp: cannot open a socket on %s: %s", at, strerror(errno));
        return false;
    }
    size_buffers(d, d->sock[i]);
    return true;
}

static flit_status udp_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    if (a->size < 2)
        return FLIT_ERR_NOT_SUPPORTED; /* nobody to reach over UDP */
    bool one_host = true;
    for (uint32_t r = 0; r < a->size; r++)
        one_host &= a->host_of[r] == a->host_of[a->rank];
    struct fl_dgram *d = calloc(1, sizeof *d);
    if (!d)
        return FLIT_ERR_NO_MEMORY;
    d->rank = a->rank;
    d->size = a->size;
    d->peer_window = a->peer_window;
    d->cap = 16;
    while (d->cap < 2 * (size_t)a->size)
        d->cap *= 2;
    d->keys = calloc(d->cap, sizeof *d->keys);
    d->vals = calloc(d->cap, sizeof *d->vals);
    d->peers = calloc(a->size, sizeof *d->peers);
    d->probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    pthread_mutex_init(&d->probe_lock, NULL);
    uint32_t ip[FL_DGRAM_PATHS] = {0};
    d->nrails = fl_udp_cfg.rails[0] ? parse_rails(fl_udp_cfg.rails, ip) : 1;
    if (!fl_udp_cfg.rails[0])
        ip[0] = choose_ip(a, one_host);
    d->epfd = -1;
    for (unsigned i = 0; i < FL_DGRAM_PATHS; i++)
        d->sock[i] = -1;
    if (!d->nrails || !d->keys || !d->vals || !d->peers || d->probe < 0 ||
        (d->nrails > 1 && (d->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)) {
        udp_close(d);
        return d->nrails ? FLIT_ERR_SYSTEM : FLIT_ERR_INVALID_ARG;
    }
    for (unsigned i = 0; i < d->nrails; i++)
        if (!open_rail(d, i, ip[i])) {
            udp_close(d);
            return FLIT_ERR_SYSTEM;
        }
    *out = d;
    return FLIT_OK;
}

/* Each rail's address and port, network order, in 8 bytes. */
static flit_status udp_address(struct fl_dgram *d, void *buf, size_t *len)
{
    if (*len < UDP_BLOB * d->nrails)
        return FLIT_ERR_INVALID_ARG;
    uint8_t *b = buf;
    for (unsigned i = 0; i < d->nrails; i++, b += UDP_BLOB) {
        memcpy(b, &d->self[i].sin_addr.s_addr, 4);
        memcpy(b + 4, &d->self[i].sin_port, 2);
        b[6] = b[7] = 0;
    }
    *len = UDP_BLOB * d->nrails;
    return FLIT_OK;
}

static bool udp_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len)
{
    const uint8_t *b = blob;
    bool ok =
        rank != d->rank && len && len % UDP_BLOB == 0 && len <= UDP_BLOB * FL_DGRAM_PATHS;
    for (size_t i = 0; ok && i < len; i += UDP_BLOB)
        ok = (b[i] | b[i + 1] | b[i + 2] | b[i + 3]) && (b[i + 4] | b[i + 5]);
    return ok;
}

/* The largest datagram payload towards sa: the route's MTU, or
   FLIT_UDP_MTU. Asked on the endpoint's probe socket, connected to sa for
   the question and dissolved after it: a first contact under a descriptor
   shortage (RLIMIT_NOFILE) needs no new one. */
static size_t path_payload(int s, const struct sockaddr_in *sa)
{
    int mtu = 0;
    socklen_t len = sizeof mtu;
    if (connect(s, (const struct sockaddr *)sa, sizeof *sa) == 0)
        getsockopt(s, IPPROTO_IP, IP_MTU, &mtu, &len);
    static const struct sockaddr none = {.sa_family = AF_UNSPEC};
    connect(s, &none, sizeof none);
    if (mtu <= 0)
        mtu = 1500; /* the route is unknown: assume Ethernet */
    if (fl_udp_cfg.mtu)
        mtu = (int)fl_udp_cfg.mtu;
    size_t payload = (size_t)mtu > IP_UDP_OVERHEAD ? (size_t)mtu - IP_UDP_OVERHEAD : 0;
    return payload < MAX_UDP_PAYLOAD ? payload : MAX_UDP_PAYLOAD;
}

/* Every rail of the peer's (udp_reachable checked the blob) is its. */
static flit_status udp_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                               size_t len)
{
    const uint8_t *b = blob;
    struct udp_peer *p = &d->peers[rank];
    p->nrails = (unsigned)(len / UDP_BLOB);
    for (unsigned i = 0; i < p->nrails; i++, b += UDP_BLOB) {
        struct sockaddr_in *sa = &p->sa[i];
        sa->sin_family = AF_INET;
        memcpy(&sa->sin_addr.s_addr, b, 4);
        memcpy(&sa->sin_port, b + 4, 2);
        if (table_get(d, sa) != FL_DGRAM_STRANGER) {
            fl_error("udp: ranks %u and %u published the same address", table_get(d, sa),
                     rank);
            return FLIT_ERR_BOOT;
        }
        table_put(d, sa, rank);
    }
    return FLIT_OK;
}

static unsigned udp_paths(struct fl_dgram *d, uint32_t rank)
{
    unsigned n = d->peers[rank].nrails;
    return n < d->nrails ? (n ? n : 1) : d->nrails;
}

/* The route is asked on first need (a few system calls), not at connect:
   a peer never contacted costs no probe. */
static size_t udp_max_payload(struct fl_dgram *d, uint32_t rank)
{
    struct udp_peer *p = &d->peers[rank];
    size_t payload = atomic_load_explicit(&p->max_payload, memory_order_relaxed);
    if (!payload) { /* two threads may both ask: the same answer */
        pthread_mutex_lock(&d->probe_lock);
        payload = path_payload(d->probe, &p->sa[0]);
        for (unsigned i = 1; i < udp_paths(d, rank); i++) { /* the least of them */
            size_t on = path_payload(d->probe, &p->sa[i]);
            payload = on < payload ? on : payload;
        }
        pthread_mutex_unlock(&d->probe_lock);
        atomic_store_explicit(&p->max_payload, payload, memory_order_relaxed);
    }
    return payload;
}

/* Sends v[0 .. n-1], all by one path; as udp_send. */
static int send_run(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    unsigned path = v[0].path < d->nrails ? v[0].path : 0;
    for (int i = 0; i < n; i++)
        d->msgs[i].msg_hdr = (struct msghdr){
            .msg_name = &d->peers[v[i].dst].sa[path],
            .msg_namelen = sizeof(struct sockaddr_in),
            .msg_iov = (struct iovec *)v[i].iov,
            .msg_iovlen = (size_t)v[i].iovcnt,
        };
    int k;
    do
        k = sendmmsg(d->sock[path], d->msgs, (unsigned)n, MSG_DONTWAIT);
    while (k < 0 && errno == EINTR);
    if (k >= 0)
        return k;
    /* No room now, in the socket or in this host's memory: ours to wait
       for, never the peer's (the channel sends it again). */
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == ENOMEM)
        return -EAGAIN;
    /* The network refused this one (unreachable, a firewall): as if lost;
       retransmission and the peer timeout take it from here. */
    static _Atomic int said;
    if (!said++)
        fl_warn("udp: sending to rank %u: %s", v[0].dst, strerror(errno));
    return 1;
}

/* Runs of datagrams by the same path, each in one system call. */
static int udp_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    if (n > MAX_BATCH)
        n = MAX_BATCH;
    int done = 0;
    while (done < n) {
        int run = 1;
        while (done + run < n && v[done + run].path == v[done].path)
            run++;
        int k = send_run(d, v + done, run);
        if (k < 0)
            return done ? done : k;
        done += k;
        if (k < run)
            break;
    }
    return done;
}

static bool slot_ready(struct rx_slot *r)
{
    if (r->mem)
        return true;
    r->mem = aligned_alloc(64, (size_t)FL_DGRAM_BATCH * RX_BUF);
    if (!r->mem)
        return false;
    for (int i = 0; i < FL_DGRAM_BATCH; i++) {
        r->iov[i] = (struct iovec){r->mem + (size_t)i * RX_BUF, RX_BUF};
        r->msgs[i].msg_hdr = (struct msghdr){
            .msg_name = &r->names[i],
            .msg_iov = &r->iov[i],
            .msg_iovlen = 1,
        };
        r->in[i].buf = r->mem + (size_t)i * RX_BUF;
    }
    return true;
}

static int udp_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    struct rx_slot *r = &d->rx[slot];
    if (slot >= FL_DGRAM_SLOTS || !slot_ready(r))
        return 0;
    for (int i = 0; i < FL_DGRAM_BATCH; i++)
        r->msgs[i].msg_hdr.msg_namelen = sizeof r->names[i];
    int k = 0;
    unsigned rail = d->rx_next;
    for (unsigned tries = 0; tries < d->nrails && k <= 0; tries++) {
        rail = (d->rx_next + tries) % d->nrails; /* each rail its turn first */
        do
            k = recvmmsg(d->sock[rail], r->msgs, FL_DGRAM_BATCH, MSG_DONTWAIT, NULL);
        while (k < 0 && errno == EINTR);
    }
    d->rx_next = (rail + 1) % d->nrails;
    if (k <= 0)
        return 0;
    for (int i = 0; i < k; i++) {
        const struct msghdr *h = &r->msgs[i].msg_hdr;
        bool whole = !(h->msg_flags & MSG_TRUNC) &&
                     h->msg_namelen == sizeof r->names[i] &&
                     r->names[i].sin_family == AF_INET;
        r->in[i].len = r->msgs[i].msg_len;
        r->in[i].src = whole ? table_get(d, &r->names[i]) : FL_DGRAM_STRANGER;
        r->in[i].path = rail;
    }
    *in = r->in;
    return k;
}

static int udp_fd(struct fl_dgram *d)
{
    return d->epfd >= 0 ? d->epfd : d->sock[0];
}

static void udp_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    char ip[INET_ADDRSTRLEN];
    const struct sockaddr_in *sa = rank == d->rank ? &d->self[0] : &d->peers[rank].sa[0];
    inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof ip);
    snprintf(buf, len, "%s:%u", ip, ntohs(sa->sin_port));
}

static void udp_path_of(struct fl_dgram *d, uint32_t rank, unsigned path, char *buf,
                        size_t len)
{
    char from[INET_ADDRSTRLEN], to[INET_ADDRSTRLEN];
    const struct sockaddr_in *sa = &d->peers[rank].sa[path];
    inet_ntop(AF_INET, &d->self[path].sin_addr, from, sizeof from);
    inet_ntop(AF_INET, &sa->sin_addr, to, sizeof to);
    snprintf(buf, len, "%s->%s:%u", from, to, ntohs(sa->sin_port));
}

static void udp_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    char addr[48];
    udp_address_of(d, rank, addr, sizeof addr);
    if (rank != d->rank && udp_paths(d, rank) > 1)
        snprintf(addr + strlen(addr), sizeof addr - strlen(addr), " +%u rails",
                 udp_paths(d, rank) - 1);
    size_t payload = rank == d->rank ? 0
                                     : atomic_load_explicit(&d->peers[rank].max_payload,
                                                            memory_order_relaxed);
    if (payload)
        snprintf(buf, len, "udp %s, %zu-byte datagrams", addr, payload);
    else
        snprintf(buf, len, "udp %s, not contacted", addr);
}

static void udp_close(struct fl_dgram *d)
{
    for (unsigned i = 0; i < FL_DGRAM_PATHS; i++)
        if (d->sock[i] >= 0)
            close(d->sock[i]);
    if (d->epfd >= 0)
        close(d->epfd);
    if (d->probe >= 0)
        close(d->probe);
    pthread_mutex_destroy(&d->probe_lock);
    for (int i = 0; i < FL_DGRAM_SLOTS; i++)
        free(d->rx[i].mem);
    free(d->keys);
    free(d->vals);
    free(d->peers);
    free(d);
}

const struct fl_dgram_ops fl_dgram_udp = {
    .name = "udp",
    .open = udp_open,
    .address = udp_address,
    .reachable = udp_reachable,
    .connect = udp_connect,
    .paths = udp_paths,
    .path_of = udp_path_of,
    .max_payload = udp_max_payload,
    .send = udp_send,
    .recv = udp_recv,
    .fd = udp_fd,
    .address_of = udp_address_of,
    .describe = udp_describe,
    .close = udp_close,
};
