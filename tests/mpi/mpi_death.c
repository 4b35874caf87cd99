/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank killed mid-collective (run under flitrun -k, 3 ranks): the last
 * rank enters an MPI_Ibarrier, then dies by SIGKILL; the others, under
 * MPI_ERRORS_RETURN, are in MPI_Allreduce (which needs its part) and
 * must get MPI_ERR_PROC_FAILED, never hang; a receive from the dead rank
 * and an MPI_Ibcast from it answer the same; the Ibarrier it
 * entered ends (either way: it may have sent its part before it died).
 * Each survivor prints one line per call that the test script checks.
 */
#include <signal.h>
#include <string.h>

#include "mpi_check.h"

static void say(int rank, const char *call, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    printf("rank %d: %s: class %d%s (%s)\n", rank, call, cls,
           cls == MPI_ERR_PROC_FAILED ? " MPI_ERR_PROC_FAILED" : "", text);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 3);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Barrier(MPI_COMM_WORLD)); /* all up */
    /* The last rank dies only once the others have left the barrier: the
       news of a death fails every collective still waiting on its
       communicator, and a barrier whose last message was late failed. */
    int x = rank, sum = 0;
    for (int i = 0; i < size - 1; i++)
        if (rank == size - 1)
            OK(MPI_Recv(&x, 0, MPI_INT, i, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    if (rank < size - 1)
        OK(MPI_Send(&x, 0, MPI_INT, size - 1, 1, MPI_COMM_WORLD));
    MPI_Request q;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &q));
    if (rank == size - 1)
        raise(SIGKILL);
    say(rank, "MPI_Allreduce",
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    say(rank, "MPI_Recv",
        MPI_Recv(&x, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    say(rank, "MPI_Wait(Ibarrier)", MPI_Wait(&q, MPI_STATUS_IGNORE));
    /* the error comes from the call or from its wait (MPI allows both) */
    int rc = MPI_Ibcast(&x, 1, MPI_INT, size - 1, MPI_COMM_WORLD, &q);
    say(rank, "MPI_Ibcast+MPI_Wait", rc ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE));
    return 0; /* no MPI_Finalize: its barrier has a dead member */
}
