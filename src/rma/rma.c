/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RMA layer's place in the endpoint: its state made and freed with it,
 * the handle pools, a peer going down, and the opcode's registration.
 */
#include "rma/rma.h"

#include <stdlib.h>
#include <unistd.h>

#include "util/log.h"

/* ---- pools ---- */

static flit_handles_t *region_handles, *remote_handles, *op_handles;

struct flit_rma_region *fl_rma_region_of(const flit_rma_region_t *h)
{
    return flit_handle_get(&region_handles, h);
}

struct flit_rma_remote *fl_rma_remote_of(const flit_rma_remote_t *h)
{
    return flit_handle_get(&remote_handles, h);
}

struct flit_rma_op *fl_rma_op_of(const flit_rma_op_t *h)
{
    return flit_handle_get(&op_handles, h);
}

flit_status fl_rma_pool_handle(struct fl_rma_pool *p, struct fl_rma_obj *o)
{
    return o->self ? FLIT_OK : flit_handle_new(p->handles, o, &o->self);
}

/* o's last life's handle dies: the slot is reused, or goes. */
static void pool_handle_end(struct fl_rma_pool *p, struct fl_rma_obj *o)
{
    if (o->self)
        (void)flit_handle_free(p->handles, o->self);
    o->self = NULL;
}

static struct fl_rma_obj *pool_take_free(struct fl_rma_pool *p)
{
    struct fl_rma_obj *o = p->head;
    p->head = o->next_free;
    if (!p->head)
        p->tail = NULL;
    p->nfree--;
    return o;
}

static struct fl_rma_obj *pool_make(struct fl_rma_pool *p)
{
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 64;
        struct fl_rma_obj **all = realloc(p->all, cap * sizeof *all);
        if (!all)
            return NULL;
        p->all = all;
        p->cap = cap;
    }
    struct fl_rma_obj *o = calloc(1, p->size);
    if (!o)
        return NULL;
    o->magic = p->magic;
    o->idx = p->n;
    p->all[p->n++] = o;
    return o;
}

struct fl_rma_obj *fl_rma_pool_get(struct fl_rma_pool *p)
{
    struct fl_rma_obj *o = NULL;
    /* Reuse only the long dead, unless no new one may be made. */
    if (p->nfree > FL_RMA_KEEP_DEAD || (p->n == p->max && p->nfree))
        o = pool_take_free(p);
    else if (p->n < p->max)
        o = pool_make(p);
    if (!o)
        return NULL;
    pool_handle_end(p, o);
    o->gen++;
    if (o->gen == 0)
        o->gen = 1; /* ids are never 0 */
    o->live = true;
    o->next_free = NULL;
    return o;
}

void fl_rma_pool_put(struct fl_rma_pool *p, struct fl_rma_obj *o)
{
    o->live = false;
    o->next_free = NULL;
    if (p->tail)
        p->tail->next_free = o;
    else
        p->head = o;
    p->tail = o;
    p->nfree++;
}

static void pool_init(struct fl_rma_pool *p, size_t size, uint32_t magic, uint32_t max,
                      flit_handles_t **handles)
{
    p->handles = handles;
    p->size = size;
    p->magic = magic;
    p->max = max;
}

static void pool_free(struct fl_rma_pool *p)
{
    for (uint32_t i = 0; i < p->n; i++) {
        pool_handle_end(p, p->all[i]);
        p->all[i]->magic = 0;
        free(p->all[i]);
    }
    free(p->all);
    p->all = NULL;
    p->n = p->cap = 0;
}

/* ---- the endpoint ---- */

static flit_status rma_open(struct flit_ep *ep, void *state)
{
    struct fl_rma_ep *r = state;
    r->peers = calloc(ep->size, sizeof *r->peers);
    if (!r->peers)
        return FLIT_ERR_NO_MEMORY;
    r->ep = ep;
    long page = sysconf(_SC_PAGESIZE);
    r->page = page > 0 ? (size_t)page : 4096u;
    pool_init(&r->regions, sizeof(struct flit_rma_region), FL_RMA_MAGIC_REGION,
              FL_RMA_MAX_REGIONS, &region_handles);
    pool_init(&r->remotes, sizeof(struct flit_rma_remote), FL_RMA_MAGIC_REMOTE,
              FL_RMA_MAX_REMOTES, &remote_handles);
    pool_init(&r->ops, sizeof(struct flit_rma_op), FL_RMA_MAGIC_OP, FL_RMA_MAX_OPS,
              &op_handles);
    return FLIT_OK;
}

