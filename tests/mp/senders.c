/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several threads of every rank send at once on one FLIT_THREAD_SAFE
 * endpoint, to one rank or to every other rank: streams, tagged messages,
 * long active messages and RMA puts, each kind on its own threads or all
 * mixed. Messages span many packets (their waits for room are where the
 * endpoint's lock is let go and another thread's send comes in between).
 *
 * Proves, for every message: it arrives exactly once, every byte as sent;
 * each sending thread's messages arrive in the order it sent them (per
 * receiver); every call answers FLIT_OK and nothing comes back.
 *
 *   --kind stream|tagged|long|put|mixed   what the threads send (mixed:
 *                                         thread i sends kind i % 4)
 *   --threads T   sending threads per rank (default 4)
 *   --count C     messages per thread and target (default 200)
 *   --size S      largest message (default 100000; sizes vary up to it)
 *   --all         every thread sends to every other rank (default: all
 *                 threads of rank r send to rank r + 1 only)
 */
#include <flit/rma.h>
#include <flit/stream.h>
#include <flit/tagged.h>
#include <pthread.h>
#include <stdatomic.h>

#include "mp.h"

enum kind { K_STREAM, K_TAGGED, K_LONG, K_PUT, K_COUNT };
static const char *const kind_names[K_COUNT] = {"stream", "tagged", "long", "put"};

/* Active-message handlers, and stream handler indices. */
enum { H_LONG = 1, H_ACK = 2, H_VERIFY = 3, H_ID = 4 };
enum { HS_STREAM = 1 };

#define MAX_THREADS 16
#define MAX_RANKS   16
#define HDR_LEN     8u /* stream and tagged messages: thread, sequence */
#define PIECE_MAX   5000u

struct sender {
    pthread_t tid;
    unsigned idx;
    enum kind kind;
    uint8_t *buf, *back;
    /* Acknowledgements of long AMs and verified puts, per target rank. */
    _Atomic uint64_t acked[MAX_RANKS];
    _Atomic int done;
};

static struct {
    flit_ep_t *ep;
    flit_tagged_t *tagged;
    uint32_t me, n;
    unsigned threads;
    uint64_t count;
    size_t size;
    bool all;
    int mixed;
    enum kind kind;
    uint8_t *seg;
    size_t slot;     /* bytes per (sender rank, thread) */
    uint8_t *region; /* exported for puts */
    flit_rma_region_t *exported;
    _Atomic uint64_t ids[MAX_RANKS]; /* the others' export ids + 1 */
    flit_rma_remote_t *remotes[MAX_RANKS];
    struct sender s[MAX_THREADS];
    /* Receive side: the next sequence expected per (sender rank, thread). */
    _Atomic uint64_t next[MAX_RANKS][MAX_THREADS];
    _Atomic uint64_t received;
} g;

static enum kind kind_of(unsigned thread)
{
    return g.mixed ? (enum kind)(thread % K_COUNT) : g.kind;
}

static bool targets(uint32_t src, uint32_t dst)
{
    if (src == dst)
        return false;
    return g.all || dst == (src + 1) % g.n;
}

/* Length of message seq of a thread: every size class, up to g.size. */
static size_t length_of(unsigned thread, uint64_t seq)
{
    uint64_t r = mp_mix(thread, seq, 77, 1);
    switch (seq % 4) {
    case 0:
        return (size_t)(r % 64);
    case 1:
        return (size_t)(r % 4096);
    default:
        return g.size / 2 + (size_t)(r % (g.size / 2 + 1));
    }
}

static uint64_t seed_of(uint32_t src, unsigned thread, uint64_t seq)
{
    return mp_mix(src, thread, seq, 0x5e9d);
}

/* One more message of (src, thread) arrived carrying seq: it must be the
   next of that thread's messages, and its bytes must be the pattern. */
