/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peer beside bench/launch_time.c: the same start of a job timed for an
 * MPI program (MPI_Init, then MPI_Barrier), so that bench/launch.sh prints
 * Open MPI's start-up under the same srun in the same run as flit's. Built
 * by the script with mpicc where Open MPI is installed; prints the line
 * launch_time.c prints, "ready" standing for the end of MPI_Init:
 *
 *     LAUNCH_BENCH_T0=$(date +%s%N) srun --mpi=pmix -n 8 launch_time_mpi
 *     -> "launch_time: 8 ranks, total 840.113 ms, flit 25.201 ms, after 11.020 ms"
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    uint64_t t_main = now_ns();
    const char *t0s = getenv("LAUNCH_BENCH_T0");
    uint64_t t0 = t0s ? strtoull(t0s, NULL, 10) : t_main;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    uint64_t t_ready = now_ns();
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t_bar = now_ns();
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* The largest of each rank's own share, start of main and end of init. */
    unsigned long long mine[3] = {t_ready - t_main, t_main, t_ready}, most[3];
    MPI_Reduce(mine, most, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("launch_time: %d ranks, total %.3f ms, flit %.3f ms, after %.3f ms\n", n,
               (double)(t_bar - t0) / 1e6, (double)most[0] / 1e6,
               (double)(most[2] - most[1]) / 1e6);
    MPI_Finalize();
    return 0;
}
