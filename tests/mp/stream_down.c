/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A sender killed in the middle of its messages. Three ranks: rank 2 opens
 * a 1 MiB stream to rank 0 and one to rank 1 and sends the first 96 KiB of
 * each; the handlers start and wait for the rest on their fibers. Once its
 * handler holds bytes, each of ranks 0 and 1 says so to rank 2 (a
 * message); with both words in, rank 2 raises SIGKILL on itself.
 * Meanwhile ranks 0 and 1 stream to each other.
 *
 * On ranks 0 and 1 this proves:
 *  - the handler waiting for bytes that will never come is let go: its
 *    flit_stream_recv answers FLIT_ERR_PEER_DOWN, with what did arrive in
 *    its buffer (a prefix of the message, byte for byte), and it runs once;
 *  - the peer-down handler runs once, for rank 2;
 *  - a stream opened to rank 2 afterwards answers FLIT_ERR_PEER_DOWN;
 *  - the streams between 0 and 1 all arrive, intact and in order;
 *  - a barrier answers FLIT_ERR_PEER_DOWN rather than hang.
 * Each survivor prints "stream_down: rank R OK".
 *
 * Run under `flitrun --keep-going` (flitrun exits 137 naming rank 2); over
 * UDP with FLIT_PEER_TIMEOUT, the channel's give-up is the only news.
 *
 * --segment: the handlers take the big message into their segments, in
 * 64 KiB pieces, so that on shared memory rank 2 places bytes there and dies
 * with a place offered and not filled: the same must hold, and each
 * survivor must have made offers.
 */
#include <signal.h>

#include <flit/stream.h>

#include "mp.h"

enum { H_BIG = 1, H_PAIR = 2, H_HOLDING = 3 };

#define VICTIM    2u
#define BIG       (1u << 20)
#define SENT      (96u << 10)
#define PAIR_MSGS 400u
#define PAIR_LEN  5000u

static struct {
    flit_ep_t *ep;
    uint32_t me;
    int big_runs;
    bool big_holding; /* the handler took its first bytes */
    bool told;        /* and rank 2 was told */
    int holding;      /* rank 2: survivors whose handlers hold bytes */
    flit_status big_status;
    size_t big_got;
    uint8_t *big_buf;
    size_t big_piece; /* the handler takes this many bytes at a time */
    uint64_t pair_next;
    int down_calls;
    uint32_t down_peer;
} g;

static void on_big(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    CHECK(flit_stream_rank(s).idx == VICTIM && total == BIG);
    g.big_runs++;
    size_t got = 0;
    flit_status st = FLIT_OK;
    while (got < total && st == FLIT_OK) {
        size_t before = flit_stream_remaining(s);
        st = flit_stream_recv(s, g.big_buf + got, g.big_piece);
        got += st == FLIT_OK ? g.big_piece : before - flit_stream_remaining(s);
        g.big_holding |= st == FLIT_OK;
    }
    g.big_status = st;
    g.big_got = got;
}

static void on_pair(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    uint8_t buf[PAIR_LEN];
    CHECK(total == PAIR_LEN);
    CHECK_OK(flit_stream_recv(s, buf, total));
    uint32_t src = flit_stream_rank(s).idx;
    size_t bad = mp_pattern_check(buf, total, mp_mix(src, g.me, g.pair_next, 3));
    if (bad != total)
        FAIL("message %llu from rank %u: byte %zu differs",
             (unsigned long long)g.pair_next, src, bad);
    g.pair_next++;
}

static void on_holding(flit_token_t *t, void *buf, size_t n, const uint32_t *a,
                       unsigned na, void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    g.holding++;
}

/* Over UDP the word to rank 2 may come back: delivered, but rank 2 died
   before acknowledging it. Nothing else may. */
static void on_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    if (r->peer.idx == VICTIM && r->handler.idx == H_HOLDING &&
        r->reason == FLIT_ERR_PEER_DOWN)
        return;
    mp_returned_fail(ep, r, user);
}

/* Once the handler holds bytes: rank 2 may die. */
static void tell_victim(void)
{
    if (g.told || !g.big_holding)
        return;
    uint32_t me[1] = {g.me};
    CHECK_OK(flit_am_short(g.ep, flit_rank(VICTIM), flit_handler(H_HOLDING), me, 1, 0));
    g.told = true;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    CHECK(reason == FLIT_ERR_PEER_DOWN);
    g.down_calls++;
    g.down_peer = peer.idx;
}

