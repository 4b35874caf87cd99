/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided operations over libfabric (dgram.h's struct fl_dgram_rma,
 * which the channel offers the RMA layer): the owner exposes a region by
 * registering its memory for remote access with exactly the access it
 * granted (FI_REMOTE_WRITE, FI_REMOTE_READ), so that the provider (the
 * NIC, on hardware) refuses the rest, and withdraws it by closing the
 * registration; an importer's put or get is one fi_write or fi_read at
 * (key, address) per piece the provider takes, waited for by reading the
 * send queue (which also moves a provider of manual progress on).
 *
 * The provider's memory-registration modes (mr_mode):
 *  - FI_MR_PROV_KEY: the provider picks each key. Otherwise flit asks for
 *    one drawn from a random sequence of the endpoint's, as wide as the
 *    provider's keys: a rank never told a key does not guess it.
 *  - FI_MR_VIRT_ADDR: peers name the memory by its virtual address;
 *    otherwise by the offset in the registration (it starts at the region).
 *  - FI_MR_ENDPOINT: each registration is bound to the endpoint, enabled.
 *  - FI_MR_LOCAL (or FLIT_OFI_MR_LOCAL=1): the endpoint's own side of an
 *    operation needs a registration too. One of FLIT_OFI_BOUNCE_KB or less
 *    is copied through a bounce buffer registered once; a larger one uses
 *    the registration of an exposed region that holds it (registered for
 *    local access too), else registers the program's memory for the
 *    length of the operation. flit keeps no registration of the program's
 *    memory past the operation: it cannot see that memory freed and mapped
 *    again at the same address, and a registration kept past it would move
 *    the old pages. A provider that registers on a NIC may cache
 *    registrations itself, watching unmaps (verbs does: fi_verbs(7), and
 *    fi_mr(3) on FI_MR_CACHE_MONITOR).
 *
 * Ordering: a put is complete when its fi_write's completion is read, and
 * the provider was asked to keep sends after writes (FI_ORDER_SAW, at
 * open: ofi.c offers no one-sided operations on a provider without it), so
 * a message sent after a put reaches the owner after the put's bytes.
 *
 * Early puts (FLIT_OFI_EARLY_PUTS, on by default, on a provider that also
 * keeps writes after writes and reads after writes in order: FI_ORDER_WAW,
 * FI_ORDER_RAW): a put of the provider's inject size or less is posted with
 * FI_INJECT (the provider copied the bytes: the caller may reuse them) and
 * FI_TRANSMIT_COMPLETE, and returns at once; one larger, up to
 * FLIT_OFI_BOUNCE_KB, is copied into a bounce buffer that it holds until
 * its completion, and returns as well. The provider's own
 * acknowledgement of a delivery-complete write (a message back per put) is
 * not asked for. Its completion is counted off its peer's; ->settle waits
 * for the rest and says whether one failed, and the caller's flush proves
 * they landed by a message round trip behind them. The ordering keeps
 * every later message, put and get behind them, so a put with a
 * notification, or a put then a message saying "look", costs one way
 * instead of a round trip and one way.
 *
 * No operation waits for ever: one the provider has neither taken nor
 * completed within FLIT_PEER_TIMEOUT reports the peer down, as the channel
 * does a peer silent that long; its slot stays busy until the provider
 * completes it (it owns the context until then).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "platform/os.h"
#include "transport/ofi/ep.h"
#include "util/config.h"
#include "util/log.h"

#define SPIN_NS 200000u /* polled without pause; after, a nap between looks */
#define NAP_NS  20000u

/* A bounce buffer given back. */
static void bounce_put_back(struct fl_dgram *d, int b)
{
    d->bounce_free[d->nbounce_free++] = (uint8_t)b;
}

void fl_ofi_rma_done(struct fl_dgram *d, struct ofi_rma *op, int err)
{
    op->busy = false;
    d->rma_busy--;
    op->done = true;
    op->err = err;
    if (op->bounce >= 0) {
        bounce_put_back(d, op->bounce);
        op->bounce = -1;
    }
    if (op->early) {
        struct ofi_peer *p = &d->peers[op->rank];
        p->early--;
        if (err && !p->early_err)
            p->early_err = err;
    }
}

