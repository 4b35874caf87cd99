/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting for calls (internal.h): test, wait and wait_any, and how threads
 * share the waiting on a thread-safe endpoint. One waiter at a time drives
 * the endpoint (polls, then flit_wait in slices); the others sleep, each
 * on a condition of its own (struct rpc_waiter, on its stack) that the
 * calls it waits for point to. Completing a call signals its waiter only:
 * no thundering herd, and no thread takes another's reply. A driver that
 * leaves hands the driving to the first sleeper. A procedure that may
 * block parks instead, woken by the completion of one of its calls.
 */
#include "internal.h"

bool fl_rpc_any_done(flit_rpc_call_t **calls, size_t n, int64_t now, size_t *idx)
{
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = fl_rpc_call_of(calls[i]);
        if (!c)
            continue;
        if (c->deadline && now >= c->deadline &&
            atomic_load_explicit(&c->state, memory_order_relaxed) == C_SENT)
            fl_rpc_end_sent(c->rpc, c, FLIT_ERR_TIMEOUT);
        if (call_done(c)) {
            *idx = i;
            return true;
        }
    }
    return false;
}

/* The earliest of the calls' own deadlines and limit (ns; 0: none). */
static int64_t next_deadline(flit_rpc_call_t **calls, size_t n, int64_t limit)
{
    int64_t d = limit;
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = fl_rpc_call_of(calls[i]);
        if (c && c->deadline && (!d || c->deadline < d))
            d = c->deadline;
    }
    return d;
}

static bool any_done_unlocked(flit_rpc_call_t **calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = fl_rpc_call_of(calls[i]);
        if (c && call_done(c))
            return true;
    }
    return false;
}

/* Under the mutex: the thread asleep on (w) or the procedure parked on
   (park) the live calls among calls[0..n), whichever is_thread says. */
static void set_sleeper(flit_rpc_call_t **calls, size_t n, bool is_thread,
                        struct rpc_waiter *w, flit_stream_t *park)
{
    for (size_t i = 0; i < n; i++) {
        struct flit_rpc_call *c = fl_rpc_call_of(calls[i]);
        if (c && is_thread)
            c->waiter = w;
        else if (c)
            c->parker = park;
    }
}

/* Up to POLLS_FIRST polls: whether they ended the turn (*st: how). */
static bool poll_first(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                       flit_status *st)
{
    for (int i = 0; i < POLLS_FIRST; i++) {
        *st = flit_poll(r->ep);
        if (*st != FLIT_OK || any_done_unlocked(calls, n))
            return true;
    }
    return false;
}

/* One turn of driving: polls first, then one flit_wait up to deadline. */
static flit_status drive(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                         int64_t deadline, bool first)
{
    flit_status st;
    if (first && poll_first(r, calls, n, &st))
        return st;
    int64_t slice = SLICE_US;
    if (deadline) {
        int64_t left = (deadline - flit_clock_ns()) / 1000;
        slice = left < slice ? (left > 0 ? left : 0) : slice;
    }
    st = flit_wait(r->ep, slice);
    return st == FLIT_ERR_TIMEOUT ? FLIT_OK : st;
}

/* A condition on the monotonic clock, as the deadlines are. */
static void waiter_init(struct rpc_waiter *w)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &a);
    pthread_condattr_destroy(&a);
    w->woken = false;
}

/* Under the mutex: w off the list of sleepers. */
static void sleepers_unlink(struct flit_rpc *r, struct rpc_waiter *w)
{
    struct rpc_waiter **pp = &r->sleepers;
    while (*pp != w)
        pp = &(*pp)->next;
    *pp = w->next;
}

/* Under the mutex: sleeps as a follower until woken or deadline (or a
   nap at most). */
static void follow(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                   int64_t deadline)
{
    struct rpc_waiter w;
    waiter_init(&w);
    set_sleeper(calls, n, true, &w, NULL);
    w.next = r->sleepers;
    r->sleepers = &w;
    int64_t until = flit_clock_ns() + (int64_t)NAP_US * 1000;
    if (deadline && deadline < until)
        until = deadline;
    struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
    while (!w.woken && r->driving && flit_clock_ns() < until)
        if (pthread_cond_timedwait(&w.cond, &r->lock, &ts) != 0)
            break;
    sleepers_unlink(r, &w);
    set_sleeper(calls, n, true, NULL, NULL);
    pthread_cond_destroy(&w.cond);
}

/* Inside procedure cur (it may block): parks it until one of the calls is
   complete. The calls' own timeouts are seen only when it is woken. */
