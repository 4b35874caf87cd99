/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Returned messages, non-blocking sends and counters in a job of one rank.
 *
 *  - A message the destination refuses comes back to the sender's
 *    returned-message handler with every field of flit_returned_t right:
 *    no handler registered, handler index beyond the table, wrong tag (and
 *    messages flow again once the tag is restored), and replies refused the
 *    same way (is_reply = 1). Refused messages never run a handler.
 *  - FLIT_AM_NONBLOCK fills the self ring until FLIT_ERR_AGAIN and sends
 *    nothing then; flit_poll drains and every handler runs once, in order.
 *    A blocking send into the full ring makes progress itself; a refused
 *    non-blocking long leaves the destination segment untouched; replies
 *    that overflow the reply lane do not deadlock the request handler.
 *  - flit_ep_stats counts exactly what was sent, received and returned.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#define SEG_SIZE  8192u
#define NHANDLERS 64u

enum {
    H_COUNT = 1,    /* counts */
    H_REPLY_SHORT,  /* replies short to args[0] with args[1..] */
    H_REPLY_MEDIUM, /* replies medium (args[1] bytes) to args[0] */
    H_REPLY_LONG,   /* replies long (args[1] bytes at args[2]) to args[0] */
    H_SEQ,          /* checks args[0] is the next sequence number */
    H_UNUSED = 20,  /* never registered */
};

static uint8_t seg_mem[SEG_SIZE];
static uint8_t payload[FLIT_AM_MAX_MEDIUM];

/* ---------------------------------------------------------------- returned */

struct ret {
    flit_status reason;
    uint32_t peer;
    uint16_t handler;
    flit_am_kind kind;
    int is_reply;
    unsigned nargs;
    uint32_t args[FLIT_AM_MAX_ARGS];
    uint8_t *payload; /* copy, or NULL when info->payload was NULL */
    size_t nbytes;
    uint64_t offset;
};

static struct ret rets[64];
static int nrets;
static flit_ep_t *ret_ep;

static void returned_handler(flit_ep_t *ep, const flit_returned_t *info, void *user)
{
    CHECK(user == &rets);
    CHECK(ep == ret_ep);
    CHECK(nrets < 64);
    struct ret *r = &rets[nrets++];
    r->reason = info->reason;
    r->peer = info->peer.idx;
    r->handler = info->handler.idx;
    r->kind = info->kind;
    r->is_reply = info->is_reply;
    r->nargs = info->nargs;
    CHECK(info->nargs <= FLIT_AM_MAX_ARGS);
    CHECK(info->nargs == 0 || info->args != NULL);
    for (unsigned i = 0; i < info->nargs; i++)
        r->args[i] = info->args[i];
    r->payload = NULL;
    if (info->payload) {
        r->payload = malloc(info->nbytes ? info->nbytes : 1);
        CHECK(r->payload != NULL);
        memcpy(r->payload, info->payload, info->nbytes);
    }
    r->nbytes = info->nbytes;
    r->offset = info->offset;
    /* A returned-message handler may not send or make progress. */
    uint32_t a = 0;
    CHECK_ST(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), &a, 1, 0),
             FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_poll(ep), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_wait(ep, 0), FLIT_ERR_IN_HANDLER);
}

static void clear_rets(void)
{
    for (int i = 0; i < nrets; i++)
        free(rets[i].payload);
    nrets = 0;
}

/* ---------------------------------------------------------------- handlers */

static int count_runs;
static uint32_t count_last_arg;

static void count_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    count_runs++;
    count_last_arg = nargs ? args[0] : 0;
}

static void reply_short_handler(flit_token_t *t, void *buf, size_t nbytes,
                                const uint32_t *args, unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    CHECK(nargs >= 1);
    CHECK_OK(
        flit_am_reply_short(t, flit_handler((uint16_t)args[0]), args + 1, nargs - 1));
}

static void reply_medium_handler(flit_token_t *t, void *buf, size_t nbytes,
                                 const uint32_t *args, unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    CHECK(nargs >= 2);
    CHECK_OK(flit_am_reply_medium(t, flit_handler((uint16_t)args[0]), payload, args[1],
                                  args + 2, nargs - 2));
}

static void reply_long_handler(flit_token_t *t, void *buf, size_t nbytes,
                               const uint32_t *args, unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    CHECK(nargs >= 3);
    CHECK_OK(flit_am_reply_long(t, flit_handler((uint16_t)args[0]), payload, args[1],
                                args[2], args + 3, nargs - 3));
}

