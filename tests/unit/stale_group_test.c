/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale group handles (<flit/group.h>) in a job of one rank, each used
 * again after it ended and after a new one of its type took its memory: a
 * set of groups destroyed twice, a group used after its set went (its
 * block freed and made again), and a delivery's message handle kept into
 * the next delivery (which reuses the same place). Each answers its
 * documented status (FLIT_ERR_INVALID_ARG; FLIT_ERR_BAD_TOKEN for a
 * message) and leaves the new one as it was; under ASan nothing reads
 * freed memory. argv[1], when given, names the one case to run.
 */
#include <flit/group.h>

#include "unit.h"

static flit_ep_t *ep;

struct seen {
    uint64_t delivered;
    flit_group_msg_t *kept; /* the previous delivery's handle */
    uint64_t last;          /* the payload of the last one */
    flit_group_t *g;        /* the handle the delivery named */
};

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    struct seen *s = user;
    CHECK(total == sizeof s->last);
    if (s->kept) { /* the last delivery's handle: dead, not this one */
        uint8_t b;
        CHECK_ST(flit_group_recv(s->kept, &b, 1), FLIT_ERR_BAD_TOKEN);
        CHECK_ST(flit_group_skip(s->kept, 1), FLIT_ERR_BAD_TOKEN);
        CHECK(flit_group_remaining(s->kept) == 0);
        CHECK(flit_group_msg_seq(s->kept) == UINT64_MAX);
        CHECK(flit_group_remaining(m) == total); /* untouched */
    }
    CHECK_OK(flit_group_recv(m, &s->last, sizeof s->last));
    s->kept = m;
    s->g = g;
    s->delivered++;
}

static flit_group_t *make_group(flit_groups_t *gs, uint32_t id, struct seen *s)
{
    flit_rank_t me = flit_rank(0);
    flit_group_t *g;
    CHECK_OK(flit_group_create(gs, id, &me, 1, NULL, on_deliver, s, &g));
    return g;
}

/* g works: a message sent is delivered, naming g. */
static void multicast(flit_group_t *g, struct seen *s, uint64_t v)
{
    uint64_t before = s->delivered;
    CHECK_OK(flit_group_send(g, &v, sizeof v));
    for (int i = 0; i < 100000 && s->delivered == before; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(s->delivered == before + 1 && s->last == v && s->g == g);
}

static void stale_set(void)
{
    flit_groups_t *old, *fresh;
    CHECK_OK(flit_groups_create(ep, &old));
    CHECK_OK(flit_groups_destroy(old));
    CHECK_OK(flit_groups_create(ep, &fresh)); /* most likely old's block */
    CHECK_ST(flit_groups_destroy(old), FLIT_ERR_INVALID_ARG);
    struct seen s = {0};
    flit_rank_t me = flit_rank(0);
    flit_group_t *g = NULL;
    CHECK_ST(flit_group_create(old, 1, &me, 1, NULL, on_deliver, &s, &g),
             FLIT_ERR_INVALID_ARG);
    CHECK(g == NULL);
    g = make_group(fresh, 1, &s); /* the new set works */
    multicast(g, &s, 11);
    CHECK_OK(flit_group_destroy(g));
    CHECK_OK(flit_groups_destroy(fresh));
}

static void stale_group(void)
{
    struct seen s = {0};
    flit_groups_t *gs;
    CHECK_OK(flit_groups_create(ep, &gs));
    flit_group_t *old = make_group(gs, 1, &s);
    CHECK_OK(flit_group_destroy(old));
    CHECK_ST(flit_group_destroy(old), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_groups_destroy(gs)); /* the group's block goes too */
    CHECK_OK(flit_groups_create(ep, &gs));
    flit_group_t *fresh = make_group(gs, 1, &s); /* most likely old's block */
    uint64_t v = 3;
    CHECK_ST(flit_group_send(old, &v, sizeof v), FLIT_ERR_INVALID_ARG);
    flit_group_stats_t st = {.struct_size = sizeof st};
    CHECK_ST(flit_group_stats(old, &st), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_group_destroy(old), FLIT_ERR_INVALID_ARG);
    multicast(fresh, &s, 12); /* untouched */
    CHECK_OK(flit_group_destroy(fresh));
    CHECK_OK(flit_groups_destroy(gs));
}

static void stale_message(void)
{
    struct seen s = {0};
    flit_groups_t *gs;
    CHECK_OK(flit_groups_create(ep, &gs));
    flit_group_t *g = make_group(gs, 1, &s);
    for (uint64_t v = 1; v <= 3; v++)
        multicast(g, &s, v); /* each checks the last one's handle */
    CHECK_OK(flit_group_destroy(g));
    CHECK_OK(flit_groups_destroy(gs));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {{"set", stale_set}, {"group", stale_group}, {"message", stale_message}};
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (argc < 2 || strcmp(argv[1], cases[i].name) == 0)
            cases[i].run();
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
