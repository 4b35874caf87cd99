/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress engine: one per endpoint. It drains every transport, hands
 * each packet to the layer that owns its opcode, and when there is nothing
 * to do it spins for a while and then sleeps. Senders wake a sleeper only
 * when it said it sleeps (the transports' arm protocol), so the fast path
 * makes no system call: LFC's polling watchdog, in user space.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ep.h"
#include "core/packet.h"
#include "platform/os.h"
#include "util/config.h"
#include "util/log.h"

#define POLL_BUDGET 64   /* packets per transport per pass */
#define CHECK_EVERY 1024 /* passes between looks at the clock */

int fl_progress(struct flit_ep *ep, unsigned lane_mask)
{
    int n = 0;
    fl_ep_flush_hold(ep); /* the transports may not be polled meanwhile */
    FL_COUNT(ep->stats.polls, 1);
    for (int i = 0; i < ep->ntp; i++)
        n +=
            ep->tps[i]->poll(ep->tpes[i], lane_mask, fl_packet_dispatch, ep, POLL_BUDGET);
    if (__builtin_expect(n && ep->cond_waiters, 0))
        pthread_cond_broadcast(&ep->progress_cond); /* they may be done */
    return n;
}

int fl_progress_peer(struct flit_ep *ep, uint32_t peer, unsigned lane_mask)
{
    struct fl_peer *p = &ep->peers[peer];
    fl_ep_flush_hold(ep);
    FL_COUNT(ep->stats.polls, 1);
    int n = p->tp->poll(p->tpe, lane_mask, fl_packet_dispatch, ep, POLL_BUDGET);
    if (__builtin_expect(n && ep->cond_waiters, 0))
        pthread_cond_broadcast(&ep->progress_cond);
    return n;
}

static int64_t spin_us = -1, yield_us;

int64_t fl_progress_spin_us(void)
{
    return spin_us;
}

/*
 * More ranks than cores: a spinning rank steals the core its peer needs,
 * so it does not spin (2 µs cost flit-mpi's collectives of 3 and 4 ranks
 * on 2 cores a third to a half more time than none: docs/mpi.md,
 * "Waiting on a crowded host"); and a rank that sleeps as soon as it stops
 * spinning leaves its core idle, which on a virtual machine halts the
 * virtual CPU: every message that wakes it then waits for the host to
 * run that CPU again (tens of microseconds a step of a collective). So it
 * polls on, giving the core to whoever is runnable before each look
 * (sched_yield), for FLIT_YIELD_US, and only then sleeps.
 */
void fl_progress_init(void)
{
    /* Read once: sysconf opens a file in /sys on every call. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    bool crowded = cpus > 0 && fl_job.local_size > (uint32_t)cpus;
    const char *why = crowded ? "ranks outnumber cores" : NULL;
    spin_us = fl_cfg.spin_us;
    if (spin_us < 0) {
        spin_us = crowded ? 0 : 50;
        fl_config_settle("FLIT_SPIN_US", spin_us, why);
    }
    yield_us = fl_cfg.yield_us;
    if (yield_us < 0) {
        yield_us = crowded ? 1000 : 0;
        fl_config_settle("FLIT_YIELD_US", yield_us, why);
    }
}

/*
 * A waiter that has stopped spinning at `now`, the spin having ended at
 * spin_end: true when it is to go on polling (it yielded), false when it
 * is to sleep. A sleeper learns of a peer's death as it happens (a pidfd
 * in the endpoint's epoll set wakes it, and it looks at its peers); one
 * that yields looks at the set itself before each yield, so it learns as
 * soon, not at the next FLIT_PEER_CHECK_MS.
 */
static bool yield_on(struct flit_ep *ep, uint64_t now, uint64_t spin_end)
{
    if (now >= spin_end + (uint64_t)yield_us * 1000u)
        return false;
    struct pollfd pfd = {.fd = ep->epfd, .events = POLLIN};
    if (poll(&pfd, 1, 0) > 0)
        fl_progress_check_peers(ep, true);
    sched_yield();
    return true;
}

void fl_progress_check_peers(struct flit_ep *ep, bool force)
{
    uint64_t now = fl_now_ns();
    if (!force && now < ep->next_peer_check_ns)
        return;
    ep->next_peer_check_ns = now + (uint64_t)fl_cfg.peer_check_ms * 1000000u;
    for (int i = 0; i < ep->ntp; i++)
        ep->tps[i]->check_peers(ep->tpes[i], fl_packet_dispatch, ep);
}

static bool arm_all(struct flit_ep *ep, unsigned lane_mask)
{
    bool pending = false;
    fl_ep_flush_hold(ep);
    for (int i = 0; i < ep->ntp; i++)
        pending |= ep->tps[i]->arm(ep->tpes[i], lane_mask);
    return pending;
}

static void disarm_all(struct flit_ep *ep)
{
    for (int i = 0; i < ep->ntp; i++)
        ep->tps[i]->disarm(ep->tpes[i]);
    ep->armed = false;
}

/* Sleeps on the endpoint's epoll set. */
static void sleep_on(struct flit_ep *ep, int64_t timeout_us)
{
    struct pollfd pfd = {.fd = ep->epfd, .events = POLLIN};
    struct timespec ts = {.tv_sec = timeout_us / 1000000,
                          .tv_nsec = (timeout_us % 1000000) * 1000};
    FL_COUNT(ep->stats.sleeps, 1);
    int r = ppoll(&pfd, 1, timeout_us < 0 ? NULL : &ts, NULL);
    if (r < 0 && errno != EINTR)
        fl_error("sleeping on endpoint %u: %s", ep->index, strerror(errno));
}

/* Thread-safe endpoints: another thread sleeps on the fd; wait for it, or
   for anyone, to handle something. Releases the lock while waiting. */
static void wait_on_cond(struct flit_ep *ep, int64_t timeout_us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_us / 1000000;
    ts.tv_nsec += (timeout_us % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    ep->cond_waiters++;
    pthread_cond_timedwait(&ep->progress_cond, &ep->lock, &ts);
    ep->cond_waiters--;
}

/*
 * Sleeps until work may have arrived (or timeout_us). A thread-safe
 * endpoint gives up its lock while asleep, except where the caller must
 * keep it: inside a handler, and while a long message goes out in pieces
 * (they must stay together on their lane). Only one thread sleeps on the
 * fd; the others wait on progress_cond. A thread that must keep the lock
 * while another sleeps on the fd pokes that one off it (it will wait for
 * our lock) and returns to polling, yielding the core: a rare case.
 */
void fl_progress_sleep(struct flit_ep *ep, unsigned lane_mask, int64_t timeout_us)
{
    bool safe = ep->mode == FLIT_THREAD_SAFE;
    bool unlock = safe && fl_handler_depth == 0 && ep->keep_lock == 0;
    if (safe && ep->fd_sleeper) {
        if (unlock) {
            wait_on_cond(ep, timeout_us);
        } else {
            uint64_t one = 1;
            ssize_t w = write(ep->evfd, &one, sizeof one);
            (void)w;
            sched_yield();
        }
        return;
    }
    if (arm_all(ep, lane_mask)) {
        disarm_all(ep);
        return;
    }
    ep->fd_sleeper = true;
    if (unlock)
        pthread_mutex_unlock(&ep->lock);
    sleep_on(ep, timeout_us);
    if (unlock)
        pthread_mutex_lock(&ep->lock);
    ep->fd_sleeper = false;
    disarm_all(ep);
    uint64_t v;
    while (read(ep->evfd, &v, sizeof v) > 0)
        ;
    if (ep->cond_waiters)
        pthread_cond_broadcast(&ep->progress_cond); /* one may take the fd */
    fl_progress_check_peers(ep, true);
}

flit_status fl_progress_until(struct flit_ep *ep, fl_done_fn done, void *arg,
                              int64_t timeout_us)
{
    uint64_t start = fl_now_ns();
    uint64_t deadline = UINT64_MAX; /* timeouts past ~584 years: forever */
    if (timeout_us >= 0 && (uint64_t)timeout_us < (UINT64_MAX - start) / 1000u)
        deadline = start + (uint64_t)timeout_us * 1000u;
    uint64_t spin_ns = (uint64_t)fl_progress_spin_us() * 1000u;
    uint64_t spin_end = start + spin_ns;
    bool busy = false; /* handled something since the last clock read */
    int64_t nap_us = fl_cfg.peer_check_ms * 1000;
    for (unsigned pass = 1;; pass++) {
        busy |= fl_progress(ep, FL_LANES_ALL) > 0;
        fl_listeners_progress(ep);
        if (done(ep, arg))
            return FLIT_OK;
        if (fl_ep_closed_under(ep))
            return FLIT_ERR_CLOSED;
        if (pass % 16)
            continue; /* quick passes between looks at the clock */
        uint64_t now = fl_now_ns();
        if (now >= deadline)
            return FLIT_ERR_TIMEOUT;
        fl_progress_check_peers(ep, false);
        if (busy) { /* traffic: keep spinning, the next packet is near */
            spin_end = now + spin_ns;
            busy = false;
        }
        if (now < spin_end) {
            fl_cpu_relax();
            continue;
        }
        if (yield_on(ep, now, spin_end))
            continue;
        int64_t left = deadline == UINT64_MAX ? nap_us : (int64_t)(deadline - now) / 1000;
        fl_progress_sleep(ep, FL_LANES_ALL, left < nap_us ? left : nap_us);
    }
}

void fl_progress_on_send(struct flit_ep *ep)
{
    ep->sends_unlooked = 0;
    if (fl_handler_depth)
        return; /* the poll pass running the handler ends soon */
    uint64_t now = fl_now_ns(), polls = FL_READ(ep->stats.polls);
    if (ep->looked_ns && polls == ep->looked_polls &&
        now - ep->looked_ns >= FL_SEND_POLL_NS) {
        FL_COUNT(ep->stats.send_polls, 1);
        fl_progress(ep, FL_LANES_ALL);
        fl_listeners_progress(ep);
        fl_progress_check_peers(ep, false);
        polls = FL_READ(ep->stats.polls);
    } else if (polls == ep->looked_polls) {
        return; /* not yet due: keep the time of the last pass seen */
    }
    ep->looked_polls = polls;
    ep->looked_ns = now;
}

flit_status fl_ep_reserve_slow(struct flit_ep *ep, uint32_t dst, unsigned lane,
                               size_t len, unsigned flags, void **pkt)
{
    struct fl_peer *p = &ep->peers[dst];
    FL_COUNT(ep->stats.credit_stalls, 1);
    FL_COUNT(p->stalls, 1);
    if (flags & FLIT_AM_NONBLOCK) {
        p->tp->want_room(p->tpe, dst, lane); /* a flit_wait wakes for it */
        return FLIT_ERR_AGAIN;
    }
    /* In a handler only replies can be handled: they cannot send, so this
       wait cannot chain into another. */
    unsigned lanes = fl_handler_depth ? FL_LANE_MASK(FL_LANE_REP) : FL_LANES_ALL;
    uint64_t start = fl_now_ns();
    uint64_t spin_end = start + (uint64_t)fl_progress_spin_us() * 1000u;
    atomic_store_explicit(&ep->blocked_dst, dst, memory_order_relaxed);
    atomic_store_explicit(&ep->blocked_since_ns, start, memory_order_relaxed);
    flit_status st;
    bool busy = false;
    for (unsigned pass = 1;; pass++) {
        busy |= fl_progress(ep, lanes) > 0;
        fl_listeners_progress(ep); /* not in handlers, nor mid-message */
        if ((*pkt = p->tp->reserve(p->tpe, dst, lane, len, &st)) != NULL ||
            st != FLIT_ERR_AGAIN)
            break;
        if (fl_ep_closed_under(ep)) {
            st = FLIT_ERR_CLOSED;
            break;
        }
        if (pass % 16)
            continue;
        fl_progress_check_peers(ep, false);
        uint64_t now = fl_now_ns();
        if (busy) { /* traffic: keep spinning, the room is near */
            spin_end = now + (uint64_t)fl_progress_spin_us() * 1000u;
            busy = false;
        }
        if (now < spin_end) {
            fl_cpu_relax();
            continue;
        }
        if (yield_on(ep, now, spin_end))
            continue;
        p->tp->want_room(p->tpe, dst, lane);
        if ((*pkt = p->tp->reserve(p->tpe, dst, lane, len, &st)) != NULL ||
            st != FLIT_ERR_AGAIN)
            break;
        fl_progress_sleep(ep, lanes, fl_cfg.peer_check_ms * 1000);
    }
    atomic_store_explicit(&ep->blocked_since_ns, 0, memory_order_relaxed);
    return *pkt ? FLIT_OK : st;
}

/* ---- public progress calls ---- */

int flit_in_handler(void)
{
    return fl_handler_depth != 0 || fl_in_call != NULL;
}

flit_status flit_poll(flit_ep_t *ep)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (__builtin_expect(ep->armed, 0)) {
        disarm_all(ep);
        fl_progress_check_peers(ep, true);
    }
    fl_progress(ep, FL_LANES_ALL);
    fl_listeners_progress(ep);
    if (__builtin_expect(FL_READ(ep->stats.polls) % CHECK_EVERY == 0, 0))
        fl_progress_check_peers(ep, false);
    fl_ep_leave(ep);
    return FLIT_OK;
}

/* ---- receiver pacing ---- */

/* A packet's bytes are charged whole: pacing stops at the first packet that
   reaches the budget. */
static void extract_one(void *arg, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    struct flit_ep *ep = arg;
    ep->pace_left -= len < ep->pace_left ? len : ep->pace_left;
    fl_packet_dispatch(ep, src, lane, pkt, len);
}

/* See progress.h. */
size_t fl_progress_paced(struct flit_ep *ep)
{
    if (ep->armed)
        disarm_all(ep);
    fl_ep_flush_hold(ep);
    FL_COUNT(ep->stats.polls, 1);
    size_t before = ep->pace_left;
    bool got = true;
    while (got && ep->pace_left) {
        got = false;
        for (int i = 0; i < ep->ntp && ep->pace_left; i++)
            got |= ep->tps[i]->poll(ep->tpes[i], FL_LANES_ALL, extract_one, ep, 1) > 0;
    }
    if (ep->pace_left != before && ep->cond_waiters)
        pthread_cond_broadcast(&ep->progress_cond);
    if (FL_READ(ep->stats.polls) % CHECK_EVERY == 0)
        fl_progress_check_peers(ep, false);
    return before - ep->pace_left;
}

static bool any_event(struct flit_ep *ep, void *arg)
{
    return ep->events != *(uint64_t *)arg;
}

/* A program's wait on ep until done(ep, the event count at the start)
   holds; the endpoint is disarmed: this thread serves it now. */
static flit_status wait_for(flit_ep_t *ep, fl_done_fn done, int64_t timeout_us)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (ep->armed)
        disarm_all(ep);
    uint64_t start = ep->events;
    st = fl_progress_until(ep, done, &start, timeout_us);
    fl_ep_leave(ep);
    return st;
}

flit_status flit_wait(flit_ep_t *ep, int64_t timeout_us)
{
    return wait_for(ep, any_event, timeout_us);
}

flit_status flit_ep_flush(flit_ep_t *ep, int64_t timeout_us)
{
    return wait_for(ep, fl_ep_settled, timeout_us);
}

flit_status flit_ep_fd(flit_ep_t *ep, int *fd_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!fd_out)
        return FLIT_ERR_INVALID_ARG;
    *fd_out = ep->epfd;
    return FLIT_OK;
}

