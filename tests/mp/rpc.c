/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPC (<flit/rpc.h>) across real ranks. --test picks the part:
 *
 *  sizes    every rank calls every rank (itself too) with requests of 0 B
 *           to --max bytes gathered from three pieces, echoed back in two
 *           pieces, received scattered into three buffers or allocated;
 *           several calls at once, ended by wait_any; byte for byte.
 *  errors   unknown procedure, requests above the server's max_request
 *           (active-message and stream paths), a reply above the caller's
 *           buffers (the bytes that fit arrive), a procedure that returns
 *           without replying.
 *  timeout  (2 ranks) a call's own timeout, cancel, a wait's own time
 *           running out with the call going on; the server then answers
 *           all three from inside a handler: the two late replies are
 *           discarded and counted, the live one arrives.
 *  threads  (thread-safe endpoint) --threads threads per rank each call
 *           other ranks, blocking and two at a time, each checking its
 *           own replies.
 *  defer    (thread-safe) procedures defer; a thread of the server answers
 *           them from program context while its main thread calls too.
 *  closing  (2 ranks) rank 1 keeps a deferred reply and destroys its RPC
 *           object: rank 0's call ends FLIT_ERR_CLOSED, rank 1's late
 *           flit_rpc_reply_send answers FLIT_ERR_CLOSED.
 *  kill     (2 ranks, flitrun --keep-going) rank 0 has calls outstanding
 *           at rank 1 (deferred, and one large request), rank 1 raises
 *           SIGKILL: every call ends FLIT_ERR_PEER_DOWN.
 *  block    (2 ranks) procedures called with empty requests (active
 *           messages, no flag anywhere) wait for a flit mutex held by rank
 *           1's program thread, then by another procedure that itself waits
 *           on a condition until a third (FLIT_RPC_PROC_INLINE, which may
 *           not block) signals it; mutual exclusion and hand-over order
 *           checked; then nested calls from a procedure, to the caller and
 *           to its own rank, with a request of 1000 bytes (one active
 *           message: its rest is kept when the procedure first blocks) and
 *           one large enough to arrive in pieces.
 *  midway   (2 ranks) rank 1's program thread takes a flit mutex and makes
 *           a call while a procedure (registered inline, then not) waits on
 *           its fiber for the rest of its request.
 * Each rank prints "rpc: rank R OK".
 */
#include <pthread.h>
#include <signal.h>

#include <flit/rpc.h>

#include "mp.h"

enum {
    P_ECHO,
    P_DEFER,
    P_RELEASE,
    P_DIE,
    P_EMPTY,
    P_UNKNOWN,
    P_LOCK,
    P_HOLD,
    P_LET_GO,
    P_QUERY,
    P_NESTED,
    P_MIDWAY,
    P_MIDWAY_INLINE,
    NPROCS
};

static struct {
    flit_ep_t *ep;
    flit_rpc_t *rpc;
    uint32_t me, n;
    uint64_t seed;
    size_t max;
    pthread_mutex_t lock;
    flit_rpc_reply_t *held[64]; /* deferred replies kept */
    unsigned nheld;
    _Atomic int die;
    _Atomic unsigned released; /* replies P_RELEASE sent */
    /* block: M is the contended mutex; C2 / M2 what its holder waits on */
    flit_mutex_t *m, *m2;
    flit_cond_t *c2;
    int inside, let_go;
    _Atomic int arrived, holding;
    uint32_t served; /* under m */
    /* midway: requests P_MIDWAY has begun, and ended */
    _Atomic unsigned midway_in, midway_done;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---------------------------------------------------------------- server */

/* Echoes the request, replying in two pieces. */
static void proc_echo(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint8_t *buf = malloc(len ? len : 1);
    CHECK(buf);
    CHECK(flit_rpc_remaining(req) == len);
    CHECK_OK(flit_rpc_recv(req, buf, len));
    CHECK(flit_rpc_remaining(req) == 0);
    CHECK_ST(flit_rpc_recv(req, buf, 1), FLIT_ERR_TOO_LARGE);
    struct iovec v[2] = {{buf, len / 3}, {buf + len / 3, len - len / 3}};
    CHECK_OK(flit_rpc_reply(req, v, 2));
    CHECK_ST(flit_rpc_reply(req, v, 2), FLIT_ERR_ALREADY_REPLIED);
    free(buf);
}

static void proc_defer(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len;
    (void)user;
    flit_rpc_reply_t *d;
    CHECK_OK(flit_rpc_defer(req, &d));
    CHECK_ST(flit_rpc_reply(req, NULL, 0), FLIT_ERR_ALREADY_REPLIED);
    pthread_mutex_lock(&g.lock);
    CHECK(g.nheld < 64);
    g.held[g.nheld++] = d;
    pthread_mutex_unlock(&g.lock);
}

/* Answers every held reply with its place in the queue (from a handler). */
static void proc_release(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)req, (void)len, (void)user;
    pthread_mutex_lock(&g.lock);
    for (unsigned i = 0; i < g.nheld; i++) {
        uint64_t v = i;
        struct iovec iv = {&v, sizeof v};
        CHECK_OK(flit_rpc_reply_send(g.held[i], &iv, 1));
    }
    g.released += g.nheld;
    g.nheld = 0;
    pthread_mutex_unlock(&g.lock);
}

