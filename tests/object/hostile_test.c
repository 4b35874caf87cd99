/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A member's malformed messages never stop an object's other members
 * (issue 36, item 6). 2 ranks. Rank 0 makes a replicated object (one add
 * operation of 8 bytes, one read). Rank 1 sets up what flit_objects_create
 * sets up (an RPC object of one procedure, then a group set: the same
 * handler indices on every rank) and joins the object's group itself, so
 * that it can multicast to rank 0's object what the object layer never
 * sends:
 *
 *  - a piece of a write whose total is 2^62 bytes (546760f: abort() in
 *    part_deliver when that malloc failed);
 *  - a piece larger than the write it says it is part of (546760f:
 *    abort());
 *  - a message shorter than the object header; another object's id; an
 *    operation the type lacks; a read operation; an add longer than its
 *    arg_max; the epoch word of an AUTO object on a pinned one (seen as a
 *    long argument); a last piece for no write.
 *
 * Then a well-formed add of 5. Rank 0 must apply that add and nothing else
 * (the value is 5), count each refusal (flit_object_stats.refused), and go
 * on: a write of its own and the collective destroy complete.
 * Each rank prints "object hostile: rank R OK".
 */
#include <flit/group.h>
#include <flit/object.h>
#include <flit/rpc.h>

#include "mp.h"

#define OBJ_ID 7u

/* The object layer's words before a group message's bytes (its wire). */
struct wire_hdr {
    uint32_t id;
    uint32_t op;
    uint64_t token;
};

enum { OP_ADD, OP_GET, NOPS };
#define OP_PART  0xfffffff3u /* a piece of a write larger than one message */
#define OP_SWAP  0xfffffff1u /* a placement switch: AUTO objects only */
#define OP_OTHER 77u         /* no operation of the type */

static size_t add(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)res, (void)user;
    if (len != sizeof(int64_t))
        FAIL("add applied with %zu bytes of argument", len);
    int64_t by;
    memcpy(&by, arg, sizeof by);
    *(int64_t *)state += by;
    return 0;
}

static size_t get(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(int64_t));
    return sizeof(int64_t);
}

static const flit_object_op_t ops[NOPS] = {
    [OP_ADD] = {.kind = FLIT_OBJECT_WRITE, .fn = add, .arg_max = sizeof(int64_t)},
    [OP_GET] = {.kind = FLIT_OBJECT_READ, .fn = get, .res_max = sizeof(int64_t)},
};
static const flit_object_type_t type = {
    .state_size = sizeof(int64_t), .ops = ops, .nops = NOPS};

static const flit_rank_t members[2] = {{0}, {1}};

static int64_t value(flit_object_t *o)
{
    int64_t v = -1;
    CHECK_OK(flit_object_invoke(o, OP_GET, NULL, 0, &v, sizeof v, NULL));
    return v;
}

static flit_object_stats_t stats(flit_object_t *o)
{
    flit_object_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_object_stats(o, &s));
    return s;
}

/* Rank 0: the object, and what it makes of rank 1's messages. */
static void victim(flit_ep_t *ep, unsigned refusals)
{
    flit_objects_t *objs;
    flit_object_t *o;
    CHECK_OK(flit_objects_create(ep, &objs));
    CHECK_OK(flit_object_create(objs, OBJ_ID, &type, members, 2, FLIT_OBJECT_REPLICATED,
                                flit_rank(0), NULL, 0, &o));
    MP_WAIT(ep, value(o) == 5); /* rank 1's one good write */
    flit_object_stats_t s = stats(o);
    if (s.refused != refusals)
        FAIL("%llu messages refused, %u sent", (unsigned long long)s.refused, refusals);
    CHECK(s.missed == 0 && s.applied >= 1);
    int64_t two = 2;
    CHECK_OK(flit_object_invoke(o, OP_ADD, &two, sizeof two, NULL, 0, NULL));
    CHECK(value(o) == 7);
    CHECK_OK(flit_barrier(ep)); /* rank 1 saw the add too */
    CHECK_OK(flit_object_destroy(o));
    CHECK_OK(flit_objects_destroy(objs));
}

