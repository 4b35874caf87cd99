/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The integrity stress test. Every rank sends every rank, itself included, a
 * long deterministic-random stream of short, medium and long requests; the
 * stream from src to dst is a function of (seed, src, dst) alone, so the
 * receiver replays the sender's generator and knows exactly what must come
 * next: kind, handler, arguments, length, and how many messages in all.
 *
 *  - args[0] is the sequence number: per source strictly consecutive, so a
 *    lost, duplicated or reordered message fails at once;
 *  - args[1] is the payload checksum (test_checksum), recomputed by the
 *    receiver over what arrived (medium: the library buffer; long: the slot);
 *  - long payloads land in slots: the destination's segment holds a region
 *    per source cut into --slots slots; a sender reuses a slot only after the
 *    request handler verified its bytes and replied, and the reply handler
 *    freed it (as a real AM program would);
 *  - some requests are answered with a short reply, some with a medium reply
 *    carrying a checksum the requester verifies; replies are checked to come
 *    in request order (the reply lane is ordered too).
 *
 * At the end every receiver has seen exactly the number of messages its
 * generator says each source sent: nothing lost, nothing run twice.
 *
 * Options: --count N (average messages per stream, scaled by FLITTEST_SCALE),
 * --seed S, --slots K, --max-long BYTES, --mediums (mostly large mediums:
 * ring pressure), --user-segment (the program allocates the segment: peers
 * reach it by cross-memory attach), --thread-safe (FLIT_THREAD_SAFE),
 * --expect-faults, --expect-loss, --expect-dups (see below), --long-paths
 * direct (every long payload went straight into the segment) or mixed
 * (some did, some went in pieces: FLIT_SHM_CMA_MIN_KB at work).
 * Environment: FLIT_SHM_BULK, FLIT_PROGRESS_THREAD, FLIT_SHM_RING_KB,
 * FLIT_TRANSPORT=udp, and the fault injection of FLIT_DROP_RATE,
 * FLIT_DUP_RATE, FLIT_REORDER_RATE.
 *
 * With --expect-faults the test also proves that the faults it survived
 * actually happened: at the end every rank sends every rank its datagram
 * counters, and the job's totals must show faults injected, retransmissions
 * when datagrams were dropped, and duplicates when they were duplicated.
 * --expect-loss and --expect-dups do the same for faults the kernel makes
 * (nftables rules on the test network, tests/net): the job's totals must
 * show retransmissions, or duplicates discarded.
 */
#include <stdatomic.h>

#include "mp.h"

enum { H_SHORT = 3, H_MEDIUM = 4, H_LONG = 5, H_ACK = 6, H_ACK_MEDIUM = 7, H_STATS = 8 };
enum { R_NONE, R_SHORT, R_MEDIUM };

#define MAX_SLOTS 32u
#define NO_SLOT   0xffffffffu

/* One message of a stream, as both ends derive it. */
struct desc {
    uint32_t seq;
    flit_am_kind kind;
    unsigned nargs;
    size_t nbytes;
    int reply;                       /* R_* */
    size_t rlen;                     /* R_MEDIUM: reply payload length */
    uint32_t args[FLIT_AM_MAX_ARGS]; /* [0] seq, [1] checksum, [2] length,
                                        [3] slot (long), the rest random */
};

struct gen {
    uint64_t rng;
    uint32_t seq;
};

struct opts {
    uint64_t count, seed;
    unsigned slots;
    size_t max_long, slot_size;
    bool mediums, user_segment, thread_safe, expect_faults, expect_loss, expect_dups;
    const char *long_paths; /* NULL, "direct" or "mixed" */
};

/* Datagram counters, summed over the job (--expect-faults). */
enum { C_RETRANSMITS, C_DUPLICATES, C_FAULTS, C_DATAGRAMS, C_COUNT };