/*
 * The endpoint goes: every region is revoked without waiting (the job is
 * tearing the endpoint down everywhere at once), memory and mappings go.
 * Importers that still map a block keep their pages; nothing of ours is
 * in them any more.
 */
static void rma_close(struct flit_ep *ep, void *state)
{
    struct fl_rma_ep *r = state;
    for (uint32_t i = 0; i < r->regions.n; i++) {
        struct flit_rma_region *g = (struct flit_rma_region *)r->regions.all[i];
        if (g->obj.live)
            fl_rma_revoke(ep, g, false);
        free(g->allowed);
    }
    for (uint32_t i = 0; i < r->remotes.n; i++) {
        struct flit_rma_remote *rm = (struct flit_rma_remote *)r->remotes.all[i];
        if (rm->obj.live)
            fl_rma_unmap_remote(ep, rm);
    }
    for (uint32_t k = 0; k < ep->size; k++)
        fl_rma_peer_ctl_free(ep, k);
    fl_rma_blocks_free(ep);
    FL_COUNT(r->refused, fl_rma_dir_refused(r)); /* before the file goes */
    fl_rma_ctl_unmake(ep);
    pool_free(&r->regions);
    pool_free(&r->remotes);
    pool_free(&r->ops);
    free(r->peers);
}

/* Operations waiting for the dead peer fail; what it was sending us in
   pieces is over. */
static void rma_peer_down(struct flit_ep *ep, void *state, uint32_t rank)
{
    struct fl_rma_ep *r = state;
    for (uint32_t i = 0; i < r->ops.n && r->peers[rank].outstanding; i++) {
        struct flit_rma_op *op = (struct flit_rma_op *)r->ops.all[i];
        if (op->obj.live && op->pending && op->peer == rank)
            fl_rma_op_complete(ep, op, FLIT_ERR_PEER_DOWN);
    }
    r->peers[rank].put_err = FLIT_OK;
}

/* One of our RMA packets came back: reclaimed from a peer that died (its
   operation fails through fl_rma_peer_down). Nobody returns RMA packets
   otherwise: one inside a returned message is malformed. */
static bool rma_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                     flit_status reason, bool reclaimed)
{
    (void)ep, (void)peer, (void)pkt, (void)len, (void)reason;
    return reclaimed;
}

static void rma_init(void)
{
    fl_op_register(FL_OP_RMA, fl_rma_recv, rma_back);
}

static uint64_t dir_refused(const void *state)
{
    return fl_rma_dir_refused(state);
}

#define RMA_COUNTER(field, kind, doc)                                                    \
    FL_COUNTER(struct fl_rma_ep, field, #field, kind, doc)
static const struct fl_counter_desc rma_counters[] = {
    RMA_COUNTER(puts, FLIT_COUNTER_COUNT, "puts this endpoint made"),
    RMA_COUNTER(gets, FLIT_COUNTER_COUNT, "gets this endpoint made"),
    RMA_COUNTER(put_bytes, FLIT_COUNTER_BYTES, "bytes put"),
    RMA_COUNTER(get_bytes, FLIT_COUNTER_BYTES, "bytes got"),
    RMA_COUNTER(notifications, FLIT_COUNTER_COUNT, "notification handlers run here"),
    RMA_COUNTER(refused, FLIT_COUNTER_COUNT, "accesses to our regions we refused"),
    /* counted by peers in our directory, in shared memory */
    {"refused_by_directory", "accesses to our regions our directory refused",
     FLIT_COUNTER_COUNT, 0, dir_refused},
    {NULL, NULL, 0, 0, NULL},
};
#undef RMA_COUNTER

struct fl_layer fl_rma_layer = {
    .name = "rma",
    .state_size = sizeof(struct fl_rma_ep),
    .init = rma_init,
    .ep_open = rma_open,
    .ep_close = rma_close,
    .peer_down = rma_peer_down,
    .counters = rma_counters,
};