static flit_status wait_parked(struct flit_rpc *r, struct flit_rpc_req *cur,
                               flit_rpc_call_t **calls, size_t n, size_t *idx)
{
    for (;;) {
        rpc_lock(r);
        bool done = fl_rpc_any_done(calls, n, flit_clock_ns(), idx);
        set_sleeper(calls, n, false, NULL, done ? NULL : cur->park);
        rpc_unlock(r);
        if (done)
            return FLIT_OK;
        flit_status st = fl_rpc_block(cur);
        if (st != FLIT_OK) {
            rpc_lock(r);
            set_sleeper(calls, n, false, NULL, NULL);
            rpc_unlock(r);
            return st;
        }
    }
}

/* Under the mutex: one turn as the driver, the mutex released meanwhile. */
static flit_status drive_turn(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                              int64_t deadline, bool first)
{
    r->driving = true;
    rpc_unlock(r);
    flit_status st = drive(r, calls, n, deadline, first);
    rpc_lock(r);
    r->driving = false;
    return st;
}

/* Under the mutex: a driver leaving hands the driving to a sleeper, if
   there is one. */
static void hand_off(struct flit_rpc *r)
{
    if (r->mt && !r->driving && r->sleepers) {
        r->sleepers->woken = true;
        pthread_cond_signal(&r->sleepers->cond);
    }
}

flit_status fl_rpc_wait_calls(struct flit_rpc *r, flit_rpc_call_t **calls, size_t n,
                              int64_t limit, size_t *idx)
{
    struct flit_rpc_req *cur = fl_rpc_current();
    if (cur && cur->park)
        return wait_parked(r, cur, calls, n, idx);
    flit_status st = FLIT_OK;
    bool first = true;
    rpc_lock(r);
    for (;;) {
        int64_t now = flit_clock_ns();
        if (fl_rpc_any_done(calls, n, now, idx))
            break;
        if (limit && now >= limit && !first) { /* one pass at least */
            st = FLIT_ERR_AGAIN;
            break;
        }
        int64_t deadline = next_deadline(calls, n, limit);
        if (r->mt && r->driving)
            follow(r, calls, n, deadline);
        else
            st = drive_turn(r, calls, n, deadline, first);
        first = false;
        if (st != FLIT_OK)
            break;
    }
    hand_off(r);
    rpc_unlock(r);
    return st;
}

flit_status flit_rpc_test(flit_rpc_call_t **cp, int *done, flit_rpc_result_t *result)
{
    struct flit_rpc_call *c = cp ? fl_rpc_call_of(*cp) : NULL;
    if (!c || !done)
        return FLIT_ERR_INVALID_ARG;
    size_t idx;
    if (!call_done(c)) {
        /* Inside a handler no progress can be made: test only looks. */
        flit_status st = flit_poll(c->rpc->ep);
        if (st != FLIT_OK && st != FLIT_ERR_IN_HANDLER)
            return st;
        rpc_lock(c->rpc);
        bool d = fl_rpc_any_done(cp, 1, flit_clock_ns(), &idx);
        rpc_unlock(c->rpc);
        if (!d) {
            *done = 0;
            return FLIT_OK;
        }
    }
    *done = 1;
    return fl_rpc_finish(cp, result);
}

static int64_t limit_of(int64_t timeout_us)
{
    return timeout_us < 0 ? 0 : flit_clock_ns() + timeout_us * 1000 + 1;
}

/* The one object of the live calls among calls[0..n) (NULL entries
   skipped); NULL when there is none, or a value names no live call, or
   the calls are of several objects. */
static struct flit_rpc *object_of_calls(flit_rpc_call_t **calls, size_t n)
{
    struct flit_rpc *r = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!calls[i])
            continue;
        struct flit_rpc_call *c = fl_rpc_call_of(calls[i]);
        if (!c || (r && c->rpc != r))
            return NULL;
        r = c->rpc;
    }
    return r;
}

flit_status flit_rpc_wait_any(size_t n, flit_rpc_call_t **calls, int64_t timeout_us,
                              size_t *index, flit_rpc_result_t *result)
{
    struct flit_rpc *r = calls && index ? object_of_calls(calls, n) : NULL;
    if (!r)
        return FLIT_ERR_INVALID_ARG;
    size_t idx;
    flit_status st = fl_rpc_wait_calls(r, calls, n, limit_of(timeout_us), &idx);
    if (st != FLIT_OK)
        return st;
    *index = idx;
    return fl_rpc_finish(&calls[idx], result);
}

flit_status flit_rpc_wait(flit_rpc_call_t **cp, int64_t timeout_us,
                          flit_rpc_result_t *result)
{
    if (!cp || !fl_rpc_call_of(*cp))
        return FLIT_ERR_INVALID_ARG;
    size_t idx;
    return flit_rpc_wait_any(1, cp, timeout_us, &idx, result);
}
