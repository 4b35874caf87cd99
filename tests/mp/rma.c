/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication between real processes, on whatever transport
 * reaches the peers (shared memory: mapping, cross-memory attach, or
 * packets with FLIT_SHM_BULK=copy; UDP: packets, with injected loss too;
 * libfabric: the provider's fi_write and fi_read).
 * Each part fails on its own message:
 *
 *  sizes     every rank puts to and gets from its right neighbour 1 B to
 *            --max-size bytes at odd offsets from odd source addresses, in
 *            flit_rma_alloc memory and in malloc memory, blocking and not,
 *            with and without FLIT_RMA_REMOTE_DONE and notifications. The
 *            owner checks every byte in its notification handler (so the
 *            data is there when it runs), counts notifications (exactly
 *            once each), and checks the bytes again when the sender asks
 *            by active message; the sender gets the range back and
 *            compares it with what it put.
 *  shared    all ranks put at once into their own parts of one region of
 *            rank 0, non-blocking with a window of handles, then flush; the
 *            notification of each rank's last put finds its whole part.
 *  denied    rank 0 allows its region to even ranks only: odd ranks' imports
 *            are refused (FLIT_ERR_DENIED) and counted at rank 0.
 *  access    a read-only and a write-only region: puts to the first and
 *            gets from the second are refused, as are puts past the end;
 *            forged packets (claiming what the sender's checks would not
 *            allow) are refused by rank 0 itself, counted, and leave the
 *            guard bytes around the regions untouched. A read-only region
 *            mapped into an importer is mapped without write permission.
 *  revoke    after rank 0 unexports, puts and gets fail with
 *            FLIT_ERR_REVOKED (a plain put over packets at the latest at
 *            the next flush), imports too, and rank 0's memory is unchanged.
 *  race      the others put in a loop while rank 0 unexports: once
 *            flit_rma_unexport returned, not one more byte lands (over
 *            libfabric: the importers, told by message, answered first).
 *  early     the others make puts of 200 B to 12 KB, then 8-byte ones, to
 *            rank 0, the last with a notification, and say by a file each
 *            that they returned (over libfabric the larger ones are above
 *            the inject size: copied into bounce buffers);
 *            with --fabric or --direct rank 0 makes no flit call until
 *            then (over libfabric the puts are posted to land later);
 *            once rank 0 polls every notification finds its sender's
 *            puts in place.
 *  nopoll    rank 0 makes no flit call while the others put: with --direct
 *            the data must land all the same; otherwise it lands, all of
 *            it, once rank 0 polls; one notification per sender.
 *
 * Options: --test NAME (one part; default all), --max-size BYTES (largest
 * transfer of "sizes", scaled by FLITTEST_SCALE), --part BYTES (each
 * rank's part in "shared" and "nopoll"), --direct (this host's ranks must
 * reach alloc memory by mapping, or with FLIT_SHM_BULK=cma by cross-memory
 * attach, and malloc memory by cross-memory attach), --packets (every
 * remote region is reached through packets), --fabric (every remote region
 * through the network's remote memory access: FLIT_TRANSPORT=ofi on a
 * provider with FI_RMA, no file of one-sided memory mapped).
 */
#include <fcntl.h>
#include <flit/rma.h>
#include <sched.h>
#include <stdatomic.h>

#include "core/ep.h"
#include "mp.h"
#include "rma/rma.h"

#define MAX_RANKS 16
enum { H_ID = 1, H_CHECK = 2, H_CHECKED = 3, H_DONE = 4 };
enum kind {
    K_ALLOC,
    K_USER,
    K_SHARED,
    K_EVEN,
    K_RO,
    K_WO,
    K_REVOKE,
    K_RACE,
    K_NOPOLL,
    K_EARLY,
    K_STAGE, /* exported, used only as the local side of puts and gets */
    K_COUNT
};
#define GUARD 4096u

static struct {
    flit_ep_t *ep;
    uint32_t me, n;
    size_t max, part;
    bool direct, packets, fabric;
    _Atomic uint64_t ids[MAX_RANKS][K_COUNT]; /* learned from the owners */
    uint32_t pids[MAX_RANKS];                 /* ... with their process ids */
    uint8_t *mem[K_COUNT];                    /* my regions */
    size_t len[K_COUNT];
    flit_rma_region_t *reg[K_COUNT];
    uint64_t notes[MAX_RANKS]; /* notifications from each sender */
    /* Counted by handlers, which a progress thread may run, and waited
       for by the main thread. */
    _Atomic uint64_t shared_seen, nopoll_notes, early_notes, checked, done_msgs;
} g;

static const char *const kind_name[K_COUNT] = {
    "alloc",  "user", "shared", "even",  "read-only", "write-only",
    "revoke", "race", "nopoll", "early", "stage",
};

static uint64_t seed_of(uint32_t from, uint64_t off, uint64_t len, int kind)
{
    return mp_mix(from, off, len, (uint64_t)kind + 1000);
}

static int kind_of(uint64_t id)
{
    for (int k = 0; k < K_COUNT; k++)
        if (g.reg[k] && flit_rma_region_id(g.reg[k]) == id)
            return k;
    return -1;
}

/* ---- learning ids, by active message ---- */

static void on_id(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                  void *user)
{
    (void)buf, (void)n, (void)user;
    CHECK(na == 4 && a[0] < K_COUNT);
    uint32_t from = flit_token_rank(t).idx;
    g.pids[from] = a[3];
    g.ids[from][a[0]] = (uint64_t)a[2] << 32 | a[1];
}

static void publish(int kind)
{
    uint64_t id = flit_rma_region_id(g.reg[kind]);
    CHECK(id != 0);
    uint32_t a[4] = {(uint32_t)kind, (uint32_t)id, (uint32_t)(id >> 32),
                     (uint32_t)getpid()};
    for (uint32_t r = 0; r < g.n; r++)
        CHECK_OK(flit_am_short(g.ep, flit_rank(r), flit_handler(H_ID), a, 4, 0));
}

static uint64_t learn(uint32_t owner, int kind)
{
    MP_WAIT(g.ep, g.ids[owner][kind] != 0);
    return g.ids[owner][kind];
}

/* Exports len bytes with a guard page on each side (alloc or malloc). */
static void export_kind(int kind, size_t len, bool alloc, unsigned access,
                        const flit_rank_t *allowed, size_t nallowed)
{
    uint8_t *base;
    if (alloc)
        CHECK_OK(flit_rma_alloc(g.ep, len + 2 * GUARD, (void **)&base));
    else
        CHECK((base = malloc(len + 2 * GUARD)) != NULL);
    memset(base, 0xaa, len + 2 * GUARD);
    g.mem[kind] = base + GUARD;
    g.len[kind] = len;
    CHECK_OK(
        flit_rma_export(g.ep, g.mem[kind], len, access, allowed, nallowed, &g.reg[kind]));
}

static void check_guards(int kind)
{
    for (size_t i = 0; i < GUARD; i++)
        if (g.mem[kind][-(ptrdiff_t)GUARD + (ptrdiff_t)i] != 0xaa ||
            g.mem[kind][g.len[kind] + i] != 0xaa)
            FAIL("%s region: a byte around it changed", kind_name[kind]);
}

/* ---- the owner's checks ---- */

/* Rank from's part of the shared region, replayed from its seed. */
static void check_part(uint32_t from)
{
    uint64_t rng = mp_mix(from, 77, 0, 0);
    size_t off = 0, part = g.part;
    uint8_t *p = g.mem[K_SHARED] + (size_t)from * part;
    while (off < part) {
        size_t k = 1 + (size_t)(test_rand(&rng) % (part / 8));
        if (k > part - off)
            k = part - off;
        size_t bad = mp_pattern_check(p + off, k, mp_mix(from, off, k, 5));
        if (bad != k)
            FAIL("shared: rank %u's chunk at %zu (%zu bytes) differs at byte %zu when "
                 "its last put's notification runs",
                 from, off, k, bad);
        off += k;
    }
}

static void on_notify(flit_ep_t *ep, uint64_t id, flit_rank_t from, uint64_t off,
                      size_t len, void *user)
{
    (void)ep, (void)user;
    int kind = kind_of(id);
    CHECK(kind >= 0 && from.idx < g.n);
    CHECK(off <= g.len[kind] && len <= g.len[kind] - off);
    g.notes[from.idx]++;
    if (kind == K_SHARED) {
        check_part(from.idx);
        g.shared_seen++;
    } else if (kind == K_NOPOLL) {
        g.nopoll_notes++;
    } else if (kind == K_EARLY) {
        g.early_notes++;
    } else {
        size_t bad =
            mp_pattern_check(g.mem[kind] + off, len, seed_of(from.idx, off, len, kind));
        if (bad != len)
            FAIL("%s: put of %zu bytes at %llu from rank %u: byte %zu is not there "
                 "when its notification runs",
                 kind_name[kind], len, (unsigned long long)off, from.idx, bad);
    }
}

/* "check [off, off + len) of region kind, after exactly `notes`
   notifications from you": a request handler, answered by reply. */
static void on_check(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                     void *user)
{
    (void)buf, (void)n, (void)user;
    CHECK(na == 6 && a[0] < K_COUNT);
    uint32_t from = flit_token_rank(t).idx;
    int kind = (int)a[0];
    uint64_t off = (uint64_t)a[2] << 32 | a[1], len = (uint64_t)a[4] << 32 | a[3];
    CHECK(off + len <= g.len[kind]);
    size_t bad = mp_pattern_check(g.mem[kind] + off, len, seed_of(from, off, len, kind));
    if (bad != len)
        FAIL("%s: put of %llu bytes at %llu from rank %u: byte %zu differs",
             kind_name[kind], (unsigned long long)len, (unsigned long long)off, from,
             bad);
    if (g.notes[from] != a[5])
        FAIL("%s: %llu notifications from rank %u, expected %u", kind_name[kind],
             (unsigned long long)g.notes[from], from, a[5]);
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_CHECKED), NULL, 0));
}