static void proc_die(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)req, (void)len, (void)user;
    g.die = 1;
}

static void proc_empty(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    CHECK_OK(flit_rpc_recv(req, NULL, 0));
    CHECK(flit_rpc_caller(req).idx < g.n);
    CHECK(flit_rpc_remaining(req) == len);
}

/* Waits for m (parked), then checks it is alone inside; replies its turn. */
static void proc_lock(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    g.arrived++;
    CHECK_OK(flit_mutex_lock(g.m, req));
    CHECK(!g.inside);
    g.inside = 1;
    uint32_t turn = ++g.served;
    g.inside = 0;
    CHECK_OK(flit_mutex_unlock(g.m));
    struct iovec v = {&turn, sizeof turn};
    CHECK_OK(flit_rpc_reply(req, &v, 1));
}

/* Takes m, then waits on c2 (with m2) until P_LET_GO: m stays held. */
static void proc_hold(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK_OK(flit_mutex_lock(g.m, req));
    g.inside = 1;
    g.holding = 1;
    CHECK_OK(flit_mutex_lock(g.m2, req));
    while (!g.let_go)
        CHECK_OK(flit_cond_wait(g.c2, g.m2, req));
    CHECK_OK(flit_mutex_unlock(g.m2));
    g.inside = 0;
    CHECK_OK(flit_mutex_unlock(g.m));
}

/* Inline: may not block, so it only tries m2 (never held across a park). */
static void proc_let_go(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK_ST(flit_mutex_lock(g.m, req), FLIT_ERR_IN_HANDLER); /* held: would wait */
    CHECK_OK(flit_mutex_trylock(g.m2));
    g.let_go = 1;
    CHECK_OK(flit_cond_broadcast(g.c2));
    CHECK_OK(flit_mutex_unlock(g.m2));
}

static void proc_query(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    uint32_t v[2] = {(uint32_t)g.arrived, (uint32_t)g.holding};
    struct iovec iv = {v, sizeof v};
    CHECK_OK(flit_rpc_reply(req, &iv, 1));
}

/* Echoes its request through two nested calls: the caller's P_ECHO for the
   first half, its own rank's for the second. */
static void proc_nested(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint8_t *buf = malloc(len), *out = malloc(len);
    CHECK(buf && out);
    CHECK_OK(flit_rpc_recv(req, buf, len / 2));
    /* Blocks with the rest of the request still coming: it is kept. */
    size_t h = len / 2;
    struct iovec q1 = {buf, h}, r1 = {out, h};
    flit_rpc_result_t res;
    CHECK_OK(
        flit_rpc_call(g.rpc, flit_rpc_caller(req), P_ECHO, &q1, 1, &r1, 1, NULL, &res));
    CHECK(res.length == h);
    CHECK_OK(flit_rpc_recv(req, buf + h, len - h));
    struct iovec q2 = {buf + h, len - h}, r2 = {out + h, len - h};
    flit_rpc_call_t *c;
    CHECK_OK(flit_rpc_icall(g.rpc, flit_rank(g.me), P_ECHO, &q2, 1, &r2, 1, NULL, &c));
    CHECK_OK(flit_rpc_wait(&c, -1, &res));
    CHECK(res.length == len - h);
    struct iovec v = {out, len};
    CHECK_OK(flit_rpc_reply(req, &v, 1));
    free(buf);
    free(out);
}

