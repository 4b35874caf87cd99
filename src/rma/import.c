/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Importing: the round trip in which the owner decides, and the choice of
 * the path every later put and get to the region takes (rma.h):
 *
 *  - the owner is this rank: memmove, checking the region table;
 *  - the transport serving us exposed the region (its ->expose: the owner
 *    decided, at the import): its ->put / ->get at the key it gave;
 *  - the transport serving the owner offers one-sided operations that
 *    reach it (transport.h), and its control file is shared: the block
 *    mapped here (->map) when the region is in flit_rma_alloc memory and
 *    the transport allows, else the transport's ->put / ->get;
 *  - otherwise, and whenever one of those cannot be set up: packets.
 */
#include <stdlib.h>
#include <string.h>

#include "rma/rma.h"
#include "util/log.h"

/* ---- the owner's side ---- */

/*
 * Whether g is exposed to importer by the transport serving it (->expose:
 * memory that transport moves without us, revoked by withdrawing it).
 * Exposed once, at the first import that transport serves, with the
 * access granted; a region exposed by one transport is not by another
 * (their importers go through packets). A transport that cannot expose it
 * is asked again at the next import.
 */
static bool exposed_to(struct flit_ep *ep, struct flit_rma_region *g, uint32_t importer)
{
    const struct fl_tp_onesided *os = fl_rma_tp(ep, importer);
    struct fl_tp_ep *tpe = ep->peers[importer].tpe;
    if (!os || !os->expose)
        return false;
    if (g->xos && (g->xos != os || g->xtpe != tpe))
        return false;
    if (!g->xos) {
        unsigned access = (g->access & FLIT_RMA_READ ? FL_TP_EXPOSE_READ : 0) |
                          (g->access & FLIT_RMA_WRITE ? FL_TP_EXPOSE_WRITE : 0);
        uint64_t *held = calloc((ep->size + 63) / 64, sizeof *held);
        if (!held)
            return false;
        if (os->expose(tpe, g->addr, g->len, access, &g->xkey, &g->xraddr) != FLIT_OK) {
            free(held);
            return false;
        }
        g->xos = os;
        g->xtpe = tpe;
        g->xheld = held;
    }
    g->xheld[importer / 64] |= 1ull << (importer % 64); /* unexport asks it */
    return true;
}

/* What the owner tells an importer it allows: the region and how to reach
   it. The status says whether it allows. */
static flit_status describe(struct flit_ep *ep, uint32_t importer, uint64_t id,
                            struct fl_rma_pkt *a)
{
    struct flit_rma_region *g = fl_rma_region_find(fl_rma_of(ep), id);
    if (!g)
        return FLIT_ERR_REVOKED;
    if (!fl_rma_region_allows(g, importer))
        return FLIT_ERR_DENIED;
    a->total = g->len;
    a->access = (uint16_t)g->access;
    a->info.vaddr = (uint64_t)(uintptr_t)g->addr;
    a->info.block = g->block ? g->block->seq : 0;
    a->info.file_off = g->block ? g->block_off : 0;
    a->info.file_len = g->block ? g->block->len : 0;
    a->info.flags = fl_rma_of(ep)->ctl_shared ? FL_RMA_INFO_CTL : 0;
    if (exposed_to(ep, g, importer))
        a->info = (struct fl_rma_info){
            .vaddr = g->xraddr, .block = g->xkey, .flags = FL_RMA_INFO_KEY};
    return FLIT_OK;
}

void fl_rma_answer_import(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct fl_rma_pkt a = {.kind = FL_RMA_IMPORT_REP, .op = p->op, .id = p->id};
    flit_status st = describe(ep, src, p->id, &a);
    if (st != FLIT_OK) {
        FL_COUNT(fl_rma_of(ep)->refused, 1);
        a.total = 0;
        a.access = 0;
    }
    a.status = (uint16_t)st;
    fl_rma_send(ep, src, &a, NULL, 0);
}

/* ---- the importer's side ---- */

