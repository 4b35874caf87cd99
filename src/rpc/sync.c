/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A mutex and a condition variable that RPC procedures may wait on without
 * stopping the endpoint (<flit/rpc.h>). A waiter is a procedure (its fiber
 * parks: flit_stream_park, through fl_rpc_block) or a program thread (it
 * sleeps on a condition of its own). Each object has a guard (a leaf
 * mutex, never held across a flit call but flit_stream_unpark, which takes
 * only the stream layer's leaf park lock) and a FIFO of waiters living on
 * their waiters' stacks.
 *
 * The mutex is handed over: unlock gives it to the first waiter (granted)
 * and wakes that one only; it stays locked throughout, so no one barges
 * in between. A parked waiter's park may also end with an error (its
 * caller died, the endpoint closes); it then leaves the queue, or passes
 * the mutex on if it had just been granted it.
 *
 * Handles: the values handed out are <flit/handle.h> handles, one table per
 * type, so that a mutex or condition used after its destroy (even once
 * malloc gave its block to a new one) answers FLIT_ERR_INVALID_ARG.
 */
#include <flit/handle.h>
#include <stdlib.h>

#include "internal.h"

struct sync_waiter {
    struct sync_waiter *next;
    flit_stream_t *park;  /* a procedure's stream, or NULL: a thread */
    pthread_cond_t *cond; /* a thread's */
    bool granted;         /* mutex: handed over; condition: signalled */
};

struct sync_queue {
    struct sync_waiter *head, *tail;
};

struct flit_mutex {
    pthread_mutex_t guard;
    bool locked;
    struct sync_queue q;
};

struct flit_cond {
    pthread_mutex_t guard;
    struct sync_queue q;
};

static flit_handles_t *mutexes, *conds;

static struct flit_mutex *mutex_of(flit_mutex_t *h)
{
    return flit_handle_get(&mutexes, h);
}

static struct flit_cond *cond_of(flit_cond_t *h)
{
    return flit_handle_get(&conds, h);
}

static void q_push(struct sync_queue *q, struct sync_waiter *w)
{
    w->next = NULL;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
}

static struct sync_waiter *q_pop(struct sync_queue *q)
{
    struct sync_waiter *w = q->head;
    if (w && !(q->head = w->next))
        q->tail = NULL;
    return w;
}

/* Takes w out of q if it is there. */
static void q_remove(struct sync_queue *q, struct sync_waiter *w)
{
    struct sync_waiter **pp = &q->head, *prev = NULL;
    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = w->next;
    if (q->tail == w)
        q->tail = prev;
}

/* Under the guard: w is granted and told. */
static void grant(struct sync_waiter *w)
{
    w->granted = true;
    if (w->park)
        (void)flit_stream_unpark(w->park);
    else
        pthread_cond_signal(w->cond);
}

/* Who waits: req's procedure (it must be able to block), or this thread
   outside any handler. */
static flit_status waiter_of(struct flit_rpc_req *req, struct sync_waiter *w)
{
    *w = (struct sync_waiter){0};
    if (req) {
        if (!req->live)
            return FLIT_ERR_INVALID_ARG;
        if (!req->park)
            return FLIT_ERR_IN_HANDLER;
        w->park = req->park;
        return FLIT_OK;
    }
    /* A thread inside a handler would stop the engine it runs. */
    return fl_rpc_current() ? FLIT_ERR_IN_HANDLER : FLIT_OK;
}

/*
 * Under guard, with w queued: waits until w is granted. A thread sleeps; a
 * procedure parks (guard let go meanwhile). On a park error w is no longer
 * queued; *granted says whether it was granted anyway.
 */
static flit_status wait_granted(pthread_mutex_t *guard, struct sync_queue *q,
                                struct sync_waiter *w, struct flit_rpc_req *req)
{
    if (!w->park) {
        pthread_cond_t cond;
        pthread_cond_init(&cond, NULL);
        w->cond = &cond;
        while (!w->granted)
            pthread_cond_wait(&cond, guard);
        pthread_cond_destroy(&cond);
        return FLIT_OK;
    }
    while (!w->granted) {
        pthread_mutex_unlock(guard);
        flit_status st = fl_rpc_block(req);
        pthread_mutex_lock(guard);
        if (st != FLIT_OK && !w->granted) {
            q_remove(q, w);
            return st;
        }
        if (st != FLIT_OK)
            return st; /* granted as it was let go: the caller passes it on */
    }
    return FLIT_OK;
}

/* ---------------------------------------------------------------- objects */

/* A zeroed object of size bytes, its guard (the first member of both
   types) set up, handed out from table as *out. */
static flit_status guarded_new(size_t size, flit_handles_t **table, void **out)
{
    pthread_mutex_t *guard = calloc(1, size);
    if (!guard)
        return FLIT_ERR_NO_MEMORY;
    flit_status st = FLIT_ERR_SYSTEM;
    if (pthread_mutex_init(guard, NULL) != 0)
        goto err_free;
    if ((st = flit_handle_new(table, guard, out)) != FLIT_OK)
        goto err_destroy_guard;
    return FLIT_OK;
err_destroy_guard:
    pthread_mutex_destroy(guard);
err_free:
    free(guard);
    return st;
}

/* Frees handle h of table, then its object (guard: its first member);
   FLIT_ERR_INVALID_ARG when another thread's destroy won. */
