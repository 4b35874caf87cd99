/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Total order checker for <flit/group.h>. Every member sends --count
 * messages of random sizes (0 B to --max bytes, most small, a few large),
 * each as 1 to 4 pieces, to its group(s) at once. A message is named by
 * (sender, the sender's count): its length and bytes follow from those and
 * the seed, so a receiver knows what the k-th message of a sender must be
 * and checks it byte for byte; a message lost, run twice or out of its
 * sender's order fails at once. The delivery handler takes each message in
 * pieces (first bytes, then the rest scattered over two buffers) and logs
 * (sender, sender's count, checksum); its place in the order must be
 * flit_group_msg_seq. At the end every member multicasts a digest of its
 * whole log: all digests must equal its own (the logs are identical).
 *
 *  --seq-last    the last member is the sequencer (default: the lowest)
 *  --subset      the group leaves out the highest rank (a strict subset)
 *  --two         two groups at once: the whole job, and the job without
 *                rank 0; each message goes to one of them at random
 *  --slow R      rank R's delivery handler is slow (sleeps --slow-us per
 *                message): senders must stall on credits, and nothing grows
 *  --window W    the groups' credits
 *  --kill R --kill-after K [--kill2 R2 [--kill2-after K2]]
 *                rank R raises SIGKILL on itself once it has sent K
 *                messages (and R2 once it has sent K2, by default 2K; a K2
 *                past --count leaves R2's death to the test's own hook,
 *                tests/mp/group_fail_view.c): the survivors must
 *                get one view change per death, naming it, within a second
 *                of being told of the death, agree on everything delivered
 *                (a dead member's messages too: all or none, same place),
 *                and go on sending in the new view until all their
 *                messages are delivered; a small window proves credits come
 *                back (a sender starved after the churn would hang). Run
 *                under flitrun --keep-going with a small FLIT_PEER_TIMEOUT.
 *  --progress-thread  a thread-safe endpoint served by a progress thread:
 *                deliveries run there while the main thread sends
 *  --expect-loss, --expect-dups  (across the test network, tests/net) the
 *                kernel's nftables rules really dropped or duplicated
 *                frames: this rank retransmitted, or discarded duplicates
 * Every member checks that the bytes it held for a group never passed the
 * group's buffer_bound.
 */
#include <flit/group.h>
#include <pthread.h>
#include <signal.h>

#include "mp.h"

#define MAX_GROUPS 2
#define DIGEST_LEN 24 /* the digest message: "DIGEST", count, hash */

struct log {
    uint32_t nranks;
    uint32_t me_rank;
    uint64_t seed, count, max;
    uint64_t *next_k;   /* per rank: the next message expected from it */
    uint64_t delivered; /* data messages */
    uint64_t digests;   /* digest messages taken and matched */
    uint64_t hash;      /* FNV over the log entries, in delivery order */
    uint64_t slow_us;
    bool slow;
    uint8_t *buf;
};

struct gstate {
    flit_group_t *g;
    uint32_t id;
    bool member;
    uint32_t lo, hi; /* the members: ranks lo .. hi-1 */
    struct log log;
};

/* Deaths: the ranks to be killed, what the survivors saw. */
struct deaths {
    uint32_t victim[2];
    unsigned nvictims;
    double down_at[2]; /* the peer-down handler ran */
    double view_at[2]; /* the view-change handler ran */
    unsigned views;
};

static struct deaths deaths;

/* What the handlers write and the main thread reads (a progress thread
   runs the handlers with --progress-thread). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int victim_index(uint32_t rank)
{
    for (unsigned i = 0; i < deaths.nvictims; i++)
        if (deaths.victim[i] == rank)
            return (int)i;
    return -1;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)reason, (void)user;
    int v = victim_index(peer.idx);
    if (v < 0)
        FAIL("rank %u reported down, but it was not killed", peer.idx);
    pthread_mutex_lock(&mu);
    deaths.down_at[v] = mp_now();
    pthread_mutex_unlock(&mu);
}

static void on_view(flit_group_t *g, flit_rank_t left, void *user)
{
    (void)g, (void)user;
    int v = victim_index(left.idx);
    pthread_mutex_lock(&mu);
    if (v < 0 || deaths.view_at[v] != 0)
        FAIL("view change naming rank %u: not killed, or named twice", left.idx);
    deaths.view_at[v] = mp_now();
    deaths.views++;
    pthread_mutex_unlock(&mu);
}

/* What was in flight to a rank that died comes back: that is all that may. */
static void on_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    if (r->reason == FLIT_ERR_PEER_DOWN && victim_index(r->peer.idx) >= 0)
        return;
    mp_returned_fail(ep, r, user);
}

static bool is_dead(uint32_t rank, bool seen)
{
    int v = victim_index(rank);
    return v >= 0 && (!seen || deaths.view_at[v] != 0);
}

/* Length of message k of sender src in group id. */
static size_t msg_len(const struct log *l, uint32_t id, uint32_t src, uint64_t k)
{
    uint64_t r = mp_mix(l->seed, id, src, k);
    uint64_t pick = r % 100, x = r >> 8;
    size_t len;
    if (pick < 50)
        len = x % 257;
    else if (pick < 80)
        len = x % 65537;
    else if (pick < 96)
        len = x % (512 * 1024 + 1);
    else
        len = x % (l->max + 1);
    return len > l->max ? l->max : len;
}

static uint64_t msg_seed(uint32_t id, uint32_t src, uint64_t k)
{
    return mp_mix(id, src, k, 0x6772);
}

static void log_entry(struct log *l, uint32_t src, uint64_t k, uint32_t sum)
{
    uint64_t v[3] = {src, k, sum};
    for (int i = 0; i < 3; i++) {
        l->hash ^= v[i];
        l->hash *= 0x100000001b3ull;
    }
}

/* A digest of a member's log: checked against ours. */
static void take_digest(struct log *l, flit_group_msg_t *m, uint32_t src)
{
    uint8_t d[DIGEST_LEN];
    CHECK_OK(flit_group_recv(m, d, sizeof d));
    uint64_t count, hash;
    memcpy(&count, d + 8, 8);
    memcpy(&hash, d + 16, 8);
    if (count != l->delivered || hash != l->hash)
        FAIL("rank %u's log differs: %llu messages, hash %016llx; here %llu, %016llx",
             src, (unsigned long long)count, (unsigned long long)hash,
             (unsigned long long)l->delivered, (unsigned long long)l->hash);
    l->digests++;
}

static void deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user);

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    pthread_mutex_lock(&mu);
    deliver(g, m, total, user);
    pthread_mutex_unlock(&mu);
}

