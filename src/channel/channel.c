/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliability channel as a transport: the ops channel.h lists that are
 * not the send window's (window.c) or the liveness's (peer.c): open and
 * close, addresses and connect, the poll, sleeping, and what the core asks
 * about a peer. See state.h for the files and their concepts, channel.h
 * for what the channel guarantees, wire.h for the datagram.
 *
 * The poll delivers what a budget held back, receives a batch of datagrams
 * (recv.c), runs the timers when due (after the receive: what came in says
 * what was not lost), and sends what is due (send.c). While the endpoint
 * sleeps, a timerfd set to the earliest deadline wakes it.
 */
#include "channel/channel.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "channel/config.h"
#include "channel/path.h"
#include "channel/peer.h"
#include "channel/recv.h"
#include "channel/rto.h"
#include "channel/send.h"
#include "channel/state.h"
#include "channel/window.h"
#include "platform/le.h"
#include "platform/os.h"
#include "util/config.h"
#include "util/log.h"

#define MAX_DEPTH   FL_DGRAM_SLOTS /* nested polls: handler -> blocked reply -> ... */
#define CLOCK_EVERY 16u            /* idle polls between looks at the clock */
#define BLOB_MAGIC  0x4843464cu    /* "FLCH" */
#define BLOB_HDR    8u

static void peer_free(struct chan_peer *p)
{
    for (unsigned l = 0; l < FL_LANES; l++) {
        free(p->tx[l].buf);
        free(p->tx[l].chunk);
        if (p->rx[l].ooo)
            for (unsigned i = 0; i < CHUNK_CAP; i++)
                free(p->rx[l].ooo[i].data);
        free(p->rx[l].ooo);
        free(p->rx[l].asm_buf);
    }
}

/* The endpoint's settings, from the open arguments and FLIT_*. */
static void set_up(struct fl_tp_ep *t, const struct fl_tp_open_args *a)
{
    t->chan_counters = a->counters;
    t->counters = &t->chan_counters->tp;
    t->peer_down = a->peer_down;
    t->up_ctx = a->up_ctx;
    t->rank = a->rank;
    t->size = a->size;
    t->key = a->job_id ^ 0x6a09e667f3bcc908ull;
    t->max_packet = a->max_packet;
    t->window = (uint64_t)fl_chan_cfg.window < MIN_WINDOW(t)
                    ? MIN_WINDOW(t)
                    : (uint64_t)fl_chan_cfg.window;
    t->timeout_ns = (uint64_t)fl_cfg.peer_timeout_ms * 1000000u;
}

/* The endpoint's descriptors (the epoll set waits on the datagram
   socket and the timerfd) and its per-rank arrays; false when one is
   missing (errno says why). */
static bool open_parts(struct fl_tp_ep *t)
{
    t->epfd = epoll_create1(EPOLL_CLOEXEC);
    t->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    t->peers = calloc(t->size, sizeof *t->peers);
    t->sendq = calloc(t->size, sizeof *t->sendq);
    t->active = calloc(t->size, sizeof *t->active);
    struct epoll_event ev = {.events = EPOLLIN};
    return t->epfd >= 0 && t->timerfd >= 0 && t->peers && t->sendq && t->active &&
           epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->ops->fd(t->d), &ev) == 0 &&
           epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->timerfd, &ev) == 0;
}

flit_status fl_chan_open(const struct fl_dgram_ops *ops, const struct fl_tp_open_args *a,
                         struct fl_tp_ep **out)
{
    struct fl_tp_ep *t = calloc(1, sizeof *t);
    if (!t)
        return FLIT_ERR_NO_MEMORY;
    set_up(t, a);
    struct fl_tp_open_args da = *a;
    da.peer_window = t->window; /* the datagram transport sizes its buffers */
    struct fl_dgram *d;
    flit_status st = ops->open(&da, &d);
    if (st != FLIT_OK) {
        free(t);
        return st;
    }
    t->ops = ops;
    t->d = d;
    if (!open_parts(t)) {
        fl_error("%s: cannot set up the reliability channel: %s", ops->name,
                 strerror(errno));
        fl_chan_close(t); /* closes d too */
        return FLIT_ERR_NO_MEMORY;
    }
    *out = t;
    return FLIT_OK;
}

