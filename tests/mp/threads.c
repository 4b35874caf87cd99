/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A FLIT_THREAD_SAFE endpoint used by four threads at once. On each of two
 * ranks, three threads send requests to the other rank concurrently (short,
 * medium and long; blocking sends, which poll while they wait), and a fourth
 * thread polls with flit_wait. Every request handler replies.
 *
 * Proves: exact counts on both sides; each sending thread's requests run in
 * the order that thread sent them, and so do their replies (per-thread
 * sequence numbers); long payloads land intact in per-thread slots; no call
 * answers FLIT_ERR_THREAD or anything but FLIT_OK.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "mp.h"

enum { H_REQ = 1, H_REP = 2 };

#define NSEND      3
#define MEDIUM_MAX 8192u
#define LONG_LEN   32768u
#define SEG_SIZE   (NSEND * LONG_LEN)

struct sender {
    pthread_t tid;
    unsigned idx;
    uint64_t sent;
    _Atomic uint64_t replies;
    _Atomic int long_busy; /* its slot in the other's segment is in use */
};

static struct {
    flit_ep_t *ep;
    uint32_t me, other;
    uint64_t count;
    uint8_t *seg;
    struct sender s[NSEND];
    uint64_t rx[NSEND]; /* requests handled, per sending thread */
    _Atomic uint64_t rx_total;
    _Atomic int stop_poller;
    uint64_t poller_waits;
} g;

static flit_am_kind kind_of(uint64_t i)
{
    return (flit_am_kind)(i % 5 == 4 ? 2 : i % 2);
}
static size_t medium_len(uint64_t i)
{
    return (size_t)(i * 131 % (MEDIUM_MAX + 1));
}
static uint64_t seed(unsigned th, uint64_t i, uint32_t src)
{
    return mp_mix(th, i, src, 5);
}

/* Handlers run on whichever thread polls; the endpoint serialises them. */
static void on_req(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(t).idx;
    CHECK(src == g.other && nargs == 2 && args[0] < NSEND);
    unsigned th = args[0];
    uint64_t i = g.rx[th];
    if (args[1] != (uint32_t)i)
        FAIL("thread %u's request %u arrived, expected %llu", th, args[1],
             (unsigned long long)i);
    flit_am_kind k = kind_of(i);
    size_t want = k == FLIT_AM_SHORT ? 0 : k == FLIT_AM_MEDIUM ? medium_len(i) : LONG_LEN;
    CHECK(nbytes == want);
    if (k == FLIT_AM_LONG)
        CHECK((uint8_t *)buf == g.seg + th * LONG_LEN);
    if (mp_pattern_check(buf, nbytes, seed(th, i, src)) != nbytes)
        FAIL("thread %u's request %llu (%s): payload differs", th, (unsigned long long)i,
             flit_am_kind_name(k, 0));
    g.rx[th]++;
    atomic_fetch_add(&g.rx_total, 1);
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_REP), args, 2));
}

static void on_rep(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    (void)user;
    CHECK(nargs == 2 && args[0] < NSEND);
    struct sender *s = &g.s[args[0]];
    uint64_t i = atomic_load(&s->replies);
    if (args[1] != (uint32_t)i)
        FAIL("reply to thread %u's request %u, expected %llu", args[0], args[1],
             (unsigned long long)i);
    if (kind_of(i) == FLIT_AM_LONG)
        atomic_store(&s->long_busy, 0);
    atomic_fetch_add(&s->replies, 1);
}