/* What a receiver keeps per source, and a sender per destination. */
struct peer {
    /* receiving from it (handlers only) */
    struct gen rx;
    uint64_t rx_expected;
    _Atomic uint64_t rx_count;
    /* sending to it */
    struct gen tx;
    uint64_t tx_count;
    _Atomic uint64_t tx_sent; /* read by reply handlers */
    struct gen rep;           /* replays tx to match replies */
    uint64_t rep_expected;    /* replies asked for so far */
    _Atomic uint64_t rep_count;
    _Atomic uint32_t free_slots; /* bit per slot in its segment */
};

static struct {
    flit_ep_t *ep;
    uint32_t me, n;
    struct opts o;
    uint8_t *seg;
    struct peer *peers;
    uint8_t *reply_buf;
    _Atomic uint64_t handled;
    uint64_t job_counter[C_COUNT];
    _Atomic uint32_t stats_from; /* ranks whose counters arrived */
    uint64_t empty_longs;        /* long messages sent without payload */
} g;

/* ---- the streams ---- */

static void gen_init(struct gen *gn, uint32_t src, uint32_t dst)
{
    gn->rng = mp_mix(g.o.seed, src, dst, 0x5eed);
    gn->seq = 0;
}

/* How many messages src sends dst: the average count, give or take half. */
static uint64_t stream_count(uint32_t src, uint32_t dst)
{
    uint64_t c = g.o.count;
    return c / 2 + mp_mix(g.o.seed, src, dst, 0xc0) % (c + 1);
}

static size_t pick_size(uint64_t r, size_t small, size_t mid, size_t large,
                        unsigned pct_small, unsigned pct_mid)
{
    unsigned p = (unsigned)(r % 100);
    size_t cap = p < pct_small ? small : p < pct_small + pct_mid ? mid : large;
    return (size_t)((r >> 8) % (cap + 1));
}

static struct desc gen_next(struct gen *gn)
{
    struct desc d;
    memset(&d, 0, sizeof d);
    d.seq = gn->seq++;
    uint64_t r = test_rand(&gn->rng);
    unsigned p = (unsigned)(r % 100);
    if (g.o.mediums)
        d.kind = p < 5 ? FLIT_AM_SHORT : p < 95 ? FLIT_AM_MEDIUM : FLIT_AM_LONG;
    else
        d.kind = p < 45 ? FLIT_AM_SHORT : p < 80 ? FLIT_AM_MEDIUM : FLIT_AM_LONG;
    d.nargs = 4 + (unsigned)((r >> 8) % (FLIT_AM_MAX_ARGS - 3));
    r = test_rand(&gn->rng);
    if (d.kind == FLIT_AM_MEDIUM)
        d.nbytes = g.o.mediums ? pick_size(r, 4096, 32768, FLIT_AM_MAX_MEDIUM, 10, 30)
                               : pick_size(r, 256, 4096, FLIT_AM_MAX_MEDIUM, 50, 35);
    else if (d.kind == FLIT_AM_LONG)
        d.nbytes = pick_size(r, 4096, 65536, g.o.max_long, 40, 40);
    r = test_rand(&gn->rng);
    unsigned q = (unsigned)(r % 4);
    if (d.kind == FLIT_AM_LONG) /* the reply frees the slot */
        d.reply = q < 2 ? R_SHORT : R_MEDIUM;
    else
        d.reply = q < 2 ? R_NONE : q == 2 ? R_SHORT : R_MEDIUM;
    d.rlen = (size_t)((r >> 8) % 8193);
    d.args[0] = d.seq;
    d.args[2] = (uint32_t)d.nbytes;
    d.args[3] = d.kind == FLIT_AM_LONG ? NO_SLOT : 0;
    for (unsigned i = 3 + (d.kind == FLIT_AM_LONG); i < d.nargs; i++)
        d.args[i] = (uint32_t)test_rand(&gn->rng);
    return d;
}

static uint64_t payload_seed(uint32_t src, uint32_t dst, uint32_t seq, int reply)
{
    return mp_mix(g.o.seed ^ 0xabcdef, src, dst, (uint64_t)seq << 1 | (unsigned)reply);
}

static uint64_t slot_offset(uint32_t src, uint32_t slot)
{
    return ((uint64_t)src * g.o.slots + slot) * g.o.slot_size;
}