static void on_checked(flit_token_t *t, void *buf, size_t n, const uint32_t *a,
                       unsigned na, void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    g.checked++;
}

static void on_done(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    g.done_msgs++;
}

static flit_stats_t stats(void)
{
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(g.ep, &s));
    return s;
}

/* ---- sizes ---- */

static const size_t sizes[] = {
    1,
    2,
    3,
    7,
    8,
    9,
    63,
    64,
    65,
    127,
    1000,
    4095,
    4096,
    4097,
    32767,
    65535,
    65536,
    65537,
    100003,
    (1u << 20) - 1,
    (1u << 20) + 7,
    (4u << 20) + 3,
    (16u << 20) + 1,
    64u << 20,
};

static void put_one(flit_rma_remote_t *r, int kind, uint32_t to, size_t i, uint64_t off,
                    size_t len, uint8_t *src, uint64_t *notes)
{
    mp_pattern_fill(src, len, seed_of(g.me, off, len, kind));
    unsigned notify = i % 4 != 3 ? FLIT_RMA_NOTIFY : 0;
    unsigned remote = i % 3 == 1 ? FLIT_RMA_REMOTE_DONE : 0;
    *notes += notify != 0;
    if (i % 2) {
        flit_rma_op_t *op;
        CHECK_OK(flit_rma_put(r, off, src, len, notify | remote, &op));
        int done = 0;
        if (i % 4 == 1)
            CHECK_OK(flit_rma_wait(op, -1));
        else
            while (!done)
                CHECK_OK(flit_rma_test(op, &done));
    } else {
        CHECK_OK(flit_rma_put(r, off, src, len, notify | remote, NULL));
    }
    uint32_t a[6] = {(uint32_t)kind,
                     (uint32_t)off,
                     (uint32_t)(off >> 32),
                     (uint32_t)len,
                     (uint32_t)((uint64_t)len >> 32),
                     (uint32_t)*notes};
    uint64_t want = g.checked + 1;
    CHECK_OK(flit_am_short(g.ep, flit_rank(to), flit_handler(H_CHECK), a, 6, 0));
    MP_WAIT(g.ep, g.checked == want);
}