static uint32_t seq_next;
static int seq_runs;

static void seq_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)t, (void)user;
    CHECK(nargs == 1);
    if (args[0] != seq_next)
        FAIL("handler ran for message %u, expected %u", args[0], seq_next);
    CHECK(nbytes == 1000);
    CHECK(((const uint8_t *)buf)[0] == (uint8_t)args[0]);
    seq_next++;
    seq_runs++;
}

static void register_all(flit_ep_t *ep)
{
    CHECK_OK(flit_am_register(ep, flit_handler(H_COUNT), count_handler, NULL));
    CHECK_OK(
        flit_am_register(ep, flit_handler(H_REPLY_SHORT), reply_short_handler, NULL));
    CHECK_OK(
        flit_am_register(ep, flit_handler(H_REPLY_MEDIUM), reply_medium_handler, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_REPLY_LONG), reply_long_handler, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_SEQ), seq_handler, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, returned_handler, &rets));
}

static flit_ep_t *make_ep(void)
{
    flit_ep_params_t p = {
        .field_mask = FLIT_EP_PARAM_SEGMENT | FLIT_EP_PARAM_HANDLER_COUNT,
        .segment_addr = seg_mem,
        .segment_size = SEG_SIZE,
        .handler_count = NHANDLERS,
    };
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(&p, &ep));
    register_all(ep);
    ret_ep = ep;
    return ep;
}

/* Polls until *counter reaches want; then a few more passes must not move
   it (nothing runs twice). */
static void drain(flit_ep_t *ep, const int *counter, int want)
{
    for (int i = 0; i < 100000 && *counter < want; i++)
        CHECK_OK(flit_poll(ep));
    if (*counter != want)
        FAIL("count %d, expected %d", *counter, want);
    for (int i = 0; i < 8; i++)
        CHECK_OK(flit_poll(ep));
    if (*counter != want)
        FAIL("count %d after more polls, expected %d", *counter, want);
}

static void expect_ret(int i, flit_status reason, uint16_t handler, flit_am_kind kind,
                       int is_reply, unsigned nargs, const uint32_t *args,
                       const uint8_t *pl, size_t nbytes, uint64_t offset)
{
    CHECK(i < nrets);
    const struct ret *r = &rets[i];
    if (r->reason != reason)
        FAIL("returned #%d: reason %s, expected %s", i, flit_status_name(r->reason),
             flit_status_name(reason));
    CHECK(r->peer == 0);
    if (r->handler != handler || r->kind != kind || r->is_reply != is_reply)
        FAIL("returned #%d: handler %u %s, expected handler %u %s", i, r->handler,
             flit_am_kind_name(r->kind, r->is_reply), handler,
             flit_am_kind_name(kind, is_reply));
    CHECK(r->nargs == nargs);
    for (unsigned k = 0; k < nargs; k++)
        CHECK(r->args[k] == args[k]);
    if (kind == FLIT_AM_MEDIUM) {
        CHECK(r->payload != NULL);
        CHECK(memcmp(r->payload, pl, nbytes) == 0);
    } else {
        CHECK(r->payload == NULL);
    }
    if (r->nbytes != nbytes || r->offset != offset)
        FAIL("returned #%d: nbytes %zu offset %llu, expected %zu, %llu", i, r->nbytes,
             (unsigned long long)r->offset, nbytes, (unsigned long long)offset);
}

/* ---------------------------------------------------------------- tests */

