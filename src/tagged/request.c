/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Request objects (internal.h): handed out as <flit/handle.h> handles,
 * recycled through two free lists, one under the context's mutex and one
 * that any thread pushes to without it. A request keeps its handle's slot
 * on the free lists: given back, its handle is renewed (the program's
 * value goes stale), and the next use hands the new value out.
 */
#include <flit/handle.h>

#include <stdlib.h>

#include "internal.h"

static flit_handles_t *requests;

struct flit_request *fl_tagged_req_of(flit_request_t *h)
{
    return flit_handle_get(&requests, h);
}

void fl_tagged_req_init(struct flit_request *r, struct flit_tagged *t, uint8_t kind)
{
    r->self = NULL;
    r->kind = kind;
    r->posted = false;
    atomic_init(&r->state, ST_PENDING);
    r->t = t;
    r->prev = r->next = NULL;
    r->claimed = NULL;
    r->iov = NULL;
    r->iovcnt = 0;
}

struct flit_request *fl_tagged_req_get(struct flit_tagged *t, uint8_t kind)
{
    struct flit_request *r = t->free_reqs;
    if (__builtin_expect(r == NULL, 0))
        /* Acquire: the writes of those who gave them back, r->next too. */
        r = atomic_exchange_explicit(&t->returned_reqs, NULL, memory_order_acquire);
    if (__builtin_expect(r != NULL, 1)) {
        t->free_reqs = r->next;
    } else {
        if (!(r = malloc(sizeof *r)))
            return NULL;
        r->self = NULL;
        t->nreqs++;
    }
    void *self = r->self; /* renewed when it was given back, or NULL */
    fl_tagged_req_init(r, t, kind);
    r->self = self;
    if (!self && flit_handle_new(&requests, r, &r->self) != FLIT_OK) {
        r->next = t->free_reqs;
        t->free_reqs = r;
        return NULL;
    }
    return r;
}

static void req_clear(struct flit_request *r)
{
    r->self = flit_handle_renew(&requests, r->self);
    r->kind = REQ_FREE;
}

void fl_tagged_req_put(struct flit_request *r)
{
    struct flit_tagged *t = r->t;
    req_clear(r);
    if (!t->mt) { /* no one else: the plain free list */
        r->next = t->free_reqs;
        t->free_reqs = r;
        return;
    }
    struct flit_request *head =
        atomic_load_explicit(&t->returned_reqs, memory_order_relaxed);
    do
        r->next = head;
    /* Release: r's fields are written before it is seen on the stack. */
    while (!atomic_compare_exchange_weak_explicit(
        &t->returned_reqs, &head, r, memory_order_release, memory_order_relaxed));
}

void fl_tagged_req_put_locked(struct flit_tagged *t, struct flit_request *r)
{
    req_clear(r);
    r->next = t->free_reqs;
    t->free_reqs = r;
}

static size_t list_length(const struct flit_request *r)
{
    size_t n = 0;
    for (; r; r = r->next)
        n++;
    return n;
}

size_t fl_tagged_req_outstanding(struct flit_tagged *t)
{
    /* Pushes only add above the head read here. */
    size_t free_n =
        list_length(t->free_reqs) +
        list_length(atomic_load_explicit(&t->returned_reqs, memory_order_acquire));
    return t->nreqs - free_n;
}

flit_status fl_tagged_req_finish(struct flit_request *r, flit_request_t **reqp,
                                 flit_tagged_info_t *info)
{
    flit_status st = r->info.status;
    if (info)
        *info = r->info;
    fl_tagged_req_put(r);
    *reqp = NULL;
    return st;
}

static void free_list(struct flit_request *r)
{
    for (struct flit_request *next; r; r = next) {
        next = r->next;
        if (r->self)
            (void)flit_handle_free(&requests, r->self);
        free(r);
    }
}

void fl_tagged_req_free_all(struct flit_tagged *t)
{
    free_list(t->free_reqs);
    free_list(atomic_load(&t->returned_reqs));
    t->free_reqs = NULL;
    atomic_store(&t->returned_reqs, NULL);
}
