/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The owner's side: exporting and unexporting regions, finding one by its
 * id, and judging an access to it. The judgement is the same for every
 * path that reaches the owner through packets, and for imports.
 */
#include <sched.h>
#include <stdlib.h>

#include "core/progress.h"
#include "platform/fence.h"
#include "platform/os.h"
#include "rma/rma.h"
#include "util/log.h"

struct flit_rma_region *fl_rma_region_find(struct fl_rma_ep *r, uint64_t id)
{
    uint32_t slot = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (slot >= r->regions.n)
        return NULL;
    struct flit_rma_region *g = (struct flit_rma_region *)r->regions.all[slot];
    return g->obj.live && g->obj.gen == gen ? g : NULL;
}

bool fl_rma_region_allows(const struct flit_rma_region *g, uint32_t rank)
{
    return !g->allowed || (g->allowed[rank / 64] >> (rank % 64) & 1u);
}

flit_status fl_rma_judge(struct flit_ep *ep, uint32_t rank, uint64_t id, unsigned need,
                         uint64_t base, uint64_t len, struct flit_rma_region **out)
{
    struct flit_rma_region *g = fl_rma_region_find(fl_rma_of(ep), id);
    if (!g)
        return FLIT_ERR_REVOKED;
    if (!fl_rma_region_allows(g, rank) || (g->access & need) != need)
        return FLIT_ERR_DENIED;
    if (base > g->len || len > g->len - base)
        return FLIT_ERR_BOUNDS;
    *out = g;
    return FLIT_OK;
}

static uint64_t region_id(const struct flit_rma_region *g)
{
    return (uint64_t)g->obj.gen << 32 | g->obj.idx;
}

/* ---- export ---- */

static flit_status make_allowed(struct flit_ep *ep, const flit_rank_t *allowed,
                                size_t nallowed, uint64_t **out)
{
    *out = NULL;
    if (nallowed == 0)
        return FLIT_OK;
    if (!allowed)
        return FLIT_ERR_INVALID_ARG;
    for (size_t i = 0; i < nallowed; i++)
        if (allowed[i].idx >= ep->size)
            return FLIT_ERR_RANK;
    uint64_t *bits = calloc((ep->size + 63) / 64, sizeof *bits);
    if (!bits)
        return FLIT_ERR_NO_MEMORY;
    for (size_t i = 0; i < nallowed; i++)
        bits[allowed[i].idx / 64] |= (uint64_t)1 << (allowed[i].idx % 64);
    *out = bits;
    return FLIT_OK;
}

static flit_status export_region(struct flit_ep *ep, void *addr, size_t len,
                                 unsigned access, uint64_t *allowed,
                                 flit_rma_region_t **region_out)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    flit_status st = fl_rma_ctl_make(ep);
    if (st != FLIT_OK)
        return st;
    struct flit_rma_region *g = (struct flit_rma_region *)fl_rma_pool_get(&r->regions);
    if (!g)
        return FLIT_ERR_NO_MEMORY;
    if (fl_rma_pool_handle(&r->regions, &g->obj) != FLIT_OK) {
        fl_rma_pool_put(&r->regions, &g->obj);
        return FLIT_ERR_NO_MEMORY;
    }
    g->ep = ep;
    g->addr = addr;
    g->len = len;
    g->access = access;
    g->allowed = allowed;
    g->xos = NULL;
    g->block = fl_rma_block_of(r, addr, len, &g->block_off);
    if (!g->block)
        g->block_off = 0;
    /* Live for direct importers too from now on; the region's fields are
       written before anyone can learn its id. */
    atomic_store_explicit(fl_rma_ctl_word(r->ctl, ep->size, g->obj.idx),
                          fl_rma_live_word(g->obj.gen), memory_order_release);
    fl_rma_dir_publish(ep, g); /* importers of this host find it without us */
    *region_out = g->obj.self;
    return FLIT_OK;
}

flit_status flit_rma_export(flit_ep_t *ep, void *addr, size_t len, unsigned access,
                            const flit_rank_t *allowed, size_t nallowed,
                            flit_rma_region_t **region_out)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    uint64_t *bits = NULL;
    if (!addr || len == 0 || !region_out || access == 0 ||
        (access & ~FL_RMA_ACCESS_ALL) || (uintptr_t)addr + len < (uintptr_t)addr)
        st = FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK)
        st = make_allowed(ep, allowed, nallowed, &bits);
    if (st == FLIT_OK)
        st = export_region(ep, addr, len, access, bits, region_out);
    if (st != FLIT_OK)
        free(bits);
    fl_ep_leave(ep);
    return st;
}

uint64_t flit_rma_region_id(const flit_rma_region_t *region)
{
    const struct flit_rma_region *g = fl_rma_region_of(region);
    if (!g || !g->obj.live)
        return 0;
    return region_id(g);
}

/* ---- unexport ---- */

/*
 * Waits until no importer on this host is inside an access to slot (see
 * rma.h). An importer that died holding its mark is let go once its death
 * is known; we look for dead peers while waiting.
 */