flit_status flit_ep_arm(flit_ep_t *ep)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (arm_all(ep, FL_LANES_ALL)) {
        disarm_all(ep);
        st = FLIT_ERR_AGAIN;
    } else {
        ep->armed = true;
    }
    fl_ep_leave(ep);
    return st;
}

/* ---- the optional progress thread ---- */

static void *progress_main(void *arg)
{
    struct flit_ep *ep = arg;
    pthread_mutex_lock(&ep->lock);
    while (!atomic_load_explicit(&ep->progress_stop, memory_order_relaxed)) {
        int n = fl_progress(ep, FL_LANES_ALL);
        fl_listeners_progress(ep);
        if (n > 0)
            continue;
        fl_progress_check_peers(ep, false);
        /* Sleeps right away: this thread serves a program that computes,
           and spinning would take its core. */
        fl_progress_sleep(ep, FL_LANES_ALL, fl_cfg.peer_check_ms * 1000);
    }
    pthread_mutex_unlock(&ep->lock);
    return NULL;
}

flit_status fl_progress_thread_start(struct flit_ep *ep)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals are the program's */
    int err = pthread_create(&ep->progress_thread, NULL, progress_main, ep);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        fl_error("cannot start the progress thread: %s", strerror(err));
        return FLIT_ERR_SYSTEM;
    }
    ep->has_progress_thread = true;
    return FLIT_OK;
}

void fl_progress_thread_stop(struct flit_ep *ep)
{
    if (!ep->has_progress_thread)
        return;
    pthread_mutex_lock(&ep->lock);
    atomic_store(&ep->progress_stop, true);
    uint64_t one = 1; /* off the fd, or out of the condition */
    ssize_t w = write(ep->evfd, &one, sizeof one);
    (void)w;
    pthread_cond_broadcast(&ep->progress_cond);
    pthread_mutex_unlock(&ep->lock);
    pthread_join(ep->progress_thread, NULL);
    ep->has_progress_thread = false;
}
