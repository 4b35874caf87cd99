/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters by name (flit_ep_counters, flit_ep_counter), on 2 ranks, over
 * whichever transport FLIT_TRANSPORT picks:
 *
 *  - every counter that flit_ep_counters lists is found by its name, with
 *    the same doc and kind; names are "<plug-in>.<counter>" and unique;
 *    the core's, the active-message layer's, the transport's and those of
 *    a layer on the public API (group, opened with the endpoint: its
 *    gauge group.live) are there;
 *  - an unknown name answers FLIT_ERR_NOT_FOUND, NULL arguments
 *    FLIT_ERR_INVALID_ARG, a destroyed endpoint FLIT_ERR_CLOSED;
 *  - values move with traffic: rank 0 sends COUNT short requests to rank
 *    1, which replies to each: am.req_short_sent / rep_short_received on
 *    rank 0 grow by COUNT, and the transport's counters (udp.datagrams_sent
 *    over UDP, shm.peers_in_contact on shared memory: 0 until the first
 *    packet) from before the first packet on;
 *  - flit_stats_t's fields are the sums of the named counters.
 */
#include <flit/group.h>

#include "mp.h"

#define COUNT 100

static unsigned replies;

static void on_request(flit_token_t *t, void *buf, size_t n, const uint32_t *a,
                       unsigned na, void *user)
{
    (void)buf, (void)n, (void)a, (void)na, (void)user;
    CHECK_OK(flit_am_reply_short(t, flit_handler(2), NULL, 0));
}

static void on_reply(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                     void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    replies++;
}

static uint64_t value(flit_ep_t *ep, const char *name)
{
    flit_counter_t c;
    flit_status st = flit_ep_counter(ep, name, &c);
    if (st != FLIT_OK)
        FAIL("flit_ep_counter(%s): %s", name, flit_status_name(st));
    return c.value;
}

/* Every counter listed is found by name, as listed; names are unique. */
static size_t check_all_by_name(flit_ep_t *ep, flit_counter_t **out)
{
    size_t n = 0, again = 0;
    CHECK_OK(flit_ep_counters(ep, NULL, 0, &n));
    CHECK(n > 0);
    flit_counter_t *all = calloc(n, sizeof *all);
    CHECK(all != NULL);
    CHECK_OK(flit_ep_counters(ep, all, n, &again));
    CHECK(again == n);
    for (size_t i = 0; i < n; i++) {
        flit_counter_t c;
        const char *dot = strchr(all[i].name, '.');
        if (!dot || dot == all[i].name || !dot[1] || !all[i].doc || !all[i].doc[0])
            FAIL("counter %zu: name \"%s\", no plug-in, name or doc", i, all[i].name);
        CHECK_OK(flit_ep_counter(ep, all[i].name, &c));
        CHECK(strcmp(c.name, all[i].name) == 0 && c.doc == all[i].doc);
        CHECK(c.kind == all[i].kind);
        for (size_t j = 0; j < i; j++)
            if (strcmp(all[j].name, all[i].name) == 0)
                FAIL("counter %s listed twice", all[i].name);
    }
    *out = all;
    return n;
}