static void wait_direct_accesses(struct flit_ep *ep, uint32_t slot)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    for (uint32_t k = 0; k < ep->size; k++) {
        if (k == ep->rank)
            continue;
        const _Atomic uint64_t *busy = fl_rma_ctl_busy(r->ctl, k);
        /* Acquire: the importer's copy happened before it cleared its mark. */
        for (uint64_t spins = 1;
             atomic_load_explicit(busy, memory_order_acquire) == (uint64_t)slot + 1 &&
             !fl_peer_is_down(&ep->peers[k]);
             spins++) {
            fl_cpu_relax();
            if (spins % 1024 == 0) {
                sched_yield();
                if (fl_handler_depth == 0)
                    fl_progress_check_peers(ep, false);
            }
        }
    }
}

static bool holds(const uint64_t *held, uint32_t rank)
{
    return held[rank / 64] >> (rank % 64) & 1u;
}

/* Every importer given the key answered, or is down. */
static bool withdrawn(struct flit_ep *ep, void *arg)
{
    const struct fl_rma_withdrawal *w = arg;
    for (uint32_t k = 0; k < ep->size; k++)
        if (holds(w->held, k) && !fl_peer_is_down(&ep->peers[k]))
            return false;
    return true;
}

/*
 * Tells each importer given region id's key (held) that it is withdrawn
 * and waits, making progress, until each has answered or is down. An
 * importer answers once it will not use the key again, after its last
 * access through it completed; its answer, a message sent after those
 * writes, reaches us after them (the transport keeps sends behind writes).
 */
static void withdraw(struct flit_ep *ep, uint64_t id, uint64_t *held)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    struct fl_rma_withdrawal w = {.id = id, .held = held, .next = r->withdrawals};
    for (uint32_t k = 0; k < ep->size; k++) {
        struct fl_rma_pkt p = {.kind = FL_RMA_WITHDRAW, .id = id};
        if (holds(held, k) && fl_rma_send(ep, k, &p, NULL, 0) != FLIT_OK)
            held[k / 64] &= ~(1ull << (k % 64)); /* down: nothing to wait for */
    }
    r->withdrawals = &w;
    fl_progress_until(ep, withdrawn, &w, -1); /* FLIT_ERR_CLOSED: it goes anyway */
    struct fl_rma_withdrawal **pp = &r->withdrawals;
    while (*pp != &w)
        pp = &(*pp)->next;
    *pp = w.next;
}

void fl_rma_withdrawn(struct flit_ep *ep, uint32_t src, uint64_t id)
{
    for (struct fl_rma_withdrawal *w = fl_rma_of(ep)->withdrawals; w; w = w->next) {
        if (w->id == id) {
            w->held[src / 64] &= ~(1ull << (src % 64));
            return;
        }
    }
    /* Late (the unexport stopped waiting when it heard src was down): nothing. */
}

void fl_rma_revoke(struct flit_ep *ep, struct flit_rma_region *g, bool wait)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    uint32_t slot = g->obj.idx;
    uint64_t id = region_id(g);
    fl_rma_dir_unpublish(ep, g); /* no new import finds it */
    atomic_store_explicit(fl_rma_ctl_word(r->ctl, ep->size, slot),
                          (uint64_t)g->obj.gen << 1, memory_order_relaxed);
    if (wait && r->ctl_shared) {
        /* The dead word is visible before we read the busy marks; pairs
           with the importer's fast fence between raising its mark and
           reading the word (rma.h). */
        fl_fence_slow();
        wait_direct_accesses(ep, slot);
    }
    const struct fl_tp_onesided *xos = g->xos;
    struct fl_tp_ep *xtpe = g->xtpe;
    uint64_t xkey = g->xkey, *held = g->xheld;
    free(g->allowed);
    g->allowed = NULL;
    g->block = NULL;
    g->xos = NULL;
    g->xheld = NULL;
    fl_rma_pool_put(&r->regions, &g->obj); /* imports and packets: REVOKED */
    if (xos) {
        /* Closing (!wait): the job tears every endpoint down at once. */
        if (wait)
            withdraw(ep, id, held);
        xos->unexpose(xtpe, xkey); /* no access lands once it returns */
    }
    free(held);
}

flit_status flit_rma_unexport(flit_rma_region_t *region)
{
    struct flit_rma_region *g = fl_rma_region_of(region);
    if (!g)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = fl_ep_enter(g->ep);
    if (st != FLIT_OK)
        return st;
    if (g->obj.live)
        fl_rma_revoke(g->ep, g, true);
    else
        st = FLIT_ERR_REVOKED;
    fl_ep_leave(g->ep);
    return st;
}

flit_status flit_rma_set_notify_handler(flit_ep_t *ep, flit_rma_notify_fn fn, void *user)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    fl_rma_of(ep)->notify_fn = fn;
    fl_rma_of(ep)->notify_user = fn ? user : NULL;
    fl_ep_leave(ep);
    return FLIT_OK;
}
