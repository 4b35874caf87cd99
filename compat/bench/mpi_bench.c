/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-mpi beside the tagged layer it is built on: 8-byte ping-pong
 * latency and one-way bandwidth (a window of messages, then a reply), each
 * figure measured through MPI and through flit_tagged on a second endpoint
 * of the same job, alternately (compare.h). Two ranks: flitrun -n 2
 * mpi-bench [iterations]. Not run by the tests beyond a smoke run.
 */
#include <flit/tagged.h>
#include <mpi.h>
#include <string.h>

#include "compare.h"

#define WINDOW 16
#define MAXMSG (1 << 20)

static int rank;
static flit_tagged_t *tg;
static char *buf;

static double mpi_latency(int iters, size_t bytes)
{
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return compare_now() - t0;
}

static double flit_latency(int iters, size_t bytes)
{
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            flit_tagged_send(tg, flit_rank(1), 1, buf, bytes);
            flit_tagged_recv(tg, flit_rank(1), 1, buf, bytes, NULL);
        } else {
            flit_tagged_recv(tg, flit_rank(0), 1, buf, bytes, NULL);
            flit_tagged_send(tg, flit_rank(0), 1, buf, bytes);
        }
    }
    return compare_now() - t0;
}

/* iters messages of bytes from rank 0, posted WINDOW at a time at rank 1,
   then one empty reply. */
static double mpi_stream(int iters, size_t bytes)
{
    MPI_Request rq[WINDOW];
    double t0 = compare_now();
    for (int i = 0; i < iters; i += WINDOW) {
        int n = iters - i < WINDOW ? iters - i : WINDOW;
        for (int k = 0; k < n; k++) {
            if (rank == 0)
                MPI_Isend(buf, (int)bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[k]);
            else
                MPI_Irecv(buf, (int)bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[k]);
        }
        MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
    }
    if (rank == 0)
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    return compare_now() - t0;
}

static double flit_stream(int iters, size_t bytes)
{
    flit_request_t *rq[WINDOW];
    double t0 = compare_now();
    for (int i = 0; i < iters; i += WINDOW) {
        int n = iters - i < WINDOW ? iters - i : WINDOW;
        for (int k = 0; k < n; k++) {
            if (rank == 0)
                flit_tagged_isend(tg, flit_rank(1), 2, buf, bytes, &rq[k]);
            else
                flit_tagged_irecv(tg, flit_rank(0), 2, buf, bytes, &rq[k]);
        }
        flit_tagged_waitall((size_t)n, rq, -1, NULL);
    }
    if (rank == 0)
        flit_tagged_recv(tg, flit_rank(1), 3, NULL, 0, NULL);
    else
        flit_tagged_send(tg, flit_rank(0), 3, NULL, 0);
    return compare_now() - t0;
}

int main(int argc, char **argv)
{
    int size, iters = argc > 1 ? atoi(argv[1]) : 2000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: flitrun -n 2 mpi-bench [iterations]\n");
        MPI_Finalize();
        return 2;
    }
    flit_ep_t *ep;
    flit_handler_t h;
    buf = calloc(1, MAXMSG);
    if (!buf || flit_ep_create(NULL, &ep) != FLIT_OK ||
        flit_ep_reserve_handlers(ep, 1, &h) != FLIT_OK ||
        flit_tagged_create(ep, h, &tg) != FLIT_OK)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int print = rank == 0;
    if (print)
        printf("flit-mpi vs flit_tagged, medians of %d alternated runs; ratio > 1: MPI "
               "slower\n",
               COMPARE_RUNS);
    compare("MPI ping-pong", mpi_latency, flit_latency, iters, 8, 1, print);
    size_t sizes[] = {1024, 65536, MAXMSG};
    for (int s = 0; s < 3; s++) {
        int n = sizes[s] >= 65536 ? iters / 20 + WINDOW : iters / 2 + WINDOW;
        compare("MPI message stream", mpi_stream, flit_stream, n, sizes[s], 0, print);
    }
    flit_tagged_destroy(tg);
    flit_ep_destroy(ep);
    free(buf);
    MPI_Finalize();
    return 0;
}