static void deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    struct gstate *gst = user;
    struct log *l = &gst->log;
    CHECK(gst->g == NULL || gst->g == g);
    uint32_t src = flit_group_msg_sender(m).idx;
    CHECK(src < l->nranks);
    CHECK(flit_group_remaining(m) == total);
    if (l->slow)
        usleep((useconds_t)l->slow_us);
    uint64_t k = l->next_k[src]++;
    if (k == l->count) { /* the sender's last word: its digest */
        CHECK(total == DIGEST_LEN);
        l->next_k[src]--; /* digests are not data */
        take_digest(l, m, src);
        CHECK(flit_group_remaining(m) == 0);
        CHECK_ST(flit_group_recv(m, l->buf, 1), FLIT_ERR_TOO_LARGE);
        return;
    }
    CHECK(k < l->count);
    CHECK(flit_group_msg_seq(m) == l->delivered + l->digests);
    size_t want = msg_len(l, gst->id, src, k);
    if (total != want)
        FAIL("message %llu of rank %u: %zu bytes, expected %zu", (unsigned long long)k,
             src, total, want);
    /* In pieces: a first part, then the rest over two buffers. */
    size_t first = total < 100 ? total / 2 : 100 + (size_t)(k % 1000);
    if (first > total)
        first = total;
    CHECK_OK(flit_group_recv(m, l->buf, first));
    size_t rest = total - first, a = rest / 3;
    struct iovec v[2] = {{l->buf + first, a}, {l->buf + first + a, rest - a}};
    CHECK_OK(flit_group_recvv(m, v, 2));
    CHECK(flit_group_remaining(m) == 0);
    size_t bad = mp_pattern_check(l->buf, total, msg_seed(gst->id, src, k));
    if (bad != total)
        FAIL("message %llu of rank %u (%zu bytes): byte %zu differs",
             (unsigned long long)k, src, total, bad);
    log_entry(l, src, k, test_checksum(l->buf, total));
    l->delivered++;
}

