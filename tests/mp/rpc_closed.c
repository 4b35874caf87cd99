/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A deferred call always ends, even when the last answer the server has
 * for it meets a local shortage (issue 36, item 3). 2 ranks: rank 1 serves,
 * rank 0 calls with no timeout of its own (a call that never ends is caught
 * by flitrun's --timeout). The procedure defers its reply; then
 *
 *  closed  the server destroys its RPC object: the call must end with
 *          FLIT_ERR_CLOSED, while the first --times sends of that status
 *          answer FLIT_ERR_NO_MEMORY.
 *  reply   the server sends the deferred reply, whose send answers
 *          FLIT_ERR_NO_MEMORY, and so do the first --times sends of the
 *          status that takes its place: the call must end with
 *          FLIT_ERR_NO_MEMORY.
 *  token   (no deferral) the procedure replies in its handler, through the
 *          request's token, and that send answers FLIT_ERR_NO_MEMORY; the
 *          status that takes its place meets the shortage --times times:
 *          the call must end with FLIT_ERR_NO_MEMORY.
 *
 * The failures are the endpoint's sends answering a shortage, injected with
 * the linker (--wrap=flit_am_short, flit_am_medium, flit_am_reply_medium,
 * see CMakeLists.txt) on
 * the server only; a case whose failures did not happen fails.
 */
#include <flit/rpc.h>

#include "mp.h"

enum { P_DEFER, P_TOKEN, NPROCS };

static struct {
    flit_ep_t *ep;
    flit_rpc_t *rpc;
    flit_rpc_reply_t *kept;
    bool armed;
    unsigned short_fails, medium_fails, reply_fails; /* still to inject */
    unsigned injected;
    bool ran; /* P_TOKEN */
} g;

/* The RPC layer's words of a reply to the only call (id 1) with status st;
   other layers' messages (the streams' included) go through. */
static bool rpc_words(const uint32_t *args, unsigned nargs, flit_status st)
{
    return nargs == 3 && args[0] == 1 && args[1] == 0 && args[2] == (uint32_t)st;
}

flit_status __real_flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                 const uint32_t *args, unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                 const uint32_t *args, unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                 const uint32_t *args, unsigned nargs, unsigned flags)
{
    if (g.armed && g.short_fails &&
        (rpc_words(args, nargs, FLIT_ERR_CLOSED) ||
         rpc_words(args, nargs, FLIT_ERR_NO_MEMORY))) {
        g.short_fails--;
        g.injected++;
        return FLIT_ERR_NO_MEMORY;
    }
    return __real_flit_am_short(ep, dest, h, args, nargs, flags);
}

flit_status __real_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t n, const uint32_t *args,
                                  unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t n, const uint32_t *args,
                                  unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t n, const uint32_t *args,
                                  unsigned nargs, unsigned flags)
{
    if (g.armed && g.medium_fails && rpc_words(args, nargs, FLIT_OK)) {
        g.medium_fails--;
        g.injected++;
        return FLIT_ERR_NO_MEMORY;
    }
    return __real_flit_am_medium(ep, dest, h, buf, n, args, nargs, flags);
}

flit_status __real_flit_am_reply_medium(flit_token_t *t, flit_handler_t h,
                                        const void *buf, size_t n, const uint32_t *args,
                                        unsigned nargs);
flit_status __wrap_flit_am_reply_medium(flit_token_t *t, flit_handler_t h,
                                        const void *buf, size_t n, const uint32_t *args,
                                        unsigned nargs);
flit_status __wrap_flit_am_reply_medium(flit_token_t *t, flit_handler_t h,
                                        const void *buf, size_t n, const uint32_t *args,
                                        unsigned nargs)
{
    if (g.armed && g.reply_fails && rpc_words(args, nargs, FLIT_OK)) {
        g.reply_fails--;
        g.injected++;
        return FLIT_ERR_NO_MEMORY;
    }
    return __real_flit_am_reply_medium(t, h, buf, n, args, nargs);
}

static void proc_token(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    uint8_t b[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    struct iovec v = {.iov_base = b, .iov_len = sizeof b};
    CHECK_ST(flit_rpc_reply(req, &v, 1), FLIT_ERR_NO_MEMORY);
    g.ran = true;
}

static void proc_defer(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK_OK(flit_rpc_defer(req, &g.kept));
}

static void server(const char *c, unsigned times)
{
    bool closed = !strcmp(c, "closed"), token = !strcmp(c, "token");
    if (token) { /* armed from the start: the failures are in the handler */
        MP_WAIT(g.ep, g.ran);
    } else {
        MP_WAIT(g.ep, g.kept != NULL);
        g.armed = true;
        g.short_fails = times;
    }
    if (closed) {
        CHECK_OK(flit_rpc_destroy(g.rpc));
        /* Answered CLOSED by the destroy: its handle only frees it. */
        CHECK_ST(flit_rpc_reply_send(g.kept, NULL, 0), FLIT_ERR_CLOSED);
    } else if (token) {
        CHECK_OK(flit_rpc_destroy(g.rpc)); /* what is queued goes first */
    } else {
        g.medium_fails = 1;
        uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        struct iovec v = {.iov_base = b, .iov_len = sizeof b};
        CHECK_ST(flit_rpc_reply_send(g.kept, &v, 1), FLIT_ERR_NO_MEMORY);
        CHECK_OK(flit_rpc_destroy(g.rpc));
    }
    g.armed = false;
    unsigned want = times + (closed ? 0u : 1u);
    if (g.injected != want)
        FAIL("case %s: %u failures injected, %u wanted", c, g.injected, want);
}

static void caller(const char *c)
{
    uint8_t buf[8];
    struct iovec v = {.iov_base = buf, .iov_len = sizeof buf};
    flit_rpc_result_t res;
    unsigned proc = strcmp(c, "token") ? P_DEFER : P_TOKEN;
    flit_status st = flit_rpc_call(g.rpc, flit_rank(1), proc, NULL, 0, &v, 1, NULL, &res);
    flit_status want = strcmp(c, "closed") ? FLIT_ERR_NO_MEMORY : FLIT_ERR_CLOSED;
    if (st != want)
        FAIL("case %s: the call ended %s, %s wanted", c, flit_status_name(st),
             flit_status_name(want));
    CHECK_OK(flit_rpc_destroy(g.rpc));
}

int main(int argc, char **argv)
{
    const char *c = mp_arg_str(argc, argv, "--case", "closed");
    unsigned times = (unsigned)mp_arg_u64(argc, argv, "--times", 3);
    if (strcmp(c, "closed") && strcmp(c, "reply") && strcmp(c, "token"))
        FAIL("unknown --case %s", c);
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx;
    CHECK(flit_job_size() == 2);
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = NPROCS};
    CHECK_OK(flit_rpc_create(g.ep, &p, &g.rpc));
    CHECK_OK(flit_rpc_register(g.rpc, P_DEFER, proc_defer, NULL));
    CHECK_OK(flit_rpc_register(g.rpc, P_TOKEN, proc_token, NULL));
    if (me == 1 && !strcmp(c, "token")) {
        g.armed = true;
        g.reply_fails = 1;
        g.short_fails = times;
    }
    CHECK_OK(flit_barrier(g.ep));
    if (me == 1)
        server(c, times);
    else
        caller(c);
    CHECK_OK(flit_barrier(g.ep));
    printf("rpc_closed %s: rank %u OK\n", c, me);
    CHECK_OK(flit_ep_destroy(g.ep));
    CHECK_OK(flit_finalize());
    return 0;
}
