/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank for flitrun's tests across hosts (launch_checks.sh): joins the
 * job, meets every rank at a barrier, then rank 0 prints "ready" and every
 * rank waits for messages that never come, until it is stopped: by
 * flitrun's signals, by the death signal flitrun set, or by the library
 * once its connection to flitrun breaks.
 *
 *     flitrun -n 3 --hosts ... launch_rank
 */
#include <flit/flit.h>
#include <stdio.h>
#include <stdlib.h>

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "launch_rank: %s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

int main(void)
{
    flit_ep_t *ep;
    check(flit_init(NULL), "flit_init");
    check(flit_ep_create(NULL, &ep), "flit_ep_create");
    check(flit_barrier(ep), "flit_barrier");
    if (flit_job_rank().idx == 0) {
        printf("ready\n");
        fflush(stdout);
    }
    for (;;) {
        flit_status st = flit_wait(ep, -1);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            check(st, "flit_wait");
    }
}
