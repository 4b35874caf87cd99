/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory for one-sided communication: flit_rma_alloc blocks, the owner's
 * control file, and the importer's mappings of both. Memory that peers map
 * is the transport's (its one-sided ->mem_alloc, ->map: transport.h),
 * named by our rank and a key: FL_RMA_CTL_KEY for the control file, the
 * block's number for a block. Where no transport offers such memory, both
 * are private pages, and peers reach them through packets.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rma/rma.h"
#include "util/log.h"

/*
 * The transport whose memory peers may map: the first that reaches one
 * of our peers and offers memory. Looked for once: which transport serves
 * a peer is fixed at creation.
 */
static const struct fl_tp_onesided *mem_tp(struct flit_ep *ep)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    for (uint32_t k = 0; !r->mem_known && k < ep->size; k++) {
        const struct fl_tp_onesided *os = k == ep->rank ? NULL : fl_rma_tp(ep, k);
        if (os && os->mem_alloc) {
            r->mem = os;
            r->mem_tpe = ep->peers[k].tpe;
            r->mem_known = true;
        }
    }
    r->mem_known = true;
    return r->mem;
}

/* len bytes, zero: the transport's memory key when one offers it (*shared),
   else private pages. */
static flit_status mem_get(struct flit_ep *ep, uint64_t key, size_t len, bool *shared,
                           void **out)
{
    const struct fl_tp_onesided *os = mem_tp(ep);
    *shared = false;
    if (os) {
        flit_status st = os->mem_alloc(fl_rma_of(ep)->mem_tpe, key, len, out);
        *shared = st == FLIT_OK;
        if (st != FLIT_ERR_SYSTEM)
            return st; /* a shortage, said there; private pages would hide it */
    }
    /* Nobody maps it: private pages, zero until touched. */
    void *mem =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return FLIT_ERR_NO_MEMORY;
    *out = mem;
    return FLIT_OK;
}

static void mem_put(struct flit_ep *ep, uint64_t key, bool shared, void *addr, size_t len)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (shared)
        r->mem->mem_free(r->mem_tpe, key, addr, len);
    else
        munmap(addr, len);
}

/* ---- blocks ---- */

static flit_status block_new(struct flit_ep *ep, size_t size, void **addr_out)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    struct fl_rma_block *b = calloc(1, sizeof *b);
    if (!b)
        return FLIT_ERR_NO_MEMORY;
    b->seq = ++r->next_block;
    void *mem;
    flit_status st = mem_get(ep, b->seq, size, &b->shared, &mem);
    if (st != FLIT_OK) {
        free(b);
        return st;
    }
    b->addr = mem;
    b->len = size;
    b->next = r->blocks;
    r->blocks = b;
    *addr_out = mem;
    return FLIT_OK;
}

flit_status flit_rma_alloc(flit_ep_t *ep, size_t len, void **addr_out)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    struct fl_rma_ep *r = fl_rma_of(ep);
    size_t size = (len + r->page - 1) & ~(r->page - 1);
    if (!addr_out || len == 0)
        st = FLIT_ERR_INVALID_ARG;
    else if (size < len || size > ((size_t)1 << 46))
        st = FLIT_ERR_TOO_LARGE;
    else
        st = block_new(ep, size, addr_out);
    fl_ep_leave(ep);
    return st;
}

static void block_release(struct flit_ep *ep, struct fl_rma_block *b)
{
    mem_put(ep, b->seq, b->shared, b->addr, b->len);
    free(b);
}

flit_status flit_rma_free(flit_ep_t *ep, void *addr)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    struct fl_rma_ep *r = fl_rma_of(ep);
    struct fl_rma_block **pp = &r->blocks;
    while (*pp && (*pp)->addr != addr)
        pp = &(*pp)->next;
    struct fl_rma_block *b = *pp;
    if (!b || !addr) {
        fl_ep_leave(ep);
        return FLIT_ERR_INVALID_ARG;
    }
    for (uint32_t i = 0; i < r->regions.n; i++) {
        struct flit_rma_region *g = (struct flit_rma_region *)r->regions.all[i];
        if (g->obj.live && g->block == b)
            fl_rma_revoke(ep, g, true);
    }
    *pp = b->next;
    block_release(ep, b);
    fl_ep_leave(ep);
    return FLIT_OK;
}

