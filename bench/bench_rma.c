/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_rma.h. */
#include "bench_rma.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEER     flit_rank(1)
#define STALL_NS 10000000000ull /* a side silent this long stopped */
/* Watching memory for a put: a flit_poll every this many looks. On shared
   memory the put lands without one (a poll would only delay seeing it);
   over packets it lands during one. */
#define POLL_EVERY_SHM 256u
#define LAT_MAX_N      (1ull << 24)
#define BW_MAX_N       (1ull << 26)
#define MAX_WINDOW     64u

/* Sub-commands of CMD_RMA: (sub << 56) | value. */
enum sub {
    SUB_SIZE = 1, /* value: the regions' size */
    SUB_PEER_LO,  /* value: rank 0's export id, low 32 bits */
    SUB_PEER_HI,  /* value: high 32 bits; rank 1 sets up (deferred) */
    SUB_READY,    /* result: 0 setting up, 1 ready, 2 failed */
    SUB_ID_LO,    /* result: rank 1's export id, low 32 bits */
    SUB_ID_HI,
    SUB_PUT_ECHO,    /* value: n | size << 32 (deferred) */
    SUB_NOTIFY_ECHO, /* value: n | size << 32 (deferred) */
    SUB_TEARDOWN,    /* (deferred) */
};

#define PACK(sub, value) ((uint64_t)(sub) << 56 | (uint64_t)(value))
#define SUB_OF(arg)      ((unsigned)((arg) >> 56))
#define VALUE_OF(arg)    ((arg) & ((1ull << 56) - 1))

/* One side's state (one bench per process). */
static struct {
    size_t size;
    uint8_t *mem; /* our region (flit_rma_alloc) */
    flit_rma_region_t *region;
    flit_rma_remote_t *remote; /* the other rank's region */
    uint8_t *src;              /* what our puts send */
    uint64_t peer_id;
    uint32_t ready;
    uint64_t seq;           /* the put ping-pong's last sequence */
    uint32_t poll_every;    /* watch(): see POLL_EVERY_SHM */
    _Atomic uint64_t notes; /* notifications that ran here */
    uint64_t notes_seen;
} rs;

static void on_notify(flit_ep_t *ep, uint64_t id, flit_rank_t from, uint64_t off,
                      size_t len, void *user)
{
    (void)ep, (void)id, (void)from, (void)off, (void)len, (void)user;
    atomic_fetch_add_explicit(&rs.notes, 1, memory_order_relaxed);
}

/* Allocates and exports our region and the source buffer. */
static flit_status side_open(bench_t *b, size_t size)
{
    flit_peer_info_t info = {.struct_size = sizeof info};
    flit_status st = flit_ep_peer_info(b->ep, flit_rank(1 - b->rank), &info);
    if (st != FLIT_OK)
        return st;
    rs.poll_every = strcmp(info.transport, "shm") == 0 ? POLL_EVERY_SHM : 1;
    rs.size = size;
    /* Page-aligned, as the memcpy baseline's buffers. */
    rs.src = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!rs.src)
        return FLIT_ERR_NO_MEMORY;
    memset(rs.src, 0x5a, size);
    st = flit_rma_alloc(b->ep, size, (void **)&rs.mem);
    if (st == FLIT_OK)
        st = flit_rma_export(b->ep, rs.mem, size, FLIT_RMA_READ | FLIT_RMA_WRITE, NULL, 0,
                             &rs.region);
    if (st == FLIT_OK)
        st = flit_rma_set_notify_handler(b->ep, on_notify, NULL);
    return st;
}

static void side_close(bench_t *b)
{
    if (rs.remote)
        flit_rma_release(rs.remote);
    if (rs.region)
        flit_rma_unexport(rs.region);
    if (rs.mem)
        flit_rma_free(b->ep, rs.mem);
    flit_rma_set_notify_handler(b->ep, NULL, NULL);
    free(rs.src);
    memset(&rs, 0, sizeof rs);
}

/*
 * Waits until the 8 bytes at flag hold want, watching memory: on shared
 * memory the put lands without any flit call; over packets it lands while
 * we poll (rs.poll_every). False if nothing came for STALL_NS.
 */
static bool watch(bench_t *b, const uint8_t *flag, uint64_t want)
{
    const _Atomic uint64_t *f = (const _Atomic uint64_t *)(const void *)flag;
    uint64_t since = 0;
    for (uint32_t spins = 1; atomic_load_explicit(f, memory_order_acquire) != want;
         spins++) {
        if (spins % rs.poll_every) {
            bench_cpu_relax();
            continue;
        }
        bench_check(b, flit_poll(b->ep), "flit_poll");
        if (spins % (rs.poll_every * 4096))
            continue;
        uint64_t now = bench_now_ns();
        if (!since)
            since = now;
        else if (now - since > STALL_NS)
            return false;
    }
    return true;
}

