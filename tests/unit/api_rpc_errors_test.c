/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RPC (<flit/rpc.h>) in a job of one rank, calling itself: every bad
 * argument of every call with its exact status (and no effect: outputs stay
 * as they were), what a procedure may not do (wait, call, reply twice, use
 * its request after returning), what a handler of another layer may not
 * do, destroy with a call outstanding, a deferred reply answered CLOSED by
 * destroy, and the calls of a destroyed object.
 */
#include <flit/rpc.h>
#include <stdbool.h>

#include "unit.h"

enum { P_ECHO, P_CHECKS, P_KEEP, P_DEFER, NPROCS };
enum { H_AM = 3 };

static flit_ep_t *ep;
static flit_rpc_t *rpc;
static flit_rpc_req_t *kept;    /* a request kept past its procedure */
static flit_rpc_reply_t *later; /* a deferred reply */

static void proc_echo(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint8_t buf[256];
    CHECK(len <= sizeof buf);
    CHECK_OK(flit_rpc_recv(req, buf, len));
    struct iovec v = {buf, len};
    CHECK_OK(flit_rpc_reply(req, &v, 1));
}

/* What a procedure may not do. */
static void proc_checks(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    CHECK(len == 8);
    uint8_t b[8];
    struct iovec bad[2] = {{NULL, 4}, {b, 4}};
    CHECK_ST(flit_rpc_recv(req, NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_recvv(req, NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_recvv(req, bad, -1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_recvv(req, bad, 2), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_recv(req, b, 9), FLIT_ERR_TOO_LARGE);
    CHECK(flit_rpc_remaining(req) == 8);
    CHECK_OK(flit_rpc_recv(req, b, 8));
    CHECK(flit_rpc_caller(req).idx == 0);
    /* No waiting in a handler, nothing sent. */
    flit_rpc_result_t res = {.status = FLIT_ERR_BOOT};
    CHECK_ST(flit_rpc_call(rpc, flit_rank(0), P_ECHO, NULL, 0, NULL, 0, NULL, &res),
             FLIT_ERR_IN_HANDLER);
    CHECK(res.status == FLIT_ERR_BOOT);
    flit_rpc_call_t *c = NULL;
    CHECK_ST(flit_rpc_icall(rpc, flit_rank(0), P_ECHO, NULL, 0, NULL, 0, NULL, &c),
             FLIT_ERR_IN_HANDLER);
    CHECK(c == NULL);
    CHECK_ST(flit_rpc_destroy(rpc), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_rpc_create(ep, NULL, &(flit_rpc_t *){NULL}), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_rpc_reply(req, bad, 2), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_reply(req, NULL, -1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_defer(req, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_rpc_reply(req, NULL, 0));
    CHECK_ST(flit_rpc_reply(req, NULL, 0), FLIT_ERR_ALREADY_REPLIED);
    flit_rpc_reply_t *d = NULL;
    CHECK_ST(flit_rpc_defer(req, &d), FLIT_ERR_ALREADY_REPLIED);
    CHECK(d == NULL);
    kept = req;
}

static void proc_keep(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    kept = req;
}

static void proc_defer(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK_OK(flit_rpc_defer(req, &later));
    CHECK_ST(flit_rpc_defer(req, &(flit_rpc_reply_t *){NULL}), FLIT_ERR_ALREADY_REPLIED);
}

/* An active-message handler: no RPC waits in it either. */
static void am_handler(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                       unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)n, (void)args, (void)nargs;
    flit_rpc_call_t **c = user;
    int done = 7;
    CHECK_OK(flit_rpc_test(c, &done, NULL)); /* only looks */
    CHECK(done == 0 || done == 1);
    CHECK_ST(flit_rpc_wait(c, 0, NULL), FLIT_ERR_IN_HANDLER);
}

static void bad_create(void)
{
    flit_rpc_t *r = (flit_rpc_t *)&r;
    CHECK_ST(flit_rpc_create(NULL, NULL, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_create(ep, NULL, NULL), FLIT_ERR_INVALID_ARG);
    flit_rpc_params_t p = {.field_mask = 1u << 7};
    CHECK_ST(flit_rpc_create(ep, &p, &r), FLIT_ERR_INVALID_ARG);
    p = (flit_rpc_params_t){.field_mask = FLIT_RPC_PARAM_PROCS, .procs = 0};
    CHECK_ST(flit_rpc_create(ep, &p, &r), FLIT_ERR_INVALID_ARG);
    p.procs = 65537;
    CHECK_ST(flit_rpc_create(ep, &p, &r), FLIT_ERR_INVALID_ARG);
    CHECK(r == (flit_rpc_t *)&r);
    CHECK_ST(flit_rpc_destroy(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_register(NULL, 0, proc_echo, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_register(rpc, NPROCS, proc_echo, NULL), FLIT_ERR_BAD_HANDLER);
    CHECK_ST(flit_rpc_register_flags(NULL, 0, proc_echo, NULL, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_register_flags(rpc, 0, proc_echo, NULL, 1u << 4),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_register_flags(rpc, NPROCS, proc_echo, NULL, FLIT_RPC_PROC_INLINE),
             FLIT_ERR_BAD_HANDLER);
    flit_rpc_stats_t s = {.struct_size = sizeof s - 1};
    CHECK_ST(flit_rpc_stats(rpc, &s), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_stats(rpc, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_stats(NULL, &s), FLIT_ERR_INVALID_ARG);
}

static void bad_calls(void)
{
    uint8_t b[4];
    struct iovec ok = {b, 4}, nul = {NULL, 4};
    flit_rpc_result_t res = {.status = FLIT_ERR_BOOT};
    flit_rpc_call_t *c = (flit_rpc_call_t *)&c;
    const struct {
        flit_rpc_t *rpc;
        uint32_t dest;
        unsigned proc;
        const struct iovec *req;
        int nreq;
        const struct iovec *rep;
        int nrep;
        flit_rpc_opts_t o;
        bool use_o;
        flit_status want;
    } cases[] = {
        {NULL, 0, P_ECHO, NULL, 0, NULL, 0, {0}, false, FLIT_ERR_INVALID_ARG},
        {rpc, 1, P_ECHO, NULL, 0, NULL, 0, {0}, false, FLIT_ERR_RANK},
        {rpc, UINT32_MAX, P_ECHO, NULL, 0, NULL, 0, {0}, false, FLIT_ERR_RANK},
        {rpc, 0, NPROCS, NULL, 0, NULL, 0, {0}, false, FLIT_ERR_BAD_HANDLER},
        {rpc, 0, P_ECHO, NULL, 1, NULL, 0, {0}, false, FLIT_ERR_INVALID_ARG},
        {rpc, 0, P_ECHO, &ok, -1, NULL, 0, {0}, false, FLIT_ERR_INVALID_ARG},
        {rpc, 0, P_ECHO, &nul, 1, NULL, 0, {0}, false, FLIT_ERR_INVALID_ARG},
        {rpc, 0, P_ECHO, NULL, 0, NULL, 1, {0}, false, FLIT_ERR_INVALID_ARG},
        {rpc, 0, P_ECHO, NULL, 0, &ok, -2, {0}, false, FLIT_ERR_INVALID_ARG},
        {rpc, 0, P_ECHO, NULL, 0, &nul, 1, {0}, false, FLIT_ERR_INVALID_ARG},
        {rpc,
         0,
         P_ECHO,
         NULL,
         0,
         NULL,
         0,
         {.field_mask = 1u << 9},
         true,
         FLIT_ERR_INVALID_ARG},
        {rpc,
         0,
         P_ECHO,
         NULL,
         0,
         NULL,
         0,
         {.field_mask = FLIT_RPC_OPT_FLAGS, .flags = 1u << 5},
         true,
         FLIT_ERR_INVALID_ARG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const flit_rpc_opts_t *o = cases[i].use_o ? &cases[i].o : NULL;
        flit_status st = flit_rpc_call(cases[i].rpc, flit_rank(cases[i].dest),
                                       cases[i].proc, cases[i].req, cases[i].nreq,
                                       cases[i].rep, cases[i].nrep, o, &res);
        if (st != cases[i].want)
            FAIL("call case %zu: %s, expected %s", i, flit_status_name(st),
                 flit_status_name(cases[i].want));
        st = flit_rpc_icall(cases[i].rpc, flit_rank(cases[i].dest), cases[i].proc,
                            cases[i].req, cases[i].nreq, cases[i].rep, cases[i].nrep, o,
                            &c);
        if (st != cases[i].want)
            FAIL("icall case %zu: %s, expected %s", i, flit_status_name(st),
                 flit_status_name(cases[i].want));
    }
    CHECK(res.status == FLIT_ERR_BOOT && c == (flit_rpc_call_t *)&c);
    CHECK_ST(flit_rpc_icall(rpc, flit_rank(0), P_ECHO, NULL, 0, NULL, 0, NULL, NULL),
             FLIT_ERR_INVALID_ARG);
    /* Handles that are not calls. */
    int done = 5;
    size_t idx = 77;
    flit_rpc_call_t *none = NULL, *fake = (flit_rpc_call_t *)b;
    CHECK_ST(flit_rpc_test(NULL, &done, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_test(&none, &done, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_wait(&none, -1, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_wait(NULL, -1, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_cancel(&none), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_cancel(NULL), FLIT_ERR_INVALID_ARG);
    memset(b, 0, sizeof b);
    CHECK_ST(flit_rpc_wait(&fake, -1, NULL), FLIT_ERR_INVALID_ARG);
    flit_rpc_call_t *nones[2] = {NULL, NULL};
    CHECK_ST(flit_rpc_wait_any(2, nones, -1, &idx, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_wait_any(0, nones, -1, &idx, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_wait_any(2, NULL, -1, &idx, NULL), FLIT_ERR_INVALID_ARG);
    CHECK(done == 5 && idx == 77);
    /* A handle of a live call, with a NULL done or index. */
    CHECK_OK(flit_rpc_icall(rpc, flit_rank(0), P_ECHO, NULL, 0, NULL, 0, NULL, &c));
    CHECK_ST(flit_rpc_test(&c, NULL, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_wait_any(1, &c, -1, NULL, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_rpc_wait(&c, -1, &res));
    CHECK(c == NULL && res.status == FLIT_OK && res.length == 0);
    /* Two objects' calls in one wait_any. */
    flit_rpc_t *other;
    CHECK_OK(flit_rpc_create(ep, NULL, &other));
    CHECK_OK(flit_rpc_register(other, P_ECHO, proc_echo, NULL));
    flit_rpc_call_t *two[2];
    CHECK_OK(flit_rpc_icall(rpc, flit_rank(0), P_ECHO, NULL, 0, NULL, 0, NULL, &two[0]));
    CHECK_OK(
        flit_rpc_icall(other, flit_rank(0), P_ECHO, NULL, 0, NULL, 0, NULL, &two[1]));
    CHECK_ST(flit_rpc_wait_any(2, two, -1, &idx, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_destroy(other), FLIT_ERR_AGAIN); /* two[1] is outstanding */
    CHECK_OK(flit_rpc_wait(&two[0], -1, NULL));
    CHECK_OK(flit_rpc_wait(&two[1], -1, NULL));
    CHECK_OK(flit_rpc_destroy(other));
}

static void in_procedures(void)
{
    uint64_t v = 42;
    struct iovec q = {&v, sizeof v};
    CHECK_OK(flit_rpc_call(rpc, flit_rank(0), P_CHECKS, &q, 1, NULL, 0, NULL, NULL));
    /* The request after its procedure returned: a dead token. */
    uint8_t b[1];
    CHECK_ST(flit_rpc_recv(kept, b, 1), FLIT_ERR_BAD_TOKEN);
    CHECK_ST(flit_rpc_reply(kept, NULL, 0), FLIT_ERR_BAD_TOKEN);
    CHECK_ST(flit_rpc_defer(kept, &later), FLIT_ERR_BAD_TOKEN);
    CHECK(flit_rpc_remaining(kept) == 0 && flit_rpc_caller(kept).idx == UINT32_MAX);
    CHECK(flit_rpc_remaining(NULL) == 0 && flit_rpc_caller(NULL).idx == UINT32_MAX);
    CHECK_ST(flit_rpc_recv(NULL, b, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_reply(NULL, NULL, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_defer(NULL, &later), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_reply_send(NULL, NULL, 0), FLIT_ERR_INVALID_ARG);
    /* A procedure that returns without replying: an empty reply. */
    flit_rpc_result_t res;
    CHECK_OK(flit_rpc_call(rpc, flit_rank(0), P_KEEP, &q, 1, NULL, 0, NULL, &res));
    CHECK(res.length == 0 && res.received == 0 && res.data == NULL);
    /* An active-message handler with a call outstanding (kept deferred). */
    flit_rpc_call_t *c;
    CHECK_OK(flit_rpc_icall(rpc, flit_rank(0), P_DEFER, NULL, 0, NULL, 0, NULL, &c));
    while (!later)
        CHECK_OK(flit_poll(ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_AM), am_handler, &c));
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_AM), NULL, 0, 0));
    CHECK_OK(flit_poll(ep));
    CHECK(c != NULL);
    CHECK_OK(flit_rpc_reply_send(later, &q, 1)); /* 8 bytes, no buffers */
    later = NULL;
    CHECK_ST(flit_rpc_wait(&c, -1, &res), FLIT_ERR_TOO_LARGE);
    CHECK(c == NULL && res.length == 8 && res.received == 0);
}

/* The mutex and condition: bad arguments, and waits that cannot be. */
static flit_mutex_t *held_m; /* locked while P_KEEP's twin below runs */

static void proc_lock_held(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    /* Inline (it may not block), and a held mutex: it would have to wait. */
    CHECK_ST(flit_mutex_lock(held_m, req), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_mutex_lock(held_m, NULL), FLIT_ERR_IN_HANDLER);
    kept = req;
}

static void sync_errors(void)
{
    flit_mutex_t *m = (flit_mutex_t *)&m;
    flit_cond_t *c = (flit_cond_t *)&c;
    CHECK_ST(flit_mutex_create(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_cond_create(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_destroy(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_cond_destroy(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_lock(NULL, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_trylock(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_unlock(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_cond_wait(NULL, m, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_cond_signal(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_cond_broadcast(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_mutex_create(&m));
    CHECK_OK(flit_cond_create(&c));
    CHECK_ST(flit_cond_wait(c, NULL, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_unlock(m), FLIT_ERR_INVALID_ARG);       /* not locked */
    CHECK_ST(flit_cond_wait(c, m, NULL), FLIT_ERR_INVALID_ARG); /* m not locked */
    CHECK_OK(flit_cond_destroy(c)); /* the failed wait left no waiter */
    CHECK_OK(flit_mutex_lock(m, NULL));
    CHECK_ST(flit_mutex_trylock(m), FLIT_ERR_AGAIN);
    CHECK_ST(flit_mutex_destroy(m), FLIT_ERR_AGAIN);
    held_m = m;
    CHECK_OK(
        flit_rpc_register_flags(rpc, P_KEEP, proc_lock_held, NULL, FLIT_RPC_PROC_INLINE));
    CHECK_OK(flit_rpc_call(rpc, flit_rank(0), P_KEEP, NULL, 0, NULL, 0, NULL, NULL));
    CHECK_ST(flit_mutex_lock(m, kept), FLIT_ERR_INVALID_ARG); /* a finished request */
    CHECK_OK(flit_rpc_register(rpc, P_KEEP, proc_keep, NULL));
    CHECK_OK(flit_mutex_unlock(m));
    CHECK_OK(flit_mutex_trylock(m));
    CHECK_OK(flit_mutex_unlock(m));
    CHECK_OK(flit_mutex_destroy(m));
}

static void deferred_and_destroy(void)
{
    flit_rpc_call_t *c;
    CHECK_OK(flit_rpc_icall(rpc, flit_rank(0), P_DEFER, NULL, 0, NULL, 0, NULL, &c));
    while (!later)
        CHECK_OK(flit_poll(ep));
    struct iovec bad = {NULL, 1};
    CHECK_ST(flit_rpc_reply_send(later, &bad, 1), FLIT_ERR_INVALID_ARG); /* kept */
    CHECK_ST(flit_rpc_destroy(rpc), FLIT_ERR_AGAIN);
    CHECK_OK(flit_rpc_cancel(&c)); /* the deferred reply comes later: discarded */
    CHECK(c == NULL);
    CHECK_OK(flit_rpc_destroy(rpc));
    CHECK_ST(flit_rpc_reply_send(later, NULL, 0), FLIT_ERR_CLOSED); /* and freed */
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = NPROCS};
    CHECK_OK(flit_rpc_create(ep, &p, &rpc));
    CHECK_OK(flit_rpc_register(rpc, P_ECHO, proc_echo, NULL));
    /* Inline: a procedure that may not block (one on its own stack may). */
    CHECK_OK(
        flit_rpc_register_flags(rpc, P_CHECKS, proc_checks, NULL, FLIT_RPC_PROC_INLINE));
    CHECK_OK(flit_rpc_register(rpc, P_KEEP, proc_keep, NULL));
    CHECK_OK(flit_rpc_register(rpc, P_DEFER, proc_defer, NULL));
    bad_create();
    bad_calls();
    in_procedures();
    sync_errors();
    deferred_and_destroy();
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
