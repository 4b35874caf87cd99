/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tagged messaging (<flit/tagged.h>) between real processes. Every rank
 * takes part in every part; rank r sends to succ = r + 1 and receives from
 * pred = r - 1 (mod n) unless said otherwise. Payloads are deterministic
 * patterns of (sender, receiver, tag, sequence); those of 32 bytes or more
 * start with that identity, so a receiver that took "any" message knows
 * which one it got and checks every byte of it.
 *
 *   order        matching order against a model. The receiver posts 24
 *                receives with exact, wildcard (FLIT_ANY_TAG,
 *                FLIT_ANY_SOURCE) and never-matching specs in a shuffled
 *                order, either all before the 24 messages are sent or all
 *                after they arrived (unexpected); a model of MPI's rules
 *                predicts which message each receive gets, which receives
 *                stay posted (they must cancel) and which messages stay
 *                unexpected (taken later by any/any receives, in arrival
 *                order).
 *   nonovertake  every rank sends every rank (itself too) --count messages
 *                with one tag, mostly small, some 64-128 KiB and 1 MiB;
 *                receives with FLIT_ANY_SOURCE in a sliding window must see
 *                each source's messages in the order sent.
 *   sizes        0, 1, 8, 100, 4096, 64 KiB + 3, 1 MiB + 7, 4 MiB: received
 *                unexpected (after the sender's marker), posted (before the
 *                sends), and right after a probe found them while the large
 *                ones are still arriving. Byte for byte, guard bytes intact.
 *   truncate     receive buffers too small: FLIT_ERR_TOO_LARGE, received =
 *                size, the prefix right, nothing written past it, and the
 *                messages after it unaffected; posted and unexpected.
 *   many         every rank sends rank 0 messages of random tags; rank 0
 *                takes them with any/any and checks the order per source.
 *                Then all-to-all rounds with isend / irecv / waitall of
 *                mixed sizes (0 .. 300 KB).
 *   probe        probe / iprobe report source, tag and length, do not take
 *                the message, and the receive then gets it; a probe that
 *                finds nothing times out.
 *   cancel       a posted receive cancels; a cancelled receive takes no
 *                message; a matched receive or a send does not cancel.
 *
 *     flitrun -n 3 mp_tagged [--test all|order|nonovertake|sizes|truncate|
 *                            many|probe|cancel] [--count N] [--seed S]
 *                            [--thread-safe] [--expect-faults] [--segment]
 *
 * --segment: sizes receives into the endpoint's segment, so that on shared
 * memory a posted receive of the long sizes gets its message placed there
 * by the sender (stream.h); places must have been offered, and the guard
 * behind each buffer stays as it was.
 *
 * Environment: FLIT_TRANSPORT=udp, FLIT_DROP_RATE and friends,
 * FLIT_PROGRESS_THREAD (handlers then run on another thread than the one
 * that posts and waits). --expect-faults: the job's datagram counters must
 * show injected faults and retransmissions.
 */
#include <flit/tagged.h>

#include "mp.h"

enum { H_DATA = 10, H_CTL = 11 };

#define GUARD    64u
#define GUARD_B  0xa5
#define LIMIT_US ((int64_t)(MP_WAIT_LIMIT_S * 1e6))

struct head {
    uint32_t src, dst;
    uint64_t tag, seq, len;
};

static struct {
    flit_ep_t *ep;
    flit_tagged_t *t;   /* data */
    flit_tagged_t *ctl; /* markers: "all I sent before has arrived" */
    uint32_t me, n, succ, pred;
    uint64_t seed, count;
    uint8_t *scratch; /* expected payloads */
    size_t scratch_size;
    uint64_t ctl_seq;
    uint8_t *seg; /* --segment: where sizes receives, in turn */
    size_t seg_size, seg_used;
} g;

/* ---------------------------------------------------------------- payloads */

static uint64_t pseed(uint32_t src, uint32_t dst, uint64_t tag, uint64_t seq)
{
    return mp_mix((uint64_t)src << 32 | dst, tag, seq, g.seed);
}

static void fill_msg(uint8_t *buf, size_t len, uint32_t src, uint32_t dst, uint64_t tag,
                     uint64_t seq)
{
    mp_pattern_fill(buf, len, pseed(src, dst, tag, seq));
    if (len >= sizeof(struct head)) {
        struct head h = {src, dst, tag, seq, len};
        memcpy(buf, &h, sizeof h);
    }
}

static struct head read_head(const uint8_t *buf, size_t len)
{
    struct head h;
    CHECK(len >= sizeof h);
    memcpy(&h, buf, sizeof h);
    return h;
}

/* The first n bytes of buf must be those of the message. */
static void check_msg(const uint8_t *buf, size_t n, size_t len, uint32_t src,
                      uint32_t dst, uint64_t tag, uint64_t seq, const char *what)
{
    CHECK(len <= g.scratch_size && n <= len);
    fill_msg(g.scratch, len, src, dst, tag, seq);
    if (n && memcmp(buf, g.scratch, n) != 0) {
        size_t i = 0;
        while (buf[i] == g.scratch[i])
            i++;
        FAIL("%s: message %llu (tag %llu, %zu bytes) from rank %u: byte %zu of %zu is "
             "%#x, expected %#x",
             what, (unsigned long long)seq, (unsigned long long)tag, len, src, i, n,
             buf[i], g.scratch[i]);
    }
}

/* A receive buffer of size bytes followed by GUARD bytes that must stay. */
static uint8_t *guarded(size_t size)
{
    uint8_t *b = malloc(size + GUARD);
    CHECK(b);
    memset(b, 0, size);
    memset(b + size, GUARD_B, GUARD);
    return b;
}

