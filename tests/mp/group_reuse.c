/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One group id, created and destroyed --rounds times in a row, each time
 * with another sequencer (round r: rank r mod n) and, every third round,
 * without the rank after it (which goes straight on to the next round's
 * create): a member that is done with a round creates the next group while
 * others are still destroying the last one, so the next group's joins meet
 * the old group, and the old group's last control messages may meet the
 * next one. Every member sends 1 to 3 messages per round (a few larger than
 * one fragment, numbered before the sender multicasts them), each naming
 * its round, its sender and its place in the sender's order; a delivery of
 * another round, out of a sender's order, or missing when the group is
 * destroyed fails the test, and so does a create or destroy that hangs
 * (flitrun's timeout).
 */
#include <flit/group.h>

#include "mp.h"

#define GROUP_ID 7

struct round {
    uint32_t r;          /* the round these deliveries belong to */
    uint32_t next[64];   /* per sender: its next message in this round */
    uint32_t expect[64]; /* per sender: how many it sends this round */
    uint64_t delivered;
};

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g;
    struct round *rd = user;
    uint32_t h[3];
    CHECK(total >= sizeof h);
    CHECK_OK(flit_group_recv(m, h, sizeof h));
    uint32_t src = flit_group_msg_sender(m).idx;
    if (h[0] != rd->r || h[1] != src)
        FAIL("round %u: a message of round %u from rank %u (sent by %u)", rd->r, h[0],
             h[1], src);
    CHECK(src < 64);
    if (h[2] != rd->next[src])
        FAIL("round %u: rank %u's message %u came where %u was due", rd->r, src, h[2],
             rd->next[src]);
    rd->next[src]++;
    CHECK_OK(flit_group_skip(m, total - sizeof h));
    rd->delivered++;
}

/* How many messages rank src sends in round r, and how long the k-th is. */
static uint32_t count_of(uint64_t seed, uint32_t r, uint32_t src)
{
    return 1 + (uint32_t)(mp_mix(seed, r, src, 1) % 3);
}

static size_t len_of(uint64_t seed, uint32_t r, uint32_t src, uint32_t k)
{
    uint64_t x = mp_mix(seed, r, src, 2 + k);
    return 12 + (size_t)(x % 5 == 0 ? x % 20000 : x % 200);
}

int main(int argc, char **argv)
{
    uint64_t seed = mp_arg_u64(argc, argv, "--seed", 1);
    uint32_t rounds = (uint32_t)test_scaled(mp_arg_u64(argc, argv, "--rounds", 120));
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    CHECK(n >= 2 && n <= 64);
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    flit_groups_t *gs;
    CHECK_OK(flit_groups_create(ep, &gs));
    CHECK_OK(flit_barrier(ep));
    flit_rank_t members[64];
    uint8_t buf[20012];
    for (uint32_t r = 0; r < rounds; r++) {
        uint32_t seqr = r % n, out = r % 3 == 2 ? (seqr + 1) % n : n;
        unsigned k = 0;
        for (uint32_t i = 0; i < n; i++)
            if (i != out)
                members[k++] = flit_rank(i);
        if (me == out)
            continue; /* straight on to the next round's create */
        struct round rd = {.r = r};
        for (uint32_t i = 0; i < n; i++)
            rd.expect[i] = i == out ? 0 : count_of(seed, r, i);
        flit_group_params_t p = {.field_mask = FLIT_GROUP_PARAM_SEQUENCER,
                                 .sequencer = flit_rank(seqr)};
        flit_group_t *g;
        CHECK_OK(flit_group_create(gs, GROUP_ID, members, k, &p, on_deliver, &rd, &g));
        for (uint32_t j = 0; j < rd.expect[me]; j++) {
            uint32_t h[3] = {r, me, j};
            memcpy(buf, h, sizeof h);
            CHECK_OK(flit_group_send(g, buf, len_of(seed, r, me, j)));
        }
        CHECK_OK(flit_group_destroy(g));
        for (uint32_t i = 0; i < n; i++)
            if (rd.next[i] != rd.expect[i])
                FAIL("round %u: %u of rank %u's %u messages delivered by destroy", r,
                     rd.next[i], i, rd.expect[i]);
    }
    CHECK_OK(flit_groups_destroy(gs));
    CHECK_OK(flit_barrier(ep));
    printf("group_reuse: rank %u OK\n", me);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