/* ---- receiving requests ---- */

static void on_request(flit_token_t *token, void *buf, size_t nbytes,
                       const uint32_t *args, unsigned nargs, flit_am_kind kind)
{
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n);
    struct peer *p = &g.peers[src];
    uint64_t have = atomic_load_explicit(&p->rx_count, memory_order_relaxed);
    if (have >= p->rx_expected)
        FAIL("rank %u sent more than its %llu messages (seq %u)", src,
             (unsigned long long)p->rx_expected, nargs ? args[0] : 0);
    struct desc d = gen_next(&p->rx);
    if (nargs < 4 || args[0] != d.seq)
        FAIL("from rank %u: expected seq %u, got %s%u", src, d.seq,
             nargs ? "" : "no args ", nargs ? args[0] : 0);
    if (kind != d.kind)
        FAIL("from rank %u seq %u: a %s, expected a %s", src, d.seq,
             flit_am_kind_name(kind, 0), flit_am_kind_name(d.kind, 0));
    if (nargs != d.nargs || nbytes != d.nbytes || args[2] != d.nbytes)
        FAIL("from rank %u seq %u: %u args, %zu bytes (args say %u); expected "
             "%u args, %zu bytes",
             src, d.seq, nargs, nbytes, args[2], d.nargs, d.nbytes);
    for (unsigned i = 4; i < nargs; i++)
        if (args[i] != d.args[i])
            FAIL("from rank %u seq %u: arg %u is %#x, expected %#x", src, d.seq, i,
                 args[i], d.args[i]);
    uint32_t slot = NO_SLOT;
    if (kind == FLIT_AM_LONG) {
        slot = args[3];
        if (slot >= g.o.slots)
            FAIL("from rank %u seq %u: slot %u out of %u", src, d.seq, slot, g.o.slots);
        if ((uint8_t *)buf != g.seg + slot_offset(src, slot))
            FAIL("from rank %u seq %u: long landed at offset %td, its slot %u is at %llu",
                 src, d.seq, (uint8_t *)buf - g.seg, slot,
                 (unsigned long long)slot_offset(src, slot));
    } else if (args[3] != d.args[3]) {
        FAIL("from rank %u seq %u: arg 3 is %#x, expected %#x", src, d.seq, args[3],
             d.args[3]);
    }
    if (kind == FLIT_AM_SHORT)
        CHECK(buf == NULL && nbytes == 0);
    if (kind != FLIT_AM_SHORT) {
        uint32_t sum = test_checksum(buf, nbytes);
        if (sum != args[1])
            FAIL("from rank %u seq %u: %s of %zu bytes%s: checksum %#x, sender's %#x",
                 src, d.seq, flit_am_kind_name(kind, 0), nbytes,
                 kind == FLIT_AM_LONG ? " in its slot" : "", sum, args[1]);
    }
    atomic_fetch_add_explicit(&p->rx_count, 1, memory_order_release);
    atomic_fetch_add_explicit(&g.handled, 1, memory_order_relaxed);

    uint32_t rargs[3] = {d.seq, slot, 0};
    if (d.reply == R_SHORT) {
        CHECK_OK(flit_am_reply_short(token, flit_handler(H_ACK), rargs, 2));
    } else if (d.reply == R_MEDIUM) {
        mp_pattern_fill(g.reply_buf, d.rlen, payload_seed(g.me, src, d.seq, 1));
        rargs[2] = test_checksum(g.reply_buf, d.rlen);
        CHECK_OK(flit_am_reply_medium(token, flit_handler(H_ACK_MEDIUM), g.reply_buf,
                                      d.rlen, rargs, 3));
    }
}

#define REQUEST_HANDLER(name, kind)                                                      \
    static void name(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,    \
                     unsigned nargs, void *user)                                         \
    {                                                                                    \
        (void)user;                                                                      \
        on_request(t, buf, nbytes, args, nargs, kind);                                   \
    }