static void get_one(flit_rma_remote_t *r, size_t i, uint64_t off, size_t len,
                    const uint8_t *src, uint8_t *dst)
{
    memset(dst, 0, len + 2);
    if (i % 2) {
        flit_rma_op_t *op;
        CHECK_OK(flit_rma_get(r, off, dst + 1, len, 0, &op));
        CHECK_OK(flit_rma_wait(op, -1));
    } else {
        CHECK_OK(flit_rma_get(r, off, dst + 1, len, 0, NULL));
    }
    if (memcmp(dst + 1, src, len) != 0 || dst[0] || dst[len + 1])
        FAIL("get of %zu bytes at %llu from rank %u is not what was put", len,
             (unsigned long long)off, fl_rma_remote_of(r)->owner);
}

/* Files of one-sided memory this process maps: the shm transport's
   ("/flit-...-rma<key>"), for its own blocks and control file and the
   owners' it imported. */
static size_t rma_files_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    char line[512];
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, "/flit-") && strstr(line, "-rma");
    fclose(f);
    return n;
}

/* The path the transport serving the owner offers: its one-sided
   operations on shm, packets where it offers none (udp,
   FLIT_SHM_BULK=copy), where no memory of the RMA layer's is then the
   transport's either. */
static void check_path(flit_rma_remote_t *r, int kind)
{
    flit_rma_path p = flit_rma_remote_path(r);
    /* an address exactly where the caller copies */
    if ((flit_rma_remote_addr(r) != NULL) != (p == FLIT_RMA_PATH_COPY))
        FAIL("%s region: path %d, address %p", kind_name[kind], (int)p,
             flit_rma_remote_addr(r));
    const char *bulk = getenv("FLIT_SHM_BULK");
    bool cma_only = bulk && strcmp(bulk, "cma") == 0;
    if (g.packets && p != FLIT_RMA_PATH_PACKETS)
        FAIL("%s region: path %d, expected packets", kind_name[kind], (int)p);
    if (g.packets && rma_files_mapped() != 0)
        FAIL("no transport offers one-sided memory, yet %zu files of it are mapped",
             rma_files_mapped());
    if (g.fabric && (p != FLIT_RMA_PATH_FABRIC || rma_files_mapped() != 0))
        FAIL("%s region: path %d with %zu files mapped, expected the network's own "
             "remote memory access (fi_write / fi_read) and none",
             kind_name[kind], (int)p, rma_files_mapped());
    if (!g.direct)
        return;
    if (rma_files_mapped() == 0)
        FAIL("shm offers one-sided memory, yet no file of it is mapped");
    if (kind == K_ALLOC && p != (cma_only ? FLIT_RMA_PATH_ATTACH : FLIT_RMA_PATH_COPY))
        FAIL("alloc region: path %d, expected %s", (int)p, cma_only ? "cma" : "map");
    if (kind == K_USER && p != FLIT_RMA_PATH_ATTACH)
        FAIL("user region: path %d, expected cross-memory attach", (int)p);
}

