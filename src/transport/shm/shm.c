/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory transport: the kernel-bypass path between ranks on one
 * host.
 *
 * Every endpoint owns one file in /dev/shm: a header (the "sleeping" flag,
 * the tag, and the queue of announcements, below), then one block per local
 * sender holding its two receive rings (fl_ring), one per lane. The file is
 * sparse and nobody maps it whole. Pairs are set up on first use, in each
 * direction on its own: the first send to a peer opens the peer's file
 * (through /proc/PID/fd: the file is unlinked as soon as its owner has
 * connected, so nothing is left behind if a rank dies), maps the peer's header and the
 * block of its own rings there, and announces itself by taking a slot of
 * the header's announcement queue (an atomic add, once per pair) and writing
 * its local index into it. The receiver looks at the queue's count on every
 * poll (a line nobody writes but first contacts), maps the blocks of those
 * that announced and from then on polls their rings, and theirs only. So
 * creation costs O(N) per rank (addresses and a pidfd per peer), a peer
 * never contacted costs a few dozen bytes and no mapping, and memory and
 * poll cost follow the peers a rank exchanges messages with. A process that
 * is not dumpable keeps its /proc/PID/fd from its peers: it says so in its
 * address, its peers open its files by name at creation and hold them until
 * first use, and it asks for a job-wide round after connecting (->rendezvous)
 * so that it unlinks them only once every rank holds them. The design and its
 * invariants: docs/architecture.md.
 *
 * Long payloads go with one copy: a plain memcpy into the peer's segment when
 * the library made it (shared mapping), cross-memory attach when the
 * program supplied it, and in pieces through the ring (two copies, pipelined)
 * when the kernel refuses CMA or FLIT_SHM_BULK=copy. The same two means,
 * offered to one-sided communication (src/rma) as this transport's
 * one-sided operations, are in onesided.c.
 *
 * Wake-ups: a sender that finds the receiver's sleeping flag set sends one
 * datagram to the receiver's socket; a producer waiting for room is woken the
 * same way by its consumer. Peers' deaths arrive through pidfds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/shm/shm.h"

#include "platform/fence.h"
#include "platform/le.h"
#include "platform/os.h"
#include "transport/ring.h"
#include "transport/shm/config.h"
#include "transport/shm/onesided.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/log.h"

#define SHM_MAGIC   0x324d4853544c4946ull /* "FLITSHM2" */
#define SHM_VERSION 2u
#define SHM_PAGE    4096u
#define SHM_BLOB    72u
#define POLL_BATCH  16 /* packets per ring per pass: fairness */

/* The head of an endpoint's file. */
struct shm_hdr {
    uint64_t magic;
    uint32_t version, nlocal;
    uint32_t rank, ep_index;
    uint64_t ring_size;
    uint64_t job_id;
    int32_t pid;
    _Alignas(64) _Atomic uint32_t sleeping; /* owner sleeps: wake it */
    _Alignas(64) _Atomic uint64_t tag;      /* owner's tag: put checks it */
    /* Announcements: senders' first contacts. A sender takes slot
       nannounced++ and stores its local index + 1 there (release). */
    _Alignas(64) _Atomic uint32_t nannounced;
    _Alignas(64) _Atomic uint32_t announce[]; /* [nlocal] */
};

enum bulk { BULK_NONE, BULK_MAP, BULK_CMA };

/* What a pair costs once it is used, in either direction. */
struct shm_link {
    /* Sending: the peer's header and our block in its file. */
    bool tx_ready;
    bool room_wanted[FL_LANES]; /* ->want_room asked for this lane */
    struct fl_ring_tx tx[FL_LANES];
    struct shm_hdr *hdr;
    void *tx_block;
    /* Receiving: its block in our file. */
    bool rx_ready;
    bool rx_waiting; /* announced; its block not mapped yet (our shortage) */
    struct fl_ring_rx rx[FL_LANES];
    void *rx_block;
    struct fl_wake_addr wake;
    enum bulk bulk;
    uint8_t *seg; /* BULK_MAP: its segment, mapped */
};

/* A peer as its address describes it; the link comes with first use. */
struct shm_peer {
    bool local; /* on this host */
    bool connected;
    bool closed; /* not dumpable: its files are opened by name, not /proc */
    bool setup_failed; /* first contact failed: check_peers reports it */
    bool seg_shared;
    _Atomic bool dead;
    uint32_t lidx; /* index among the ranks of this host */
    pid_t pid;
    int pidfd;
    bool polled;             /* no pidfd: its death is read from /proc (FLIT_SHM_WATCH) */
    uint64_t start;          /* polled: its start time, which tells a reused pid */
    int file_fdno, seg_fdno; /* its descriptors, for /proc/PID/fd */
    int file_fd, seg_fd;     /* closed: held open until first use, else -1 */
    uint64_t hdr_addr;       /* its header, in its memory (CMA probe) */
    uint64_t seg_addr, seg_size;
    struct shm_link *link;
    _Atomic(struct shm_link *) sending; /* link, once tx_ready: for dumps */
};

