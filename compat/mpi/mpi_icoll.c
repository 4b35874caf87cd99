/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The non-blocking collectives' calls: each keeps its arguments and runs
 * the blocking collective on a coroutine (mpi_nbc.c). MPI has the program
 * leave the buffers and count arrays alone until the request completes,
 * so keeping their addresses is enough.
 */
#include "mpi_internal.h"

static int run_barrier(const mp_coll_args *a)
{
    return PMPI_Barrier(a->comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ibarrier, (comm, request));
    mp_coll_args a = {.comm = comm};
    return mp_nbc_start(run_barrier, &a, request, "MPI_Ibarrier");
}

static int run_bcast(const mp_coll_args *a)
{
    return PMPI_Bcast(a->rbuf, a->rcount, a->rtype, a->root, a->comm);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request)
{
    MP_LOCKED(PMPI_Ibcast, (buffer, count, datatype, root, comm, request));
    mp_coll_args a = {
        .rbuf = buffer, .rcount = count, .rtype = datatype, .root = root, .comm = comm};
    return mp_nbc_start(run_bcast, &a, request, "MPI_Ibcast");
}

/* ---- reductions: sbuf, rbuf, rcount of rtype, op (root) ---- */

static mp_coll_args reduction(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    return (mp_coll_args){.sbuf = sendbuf,
                          .rbuf = recvbuf,
                          .rcount = count,
                          .rtype = datatype,
                          .op = op,
                          .root = root,
                          .comm = comm};
}

static int run_reduce(const mp_coll_args *a)
{
    return PMPI_Reduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->root, a->comm);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ireduce, (sendbuf, recvbuf, count, datatype, op, root, comm, request));
    mp_coll_args a = reduction(sendbuf, recvbuf, count, datatype, op, root, comm);
    return mp_nbc_start(run_reduce, &a, request, "MPI_Ireduce");
}

static int run_allreduce(const mp_coll_args *a)
{
    return PMPI_Allreduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Iallreduce, (sendbuf, recvbuf, count, datatype, op, comm, request));
    mp_coll_args a = reduction(sendbuf, recvbuf, count, datatype, op, 0, comm);
    return mp_nbc_start(run_allreduce, &a, request, "MPI_Iallreduce");
}

static int run_reduce_scatter_block(const mp_coll_args *a)
{
    return PMPI_Reduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op,
                                     a->comm);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request)
{
    MP_LOCKED(PMPI_Ireduce_scatter_block,
              (sendbuf, recvbuf, recvcount, datatype, op, comm, request));
    mp_coll_args a = reduction(sendbuf, recvbuf, recvcount, datatype, op, 0, comm);
    return mp_nbc_start(run_reduce_scatter_block, &a, request,
                        "MPI_Ireduce_scatter_block");
}

static int run_reduce_scatter(const mp_coll_args *a)
{
    return PMPI_Reduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->rtype, a->op, a->comm);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                        MPI_Request *request)
{
    MP_LOCKED(PMPI_Ireduce_scatter,
              (sendbuf, recvbuf, recvcounts, datatype, op, comm, request));
    mp_coll_args a = reduction(sendbuf, recvbuf, 0, datatype, op, 0, comm);
    a.rcounts = recvcounts;
    return mp_nbc_start(run_reduce_scatter, &a, request, "MPI_Ireduce_scatter");
}

static int run_scan(const mp_coll_args *a)
{
    return PMPI_Scan(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Iscan, (sendbuf, recvbuf, count, datatype, op, comm, request));
    mp_coll_args a = reduction(sendbuf, recvbuf, count, datatype, op, 0, comm);
    return mp_nbc_start(run_scan, &a, request, "MPI_Iscan");
}

static int run_exscan(const mp_coll_args *a)
{
    return PMPI_Exscan(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Iexscan, (sendbuf, recvbuf, count, datatype, op, comm, request));
    mp_coll_args a = reduction(sendbuf, recvbuf, count, datatype, op, 0, comm);
    return mp_nbc_start(run_exscan, &a, request, "MPI_Iexscan");
}

/* ---- data movement: a send side and a receive side ---- */

static mp_coll_args movement(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype,
                             int root, MPI_Comm comm)
{
    return (mp_coll_args){.sbuf = sendbuf,
                          .scount = sendcount,
                          .stype = sendtype,
                          .rbuf = recvbuf,
                          .rcount = recvcount,
                          .rtype = recvtype,
                          .root = root,
                          .comm = comm};
}

static int run_gather(const mp_coll_args *a)
{
    return PMPI_Gather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                       a->root, a->comm);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request)
{
    MP_LOCKED(PMPI_Igather, (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                             root, comm, request));
    mp_coll_args a =
        movement(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    return mp_nbc_start(run_gather, &a, request, "MPI_Igather");
}

static int run_gatherv(const mp_coll_args *a)
{
    return PMPI_Gatherv(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts, a->rdispls,
                        a->rtype, a->root, a->comm);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                 int root, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Igatherv, (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                              recvtype, root, comm, request));
    mp_coll_args a =
        movement(sendbuf, sendcount, sendtype, recvbuf, 0, recvtype, root, comm);
    a.rcounts = recvcounts, a.rdispls = displs;
    return mp_nbc_start(run_gatherv, &a, request, "MPI_Igatherv");
}

