/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared objects (<flit/object.h>) under flitrun, replicated (--replicated),
 * owned by the last rank (--owned) or placed by the runtime (--auto: both
 * the counter's and the buffer's writes move it to an owner mid-stream):
 *   --test counter  every rank (and --threads threads on each) adds 1 to one
 *                   object --count times and reads it between; each add's
 *                   result is larger than the thread's last, a read never
 *                   sees half an operation, the final value is exact
 *   --test buffer   a bounded buffer of 4 with guarded put and get: the
 *                   first half of the ranks put --count items each, the
 *                   others get them all; nothing lost, doubled or reordered
 *                   per producer (a replicated tally object adds it up)
 *   --test gather   arguments of 0 B to --max bytes gathered from three
 *                   pieces, results scattered into three, checked by pattern
 *   --test errors   every bad argument of every call, with its status
 */
#include <flit/object.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "mp.h"

static flit_ep_t *ep;
static flit_objects_t *objs;
static uint32_t nranks, me;
static bool owned, autop;

#include "common.h"

static flit_object_t *make(uint32_t id, const flit_object_type_t *t, const void *init,
                           size_t len)
{
    flit_object_t *o;
    CHECK_OK(flit_object_create(objs, id, t, NULL, 0,
                                autop   ? FLIT_OBJECT_AUTO
                                : owned ? FLIT_OBJECT_OWNED
                                        : FLIT_OBJECT_REPLICATED,
                                flit_rank(nranks - 1), init, len, &o));
    return o;
}

/* ---------------------------------------------------------------- counter */

/* a and b are always equal between operations; add moves them one at a
   time, so a read that ran inside an add would see them differ. */
struct pair {
    volatile int64_t a, b;
};

static size_t pair_add(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)user;
    struct pair *p = state;
    int64_t by;
    CHECK(len == sizeof by);
    memcpy(&by, arg, sizeof by);
    for (int64_t i = 0; i < by; i++)
        p->a++;
    for (int64_t i = 0; i < by; i++)
        p->b++;
    int64_t v = p->a;
    memcpy(res, &v, sizeof v);
    return sizeof v;
}

static size_t pair_get(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    struct pair *p = state;
    int64_t v[2] = {p->a, p->b};
    memcpy(res, v, sizeof v);
    return sizeof v;
}

static void pair_init(void *state, const void *arg, size_t len, void *user)
{
    (void)user;
    struct pair *p = state;
    CHECK(len == sizeof(int64_t));
    memcpy((void *)&p->a, arg, sizeof(int64_t));
    p->b = p->a;
}

static const flit_object_op_t pair_ops[] = {
    {FLIT_OBJECT_WRITE, sizeof(int64_t), sizeof(int64_t), pair_add, NULL},
    {FLIT_OBJECT_READ, 0, 2 * sizeof(int64_t), pair_get, NULL},
};
static const flit_object_type_t pair_type = {
    sizeof(struct pair), pair_init, NULL, pair_ops, 2, NULL};

static void *count_worker(void *arg)
{
    struct worker *w = arg;
    int64_t last = 0, by = 1;
    for (uint64_t i = 0; i < w->count; i++) {
        int64_t v, g[2];
        size_t n;
        CHECK_OK(flit_object_invoke(w->o, 0, &by, sizeof by, &v, sizeof v, &n));
        CHECK(n == sizeof v && v > last);
        last = v;
        if (i % 4 == 0) {
            CHECK_OK(flit_object_invoke(w->o, 1, NULL, 0, g, sizeof g, &n));
            CHECK(n == sizeof g && g[0] == g[1] && g[0] >= 1000);
        }
    }
    return NULL;
}

