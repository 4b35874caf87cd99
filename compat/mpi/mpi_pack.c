/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Pack, MPI_Unpack, MPI_Pack_size. The packed form is the library's
 * own (mpi_type.c): a type's bytes in type-map order, no header, the same
 * on every rank (flit jobs are homogeneous). So a packed buffer sent as
 * MPI_PACKED is received as the original type and the other way round.
 */
#include <limits.h>

#include "mpi_internal.h"

/* The checks the three share: an MPI error class or 0. */
static int check(MPI_Comm comm, int count, MPI_Datatype t)
{
    if (!mp_comm_ok(comm))
        return MPI_ERR_COMM;
    if (count < 0)
        return MPI_ERR_COUNT;
    if (!mp_type_ok(t))
        return MPI_ERR_TYPE;
    if (mp_type_bytes(t, count) > INT_MAX)
        return MPI_ERR_COUNT; /* its size would not fit the int MPI gives it */
    return MPI_SUCCESS;
}

/* The position and size of a packed buffer; bytes more must fit. */
static int check_room(const void *packed, int size, const int *position, size_t bytes)
{
    if (!position || size < 0 || *position < 0 || (!packed && size > 0))
        return MPI_ERR_ARG;
    if (*position > size || bytes > (size_t)(size - *position))
        return MPI_ERR_TRUNCATE;
    return MPI_SUCCESS;
}

static MPI_Comm err_comm(MPI_Comm comm)
{
    return mp_comm_ok(comm) ? comm : MPI_COMM_NULL;
}

/* Packs (pack) or unpacks count elements of t at data into or out of the
   packed buffer of size bytes at *position, which moves past them. */
static int move(int pack, void *packed, int size, int *position, void *data, int count,
                MPI_Datatype t, MPI_Comm comm, const char *fn)
{
    MP_CHECK_INIT(fn);
    int rc = check(comm, count, t);
    if (!rc)
        rc = mp_check_buf(data, count, t);
    size_t bytes = rc ? 0 : mp_type_bytes(t, count);
    if (!rc)
        rc = check_room(packed, size, position, bytes);
    if (rc)
        return mp_err(err_comm(comm), rc, fn);
    char *at = (char *)packed + *position;
    if (bytes && pack)
        mp_pack(data, count, t, at);
    else if (bytes)
        mp_unpack(at, bytes, data, count, t);
    *position += (int)bytes;
    return MPI_SUCCESS;
}

int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
             int outsize, int *position, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Pack, (inbuf, incount, datatype, outbuf, outsize, position, comm));
    return move(1, outbuf, outsize, position, (void *)inbuf, incount, datatype, comm,
                "MPI_Pack");
}

int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
               MPI_Datatype datatype, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Unpack, (inbuf, insize, position, outbuf, outcount, datatype, comm));
    return move(0, (void *)inbuf, insize, position, outbuf, outcount, datatype, comm,
                "MPI_Unpack");
}

int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    MP_LOCKED(PMPI_Pack_size, (incount, datatype, comm, size));
    MP_CHECK_INIT("MPI_Pack_size");
    int rc = check(comm, incount, datatype);
    if (!rc && !size)
        rc = MPI_ERR_ARG;
    if (rc)
        return mp_err(err_comm(comm), rc, "MPI_Pack_size");
    *size = (int)mp_type_bytes(datatype, incount);
    return MPI_SUCCESS;
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Pack);
MP_PROFILED(MPI_Unpack);
MP_PROFILED(MPI_Pack_size);