flit_status fl_chan_address(struct fl_tp_ep *t, void *buf, size_t *len)
{
    if (*len < BLOB_HDR)
        return FLIT_ERR_INVALID_ARG;
    uint8_t *b = buf;
    fl_put32(b, BLOB_MAGIC);
    fl_put32(b + 4, (uint32_t)t->window);
    size_t n = *len - BLOB_HDR;
    flit_status st = t->ops->address(t->d, b + BLOB_HDR, &n);
    if (st == FLIT_OK)
        *len = BLOB_HDR + n;
    return st;
}

bool fl_chan_reachable(struct fl_tp_ep *t, uint32_t rank, const void *blob, size_t len)
{
    const uint8_t *b = blob;
    return len >= BLOB_HDR && fl_get32(b) == BLOB_MAGIC &&
           t->ops->reachable(t->d, rank, b + BLOB_HDR, len - BLOB_HDR);
}

flit_status fl_chan_connect(struct fl_tp_ep *t, uint32_t rank, const void *blob,
                            size_t len)
{
    const uint8_t *b = blob;
    struct chan_peer *p = &t->peers[rank];
    flit_status st = t->ops->connect(t->d, rank, b + BLOB_HDR, len - BLOB_HDR);
    if (st != FLIT_OK)
        return st;
    uint64_t theirs = fl_get32(b + 4);
    p->window = theirs < t->window ? theirs : t->window;
    if (p->window < MIN_WINDOW(t))
        p->window = MIN_WINDOW(t);
    if (!p->path && t->ops->paths && !fl_chan_paths_open(p, t->ops->paths(t->d, rank)))
        return FLIT_ERR_NO_MEMORY;
    p->connected = true; /* the rest on first use (activate, first_send) */
    return FLIT_OK;
}

void fl_chan_connected(struct fl_tp_ep *t)
{
    (void)t;
}

size_t fl_chan_max_packet(struct fl_tp_ep *t)
{
    return t->max_packet;
}

int fl_chan_poll(struct fl_tp_ep *t, unsigned lane_mask, fl_tp_recv_fn cb, void *ctx,
                 int budget)
{
    int n = 0;
    int outer_budget = t->budget;
    t->budget = budget;
    if (t->nrelease)
        fl_chan_release_all(t, lane_mask, cb, ctx, &n);
    /* Even with the budget spent: what it cannot deliver now waits in our
       buffers, selectively acknowledged (not sent again) but not
       cumulatively (the sender's window stays taken: it is held back). */
    if (t->depth < MAX_DEPTH) {
        struct fl_dgram_in *in;
        int got = t->ops->recv(t->d, t->depth, &in);
        t->depth++;
        for (int i = 0; i < got; i++)
            fl_chan_take_dgram(t, &in[i], lane_mask, cb, ctx, &n);
        t->depth--;
        if (got > 0)
            t->idle_polls = CLOCK_EVERY; /* traffic: look at the timers now */
        t->backlog = got == FL_DGRAM_BATCH ? t->backlog + 1 : 0;
    }
    t->budget = outer_budget;
    /* Timers need the clock; a busy poll loop need not read it every pass.
       After the receive: what came in says what was not lost. */
    if (t->next_timer && (t->check_timers || ++t->idle_polls >= CLOCK_EVERY)) {
        uint64_t now = fl_now_ns();
        t->idle_polls = 0;
        t->check_timers = false;
        if (now >= t->next_timer)
            fl_chan_run_timers(t, now);
        else
            fl_chan_listening(t, now);
    }
    if (t->nsendq)
        fl_chan_flush(t);
    return n;
}

/* Whether a poll on the lanes of lane_mask may deliver chunks held back
   (by a spent budget, or while their lane was not polled). */
static bool releasable(const struct fl_tp_ep *t, unsigned lane_mask)
{
    for (uint32_t i = 0; i < t->nactive && t->nrelease; i++)
        for (unsigned l = 0; l < FL_LANES; l++)
            if (t->peers[t->active[i]].rx[l].release && (lane_mask & FL_LANE_MASK(l)))
                return true;
    return false;
}