static void test_counter(uint64_t count, unsigned threads)
{
    int64_t base = 1000;
    flit_object_t *o = make(7, &pair_type, &base, sizeof base);
    run_workers(count_worker, o, count, threads);
    CHECK_OK(flit_barrier(ep));
    /* A write after the barrier is ordered after every write before it. */
    int64_t zero = 0, v, g[2];
    int64_t want = base + (int64_t)(count * threads * nranks);
    CHECK_OK(flit_object_invoke(o, 0, &zero, sizeof zero, &v, sizeof v, NULL));
    CHECK(v == want);
    CHECK_OK(flit_object_invoke(o, 1, NULL, 0, g, sizeof g, NULL));
    CHECK(g[0] == want && g[1] == want);
    flit_object_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_object_stats(o, &s));
    CHECK(s.writes == count * threads + 1);
    if (autop) {
        /* 4 writes to a read: the runtime moved it to an owner */
        CHECK(s.placement == FLIT_OBJECT_AUTO && s.switches >= 1);
        CHECK(s.strategy == FLIT_OBJECT_OWNED && s.owner.idx < nranks);
    } else {
        CHECK(s.strategy == (owned ? FLIT_OBJECT_OWNED : FLIT_OBJECT_REPLICATED));
        CHECK(s.placement == s.strategy && s.switches == 0 && s.retries == 0);
    }
    if (autop) {
        CHECK(s.local <= s.reads + s.writes + s.retries);
    } else if (!owned) {
        CHECK(s.local == s.reads); /* reads of a replica never leave */
        /* Others' last writes may still be on their way here. */
        CHECK(s.applied >= s.reads + count * threads * nranks + 1 &&
              s.applied <= s.reads + (count * threads + 1) * nranks);
    } else if (me == nranks - 1) {
        CHECK(s.local == s.reads + s.writes);
    } else {
        CHECK(s.local == 0 && s.applied == 0);
    }
    CHECK_OK(flit_object_destroy(o));
}

/* ---------------------------------------------------------------- buffer */

#define BUF_CAP 4
struct ring {
    int64_t item[BUF_CAP];
    uint32_t head, count;
};

static int can_put(const void *state, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len, (void)user;
    return ((const struct ring *)state)->count < BUF_CAP;
}

static int can_get(const void *state, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len, (void)user;
    return ((const struct ring *)state)->count > 0;
}

static size_t ring_put(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)res, (void)user;
    struct ring *r = state;
    CHECK(len == sizeof(int64_t) && r->count < BUF_CAP);
    memcpy(&r->item[(r->head + r->count) % BUF_CAP], arg, sizeof(int64_t));
    r->count++;
    return 0;
}

static size_t ring_get(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    struct ring *r = state;
    CHECK(r->count > 0);
    memcpy(res, &r->item[r->head], sizeof(int64_t));
    r->head = (r->head + 1) % BUF_CAP;
    r->count--;
    return sizeof(int64_t);
}

static const flit_object_op_t ring_ops[] = {
    {FLIT_OBJECT_WRITE, sizeof(int64_t), 0, ring_put, can_put},
    {FLIT_OBJECT_WRITE, 0, sizeof(int64_t), ring_get, can_get},
};
static const flit_object_type_t ring_type = {
    sizeof(struct ring), NULL, NULL, ring_ops, 2, NULL};

/* The consumers' tally: items, their sum and sum of squares. */
static size_t tally_add(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)user;
    uint64_t *t = state, a[3];
    CHECK(len == sizeof a);
    memcpy(a, arg, sizeof a);
    for (int i = 0; i < 3; i++)
        t[i] += a[i];
    memcpy(res, t, sizeof a);
    return sizeof a;
}

static const flit_object_op_t tally_ops[] = {
    {FLIT_OBJECT_WRITE, 3 * sizeof(uint64_t), 3 * sizeof(uint64_t), tally_add, NULL},
};
static const flit_object_type_t tally_type = {
    3 * sizeof(uint64_t), NULL, NULL, tally_ops, 1, NULL};

