/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory datagram network of the conformance suite; see memnet.h. */
#include "memnet.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform/le.h"

#define QSLOTS 1024u /* datagrams a queue holds: more than a window */

struct slot {
    uint32_t len;
    _Alignas(8) uint8_t data[MEMNET_MTU];
};

/* One queue: one producer (src), one consumer (dst). */
struct queue {
    _Alignas(64) _Atomic uint32_t head; /* consumer */
    _Alignas(64) _Atomic uint32_t tail; /* producer */
    struct slot slot[QSLOTS];
};

struct net {
    struct queue q[MEMNET_RANKS][MEMNET_RANKS]; /* [src][dst] */
};

static struct net *net;
static int evfd[MEMNET_RANKS] = {-1, -1};

struct fl_dgram {
    uint32_t rank;
    struct fl_dgram_in in[FL_DGRAM_SLOTS][FL_DGRAM_BATCH];
    _Alignas(8) uint8_t buf[FL_DGRAM_SLOTS][FL_DGRAM_BATCH][MEMNET_MTU];
};

int memnet_create(void)
{
    net = mmap(NULL, sizeof *net, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
               0);
    if (net == MAP_FAILED)
        return -errno;
    for (unsigned r = 0; r < MEMNET_RANKS; r++) {
        evfd[r] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (evfd[r] < 0)
            return -errno;
    }
    return 0;
}

static flit_status mn_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    if (!net || a->rank >= MEMNET_RANKS || a->size > MEMNET_RANKS)
        return FLIT_ERR_NOT_SUPPORTED;
    struct fl_dgram *d = calloc(1, sizeof *d);
    if (!d)
        return FLIT_ERR_NO_MEMORY;
    d->rank = a->rank;
    *out = d;
    return FLIT_OK;
}

static flit_status mn_address(struct fl_dgram *d, void *buf, size_t *len)
{
    if (*len < 4)
        return FLIT_ERR_INVALID_ARG;
    fl_put32(buf, d->rank);
    *len = 4;
    return FLIT_OK;
}

static bool mn_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len)
{
    return len == 4 && rank != d->rank && rank < MEMNET_RANKS && fl_get32(blob) == rank;
}

static flit_status mn_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                              size_t len)
{
    return mn_reachable(d, rank, blob, len) ? FLIT_OK : FLIT_ERR_INVALID_ARG;
}

static size_t mn_max_payload(struct fl_dgram *d, uint32_t rank)
{
    (void)d, (void)rank;
    return MEMNET_MTU;
}

static int mn_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        if (v[i].dst >= MEMNET_RANKS || v[i].dst == d->rank)
            return -EINVAL;
        struct queue *q = &net->q[d->rank][v[i].dst];
        uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
        if (tail - atomic_load_explicit(&q->head, memory_order_acquire) == QSLOTS)
            break; /* full: the rest would block */
        struct slot *s = &q->slot[tail % QSLOTS];
        size_t len = 0;
        for (int k = 0; k < v[i].iovcnt; k++) {
            if (len + v[i].iov[k].iov_len > MEMNET_MTU)
                return -EMSGSIZE;
            memcpy(s->data + len, v[i].iov[k].iov_base, v[i].iov[k].iov_len);
            len += v[i].iov[k].iov_len;
        }
        s->len = (uint32_t)len;
        atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
        uint64_t one = 1;
        if (write(evfd[v[i].dst], &one, sizeof one) != sizeof one && errno != EAGAIN)
            return -errno;
    }
    return i;
}

static int mn_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    uint64_t v;
    int n = 0;
    if (read(evfd[d->rank], &v, sizeof v) < 0 && errno != EAGAIN)
        return -errno;
    for (uint32_t src = 0; src < MEMNET_RANKS; src++) {
        if (src == d->rank)
            continue;
        struct queue *q = &net->q[src][d->rank];
        uint32_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
        while (n < FL_DGRAM_BATCH &&
               head != atomic_load_explicit(&q->tail, memory_order_acquire)) {
            struct slot *s = &q->slot[head % QSLOTS];
            memcpy(d->buf[slot][n], s->data, s->len);
            d->in[slot][n] = (struct fl_dgram_in){d->buf[slot][n], s->len, src};
            atomic_store_explicit(&q->head, ++head, memory_order_release);
            n++;
        }
        if (head != atomic_load_explicit(&q->tail, memory_order_acquire)) {
            uint64_t one = 1; /* more than a batch: stay readable */
            if (write(evfd[d->rank], &one, sizeof one) < 0 && errno != EAGAIN)
                return -errno;
        }
    }
    *in = d->in[slot];
    return n;
}

static int mn_fd(struct fl_dgram *d)
{
    return evfd[d->rank];
}

static void mn_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    (void)d;
    snprintf(buf, len, "memory rank %u", rank);
}

static void mn_close(struct fl_dgram *d)
{
    free(d);
}

const struct fl_dgram_ops memnet_ops = {
    .name = "memory",
    .open = mn_open,
    .address = mn_address,
    .reachable = mn_reachable,
    .connect = mn_connect,
    .max_payload = mn_max_payload,
    .send = mn_send,
    .recv = mn_recv,
    .fd = mn_fd,
    .address_of = mn_describe,
    .describe = mn_describe,
    .close = mn_close,
};
