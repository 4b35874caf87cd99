/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tagged and RPC layers in their seat (<flit/layer.h>), on a job of two
 * or more ranks: an endpoint created with "tagged,rpc" among its layers has
 * the endpoint's context and RPC object (flit_tagged_open, flit_rpc_open;
 * the deprecated destroy calls refuse them, the endpoint destroys them);
 * an endpoint without them has neither, nor their counters; tagged.* and
 * rpc.* move with the messages (rpc.* the same as flit_rpc_stats); the
 * dump shows both sections; FLIT_RPC_PROCS sets the object's procedures,
 * and a bad value of it fails flit_init (--bad-procs).
 */
#include <flit/rpc.h>
#include <flit/tagged.h>
#include <stdlib.h>

#include "mp.h"

#define TAG 5u

static uint64_t counter(flit_ep_t *ep, const char *name)
{
    flit_counter_t c = {.value = UINT64_MAX};
    CHECK_OK(flit_ep_counter(ep, name, &c));
    CHECK(strcmp(c.name, name) == 0);
    return c.value;
}

static void want_in(const char *out, const char *want)
{
    if (!strstr(out, want))
        FAIL("the dump lacks '%s':\n%s", want, out);
}

/* Without the layers: no context, no object, no counters. */
static void check_plain(flit_ep_t *plain)
{
    flit_tagged_t *t = NULL;
    flit_rpc_t *r = NULL;
    flit_counter_t v = {.value = 7};
    CHECK_ST(flit_tagged_open(plain, &t), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_open(plain, &r), FLIT_ERR_INVALID_ARG);
    CHECK(t == NULL && r == NULL);
    CHECK_ST(flit_ep_counter(plain, "tagged.arrived", &v), FLIT_ERR_NOT_FOUND);
    CHECK_ST(flit_ep_counter(plain, "rpc.calls", &v), FLIT_ERR_NOT_FOUND);
    CHECK(v.value == 7);
    CHECK_ST(flit_tagged_open(NULL, &t), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_open(NULL, &r), FLIT_ERR_INVALID_ARG);
}

/* Rank 0 sends each other rank two messages: the first is probed before
   its receive (unexpected), the second finds its receive posted. */