struct fl_tp_ep {
    struct fl_tp_counters *counters;
    fl_tp_down_fn peer_down; /* the endpoint's, with up_ctx */
    void *up_ctx;
    uint64_t job_id;
    uint32_t rank, size, ep_index;
    uint32_t nlocal;    /* ranks on this host, us included */
    uint8_t host_id[16]; /* fl_host_id, read once */
    uint32_t *by_lidx;  /* [nlocal]: rank of each local index */
    uint32_t *rx_peers; /* ranks whose rings we poll (they announced) */
    uint32_t nrx;
    /* their rings, lane l of rx_peers[i] at 2i + l: what an empty poll
       looks at, in one array rather than through each peer's link */
    const struct fl_ring_rx **rx_rings;
    uint32_t *tx_peers; /* ranks we announced ourselves to */
    uint32_t ntx;
    uint32_t seen;          /* announcements taken */
    uint32_t *rx_wait;      /* ranks announced whose blocks we could not map yet */
    uint32_t nwait;
    uint32_t nfailed;       /* peers with setup_failed not yet reported */
    bool closed;            /* we are not dumpable (rendezvous) */
    struct shm_peer *peers; /* [size]; only local ones are used */
    struct shm_hdr *hdr;
    size_t hdr_bytes, block_bytes, file_bytes;
    int file_fd; /* our file: peers open it through /proc */
    char name[96];
    bool unlinked;
    size_t ring_size;
    bool sparse; /* rings take their pages as they fill (fl_shm_can_populate) */
    int wake_sock, pid_epfd, epfd;
    uint32_t npolled;           /* peers watched through /proc */
    uint64_t next_proc_scan_ns; /* when /proc is read for them next */
    /* Our segment, as peers learn it. */
    uint64_t seg_addr, seg_size;
    bool seg_shared;
    int seg_fd;
    uint64_t tag; /* published in our header */
    uint32_t rr;  /* where the next poll pass starts */
};

/* ---- layout ---- */

static size_t page_up(size_t n)
{
    return (n + SHM_PAGE - 1) & ~(size_t)(SHM_PAGE - 1);
}

static size_t hdr_bytes(uint32_t nlocal)
{
    return page_up(offsetof(struct shm_hdr, announce) +
                   (size_t)nlocal * sizeof(uint32_t));
}

/* A sender's block: its two rings, page-aligned so it maps alone. */
static size_t block_bytes(size_t ring)
{
    return page_up(FL_LANES * fl_ring_footprint(ring));
}

static off_t block_offset(const struct fl_tp_ep *t, uint32_t lidx)
{
    return (off_t)(t->hdr_bytes + (size_t)lidx * t->block_bytes);
}

/* The bytes take_block reserves. */
static size_t first_bytes(const struct fl_tp_ep *t)
{
    if (!t->sparse)
        return t->block_bytes;
    uint64_t at[2], len[2];
    fl_ring_sparse_first(t->ring_size, at, len);
    return FL_LANES * (size_t)(len[0] + len[1]);
}

static void *map_range(int fd, size_t len, off_t off, int *err)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    *err = p == MAP_FAILED ? -errno : 0;
    return p == MAP_FAILED ? NULL : p;
}

/*
 * Maps the block at off in fd with the pages its rings need before they
 * are attached: where rings take theirs as they fill (t->sparse), the
 * control line, the first data bytes and the producer's map of each
 * (fl_ring_sparse_first), taken through the mapping (no lock on the file:
 * its senders do this at once); else the whole block, taken through the
 * file first. NULL with -errno in *err, and *what saying which step.
 */
static void *take_block(const struct fl_tp_ep *t, int fd, off_t off, int *err,
                        const char **what)
{
    *what = "room";
    if (!t->sparse && (*err = fl_shm_reserve(fd, (uint64_t)off, t->block_bytes)) != 0)
        return NULL;
    *what = "our rings";
    uint8_t *block = map_range(fd, t->block_bytes, off, err);
    if (!block || !t->sparse)
        return block;
    uint64_t at[2], len[2];
    fl_ring_sparse_first(t->ring_size, at, len);
    *what = "room";
    for (unsigned l = 0; l < FL_LANES && !*err; l++)
        for (unsigned i = 0; i < 2 && !*err; i++)
            *err = fl_shm_populate(block + l * fl_ring_footprint(t->ring_size) + at[i],
                                   len[i]);
    if (*err) {
        munmap(block, t->block_bytes);
        return NULL;
    }
    return block;
}

/* ---- open / address / connect ---- */

static flit_status os_status(int err)
{
    return err == -ENOMEM || err == -ENOSPC ? FLIT_ERR_NO_MEMORY : FLIT_ERR_SYSTEM;
}

static flit_status sys_error(const char *what, int err)
{
    fl_error("shm: %s: %s", what, strerror(err < 0 ? -err : err));
    return os_status(err);
}

/* A shared file's pages could not be reserved: said with what was wanted. */
static flit_status no_room(const char *what, size_t bytes, int err)
{
    fl_error("shm: no room in /dev/shm for %s (%zu bytes): %s%s", what, bytes,
             strerror(-err),
             err == -ENOSPC ? " (see df /dev/shm; a container's --shm-size)" : "");
    return os_status(err);
}

