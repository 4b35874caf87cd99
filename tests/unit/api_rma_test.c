/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication in a job of one rank (a rank importing its own
 * regions):
 *
 *  - every call refuses bad input with its exact status and moves nothing:
 *    NULL and dead handles, unknown flags and access bits, ranks outside
 *    the job, offsets and lengths outside the region (overflowing ones
 *    too), writes to a read-only region, reads from a write-only one, a
 *    notification asked of a get, blocking calls inside a handler;
 *  - puts and gets of every size at odd offsets land byte for byte, in
 *    flit_rma_alloc memory and in memory from malloc, blocking and
 *    non-blocking; handles die once complete;
 *  - a notification runs once, from progress (never inside the put), after
 *    the data, with the sender, offset and length;
 *  - unexport is real: puts, gets and imports of the region fail with
 *    FLIT_ERR_REVOKED afterwards, a second unexport too; flit_rma_free
 *    unexports what was exported from the block;
 *  - the owner's own judgement, whatever a sender claims: forged put, get
 *    and notification packets outside a region, to a region that does not
 *    grant the access, or to a revoked region are refused and counted and
 *    leave the bytes around the region untouched; malformed ones are
 *    refused as packets; a forged put inside the bounds lands.
 */
#include <flit/rma.h>

#include "core/ep.h"
#include "rma/rma.h"
#include "rma/wire.h"
#include "unit.h"

static flit_ep_t *ep;

/* ---- notifications ---- */

struct note {
    uint64_t id, off;
    size_t len;
    uint32_t from;
    uint8_t first_byte;
    int runs;
    int in_put; /* set around a put: the handler must not run there */
    flit_rma_remote_t *remote;
};
static struct note note;
static uint8_t *note_region;

static void on_notify(flit_ep_t *e, uint64_t id, flit_rank_t from, uint64_t off,
                      size_t len, void *user)
{
    CHECK(e == ep);
    CHECK(user == &note);
    CHECK(!note.in_put);
    note.id = id;
    note.off = off;
    note.len = len;
    note.from = from.idx;
    note.first_byte = note_region[off];
    note.runs++;
    /* A handler: blocking calls are refused, accessors are fine. */
    uint8_t b = 0;
    CHECK_ST(flit_rma_put(note.remote, 0, &b, 1, 0, NULL), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_rma_get(note.remote, 0, &b, 1, 0, NULL), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_rma_flush(e, flit_rank(0)), FLIT_ERR_IN_HANDLER);
    flit_rma_remote_t *r;
    CHECK_ST(flit_rma_import(e, flit_rank(0), id, &r), FLIT_ERR_IN_HANDLER);
    flit_rma_region_t *g;
    CHECK_ST(flit_rma_export(e, &b, 1, FLIT_RMA_READ, NULL, 0, &g), FLIT_ERR_IN_HANDLER);
    CHECK(flit_rma_remote_size(note.remote) > 0);
}

