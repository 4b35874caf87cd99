/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory transport: the kernel-bypass path between ranks on one
 * host.
 *
 * Every endpoint owns one file in /dev/shm holding its receive rings, one per
 * local sender and lane (fl_ring), behind a header page with the "sleeping"
 * flag. Senders map the file and write records straight into their ring:
 * the receiver's memory, the receiver's rules. Files are unlinked once every
 * rank has mapped them, so nothing is left behind if a rank dies.
 *
 * Long payloads go with one copy: a plain memcpy into the peer's segment when
 * the library made it (shared mapping), cross-memory attach when the
 * program supplied it, and in pieces through the ring (two copies, pipelined)
 * when the kernel refuses CMA or FLIT_SHM_BULK=copy.
 *
 * Wake-ups: a sender that finds the receiver's sleeping flag set sends one
 * datagram to the receiver's socket; a producer waiting for room is woken the
 * same way by its consumer. Peers' deaths arrive through pidfds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/shm/shm.h"

#include "platform/fence.h"
#include "platform/le.h"
#include "platform/os.h"
#include "transport/shm/ring.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/log.h"

#define SHM_MAGIC     0x314d4853544c4946ull /* "FLITSHM1" */
#define SHM_VERSION   1u
#define SHM_HDR_BYTES 4096u
#define SHM_BLOB      64u
#define POLL_BATCH    16 /* packets per ring per pass: fairness */

/* Page 0 of an endpoint's file. */
struct shm_hdr {
    uint64_t magic;
    uint32_t version, nlocal;
    uint32_t rank, ep_index;
    uint64_t ring_size;
    int32_t pid;
    _Alignas(64) _Atomic uint32_t sleeping; /* owner sleeps: wake it */
    _Alignas(64) _Atomic uint64_t tag;      /* owner's tag: put checks it */
};

enum bulk { BULK_NONE, BULK_MAP, BULK_CMA };

struct shm_peer {
    bool local;    /* on this host */
    uint32_t lidx; /* index among the ranks of this host */
    bool connected;
    _Atomic bool dead;
    pid_t pid;
    int pidfd;
    struct fl_ring_tx tx[FL_LANES]; /* in its file */
    struct fl_ring_rx rx[FL_LANES]; /* in ours */
    struct shm_hdr *hdr;            /* its file */
    size_t map_size;
    struct fl_wake_addr wake;
    bool room_wanted[FL_LANES]; /* ->want_room asked for this lane */
    enum bulk bulk;
    uint8_t *seg; /* BULK_MAP: its segment, mapped */
    size_t seg_size;
    uint64_t seg_addr; /* BULK_CMA: address in its process */
};

struct fl_tp_ep {
    struct fl_tp_counters *counters;
    fl_tp_down_fn peer_down; /* the endpoint's, with up_ctx */
    void *up_ctx;
    uint64_t job_id;
    uint32_t rank, size, ep_index;
    uint32_t nlocal; /* ranks on this host, us included */
    uint32_t *local; /* the others, by rank */
    uint32_t nothers;
    struct shm_peer *peers; /* [size]; only local ones are used */
    struct shm_hdr *hdr;
    size_t map_size;
    char name[96];
    bool unlinked;
    size_t ring_size;
    int wake_sock, pid_epfd, epfd;
    /* Our segment, as peers learn it. */
    uint64_t seg_addr, seg_size;
    bool seg_shared;
    uint64_t tag; /* published in our header */
    uint32_t rr;  /* where the next poll pass starts */
};

/* ---- layout ---- */

static size_t file_size(uint32_t nlocal, size_t ring)
{
    return SHM_HDR_BYTES + (size_t)nlocal * FL_LANES * fl_ring_footprint(ring);
}

static void *ring_mem(struct shm_hdr *h, uint32_t lidx, unsigned lane, size_t ring)
{
    return (uint8_t *)h + SHM_HDR_BYTES +
           ((size_t)lidx * FL_LANES + lane) * fl_ring_footprint(ring);
}

/* ---- open / address / connect ---- */

static flit_status sys_error(const char *what, int err)
{
    fl_error("shm: %s: %s", what, strerror(err < 0 ? -err : err));
    return err == -ENOMEM || err == -ENOSPC ? FLIT_ERR_NO_MEMORY : FLIT_ERR_SYSTEM;
}

