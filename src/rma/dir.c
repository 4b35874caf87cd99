/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The export directory: the owner publishes every region it exports in its
 * control file (rma.h), where importers of this host read it, so that an
 * import is answered without the owner doing anything, as VMMC's daemons
 * answered them: the owner may be spinning on its memory, making no call.
 *
 *   directory  [line: word 0, live regions left out (more than FL_RMA_DIR_MAX);
 *                 word 1, imports refused here, which the owner counts]
 *              [FL_RMA_DIR_MAX entries of fl_rma_dir_entry_len bytes:
 *                 words: id, key, len, vaddr, block, file_off, file_len,
 *                 access, then the allowed ranks as a bitmap (all ones:
 *                 every rank)]
 *
 * The owner alone writes it, importers only read it: a seqlock on each
 * entry's id word. The owner clears the id, fences (release), writes the
 * fields and stores the id last (release); a reader takes the id
 * (acquire), the fields, fences (acquire) and takes the id again, and
 * believes the fields only when both are the id it wants. Region ids are
 * never reused, so a later region in the same entry is never taken for
 * the one read.
 *
 * It grants what the owner's answer would: the same fields, the same
 * allowed ranks. Revocation stays with the slot word every direct access
 * checks (rma.h): a region unexported after an importer read it here is
 * refused at that importer's first access. An import refused here is
 * counted in the owner's file, and the owner adds that to its rma_refused.
 * Where the directory cannot be read (the transport serving the owner maps
 * no memory of its: another host, or the transport's settings) imports go
 * by packets.
 */
#include <stdatomic.h>
#include <string.h>

#include "rma/rma.h"
#include "util/log.h"

#define DIR_LEFT_OUT UINT32_MAX /* g->dir of a region left out */

enum {
    W_ID,
    W_KEY,
    W_LEN,
    W_VADDR,
    W_BLOCK,
    W_FILE_OFF,
    W_FILE_LEN,
    W_ACCESS,
    W_ALLOWED
};

static _Atomic uint64_t *dir_word(uint8_t *ctl, uint32_t nranks, uint32_t e, unsigned w)
{
    size_t off = fl_rma_dir_off(nranks) + FL_RMA_LINE +
                 (size_t)e * fl_rma_dir_entry_len(nranks) + 8u * w;
    return (_Atomic uint64_t *)(void *)(ctl + off);
}

static _Atomic uint64_t *dir_left_out(uint8_t *ctl, uint32_t nranks)
{
    return (_Atomic uint64_t *)(void *)(ctl + fl_rma_dir_off(nranks));
}

static _Atomic uint64_t *dir_refused(uint8_t *ctl, uint32_t nranks)
{
    return (_Atomic uint64_t *)(void *)(ctl + fl_rma_dir_off(nranks) + 8u);
}

uint64_t fl_rma_dir_refused(const struct fl_rma_ep *r)
{
    return r->ctl ? atomic_load_explicit(dir_refused(r->ctl, r->ep->size),
                                         memory_order_relaxed)
                  : 0;
}

/* ---- the owner ---- */

static void put_word(uint8_t *ctl, uint32_t nranks, uint32_t e, unsigned w, uint64_t v)
{
    atomic_store_explicit(dir_word(ctl, nranks, e, w), v, memory_order_relaxed);
}

/* Writes region g into entry e, its id last. */
static void write_entry(struct flit_ep *ep, uint32_t e, const struct flit_rma_region *g)
{
    uint8_t *ctl = fl_rma_of(ep)->ctl;
    uint32_t n = ep->size;
    put_word(ctl, n, e, W_ID, 0);
    atomic_thread_fence(memory_order_release); /* the id is 0 before any field changes */
    put_word(ctl, n, e, W_KEY, g->key);
    put_word(ctl, n, e, W_LEN, g->len);
    put_word(ctl, n, e, W_VADDR, (uint64_t)(uintptr_t)g->addr);
    put_word(ctl, n, e, W_BLOCK, g->block ? g->block->seq : 0);
    put_word(ctl, n, e, W_FILE_OFF, g->block ? g->block_off : 0);
    put_word(ctl, n, e, W_FILE_LEN, g->block ? g->block->len : 0);
    put_word(ctl, n, e, W_ACCESS, g->access);
    for (uint32_t w = 0; w < (n + 63) / 64; w++)
        put_word(ctl, n, e, W_ALLOWED + w, g->allowed ? g->allowed[w] : ~(uint64_t)0);
    uint64_t id = (uint64_t)g->obj.gen << 32 | g->obj.idx;
    /* Release: the fields are in before a reader can see the id. */
    atomic_store_explicit(dir_word(ctl, n, e, W_ID), id, memory_order_release);
}

void fl_rma_dir_publish(struct flit_ep *ep, struct flit_rma_region *g)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    g->key = 0;
    g->dir = DIR_LEFT_OUT;
    for (uint32_t e = 0; e < FL_RMA_DIR_MAX && g->dir == DIR_LEFT_OUT; e++)
        if (!atomic_load_explicit(dir_word(r->ctl, ep->size, e, W_ID),
                                  memory_order_relaxed))
            g->dir = e;
    if (g->dir == DIR_LEFT_OUT) {
        atomic_fetch_add_explicit(dir_left_out(r->ctl, ep->size), 1,
                                  memory_order_release);
        return;
    }
    write_entry(ep, g->dir, g);
}

