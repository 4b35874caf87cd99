/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The profiling interface as a tool uses it: this program defines its own
 * MPI_Send, MPI_Allreduce and MPI_Comm_rank, which count their calls and
 * call flit's through PMPI_; the program's calls reach the wrappers (the
 * library's MPI_ names are weak), and the wrappers reach the library. The
 * counts and the results are checked exactly.
 */
#include "mpi_check.h"

static int sends, allreduces, ranks;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm)
{
    sends++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    allreduces++;
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    ranks++;
    return PMPI_Comm_rank(comm, rank);
}

int main(int argc, char **argv)
{
    int rank, size, x = 0;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(PMPI_Comm_size(MPI_COMM_WORLD, &size));
    for (int i = 0; i < 5; i++) { /* a ring, 5 times round */
        if (rank == 0)
            OK(MPI_Send(&i, 1, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD));
        OK(MPI_Recv(&x, 1, MPI_INT, (rank - 1 + size) % size, 1, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE));
        CHECK(x == i);
        if (rank != 0)
            OK(MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD));
    }
    int sum = 0;
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    OK(PMPI_Allreduce(&rank, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)); /* not counted */
    CHECK(sum == size * (size - 1) / 2 && x == sum);
    OK(MPI_Pcontrol(1));
    OK(PMPI_Pcontrol(0));
    CHECK(sends == 5 && allreduces == 1 && ranks == 1);
    OK(MPI_Finalize());
    return 0;
}