/* Takes a byte, then the rest, which comes over many progress passes: the
   handler waits for it on its fiber, between the passes. */
static void proc_midway(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint8_t *buf = malloc(len);
    CHECK(buf && len > 1);
    CHECK_OK(flit_rpc_recv(req, buf, 1));
    g.midway_in++;
    CHECK_OK(flit_rpc_recv(req, buf + 1, len - 1));
    CHECK(mp_pattern_check(buf, len, 91) == len);
    free(buf);
    g.midway_done++;
}

static void register_all(flit_rpc_t *rpc)
{
    CHECK_OK(flit_rpc_register(rpc, P_ECHO, proc_echo, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_DEFER, proc_defer, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_RELEASE, proc_release, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_DIE, proc_die, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_EMPTY, proc_empty, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_LOCK, proc_lock, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_HOLD, proc_hold, NULL));
    CHECK_OK(
        flit_rpc_register_flags(rpc, P_LET_GO, proc_let_go, NULL, FLIT_RPC_PROC_INLINE));
    CHECK_OK(flit_rpc_register(rpc, P_QUERY, proc_query, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_NESTED, proc_nested, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_MIDWAY, proc_midway, NULL));
    CHECK_OK(flit_rpc_register_flags(rpc, P_MIDWAY_INLINE, proc_midway, NULL,
                                     FLIT_RPC_PROC_INLINE));
}

static unsigned held(void)
{
    pthread_mutex_lock(&g.lock);
    unsigned n = g.nheld;
    pthread_mutex_unlock(&g.lock);
    return n;
}

/* ---------------------------------------------------------------- client */

/* An echo call of len bytes (seeded) to dest, checked byte for byte. mode:
   0 reply scattered into three buffers, 1 allocated. */
static void echo_check(flit_rpc_t *rpc, uint32_t dest, size_t len, uint64_t seed,
                       int mode)
{
    uint8_t *req = malloc(len ? len : 1), *rep = malloc(len ? len : 1);
    CHECK(req && rep);
    mp_pattern_fill(req, len, seed);
    struct iovec q[3] = {{req, len / 4},
                         {req + len / 4, len / 2},
                         {req + len / 4 + len / 2, len - len / 4 - len / 2}};
    struct iovec r[3] = {
        {rep, len / 3}, {rep + len / 3, 0}, {rep + len / 3, len - len / 3}};
    flit_rpc_opts_t o = {.field_mask = FLIT_RPC_OPT_FLAGS, .flags = FLIT_RPC_REPLY_ALLOC};
    flit_rpc_result_t res;
    CHECK_OK(
        flit_rpc_call(rpc, flit_rank(dest), P_ECHO, q, 3, r, 3, mode ? &o : NULL, &res));
    CHECK(res.status == FLIT_OK && res.length == len);
    const uint8_t *got = rep;
    if (mode) {
        CHECK(res.received == len && (len == 0) == (res.data == NULL));
        got = res.data;
    } else {
        CHECK(res.received == len);
    }
    size_t bad = mp_pattern_check(got, len, seed);
    if (bad != len)
        FAIL("echo of %zu bytes to rank %u: byte %zu differs", len, dest, bad);
    free(res.data);
    free(req);
    free(rep);
}

static const size_t sizes[] = {0,     1,     8,     100,    4095,    4096,    4097,
                               65535, 65536, 65537, 200000, 1 << 20, 3 << 20, 16 << 20};

