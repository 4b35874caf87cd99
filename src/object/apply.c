/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Operations applied to the copy here, under the object's lock (a monitor:
 * one at a time), and the queue of those waiting for their guard, run
 * again from its oldest entry after each write applied. Replicas apply the
 * same writes in the same order, so their queues agree. What a copy
 * refuses or misses is counted here, its first logged.
 */
#include "object_int.h"

#include <stdlib.h>
#include <string.h>

size_t object_res_max(const flit_object_type_t *t)
{
    size_t m = 0;
    for (unsigned i = 0; i < t->nops; i++)
        if (t->ops[i].res_max > m)
            m = t->ops[i].res_max;
    return m;
}

bool object_guard_holds(flit_object_t *o, unsigned op, const void *arg, size_t len)
{
    const flit_object_op_t *d = &o->type->ops[op];
    return !d->guard || d->guard(o->state, arg, len, o->type->user);
}

/* Under o->lock: runs op with its result into res (room for res_max), or
   into the scratch room when res is NULL. */
size_t object_apply(flit_object_t *o, unsigned op, const void *arg, size_t len, void *res)
{
    const flit_object_op_t *d = &o->type->ops[op];
    atomic_fetch_add_explicit(&o->applied, 1, memory_order_relaxed);
    return d->fn(o->state, arg, len, res ? res : o->scratch, o->type->user);
}

/* Under o->lock: applies a replicated write for its writer's call c (or
   nobody's, c NULL), the result straight into the caller's buffer when it
   is one piece with room. */
void object_apply_for(flit_object_t *o, unsigned op, const void *arg, size_t len,
                      struct call *c)
{
    if (!c) {
        object_apply(o, op, arg, len, NULL);
        return;
    }
    size_t cap = 0;
    for (int i = 0; i < c->nres; i++)
        cap += c->res[i].iov_len;
    size_t n;
    if (c->nres == 1 && c->res[0].iov_len >= o->type->ops[op].res_max) {
        n = object_apply(o, op, arg, len, c->res[0].iov_base);
    } else {
        n = object_apply(o, op, arg, len, NULL);
        flit_iov_scatter(c->res, c->nres, o->scratch, n);
    }
    c->res_len = n;
    /* A copy that missed a write has no result worth giving. */
    c->st = o->missed ? FLIT_ERR_NO_MEMORY : n > cap ? FLIT_ERR_TOO_LARGE : FLIT_OK;
    atomic_store_explicit(&c->done, 1, memory_order_release);
}

/* Under o->lock, after a write: runs the waiting operations whose guard
   holds, oldest first, again from the oldest after each. Owned objects'
   finished entries go to *done, to be answered once the lock is let go. */
void object_run_queue(flit_object_t *o, struct pending **done)
{
    bool again = true;
    while (again) {
        again = false;
        for (struct pending **pp = &o->queue; *pp; pp = &(*pp)->next) {
            struct pending *p = *pp;
            if (!object_guard_holds(o, p->op, p->arg, p->len))
                continue;
            *pp = p->next;
            if (!*pp)
                o->tail = pp;
            if (p->reply) {
                p->res_len = object_apply(o, p->op, p->arg, p->len, p->res);
                p->st = FLIT_OK;
                p->next = *done;
                *done = p;
            } else {
                object_apply_for(o, p->op, p->arg, p->len, p->call);
                free(p->arg);
                free(p);
            }
            again = true; /* from the oldest again */
            break;
        }
    }
}

void object_pending_free(struct pending *p)
{
    free(p->arg);
    free(p->res);
    free(p);
}

/* Answers owned objects' finished waiting operations (no lock held), or
   sends them elsewhere (p->redirect). */
void object_answer(struct pending *done)
{
    while (done) {
        struct pending *p = done;
        done = p->next;
        uint32_t st = p->redirect ? p->redirect : (uint32_t)p->st;
        struct iovec v[2] = {{&st, sizeof st}, {p->res, p->res_len}};
        flit_rpc_reply_send(p->reply, v, st == FLIT_OK ? 2 : 1);
        object_pending_free(p);
    }
}

void object_enqueue(flit_object_t *o, struct pending *p)
{
    p->next = NULL;
    *o->tail = p;
    o->tail = &p->next;
    atomic_fetch_add_explicit(&o->guard_waits, 1, memory_order_relaxed);
}

/* Under o->lock: a write that waits for its guard, queued; false when
   there is no memory for it (heap, if not NULL, is the argument's copy
   already, taken on success). */
bool object_wait_guard(flit_object_t *o, unsigned op, const void *arg, size_t len,
                       void *heap, struct call *c)
{
    struct pending *p = calloc(1, sizeof *p);
    void *copy = heap ? heap : malloc(len ? len : 1);
    if (!p || !copy) {
        free(p);
        if (copy != heap)
            free(copy);
        return false;
    }
    if (!heap)
        memcpy(copy, arg, len);
    p->op = op;
    p->arg = copy;
    p->len = len;
    p->call = c;
    object_enqueue(o, p);
    return true;
}

/* Under o->lock: whether this is the object's first refusal or miss (the
   one that is logged). */
static bool first_word(flit_object_t *o)
{
    bool first = !o->logged;
    o->logged = true;
    return first;
}

void object_refuse(flit_object_t *o, const char *what, uint32_t from)
{
    o->refused++;
    if (first_word(o))
        flit_log(FLIT_LOG_WARN,
                 "object %u: a malformed %s from rank %u refused (further ones are only "
                 "counted)",
                 o->id, what, from);
}

void object_miss(flit_object_t *o, const char *what, size_t len)
{
    o->missed++;
    if (first_word(o))
        flit_log(FLIT_LOG_ERROR,
                 "object %u: no memory for %s of %zu bytes: the copy here missed a write "
                 "and answers FLIT_ERR_NO_MEMORY from now on",
                 o->id, what, len);
}