struct fl_rma_block *fl_rma_block_of(struct fl_rma_ep *r, const void *addr, size_t len,
                                     uint64_t *off_out)
{
    uintptr_t a = (uintptr_t)addr;
    for (struct fl_rma_block *b = r->blocks; b; b = b->next) {
        uintptr_t start = (uintptr_t)b->addr;
        if (a >= start && a - start <= b->len && len <= b->len - (a - start)) {
            *off_out = a - start;
            return b;
        }
    }
    return NULL;
}

void fl_rma_blocks_free(struct flit_ep *ep)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    while (r->blocks) {
        struct fl_rma_block *b = r->blocks;
        r->blocks = b->next;
        block_release(ep, b);
    }
}

/* ---- the owner's control file ---- */

static void ctl_header(uint8_t *ctl, uint32_t nranks)
{
    uint64_t h[2] = {FL_RMA_CTL_MAGIC, (uint64_t)nranks << 32 | FL_RMA_MAX_REGIONS};
    memcpy(ctl, h, sizeof h);
}

flit_status fl_rma_ctl_make(struct flit_ep *ep)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (r->ctl)
        return FLIT_OK;
    size_t len = fl_rma_ctl_len(ep->size, r->page);
    void *mem;
    /* A shortage fails the export that needs it; a later one tries again. */
    flit_status st = mem_get(ep, FL_RMA_CTL_KEY, len, &r->ctl_shared, &mem);
    if (st != FLIT_OK)
        return st;
    if (!r->ctl_shared && r->mem)
        fl_info("rma: no shared control file; peers reach our regions through packets");
    r->ctl = mem;
    r->ctl_len = len;
    ctl_header(r->ctl, ep->size);
    return FLIT_OK;
}

void fl_rma_ctl_unmake(struct flit_ep *ep)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (!r->ctl)
        return;
    mem_put(ep, FL_RMA_CTL_KEY, r->ctl_shared, r->ctl, r->ctl_len);
    r->ctl = NULL;
}

/* ---- the importer's mappings ---- */

flit_status fl_rma_ctl_map(struct flit_ep *ep, uint32_t owner, size_t len, void **out)
{
    const struct fl_tp_onesided *os = fl_rma_tp(ep, owner);
    if (!os || !os->map)
        return FLIT_ERR_NOT_SUPPORTED;
    return os->map(ep->peers[owner].tpe, owner, FL_RMA_CTL_KEY, 0, len, FL_TP_MAP_WRITE,
                   out);
}

void fl_rma_unmap(struct flit_ep *ep, uint32_t owner, void *addr, size_t len)
{
    const struct fl_peer *p = &ep->peers[owner];
    p->tp->onesided->unmap(p->tpe, addr, len);
}

/* Maps owner's control file once; false when it cannot be (the caller then
   goes through packets). */
bool fl_rma_ctl_attach(struct flit_ep *ep, uint32_t owner)
{
    struct fl_rma_peer *p = &fl_rma_of(ep)->peers[owner];
    if (p->ctl || p->ctl_tried)
        return p->ctl != NULL;
    size_t len = fl_rma_ctl_len(ep->size, fl_rma_of(ep)->page);
    void *mem;
    flit_status st = fl_rma_ctl_map(ep, owner, len, &mem);
    /* This process's shortage (a descriptor, a mapping) passes: this import
       goes through packets, the next one tries the file again. */
    p->ctl_tried = st != FLIT_ERR_NO_MEMORY;
    if (st != FLIT_OK) {
        fl_info("rma: cannot map rank %u's control file (%s); its regions are "
                "reached through packets",
                owner, flit_status_name(st));
        return false;
    }
    uint8_t want[16];
    ctl_header(want, ep->size);
    if (memcmp(mem, want, 16)) {
        fl_warn("rma: rank %u's control file is not what this flit expects; its "
                "regions are reached through packets",
                owner);
        fl_rma_unmap(ep, owner, mem, len);
        return false;
    }
    p->ctl = mem;
    p->ctl_len = len;
    return true;
}