static void *sender_main(void *arg)
{
    struct sender *s = arg;
    uint8_t *buf = malloc(LONG_LEN);
    CHECK(buf);
    flit_rank_t to = flit_rank(g.other);
    for (uint64_t i = 0; i < g.count; i++) {
        uint32_t a[2] = {s->idx, (uint32_t)i};
        flit_am_kind k = kind_of(i);
        size_t len = k == FLIT_AM_MEDIUM ? medium_len(i)
                     : k == FLIT_AM_LONG ? LONG_LEN
                                         : 0;
        mp_pattern_fill(buf, len, seed(s->idx, i, g.me));
        if (k == FLIT_AM_SHORT) {
            CHECK_OK(flit_am_short(g.ep, to, flit_handler(H_REQ), a, 2, 0));
        } else if (k == FLIT_AM_MEDIUM) {
            CHECK_OK(flit_am_medium(g.ep, to, flit_handler(H_REQ), buf, len, a, 2, 0));
        } else {
            /* One slot per thread: reuse it once the last long was answered. */
            MP_WAIT(g.ep, !atomic_load(&s->long_busy));
            atomic_store(&s->long_busy, 1);
            CHECK_OK(flit_am_long(g.ep, to, flit_handler(H_REQ), buf, len,
                                  (uint64_t)s->idx * LONG_LEN, a, 2, 0));
        }
        s->sent++;
    }
    free(buf);
    return NULL;
}

static void *poller_main(void *arg)
{
    (void)arg;
    double end = mp_now() + MP_WAIT_LIMIT_S;
    while (!atomic_load(&g.stop_poller)) {
        flit_status st = flit_wait(g.ep, 10000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            FAIL("flit_wait on the polling thread: %s", flit_status_name(st));
        g.poller_waits++;
        if (mp_now() > end) {
            flit_ep_dump(g.ep, 2);
            FAIL("no completion within %.0f s", MP_WAIT_LIMIT_S);
        }
    }
    return NULL;
}

static int all_done(void)
{
    if (atomic_load(&g.rx_total) != NSEND * g.count)
        return 0;
    for (int i = 0; i < NSEND; i++)
        if (atomic_load(&g.s[i].replies) != g.count)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    g.count = test_scaled(mp_arg_u64(argc, argv, "--count", 5000));
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    if (flit_job_size() != 2) {
        fprintf(stderr, "threads runs with 2 ranks\n");
        return TEST_SKIP;
    }
    g.other = 1 - g.me;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE | FLIT_EP_PARAM_SEGMENT,
                          .thread_mode = FLIT_THREAD_SAFE,
                          .segment_size = SEG_SIZE};
    CHECK_OK(flit_ep_create(&p, &g.ep));
    void *seg;
    size_t sz;
    CHECK_OK(flit_ep_segment(g.ep, &seg, &sz));
    g.seg = seg;
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_req, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_rep, NULL));
    CHECK_OK(flit_barrier(g.ep));

    double t0 = mp_now();
    pthread_t poller;
    CHECK(pthread_create(&poller, NULL, poller_main, NULL) == 0);
    for (unsigned i = 0; i < NSEND; i++) {
        g.s[i].idx = i;
        CHECK(pthread_create(&g.s[i].tid, NULL, sender_main, &g.s[i]) == 0);
    }
    for (unsigned i = 0; i < NSEND; i++)
        CHECK(pthread_join(g.s[i].tid, NULL) == 0);
    /* The poller alone finishes the job: replies and the other's requests. */
    double end = mp_now() + MP_WAIT_LIMIT_S;
    while (!all_done()) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        if (mp_now() > end)
            FAIL("the polling thread did not complete the job");
    }
    atomic_store(&g.stop_poller, 1);
    CHECK(pthread_join(poller, NULL) == 0);
    double took = mp_now() - t0;

    for (unsigned i = 0; i < NSEND; i++) {
        CHECK(g.s[i].sent == g.count);
        CHECK(g.rx[i] == g.count);
    }
    CHECK_OK(flit_barrier(g.ep));
    CHECK(all_done());
    CHECK_OK(flit_finalize());
    printf("threads: rank %u OK: %d threads x %llu requests each way, %llu waits on "
           "the polling thread, %.2f s\n",
           g.me, NSEND, (unsigned long long)g.count, (unsigned long long)g.poller_waits,
           took);
    return 0;
}