static void send_one(struct gstate *gst, uint64_t k, uint8_t *buf, uint64_t *rng)
{
    struct log *l = &gst->log;
    size_t len = msg_len(l, gst->id, l->me_rank, k);
    mp_pattern_fill(buf, len, msg_seed(gst->id, l->me_rank, k));
    struct iovec v[4];
    int n = 1 + (int)(test_rand(rng) % 4);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t part = i == n - 1 ? len - off : (len - off) / 2;
        v[i].iov_base = buf + off;
        v[i].iov_len = part;
        off += part;
    }
    CHECK_OK(flit_group_sendv(gst->g, v, n));
}

static void send_digest(struct gstate *gst)
{
    uint8_t d[DIGEST_LEN] = "DIGEST";
    pthread_mutex_lock(&mu);
    memcpy(d + 8, &gst->log.delivered, 8);
    memcpy(d + 16, &gst->log.hash, 8);
    pthread_mutex_unlock(&mu);
    CHECK_OK(flit_group_send(gst->g, d, sizeof d));
}

static void check_stats(struct gstate *gst, bool expect_stall)
{
    flit_group_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_group_stats(gst->g, &s));
    if (s.buffered_max > s.buffer_bound)
        FAIL("group %u held %llu bytes, above its bound %llu", gst->id,
             (unsigned long long)s.buffered_max, (unsigned long long)s.buffer_bound);
    CHECK(s.buffered <= s.buffer_bound);
    if (expect_stall && s.credit_waits == 0)
        FAIL("group %u: a slow member, yet this sender never waited for credits",
             gst->id);
    printf("group %u: rank %u: %llu delivered, %llu sent (%llu through the sequencer), "
           "%llu forwarded, %llu forward waits, %llu credit waits, %llu of %llu bytes "
           "held at most, %llu view changes\n",
           gst->id, gst->log.me_rank, (unsigned long long)s.delivered,
           (unsigned long long)s.sent, (unsigned long long)s.sent_small,
           (unsigned long long)s.forwarded, (unsigned long long)s.forward_waits,
           (unsigned long long)s.credit_waits, (unsigned long long)s.buffered_max,
           (unsigned long long)s.buffer_bound, (unsigned long long)s.views);
    if (s.views != deaths.nvictims)
        FAIL("%llu view changes, %u deaths", (unsigned long long)s.views,
             deaths.nvictims);
    pthread_mutex_lock(&mu);
    for (unsigned d = 0; d < deaths.nvictims; d++)
        printf("group %u: rank %u: %llu messages of rank %u delivered\n", gst->id,
               gst->log.me_rank, (unsigned long long)gst->log.next_k[deaths.victim[d]],
               deaths.victim[d]);
    pthread_mutex_unlock(&mu);
}

/* Every message of every survivor is in, and every death was seen. */
static bool all_data_in_locked(struct gstate *gs, unsigned ng)
{
    for (unsigned d = 0; d < deaths.nvictims; d++)
        if (deaths.view_at[d] == 0)
            return false;
    for (unsigned i = 0; i < ng; i++)
        for (uint32_t r = gs[i].lo; gs[i].member && r < gs[i].hi; r++)
            if (!is_dead(r, false) && gs[i].log.next_k[r] < gs[i].log.count)
                return false;
    return true;
}

static bool all_data_in(struct gstate *gs, unsigned ng)
{
    pthread_mutex_lock(&mu);
    bool in = all_data_in_locked(gs, ng);
    pthread_mutex_unlock(&mu);
    return in;
}