void fl_rma_import_answered(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p)
{
    struct flit_rma_op *op = fl_rma_op_find(ep, p->op, src, FL_RMA_OP_IMPORT);
    if (!op) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("rma: rank %u answered an import nobody asked for", src);
        return;
    }
    if (p->status == FLIT_OK) {
        op->size = p->total;
        op->access = p->access;
        op->info = p->info;
    }
    fl_rma_op_complete(ep, op, (flit_status)p->status);
}

static void choose_path(struct flit_ep *ep, struct flit_rma_remote *rm,
                        const struct fl_rma_info *in)
{
    struct fl_rma_peer *pp = &fl_rma_of(ep)->peers[rm->owner];
    uint32_t slot = (uint32_t)rm->id, gen = (uint32_t)(rm->id >> 32);
    const struct fl_tp_onesided *os = fl_rma_tp(ep, rm->owner);
    rm->path = FL_RMA_PATH_PACKETS;
    if (os && (in->flags & FL_RMA_INFO_KEY) && !pp->no_tp && os->put) {
        rm->path = FL_RMA_PATH_EXPOSED;
        rm->raddr = in->vaddr;
        rm->key = in->block;
        return;
    }
    if (!os || !(in->flags & FL_RMA_INFO_CTL) || slot >= FL_RMA_MAX_REGIONS ||
        !fl_rma_ctl_attach(ep, rm->owner))
        return;
    rm->word = fl_rma_ctl_word(pp->ctl, ep->size, slot);
    rm->live_word = fl_rma_live_word(gen);
    rm->busy = fl_rma_ctl_busy(pp->ctl, ep->rank);
    if (in->block && fl_rma_map_remote(ep, rm, in) == FLIT_OK) {
        rm->path = FL_RMA_PATH_MAP;
        return;
    }
    if (!pp->no_tp && os->put && os->get) {
        rm->path = FL_RMA_PATH_TP;
        rm->raddr = in->vaddr;
        rm->key = in->block;
    }
}

/* Our own region: no round trip. */
static flit_status import_self(struct flit_ep *ep, uint64_t id,
                               struct flit_rma_remote *rm)
{
    struct flit_rma_region *g = fl_rma_region_find(fl_rma_of(ep), id);
    if (!g)
        return FLIT_ERR_REVOKED;
    if (!fl_rma_region_allows(g, ep->rank))
        return FLIT_ERR_DENIED;
    rm->size = g->len;
    rm->access = g->access;
    rm->base = g->addr;
    rm->path = FL_RMA_PATH_SELF;
    return FLIT_OK;
}

static flit_status import_remote(struct flit_ep *ep, uint32_t owner, uint64_t id,
                                 struct flit_rma_remote *rm)
{
    /* On this host the owner's export directory answers, without the owner
       (it may be spinning on its memory, making no call). */
    struct fl_rma_info found;
    flit_status from_dir = fl_rma_dir_import(ep, owner, id, rm, &found);
    if (from_dir == FLIT_OK)
        choose_path(ep, rm, &found);
    if (from_dir != FLIT_ERR_NOT_SUPPORTED)
        return from_dir;
    struct flit_rma_op *op = fl_rma_op_new(ep, FL_RMA_OP_IMPORT, owner, NULL);
    if (!op)
        return FLIT_ERR_NO_MEMORY;
    struct fl_rma_pkt q = {.kind = FL_RMA_IMPORT_REQ, .op = fl_rma_op_id(op), .id = id};
    fl_rma_op_wait_for(ep, op);
    flit_status st = fl_rma_send(ep, owner, &q, NULL, 0);
    if (st != FLIT_OK)
        fl_rma_op_complete(ep, op, st);
    struct fl_rma_info in = {0};
    fl_rma_op_wait(ep, op);
    st = op->status;
    if (st == FLIT_OK) {
        rm->size = op->size;
        rm->access = op->access;
        in = op->info;
    }
    fl_rma_op_release(ep, op);
    if (st == FLIT_OK)
        choose_path(ep, rm, &in);
    return st;
}

