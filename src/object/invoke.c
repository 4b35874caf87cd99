/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_object_invoke: where an operation runs (the copy here, the owner,
 * or every replica through the group), and for AUTO objects again under
 * the next placement when a switch overtook it.
 */
#include "object_int.h"

#include <stdlib.h>

/* Waits (making progress) until the guard of op holds, then applies it on
   the copy here; owned objects also run their queue after a write. */
static flit_status invoke_local(flit_object_t *o, uint32_t epoch, unsigned op,
                                const void *arg, size_t len, const struct iovec *res,
                                int nres, size_t cap, size_t *res_len, uint32_t *target)
{
    const flit_object_op_t *d = &o->type->ops[op];
    bool waited = false;
    for (;;) {
        struct pending *done = NULL;
        pthread_mutex_lock(&o->lock);
        if (o->missed) { /* this copy missed a write: nothing here is right */
            pthread_mutex_unlock(&o->lock);
            return FLIT_ERR_NO_MEMORY;
        }
        if (o->adaptive && (o->epoch != epoch || o->moving)) {
            /* A switch came (or is on its way) since this began. */
            *target = o->epoch + (o->moving ? 1u : 0u);
            pthread_mutex_unlock(&o->lock);
            return REDIRECT;
        }
        if (object_guard_holds(o, op, arg, len)) {
            if (o->adaptive && o->strategy == FLIT_OBJECT_OWNED)
                place_count(o, flit_job_rank().idx, d->kind == FLIT_OBJECT_WRITE);
            size_t n;
            if (nres == 1 && res[0].iov_len >= d->res_max) {
                n = object_apply(o, op, arg, len, res[0].iov_base);
            } else {
                n = object_apply(o, op, arg, len, NULL);
                flit_iov_scatter(res, nres, o->scratch, n);
            }
            if (d->kind == FLIT_OBJECT_WRITE)
                object_run_queue(o, &done);
            pthread_mutex_unlock(&o->lock);
            object_answer(done);
            *res_len = n;
            return n > cap ? FLIT_ERR_TOO_LARGE : FLIT_OK;
        }
        pthread_mutex_unlock(&o->lock);
        if (!waited)
            atomic_fetch_add_explicit(&o->guard_waits, 1, memory_order_relaxed);
        waited = true;
        flit_status st = flit_wait(o->objs->ep, WAIT_SLICE);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
    }
}

/* The argument flat in *flat: its one piece, or the pieces joined once in
 *joined (to be freed). False when that cannot be had. */
static bool join(const struct iovec *arg, int narg, size_t len, const void **flat,
                 void **joined)
{
    *flat = NULL;
    *joined = NULL;
    if (narg == 1) {
        *flat = arg[0].iov_base;
    } else if (narg > 1) {
        if (!(*joined = malloc(len ? len : 1)))
            return false;
        flit_iov_gather(*joined, arg, narg);
        *flat = *joined;
    }
    return true;
}

/* An AUTO object: the operation under the placement seen when it starts,
   made again under the next one when a switch overtook it (the attempt
   that met the switch was applied nowhere). */
static flit_status invoke_auto(flit_object_t *o, unsigned op, bool write,
                               const struct iovec *arg, int narg, size_t len,
                               const struct iovec *res, int nres, size_t cap,
                               size_t *res_len)
{
    const void *flat;
    void *joined;
    if (!join(arg, narg, len, &flat, &joined))
        return FLIT_ERR_NO_MEMORY;
    flit_status st;
    flit_object_strategy was;
    for (;;) {
        pthread_mutex_lock(&o->lock);
        uint32_t epoch = o->epoch, target = epoch;
        was = o->strategy;
        flit_rank_t owner = o->owner;
        bool holds = o->holds, dead = o->owner_dead;
        pthread_mutex_unlock(&o->lock);
        if (was == FLIT_OBJECT_OWNED && !holds && dead) {
            st = FLIT_ERR_PEER_DOWN;
            break;
        }
        if (was == FLIT_OBJECT_REPLICATED ? !write : holds) {
            atomic_fetch_add_explicit(&o->local, 1, memory_order_relaxed);
            st = invoke_local(o, epoch, op, flat, len, res, nres, cap, res_len, &target);
        } else if (was == FLIT_OBJECT_OWNED) {
            st = object_invoke_remote(o, owner, epoch, op, arg, narg, res, nres, res_len,
                                      &target);
        } else {
            st = object_invoke_write(o, epoch, op, arg, narg, flat, len, res, nres,
                                     res_len, &target);
        }
        if (st != REDIRECT)
            break;
        atomic_fetch_add_explicit(&o->retries, 1, memory_order_relaxed);
        if ((st = place_await(o, epoch, target)) != FLIT_OK)
            break;
    }
    free(joined);
    if (st == FLIT_OK || st == FLIT_ERR_TOO_LARGE)
        place_after(o, write, was);
    return st;
}

flit_status flit_object_invokev(flit_object_t *h, unsigned op, const struct iovec *arg,
                                int narg, const struct iovec *res, int nres,
                                size_t *res_len)
{
    flit_object_t *obj = obj_of(h);
    if (!obj)
        return FLIT_ERR_INVALID_ARG;
    if (op >= obj->type->nops)
        return FLIT_ERR_BAD_HANDLER;
    size_t len, cap;
    flit_status st = flit_iov_total(arg, narg, &len);
    if (st == FLIT_OK)
        st = flit_iov_total(res, nres, &cap);
    if (st != FLIT_OK)
        return st;
    const flit_object_op_t *d = &obj->type->ops[op];
    if (len > d->arg_max)
        return FLIT_ERR_TOO_LARGE;
    size_t rl = 0;
    if (!res_len)
        res_len = &rl;
    bool write = d->kind == FLIT_OBJECT_WRITE;
    atomic_fetch_add_explicit(write ? &obj->writes : &obj->reads, 1,
                              memory_order_relaxed);
    if (obj->adaptive)
        return invoke_auto(obj, op, write, arg, narg, len, res, nres, cap, res_len);
    /* Pinned: the placement never changes, no epoch to heed. */
    uint32_t target;
    bool local = obj->strategy == FLIT_OBJECT_REPLICATED ? !write : obj->holds;
    if (!local && obj->strategy == FLIT_OBJECT_OWNED)
        return object_invoke_remote(obj, obj->owner, 0, op, arg, narg, res, nres, res_len,
                                    &target);
    /* Flat, or joined once when gathered from several pieces. */
    const void *flat;
    void *joined;
    if (!join(arg, narg, len, &flat, &joined))
        return FLIT_ERR_NO_MEMORY;
    if (local) {
        atomic_fetch_add_explicit(&obj->local, 1, memory_order_relaxed);
        st = invoke_local(obj, 0, op, flat, len, res, nres, cap, res_len, &target);
    } else {
        st = object_invoke_write(obj, 0, op, arg, narg, flat, len, res, nres, res_len,
                                 &target);
    }
    free(joined);
    return st;
}

flit_status flit_object_invoke(flit_object_t *obj, unsigned op, const void *arg,
                               size_t len, void *res, size_t cap, size_t *res_len)
{
    if ((!arg && len) || (!res && cap))
        return FLIT_ERR_INVALID_ARG;
    struct iovec a = {(void *)arg, len}, r = {res, cap};
    return flit_object_invokev(obj, op, &a, len ? 1 : 0, &r, 1, res_len);
}
