/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Only the rank a call went to answers it (issue 36, item 6: what a peer
 * sends is judged, not trusted). 3 ranks. Ranks 0 and 1 make an RPC
 * object; rank 2 is none: it reserves the same two handler indices
 * (collectively, as flit_rpc_create does) and speaks the wire itself.
 * Rank 0 calls rank 1, which defers its reply; rank 2 then sends rank 0 a
 * reply for that call's id (the first call's: 1), with bytes of its own.
 * Rank 0 must refuse it (flit_rpc_stats.refused, the call still going),
 * and get rank 1's reply when rank 1 sends it.
 * Rank 0 logs the refusal once, through the library's log (its prefix
 * names the rank), which the test reads back from its own stderr.
 * Each rank prints "rpc_forged: rank R OK".
 */
#include <flit/rpc.h>

#include "mp.h"
#include "rpc/wire.h"

enum { P_DEFER, P_RELEASE, NPROCS };

static flit_rpc_t *rpc;
static flit_rpc_reply_t *kept;

static void proc_defer(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK_OK(flit_rpc_defer(req, &kept));
}

static void proc_release(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)req, (void)len, (void)user;
    CHECK(kept != NULL);
    struct iovec v = {.iov_base = "real", .iov_len = 5};
    CHECK_OK(flit_rpc_reply_send(kept, &v, 1));
    kept = NULL;
}

static uint64_t refused(void)
{
    flit_rpc_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_rpc_stats(rpc, &s));
    return s.refused;
}

/* Rank 0: whether rank 2's reply was refused yet; never the call ended. */
static bool forged_refused(flit_rpc_call_t **c)
{
    int done = 0;
    flit_rpc_result_t res;
    flit_status st = flit_rpc_test(c, &done, &res);
    if (done)
        FAIL("the call to rank 1 ended (%s, %zu bytes) before rank 1 replied: a "
             "reply from rank 2 was taken",
             flit_status_name(st), res.length);
    return refused() == 1;
}

static FILE *caught;
static int stderr_fd = -1;

/* Rank 0's stderr into a file while rank 2's reply comes. */
static void catch_stderr(void)
{
    fflush(stderr);
    CHECK((caught = tmpfile()) != NULL);
    CHECK((stderr_fd = dup(2)) >= 0);
    CHECK(dup2(fileno(caught), 2) == 2);
}

/* stderr back; what it caught holds the refusal's line once. */
static void check_caught(void)
{
    CHECK(dup2(stderr_fd, 2) == 2);
    close(stderr_fd);
    char text[4096] = "";
    rewind(caught);
    size_t n = fread(text, 1, sizeof text - 1, caught);
    fclose(caught);
    text[n] = 0;
    const char *want =
        "flit[0] warning: rpc: a reply to a call not made to it from rank 2 "
        "refused (further ones are only counted)\n";
    const char *at = strstr(text, want);
    if (!at || strstr(at + strlen(want), "refused"))
        FAIL("rank 0 logged \"%s\", not the refusal once as \"%s\"", text, want);
}

static void caller(flit_ep_t *ep)
{
    char back[16] = "";
    struct iovec r = {.iov_base = back, .iov_len = sizeof back};
    flit_rpc_call_t *c;
    CHECK_OK(flit_rpc_icall(rpc, flit_rank(1), P_DEFER, NULL, 0, &r, 1, NULL, &c));
    catch_stderr();
    CHECK_OK(flit_barrier(ep)); /* the call is out: rank 2 may reply to it */
    MP_WAIT(ep, forged_refused(&c));
    check_caught();
    flit_rpc_result_t res;
    CHECK_OK(flit_rpc_call(rpc, flit_rank(1), P_RELEASE, NULL, 0, NULL, 0, NULL, &res));
    CHECK_OK(flit_rpc_wait(&c, -1, &res));
    CHECK(res.length == 5 && strcmp(back, "real") == 0);
}

static void ignore(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
}

/* Rank 2: what flit_rpc_create does to the handler tables, then a reply. */
static void impostor(flit_ep_t *ep)
{
    flit_handler_t h;
    CHECK_OK(flit_ep_reserve_handlers(ep, 2, &h));
    flit_handler_t rep = flit_handler((uint16_t)(h.idx + 1));
    CHECK_OK(flit_am_register(ep, h, ignore, NULL));
    CHECK_OK(flit_am_register(ep, rep, ignore, NULL));
    CHECK_OK(flit_barrier(ep));              /* flit_rpc_create's */
    CHECK_OK(flit_barrier(ep));              /* the procedures are in */
    CHECK_OK(flit_barrier(ep));              /* rank 0's call is out */
    uint32_t a[RPC_NARGS] = {1, 0, FLIT_OK}; /* call 1, answered */
    CHECK_OK(flit_am_medium(ep, flit_rank(0), rep, "forged", 7, a, RPC_NARGS, 0));
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx;
    if (flit_job_size() != 3)
        FAIL("run with 3 ranks");
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    if (me == 2) {
        impostor(ep);
    } else {
        flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = NPROCS};
        CHECK_OK(flit_rpc_create(ep, &p, &rpc));
        CHECK_OK(flit_rpc_register(rpc, P_DEFER, proc_defer, NULL));
        CHECK_OK(flit_rpc_register(rpc, P_RELEASE, proc_release, NULL));
        CHECK_OK(flit_barrier(ep)); /* the procedures are in */
        if (me == 0)
            caller(ep);
        else
            CHECK_OK(flit_barrier(ep)); /* rank 0's call is out */
    }
    CHECK_OK(flit_barrier(ep)); /* rank 1 serves while it waits here */
    if (me == 2)
        CHECK_OK(flit_barrier(ep)); /* flit_rpc_destroy's */
    else
        CHECK_OK(flit_rpc_destroy(rpc));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    printf("rpc_forged: rank %u OK\n", me);
    return 0;
}
