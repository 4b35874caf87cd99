/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A group member never falls to another's malformed messages (issue 36,
 * item 6). 2 ranks. Rank 0 makes a group of both with rank 1 as its
 * sequencer; rank 1 is no group layer at all: it takes the handler index
 * the groups reserve (the same reservation, collectively) and speaks the
 * wire itself: it answers the JOIN with a READY, then sends rank 0 what
 * the protocol never sends a member that is not the sequencer, and
 * messages no member sends:
 *
 *  - OP_SMALL, OP_SEQREQ, OP_CREDREQ, OP_ACK, OP_LEAVE, OP_FIN (546760f:
 *    the sequencer's arrays, NULL at any other member: SIGSEGV);
 *  - OP_DATA of a message 2^64 - 16 bytes long (546760f: the hold-back
 *    block's size wrapped; a fragment copied past a few bytes' block);
 *  - OP_DATA with no bytes at the end of a message of 8 fragments
 *    (546760f: a bit set one byte past the block's fragment map);
 *  - OP_DATA naming a sender outside the group; a JOIN with a fragment
 *    size below FRAG_MIN; bytes on a control message; a wrong version.
 *
 * Then one well-formed message, numbered 0: rank 0 delivers it (and only
 * it), counts each refusal (flit_group_stats.refused), and leaves the
 * group the protocol's way (LEAVE, DONE, FIN, CLOSED) with rank 1.
 * Each rank prints "group hostile: rank R OK".
 */
#include <flit/group.h>

#include "group/internal.h"
#include "mp.h"

#define GID 5u

static const flit_rank_t members[2] = {{0}, {1}};

/* ---------------------------------------------------------------- rank 0 */

static char got[32];
static size_t ngot;

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g, (void)user;
    CHECK(ngot == 0 && total < sizeof got);
    CHECK_OK(flit_group_recv(m, got, total));
    ngot = total ? total : 1;
}

static void member(flit_ep_t *ep, unsigned refusals)
{
    flit_groups_t *gs;
    flit_group_t *g;
    CHECK_OK(flit_groups_create(ep, &gs));
    flit_group_params_t p = {.field_mask = FLIT_GROUP_PARAM_SEQUENCER,
                             .sequencer = flit_rank(1)};
    CHECK_OK(flit_group_create(gs, GID, members, 2, &p, on_deliver, NULL, &g));
    MP_WAIT(ep, ngot != 0);
    CHECK(ngot == 5 && memcmp(got, "hello", 5) == 0);
    flit_group_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_group_stats(g, &s));
    if (s.refused != refusals)
        FAIL("%llu messages refused, %u sent", (unsigned long long)s.refused, refusals);
    CHECK(s.delivered == 1);
    CHECK_OK(flit_group_destroy(g));
    CHECK_OK(flit_groups_destroy(gs));
}

/* ---------------------------------------------------------------- rank 1 */

static struct {
    flit_ep_t *ep;
    flit_handler_t h;
    _Atomic int join, leave, fin;
} a;

static void on_raw(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)user;
    if (nargs < 3 || args[1] != GID)
        return;
    switch (args[0] & 0xff) {
    case OP_JOIN:
        a.join = 1;
        break;
    case OP_LEAVE:
        a.leave = 1;
        break;
    case OP_FIN:
        a.fin = 1;
        break;
    default:
        break; /* ACKs, credit requests: a sequencer that grants nothing */
    }
}

static void send_words(enum op op, const uint32_t *rest, unsigned nrest, const void *buf,
                       size_t len)
{
    uint32_t w[MAX_ARGS] = {op_word(op), GID, 0};
    if (nrest)
        memcpy(w + 3, rest, sizeof *w * nrest);
    if (len)
        CHECK_OK(flit_am_medium(a.ep, flit_rank(0), a.h, buf, len, w, 3 + nrest, 0));
    else
        CHECK_OK(flit_am_short(a.ep, flit_rank(0), a.h, w, 3 + nrest, 0));
}

/* OP_DATA: [3,4] number [5] root [6] sender [7] its seq [8,9] total
   [10,11] offset. */
static void send_data(uint64_t seq, uint32_t sender, uint64_t total, const void *buf,
                      size_t len)
{
    uint32_t d[9] = {(uint32_t)seq,   (uint32_t)(seq >> 32),   NO_RANK, sender, 0,
                     (uint32_t)total, (uint32_t)(total >> 32), 0,       0};
    send_words(OP_DATA, d, 9, buf, len);
}

/* The malformed messages; their number. */
static unsigned attack(void)
{
    uint32_t two[3] = {1, 1, 1}, bytes[8] = {0};
    send_words(OP_SMALL, two, 2, "boom", 4); /* a sequencer's */
    send_words(OP_SEQREQ, two, 3, NULL, 0);  /* " */
    send_words(OP_CREDREQ, two, 1, NULL, 0); /* " */
    send_words(OP_ACK, two, 2, NULL, 0);     /* " */
    send_words(OP_LEAVE, NULL, 0, NULL, 0);  /* " */
    send_words(OP_FIN, NULL, 0, NULL, 0);    /* " */
    static uint8_t frag[FRAG_MIN]; /* one whole fragment (READY said FRAG_MIN) */
    send_data(0, 1, UINT64_MAX - 15, frag, sizeof frag); /* a size that wraps */
    send_data(0, 77, 5, "hello", 5);                     /* no such member */
    uint32_t end[9] = {5, 0, NO_RANK, 1, 0, 8 * FRAG_MIN, 0, 8 * FRAG_MIN, 0};
    send_words(OP_DATA, end, 9, NULL, 0); /* no bytes, at the end of 8 fragments */
    uint32_t tiny[1] = {16};
    send_words(OP_JOIN, tiny, 1, NULL, 0);   /* fragments of 16 bytes */
    send_words(OP_CREDIT, two, 1, bytes, 8); /* bytes on a control message */
    uint32_t w[4] = {op_word(OP_CREDIT) + (1u << 24), GID, 0, 1};
    CHECK_OK(flit_am_short(a.ep, flit_rank(0), a.h, w, 4, 0)); /* version 3 */
    return 12;
}

static void wait_for(_Atomic int *flag)
{
    MP_WAIT(a.ep, *flag);
}

static void impostor(flit_ep_t *ep, unsigned *sent)
{
    a.ep = ep;
    /* What flit_groups_create does: one index, reserved collectively. */
    CHECK_OK(flit_ep_reserve_handlers(ep, 1, &a.h));
    CHECK_OK(flit_am_register(ep, a.h, on_raw, NULL));
    CHECK_OK(flit_barrier(ep));
    wait_for(&a.join);
    uint32_t frag[1] = {FRAG_MIN};
    send_words(OP_READY, frag, 1, NULL, 0);
    *sent = attack();
    send_data(0, 1, 5, "hello", 5); /* message 0, from rank 1 */
    wait_for(&a.leave);
    uint32_t had[2] = {1, 0};
    send_words(OP_DONE, had, 2, NULL, 0);
    wait_for(&a.fin);
    send_words(OP_CLOSED, NULL, 0, NULL, 0);
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx;
    if (flit_job_size() != 2)
        FAIL("run with 2 ranks");
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    unsigned refusals = 12; /* attack()'s, the same on both ranks */
    if (me == 0) {
        member(ep, refusals);
    } else {
        unsigned sent;
        impostor(ep, &sent);
        CHECK(sent == refusals);
    }
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    printf("group hostile: rank %u OK\n", me);
    return 0;
}