static void test_buffer(uint64_t count)
{
    CHECK(nranks >= 2);
    flit_object_t *buf = make(1, &ring_type, NULL, 0);
    flit_object_t *tally;
    CHECK_OK(flit_object_create(objs, 2, &tally_type, NULL, 0, FLIT_OBJECT_REPLICATED,
                                flit_rank(0), NULL, 0, &tally));
    uint32_t producers = nranks / 2, consumers = nranks - producers;
    uint64_t total = producers * count;
    if (me < producers) {
        for (uint64_t i = 0; i < count; i++) {
            int64_t item = (int64_t)(me * 1000000000ull + i);
            size_t n = 99;
            CHECK_OK(flit_object_invoke(buf, 0, &item, sizeof item, NULL, 0, &n));
            CHECK(n == 0);
        }
    } else {
        uint32_t c = me - producers;
        uint64_t mine = total / consumers + (c < total % consumers ? 1 : 0);
        int64_t last[64];
        for (uint32_t p = 0; p < producers; p++)
            last[p] = -1;
        uint64_t t[3] = {0, 0, 0};
        for (uint64_t i = 0; i < mine; i++) {
            int64_t item;
            size_t n;
            CHECK_OK(flit_object_invoke(buf, 1, NULL, 0, &item, sizeof item, &n));
            CHECK(n == sizeof item);
            uint32_t p = (uint32_t)(item / 1000000000);
            int64_t seq = item % 1000000000;
            CHECK(p < producers && seq > last[p] && (uint64_t)seq < count);
            last[p] = seq;
            t[0]++;
            t[1] += (uint64_t)item;
            t[2] += (uint64_t)item * (uint64_t)item;
        }
        CHECK_OK(flit_object_invoke(tally, 0, t, sizeof t, t, sizeof t, NULL));
    }
    CHECK_OK(flit_barrier(ep));
    uint64_t zero[3] = {0, 0, 0}, t[3];
    CHECK_OK(flit_object_invoke(tally, 0, zero, sizeof zero, t, sizeof t, NULL));
    uint64_t want[3] = {0, 0, 0};
    for (uint32_t p = 0; p < producers; p++)
        for (uint64_t i = 0; i < count; i++) {
            uint64_t item = p * 1000000000ull + i;
            want[0]++;
            want[1] += item;
            want[2] += item * item;
        }
    CHECK(t[0] == want[0] && t[1] == want[1] && t[2] == want[2]);
    CHECK(want[0] == total);
    if (autop) {
        /* every operation a write: moved to an owner, guards waiting across */
        flit_object_stats_t s = {.struct_size = sizeof s};
        CHECK_OK(flit_object_stats(buf, &s));
        CHECK(s.placement == FLIT_OBJECT_AUTO && s.switches >= 1);
    }
    CHECK_OK(flit_object_destroy(tally));
    CHECK_OK(flit_object_destroy(buf));
}

/* ---------------------------------------------------------------- gather */

/* A blob: stores its argument, answers a checksum; fetch answers it back. */
struct blob {
    size_t len;
    unsigned char *data;
};

static void blob_init(void *state, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len;
    struct blob *b = state;
    b->data = malloc(*(const size_t *)user);
    CHECK(b->data);
}

static void blob_fini(void *state, void *user)
{
    (void)user;
    free(((struct blob *)state)->data);
}

static size_t blob_store(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)user;
    struct blob *b = state;
    if (len)
        memcpy(b->data, arg, len);
    b->len = len;
    uint32_t c = test_checksum(arg, len);
    memcpy(res, &c, sizeof c);
    return sizeof c;
}

static size_t blob_fetch(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    struct blob *b = state;
    if (b->len)
        memcpy(res, b->data, b->len);
    return b->len;
}

static size_t blob_nothing(void *state, const void *arg, size_t len, void *res,
                           void *user)
{
    (void)state, (void)arg, (void)len, (void)res, (void)user;
    return 0;
}

static void split3(struct iovec *v, unsigned char *p, size_t n, uint64_t seed)
{
    size_t a = n ? (size_t)(seed % (n + 1)) : 0,
           b = n - a ? (size_t)(seed / 7 % (n - a + 1)) : 0;
    v[0] = (struct iovec){p, a};
    v[1] = (struct iovec){p + a, b};
    v[2] = (struct iovec){p + a + b, n - a - b};
}

