/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory for one-sided communication: flit_rma_alloc blocks (files in
 * /dev/shm that ranks of this host map), the owner's control file, and the
 * importer's mappings of both. The layer's only calls to the OS are here.
 *
 * Names: /flit-<job>-<rank>-<endpoint>-rma<n> for the n-th block,
 * ...-rmactl for the control file. They stay in /dev/shm while they may
 * still be imported (until freed, or until the endpoint goes): an importer
 * opens them by name. flitrun removes what a crashed job left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os.h"
#include "rma/rma.h"
#include "util/config.h"
#include "util/log.h"

static void block_name(char *buf, size_t len, uint32_t rank, uint32_t ep, uint64_t seq)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-rma%llu", (unsigned long long)seq);
    fl_job_shm_name(buf, len, rank, ep, suffix);
}

static flit_status os_status(int err)
{
    return err == -ENOMEM || err == -ENOSPC || err == -EMFILE || err == -ENFILE
               ? FLIT_ERR_NO_MEMORY
               : FLIT_ERR_SYSTEM;
}

/* ---- blocks ---- */

flit_status flit_rma_alloc(flit_ep_t *ep, size_t len, void **addr_out)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    struct fl_rma_ep *r = fl_rma_of(ep);
    size_t size = (len + r->page - 1) & ~(r->page - 1);
    struct fl_rma_block *b = NULL;
    if (!addr_out || len == 0)
        st = FLIT_ERR_INVALID_ARG;
    else if (size < len || size > ((size_t)1 << 46))
        st = FLIT_ERR_TOO_LARGE;
    else if (!(b = calloc(1, sizeof *b)))
        st = FLIT_ERR_NO_MEMORY;
    if (st == FLIT_OK) {
        char name[96];
        int fd;
        void *mem;
        b->seq = ++r->next_block;
        block_name(name, sizeof name, ep->rank, ep->index, b->seq);
        int err = fl_shm_create(name, size, &fd, &mem);
        if (err) {
            fl_error("rma: cannot allocate %zu bytes in /dev/shm: %s", size,
                     strerror(-err)); /* its pages reserved: never a SIGBUS later */
            st = os_status(err);
            free(b);
        } else {
            close(fd); /* the mapping and the name are all we need */
            b->addr = mem;
            b->len = size;
            b->next = r->blocks;
            r->blocks = b;
            *addr_out = mem;
        }
    }
    fl_ep_leave(ep);
    return st;
}

static void block_release(struct flit_ep *ep, struct fl_rma_block *b)
{
    char name[96];
    block_name(name, sizeof name, ep->rank, ep->index, b->seq);
    munmap(b->addr, b->len);
    fl_shm_unlink(name);
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

/* Whether a rank of this host may reach our memory directly. */
static bool has_direct_peer(struct flit_ep *ep)
{
    if (fl_cfg.shm_bulk == FL_BULK_COPY)
        return false;
    for (uint32_t k = 0; k < ep->size; k++) {
        const struct fl_peer *p = &ep->peers[k];
        if (k != ep->rank && p->tp && p->tp->peer_pid && p->tp->peer_pid(p->tpe, k))
            return true;
    }
    return false;
}

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
    if (has_direct_peer(ep)) {
        char name[96];
        int fd;
        void *mem;
        fl_job_shm_name(name, sizeof name, ep->rank, ep->index, "-rmactl");
        int err = fl_shm_create(name, len, &fd, &mem);
        if (err == -ENOSPC || err == -ENOMEM) {
            /* The export that needs it says so; a later one tries again. */
            fl_error("rma: no room in /dev/shm for the %zu-byte control file of "
                     "exported regions: %s",
                     len, strerror(-err));
            return FLIT_ERR_NO_MEMORY;
        }
        if (!err) {
            close(fd);
            r->ctl = mem;
            r->ctl_shared = true;
        } else {
            fl_info("rma: no shared control file (%s); peers on this host reach "
                    "our regions through packets",
                    strerror(-err));
        }
    }
    if (!r->ctl) {
        /* Nobody maps it: private pages, zero until touched. */
        void *mem =
            mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            return FLIT_ERR_NO_MEMORY;
        r->ctl = mem;
    }
    r->ctl_len = len;
    ctl_header(r->ctl, ep->size);
    return FLIT_OK;
}

void fl_rma_ctl_unmake(struct flit_ep *ep)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (!r->ctl)
        return;
    munmap(r->ctl, r->ctl_len);
    if (r->ctl_shared) {
        char name[96];
        fl_job_shm_name(name, sizeof name, ep->rank, ep->index, "-rmactl");
        fl_shm_unlink(name);
    }
    r->ctl = NULL;
}

/* ---- the importer's mappings ---- */

/* Maps owner's control file once; false when it cannot be (the caller then
   goes through packets). */
bool fl_rma_ctl_attach(struct flit_ep *ep, uint32_t owner)
{
    struct fl_rma_peer *p = &fl_rma_of(ep)->peers[owner];
    if (p->ctl || p->ctl_tried)
        return p->ctl != NULL;
    char name[96];
    size_t size;
    void *mem;
    fl_job_shm_name(name, sizeof name, owner, ep->index, "-rmactl");
    int err = fl_shm_attach(name, &size, &mem);
    /* This process's shortage (a descriptor, a mapping) passes: this import
       goes through packets, the next one tries the file again. */
    p->ctl_tried = !fl_os_shortage(err);
    if (err) {
        fl_info("rma: cannot map rank %u's control file (%s); its regions are "
                "reached through packets",
                owner, strerror(-err));
        return false;
    }
    uint8_t want[16];
    ctl_header(want, ep->size);
    if (size != fl_rma_ctl_len(ep->size, fl_rma_of(ep)->page) || memcmp(mem, want, 16)) {
        fl_warn("rma: rank %u's control file is not what this flit expects; its "
                "regions are reached through packets",
                owner);
        munmap(mem, size);
        return false;
    }
    p->ctl = mem;
    p->ctl_len = size;
    return true;
}

void fl_rma_peer_ctl_free(struct fl_rma_peer *p)
{
    if (p->ctl)
        munmap(p->ctl, p->ctl_len);
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

/* Maps [start, end) of the owner's block file; checks its size. */
static flit_status map_new(struct flit_ep *ep, uint32_t owner, uint64_t block,
                           uint64_t start, uint64_t end, bool write,
                           struct fl_rma_map **out)
{
    struct fl_rma_ep *r = fl_rma_of(ep);
    if (r->nmaps >= FL_RMA_MAX_MAPS) {
        static _Atomic int told;
        if (!atomic_exchange(&told, 1))
            fl_info("rma: %u distinct regions mapped; further imports reach their "
                    "regions by cross-memory attach or packets",
                    FL_RMA_MAX_MAPS);
        return FLIT_ERR_NO_MEMORY;
    }
    struct fl_rma_map *m = calloc(1, sizeof *m);
    if (!m)
        return FLIT_ERR_NO_MEMORY;
    char name[96];
    block_name(name, sizeof name, owner, ep->index, block);
    int fd = shm_open(name, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
    struct stat sb;
    void *mem = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size >= 0 && (uint64_t)sb.st_size >= end)
        mem = mmap(NULL, end - start, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED,
                   fd, (off_t)start);
    if (fd >= 0)
        close(fd);
    if (mem == MAP_FAILED) {
        free(m);
        return FLIT_ERR_SYSTEM;
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
 * write. The file's size is checked against what the owner said. Imports
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
    munmap(m->addr, m->end - m->start);
    free(m);
    fl_rma_of(ep)->nmaps--;
}