REQUEST_HANDLER(on_short, FLIT_AM_SHORT)
REQUEST_HANDLER(on_medium, FLIT_AM_MEDIUM)
REQUEST_HANDLER(on_long, FLIT_AM_LONG)

/* ---- receiving replies ---- */

static void on_reply(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, int kind)
{
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n);
    struct peer *p = &g.peers[src];
    /* The next request to src that asked for a reply. */
    struct desc d;
    do {
        if (p->rep.seq >= p->tx_sent)
            FAIL("reply from rank %u with no request waiting for one", src);
        d = gen_next(&p->rep);
    } while (d.reply == R_NONE);
    if (nargs < 2 || args[0] != d.seq)
        FAIL("reply from rank %u: for seq %u, expected the reply to seq %u", src,
             nargs ? args[0] : 0, d.seq);
    if (kind != d.reply)
        FAIL("reply from rank %u to seq %u: a %s reply, expected a %s one", src, d.seq,
             kind == R_SHORT ? "short" : "medium",
             d.reply == R_SHORT ? "short" : "medium");
    if (kind == R_MEDIUM) {
        CHECK(nargs == 3);
        if (nbytes != d.rlen)
            FAIL("reply from rank %u to seq %u: %zu bytes, expected %zu", src, d.seq,
                 nbytes, d.rlen);
        uint32_t sum = test_checksum(buf, nbytes);
        if (sum != args[2])
            FAIL("reply from rank %u to seq %u: checksum %#x, replier's %#x", src, d.seq,
                 sum, args[2]);
        size_t bad = mp_pattern_check(buf, nbytes, payload_seed(src, g.me, d.seq, 1));
        if (bad != nbytes)
            FAIL("reply from rank %u to seq %u: byte %zu differs", src, d.seq, bad);
    } else {
        CHECK(nargs == 2 && buf == NULL && nbytes == 0);
    }
    if (d.kind == FLIT_AM_LONG) {
        uint32_t slot = args[1];
        if (slot >= g.o.slots)
            FAIL("reply from rank %u to seq %u: slot %u", src, d.seq, slot);
        uint32_t bit = 1u << slot;
        uint32_t old = atomic_fetch_or(&p->free_slots, bit);
        if (old & bit)
            FAIL("reply from rank %u freed slot %u twice", src, slot);
    } else if (args[1] != NO_SLOT) {
        FAIL("reply from rank %u to seq %u (a %s) names slot %u", src, d.seq,
             flit_am_kind_name(d.kind, 0), args[1]);
    }
    atomic_fetch_add_explicit(&p->rep_count, 1, memory_order_release);
    atomic_fetch_add_explicit(&g.handled, 1, memory_order_relaxed);
}

static void on_ack(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    on_reply(t, buf, nbytes, args, nargs, R_SHORT);
}

static void on_ack_medium(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)user;
    on_reply(t, buf, nbytes, args, nargs, R_MEDIUM);
}

/* ---- the job's datagram counters (--expect-faults) ---- */

static void on_stats(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)buf;
    (void)user;
    CHECK(nbytes == 0 && nargs == 2 * C_COUNT);
    CHECK(flit_token_rank(t).idx < g.n);
    for (unsigned c = 0; c < C_COUNT; c++)
        g.job_counter[c] += (uint64_t)args[2 * c] | (uint64_t)args[2 * c + 1] << 32;
    atomic_fetch_add(&g.stats_from, 1);
}

/* A FLIT_*_RATE variable, as a probability; 0 when unset. */
static double env_rate(const char *name)
{
    const char *s = getenv(name);
    return s ? strtod(s, NULL) : 0.0;
}

/*
 * Every rank sends its counters to every rank (itself too); each then checks
 * the totals against the faults expected: they must have happened, and the
 * channel must have had to repair them.
 */
