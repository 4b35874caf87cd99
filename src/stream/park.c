/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parking (flit_stream_park / unpark): a handler on a fiber that has taken
 * its whole message waits for an event only its layer knows (a lock let
 * go, a reply), without stopping the endpoint.
 *
 * The park lock (per endpoint, a leaf) orders a park against an unpark
 * from any thread: park sees an unpark that came first (wake) and returns
 * at once; otherwise it marks the stream parked and yields to run(), and
 * the unpark that comes later puts it on the ready list. The layer's
 * progress listener, which runs after each progress pass as program code,
 * enters the endpoint and resumes the ready handlers in handler context.
 * An unpark from outside any handler also pokes the endpoint's eventfd, so
 * that a flit_wait asleep wakes for it. A sender that dies or an endpoint
 * that closes resumes a parked handler through fl_stream_end_all, with the
 * error that park then answers.
 *
 * Pacing uses the same list: a handler pulling its message inside
 * flit_extract whose budget is spent waits there (fl_stream_pace_wait),
 * and goes on in the next flit_extract or any other progress pass.
 */
#include <unistd.h>

#include "stream/stream.h"

/* Under the park lock. */
static void unready_locked(struct fl_stream_ep *se, struct fl_st_in *s)
{
    struct fl_st_in **pp = &se->ready_head, *prev = NULL;
    while (*pp && *pp != s) {
        prev = *pp;
        pp = &(*pp)->ready_next;
    }
    if (!*pp)
        return;
    *pp = s->ready_next;
    if (se->ready_tail == s)
        se->ready_tail = prev;
    s->ready = false;
    s->ready_next = NULL;
    atomic_fetch_sub_explicit(&se->nready, 1, memory_order_relaxed);
}

/* Under the park lock: s goes on at the tail of the ready list. */
static void ready_locked(struct fl_stream_ep *se, struct fl_st_in *s)
{
    s->ready = true;
    s->ready_next = NULL;
    if (se->ready_tail)
        se->ready_tail->ready_next = s;
    else
        se->ready_head = s;
    se->ready_tail = s;
    atomic_fetch_add_explicit(&se->nready, 1, memory_order_release);
}

void fl_stream_unready(struct fl_stream_ep *se, struct fl_st_in *s)
{
    pthread_mutex_lock(&se->park_lock);
    unready_locked(se, s);
    pthread_mutex_unlock(&se->park_lock);
}

flit_status flit_stream_park(flit_stream_t *h)
{
    struct fl_st_in *s = NULL;
    flit_status st = fl_stream_usable(h, &s);
    if (st != FLIT_OK)
        return st;
    if (!s->fiber)
        return FLIT_ERR_NOT_SUPPORTED;
    if (s->taken < s->total)
        return FLIT_ERR_AGAIN;
    struct fl_stream_ep *se = fl_stream_of(s->ep);
    for (;;) {
        if (s->error)
            return s->error;
        pthread_mutex_lock(&se->park_lock);
        bool go = s->wake;
        s->wake = false;
        s->parked = !go;
        pthread_mutex_unlock(&se->park_lock);
        if (go)
            return FLIT_OK;
        fl_fiber_yield(s->fiber); /* run() returns; resumed ready or ended */
        pthread_mutex_lock(&se->park_lock);
        s->parked = false;
        unready_locked(se, s);
        pthread_mutex_unlock(&se->park_lock);
    }
}

flit_status flit_stream_unpark(flit_stream_t *h)
{
    if (!h)
        return FLIT_ERR_INVALID_ARG;
    /* Any thread: the slot is never freed, so the check reads no freed
       memory. A handle that passes is the handler's until it returns. */
    struct fl_st_in *s = fl_st_in_of(h);
    if (!s)
        return FLIT_ERR_BAD_TOKEN;
    struct flit_ep *ep = s->ep;
    struct fl_stream_ep *se = fl_stream_of(ep);
    pthread_mutex_lock(&se->park_lock);
    s->wake = true;
    bool queue = s->parked && !s->ready;
    if (queue)
        ready_locked(se, s);
    pthread_mutex_unlock(&se->park_lock);
    if (queue && fl_handler_depth == 0) {
        uint64_t one = 1; /* a flit_wait asleep: its pass resumes s */
        ssize_t w = write(ep->evfd, &one, sizeof one);
        (void)w;
    }
    return FLIT_OK;
}

/* See stream.h. */
bool fl_stream_resume_ready(struct flit_ep *ep)
{
    struct fl_stream_ep *se = fl_stream_of(ep);
    bool any = false;
    while (!ep->pacing || ep->pace_left) {
        pthread_mutex_lock(&se->park_lock);
        struct fl_st_in *s = se->ready_head;
        if (s)
            unready_locked(se, s);
        pthread_mutex_unlock(&se->park_lock);
        if (!s)
            break;
        fl_stream_run(ep, s); /* a ready handler is live: park keeps it */
        any = true;
    }
    return any;
}

/* See stream.h. */
void fl_stream_pace_wait(struct fl_st_in *s)
{
    struct fl_stream_ep *se = fl_stream_of(s->ep);
    pthread_mutex_lock(&se->park_lock);
    if (!s->ready)
        ready_locked(se, s);
    pthread_mutex_unlock(&se->park_lock);
    fl_fiber_yield(s->fiber); /* resumed from the ready list, or ended */
    fl_stream_unready(se, s);
}

/* Program context, after a progress pass: resumes the ready handlers. */
static void park_progress(flit_ep_t *ep, void *user)
{
    struct fl_stream_ep *se = user;
    if (!atomic_load_explicit(&se->nready, memory_order_acquire))
        return;
    if (fl_ep_enter(ep) != FLIT_OK)
        return; /* another thread is inside: its own pass resumes them */
    fl_stream_resume_ready(ep);
    fl_ep_leave(ep);
}

const flit_ep_listener_t fl_stream_park_listener = {.progress = park_progress};

flit_status fl_stream_park_listen(struct flit_ep *ep)
{
    struct fl_stream_ep *se = fl_stream_of(ep);
    if (se->listening)
        return FLIT_OK;
    flit_status st = flit_ep_listen(ep, &fl_stream_park_listener, se);
    if (st == FLIT_ERR_INVALID_ARG) /* another thread added it meanwhile */
        st = FLIT_OK;
    if (st == FLIT_OK)
        se->listening = true;
    return st;
}