static int run_scatter(const mp_coll_args *a)
{
    return PMPI_Scatter(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                        a->root, a->comm);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    MP_LOCKED(PMPI_Iscatter, (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                              root, comm, request));
    mp_coll_args a =
        movement(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    return mp_nbc_start(run_scatter, &a, request, "MPI_Iscatter");
}

static int run_scatterv(const mp_coll_args *a)
{
    return PMPI_Scatterv(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf, a->rcount,
                         a->rtype, a->root, a->comm);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Iscatterv, (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                               recvtype, root, comm, request));
    mp_coll_args a =
        movement(sendbuf, 0, sendtype, recvbuf, recvcount, recvtype, root, comm);
    a.scounts = sendcounts, a.sdispls = displs;
    return mp_nbc_start(run_scatterv, &a, request, "MPI_Iscatterv");
}

static int run_allgather(const mp_coll_args *a)
{
    return PMPI_Allgather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                          a->comm);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request)
{
    MP_LOCKED(PMPI_Iallgather, (sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                recvtype, comm, request));
    mp_coll_args a =
        movement(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm);
    return mp_nbc_start(run_allgather, &a, request, "MPI_Iallgather");
}

static int run_allgatherv(const mp_coll_args *a)
{
    return PMPI_Allgatherv(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts, a->rdispls,
                           a->rtype, a->comm);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[],
                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Iallgatherv, (sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                 displs, recvtype, comm, request));
    mp_coll_args a =
        movement(sendbuf, sendcount, sendtype, recvbuf, 0, recvtype, 0, comm);
    a.rcounts = recvcounts, a.rdispls = displs;
    return mp_nbc_start(run_allgatherv, &a, request, "MPI_Iallgatherv");
}

static int run_alltoall(const mp_coll_args *a)
{
    return PMPI_Alltoall(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                         a->comm);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                  MPI_Request *request)
{
    MP_LOCKED(PMPI_Ialltoall, (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                               comm, request));
    mp_coll_args a =
        movement(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, 0, comm);
    return mp_nbc_start(run_alltoall, &a, request, "MPI_Ialltoall");
}

static int run_alltoallv(const mp_coll_args *a)
{
    return PMPI_Alltoallv(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf, a->rcounts,
                          a->rdispls, a->rtype, a->comm);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request)
{
    MP_LOCKED(PMPI_Ialltoallv, (sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                recvcounts, rdispls, recvtype, comm, request));
    mp_coll_args a = movement(sendbuf, 0, sendtype, recvbuf, 0, recvtype, 0, comm);
    a.scounts = sendcounts, a.sdispls = sdispls;
    a.rcounts = recvcounts, a.rdispls = rdispls;
    return mp_nbc_start(run_alltoallv, &a, request, "MPI_Ialltoallv");
}

static int run_alltoallw(const mp_coll_args *a)
{
    return PMPI_Alltoallw(a->sbuf, a->scounts, a->sdispls, a->stypes, a->rbuf, a->rcounts,
                          a->rdispls, a->rtypes, a->comm);
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                   MPI_Request *request)
{
    MP_LOCKED(PMPI_Ialltoallw, (sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                recvcounts, rdispls, recvtypes, comm, request));
    mp_coll_args a = {.sbuf = sendbuf,
                      .scounts = sendcounts,
                      .sdispls = sdispls,
                      .stypes = sendtypes,
                      .rbuf = recvbuf,
                      .rcounts = recvcounts,
                      .rdispls = rdispls,
                      .rtypes = recvtypes,
                      .comm = comm};
    return mp_nbc_start(run_alltoallw, &a, request, "MPI_Ialltoallw");
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Ibarrier);
MP_PROFILED(MPI_Ibcast);
MP_PROFILED(MPI_Ireduce);
MP_PROFILED(MPI_Iallreduce);
MP_PROFILED(MPI_Ireduce_scatter_block);
MP_PROFILED(MPI_Ireduce_scatter);
MP_PROFILED(MPI_Iscan);
MP_PROFILED(MPI_Iexscan);
MP_PROFILED(MPI_Igather);
MP_PROFILED(MPI_Igatherv);
MP_PROFILED(MPI_Iscatter);
MP_PROFILED(MPI_Iscatterv);
MP_PROFILED(MPI_Iallgather);
MP_PROFILED(MPI_Iallgatherv);
MP_PROFILED(MPI_Ialltoall);
MP_PROFILED(MPI_Ialltoallv);
MP_PROFILED(MPI_Ialltoallw);