static flit_stats_t stats(void)
{
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    return s;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

/* ---- bad input ---- */

static void bad_memory_calls(void)
{
    void *p;
    CHECK_ST(flit_rma_alloc(NULL, 64, &p), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_alloc(ep, 0, &p), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_alloc(ep, 64, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_alloc(ep, SIZE_MAX, &p), FLIT_ERR_TOO_LARGE);
    CHECK_ST(flit_rma_free(NULL, &p), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_free(ep, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_free(ep, &p), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_rma_alloc(ep, 100, &p));
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    CHECK(((uintptr_t)p & (page - 1)) == 0);
    for (size_t i = 0; i < page; i++) /* whole pages, zeroed */
        CHECK(((uint8_t *)p)[i] == 0);
    CHECK_ST(flit_rma_free(ep, (uint8_t *)p + 1), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_rma_free(ep, p));
    CHECK_ST(flit_rma_free(ep, p), FLIT_ERR_INVALID_ARG);
}

static void bad_export_calls(void)
{
    static uint8_t buf[256];
    flit_rma_region_t *g;
    flit_rank_t me = flit_rank(0), out = flit_rank(1);
    CHECK_ST(flit_rma_export(NULL, buf, 8, FLIT_RMA_READ, NULL, 0, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_export(ep, NULL, 8, FLIT_RMA_READ, NULL, 0, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_export(ep, buf, 0, FLIT_RMA_READ, NULL, 0, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_export(ep, buf, 8, 0, NULL, 0, &g), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_export(ep, buf, 8, 4, NULL, 0, &g), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_export(ep, buf, 8, FLIT_RMA_READ, NULL, 0, NULL),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_export(ep, buf, 8, FLIT_RMA_READ, NULL, 1, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_export(ep, buf, SIZE_MAX, FLIT_RMA_READ, NULL, 0, &g),
             FLIT_ERR_INVALID_ARG);
    flit_rank_t two[2] = {me, out};
    CHECK_ST(flit_rma_export(ep, buf, 8, FLIT_RMA_READ, two, 2, &g), FLIT_ERR_RANK);
    CHECK(flit_rma_region_id(NULL) == 0);
    CHECK_ST(flit_rma_unexport(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_unexport((flit_rma_region_t *)buf), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_set_notify_handler(NULL, on_notify, NULL), FLIT_ERR_INVALID_ARG);

    /* Allowed: a list naming this rank. */
    CHECK_OK(flit_rma_export(ep, buf, sizeof buf, FLIT_RMA_READ, &me, 1, &g));
    uint64_t id = flit_rma_region_id(g);
    CHECK(id != 0);
    flit_rma_remote_t *r;
    CHECK_ST(flit_rma_import(NULL, me, id, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_import(ep, out, id, &r), FLIT_ERR_RANK);
    CHECK_ST(flit_rma_import(ep, me, 0, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_import(ep, me, id, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_import(ep, me, id + 1, &r), FLIT_ERR_REVOKED); /* no such slot */
    CHECK_ST(flit_rma_import(ep, me, id + (1ull << 32), &r), FLIT_ERR_REVOKED); /* gen */
    CHECK_OK(flit_rma_import(ep, me, id, &r));
    CHECK(flit_rma_remote_size(r) == sizeof buf);
    CHECK(flit_rma_remote_access(r) == FLIT_RMA_READ);
    CHECK(flit_rma_remote_path(r) == FLIT_RMA_PATH_COPY); /* our own: memmove */
    CHECK(flit_rma_remote_addr(r) == (void *)buf);        /* ... at its own address */
    CHECK_OK(flit_rma_release(r));
    CHECK(flit_rma_remote_addr(r) == NULL && flit_rma_remote_addr(NULL) == NULL);
    CHECK(flit_rma_remote_addr((flit_rma_remote_t *)buf) == NULL);
    CHECK_ST(flit_rma_release(r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_release(NULL), FLIT_ERR_INVALID_ARG);
    CHECK(flit_rma_remote_size(r) == 0 && flit_rma_remote_access(r) == 0);
    CHECK(flit_rma_remote_size(NULL) == 0 && flit_rma_remote_access(NULL) == 0);
    CHECK(flit_rma_remote_path(r) == FLIT_RMA_PATH_NONE);
    CHECK(flit_rma_remote_path(NULL) == FLIT_RMA_PATH_NONE);
    CHECK(flit_rma_remote_path((flit_rma_remote_t *)buf) == FLIT_RMA_PATH_NONE);
    CHECK_OK(flit_rma_unexport(g));
    CHECK(flit_rma_region_id(g) == 0);
    CHECK_ST(flit_rma_unexport(g), FLIT_ERR_REVOKED);
    CHECK_ST(flit_rma_import(ep, me, id, &r), FLIT_ERR_REVOKED);
}

/* Every refusal of put and get, with nothing moved. */
static void bad_transfer_calls(void)
{
    static uint8_t ro[100], wo[100];
    memset(ro, 0x11, sizeof ro);
    memset(wo, 0x22, sizeof wo);
    flit_rma_region_t *gr, *gw;
    flit_rma_remote_t *rr, *rw;
    CHECK_OK(flit_rma_export(ep, ro, sizeof ro, FLIT_RMA_READ, NULL, 0, &gr));
    CHECK_OK(flit_rma_export(ep, wo, sizeof wo, FLIT_RMA_WRITE, NULL, 0, &gw));
    CHECK_OK(flit_rma_import(ep, flit_rank(0), flit_rma_region_id(gr), &rr));
    CHECK_OK(flit_rma_import(ep, flit_rank(0), flit_rma_region_id(gw), &rw));
    uint8_t b[200];
    memset(b, 0x33, sizeof b);
    flit_rma_op_t *op;
    CHECK_ST(flit_rma_put(NULL, 0, b, 1, 0, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_put((flit_rma_remote_t *)b, 0, b, 1, 0, NULL),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_put(rw, 0, b, 1, 1u << 5, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_put(rw, 0, NULL, 1, 0, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_put(rw, 0, b, 101, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_put(rw, 100, b, 1, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_put(rw, 101, b, 0, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_put(rw, 99, b, 2, 0, &op), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_put(rw, UINT64_MAX, b, 2, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_put(rw, 1, b, SIZE_MAX, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_put(rr, 0, b, 1, 0, NULL), FLIT_ERR_DENIED);
    CHECK_ST(flit_rma_put(rr, 0, b, 1, FLIT_RMA_NOTIFY, &op), FLIT_ERR_DENIED);
    CHECK_ST(flit_rma_get(rw, 0, b, 1, 0, NULL), FLIT_ERR_DENIED);
    CHECK_ST(flit_rma_get(rr, 0, b, 1, FLIT_RMA_NOTIFY, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_get(rr, 0, NULL, 1, 0, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_get(rr, 60, b, 41, 0, NULL), FLIT_ERR_BOUNDS);
    CHECK_ST(flit_rma_get(NULL, 0, b, 1, 0, NULL), FLIT_ERR_INVALID_ARG);
    for (size_t i = 0; i < sizeof ro; i++)
        CHECK(ro[i] == 0x11 && wo[i] == 0x22);
    /* Edges that are inside: empty at the end, the last byte. */
    CHECK_OK(flit_rma_put(rw, 100, b, 0, 0, NULL));
    CHECK_OK(flit_rma_put(rw, 99, b, 1, FLIT_RMA_REMOTE_DONE, NULL));
    CHECK(wo[99] == 0x33 && wo[98] == 0x22);
    CHECK_OK(flit_rma_get(rr, 99, b, 1, 0, NULL));
    CHECK(b[0] == 0x11);
    int done;
    CHECK_ST(flit_rma_test(NULL, &done), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_wait(NULL, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_flush(NULL, flit_rank(0)), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_flush(ep, flit_rank(1)), FLIT_ERR_RANK);
    CHECK_ST(flit_rma_flush_all(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_rma_flush(ep, flit_rank(0)));
    CHECK_OK(flit_rma_flush_all(ep));
    CHECK_OK(flit_rma_release(rr));
    CHECK_OK(flit_rma_release(rw));
    CHECK_OK(flit_rma_unexport(gr));
    CHECK_OK(flit_rma_unexport(gw));
}

/* ---- moving data ---- */

static void transfers_in(uint8_t *mem, size_t size, const char *what)
{
    flit_rma_region_t *g;
    flit_rma_remote_t *r;
    /* An odd start inside the memory, an odd length. */
    uint8_t *region = mem + 3;
    size_t rlen = size - 5;
    CHECK_OK(
        flit_rma_export(ep, region, rlen, FLIT_RMA_READ | FLIT_RMA_WRITE, NULL, 0, &g));
    CHECK_OK(flit_rma_import(ep, flit_rank(0), flit_rma_region_id(g), &r));
    CHECK(flit_rma_remote_size(r) == rlen);
    uint8_t *src = malloc(rlen), *dst = malloc(rlen + 16);
    CHECK(src && dst);
    static const size_t lens[] = {1,  2,  3,    7,    8,    9,     63,
                                  64, 65, 4095, 4096, 4097, 65537, 1 << 20};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t n = lens[i];
        if (n + 11 > rlen)
            continue;
        uint64_t off = (i * 13 + 1) % (rlen - n);
        fill(src, n, (uint8_t)i);
        memset(region, 0xee, rlen);
        flit_rma_op_t *op = NULL;
        if (i % 2) {
            CHECK_OK(flit_rma_put(r, off + 1, src + 1, n - 1, 0, &op));
            CHECK_OK(flit_rma_wait(op, -1));
            CHECK_OK(flit_rma_put(r, off, src, 1, FLIT_RMA_REMOTE_DONE, NULL));
        } else {
            CHECK_OK(flit_rma_put(r, off, src, n, 0, NULL));
        }
        if (memcmp(region + off, src, n) != 0)
            FAIL("%s: put of %zu bytes at %llu did not land", what, n,
                 (unsigned long long)off);
        if ((off && region[off - 1] != 0xee) ||
            (off + n < rlen && region[off + n] != 0xee))
            FAIL("%s: put of %zu bytes at %llu wrote outside its range", what, n,
                 (unsigned long long)off);
        memset(dst, 0, rlen + 16);
        CHECK_OK(flit_rma_get(r, off, dst + 5, n, i % 3 ? FLIT_RMA_REMOTE_DONE : 0,
                              i % 2 ? &op : NULL));
        if (i % 2) {
            int done = 0;
            while (!done)
                CHECK_OK(flit_rma_test(op, &done));
            CHECK_ST(flit_rma_test(op, &done), FLIT_ERR_INVALID_ARG); /* it died */
            CHECK_ST(flit_rma_wait(op, 0), FLIT_ERR_INVALID_ARG);
        }
        if (memcmp(dst + 5, src, n) != 0 || dst[4] != 0 || dst[5 + n] != 0)
            FAIL("%s: get of %zu bytes at %llu is wrong", what, n,
                 (unsigned long long)off);
    }
    free(src);
    free(dst);
    CHECK_OK(flit_rma_release(r));
    CHECK_OK(flit_rma_unexport(g));
}

static void notifications(void)
{
    uint8_t *mem;
    CHECK_OK(flit_rma_alloc(ep, 10000, (void **)&mem));
    flit_rma_region_t *g;
    CHECK_OK(flit_rma_export(ep, mem, 10000, FLIT_RMA_WRITE, NULL, 0, &g));
    CHECK_OK(flit_rma_import(ep, flit_rank(0), flit_rma_region_id(g), &note.remote));
    note_region = mem;
    CHECK_OK(flit_rma_set_notify_handler(ep, on_notify, &note));
    uint8_t data[300];
    fill(data, sizeof data, 9);
    note.in_put = 1;
    CHECK_OK(flit_rma_put(note.remote, 777, data, sizeof data, FLIT_RMA_NOTIFY, NULL));
    note.in_put = 0;
    CHECK(note.runs == 0); /* not inside the put */
    for (int i = 0; i < 10; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(note.runs == 1);
    CHECK(note.id == flit_rma_region_id(g) && note.off == 777 && note.len == sizeof data);
    CHECK(note.from == 0 && note.first_byte == data[0]);
    /* No flag, no notification. */
    CHECK_OK(flit_rma_put(note.remote, 0, data, 10, 0, NULL));
    for (int i = 0; i < 10; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(note.runs == 1);
    /* Non-blocking, with a handle. */
    flit_rma_op_t *op;
    note.in_put = 1;
    CHECK_OK(flit_rma_put(note.remote, 5, data, 1, FLIT_RMA_NOTIFY | FLIT_RMA_REMOTE_DONE,
                          &op));
    note.in_put = 0;
    CHECK_OK(flit_rma_wait(op, -1));
    for (int i = 0; i < 10 && note.runs == 1; i++)
        CHECK_OK(flit_wait(ep, 100000));
    CHECK(note.runs == 2 && note.off == 5 && note.len == 1);
    CHECK(stats().rma_notifications == 2);
    /* Revoked between the put and its notification: dropped. */
    CHECK_OK(flit_rma_put(note.remote, 5, data, 1, FLIT_RMA_NOTIFY, NULL));
    CHECK_OK(flit_rma_unexport(g));
    for (int i = 0; i < 10; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(note.runs == 2);
    CHECK_OK(flit_rma_set_notify_handler(ep, NULL, NULL));
    CHECK_OK(flit_rma_release(note.remote));
    CHECK_OK(flit_rma_free(ep, mem));
}

static void revocation(void)
{
    uint8_t *mem;
    CHECK_OK(flit_rma_alloc(ep, 8192, (void **)&mem));
    flit_rma_region_t *g, *g2;
    flit_rma_remote_t *r, *r2;
    CHECK_OK(flit_rma_export(ep, mem, 4096, FLIT_RMA_READ | FLIT_RMA_WRITE, NULL, 0, &g));
    CHECK_OK(flit_rma_export(ep, mem + 4096, 4096, FLIT_RMA_READ | FLIT_RMA_WRITE, NULL,
                             0, &g2));
    uint64_t id = flit_rma_region_id(g);
    CHECK_OK(flit_rma_import(ep, flit_rank(0), id, &r));
    CHECK_OK(flit_rma_import(ep, flit_rank(0), flit_rma_region_id(g2), &r2));
    uint8_t b[16] = {1, 2, 3};
    CHECK_OK(flit_rma_put(r, 0, b, 3, 0, NULL));
    CHECK_OK(flit_rma_unexport(g));
    memset(mem, 0, 4096);
    CHECK_ST(flit_rma_put(r, 0, b, 3, 0, NULL), FLIT_ERR_REVOKED);
    CHECK_ST(flit_rma_put(r, 0, b, 3, 0, NULL), FLIT_ERR_REVOKED); /* known now */
    CHECK_ST(flit_rma_get(r, 0, b, 3, 0, NULL), FLIT_ERR_REVOKED);
    CHECK(mem[0] == 0 && mem[1] == 0);
    CHECK_ST(flit_rma_import(ep, flit_rank(0), id, &r), FLIT_ERR_REVOKED);
    CHECK_ST(flit_rma_unexport(g), FLIT_ERR_REVOKED);
    /* A new export does not revive the old id. */
    flit_rma_region_t *g3;
    CHECK_OK(flit_rma_export(ep, mem, 4096, FLIT_RMA_WRITE, NULL, 0, &g3));
    CHECK(flit_rma_region_id(g3) != id);
    CHECK_ST(flit_rma_import(ep, flit_rank(0), id, &r2 /* untouched on failure */),
             FLIT_ERR_REVOKED);
    CHECK_OK(flit_rma_put(r2, 0, b, 3, 0, NULL));
    /* Freeing the block unexports what is in it. */
    CHECK_OK(flit_rma_free(ep, mem));
    CHECK_ST(flit_rma_put(r2, 0, b, 3, 0, NULL), FLIT_ERR_REVOKED);
    CHECK(flit_rma_region_id(g3) == 0 && flit_rma_region_id(g2) == 0);
    CHECK_ST(flit_rma_unexport(g3), FLIT_ERR_REVOKED);
    CHECK_OK(flit_rma_release(r));
    CHECK_OK(flit_rma_release(r2));
}

/* ---- the owner's judgement of forged packets ---- */

static void send_raw(unsigned lane, const void *bytes, size_t len)
{
    void *pkt;
    CHECK_OK(fl_ep_reserve(ep, 0, lane, len, 0, &pkt));
    memcpy(pkt, bytes, len);
    fl_ep_commit(ep, 0, lane, pkt, len, 0);
    for (int i = 0; i < 4; i++)
        CHECK_OK(flit_poll(ep));
}

static void send_forged(struct fl_rma_pkt *p, const void *payload)
{
    CHECK_OK(fl_rma_send(ep, 0, p, payload, 0));
    for (int i = 0; i < 4; i++)
        CHECK_OK(flit_poll(ep));
}

static void forged_packets(void)
{
    static uint8_t mem[300];
    memset(mem, 0xaa, sizeof mem);
    uint8_t *region = mem + 100; /* [100, 200) exported, 100 around */
    flit_rma_region_t *gw, *gr;
    CHECK_OK(flit_rma_export(ep, region, 100, FLIT_RMA_WRITE, NULL, 0, &gw));
    CHECK_OK(flit_rma_export(ep, region, 100, FLIT_RMA_READ, NULL, 0, &gr));
    uint64_t wid = flit_rma_region_id(gw), rid = flit_rma_region_id(gr);
    uint8_t payload[256];
    memset(payload, 0x55, sizeof payload);
    uint64_t refused0 = stats().rma_refused, bad0 = stats().refused_packets;

    struct {
        uint64_t id, base, total;
        const char *what;
    } puts[] = {
        {wid, 90, 20, "past the end"},
        {wid, 100, 1, "starting at the end"},
        {wid, 1ull << 62, 8, "far beyond"},
        {wid, UINT64_MAX - 3, 3, "wrapping"},
        {rid, 0, 8, "to a read-only region"},
        {wid + 7, 0, 8, "to a region that is not there"},
        {wid + (5ull << 32), 0, 8, "to an older generation"},
    };
    size_t nputs = sizeof puts / sizeof puts[0];
    for (size_t i = 0; i < nputs; i++) {
        struct fl_rma_pkt p = {.kind = FL_RMA_PUT,
                               .flags = FL_RMAF_FIRST | FL_RMAF_LAST,
                               .op = 12345,
                               .id = puts[i].id,
                               .base = puts[i].base,
                               .total = puts[i].total,
                               .len = (uint32_t)puts[i].total};
        /* (The wrapping one is refused by the decoder, as a packet.) */
        send_forged(&p, payload);
    }
    /* A put in two pieces whose second piece claims more than the first
       announced is malformed; a second piece of no put is refused. */
    struct fl_rma_pkt tail = {.kind = FL_RMA_PUT,
                              .flags = FL_RMAF_LAST,
                              .op = 999,
                              .id = wid,
                              .base = 0,
                              .total = 16,
                              .piece = 8,
                              .len = 8};
    send_forged(&tail, payload);
    /* Reads and notifications the region does not grant, or outside it. */
    struct fl_rma_pkt g1 = {.kind = FL_RMA_GET_REQ, .op = 1, .id = wid, .total = 4};
    send_forged(&g1, NULL);
    struct fl_rma_pkt g2 = {
        .kind = FL_RMA_GET_REQ, .op = 1, .id = rid, .base = 50, .total = 51};
    send_forged(&g2, NULL);
    struct fl_rma_pkt n1 = {.kind = FL_RMA_NOTIFY, .id = rid, .total = 4};
    send_forged(&n1, NULL);
    struct fl_rma_pkt n2 = {.kind = FL_RMA_NOTIFY, .id = wid, .base = 99, .total = 2};
    send_forged(&n2, NULL);

    for (size_t i = 0; i < sizeof mem; i++)
        if (mem[i] != 0xaa)
            FAIL("a refused packet wrote byte %zu", i);
    flit_stats_t s = stats();
    /* 6 puts judged and refused (the wrapping one is malformed), the stray
       piece, 2 gets, 2 notifications. */
    if (s.rma_refused - refused0 != 6 + 1 + 2 + 2)
        FAIL("%llu refusals counted, expected 11",
             (unsigned long long)(s.rma_refused - refused0));
    /* The malformed one, and the answers to op ids we never issued (the
       acks and get answers come back to this rank). */
    CHECK(s.refused_packets - bad0 >= 1);

    /* A forged put inside the bounds lands: the judgement is the region's,
       not the sender's. */
    struct fl_rma_pkt ok = {.kind = FL_RMA_PUT,
                            .flags = FL_RMAF_FIRST | FL_RMAF_LAST,
                            .op = 7,
                            .id = wid,
                            .base = 10,
                            .total = 5,
                            .len = 5};
    send_forged(&ok, payload);
    CHECK(region[9] == 0xaa && region[10] == 0x55 && region[14] == 0x55 &&
          region[15] == 0xaa);
    CHECK(stats().rma_refused - refused0 == 11);

    /* Malformed: short, wrong lane, unknown kind, unknown flag, payload
       length that does not add up. */
    uint8_t raw[FL_RMA_HDR + 8] = {0};
    uint64_t bad1 = stats().refused_packets;
    struct fl_rma_pkt h = {.kind = FL_RMA_NOTIFY, .id = wid, .total = 1};
    fl_rma_encode(raw, &h);
    send_raw(FL_LANE_REQ, raw, FL_RMA_HDR - 8);
    send_raw(FL_LANE_REP, raw, FL_RMA_HDR);
    raw[2] = 99;
    send_raw(FL_LANE_REQ, raw, FL_RMA_HDR);
    fl_rma_encode(raw, &h);
    raw[3] = 0x80;
    send_raw(FL_LANE_REQ, raw, FL_RMA_HDR);
    fl_rma_encode(raw, &h);
    send_raw(FL_LANE_REQ, raw, FL_RMA_HDR + 8);
    CHECK(stats().refused_packets - bad1 == 5);
    CHECK(stats().rma_refused - refused0 == 11);
    for (size_t i = 0; i < 100; i++)
        CHECK(mem[i] == 0xaa && mem[200 + i] == 0xaa);
    CHECK_OK(flit_rma_unexport(gw));
    CHECK_OK(flit_rma_unexport(gr));
}

static void counters(uint64_t puts0, uint64_t gets0)
{
    flit_stats_t s = stats();
    CHECK(s.rma_puts > puts0 && s.rma_gets > gets0 && s.rma_put_bytes > 1000000 &&
          s.rma_get_bytes > 1000000);
    /* An older caller that knows a shorter struct still gets its part. */
    flit_stats_t old = {.struct_size = offsetof(flit_stats_t, rma_puts)};
    CHECK_OK(flit_ep_stats(ep, &old));
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    bad_memory_calls();
    bad_export_calls();
    bad_transfer_calls();
    uint64_t puts0 = stats().rma_puts, gets0 = stats().rma_gets;
    uint8_t *mem;
    size_t size = (2u << 20) + 100;
    CHECK_OK(flit_rma_alloc(ep, size, (void **)&mem));
    transfers_in(mem, size, "alloc memory");
    CHECK_OK(flit_rma_free(ep, mem));
    mem = malloc(size);
    CHECK(mem);
    transfers_in(mem, size, "malloc memory");
    free(mem);
    counters(puts0, gets0);
    notifications();
    revocation();
    forged_packets();
    /* Memory and regions left for the endpoint's destruction to release. */
    void *left;
    flit_rma_region_t *g;
    CHECK_OK(flit_rma_alloc(ep, 1 << 16, &left));
    CHECK_OK(flit_rma_export(ep, left, 1 << 16, FLIT_RMA_WRITE, NULL, 0, &g));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
