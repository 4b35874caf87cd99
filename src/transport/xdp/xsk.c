/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AF_XDP socket, its UMEM and its steering program (xsk.h).
 */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "transport/xdp/steer.h"
#include "transport/xdp/xsk.h"
#include "util/log.h"

#define RX_FRAMES (FL_XSK_FRAMES / 2)
#define TX_FRAMES (FL_XSK_FRAMES - RX_FRAMES)
#define KICKS_MAX 64 /* sendto calls one kick makes at most (32 frames each) */

/* Queues other than 0 only receive, on a smaller UMEM (the kernel pins
   every page of a UMEM: 16 MiB a queue would be 1 GiB on a 64-queue NIC). */
#define OTHER_FRAMES 256u

/* One queue's socket and the UMEM it owns: rx frames, then tx frames. */
struct queue {
    uint8_t *area;
    unsigned rx_frames, tx_frames;
    struct xsk_umem *umem;
    struct xsk_socket *sock;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp, rx;
    int fd;
    uint64_t free[TX_FRAMES]; /* frames ours to send from */
    unsigned nfree;
    unsigned queued; /* reserved and written in the tx ring, not yet submitted */
};

struct fl_xsk {
    struct bpf_object *obj;
    struct bpf_link *link;
    bool zerocopy, native;
    unsigned nq;
    struct queue *q[FL_XSK_QUEUES]; /* q[0] also sends */
};

static int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level != LIBBPF_DEBUG && fl_log_enabled(FL_LOG_DEBUG)) {
        char line[256];
        vsnprintf(line, sizeof line, fmt, ap);
        fl_debug("xdp: libbpf: %s", line);
    }
    return 0;
}

static void say_why(char *why, size_t len, const char *what, const char *ifname, int err)
{
    if (err == EPERM || err == EACCES)
        snprintf(why, len,
                 "%s on %s not permitted (needs root, or CAP_BPF, CAP_NET_ADMIN "
                 "and CAP_NET_RAW)",
                 what, ifname);
    else if (err == EBUSY || err == EEXIST)
        snprintf(why, len, "%s: %s is busy (another XDP program or AF_XDP socket)", what,
                 ifname);
    else if (err == EOPNOTSUPP || err == ENOTSUP)
        snprintf(why, len, "%s: the driver of %s has no XDP", what, ifname);
    else
        snprintf(why, len, "%s on %s: %s", what, ifname, strerror(err));
}

/* The program, loaded (not attached), with port in its map. */
static int load_program(struct fl_xsk *x, uint16_t port)
{
    libbpf_set_print(quiet_libbpf);
    x->obj = bpf_object__open_mem(fl_xdp_steer_obj, fl_xdp_steer_obj_len, NULL);
    if (!x->obj) {
        x->obj = NULL;
        return errno ? errno : EINVAL;
    }
    if (bpf_object__load(x->obj) != 0)
        return errno ? errno : EINVAL;
    uint32_t zero = 0, val = port;
    int map = bpf_object__find_map_fd_by_name(x->obj, "flit_port");
    if (map < 0 || bpf_map_update_elem(map, &zero, &val, BPF_ANY) != 0)
        return errno ? errno : EINVAL;
    return 0;
}

static size_t umem_bytes(const struct queue *q)
{
    return (size_t)(q->rx_frames + q->tx_frames) * FL_XSK_FRAME;
}

/* Opens queue qi's socket on its own UMEM with mode's binding. */
static int bind_socket(struct fl_xsk *x, struct queue *q, const char *ifname, unsigned qi,
                       uint16_t mode)
{
    struct xsk_umem_config uc = {.fill_size = q->rx_frames,
                                 .comp_size = q->tx_frames ? q->tx_frames : 32,
                                 .frame_size = FL_XSK_FRAME};
    int err = xsk_umem__create(&q->umem, q->area, umem_bytes(q), &q->fill, &q->comp, &uc);
    if (err) {
        q->umem = NULL;
        return -err;
    }
    struct xsk_socket_config sc = {.rx_size = q->rx_frames,
                                   .tx_size = q->tx_frames,
                                   .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
                                   .bind_flags = (uint16_t)(mode | XDP_USE_NEED_WAKEUP)};
    err = xsk_socket__create(&q->sock, ifname, qi, q->umem, &q->rx,
                             q->tx_frames ? &q->tx : NULL, &sc);
    if (err) {
        q->sock = NULL;
        xsk_umem__delete(q->umem);
        q->umem = NULL;
        return -err;
    }
    x->zerocopy = mode == XDP_ZEROCOPY;
    q->fd = xsk_socket__fd(q->sock);
    return 0;
}

/* Zero-copy where the driver offers it, else copy mode (the first queue
   decides for all). A queue whose last socket was closed a moment ago
   answers EBUSY until the kernel's deferred teardown of that socket has
   run, so EBUSY is asked again, up to half a second, before the queue
   counts as held by someone else. */
