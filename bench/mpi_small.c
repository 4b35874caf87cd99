/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_small: the two small-message figures docs/performance.md quotes for
 * flit-mpi beside Open MPI ("flit-mpi's small messages"), for any MPI.
 * Not built by CMake (MPI is optional):
 *
 *     mpicc -O2 -o mpi_small bench/mpi_small.c      (or flit-mpicc)
 *     mpirun -n 2 ./mpi_small [ROUND_TRIPS [WINDOWS]]
 *
 * Prints CSV in flit-bench's format (name,size,value,unit,baseline,ratio,
 * the last two empty; compat/bench/mpi_compare.sh reads it), from rank 0:
 *   pingpong_best  8-byte MPI_Send / MPI_Recv round trips, one way = round
 *             trip / 2, the best of 5 runs of ROUND_TRIPS (default 200,000)
 *   flood, flood_post, flood_wait
 *             windows of 256 MPI_Isend of 8 bytes against 256 MPI_Irecv,
 *             each ended by MPI_Waitall (the receiver reads every
 *             message); the sender's time a message, split into posting
 *             and waiting, over WINDOWS windows (default 20,000) after a
 *             tenth as many unmeasured; every 64 windows the receiver
 *             answers, so the sender cannot run more than that far ahead
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RUNS         5
#define WINDOW       256
#define ANSWER_EVERY 64

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double pingpong(int rank, long n)
{
    char b[8] = {0};
    double best = 1e30;
    for (int run = 0; run < RUNS; run++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (long i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        double t = (now() - t0) / (double)n / 2;
        if (t < best)
            best = t;
    }
    return best;
}

static void flood(int rank, long windows, double *post, double *wait)
{
    static char s[8], r[WINDOW][8];
    MPI_Request q[WINDOW];
    long warm = windows / 10;
    *post = *wait = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long it = 0; it < warm + windows; it++) {
        double a = now();
        for (int w = 0; w < WINDOW; w++) {
            if (rank == 0)
                MPI_Isend(s, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &q[w]);
            else
                MPI_Irecv(r[w], 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &q[w]);
        }
        double b = now();
        MPI_Waitall(WINDOW, q, MPI_STATUSES_IGNORE);
        double c = now();
        if (it >= warm) {
            *post += b - a;
            *wait += c - b;
        }
        if (it % ANSWER_EVERY == 0) {
            if (rank == 0)
                MPI_Recv(s, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(s, 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    *post /= (double)windows * WINDOW;
    *wait /= (double)windows * WINDOW;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 1 ? atol(argv[1]) : 200000;
    long windows = argc > 2 ? atol(argv[2]) : 20000;
    if (size != 2 || n < 1 || windows < 1) {
        if (rank == 0)
            fprintf(stderr, "mpi_small: needs 2 ranks, ROUND_TRIPS and WINDOWS >= 1\n");
        MPI_Finalize();
        return 2;
    }
    double pp = pingpong(rank, n), post, wait;
    flood(rank, windows, &post, &wait);
    if (rank == 0) {
        printf("name,size,value,unit,baseline,ratio\n");
        printf("pingpong_best,8,%.1f,ns,,\n", pp * 1e9);
        printf("flood,8,%.1f,ns,,\n", (post + wait) * 1e9);
        printf("flood_post,8,%.1f,ns,,\n", post * 1e9);
        printf("flood_wait,8,%.1f,ns,,\n", wait * 1e9);
    }
    MPI_Finalize();
    return 0;
}
