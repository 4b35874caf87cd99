/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_ep_reserve_handlers, collective, on 3 or more ranks:
 *
 *  - rank 1's program installs a handler at index 5 (the others none); a
 *    reservation of 2 gets the top two indices of the table, the same on
 *    every rank: each rank installs an AM handler at the first of them and
 *    a message to the next rank at that index runs it (a rank that got
 *    another index would return the message: NO_HANDLER);
 *  - reservations go down from there, never to index 5 or below: what
 *    would reach it answers FLIT_ERR_EXHAUSTED on every rank, and the
 *    largest that fits still works; then nothing is left;
 *  - count 0 and first NULL: FLIT_ERR_INVALID_ARG;
 *  - an endpoint whose handler tables differ in size between ranks:
 *    FLIT_ERR_INVALID_ARG on every rank.
 */
#include "mp.h"

static int runs;

static void on_msg(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    runs++;
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    if (n < 3) {
        fprintf(stderr, "reserve_handlers runs with 3 ranks or more\n");
        return TEST_SKIP;
    }
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    if (me == 1)
        CHECK_OK(flit_am_register(ep, flit_handler(5), on_msg, NULL));
    CHECK_OK(flit_barrier(ep));

    flit_handler_t h;
    CHECK_OK(flit_ep_reserve_handlers(ep, 2, &h));
    CHECK(h.idx == FLIT_HANDLER_COUNT_DEFAULT - 2);
    CHECK_OK(flit_am_register(ep, h, on_msg, NULL));
    CHECK_OK(flit_barrier(ep)); /* every rank installed it */
    CHECK_OK(flit_am_short(ep, flit_rank((me + 1) % n), h, NULL, 0, 0));
    MP_WAIT(ep, runs == 1);

    /* Down to index 6 at most: 254 - 249 = 5 would reach rank 1's handler. */
    CHECK_ST(flit_ep_reserve_handlers(ep, 249, &h), FLIT_ERR_EXHAUSTED);
    CHECK_OK(flit_ep_reserve_handlers(ep, 248, &h));
    CHECK(h.idx == 6);
    CHECK_ST(flit_ep_reserve_handlers(ep, 1, &h), FLIT_ERR_EXHAUSTED);
    CHECK_ST(flit_ep_reserve_handlers(ep, 0, &h), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_reserve_handlers(ep, 1, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_barrier(ep));

    /* Tables of different sizes across ranks. */
    flit_ep_t *odd;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_HANDLER_COUNT,
                          .handler_count = me == 0 ? 64 : 128};
    CHECK_OK(flit_ep_create(&p, &odd));
    CHECK_ST(flit_ep_reserve_handlers(odd, 1, &h), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_ep_destroy(odd));

    CHECK_OK(flit_finalize());
    printf("reserve_handlers: rank %u OK\n", me);
    return 0;
}