static int bind_any(struct fl_xsk *x, struct queue *q, const char *ifname, unsigned qi)
{
    int err = EBUSY;
    for (unsigned i = 0; i < 100 && err == EBUSY; i++) {
        if (i > 0)
            nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
        err =
            qi == 0 || x->zerocopy ? bind_socket(x, q, ifname, qi, XDP_ZEROCOPY) : EINVAL;
        if (err)
            err = bind_socket(x, q, ifname, qi, XDP_COPY);
    }
    return err;
}

/* Every receive frame into the fill ring, every send frame on the stack. */
static void lend_frames(struct queue *q)
{
    uint32_t idx = 0;
    xsk_ring_prod__reserve(&q->fill, q->rx_frames, &idx);
    for (unsigned i = 0; i < q->rx_frames; i++)
        *xsk_ring_prod__fill_addr(&q->fill, idx + i) = (uint64_t)i * FL_XSK_FRAME;
    xsk_ring_prod__submit(&q->fill, q->rx_frames);
    for (unsigned i = 0; i < q->tx_frames; i++)
        q->free[q->nfree++] = (uint64_t)(q->rx_frames + i) * FL_XSK_FRAME;
}

/* Queue qi's socket, registered with the program for that queue. */
static int open_queue(struct fl_xsk *x, const char *ifname, unsigned qi)
{
    struct queue *q = calloc(1, sizeof *q);
    if (!q)
        return ENOMEM;
    x->q[qi] = q;
    q->rx_frames = qi == 0 ? RX_FRAMES : OTHER_FRAMES;
    q->tx_frames = qi == 0 ? TX_FRAMES : 0;
    q->area = mmap(NULL, umem_bytes(q), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q->area == MAP_FAILED) {
        q->area = NULL;
        return ENOMEM;
    }
    int err = bind_any(x, q, ifname, qi);
    if (err)
        return err;
    int map = bpf_object__find_map_fd_by_name(x->obj, "flit_xsks");
    if (map < 0 || bpf_map_update_elem(map, &qi, &q->fd, BPF_ANY) != 0)
        return errno ? errno : EINVAL;
    lend_frames(q);
    return 0;
}

/* The program on the interface, once every queue has its socket (native
   XDP where the driver has it). */
static int attach(struct fl_xsk *x, int ifindex)
{
    struct bpf_program *prog = bpf_object__find_program_by_name(x->obj, "flit_steer");
    if (!prog)
        return EINVAL;
    x->link = bpf_program__attach_xdp(prog, ifindex);
    if (!x->link)
        return errno ? errno : EINVAL;
    struct bpf_xdp_query_opts q = {.sz = sizeof q};
    x->native = bpf_xdp_query(ifindex, 0, &q) == 0 && q.attach_mode == XDP_ATTACHED_DRV;
    return 0;
}

/* The interface's receive queues (rx-0, rx-1, ... in sysfs), at most
   FL_XSK_QUEUES; 1 when sysfs does not say. */
static unsigned rx_queues(const char *ifname)
{
    char path[96];
    unsigned n = 0;
    while (n < FL_XSK_QUEUES) {
        snprintf(path, sizeof path, "/sys/class/net/%s/queues/rx-%u", ifname, n);
        if (access(path, F_OK) != 0)
            break;
        n++;
    }
    return n ? n : 1;
}

flit_status fl_xsk_open(const char *ifname, uint16_t port, struct fl_xsk **out, char *why,
                        size_t why_len)
{
    int ifindex = (int)if_nametoindex(ifname);
    struct fl_xsk *x = calloc(1, sizeof *x);
    if (!x)
        return FLIT_ERR_NO_MEMORY;
    unsigned want = rx_queues(ifname);
    int err = load_program(x, port);
    if (err) {
        say_why(why, why_len, "loading the XDP program", ifname, err);
    } else {
        for (x->nq = 0; x->nq < want && !err; x->nq++)
            err = open_queue(x, ifname, x->nq);
        if (err)
            say_why(why, why_len, "binding an AF_XDP socket to each queue", ifname, err);
        else if ((err = attach(x, ifindex)) != 0)
            say_why(why, why_len, "attaching the XDP program", ifname, err);
    }
    if (err) {
        fl_xsk_close(x);
        return err == ENOMEM ? FLIT_ERR_NO_MEMORY : FLIT_ERR_NOT_SUPPORTED;
    }
    *out = x;
    return FLIT_OK;
}

static void close_queue(struct queue *q)
{
    if (q->sock)
        xsk_socket__delete(q->sock);
    if (q->umem)
        xsk_umem__delete(q->umem);
    if (q->area)
        munmap(q->area, umem_bytes(q));
    free(q);
}