static bool all_digests_in(struct gstate *gs, unsigned ng, const uint64_t *members)
{
    bool in = true;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < ng; i++)
        if (gs[i].member && gs[i].log.digests < members[i] - deaths.nvictims)
            in = false;
    pthread_mutex_unlock(&mu);
    return in;
}

int main(int argc, char **argv)
{
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep;
    flit_ep_params_t ep_params = {.field_mask = FLIT_EP_PARAM_PROGRESS_THREAD,
                                  .progress_thread =
                                      mp_arg_flag(argc, argv, "--progress-thread")};
    CHECK_OK(flit_ep_create(&ep_params, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    uint32_t n = flit_job_size(), me = flit_job_rank().idx;
    uint64_t count = test_scaled(mp_arg_u64(argc, argv, "--count", 300));
    uint64_t max = mp_arg_u64(argc, argv, "--max", 4u << 20);
    uint64_t seed = mp_arg_u64(argc, argv, "--seed", 1);
    uint64_t slow = mp_arg_u64(argc, argv, "--slow", UINT64_MAX);
    bool two = mp_arg_flag(argc, argv, "--two"),
         subset = mp_arg_flag(argc, argv, "--subset");
    bool seq_last = mp_arg_flag(argc, argv, "--seq-last");
    uint64_t kill_after = test_scaled(mp_arg_u64(argc, argv, "--kill-after", 0));
    uint64_t kill1 = mp_arg_u64(argc, argv, "--kill", UINT64_MAX);
    uint64_t kill2 = mp_arg_u64(argc, argv, "--kill2", UINT64_MAX);
    uint64_t kill2_after = mp_arg_u64(argc, argv, "--kill2-after", 0);
    kill2_after = kill2_after ? test_scaled(kill2_after) : 2 * kill_after;
    if (kill1 < n)
        deaths.victim[deaths.nvictims++] = (uint32_t)kill1;
    if (kill2 < n)
        deaths.victim[deaths.nvictims++] = (uint32_t)kill2;
    if (deaths.nvictims) {
        CHECK(!two && !subset && kill_after > 0);
        CHECK_OK(flit_am_set_returned_handler(ep, on_returned, NULL));
        CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    }
    if (getenv("FLITTEST_SCALE") && max > (1u << 20))
        max = 1u << 20; /* sanitizers: smaller messages too */
    flit_groups_t *groups;
    CHECK_OK(flit_groups_create(ep, &groups));

    unsigned ng = two ? 2 : 1;
    struct gstate gs[MAX_GROUPS] = {{0}};
    uint64_t members_n[MAX_GROUPS];
    flit_rank_t *list = calloc(n, sizeof *list);
    CHECK(list);
    for (unsigned i = 0; i < ng; i++) {
        /* Group 0: everyone (or all but the highest rank, --subset);
           group 1: everyone but rank 0. */
        uint32_t lo = i == 1 ? 1 : 0, hi = subset && i == 0 ? n - 1 : n;
        CHECK(hi > lo);
        unsigned k = 0;
        for (uint32_t r = hi; r-- > lo;) /* in descending order: any order goes */
            list[k++] = flit_rank(r);
        gs[i].id = 100 + i;
        gs[i].lo = lo;
        gs[i].hi = hi;
        gs[i].member = me >= lo && me < hi;
        members_n[i] = k;
        struct log *l = &gs[i].log;
        *l = (struct log){.nranks = n,
                          .me_rank = me,
                          .seed = seed,
                          .count = count,
                          .max = max,
                          .slow = me == slow,
                          .slow_us = mp_arg_u64(argc, argv, "--slow-us", 300)};
        CHECK((l->next_k = calloc(n, sizeof *l->next_k)));
        CHECK((l->buf = malloc(max + 1)));
        if (!gs[i].member)
            continue;
        flit_group_params_t p = {0};
        if (seq_last) {
            p.field_mask |= FLIT_GROUP_PARAM_SEQUENCER;
            p.sequencer = flit_rank(hi - 1);
        }
        if (deaths.nvictims) {
            p.field_mask |= FLIT_GROUP_PARAM_VIEW_FN;
            p.view_fn = on_view;
        }
        if (mp_arg_u64(argc, argv, "--window", 0)) {
            p.field_mask |= FLIT_GROUP_PARAM_WINDOW;
            p.window = (uint32_t)mp_arg_u64(argc, argv, "--window", 0);
        }
        /* Deliveries may start (on the progress thread) before create
           returns, so the handle is published under the log's lock. */
        flit_group_t *g;
        CHECK_OK(
            flit_group_create(groups, gs[i].id, list, k, &p, on_deliver, &gs[i], &g));
        pthread_mutex_lock(&mu);
        gs[i].g = g;
        pthread_mutex_unlock(&mu);
    }

    /* Every create returned before the first death: a member that dies
       while a group forms stops it instead (FLIT_ERR_PEER_DOWN), by design. */
    if (deaths.nvictims)
        CHECK_OK(flit_barrier(ep));
    uint8_t *buf = malloc(max + 1);
    CHECK(buf);
    uint64_t rng = mp_mix(seed, me, 7, 7), k_of[MAX_GROUPS] = {0};
    for (uint64_t sent = 0;;) {
        unsigned i = two ? (unsigned)(test_rand(&rng) % 2) : 0;
        if (!gs[i].member || k_of[i] == count)
            i = ng - 1 - i;
        if (!gs[i].member || k_of[i] == count)
            break;
        int v = victim_index(me);
        if (v >= 0 && k_of[i] == (v ? kill2_after : kill_after))
            raise(SIGKILL); /* mid-stream: some of it sent, some in flight */
        send_one(&gs[i], k_of[i]++, buf, &rng);
        if (++sent % 16 == 0)
            CHECK_OK(flit_poll(ep));
    }
    MP_WAIT(ep, all_data_in(gs, ng));
    for (unsigned d = 0; d < deaths.nvictims; d++) {
        pthread_mutex_lock(&mu);
        double late = deaths.view_at[d] - deaths.down_at[d], down = deaths.down_at[d];
        pthread_mutex_unlock(&mu);
        printf("group: rank %u: rank %u reported down, view without it %.3f s later\n",
               me, deaths.victim[d], late);
        if (down == 0 || late > 1.0)
            FAIL("the view without rank %u came %.3f s after its death was known",
                 deaths.victim[d], late);
    }
    for (unsigned i = 0; i < ng; i++)
        if (gs[i].member)
            send_digest(&gs[i]);
    MP_WAIT(ep, all_digests_in(gs, ng, members_n));
    for (unsigned i = 0; i < ng; i++) {
        if (!gs[i].member)
            continue;
        check_stats(&gs[i], slow < n && me != slow && n > 1);
        CHECK_OK(flit_group_destroy(gs[i].g));
    }
    CHECK_OK(flit_groups_destroy(groups));
    bool expect_loss = mp_arg_flag(argc, argv, "--expect-loss");
    bool expect_dups = mp_arg_flag(argc, argv, "--expect-dups");
    if (getenv("FLIT_DROP_RATE") || expect_loss || expect_dups) {
        /* the faults were there to survive: injected, or the kernel's */
        flit_stats_t st = {.struct_size = sizeof st};
        CHECK_OK(flit_ep_stats(ep, &st));
        printf("group: rank %u: %llu faults injected, %llu retransmissions, "
               "%llu duplicates\n",
               me, (unsigned long long)st.faults_injected,
               (unsigned long long)st.retransmits, (unsigned long long)st.duplicates);
        if (getenv("FLIT_DROP_RATE"))
            CHECK(st.faults_injected > 0);
        if (expect_loss && st.retransmits == 0)
            FAIL("--expect-loss, but rank %u retransmitted nothing", me);
        if (expect_dups && st.duplicates == 0)
            FAIL("--expect-dups, but rank %u discarded no duplicate", me);
    }
    printf("group: rank %u OK\n", me);
    for (unsigned i = 0; i < ng; i++) {
        free(gs[i].log.next_k);
        free(gs[i].log.buf);
    }
    free(buf);
    free(list);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
