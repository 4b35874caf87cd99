/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A plain MPI program, as found in teaching material and mini-apps, built
 * with flit-mpicc unchanged (no flit header, no test header): Jacobi
 * iterations on an N x N plate, rows split between the ranks, halos
 * exchanged with MPI_Sendrecv, the residual summed with MPI_Allreduce, the
 * plate gathered with MPI_Gatherv. Rank 0 computes the same iterations
 * alone and compares: Jacobi's update is pointwise, so the two must agree
 * to the bit. Exits 0 when they do, 1 otherwise.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N     64
#define ITERS 50

static void boundary(double *g, int rows, int first_row)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < N; j++) {
            int gi = first_row + i;
            g[(i + 1) * N + j] = (gi == 0 || j == 0) ? 100.0 : 0.0; /* hot edges */
        }
}

static double sweep(const double *old, double *new, int rows, int first_row)
{
    double res = 0;
    for (int i = 1; i <= rows; i++) {
        int gi = first_row + i - 1;
        for (int j = 0; j < N; j++) {
            double v = old[i * N + j];
            if (gi > 0 && gi < N - 1 && j > 0 && j < N - 1)
                v = 0.25 * (old[(i - 1) * N + j] + old[(i + 1) * N + j] +
                            old[i * N + j - 1] + old[i * N + j + 1]);
            res += (v - old[i * N + j]) * (v - old[i * N + j]);
            new[i * N + j] = v;
        }
    }
    return res;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rows = N / size + (rank < N % size), first = 0;
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int r = 0, at = 0; r < size; r++) {
        counts[r] = (N / size + (r < N % size)) * N;
        displs[r] = at;
        at += counts[r];
        if (r < rank)
            first += counts[r] / N;
    }
    double *a = calloc((rows + 2) * N, sizeof(double));
    double *b = calloc((rows + 2) * N, sizeof(double));
    boundary(a, rows, first);
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double res = 0;
    for (int it = 0; it < ITERS; it++) {
        MPI_Sendrecv(&a[1 * N], N, MPI_DOUBLE, up, 0, &a[(rows + 1) * N], N, MPI_DOUBLE,
                     down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&a[rows * N], N, MPI_DOUBLE, down, 1, &a[0], N, MPI_DOUBLE, up, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double local = sweep(a, b, rows, first);
        MPI_Allreduce(&local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double *t = a;
        a = b;
        b = t;
    }
    double *all = rank == 0 ? malloc(N * N * sizeof(double)) : NULL;
    MPI_Gatherv(&a[N], rows * N, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    int ok = 1;
    if (rank == 0) {
        double *s = calloc((N + 2) * N, sizeof(double)),
               *u = calloc((N + 2) * N, sizeof(double));
        boundary(s, N, 0);
        double sres = 0;
        for (int it = 0; it < ITERS; it++) {
            sres = sweep(s, u, N, 0);
            double *t = s;
            s = u;
            u = t;
        }
        ok = memcmp(all, &s[N], N * N * sizeof(double)) == 0;
        printf("jacobi %dx%d, %d ranks, %d iterations: residual %.6g (alone %.6g), plate "
               "%s\n",
               N, N, size, ITERS, res, sres, ok ? "identical" : "DIFFERS");
        ok = ok && res > 0.999999 * sres && res < 1.000001 * sres;
        free(s);
        free(u);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(all);
    free(a);
    free(b);
    free(counts);
    free(displs);
    MPI_Finalize();
    return ok ? 0 : 1;
}