static bool wait_notes(bench_t *b, uint64_t want)
{
    uint64_t since = 0;
    for (uint32_t spins = 1; atomic_load_explicit(&rs.notes, memory_order_relaxed) < want;
         spins++) {
        bench_check(b, flit_poll(b->ep), "flit_poll");
        if (spins % 4096)
            continue;
        uint64_t now = bench_now_ns();
        if (!since)
            since = now;
        else if (now - since > STALL_NS)
            return false;
    }
    return true;
}

/* The put of the ping-pong: the data, then the sequence in the last 8
   bytes, a put of its own (a memcpy's stores need not become visible in
   address order). */
static void put_seq(bench_t *b, size_t size, uint64_t seq)
{
    if (size > 8)
        bench_check(b, flit_rma_put(rs.remote, 0, rs.src, size - 8, 0, NULL),
                    "flit_rma_put");
    bench_check(b, flit_rma_put(rs.remote, size - 8, &seq, 8, 0, NULL), "flit_rma_put");
}

/* ---- rank 1 ---- */

static void serve_setup(bench_t *b)
{
    flit_status st = side_open(b, rs.size);
    if (st == FLIT_OK)
        st = flit_rma_import(b->ep, flit_rank(0), rs.peer_id, &rs.remote);
    if (st != FLIT_OK)
        fprintf(stderr, "%s: rank 1: rma setup: %s\n", b->prog, flit_strerror(st));
    rs.ready = st == FLIT_OK ? 1 : 2;
}

static void serve_put_echo(bench_t *b, uint64_t n, size_t size)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t seq = ++rs.seq;
        if (!watch(b, rs.mem + size - 8, seq))
            return; /* rank 0 gave up; it says so */
        put_seq(b, size, seq);
    }
}

static void serve_notify_echo(bench_t *b, uint64_t n, size_t size)
{
    for (uint64_t i = 0; i < n; i++) {
        if (!wait_notes(b, ++rs.notes_seen))
            return;
        bench_check(b, flit_rma_put(rs.remote, 0, rs.src, size, FLIT_RMA_NOTIFY, NULL),
                    "flit_rma_put");
    }
}

uint32_t bench_rma_ctrl(bench_t *b, uint64_t arg, bool *defer)
{
    (void)b;
    uint64_t v = VALUE_OF(arg);
    *defer = false;
    switch (SUB_OF(arg)) {
    case SUB_SIZE:
        rs.size = (size_t)v;
        rs.ready = 0;
        return 1;
    case SUB_PEER_LO:
        rs.peer_id = v;
        return 1;
    case SUB_PEER_HI:
        rs.peer_id |= v << 32;
        *defer = true;
        return 1;
    case SUB_READY:
        return rs.ready;
    case SUB_ID_LO:
        return (uint32_t)flit_rma_region_id(rs.region);
    case SUB_ID_HI:
        return (uint32_t)(flit_rma_region_id(rs.region) >> 32);
    case SUB_PUT_ECHO:
    case SUB_NOTIFY_ECHO:
    case SUB_TEARDOWN:
        *defer = true;
        return 1;
    default:
        return 0;
    }
}

void bench_rma_serve(bench_t *b, uint64_t arg)
{
    uint64_t v = VALUE_OF(arg);
    switch (SUB_OF(arg)) {
    case SUB_PEER_HI:
        serve_setup(b);
        break;
    case SUB_PUT_ECHO:
        serve_put_echo(b, (uint32_t)v, (size_t)(v >> 32));
        break;
    case SUB_NOTIFY_ECHO:
        serve_notify_echo(b, (uint32_t)v, (size_t)(v >> 32));
        break;
    case SUB_TEARDOWN:
        side_close(b);
        break;
    default:
        break;
    }
}

/* ---- rank 0 ---- */

bool bench_rma_setup(bench_t *b, size_t max_size)
{
    if (max_size < 8)
        max_size = 8;
    flit_status st = side_open(b, max_size);
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: rma setup: %s\n", b->prog, flit_strerror(st));
        side_close(b);
        return false;
    }
    uint64_t id = flit_rma_region_id(rs.region);
    bench_rma_command(b, PACK(SUB_SIZE, max_size));
    bench_rma_command(b, PACK(SUB_PEER_LO, (uint32_t)id));
    bench_rma_command(b, PACK(SUB_PEER_HI, id >> 32));
    /* Each command is a round trip in which we answer rank 1's import. */
    uint32_t ready;
    while ((ready = bench_rma_command(b, PACK(SUB_READY, 0))) == 0)
        ;
    uint64_t peer = bench_rma_command(b, PACK(SUB_ID_LO, 0)) |
                    (uint64_t)bench_rma_command(b, PACK(SUB_ID_HI, 0)) << 32;
    st = ready == 1 ? flit_rma_import(b->ep, PEER, peer, &rs.remote) : FLIT_ERR_SYSTEM;
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: rma setup: importing rank 1's region: %s\n", b->prog,
                flit_strerror(st));
        bench_rma_teardown(b);
        return false;
    }
    return true;
}