static void test_sizes(void)
{
    unsigned k = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (sizes[i] > g.max)
            break;
        for (uint32_t d = 0; d < g.n; d++)
            echo_check(g.rpc, (g.me + d) % g.n, sizes[i], mp_mix(g.seed, g.me, d, i),
                       k++ % 2);
    }
    /* Several at once, ended in whatever order they complete. */
    enum { W = 6 };
    static uint8_t req[W][5000], rep[W][5000];
    flit_rpc_call_t *calls[W];
    for (unsigned i = 0; i < W; i++) {
        size_t len = 1000u * i;
        mp_pattern_fill(req[i], len, mp_mix(g.seed, g.me, 99, i));
        struct iovec q = {req[i], len}, r = {rep[i], sizeof rep[i]};
        CHECK_OK(flit_rpc_icall(g.rpc, flit_rank((g.me + 1 + i) % g.n), P_ECHO, &q, 1, &r,
                                1, NULL, &calls[i]));
    }
    for (unsigned left = W; left; left--) {
        size_t idx = W;
        flit_rpc_result_t res;
        CHECK_OK(flit_rpc_wait_any(W, calls, -1, &idx, &res));
        CHECK(idx < W && calls[idx] == NULL && res.length == 1000u * idx);
        CHECK(mp_pattern_check(rep[idx], res.length, mp_mix(g.seed, g.me, 99, idx)) ==
              res.length);
    }
}

static void test_errors(void)
{
    uint32_t dest = (g.me + 1) % g.n;
    flit_rpc_result_t res;
    uint8_t buf[100];
    struct iovec r = {buf, sizeof buf};
    CHECK_ST(flit_rpc_call(g.rpc, flit_rank(dest), P_UNKNOWN, NULL, 0, &r, 1, NULL, &res),
             FLIT_ERR_NO_HANDLER);
    CHECK(res.status == FLIT_ERR_NO_HANDLER && res.received == 0);
    CHECK_OK(
        flit_rpc_call(g.rpc, flit_rank(dest), P_EMPTY, NULL, 0, NULL, 0, NULL, &res));
    CHECK(res.length == 0);
    /* A reply larger than the buffers: the bytes that fit arrive. */
    mp_pattern_fill(buf, sizeof buf, 7);
    struct iovec q = {buf, sizeof buf};
    uint8_t small[60];
    struct iovec rs = {small, sizeof small};
    CHECK_ST(flit_rpc_call(g.rpc, flit_rank(dest), P_ECHO, &q, 1, &rs, 1, NULL, &res),
             FLIT_ERR_TOO_LARGE);
    CHECK(res.length == sizeof buf && res.received == sizeof small);
    CHECK(mp_pattern_check(small, sizeof small, 7) == sizeof small);

    /* A second object whose servers take requests of 1000 bytes at most. */
    flit_rpc_t *lim;
    flit_rpc_params_t p = {.field_mask =
                               FLIT_RPC_PARAM_MAX_REQUEST | FLIT_RPC_PARAM_PROCS,
                           .procs = NPROCS,
                           .max_request = 1000};
    CHECK_OK(flit_rpc_create(g.ep, &p, &lim));
    register_all(lim);
    CHECK_OK(flit_barrier(g.ep));
    static uint8_t big[200000];
    const size_t lens[] = {1000, 1001, sizeof big};
    for (unsigned i = 0; i < 3; i++) {
        struct iovec bq = {big, lens[i]};
        flit_status want = i ? FLIT_ERR_TOO_LARGE : FLIT_OK;
        CHECK_ST(flit_rpc_call(lim, flit_rank(dest), P_ECHO, &bq, 1, NULL, 0,
                               &(flit_rpc_opts_t){.field_mask = FLIT_RPC_OPT_FLAGS,
                                                  .flags = FLIT_RPC_REPLY_ALLOC},
                               &res),
                 want);
        CHECK(res.status == want);
        free(res.data);
    }
    CHECK_OK(flit_rpc_destroy(lim));
}

static flit_rpc_stats_t stats(void)
{
    flit_rpc_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_rpc_stats(g.rpc, &s));
    return s;
}

