/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbourhood collectives (MPI 3.1, 7.6) on a communicator with a
 * topology (mpi_topo.c), blocking and non-blocking. Every form becomes
 * one exchange: a block to each destination, a block from each source,
 * all receives posted before the first send (mp_coll_exchange).
 *
 * Which block arrives where. On a Cartesian grid the block a rank sends
 * towards +d arrives in its neighbour's block "from -d", and a rank may be
 * its own neighbour, or the same rank both ways (a periodic dimension of
 * 1 or 2). Each message says the way it went (tag 1 towards +, 0 towards
 * -), and a rank's messages to one neighbour one way go in the order of
 * the dimensions, as its neighbour's receives for them are posted: so each
 * lands in its block. A graph's edges carry no way; its messages of one
 * edge pair up in the order of the lists, as MPI asks.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* One side of an exchange: per neighbour a count, a byte displacement and
   a type. */
typedef struct nside {
    int n;
    const int *counts;
    MPI_Aint *displs;
    MPI_Datatype *types;
} nside;

static int check(MPI_Comm comm, const char *fn)
{
    MP_CHECK_INIT(fn);
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
    if (!comm->topo)
        return mp_err(comm, MPI_ERR_TOPOLOGY, fn);
    mp_coll_begin(comm);
    return MPI_SUCCESS;
}

/* The tag of the message to out-neighbour k, and of the one from
   in-neighbour k (the header says why). */
static int out_tag(const struct mp_topo *t, int k)
{
    return t->kind == MP_TOPO_CART ? (k & 1) : 0;
}

static int in_tag(const struct mp_topo *t, int k)
{
    return t->kind == MP_TOPO_CART ? !(k & 1) : 0;
}

