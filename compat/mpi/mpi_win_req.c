/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Request-based one-sided operations (MPI 3.1, 11.3.5): MPI_Rput, MPI_Rget,
 * MPI_Raccumulate, MPI_Rget_accumulate. Each returns a request that is
 * already complete, which is all MPI asks of a request-based operation's
 * completion: the origin's buffer is free again (a put's bytes have left
 * it, an accumulate's are in its message) and a get's or get-accumulate's
 * data has arrived. Completion at the target is not part of it: it comes
 * with the next MPI_Win_flush or unlock, which also reports an accumulate
 * the target refused. So a put or an accumulate never waits for the
 * target here, and a target computing outside MPI does not hold the
 * origin up; a get still waits for its data.
 * As MPI says, they belong in a passive-target epoch (MPI_Win_lock or
 * lock_all on that target): outside one, MPI_ERR_RMA_SYNC.
 */
#include "mpi_internal.h"
#include "mpi_win.h"

/* Before the operation: the window, the request pointer and the epoch. */
static int check(MPI_Win w, int rank, MPI_Request *request, const char *fn)
{
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(w))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!request)
        return mp_win_err(w, MPI_ERR_REQUEST, fn);
    *request = MPI_REQUEST_NULL; /* until the operation is done */
    if (rank != MPI_PROC_NULL && rank >= 0 && rank < w->comm->size &&
        !w->peer[rank].locked)
        return mp_win_err(w, MPI_ERR_RMA_SYNC, fn);
    return MPI_SUCCESS;
}

/* After the operation (rc: its error class, already reported): the
   complete request. */
static int finish(MPI_Win w, int rc, MPI_Request *request, const char *fn)
{
    if (rc)
        return rc;
    MPI_Request r = mp_req_coll(w->comm);
    if (!r)
        return mp_win_err(w, MPI_ERR_NO_MEM, fn);
    mp_req_coll_done(r, MPI_SUCCESS);
    *request = r;
    return MPI_SUCCESS;
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count,
             MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    MP_LOCKED(PMPI_Rput, (origin_addr, origin_count, origin_datatype, target_rank,
                          target_disp, target_count, target_datatype, win, request));
    int rc = check(win, target_rank, request, "MPI_Rput");
    if (rc)
        return rc;
    rc = PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win);
    return finish(win, rc, request, "MPI_Rput");
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count,
             MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    MP_LOCKED(PMPI_Rget, (origin_addr, origin_count, origin_datatype, target_rank,
                          target_disp, target_count, target_datatype, win, request));
    int rc = check(win, target_rank, request, "MPI_Rget");
    if (rc)
        return rc;
    rc = PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win);
    return finish(win, rc, request, "MPI_Rget");
}

int MPI_Raccumulate(const void *origin_addr, int origin_count,
                    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                    int target_count, MPI_Datatype target_datatype, MPI_Op op,
                    MPI_Win win, MPI_Request *request)
{
    MP_LOCKED(PMPI_Raccumulate,
              (origin_addr, origin_count, origin_datatype, target_rank, target_disp,
               target_count, target_datatype, op, win, request));
    int rc = check(win, target_rank, request, "MPI_Raccumulate");
    if (rc)
        return rc;
    rc = PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank,
                         target_disp, target_count, target_datatype, op, win);
    return finish(win, rc, request, "MPI_Raccumulate");
}

int MPI_Rget_accumulate(const void *origin_addr, int origin_count,
                        MPI_Datatype origin_datatype, void *result_addr, int result_count,
                        MPI_Datatype result_datatype, int target_rank,
                        MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                        MPI_Request *request)
{
    MP_LOCKED(PMPI_Rget_accumulate,
              (origin_addr, origin_count, origin_datatype, result_addr, result_count,
               result_datatype, target_rank, target_disp, target_count, target_datatype,
               op, win, request));
    int rc = check(win, target_rank, request, "MPI_Rget_accumulate");
    if (rc)
        return rc;
    rc = PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                             result_count, result_datatype, target_rank, target_disp,
                             target_count, target_datatype, op, win);
    return finish(win, rc, request, "MPI_Rget_accumulate");
}

MP_PROFILED(MPI_Rput);
MP_PROFILED(MPI_Rget);
MP_PROFILED(MPI_Raccumulate);
MP_PROFILED(MPI_Rget_accumulate);