static void test_sizes(void)
{
    size_t rlen = g.max + 3 * 4096 + 17;
    export_kind(K_ALLOC, rlen, true, FL_RMA_ACCESS_ALL, NULL, 0);
    export_kind(K_USER, rlen, false, FL_RMA_ACCESS_ALL, NULL, 0);
    publish(K_ALLOC);
    publish(K_USER);
    /* Half the sizes go from and into memory of a region this rank
       exported and its predecessor imported (over libfabric registered at
       that import, also for local access where the provider registers local
       memory, FI_MR_LOCAL: no put or get from it registers again), the rest
       from and into malloc memory. */
    export_kind(K_STAGE, 2 * g.max + 32, true, FL_RMA_ACCESS_ALL, NULL, 0);
    publish(K_STAGE);
    uint32_t to = (g.me + 1) % g.n;
    flit_rma_remote_t *their_stage;
    CHECK_OK(flit_rma_import(g.ep, flit_rank(to), learn(to, K_STAGE), &their_stage));
    CHECK_OK(flit_barrier(g.ep)); /* every stage imported: registered */
    uint8_t *src = malloc(g.max + 16), *dst = malloc(g.max + 16);
    CHECK(src && dst);
    uint8_t *stage_src = g.mem[K_STAGE], *stage_dst = g.mem[K_STAGE] + g.max + 16;
    uint64_t notes = 0;
    for (int kind = K_ALLOC; kind <= K_USER; kind++) {
        flit_rma_remote_t *r;
        CHECK_OK(flit_rma_import(g.ep, flit_rank(to), learn(to, kind), &r));
        CHECK(flit_rma_remote_size(r) == rlen);
        CHECK(flit_rma_remote_access(r) == FL_RMA_ACCESS_ALL);
        if (to != g.me)
            check_path(r, kind);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t len = sizes[i];
            if (len > g.max)
                continue;
            uint64_t off = ((i * 7919 + 1) % (rlen - len - 2)) | 1;
            bool staged = (i / 2) % 2;
            uint8_t *s = (staged ? stage_src : src) + 1 + i % 8; /* odd addresses */
            put_one(r, kind, to, i, off, len, s, &notes);
            get_one(r, i, off, len, s, (staged ? stage_dst : dst) + i % 5);
        }
        CHECK_OK(flit_rma_flush(g.ep, flit_rank(to)));
        /* the address maps the bytes the gets read */
        const uint8_t *at = flit_rma_remote_addr(r);
        if (at) {
            size_t n = g.max < 4096 ? g.max : 4096;
            CHECK_OK(flit_rma_get(r, 1, dst, n, 0, NULL));
            CHECK(memcmp(dst, at + 1, n) == 0);
        }
        CHECK_OK(flit_rma_release(r));
    }
    free(src);
    free(dst);
    CHECK_OK(flit_rma_release(their_stage));
    CHECK_OK(flit_barrier(g.ep));
    check_guards(K_ALLOC);
    check_guards(K_USER);
    check_guards(K_STAGE);
}

/* ---- shared ---- */

static void test_shared(void)
{
    if (g.me == 0) {
        export_kind(K_SHARED, g.part * g.n, true, FLIT_RMA_WRITE, NULL, 0);
        publish(K_SHARED);
    }
    flit_rma_remote_t *r;
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), learn(0, K_SHARED), &r));
    uint8_t *src = malloc(g.part);
    CHECK(src);
    flit_rma_op_t *ops[8] = {0};
    uint64_t rng = mp_mix(g.me, 77, 0, 0);
    size_t off = 0, base = (size_t)g.me * g.part, k;
    for (unsigned i = 0; off < g.part; i++, off += k) {
        k = 1 + (size_t)(test_rand(&rng) % (g.part / 8));
        if (k > g.part - off)
            k = g.part - off;
        mp_pattern_fill(src + off, k, mp_mix(g.me, off, k, 5));
        flit_rma_op_t **slot = &ops[i % 8];
        if (*slot)
            CHECK_OK(flit_rma_wait(*slot, -1)); /* a window of 8 */
        bool last = off + k == g.part;
        CHECK_OK(
            flit_rma_put(r, base + off, src + off, k, last ? FLIT_RMA_NOTIFY : 0, slot));
    }
    for (int i = 0; i < 8; i++) {
        int done = 0;
        if (!ops[i])
            continue;
        while (!done)
            CHECK_OK(flit_rma_test(ops[i], &done));
    }
    CHECK_OK(flit_rma_flush_all(g.ep));
    CHECK_OK(flit_rma_release(r));
    free(src);
    if (g.me == 0) {
        MP_WAIT(g.ep, g.shared_seen == g.n);
        for (uint32_t from = 0; from < g.n; from++)
            check_part(from);
        check_guards(K_SHARED);
    }
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0)
        CHECK(g.shared_seen == g.n); /* and no more */
}

/* ---- denied, access ---- */

static void test_denied(void)
{
    uint64_t refused0 = stats().rma_refused;
    if (g.me == 0) {
        flit_rank_t even[MAX_RANKS];
        size_t ne = 0;
        for (uint32_t r = 0; r < g.n; r += 2)
            even[ne++] = flit_rank(r);
        export_kind(K_EVEN, 1000, false, FL_RMA_ACCESS_ALL, even, ne);
        publish(K_EVEN);
    }
    flit_rma_remote_t *r = NULL;
    flit_status st = flit_rma_import(g.ep, flit_rank(0), learn(0, K_EVEN), &r);
    if (g.me % 2) {
        CHECK_ST(st, FLIT_ERR_DENIED);
        CHECK(r == NULL);
    } else {
        CHECK_OK(st);
        uint8_t b = 1;
        CHECK_OK(flit_rma_put(r, 999, &b, 1, FLIT_RMA_REMOTE_DONE, NULL));
        CHECK_OK(flit_rma_release(r));
    }
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0 && stats().rma_refused - refused0 != g.n / 2)
        FAIL("denied: %llu refusals counted, expected %u",
             (unsigned long long)(stats().rma_refused - refused0), g.n / 2);
}