/* The same in the segment (--segment), line-aligned; never given back. */
static uint8_t *seg_guarded(size_t size)
{
    size_t at = (g.seg_used + 63) & ~(size_t)63;
    CHECK(at + size + GUARD <= g.seg_size);
    g.seg_used = at + size + GUARD;
    memset(g.seg + at, 0, size);
    memset(g.seg + at + size, GUARD_B, GUARD);
    return g.seg + at;
}

static void check_guard(const uint8_t *b, size_t size, const char *what)
{
    for (size_t i = 0; i < GUARD; i++)
        if (b[size + i] != GUARD_B)
            FAIL("%s: byte %zu past the %zu-byte buffer was written", what, i, size);
}

/* ---------------------------------------------------------------- bounded waits */

static flit_status wait_req(flit_request_t **r, flit_tagged_info_t *info)
{
    flit_status st = flit_tagged_wait(r, LIMIT_US, info);
    if (st == FLIT_ERR_TIMEOUT) {
        flit_ep_dump(g.ep, 2);
        FAIL("a request did not complete in %.0f s", MP_WAIT_LIMIT_S);
    }
    return st;
}

static flit_status wait_all(size_t n, flit_request_t **r, flit_tagged_info_t *infos)
{
    flit_status st = flit_tagged_waitall(n, r, LIMIT_US, infos);
    if (st == FLIT_ERR_TIMEOUT) {
        flit_ep_dump(g.ep, 2);
        FAIL("waitall: requests did not complete in %.0f s", MP_WAIT_LIMIT_S);
    }
    for (size_t i = 0; i < n; i++)
        CHECK(r[i] == NULL);
    return st;
}

static void check_info(const flit_tagged_info_t *in, uint32_t src, uint64_t tag,
                       size_t len, size_t received, flit_status st, const char *what)
{
    if (in->source.idx != src || in->tag != tag || in->length != len ||
        in->received != received || in->status != st)
        FAIL("%s: info says rank %u, tag %llu, length %zu, received %zu, %s; expected "
             "rank %u, tag %llu, length %zu, received %zu, %s",
             what, in->source.idx, (unsigned long long)in->tag, in->length, in->received,
             flit_status_name(in->status), src, (unsigned long long)tag, len, received,
             flit_status_name(st));
}

/* Markers on the control context: when the one from pred is in, everything
   pred sent on the data context before it has arrived (one order per pair,
   whatever the handler index). */
static void marker_exchange(void)
{
    uint64_t tag = ++g.ctl_seq;
    CHECK_OK(flit_tagged_send(g.ctl, flit_rank(g.succ), tag, NULL, 0));
    flit_request_t *r;
    CHECK_OK(flit_tagged_irecv(g.ctl, flit_rank(g.pred), tag, NULL, 0, &r));
    CHECK_OK(wait_req(&r, NULL));
}

static void expect_nothing_left(const char *what)
{
    int found = 1;
    flit_tagged_info_t info;
    CHECK_OK(
        flit_tagged_iprobe(g.t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, &found, &info));
    if (found)
        FAIL("%s: a message from rank %u (tag %llu, %zu bytes) is left over", what,
             info.source.idx, (unsigned long long)info.tag, info.length);
}

/* ---------------------------------------------------------------- order */

#define A_MSGS   24
#define A_RECVS  24
#define A_BUF    160
#define A_ROUNDS 6
#define A_NOTAG  99

struct a_msg {
    uint64_t tag;
    size_t len;
};
struct a_recv {
    uint32_t src;
    uint64_t tag;
};

/* What src sends dst in a round, and the receives dst posts for them. */
static void a_gen(uint32_t src, uint32_t dst, unsigned round, struct a_msg *m,
                  struct a_recv *rv)
{
    uint64_t rng = mp_mix(g.seed, src, dst, 0xa000 + round);
    for (unsigned i = 0; i < A_MSGS; i++) {
        m[i].tag = 1 + test_rand(&rng) % 6;
        m[i].len =
            sizeof(struct head) + test_rand(&rng) % (A_BUF - sizeof(struct head) + 1);
    }
    unsigned perm[A_RECVS];
    for (unsigned k = 0; k < A_RECVS; k++)
        perm[k] = k % A_MSGS;
    for (unsigned k = A_RECVS - 1; k > 0; k--) {
        unsigned j = (unsigned)(test_rand(&rng) % (k + 1)), x = perm[k];
        perm[k] = perm[j];
        perm[j] = x;
    }
    for (unsigned k = 0; k < A_RECVS; k++) {
        unsigned x = (unsigned)(test_rand(&rng) % 100),
                 y = (unsigned)(test_rand(&rng) % 100);
        rv[k].tag = x < 25 ? FLIT_ANY_TAG : x < 30 ? A_NOTAG : m[perm[k]].tag;
        /* dst itself as the source: it never sends itself on this context */
        rv[k].src = y < 45 ? FLIT_ANY_SOURCE : (y < 50 && src != dst) ? dst : src;
    }
}

static bool a_match(const struct a_recv *r, uint32_t src, const struct a_msg *m)
{
    return (r->src == FLIT_ANY_SOURCE || r->src == src) &&
           (r->tag == FLIT_ANY_TAG || r->tag == m->tag);
}

/*
 * MPI's rules on one sender's messages: assign[k] is the message receive k
 * gets (-1: none, it stays posted); left[] the messages no receive took, in
 * arrival order.
 */
