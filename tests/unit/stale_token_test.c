/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The active-message token row of the stale-handle audit (issue 36 item 5).
 * A token kept past its handler answers FLIT_ERR_BAD_TOKEN (its getters
 * an invalid rank and NULL) however many handlers ran since: also once its
 * pool slot serves a later handler (the pool has 256), where a token that
 * was the slot's address replied on behalf of that later request. The
 * later request's own reply goes out untouched. A token of a destroyed
 * endpoint is refused without reading the endpoint's freed state (ASan),
 * and so are values that were never tokens.
 */
#include "unit.h"

#define H_REQ  1
#define H_REP  2
#define ROUNDS 700 /* past 256 handlers, twice: each round runs two */

static flit_token_t *kept;
static int req_runs, rep_runs, bad;
static uint32_t last_rep;

static void check_stale(const char *where)
{
    uint32_t forged = 0xdead;
    flit_status st = flit_am_reply_short(kept, flit_handler(H_REP), &forged, 1);
    flit_status st_m = flit_am_reply_medium(kept, flit_handler(H_REP), &forged,
                                            sizeof forged, &forged, 1);
    flit_status st_l =
        flit_am_reply_long(kept, flit_handler(H_REP), NULL, 0, 0, &forged, 1);
    if (st != FLIT_ERR_BAD_TOKEN || st_m != FLIT_ERR_BAD_TOKEN ||
        st_l != FLIT_ERR_BAD_TOKEN || flit_token_rank(kept).idx != UINT32_MAX ||
        flit_token_ep(kept) != NULL) {
        if (bad++ < 3)
            fprintf(stderr,
                    "stale token %s (request %d): replies answered %s/%s/%s, rank %u, "
                    "ep %p\n",
                    where, req_runs, flit_status_name(st), flit_status_name(st_m),
                    flit_status_name(st_l), flit_token_rank(kept).idx,
                    (void *)flit_token_ep(kept));
    }
}

static void req_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1);
    req_runs++;
    if (!kept)
        kept = t; /* kept past its handler: a misuse */
    else
        check_stale("in a later request handler");
    CHECK(flit_token_rank(t).idx == 0 && flit_token_ep(t) != NULL);
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_REP), args, 1));
}

static void rep_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1);
    rep_runs++;
    last_rep = args[0];
}

/* One request and its reply, which must carry the request's argument. */
static void round_trip(flit_ep_t *ep, uint32_t arg)
{
    int want = rep_runs + 1;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_REQ), &arg, 1, 0));
    for (int i = 0; i < 10000 && rep_runs < want; i++)
        CHECK_OK(flit_poll(ep));
    if (rep_runs != want || last_rep != arg)
        FAIL("request %u: %d replies (want %d), last carried %u", arg, rep_runs, want,
             last_rep);
}

static flit_ep_t *open_ep(void)
{
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_REQ), req_handler, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_REP), rep_handler, NULL));
    return ep;
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep = open_ep();
    for (uint32_t r = 0; r < ROUNDS; r++) {
        round_trip(ep, r);
        check_stale("outside any handler");
    }
    if (bad)
        FAIL("a token kept past its handler was taken %d times", bad);

    /* Its endpoint destroyed and a new one made: still refused, and the
       new endpoint's handlers reply as they should. */
    CHECK_OK(flit_ep_destroy(ep));
    check_stale("of a destroyed endpoint");
    ep = open_ep();
    for (uint32_t r = 0; r < 300; r++)
        round_trip(ep, ROUNDS + r);
    if (bad)
        FAIL("a destroyed endpoint's token was taken %d times", bad);

    /* Values that never were tokens. */
    static const uintptr_t forged[] = {0, 1, 3, 8, 0x1001, UINTPTR_MAX, UINTPTR_MAX - 1};
    uint32_t a = 1;
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        flit_token_t *f = (flit_token_t *)forged[i];
        CHECK_ST(flit_am_reply_short(f, flit_handler(H_REP), &a, 1), FLIT_ERR_BAD_TOKEN);
        CHECK(flit_token_rank(f).idx == UINT32_MAX && flit_token_ep(f) == NULL);
    }
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
