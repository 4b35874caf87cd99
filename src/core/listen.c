/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Listeners (flit.h): how layers built on the public API hear of an
 * endpoint's events.
 *
 * The list is walked by one thread at a time; the walking thread may
 * change it from inside a listener (a removed entry turns NULL and the
 * list is compacted when the walk ends), any other thread that wants to
 * change it waits for the walk to end, so that no listener is called
 * after flit_ep_unlisten has returned to another thread (its state may be
 * freed by then).
 *
 * Progress listeners run as program code: the walking thread steps out
 * of the endpoint (lock released, or ownership of a single-threaded one
 * given up) around them, so that they may call flit like any program,
 * then steps back in. Where the caller must keep the endpoint (a handler
 * runs, a long message is going out in pieces) they are not run.
 */
#include "core/ep.h"

static bool walked_by_other(const struct flit_ep *ep)
{
    return ep->walking && ep->walker != fl_thread_id();
}

/* With the endpoint entered: until no other thread walks the list. */
static void wait_for_walk(struct flit_ep *ep)
{
    if (ep->mode != FLIT_THREAD_SAFE)
        return; /* one thread: its own walk */
    while (walked_by_other(ep)) {
        ep->cond_waiters++;
        pthread_cond_wait(&ep->progress_cond, &ep->lock);
        ep->cond_waiters--;
    }
}

static void walk_begin(struct flit_ep *ep)
{
    ep->walking++;
    ep->walker = fl_thread_id();
}

static void walk_end(struct flit_ep *ep)
{
    if (--ep->walking)
        return;
    ep->walker = 0;
    if (ep->listener_holes) { /* every pass ends a walk: only then */
        unsigned n = 0;
        for (unsigned i = 0; i < ep->nlisteners; i++)
            if (ep->listeners[i].l)
                ep->listeners[n++] = ep->listeners[i];
        ep->nlisteners = n;
        ep->listener_holes = false;
    }
    if (ep->cond_waiters)
        pthread_cond_broadcast(&ep->progress_cond);
}

static int find(const struct flit_ep *ep, const flit_ep_listener_t *l, void *user)
{
    for (unsigned i = 0; i < ep->nlisteners; i++)
        if (ep->listeners[i].l == l && ep->listeners[i].user == user)
            return (int)i;
    return -1;
}

static void count_progress(struct flit_ep *ep)
{
    unsigned n = 0;
    for (unsigned i = 0; i < ep->nlisteners; i++)
        n += ep->listeners[i].l && ep->listeners[i].l->progress;
    ep->nprogress = n;
}

flit_status flit_ep_listen(flit_ep_t *ep, const flit_ep_listener_t *l, void *user)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    wait_for_walk(ep);
    if (!l || find(ep, l, user) >= 0)
        st = FLIT_ERR_INVALID_ARG;
    else if (ep->nlisteners == FLIT_EP_MAX_LISTENERS)
        st = FLIT_ERR_EXHAUSTED;
    else
        ep->listeners[ep->nlisteners++] = (struct fl_listener){l, user};
    count_progress(ep);
    fl_ep_leave(ep);
    return st;
}

flit_status flit_ep_unlisten(flit_ep_t *ep, const flit_ep_listener_t *l, void *user)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    wait_for_walk(ep);
    int i = l ? find(ep, l, user) : -1;
    if (i < 0) {
        st = FLIT_ERR_INVALID_ARG;
    } else {
        ep->listeners[i].l = NULL; /* compacted when the walk ends */
        ep->listener_holes = true;
        walk_begin(ep);
        walk_end(ep);
    }
    count_progress(ep);
    fl_ep_leave(ep);
    return st;
}

/* In handler context, endpoint entered: the peer is marked down. */
void fl_listeners_peer_down(struct flit_ep *ep, uint32_t rank, flit_status reason)
{
    walk_begin(ep);
    for (unsigned i = 0; i < ep->nlisteners; i++) {
        struct fl_listener x = ep->listeners[i];
        if (x.l && x.l->peer_down)
            x.l->peer_down(ep, flit_rank(rank), reason, x.user);
    }
    walk_end(ep);
}

/* Gives up the endpoint the caller holds (entered, or the progress
   thread's lock) for a while; what to restore is returned. */
static struct flit_ep *step_out(struct flit_ep *ep)
{
    struct flit_ep *was = fl_in_call;
    fl_in_call = NULL;
    if (ep->mode == FLIT_THREAD_SAFE)
        pthread_mutex_unlock(&ep->lock);
    else
        atomic_store_explicit(&ep->owner, 0, memory_order_relaxed);
    return was;
}

static void step_in(struct flit_ep *ep, struct flit_ep *was)
{
    if (ep->mode == FLIT_THREAD_SAFE)
        pthread_mutex_lock(&ep->lock);
    else
        atomic_store_explicit(&ep->owner, fl_thread_id(), memory_order_relaxed);
    fl_in_call = was;
}

void fl_listeners_progress_slow(struct flit_ep *ep)
{
    if (fl_handler_depth || ep->keep_lock || ep->in_progress_listeners ||
        walked_by_other(ep) || ep->closing)
        return;
    ep->in_progress_listeners = true;
    walk_begin(ep);
    /* Out once around them all: while this thread walks, no other one
       changes the list (wait_for_walk), and this one changes it only
       through entries it turns NULL. */
    struct flit_ep *was = step_out(ep);
    for (unsigned i = 0; i < ep->nlisteners; i++) {
        struct fl_listener x = ep->listeners[i];
        if (x.l && x.l->progress)
            x.l->progress(ep, x.user);
    }
    step_in(ep, was);
    walk_end(ep);
    ep->in_progress_listeners = false;
}

void fl_listeners_closing(struct flit_ep *ep)
{
    if (fl_ep_enter(ep) != FLIT_OK)
        return;
    wait_for_walk(ep);
    walk_begin(ep);
    for (unsigned i = 0; i < ep->nlisteners; i++) {
        struct fl_listener x = ep->listeners[i];
        if (!x.l || !x.l->closing)
            continue;
        fl_ep_leave(ep);
        x.l->closing(ep, x.user);
        if (fl_ep_enter(ep) != FLIT_OK)
            return; /* another thread destroyed it meanwhile: not ours */
    }
    walk_end(ep);
    fl_ep_leave(ep);
}
