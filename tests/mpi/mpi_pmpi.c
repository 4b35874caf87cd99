/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The profiling interface as a tool uses it: this program defines its own
 * MPI_Send, MPI_Allreduce and MPI_Comm_rank, which count their calls and
 * call flit's through PMPI_; the program's calls reach the wrappers (the
 * library's MPI_ names are weak), and the wrappers reach the library. The
 * counts and the results are checked exactly. And the library's own calls
 * never reach a wrapper: calls built on others (a non-blocking collective
 * on its blocking twin, MPI_Bsend on MPI_Send, MPI_Gather on MPI_Gatherv,
 * a grid on MPI_Comm_split, MPI_Type_vector on hvector, MPI_Info_dup on
 * MPI_Info_create ...) go to the PMPI_ names, as a tool counting calls or
 * timing them needs.
 */
#include <stdlib.h>

#include "mpi_check.h"

static int sends, allreduces, ranks, inner;

/* Wrapped only to be counted: the program calls none of them itself. */
int MPI_Barrier(MPI_Comm comm)
{
    inner++;
    return PMPI_Barrier(comm);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                int root, MPI_Comm comm)
{
    inner++;
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                        recvtype, root, comm);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    inner++;
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                         recvtype, source, recvtag, comm, status);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    inner++;
    return PMPI_Comm_split(comm, color, key, newcomm);
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                            MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    inner++;
    return PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype);
}

int MPI_Info_create(MPI_Info *info)
{
    inner++;
    return PMPI_Info_create(info);
}

/* Calls the library builds on the wrapped ones: none may reach a wrapper. */
static void library_calls(int rank, int size)
{
    int before_sends = sends, before_all = allreduces, x = rank, y = 0;
    MPI_Request r;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(y == size * (size - 1) / 2);
    int *all = malloc((size_t)size * sizeof *all);
    CHECK(all);
    OK(MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int i = 0; i < size; i++)
            CHECK(all[i] == i);
    free(all);
    int v = rank; /* a ring with Sendrecv_replace */
    OK(MPI_Sendrecv_replace(&v, 1, MPI_INT, (rank + 1) % size, 2,
                            (rank + size - 1) % size, 2, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
    CHECK(v == (rank + size - 1) % size);
    int bufsize = 2 * (int)sizeof(int) + MPI_BSEND_OVERHEAD, bsize;
    char *bbuf = malloc((size_t)bufsize);
    CHECK(bbuf);
    OK(MPI_Buffer_attach(bbuf, bufsize));
    OK(MPI_Bsend(&rank, 1, MPI_INT, (rank + 1) % size, 3, MPI_COMM_WORLD));
    OK(MPI_Recv(&v, 1, MPI_INT, (rank + size - 1) % size, 3, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE));
    CHECK(v == (rank + size - 1) % size);
    OK(MPI_Buffer_detach(&bbuf, &bsize));
    free(bbuf);
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm ring;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    OK(MPI_Comm_free(&ring));
    MPI_Datatype vec;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_free(&vec));
    MPI_Info a, b;
    OK(PMPI_Info_create(&a));
    OK(MPI_Info_set(a, "k", "v"));
    OK(MPI_Info_dup(a, &b));
    OK(MPI_Info_free(&a));
    OK(MPI_Info_free(&b));
    if (inner != 0 || sends != before_sends || allreduces != before_all) {
        fprintf(stderr, "rank %d: the library's own calls reached %d wrappers\n", rank,
                inner + sends - before_sends + allreduces - before_all);
        CHECK(0);
    }
}

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
    library_calls(rank, size);
    OK(MPI_Finalize());
    return 0;
}
