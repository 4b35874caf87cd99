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

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "transport/xdp/steer.h"
#include "transport/xdp/xsk.h"
#include "util/log.h"

#define RX_FRAMES (FL_XSK_FRAMES / 2)
#define TX_FRAMES (FL_XSK_FRAMES - RX_FRAMES)
#define KICKS_MAX 64 /* sendto calls one kick makes at most (32 frames each) */

struct fl_xsk {
    uint8_t *area;
    struct xsk_umem *umem;
    struct xsk_socket *sock;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp, rx;
    struct bpf_object *obj;
    struct bpf_link *link;
    int fd;
    bool zerocopy, native;
    uint64_t free[TX_FRAMES]; /* frames ours to send from */
    unsigned nfree;
    unsigned queued; /* reserved and written in the tx ring, not yet submitted */
};

/* libbpf's messages go to the debug log: a refusal is said once, by us. */
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

/* UMEM and socket in one mode (bind flags); undone on failure. */
static int bind_socket(struct fl_xsk *x, const char *ifname, uint16_t mode)
{
    struct xsk_umem_config uc = {
        .fill_size = RX_FRAMES, .comp_size = TX_FRAMES, .frame_size = FL_XSK_FRAME};
    int err = xsk_umem__create(&x->umem, x->area, (uint64_t)FL_XSK_FRAMES * FL_XSK_FRAME,
                               &x->fill, &x->comp, &uc);
    if (err) {
        x->umem = NULL;
        return -err;
    }
    struct xsk_socket_config sc = {.rx_size = RX_FRAMES,
                                   .tx_size = TX_FRAMES,
                                   .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
                                   .bind_flags = (uint16_t)(mode | XDP_USE_NEED_WAKEUP)};
    err = xsk_socket__create(&x->sock, ifname, 0, x->umem, &x->rx, &x->tx, &sc);
    if (err) {
        x->sock = NULL;
        xsk_umem__delete(x->umem);
        x->umem = NULL;
        return -err;
    }
    x->zerocopy = mode == XDP_ZEROCOPY;
    x->fd = xsk_socket__fd(x->sock);
    return 0;
}

/* Zero-copy where the driver offers it, else copy mode. A queue whose
   last socket was closed a moment ago answers EBUSY until the kernel's
   deferred teardown of that socket has run, so EBUSY is asked again, up
   to half a second, before the queue counts as held by someone else. */
static int bind_any(struct fl_xsk *x, const char *ifname)
{
    int err = EBUSY;
    for (unsigned i = 0; i < 100 && err == EBUSY; i++) {
        if (i > 0)
            nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
        err = bind_socket(x, ifname, XDP_ZEROCOPY);
        if (err)
            err = bind_socket(x, ifname, XDP_COPY);
    }
    return err;
}

/* Every receive frame into the fill ring, every send frame on the stack. */
static void lend_frames(struct fl_xsk *x)
{
    uint32_t idx = 0;
    xsk_ring_prod__reserve(&x->fill, RX_FRAMES, &idx);
    for (unsigned i = 0; i < RX_FRAMES; i++)
        *xsk_ring_prod__fill_addr(&x->fill, idx + i) = (uint64_t)i * FL_XSK_FRAME;
    xsk_ring_prod__submit(&x->fill, RX_FRAMES);
    for (unsigned i = 0; i < TX_FRAMES; i++)
        x->free[x->nfree++] = (uint64_t)(RX_FRAMES + i) * FL_XSK_FRAME;
}

/* The socket in the program's map for queue 0, then the program on the
   interface (native XDP where the driver has it). */
