/* SPDX-License-Identifier: BSD-3-Clause */
/* The seeded fault interposer; see fault.h. */
#include "transport/fault/fault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "platform/os.h"
#include "util/config.h"
#include "util/counter.h"
#include "util/log.h"

#define HELD_MAX 8 /* datagrams held at once; more are let through */
#define OUT_MAX  (2 * FL_DGRAM_BATCH + HELD_MAX)

struct held {
    uint8_t *buf;
    size_t len;
    uint32_t src;
    unsigned path;
    uint64_t due; /* 0: behind the next datagram; else the clock's ns */
};

struct fl_dgram {
    const struct fl_dgram_ops *inner;
    struct fl_dgram *d;
    struct fl_fault_params p;
    uint64_t state;
    struct fl_tp_counters *counters;
    struct fl_fault_tally tally;
    int epfd, evfd, tfd;
    bool signalled;     /* evfd holds a count */
    uint64_t timer_due; /* what tfd is set to; 0: nothing */
    struct held held[HELD_MAX];
    unsigned nheld;
    uint8_t *gone[HELD_MAX]; /* handed out by the last receive on set 0 */
    unsigned ngone;
    struct fl_dgram_in out[FL_DGRAM_SLOTS][OUT_MAX];
};

/* splitmix64: a good stream from any seed, including 0. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

enum fl_fault_action fl_fault_roll(const struct fl_fault_params *p, uint64_t *state)
{
    uint32_t x = (uint32_t)(next(state) % 1000000u);
    const uint32_t ppm[] = {p->drop_ppm, p->dup_ppm, p->reorder_ppm, p->delay_ppm};
    const enum fl_fault_action act[] = {FL_FAULT_DROP, FL_FAULT_DUP, FL_FAULT_REORDER,
                                        FL_FAULT_DELAY};
    for (unsigned i = 0; i < 4; i++) {
        if (x < ppm[i])
            return act[i];
        x -= ppm[i];
    }
    return FL_FAULT_NONE;
}

struct fl_fault_config fl_fault_cfg;

#define F(field) (&fl_fault_cfg.field)
const struct fl_setting fl_fault_settings[] = {
    {"FLIT_DROP_RATE", FL_SET_RATE, F(drop_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is dropped"},
    {"FLIT_DUP_RATE", FL_SET_RATE, F(dup_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is processed twice"},
    {"FLIT_REORDER_RATE", FL_SET_RATE, F(reorder_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is held back behind the "
     "next"},
    {"FLIT_FAULT_SEED", FL_SET_INT, F(seed), 1, 0, INT64_MAX, NULL,
     "seed of the fault injection (each rank adds its rank)"},
    {NULL},
};
#undef F

bool fl_fault_from_config(uint32_t rank, struct fl_fault_params *p)
{
    memset(p, 0, sizeof *p);
    p->seed = (uint64_t)fl_fault_cfg.seed + rank;
    p->drop_ppm = (uint32_t)fl_fault_cfg.drop_ppm;
    p->dup_ppm = (uint32_t)fl_fault_cfg.dup_ppm;
    p->reorder_ppm = (uint32_t)fl_fault_cfg.reorder_ppm;
    return p->drop_ppm || p->dup_ppm || p->reorder_ppm;
}

flit_status fl_fault_open(const struct fl_dgram_ops *inner,
                          const struct fl_fault_params *p,
                          const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    struct fl_dgram *f = calloc(1, sizeof *f);
    if (!f)
        return FLIT_ERR_NO_MEMORY;
    f->epfd = f->evfd = f->tfd = -1;
    flit_status st = inner->open(a, &f->d);
    if (st != FLIT_OK) {
        free(f);
        return st;
    }
    f->inner = inner;
    f->p = *p;
    f->state = p->seed;
    f->counters = a->counters;
    f->epfd = epoll_create1(EPOLL_CLOEXEC);
    f->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    f->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (f->epfd < 0 || f->evfd < 0 || f->tfd < 0 ||
        epoll_ctl(f->epfd, EPOLL_CTL_ADD, inner->fd(f->d), &ev) != 0 ||
        epoll_ctl(f->epfd, EPOLL_CTL_ADD, f->evfd, &ev) != 0 ||
        epoll_ctl(f->epfd, EPOLL_CTL_ADD, f->tfd, &ev) != 0) {
        fl_error("%s: cannot set up fault injection: %s", inner->name, strerror(errno));
        fl_fault_close(f);
        return FLIT_ERR_NO_MEMORY;
    }
    if (a->rank == 0 && a->ep_index == 0)
        fl_info(
            "%s: fault injection: drop %.4f, duplicate %.4f, reorder %.4f, delay %.4f "
            "of received datagrams (seed %llu + rank)",
            inner->name, p->drop_ppm / 1e6, p->dup_ppm / 1e6, p->reorder_ppm / 1e6,
            p->delay_ppm / 1e6, (unsigned long long)(p->seed - a->rank));
    *out = f;
    return FLIT_OK;
}

void fl_fault_tally(struct fl_dgram *f, struct fl_fault_tally *out)
{
    *out = f->tally;
}

flit_status fl_fault_address(struct fl_dgram *f, void *buf, size_t *len)
{
    return f->inner->address(f->d, buf, len);
}

bool fl_fault_reachable(struct fl_dgram *f, uint32_t rank, const void *blob, size_t len)
{
    return f->inner->reachable(f->d, rank, blob, len);
}

flit_status fl_fault_connect(struct fl_dgram *f, uint32_t rank, const void *blob,
                             size_t len)
{
    return f->inner->connect(f->d, rank, blob, len);
}

size_t fl_fault_max_payload(struct fl_dgram *f, uint32_t rank)
{
    return f->inner->max_payload(f->d, rank);
}

int fl_fault_send(struct fl_dgram *f, const struct fl_dgram_out *v, int n)
{
    return f->inner->send(f->d, v, n);
}

int fl_fault_fd(struct fl_dgram *f)
{
    return f->epfd;
}

void fl_fault_address_of(struct fl_dgram *f, uint32_t rank, char *buf, size_t len)
{
    f->inner->address_of(f->d, rank, buf, len);
}

void fl_fault_describe(struct fl_dgram *f, uint32_t rank, char *buf, size_t len)
{
    f->inner->describe(f->d, rank, buf, len);
}

unsigned fl_fault_paths(struct fl_dgram *f, uint32_t rank)
{
    return f->inner->paths ? f->inner->paths(f->d, rank) : 1;
}

void fl_fault_path_of(struct fl_dgram *f, uint32_t rank, unsigned path, char *buf,
                      size_t len)
{
    if (f->inner->path_of)
        f->inner->path_of(f->d, rank, path, buf, len);
    else
        f->inner->address_of(f->d, rank, buf, len);
}

/* Keeps a copy of in to hand out later; false when there is no room. */
static bool hold(struct fl_dgram *f, const struct fl_dgram_in *in, uint64_t due)
{
    if (f->nheld == HELD_MAX)
        return false;
    uint8_t *buf = aligned_alloc(8, (in->len + 8) & ~(size_t)7); /* 8-byte aligned */
    if (!buf)
        return false;
    memcpy(buf, in->buf, in->len);
    f->held[f->nheld++] = (struct held){buf, in->len, in->src, in->path, due};
    return true;
}