static void arrived(uint32_t src, unsigned thread, uint64_t seq, const uint8_t *buf,
                    size_t len, const char *what)
{
    if (src >= g.n || thread >= g.threads)
        FAIL("%s: from rank %u thread %u: no such sender", what, src, thread);
    uint64_t want = atomic_load(&g.next[src][thread]);
    if (seq != want)
        FAIL("%s from rank %u thread %u: message %llu arrived, expected %llu", what, src,
             thread, (unsigned long long)seq, (unsigned long long)want);
    if (len != length_of(thread, seq))
        FAIL("%s from rank %u thread %u, message %llu: %zu bytes, sent %zu", what, src,
             thread, (unsigned long long)seq, len, length_of(thread, seq));
    size_t bad = mp_pattern_check(buf, len, seed_of(src, thread, seq));
    if (bad != len)
        FAIL("%s from rank %u thread %u, message %llu (%zu bytes): byte %zu differs",
             what, src, thread, (unsigned long long)seq, len, bad);
    atomic_store(&g.next[src][thread], want + 1);
    atomic_fetch_add(&g.received, 1);
}

static void get_header(const uint8_t *h, unsigned *thread, uint64_t *seq)
{
    uint32_t t, q;
    memcpy(&t, h, 4);
    memcpy(&q, h + 4, 4);
    *thread = t;
    *seq = q;
}

/* ---- receive side ---- */

/* A stream: header, then the payload in pieces of varying size. */
static void on_stream(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    uint32_t src = flit_stream_rank(s).idx;
    uint8_t h[HDR_LEN];
    CHECK(total >= HDR_LEN);
    CHECK_OK(flit_stream_recv(s, h, HDR_LEN));
    unsigned thread;
    uint64_t seq;
    get_header(h, &thread, &seq);
    size_t len = total - HDR_LEN;
    uint8_t *buf = malloc(len ? len : 1);
    CHECK(buf);
    size_t got = 0;
    uint64_t r = seq + 1;
    while (got < len) {
        size_t k = 1 + (size_t)(test_rand(&r) % PIECE_MAX);
        if (k > len - got)
            k = len - got;
        CHECK_OK(flit_stream_recv(s, buf + got, k));
        got += k;
    }
    CHECK(flit_stream_remaining(s) == 0);
    arrived(src, thread, seq, buf, len, "stream");
    free(buf);
}

static void on_long(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(t).idx;
    CHECK(nargs == 2 && args[0] < g.threads);
    CHECK((uint8_t *)buf == g.seg + ((size_t)src * g.threads + args[0]) * g.slot);
    arrived(src, args[0], args[1], buf, nbytes, "long AM");
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_ACK), args, 2));
}

/* After a put: its bytes must be in the region, at the sender's slot. */
static void on_verify(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    (void)user;
    uint32_t src = flit_token_rank(t).idx;
    CHECK(nargs == 3 && args[0] < g.threads);
    const uint8_t *at = g.region + ((size_t)src * g.threads + args[0]) * g.slot;
    arrived(src, args[0], args[1], at, args[2], "put");
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_ACK), args, 2));
}

static void on_ack(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    (void)user;
    uint32_t from = flit_token_rank(t).idx;
    CHECK(nargs == 2 && args[0] < g.threads && from < g.n);
    struct sender *s = &g.s[args[0]];
    uint64_t want = atomic_load(&s->acked[from]);
    if (args[1] != (uint32_t)want)
        FAIL("rank %u acknowledged thread %u's message %u, expected %llu", from, args[0],
             args[1], (unsigned long long)want);
    atomic_store(&s->acked[from], want + 1);
}

static void on_id(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    (void)user;
    CHECK(nargs == 2);
    uint64_t id = (uint64_t)args[0] | (uint64_t)args[1] << 32;
    atomic_store(&g.ids[flit_token_rank(t).idx], id + 1);
}

/* Tagged receives of one tag (a sending thread's index), from any rank. */
struct receiver {
    pthread_t tid;
    unsigned tag;
    uint64_t expect;
};

