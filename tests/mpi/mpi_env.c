/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The environment: Init_thread's level, Initialized/Finalized before,
 * during and after, the version, clocks, processor name, error classes and
 * strings, error handlers, and bad arguments answering their MPI error
 * classes under MPI_ERRORS_RETURN (and the predefined objects' checks).
 */
#include <string.h>

#include "mpi_check.h"

/* The program's handlers: what they were called with, and how often. */
static MPI_Comm seen_comm;
static MPI_Win seen_win = MPI_WIN_NULL;
static int seen_code, calls;

static void on_comm_error(MPI_Comm *comm, int *code, ...)
{
    seen_comm = *comm;
    seen_code = *code;
    calls++;
}

static void on_win_error(MPI_Win *win, int *code, ...)
{
    seen_win = *win;
    seen_code = *code;
    calls++;
}

static void program_handlers(void)
{
    MPI_Errhandler mine, theirs;
    OK(MPI_Comm_create_errhandler(on_comm_error, &mine));
    OK(MPI_Win_create_errhandler(on_win_error, &theirs));
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, mine));
    CHECK(MPI_Comm_set_errhandler(dup, theirs) == MPI_ERR_ARG);        /* a window's */
    CHECK(calls == 1 && seen_comm == dup && seen_code == MPI_ERR_ARG); /* told on dup */
    int x = 0;
    CHECK(MPI_Send(&x, 1, MPI_INT, 99999, 0, dup) == MPI_ERR_RANK);
    CHECK(calls == 2 && seen_comm == dup && seen_code == MPI_ERR_RANK);
    OK(MPI_Comm_call_errhandler(dup, 4711)); /* any code of the program's */
    CHECK(calls == 3 && seen_code == 4711);
    MPI_Errhandler got;
    OK(MPI_Comm_get_errhandler(dup, &got));
    CHECK(got == mine);
    OK(MPI_Errhandler_free(&mine)); /* dup still uses it */
    CHECK(mine == MPI_ERRHANDLER_NULL);
    CHECK(MPI_Recv(&x, -1, MPI_INT, 0, 0, dup, MPI_STATUS_IGNORE) == MPI_ERR_COUNT);
    CHECK(calls == 4 && seen_code == MPI_ERR_COUNT);
    MPI_Comm child; /* a new communicator inherits its parent's */
    OK(MPI_Comm_dup(dup, &child));
    CHECK(MPI_Send(&x, 1, MPI_INT, -7, 0, child) == MPI_ERR_RANK);
    CHECK(calls == 5 && seen_comm == child);
    OK(MPI_Comm_free(&child));
    OK(MPI_Comm_free(&dup));

    MPI_Win win;
    OK(MPI_Win_create(&x, sizeof x, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, theirs));
    CHECK(MPI_Win_set_errhandler(win, got) == MPI_ERR_ARG); /* a communicator's */
    CHECK(calls == 6 && seen_win == win && seen_code == MPI_ERR_ARG);
    CHECK(MPI_Win_unlock(0, win) == MPI_ERR_RMA_SYNC); /* never locked */
    CHECK(calls == 7 && seen_win == win && seen_code == MPI_ERR_RMA_SYNC);
    OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(calls == 8 && seen_code == MPI_ERR_OTHER);
    OK(MPI_Win_free(&win));
    OK(MPI_Errhandler_free(&theirs));
    OK(MPI_Errhandler_free(&got));
    CHECK(MPI_Comm_create_errhandler(NULL, &got) == MPI_ERR_ARG);
    CHECK(calls == 8); /* world's handler is MPI_ERRORS_RETURN */
}

