/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A layer defined only in this folder (toy_layer.c), registered through
 * the public descriptor before flit_init, on a job of two or more ranks:
 * every refusal of flit_layer_register with its status (a bad value of its
 * setting too), its state opened with every endpoint and closed with it,
 * its setting (FLIT_TOY_BURST, given by the test), its counters read by
 * name and printed in the dump beside its own section, and the built-in
 * group and object layers opened on request on further endpoints, with
 * their counters.
 */
#include <flit/group.h>
#include <flit/object.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "mp.h"
#include "toy_layer.h"

static flit_status open_nothing(flit_ep_t *ep, void *state)
{
    (void)ep, (void)state;
    return FLIT_OK;
}

/* Each descriptor differs from a good one in one field. */
static void check_refusals(void)
{
    static const flit_layer_counter_t past = {"late", 8, "past the state"};
    static const flit_layer_setting_t wide = {"FLIT_TOY_WIDE", 9, 0, 5, "default out"};
    static const flit_layer_setting_t bare = {"TOY_BARE", 0, 0, 5, "not FLIT_*"};
    const flit_layer_t good = {.version = FLIT_LAYER_VERSION,
                               .name = "other",
                               .state_size = 8,
                               .open = open_nothing};
    flit_layer_t l[7];
    for (int i = 0; i < 7; i++)
        l[i] = good;
    l[0].version = 99;
    l[1].name = "Bad-Name";
    l[2].open = NULL;
    l[3].counters = &past, l[3].ncounters = 1;
    l[4].settings = &wide, l[4].nsettings = 1;
    l[5].settings = &bare, l[5].nsettings = 1;
    l[6].flags = 1u << 7;
    CHECK_ST(flit_layer_register(NULL), FLIT_ERR_INVALID_ARG);
    for (int i = 0; i < 7; i++)
        CHECK_ST(flit_layer_register(&l[i]), FLIT_ERR_INVALID_ARG);
}

/* A value that is not an integer in range is refused, naming it. */
static void check_bad_setting(void)
{
    const char *given = getenv("FLIT_TOY_BURST");
    CHECK(given);
    char keep[32];
    snprintf(keep, sizeof keep, "%s", given);
    setenv("FLIT_TOY_BURST", "lots", 1);
    CHECK_ST(flit_layer_register(&toy_layer), FLIT_ERR_CONFIG);
    setenv("FLIT_TOY_BURST", "1001", 1);
    CHECK_ST(flit_layer_register(&toy_layer), FLIT_ERR_CONFIG);
    setenv("FLIT_TOY_BURST", keep, 1);
}

static uint64_t counter(flit_ep_t *ep, const char *name)
{
    uint64_t v = UINT64_MAX;
    CHECK_OK(flit_layer_counter(ep, name, &v));
    return v;
}

/* The dump has the toy's counters and its own line. */
static void check_dump(flit_ep_t *ep, uint64_t each, int64_t burst)
{
    char out[16384];
    test_dump(ep, out, sizeof out);
    char want[128];
    snprintf(want, sizeof want, "  toy: sent %llu, seen %llu, down 0\n",
             (unsigned long long)each, (unsigned long long)each);
    if (!strstr(out, want))
        FAIL("the dump lacks '%s':\n%s", want, out);
    snprintf(want, sizeof want, "  toy: burst %lld on handler", (long long)burst);
    if (!strstr(out, want))
        FAIL("the dump lacks '%s':\n%s", want, out);
}

static void check_toy(flit_ep_t *ep)
{
    int64_t burst = 0;
    CHECK_OK(flit_layer_setting(&toy_layer, "FLIT_TOY_BURST", &burst));
    CHECK(burst == atoll(getenv("FLIT_TOY_BURST")));
    CHECK_ST(flit_layer_setting(&toy_layer, "FLIT_TOY_NONE", &burst),
             FLIT_ERR_INVALID_ARG);
    uint64_t each = (uint64_t)burst * (flit_job_size() - 1);
    CHECK_OK(toy_ping_all(ep));
    MP_WAIT(ep, toy_seen(ep) == each);
    CHECK(counter(ep, "toy.sent") == each && counter(ep, "toy.seen") == each);
    uint64_t v = 7;
    CHECK_ST(flit_layer_counter(ep, "toy.none", &v), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_layer_counter(ep, "group.refused", &v), FLIT_ERR_INVALID_ARG);
    CHECK(v == 7);
    check_dump(ep, each, burst);
    flit_log(FLIT_LOG_INFO, "toy_test: %llu pings each way", (unsigned long long)each);
}

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g, (void)m, (void)total;
    ++*(int *)user;
}