/* An operation the provider never took: its slot and bounce buffer back. */
static void not_posted(struct fl_dgram *d, struct ofi_rma *op)
{
    op->busy = false;
    d->rma_busy--;
    if (op->bounce >= 0)
        bounce_put_back(d, op->bounce);
    op->bounce = -1;
}

/* ---- keys and registrations ---- */

/* The next key of the endpoint's sequence (splitmix64 over a random
   start), as wide as the provider's keys. */
static uint64_t draw_key(struct fl_dgram *d)
{
    uint64_t z = (d->next_key += 0x9e3779b97f4a7c15ull);
    z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ z >> 27) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    size_t width = d->info->domain_attr->mr_key_size;
    return width && width < 8 ? z & ((1ull << (8 * width)) - 1) : z;
}

/* Registers [mem, mem + len) for access under a key of ours (where the
   provider does not pick it): 0, or the provider's error. */
static int reg_keyed(struct fl_dgram *d, const void *mem, size_t len, uint64_t access,
                     struct fid_mr **mr)
{
    bool prov_key = (d->info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
    int ret = -FI_ENOKEY;
    for (int tries = 0; tries < 8 && ret == -FI_ENOKEY; tries++) /* a key in use */
        ret = fl_ofi_reg(d, mem, len, access, prov_key ? 0 : draw_key(d), mr);
    return ret;
}

static flit_status rma_expose(struct fl_dgram *d, void *addr, size_t len, unsigned access,
                              uint64_t *key_out, uint64_t *raddr_out)
{
    uint64_t acc = (access & FL_TP_EXPOSE_READ ? FI_REMOTE_READ : 0) |
                   (access & FL_TP_EXPOSE_WRITE ? FI_REMOTE_WRITE : 0);
    if (!d->rma || !acc || len == 0)
        return FLIT_ERR_NOT_SUPPORTED;
    if (d->nmrs == d->mrs_cap) {
        size_t cap = d->mrs_cap ? 2 * d->mrs_cap : 16;
        struct ofi_mr *m = realloc(d->mrs, cap * sizeof *m);
        if (!m)
            return FLIT_ERR_NO_MEMORY;
        d->mrs = m;
        d->mrs_cap = cap;
    }
    struct fid_mr *mr = NULL;
    /* With FI_MR_LOCAL also for the endpoint's own puts from it and gets
       into it: they then need no registration of their own. */
    uint64_t local = d->mr_local ? FI_READ | FI_WRITE : 0;
    int ret = reg_keyed(d, addr, len, acc | local, &mr);
    uint64_t key = ret == 0 ? fi_mr_key(mr) : 0;
    if (ret == 0 && key == FI_KEY_NOTAVAIL) {
        fi_close(&mr->fid);
        ret = -FI_ENOKEY;
    }
    if (ret != 0) {
        if (!d->said_mr) {
            d->said_mr = true;
            fl_info("ofi (%s): registering %zu bytes for peers' puts and gets "
                    "(fi_mr_reg): %s; those go in packets",
                    d->prov, len, fi_strerror(-ret));
        }
        return ret == -FI_ENOMEM ? FLIT_ERR_NO_MEMORY : FLIT_ERR_NOT_SUPPORTED;
    }
    d->mrs[d->nmrs++] = (struct ofi_mr){
        .key = key, .mr = mr, .lo = (uintptr_t)addr, .hi = (uintptr_t)addr + len};
    *key_out = key;
    *raddr_out =
        d->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)addr : 0;
    return FLIT_OK;
}

static void rma_unexpose(struct fl_dgram *d, uint64_t key)
{
    for (size_t i = 0; i < d->nmrs; i++) {
        if (d->mrs[i].key == key) {
            fi_close(&d->mrs[i].mr->fid);
            d->mrs[i] = d->mrs[--d->nmrs];
            return;
        }
    }
}