static void a_model(bool posted_first, uint32_t src, const struct a_msg *m,
                    const struct a_recv *rv, int *assign, int *left, unsigned *nleft)
{
    bool taken[A_MSGS] = {0};
    for (unsigned k = 0; k < A_RECVS; k++)
        assign[k] = -1;
    if (posted_first) {
        /* Each message, as it arrives, takes the first posted receive that
           matches. */
        for (unsigned i = 0; i < A_MSGS; i++)
            for (unsigned k = 0; k < A_RECVS; k++)
                if (assign[k] < 0 && a_match(&rv[k], src, &m[i])) {
                    assign[k] = (int)i;
                    taken[i] = true;
                    break;
                }
    } else {
        /* Each receive, as it is posted, takes the first arrived message. */
        for (unsigned k = 0; k < A_RECVS; k++)
            for (unsigned i = 0; i < A_MSGS; i++)
                if (!taken[i] && a_match(&rv[k], src, &m[i])) {
                    assign[k] = (int)i;
                    taken[i] = true;
                    break;
                }
    }
    *nleft = 0;
    for (unsigned i = 0; i < A_MSGS; i++)
        if (!taken[i])
            left[(*nleft)++] = (int)i;
}

static void a_send_all(const struct a_msg *m, unsigned round)
{
    uint8_t buf[A_BUF];
    for (unsigned i = 0; i < A_MSGS; i++) {
        fill_msg(buf, m[i].len, g.me, g.succ, m[i].tag, (uint64_t)round << 16 | i);
        CHECK_OK(flit_tagged_send(g.t, flit_rank(g.succ), m[i].tag, buf, m[i].len));
    }
}

static void a_check(const uint8_t *buf, const flit_tagged_info_t *info,
                    const struct a_msg *m, unsigned i, unsigned round, const char *what)
{
    check_info(info, g.pred, m[i].tag, m[i].len, m[i].len, FLIT_OK, what);
    struct head h = read_head(buf, info->received);
    uint64_t seq = (uint64_t)round << 16 | i;
    if (h.seq != seq)
        FAIL("%s (round %u): got message %llu, the model says %u", what, round,
             (unsigned long long)(h.seq & 0xffff), i);
    check_msg(buf, m[i].len, m[i].len, g.pred, g.me, m[i].tag, seq, what);
}

static void test_order(void)
{
    static uint8_t bufs[A_RECVS][A_BUF];
    unsigned matched = 0, stayed = 0, leftover = 0;
    for (unsigned round = 0; round < A_ROUNDS; round++) {
        bool posted_first = round % 2 == 0;
        struct a_msg out[A_MSGS], in[A_MSGS];
        struct a_recv unused[A_RECVS], rv[A_RECVS];
        a_gen(g.me, g.succ, round, out, unused);
        a_gen(g.pred, g.me, round, in, rv);
        int assign[A_RECVS], left[A_MSGS];
        unsigned nleft;
        a_model(posted_first, g.pred, in, rv, assign, left, &nleft);
        flit_request_t *req[A_RECVS];
        const char *what =
            posted_first ? "order, posted first" : "order, unexpected first";

        if (posted_first) {
            for (unsigned k = 0; k < A_RECVS; k++)
                CHECK_OK(flit_tagged_irecv(g.t, flit_rank(rv[k].src), rv[k].tag, bufs[k],
                                           A_BUF, &req[k]));
            CHECK_OK(flit_barrier(g.ep));
            a_send_all(out, round);
            marker_exchange();
        } else {
            a_send_all(out, round);
            marker_exchange();
            for (unsigned k = 0; k < A_RECVS; k++) {
                CHECK_OK(flit_tagged_irecv(g.t, flit_rank(rv[k].src), rv[k].tag, bufs[k],
                                           A_BUF, &req[k]));
                if (assign[k] < 0)
                    continue;
                /* It had arrived: the receive is complete at once. */
                int done = 0;
                flit_tagged_info_t info;
                CHECK_OK(flit_tagged_test(&req[k], &done, &info));
                if (!done)
                    FAIL("%s: receive %u took message %d, which had arrived, but is "
                         "not complete",
                         what, k, assign[k]);
                CHECK(req[k] == NULL);
                a_check(bufs[k], &info, in, (unsigned)assign[k], round, what);
            }
        }
        for (unsigned k = 0; k < A_RECVS; k++) {
            if (assign[k] < 0) {
                /* Nothing was for it: still posted, so it cancels. */
                flit_status st = flit_tagged_cancel(&req[k]);
                if (st != FLIT_OK)
                    FAIL("%s (round %u): receive %u (rank %d, tag %lld) should match "
                         "nothing, but cancel says %s",
                         what, round, k, (int)rv[k].src, (long long)rv[k].tag,
                         flit_status_name(st));
                CHECK(req[k] == NULL);
                stayed++;
            } else if (req[k]) {
                flit_tagged_info_t info;
                CHECK_OK(wait_req(&req[k], &info));
                a_check(bufs[k], &info, in, (unsigned)assign[k], round, what);
            }
            if (assign[k] >= 0)
                matched++;
        }
        /* The rest wait in arrival order. */
        for (unsigned j = 0; j < nleft; j++) {
            uint8_t buf[A_BUF];
            flit_tagged_info_t info;
            CHECK_OK(flit_tagged_recv(g.t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, buf,
                                      sizeof buf, &info));
            a_check(buf, &info, in, (unsigned)left[j], round, "order, left over");
            leftover++;
        }
        expect_nothing_left(what);
        CHECK_OK(flit_barrier(g.ep));
    }
    printf("tagged: rank %u: order: %u matched as the model says, %u stayed posted, "
           "%u left over\n",
           g.me, matched, stayed, leftover);
}

/* ---------------------------------------------------------------- nonovertake */

#define B_TAG 7
#define B_WIN 8
#define B_MAX ((1u << 20) + 4096)

static size_t b_len(uint32_t src, uint32_t dst, uint64_t seq)
{
    uint64_t h = mp_mix(g.seed, src, dst, seq ^ 0xb0b0);
    if (seq % 509 == 508)
        return (1u << 20) + h % 4096;
    if (seq % 61 == 60)
        return 65536 + h % 65536;
    return sizeof(struct head) + h % 97;
}

