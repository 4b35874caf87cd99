/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The self transport: messages a rank sends to itself. Two rings (one per
 * lane) in private memory, written and read by the same endpoint, so
 * handlers still run only from progress, in order, with the same room rules
 * as any peer. While the endpoint is armed (about to sleep), a send also
 * signals an eventfd, so that an event loop wakes for messages to itself.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/ring.h"
#include "transport/self/self.h"
#include "util/log.h"

struct fl_tp_ep {
    uint32_t rank;
    int evfd;
    _Atomic bool armed;
    uint64_t tag;
    uint8_t *seg;
    size_t seg_size;
    size_t ring_size;
    void *mem; /* both rings, mapped */
    size_t mem_len;
    struct fl_ring_tx tx[FL_LANES];
    struct fl_ring_rx rx[FL_LANES];
};

#define SELF_RING (256u << 10)

static flit_status self_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    struct fl_tp_ep *t = calloc(1, sizeof *t);
    if (!t)
        return FLIT_ERR_NO_MEMORY;
    t->rank = a->rank;
    t->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (t->evfd < 0) { /* no descriptor left: creation fails, nobody is down */
        fl_error("self: cannot make an eventfd: %s", strerror(errno));
        free(t);
        return errno == ENOMEM ? FLIT_ERR_NO_MEMORY : FLIT_ERR_SYSTEM;
    }
    t->seg = a->segment;
    t->seg_size = a->segment_size;
    struct fl_tp_counters *counters = a->counters;
    FL_COUNT(counters->pairs, 1); /* in contact with itself from the start */
    t->tag = a->tag;
    t->ring_size = SELF_RING;
    size_t one = fl_ring_footprint(SELF_RING);
    /* Zero pages on demand: a ring's page costs memory and a fault only
       when a message to ourselves first reaches it (clearing 512 KiB here
       was most of a one-rank job's start-up). */
    t->mem_len = one * FL_LANES;
    t->mem = mmap(NULL, t->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
    if (t->mem == MAP_FAILED) {
        fl_error("self: cannot map %zu bytes of rings: %s", t->mem_len, strerror(errno));
        close(t->evfd);
        free(t);
        return FLIT_ERR_NO_MEMORY;
    }
    for (unsigned l = 0; l < FL_LANES; l++) {
        void *ring = (uint8_t *)t->mem + l * one;
        fl_ring_tx_attach(&t->tx[l], ring, SELF_RING);
        fl_ring_rx_attach(&t->rx[l], ring, SELF_RING);
    }
    *out = t;
    return FLIT_OK;
}

static flit_status self_address(struct fl_tp_ep *t, void *buf, size_t *len)
{
    (void)t;
    (void)buf;
    *len = 0;
    return FLIT_OK;
}

static bool self_reachable(struct fl_tp_ep *t, uint32_t rank, const void *blob,
                           size_t len)
{
    (void)blob;
    (void)len;
    return rank == t->rank;
}

static flit_status self_connect(struct fl_tp_ep *t, uint32_t rank, const void *blob,
                                size_t len)
{
    (void)t;
    (void)rank;
    (void)blob;
    (void)len;
    return FLIT_OK;
}

static void self_connected(struct fl_tp_ep *t)
{
    (void)t;
}

static size_t self_max_packet(struct fl_tp_ep *t)
{
    return fl_ring_max_packet(t->ring_size);
}

static void *self_reserve(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                          flit_status *st)
{
    (void)dst;
    *st = FLIT_ERR_AGAIN;
    return fl_ring_reserve(&t->tx[lane], len);
}

static void self_commit(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                        size_t len, unsigned flags)
{
    (void)dst;
    (void)flags; /* nothing to pack: the ring is the wire */
    fl_ring_commit(&t->tx[lane], pkt, len);
    /* Same process: the endpoint's lock (or its single thread) orders this
       with arm, so no fence is needed, only the flag. */
    if (__builtin_expect(atomic_load_explicit(&t->armed, memory_order_relaxed), 0) &&
        atomic_exchange(&t->armed, false)) {
        uint64_t one = 1;
        ssize_t w = write(t->evfd, &one, sizeof one);
        (void)w;
    }
}

static void self_cancel(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt)
{
    (void)t, (void)dst, (void)lane, (void)pkt; /* the ring reuses it */
}

static flit_status self_put(struct fl_tp_ep *t, uint32_t dst, uint64_t tag,
                            uint64_t offset, const void *src, size_t len)
{
    (void)dst;
    if (tag != t->tag)
        return FLIT_ERR_BAD_TAG;
    memmove(t->seg + offset, src, len);
    return FLIT_OK;
}