static flit_status open_file(struct fl_tp_ep *t)
{
    fl_shm_name(t->name, sizeof t->name, t->job_id, t->rank, t->ep_index, "");
    t->map_size = file_size(t->nlocal, t->ring_size);
    int fd;
    void *mem;
    int err = fl_shm_create(t->name, t->map_size, &fd, &mem);
    if (err)
        return sys_error("cannot create the ring file", err);
    close(fd);
    t->hdr = mem;
    t->hdr->magic = SHM_MAGIC;
    t->hdr->version = SHM_VERSION;
    t->hdr->nlocal = t->nlocal;
    t->hdr->rank = t->rank;
    t->hdr->ep_index = t->ep_index;
    t->hdr->ring_size = t->ring_size;
    t->hdr->pid = (int32_t)getpid();
    atomic_store_explicit(&t->hdr->tag, t->tag, memory_order_relaxed);
    return FLIT_OK;
}

static flit_status open_fds(struct fl_tp_ep *t)
{
    char wname[96];
    snprintf(wname, sizeof wname, "%s", t->name + 1); /* abstract name */
    struct fl_wake_addr self;
    fl_wake_addr(wname, &self);
    t->wake_sock = fl_wake_open(&self);
    if (t->wake_sock < 0)
        return sys_error("cannot bind the wake-up socket", t->wake_sock);
    t->pid_epfd = epoll_create1(EPOLL_CLOEXEC);
    t->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (t->pid_epfd < 0 || t->epfd < 0)
        return sys_error("epoll_create1", -errno);
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->wake_sock, &ev) != 0 ||
        epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->pid_epfd, &ev) != 0)
        return sys_error("epoll_ctl", -errno);
    return FLIT_OK;
}

static void shm_close(struct fl_tp_ep *t);

static flit_status shm_open_ep(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    uint32_t nlocal = 0;
    for (uint32_t r = 0; r < a->size; r++)
        nlocal += a->host_of[r] == a->host_of[a->rank];
    if (nlocal < 2 || fl_cfg.transport == FL_TRANSPORT_UDP)
        return FLIT_ERR_NOT_SUPPORTED; /* nobody to share memory with */
    fl_fence_setup();
    if (a->rank == 0 && a->ep_index == 0)
        fl_info("shm: sleep/wake handshake with %s",
                fl_fence_asymmetric ? "membarrier (no fence on the send path)"
                                    : "full fences");
    struct fl_tp_ep *t = calloc(1, sizeof *t);
    if (!t)
        return FLIT_ERR_NO_MEMORY;
    t->counters = a->counters;
    t->peer_down = a->peer_down;
    t->up_ctx = a->up_ctx;
    t->job_id = a->job_id;
    t->rank = a->rank;
    t->size = a->size;
    t->ep_index = a->ep_index;
    t->nlocal = nlocal;
    t->ring_size = (size_t)fl_cfg.shm_ring_bytes;
    t->wake_sock = t->pid_epfd = t->epfd = -1;
    t->seg_addr = (uint64_t)(uintptr_t)a->segment;
    t->seg_size = a->segment_size;
    t->seg_shared = a->segment_fd >= 0;
    t->tag = a->tag;
    t->peers = calloc(a->size, sizeof *t->peers);
    t->local = calloc(nlocal, sizeof *t->local);
    flit_status st = t->peers && t->local ? FLIT_OK : FLIT_ERR_NO_MEMORY;
    uint32_t lidx = 0;
    for (uint32_t r = 0; r < a->size && st == FLIT_OK; r++) {
        t->peers[r].pidfd = -1;
        if (a->host_of[r] != a->host_of[a->rank])
            continue;
        t->peers[r].local = true;
        t->peers[r].lidx = lidx++;
        if (r != a->rank)
            t->local[t->nothers++] = r;
    }
    if (st == FLIT_OK)
        st = open_file(t);
    if (st == FLIT_OK)
        st = open_fds(t);
    if (st != FLIT_OK) {
        shm_close(t);
        return st;
    }
    *out = t;
    return FLIT_OK;
}