static void test_no_handler(flit_ep_t *ep)
{
    const uint32_t a[4] = {1, 2, 3, 0xffffffffu};
    flit_rank_t me = flit_rank(0);
    CHECK_OK(flit_am_short(ep, me, flit_handler(13), a, 3, 0));
    drain(ep, &nrets, 1);
    expect_ret(0, FLIT_ERR_NO_HANDLER, 13, FLIT_AM_SHORT, 0, 3, a, NULL, 0, 0);

    CHECK_OK(flit_am_short(ep, me, flit_handler(6), NULL, 0, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(7), payload, 1000, a + 3, 1, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(8), payload + 1, FLIT_AM_MAX_MEDIUM - 1,
                            a, 4, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(9), NULL, 0, NULL, 0, 0));
    CHECK_OK(flit_am_long(ep, me, flit_handler(10), payload, 256, 128, a, 2, 0));
    CHECK_OK(flit_am_long(ep, me, flit_handler(11), NULL, 0, SEG_SIZE, NULL, 0, 0));
    drain(ep, &nrets, 7);
    expect_ret(1, FLIT_ERR_NO_HANDLER, 6, FLIT_AM_SHORT, 0, 0, a, NULL, 0, 0);
    expect_ret(2, FLIT_ERR_NO_HANDLER, 7, FLIT_AM_MEDIUM, 0, 1, a + 3, payload, 1000, 0);
    expect_ret(3, FLIT_ERR_NO_HANDLER, 8, FLIT_AM_MEDIUM, 0, 4, a, payload + 1,
               FLIT_AM_MAX_MEDIUM - 1, 0);
    expect_ret(4, FLIT_ERR_NO_HANDLER, 9, FLIT_AM_MEDIUM, 0, 0, a, payload, 0, 0);
    expect_ret(5, FLIT_ERR_NO_HANDLER, 10, FLIT_AM_LONG, 0, 2, a, NULL, 256, 128);
    expect_ret(6, FLIT_ERR_NO_HANDLER, 11, FLIT_AM_LONG, 0, 0, a, NULL, 0, SEG_SIZE);
    CHECK(count_runs == 0);
    clear_rets();

    /* Removing a handler makes its index unregistered again. */
    CHECK_OK(flit_am_register(ep, flit_handler(12), count_handler, NULL));
    CHECK_OK(flit_am_short(ep, me, flit_handler(12), a, 1, 0));
    drain(ep, &count_runs, 1);
    CHECK_OK(flit_am_register(ep, flit_handler(12), NULL, NULL));
    CHECK_OK(flit_am_short(ep, me, flit_handler(12), a, 1, 0));
    drain(ep, &nrets, 1);
    expect_ret(0, FLIT_ERR_NO_HANDLER, 12, FLIT_AM_SHORT, 0, 1, a, NULL, 0, 0);
    CHECK(count_runs == 1);
    count_runs = 0;
    clear_rets();
}

static void test_bad_handler(flit_ep_t *ep)
{
    const uint32_t a[2] = {77, 78};
    flit_rank_t me = flit_rank(0);
    static const uint16_t beyond[] = {NHANDLERS, 100, 255, 256, 65535};
    for (int i = 0; i < 5; i++)
        CHECK_OK(flit_am_short(ep, me, flit_handler(beyond[i]), a, 2, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(100), payload, 33, a, 1, 0));
    CHECK_OK(flit_am_long(ep, me, flit_handler(100), payload, 64, 0, a, 2, 0));
    drain(ep, &nrets, 7);
    for (int i = 0; i < 5; i++)
        expect_ret(i, FLIT_ERR_BAD_HANDLER, beyond[i], FLIT_AM_SHORT, 0, 2, a, NULL, 0,
                   0);
    expect_ret(5, FLIT_ERR_BAD_HANDLER, 100, FLIT_AM_MEDIUM, 0, 1, a, payload, 33, 0);
    expect_ret(6, FLIT_ERR_BAD_HANDLER, 100, FLIT_AM_LONG, 0, 2, a, NULL, 64, 0);
    CHECK(count_runs == 0);
    clear_rets();
}