/* Hands out the held datagrams that are due (behind_next: those held behind
   the next one too), in the order they were held. */
static void release(struct fl_dgram *f, struct fl_dgram_in *out, int *n, bool behind_next,
                    uint64_t now)
{
    unsigned keep = 0;
    for (unsigned i = 0; i < f->nheld; i++) {
        struct held *h = &f->held[i];
        bool due = h->due ? h->due <= now : behind_next;
        if (due && *n < OUT_MAX) {
            out[(*n)++] = (struct fl_dgram_in){h->buf, h->len, h->src, h->path};
            f->gone[f->ngone++] = h->buf;
        } else {
            f->held[keep++] = *h;
        }
    }
    f->nheld = keep;
}

/* The descriptor reflects what is held: readable now for a datagram held
   behind the next one, readable when due for a delayed one. */
static void set_ready(struct fl_dgram *f)
{
    bool waiting = false;
    uint64_t due = 0;
    for (unsigned i = 0; i < f->nheld; i++) {
        if (!f->held[i].due)
            waiting = true;
        else if (!due || f->held[i].due < due)
            due = f->held[i].due;
    }
    uint64_t v = 1;
    if (waiting && !f->signalled)
        f->signalled = write(f->evfd, &v, sizeof v) == (ssize_t)sizeof v;
    else if (!waiting && f->signalled)
        f->signalled = read(f->evfd, &v, sizeof v) < 0 && errno == EINTR; /* drained */
    if (due != f->timer_due) {
        struct itimerspec its = {0};
        its.it_value.tv_sec = (time_t)(due / 1000000000u);
        its.it_value.tv_nsec = (long)(due % 1000000000u);
        timerfd_settime(f->tfd, TFD_TIMER_ABSTIME, &its, NULL);
        f->timer_due = due;
    }
}

