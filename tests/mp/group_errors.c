/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every bad argument of <flit/group.h> gets its exact status, on a job of
 * two or more ranks: NULLs, ranks outside the job, this rank not a member,
 * the sequencer not a member, repeated members, ids in use, windows out of
 * range, messages above the largest, calls from the delivery handler, a
 * message handle kept past its handler, and every call on a destroyed
 * group. Then a group still works after all of it.
 */
#include <flit/group.h>

#include "mp.h"

struct seen {
    flit_group_t *g;
    flit_groups_t *gs;
    flit_group_msg_t *kept; /* the handle of the last delivery */
    uint64_t delivered;
    size_t last_total;
};

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    struct seen *s = user;
    uint8_t b[16];
    CHECK_ST(flit_group_recv(NULL, b, 1), FLIT_ERR_INVALID_ARG);
    if (total) {
        CHECK_ST(flit_group_recv(m, NULL, 1), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_group_recvv(m, NULL, 1), FLIT_ERR_INVALID_ARG);
        struct iovec bad = {NULL, 1};
        CHECK_ST(flit_group_recvv(m, &bad, 1), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_group_recvv(m, &bad, -1), FLIT_ERR_INVALID_ARG);
    }
    CHECK_ST(flit_group_recv(m, b, total + 1), FLIT_ERR_TOO_LARGE);
    CHECK_ST(flit_group_skip(m, total + 1), FLIT_ERR_TOO_LARGE);
    CHECK(flit_group_remaining(m) == total);
    /* No sending, creating or destroying from here. */
    CHECK_ST(flit_group_send(g, b, 1), FLIT_ERR_IN_HANDLER);
    flit_group_t *other;
    CHECK_ST(flit_group_create(s->gs, 77, NULL, 0, NULL, on_deliver, s, &other),
             FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_group_destroy(g), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_groups_destroy(s->gs), FLIT_ERR_IN_HANDLER);
    flit_group_stats_t st = {.struct_size = sizeof st};
    CHECK_OK(flit_group_stats(g, &st)); /* allowed */
    if (total >= 2) {
        CHECK_OK(flit_group_skip(m, 1));
        CHECK_OK(flit_group_recv(m, b, 1));
    }
    s->kept = m;
    s->last_total = total;
    s->delivered++;
}

/* An active-message handler of the program sends to the group: with credits
   at hand it is accepted, and goes out after the handler's pass. */
static void on_poke(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na;
    struct seen *s = user;
    CHECK_OK(flit_group_send(s->g, "hi", 2));
}

static bool delivered(struct seen *s, uint64_t n)
{
    return s->delivered >= n;
}

