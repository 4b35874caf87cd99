/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_object.h. */
#include "bench_object.h"

#include <flit/object.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARM_BULK  64 /* bulk operations before a bulk figure */
#define PEER       flit_rank(1)
#define BULK       (1u << 20)
#define OPS_MAX    (1ull << 26)
#define GROUP_ID   0x6f62u     /* the baseline's group, beside the objects' own */
#define SWITCH_BIG (64u << 10) /* the larger state moved by a placement switch */
/* Orca on Myrinet (Bal et al.): remote and group object invocation. */
#define ORCA_ROI_US 328.0
#define ORCA_GOI_US 379.0

enum { OP_NULL, OP_BULK, OP_READ };

static struct {
    flit_objects_t *objs;
    flit_object_t *owned, *rep;
    flit_object_t *moved[2]; /* AUTO, 8 B and SWITCH_BIG of state */
    bool moved_owned[2];     /* pinned to rank 0 now (else replicated) */
    flit_rpc_t *rpc;         /* the null RPC baseline */
    flit_groups_t *gs;
    flit_group_t *g; /* the multicast baseline */
    uint64_t delivered;
    uint8_t *buf;
    size_t bulk;
    int64_t state; /* the plain call's */
} ob;

static size_t op_null(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)state, (void)arg, (void)len, (void)res, (void)user;
    return 0;
}

static size_t op_read(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(int64_t));
    return sizeof(int64_t);
}

/* The plain call beside the local read: the same work, not inlined. */
__attribute__((noinline)) static size_t plain_read(void *state, void *res)
{
    memcpy(res, state, sizeof(int64_t));
    return sizeof(int64_t);
}

static flit_object_op_t ops[] = {
    [OP_NULL] = {FLIT_OBJECT_WRITE, 0, 0, op_null, NULL},
    [OP_BULK] = {FLIT_OBJECT_WRITE, BULK, 0, op_null, NULL},
    [OP_READ] = {FLIT_OBJECT_READ, 0, sizeof(int64_t), op_read, NULL},
};
static const flit_object_type_t type = {sizeof(int64_t), NULL, NULL, ops, 3, NULL};
static const flit_object_type_t big_type = {SWITCH_BIG, NULL, NULL, ops, 3, NULL};

static void proc_null(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    if (len)
        flit_rpc_recv(req, ob.buf, len);
}

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g, (void)m, (void)total, (void)user;
    ob.delivered++; /* the bytes are skipped */
}

void bench_object_open(bench_t *b)
{
    ob.bulk = b->max_size < BULK ? b->max_size : BULK;
    if (!(ob.buf = malloc(BULK)))
        bench_check(b, FLIT_ERR_NO_MEMORY, "malloc");
    memset(ob.buf, 0x6b, BULK);
    bench_check(b, flit_objects_create(b->ep, &ob.objs), "flit_objects_create");
    bench_check(b,
                flit_object_create(ob.objs, 1, &type, NULL, 0, FLIT_OBJECT_OWNED, PEER,
                                   NULL, 0, &ob.owned),
                "flit_object_create (owned)");
    bench_check(b,
                flit_object_create(ob.objs, 2, &type, NULL, 0, FLIT_OBJECT_REPLICATED,
                                   PEER, NULL, 0, &ob.rep),
                "flit_object_create (replicated)");
    for (int i = 0; i < 2; i++)
        bench_check(b,
                    flit_object_create(ob.objs, 3 + (uint32_t)i, i ? &big_type : &type,
                                       NULL, 0, FLIT_OBJECT_AUTO, PEER, NULL, 0,
                                       &ob.moved[i]),
                    "flit_object_create (auto)");
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = 1};
    bench_check(b, flit_rpc_create(b->ep, &p, &ob.rpc), "flit_rpc_create");
    bench_check(b, flit_rpc_register(ob.rpc, 0, proc_null, NULL), "flit_rpc_register");
    bench_check(b, flit_groups_create(b->ep, &ob.gs), "flit_groups_create");
    bench_check(
        b, flit_group_create(ob.gs, GROUP_ID, NULL, 0, NULL, on_deliver, NULL, &ob.g),
        "flit_group_create");
}