/* The descriptor of a registration flit keeps (an exposed region's) that
   holds [buf, buf + len); NULL where none does. */
static void *kept_desc(struct fl_dgram *d, const uint8_t *buf, size_t len)
{
    uintptr_t lo = (uintptr_t)buf;
    for (size_t i = 0; i < d->nmrs; i++)
        if (d->mrs[i].lo <= lo && len <= d->mrs[i].hi - lo)
            return fi_mr_desc(d->mrs[i].mr);
    return NULL;
}

/* ---- bounce buffers ---- */

/* The bounce buffers, made (and registered, with FI_MR_LOCAL) at their
   first use: false where they cannot be (said once; none is used). */
static bool bounce_ready(struct fl_dgram *d)
{
    if (d->bounce_mem)
        return true;
    if (!d->bounce_size)
        return false;
    size_t bytes = d->bounce_size * OFI_BOUNCE_BUFS;
    d->bounce_mem = aligned_alloc(OFI_BUF_ALIGN, bytes);
    int ret = d->bounce_mem ? 0 : -FI_ENOMEM;
    if (ret == 0 && d->mr_local) {
        ret = reg_keyed(d, d->bounce_mem, bytes, FI_READ | FI_WRITE, &d->bounce_mr);
        d->bounce_desc = ret == 0 ? fi_mr_desc(d->bounce_mr) : NULL;
    }
    if (ret != 0) {
        fl_info("ofi (%s): no bounce buffers (%s): small puts and gets use the "
                "program's memory",
                d->prov, fi_strerror(-ret));
        free(d->bounce_mem);
        d->bounce_mem = NULL;
        d->bounce_size = 0;
        d->early_bounce = false;
        return false;
    }
    for (unsigned i = 0; i < OFI_BOUNCE_BUFS; i++)
        d->bounce_free[i] = (uint8_t)(OFI_BOUNCE_BUFS - 1 - i);
    d->nbounce_free = OFI_BOUNCE_BUFS;
    return true;
}

/* A free bounce buffer, once completions were read; -1 when none is (every
   one held by an early put still on its way: the caller goes without). */
static int bounce_take(struct fl_dgram *d)
{
    if (!bounce_ready(d))
        return -1;
    if (!d->nbounce_free)
        fl_ofi_reap(d);
    return d->nbounce_free ? d->bounce_free[--d->nbounce_free] : -1;
}

static uint8_t *bounce_at(struct fl_dgram *d, int b)
{
    return d->bounce_mem + (size_t)b * d->bounce_size;
}

/* ---- puts and gets ---- */

/* Between two looks at the send queue, spinning for the first spin_ns:
   false once FLIT_PEER_TIMEOUT has passed since start. */
static bool pause_spun(uint64_t start, uint64_t spin_ns)
{
    uint64_t waited = fl_now_ns() - start;
    if (waited > (uint64_t)fl_cfg.peer_timeout_ms * 1000000u)
        return false;
    if (waited < spin_ns) {
        fl_cpu_relax();
    } else {
        struct timespec nap = {0, NAP_NS};
        nanosleep(&nap, NULL);
    }
    return true;
}

static bool pause_since(uint64_t start)
{
    return pause_spun(start, SPIN_NS);
}

/* A completion's error, as the caller's status. A key the owner
   withdrew shows as a refused access; anything else (a connection lost, a
   provider's trouble) is left to the packets, where the channel judges
   the peer and the owner the access. */
static flit_status judge(struct fl_dgram *d, uint32_t rank, int err)
{
    switch (err) {
    case 0:
        return FLIT_OK;
    case FI_EACCES:
    case FI_EPERM:
    case FI_ENOKEY:
    case FI_EKEYREJECTED:
        return FLIT_ERR_REVOKED;
    default:
        fl_debug("ofi (%s): a put or get at rank %u failed: %s; it goes in packets",
                 d->prov, rank, fi_strerror(err));
        return FLIT_ERR_NOT_SUPPORTED;
    }
}

