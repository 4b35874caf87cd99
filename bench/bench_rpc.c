/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_rpc.h. */
#include "bench_rpc.h"

#include <flit/rpc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEER        flit_rank(1)
#define BULK        (1u << 20) /* the throughput figure's request and reply */
#define BULK_WINDOW 4u         /* ... calls in flight */
#define MAX_THREADS 8u
#define CALLS_MAX   (1ull << 24)
/* Panda on Myrinet (Bal et al.): null RPC round trip, RPC throughput. */
#define PANDA_RPC_US  171.0
#define PANDA_RPC_MBS 10.1

enum { P_NULL, P_NULL_INLINE, P_BULK, P_STOP, P_GO, NPROCS };

static struct {
    flit_rpc_t *rpc;  /* on the bench's endpoint */
    flit_ep_t *ep2;   /* thread-safe */
    flit_rpc_t *rpc2; /* on ep2 */
    uint8_t *buf;     /* rank 1: requests land here; rank 0: what it sends */
    uint8_t *rep[BULK_WINDOW];
    size_t bulk;
    pthread_t server; /* rank 1: serves ep2 between P_GO and P_STOP */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool go;
    _Atomic int stop;
} rb = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* ---------------------------------------------------------------- rank 1 */

static void proc_null(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)req, (void)len, (void)user; /* returns: an empty reply */
}

/* Takes the request, answers as many bytes. */
static void proc_bulk(flit_rpc_req_t *req, size_t len, void *user)
{
    bench_t *b = user;
    size_t n = len < rb.bulk ? len : rb.bulk;
    bench_check(b, flit_rpc_recv(req, rb.buf, n), "flit_rpc_recv");
    struct iovec v = {rb.buf, n};
    bench_check(b, flit_rpc_reply(req, &v, 1), "flit_rpc_reply");
}

static void proc_stop(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)req, (void)len, (void)user;
    atomic_store(&rb.stop, 1);
}

/* On the bench's endpoint: rank 1's thread may start serving ep2 (until
   then it sleeps: a spinning third thread would take a CPU from the two
   ranks' figures). */
static void proc_go(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)req, (void)len, (void)user;
    pthread_mutex_lock(&rb.lock);
    rb.go = true;
    pthread_cond_signal(&rb.cond);
    pthread_mutex_unlock(&rb.lock);
}

static void *serve_ep2(void *arg)
{
    bench_t *b = arg;
    pthread_mutex_lock(&rb.lock);
    while (!rb.go)
        pthread_cond_wait(&rb.cond, &rb.lock);
    pthread_mutex_unlock(&rb.lock);
    while (!atomic_load(&rb.stop)) {
        flit_status st = flit_wait(rb.ep2, 10000);
        if (st != FLIT_ERR_TIMEOUT)
            bench_check(b, st, "flit_wait (second endpoint)");
    }
    return NULL;
}

static void procs(bench_t *b, flit_rpc_t *rpc)
{
    bench_check(b, flit_rpc_register(rpc, P_NULL, proc_null, b), "flit_rpc_register");
    bench_check(
        b,
        flit_rpc_register_flags(rpc, P_NULL_INLINE, proc_null, b, FLIT_RPC_PROC_INLINE),
        "flit_rpc_register_flags");
    bench_check(b, flit_rpc_register(rpc, P_BULK, proc_bulk, b), "flit_rpc_register");
    bench_check(b, flit_rpc_register(rpc, P_STOP, proc_stop, b), "flit_rpc_register");
    bench_check(b, flit_rpc_register(rpc, P_GO, proc_go, b), "flit_rpc_register");
}

/* ---------------------------------------------------------------- both */

void bench_rpc_open(bench_t *b)
{
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = NPROCS};
    bench_check(b, flit_rpc_create(b->ep, &p, &rb.rpc), "flit_rpc_create");
    /* No progress thread: ep2 idles through every section before this
       one, which the channel forgives (time it was not polled is not
       silence), and a thread woken for every packet would time wake-ups. */
    flit_ep_params_t ep = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                           .thread_mode = FLIT_THREAD_SAFE};
    bench_check(b, flit_ep_create(&ep, &rb.ep2), "flit_ep_create (thread-safe)");
    bench_check(b, flit_rpc_create(rb.ep2, &p, &rb.rpc2), "flit_rpc_create");
    rb.bulk = b->max_size < BULK ? b->max_size : BULK;
    if (!(rb.buf = malloc(rb.bulk)))
        bench_check(b, FLIT_ERR_NO_MEMORY, "malloc");
    memset(rb.buf, 0x5a, rb.bulk);
    if (b->rank == 1) {
        procs(b, rb.rpc);
        procs(b, rb.rpc2);
        if (pthread_create(&rb.server, NULL, serve_ep2, b) != 0)
            bench_check(b, FLIT_ERR_SYSTEM, "pthread_create");
    } else {
        for (unsigned i = 0; i < BULK_WINDOW; i++)
            if (!(rb.rep[i] = malloc(rb.bulk)))
                bench_check(b, FLIT_ERR_NO_MEMORY, "malloc");
    }
    bench_check(b, flit_barrier(rb.ep2), "flit_barrier"); /* procedures in */
}