static void bad_arguments(void)
{
    int rank, size, x = 0, flag;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Request req;
    MPI_Status st;
    CHECK(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, -1, MPI_COMM_WORLD) == MPI_ERR_TAG);
    CHECK(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT);
    CHECK(MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    CHECK(MPI_Send(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_BUFFER);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL) == MPI_ERR_COMM);
    CHECK(MPI_Recv(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &st) == MPI_ERR_RANK);
    CHECK(MPI_Recv(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &st) == MPI_ERR_TAG);
    CHECK(MPI_Irecv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL) == MPI_ERR_REQUEST);
    CHECK(MPI_Iprobe(size, 0, MPI_COMM_WORLD, &flag, &st) == MPI_ERR_RANK);
    CHECK(MPI_Wait(NULL, &st) == MPI_ERR_REQUEST);
    CHECK(MPI_Start(NULL) == MPI_ERR_REQUEST);
    CHECK(MPI_Comm_size(MPI_COMM_NULL, &x) == MPI_ERR_COMM);
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, -3, 0, NULL) == MPI_ERR_ARG);
    MPI_Datatype t;
    CHECK(MPI_Type_contiguous(-1, MPI_INT, &t) == MPI_ERR_COUNT);
    CHECK(MPI_Type_vector(2, 1, 2, MPI_DATATYPE_NULL, &t) == MPI_ERR_TYPE);
    CHECK(MPI_Type_free(&(MPI_Datatype){MPI_INT}) == MPI_ERR_TYPE); /* predefined */
    OK(MPI_Type_contiguous(2, MPI_INT, &t));
    /* not committed: refused by communication */
    CHECK(MPI_Send(&x, 1, t, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    OK(MPI_Type_free(&t));
    CHECK(t == MPI_DATATYPE_NULL);
    MPI_Group g;
    CHECK(MPI_Group_size(MPI_GROUP_NULL, &x) == MPI_ERR_GROUP);
    OK(MPI_Comm_group(MPI_COMM_WORLD, &g));
    int bad[2] = {0, 0};
    MPI_Group ng;
    CHECK(MPI_Group_incl(g, 2, bad, &ng) == MPI_ERR_RANK); /* repeated rank */
    bad[0] = size;
    CHECK(MPI_Group_incl(g, 1, bad, &ng) == MPI_ERR_RANK);
    OK(MPI_Group_free(&g));
    CHECK(MPI_Error_class(MPI_ERR_LASTCODE + 1, &x) == MPI_ERR_ARG);
    (void)req;
}

int main(int argc, char **argv)
{
    int flag = 1, provided = -1;
    OK(MPI_Initialized(&flag));
    CHECK(flag == 0);
    OK(MPI_Finalized(&flag));
    CHECK(flag == 0);
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    /* the level asked for: this whole test runs under the library lock */
    CHECK(provided == MPI_THREAD_MULTIPLE);
    int q = -1;
    OK(MPI_Query_thread(&q));
    CHECK(q == provided);
    OK(MPI_Initialized(&flag));
    CHECK(flag == 1);
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 1);

    int v, sv;
    OK(MPI_Get_version(&v, &sv));
    CHECK(v == 3 && sv == 1 && MPI_VERSION == 3 && MPI_SUBVERSION == 1);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    OK(MPI_Get_library_version(lib, &len));
    CHECK(len > 0 && (size_t)len == strlen(lib) && strstr(lib, "flit"));

    double t0 = MPI_Wtime(), t1 = MPI_Wtime();
    CHECK(t1 >= t0 && t0 > 0);
    CHECK(MPI_Wtick() > 0 && MPI_Wtick() < 1);

    char name[MPI_MAX_PROCESSOR_NAME];
    OK(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && (size_t)len == strlen(name));

    int *ub, ok;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &ok));
    CHECK(ok && *ub == 0x7fffffff);

    /* classes and strings */
    char s[MPI_MAX_ERROR_STRING];
    for (int c = MPI_SUCCESS; c <= MPI_ERR_LASTCODE; c++) {
        int cls = -1;
        OK(MPI_Error_class(c, &cls));
        CHECK(cls == c);
        OK(MPI_Error_string(c, s, &len));
        CHECK(len > 0 && (size_t)len == strlen(s));
    }
    OK(MPI_Error_string(MPI_ERR_TRUNCATE, s, &len));
    CHECK(strstr(s, "truncated") != NULL);

    /* handlers: fatal by default, return once set, per communicator */
    MPI_Errhandler h;
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &h));
    CHECK(h == MPI_ERRORS_ARE_FATAL);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &h));
    CHECK(h == MPI_ERRORS_RETURN);
    OK(MPI_Errhandler_free(&h));
    CHECK(h == MPI_ERRHANDLER_NULL);
    OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &h));
    CHECK(h == MPI_ERRORS_ARE_FATAL);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL) == MPI_ERR_ARG);
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_get_errhandler(dup, &h)); /* inherited */
    CHECK(h == MPI_ERRORS_RETURN);
    OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL);

    bad_arguments();
    program_handlers();

    /* a second MPI_Init is an error */
    CHECK(MPI_Init(&argc, &argv) == MPI_ERR_OTHER);
    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag));
    CHECK(flag == 1);
    OK(MPI_Initialized(&flag));
    CHECK(flag == 1);
    return 0;
}