struct b_state {
    uint8_t *buf[B_WIN];
    flit_request_t *req[B_WIN];
    unsigned head, live;
    uint64_t posted, received, want;
    uint64_t *next_seq; /* per source */
};

static void b_post(struct b_state *b)
{
    while (b->live < B_WIN && b->posted < b->want) {
        unsigned s = (b->head + b->live) % B_WIN;
        CHECK_OK(flit_tagged_irecv(g.t, flit_rank(FLIT_ANY_SOURCE), B_TAG, b->buf[s],
                                   B_MAX, &b->req[s]));
        b->live++;
        b->posted++;
    }
}

/* Finishes the oldest receive if it is complete (or, block: when it is). */
static bool b_take(struct b_state *b, bool block)
{
    if (!b->live)
        return false;
    unsigned s = b->head;
    flit_tagged_info_t info;
    if (block) {
        CHECK_OK(wait_req(&b->req[s], &info));
    } else {
        int done = 0;
        CHECK_OK(flit_tagged_test(&b->req[s], &done, &info));
        if (!done)
            return false;
    }
    uint32_t src = info.source.idx;
    CHECK(src < g.n && info.tag == B_TAG && info.status == FLIT_OK);
    uint64_t seq = b->next_seq[src]++;
    size_t len = b_len(src, g.me, seq);
    struct head h = read_head(b->buf[s], info.received);
    if (h.src != src || h.seq != seq)
        FAIL("nonovertake: from rank %u, expected message %llu next, got rank %u's %llu",
             src, (unsigned long long)seq, h.src, (unsigned long long)h.seq);
    check_info(&info, src, B_TAG, len, len, FLIT_OK, "nonovertake");
    check_msg(b->buf[s], len, len, src, g.me, B_TAG, seq, "nonovertake");
    b->head = (b->head + 1) % B_WIN;
    b->live--;
    b->received++;
    return true;
}

static void test_nonovertake(void)
{
    struct b_state b = {.want = g.count * g.n};
    b.next_seq = calloc(g.n, sizeof *b.next_seq);
    uint8_t *sbuf = malloc(B_MAX);
    CHECK(b.next_seq && sbuf);
    for (unsigned i = 0; i < B_WIN; i++)
        CHECK(b.buf[i] = malloc(B_MAX));
    CHECK_OK(flit_barrier(g.ep));
    double t0 = mp_now();
    uint64_t big = 0;
    /* Message k to every rank before message k + 1; receives in between. */
    for (uint64_t k = 0; k < g.count; k++) {
        for (uint32_t j = 0; j < g.n; j++) {
            uint32_t dst = (g.me + j) % g.n;
            size_t len = b_len(g.me, dst, k);
            big += len > 65536;
            fill_msg(sbuf, len, g.me, dst, B_TAG, k);
            if (k % 3 == 0) { /* isend: complete at once */
                flit_request_t *r;
                CHECK_OK(flit_tagged_isend(g.t, flit_rank(dst), B_TAG, sbuf, len, &r));
                int done = 0;
                CHECK_OK(flit_tagged_test(&r, &done, NULL));
                CHECK(done && r == NULL);
            } else {
                CHECK_OK(flit_tagged_send(g.t, flit_rank(dst), B_TAG, sbuf, len));
            }
            b_post(&b);
            while (b_take(&b, false))
                b_post(&b);
        }
    }
    while (b.received < b.want) {
        b_post(&b);
        b_take(&b, true);
    }
    for (uint32_t r = 0; r < g.n; r++)
        if (b.next_seq[r] != g.count)
            FAIL("nonovertake: %llu messages from rank %u, expected %llu",
                 (unsigned long long)b.next_seq[r], r, (unsigned long long)g.count);
    expect_nothing_left("nonovertake");
    CHECK_OK(flit_barrier(g.ep));
    printf("tagged: rank %u: nonovertake: %llu messages in order from %u ranks "
           "(%llu sent over 64 KiB), %.2f s\n",
           g.me, (unsigned long long)b.received, g.n, (unsigned long long)big,
           mp_now() - t0);
    for (unsigned i = 0; i < B_WIN; i++)
        free(b.buf[i]);
    free(sbuf);
    free(b.next_seq);
}

/* ---------------------------------------------------------------- sizes */

#define C_NSIZES 8
static const size_t c_sizes[C_NSIZES] = {
    0, 1, 8, 100, 4096, 65536 + 3, (1u << 20) + 7, 4u << 20};

static void c_send_all(uint64_t tag0, uint8_t *sbuf)
{
    for (unsigned i = 0; i < C_NSIZES; i++) {
        fill_msg(sbuf, c_sizes[i], g.me, g.succ, tag0 + i, 0);
        CHECK_OK(flit_tagged_send(g.t, flit_rank(g.succ), tag0 + i,
                                  c_sizes[i] ? sbuf : NULL, c_sizes[i]));
    }
}

static void c_check(uint8_t *buf, const flit_tagged_info_t *info, uint64_t tag,
                    size_t len, const char *what)
{
    check_info(info, g.pred, tag, len, len, FLIT_OK, what);
    check_msg(buf, len, len, g.pred, g.me, tag, 0, what);
    check_guard(buf, len, what);
}