/* A free slot, reading completions while none is (early puts hold
   theirs until they land); NULL after FLIT_PEER_TIMEOUT. */
static struct ofi_rma *take_slot(struct fl_dgram *d, uint64_t start)
{
    do {
        for (unsigned i = 0; i < OFI_RMA_SLOTS; i++) {
            if (!d->ops[i].busy) {
                d->ops[i] = (struct ofi_rma){.busy = true, .bounce = -1};
                d->rma_busy++;
                return &d->ops[i];
            }
        }
        fl_ofi_reap(d);
        fl_ofi_stash(d);
    } while (pause_since(start));
    return NULL;
}

/* Waits until every early put to rank left (its completion read): the
   first failure among them since the last settle, as the caller's status.
   That they landed, a message behind them and its answer prove (FI_ORDER_SAW). */
static flit_status settle(struct fl_dgram *d, uint32_t rank)
{
    struct ofi_peer *p = &d->peers[rank];
    uint64_t start = fl_now_ns();
    while (p->early) {
        fl_ofi_reap(d);
        fl_ofi_stash(d);
        if (p->early && !pause_since(start)) {
            fl_warn("ofi (%s): %u puts to rank %u did not complete in %lld s: rank %u "
                    "is taken for down",
                    d->prov, p->early, rank, (long long)(fl_cfg.peer_timeout_ms / 1000),
                    rank);
            return FLIT_ERR_PEER_DOWN;
        }
    }
    int err = p->early_err;
    p->early_err = 0;
    flit_status st = judge(d, rank, err);
    /* Not sent in packets after all: the bytes are lost. */
    return st == FLIT_ERR_NOT_SUPPORTED ? FLIT_ERR_SYSTEM : st;
}

/* Room for one more early put to rank: at most OFI_EARLY_PEER in flight,
   so that a peer that stopped taking them holds a few slots, not all. */
static flit_status early_room(struct fl_dgram *d, uint32_t rank)
{
    uint64_t start = fl_now_ns();
    while (d->peers[rank].early >= OFI_EARLY_PEER) {
        fl_ofi_reap(d);
        fl_ofi_stash(d);
        if (d->peers[rank].early >= OFI_EARLY_PEER && !pause_since(start))
            return FLIT_ERR_PEER_DOWN;
    }
    return FLIT_OK;
}

/* One fi_write or fi_read of n bytes, posted and waited for; early: a
   write posted and not waited for (settle), its bytes injected (FI_INJECT:
   the inject size or less) or in bounce buffer b. Bounce buffer b (or -1)
   is the operation's: back at once where it was not posted, else at its
   completion (fl_ofi_rma_done), not before: one abandoned after
   FLIT_PEER_TIMEOUT may still be read or written. */
