/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale RPC handles (<flit/rpc.h>), each used again after it ended and
 * after a new object of its type took its memory (made right after the
 * end, so that malloc or the object's free list hands the same block back):
 * an RPC object destroyed twice, a completed call tested, waited on and
 * cancelled, a deferred reply sent twice, a procedure's request used by the
 * next procedure (its block reused), a mutex and a condition destroyed
 * twice. Each answers FLIT_ERR_INVALID_ARG (the request FLIT_ERR_BAD_TOKEN,
 * as rpc.h says) and leaves the new object as it was; under ASan nothing
 * reads freed memory.
 */
#include <flit/rpc.h>

#include "unit.h"

enum { P_ECHO, P_DEFER, P_KEEP, P_STALE, NPROCS };

static flit_ep_t *ep;
static flit_rpc_reply_t *later; /* P_DEFER's reply */
static flit_rpc_req_t *kept;    /* P_KEEP's request, kept past its return */

static void proc_echo(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint64_t v = 0;
    CHECK(len == sizeof v);
    CHECK_OK(flit_rpc_recv(req, &v, sizeof v));
    struct iovec q = {&v, sizeof v};
    CHECK_OK(flit_rpc_reply(req, &q, 1));
}

static void proc_defer(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK_OK(flit_rpc_defer(req, &later));
}

static void proc_keep(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    kept = req;
}

/* Runs in the block P_KEEP's request had: the kept handle is dead, and
   answers nothing of this request. */
static void proc_stale(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint64_t v = 0, nine = 9;
    struct iovec q = {&nine, sizeof nine};
    CHECK_ST(flit_rpc_reply(kept, &q, 1), FLIT_ERR_BAD_TOKEN);
    CHECK_ST(flit_rpc_recv(kept, &v, sizeof v), FLIT_ERR_BAD_TOKEN);
    CHECK_ST(flit_rpc_defer(kept, &(flit_rpc_reply_t *){NULL}), FLIT_ERR_BAD_TOKEN);
    CHECK(flit_rpc_remaining(kept) == 0 && flit_rpc_caller(kept).idx == UINT32_MAX);
    CHECK(flit_rpc_remaining(req) == len); /* untouched */
    CHECK_OK(flit_rpc_recv(req, &v, sizeof v));
    struct iovec a = {&v, sizeof v};
    CHECK_OK(flit_rpc_reply(req, &a, 1));
}

static flit_rpc_t *make_rpc(void)
{
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = NPROCS};
    flit_rpc_t *r;
    CHECK_OK(flit_rpc_create(ep, &p, &r));
    CHECK_OK(flit_rpc_register(r, P_ECHO, proc_echo, NULL));
    CHECK_OK(flit_rpc_register(r, P_DEFER, proc_defer, NULL));
    CHECK_OK(flit_rpc_register(r, P_KEEP, proc_keep, NULL));
    CHECK_OK(flit_rpc_register(r, P_STALE, proc_stale, NULL));
    return r;
}

/* One echo through r: r works. */
static void echo(flit_rpc_t *r, uint64_t v)
{
    uint64_t back = 0;
    struct iovec q = {&v, sizeof v}, a = {&back, sizeof back};
    flit_rpc_result_t res;
    CHECK_OK(flit_rpc_call(r, flit_rank(0), P_ECHO, &q, 1, &a, 1, NULL, &res));
    CHECK(res.status == FLIT_OK && back == v);
}

static void stale_object(void)
{
    flit_rpc_t *old = make_rpc();
    CHECK_OK(flit_rpc_destroy(old));
    flit_rpc_t *fresh = make_rpc(); /* most likely old's block */
    CHECK_ST(flit_rpc_destroy(old), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_register(old, P_ECHO, NULL, NULL), FLIT_ERR_INVALID_ARG);
    flit_rpc_stats_t s = {.struct_size = sizeof s};
    CHECK_ST(flit_rpc_stats(old, &s), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rpc_call(old, flit_rank(0), P_ECHO, NULL, 0, NULL, 0, NULL, NULL),
             FLIT_ERR_INVALID_ARG);
    echo(fresh, 41); /* untouched: still there, its procedures in place */
    CHECK_OK(flit_rpc_destroy(fresh));
}