static void test_sizes(void)
{
    uint8_t *sbuf = malloc(4u << 20);
    uint8_t *rbuf[C_NSIZES];
    CHECK(sbuf);
    for (unsigned i = 0; i < C_NSIZES; i++)
        rbuf[i] = g.seg ? seg_guarded(c_sizes[i]) : guarded(c_sizes[i]);
    flit_tagged_info_t info[C_NSIZES];
    flit_request_t *req[C_NSIZES];

    /* Unexpected: everything has arrived before the receives. */
    c_send_all(100, sbuf);
    marker_exchange();
    for (unsigned i = 0; i < C_NSIZES; i++) {
        uint64_t tag = 100 + i;
        if (i % 2) {
            CHECK_OK(flit_tagged_recv(g.t, flit_rank(g.pred), tag, rbuf[i], c_sizes[i],
                                      &info[i]));
        } else {
            CHECK_OK(flit_tagged_irecv(g.t, flit_rank(FLIT_ANY_SOURCE), tag, rbuf[i],
                                       c_sizes[i], &req[i]));
            CHECK_OK(wait_req(&req[i], &info[i]));
        }
        c_check(rbuf[i], &info[i], tag, c_sizes[i], "sizes, unexpected");
        memset(rbuf[i], 0, c_sizes[i]);
    }
    expect_nothing_left("sizes, unexpected");
    CHECK_OK(flit_barrier(g.ep));

    /* Posted: the receives wait before anything is sent; largest first. */
    for (unsigned i = C_NSIZES; i-- > 0;)
        CHECK_OK(flit_tagged_irecv(g.t, flit_rank(g.pred), 200 + i, rbuf[i], c_sizes[i],
                                   &req[i]));
    CHECK_OK(flit_barrier(g.ep));
    c_send_all(200, sbuf);
    CHECK_OK(wait_all(C_NSIZES, req, info));
    for (unsigned i = 0; i < C_NSIZES; i++) {
        c_check(rbuf[i], &info[i], 200 + i, c_sizes[i], "sizes, posted");
        memset(rbuf[i], 0, c_sizes[i]);
    }
    CHECK_OK(flit_barrier(g.ep));

    /* Probed, then received at once: the large ones are still arriving and
       the receive takes them over from the library's buffer. */
    for (unsigned i = 0; i < C_NSIZES; i++) {
        uint64_t tag = 300 + i;
        fill_msg(sbuf, c_sizes[i], g.me, g.succ, tag, 0);
        flit_request_t *sr;
        CHECK_OK(flit_tagged_isend(g.t, flit_rank(g.succ), tag, sbuf, c_sizes[i], &sr));
        flit_tagged_info_t pi;
        CHECK_OK(flit_tagged_probe(g.t, flit_rank(FLIT_ANY_SOURCE), tag, LIMIT_US, &pi));
        check_info(&pi, g.pred, tag, c_sizes[i], 0, FLIT_OK, "sizes, probe");
        CHECK_OK(flit_tagged_irecv(g.t, pi.source, pi.tag, rbuf[i], pi.length, &req[i]));
        CHECK_OK(wait_req(&req[i], &info[i]));
        c_check(rbuf[i], &info[i], tag, c_sizes[i], "sizes, probed");
        flit_tagged_info_t si;
        CHECK_OK(wait_req(&sr, &si));
        check_info(&si, g.me, tag, c_sizes[i], c_sizes[i], FLIT_OK, "sizes, isend");
    }
    expect_nothing_left("sizes");
    CHECK_OK(flit_barrier(g.ep));
    printf("tagged: rank %u: sizes 0 .. 4 MiB unexpected, posted and probed: OK\n", g.me);
    for (unsigned i = 0; i < C_NSIZES; i++)
        if (!g.seg)
            free(rbuf[i]);
    free(sbuf);
    if (g.seg) {
        const char *tp = getenv("FLIT_TRANSPORT");
        flit_stats_t st = {.struct_size = sizeof st};
        CHECK_OK(flit_ep_stats(g.ep, &st));
        uint64_t pulled = mp_counter(g.ep, "stream.pulled_bytes");
        const char *path = mp_bulk_path();
        printf("tagged: rank %u: into the segment: %llu places offered, %llu bytes "
               "placed, %llu pulled (%s)\n",
               g.me, (unsigned long long)st.stream_offers,
               (unsigned long long)st.stream_placed_bytes, (unsigned long long)pulled,
               path);
        /* One copy either way: the sender placed the bytes where offered,
           or the receiver pulled them there. Over UDP neither can be. */
        if (tp && strcmp(tp, "udp") == 0)
            CHECK(pulled == 0);
        else if (strcmp(path, "ring") == 0)
            CHECK(st.stream_offers > 0 && st.stream_placed_bytes > 0 && pulled == 0);
        else if (strcmp(path, "pull") == 0)
            CHECK(pulled > 0);
        else
            CHECK(st.stream_placed_bytes + pulled > 0);
    }
}

/* ---------------------------------------------------------------- truncate */

#define D_N 5
struct d_case {
    uint64_t tag;
    size_t len, size;
};
static const struct d_case d_cases[D_N] = {
    {500, 1000, 10},       /* truncated */
    {501, 50, 100},        /* fits */
    {500, 100, 100},       /* same tag as the first, exact fit */
    {502, 1u << 20, 4096}, /* truncated, a long one (the rest skipped) */
    {503, 16, 0},          /* truncated to nothing */
};

static void d_send_all(uint64_t tag_off, uint8_t *sbuf)
{
    for (unsigned i = 0; i < D_N; i++) {
        const struct d_case *c = &d_cases[i];
        fill_msg(sbuf, c->len, g.me, g.succ, c->tag + tag_off, i);
        CHECK_OK(
            flit_tagged_send(g.t, flit_rank(g.succ), c->tag + tag_off, sbuf, c->len));
    }
}

static void d_check(uint8_t *buf, unsigned i, const flit_tagged_info_t *info,
                    flit_status st, uint64_t tag_off, const char *what)
{
    const struct d_case *c = &d_cases[i];
    size_t got = c->len < c->size ? c->len : c->size;
    flit_status want = c->len > c->size ? FLIT_ERR_TOO_LARGE : FLIT_OK;
    if (st != want)
        FAIL("%s: case %u returned %s, expected %s", what, i, flit_status_name(st),
             flit_status_name(want));
    check_info(info, g.pred, c->tag + tag_off, c->len, got, want, what);
    check_msg(buf, got, c->len, g.pred, g.me, c->tag + tag_off, i, what);
    check_guard(buf, c->size, what);
}