static void test_timeout(void)
{
    if (g.me == 1) {
        /* Rank 0 releases the three by a call (which may come in the same
           progress pass as the last of them). */
        MP_WAIT(g.ep, g.released == 3);
        CHECK(held() == 0);
        return;
    }
    uint64_t v = 99;
    struct iovec r = {&v, sizeof v};
    flit_rpc_result_t res;
    flit_rpc_opts_t o = {.field_mask = FLIT_RPC_OPT_TIMEOUT, .timeout_us = 20000};
    CHECK_ST(flit_rpc_call(g.rpc, flit_rank(1), P_DEFER, NULL, 0, &r, 1, &o, &res),
             FLIT_ERR_TIMEOUT);
    CHECK(res.status == FLIT_ERR_TIMEOUT);
    flit_rpc_call_t *c;
    CHECK_OK(flit_rpc_icall(g.rpc, flit_rank(1), P_DEFER, NULL, 0, &r, 1, NULL, &c));
    CHECK_OK(flit_rpc_cancel(&c));
    CHECK(c == NULL);
    CHECK_OK(flit_rpc_icall(g.rpc, flit_rank(1), P_DEFER, NULL, 0, &r, 1, NULL, &c));
    CHECK_ST(flit_rpc_wait(&c, 1000, &res), FLIT_ERR_AGAIN);
    CHECK(c != NULL);
    int done = 1;
    CHECK_OK(flit_rpc_test(&c, &done, &res));
    CHECK(done == 0 && c != NULL);
    CHECK(stats().timeouts == 1);
    CHECK_OK(flit_rpc_call(g.rpc, flit_rank(1), P_RELEASE, NULL, 0, NULL, 0, NULL, NULL));
    CHECK_OK(flit_rpc_wait(&c, -1, &res));
    CHECK(c == NULL && v == 2 && res.length == sizeof v);
    MP_WAIT(g.ep, stats().late_replies == 2);
}

/* ---------------------------------------------------------------- threads */

struct worker {
    pthread_t t;
    unsigned idx, count;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint64_t s = mp_mix(g.seed, g.me, w->idx, 5);
    for (unsigned i = 0; i < w->count; i++) {
        uint32_t dest = (g.me + 1 + (unsigned)test_rand(&s) % g.n) % g.n;
        size_t len = (size_t)(test_rand(&s) % 3 == 0 ? test_rand(&s) % 100000
                                                     : test_rand(&s) % 64);
        if (i % 2 == 0) {
            echo_check(g.rpc, dest, len, test_rand(&s), (int)(i / 2 % 2));
            continue;
        }
        /* Two at once, to two ranks. */
        uint8_t a[64], b[64], ra[64], rb[64];
        uint64_t sa = test_rand(&s), sb = test_rand(&s);
        mp_pattern_fill(a, sizeof a, sa);
        mp_pattern_fill(b, sizeof b, sb);
        struct iovec qa = {a, sizeof a}, qb = {b, sizeof b}, va = {ra, sizeof ra},
                     vb = {rb, sizeof rb};
        flit_rpc_call_t *c[2];
        CHECK_OK(
            flit_rpc_icall(g.rpc, flit_rank(dest), P_ECHO, &qa, 1, &va, 1, NULL, &c[0]));
        CHECK_OK(flit_rpc_icall(g.rpc, flit_rank((dest + 1) % g.n), P_ECHO, &qb, 1, &vb,
                                1, NULL, &c[1]));
        size_t idx;
        CHECK_OK(flit_rpc_wait_any(2, c, -1, &idx, NULL));
        CHECK_OK(flit_rpc_wait(&c[1 - idx], -1, NULL));
        CHECK(mp_pattern_check(ra, sizeof ra, sa) == sizeof ra);
        CHECK(mp_pattern_check(rb, sizeof rb, sb) == sizeof rb);
    }
    return NULL;
}

static void run_workers(unsigned nthreads, unsigned count)
{
    struct worker w[64];
    CHECK(nthreads <= 64);
    for (unsigned i = 0; i < nthreads; i++) {
        w[i] = (struct worker){.idx = i, .count = count};
        CHECK(pthread_create(&w[i].t, NULL, worker_main, &w[i]) == 0);
    }
    for (unsigned i = 0; i < nthreads; i++)
        CHECK(pthread_join(w[i].t, NULL) == 0);
}

/* The server's replier thread: answers held replies from program context
   with 8 bytes that name the call's place, until told to stop. */
static _Atomic int replier_stop;
static _Atomic unsigned replied;