static flit_status one(struct fl_dgram *d, bool write, bool early, uint32_t rank,
                       fi_addr_t to, uint64_t key, uint64_t raddr, uint8_t *buf, size_t n,
                       void *desc, int b)
{
    uint64_t start = fl_now_ns();
    struct ofi_rma *op = take_slot(d, start);
    if (!op) { /* every slot held that long: abandoned ones, dying peers' */
        if (b >= 0)
            bounce_put_back(d, b);
        return FLIT_ERR_NOT_SUPPORTED;
    }
    op->bounce = b; /* given back when it completes, or below if not posted */
    uint64_t flags = FI_COMPLETION;
    if (early)
        flags |= FI_TRANSMIT_COMPLETE | (b < 0 ? FI_INJECT : 0);
    else if (write)
        flags |= FI_DELIVERY_COMPLETE;
    ssize_t ret;
    struct iovec iov = {.iov_base = buf, .iov_len = n};
    struct fi_rma_iov at = {.addr = raddr, .len = n, .key = key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = &desc,
                             .iov_count = 1,
                             .addr = to,
                             .rma_iov = &at,
                             .rma_iov_count = 1,
                             .context = &op->ctx};
    while ((ret = write ? fi_writemsg(d->ep, &msg, flags)
                        : fi_readmsg(d->ep, &msg, flags)) == -FI_EAGAIN) {
        fl_ofi_reap(d); /* progress, for the next try */
        fl_ofi_stash(d);
        if (!pause_since(start)) {
            not_posted(d, op);
            return FLIT_ERR_PEER_DOWN;
        }
    }
    if (ret != 0) {
        not_posted(d, op);
        if (early) { /* the provider takes no such write: xfer waits for each */
            if (b < 0)
                d->early_max = 0;
            else
                d->early_bounce = false;
            fl_info("ofi (%s): a put posted to return at once (%s) was refused: %s; "
                    "such puts wait for their landing",
                    d->prov,
                    b < 0 ? "FI_INJECT, FI_TRANSMIT_COMPLETE"
                          : "from a bounce buffer, FI_TRANSMIT_COMPLETE",
                    fi_strerror((int)-ret));
            return FLIT_ERR_NOT_SUPPORTED;
        }
        return judge(d, rank, (int)-ret);
    }
    if (early) {
        op->early = true;
        op->rank = rank;
        d->peers[rank].early++;
        return FLIT_OK;
    }
    /* Spun for as long as the bytes take at 1 GB/s too: a nap of tens of
       microseconds cost a pulled MiB a third of its bandwidth over tcp. */
    for (uint64_t spin = SPIN_NS + n;;) {
        fl_ofi_reap(d);
        fl_ofi_stash(d);
        if (op->done)
            return judge(d, rank, op->err);
        if (!pause_spun(start, spin)) {
            fl_warn("ofi (%s): a %s at rank %u did not complete in %lld s: rank %u "
                    "is taken for down",
                    d->prov, write ? "put" : "get", rank,
                    (long long)(fl_cfg.peer_timeout_ms / 1000), rank);
            return FLIT_ERR_PEER_DOWN;
        }
    }
}

/* A put that returns once posted: true when it was posted, or failed for
   good (*st); false when it must wait for its landing like a larger one
   (no bounce buffer free, or the provider refused the way). */
static bool early_put(struct fl_dgram *d, uint32_t rank, fi_addr_t to, uint64_t key,
                      uint64_t raddr, const uint8_t *buf, size_t len, flit_status *st)
{
    int b = -1;
    if (len > d->early_max) {
        if ((b = bounce_take(d)) < 0)
            return false;
        memcpy(bounce_at(d, b), buf, len);
    }
    *st = one(d, true, true, rank, to, key, raddr,
              b < 0 ? (uint8_t *)(uintptr_t)buf : bounce_at(d, b), len,
              b < 0 ? NULL : d->bounce_desc, b);
    if (*st == FLIT_OK) {
        FL_COUNT(d->counters->rma_early, 1);
        FL_COUNT(d->counters->rma_bounced, b >= 0);
        return true;
    }
    return *st != FLIT_ERR_NOT_SUPPORTED || (b < 0 ? d->early_max : d->early_bounce);
}

/* A put or get of FLIT_OFI_BOUNCE_KB or less through a bounce buffer,
   where the program's memory would need a registration (FI_MR_LOCAL):
   false when none is free. */
static bool bounced(struct fl_dgram *d, bool write, uint32_t rank, fi_addr_t to,
                    uint64_t key, uint64_t raddr, uint8_t *buf, size_t len,
                    flit_status *st)
{
    int b = bounce_take(d);
    if (b < 0)
        return false;
    uint8_t *at = bounce_at(d, b);
    if (write)
        memcpy(at, buf, len);
    *st = one(d, write, false, rank, to, key, raddr, at, len, d->bounce_desc, b);
    /* Given back at the completion, and untouched since: nothing takes a
       bounce buffer in between. */
    if (*st == FLIT_OK && !write)
        memcpy(buf, at, len);
    FL_COUNT(d->counters->rma_bounced, 1);
    return true;
}

/* A put or get of len bytes in pieces the provider takes; early: a put
   that may return before it lands (transport.h). */