static flit_status open_file(struct fl_tp_ep *t)
{
    fl_shm_name(t->name, sizeof t->name, t->job_id, t->rank, t->ep_index, "");
    t->hdr_bytes = hdr_bytes(t->nlocal);
    t->block_bytes = block_bytes(t->ring_size);
    t->file_bytes = t->hdr_bytes + (size_t)t->nlocal * t->block_bytes;
    /* Sparse: its header's pages are taken now, each sender's block by
       that sender at first contact (first_contact), so that a full
       /dev/shm is an error there and never a SIGBUS. */
    int fd;
    int err = fl_shm_create_fd(t->name, t->file_bytes, t->hdr_bytes, &fd);
    if (err == -ENOSPC || err == -ENOMEM) {
        t->unlinked = true;
        return no_room("the head of this endpoint's ring file", t->hdr_bytes, err);
    }
    if (err) {
        t->unlinked = true;
        return sys_error("cannot create the ring file", err);
    }
    t->file_fd = fd;
    if (fl_shm_sparse() && t->rank == 0 && t->ep_index == 0)
        fl_warn("shm: /dev/shm cannot reserve space (not a tmpfs?): its files stay "
                "sparse, and a full filesystem will show as SIGBUS");
    t->hdr = map_range(fd, t->hdr_bytes, 0, &err);
    if (!t->hdr)
        return sys_error("cannot map the ring file", err);
    t->hdr->magic = SHM_MAGIC;
    t->hdr->version = SHM_VERSION;
    t->hdr->nlocal = t->nlocal;
    t->hdr->rank = t->rank;
    t->hdr->ep_index = t->ep_index;
    t->hdr->ring_size = t->ring_size;
    t->hdr->job_id = t->job_id;
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

/*
 * The sleep/wake handshake's slow fence is membarrier(2), for which the
 * process registers once. Registering a process that already runs several
 * threads waits for an RCU grace period in the kernel (5-12 ms here, more
 * with every CPU busy, as in a start-up of many ranks); with one thread it
 * costs microseconds. So it happens before the launcher starts any.
 */
static void shm_prepare(void)
{
    fl_fence_setup();
}

static flit_status shm_open_ep(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    uint32_t nlocal = 0;
    for (uint32_t r = 0; r < a->size; r++)
        nlocal += a->host_of[r] == a->host_of[a->rank];
    if (nlocal < 2)
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
    fl_host_id(t->host_id);
    t->ring_size = (size_t)fl_shm_cfg.ring_bytes;
    t->sparse = fl_shm_can_populate();
    /* Not dumpable (set-uid, prctl): /proc/PID/fd is closed to same-user peers */
    t->closed = prctl(PR_GET_DUMPABLE) != 1;
    t->wake_sock = t->pid_epfd = t->epfd = t->file_fd = -1;
    t->seg_addr = (uint64_t)(uintptr_t)a->segment;
    t->seg_size = a->segment_size;
    t->seg_shared = a->segment_fd >= 0;
    t->seg_fd = a->segment_fd;
    t->tag = a->tag;
    t->peers = calloc(a->size, sizeof *t->peers);
    t->by_lidx = calloc(nlocal, sizeof *t->by_lidx);
    t->rx_peers = calloc(nlocal, sizeof *t->rx_peers);
    t->rx_rings = calloc((size_t)nlocal * FL_LANES, sizeof *t->rx_rings);
    t->tx_peers = calloc(nlocal, sizeof *t->tx_peers);
    t->rx_wait = calloc(nlocal, sizeof *t->rx_wait);
    flit_status st =
        t->peers && t->by_lidx && t->rx_peers && t->rx_rings && t->tx_peers && t->rx_wait
            ? FLIT_OK
            : FLIT_ERR_NO_MEMORY;
    uint32_t lidx = 0;
    for (uint32_t r = 0; r < a->size && st == FLIT_OK; r++) {
        struct shm_peer *p = &t->peers[r];
        p->pidfd = p->file_fd = p->seg_fd = -1;
        if (a->host_of[r] != a->host_of[a->rank])
            continue;
        p->local = true;
        t->by_lidx[lidx] = r;
        p->lidx = lidx++;
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
    memcpy(b, t->host_id, sizeof t->host_id);
    fl_put32(b + 16, (uint32_t)getpid());
    fl_put32(b + 20, t->nlocal);
    fl_put64(b + 24, t->ring_size);
    fl_put64(b + 32, (uint64_t)(uintptr_t)t->hdr);
    fl_put64(b + 40, t->seg_addr);
    fl_put64(b + 48, t->seg_size);
    fl_put32(b + 56, t->seg_shared);
    fl_put32(b + 60, (uint32_t)t->file_fd);
    fl_put32(b + 64, (uint32_t)t->seg_fd);
    fl_put32(b + 68, t->closed);
    *len = SHM_BLOB;
    return FLIT_OK;
}

static bool shm_reachable(struct fl_tp_ep *t, uint32_t rank, const void *blob, size_t len)
{
    return rank != t->rank && len == SHM_BLOB &&
           memcmp(blob, t->host_id, sizeof t->host_id) == 0 && t->peers[rank].local &&
           fl_get32((const uint8_t *)blob + 20) == t->nlocal;
}

/* One of peer p's open files (fdno in its process), through /proc. */
static int open_proc_fd(const struct shm_peer *p, int fdno)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)p->pid, fdno);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

/* A peer that keeps its /proc/PID/fd closed: its files are opened by name
   now, while the rendezvous keeps them linked, and held until first use.
   This process's own shortage (no descriptor left) fails creation, on every
   rank through the rendezvous's round: after it the name is gone, and no
   later try could open the file. Other failures are first contact's to
   report. */
static flit_status hold_files(struct fl_tp_ep *t, uint32_t r, struct shm_peer *p)
{
    char name[96];
    fl_shm_name(name, sizeof name, t->job_id, r, t->ep_index, "");
    p->file_fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (p->file_fd < 0 && fl_os_shortage(-errno))
        return sys_error("cannot open a peer's ring file by name", -errno);
    if (p->file_fd < 0) {
        fl_error("shm: cannot open rank %u's ring file by name: %s", r, strerror(errno));
        p->setup_failed = true;
        t->nfailed++;
        return FLIT_OK;
    }
    if (p->seg_shared && p->seg_size && fl_shm_cfg.bulk == FL_BULK_AUTO) {
        fl_shm_name(name, sizeof name, t->job_id, r, t->ep_index, "-seg");
        p->seg_fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
        if (p->seg_fd < 0) /* then cross-memory attach, or pieces */
            fl_info("shm: cannot open rank %u's segment by name: %s", r, strerror(errno));
    }
    return FLIT_OK;
}

/*
 * Watches peer r's process for its death: a pidfd in our epoll set, which
 * also wakes a sleeper. Where there is none (no pidfd_open before Linux 5.3,
 * under valgrind or behind a seccomp filter; FLIT_SHM_WATCH=proc; no
 * descriptor left), its start time instead, compared with /proc/PID/stat
 * every FLIT_PEER_CHECK_MS (sleepers wake that often anyway). Cannot fail:
 * a peer already gone gets start time 0, which the first scan reports.
 */
