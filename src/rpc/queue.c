/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Messages for program context (internal.h): a reply made inside a handler
 * that cannot go back through a token, a status that must answer a call,
 * and a request a parked procedure made are copied to a queue, sent by the
 * object's progress listener after the pass that queued them. Messages
 * leave in queue order; what finds no room stays first for the next pass.
 */
#include <stdlib.h>

#include "internal.h"

/* Under the mutex: appends o to the queue. */
static void out_append(struct flit_rpc *r, struct rpc_out *o)
{
    o->next = NULL;
    if (r->out_tail)
        r->out_tail->next = o;
    else
        r->out_head = o;
    r->out_tail = o;
    atomic_fetch_add_explicit(&r->nout, 1, memory_order_release);
}

/* A spare block of at least total bytes, or NULL. */
static struct rpc_out *spare_take(struct flit_rpc *r, size_t total)
{
    rpc_lock(r);
    struct rpc_out **pp = &r->spare_out, *o;
    while ((o = *pp) && o->cap < total)
        pp = &o->next;
    if (o) {
        *pp = o->next;
        r->nspare_out--;
    }
    rpc_unlock(r);
    return o;
}

flit_status fl_rpc_queue(struct flit_rpc *r, const struct iovec *iov, int n, size_t total,
                         const struct rpc_out *tmpl)
{
    struct rpc_out *o = spare_take(r, total);
    size_t cap = o ? o->cap : total;
    if (!o && (total > SIZE_MAX - sizeof *o || !(o = malloc(sizeof *o + total))))
        return FLIT_ERR_NO_MEMORY;
    *o = *tmpl;
    o->len = total;
    o->cap = cap;
    flit_iov_gather(o->data, iov, n);
    rpc_lock(r);
    out_append(r, o);
    if (!o->request)
        rpc_count(&r->ctr->queued_replies, 1);
    rpc_unlock(r);
    return FLIT_OK;
}

flit_status fl_rpc_send_reply(struct flit_rpc *r, uint32_t caller, uint64_t id,
                              flit_status status, const struct iovec *iov, int n,
                              size_t total)
{
    flit_status st = FLIT_ERR_AGAIN;
    /* Messages queued before go first, so try only with an empty queue. */
    if (atomic_load_explicit(&r->nout, memory_order_acquire) == 0)
        st = fl_rpc_send_msg(r, caller, true, (uint32_t)status, id, iov, n, total);
    if (st != FLIT_ERR_AGAIN && st != FLIT_ERR_IN_HANDLER)
        return st;
    struct rpc_out o = {.dest = caller, .id = id, .word = (uint32_t)status};
    return fl_rpc_queue(r, iov, n, total, &o);
}

struct rpc_out *fl_rpc_status_block(void)
{
    return malloc(sizeof(struct rpc_out));
}

void fl_rpc_status_free(struct rpc_out *blk)
{
    free(blk);
}

flit_status fl_rpc_send_status(struct flit_rpc *r, uint32_t caller, uint64_t id,
                               flit_status status, struct rpc_out **blk)
{
    flit_status st = FLIT_ERR_AGAIN;
    if (atomic_load_explicit(&r->nout, memory_order_acquire) == 0)
        st = fl_rpc_send_msg(r, caller, true, (uint32_t)status, id, NULL, 0, 0);
    if (st == FLIT_OK || !fl_rpc_caller_reachable(st))
        return st;
    /* No room, a handler, or a local shortage: the reserved block goes in
       the queue, and flush sends it when it can. */
    struct rpc_out *o = *blk;
    *blk = NULL;
    *o = (struct rpc_out){.dest = caller, .id = id, .word = (uint32_t)status};
    rpc_lock(r);
    out_append(r, o);
    rpc_count(&r->ctr->queued_replies, 1);
    rpc_unlock(r);
    return FLIT_OK;
}

/* A local shortage (memory, descriptors): the message may go later. */
static bool local_failure(flit_status st)
{
    return st == FLIT_ERR_NO_MEMORY || st == FLIT_ERR_SYSTEM;
}