void bench_rpc_close(bench_t *b)
{
    if (b->rank == 0 && !rb.go) /* the section did not run */
        bench_check(b, flit_rpc_call(rb.rpc, PEER, P_GO, NULL, 0, NULL, 0, NULL, NULL),
                    "flit_rpc_call (go)");
    if (b->rank == 0 && !atomic_load(&rb.stop))
        bench_check(b, flit_rpc_call(rb.rpc2, PEER, P_STOP, NULL, 0, NULL, 0, NULL, NULL),
                    "flit_rpc_call (stop)");
    if (b->rank == 1)
        pthread_join(rb.server, NULL);
    bench_check(b, flit_rpc_destroy(rb.rpc2), "flit_rpc_destroy");
    bench_check(b, flit_ep_destroy(rb.ep2), "flit_ep_destroy");
    bench_check(b, flit_rpc_destroy(rb.rpc), "flit_rpc_destroy");
    free(rb.buf);
    for (unsigned i = 0; i < BULK_WINDOW; i++)
        free(rb.rep[i]);
}

/* ---------------------------------------------------------------- rank 0 */

struct point {
    bench_t *b;
    flit_rpc_t *rpc;
    unsigned threads;
    uint64_t per_thread;
    unsigned proc; /* the null calls' procedure */
};

static uint64_t run_null(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        bench_check(p->b,
                    flit_rpc_call(p->rpc, PEER, p->proc, NULL, 0, NULL, 0, NULL, NULL),
                    "flit_rpc_call");
    return bench_now_ns() - t0;
}

/* n calls of BULK bytes answered by as many, BULK_WINDOW in flight. */
static uint64_t run_bulk(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    flit_rpc_call_t *calls[BULK_WINDOW] = {0};
    struct iovec q = {rb.buf, rb.bulk};
    uint64_t t0 = bench_now_ns(), issued = 0, done = 0;
    while (done < n) {
        for (unsigned i = 0; i < BULK_WINDOW && issued < n; i++) {
            if (calls[i])
                continue;
            struct iovec r = {rb.rep[i], rb.bulk};
            bench_check(
                p->b, flit_rpc_icall(p->rpc, PEER, P_BULK, &q, 1, &r, 1, NULL, &calls[i]),
                "flit_rpc_icall");
            issued++;
        }
        size_t idx;
        bench_check(p->b, flit_rpc_wait_any(BULK_WINDOW, calls, -1, &idx, NULL),
                    "flit_rpc_wait_any");
        done++;
    }
    return bench_now_ns() - t0;
}

static void *caller(void *arg)
{
    struct point *p = arg;
    for (uint64_t i = 0; i < p->per_thread; i++)
        bench_check(p->b,
                    flit_rpc_call(rb.rpc2, PEER, P_NULL, NULL, 0, NULL, 0, NULL, NULL),
                    "flit_rpc_call (threads)");
    return NULL;
}

/* n calls shared by p->threads threads on the thread-safe endpoint. */
static uint64_t run_threads(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    pthread_t t[MAX_THREADS];
    p->per_thread = n / p->threads;
    uint64_t t0 = bench_now_ns();
    for (unsigned i = 0; i < p->threads; i++)
        if (pthread_create(&t[i], NULL, caller, p) != 0)
            bench_check(p->b, FLIT_ERR_SYSTEM, "pthread_create");
    for (unsigned i = 0; i < p->threads; i++)
        pthread_join(t[i], NULL);
    return bench_now_ns() - t0;
}

static double measure(bench_run_fn fn, struct point *p, uint64_t target_ns, int reps,
                      uint64_t mult)
{
    return bench_measure(fn, p, target_ns, reps, mult, CALLS_MAX);
}