static void watch(struct fl_tp_ep *t, uint32_t r, struct shm_peer *p)
{
    int fd = fl_shm_cfg.watch == FL_WATCH_PROC ? -ENOSYS : fl_pidfd_open(p->pid);
    if (fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = r};
        if (epoll_ctl(t->pid_epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
            p->pidfd = fd;
            return;
        }
        close(fd);
        fd = -errno;
    }
    if (fl_proc_start(p->pid, &p->start) != 0)
        p->start = 0;
    if (t->npolled == 0 && fl_shm_cfg.watch != FL_WATCH_PROC && fd != -ESRCH)
        fl_info("shm: no pidfd for rank %u (%s): peers' deaths are read from /proc "
                "every %lld ms",
                r, strerror(-fd), (long long)fl_cfg.peer_check_ms);
    p->polled = true;
    t->npolled++;
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
    p->hdr_addr = fl_get64(b + 32);
    p->seg_addr = fl_get64(b + 40);
    p->seg_size = fl_get64(b + 48);
    p->seg_shared = fl_get32(b + 56) != 0;
    p->file_fdno = (int)fl_get32(b + 60);
    p->seg_fdno = (int)fl_get32(b + 64);
    p->closed = fl_get32(b + 68) != 0;
    watch(t, r, p);
    flit_status st = p->closed ? hold_files(t, r, p) : FLIT_OK;
    p->connected = st == FLIT_OK;
    return st;
}