static void check_faults(const flit_stats_t *s)
{
    uint64_t mine[C_COUNT] = {s->retransmits, s->duplicates, s->faults_injected,
                              s->datagrams_received};
    uint32_t a[2 * C_COUNT];
    for (unsigned c = 0; c < C_COUNT; c++) {
        a[2 * c] = (uint32_t)mine[c];
        a[2 * c + 1] = (uint32_t)(mine[c] >> 32);
    }
    for (uint32_t r = 0; r < g.n; r++)
        CHECK_OK(
            flit_am_short(g.ep, flit_rank(r), flit_handler(H_STATS), a, 2 * C_COUNT, 0));
    MP_WAIT(g.ep, atomic_load(&g.stats_from) == g.n);
    double drop = env_rate("FLIT_DROP_RATE"), dup = env_rate("FLIT_DUP_RATE"),
           reorder = env_rate("FLIT_REORDER_RATE");
    const uint64_t *j = g.job_counter;
    if (g.me == 0)
        printf("stress: job counters: %llu datagrams received, %llu faults injected "
               "(drop %g, duplicate %g, reorder %g), %llu retransmits, %llu duplicates\n",
               (unsigned long long)j[C_DATAGRAMS], (unsigned long long)j[C_FAULTS], drop,
               dup, reorder, (unsigned long long)j[C_RETRANSMITS],
               (unsigned long long)j[C_DUPLICATES]);
    if (j[C_DATAGRAMS] == 0)
        FAIL("faults expected, but no datagram was received: not on UDP "
             "(FLIT_TRANSPORT=udp)?");
    if (g.o.expect_loss && j[C_RETRANSMITS] == 0)
        FAIL("--expect-loss, but nothing was retransmitted in %llu datagrams",
             (unsigned long long)j[C_DATAGRAMS]);
    if (g.o.expect_dups && j[C_DUPLICATES] == 0)
        FAIL("--expect-dups, but no duplicate was discarded in %llu datagrams",
             (unsigned long long)j[C_DATAGRAMS]);
    if (!g.o.expect_faults)
        return;
    if (drop <= 0 && dup <= 0 && reorder <= 0)
        FAIL(
            "--expect-faults, but no FLIT_DROP_RATE, FLIT_DUP_RATE or FLIT_REORDER_RATE");
    if (j[C_FAULTS] == 0)
        FAIL("faults configured, but none injected in %llu datagrams",
             (unsigned long long)j[C_DATAGRAMS]);
    if (drop > 0 && j[C_RETRANSMITS] == 0)
        FAIL("%llu datagrams dropped on purpose, but nothing was retransmitted",
             (unsigned long long)j[C_FAULTS]);
    if (dup > 0 && j[C_DUPLICATES] == 0)
        FAIL("datagrams duplicated on purpose, but no duplicate was counted");
}

/* ---- sending ---- */

static uint32_t take_slot(struct peer *p)
{
    MP_WAIT(g.ep, atomic_load(&p->free_slots) != 0);
    uint32_t m = atomic_load(&p->free_slots);
    uint32_t slot = (uint32_t)__builtin_ctz(m);
    atomic_fetch_and(&p->free_slots, ~(1u << slot));
    return slot;
}

static void send_one(uint32_t dst, uint8_t *sbuf)
{
    struct peer *p = &g.peers[dst];
    struct desc d = gen_next(&p->tx);
    flit_rank_t to = flit_rank(dst);
    mp_pattern_fill(sbuf, d.nbytes, payload_seed(g.me, dst, d.seq, 0));
    d.args[1] = test_checksum(sbuf, d.nbytes);
    if (d.reply != R_NONE)
        p->rep_expected++;
    /* Counted before the send: its reply may run inside the call. */
    p->tx_sent++;
    switch (d.kind) {
    case FLIT_AM_SHORT:
        CHECK_OK(flit_am_short(g.ep, to, flit_handler(H_SHORT), d.args, d.nargs, 0));
        break;
    case FLIT_AM_MEDIUM:
        CHECK_OK(flit_am_medium(g.ep, to, flit_handler(H_MEDIUM), sbuf, d.nbytes, d.args,
                                d.nargs, 0));
        break;
    default:
        d.args[3] = take_slot(p);
        g.empty_longs += d.nbytes == 0;
        CHECK_OK(flit_am_long(g.ep, to, flit_handler(H_LONG), sbuf, d.nbytes,
                              slot_offset(g.me, d.args[3]), d.args, d.nargs, 0));
        break;
    }
}

