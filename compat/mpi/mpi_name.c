/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Names of communicators, datatypes and windows (MPI 3.1, 6.8): what a
 * program or a tool calls them, for printing. A name is at most
 * MPI_MAX_OBJECT_NAME - 1 characters (longer ones are cut); a predefined
 * object is named after itself until renamed; a duplicate does not
 * inherit its original's name.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"
#include "mpi_win.h"

/* name, cut to fit, as a new string in *slot (the old one freed). */
static int keep(char **slot, const char *name)
{
    size_t n = strnlen(name, MPI_MAX_OBJECT_NAME - 1);
    char *c = malloc(n + 1);
    if (!c)
        return MPI_ERR_NO_MEM;
    memcpy(c, name, n);
    c[n] = 0;
    free(*slot);
    *slot = c;
    return MPI_SUCCESS;
}

/* A stored name (never longer than MPI_MAX_OBJECT_NAME - 1) to the caller. */
static void give(const char *name, char *out, int *len)
{
    size_t n = strlen(name);
    memcpy(out, name, n + 1);
    *len = (int)n;
}

int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    MP_LOCKED(PMPI_Comm_set_name, (comm, comm_name));
    MP_CHECK_INIT("MPI_Comm_set_name");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_set_name");
    if (!comm_name)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_set_name");
    return mp_err(comm, keep(&comm->name, comm_name), "MPI_Comm_set_name");
}

int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    MP_LOCKED(PMPI_Comm_get_name, (comm, comm_name, resultlen));
    MP_CHECK_INIT("MPI_Comm_get_name");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_get_name");
    if (!comm_name || !resultlen)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_get_name");
    const char *name = comm->name               ? comm->name
                       : comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD"
                       : comm == MPI_COMM_SELF  ? "MPI_COMM_SELF"
                                                : "";
    give(name, comm_name, resultlen);
    return MPI_SUCCESS;
}

/* A type's name lives in the type (its exported size has room for it), so
   that a predefined type can be renamed without an allocation to free. */
int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    MP_LOCKED(PMPI_Type_set_name, (datatype, type_name));
    if (!datatype || (!datatype->predefined && datatype->refs <= 0))
        return mp_err(MPI_COMM_NULL, MPI_ERR_TYPE, "MPI_Type_set_name");
    if (!type_name)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Type_set_name");
    size_t n = strnlen(type_name, MPI_MAX_OBJECT_NAME - 1);
    memcpy(datatype->set_name, type_name, n);
    datatype->set_name[n] = 0;
    return MPI_SUCCESS;
}

int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    MP_LOCKED(PMPI_Type_get_name, (datatype, type_name, resultlen));
    if (!datatype || (!datatype->predefined && datatype->refs <= 0))
        return mp_err(MPI_COMM_NULL, MPI_ERR_TYPE, "MPI_Type_get_name");
    if (!type_name || !resultlen)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Type_get_name");
    const char *name = datatype->set_name[0] ? datatype->set_name
                       : datatype->name      ? datatype->name
                                             : "";
    give(name, type_name, resultlen);
    return MPI_SUCCESS;
}

int MPI_Win_set_name(MPI_Win win, const char *win_name)
{
    MP_LOCKED(PMPI_Win_set_name, (win, win_name));
    MP_CHECK_INIT("MPI_Win_set_name");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Win_set_name");
    if (!win_name)
        return mp_win_err(win, MPI_ERR_ARG, "MPI_Win_set_name");
    return mp_win_err(win, keep(&win->name, win_name), "MPI_Win_set_name");
}

int MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
    MP_LOCKED(PMPI_Win_get_name, (win, win_name, resultlen));
    MP_CHECK_INIT("MPI_Win_get_name");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Win_get_name");
    if (!win_name || !resultlen)
        return mp_win_err(win, MPI_ERR_ARG, "MPI_Win_get_name");
    give(win->name ? win->name : "", win_name, resultlen);
    return MPI_SUCCESS;
}

MP_PROFILED(MPI_Comm_set_name);
MP_PROFILED(MPI_Comm_get_name);
MP_PROFILED(MPI_Type_set_name);
MP_PROFILED(MPI_Type_get_name);
MP_PROFILED(MPI_Win_set_name);
MP_PROFILED(MPI_Win_get_name);
