/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buffered mode: MPI_Buffer_attach/detach, MPI_Bsend, MPI_Ibsend. Sends
 * are eager here (the tagged layer holds a message from the moment it is
 * sent), so a buffered message leaves the attached buffer's account as
 * soon as it is accounted for: the buffer is never written, but MPI's rule
 * is kept, that a message (with MPI_BSEND_OVERHEAD) larger than the
 * attached buffer, or any with none attached, is refused with
 * MPI_ERR_BUFFER, and MPI_Buffer_detach never has to wait.
 */
#include "mpi_internal.h"

static void *attached;
static int attached_size = -1; /* -1: none attached */

int MPI_Buffer_attach(void *buffer, int size)
{
    MP_LOCKED(PMPI_Buffer_attach, (buffer, size));
    MP_CHECK_INIT("MPI_Buffer_attach");
    if (attached_size >= 0 || (!buffer && size > 0))
        return mp_err(MPI_COMM_NULL, MPI_ERR_BUFFER, "MPI_Buffer_attach");
    if (size < 0)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Buffer_attach");
    attached = buffer;
    attached_size = size;
    return MPI_SUCCESS;
}

/* buffer_addr is a void ** in disguise, as MPI declares it. With none
   attached: NULL and 0. */
int MPI_Buffer_detach(void *buffer_addr, int *size)
{
    MP_LOCKED(PMPI_Buffer_detach, (buffer_addr, size));
    MP_CHECK_INIT("MPI_Buffer_detach");
    if (!buffer_addr || !size)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Buffer_detach");
    *(void **)buffer_addr = attached;
    *size = attached_size < 0 ? 0 : attached_size;
    attached = NULL;
    attached_size = -1;
    return MPI_SUCCESS;
}

/* A buffered send's checks: the standard send's, then the room. */
static int buffered(const void *buf, int count, MPI_Datatype t, int dest, int tag,
                    MPI_Comm comm, const char *fn)
{
    MP_CHECK_INIT(fn);
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
    int rc = mp_check_send(buf, count, t, dest, tag, comm);
    if (!rc && dest != MPI_PROC_NULL &&
        (attached_size < MPI_BSEND_OVERHEAD ||
         mp_type_bytes(t, count) > (size_t)(attached_size - MPI_BSEND_OVERHEAD)))
        rc = MPI_ERR_BUFFER;
    return rc ? mp_err(comm, rc, fn) : MPI_SUCCESS;
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm)
{
    MP_LOCKED(PMPI_Bsend, (buf, count, datatype, dest, tag, comm));
    int rc = buffered(buf, count, datatype, dest, tag, comm, "MPI_Bsend");
    return rc ? rc : PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ibsend, (buf, count, datatype, dest, tag, comm, request));
    int rc = buffered(buf, count, datatype, dest, tag, comm, "MPI_Ibsend");
    return rc ? rc : PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Buffer_attach);
MP_PROFILED(MPI_Buffer_detach);
MP_PROFILED(MPI_Bsend);
MP_PROFILED(MPI_Ibsend);
