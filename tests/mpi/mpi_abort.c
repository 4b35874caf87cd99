/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ending a job from one rank while rank 0 waits in MPI_Recv for a message
 * that never comes: `abort` calls MPI_Abort(MPI_COMM_WORLD, 3); `fatal`
 * makes an erroneous call (a send to rank `size`) under the default
 * MPI_ERRORS_ARE_FATAL. Run by expect_status.sh, which wants flitrun's
 * status to be 3, or MPI_ERR_RANK (6), and the job to end at once.
 */
#include <string.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    int rank, size, x = 0;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(argc == 2 && size >= 2);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return 1; /* nobody sends: never here */
    }
    if (rank == size - 1) {
        if (strcmp(argv[1], "abort") == 0)
            MPI_Abort(MPI_COMM_WORLD, 3);
        else
            MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD); /* fatal: no return */
        return 1;
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the others wait too */
    return 1;
}