/* Whether the mapping that holds addr is writable, from /proc/self/maps. */
static int mapping_writable(const void *addr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    char line[512];
    int w = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && (uintptr_t)addr >= lo &&
            (uintptr_t)addr < hi)
            w = perms[1] == 'w';
    }
    fclose(f);
    return w;
}

static void forge(uint32_t kind, uint64_t id, uint64_t base, uint64_t total)
{
    static uint8_t junk[64];
    memset(junk, 0x99, sizeof junk);
    struct fl_rma_pkt p = {
        .kind = (uint8_t)kind, .op = 0xfffff, .id = id, .base = base, .total = total};
    if (kind == FL_RMA_PUT) {
        p.flags = FL_RMAF_FIRST | FL_RMAF_LAST;
        p.len = (uint32_t)total;
    }
    /* Inside the endpoint as a public call is: a progress thread may be
       sending on it too. */
    CHECK_OK(fl_ep_enter(g.ep));
    flit_status st = fl_rma_send(g.ep, 0, &p, junk, 0);
    fl_ep_leave(g.ep);
    CHECK_OK(st);
}

static void test_access(void)
{
    uint64_t refused0 = stats().rma_refused;
    size_t len = 5000;
    if (g.me == 0) {
        export_kind(K_RO, len, true, FLIT_RMA_READ, NULL, 0);
        mp_pattern_fill(g.mem[K_RO], len, 42);
        export_kind(K_WO, len, false, FLIT_RMA_WRITE, NULL, 0);
        publish(K_RO);
        publish(K_WO);
    }
    flit_rma_remote_t *ro, *wo;
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), learn(0, K_RO), &ro));
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), learn(0, K_WO), &wo));
    CHECK(flit_rma_remote_access(ro) == FLIT_RMA_READ);
    CHECK(flit_rma_remote_access(wo) == FLIT_RMA_WRITE);
    uint8_t b[64] = {0};
    flit_rma_op_t *op;
    CHECK_ST(flit_rma_put(ro, 0, b, 8, 0, NULL), FLIT_ERR_DENIED);
    CHECK_ST(flit_rma_put(ro, 0, b, 8, FLIT_RMA_REMOTE_DONE, &op), FLIT_ERR_DENIED);
    CHECK_ST(flit_rma_get(wo, 0, b, 8, 0, NULL), FLIT_ERR_DENIED);
    CHECK_ST(flit_rma_put(wo, len - 7, b, 8, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_put(wo, len + 1, b, 0, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_get(ro, len - 7, b, 8, 0, &op), FLIT_ERR_BOUNDS);
    uint8_t *got = malloc(len);
    CHECK(got);
    CHECK_OK(flit_rma_get(ro, 0, got, len, 0, NULL));
    CHECK(mp_pattern_check(got, len, 42) == len);
    free(got);
    CHECK_OK(flit_rma_put(wo, len - 8, b, 8, FLIT_RMA_REMOTE_DONE, NULL));
    struct flit_rma_remote *in = fl_rma_remote_of(ro);
    if (in->path == FL_RMA_PATH_MAP && mapping_writable(in->base) != 0)
        FAIL("a read-only region is mapped writable here");
    if (g.me != 0) {
        /* What this rank's own checks would never send: rank 0 judges. */
        uint64_t rid = learn(0, K_RO), wid = learn(0, K_WO);
        forge(FL_RMA_PUT, wid, len - 4, 16);
        forge(FL_RMA_PUT, wid, 1ull << 40, 8);
        forge(FL_RMA_PUT, rid, 0, 8);
        forge(FL_RMA_GET_REQ, wid, 0, 8);
        forge(FL_RMA_GET_REQ, rid, len, 1);
        forge(FL_RMA_NOTIFY, rid, 0, 8);
        CHECK_OK(flit_am_short(g.ep, flit_rank(0), flit_handler(H_DONE), NULL, 0, 0));
    }
    CHECK_OK(flit_rma_release(ro));
    CHECK_OK(flit_rma_release(wo));
    if (g.me == 0) {
        MP_WAIT(g.ep, g.done_msgs == g.n - 1);
        g.done_msgs = 0;
        uint64_t want = 6ull * (g.n - 1);
        if (stats().rma_refused - refused0 != want)
            FAIL("access: %llu refusals counted, expected %llu",
                 (unsigned long long)(stats().rma_refused - refused0),
                 (unsigned long long)want);
        check_guards(K_RO);
        check_guards(K_WO);
        CHECK(mp_pattern_check(g.mem[K_RO], len, 42) == len);
    }
    CHECK_OK(flit_barrier(g.ep));
}

/* ---- revoke, race ---- */

static void test_revoke(void)
{
    size_t len = 1 << 16;
    if (g.me == 0) {
        export_kind(K_REVOKE, len, true, FL_RMA_ACCESS_ALL, NULL, 0);
        publish(K_REVOKE);
    }
    uint64_t id = learn(0, K_REVOKE);
    flit_rma_remote_t *r, *again;
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), id, &r));
    uint8_t b[256];
    memset(b, (int)g.me + 1, sizeof b);
    CHECK_OK(flit_rma_put(r, g.me * 256, b, sizeof b, FLIT_RMA_REMOTE_DONE, NULL));
    CHECK_OK(flit_barrier(g.ep));
    uint8_t *snap = NULL;
    if (g.me == 0) {
        CHECK_OK(flit_rma_unexport(g.reg[K_REVOKE]));
        CHECK(g.mem[K_REVOKE][0] == 1);
        CHECK_ST(flit_rma_unexport(g.reg[K_REVOKE]), FLIT_ERR_REVOKED);
        CHECK((snap = malloc(len)) != NULL);
        memcpy(snap, g.mem[K_REVOKE], len);
    }
    CHECK_OK(flit_barrier(g.ep));
    memset(b, 0x77, sizeof b);
    /* A plain put is refused at once, or (over packets, where the owner's
       verdict comes later) by the next flush. */
    flit_status st = flit_rma_put(r, 0, b, sizeof b, 0, NULL);
    if (st == FLIT_OK) {
        CHECK(flit_rma_remote_path(r) == FLIT_RMA_PATH_PACKETS);
        CHECK_ST(flit_rma_flush(g.ep, flit_rank(0)), FLIT_ERR_REVOKED);
    } else {
        CHECK_ST(st, FLIT_ERR_REVOKED);
    }
    CHECK_OK(flit_rma_flush(g.ep, flit_rank(0)));                  /* reported once */
    CHECK_ST(flit_rma_put(r, 0, b, 1, 0, NULL), FLIT_ERR_REVOKED); /* known now */
    CHECK_ST(flit_rma_get(r, 0, b, 8, 0, NULL), FLIT_ERR_REVOKED);
    CHECK_ST(flit_rma_import(g.ep, flit_rank(0), id, &again), FLIT_ERR_REVOKED);
    CHECK_OK(flit_rma_release(r));
    /* A fresh import of the same memory, exported again, works; the old id
       stays dead. */
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0) {
        if (memcmp(snap, g.mem[K_REVOKE], len) != 0)
            FAIL("revoke: the region changed after it was unexported");
        free(snap);
    }
}