static void send_raw(flit_group_t *g, uint32_t id, uint32_t op, const void *body,
                     size_t len)
{
    struct wire_hdr h = {id, op, 0x1234};
    struct iovec v[2] = {{&h, sizeof h}, {(void *)body, len}};
    CHECK_OK(flit_group_sendv(g, v, len ? 2 : 1));
}

/* A piece of a write: [hdr][uint64 total][bytes]. */
static void send_part(flit_group_t *g, uint64_t total, size_t piece)
{
    uint8_t body[sizeof total + 64] = {0};
    CHECK(piece <= 64);
    memcpy(body, &total, sizeof total);
    send_raw(g, OBJ_ID, OP_PART, body, sizeof total + piece);
}

static _Atomic int64_t heard; /* the adds rank 1 saw delivered */

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g, (void)user;
    struct wire_hdr h;
    int64_t by;
    if (total == sizeof h + sizeof by && flit_group_recv(m, &h, sizeof h) == FLIT_OK &&
        h.id == OBJ_ID && h.op == OP_ADD && flit_group_recv(m, &by, sizeof by) == FLIT_OK)
        heard += by;
}

/* Rank 1: malformed messages, then one good add; the number of malformed
   ones. */
static unsigned attack(flit_group_t *g)
{
    int64_t five = 5;
    uint8_t long_arg[16] = {0}, shorty[4] = {1, 2, 3, 4};
    struct iovec v = {shorty, sizeof shorty};
    send_part(g, 1ull << 62, 8);                             /* beyond any memory */
    send_part(g, 4, 16);                                     /* larger than its write */
    CHECK_OK(flit_group_sendv(g, &v, 1));                    /* shorter than a header */
    send_raw(g, OBJ_ID + 1, OP_ADD, &five, sizeof five);     /* another object's */
    send_raw(g, OBJ_ID, OP_OTHER, &five, sizeof five);       /* no such operation */
    send_raw(g, OBJ_ID, OP_GET, &five, sizeof five);         /* a read, multicast */
    send_raw(g, OBJ_ID, OP_ADD, long_arg, sizeof long_arg);  /* above arg_max */
    send_raw(g, OBJ_ID, OP_SWAP, long_arg, sizeof long_arg); /* AUTO objects only */
    send_raw(g, OBJ_ID, OP_PART, &five, sizeof five);        /* a piece of no bytes */
    send_raw(g, OBJ_ID, OP_ADD, &five, sizeof five);         /* the good one */
    return 9;
}

static void attacker(flit_ep_t *ep, unsigned *refusals)
{
    flit_rpc_t *rpc;
    flit_groups_t *gs;
    flit_group_t *g;
    flit_rpc_params_t rp = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = 1};
    CHECK_OK(flit_rpc_create(ep, &rp, &rpc));
    CHECK_OK(flit_groups_create(ep, &gs));
    CHECK_OK(flit_group_create(gs, OBJ_ID, members, 2, NULL, on_deliver, NULL, &g));
    *refusals = attack(g);
    MP_WAIT(ep, heard == 5 + 2); /* its good add, and rank 0's */
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_group_destroy(g));
    CHECK_OK(flit_rpc_destroy(rpc));
    CHECK_OK(flit_groups_destroy(gs));
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx;
    if (flit_job_size() != 2)
        FAIL("run with 2 ranks");
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    /* The refusals rank 1 sends, told to rank 0 the plain way: the count
       is fixed by attack(), the same on both ranks. */
    unsigned refusals = 9;
    if (me == 0) {
        victim(ep, refusals);
    } else {
        unsigned sent;
        attacker(ep, &sent);
        CHECK(sent == refusals);
    }
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    printf("object hostile: rank %u OK\n", me);
    return 0;
}