/* Whether peers need our files by name until they have all connected. */
static bool shm_rendezvous(struct fl_tp_ep *t)
{
    return t->closed;
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

/* ---- first contact ---- */

static struct shm_link *link_of(struct fl_tp_ep *t, uint32_t r)
{
    struct shm_peer *p = &t->peers[r];
    if (!p->link) {
        p->link = calloc(1, sizeof *p->link);
        if (p->link) {
            char wname[96];
            fl_shm_name(wname, sizeof wname, t->job_id, r, t->ep_index, "");
            fl_wake_addr(wname + 1, &p->link->wake);
        }
    }
    return p->link;
}

/* How long payloads will reach peer p, given its address and FLIT_SHM_BULK. */
static void setup_bulk(uint32_t r, struct shm_peer *p, struct shm_link *k)
{
    k->bulk = BULK_NONE;
    if (p->seg_size == 0 || fl_shm_cfg.bulk == FL_BULK_COPY)
        return;
    if (p->seg_shared && fl_shm_cfg.bulk == FL_BULK_AUTO) {
        int fd = p->seg_fd >= 0 ? p->seg_fd : open_proc_fd(p, p->seg_fdno);
        struct stat sb;
        int err = fd < 0 ? fd : fstat(fd, &sb) != 0 ? -errno : 0;
        if (!err && (uint64_t)sb.st_size < p->seg_size)
            err = -EINVAL;
        void *mem = err ? NULL : map_range(fd, p->seg_size, 0, &err);
        if (fd >= 0)
            close(fd);
        p->seg_fd = -1;
        if (mem) {
            k->seg = mem;
            k->bulk = BULK_MAP;
            return;
        }
        fl_info("shm: cannot map rank %u's segment (%s); trying cross-memory attach", r,
                strerror(-err));
    }
    /* Probe CMA once: read the magic at the head of its ring file. */
    uint64_t magic = 0;
    if (fl_cma_read(p->pid, &magic, p->hdr_addr, sizeof magic) == sizeof magic &&
        magic == SHM_MAGIC)
        k->bulk = BULK_CMA;
    else
        fl_info("shm: cross-memory attach to rank %u refused; long payloads go "
                "in pieces",
                r);
}

/* Whether the header at h is rank r's file of this job and endpoint. */
static bool header_matches(const struct fl_tp_ep *t, uint32_t r, const struct shm_peer *p,
                           const struct shm_hdr *h)
{
    return h->magic == SHM_MAGIC && h->version == SHM_VERSION && h->rank == r &&
           h->ep_index == t->ep_index && h->ring_size == t->ring_size &&
           h->nlocal == t->nlocal && h->job_id == t->job_id && h->pid == p->pid;
}

/* What first contact maps of the receiver's file. */
struct contact {
    struct shm_hdr *hdr;
    void *block;
    const char *what; /* the step that failed */
};

/*
 * Maps dst's header and our block in its file (fd), the block's pages
 * reserved first: the receiver's file is sparse, and a store into a page
 * that a full /dev/shm cannot give is a SIGBUS. 0 or -errno, with
 * nothing left mapped.
 */
static int map_peer_file(struct fl_tp_ep *t, uint32_t dst, const struct shm_peer *p,
                         int fd, struct contact *c)
{
    struct stat sb;
    off_t off = block_offset(t, t->peers[t->rank].lidx);
    int err = fstat(fd, &sb) != 0 ? -errno : 0;
    if (!err && (size_t)sb.st_size != t->file_bytes)
        err = -EINVAL, c->what = "size";
    if (!err)
        c->hdr = map_range(fd, t->hdr_bytes, 0, &err), c->what = "header";
    if (!err && !header_matches(t, dst, p, c->hdr))
        err = -EINVAL;
    if (!err)
        c->block = take_block(t, fd, off, &err, &c->what);
    if (err && c->hdr)
        munmap(c->hdr, t->hdr_bytes);
    if (err)
        c->hdr = NULL;
    return err;
}

/*
 * This process's own shortage met at first contact: the call that needed
 * the pair fails with it, the peer stays up, and a later call tries again
 * (a descriptor the peer held for us is kept for it).
 */
static flit_status contact_short(struct fl_tp_ep *t, uint32_t dst, const char *what,
                                 int err)
{
    char what_for[64];
    snprintf(what_for, sizeof what_for, "our rings in rank %u's file", dst);
    if (strcmp(what, "room") == 0)
        return no_room(what_for, first_bytes(t), err);
    fl_error("shm: first contact with rank %u failed here (%s): %s; the call may be "
             "retried",
             dst, what, strerror(-err));
    return os_status(err);
}

/*
 * Sender side: maps dst's header and our block in its file, and announces
 * us. FLIT_ERR_AGAIN when dst's file is gone (it died: its pidfd reports
 * it); this process's shortage (descriptors, memory, /dev/shm) is returned
 * as FLIT_ERR_SYSTEM / FLIT_ERR_NO_MEMORY and blames nobody; what only
 * the peer's file explains marks the peer for check_peers to report down.
 */
static flit_status first_contact(struct fl_tp_ep *t, uint32_t dst)
{
    struct shm_peer *p = &t->peers[dst];
    if (!p->connected || p->setup_failed)
        return FLIT_ERR_AGAIN;
    struct shm_link *k = link_of(t, dst);
    if (!k)
        return contact_short(t, dst, "link", -ENOMEM);
    bool held = p->file_fd >= 0;
    int fd = held ? p->file_fd : open_proc_fd(p, p->file_fdno);
    if (fd == -ENOENT || fd == -ESRCH)
        return FLIT_ERR_AGAIN; /* it died: the pidfd says so soon */
    struct contact c = {.what = "open"};
    int err = fd < 0 ? fd : map_peer_file(t, dst, p, fd, &c);
    if (!held && fd >= 0)
        close(fd);
    if (err && fl_os_shortage(err))
        return contact_short(t, dst, c.what, err);
    if (held)
        close(fd);
    p->file_fd = -1;
    struct shm_hdr *h = c.hdr;
    void *block = c.block;
    struct shm_peer *me = &t->peers[t->rank];
    const char *what = c.what;
    uint32_t slot = 0;
    if (!err) {
        slot = atomic_fetch_add(&h->nannounced, 1);
        if (slot >= t->nlocal)
            err = -EINVAL, what = "announcement queue";
    }
    if (err) {
        fl_error("shm: first contact with rank %u failed (%s): %s%s", dst, what,
                 strerror(-err),
                 err == -EACCES || err == -EPERM
                     ? " (its /proc/PID/fd is out of reach: a security module?)"
                     : "");
        if (h)
            munmap(h, t->hdr_bytes);
        if (block)
            munmap(block, t->block_bytes);
        p->setup_failed = true;
        t->nfailed++;
        return FLIT_ERR_AGAIN;
    }
    k->hdr = h;
    k->tx_block = block;
    for (unsigned l = 0; l < FL_LANES; l++) {
        void *ring = (uint8_t *)block + l * fl_ring_footprint(t->ring_size);
        if (t->sparse)
            fl_ring_tx_attach_sparse(&k->tx[l], ring, t->ring_size);
        else
            fl_ring_tx_attach(&k->tx[l], ring, t->ring_size);
    }
    setup_bulk(dst, p, k);
    /* Release: our rings are attached before the receiver looks at them. */
    atomic_store_explicit(&h->announce[slot], me->lidx + 1, memory_order_release);
    if (!k->rx_ready)
        FL_COUNT(t->counters->pairs, 1);
    k->tx_ready = true;
    atomic_store_explicit(&p->sending, k, memory_order_release);
    t->tx_peers[t->ntx++] = dst;
    return FLIT_OK;
}

/*
 * Receiver side: maps the block of rank r (local index lidx) in our file and
 * polls its rings from now on. Its sender reserved the block's pages before
 * it announced; reserving them again costs nothing then, and keeps a
 * sender that did not from handing us a SIGBUS. 0 or -errno.
 */
static int map_rx(struct fl_tp_ep *t, uint32_t r, uint32_t lidx)
{
    struct shm_link *k = link_of(t, r);
    if (!k)
        return -ENOMEM;
    off_t off = block_offset(t, lidx);
    int err;
    const char *what;
    void *block = take_block(t, t->file_fd, off, &err, &what);
    if (!block)
        return err;
    k->rx_block = block;
    for (unsigned l = 0; l < FL_LANES; l++) {
        void *ring = (uint8_t *)block + l * fl_ring_footprint(t->ring_size);
        if (t->sparse)
            fl_ring_rx_attach_sparse(&k->rx[l], ring, t->ring_size);
        else
            fl_ring_rx_attach(&k->rx[l], ring, t->ring_size);
    }
    if (!k->tx_ready)
        FL_COUNT(t->counters->pairs, 1);
    k->rx_waiting = false;
    k->rx_ready = true;
    for (unsigned l = 0; l < FL_LANES; l++)
        t->rx_rings[t->nrx * FL_LANES + l] = &k->rx[l];
    t->rx_peers[t->nrx++] = r;
    return 0;
}

/* A block we could not map: our own shortage (memory, mappings), never the
   sender's fault. It waits, and check_peers and arm try it again. */
static void rx_wait(struct fl_tp_ep *t, uint32_t r, int err)
{
    fl_error("shm: cannot map rank %u's rings here (%zu bytes): %s; trying again", r,
             t->block_bytes, strerror(-err));
    if (t->peers[r].link)
        t->peers[r].link->rx_waiting = true;
    t->rx_wait[t->nwait++] = r;
}

/* The waiting blocks mapped now: true if one was. */
static bool retry_rx(struct fl_tp_ep *t)
{
    uint32_t kept = 0, n = t->nwait;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = t->rx_wait[i];
        if (!atomic_load(&t->peers[r].dead) && map_rx(t, r, t->peers[r].lidx) != 0)
            t->rx_wait[kept++] = r;
    }
    t->nwait = kept;
    return kept < n;
}

/*
 * Receiver side: takes the announcements published since the last look and
 * maps the announcers' blocks. One that is malformed (a broken or foreign
 * writer) is refused; one not yet written is taken on a later pass.
 */
