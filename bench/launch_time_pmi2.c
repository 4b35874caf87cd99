/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The layer below bench/launch_time.c under srun --mpi=pmi2: what any PMI-2
 * program that exchanges one value per rank pays at the least, through
 * Slurm's own PMI-2 client library (libpmi2, not flit's), timed the same
 * way, so that bench/launch.sh can print flit's start-up beside it in the
 * same run. Each rank connects (PMI2_Init), puts a 64-byte value as an
 * address would be (hex, as PMI-2 values are text), and fences: "ready". A
 * second fence is the barrier. Then, outside the timed part, every rank's
 * times travel to rank 0 through the KVS and it prints launch_time.c's line:
 *
 *     LAUNCH_BENCH_T0=$(date +%s%N) srun --mpi=pmi2 -n 8 launch_time_pmi2
 *     -> "launch_time: 8 ranks, total 301.902 ms, flit 20.103 ms, after 8.551 ms"
 */
#include <slurm/pmi2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void check(int rc, const char *what)
{
    if (rc != PMI2_SUCCESS) {
        fprintf(stderr, "launch_time_pmi2: %s failed (%d)\n", what, rc);
        exit(1);
    }
}

static void put_hex(const char *key, const void *bytes, size_t n)
{
    char hex[2 * 64 + 1];
    const uint8_t *b = bytes;
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    check(PMI2_KVS_Put(key, hex), "PMI2_KVS_Put");
}

int main(void)
{
    uint64_t t_main = now_ns();
    const char *t0s = getenv("LAUNCH_BENCH_T0");
    uint64_t t0 = t0s ? strtoull(t0s, NULL, 10) : t_main;
    int spawned, size, rank, appnum;
    check(PMI2_Init(&spawned, &size, &rank, &appnum), "PMI2_Init");
    char key[32], addr[64];
    memset(addr, rank, sizeof addr);
    snprintf(key, sizeof key, "launch.addr.%d", rank);
    put_hex(key, addr, sizeof addr);
    check(PMI2_KVS_Fence(), "PMI2_KVS_Fence");
    uint64_t t_ready = now_ns();
    check(PMI2_KVS_Fence(), "PMI2_KVS_Fence");
    uint64_t t_bar = now_ns();

    uint64_t mine[3] = {t_ready - t_main, t_main, t_ready}, most[3] = {0, 0, 0};
    snprintf(key, sizeof key, "launch.times.%d", rank);
    put_hex(key, mine, sizeof mine);
    check(PMI2_KVS_Fence(), "PMI2_KVS_Fence");
    char jobid[256];
    check(PMI2_Job_GetId(jobid, sizeof jobid), "PMI2_Job_GetId");
    for (int r = 0; rank == 0 && r < size; r++) {
        char val[2 * sizeof mine + 1];
        int len = 0;
        snprintf(key, sizeof key, "launch.times.%d", r);
        check(PMI2_KVS_Get(jobid, r, key, val, sizeof val, &len), "PMI2_KVS_Get");
        uint64_t t[3];
        uint8_t *b = (uint8_t *)t;
        unsigned v;
        if (len != 2 * (int)sizeof t) {
            fprintf(stderr, "launch_time_pmi2: rank %d sent a malformed value\n", r);
            return 1;
        }
        for (size_t i = 0; i < sizeof t; i++) {
            if (sscanf(val + 2 * i, "%2x", &v) != 1)
                return 1;
            b[i] = (uint8_t)v;
        }
        for (int i = 0; i < 3; i++)
            most[i] = t[i] > most[i] ? t[i] : most[i];
    }
    if (rank == 0)
        printf("launch_time: %d ranks, total %.3f ms, flit %.3f ms, after %.3f ms\n",
               size, (double)(t_bar - t0) / 1e6, (double)most[0] / 1e6,
               (double)(most[2] - most[1]) / 1e6);
    check(PMI2_Finalize(), "PMI2_Finalize");
    return 0;
}
