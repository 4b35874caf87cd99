/* SPDX-License-Identifier: BSD-3-Clause */
/* clang-format off */
/*
 * The smallest complete flit program: every rank sends a short request to
 * its right neighbour, whose handler replies; each rank waits for its reply.
 * README.md shows this program as it is below (readme_snippets checks).
 *
 *     flitrun -n 4 ./hello
 */
#include <flit/flit.h>
#include <stdio.h>
#include <stdlib.h>

enum { H_PING = 1, H_PONG = 2 };
static volatile int got_pong;

/* Every call returns a status: name the call that failed, say why, stop. */
static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

/* Runs on the destination, during its flit_poll / flit_wait. */
static void on_ping(flit_token_t *token, void *buf, size_t nbytes,
                    const uint32_t *args, unsigned nargs, void *user)
{
    (void)buf; (void)nbytes; (void)nargs; (void)user;
    uint32_t answer[1] = {args[0] * 2};
    check(flit_am_reply_short(token, flit_handler(H_PONG), answer, 1), /* to the sender */
          "flit_am_reply_short");
}

static void on_pong(flit_token_t *token, void *buf, size_t nbytes,
                    const uint32_t *args, unsigned nargs, void *user)
{
    (void)buf; (void)nbytes; (void)nargs; (void)user;
    printf("rank %u: rank %u answered %u\n", flit_job_rank().idx,
           flit_token_rank(token).idx, args[0]);
    got_pong = 1;
}

int main(void)
{
    flit_ep_t *ep;
    check(flit_init(NULL), "flit_init");            /* rank and size from the launcher */
    check(flit_ep_create(NULL, &ep), "flit_ep_create"); /* collective: connects every peer */
    check(flit_am_register(ep, flit_handler(H_PING), on_ping, NULL), "flit_am_register");
    check(flit_am_register(ep, flit_handler(H_PONG), on_pong, NULL), "flit_am_register");
    check(flit_barrier(ep), "flit_barrier");        /* handlers are in place everywhere */

    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    uint32_t args[1] = {me + 100};
    check(flit_am_short(ep, flit_rank((me + 1) % n), flit_handler(H_PING), args, 1, 0),
          "flit_am_short");
    while (!got_pong)
        check(flit_wait(ep, -1), "flit_wait");      /* spins briefly, then sleeps */
    check(flit_finalize(), "flit_finalize");
    return 0;
}
