/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Settings every rank of a job must share, set differently on one rank:
 * rank 1 sets NAME=VALUE before flit_init, the others keep the default.
 * Creation connects with no second launcher round, so ranks whose settings
 * differ could otherwise fail alone (FLIT_SHM_RING_KB: only the pairs with
 * rank 1) or, worse, all succeed with peers they do not agree with
 * (FLIT_TRANSPORT=shm beside auto on one host).
 *
 * Proves: every rank's flit_ep_create returns FLIT_ERR_INVALID_ARG (each
 * compares the addresses all of them received), and every rank can still
 * finalize. Each rank prints "ep_settings: rank R OK".
 *
 *     flitrun -n 3 mp_ep_settings NAME VALUE
 */
#include "mp.h"

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    const char *rank = getenv("FLIT_RANK");
    CHECK(rank != NULL);
    if (strcmp(rank, "1") == 0)
        CHECK(setenv(argv[1], argv[2], 1) == 0);
    CHECK_OK(flit_init(NULL));
    CHECK(flit_job_size() >= 2);
    flit_ep_t *ep = NULL;
    CHECK_ST(flit_ep_create(NULL, &ep), FLIT_ERR_INVALID_ARG);
    CHECK(ep == NULL);
    CHECK_OK(flit_finalize());
    printf("ep_settings: rank %s OK\n", rank);
    return 0;
}