static void bad_create(flit_groups_t *gs, struct seen *s, uint32_t n, uint32_t me)
{
    flit_group_t *g = NULL;
    flit_rank_t two[2] = {flit_rank(0), flit_rank(1)};
    flit_rank_t dup[2] = {flit_rank(me), flit_rank(me)};
    flit_rank_t outside[2] = {flit_rank(me), flit_rank(n)};
    flit_rank_t other[1] = {flit_rank(me ? 0 : 1)};
    flit_rank_t self[1] = {flit_rank(me)};
    CHECK_ST(flit_group_create(NULL, 1, NULL, 0, NULL, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_create(gs, 1, NULL, 0, NULL, NULL, s, &g), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_create(gs, 1, NULL, 0, NULL, on_deliver, s, NULL),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_create(gs, 1, NULL, 2, NULL, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_create(gs, 1, two, 0, NULL, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_create(gs, 1, dup, 2, NULL, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_create(gs, 1, outside, 2, NULL, on_deliver, s, &g),
             FLIT_ERR_RANK);
    /* This rank not a member. */
    CHECK_ST(flit_group_create(gs, 1, other, 1, NULL, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    flit_group_params_t p = {.field_mask = 1u << 30};
    CHECK_ST(flit_group_create(gs, 1, self, 1, &p, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    p = (flit_group_params_t){.field_mask = FLIT_GROUP_PARAM_SEQUENCER,
                              .sequencer = flit_rank(n)};
    CHECK_ST(flit_group_create(gs, 1, self, 1, &p, on_deliver, s, &g), FLIT_ERR_RANK);
    p.sequencer = other[0]; /* in the job, not in the group */
    CHECK_ST(flit_group_create(gs, 1, self, 1, &p, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    p = (flit_group_params_t){.field_mask = FLIT_GROUP_PARAM_WINDOW,
                              .window = FLIT_GROUP_WINDOW_MIN - 1};
    CHECK_ST(flit_group_create(gs, 1, self, 1, &p, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    p.window = FLIT_GROUP_WINDOW_MAX + 1;
    CHECK_ST(flit_group_create(gs, 1, self, 1, &p, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    p = (flit_group_params_t){.field_mask = FLIT_GROUP_PARAM_SMALL_MAX,
                              .small_max = 1u << 30};
    CHECK_ST(flit_group_create(gs, 1, self, 1, &p, on_deliver, s, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK(g == NULL); /* outputs only on success */
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    uint32_t n = flit_job_size(), me = flit_job_rank().idx;
    if (n < 2)
        FAIL("needs two ranks or more");
    flit_groups_t *gs = NULL;
    CHECK_ST(flit_groups_create(NULL, &gs), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_groups_create(ep, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_groups_create(ep, &gs));
    struct seen s = {.gs = gs};
    bad_create(gs, &s, n, me);

    /* A whole-job group with a small window: the largest message is
       window / 2 fragments. */
    flit_group_params_t p = {.field_mask = FLIT_GROUP_PARAM_WINDOW, .window = 4};
    CHECK_OK(flit_group_create(gs, 5, NULL, 0, &p, on_deliver, &s, &s.g));
    flit_group_t *dup = NULL;
    CHECK_ST(flit_group_create(gs, 5, NULL, 0, NULL, on_deliver, &s, &dup),
             FLIT_ERR_INVALID_ARG); /* id in use */
    flit_group_stats_t st = {.struct_size = sizeof st};
    CHECK_ST(flit_group_stats(NULL, &st), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_stats(s.g, NULL), FLIT_ERR_INVALID_ARG);
    st.struct_size = 8;
    CHECK_ST(flit_group_stats(s.g, &st), FLIT_ERR_INVALID_ARG);
    st.struct_size = sizeof st;
    CHECK_OK(flit_group_stats(s.g, &st));
    CHECK(st.size == n && st.sequencer.idx == 0 && st.frag >= 1024);

    uint8_t *big = calloc(1, 2 * st.frag + 1);
    CHECK(big);
    struct iovec iov[2] = {{big, 1}, {NULL, 1}};
    CHECK_ST(flit_group_send(NULL, big, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_send(s.g, NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_sendv(s.g, NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_sendv(s.g, iov, -1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_sendv(s.g, iov, 2), FLIT_ERR_INVALID_ARG); /* NULL base */
    CHECK_ST(flit_group_send(s.g, big, 2 * st.frag + 1), FLIT_ERR_TOO_LARGE);
    /* What does go: empty, and the largest. */
    CHECK_OK(flit_group_send(s.g, NULL, 0));
    CHECK_OK(flit_group_send(s.g, big, 2 * st.frag));
    CHECK_OK(flit_group_sendv(s.g, iov, 1));
    MP_WAIT(ep, delivered(&s, 3 * n));

    /* The handle of a delivery that returned is dead. */
    uint8_t b[4];
    CHECK_ST(flit_group_recv(s.kept, b, 1), FLIT_ERR_BAD_TOKEN);
    CHECK_ST(flit_group_skip(s.kept, 0), FLIT_ERR_BAD_TOKEN);
    CHECK(flit_group_remaining(s.kept) == 0);
    CHECK(flit_group_msg_sender(s.kept).idx == UINT32_MAX);
    CHECK(flit_group_msg_seq(s.kept) == UINT64_MAX);
    CHECK(flit_group_remaining(NULL) == 0);

    CHECK_ST(flit_groups_destroy(gs), FLIT_ERR_AGAIN); /* a group lives */
    CHECK_ST(flit_group_destroy(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_group_destroy(s.g));
    /* Use after destroy. */
    CHECK_ST(flit_group_destroy(s.g), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_send(s.g, big, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_stats(s.g, &st), FLIT_ERR_INVALID_ARG);

    /* The id is free again, and a group of this rank alone works. */
    flit_rank_t self[1] = {flit_rank(me)};
    s.delivered = 0;
    CHECK_OK(flit_group_create(gs, 5, self, 1, NULL, on_deliver, &s, &s.g));
    CHECK_OK(flit_group_send(s.g, "x", 1));
    MP_WAIT(ep, delivered(&s, 1));
    CHECK(s.last_total == 1);
    CHECK_OK(flit_am_register(ep, flit_handler(3), on_poke, &s));
    CHECK_OK(flit_am_short(ep, flit_rank(me), flit_handler(3), NULL, 0, 0));
    MP_WAIT(ep, delivered(&s, 2));
    CHECK(s.last_total == 2);
    CHECK_OK(flit_group_destroy(s.g));

    CHECK_ST(flit_groups_destroy(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_groups_destroy(gs));
    free(big);
    printf("group_errors: rank %u OK\n", me);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