static flit_status shm_address(struct fl_tp_ep *t, void *buf, size_t *len)
{
    if (*len < SHM_BLOB)
        return FLIT_ERR_INVALID_ARG;
    uint8_t *b = buf;
    memset(b, 0, SHM_BLOB);
    fl_host_id(b);
    fl_put32(b + 16, (uint32_t)getpid());
    fl_put32(b + 20, t->nlocal);
    fl_put64(b + 24, t->ring_size);
    fl_put64(b + 32, (uint64_t)(uintptr_t)t->hdr);
    fl_put64(b + 40, t->seg_addr);
    fl_put64(b + 48, t->seg_size);
    fl_put32(b + 56, t->seg_shared);
    *len = SHM_BLOB;
    return FLIT_OK;
}

static bool shm_reachable(struct fl_tp_ep *t, uint32_t rank, const void *blob, size_t len)
{
    uint8_t id[16];
    fl_host_id(id);
    return rank != t->rank && len == SHM_BLOB && memcmp(blob, id, sizeof id) == 0 &&
           t->peers[rank].local && fl_get32((const uint8_t *)blob + 20) == t->nlocal;
}

/* How long payloads will reach peer p, given its blob and FLIT_SHM_BULK. */
static flit_status setup_bulk(struct fl_tp_ep *t, uint32_t r, struct shm_peer *p,
                              const uint8_t *b)
{
    p->seg_addr = fl_get64(b + 40);
    p->seg_size = fl_get64(b + 48);
    bool shared = fl_get32(b + 56) != 0;
    p->bulk = BULK_NONE;
    if (p->seg_size == 0 || fl_cfg.shm_bulk == FL_BULK_COPY)
        return FLIT_OK;
    if (shared && fl_cfg.shm_bulk == FL_BULK_AUTO) {
        char name[96];
        size_t size;
        void *mem;
        fl_shm_name(name, sizeof name, t->job_id, r, t->ep_index, "-seg");
        int err = fl_shm_attach(name, &size, &mem);
        if (err)
            return sys_error("cannot map a peer's segment", err);
        if (size < p->seg_size) {
            munmap(mem, size);
            fl_error("shm: rank %u's segment file is smaller than it says", r);
            return FLIT_ERR_BOOT;
        }
        p->seg = mem;
        p->bulk = BULK_MAP;
        return FLIT_OK;
    }
    /* Probe CMA once: read the magic at the head of its ring file. */
    uint64_t magic = 0;
    if (fl_cma_read(p->pid, &magic, fl_get64(b + 32), sizeof magic) == sizeof magic &&
        magic == SHM_MAGIC)
        p->bulk = BULK_CMA;
    else
        fl_info("shm: cross-memory attach to rank %u refused; long payloads go "
                "in pieces",
                r);
    return FLIT_OK;
}

static flit_status map_peer_file(struct fl_tp_ep *t, uint32_t r, struct shm_peer *p)
{
    char name[96];
    fl_shm_name(name, sizeof name, t->job_id, r, t->ep_index, "");
    void *mem;
    int err = fl_shm_attach(name, &p->map_size, &mem);
    if (err)
        return sys_error("cannot map a peer's ring file", err);
    p->hdr = mem;
    const struct shm_hdr *h = p->hdr;
    if (p->map_size != file_size(t->nlocal, t->ring_size) || h->magic != SHM_MAGIC ||
        h->version != SHM_VERSION || h->rank != r || h->ep_index != t->ep_index ||
        h->ring_size != t->ring_size || h->pid != p->pid) {
        fl_error("shm: rank %u's ring file does not match its address "
                 "(different FLIT_SHM_RING_KB?)",
                 r);
        return FLIT_ERR_BOOT;
    }
    return FLIT_OK;
}

