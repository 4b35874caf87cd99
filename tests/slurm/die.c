/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A job whose last rank is killed with SIGKILL once every rank is past the
 * first barrier; the others wait for a message that never comes, until
 * flit says the peer is down (or the launcher ends them). slurm_run.sh
 * checks that the step then ends, non-zero, within its time.
 *
 *     srun -n 4 --mpi=pmi2 slurm_die
 */
#include <signal.h>

#include "test.h"

int main(void)
{
    flit_ep_t *ep;
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_barrier(ep));
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    if (me == n - 1)
        raise(SIGKILL);
    /* A second barrier cannot complete: the last rank is gone. */
    flit_status st = flit_barrier(ep);
    fprintf(stderr, "slurm_die: rank %u: the barrier after the kill: %s\n", me,
            flit_status_name(st));
    return st == FLIT_OK ? 0 : 1;
}
