/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The program's error handlers (MPI 3.1, 8.3): a function called with the
 * communicator (or window) and the error code where a call fails on it;
 * the call then returns the code, as under MPI_ERRORS_RETURN. A handler
 * made for communicators is refused on windows and the other way round.
 * The predefined handlers (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN) are
 * mpi_env.c's.
 */
#include <stdlib.h>

#include "mpi_internal.h"
#include "mpi_win.h"

static MPI_Errhandler made; /* the program's, linked by next */

static int predefined(MPI_Errhandler h)
{
    return h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_RETURN;
}

int mp_errh_for_comm(MPI_Errhandler h)
{
    return predefined(h) || (h && h->comm_fn);
}

int mp_errh_for_win(MPI_Errhandler h)
{
    return predefined(h) || (h && h->win_fn);
}

int mp_errh_call_comm(MPI_Errhandler h, MPI_Comm comm, int *code)
{
    if (!h || !h->comm_fn)
        return 0;
    h->comm_fn(&comm, code);
    return 1;
}

int mp_errh_call_win(MPI_Errhandler h, MPI_Win win, int *code)
{
    if (!h || !h->win_fn)
        return 0;
    h->win_fn(&win, code);
    return 1;
}

static int make(MPI_Comm_errhandler_function *cfn, MPI_Win_errhandler_function *wfn,
                MPI_Errhandler *out, const char *fn)
{
    MP_CHECK_INIT(fn);
    if ((!cfn && !wfn) || !out)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, fn);
    MPI_Errhandler h = calloc(1, sizeof *h);
    if (!h)
        return mp_err(MPI_COMM_NULL, MPI_ERR_NO_MEM, fn);
    h->comm_fn = cfn;
    h->win_fn = wfn;
    h->next = made;
    made = h;
    *out = h;
    return MPI_SUCCESS;
}

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn,
                               MPI_Errhandler *errhandler)
{
    MP_LOCKED(PMPI_Comm_create_errhandler, (comm_errhandler_fn, errhandler));
    return make(comm_errhandler_fn, NULL, errhandler, "MPI_Comm_create_errhandler");
}

int MPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
                              MPI_Errhandler *errhandler)
{
    MP_LOCKED(PMPI_Win_create_errhandler, (win_errhandler_fn, errhandler));
    return make(NULL, win_errhandler_fn, errhandler, "MPI_Win_create_errhandler");
}

/* MPI_SUCCESS once the handler returned (MPI 3.1, 8.3.5). */
int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    MP_LOCKED(PMPI_Comm_call_errhandler, (comm, errorcode));
    MP_CHECK_INIT("MPI_Comm_call_errhandler");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_call_errhandler");
    if (errorcode != MPI_SUCCESS)
        mp_err(comm, errorcode, "MPI_Comm_call_errhandler");
    return MPI_SUCCESS;
}

int MPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
    MP_LOCKED(PMPI_Win_call_errhandler, (win, errorcode));
    MP_CHECK_INIT("MPI_Win_call_errhandler");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Win_call_errhandler");
    if (errorcode != MPI_SUCCESS)
        mp_win_err(win, errorcode, "MPI_Win_call_errhandler");
    return MPI_SUCCESS;
}

void mp_errh_fini(void)
{
    while (made) {
        MPI_Errhandler next = made->next;
        free(made);
        made = next;
    }
}

MP_PROFILED(MPI_Comm_create_errhandler);
MP_PROFILED(MPI_Win_create_errhandler);
MP_PROFILED(MPI_Comm_call_errhandler);
MP_PROFILED(MPI_Win_call_errhandler);