static flit_status shm_connect(struct fl_tp_ep *t, uint32_t r, const void *blob,
                               size_t len)
{
    (void)len;
    const uint8_t *b = blob;
    struct shm_peer *p = &t->peers[r];
    if (fl_get64(b + 24) != t->ring_size) {
        fl_error("shm: rank %u uses rings of %llu bytes, this rank %zu: set the "
                 "same FLIT_SHM_RING_KB everywhere",
                 r, (unsigned long long)fl_get64(b + 24), t->ring_size);
        return FLIT_ERR_INVALID_ARG;
    }
    p->pid = (pid_t)fl_get32(b + 16);
    flit_status st = map_peer_file(t, r, p);
    if (st != FLIT_OK)
        return st;
    struct shm_peer *me = &t->peers[t->rank];
    for (unsigned l = 0; l < FL_LANES; l++) {
        fl_ring_tx_attach(&p->tx[l], ring_mem(p->hdr, me->lidx, l, t->ring_size),
                          t->ring_size);
        fl_ring_rx_attach(&p->rx[l], ring_mem(t->hdr, p->lidx, l, t->ring_size),
                          t->ring_size);
    }
    char wname[96];
    fl_shm_name(wname, sizeof wname, t->job_id, r, t->ep_index, "");
    fl_wake_addr(wname + 1, &p->wake);
    p->pidfd = fl_pidfd_open(p->pid);
    if (p->pidfd < 0)
        return sys_error("pidfd_open", p->pidfd);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = r};
    if (epoll_ctl(t->pid_epfd, EPOLL_CTL_ADD, p->pidfd, &ev) != 0)
        return sys_error("epoll_ctl", -errno);
    st = setup_bulk(t, r, p, b);
    p->connected = st == FLIT_OK;
    return st;
}

static void shm_connected(struct fl_tp_ep *t)
{
    if (!t->unlinked)
        fl_shm_unlink(t->name);
    t->unlinked = true;
}

static size_t shm_max_packet(struct fl_tp_ep *t)
{
    return fl_ring_max_packet(t->ring_size);
}

/* ---- sending ---- */

static void wake(struct fl_tp_ep *t, struct shm_peer *p)
{
    fl_wake_send(t->wake_sock, &p->wake);
    FL_COUNT(t->counters->wakeups_sent, 1);
}

static void *shm_reserve(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                         flit_status *st)
{
    struct shm_peer *p = &t->peers[dst];
    if (__builtin_expect(atomic_load_explicit(&p->dead, memory_order_relaxed), 0)) {
        *st = FLIT_ERR_PEER_DOWN;
        return NULL;
    }
    void *pkt = fl_ring_reserve(&p->tx[lane], len);
    *st = FLIT_ERR_AGAIN;
    return pkt;
}

static void shm_commit(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                       size_t len, unsigned flags)
{
    struct shm_peer *p = &t->peers[dst];
    (void)flags; /* nothing to pack: the ring is the wire */
    fl_ring_commit(&p->tx[lane], pkt, len);
    /* Either we see the flag, or the receiver sees our record before it
       sleeps (pairs with the slow fence in shm_arm). */
    fl_fence_fast();
    if (__builtin_expect(atomic_load_explicit(&p->hdr->sleeping, memory_order_relaxed),
                         0) &&
        atomic_exchange(&p->hdr->sleeping, 0))
        wake(t, p);
}

static void shm_cancel(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt)
{
    (void)t, (void)dst, (void)lane, (void)pkt; /* the ring reuses it */
}

static flit_status shm_put(struct fl_tp_ep *t, uint32_t dst, uint64_t tag,
                           uint64_t offset, const void *src, size_t len)
{
    struct shm_peer *p = &t->peers[dst];
    if (atomic_load_explicit(&p->dead, memory_order_relaxed))
        return FLIT_ERR_PEER_DOWN;
    /* The receiver's rule, read from its header: only its tag may write. */
    if (atomic_load_explicit(&p->hdr->tag, memory_order_relaxed) != tag)
        return FLIT_ERR_BAD_TAG;
    if (p->bulk == BULK_MAP) {
        memcpy(p->seg + offset, src, len);
        return FLIT_OK;
    }
    if (p->bulk != BULK_CMA)
        return FLIT_ERR_NOT_SUPPORTED;
    size_t done = 0;
    while (done < len) {
        ssize_t n = fl_cma_write(p->pid, p->seg_addr + offset + done,
                                 (const uint8_t *)src + done, len - done);
        if (n > 0) {
            done += (size_t)n;
        } else if (n == -ESRCH) {
            return FLIT_ERR_PEER_DOWN;
        } else if (n != -EINTR) {
            fl_info("shm: cross-memory attach to rank %u failed (%s); long "
                    "payloads go in pieces",
                    dst, strerror((int)-n));
            p->bulk = BULK_NONE;
            return FLIT_ERR_NOT_SUPPORTED;
        }
    }
    return FLIT_OK;
}

/* ---- receiving ---- */