static void race_round(size_t part, size_t chunk)
{
    if (g.me == 0) {
        export_kind(K_RACE, part * g.n, true, FL_RMA_ACCESS_ALL, NULL, 0);
        publish(K_RACE);
    }
    flit_rma_remote_t *r;
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), learn(0, K_RACE), &r));
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0) {
        /* Let puts land for a while, then revoke under them. */
        MP_WAIT(g.ep, ({
                    bool all = true;
                    for (uint32_t k = 1; k < g.n; k++)
                        all &= g.mem[K_RACE][k * part + part - 1] != 0xaa;
                    all;
                }));
        CHECK_OK(flit_rma_unexport(g.reg[K_RACE]));
        uint8_t *snap = malloc(part * g.n);
        CHECK(snap);
        memcpy(snap, g.mem[K_RACE], part * g.n);
        MP_WAIT(g.ep, g.done_msgs == g.n - 1);
        g.done_msgs = 0;
        if (memcmp(snap, g.mem[K_RACE], part * g.n) != 0)
            FAIL("race: bytes landed after flit_rma_unexport returned");
        free(snap);
        check_guards(K_RACE);
        CHECK_OK(flit_rma_free(g.ep, g.mem[K_RACE] - GUARD));
    } else {
        uint8_t *src = malloc(chunk);
        CHECK(src);
        flit_status st = FLIT_OK;
        for (uint64_t i = 0; st == FLIT_OK; i++) {
            memset(src, (int)(i & 0x7f), chunk);
            st = flit_rma_put(r, g.me * part + (i * chunk) % part, src, chunk, 0, NULL);
            if (st == FLIT_OK && i % 16 == 15)
                st = flit_rma_flush(g.ep, flit_rank(0));
        }
        CHECK_ST(st, FLIT_ERR_REVOKED);
        /* Over packets, puts still in flight are refused too; the next
           flush reports that once (if the put above did not already learn
           it from the first refusal), and then nothing more. */
        st = flit_rma_flush(g.ep, flit_rank(0));
        if (st != FLIT_OK)
            CHECK_ST(st, FLIT_ERR_REVOKED);
        CHECK_OK(flit_rma_flush(g.ep, flit_rank(0)));
        free(src);
        CHECK_OK(flit_am_short(g.ep, flit_rank(0), flit_handler(H_DONE), NULL, 0, 0));
    }
    CHECK_OK(flit_rma_release(r));
    g.ids[0][K_RACE] = 0; /* the next round's id comes after the barrier */
    CHECK_OK(flit_barrier(g.ep));
}

/* Revocation under a stream of puts, several times: the copies in flight at
   that moment are what unexport must wait for. */
static void test_race(void)
{
    unsigned rounds = (unsigned)test_scaled(8);
    for (unsigned i = 0; i < rounds; i++)
        race_round((size_t)256 << 10, (size_t)(i % 2 ? 64 : 16) << 10);
    /* Puts of a few bytes, which libfabric posts to land later: those in
       flight when the owner asks land before the importer answers it. */
    for (unsigned i = 0; i < rounds / 2 + 1; i++)
        race_round(4096, i % 2 ? 16 : 8);
}