/* The group layer opens only where it is asked for. */
static void check_group_on_request(flit_ep_t *plain)
{
    flit_group_t *g;
    int got = 0;
    CHECK_ST(flit_group_open(plain, 1, NULL, 0, NULL, on_deliver, &got, &g),
             FLIT_ERR_INVALID_ARG);
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "toy"};
    flit_ep_t *ep;
    CHECK_ST(flit_ep_create(&p, &ep), FLIT_ERR_INVALID_ARG); /* opens everywhere */
    p.layers = "group,nope";
    CHECK_ST(flit_ep_create(&p, &ep), FLIT_ERR_INVALID_ARG);
    p.layers = "group";
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK(counter(ep, "group.live") == 0);
    CHECK_OK(flit_group_open(ep, 1, NULL, 0, NULL, on_deliver, &got, &g));
    CHECK(counter(ep, "group.live") == 1);
    CHECK_OK(flit_group_send(g, "x", 1));
    MP_WAIT(ep, got == (int)flit_job_size());
    CHECK(counter(ep, "group.refused") == 0 && toy_seen(ep) == 0);
    CHECK_OK(flit_group_destroy(g));
    CHECK(counter(ep, "group.live") == 0);
    CHECK_OK(flit_ep_destroy(ep));
}

static size_t op_read(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(uint64_t));
    return sizeof(uint64_t);
}

/* The object layer too: object.live follows the objects, and
   flit_object_find takes the endpoint. */
static void check_object_on_request(void)
{
    static const flit_object_op_t ops[] = {{FLIT_OBJECT_READ, 0, 8, op_read, NULL}};
    static const flit_object_type_t type = {.state_size = 8, .ops = ops, .nops = 1};
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "object,group"};
    flit_ep_t *ep;
    flit_object_t *obj, *found = NULL;
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK(counter(ep, "object.live") == 0 && counter(ep, "group.live") == 0);
    CHECK_OK(flit_object_open(ep, 9, &type, NULL, 0, FLIT_OBJECT_REPLICATED, flit_rank(0),
                              NULL, 0, &obj));
    CHECK(counter(ep, "object.live") == 1);
    CHECK_OK(flit_object_find(ep, 9, &found));
    CHECK(found == obj);
    CHECK_ST(flit_object_find(ep, 10, &found), FLIT_ERR_INVALID_ARG);
    uint64_t v = 1;
    CHECK_OK(flit_object_invoke(obj, 0, NULL, 0, &v, sizeof v, NULL));
    CHECK(v == 0);
    CHECK_OK(flit_object_destroy(obj));
    CHECK(counter(ep, "object.live") == 0);
    CHECK_OK(flit_ep_destroy(ep));
}

/* FLIT_TOY_FAIL_RANK: one rank's open fails, so every rank's endpoint
   creation does, with its status; the layers that opened are closed. */
static int one_fails(void)
{
    CHECK_OK(flit_layer_register(&toy_layer));
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep = NULL;
    CHECK_ST(flit_ep_create(NULL, &ep), FLIT_ERR_NO_MEMORY);
    CHECK(ep == NULL);
    bool failed_here =
        atoll(getenv("FLIT_TOY_FAIL_RANK")) == (long long)flit_job_rank().idx;
    CHECK(toy_closes() == (failed_here ? 0u : 1u));
    CHECK_OK(flit_finalize());
    return 0;
}

int main(void)
{
    if (getenv("FLIT_TOY_FAIL_RANK"))
        return one_fails();
    check_refusals();
    check_bad_setting();
    CHECK_OK(flit_layer_register(&toy_layer));
    CHECK_ST(flit_layer_register(&toy_layer), FLIT_ERR_INVALID_ARG); /* taken */
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_ST(flit_layer_register(&toy_layer), FLIT_ERR_AGAIN);
    check_toy(ep);
    check_group_on_request(ep);
    check_object_on_request();
    CHECK(toy_closes() == 2);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK(toy_closes() == 3);
    CHECK_OK(flit_finalize());
    return 0;
}