static void *receiver_main(void *arg)
{
    struct receiver *r = arg;
    uint8_t *buf = malloc(HDR_LEN + g.size);
    CHECK(buf);
    for (uint64_t i = 0; i < r->expect; i++) {
        flit_tagged_info_t info;
        CHECK_OK(flit_tagged_recv(g.tagged, flit_rank(FLIT_ANY_SOURCE), r->tag, buf,
                                  HDR_LEN + g.size, &info));
        CHECK(info.tag == r->tag && info.received == info.length &&
              info.length >= HDR_LEN);
        unsigned thread;
        uint64_t seq;
        get_header(buf, &thread, &seq);
        CHECK(thread == r->tag);
        arrived(info.source.idx, thread, seq, buf + HDR_LEN, info.length - HDR_LEN,
                "tagged");
    }
    free(buf);
    return NULL;
}

/* ---- send side ---- */

static void send_stream(struct sender *s, uint32_t dst, uint64_t seq, size_t len)
{
    flit_stream_out_t *o;
    uint8_t h[HDR_LEN];
    uint32_t t = s->idx, q = (uint32_t)seq;
    memcpy(h, &t, 4);
    memcpy(h + 4, &q, 4);
    CHECK_OK(flit_stream_begin(g.ep, flit_rank(dst), flit_handler(HS_STREAM),
                               HDR_LEN + len, 0, &o));
    CHECK_OK(flit_stream_send(o, h, HDR_LEN));
    size_t sent = 0;
    uint64_t r = seq + 7;
    while (sent < len) {
        size_t k = 1 + (size_t)(test_rand(&r) % PIECE_MAX);
        if (k > len - sent)
            k = len - sent;
        CHECK_OK(flit_stream_send(o, s->buf + sent, k));
        sent += k;
    }
    CHECK_OK(flit_stream_end(o));
}

static void send_tagged(struct sender *s, uint32_t dst, uint64_t seq, size_t len)
{
    uint32_t t = s->idx, q = (uint32_t)seq;
    memmove(s->buf + HDR_LEN, s->buf, len);
    memcpy(s->buf, &t, 4);
    memcpy(s->buf + 4, &q, 4);
    CHECK_OK(flit_tagged_send(g.tagged, flit_rank(dst), s->idx, s->buf, HDR_LEN + len));
}

static void wait_acked(struct sender *s, uint32_t dst, uint64_t n)
{
    MP_WAIT(g.ep, atomic_load(&s->acked[dst]) >= n);
}

static void send_long(struct sender *s, uint32_t dst, uint64_t seq, size_t len)
{
    wait_acked(s, dst, seq); /* its slot is free once the last was handled */
    uint32_t a[2] = {s->idx, (uint32_t)seq};
    uint64_t off = ((uint64_t)g.me * g.threads + s->idx) * g.slot;
    CHECK_OK(flit_am_long(g.ep, flit_rank(dst), flit_handler(H_LONG), s->buf, len, off, a,
                          2, 0));
}

static void send_put(struct sender *s, uint32_t dst, uint64_t seq, size_t len)
{
    wait_acked(s, dst, seq);
    uint64_t off = ((uint64_t)g.me * g.threads + s->idx) * g.slot;
    CHECK_OK(flit_rma_put(g.remotes[dst], off, s->buf, len, FLIT_RMA_REMOTE_DONE, NULL));
    /* Read it back, then let the owner check its memory. */
    CHECK_OK(flit_rma_get(g.remotes[dst], off, s->back, len, 0, NULL));
    size_t bad = mp_pattern_check(s->back, len, seed_of(g.me, s->idx, seq));
    if (bad != len)
        FAIL("thread %u's put %llu to rank %u read back: byte %zu of %zu differs", s->idx,
             (unsigned long long)seq, dst, bad, len);
    uint32_t a[3] = {s->idx, (uint32_t)seq, (uint32_t)len};
    CHECK_OK(flit_am_short(g.ep, flit_rank(dst), flit_handler(H_VERIFY), a, 3, 0));
}