flit_status flit_rma_import(flit_ep_t *ep, flit_rank_t owner, uint64_t export_id,
                            flit_rma_remote_t **remote_out)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    struct fl_rma_ep *r = fl_rma_of(ep);
    struct flit_rma_remote *rm = NULL;
    if (!remote_out || export_id == 0)
        st = FLIT_ERR_INVALID_ARG;
    else if (owner.idx >= ep->size)
        st = FLIT_ERR_RANK;
    else if (fl_peer_is_down(&ep->peers[owner.idx]))
        st = FLIT_ERR_PEER_DOWN;
    else if (!(rm = (struct flit_rma_remote *)fl_rma_pool_get(&r->remotes)))
        st = FLIT_ERR_NO_MEMORY;
    else if (fl_rma_pool_handle(&r->remotes, &rm->obj) != FLIT_OK) {
        fl_rma_pool_put(&r->remotes, &rm->obj);
        st = FLIT_ERR_NO_MEMORY;
    }
    if (st == FLIT_OK) {
        struct fl_rma_obj keep = rm->obj;
        memset(rm, 0, sizeof *rm);
        rm->obj = keep;
        rm->ep = ep;
        rm->owner = owner.idx;
        rm->id = export_id;
        st = owner.idx == ep->rank ? import_self(ep, export_id, rm)
                                   : import_remote(ep, owner.idx, export_id, rm);
        if (st == FLIT_OK)
            *remote_out = rm->obj.self;
        else
            fl_rma_pool_put(&r->remotes, &rm->obj);
    }
    fl_ep_leave(ep);
    return st;
}

static bool remote_quiet(struct flit_ep *ep, void *arg)
{
    (void)ep;
    return ((struct flit_rma_remote *)arg)->outstanding == 0;
}

flit_status flit_rma_release(flit_rma_remote_t *remote)
{
    struct flit_rma_remote *rm = fl_rma_remote_of(remote);
    if (!rm)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = fl_ep_enter(rm->ep);
    if (st != FLIT_OK)
        return st;
    struct flit_ep *ep = rm->ep;
    if (!rm->obj.live || rm->releasing) {
        st = FLIT_ERR_INVALID_ARG;
    } else {
        /* Marked first: the wait may let other threads in, and none of
           them may start an operation on rm or release it a second time. */
        rm->releasing = true;
        if (rm->outstanding)
            st = fl_progress_until(ep, remote_quiet, rm, -1);
        if (st == FLIT_OK) {
            fl_rma_unmap_remote(ep, rm);
            fl_rma_pool_put(&fl_rma_of(ep)->remotes, &rm->obj);
        }
    }
    fl_ep_leave(ep);
    return st;
}

size_t flit_rma_remote_size(const flit_rma_remote_t *remote)
{
    const struct flit_rma_remote *rm = fl_rma_remote_of(remote);
    return rm && rm->obj.live ? rm->size : 0;
}

unsigned flit_rma_remote_access(const flit_rma_remote_t *remote)
{
    const struct flit_rma_remote *rm = fl_rma_remote_of(remote);
    return rm && rm->obj.live ? rm->access : 0;
}

void *flit_rma_remote_addr(const flit_rma_remote_t *remote)
{
    const struct flit_rma_remote *rm = fl_rma_remote_of(remote);
    if (!rm || !rm->obj.live ||
        (rm->path != FL_RMA_PATH_SELF && rm->path != FL_RMA_PATH_MAP))
        return NULL;
    return rm->base;
}

flit_rma_path flit_rma_remote_path(const flit_rma_remote_t *remote)
{
    const struct flit_rma_remote *rm = fl_rma_remote_of(remote);
    if (!rm || !rm->obj.live)
        return FLIT_RMA_PATH_NONE;
    switch (rm->path) {
    case FL_RMA_PATH_SELF:
    case FL_RMA_PATH_MAP:
        return FLIT_RMA_PATH_COPY;
    case FL_RMA_PATH_TP:
        return FLIT_RMA_PATH_ATTACH;
    case FL_RMA_PATH_EXPOSED:
        return FLIT_RMA_PATH_FABRIC;
    default:
        return FLIT_RMA_PATH_PACKETS;
    }
}