void fl_xsk_close(struct fl_xsk *x)
{
    if (x->link)
        bpf_link__destroy(x->link);
    for (unsigned i = 0; i < FL_XSK_QUEUES; i++)
        if (x->q[i])
            close_queue(x->q[i]);
    if (x->obj)
        bpf_object__close(x->obj);
    free(x);
}

unsigned fl_xsk_queues(const struct fl_xsk *x)
{
    return x->nq;
}

int fl_xsk_fd(const struct fl_xsk *x, unsigned qi)
{
    return x->q[qi]->fd;
}

const char *fl_xsk_mode(const struct fl_xsk *x)
{
    if (x->zerocopy)
        return x->native ? "zero-copy/native" : "zero-copy/generic";
    return x->native ? "copy/native" : "copy/generic";
}

/* ---- sending, by queue 0's socket ---- */

/* Frames the kernel finished sending, back on the stack. */
static void reap(struct queue *q)
{
    uint32_t idx = 0;
    unsigned n = xsk_ring_cons__peek(&q->comp, TX_FRAMES, &idx);
    for (unsigned i = 0; i < n; i++)
        q->free[q->nfree++] = *xsk_ring_cons__comp_addr(&q->comp, idx + i);
    xsk_ring_cons__release(&q->comp, n);
}

uint8_t *fl_xsk_tx_frame(struct fl_xsk *x)
{
    struct queue *q = x->q[0];
    if (!q->nfree)
        reap(q);
    if (!q->nfree || xsk_prod_nb_free(&q->tx, 1) < 1)
        return NULL;
    return q->area + q->free[q->nfree - 1];
}

void fl_xsk_tx_queue(struct fl_xsk *x, size_t len)
{
    struct queue *q = x->q[0];
    uint32_t idx = 0;
    xsk_ring_prod__reserve(&q->tx, 1, &idx); /* room checked by fl_xsk_tx_frame */
    struct xdp_desc *d = xsk_ring_prod__tx_desc(&q->tx, idx);
    d->addr = q->free[--q->nfree];
    d->len = (uint32_t)len;
    q->queued++;
}

/* In copy mode the kernel sends at most 32 frames a call and answers
   EAGAIN when more wait: call while it makes progress, up to KICKS_MAX
   times (what stays is sent at the next kick: every send and receive
   kicks). */
void fl_xsk_tx_kick(struct fl_xsk *x)
{
    struct queue *q = x->q[0];
    if (q->queued) {
        xsk_ring_prod__submit(&q->tx, q->queued);
        q->queued = 0;
    }
    for (int k = 0; k < KICKS_MAX && xsk_ring_prod__needs_wakeup(&q->tx); k++) {
        /* the kernel's consumer index: acquire, so that its reads of our
           descriptors are done before we count them out */
        uint32_t before = __atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE);
        if (before == *q->tx.producer)
            break;
        if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
            errno != EINTR)
            break; /* EBUSY, ENOBUFS, ENETDOWN: later */
        if (__atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE) == before)
            break; /* no progress: the kernel's queue is full */
    }
    reap(q);
}

/* ---- receiving, on every queue ---- */

unsigned fl_xsk_rx_peek(struct fl_xsk *x, unsigned qi, unsigned max, uint32_t *idx)
{
    return xsk_ring_cons__peek(&x->q[qi]->rx, max, idx);
}

const uint8_t *fl_xsk_rx_frame(struct fl_xsk *x, unsigned qi, uint32_t idx, size_t *len)
{
    struct queue *q = x->q[qi];
    const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx);
    uint64_t addr = xsk_umem__add_offset_to_addr(d->addr);
    /* Ours to trust only as far as the UMEM reaches. */
    if (addr >= (uint64_t)q->rx_frames * FL_XSK_FRAME || d->len > FL_XSK_FRAME ||
        addr % FL_XSK_FRAME + d->len > FL_XSK_FRAME) {
        *len = 0;
        return q->area;
    }
    *len = d->len;
    return q->area + addr;
}

void fl_xsk_rx_release(struct fl_xsk *x, unsigned qi, uint32_t idx, unsigned n)
{
    struct queue *q = x->q[qi];
    uint32_t fidx = 0;
    /* The fill ring holds every receive frame: room for these is certain. */
    xsk_ring_prod__reserve(&q->fill, n, &fidx);
    for (unsigned i = 0; i < n; i++) {
        uint64_t addr = xsk_ring_cons__rx_desc(&q->rx, idx + i)->addr;
        *xsk_ring_prod__fill_addr(&q->fill, fidx + i) =
            xsk_umem__extract_addr(addr) & ~(uint64_t)(FL_XSK_FRAME - 1);
    }
    xsk_ring_cons__release(&q->rx, n);
    xsk_ring_prod__submit(&q->fill, n);
    if (xsk_ring_prod__needs_wakeup(&q->fill))
        recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}