static void *sender_main(void *arg)
{
    struct sender *s = arg;
    for (uint64_t i = 0; i < g.count; i++) {
        for (uint32_t d = 1; d < g.n; d++) {
            uint32_t dst = (g.me + d) % g.n;
            if (!targets(g.me, dst))
                continue;
            size_t len = length_of(s->idx, i);
            mp_pattern_fill(s->buf, len, seed_of(g.me, s->idx, i));
            switch (s->kind) {
            case K_STREAM:
                send_stream(s, dst, i, len);
                break;
            case K_TAGGED:
                send_tagged(s, dst, i, len);
                break;
            case K_LONG:
                send_long(s, dst, i, len);
                break;
            default:
                send_put(s, dst, i, len);
                break;
            }
        }
    }
    for (uint32_t d = 0; d < g.n; d++)
        if (targets(g.me, d) && (s->kind == K_LONG || s->kind == K_PUT))
            wait_acked(s, d, g.count);
    atomic_store(&s->done, 1);
    return NULL;
}

/* ---- set-up ---- */

static void parse(int argc, char **argv)
{
    g.threads = (unsigned)mp_arg_u64(argc, argv, "--threads", 4);
    g.count = test_scaled(mp_arg_u64(argc, argv, "--count", 200));
    g.size = (size_t)mp_arg_u64(argc, argv, "--size", 100000);
    g.all = mp_arg_flag(argc, argv, "--all");
    g.mixed = 1;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--kind") != 0)
            continue;
        g.mixed = strcmp(argv[i + 1], "mixed") == 0;
        int k = 0;
        while (k < K_COUNT && strcmp(argv[i + 1], kind_names[k]) != 0)
            k++;
        if (!g.mixed && k == K_COUNT)
            FAIL("--kind: stream, tagged, long, put or mixed, not %s", argv[i + 1]);
        g.kind = (enum kind)k;
    }
    if (g.threads < 1 || g.threads > MAX_THREADS || g.size < 64 || g.size > (1u << 26))
        FAIL("--threads 1..%d, --size 64..64 MiB", MAX_THREADS);
}

static bool uses(enum kind k)
{
    for (unsigned i = 0; i < g.threads; i++)
        if (kind_of(i) == k)
            return true;
    return false;
}

/* Exports the put region and imports every target's. */
static void rma_setup(void)
{
    size_t len = (size_t)g.n * g.threads * g.slot;
    CHECK_OK(flit_rma_alloc(g.ep, len, (void **)&g.region));
    CHECK_OK(flit_rma_export(g.ep, g.region, len, FLIT_RMA_READ | FLIT_RMA_WRITE, NULL, 0,
                             &g.exported));
    uint64_t id = flit_rma_region_id(g.exported);
    uint32_t a[2] = {(uint32_t)id, (uint32_t)(id >> 32)};
    for (uint32_t r = 0; r < g.n; r++)
        if (r != g.me)
            CHECK_OK(flit_am_short(g.ep, flit_rank(r), flit_handler(H_ID), a, 2, 0));
    for (uint32_t r = 0; r < g.n; r++) {
        if (!targets(g.me, r))
            continue;
        MP_WAIT(g.ep, atomic_load(&g.ids[r]) != 0);
        CHECK_OK(flit_rma_import(g.ep, flit_rank(r), atomic_load(&g.ids[r]) - 1,
                                 &g.remotes[r]));
    }
}

/* Messages this rank receives in all, and the tagged ones per tag. */
static uint64_t senders_to_me(void)
{
    uint64_t k = 0;
    for (uint32_t r = 0; r < g.n; r++)
        k += targets(r, g.me);
    return k;
}