void fl_rma_peer_ctl_free(struct flit_ep *ep, uint32_t owner)
{
    struct fl_rma_peer *p = &fl_rma_of(ep)->peers[owner];
    if (p->ctl)
        fl_rma_unmap(ep, owner, p->ctl, p->ctl_len);
    p->ctl = NULL;
}

/* The mapping of [start, end) of the owner's block, if one exists. */
static struct fl_rma_map *map_find(struct fl_rma_peer *pp, uint64_t block, uint64_t start,
                                   uint64_t end, bool write)
{
    for (struct fl_rma_map *m = pp->maps; m; m = m->next)
        if (m->block == block && m->start == start && m->end == end && m->write == write)
            return m;
    return NULL;
}

/* Maps [start, end) of the owner's block; the transport checks its size. */
static flit_status map_new(struct flit_ep *ep, uint32_t owner, uint64_t block,
                           uint64_t start, uint64_t end, bool write,
                           struct fl_rma_map **out)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    const struct fl_tp_onesided *os = fl_rma_tp(ep, owner);
    if (!os || !os->map)
        return FLIT_ERR_NOT_SUPPORTED;
    if (r->nmaps >= FL_RMA_MAX_MAPS) {
        static _Atomic int told;
        if (!atomic_exchange(&told, 1))
            fl_info("rma: %u distinct regions mapped; further imports reach their "
                    "regions by the transport's put and get, or packets",
                    FL_RMA_MAX_MAPS);
        return FLIT_ERR_NO_MEMORY;
    }
    struct fl_rma_map *m = calloc(1, sizeof *m);
    if (!m)
        return FLIT_ERR_NO_MEMORY;
    void *mem;
    unsigned flags = FL_TP_MAP_DATA | (write ? FL_TP_MAP_WRITE : 0);
    flit_status st =
        os->map(ep->peers[owner].tpe, owner, block, start, end - start, flags, &mem);
    if (st != FLIT_OK) {
        free(m);
        return st;
    }
    *m = (struct fl_rma_map){.block = block,
                             .start = start,
                             .end = end,
                             .write = write,
                             .addr = mem,
                             .refs = 0,
                             .next = r->peers[owner].maps};
    r->peers[owner].maps = m;
    r->nmaps++;
    *out = m;
    return FLIT_OK;
}

/*
 * Maps the pages of the owner's block that hold the region, and no others:
 * read-only when only reading was granted, so that the hardware refuses a
 * write. The block's size is checked against what the owner said. Imports
 * of the same region share the mapping.
 */
flit_status fl_rma_map_remote(struct flit_ep *ep, struct flit_rma_remote *rm,
                              const struct fl_rma_info *in)
{
    size_t page = fl_rma_of(ep)->page;
    bool write = (rm->access & FLIT_RMA_WRITE) != 0;
    uint64_t start = in->file_off & ~(uint64_t)(page - 1);
    uint64_t end = (in->file_off + rm->size + page - 1) & ~(uint64_t)(page - 1);
    struct fl_rma_peer *pp = &fl_rma_of(ep)->peers[rm->owner];
    struct fl_rma_map *m = map_find(pp, in->block, start, end, write);
    if (!m) {
        flit_status st = map_new(ep, rm->owner, in->block, start, end, write, &m);
        if (st != FLIT_OK)
            return st;
    }
    m->refs++;
    rm->map = m;
    rm->base = m->addr + (in->file_off - start);
    return FLIT_OK;
}

void fl_rma_unmap_remote(struct flit_ep *ep, struct flit_rma_remote *rm)
{
    struct fl_rma_map *m = rm->map;
    rm->map = NULL;
    rm->base = NULL;
    if (!m || --m->refs)
        return;
    struct fl_rma_map **pp = &fl_rma_of(ep)->peers[rm->owner].maps;
    while (*pp != m)
        pp = &(*pp)->next;
    *pp = m->next;
    fl_rma_unmap(ep, rm->owner, m->addr, m->end - m->start);
    free(m);
    fl_rma_of(ep)->nmaps--;
}