static void *replier_main(void *arg)
{
    (void)arg;
    while (!replier_stop || held()) {
        pthread_mutex_lock(&g.lock);
        flit_rpc_reply_t *d = g.nheld ? g.held[--g.nheld] : NULL;
        pthread_mutex_unlock(&g.lock);
        if (!d) {
            (void)flit_wait(g.ep, 1000);
            continue;
        }
        uint64_t v = 0x5eed;
        struct iovec iv = {&v, sizeof v};
        CHECK_OK(flit_rpc_reply_send(d, &iv, 1));
        replied++;
    }
    return NULL;
}

static void test_defer(unsigned count)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, replier_main, NULL) == 0);
    for (unsigned i = 0; i < count; i++) {
        uint64_t v = 0;
        struct iovec r = {&v, sizeof v};
        CHECK_OK(flit_rpc_call(g.rpc, flit_rank((g.me + 1 + i) % g.n), P_DEFER, NULL, 0,
                               &r, 1, NULL, NULL));
        CHECK(v == 0x5eed);
    }
    CHECK_OK(flit_barrier(g.ep)); /* every call answered */
    replier_stop = 1;
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(replied == count);
}

/* ---------------------------------------------------------------- ends */

static void test_closing(void)
{
    if (g.me == 1) {
        MP_WAIT(g.ep, held() == 1);
        CHECK_OK(flit_rpc_destroy(g.rpc));
        uint64_t v = 1;
        struct iovec iv = {&v, sizeof v};
        CHECK_ST(flit_rpc_reply_send(g.held[0], &iv, 1), FLIT_ERR_CLOSED);
        g.nheld = 0;
        g.rpc = NULL;
        return;
    }
    flit_rpc_call_t *c;
    CHECK_OK(flit_rpc_icall(g.rpc, flit_rank(1), P_DEFER, NULL, 0, NULL, 0, NULL, &c));
    CHECK_ST(flit_rpc_destroy(g.rpc), FLIT_ERR_AGAIN);
    flit_rpc_result_t res;
    CHECK_ST(flit_rpc_wait(&c, -1, &res), FLIT_ERR_CLOSED);
    CHECK(res.status == FLIT_ERR_CLOSED && c == NULL);
    CHECK_OK(flit_rpc_destroy(g.rpc));
    g.rpc = NULL;
}

static void test_kill(void)
{
    if (g.me == 1) {
        MP_WAIT(g.ep, g.die);
        raise(SIGKILL);
    }
    enum { N = 4 };
    flit_rpc_call_t *c[N];
    for (unsigned i = 0; i < N - 1; i++)
        CHECK_OK(
            flit_rpc_icall(g.rpc, flit_rank(1), P_DEFER, NULL, 0, NULL, 0, NULL, &c[i]));
    CHECK_OK(flit_rpc_call(g.rpc, flit_rank(1), P_DIE, NULL, 0, NULL, 0, NULL, NULL));
    /* Sent as the server dies: it may or may not get there. */
    static uint8_t big[1 << 20];
    struct iovec q = {big, sizeof big};
    flit_status st =
        flit_rpc_icall(g.rpc, flit_rank(1), P_DEFER, &q, 1, NULL, 0, NULL, &c[N - 1]);
    if (st != FLIT_OK) {
        CHECK_ST(st, FLIT_ERR_PEER_DOWN);
        c[N - 1] = NULL;
    }
    for (unsigned i = 0; i < N; i++) {
        if (!c[i])
            continue;
        flit_rpc_result_t res;
        CHECK_ST(flit_rpc_wait(&c[i], -1, &res), FLIT_ERR_PEER_DOWN);
    }
    CHECK_ST(flit_rpc_call(g.rpc, flit_rank(1), P_EMPTY, NULL, 0, NULL, 0, NULL, NULL),
             FLIT_ERR_PEER_DOWN);
    printf("rpc: rank %u OK\n", g.me);
    fflush(stdout);
    _exit(0); /* the job is broken: no collective teardown */
}

/* ---------------------------------------------------------------- blocking */