static flit_status guarded_free(flit_handles_t **table, const void *h,
                                pthread_mutex_t *guard)
{
    if (flit_handle_free(table, h) != guard)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_destroy(guard);
    free(guard);
    return FLIT_OK;
}

/* ---------------------------------------------------------------- mutex */

flit_status flit_mutex_create(flit_mutex_t **out)
{
    void *h = NULL;
    flit_status st =
        out ? guarded_new(sizeof(struct flit_mutex), &mutexes, &h) : FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK)
        *out = h;
    return st;
}

flit_status flit_mutex_destroy(flit_mutex_t *h)
{
    struct flit_mutex *m = mutex_of(h);
    if (!m)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&m->guard);
    bool busy = m->locked || m->q.head;
    pthread_mutex_unlock(&m->guard);
    if (busy)
        return FLIT_ERR_AGAIN;
    return guarded_free(&mutexes, h, &m->guard);
}

/* Under the guard: the mutex goes to the next waiter, or is free. */
static void pass_on(struct flit_mutex *m)
{
    struct sync_waiter *w = q_pop(&m->q);
    if (w)
        grant(w);
    else
        m->locked = false;
}

flit_status flit_mutex_trylock(flit_mutex_t *h)
{
    struct flit_mutex *m = mutex_of(h);
    if (!m)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&m->guard);
    bool got = !m->locked;
    m->locked = true;
    pthread_mutex_unlock(&m->guard);
    return got ? FLIT_OK : FLIT_ERR_AGAIN;
}

flit_status flit_mutex_lock(flit_mutex_t *h, flit_rpc_req_t *rh)
{
    struct flit_mutex *m = mutex_of(h);
    struct flit_rpc_req *req = rh ? fl_rpc_req_of(rh) : NULL;
    if (!m || (rh && !req)) /* a request whose procedure returned */
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&m->guard);
    if (!m->locked) {
        m->locked = true;
        pthread_mutex_unlock(&m->guard);
        return FLIT_OK;
    }
    struct sync_waiter w;
    flit_status st = waiter_of(req, &w);
    if (st == FLIT_OK) {
        q_push(&m->q, &w);
        st = wait_granted(&m->guard, &m->q, &w, req);
        if (st != FLIT_OK && w.granted)
            pass_on(m); /* it must return: not holding it */
    }
    pthread_mutex_unlock(&m->guard);
    return st;
}

flit_status flit_mutex_unlock(flit_mutex_t *h)
{
    struct flit_mutex *m = mutex_of(h);
    if (!m)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&m->guard);
    bool was = m->locked;
    if (was)
        pass_on(m);
    pthread_mutex_unlock(&m->guard);
    return was ? FLIT_OK : FLIT_ERR_INVALID_ARG;
}

/* ---------------------------------------------------------------- condition */

flit_status flit_cond_create(flit_cond_t **out)
{
    void *h = NULL;
    flit_status st =
        out ? guarded_new(sizeof(struct flit_cond), &conds, &h) : FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK)
        *out = h;
    return st;
}

flit_status flit_cond_destroy(flit_cond_t *h)
{
    struct flit_cond *c = cond_of(h);
    if (!c)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&c->guard);
    bool busy = c->q.head != NULL;
    pthread_mutex_unlock(&c->guard);
    if (busy)
        return FLIT_ERR_AGAIN;
    return guarded_free(&conds, h, &c->guard);
}

flit_status flit_cond_wait(flit_cond_t *h, flit_mutex_t *m, flit_rpc_req_t *rh)
{
    struct flit_cond *c = cond_of(h);
    struct flit_rpc_req *req = rh ? fl_rpc_req_of(rh) : NULL;
    if (!c || !mutex_of(m) || (rh && !req))
        return FLIT_ERR_INVALID_ARG;
    struct sync_waiter w;
    flit_status st = waiter_of(req, &w);
    if (st != FLIT_OK)
        return st;
    /* Queued before m is let go: a signal after the unlock finds it. */
    pthread_mutex_lock(&c->guard);
    q_push(&c->q, &w);
    pthread_mutex_unlock(&c->guard);
    if ((st = flit_mutex_unlock(m)) != FLIT_OK) {
        pthread_mutex_lock(&c->guard);
        q_remove(&c->q, &w);
        pthread_mutex_unlock(&c->guard);
        return st; /* m was not locked */
    }
    pthread_mutex_lock(&c->guard);
    st = wait_granted(&c->guard, &c->q, &w, req);
    pthread_mutex_unlock(&c->guard);
    if (st != FLIT_OK)
        return st; /* the procedure must return: it does not take m again */
    return flit_mutex_lock(m, rh);
}

flit_status flit_cond_signal(flit_cond_t *h)
{
    struct flit_cond *c = cond_of(h);
    if (!c)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&c->guard);
    struct sync_waiter *w = q_pop(&c->q);
    if (w)
        grant(w);
    pthread_mutex_unlock(&c->guard);
    return FLIT_OK;
}

flit_status flit_cond_broadcast(flit_cond_t *h)
{
    struct flit_cond *c = cond_of(h);
    if (!c)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&c->guard);
    struct sync_waiter *w;
    while ((w = q_pop(&c->q)))
        grant(w);
    pthread_mutex_unlock(&c->guard);
    return FLIT_OK;
}