void bench_object_close(bench_t *b)
{
    bench_check(b, flit_group_destroy(ob.g), "flit_group_destroy");
    bench_check(b, flit_groups_destroy(ob.gs), "flit_groups_destroy");
    bench_check(b, flit_rpc_destroy(ob.rpc), "flit_rpc_destroy");
    bench_check(b, flit_object_destroy(ob.rep), "flit_object_destroy");
    for (int i = 0; i < 2; i++)
        bench_check(b, flit_object_destroy(ob.moved[i]), "flit_object_destroy");
    bench_check(b, flit_object_destroy(ob.owned), "flit_object_destroy");
    bench_check(b, flit_objects_destroy(ob.objs), "flit_objects_destroy");
    free(ob.buf);
}

/* ---------------------------------------------------------------- rank 0 */

struct point {
    bench_t *b;
    flit_object_t *o;
    size_t len; /* argument bytes */
};

/* n operations on p->o: ROI for the owned object, GOI for the replicated. */
static uint64_t run_invoke(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    unsigned op = p->len ? OP_BULK : OP_NULL;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        bench_check(p->b, flit_object_invoke(p->o, op, ob.buf, p->len, NULL, 0, NULL),
                    "flit_object_invoke");
    return bench_now_ns() - t0;
}

static uint64_t run_rpc(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    struct iovec q = {ob.buf, p->len};
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        bench_check(
            p->b, flit_rpc_call(ob.rpc, PEER, 0, &q, p->len ? 1 : 0, NULL, 0, NULL, NULL),
            "flit_rpc_call");
    return bench_now_ns() - t0;
}

static uint64_t run_mcast(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t want = ob.delivered + 1;
        bench_check(p->b, flit_group_send(ob.g, ob.buf, p->len), "flit_group_send");
        while (ob.delivered < want)
            bench_check(p->b, flit_poll(p->b->ep), "flit_poll");
    }
    return bench_now_ns() - t0;
}

/* n placement switches of p->o (ob.moved[p->len != 8]): pinned to rank 0
   (from replicated: installed where the request is delivered, no state
   moves) and back to the replicas (rank 0 multicasts the state), in turn;
   each returns once installed here. */
static uint64_t run_switch(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    bool *owned = &ob.moved_owned[p->o == ob.moved[1]];
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        *owned = !*owned;
        bench_check(p->b,
                    flit_object_place(p->o,
                                      *owned ? FLIT_OBJECT_OWNED : FLIT_OBJECT_REPLICATED,
                                      flit_rank(0)),
                    "flit_object_place");
    }
    return bench_now_ns() - t0;
}

static uint64_t run_read(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    int64_t v;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        bench_check(p->b,
                    flit_object_invoke(ob.rep, OP_READ, NULL, 0, &v, sizeof v, NULL),
                    "flit_object_invoke (read)");
    return bench_now_ns() - t0;
}

static uint64_t run_plain(void *ctx, uint64_t n)
{
    (void)ctx;
    volatile int64_t sink = 0;
    int64_t v;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        plain_read(&ob.state, &v);
        sink += v;
    }
    (void)sink;
    return bench_now_ns() - t0;
}