static int attach(struct fl_xsk *x, int ifindex)
{
    uint32_t queue = 0;
    int map = bpf_object__find_map_fd_by_name(x->obj, "flit_xsks");
    if (map < 0 || bpf_map_update_elem(map, &queue, &x->fd, BPF_ANY) != 0)
        return errno ? errno : EINVAL;
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

flit_status fl_xsk_open(const char *ifname, uint16_t port, struct fl_xsk **out, char *why,
                        size_t why_len)
{
    int ifindex = (int)if_nametoindex(ifname);
    struct fl_xsk *x = calloc(1, sizeof *x);
    if (!x)
        return FLIT_ERR_NO_MEMORY;
    x->area = mmap(NULL, (size_t)FL_XSK_FRAMES * FL_XSK_FRAME, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (x->area == MAP_FAILED) {
        free(x);
        return FLIT_ERR_NO_MEMORY;
    }
    int err = load_program(x, port);
    if (err) {
        say_why(why, why_len, "loading the XDP program", ifname, err);
    } else if ((err = bind_any(x, ifname)) != 0) {
        say_why(why, why_len, "binding an AF_XDP socket to queue 0", ifname, err);
    } else if ((err = attach(x, ifindex)) != 0) {
        say_why(why, why_len, "attaching the XDP program", ifname, err);
    }
    if (err) {
        fl_xsk_close(x);
        return FLIT_ERR_NOT_SUPPORTED;
    }
    lend_frames(x);
    *out = x;
    return FLIT_OK;
}

void fl_xsk_close(struct fl_xsk *x)
{
    if (x->link)
        bpf_link__destroy(x->link);
    if (x->sock)
        xsk_socket__delete(x->sock);
    if (x->umem)
        xsk_umem__delete(x->umem);
    if (x->obj)
        bpf_object__close(x->obj);
    munmap(x->area, (size_t)FL_XSK_FRAMES * FL_XSK_FRAME);
    free(x);
}

int fl_xsk_fd(const struct fl_xsk *x)
{
    return x->fd;
}

const char *fl_xsk_mode(const struct fl_xsk *x)
{
    if (x->zerocopy)
        return x->native ? "zero-copy/native" : "zero-copy/generic";
    return x->native ? "copy/native" : "copy/generic";
}

/* Frames the kernel has sent back to the stack. */
static void reap(struct fl_xsk *x)
{
    uint32_t idx = 0;
    unsigned n = xsk_ring_cons__peek(&x->comp, TX_FRAMES, &idx);
    for (unsigned i = 0; i < n; i++)
        x->free[x->nfree++] = *xsk_ring_cons__comp_addr(&x->comp, idx + i);
    xsk_ring_cons__release(&x->comp, n);
}

uint8_t *fl_xsk_tx_frame(struct fl_xsk *x)
{
    if (!x->nfree)
        reap(x);
    if (!x->nfree || xsk_prod_nb_free(&x->tx, 1) < 1)
        return NULL;
    return x->area + x->free[x->nfree - 1];
}

void fl_xsk_tx_queue(struct fl_xsk *x, size_t len)
{
    uint32_t idx = 0;
    xsk_ring_prod__reserve(&x->tx, 1, &idx); /* room checked by fl_xsk_tx_frame */
    struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx);
    d->addr = x->free[--x->nfree];
    d->len = (uint32_t)len;
    x->queued++;
}

/* In copy mode the kernel sends at most 32 frames a call and answers
   EAGAIN when more wait: call while it makes progress, up to KICKS_MAX
   times (what stays is sent at the next kick: every send and receive
   kicks). */
void fl_xsk_tx_kick(struct fl_xsk *x)
{
    if (x->queued) {
        xsk_ring_prod__submit(&x->tx, x->queued);
        x->queued = 0;
    }
    for (int k = 0; k < KICKS_MAX && xsk_ring_prod__needs_wakeup(&x->tx); k++) {
        /* the kernel's consumer index: acquire, so that its reads of our
           descriptors are done before we count them out */
        uint32_t before = __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE);
        if (before == *x->tx.producer)
            break;
        if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
            errno != EINTR)
            break; /* EBUSY, ENOBUFS, ENETDOWN: later */
        if (__atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE) == before)
            break; /* no progress: the kernel's queue is full */
    }
    reap(x);
}

unsigned fl_xsk_rx_peek(struct fl_xsk *x, unsigned max, uint32_t *idx)
{
    return xsk_ring_cons__peek(&x->rx, max, idx);
}

const uint8_t *fl_xsk_rx_frame(struct fl_xsk *x, uint32_t idx, size_t *len)
{
    const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx);
    uint64_t addr = xsk_umem__add_offset_to_addr(d->addr);
    /* Ours to trust only as far as the UMEM reaches. */
    if (addr >= (uint64_t)RX_FRAMES * FL_XSK_FRAME || d->len > FL_XSK_FRAME ||
        addr % FL_XSK_FRAME + d->len > FL_XSK_FRAME) {
        *len = 0;
        return x->area;
    }
    *len = d->len;
    return x->area + addr;
}

void fl_xsk_rx_release(struct fl_xsk *x, uint32_t idx, unsigned n)
{
    uint32_t fidx = 0;
    /* The fill ring holds every receive frame: room for these is certain. */
    xsk_ring_prod__reserve(&x->fill, n, &fidx);
    for (unsigned i = 0; i < n; i++) {
        uint64_t addr = xsk_ring_cons__rx_desc(&x->rx, idx + i)->addr;
        *xsk_ring_prod__fill_addr(&x->fill, fidx + i) =
            xsk_umem__extract_addr(addr) & ~(uint64_t)(FL_XSK_FRAME - 1);
    }
    xsk_ring_cons__release(&x->rx, n);
    xsk_ring_prod__submit(&x->fill, n);
    if (xsk_ring_prod__needs_wakeup(&x->fill))
        recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}