static void test_tags(flit_ep_t *ep)
{
    const uint32_t a[1] = {4242};
    flit_rank_t me = flit_rank(0);
    uint64_t tag = 0;
    CHECK_OK(flit_ep_tag(ep, &tag));

    /* What we send to rank 0 now carries another tag: refused. */
    CHECK_OK(flit_ep_set_peer_tag(ep, me, tag ^ 0x100));
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_COUNT), a, 1, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(H_COUNT), payload, 500, a, 1, 0));
    CHECK_OK(flit_am_long(ep, me, flit_handler(H_COUNT), payload, 100, 4000, a, 1, 0));
    /* The tag is checked before the handler index. */
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_UNUSED), a, 1, 0));
    CHECK_OK(flit_am_short(ep, me, flit_handler(1000), a, 1, 0));
    drain(ep, &nrets, 5);
    expect_ret(0, FLIT_ERR_BAD_TAG, H_COUNT, FLIT_AM_SHORT, 0, 1, a, NULL, 0, 0);
    expect_ret(1, FLIT_ERR_BAD_TAG, H_COUNT, FLIT_AM_MEDIUM, 0, 1, a, payload, 500, 0);
    expect_ret(2, FLIT_ERR_BAD_TAG, H_COUNT, FLIT_AM_LONG, 0, 1, a, NULL, 100, 4000);
    expect_ret(3, FLIT_ERR_BAD_TAG, H_UNUSED, FLIT_AM_SHORT, 0, 1, a, NULL, 0, 0);
    expect_ret(4, FLIT_ERR_BAD_TAG, 1000, FLIT_AM_SHORT, 0, 1, a, NULL, 0, 0);
    CHECK(count_runs == 0);
    clear_rets();

    /* Restored: messages flow again. */
    CHECK_OK(flit_ep_set_peer_tag(ep, me, tag));
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_COUNT), a, 1, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(H_COUNT), payload, 500, a, 1, 0));
    drain(ep, &count_runs, 2);
    CHECK(nrets == 0 && count_last_arg == 4242);

    /* Our own tag changed: what still carries the old one is refused... */
    CHECK_OK(flit_ep_set_tag(ep, tag + 1));
    uint64_t now = 0;
    CHECK_OK(flit_ep_tag(ep, &now));
    CHECK(now == tag + 1);
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_COUNT), a, 1, 0));
    drain(ep, &nrets, 1);
    expect_ret(0, FLIT_ERR_BAD_TAG, H_COUNT, FLIT_AM_SHORT, 0, 1, a, NULL, 0, 0);
    clear_rets();
    /* ...until the sender uses the new one. */
    CHECK_OK(flit_ep_set_peer_tag(ep, me, tag + 1));
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_COUNT), a, 1, 0));
    drain(ep, &count_runs, 3);
    CHECK(nrets == 0);
    count_runs = 0;
}

static void test_replies_returned(flit_ep_t *ep)
{
    flit_rank_t me = flit_rank(0);
    /* Reply short to an unregistered handler, with two arguments. */
    const uint32_t rs[3] = {H_UNUSED, 0xdead, 0xbeef};
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_SHORT), rs, 3, 0));
    /* Reply medium of 300 bytes to an unregistered handler, one argument. */
    const uint32_t rm[3] = {H_UNUSED + 1, 300, 0x1234};
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_MEDIUM), rm, 3, 0));
    /* Reply long: 200 bytes at 1024. */
    const uint32_t rl[4] = {H_UNUSED + 2, 200, 1024, 99};
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_LONG), rl, 4, 0));
    /* Reply to a handler beyond the table. */
    const uint32_t rb[1] = {NHANDLERS + 5};
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_SHORT), rb, 1, 0));
    drain(ep, &nrets, 4);
    expect_ret(0, FLIT_ERR_NO_HANDLER, H_UNUSED, FLIT_AM_SHORT, 1, 2, rs + 1, NULL, 0, 0);
    expect_ret(1, FLIT_ERR_NO_HANDLER, H_UNUSED + 1, FLIT_AM_MEDIUM, 1, 1, rm + 2,
               payload, 300, 0);
    expect_ret(2, FLIT_ERR_NO_HANDLER, H_UNUSED + 2, FLIT_AM_LONG, 1, 1, rl + 3, NULL,
               200, 1024);
    expect_ret(3, FLIT_ERR_BAD_HANDLER, NHANDLERS + 5, FLIT_AM_SHORT, 1, 0, rb, NULL, 0,
               0);
    clear_rets();

    /* A reply to a registered handler gets through. */
    const uint32_t ok[2] = {H_COUNT, 5};
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_SHORT), ok, 2, 0));
    drain(ep, &count_runs, 1); /* the request ran, its reply too */
    CHECK(count_last_arg == 5 && nrets == 0);
    count_runs = 0;
}