static void test_gather(size_t max)
{
    flit_object_op_t ops[] = {
        {FLIT_OBJECT_WRITE, max, sizeof(uint32_t), blob_store, NULL},
        {FLIT_OBJECT_READ, 0, max, blob_fetch, NULL},
        {FLIT_OBJECT_WRITE, 0, 0, blob_nothing, NULL},
    };
    flit_object_type_t type = {sizeof(struct blob), blob_init, blob_fini, ops, 3, &max};
    flit_object_t *o = make(3, &type, NULL, 0);
    unsigned char *in = malloc(max ? max : 1), *out = malloc(max + 16);
    CHECK(in && out);
    size_t sizes[] = {0, 1, 7, 100, 4095, 4096, 4097, 65536, 100000, max};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k] <= max ? sizes[k] : max;
        /* Each rank in turn writes; every rank reads it back. */
        for (uint32_t w = 0; w < nranks; w++) {
            uint64_t seed = mp_mix(k, w, n, 5);
            if (w == me) {
                mp_pattern_fill(in, n, seed);
                struct iovec a[3], r[3];
                split3(a, in, n, seed);
                uint32_t c = 0;
                unsigned char cb[4];
                r[0] = (struct iovec){cb, 1};
                r[1] = (struct iovec){cb + 1, 0};
                r[2] = (struct iovec){cb + 1, 3};
                size_t rl;
                CHECK_OK(flit_object_invokev(o, 0, a, 3, r, 3, &rl));
                memcpy(&c, cb, sizeof c);
                CHECK(rl == sizeof c && c == test_checksum(in, n));
            }
            CHECK_OK(flit_barrier(ep));
            /* A replica may not have applied the write yet: a write of
               ours (that changes nothing) is ordered after it. */
            if (!owned)
                CHECK_OK(flit_object_invoke(o, 2, NULL, 0, NULL, 0, NULL));
            mp_pattern_fill(in, n, seed);
            struct iovec r[3];
            memset(out, 0xee, n + 16);
            split3(r, out, n + 16, seed / 3);
            size_t rl;
            CHECK_OK(flit_object_invokev(o, 1, NULL, 0, r, 3, &rl));
            CHECK(rl == n && memcmp(in, out, n) == 0 && out[n] == 0xee);
            CHECK_OK(flit_barrier(ep));
        }
    }
    free(in);
    free(out);
    CHECK_OK(flit_object_destroy(o));
}

/* ---------------------------------------------------------------- errors */

/* From inside a handler: a read of a replica or of an owned object here
   runs; what must send or wait answers FLIT_ERR_IN_HANDLER. */
static flit_object_t *in_handler_obj;
static flit_status in_handler_st[3];
static atomic_int in_handler_done;

static void in_handler(flit_token_t *t, void *buf, size_t n, const uint32_t *a,
                       unsigned na, void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    int64_t one = 1, v, g[2];
    in_handler_st[0] = flit_object_invoke(in_handler_obj, 1, NULL, 0, g, sizeof g, NULL);
    in_handler_st[1] = flit_object_invoke(in_handler_obj, 0, &one, 8, &v, 8, NULL);
    in_handler_st[2] =
        flit_object_place(in_handler_obj, FLIT_OBJECT_REPLICATED, flit_rank(0));
    atomic_store(&in_handler_done, 1);
}

/* Halves of a state's marshalling, for the bad types: never called. */
static size_t no_pack(const void *state, void *buf, size_t cap, void *user)
{
    (void)state, (void)buf, (void)cap, (void)user;
    FAIL("pack called");
    return 0;
}

static void no_unpack(void *state, const void *buf, size_t len, void *user)
{
    (void)state, (void)buf, (void)len, (void)user;
    FAIL("unpack called");
}