static void stale_call(flit_rpc_t *r)
{
    uint64_t v = 7, back = 0;
    struct iovec q = {&v, sizeof v}, a = {&back, sizeof back};
    flit_rpc_call_t *c, *stale;
    CHECK_OK(flit_rpc_icall(r, flit_rank(0), P_ECHO, &q, 1, &a, 1, NULL, &c));
    stale = c;
    CHECK_OK(flit_rpc_wait(&c, -1, NULL));
    CHECK(c == NULL && back == 7);
    /* A new call, most likely in the completed one's block; not yet
       answered (no progress made since). */
    v = 8;
    CHECK_OK(flit_rpc_icall(r, flit_rank(0), P_ECHO, &q, 1, &a, 1, NULL, &c));
    flit_rpc_call_t *s = stale;
    CHECK_ST(flit_rpc_cancel(&s), FLIT_ERR_INVALID_ARG);
    CHECK(s == stale);
    int done = 5;
    CHECK_ST(flit_rpc_test(&s, &done, NULL), FLIT_ERR_INVALID_ARG);
    CHECK(done == 5);
    CHECK_ST(flit_rpc_wait(&s, 0, NULL), FLIT_ERR_INVALID_ARG);
    size_t idx = 9;
    CHECK_ST(flit_rpc_wait_any(1, &s, 0, &idx, NULL), FLIT_ERR_INVALID_ARG);
    CHECK(idx == 9);
    /* The new call is still in flight and completes as it should. */
    flit_rpc_result_t res;
    CHECK_OK(flit_rpc_wait(&c, -1, &res));
    CHECK(c == NULL && res.status == FLIT_OK && back == 8);
    /* A cancelled call's handle too. */
    CHECK_OK(flit_rpc_icall(r, flit_rank(0), P_ECHO, &q, 1, &a, 1, NULL, &c));
    stale = c;
    CHECK_OK(flit_rpc_cancel(&c));
    CHECK_OK(flit_rpc_icall(r, flit_rank(0), P_ECHO, &q, 1, &a, 1, NULL, &c));
    s = stale;
    CHECK_ST(flit_rpc_cancel(&s), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_rpc_wait(&c, -1, &res));
    CHECK(res.status == FLIT_OK);
}

static void stale_reply(flit_rpc_t *r)
{
    flit_rpc_call_t *c1, *c2;
    uint64_t v = 3;
    struct iovec q = {&v, sizeof v};
    CHECK_OK(flit_rpc_icall(r, flit_rank(0), P_DEFER, NULL, 0, NULL, 0, NULL, &c1));
    while (!later)
        CHECK_OK(flit_poll(ep));
    flit_rpc_reply_t *stale = later;
    later = NULL;
    CHECK_OK(flit_rpc_reply_send(stale, NULL, 0));
    CHECK_OK(flit_rpc_wait(&c1, -1, NULL));
    /* A second deferred reply, most likely in the first one's block. */
    CHECK_OK(flit_rpc_icall(r, flit_rank(0), P_DEFER, NULL, 0, NULL, 0, NULL, &c2));
    while (!later)
        CHECK_OK(flit_poll(ep));
    CHECK_ST(flit_rpc_reply_send(stale, &q, 1), FLIT_ERR_INVALID_ARG);
    int done = 0;
    for (int i = 0; i < 100; i++)
        CHECK_OK(flit_poll(ep));
    CHECK_OK(flit_rpc_test(&c2, &done, NULL));
    CHECK(done == 0); /* not answered by the stale handle */
    flit_rpc_result_t res;
    CHECK_OK(flit_rpc_reply_send(later, NULL, 0));
    later = NULL;
    CHECK_OK(flit_rpc_wait(&c2, -1, &res));
    CHECK(res.status == FLIT_OK && res.length == 0);
}

static void stale_sync(void)
{
    flit_mutex_t *m, *m2;
    CHECK_OK(flit_mutex_create(&m));
    CHECK_OK(flit_mutex_destroy(m));
    CHECK_OK(flit_mutex_create(&m2));
    CHECK_OK(flit_mutex_lock(m2, NULL));
    CHECK_ST(flit_mutex_destroy(m), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_unlock(m), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_trylock(m), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_mutex_trylock(m2), FLIT_ERR_AGAIN); /* still locked */
    CHECK_OK(flit_mutex_unlock(m2));
    flit_cond_t *c, *c2;
    CHECK_OK(flit_cond_create(&c));
    CHECK_OK(flit_cond_destroy(c));
    CHECK_OK(flit_cond_create(&c2));
    CHECK_ST(flit_cond_destroy(c), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_cond_signal(c), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_cond_wait(c, m2, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_cond_signal(c2));
    CHECK_OK(flit_cond_destroy(c2));
    CHECK_OK(flit_mutex_destroy(m2));
}

/* A request kept past its procedure, its block reused by the next one. */
static void stale_request(flit_rpc_t *r)
{
    CHECK_OK(flit_rpc_call(r, flit_rank(0), P_KEEP, NULL, 0, NULL, 0, NULL, NULL));
    uint64_t v = 5, back = 0;
    struct iovec q = {&v, sizeof v}, a = {&back, sizeof back};
    flit_rpc_result_t res;
    CHECK_OK(flit_rpc_call(r, flit_rank(0), P_STALE, &q, 1, &a, 1, NULL, &res));
    CHECK(res.status == FLIT_OK && back == 5); /* its own reply, not 9 */
}

/* A case on an object of its own. */
static void with_rpc(void (*fn)(flit_rpc_t *))
{
    flit_rpc_t *r = make_rpc();
    fn(r);
    CHECK_OK(flit_rpc_destroy(r));
}

static void stale_calls(void)
{
    with_rpc(stale_call);
}

static void stale_replies(void)
{
    with_rpc(stale_reply);
}

static void stale_requests(void)
{
    with_rpc(stale_request);
}

/* argv[1], when given, names the one case to run (to see each fail alone). */
int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {{"object", stale_object},
                 {"call", stale_calls},
                 {"reply", stale_replies},
                 {"request", stale_requests},
                 {"sync", stale_sync}};
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