static void test_nonblock(void)
{
    flit_ep_t *ep = make_ep();
    flit_rank_t me = flit_rank(0);
    flit_stats_t s0 = {.struct_size = sizeof s0};
    CHECK_OK(flit_ep_stats(ep, &s0));
    CHECK(s0.credit_stalls == 0);

    /* Fill the ring to ourselves without polling. */
    uint32_t k = 0;
    flit_status st = FLIT_OK;
    for (; k < 100000; k++) {
        memset(payload, (int)(uint8_t)k, 1);
        st = flit_am_medium(ep, me, flit_handler(H_SEQ), payload, 1000, &k, 1,
                            FLIT_AM_NONBLOCK);
        if (st != FLIT_OK)
            break;
    }
    CHECK_ST(st, FLIT_ERR_AGAIN);
    CHECK(k > 1);
    CHECK(seq_runs == 0);
    /* Still full: again refused, and nothing is sent either time. */
    CHECK_ST(flit_am_medium(ep, me, flit_handler(H_SEQ), payload, 1000, &k, 1,
                            FLIT_AM_NONBLOCK),
             FLIT_ERR_AGAIN);
    /* Top up with shorts until not even one line is left. */
    uint32_t shorts = 0;
    for (; shorts < 100000; shorts++) {
        st = flit_am_short(ep, me, flit_handler(H_COUNT), &shorts, 1, FLIT_AM_NONBLOCK);
        if (st != FLIT_OK)
            break;
    }
    CHECK_ST(st, FLIT_ERR_AGAIN);
    /* A refused non-blocking long leaves the segment untouched. */
    memset(seg_mem, 0, sizeof seg_mem);
    static uint8_t ones[2048];
    memset(ones, 0xff, sizeof ones);
    CHECK_ST(flit_am_long(ep, me, flit_handler(H_COUNT), ones, sizeof ones, 512, &k, 1,
                          FLIT_AM_NONBLOCK),
             FLIT_ERR_AGAIN);
    for (size_t i = 0; i < sizeof seg_mem; i++)
        if (seg_mem[i] != 0)
            FAIL("refused non-blocking long wrote segment byte %zu", i);
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    CHECK(s.sent_msgs[FLIT_STAT_REQ_MEDIUM] == k);
    CHECK(s.sent_bytes[FLIT_STAT_REQ_MEDIUM] == (uint64_t)k * 1000);
    CHECK(s.sent_msgs[FLIT_STAT_REQ_SHORT] == shorts);
    CHECK(s.sent_msgs[FLIT_STAT_REQ_LONG] == 0);
    CHECK(s.credit_stalls == 4);
    CHECK(s.recv_msgs[FLIT_STAT_REQ_MEDIUM] == 0);

    /* flit_poll drains; each handler runs once, in order. */
    drain(ep, &seq_runs, (int)k);
    drain(ep, &count_runs, (int)shorts);
    CHECK(count_last_arg == shorts - 1);
    count_runs = 0;
    CHECK(seq_next == k);
    CHECK_OK(flit_ep_stats(ep, &s));
    CHECK(s.recv_msgs[FLIT_STAT_REQ_MEDIUM] == k);
    CHECK(s.recv_bytes[FLIT_STAT_REQ_MEDIUM] == (uint64_t)k * 1000);

    /* Full again; a blocking send now makes progress itself (handlers run
       inside it) and gets through. */
    uint32_t base = k, j = base;
    for (; j < base + 100000; j++) {
        memset(payload, (int)(uint8_t)j, 1);
        st = flit_am_medium(ep, me, flit_handler(H_SEQ), payload, 1000, &j, 1,
                            FLIT_AM_NONBLOCK);
        if (st != FLIT_OK)
            break;
    }
    CHECK_ST(st, FLIT_ERR_AGAIN);
    int before = seq_runs;
    memset(payload, (int)(uint8_t)j, 1);
    CHECK_OK(flit_am_medium(ep, me, flit_handler(H_SEQ), payload, 1000, &j, 1, 0));
    CHECK(seq_runs > before);
    drain(ep, &seq_runs, (int)j + 1);
    CHECK(seq_next == j + 1);

    /* Shorts too, and nothing is lost between refusals. */
    uint32_t n = 0;
    int runs = count_runs;
    for (; n < 100000; n++) {
        st = flit_am_short(ep, me, flit_handler(H_COUNT), &n, 1, FLIT_AM_NONBLOCK);
        if (st != FLIT_OK)
            break;
    }
    CHECK_ST(st, FLIT_ERR_AGAIN);
    drain(ep, &count_runs, runs + (int)n);
    CHECK(count_last_arg == n - 1);
    count_runs = 0;

    /* Requests whose replies overflow the reply lane: a request handler's
       blocked reply makes progress on replies and never deadlocks. */
    const uint32_t big_reply[3] = {H_COUNT, FLIT_AM_MAX_MEDIUM, 99};
    for (int i = 0; i < 40; i++)
        CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_MEDIUM), big_reply, 3, 0));
    drain(ep, &count_runs, 40);
    CHECK(count_last_arg == 99);
    CHECK_OK(flit_ep_stats(ep, &s));
    CHECK(s.sent_msgs[FLIT_STAT_REP_MEDIUM] == 40);
    CHECK(s.recv_bytes[FLIT_STAT_REP_MEDIUM] == 40ull * FLIT_AM_MAX_MEDIUM);
    count_runs = 0;
    CHECK_OK(flit_ep_destroy(ep));
}