static void check_bad_input(flit_ep_t *ep)
{
    flit_counter_t c;
    size_t n;
    CHECK_ST(flit_ep_counter(ep, "core.no_such_counter", &c), FLIT_ERR_NOT_FOUND);
    CHECK_ST(flit_ep_counter(ep, "no_such_plugin.polls", &c), FLIT_ERR_NOT_FOUND);
    CHECK_ST(flit_ep_counter(ep, "polls", &c), FLIT_ERR_NOT_FOUND);
    CHECK_ST(flit_ep_counter(ep, "core.", &c), FLIT_ERR_NOT_FOUND);
    CHECK_ST(flit_ep_counter(ep, "", &c), FLIT_ERR_NOT_FOUND);
    CHECK_ST(flit_ep_counter(ep, NULL, &c), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_counter(ep, "core.polls", NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_counter(NULL, "core.polls", &c), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_counters(ep, NULL, 0, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_counters(ep, NULL, 1, &n), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_counters(NULL, NULL, 0, &n), FLIT_ERR_INVALID_ARG);
}

/* The fixed fields are sums of the named counters. */
static void check_stats_agree(flit_ep_t *ep, const char *tp)
{
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    flit_counter_t *all;
    size_t n = check_all_by_name(ep, &all);
    uint64_t contact = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(strchr(all[i].name, '.'), ".peers_in_contact") == 0)
            contact += all[i].value;
    free(all);
    CHECK(s.peers_in_contact == contact);
    CHECK(s.sent_msgs[FLIT_STAT_REQ_SHORT] == value(ep, "am.req_short_sent"));
    CHECK(s.recv_msgs[FLIT_STAT_REP_SHORT] == value(ep, "am.rep_short_received"));
    if (strcmp(tp, "udp") == 0)
        CHECK(s.datagrams_sent == value(ep, "udp.datagrams_sent"));
}

/* Rank 0's traffic, and what it moved since tp_before (of the transport's
   counter name, read before the first packet). */
static void traffic(flit_ep_t *ep, const char *name, uint64_t tp_before)
{
    uint64_t sent = value(ep, "am.req_short_sent");
    CHECK(sent == 0);
    for (unsigned i = 0; i < COUNT; i++)
        CHECK_OK(flit_am_short(ep, flit_rank(1), flit_handler(1), NULL, 0, 0));
    MP_WAIT(ep, replies == COUNT);
    CHECK(value(ep, "am.req_short_sent") == sent + COUNT);
    CHECK(value(ep, "am.rep_short_received") >= COUNT);
    CHECK(value(ep, "core.polls") > 0);
    if (value(ep, name) <= tp_before)
        FAIL("%s stayed at %llu over %d requests", name, (unsigned long long)tp_before,
             COUNT);
}

static void on_group_msg(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g, (void)m, (void)total, (void)user;
}

/* A layer on the public API: its counters are listed and found too. */
static void check_group(uint32_t me)
{
    flit_ep_t *ep;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "group"};
    CHECK_OK(flit_ep_create(&p, &ep));
    flit_counter_t *all, live;
    free((check_all_by_name(ep, &all), all));
    CHECK_OK(flit_ep_counter(ep, "group.live", &live));
    CHECK(live.kind == FLIT_COUNTER_GAUGE && live.value == 0);
    CHECK(value(ep, "group.refused") == 0);
    flit_group_t *g;
    const flit_rank_t members[] = {flit_rank(0), flit_rank(1)};
    CHECK_OK(flit_group_open(ep, 7, members, 2, NULL, on_group_msg, NULL, &g));
    CHECK(value(ep, "group.live") == 1);
    CHECK_OK(flit_group_destroy(g));
    CHECK(value(ep, "group.live") == 0);
    CHECK_OK(flit_ep_destroy(ep));
    printf("counters: rank %u: group's counters found\n", me);
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx;
    if (flit_job_size() != 2) {
        fprintf(stderr, "counters runs with 2 ranks\n");
        return TEST_SKIP;
    }
    const char *env = getenv("FLIT_TRANSPORT");
    const char *tp = env && strcmp(env, "udp") == 0 ? "udp" : "shm";
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(1), on_request, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(2), on_reply, NULL));
    flit_counter_t *all;
    free((check_all_by_name(ep, &all), all));
    check_bad_input(ep);
    flit_counter_t c;
    CHECK_ST(flit_ep_counter(ep, "group.live", &c), FLIT_ERR_NOT_FOUND); /* not opened */
    char name[FLIT_COUNTER_NAME_MAX];
    snprintf(name, sizeof name, "%s.%s", tp,
             strcmp(tp, "udp") == 0 ? "datagrams_sent" : "peers_in_contact");
    uint64_t tp_before = value(ep, name);
    CHECK_OK(flit_barrier(ep)); /* both have their handlers */
    if (me == 0)
        traffic(ep, name, tp_before);
    CHECK_OK(flit_barrier(ep));
    check_stats_agree(ep, tp);
    check_group(me);
    CHECK_OK(flit_ep_destroy(ep));
    size_t n;
    CHECK_ST(flit_ep_counter(ep, "core.polls", &c), FLIT_ERR_CLOSED);
    CHECK_ST(flit_ep_counters(ep, NULL, 0, &n), FLIT_ERR_CLOSED);
    CHECK_OK(flit_finalize());
    printf("counters: rank %u OK over %s\n", me, tp);
    return 0;
}