static int side_check(const nside *s, const void *buf)
{
    for (int i = 0; i < s->n; i++) {
        int rc = mp_check_buf(buf, s->counts[i], s->types[i]);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* The exchange: sbuf's blocks to the destinations, the sources' into
   rbuf's. Blocks that are not one run travel packed. */
static int exchange(MPI_Comm comm, const void *sbuf, const nside *snd, void *rbuf,
                    const nside *rcv)
{
    const struct mp_topo *t = comm->topo;
    int rc = side_check(snd, sbuf);
    if (!rc)
        rc = side_check(rcv, rbuf);
    if (rc)
        return rc;
    mp_part *in = calloc((size_t)rcv->n + 1, sizeof *in);
    mp_part *out = calloc((size_t)snd->n + 1, sizeof *out);
    void **packed = calloc((size_t)(snd->n + rcv->n) + 1, sizeof *packed);
    rc = in && out && packed ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    for (int k = 0; !rc && k < snd->n; k++) {
        MPI_Datatype ty = snd->types[k];
        int c = snd->counts[k];
        const char *at = (const char *)sbuf + snd->displs[k];
        out[k] = (mp_part){t->out[k], out_tag(t, k), NULL, mp_type_bytes(ty, c)};
        if (mp_type_contig(ty, c)) {
            out[k].buf = (void *)(at + ty->blocks[0].disp);
        } else if ((packed[k] = malloc(out[k].bytes + 1))) {
            mp_pack(at, c, ty, packed[k]);
            out[k].buf = packed[k];
        } else {
            rc = MPI_ERR_NO_MEM;
        }
    }
    for (int k = 0; !rc && k < rcv->n; k++) {
        MPI_Datatype ty = rcv->types[k];
        int c = rcv->counts[k];
        char *at = (char *)rbuf + rcv->displs[k];
        in[k] = (mp_part){t->in[k], in_tag(t, k), NULL, mp_type_bytes(ty, c)};
        if (mp_type_contig(ty, c))
            in[k].buf = at + ty->blocks[0].disp;
        else if (!(in[k].buf = packed[snd->n + k] = malloc(in[k].bytes + 1)))
            rc = MPI_ERR_NO_MEM;
    }
    if (!rc)
        rc = mp_coll_exchange(comm, rcv->n, in, snd->n, out);
    for (int k = 0; !rc && k < rcv->n; k++)
        if (packed[snd->n + k] && in[k].peer != MPI_PROC_NULL)
            mp_unpack(in[k].buf, in[k].bytes, (char *)rbuf + rcv->displs[k],
                      rcv->counts[k], rcv->types[k]);
    for (int k = 0; packed && k < snd->n + rcv->n; k++)
        free(packed[k]);
    free(packed);
    free(in);
    free(out);
    return rc;
}

/* A side of n neighbours: counts (or count for all), displacements in
   elements of t (displs), or in bytes (bdispls, with types), or regular
   (neither: block i at i * count). */
static int side_make(nside *s, int n, const int *counts, int count, const int *displs,
                     const MPI_Aint *bdispls, MPI_Datatype t, const MPI_Datatype *types,
                     int **own_counts)
{
    s->n = n;
    s->displs = malloc(((size_t)n + 1) * sizeof *s->displs);
    s->types = malloc(((size_t)n + 1) * sizeof *s->types);
    *own_counts = counts ? NULL : malloc(((size_t)n + 1) * sizeof(int));
    if (!s->displs || !s->types || (!counts && !*own_counts))
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++) {
        s->types[i] = types ? types[i] : t;
        if (!mp_type_ok(s->types[i]))
            return MPI_ERR_TYPE;
    }
    if (!counts) {
        for (int i = 0; i < n; i++)
            (*own_counts)[i] = count;
        counts = *own_counts;
    }
    s->counts = counts;
    for (int i = 0; i < n; i++)
        s->displs[i] = bdispls  ? bdispls[i]
                       : displs ? (MPI_Aint)displs[i] * t->extent
                                : (MPI_Aint)i * count * t->extent;
    return MPI_SUCCESS;
}

static void side_free(nside *s, int *own_counts)
{
    free(s->displs);
    free(s->types);
    free(own_counts);
}

/* The arguments of every form, and what each leaves out. */
typedef struct nargs {
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    const int *scounts, *rcounts, *sdispls, *rdispls;
    const MPI_Aint *sbdispls, *rbdispls;
    MPI_Datatype stype, rtype;
    const MPI_Datatype *stypes, *rtypes;
    int gather; /* allgather: the one send block to every destination */
} nargs;

static int neighbor(MPI_Comm comm, const nargs *a, const char *fn)
{
    int rc = check(comm, fn);
    if (rc)
        return rc;
    const struct mp_topo *t = comm->topo;
    int need_arrays = (a->scounts && (!a->sdispls && !a->sbdispls)) ||
                      (a->rcounts && (!a->rdispls && !a->rbdispls));
    if (!a->sbuf || a->sbuf == MPI_IN_PLACE || a->rbuf == MPI_IN_PLACE || need_arrays ||
        (a->stypes && !a->scounts) || (a->rtypes && !a->rcounts))
        return mp_err(comm, a->sbuf == MPI_IN_PLACE ? MPI_ERR_BUFFER : MPI_ERR_ARG, fn);
    nside snd = {0}, rcv = {0};
    int *sown = NULL, *rown = NULL;
    rc = side_make(&snd, t->outdeg, a->scounts, a->scount, a->sdispls, a->sbdispls,
                   a->stype, a->stypes, &sown);
    if (!rc && a->gather)
        for (int k = 0; k < snd.n; k++)
            snd.displs[k] = 0; /* the same block to each */
    if (!rc)
        rc = side_make(&rcv, t->indeg, a->rcounts, a->rcount, a->rdispls, a->rbdispls,
                       a->rtype, a->rtypes, &rown);
    if (!rc)
        rc = exchange(comm, a->sbuf, &snd, a->rbuf, &rcv);
    side_free(&snd, sown);
    side_free(&rcv, rown);
    return mp_err(comm, rc, fn);
}

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm)
{
    MP_LOCKED(PMPI_Neighbor_allgather,
              (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
    nargs a = {.sbuf = sendbuf,
               .scount = sendcount,
               .stype = sendtype,
               .rbuf = recvbuf,
               .rcount = recvcount,
               .rtype = recvtype,
               .gather = 1};
    return neighbor(comm, &a, "MPI_Neighbor_allgather");
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Neighbor_allgatherv, (sendbuf, sendcount, sendtype, recvbuf,
                                         recvcounts, displs, recvtype, comm));
    nargs a = {.sbuf = sendbuf,
               .scount = sendcount,
               .stype = sendtype,
               .rbuf = recvbuf,
               .rcounts = recvcounts,
               .rdispls = displs,
               .rtype = recvtype,
               .gather = 1};
    return neighbor(comm, &a, "MPI_Neighbor_allgatherv");
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          MPI_Comm comm)
{
    MP_LOCKED(PMPI_Neighbor_alltoall,
              (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
    nargs a = {.sbuf = sendbuf,
               .scount = sendcount,
               .stype = sendtype,
               .rbuf = recvbuf,
               .rcount = recvcount,
               .rtype = recvtype};
    return neighbor(comm, &a, "MPI_Neighbor_alltoall");
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                           const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int rdispls[],
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Neighbor_alltoallv, (sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                        recvcounts, rdispls, recvtype, comm));
    nargs a = {.sbuf = sendbuf,
               .scounts = sendcounts,
               .sdispls = sdispls,
               .stype = sendtype,
               .rbuf = recvbuf,
               .rcounts = recvcounts,
               .rdispls = rdispls,
               .rtype = recvtype};
    return neighbor(comm, &a, "MPI_Neighbor_alltoallv");
}

int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                           const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                           void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                           MPI_Comm comm)
{
    MP_LOCKED(PMPI_Neighbor_alltoallw, (sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                        recvcounts, rdispls, recvtypes, comm));
    nargs a = {.sbuf = sendbuf,
               .scounts = sendcounts,
               .sbdispls = sdispls,
               .stypes = sendtypes,
               .rbuf = recvbuf,
               .rcounts = recvcounts,
               .rbdispls = rdispls,
               .rtypes = recvtypes};
    return neighbor(comm, &a, "MPI_Neighbor_alltoallw");
}

/* ---- non-blocking: the blocking form on a coroutine (mpi_nbc.c); MPI has
   the program leave buffers and arrays alone until the request completes,
   so their addresses are kept ---- */

static int run_allgather(const mp_coll_args *a)
{
    return PMPI_Neighbor_allgather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount,
                                   a->rtype, a->comm);
}

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ineighbor_allgather, (sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, comm, request));
    mp_coll_args a = {.sbuf = sendbuf,
                      .scount = sendcount,
                      .stype = sendtype,
                      .rbuf = recvbuf,
                      .rcount = recvcount,
                      .rtype = recvtype,
                      .comm = comm};
    return mp_nbc_start(run_allgather, &a, request, "MPI_Ineighbor_allgather");
}