static void self_set_tag(struct fl_tp_ep *t, uint64_t tag)
{
    t->tag = tag;
}

/* The rings with packets. Out of line, so that a pass finding nothing
   (nearly every one: few programs send to themselves) pays for no frame of
   it (self_poll). */
static __attribute__((noinline)) int drain_all(struct fl_tp_ep *t, unsigned lane_mask,
                                               fl_tp_recv_fn cb, void *ctx, int budget)
{
    int n = 0;
    for (unsigned l = FL_LANES; l-- > 0;) { /* replies first */
        struct fl_ring_rx *rx = &t->rx[l];
        if (!(lane_mask & FL_LANE_MASK(l)) || rx->busy || !fl_ring_pending(rx))
            continue;
        void *pkt;
        size_t len;
        while (n < budget && (pkt = fl_ring_peek(rx, &len)) != NULL) {
            rx->busy = true;
            cb(ctx, t->rank, l, pkt, len);
            rx->busy = false;
            fl_ring_release(rx);
            n++;
        }
    }
    return n;
}

static int self_poll(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb, void *ctx,
                     int budget)
{
    for (unsigned l = 0; l < FL_LANES; l++)
        if ((lane_mask & FL_LANE_MASK(l)) && fl_ring_pending(&t->rx[l]))
            return drain_all(t, lane_mask, cb, ctx, budget);
    return 0;
}

static bool self_arm(struct fl_tp_ep *t, unsigned lane_mask)
{
    for (unsigned l = 0; l < FL_LANES; l++)
        if ((lane_mask & FL_LANE_MASK(l)) && !t->rx[l].busy && fl_ring_pending(&t->rx[l]))
            return true;
    atomic_store(&t->armed, true);
    return false;
}

static void self_disarm(struct fl_tp_ep *t)
{
    atomic_store(&t->armed, false);
    uint64_t v;
    while (read(t->evfd, &v, sizeof v) > 0)
        ;
}

static int self_fd(struct fl_tp_ep *t)
{
    return t->evfd;
}

static void self_want_room(struct fl_tp_ep *t, uint32_t dst, unsigned lane)
{
    (void)t;
    (void)dst;
    (void)lane;
}

static void self_check_peers(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx)
{
    (void)t;
    (void)cb;
    (void)ctx;
}

static void self_reclaim(struct fl_tp_ep *t, uint32_t dst, fl_tp_recv_fn cb, void *ctx)
{
    (void)t;
    (void)dst;
    (void)cb;
    (void)ctx;
}

static bool self_settled(struct fl_tp_ep *t)
{
    (void)t;
    return true; /* shared memory is never in flight */
}

/* The pair with ourselves is set up at open and costs nothing to use: it
   counts as in contact, so a rank's goodbye to itself keeps its place. */
static bool self_in_contact(struct fl_tp_ep *t, uint32_t peer)
{
    (void)t, (void)peer;
    return true;
}

static void self_peer_address(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    (void)t, (void)peer;
    if (len)
        buf[0] = '\0';
}

static void self_dump_peer(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    (void)peer;
    snprintf(buf, len, "queued req %llu B, rep %llu B",
             (unsigned long long)fl_ring_tx_inflight(&t->tx[FL_LANE_REQ]),
             (unsigned long long)fl_ring_tx_inflight(&t->tx[FL_LANE_REP]));
}

static void self_close(struct fl_tp_ep *t)
{
    close(t->evfd);
    munmap(t->mem, t->mem_len);
    free(t);
}

static const struct fl_counter_desc self_counters[] = {
    FL_TP_COUNTER(pairs, "peers_in_contact", "1: the rank itself"),
    {NULL, NULL, 0, 0, NULL},
};

const struct fl_transport fl_tp_self = {
    .name = "self",
    .caps = FL_TP_RELIABLE | FL_TP_PUT,
    .reach = FL_REACH_SELF,
    .by_default = true,
    .counters = self_counters,
    .counters_size = sizeof(struct fl_tp_counters),
    .open = self_open,
    .address = self_address,
    .reachable = self_reachable,
    .connect = self_connect,
    .connected = self_connected,
    .max_packet = self_max_packet,
    .reserve = self_reserve,
    .commit = self_commit,
    .cancel = self_cancel,
    .put = self_put,
    .set_tag = self_set_tag,
    .poll = self_poll,
    .arm = self_arm,
    .disarm = self_disarm,
    .fd = self_fd,
    .want_room = self_want_room,
    .check_peers = self_check_peers,
    .reclaim = self_reclaim,
    .settled = self_settled,
    .in_contact = self_in_contact,
    .peer_address = self_peer_address,
    .dump_peer = self_dump_peer,
    .close = self_close,
};