static void test_truncate(void)
{
    uint8_t *sbuf = malloc(1u << 20);
    uint8_t *rbuf[D_N];
    CHECK(sbuf);
    for (unsigned i = 0; i < D_N; i++)
        rbuf[i] = guarded(d_cases[i].size);
    flit_tagged_info_t info[D_N];
    flit_request_t *req[D_N];

    /* Posted: straight into the receive's buffer, the rest skipped. */
    for (unsigned i = 0; i < D_N; i++)
        CHECK_OK(flit_tagged_irecv(g.t, flit_rank(g.pred), d_cases[i].tag, rbuf[i],
                                   d_cases[i].size, &req[i]));
    CHECK_OK(flit_barrier(g.ep));
    d_send_all(0, sbuf);
    /* The first request that is not OK: the first case. */
    CHECK_ST(wait_all(D_N, req, info), FLIT_ERR_TOO_LARGE);
    for (unsigned i = 0; i < D_N; i++)
        d_check(rbuf[i], i, &info[i], info[i].status, 0, "truncate, posted");
    CHECK_OK(flit_barrier(g.ep));

    /* Unexpected: from the library's buffer. */
    d_send_all(10, sbuf);
    marker_exchange();
    for (unsigned i = 0; i < D_N; i++) {
        flit_status st =
            flit_tagged_recv(g.t, flit_rank(FLIT_ANY_SOURCE), d_cases[i].tag + 10,
                             rbuf[i], d_cases[i].size, &info[i]);
        d_check(rbuf[i], i, &info[i], st, 10, "truncate, unexpected");
    }
    expect_nothing_left("truncate");
    CHECK_OK(flit_barrier(g.ep));
    printf("tagged: rank %u: truncate: OK\n", g.me);
    for (unsigned i = 0; i < D_N; i++)
        free(rbuf[i]);
    free(sbuf);
}

/* ---------------------------------------------------------------- many */

static uint64_t e_tag(uint32_t src, uint64_t seq)
{
    return 1 + mp_mix(g.seed, src, seq, 0xe7) % 4;
}

static size_t e_len(uint32_t src, uint32_t dst, uint64_t round)
{
    static const size_t pick[6] = {0, 1, 100, 4096, 65536 + 11, 300000};
    uint64_t h = mp_mix(g.seed, src, dst, round ^ 0xe1e1);
    size_t n = pick[h % 6];
    return n > 100 ? n - (size_t)(h >> 32) % 100 : n;
}

static void test_many(void)
{
    /* Everyone to rank 0, tags at random, taken with any / any. */
    uint64_t k = g.count / 2 ? g.count / 2 : 1;
    uint8_t buf[256];
    CHECK_OK(flit_barrier(g.ep));
    if (g.me != 0) {
        for (uint64_t i = 0; i < k; i++) {
            size_t len = sizeof(struct head) + (size_t)(i * 37 % 200);
            fill_msg(buf, len, g.me, 0, e_tag(g.me, i), i);
            CHECK_OK(flit_tagged_send(g.t, flit_rank(0), e_tag(g.me, i), buf, len));
        }
    } else {
        uint64_t *next = calloc(g.n, sizeof *next);
        CHECK(next);
        for (uint64_t i = 0; i < k * (g.n - 1); i++) {
            flit_tagged_info_t info;
            CHECK_OK(flit_tagged_recv(g.t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, buf,
                                      sizeof buf, &info));
            uint32_t src = info.source.idx;
            CHECK(src > 0 && src < g.n);
            uint64_t seq = next[src]++;
            struct head h = read_head(buf, info.received);
            if (h.seq != seq)
                FAIL("many: from rank %u, message %llu came where %llu was due", src,
                     (unsigned long long)h.seq, (unsigned long long)seq);
            size_t len = sizeof(struct head) + (size_t)(seq * 37 % 200);
            check_info(&info, src, e_tag(src, seq), len, len, FLIT_OK, "many to one");
            check_msg(buf, len, len, src, 0, info.tag, seq, "many to one");
        }
        for (uint32_t r = 1; r < g.n; r++)
            CHECK(next[r] == k);
        free(next);
    }
    expect_nothing_left("many to one");
    CHECK_OK(flit_barrier(g.ep));

    /* All to all, isend / irecv / waitall, every size each round. */
    unsigned rounds = (unsigned)test_scaled(24);
    size_t n2 = 2 * (size_t)g.n;
    flit_request_t **req = calloc(n2, sizeof *req);
    flit_tagged_info_t *info = calloc(n2, sizeof *info);
    uint8_t **sb = calloc(g.n, sizeof *sb), **rb = calloc(g.n, sizeof *rb);
    CHECK(req && info && sb && rb);
    uint64_t bytes = 0;
    for (unsigned round = 0; round < rounds; round++) {
        uint64_t tag = 5000 + round;
        for (uint32_t r = 0; r < g.n; r++) {
            size_t in = e_len(r, g.me, round), out = e_len(g.me, r, round);
            rb[r] = guarded(in);
            sb[r] = malloc(out ? out : 1);
            CHECK(sb[r]);
            fill_msg(sb[r], out, g.me, r, tag, round);
            /* Half the rounds take any source into a buffer for the
               largest: the tag is per round, the source from the info. */
            CHECK_OK(flit_tagged_irecv(g.t, flit_rank(r), tag, rb[r], in, &req[r]));
        }
        for (uint32_t j = 0; j < g.n; j++) {
            uint32_t dst = (g.me + j) % g.n;
            CHECK_OK(flit_tagged_isend(g.t, flit_rank(dst), tag, sb[dst],
                                       e_len(g.me, dst, round), &req[g.n + dst]));
        }
        CHECK_OK(wait_all(n2, req, info));
        for (uint32_t r = 0; r < g.n; r++) {
            size_t in = e_len(r, g.me, round), out = e_len(g.me, r, round);
            check_info(&info[r], r, tag, in, in, FLIT_OK, "all to all");
            check_msg(rb[r], in, in, r, g.me, tag, round, "all to all");
            check_guard(rb[r], in, "all to all");
            check_info(&info[g.n + r], g.me, tag, out, out, FLIT_OK, "all to all, isend");
            bytes += in;
            free(rb[r]);
            free(sb[r]);
        }
    }
    expect_nothing_left("all to all");
    CHECK_OK(flit_barrier(g.ep));
    printf("tagged: rank %u: many: %llu to rank 0 in order per source; %u all-to-all "
           "rounds, %llu bytes in\n",
           g.me, (unsigned long long)(g.me ? k : k * (g.n - 1)), rounds,
           (unsigned long long)bytes);
    free(req);
    free(info);
    free(sb);
    free(rb);
}