static void report_broken(struct fl_tp_ep *t, uint32_t r)
{
    fl_error("shm: rank %u wrote a malformed record into its ring; no longer "
             "reading from it",
             r);
    FL_COUNT(t->counters->refused_packets, 1);
    atomic_store(&t->peers[r].dead, true);
    t->peer_down(t->up_ctx, r, FLIT_ERR_BAD_PACKET);
}

/* Drains one ring: up to max packets. Returns how many. */
static int drain(struct fl_tp_ep *t, uint32_t r, unsigned lane, fl_tp_recv_fn cb,
                 void *ctx, int max)
{
    struct fl_ring_rx *rx = &t->peers[r].rx[lane];
    if (rx->busy)
        return 0; /* we are inside one of its handlers */
    int n = 0;
    void *pkt;
    size_t len;
    while (n < max && (pkt = fl_ring_peek(rx, &len)) != NULL) {
        rx->busy = true;
        cb(ctx, r, lane, pkt, len);
        rx->busy = false;
        fl_ring_release(rx);
        n++;
    }
    if (__builtin_expect(rx->broken, 0) && !atomic_load(&t->peers[r].dead))
        report_broken(t, r);
    if (n && fl_ring_take_waiter(rx))
        wake(t, &t->peers[r]); /* it waits for the room we just made */
    return n;
}

static int shm_poll(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb, void *ctx,
                    int budget)
{
    int n = 0;
    uint32_t k = t->rr;
    /* Rotate the starting peer so that no peer can starve the others. */
    t->rr = k + 1 < t->nothers ? k + 1 : 0;
    for (uint32_t i = 0; i < t->nothers && n < budget; i++) {
        uint32_t r = t->local[k];
        k = k + 1 < t->nothers ? k + 1 : 0;
        struct shm_peer *p = &t->peers[r];
        for (unsigned l = FL_LANES; l-- > 0;) { /* replies first */
            if ((lane_mask & FL_LANE_MASK(l)) && fl_ring_pending(&p->rx[l])) {
                int max = budget - n < POLL_BATCH ? budget - n : POLL_BATCH;
                n += drain(t, r, l, cb, ctx, max);
            }
        }
    }
    return n;
}

/* ---- sleeping ---- */

static bool shm_arm(struct fl_tp_ep *t, unsigned lane_mask)
{
    /* A wake-up meant for the last sleep (its sender saw the flag just
       before we cleared it) would wake this one with nothing to do. */
    fl_wake_drain(t->wake_sock);
    atomic_store_explicit(&t->hdr->sleeping, 1, memory_order_relaxed);
    /* The flag is visible before we look at the rings, pairing with the
       sender's fast fence in shm_commit. */
    fl_fence_slow();
    for (uint32_t k = 0; k < t->nothers; k++) {
        struct shm_peer *p = &t->peers[t->local[k]];
        for (unsigned l = 0; l < FL_LANES; l++) {
            bool work = (lane_mask & FL_LANE_MASK(l)) && !p->rx[l].busy &&
                        fl_ring_pending(&p->rx[l]);
            /* Room asked for that the consumer made (taking our waiter flag)
               before the drain above: its wake-up may have been drained. */
            if (p->room_wanted[l] && !fl_ring_room_asked(&p->tx[l])) {
                p->room_wanted[l] = false;
                work = true;
            }
            if (work) {
                atomic_store(&t->hdr->sleeping, 0);
                return true;
            }
        }
    }
    return false;
}

static void shm_disarm(struct fl_tp_ep *t)
{
    atomic_store_explicit(&t->hdr->sleeping, 0, memory_order_relaxed);
    fl_wake_drain(t->wake_sock);
}

static int shm_fd(struct fl_tp_ep *t)
{
    return t->epfd;
}

static void shm_set_tag(struct fl_tp_ep *t, uint64_t tag)
{
    t->tag = tag;
    atomic_store_explicit(&t->hdr->tag, tag, memory_order_relaxed);
}

static void shm_want_room(struct fl_tp_ep *t, uint32_t dst, unsigned lane)
{
    t->peers[dst].room_wanted[lane] = true;
    fl_ring_want_room(&t->peers[dst].tx[lane], 0);
}

/* ---- peers dying ---- */