/* A sent message's block back for the next one: a handler's large replies
   would otherwise cost a malloc and a free each, which for blocks above
   glibc's mmap threshold means fresh pages, faulted in one by one (several
   replies of 1 MiB in flight: 1 GB/s where one reaches 20). */
static void out_put(struct flit_rpc *r, struct rpc_out *o)
{
    bool keep = false;
    if (o->cap <= RPC_OUT_KEEP_MAX) {
        rpc_lock(r);
        keep = r->nspare_out < RPC_OUT_KEEP;
        if (keep) {
            o->next = r->spare_out;
            r->spare_out = o;
            r->nspare_out++;
        }
        rpc_unlock(r);
    }
    if (!keep)
        free(o);
}

/* The queue's first message, taken off; NULL when empty. */
static struct rpc_out *out_pop(struct flit_rpc *r)
{
    rpc_lock(r);
    struct rpc_out *o = r->out_head;
    if (o && !(r->out_head = o->next))
        r->out_tail = NULL;
    rpc_unlock(r);
    return o;
}

/* o first in the queue again. */
static void out_push_front(struct flit_rpc *r, struct rpc_out *o)
{
    rpc_lock(r);
    o->next = r->out_head;
    r->out_head = o;
    if (!o->next)
        r->out_tail = o;
    rpc_unlock(r);
}

/* Whether o, which met st, stays first for the next pass: no room; or a
   status of no bytes (the last resort of its call) that meets a local
   shortage. */
static bool send_later(const struct rpc_out *o, flit_status st)
{
    return st == FLIT_ERR_AGAIN ||
           (!o->request && o->len == 0 && o->word != FLIT_OK && local_failure(st));
}

/* Whether o is a reply that cannot be sent (st) but whose caller may hear
   its status in its place. */
static bool status_instead(const struct rpc_out *o, flit_status st)
{
    return !o->request && st != FLIT_OK && st != FLIT_ERR_IN_HANDLER &&
           (o->len || o->word == FLIT_OK) && fl_rpc_caller_reachable(st);
}

/* o is sent (st FLIT_OK), or never will be (a peer died, the endpoint
   closes): off the count, its call ended if it was a request. */
static void out_done(struct flit_rpc *r, struct rpc_out *o, flit_status st)
{
    atomic_fetch_sub_explicit(&r->nout, 1, memory_order_relaxed);
    if (o->request && st != FLIT_OK)
        fl_rpc_end_request(r, o->id, st);
    out_put(r, o);
}

void fl_rpc_flush(struct flit_rpc *r)
{
    struct rpc_out *o;
    while ((o = out_pop(r))) {
        struct iovec v = {.iov_base = o->data, .iov_len = o->len};
        flit_status st =
            fl_rpc_send_msg(r, o->dest, !o->request, o->word, o->id, &v, 1, o->len);
        if (send_later(o, st)) {
            out_push_front(r, o);
            return;
        }
        if (status_instead(o, st)) {
            /* Its status goes in its place: no bytes, the same block, first
               in the queue still. */
            fl_rpc_reply_failed(r, o->dest, o->id, o->len, st);
            o->len = 0;
            o->word = (uint32_t)st;
            out_push_front(r, o);
            continue;
        }
        out_done(r, o, st);
        if (st == FLIT_ERR_IN_HANDLER)
            return; /* not program context after all: cannot happen */
    }
}

void fl_rpc_drain(struct flit_rpc *r)
{
    while (atomic_load_explicit(&r->nout, memory_order_acquire)) {
        fl_rpc_flush(r);
        if (atomic_load_explicit(&r->nout, memory_order_acquire) &&
            flit_wait(r->ep, SLICE_US) != FLIT_OK)
            if (flit_poll(r->ep) != FLIT_OK)
                return; /* the endpoint is going: nothing will leave */
    }
}

static void free_outs(struct rpc_out *o)
{
    for (struct rpc_out *next; o; o = next) {
        next = o->next;
        free(o);
    }
}

void fl_rpc_queue_free(struct flit_rpc *r)
{
    free_outs(r->out_head);
    free_outs(r->spare_out);
    r->out_head = r->out_tail = r->spare_out = NULL;
}