static bool all_done(void)
{
    for (uint32_t r = 0; r < g.n; r++) {
        struct peer *p = &g.peers[r];
        if (atomic_load_explicit(&p->rx_count, memory_order_acquire) != p->rx_expected ||
            atomic_load_explicit(&p->rep_count, memory_order_acquire) != p->rep_expected)
            return false;
    }
    return true;
}

static void final_checks(void)
{
    uint32_t all = g.o.slots == 32 ? 0xffffffffu : (1u << g.o.slots) - 1;
    for (uint32_t r = 0; r < g.n; r++) {
        struct peer *p = &g.peers[r];
        if (p->rx_count != p->rx_expected)
            FAIL("from rank %u: %llu messages, expected %llu", r,
                 (unsigned long long)p->rx_count, (unsigned long long)p->rx_expected);
        if (p->rep_count != p->rep_expected)
            FAIL("from rank %u: %llu replies, expected %llu", r,
                 (unsigned long long)p->rep_count, (unsigned long long)p->rep_expected);
        if (p->tx_sent != p->tx_count)
            FAIL("to rank %u: sent %llu of %llu", r, (unsigned long long)p->tx_sent,
                 (unsigned long long)p->tx_count);
        if (atomic_load(&p->free_slots) != all)
            FAIL("rank %u still holds slots %#x", r, all & ~atomic_load(&p->free_slots));
    }
}

static void parse(int argc, char **argv)
{
    g.o.count = test_scaled(mp_arg_u64(argc, argv, "--count", 1000));
    g.o.seed = mp_arg_u64(argc, argv, "--seed", 1);
    g.o.slots = (unsigned)mp_arg_u64(argc, argv, "--slots", 4);
    g.o.max_long = (size_t)mp_arg_u64(argc, argv, "--max-long", 256u << 10);
    g.o.mediums = mp_arg_flag(argc, argv, "--mediums");
    g.o.user_segment = mp_arg_flag(argc, argv, "--user-segment");
    g.o.thread_safe = mp_arg_flag(argc, argv, "--thread-safe");
    g.o.expect_faults = mp_arg_flag(argc, argv, "--expect-faults");
    g.o.expect_loss = mp_arg_flag(argc, argv, "--expect-loss");
    g.o.expect_dups = mp_arg_flag(argc, argv, "--expect-dups");
    g.o.long_paths = mp_arg_str(argc, argv, "--long-paths", NULL);
    if (g.o.long_paths && strcmp(g.o.long_paths, "direct") != 0 &&
        strcmp(g.o.long_paths, "mixed") != 0)
        FAIL("--long-paths: direct or mixed, not %s", g.o.long_paths);
    if (g.o.slots < 1 || g.o.slots > MAX_SLOTS)
        FAIL("--slots must be 1..%u", MAX_SLOTS);
    if (g.o.max_long > (1u << 30))
        FAIL("--max-long too large");
    g.o.slot_size = (g.o.max_long + 63) / 64 * 64;
    if (g.o.slot_size == 0)
        g.o.slot_size = 64;
}

static void create_endpoint(void)
{
    size_t seg_size = (size_t)g.n * g.o.slots * g.o.slot_size;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT, .segment_size = seg_size};
    void *user_seg = NULL;
    if (g.o.user_segment) {
        CHECK(posix_memalign(&user_seg, 4096, seg_size) == 0);
        memset(user_seg, 0, seg_size);
        p.segment_addr = user_seg;
    }
    if (g.o.thread_safe) {
        p.field_mask |= FLIT_EP_PARAM_THREAD_MODE;
        p.thread_mode = FLIT_THREAD_SAFE;
    }
    CHECK_OK(flit_ep_create(&p, &g.ep));
    void *seg;
    size_t got;
    CHECK_OK(flit_ep_segment(g.ep, &seg, &got));
    CHECK(got == seg_size);
    if (user_seg)
        CHECK(seg == user_seg);
    g.seg = seg;
}