static int run_allgatherv(const mp_coll_args *a)
{
    return PMPI_Neighbor_allgatherv(a->sbuf, a->scount, a->stype, a->rbuf, a->rcounts,
                                    a->rdispls, a->rtype, a->comm);
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ineighbor_allgatherv, (sendbuf, sendcount, sendtype, recvbuf,
                                          recvcounts, displs, recvtype, comm, request));
    mp_coll_args a = {.sbuf = sendbuf,
                      .scount = sendcount,
                      .stype = sendtype,
                      .rbuf = recvbuf,
                      .rcounts = recvcounts,
                      .rdispls = displs,
                      .rtype = recvtype,
                      .comm = comm};
    return mp_nbc_start(run_allgatherv, &a, request, "MPI_Ineighbor_allgatherv");
}

static int run_alltoall(const mp_coll_args *a)
{
    return PMPI_Neighbor_alltoall(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount,
                                  a->rtype, a->comm);
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ineighbor_alltoall, (sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                        recvtype, comm, request));
    mp_coll_args a = {.sbuf = sendbuf,
                      .scount = sendcount,
                      .stype = sendtype,
                      .rbuf = recvbuf,
                      .rcount = recvcount,
                      .rtype = recvtype,
                      .comm = comm};
    return mp_nbc_start(run_alltoall, &a, request, "MPI_Ineighbor_alltoall");
}

static int run_alltoallv(const mp_coll_args *a)
{
    return PMPI_Neighbor_alltoallv(a->sbuf, a->scounts, a->sdispls, a->stype, a->rbuf,
                                   a->rcounts, a->rdispls, a->rtype, a->comm);
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                            const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int rdispls[],
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ineighbor_alltoallv, (sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                         recvcounts, rdispls, recvtype, comm, request));
    mp_coll_args a = {.sbuf = sendbuf,
                      .scounts = sendcounts,
                      .sdispls = sdispls,
                      .stype = sendtype,
                      .rbuf = recvbuf,
                      .rcounts = recvcounts,
                      .rdispls = rdispls,
                      .rtype = recvtype,
                      .comm = comm};
    return mp_nbc_start(run_alltoallv, &a, request, "MPI_Ineighbor_alltoallv");
}

static int run_alltoallw(const mp_coll_args *a)
{
    return PMPI_Neighbor_alltoallw(a->sbuf, a->scounts, a->sbdispls, a->stypes, a->rbuf,
                                   a->rcounts, a->rbdispls, a->rtypes, a->comm);
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                            const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                            void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                            MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ineighbor_alltoallw, (sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, comm, request));
    mp_coll_args a = {.sbuf = sendbuf,
                      .scounts = sendcounts,
                      .sbdispls = sdispls,
                      .stypes = sendtypes,
                      .rbuf = recvbuf,
                      .rcounts = recvcounts,
                      .rbdispls = rdispls,
                      .rtypes = recvtypes,
                      .comm = comm};
    return mp_nbc_start(run_alltoallw, &a, request, "MPI_Ineighbor_alltoallw");
}

MP_PROFILED(MPI_Neighbor_allgather);
MP_PROFILED(MPI_Neighbor_allgatherv);
MP_PROFILED(MPI_Neighbor_alltoall);
MP_PROFILED(MPI_Neighbor_alltoallv);
MP_PROFILED(MPI_Neighbor_alltoallw);
MP_PROFILED(MPI_Ineighbor_allgather);
MP_PROFILED(MPI_Ineighbor_allgatherv);
MP_PROFILED(MPI_Ineighbor_alltoall);
MP_PROFILED(MPI_Ineighbor_alltoallv);
MP_PROFILED(MPI_Ineighbor_alltoallw);