/* ---- nopoll ---- */

#define MARK 0x4d41524b00000000ull

static bool marks_seen(void)
{
    for (uint32_t k = 1; k < g.n; k++) {
        const _Atomic uint64_t *m =
            (const _Atomic uint64_t *)(void *)(g.mem[K_NOPOLL] + (k + 1) * g.part - 8);
        if (atomic_load_explicit(m, memory_order_acquire) != (MARK | k))
            return false;
    }
    return true;
}

static void test_nopoll(void)
{
    if (g.me == 0) {
        export_kind(K_NOPOLL, g.part * g.n, true, FLIT_RMA_WRITE, NULL, 0);
        publish(K_NOPOLL);
    }
    flit_rma_remote_t *r = NULL;
    if (g.me != 0)
        CHECK_OK(flit_rma_import(g.ep, flit_rank(0), learn(0, K_NOPOLL), &r));
    bool direct = g.me != 0 && flit_rma_remote_path(r) != FLIT_RMA_PATH_PACKETS;
    if (g.direct && g.me != 0 && !direct)
        FAIL("nopoll: --direct, but rank 0's alloc memory is reached through packets");
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0) {
        /* No flit call at all in here. */
        double limit = g.direct ? MP_WAIT_LIMIT_S : 0.3, t0 = mp_now();
        uint64_t spins = 0;
        while (!marks_seen() && mp_now() - t0 < limit)
            if (++spins % 64 == 0)
                sched_yield();
        if (g.direct && !marks_seen())
            FAIL("nopoll: the puts did not land while rank 0 did not poll");
        MP_WAIT(g.ep, marks_seen());
        for (uint32_t k = 1; k < g.n; k++) {
            size_t bad = mp_pattern_check(g.mem[K_NOPOLL] + k * g.part, g.part - 8,
                                          mp_mix(k, 3, 3, 3));
            if (bad != g.part - 8)
                FAIL("nopoll: rank %u's data differs at byte %zu", k, bad);
        }
        MP_WAIT(g.ep, g.nopoll_notes == g.n - 1);
    } else {
        size_t chunk = g.part / 7 + 1;
        uint8_t *src = malloc(g.part);
        CHECK(src);
        mp_pattern_fill(src, g.part - 8, mp_mix(g.me, 3, 3, 3));
        uint64_t mark = MARK | g.me;
        memcpy(src + g.part - 8, &mark, 8);
        size_t base = g.me * g.part;
        for (size_t off = 0; off < g.part - 8; off += chunk) {
            size_t k = g.part - 8 - off < chunk ? g.part - 8 - off : chunk;
            CHECK_OK(flit_rma_put(r, base + off, src + off, k, 0, NULL));
        }
        CHECK_OK(flit_rma_put(r, base + g.part - 8, src + g.part - 8, 8, FLIT_RMA_NOTIFY,
                              NULL));
        CHECK_OK(flit_rma_flush(g.ep, flit_rank(0)));
        CHECK_OK(flit_rma_release(r));
        free(src);
    }
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0) {
        for (int i = 0; i < 100; i++)
            CHECK_OK(flit_poll(g.ep));
        CHECK(g.nopoll_notes == g.n - 1); /* each once */
        check_guards(K_NOPOLL);
    }
}

/* ---- early ---- */

#define EARLY_PUTS 32u /* 8-byte puts by each importer, the last notifying */
/* ... after puts of these sizes, above every provider's inject size but
   the first two (udp;ofi_rxd injects 1256 bytes) */
static const size_t early_sizes[] = {200, 1000, 4000, 12000};
#define EARLY_MEDIUM (200 + 1000 + 4000 + 12000)
#define EARLY_SLICE  (8 * EARLY_PUTS + EARLY_MEDIUM) /* an importer's bytes */

/* The file an importer makes once its puts returned: told without flit.
   Named after rank 0's process, so that jobs side by side keep apart. */
static void early_path(char *buf, size_t len, uint32_t rank)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, len, "%s/flit-mp-rma-early-%u-%u", dir && *dir ? dir : "/tmp",
             g.me == 0 ? (unsigned)getpid() : g.pids[0], rank);
}

/* Rank 0 failing: the importers' files go with it. */
static void early_fail(uint32_t k)
{
    char path[512];
    for (uint32_t j = 1; j < g.n; j++) {
        early_path(path, sizeof path, j);
        unlink(path);
    }
    FAIL("early: rank %u's puts did not return while rank 0 made no flit call", k);
}

static uint64_t early_word(uint32_t k, uint32_t i)
{
    return mp_mix(k, i, 8, K_EARLY) | 1;
}