/* Which way the long payloads this rank sent went (--long-paths); one of
   no bytes has nothing to put. */
static void check_long_paths(const flit_stats_t *s)
{
    uint64_t longs = s->sent_msgs[FLIT_STAT_REQ_LONG] + s->sent_msgs[FLIT_STAT_REP_LONG] -
                     g.empty_longs;
    if (!g.o.long_paths)
        return;
    if (strcmp(g.o.long_paths, "direct") == 0 && s->long_direct != longs)
        FAIL("--long-paths direct: %llu of %llu long payloads went straight in",
             (unsigned long long)s->long_direct, (unsigned long long)longs);
    if (strcmp(g.o.long_paths, "mixed") == 0 &&
        (s->long_direct == 0 || s->long_direct == longs))
        FAIL("--long-paths mixed: %llu of %llu long payloads went straight in",
             (unsigned long long)s->long_direct, (unsigned long long)longs);
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    double t0 = mp_now();
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    create_endpoint();

    g.peers = calloc(g.n, sizeof *g.peers);
    g.reply_buf = malloc(8192 + 8);
    uint8_t *sbuf =
        malloc(g.o.max_long > FLIT_AM_MAX_MEDIUM ? g.o.max_long : FLIT_AM_MAX_MEDIUM);
    CHECK(g.peers && g.reply_buf && sbuf);
    uint64_t total_tx = 0;
    for (uint32_t r = 0; r < g.n; r++) {
        struct peer *p = &g.peers[r];
        gen_init(&p->rx, r, g.me);
        p->rx_expected = stream_count(r, g.me);
        gen_init(&p->tx, g.me, r);
        gen_init(&p->rep, g.me, r);
        p->tx_count = stream_count(g.me, r);
        total_tx += p->tx_count;
        atomic_store(&p->free_slots,
                     g.o.slots == 32 ? 0xffffffffu : (1u << g.o.slots) - 1);
    }

    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_SHORT), on_short, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_MEDIUM), on_medium, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_LONG), on_long, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ACK), on_ack, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ACK_MEDIUM), on_ack_medium, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_STATS), on_stats, NULL));
    CHECK_OK(flit_barrier(g.ep));

    /* Destinations in a random order of our own, one message at a time. */
    uint64_t order = mp_mix(g.o.seed, g.me, 0, 0x0bde);
    for (uint64_t left = total_tx; left > 0;) {
        uint32_t dst = (uint32_t)(test_rand(&order) % g.n);
        for (uint32_t k = 0; k < g.n; k++, dst = (dst + 1) % g.n)
            if (g.peers[dst].tx_sent < g.peers[dst].tx_count)
                break;
        send_one(dst, sbuf);
        left--;
    }
    MP_WAIT(g.ep, all_done());
    flit_stats_t s = {.struct_size = sizeof s};
    if (g.o.expect_faults || g.o.expect_loss || g.o.expect_dups) {
        CHECK_OK(flit_ep_stats(g.ep, &s));
        check_faults(&s);
    }
    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_ep_stats(g.ep, &s));
    check_long_paths(&s);
    CHECK_OK(flit_finalize());
    /* Everything in flight has been handled by now: the counts are final. */
    final_checks();
    uint64_t rx = 0;
    for (uint32_t r = 0; r < g.n; r++)
        rx += g.peers[r].rx_count;
    printf("stress: rank %u of %u OK: sent %llu, received %llu requests and "
           "%llu replies, %llu credit stalls; %llu datagrams received, %llu faults "
           "injected, %llu retransmits, %llu duplicates; %.2f s\n",
           g.me, g.n, (unsigned long long)total_tx, (unsigned long long)rx,
           (unsigned long long)(atomic_load(&g.handled) - rx),
           (unsigned long long)s.credit_stalls, (unsigned long long)s.datagrams_received,
           (unsigned long long)s.faults_injected, (unsigned long long)s.retransmits,
           (unsigned long long)s.duplicates, mp_now() - t0);
    free(sbuf);
    free(g.reply_buf);
    free(g.peers);
    return 0;
}