static void check_tagged(flit_ep_t *ep)
{
    flit_tagged_t *t, *again;
    CHECK_OK(flit_tagged_open(ep, &t));
    CHECK_OK(flit_tagged_open(ep, &again));
    CHECK(t == again);
    CHECK_ST(flit_tagged_open(ep, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_destroy(t), FLIT_ERR_INVALID_ARG); /* the endpoint's */
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    uint64_t buf = 0;
    flit_request_t *req = NULL;
    if (me == 0) {
        for (uint32_t d = 1; d < n; d++)
            CHECK_OK(flit_tagged_send(t, flit_rank(d), TAG, &d, sizeof d));
    } else {
        CHECK_OK(flit_tagged_probe(t, flit_rank(0), TAG, -1, NULL));
        CHECK_OK(flit_tagged_recv(t, flit_rank(0), TAG, &buf, sizeof buf, NULL));
        CHECK(buf == me);
        CHECK_OK(flit_tagged_irecv(t, flit_rank(0), TAG + 1, &buf, sizeof buf, &req));
    }
    CHECK_OK(flit_barrier(ep)); /* every second receive is posted */
    if (me == 0) {
        for (uint32_t d = 1; d < n; d++) {
            uint64_t v = 100u + d;
            CHECK_OK(flit_tagged_send(t, flit_rank(d), TAG + 1, &v, sizeof v));
        }
    } else {
        CHECK_OK(flit_tagged_wait(&req, -1, NULL));
        CHECK(buf == 100u + me);
    }
    uint64_t got = me ? 2 : 0, early = me ? 1 : 0;
    CHECK(counter(ep, "tagged.arrived") == got);
    CHECK(counter(ep, "tagged.unexpected") == early);
    CHECK(counter(ep, "tagged.malformed") == 0 && counter(ep, "tagged.lost") == 0);
}

static void echo(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint64_t v = 0;
    if (len == sizeof v && flit_rpc_recv(req, &v, sizeof v) == FLIT_OK)
        v += 1;
    struct iovec rep = {&v, sizeof v};
    (void)flit_rpc_reply(req, &rep, 1);
}

/* Rank 0 calls every other rank once; FLIT_RPC_PROCS bounds the numbers. */
static void check_rpc(flit_ep_t *ep)
{
    flit_rpc_t *r, *again;
    CHECK_OK(flit_rpc_open(ep, &r));
    CHECK_OK(flit_rpc_open(ep, &again));
    CHECK(r == again);
    CHECK_ST(flit_rpc_open(ep, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_destroy(r), FLIT_ERR_INVALID_ARG); /* the endpoint's */
    int64_t procs = 0;
    CHECK_OK(flit_layer_setting(&flit_rpc_layer, "FLIT_RPC_PROCS", &procs));
    const char *given = getenv("FLIT_RPC_PROCS");
    CHECK(procs == (given ? atoll(given) : 64));
    CHECK_ST(flit_rpc_register(r, (unsigned)procs, echo, NULL), FLIT_ERR_BAD_HANDLER);
    CHECK_OK(flit_rpc_register(r, (unsigned)procs - 1, echo, NULL));
    CHECK_OK(flit_barrier(ep)); /* every procedure is in place */
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    for (uint32_t d = 1; me == 0 && d < n; d++) {
        uint64_t q = d, a = 0;
        struct iovec qv = {&q, sizeof q}, av = {&a, sizeof a};
        CHECK_OK(flit_rpc_call(r, flit_rank(d), (unsigned)procs - 1, &qv, 1, &av, 1, NULL,
                               NULL));
        CHECK(a == d + 1);
    }
    CHECK_OK(flit_barrier(ep)); /* every procedure has run */
    flit_rpc_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_rpc_stats(r, &s));
    CHECK(s.calls == (me ? 0 : n - 1) && s.served == (me ? 1 : 0));
    CHECK(counter(ep, "rpc.calls") == s.calls && counter(ep, "rpc.served") == s.served);
    CHECK(counter(ep, "rpc.refused") == 0 && counter(ep, "rpc.failed_replies") == 0);
}

/* flit_ep_counters lists each layer's counters too, with their docs. */
static void check_listed(flit_ep_t *ep)
{
    flit_counter_t all[256];
    size_t n = 0, seen = 0;
    CHECK_OK(flit_ep_counters(ep, all, 256, &n));
    CHECK(n <= 256);
    for (size_t i = 0; i < n; i++) {
        bool ours = strncmp(all[i].name, "tagged.", 7) == 0 ||
                    strncmp(all[i].name, "rpc.", 4) == 0;
        if (!ours)
            continue;
        seen++;
        CHECK(all[i].doc && all[i].doc[0] && all[i].kind == FLIT_COUNTER_COUNT);
        CHECK(all[i].value == counter(ep, all[i].name));
    }
    CHECK(seen == 4 + 8); /* tagged's four, rpc's eight */
}

/* The dump: each layer's counters and its own line. */
static void check_dump(flit_ep_t *ep)
{
    char out[16384], want[160];
    test_dump(ep, out, sizeof out);
    uint32_t me = flit_job_rank().idx;
    snprintf(want, sizeof want,
             "  tagged: arrived %u, unexpected %u, malformed 0, lost 0\n", me ? 2u : 0u,
             me ? 1u : 0u);
    want_in(out, want);
    want_in(out, "  tagged: context on stream handler ");
    snprintf(want, sizeof want, "  rpc: calls %u, served %u, timeouts 0",
             me ? 0u : flit_job_size() - 1, me ? 1u : 0u);
    want_in(out, want);
    want_in(out, "  rpc: object on handlers ");
}

/* FLIT_RPC_PROCS out of its range: flit_init refuses, naming it. */
static int bad_procs(void)
{
    CHECK_ST(flit_init(NULL), FLIT_ERR_CONFIG);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bad-procs") == 0)
        return bad_procs();
    CHECK_OK(flit_init(NULL));
    flit_ep_t *plain, *ep;
    CHECK_OK(flit_ep_create(NULL, &plain));
    check_plain(plain);
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "tagged,rpc"};
    CHECK_OK(flit_ep_create(&p, &ep));
    check_tagged(ep);
    check_rpc(ep);
    check_listed(ep);
    check_dump(ep);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_barrier(plain));
    CHECK_OK(flit_ep_destroy(plain));
    CHECK_OK(flit_finalize());
    return 0;
}