static void test_early(void)
{
    if (g.me == 0) {
        export_kind(K_EARLY, EARLY_SLICE * g.n, true, FLIT_RMA_WRITE, NULL, 0);
        memset(g.mem[K_EARLY], 0, EARLY_SLICE * g.n);
        publish(K_EARLY);
    }
    uint64_t id = learn(0, K_EARLY);
    flit_rma_remote_t *r = NULL;
    if (g.me != 0)
        CHECK_OK(flit_rma_import(g.ep, flit_rank(0), id, &r));
    CHECK_OK(flit_barrier(g.ep));
    char path[512];
    if (g.me == 0) {
        /* No flit call until every importer said, by a file, that its
           puts and its notification returned: over libfabric
           (--fabric) and the direct paths (--direct) no put waits for
           the owner. Over packets rank 0 polls meanwhile: lost packets
           are sent again only once it acknowledges. */
        bool polling = !g.fabric && !g.direct;
        for (uint32_t k = 1; k < g.n; k++) {
            early_path(path, sizeof path, k);
            double t0 = mp_now();
            while (access(path, F_OK) != 0) {
                if (mp_now() - t0 > MP_WAIT_LIMIT_S)
                    early_fail(k);
                struct timespec nap = {0, 1000000};
                if (polling)
                    CHECK_OK(flit_poll(g.ep));
                else
                    nanosleep(&nap, NULL);
            }
            unlink(path);
        }
        /* Each notification comes behind its sender's puts, all in place. */
        MP_WAIT(g.ep, g.early_notes == g.n - 1);
        for (uint32_t k = 1; k < g.n; k++) {
            const uint8_t *at = g.mem[K_EARLY] + k * EARLY_SLICE;
            for (size_t j = 0; j < sizeof early_sizes / sizeof early_sizes[0]; j++) {
                if (mp_pattern_check(at, early_sizes[j], seed_of(k, j, 0, K_EARLY)) !=
                    early_sizes[j])
                    FAIL("early: rank %u's put of %zu bytes is not in place when its "
                         "notification runs",
                         k, early_sizes[j]);
                at += early_sizes[j];
            }
            for (uint32_t i = 0; i < EARLY_PUTS; i++) {
                uint64_t v;
                memcpy(&v, at + 8 * i, 8);
                if (v != early_word(k, i))
                    FAIL("early: rank %u's put %u is not in place when its "
                         "notification runs",
                         k, i);
            }
        }
    } else {
        uint64_t off = (uint64_t)g.me * EARLY_SLICE;
        uint8_t buf[12000];
        for (size_t j = 0; j < sizeof early_sizes / sizeof early_sizes[0]; j++) {
            mp_pattern_fill(buf, early_sizes[j], seed_of(g.me, j, 0, K_EARLY));
            CHECK_OK(flit_rma_put(r, off, buf, early_sizes[j], 0, NULL));
            memset(buf, 0, early_sizes[j]); /* the put took its bytes */
            off += early_sizes[j];
        }
        for (uint32_t i = 0; i < EARLY_PUTS; i++) {
            uint64_t v = early_word(g.me, i);
            CHECK_OK(flit_rma_put(r, off + 8 * i, &v, 8,
                                  i + 1 == EARLY_PUTS ? FLIT_RMA_NOTIFY : 0, NULL));
        }
        early_path(path, sizeof path, g.me);
        int fd = open(path, O_CREAT | O_WRONLY, 0600);
        CHECK(fd >= 0);
        close(fd);
        CHECK_OK(flit_rma_flush(g.ep, flit_rank(0)));
        CHECK_OK(flit_rma_release(r));
    }
    CHECK_OK(flit_barrier(g.ep));
    if (g.me != 0)
        unlink(path); /* rank 0 did, unless it failed */
}

/* ---- main ---- */

static const char *arg_str(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    if (g.n < 2 || g.n > MAX_RANKS)
        FAIL("needs 2 to %d ranks", MAX_RANKS);
    g.max = test_scaled(mp_arg_u64(argc, argv, "--max-size", 4u << 20));
    g.part = test_scaled(mp_arg_u64(argc, argv, "--part", 1u << 20));
    if (g.part < 64)
        g.part = 64;
    g.part &= ~(size_t)7;
    g.direct = mp_arg_flag(argc, argv, "--direct");
    g.packets = mp_arg_flag(argc, argv, "--packets");
    g.fabric = mp_arg_flag(argc, argv, "--fabric");
    const char *only = arg_str(argc, argv, "--test");
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ID), on_id, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_CHECK), on_check, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_CHECKED), on_checked, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_DONE), on_done, NULL));
    CHECK_OK(flit_rma_set_notify_handler(g.ep, on_notify, NULL));
    CHECK_OK(flit_barrier(g.ep));
    static const struct {
        const char *name;
        void (*fn)(void);
    } parts[] = {
        {"sizes", test_sizes},   {"shared", test_shared}, {"denied", test_denied},
        {"access", test_access}, {"revoke", test_revoke}, {"race", test_race},
        {"nopoll", test_nopoll}, {"early", test_early},
    };
    bool ran = false;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (only && strcmp(only, parts[i].name) != 0)
            continue;
        double t0 = mp_now();
        parts[i].fn();
        ran = true;
        if (g.me == 0)
            printf("rma: %s passed (%.2f s)\n", parts[i].name, mp_now() - t0);
    }
    if (!ran)
        FAIL("no part named %s", only);
    flit_stats_t s = stats();
    if (g.me == 0)
        printf("rma: rank 0: %llu puts, %llu gets, %llu notifications, %llu refused\n",
               (unsigned long long)s.rma_puts, (unsigned long long)s.rma_gets,
               (unsigned long long)s.rma_notifications,
               (unsigned long long)s.rma_refused);
    CHECK_OK(flit_finalize());
    return 0;
}