static bool all_done(void)
{
    if (atomic_load(&g.received) != senders_to_me() * g.threads * g.count)
        return false;
    for (unsigned i = 0; i < g.threads; i++)
        if (!atomic_load(&g.s[i].done))
            return false;
    return true;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    if (g.n < 2 || g.n > MAX_RANKS) {
        fprintf(stderr, "senders runs with 2..%d ranks\n", MAX_RANKS);
        return TEST_SKIP;
    }
    g.slot = (g.size + 63) & ~(size_t)63;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE | FLIT_EP_PARAM_SEGMENT,
                          .thread_mode = FLIT_THREAD_SAFE,
                          .segment_size = uses(K_LONG) ? g.n * g.threads * g.slot : 0};
    CHECK_OK(flit_ep_create(&p, &g.ep));
    if (uses(K_LONG)) {
        void *seg;
        size_t sz;
        CHECK_OK(flit_ep_segment(g.ep, &seg, &sz));
        g.seg = seg;
    }
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_LONG), on_long, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ACK), on_ack, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_VERIFY), on_verify, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ID), on_id, NULL));
    CHECK_OK(flit_stream_register(g.ep, flit_handler(HS_STREAM), on_stream, NULL));
    flit_handler_t th; /* as a library on flit would take it */
    CHECK_OK(flit_ep_reserve_handlers(g.ep, 1, &th));
    CHECK(th.idx == FLIT_HANDLER_COUNT_DEFAULT - 1);
    CHECK_OK(flit_tagged_create(g.ep, th, &g.tagged));
    if (uses(K_PUT))
        rma_setup();
    CHECK_OK(flit_barrier(g.ep));

    double t0 = mp_now();
    struct receiver rx[MAX_THREADS];
    unsigned nrx = 0;
    for (unsigned i = 0; i < g.threads; i++) {
        if (kind_of(i) != K_TAGGED)
            continue;
        rx[nrx] = (struct receiver){.tag = i, .expect = senders_to_me() * g.count};
        CHECK(pthread_create(&rx[nrx].tid, NULL, receiver_main, &rx[nrx]) == 0);
        nrx++;
    }
    for (unsigned i = 0; i < g.threads; i++) {
        struct sender *s = &g.s[i];
        s->idx = i;
        s->kind = kind_of(i);
        s->buf = malloc(HDR_LEN + g.size);
        s->back = malloc(g.size);
        CHECK(s->buf && s->back);
        CHECK(pthread_create(&s->tid, NULL, sender_main, s) == 0);
    }
    MP_WAIT(g.ep, all_done());
    for (unsigned i = 0; i < g.threads; i++) {
        CHECK(pthread_join(g.s[i].tid, NULL) == 0);
        free(g.s[i].buf);
        free(g.s[i].back);
    }
    for (unsigned i = 0; i < nrx; i++)
        CHECK(pthread_join(rx[i].tid, NULL) == 0);
    double took = mp_now() - t0;
    for (uint32_t r = 0; r < g.n; r++)
        for (unsigned i = 0; i < g.threads; i++)
            CHECK(atomic_load(&g.next[r][i]) == (targets(r, g.me) ? g.count : 0));

    CHECK_OK(flit_barrier(g.ep));
    for (uint32_t r = 0; r < g.n; r++)
        if (g.remotes[r])
            CHECK_OK(flit_rma_release(g.remotes[r]));
    if (g.exported) {
        CHECK_OK(flit_barrier(g.ep)); /* nobody still reads it */
        CHECK_OK(flit_rma_unexport(g.exported));
        CHECK_OK(flit_rma_free(g.ep, g.region));
    }
    CHECK_OK(flit_tagged_destroy(g.tagged));
    CHECK_OK(flit_finalize());
    printf("senders: rank %u OK: %u threads (%s) x %llu messages to %s, up to %zu bytes, "
           "%llu received, %.2f s\n",
           g.me, g.threads, g.mixed ? "mixed" : kind_names[g.kind],
           (unsigned long long)g.count, g.all ? "every rank" : "one rank", g.size,
           (unsigned long long)atomic_load(&g.received), took);
    return 0;
}