/* ---------------------------------------------------------------- probe */

static void test_probe(void)
{
    static const size_t lens[3] = {777, 0, 2u << 20};
    static const uint64_t tags[3] = {600, 601, 602};
    uint8_t *sbuf = malloc(2u << 20);
    CHECK(sbuf);
    for (unsigned i = 0; i < 3; i++) {
        fill_msg(sbuf, lens[i], g.me, g.succ, tags[i], i);
        CHECK_OK(flit_tagged_send(g.t, flit_rank(g.succ), tags[i], sbuf, lens[i]));
    }
    flit_tagged_info_t pi, info;
    int found = 0;

    /* By tag, any source: found, and not taken by looking. */
    CHECK_OK(flit_tagged_probe(g.t, flit_rank(FLIT_ANY_SOURCE), 600, LIMIT_US, &pi));
    check_info(&pi, g.pred, 600, 777, 0, FLIT_OK, "probe");
    CHECK_OK(flit_tagged_iprobe(g.t, flit_rank(g.pred), 600, &found, &pi));
    CHECK(found);
    check_info(&pi, g.pred, 600, 777, 0, FLIT_OK, "iprobe");
    uint8_t *b = guarded(pi.length);
    CHECK_OK(flit_tagged_recv(g.t, pi.source, pi.tag, b, pi.length, &info));
    check_info(&info, g.pred, 600, 777, 777, FLIT_OK, "probe, then recv");
    check_msg(b, 777, 777, g.pred, g.me, 600, 0, "probe, then recv");
    check_guard(b, 777, "probe, then recv");
    free(b);

    /* Any tag from pred: the next in arrival order, zero bytes long. */
    CHECK_OK(flit_tagged_probe(g.t, flit_rank(g.pred), FLIT_ANY_TAG, LIMIT_US, &pi));
    check_info(&pi, g.pred, 601, 0, 0, FLIT_OK, "probe, any tag");
    CHECK_OK(flit_tagged_recv(g.t, pi.source, pi.tag, NULL, 0, &info));
    check_info(&info, g.pred, 601, 0, 0, FLIT_OK, "probe, then recv of nothing");

    /* The large one: its length is known from its first bytes. */
    CHECK_OK(
        flit_tagged_probe(g.t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, LIMIT_US, &pi));
    check_info(&pi, g.pred, 602, 2u << 20, 0, FLIT_OK, "probe, large");
    b = guarded(pi.length);
    CHECK_OK(flit_tagged_recv(g.t, pi.source, FLIT_ANY_TAG, b, pi.length, &info));
    check_info(&info, g.pred, 602, 2u << 20, 2u << 20, FLIT_OK, "probe, then recv large");
    check_msg(b, 2u << 20, 2u << 20, g.pred, g.me, 602, 2, "probe, then recv large");
    check_guard(b, 2u << 20, "probe, then recv large");
    free(b);

    /* Nothing with that tag: not found, and the probe times out. */
    found = 1;
    CHECK_OK(flit_tagged_iprobe(g.t, flit_rank(FLIT_ANY_SOURCE), 603, &found, NULL));
    CHECK(!found);
    double t0 = mp_now();
    CHECK_ST(flit_tagged_probe(g.t, flit_rank(FLIT_ANY_SOURCE), 603, 20000, &pi),
             FLIT_ERR_TIMEOUT);
    CHECK(mp_now() - t0 >= 0.019);
    expect_nothing_left("probe");
    CHECK_OK(flit_barrier(g.ep));
    printf("tagged: rank %u: probe: OK\n", g.me);
    free(sbuf);
}

/* ---------------------------------------------------------------- cancel */

