/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_ep_create is collective, and so is its failure. Rank 1 runs out of
 * file descriptors (RLIMIT_NOFILE lowered to its lowest free one), so it
 * cannot open its transports; the ranks learn that from the address
 * exchange, where rank 1 sends its status in place of its address.
 *
 * Proves: every rank's flit_ep_create returns exactly FLIT_ERR_SYSTEM (rank
 * 1's own, the others' from rank 1), nobody waits for an exchange the
 * others left; and the job stays in step: once rank 1 has descriptors
 * again, the next flit_ep_create succeeds everywhere and a barrier and a
 * message to every peer go through. Each rank prints "ep_open_fail: rank R
 * OK".
 */
#include <sys/resource.h>

#include "mp.h"

enum { H_HELLO = 1 };

static unsigned hellos;

static void on_hello(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    hellos++;
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    CHECK(n >= 2);
    struct rlimit old;
    CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
    if (me == 1) {
        int lowest = dup(0); /* the lowest free descriptor */
        CHECK(lowest >= 0);
        close(lowest);
        struct rlimit none = {.rlim_cur = (rlim_t)lowest, .rlim_max = old.rlim_max};
        CHECK(setrlimit(RLIMIT_NOFILE, &none) == 0);
    }
    flit_ep_t *ep = NULL;
    CHECK_ST(flit_ep_create(NULL, &ep), FLIT_ERR_SYSTEM);
    if (me == 1)
        CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);

    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_HELLO), on_hello, NULL));
    CHECK_OK(flit_barrier(ep));
    for (uint32_t r = 0; r < n; r++)
        CHECK_OK(flit_am_short(ep, flit_rank(r), flit_handler(H_HELLO), NULL, 0, 0));
    MP_WAIT(ep, hellos == n);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_finalize());
    printf("ep_open_fail: rank %u OK\n", me);
    return 0;
}