int fl_fault_recv(struct fl_dgram *f, unsigned slot, struct fl_dgram_in **inp)
{
    bool outer = slot == 0;
    if (outer) { /* what the last outer receive handed out is done with */
        for (unsigned i = 0; i < f->ngone; i++)
            free(f->gone[i]);
        f->ngone = 0;
        uint64_t fired;
        if (read(f->tfd, &fired, sizeof fired) == (ssize_t)sizeof fired)
            f->timer_due = 0; /* it fired: set it again below if need be */
    }
    struct fl_dgram_in *in, *out = f->out[slot];
    int got = f->inner->recv(f->d, slot, &in), n = 0;
    uint64_t now = outer && f->nheld + (got > 0) ? fl_now_ns() : 0;
    for (int i = 0; i < got; i++) {
        enum fl_fault_action act = fl_fault_roll(&f->p, &f->state);
        f->tally.received++;
        if (act == FL_FAULT_DROP) {
            f->tally.dropped++;
            FL_COUNT(f->counters->faults_injected, 1);
            continue;
        }
        if (act == FL_FAULT_DUP) {
            f->tally.duplicated++;
            FL_COUNT(f->counters->faults_injected, 1);
            out[n++] = in[i];
        }
        bool behind = false;
        for (unsigned h = 0; h < f->nheld; h++)
            behind |= f->held[h].due == 0;
        if (outer && act == FL_FAULT_REORDER && !behind && hold(f, &in[i], 0)) {
            f->tally.reordered++;
            FL_COUNT(f->counters->faults_injected, 1);
            continue;
        }
        if (outer && act == FL_FAULT_DELAY && hold(f, &in[i], now + f->p.delay_ns)) {
            f->tally.delayed++;
            FL_COUNT(f->counters->faults_injected, 1);
            continue;
        }
        out[n++] = in[i];
        if (outer) /* the next one came: what waited behind it goes */
            release(f, out, &n, true, 0);
    }
    if (outer && f->nheld) {
        release(f, out, &n, got <= 0, now); /* nothing came: let it in */
        set_ready(f);
    } else if (outer) {
        set_ready(f);
    }
    *inp = out;
    return got < 0 && n == 0 ? got : n;
}

void fl_fault_close(struct fl_dgram *f)
{
    if (f->d)
        f->inner->close(f->d);
    for (unsigned i = 0; i < f->nheld; i++)
        free(f->held[i].buf);
    for (unsigned i = 0; i < f->ngone; i++)
        free(f->gone[i]);
    if (f->epfd >= 0)
        close(f->epfd);
    if (f->evfd >= 0)
        close(f->evfd);
    if (f->tfd >= 0)
        close(f->tfd);
    free(f);
}