/* One figure beside its baseline, measured alternately until clean. */
static double pair(const struct bench_io *io, bench_run_fn fn, bench_run_fn base_fn,
                   struct point *p, bool bulk, const char *name, const char *fig,
                   const char *base_name, const char *base_fig, enum bench_unit u)
{
    uint64_t ns = bulk ? io->bw_ns : io->lat_ns;
    int reps = bulk ? io->bw_reps : io->lat_reps;
    bench_measure(fn, p, ns / 4, 1, 1, OPS_MAX); /* free lists grow here */
    if (bulk) { /* and the group's: members keep a window's worth of the newest
                   deliveries, and until malloc reuses their blocks each 1 MiB
                   message is fresh pages (first touches, slow on a VM) */
        fn(p, WARM_BULK);
        base_fn(p, WARM_BULK);
    }
    double v, base;
    do {
        io->begin(io->run);
        base = bench_measure(base_fn, p, ns, reps, 1, OPS_MAX);
        v = bench_measure(fn, p, ns, reps, 1, OPS_MAX);
    } while (io->again(io->run));
    double size = bulk ? (double)p->len : -1;
    if (u == BENCH_U_MBS) {
        v = (double)p->len * 1e3 / v;
        base = (double)p->len * 1e3 / base;
    } else {
        v /= 1e3;
        base /= 1e3;
    }
    base = io->emit(io->run, base_name, base_fig, size, base, NAN, NAN, u);
    return io->emit(io->run, name, fig, size, v, base, size, u);
}

void bench_object_section(bench_t *b, const struct bench_io *io)
{
    struct point p = {.b = b, .o = ob.owned, .len = 0};
    io->title(io->run,
              "Objects: an empty operation, owned by rank 1 (ROI), replicated (GOI)",
              "ROI: the null RPC of this run (target: ratio at most 1.15); GOI: a group "
              "send delivered back to its sender, same members (target 1.15); Orca "
              "(Bal et al., Myrinet): ratio = Orca / flit",
              false);
    double roi =
        pair(io, run_invoke, run_rpc, &p, false, "object_roi", "ROI (owned, empty)",
             "object_null_rpc", "null RPC round trip", BENCH_U_US);
    io->emit(io->run, "orca_roi", "Orca '96 ROI (ratio: / flit)", -1, ORCA_ROI_US, roi,
             -1, BENCH_U_US);
    p.o = ob.rep;
    double goi = pair(io, run_invoke, run_mcast, &p, false, "object_goi",
                      "GOI (replicated write, empty)", "object_group_send",
                      "group send, delivered back", BENCH_U_US);
    io->emit(io->run, "orca_goi", "Orca '96 GOI (ratio: / flit)", -1, ORCA_GOI_US, goi,
             -1, BENCH_U_US);

    p.len = ob.bulk;
    p.o = ob.owned;
    io->title(io->run, "Objects: throughput with a 1 MiB argument",
              "ROI: an RPC with a request of the same size; GOI: a group message of the "
              "same size delivered back to its sender, this run",
              false);
    pair(io, run_invoke, run_rpc, &p, true, "object_roi_bulk", "ROI, argument",
         "object_rpc_bulk", "RPC, request", BENCH_U_MBS);
    p.o = ob.rep;
    pair(io, run_invoke, run_mcast, &p, true, "object_goi_bulk", "GOI, argument",
         "object_group_bulk", "group message", BENCH_U_MBS);

    p.len = 0;
    io->title(io->run, "Objects: a local read of a replicated object (8 bytes of state)",
              "a plain function call reading the same state (target: within 50 ns)",
              false);
    pair(io, run_read, run_plain, &p, false, "object_local_read", "replicated read",
         "object_plain_call", "plain function call", BENCH_U_US);

    io->title(
        io->run,
        "Objects: a placement switch (FLIT_OBJECT_AUTO), between replicated and "
        "owned by rank 0 in turn",
        "a group send of the state's size delivered back to its sender, this run "
        "(a switch to owned is one ordered request; back to replicated, the request "
        "and the owner's multicast of the state)",
        false);
    p.o = ob.moved[0];
    p.len = sizeof(int64_t);
    pair(io, run_switch, run_mcast, &p, false, "object_switch_8", "switch, 8 B of state",
         "object_switch_mcast_8", "group send, 8 B", BENCH_U_US);
    if (b->max_size >= SWITCH_BIG) {
        p.o = ob.moved[1];
        p.len = SWITCH_BIG;
        pair(io, run_switch, run_mcast, &p, false, "object_switch_64k",
             "switch, 64 KiB of state", "object_switch_mcast_64k", "group send, 64 KiB",
             BENCH_U_US);
    }
}
