/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A token is valid only while its handler runs (am.h). One saved by a
 * request handler and used after that handler returned must answer
 * FLIT_ERR_BAD_TOKEN, also while another request handler is running:
 * otherwise the stale token silently replies on behalf of that other
 * request (to its sender), whose own reply is then refused.
 */
#include "unit.h"

#define H_REQ 1
#define H_REP 2

static flit_token_t *first_token;
static int req_runs, rep_runs;
static flit_status stale_st, own_st;
static uint32_t rep_args[4];

static void req_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1);
    req_runs++;
    if (args[0] == 1) {
        first_token = t; /* kept past its handler: a misuse */
        CHECK_OK(flit_am_reply_short(t, flit_handler(H_REP), args, 1));
        return;
    }
    uint32_t stale = 100 + args[0];
    stale_st = flit_am_reply_short(first_token, flit_handler(H_REP), &stale, 1);
    own_st = flit_am_reply_short(t, flit_handler(H_REP), args, 1);
}

static void rep_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1 && rep_runs < 4);
    rep_args[rep_runs++] = args[0];
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_REQ), req_handler, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_REP), rep_handler, NULL));

    uint32_t a = 1;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_REQ), &a, 1, 0));
    for (int i = 0; i < 1000 && rep_runs < 1; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(req_runs == 1 && rep_runs == 1 && rep_args[0] == 1);
    /* Outside any handler the stale token is refused. */
    CHECK_ST(flit_am_reply_short(first_token, flit_handler(H_REP), &a, 1),
             FLIT_ERR_BAD_TOKEN);

    /* Inside the next request's handler it must be refused as well. */
    a = 2;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_REQ), &a, 1, 0));
    for (int i = 0; i < 1000 && rep_runs < 2; i++)
        CHECK_OK(flit_poll(ep));
    for (int i = 0; i < 10; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(req_runs == 2);
    if (stale_st != FLIT_ERR_BAD_TOKEN || own_st != FLIT_OK)
        FAIL("a token saved from an earlier request handler, used inside a later one, "
             "answered %s (and the handler's own reply %s); expected "
             "FLIT_ERR_BAD_TOKEN and FLIT_OK. Replies seen: %d (first args %u, %u)",
             flit_status_name(stale_st), flit_status_name(own_st), rep_runs, rep_args[0],
             rep_args[1]);
    CHECK(rep_runs == 2 && rep_args[1] == 2);
    CHECK_OK(flit_finalize());
    return 0;
}