static void test_stats(void)
{
    flit_ep_t *ep = make_ep();
    flit_rank_t me = flit_rank(0);
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    for (int k = 0; k < FLIT_STAT_KINDS; k++)
        CHECK(s.sent_msgs[k] == 0 && s.recv_msgs[k] == 0 && s.sent_bytes[k] == 0 &&
              s.recv_bytes[k] == 0);
    CHECK(s.returned_to_us == 0 && s.returned_by_us == 0 && s.refused_packets == 0);

    const uint32_t a[2] = {1, 2};
    for (int i = 0; i < 3; i++)
        CHECK_OK(flit_am_short(ep, me, flit_handler(H_COUNT), a, 2, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(H_COUNT), payload, 100, a, 1, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(H_COUNT), payload, 200, NULL, 0, 0));
    CHECK_OK(flit_am_long(ep, me, flit_handler(H_COUNT), payload, 300, 0, a, 2, 0));
    const uint32_t rs[1] = {H_COUNT};
    const uint32_t rm[2] = {H_COUNT, 50};
    const uint32_t rl[3] = {H_COUNT, 40, 1000};
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_SHORT), rs, 1, 0));
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_MEDIUM), rm, 2, 0));
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_REPLY_LONG), rl, 3, 0));
    CHECK_OK(flit_am_short(ep, me, flit_handler(H_UNUSED), a, 2, 0));
    CHECK_OK(flit_am_medium(ep, me, flit_handler(H_UNUSED), payload, 70, a, 2, 0));
    /* 6 requests to H_COUNT and 3 replies to it. */
    drain(ep, &count_runs, 9);
    drain(ep, &nrets, 2);

    CHECK_OK(flit_ep_stats(ep, &s));
    static const uint64_t sent_msgs[FLIT_STAT_KINDS] = {7, 3, 1, 1, 1, 1};
    static const uint64_t sent_bytes[FLIT_STAT_KINDS] = {0, 370, 300, 0, 50, 40};
    static const uint64_t recv_msgs[FLIT_STAT_KINDS] = {6, 2, 1, 1, 1, 1};
    static const uint64_t recv_bytes[FLIT_STAT_KINDS] = {0, 300, 300, 0, 50, 40};
    for (int k = 0; k < FLIT_STAT_KINDS; k++) {
        if (s.sent_msgs[k] != sent_msgs[k] || s.sent_bytes[k] != sent_bytes[k] ||
            s.recv_msgs[k] != recv_msgs[k] || s.recv_bytes[k] != recv_bytes[k])
            FAIL("kind %d: sent %llu msgs %llu B, received %llu msgs %llu B; expected "
                 "%llu %llu %llu %llu",
                 k, (unsigned long long)s.sent_msgs[k],
                 (unsigned long long)s.sent_bytes[k], (unsigned long long)s.recv_msgs[k],
                 (unsigned long long)s.recv_bytes[k], (unsigned long long)sent_msgs[k],
                 (unsigned long long)sent_bytes[k], (unsigned long long)recv_msgs[k],
                 (unsigned long long)recv_bytes[k]);
    }
    CHECK(s.returned_to_us == 2);
    CHECK(s.returned_by_us == 2);
    CHECK(s.refused_packets == 0);
    CHECK(s.credit_stalls == 0);
    CHECK(s.peers_down == 0);
    CHECK(s.polls > 0);
    clear_rets();
    count_runs = 0;
    CHECK_OK(flit_ep_destroy(ep));
}

int main(void)
{
    unit_clean_env();
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep = make_ep();
    test_no_handler(ep);
    test_bad_handler(ep);
    test_tags(ep);
    test_replies_returned(ep);
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    CHECK(s.returned_to_us == 8 + 7 + 6 + 4);
    CHECK(s.returned_by_us == s.returned_to_us);
    CHECK(s.refused_packets == 0);
    CHECK_OK(flit_ep_destroy(ep));
    test_nonblock();
    test_stats();
    CHECK_OK(flit_finalize());
    return 0;
}