void fl_rma_dir_unpublish(struct flit_ep *ep, struct flit_rma_region *g)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (g->dir == DIR_LEFT_OUT)
        atomic_fetch_sub_explicit(dir_left_out(r->ctl, ep->size), 1,
                                  memory_order_release);
    else
        put_word(r->ctl, ep->size, g->dir, W_ID, 0);
    g->dir = DIR_LEFT_OUT;
    g->key = 0;
}

static bool key_taken(struct fl_rma_ep *r, uint64_t key)
{
    for (uint32_t i = 0; i < r->regions.n; i++) {
        const struct flit_rma_region *g = (struct flit_rma_region *)r->regions.all[i];
        if (g->obj.live && g->key == key)
            return true;
    }
    return false;
}

flit_status flit_rma_region_set_key(flit_rma_region_t *region, uint64_t key)
{
    struct flit_rma_region *g = fl_rma_region_of(region);
    if (!g)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = fl_ep_enter(g->ep);
    if (st != FLIT_OK)
        return st;
    struct flit_ep *ep = g->ep;
    if (!g->obj.live)
        st = FLIT_ERR_REVOKED;
    else if (key == 0 || (key != g->key && key_taken(fl_rma_of(ep), key)))
        st = FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK) {
        g->key = key;
        if (g->dir != DIR_LEFT_OUT)
            write_entry(ep, g->dir, g);
    }
    fl_ep_leave(ep);
    return st;
}

/* ---- importers ---- */

struct dir_found {
    uint64_t id, key;
    bool allowed;
    struct fl_rma_info info;
    uint64_t len;
    unsigned access;
};

static uint64_t get_word(uint8_t *ctl, uint32_t nranks, uint32_t e, unsigned w)
{
    return atomic_load_explicit(dir_word(ctl, nranks, e, w), memory_order_relaxed);
}

/* Entry e as one consistent read, if it holds a region: its fields for rank me. */
static bool read_entry(uint8_t *ctl, uint32_t n, uint32_t me, uint32_t e,
                       struct dir_found *f)
{
    /* Acquire: the fields the owner wrote before this id. */
    uint64_t id = atomic_load_explicit(dir_word(ctl, n, e, W_ID), memory_order_acquire);
    if (!id)
        return false;
    f->key = get_word(ctl, n, e, W_KEY);
    f->len = get_word(ctl, n, e, W_LEN);
    f->info.vaddr = get_word(ctl, n, e, W_VADDR);
    f->info.block = get_word(ctl, n, e, W_BLOCK);
    f->info.file_off = get_word(ctl, n, e, W_FILE_OFF);
    f->info.file_len = get_word(ctl, n, e, W_FILE_LEN);
    f->info.flags = FL_RMA_INFO_CTL;
    f->access = (unsigned)get_word(ctl, n, e, W_ACCESS) & FL_RMA_ACCESS_ALL;
    f->allowed = get_word(ctl, n, e, W_ALLOWED + me / 64) >> (me % 64) & 1u;
    /* Acquire: the fields were read before the id is read again. */
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(dir_word(ctl, n, e, W_ID), memory_order_relaxed) != id)
        return false; /* rewritten meanwhile: that region is gone */
    f->id = id;
    return true;
}