/* Whether a datagram waits unread in the transport. */
static bool readable(struct fl_tp_ep *t)
{
    struct pollfd pfd = {.fd = t->ops->fd(t->d), .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

/* The timerfd keeps its deadline between sleeps: set it only when that
   changed, or when it has passed (setting it also clears a firing). A
   deadline left in it while we are awake fires at worst once more, and a
   wake-up finds nothing to do. */
static void set_timerfd(struct fl_tp_ep *t, uint64_t now)
{
    if (t->next_timer == t->timer_set && !(t->timer_set && t->timer_set <= now))
        return;
    struct itimerspec its = {0};
    if (t->next_timer) {
        its.it_value.tv_sec = (time_t)(t->next_timer / 1000000000u);
        its.it_value.tv_nsec = (long)(t->next_timer % 1000000000u);
    }
    timerfd_settime(t->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
    t->timer_set = t->next_timer;
}

/*
 * Work waiting (a datagram unread, chunks held back) is work now: the
 * caller polls rather than sleeps, and the poll reads before its timers
 * run, for what waits unread may be the acknowledgements that stop them.
 * Else the timers run, what they found due is sent (nothing held back
 * while we sleep), and the timerfd is set to the next deadline.
 */
bool fl_chan_arm(struct fl_tp_ep *t, unsigned lane_mask)
{
    if (releasable(t, lane_mask) || readable(t))
        return true;
    uint64_t now = fl_now_ns();
    fl_chan_run_timers(t, now);
    fl_chan_flush(t);
    set_timerfd(t, now);
    return readable(t);
}

/* As the poll does, the timers look only when nothing waits unread: the
   poll that reads it runs them next (check_timers). */
void fl_chan_check_peers(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx)
{
    (void)cb, (void)ctx;
    if (readable(t)) {
        t->check_timers = true;
        return;
    }
    fl_chan_run_timers(t, fl_now_ns());
    fl_chan_flush(t);
}

void fl_chan_disarm(struct fl_tp_ep *t)
{
    t->check_timers = true; /* whatever woke us, a deadline may be due */
}

int fl_chan_fd(struct fl_tp_ep *t)
{
    return t->epfd;
}

void fl_chan_want_room(struct fl_tp_ep *t, uint32_t dst, unsigned lane)
{
    (void)t, (void)dst, (void)lane; /* room comes with acks: they wake us */
}

void fl_chan_peer_address(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    t->ops->address_of(t->d, peer, buf, len);
    if (peer != t->rank)
        fl_chan_path_state(&t->peers[peer], buf, len);
}

size_t fl_chan_peer_datagram(struct fl_tp_ep *t, uint32_t peer)
{
    return t->ops->max_payload(t->d, peer);
}

size_t fl_chan_peer_packet_fit(struct fl_tp_ep *t, uint32_t peer)
{
    return fl_chan_chunk_fit(t, peer) == FLIT_OK ? t->peers[peer].chunk_max : 0;
}

void fl_chan_dump_peer(struct fl_tp_ep *t, uint32_t peer, char *buf, size_t len)
{
    struct chan_peer *p = &t->peers[peer];
    char who[64];
    t->ops->describe(t->d, peer, who, sizeof who);
    if (!p->active) {
        snprintf(buf, len, "%s; no traffic yet, no state", who);
        return;
    }
    fl_chan_path_state(p, who, sizeof who);
    snprintf(buf, len,
             "%s, rtt %.1f us, rto %.1f ms; in flight req %llu B, rep %llu B "
             "of a %llu B window; retransmits %llu; receiving req #%u, rep #%u",
             who, p->srtt / 1e3, fl_chan_rto_now(p, fl_now_ns()) / 1e6,
             (unsigned long long)(p->tx[0].tail - p->tx[0].head),
             (unsigned long long)(p->tx[1].tail - p->tx[1].head),
             (unsigned long long)p->window, (unsigned long long)p->retransmits,
             p->rx[0].next, p->rx[1].next);
}

void fl_chan_close(struct fl_tp_ep *t)
{
    if (t->peers) {
        for (uint32_t i = 0; i < t->nactive; i++)
            peer_free(&t->peers[t->active[i]]);
        for (uint32_t r = 0; r < t->size; r++)
            fl_chan_paths_close(&t->peers[r]);
        free(t->peers);
    }
    free(t->active);
    free(t->sendq);
    if (t->epfd >= 0)
        close(t->epfd);
    if (t->timerfd >= 0)
        close(t->timerfd);
    if (t->d)
        t->ops->close(t->d);
    free(t);
}