static void take_announcements(struct fl_tp_ep *t)
{
    uint32_t n = atomic_load_explicit(&t->hdr->nannounced, memory_order_acquire);
    if (n > t->nlocal)
        n = t->nlocal;
    while (t->seen < n) {
        uint32_t v =
            atomic_load_explicit(&t->hdr->announce[t->seen], memory_order_acquire);
        if (v == 0)
            return; /* taken, not yet written */
        t->seen++;
        uint32_t lidx = v - 1;
        uint32_t r = lidx < t->nlocal ? t->by_lidx[lidx] : t->rank;
        struct shm_peer *p = &t->peers[r];
        if (r == t->rank || (p->link && (p->link->rx_ready || p->link->rx_waiting))) {
            FL_COUNT(t->counters->refused_packets, 1);
            continue;
        }
        int err = map_rx(t, r, lidx);
        if (err)
            rx_wait(t, r, err);
    }
}

/* Whether a first contact waits to be taken (one relaxed load). */
static inline bool announced(const struct fl_tp_ep *t)
{
    return atomic_load_explicit(&t->hdr->nannounced, memory_order_relaxed) != t->seen;
}

/* ---- sending ---- */

static void wake(struct fl_tp_ep *t, struct shm_link *k)
{
    fl_wake_send(t->wake_sock, &k->wake);
    FL_COUNT(t->counters->wakeups_sent, 1);
}

/*
 * A packet larger than the part of our ring in dst's file that has its
 * pages, with none to give (/dev/shm or memory full): this send fails, as
 * at first contact; smaller packets still go (the ring wraps early).
 */
static __attribute__((noinline)) flit_status ring_short(uint32_t dst,
                                                        struct fl_ring_tx *tx, size_t len)
{
    char what_for[80];
    tx->short_ = false;
    snprintf(what_for, sizeof what_for,
             "a packet to rank %u larger than the %llu bytes its ring has so far", dst,
             (unsigned long long)tx->backed);
    return no_room(what_for, fl_ring_record(len), -ENOSPC);
}

static __attribute__((noinline)) void *reserve_first(struct fl_tp_ep *t, uint32_t dst,
                                                     unsigned lane, size_t len,
                                                     flit_status *st)
{
    *st = first_contact(t, dst);
    if (*st != FLIT_OK)
        return NULL;
    struct fl_ring_tx *tx = &t->peers[dst].link->tx[lane];
    void *pkt = fl_ring_reserve(tx, len);
    *st = tx->short_ ? ring_short(dst, tx, len) : FLIT_ERR_AGAIN;
    return pkt;
}

static void *shm_reserve(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                         flit_status *st)
{
    struct shm_peer *p = &t->peers[dst];
    if (__builtin_expect(atomic_load_explicit(&p->dead, memory_order_relaxed), 0)) {
        *st = FLIT_ERR_PEER_DOWN;
        return NULL;
    }
    struct shm_link *k = p->link;
    if (__builtin_expect(!k || !k->tx_ready, 0))
        return reserve_first(t, dst, lane, len, st);
    void *pkt = fl_ring_reserve(&k->tx[lane], len);
    *st = FLIT_ERR_AGAIN;
    if (__builtin_expect(k->tx[lane].short_, 0))
        *st = ring_short(dst, &k->tx[lane], len);
    return pkt;
}