static void victim(void)
{
    uint8_t *data = malloc(BIG);
    CHECK(data);
    mp_pattern_fill(data, BIG, 77);
    flit_stream_out_t *s[2];
    for (uint32_t r = 0; r < 2; r++) {
        CHECK_OK(
            flit_stream_begin(g.ep, flit_rank(r), flit_handler(H_BIG), BIG, 0, &s[r]));
        CHECK_OK(flit_stream_send(s[r], data, SENT));
    }
    /* Until both handlers hold bytes (the ranks poll their fibers). */
    MP_WAIT(g.ep, g.holding == 2);
    fflush(NULL);
    raise(SIGKILL);
}

static void survivor(void)
{
    uint32_t other = 1 - g.me;
    uint8_t buf[PAIR_LEN];
    for (uint64_t i = 0; i < PAIR_MSGS; i++) {
        mp_pattern_fill(buf, sizeof buf, mp_mix(g.me, other, i, 3));
        flit_stream_out_t *s;
        CHECK_OK(flit_stream_begin(g.ep, flit_rank(other), flit_handler(H_PAIR),
                                   sizeof buf, 0, &s));
        CHECK_OK(flit_stream_send(s, buf, 1000));
        CHECK_OK(flit_stream_send(s, buf + 1000, sizeof buf - 1000));
        CHECK_OK(flit_stream_end(s));
        CHECK_OK(flit_poll(g.ep));
        tell_victim();
    }
    MP_WAIT(g.ep, g.big_holding);
    tell_victim();
    MP_WAIT(g.ep,
            g.pair_next == PAIR_MSGS && g.down_calls == 1 && g.big_status != FLIT_OK);
    CHECK(g.down_peer == VICTIM);
    CHECK(g.big_runs == 1);
    CHECK(g.big_status == FLIT_ERR_PEER_DOWN);
    CHECK(g.big_got >= g.big_piece && g.big_got <= SENT);
    uint8_t *want = malloc(BIG);
    mp_pattern_fill(want, BIG, 77);
    CHECK(memcmp(g.big_buf, want, g.big_got) == 0);
    free(want);
    flit_stream_out_t *s;
    CHECK_ST(flit_stream_begin(g.ep, flit_rank(VICTIM), flit_handler(H_BIG), 10, 0, &s),
             FLIT_ERR_PEER_DOWN);
    CHECK_ST(flit_barrier(g.ep), FLIT_ERR_PEER_DOWN);
    flit_stats_t st = {.struct_size = sizeof st};
    CHECK_OK(flit_ep_stats(g.ep, &st));
    printf("stream_down: rank %u OK: %zu of %u bytes arrived before the sender died "
           "(%llu places offered)\n",
           g.me, g.big_got, BIG, (unsigned long long)st.stream_offers);
    fflush(stdout);
    const char *tp = getenv("FLIT_TRANSPORT");
    if (g.big_piece > 4096 && !(tp && strcmp(tp, "udp") == 0))
        CHECK(st.stream_offers > 0);
}

int main(int argc, char **argv)
{
    CHECK_OK(flit_init(NULL));
    CHECK(flit_job_size() == 3);
    g.me = flit_job_rank().idx;
    bool segment = mp_arg_flag(argc, argv, "--segment");
    flit_ep_params_t params = {.field_mask = FLIT_EP_PARAM_SEGMENT, .segment_size = BIG};
    CHECK_OK(flit_ep_create(segment ? &params : NULL, &g.ep));
    g.big_piece = segment ? 64u << 10 : 4096;
    if (segment) {
        void *seg;
        size_t size;
        CHECK_OK(flit_ep_segment(g.ep, &seg, &size));
        g.big_buf = seg;
    } else {
        g.big_buf = malloc(BIG);
        CHECK(g.big_buf);
    }
    CHECK_OK(flit_stream_register(g.ep, flit_handler(H_BIG), on_big, NULL));
    CHECK_OK(flit_stream_register(g.ep, flit_handler(H_PAIR), on_pair, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(g.ep, on_down, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_HOLDING), on_holding, NULL));
    CHECK_OK(flit_am_set_returned_handler(g.ep, on_returned, NULL));
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == VICTIM)
        victim();
    else
        survivor();
    CHECK_OK(flit_finalize());
    if (!segment)
        free(g.big_buf);
    return 0;
}