/* The region id (or, id 0, the region with key) in the directory ctl. */
static flit_status dir_find(uint8_t *ctl, uint32_t n, uint32_t me, uint64_t id,
                            uint64_t key, struct dir_found *f)
{
    for (uint32_t e = 0; e < FL_RMA_DIR_MAX; e++)
        if (read_entry(ctl, n, me, e, f) && (id ? f->id == id : f->key == key))
            return f->allowed ? FLIT_OK : FLIT_ERR_DENIED;
    /* Not here: no such region, unless some were left out. */
    return atomic_load_explicit(dir_left_out(ctl, n), memory_order_acquire)
               ? FLIT_ERR_NOT_SUPPORTED
               : FLIT_ERR_REVOKED;
}

/*
 * Whether owner's control file is there and made (its size and header
 * written): the owner makes it at its first export, and an importer may
 * look while it does. Before that, owner has published nothing.
 */
static bool ctl_made(struct flit_ep *ep, uint32_t owner)
{
    size_t len = fl_rma_ctl_len(ep->size, fl_rma_of(ep)->page);
    void *mem;
    if (fl_rma_ctl_map(ep, owner, len, &mem) != FLIT_OK)
        return false;
    uint64_t want[2] = {FL_RMA_CTL_MAGIC, (uint64_t)ep->size << 32 | FL_RMA_MAX_REGIONS};
    bool made = memcmp(mem, want, sizeof want) == 0;
    fl_rma_unmap(ep, owner, mem, len);
    return made;
}

/*
 * Owner's directory, mapped here: its control file. NULL when it cannot be
 * read from here; then *none says whether that is because owner has
 * exported nothing yet.
 */
static uint8_t *dir_of(struct flit_ep *ep, uint32_t owner, bool *none)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    const struct fl_tp_onesided *os = fl_rma_tp(ep, owner);
    *none = false;
    if (owner == ep->rank) {
        *none = !r->ctl;
        return r->ctl;
    }
    if (!os || !os->map)
        return NULL;
    struct fl_rma_peer *pp = &r->peers[owner];
    if (!pp->ctl) {
        if (!ctl_made(ep, owner)) {
            *none = true;
            return NULL;
        }
        pp->ctl_tried = false; /* it may have been looked for too early */
    }
    return fl_rma_ctl_attach(ep, owner) ? pp->ctl : NULL;
}

flit_status fl_rma_dir_import(struct flit_ep *ep, uint32_t owner, uint64_t id,
                              struct flit_rma_remote *rm, struct fl_rma_info *in)
{
    bool none;
    uint8_t *ctl = dir_of(ep, owner, &none);
    if (!ctl)
        return FLIT_ERR_NOT_SUPPORTED; /* the owner answers */
    struct dir_found f;
    flit_status st = dir_find(ctl, ep->size, ep->rank, id, 0, &f);
    if (st == FLIT_OK) {
        rm->size = f.len;
        rm->access = f.access;
        *in = f.info;
    } else if (st != FLIT_ERR_NOT_SUPPORTED) {
        /* the owner's refusal, as if it had answered: counted there */
        atomic_fetch_add_explicit(dir_refused(ctl, ep->size), 1, memory_order_relaxed);
        fl_debug("rma: rank %u's directory refuses region %llx: %s", owner,
                 (unsigned long long)id, flit_status_name(st));
    }
    return st;
}

flit_status flit_rma_lookup(flit_ep_t *ep, flit_rank_t owner, uint64_t key,
                            uint64_t *id_out)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    bool none = false;
    uint8_t *ctl = NULL;
    struct dir_found f = {0};
    if (!id_out || key == 0)
        st = FLIT_ERR_INVALID_ARG;
    else if (owner.idx >= ep->size)
        st = FLIT_ERR_RANK;
    else if (fl_peer_is_down(&ep->peers[owner.idx]))
        st = FLIT_ERR_PEER_DOWN;
    else if (!(ctl = dir_of(ep, owner.idx, &none)))
        st = none ? FLIT_ERR_REVOKED : FLIT_ERR_NOT_SUPPORTED;
    else
        st = dir_find(ctl, ep->size, ep->rank, 0, key, &f);
    if (st == FLIT_OK || (st == FLIT_ERR_DENIED && ctl))
        *id_out = f.id;
    fl_ep_leave(ep);
    return st;
}