static void shm_commit(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                       size_t len, unsigned flags)
{
    struct shm_link *k = t->peers[dst].link;
    (void)flags; /* nothing to pack: the ring is the wire */
    fl_ring_commit(&k->tx[lane], pkt, len);
    /* Either we see the flag, or the receiver sees our record before it
       sleeps (pairs with the slow fence in shm_arm). */
    fl_fence_fast();
    if (__builtin_expect(atomic_load_explicit(&k->hdr->sleeping, memory_order_relaxed),
                         0) &&
        atomic_exchange(&k->hdr->sleeping, 0))
        wake(t, k);
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
    if ((!p->link || !p->link->tx_ready) && first_contact(t, dst) != FLIT_OK)
        return FLIT_ERR_NOT_SUPPORTED; /* in packets: they wait for the set-up */
    struct shm_link *k = p->link;
    /* A system call and the pinning of the destination's pages: below
       FLIT_SHM_CMA_MIN_KB two copies through the ring cost less. */
    if (k->bulk == BULK_CMA && len < (uint64_t)fl_shm_cfg.cma_min)
        return FLIT_ERR_AGAIN;
    /* The receiver's rule, read from its header: only its tag may write. */
    if (atomic_load_explicit(&k->hdr->tag, memory_order_relaxed) != tag)
        return FLIT_ERR_BAD_TAG;
    if (k->bulk == BULK_MAP) {
        memcpy(k->seg + offset, src, len);
        return FLIT_OK;
    }
    if (k->bulk != BULK_CMA)
        return FLIT_ERR_NOT_SUPPORTED;
    int err = fl_shm_cma_copy(p->pid, true, p->seg_addr + offset, (void *)src, len);
    if (err == -ESRCH)
        return FLIT_ERR_PEER_DOWN;
    if (err) {
        fl_info("shm: cross-memory attach to rank %u failed (%s); long "
                "payloads go in pieces",
                dst, strerror(-err));
        k->bulk = BULK_NONE;
        return FLIT_ERR_NOT_SUPPORTED;
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
    struct shm_link *k = t->peers[r].link;
    if (!k || !k->rx_ready)
        return 0; /* it never sent us anything */
    struct fl_ring_rx *rx = &k->rx[lane];
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
        wake(t, k); /* it waits for the room we just made */
    return n;
}

/* Whether a ring of lane_mask's lanes holds a packet: the look that most
   passes of a polling loop make, and find nothing. */
static inline bool any_pending(const struct fl_tp_ep *t, unsigned lane_mask)
{
    uint32_t n = t->nrx * FL_LANES;
    if (lane_mask == FL_LANES_ALL) { /* most polls */
        for (uint32_t i = 0; i < n; i++)
            if (fl_ring_pending(t->rx_rings[i]))
                return true;
        return false;
    }
    for (uint32_t i = 0; i < n; i++)
        if ((lane_mask & FL_LANE_MASK(i % FL_LANES)) && fl_ring_pending(t->rx_rings[i]))
            return true;
    return false;
}

/* The rings with packets, each up to POLL_BATCH at a time. Out of line, so
   that a pass finding nothing pays for no frame of it (shm_poll). */
static __attribute__((noinline)) int drain_all(struct fl_tp_ep *t, unsigned lane_mask,
                                               fl_tp_recv_fn cb, void *ctx, int budget)
{
    int n = 0;
    uint32_t nrx = t->nrx; /* a handler's nested poll may add some */
    uint32_t k = t->rr < nrx ? t->rr : 0;
    /* Rotate the starting peer so that no peer can starve the others. */
    t->rr = k + 1 < nrx ? k + 1 : 0;
    for (uint32_t i = 0; i < nrx && n < budget; i++) {
        uint32_t r = t->rx_peers[k];
        k = k + 1 < nrx ? k + 1 : 0;
        struct shm_link *lk = t->peers[r].link;
        for (unsigned l = FL_LANES; l-- > 0;) { /* replies first */
            if ((lane_mask & FL_LANE_MASK(l)) && fl_ring_pending(&lk->rx[l])) {
                int max = budget - n < POLL_BATCH ? budget - n : POLL_BATCH;
                n += drain(t, r, l, cb, ctx, max);
            }
        }
    }
    return n;
}

static int shm_poll(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb, void *ctx,
                    int budget)
{
    if (__builtin_expect(announced(t), 0))
        take_announcements(t);
    if (!any_pending(t, lane_mask))
        return 0;
    return drain_all(t, lane_mask, cb, ctx, budget);
}

/* ---- sleeping ---- */

static bool shm_arm(struct fl_tp_ep *t, unsigned lane_mask)
{
    /* A wake-up meant for the last sleep (its sender saw the flag just
       before we cleared it) would wake this one with nothing to do. */
    fl_wake_drain(t->wake_sock);
    atomic_store_explicit(&t->hdr->sleeping, 1, memory_order_relaxed);
    /* The flag is visible before we look at the rings and at the
       announcements, pairing with the sender's fast fence in shm_commit: a
       first contact announces before its first record. */
    fl_fence_slow();
    bool work = announced(t) || (t->nwait && retry_rx(t));
    for (uint32_t i = 0; i < t->nrx && !work; i++) {
        struct shm_link *k = t->peers[t->rx_peers[i]].link;
        for (unsigned l = 0; l < FL_LANES; l++)
            work |= (lane_mask & FL_LANE_MASK(l)) && !k->rx[l].busy &&
                    fl_ring_pending(&k->rx[l]);
    }
    for (uint32_t i = 0; i < t->ntx; i++) {
        struct shm_link *k = t->peers[t->tx_peers[i]].link;
        for (unsigned l = 0; l < FL_LANES; l++) {
            /* Room asked for that the consumer made (taking our waiter flag)
               before the drain above: its wake-up may have been drained. */
            if (k->room_wanted[l] && !fl_ring_room_asked(&k->tx[l])) {
                k->room_wanted[l] = false;
                work = true;
            }
        }
    }
    if (work)
        atomic_store(&t->hdr->sleeping, 0);
    return work;
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
    struct shm_link *k = t->peers[dst].link;
    if (!k || !k->tx_ready)
        return; /* not set up: no ring to wait on (its death wakes us) */
    k->room_wanted[lane] = true;
    fl_ring_want_room(&k->tx[lane], 0);
}

/* ---- peers dying ---- */

/* Peer r's process is gone: what it finished writing before it died is
   valid, so it is delivered, then the peer is down. */
static void peer_died(struct fl_tp_ep *t, uint32_t r, fl_tp_recv_fn cb, void *ctx)
{
    while (drain(t, r, FL_LANE_REP, cb, ctx, 1 << 20) > 0 ||
           drain(t, r, FL_LANE_REQ, cb, ctx, 1 << 20) > 0)
        ;
    atomic_store(&t->peers[r].dead, true);
    t->peer_down(t->up_ctx, r, FLIT_ERR_PEER_DOWN);
}

/* The peers watched through /proc (see watch), at most every
   FLIT_PEER_CHECK_MS: a wake-up asks for a check each time. */
static void scan_proc(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx)
{
    uint64_t now = fl_now_ns();
    if (now < t->next_proc_scan_ns)
        return;
    t->next_proc_scan_ns = now + (uint64_t)fl_cfg.peer_check_ms * 1000000u;
    bool announced = false;
    for (uint32_t lidx = 0; t->npolled && lidx < t->nlocal; lidx++) {
        uint32_t r = t->by_lidx[lidx];
        struct shm_peer *p = &t->peers[r];
        uint64_t start;
        if (!p->polled || atomic_load(&p->dead) ||
            (fl_proc_start(p->pid, &start) == 0 && start == p->start))
            continue;
        p->polled = false;
        t->npolled--;
        if (!announced)
            take_announcements(t); /* a dead sender's rings are read too */
        announced = true;
        peer_died(t, r, cb, ctx);
    }
}

static void shm_check_peers(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx)
{
    struct epoll_event ev[16];
    int n = epoll_wait(t->pid_epfd, ev, 16, 0);
    if (n > 0)
        take_announcements(t); /* a dead sender's rings are read too */
    for (int i = 0; i < n; i++) {
        uint32_t r = ev[i].data.u32;
        struct shm_peer *p = &t->peers[r];
        epoll_ctl(t->pid_epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
        close(p->pidfd);
        p->pidfd = -1;
        peer_died(t, r, cb, ctx);
    }
    if (t->npolled)
        scan_proc(t, cb, ctx);
    if (t->nwait)
        retry_rx(t);
    for (uint32_t lidx = 0; t->nfailed && lidx < t->nlocal; lidx++) {
        uint32_t r = t->by_lidx[lidx];
        struct shm_peer *p = &t->peers[r];
        if (!p->setup_failed || atomic_load(&p->dead))
            continue;
        t->nfailed--;
        atomic_store(&p->dead, true);
        t->peer_down(t->up_ctx, r, FLIT_ERR_SYSTEM);
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
    struct shm_link *k = t->peers[dst].link;
    if (!k || !k->tx_ready)
        return; /* we never sent it anything */
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct walk_ctx w = {cb, ctx, dst, l};
        fl_ring_walk_unconsumed(&k->tx[l], walk_one, &w);
    }
}

static bool shm_settled(struct fl_tp_ep *t)
{
    (void)t;
    return true; /* shared memory is never in flight */
}

/* We announced ourselves to peer, or it to us (taken now if still pending:
   its announcement precedes its first record). */
static bool shm_in_contact(struct fl_tp_ep *t, uint32_t peer)
{
    if (announced(t))
        take_announcements(t);
    const struct shm_link *k = t->peers[peer].link;
    return k && (k->tx_ready || k->rx_ready || k->rx_waiting);
}

static void shm_peer_address(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    snprintf(buf, len, "pid %d", (int)t->peers[peer].pid);
}

uint32_t fl_shm_peer_pid(struct fl_tp_ep *t, uint32_t peer)
{
    const struct shm_peer *p = &t->peers[peer];
    return p->connected && !atomic_load_explicit(&p->dead, memory_order_relaxed)
               ? (uint32_t)p->pid
               : 0;
}

void fl_shm_file_name(struct fl_tp_ep *t, uint32_t rank, const char *suffix, char *buf,
                      size_t len)
{
    fl_shm_name(buf, len, t->job_id, rank == FL_SHM_SELF ? t->rank : rank, t->ep_index,
                suffix);
}

static void shm_dump_peer(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    static const char *const bulk[] = {"copy", "map", "cma"};
    struct shm_peer *p = &t->peers[peer];
    /* Atomics only: another thread may be setting the pair up. */
    struct shm_link *k = atomic_load_explicit(&p->sending, memory_order_acquire);
    if (!k) {
        snprintf(buf, len, "pid %d, nothing sent to it yet", (int)p->pid);
        return;
    }
    uint64_t fr = fl_ring_tx_inflight(&k->tx[FL_LANE_REQ]);
    uint64_t fp = fl_ring_tx_inflight(&k->tx[FL_LANE_REP]);
    snprintf(buf, len,
             "pid %d, long payloads %s%s; in flight req %llu B "
             "(credits %llu B), rep %llu B (credits %llu B)",
             (int)p->pid, p->seg_size ? "by " : "",
             p->seg_size ? bulk[k->bulk] : "none (no segment)", (unsigned long long)fr,
             (unsigned long long)(t->ring_size - fr), (unsigned long long)fp,
             (unsigned long long)(t->ring_size - fp));
}

static void shm_close(struct fl_tp_ep *t)
{
    for (uint32_t r = 0; t->peers && r < t->size; r++) {
        struct shm_peer *p = &t->peers[r];
        struct shm_link *k = p->link;
        if (k && k->hdr)
            munmap(k->hdr, t->hdr_bytes);
        if (k && k->tx_block)
            munmap(k->tx_block, t->block_bytes);
        if (k && k->rx_block)
            munmap(k->rx_block, t->block_bytes);
        if (k && k->seg)
            munmap(k->seg, p->seg_size);
        free(k);
        if (p->pidfd >= 0)
            close(p->pidfd);
        if (p->file_fd >= 0)
            close(p->file_fd);
        if (p->seg_fd >= 0)
            close(p->seg_fd);
    }
    if (t->hdr)
        munmap(t->hdr, t->hdr_bytes);
    if (t->file_fd >= 0) {
        close(t->file_fd);
        shm_connected(t);
    }
    if (t->wake_sock >= 0)
        close(t->wake_sock);
    if (t->pid_epfd >= 0)
        close(t->pid_epfd);
    if (t->epfd >= 0)
        close(t->epfd);
    free(t->peers);
    free(t->by_lidx);
    free(t->rx_peers);
    free(t->rx_rings);
    free(t->tx_peers);
    free(t->rx_wait);
    free(t);
}

static const struct fl_setting *const shm_settings[] = {fl_shm_settings, NULL};

static const struct fl_counter_desc shm_counters[] = {
    FL_TP_COUNTER(pairs, "peers_in_contact",
                  "peers on this host exchanged a packet with"),
    FL_TP_COUNTER(wakeups_sent, "wakeups_sent",
                  "system calls made to wake a sleeping peer"),
    FL_TP_COUNTER(refused_packets, "refused_packets", "malformed packets dropped"),
    {NULL, NULL, 0, 0, NULL},
};

const struct fl_transport fl_tp_shm = {
    .name = "shm",
    .caps = FL_TP_RELIABLE | FL_TP_PUT,
    .reach = FL_REACH_HOST,
    .by_default = true,
    .settings = shm_settings,
    .counters = shm_counters,
    .counters_size = sizeof(struct fl_tp_counters),
    .prepare = shm_prepare,
    .open = shm_open_ep,
    .address = shm_address,
    .reachable = shm_reachable,
    .connect = shm_connect,
    .rendezvous = shm_rendezvous,
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
    .in_contact = shm_in_contact,
    .peer_address = shm_peer_address,
    .onesided = &fl_shm_onesided,
    .dump_peer = shm_dump_peer,
    .close = shm_close,
};