static void test_cancel(void)
{
    uint8_t buf[64], sbuf[64];
    flit_request_t *r, *r2, *s;
    flit_tagged_info_t info;
    int done = 1;

    /* Posted, nothing for it: not complete, then cancelled. */
    CHECK_OK(
        flit_tagged_irecv(g.t, flit_rank(FLIT_ANY_SOURCE), 700, buf, sizeof buf, &r));
    CHECK_OK(flit_tagged_test(&r, &done, NULL));
    CHECK(!done && r != NULL);
    CHECK_ST(flit_tagged_wait(&r, 1000, NULL), FLIT_ERR_TIMEOUT);
    CHECK(r != NULL);
    CHECK_OK(flit_tagged_cancel(&r));
    CHECK(r == NULL);

    /* A cancelled receive takes nothing: the message goes to the next. */
    CHECK_OK(flit_tagged_irecv(g.t, flit_rank(g.pred), 702, buf, sizeof buf, &r));
    CHECK_OK(flit_tagged_cancel(&r));
    /* A matched one (complete, not yet waited for) does not cancel. */
    CHECK_OK(flit_tagged_irecv(g.t, flit_rank(g.pred), 701, buf, sizeof buf, &r2));
    CHECK_OK(flit_barrier(g.ep));
    fill_msg(sbuf, 40, g.me, g.succ, 701, 1);
    CHECK_OK(flit_tagged_isend(g.t, flit_rank(g.succ), 701, sbuf, 40, &s));
    CHECK_ST(flit_tagged_cancel(&s), FLIT_ERR_AGAIN); /* a send */
    CHECK(s != NULL);
    CHECK_OK(wait_req(&s, NULL));
    fill_msg(sbuf, 50, g.me, g.succ, 702, 2);
    CHECK_OK(flit_tagged_send(g.t, flit_rank(g.succ), 702, sbuf, 50));
    marker_exchange();
    CHECK_ST(flit_tagged_cancel(&r2), FLIT_ERR_AGAIN);
    CHECK(r2 != NULL);
    CHECK_OK(wait_req(&r2, &info));
    check_info(&info, g.pred, 701, 40, 40, FLIT_OK, "cancel: the matched one");
    check_msg(buf, 40, 40, g.pred, g.me, 701, 1, "cancel: the matched one");
    int found = 0;
    CHECK_OK(flit_tagged_iprobe(g.t, flit_rank(g.pred), 702, &found, &info));
    CHECK(found);
    CHECK_OK(flit_tagged_recv(g.t, flit_rank(g.pred), 702, buf, sizeof buf, &info));
    check_info(&info, g.pred, 702, 50, 50, FLIT_OK, "cancel: after a cancelled one");
    check_msg(buf, 50, 50, g.pred, g.me, 702, 2, "cancel: after a cancelled one");
    expect_nothing_left("cancel");
    CHECK_OK(flit_barrier(g.ep));
    printf("tagged: rank %u: cancel: OK\n", g.me);
}

/* ---------------------------------------------------------------- faults */

/* Every rank sends rank 0 its datagram counters over the tagged context. */
static void check_faults(void)
{
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(g.ep, &s));
    uint64_t mine[3] = {s.faults_injected, s.retransmits, s.datagrams_received};
    CHECK_OK(flit_tagged_send(g.t, flit_rank(0), 9000, mine, sizeof mine));
    if (g.me == 0) {
        uint64_t sum[3] = {0, 0, 0};
        for (uint32_t i = 0; i < g.n; i++) {
            uint64_t c[3];
            flit_tagged_info_t info;
            CHECK_OK(flit_tagged_recv(g.t, flit_rank(FLIT_ANY_SOURCE), 9000, c, sizeof c,
                                      &info));
            CHECK(info.length == sizeof c);
            for (int j = 0; j < 3; j++)
                sum[j] += c[j];
        }
        printf("tagged: job counters: %llu datagrams received, %llu faults injected, "
               "%llu retransmits\n",
               (unsigned long long)sum[2], (unsigned long long)sum[0],
               (unsigned long long)sum[1]);
        if (sum[2] == 0)
            FAIL("faults expected, but no datagram was received: not on UDP?");
        if (sum[0] == 0)
            FAIL("faults expected, but none was injected");
        const char *drop = getenv("FLIT_DROP_RATE");
        if (drop && strtod(drop, NULL) > 0 && sum[1] == 0)
            FAIL("datagrams dropped on purpose, but nothing was retransmitted");
    }
    CHECK_OK(flit_barrier(g.ep));
}

/* ---------------------------------------------------------------- main */

static const struct {
    const char *name;
    void (*fn)(void);
} tests[] = {
    {"order", test_order},   {"nonovertake", test_nonovertake},
    {"sizes", test_sizes},   {"truncate", test_truncate},
    {"many", test_many},     {"probe", test_probe},
    {"cancel", test_cancel},
};

int main(int argc, char **argv)
{
    const char *which = "all";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--test") == 0)
            which = argv[i + 1];
    g.count = test_scaled(mp_arg_u64(argc, argv, "--count", 1500));
    g.seed = mp_arg_u64(argc, argv, "--seed", 1);
    bool thread_safe = mp_arg_flag(argc, argv, "--thread-safe");
    bool expect_faults = mp_arg_flag(argc, argv, "--expect-faults");
    bool known = strcmp(which, "all") == 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        known |= strcmp(which, tests[i].name) == 0;
    if (!known)
        FAIL("--test %s: no such part", which);

    double t0 = mp_now();
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    g.succ = (g.me + 1) % g.n;
    g.pred = (g.me + g.n - 1) % g.n;
    bool segment = mp_arg_flag(argc, argv, "--segment");
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                          .thread_mode =
                              thread_safe ? FLIT_THREAD_SAFE : FLIT_THREAD_SINGLE};
    if (segment) {
        p.field_mask |= FLIT_EP_PARAM_SEGMENT;
        p.segment_size = 8u << 20; /* the sizes, each behind a line and a guard */
    }
    CHECK_OK(flit_ep_create(&p, &g.ep));
    if (segment) {
        void *base;
        CHECK_OK(flit_ep_segment(g.ep, &base, &g.seg_size));
        g.seg = base;
    }
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_tagged_create(g.ep, flit_handler(H_DATA), &g.t));
    CHECK_OK(flit_tagged_create(g.ep, flit_handler(H_CTL), &g.ctl));
    g.scratch_size = 4u << 20;
    CHECK(g.scratch = malloc(g.scratch_size));

    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (strcmp(which, "all") == 0 || strcmp(which, tests[i].name) == 0)
            tests[i].fn();
    if (expect_faults)
        check_faults();

    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_tagged_destroy(g.t));
    CHECK_OK(flit_tagged_destroy(g.ctl));
    CHECK_OK(flit_finalize());
    printf("tagged: rank %u of %u OK (%s), %.2f s\n", g.me, g.n, which, mp_now() - t0);
    free(g.scratch);
    return 0;
}
