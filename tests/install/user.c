/* SPDX-License-Identifier: BSD-3-Clause */
/* A user's program built against the installed header, as C and as C++:
   every rank pings its neighbour and waits for the answer. */
#include <flit/flit.h>
#include <stdio.h>

static volatile int answered;

static void on_ping(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf;
    (void)n;
    (void)user;
    flit_am_reply_short(t, flit_handler(2), args, nargs);
}

static void on_pong(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)n;
    (void)user;
    answered = nargs == 1 && args[0] == 42;
}

int main(void)
{
    flit_ep_t *ep;
    if (flit_init(NULL) != FLIT_OK || flit_ep_create(NULL, &ep) != FLIT_OK)
        return 1;
    flit_am_register(ep, flit_handler(1), on_ping, NULL);
    flit_am_register(ep, flit_handler(2), on_pong, NULL);
    flit_barrier(ep);
    uint32_t arg = 42;
    flit_rank_t next = flit_rank((flit_job_rank().idx + 1) % flit_job_size());
    if (flit_am_short(ep, next, flit_handler(1), &arg, 1, 0) != FLIT_OK)
        return 1;
    while (!answered)
        if (flit_wait(ep, -1) != FLIT_OK)
            return 1;
    printf("flit %d: ok\n", FLIT_VERSION);
    return flit_finalize() == FLIT_OK ? 0 : 1;
}
