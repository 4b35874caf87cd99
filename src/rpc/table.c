/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls in flight (internal.h): a hash table keyed by call id under the
 * object's mutex, and the ways a call ends: its reply taken, its timeout,
 * its peer down, its object closing.
 */
#include "internal.h"

static struct flit_rpc_call **bucket(struct flit_rpc *r, uint64_t id)
{
    return &r->buckets[id & (RPC_BUCKETS - 1)];
}

static struct flit_rpc_call *table_find(struct flit_rpc *r, uint64_t id)
{
    struct flit_rpc_call *c = *bucket(r, id);
    while (c && c->id != id)
        c = c->next;
    return c;
}

void fl_rpc_table_add(struct flit_rpc *r, struct flit_rpc_call *c)
{
    struct flit_rpc_call **b = bucket(r, c->id);
    c->next = *b;
    *b = c;
    c->in_table = true;
}

void fl_rpc_table_del(struct flit_rpc *r, struct flit_rpc_call *c)
{
    struct flit_rpc_call **pp = bucket(r, c->id);
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    c->next = NULL;
    c->in_table = false;
}

struct flit_rpc_call *fl_rpc_table_take(struct flit_rpc *r, uint64_t id, uint32_t from,
                                        bool *forged)
{
    struct flit_rpc_call *c = table_find(r, id);
    if (c && c->dest != from) { /* only the rank called answers its call */
        *forged = true;
        return NULL;
    }
    if (c && c->deadline && flit_clock_ns() >= c->deadline)
        c = NULL; /* its time is up: the waiter will say so */
    if (!c) {
        rpc_count(&r->ctr->late_replies, 1);
        return NULL;
    }
    fl_rpc_table_del(r, c);
    atomic_store_explicit(&c->state, C_RECEIVING, memory_order_relaxed);
    return c;
}

void fl_rpc_complete(struct flit_rpc_call *c, flit_status st)
{
    c->res.status = st;
    /* Release: the result and the reply bytes before the state. */
    atomic_store_explicit(&c->state, C_DONE, memory_order_release);
    if (c->waiter) {
        c->waiter->woken = true;
        pthread_cond_signal(&c->waiter->cond);
    }
    if (c->parker)
        (void)flit_stream_unpark(c->parker);
}

void fl_rpc_end_sent(struct flit_rpc *r, struct flit_rpc_call *c, flit_status st)
{
    fl_rpc_table_del(r, c);
    if (st == FLIT_ERR_TIMEOUT)
        rpc_count(&r->ctr->timeouts, 1);
    fl_rpc_complete(c, st);
}

void fl_rpc_end_all(struct flit_rpc *r, uint32_t dest, flit_status st)
{
    for (unsigned b = 0; b < RPC_BUCKETS; b++) {
        struct flit_rpc_call *c = r->buckets[b], *next;
        for (; c; c = next) {
            next = c->next;
            if (dest == UINT32_MAX || c->dest == dest)
                fl_rpc_end_sent(r, c, st);
        }
    }
}

void fl_rpc_end_request(struct flit_rpc *r, uint64_t id, flit_status st)
{
    rpc_lock(r);
    struct flit_rpc_call *c = table_find(r, id);
    if (c)
        fl_rpc_end_sent(r, c, st);
    rpc_unlock(r);
}