static void shm_check_peers(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx)
{
    struct epoll_event ev[16];
    int n = epoll_wait(t->pid_epfd, ev, 16, 0);
    for (int i = 0; i < n; i++) {
        uint32_t r = ev[i].data.u32;
        struct shm_peer *p = &t->peers[r];
        epoll_ctl(t->pid_epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
        close(p->pidfd);
        p->pidfd = -1;
        /* What it finished writing before it died is valid: deliver it. */
        while (drain(t, r, FL_LANE_REP, cb, ctx, 1 << 20) > 0 ||
               drain(t, r, FL_LANE_REQ, cb, ctx, 1 << 20) > 0)
            ;
        atomic_store(&p->dead, true);
        t->peer_down(t->up_ctx, r, FLIT_ERR_PEER_DOWN);
    }
}

struct walk_ctx {
    fl_tp_recv_fn cb;
    void *ctx;
    uint32_t dst;
    unsigned lane;
};

static void walk_one(void *arg, void *pkt, size_t len)
{
    struct walk_ctx *w = arg;
    w->cb(w->ctx, w->dst, w->lane, pkt, len);
}

static void shm_reclaim(struct fl_tp_ep *t, uint32_t dst, fl_tp_recv_fn cb, void *ctx)
{
    struct shm_peer *p = &t->peers[dst];
    if (!p->connected)
        return;
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct walk_ctx w = {cb, ctx, dst, l};
        fl_ring_walk_unconsumed(&p->tx[l], walk_one, &w);
    }
}

static bool shm_settled(struct fl_tp_ep *t)
{
    (void)t;
    return true; /* shared memory is never in flight */
}

static void shm_peer_address(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    snprintf(buf, len, "pid %d", (int)t->peers[peer].pid);
}

static uint32_t shm_peer_pid(struct fl_tp_ep *t, uint32_t peer)
{
    const struct shm_peer *p = &t->peers[peer];
    return p->connected && !atomic_load_explicit(&p->dead, memory_order_relaxed)
               ? (uint32_t)p->pid
               : 0;
}

static void shm_dump_peer(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    static const char *const bulk[] = {"copy", "map", "cma"};
    struct shm_peer *p = &t->peers[peer];
    uint64_t fr = fl_ring_tx_inflight(&p->tx[FL_LANE_REQ]);
    uint64_t fp = fl_ring_tx_inflight(&p->tx[FL_LANE_REP]);
    snprintf(buf, len,
             "pid %d, long payloads %s%s; in flight req %llu B "
             "(credits %llu B), rep %llu B (credits %llu B)",
             (int)p->pid, p->seg_size ? "by " : "",
             p->seg_size ? bulk[p->bulk] : "none (no segment)", (unsigned long long)fr,
             (unsigned long long)(t->ring_size - fr), (unsigned long long)fp,
             (unsigned long long)(t->ring_size - fp));
}

static void shm_close(struct fl_tp_ep *t)
{
    for (uint32_t r = 0; t->peers && r < t->size; r++) {
        struct shm_peer *p = &t->peers[r];
        if (p->hdr)
            munmap(p->hdr, p->map_size);
        if (p->seg)
            munmap(p->seg, p->seg_size);
        if (p->pidfd >= 0)
            close(p->pidfd);
    }
    if (t->hdr) {
        munmap(t->hdr, t->map_size);
        shm_connected(t);
    }
    if (t->wake_sock >= 0)
        close(t->wake_sock);
    if (t->pid_epfd >= 0)
        close(t->pid_epfd);
    if (t->epfd >= 0)
        close(t->epfd);
    free(t->peers);
    free(t->local);
    free(t);
}

const struct fl_transport fl_tp_shm = {
    .name = "shm",
    .caps = FL_TP_RELIABLE | FL_TP_PUT,
    .id = 2,
    .open = shm_open_ep,
    .address = shm_address,
    .reachable = shm_reachable,
    .connect = shm_connect,
    .connected = shm_connected,
    .max_packet = shm_max_packet,
    .reserve = shm_reserve,
    .commit = shm_commit,
    .cancel = shm_cancel,
    .put = shm_put,
    .set_tag = shm_set_tag,
    .poll = shm_poll,
    .arm = shm_arm,
    .disarm = shm_disarm,
    .fd = shm_fd,
    .want_room = shm_want_room,
    .check_peers = shm_check_peers,
    .reclaim = shm_reclaim,
    .settled = shm_settled,
    .peer_address = shm_peer_address,
    .peer_pid = shm_peer_pid,
    .dump_peer = shm_dump_peer,
    .close = shm_close,
};