static flit_status xfer(struct fl_dgram *d, bool write, bool early, uint32_t rank,
                        uint64_t key, uint64_t raddr, uint8_t *buf, size_t len)
{
    fi_addr_t to;
    if (!d->rma || rank >= d->size || rank == d->rank || !fl_ofi_av(d, rank, &to))
        return FLIT_ERR_NOT_SUPPORTED;
    if (len == 0)
        return FLIT_OK;
    flit_status st = FLIT_OK;
    if (early && (len <= d->early_max || (d->early_bounce && len <= d->bounce_size))) {
        if ((st = early_room(d, rank)) != FLIT_OK ||
            early_put(d, rank, to, key, raddr, buf, len, &st))
            return st;
    }
    if (d->mr_local && len <= d->bounce_size &&
        bounced(d, write, rank, to, key, raddr, buf, len, &st))
        return st;
    struct fid_mr *mr = NULL;
    void *desc = NULL;
    if (d->mr_local && (desc = kept_desc(d, buf, len)) != NULL) {
        FL_COUNT(d->counters->rma_kept, 1);
    } else if (d->mr_local) {
        if (reg_keyed(d, buf, len, write ? FI_WRITE : FI_READ, &mr) != 0)
            return FLIT_ERR_NOT_SUPPORTED;
        desc = fi_mr_desc(mr);
        FL_COUNT(d->counters->rma_registered, 1);
    }
    for (size_t off = 0; off < len && st == FLIT_OK;) {
        size_t n = len - off < d->rma_max ? len - off : d->rma_max;
        st = one(d, write, false, rank, to, key, raddr + off, buf + off, n, desc, -1);
        off += n;
    }
    if (mr)
        fi_close(&mr->fid);
    return st;
}

static flit_status rma_put(struct fl_dgram *d, uint32_t rank, uint64_t key,
                           uint64_t raddr, const void *src, size_t len)
{
    return xfer(d, true, false, rank, key, raddr, (uint8_t *)(uintptr_t)src, len);
}

static flit_status rma_put_early(struct fl_dgram *d, uint32_t rank, uint64_t key,
                                 uint64_t raddr, const void *src, size_t len)
{
    return xfer(d, true, true, rank, key, raddr, (uint8_t *)(uintptr_t)src, len);
}

static flit_status rma_get(struct fl_dgram *d, uint32_t rank, uint64_t key,
                           uint64_t raddr, void *dst, size_t len)
{
    return xfer(d, false, false, rank, key, raddr, dst, len);
}

static flit_status rma_settle(struct fl_dgram *d, uint32_t rank)
{
    return rank < d->size && d->rma ? settle(d, rank) : FLIT_OK;
}

static bool rma_reaches(struct fl_dgram *d, uint32_t rank)
{
    return d->rma && rank < d->size && rank != d->rank && d->peers[rank].namelen;
}

static size_t rma_pull_min(struct fl_dgram *d, uint32_t rank)
{
    return rma_reaches(d, rank) ? d->pull_min : 0;
}

void fl_ofi_rma_close(struct fl_dgram *d)
{
    /* Early puts still on their way land before the endpoint closes
       (closing would cancel them): as long as a peer is given. */
    uint64_t start = fl_now_ns();
    for (uint32_t r = 0; r < d->size; r++)
        while (d->peers && d->peers[r].early && pause_since(start))
            fl_ofi_reap(d);
    for (size_t i = 0; i < d->nmrs; i++)
        fi_close(&d->mrs[i].mr->fid);
    free(d->mrs);
    d->mrs = NULL;
    d->nmrs = d->mrs_cap = 0;
}

const struct fl_dgram_rma fl_ofi_rma = {
    .reaches = rma_reaches,
    .expose = rma_expose,
    .unexpose = rma_unexpose,
    .put = rma_put,
    .get = rma_get,
    .put_early = rma_put_early,
    .settle = rma_settle,
    .pull_min = rma_pull_min,
};