static void test_errors(void)
{
    flit_objects_t *x;
    CHECK_ST(flit_objects_create(NULL, &x), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_objects_create(ep, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_objects_destroy(NULL), FLIT_ERR_INVALID_ARG);

    flit_object_t *o = NULL;
    const flit_rank_t last = flit_rank(nranks - 1), outside = flit_rank(nranks);
    const flit_object_strategy R = FLIT_OBJECT_REPLICATED, O = FLIT_OBJECT_OWNED;
    int64_t one = 1;
    CHECK_ST(flit_object_create(NULL, 1, &pair_type, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, NULL, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, NULL, 0, R, last, &one, 8, NULL),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, NULL, 0, R, last, NULL, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, NULL, 2, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, NULL, 0, (flit_object_strategy)3,
                                last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    flit_object_type_t t = pair_type;
    t.nops = 0;
    CHECK_ST(flit_object_create(objs, 1, &t, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    t = pair_type;
    t.ops = NULL;
    CHECK_ST(flit_object_create(objs, 1, &t, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    flit_object_op_t bad[2] = {pair_ops[0], pair_ops[1]};
    t = pair_type;
    t.ops = bad;
    bad[1].fn = NULL;
    CHECK_ST(flit_object_create(objs, 1, &t, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    bad[1] = pair_ops[1];
    bad[0].kind = 2;
    CHECK_ST(flit_object_create(objs, 1, &t, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    /* pack without unpack, and the other way round */
    t = pair_type;
    t.pack = no_pack;
    CHECK_ST(flit_object_create(objs, 1, &t, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    t = pair_type;
    t.unpack = no_unpack;
    CHECK_ST(flit_object_create(objs, 1, &t, NULL, 0, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, NULL, 0, O, outside, &one, 8, &o),
             FLIT_ERR_RANK);
    flit_rank_t self[1] = {flit_rank(me)}, twice[2] = {flit_rank(me), flit_rank(me)};
    flit_rank_t far[2] = {flit_rank(me), outside}, other[1] = {flit_rank(me ? 0 : 1)};
    CHECK_ST(flit_object_create(objs, 1, &pair_type, self, 1, O, flit_rank(me ? 0 : 1),
                                &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, twice, 2, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, other, 1, R, last, &one, 8, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_create(objs, 1, &pair_type, far, 2, R, last, &one, 8, &o),
             FLIT_ERR_RANK);
    CHECK(o == NULL);

    /* A live object: each strategy, the owner and another member; calls
       from inside an active-message handler (below). */
    for (int k = 0; k < 2; k++) {
        owned = k == 1;
        /* A new id each time: an id is free again only once every member's
           destroy of the object that had it has returned. */
        uint32_t id = 9 + (uint32_t)k;
        o = make(id, &pair_type, &one, sizeof one);
        flit_object_t *again;
        CHECK_ST(
            flit_object_create(objs, id, &pair_type, NULL, 0, R, last, &one, 8, &again),
            FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_objects_destroy(objs), FLIT_ERR_AGAIN);
        flit_object_t *f = NULL;
        CHECK_ST(flit_object_lookup(NULL, id, &f), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_lookup(objs, id, NULL), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_lookup(objs, id + 100, &f), FLIT_ERR_INVALID_ARG);
        CHECK_OK(flit_object_lookup(objs, id, &f));
        CHECK(f == o && flit_object_id(f) == id && flit_object_id(NULL) == UINT32_MAX);

        int64_t v = 0, g[2];
        size_t n = 0;
        struct iovec a = {&one, sizeof one}, r = {&v, sizeof v}, nb = {NULL, 8};
        CHECK_ST(flit_object_invoke(NULL, 0, &one, 8, &v, 8, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invoke(o, 2, &one, 8, &v, 8, &n), FLIT_ERR_BAD_HANDLER);
        CHECK_ST(flit_object_invoke(o, 0, NULL, 8, &v, 8, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invoke(o, 0, &one, 8, NULL, 8, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invoke(o, 0, &one, 9, &v, 8, &n), FLIT_ERR_TOO_LARGE);
        CHECK_ST(flit_object_invoke(o, 1, &one, 1, g, sizeof g, &n), FLIT_ERR_TOO_LARGE);
        CHECK_ST(flit_object_invokev(o, 0, &a, -1, &r, 1, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invokev(o, 0, NULL, 1, &r, 1, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invokev(o, 0, &nb, 1, &r, 1, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invokev(o, 0, &a, 1, &r, -1, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invokev(o, 0, &a, 1, NULL, 1, &n), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_invokev(o, 0, &a, 1, &nb, 1, &n), FLIT_ERR_INVALID_ARG);
        /* A result longer than the room: applied, the first bytes there. */
        g[0] = g[1] = -1;
        CHECK_ST(flit_object_invoke(o, 1, NULL, 0, g, 8, &n), FLIT_ERR_TOO_LARGE);
        CHECK(n == 16 && g[0] >= 1 && g[0] <= 1 + (int64_t)nranks && g[1] == -1);
        CHECK_ST(flit_object_invoke(o, 0, &one, 8, NULL, 0, &n), FLIT_ERR_TOO_LARGE);
        CHECK(n == 8);
        CHECK_OK(flit_barrier(ep));
        CHECK_OK(flit_object_invoke(o, 0, &one, 8, &v, 8, &n));
        /* (the owner may have made its write from a handler, below) */
        CHECK(v > 1 + (int64_t)nranks && v <= 1 + 2 * (int64_t)nranks + (owned ? 1 : 0));
        in_handler_obj = o;
        atomic_store(&in_handler_done, 0);
        CHECK_OK(flit_am_short(ep, flit_rank(me), flit_handler(1), NULL, 0, 0));
        MP_WAIT(ep, atomic_load(&in_handler_done));
        bool here = !owned || me == nranks - 1;
        CHECK_ST(in_handler_st[0], here ? FLIT_OK : FLIT_ERR_IN_HANDLER);
        /* The owner's own write runs locally; any other must send. */
        CHECK_ST(in_handler_st[1], owned && here ? FLIT_OK : FLIT_ERR_IN_HANDLER);
        CHECK_OK(flit_barrier(ep));
        int64_t zero = 0; /* a write: ordered after every one before the barrier */
        CHECK_OK(flit_object_invoke(o, 0, &zero, 8, &v, 8, &n));
        CHECK(v == 1 + 2 * (int64_t)nranks + (owned ? 1 : 0));
        /* Shorter than any release's struct, or longer than this one's. */
        flit_object_stats_t s = {.struct_size =
                                     offsetof(flit_object_stats_t, partial_writes) - 1};
        CHECK_ST(flit_object_stats(o, &s), FLIT_ERR_INVALID_ARG);
        s.struct_size = sizeof s + 1;
        CHECK_ST(flit_object_stats(o, &s), FLIT_ERR_INVALID_ARG);
        /* A program built before partial_writes: what it knows, no more. */
        s = (flit_object_stats_t){.struct_size =
                                      offsetof(flit_object_stats_t, partial_writes),
                                  .partial_writes = 77,
                                  .partials_dropped = 78};
        CHECK_OK(flit_object_stats(o, &s));
        CHECK(s.struct_size == offsetof(flit_object_stats_t, partial_writes) &&
              s.partial_writes == 77 && s.partials_dropped == 78 && s.writes >= 1);
        CHECK_ST(flit_object_stats(NULL, &s), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_object_stats(o, NULL), FLIT_ERR_INVALID_ARG);
        s.struct_size = sizeof s;
        CHECK_OK(flit_object_stats(o, &s));
        CHECK(s.placement == (owned ? O : R) && s.switches == 0);
        /* A pinned object has no placement to change. */
        CHECK_ST(flit_object_place(o, R, last), FLIT_ERR_NOT_SUPPORTED);
        CHECK_OK(flit_barrier(ep));
        CHECK_OK(flit_object_destroy(o));
    }
    CHECK_ST(flit_object_destroy(NULL), FLIT_ERR_INVALID_ARG);
    owned = false;

    /* flit_object_place, on an AUTO object of the whole job and on one of
       this rank alone */
    const flit_object_strategy A = FLIT_OBJECT_AUTO;
    CHECK_OK(flit_object_create(objs, 20, &pair_type, NULL, 0, A, outside, &one, 8, &o));
    flit_object_t *solo;
    CHECK_OK(flit_object_create(objs, 21, &pair_type, self, 1, A, last, &one, 8, &solo));
    CHECK_ST(flit_object_place(NULL, R, last), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_place(o, (flit_object_strategy)3, last), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_object_place(o, O, outside), FLIT_ERR_RANK);
    CHECK_ST(flit_object_place(solo, O, flit_rank(me ? 0 : 1)), FLIT_ERR_INVALID_ARG);
    flit_object_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_object_stats(o, &s));
    CHECK(s.placement == A && s.strategy == R && s.owner.idx == UINT32_MAX &&
          s.switches == 0);
    /* Pinned by this rank alone, then handed back to the runtime. */
    CHECK_OK(flit_object_place(solo, O, flit_rank(me)));
    CHECK_OK(flit_object_stats(solo, &s));
    CHECK(s.placement == O && s.strategy == O && s.owner.idx == me && s.switches == 1);
    CHECK_OK(flit_object_place(solo, R, flit_rank(me)));
    CHECK_OK(flit_object_stats(solo, &s));
    CHECK(s.placement == R && s.strategy == R && s.switches == 2);
    CHECK_OK(flit_object_place(solo, A, outside)); /* the owner is not looked at */
    CHECK_OK(flit_object_stats(solo, &s));
    CHECK(s.placement == A && s.strategy == R && s.switches == 2);
    int64_t v;
    CHECK_OK(flit_object_invoke(solo, 0, &one, 8, &v, 8, NULL));
    CHECK(v == 2);
    in_handler_obj = o;
    atomic_store(&in_handler_done, 0);
    CHECK_OK(flit_am_short(ep, flit_rank(me), flit_handler(1), NULL, 0, 0));
    MP_WAIT(ep, atomic_load(&in_handler_done));
    CHECK_ST(in_handler_st[2], FLIT_ERR_IN_HANDLER);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_object_destroy(solo));
    CHECK_OK(flit_object_destroy(o));
}

/* ---------------------------------------------------------------- kill */

/* The last rank dies mid-stream: survivors agree on the replicated object
   (every copy the same value and history) and hear FLIT_ERR_PEER_DOWN from
   the object it owned, without hanging. */
static void test_kill(uint64_t count, uint64_t kill_after)
{
    CHECK(nranks >= 3 && kill_after < count);
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, on_returned, NULL));
    flit_object_t *rep, *own;
    CHECK_OK(flit_object_create(objs, 1, &hist_type, NULL, 0, FLIT_OBJECT_REPLICATED,
                                flit_rank(0), NULL, 0, &rep));
    CHECK_OK(flit_object_create(objs, 2, &pair_type, NULL, 0, FLIT_OBJECT_OWNED,
                                flit_rank(nranks - 1), &count, 8, &own));
    int64_t one = 1, v;
    CHECK_OK(flit_object_invoke(own, 0, &one, 8, &v, 8, NULL));
    /* every rank's call above answered before the owner may die: a victim
       running ahead (its writes need nobody else's turn) killed itself
       before a slow survivor's first call, which then read PEER_DOWN */
    CHECK_OK(flit_barrier(ep));
    for (uint64_t i = 0; i < count; i++) {
        if (me == nranks - 1 && i == kill_after)
            raise(SIGKILL); /* with writes of its own just applied */
        CHECK_OK(flit_object_invoke(rep, 0, &one, 8, NULL, 0, NULL));
    }
    /* the victim is gone before the survivors agree: one descheduled
       behind its 80th write wrote on while they compared what they saw */
    MP_WAIT(ep, atomic_load(&victim_down));
    uint64_t survivors = nranks - 1;
    struct hist h = survivors_agree(rep, survivors);
    CHECK(h.value >= (int64_t)(survivors * count) &&
          h.value <= (int64_t)(survivors * count + kill_after));
    int64_t g[2];
    CHECK_ST(flit_object_invoke(own, 1, NULL, 0, g, sizeof g, NULL), FLIT_ERR_PEER_DOWN);
    CHECK_ST(flit_object_invoke(own, 0, &one, 8, &v, 8, NULL), FLIT_ERR_PEER_DOWN);
    printf("object kill: rank %u: %lld, the same history as %llu of %llu survivors\n", me,
           (long long)h.value, (unsigned long long)h.agreed,
           (unsigned long long)survivors);
    flit_object_t *const mine[] = {own, rep};
    survivor_end(mine, 2, "object kill");
}

/* ---------------------------------------------------------------- partial */

/* A write of any length; the state keeps how many writes were applied and
   the length and checksum of the last. */
struct sums {
    uint64_t writes, len;
    uint32_t sum;
};

static size_t sums_store(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)res, (void)user;
    struct sums *s = state;
    s->writes++;
    s->len = len;
    s->sum = test_checksum(arg, len);
    return 0;
}

static size_t sums_get(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(struct sums));
    return sizeof(struct sums);
}

#define PARTIAL_BIG ((size_t)64 << 20)
static const flit_object_op_t sums_ops[] = {
    {FLIT_OBJECT_WRITE, PARTIAL_BIG, 0, sums_store, NULL},
    {FLIT_OBJECT_READ, 0, sizeof(struct sums), sums_get, NULL},
};
static const flit_object_type_t sums_type = {
    sizeof(struct sums), NULL, NULL, sums_ops, 2, NULL};

static atomic_int victim_pid;

static void on_pid(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *user)
{
    (void)t, (void)buf, (void)n, (void)user;
    CHECK(na == 1);
    atomic_store(&victim_pid, (int)a[0]);
}

static struct sums sums_read(flit_object_t *o)
{
    struct sums s;
    size_t n;
    CHECK_OK(flit_object_invoke(o, 1, NULL, 0, &s, sizeof s, &n));
    CHECK(n == sizeof s);
    return s;
}

/*
 * The last rank dies in the middle of a replicated write of 64 MiB (eight
 * group messages): rank 1 takes its first pieces, then stops taking any
 * (so that the group's credits hold the writer back before its last
 * piece), kills it, and waits on a pidfd for its end. The survivors never
 * apply that write, and each frees the pieces it holds when the view
 * without the writer is installed (not at destroy): partial_writes back to
 * 0, partials_dropped 1. Their copies stay writable and agree: three
 * writes (one before, one from each survivor after), none of them the big
 * one.
 */
static void test_partial(void)
{
    CHECK(nranks == 3);
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, on_returned, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(2), on_pid, NULL));
    flit_object_t *o;
    CHECK_OK(flit_object_create(objs, 9, &sums_type, NULL, 0, FLIT_OBJECT_REPLICATED,
                                flit_rank(0), NULL, 0, &o));
    unsigned char small[100];
    mp_pattern_fill(small, sizeof small, 9);
    if (me == 0)
        CHECK_OK(flit_object_invoke(o, 0, small, sizeof small, NULL, 0, NULL));
    if (me == 2) {
        uint32_t pid = (uint32_t)getpid();
        CHECK_OK(flit_am_short(ep, flit_rank(1), flit_handler(2), &pid, 1, 0));
    }
    CHECK_OK(flit_barrier(ep));
    if (me == 2) {
        unsigned char *big = malloc(PARTIAL_BIG);
        CHECK(big);
        mp_pattern_fill(big, PARTIAL_BIG, 10);
        flit_object_invoke(o, 0, big, PARTIAL_BIG, NULL, 0, NULL);
        FAIL("the write of %zu bytes returned: rank 1 lets it end before it is whole",
             PARTIAL_BIG);
    }
    flit_object_stats_t st = {.struct_size = sizeof st};
    if (me == 1) {
        MP_WAIT(ep, flit_object_stats(o, &st) == FLIT_OK && st.partial_writes == 1);
        int pidfd = (int)syscall(SYS_pidfd_open, atomic_load(&victim_pid), 0);
        CHECK(pidfd >= 0);
        CHECK(kill(atomic_load(&victim_pid), SIGKILL) == 0);
        struct pollfd pf = {.fd = pidfd, .events = POLLIN};
        CHECK(poll(&pf, 1, 60000) == 1);
        close(pidfd);
    }
    MP_WAIT(ep, flit_object_stats(o, &st) == FLIT_OK && st.partials_dropped == 1);
    CHECK(st.partial_writes == 0);
    MP_WAIT(ep, atomic_load(&victim_down));
    /* Still writable; the copies agree, and the big write is in none. */
    CHECK_OK(flit_object_invoke(o, 0, small, sizeof small, NULL, 0, NULL));
    MP_WAIT(ep, sums_read(o).writes == 3);
    struct sums s = sums_read(o);
    CHECK(s.len == sizeof small && s.sum == test_checksum(small, sizeof small));
    printf("object partial: rank %u: the same history as 2 of 2 survivors, "
           "the dead writer's pieces freed at the view change\n",
           me);
    survivor_end(&o, 1, "object partial");
}

int main(int argc, char **argv)
{
    unsigned threads = start(argc, argv, 16);
    owned = mp_arg_flag(argc, argv, "--owned");
    autop = mp_arg_flag(argc, argv, "--auto");
    uint64_t count = test_scaled(mp_arg_u64(argc, argv, "--count", 500));
    const char *test = "counter";
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--test"))
            test = argv[i + 1];
    if (!strcmp(test, "counter"))
        test_counter(count, threads);
    else if (!strcmp(test, "buffer"))
        test_buffer(count);
    else if (!strcmp(test, "gather"))
        test_gather(mp_arg_u64(argc, argv, "--max", 1u << 20));
    else if (!strcmp(test, "kill"))
        test_kill(count, test_scaled(mp_arg_u64(argc, argv, "--kill-after", count / 2)));
    else if (!strcmp(test, "partial"))
        test_partial();
    else if (!strcmp(test, "errors")) {
        CHECK_OK(flit_am_register(ep, flit_handler(1), in_handler, NULL));
        test_errors();
    } else
        FAIL("unknown test %s", test);
    CHECK_OK(flit_objects_destroy(objs));
    CHECK_OK(flit_finalize());
    printf("object %s: rank %u OK\n", test, me);
    return 0;
}