void bench_rma_teardown(bench_t *b)
{
    side_close(b);
    bench_rma_command(b, PACK(SUB_TEARDOWN, 0));
}

struct rma_point {
    bench_t *b;
    size_t size;
    unsigned window;
};

static uint64_t run_put_pingpong(void *ctx, uint64_t n)
{
    struct rma_point *p = ctx;
    bench_t *b = p->b;
    bench_rma_command(b, PACK(SUB_PUT_ECHO, n | (uint64_t)p->size << 32));
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t seq = ++rs.seq;
        put_seq(b, p->size, seq);
        if (!watch(b, rs.mem + p->size - 8, seq))
            return UINT64_MAX;
    }
    return bench_now_ns() - t0;
}

double bench_rma_put_latency_ns(bench_t *b, size_t size, uint64_t target_ns, int reps)
{
    if (size < 8)
        size = 8;
    if (size > rs.size)
        return NAN;
    struct rma_point p = {.b = b, .size = size};
    return bench_measure(run_put_pingpong, &p, target_ns, reps, 1, LAT_MAX_N) / 2;
}

static uint64_t run_notify_pingpong(void *ctx, uint64_t n)
{
    struct rma_point *p = ctx;
    bench_t *b = p->b;
    bench_rma_command(b, PACK(SUB_NOTIFY_ECHO, n | (uint64_t)p->size << 32));
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        bench_check(b, flit_rma_put(rs.remote, 0, rs.src, p->size, FLIT_RMA_NOTIFY, NULL),
                    "flit_rma_put");
        if (!wait_notes(b, ++rs.notes_seen))
            return UINT64_MAX;
    }
    return bench_now_ns() - t0;
}

double bench_rma_notify_latency_ns(bench_t *b, size_t size, uint64_t target_ns, int reps)
{
    if (size > rs.size)
        return NAN;
    struct rma_point p = {.b = b, .size = size};
    return bench_measure(run_notify_pingpong, &p, target_ns, reps, 1, LAT_MAX_N) / 2;
}

static uint64_t run_gets(void *ctx, uint64_t n)
{
    struct rma_point *p = ctx;
    bench_t *b = p->b;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        bench_check(b, flit_rma_get(rs.remote, 0, rs.src, p->size, 0, NULL),
                    "flit_rma_get");
    return bench_now_ns() - t0;
}

double bench_rma_get_latency_ns(bench_t *b, size_t size, uint64_t target_ns, int reps)
{
    if (size > rs.size)
        return NAN;
    struct rma_point p = {.b = b, .size = size};
    return bench_measure(run_gets, &p, target_ns, reps, 1, LAT_MAX_N);
}

static uint64_t run_puts(void *ctx, uint64_t n)
{
    struct rma_point *p = ctx;
    bench_t *b = p->b;
    flit_rma_op_t *ops[MAX_WINDOW] = {0};
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        flit_rma_op_t **slot = &ops[i % p->window];
        if (*slot)
            bench_check(b, flit_rma_wait(*slot, -1), "flit_rma_wait");
        bench_check(
            b, flit_rma_put(rs.remote, 0, rs.src, p->size, FLIT_RMA_REMOTE_DONE, slot),
            "flit_rma_put");
    }
    for (unsigned k = 0; k < p->window; k++)
        if (ops[k])
            bench_check(b, flit_rma_wait(ops[k], -1), "flit_rma_wait");
    bench_check(b, flit_rma_flush(b->ep, PEER), "flit_rma_flush");
    return bench_now_ns() - t0;
}

double bench_rma_put_mbps(bench_t *b, size_t size, unsigned window, uint64_t target_ns,
                          int reps)
{
    if (size > rs.size || size == 0)
        return NAN;
    struct rma_point p = {.b = b,
                          .size = size,
                          .window = window < 1            ? 1
                                    : window > MAX_WINDOW ? MAX_WINDOW
                                                          : window};
    double ns = bench_measure(run_puts, &p, target_ns, reps, 1, BW_MAX_N);
    return ns > 0 ? (double)size / ns * 1e3 : NAN;
}