/* Rank 0: P_QUERY until rank 1 says arrived >= want and holding == hold. */
static void query_until(uint32_t want, uint32_t hold)
{
    double deadline = mp_now() + MP_WAIT_LIMIT_S;
    for (;;) {
        uint32_t v[2];
        struct iovec r = {v, sizeof v};
        CHECK_OK(flit_rpc_call(g.rpc, flit_rank(1), P_QUERY, NULL, 0, &r, 1, NULL, NULL));
        if (v[0] >= want && v[1] == hold)
            return;
        if (mp_now() > deadline)
            FAIL("rank 1: %u arrived, holding %u; waited for %u, %u", v[0], v[1], want,
                 hold);
    }
}

/* Rank 0: k P_LOCK calls, answered in turn first .. first + k - 1. */
static void lock_calls(unsigned k, uint32_t first, flit_rpc_call_t **c, uint32_t *turn)
{
    for (unsigned i = 0; i < k; i++) {
        struct iovec r = {&turn[i], sizeof turn[i]};
        CHECK_OK(
            flit_rpc_icall(g.rpc, flit_rank(1), P_LOCK, NULL, 0, &r, 1, NULL, &c[i]));
    }
    (void)first;
}

static void check_turns(unsigned k, uint32_t first, flit_rpc_call_t **c, uint32_t *turn)
{
    for (unsigned i = 0; i < k; i++)
        CHECK_OK(flit_rpc_wait(&c[i], -1, NULL));
    for (unsigned i = 0; i < k; i++) /* handed over in the order they came */
        if (turn[i] != first + i)
            FAIL("call %u had turn %u, expected %u", i, turn[i], first + i);
}

static void test_block(void)
{
    enum { K = 4 };
    CHECK_OK(flit_mutex_create(&g.m));
    CHECK_OK(flit_mutex_create(&g.m2));
    CHECK_OK(flit_cond_create(&g.c2));
    if (g.me == 1)
        CHECK_OK(flit_mutex_lock(g.m, NULL)); /* held by this program thread */
    CHECK_OK(flit_barrier(g.ep));
    flit_rpc_call_t *c[K];
    uint32_t turn[K];
    if (g.me == 1) {
        MP_WAIT(g.ep, g.arrived == K); /* all parked on m */
        CHECK_ST(flit_mutex_destroy(g.m), FLIT_ERR_AGAIN);
        CHECK_OK(flit_mutex_unlock(g.m));
    } else {
        lock_calls(K, 1, c, turn);
        check_turns(K, 1, c, turn);
        /* Now held by a procedure that waits on a condition. */
        flit_rpc_call_t *hold;
        CHECK_OK(
            flit_rpc_icall(g.rpc, flit_rank(1), P_HOLD, NULL, 0, NULL, 0, NULL, &hold));
        query_until(K, 1);
        lock_calls(K, K + 1, c, turn);
        query_until(2 * K, 1);
        CHECK_OK(
            flit_rpc_call(g.rpc, flit_rank(1), P_LET_GO, NULL, 0, NULL, 0, NULL, NULL));
        CHECK_OK(flit_rpc_wait(&hold, -1, NULL));
        check_turns(K, K + 1, c, turn);
        /* Nested calls, from a procedure whose request is one active
           message, then one whose request comes in pieces. */
        static const size_t lens[] = {1000, 300000};
        for (unsigned i = 0; i < 2; i++) {
            size_t len = lens[i];
            uint8_t *q = malloc(len), *r = malloc(len);
            CHECK(q && r);
            mp_pattern_fill(q, len, 77 + i);
            struct iovec qv = {q, len}, rv = {r, len};
            flit_rpc_result_t res;
            CHECK_OK(
                flit_rpc_call(g.rpc, flit_rank(1), P_NESTED, &qv, 1, &rv, 1, NULL, &res));
            CHECK(res.length == len && mp_pattern_check(r, len, 77 + i) == len);
            free(q);
            free(r);
        }
    }
    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_mutex_destroy(g.m));
    CHECK_OK(flit_mutex_destroy(g.m2));
    CHECK_OK(flit_cond_destroy(g.c2));
}

/*
 * Rank 0 sends rank 1 a request that arrives in many pieces, to a procedure
 * registered inline and to one not; between rank 1's progress passes, with the
 * procedure waiting on its fiber for the rest, rank 1's program thread is
 * program code: it takes a flit mutex and makes a call of its own.
 */