void bench_rpc_section(bench_t *b, const struct bench_io *io)
{
    struct point p = {.b = b, .rpc = rb.rpc, .threads = 1, .proc = P_NULL};
    io->title(io->run, "RPC: round trip of a call with no arguments and an empty reply",
              "the short AM (2 args) round trip of this run, answered in its handler "
              "(target: ratio at most 1.2); inline: the null RPC; Panda (Bal et al., "
              "Myrinet): ratio = Panda / flit",
              false);
    measure(run_null, &p, io->lat_ns / 4, 1, 1); /* free lists grow here */
    double am, v;
    do {
        io->begin(io->run);
        am = 2 * bench_latency_ns(b, BENCH_SHORT, 8, false, io->lat_ns, io->lat_reps) /
             1e3;
        v = measure(run_null, &p, io->lat_ns, io->lat_reps, 1) / 1e3;
    } while (io->again(io->run));
    am = io->emit(io->run, "rpc_am_round_trip", "short AM round trip", -1, am, NAN, NAN,
                  BENCH_U_US);
    double null_us = io->emit(io->run, "rpc_null_round_trip", "null RPC round trip", -1,
                              v, am, -1, BENCH_U_US);
    io->emit(io->run, "panda_rpc_round_trip", "Panda '96 (ratio: / flit)", -1,
             PANDA_RPC_US, null_us, -1, BENCH_U_US);
    /* What the procedure's own stack costs (it may block): the same call to
       a procedure registered FLIT_RPC_PROC_INLINE, on the handler's stack. */
    p.proc = P_NULL_INLINE;
    do {
        io->begin(io->run);
        v = measure(run_null, &p, io->lat_ns, io->lat_reps, 1) / 1e3;
    } while (io->again(io->run));
    io->emit(io->run, "rpc_null_inline", "null RPC, procedure inline", -1, v, null_us, -1,
             BENCH_U_US);
    p.proc = P_NULL;

    char title[160];
    snprintf(title, sizeof title,
             "RPC: throughput, requests of %zu bytes answered by as many, %u calls in "
             "flight (request + reply bytes)",
             rb.bulk, BULK_WINDOW);
    io->title(io->run, title, "stream bandwidth of the same size, one way, this run",
              true);
    double st, bw;
    do {
        io->begin(io->run);
        st = rb.bulk * 1e3 /
             bench_stream_ns(b, BENCH_STREAM, rb.bulk, 64, io->bw_ns, io->bw_reps);
        bw = 2 * rb.bulk * 1e3 / measure(run_bulk, &p, io->bw_ns, io->bw_reps, 1);
    } while (io->again(io->run));
    st = io->emit(io->run, "rpc_stream_bandwidth", "stream, 1 piece", (double)rb.bulk, st,
                  NAN, NAN, BENCH_U_MBS);
    double bulk_mbs = io->emit(io->run, "rpc_bulk_throughput", "RPC request + reply",
                               (double)rb.bulk, bw, st, (double)rb.bulk, BENCH_U_MBS);
    io->emit(io->run, "panda_rpc_throughput", "Panda '96 (ratio: / flit)", -1,
             PANDA_RPC_MBS, bulk_mbs, -1, BENCH_U_MBS);

    io->title(io->run,
              "RPC: null calls per second from threads of a thread-safe endpoint "
              "(rank 1 serves from a thread)",
              "one calling thread (target: 8 threads at least 1.0)", false);
    static const unsigned threads[] = {1, 2, 8};
    double one = NAN;
    bench_check(b, flit_rpc_call(rb.rpc, PEER, P_GO, NULL, 0, NULL, 0, NULL, NULL),
                "flit_rpc_call (go)");
    rb.go = true;
    for (unsigned i = 0; i < 3; i++) {
        p.threads = threads[i];
        char fig[48], name[48];
        snprintf(fig, sizeof fig, "%u thread%s", threads[i], threads[i] > 1 ? "s" : "");
        snprintf(name, sizeof name, "rpc_calls_per_s_%u", threads[i]);
        do {
            io->begin(io->run);
            v = 1e3 / measure(run_threads, &p, io->bw_ns, io->bw_reps, threads[i]);
        } while (io->again(io->run));
        v = io->emit(io->run, name, fig, -1, v, one, -1, BENCH_U_RATE);
        if (i == 0)
            one = v;
    }
    bench_check(b, flit_rpc_call(rb.rpc2, PEER, P_STOP, NULL, 0, NULL, 0, NULL, NULL),
                "flit_rpc_call (stop)");
    atomic_store(&rb.stop, 1);
}