static void test_midway(void)
{
    enum { LEN = 4 << 20 };
    CHECK_OK(flit_mutex_create(&g.m));
    if (g.me == 0) {
        uint8_t *q = malloc(LEN);
        CHECK(q);
        mp_pattern_fill(q, LEN, 91);
        struct iovec v = {q, LEN};
        for (int round = 0; round < 2; round++)
            CHECK_OK(flit_rpc_call(g.rpc, flit_rank(1),
                                   round ? P_MIDWAY : P_MIDWAY_INLINE, &v, 1, NULL, 0,
                                   NULL, NULL));
        free(q);
    } else if (g.me == 1) {
        for (unsigned round = 1; round <= 2; round++) {
            unsigned between = 0;
            for (uint64_t polls = 0; g.midway_done < round; polls++) {
                CHECK(polls < 100000000);
                CHECK_OK(flit_poll(g.ep));
                if (g.midway_in != round || g.midway_done == round)
                    continue;
                between++;
                CHECK_OK(flit_mutex_lock(g.m, NULL));
                CHECK_OK(flit_mutex_unlock(g.m));
                CHECK_OK(flit_rpc_call(g.rpc, flit_rank(0), P_EMPTY, NULL, 0, NULL, 0,
                                       NULL, NULL));
            }
            if (between == 0)
                FAIL("round %u: the request came in one pass: nothing checked", round);
        }
    }
    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_mutex_destroy(g.m));
}

static void ignore_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)ep, (void)r, (void)user; /* a killed rank's messages come back */
}

int main(int argc, char **argv)
{
    const char *test = "sizes";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--test") == 0)
            test = argv[i + 1];
    g.seed = mp_arg_u64(argc, argv, "--seed", 1);
    g.max =
        test_scaled(mp_arg_u64(argc, argv, "--max", 16u << 20)); /* sanitizers: less */
    unsigned nthreads = (unsigned)mp_arg_u64(argc, argv, "--threads", 8);
    unsigned count = (unsigned)test_scaled(mp_arg_u64(argc, argv, "--count", 200));
    bool mt = strcmp(test, "threads") == 0 || strcmp(test, "defer") == 0 ||
              mp_arg_flag(argc, argv, "--thread-safe");
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    flit_ep_params_t ep = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                           .thread_mode = mt ? FLIT_THREAD_SAFE : FLIT_THREAD_SINGLE};
    CHECK_OK(flit_ep_create(&ep, &g.ep));
    CHECK_OK(flit_am_set_returned_handler(
        g.ep, strcmp(test, "kill") == 0 ? ignore_returned : mp_returned_fail, NULL));
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = NPROCS};
    CHECK_OK(flit_rpc_create(g.ep, &p, &g.rpc));
    register_all(g.rpc);
    CHECK_OK(flit_barrier(g.ep)); /* every rank's procedures are in */
    if (strcmp(test, "sizes") == 0)
        test_sizes();
    else if (strcmp(test, "errors") == 0)
        test_errors();
    else if (strcmp(test, "timeout") == 0)
        test_timeout();
    else if (strcmp(test, "threads") == 0)
        run_workers(nthreads, count);
    else if (strcmp(test, "defer") == 0)
        test_defer(count);
    else if (strcmp(test, "closing") == 0)
        test_closing();
    else if (strcmp(test, "kill") == 0)
        test_kill();
    else if (strcmp(test, "block") == 0)
        test_block();
    else if (strcmp(test, "midway") == 0)
        test_midway();
    else
        FAIL("unknown --test %s", test);
    if (mp_arg_flag(argc, argv, "--expect-faults")) { /* the loss was real */
        flit_stats_t s = {.struct_size = sizeof s};
        CHECK_OK(flit_ep_stats(g.ep, &s));
        if (s.faults_injected == 0)
            FAIL("rank %u: no fault injected: no loss to survive", g.me);
    }
    if (g.rpc)
        CHECK_OK(flit_rpc_destroy(g.rpc));
    CHECK_OK(flit_ep_destroy(g.ep));
    CHECK_OK(flit_finalize());
    printf("rpc: rank %u OK\n", g.me);
    return 0;
}
