/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The layer below bench/launch_time.c under srun --mpi=pmix: what any PMIx
 * program that exchanges one value per rank pays at the least, timed the
 * same way, so that bench/launch.sh can print flit's start-up beside it in
 * the same run. Each rank connects (PMIx_Init), puts a 64-byte value as an
 * address would be, commits, and fences with the data collected: "ready".
 * A second fence is the barrier. Then, outside the timed part, every rank's
 * times travel to rank 0 through PMIx and it prints launch_time.c's line:
 *
 *     LAUNCH_BENCH_T0=$(date +%s%N) srun --mpi=pmix -n 8 launch_time_pmix
 *     -> "launch_time: 8 ranks, total 801.902 ms, flit 20.103 ms, after 8.551 ms"
 */
#include <pmix.h>
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

static void check(pmix_status_t rc, const char *what)
{
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "launch_time_pmix: %s: %s\n", what, PMIx_Error_string(rc));
        exit(1);
    }
}

static void put_bytes(const char *key, const void *bytes, size_t n)
{
    pmix_value_t v;
    memset(&v, 0, sizeof v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)bytes;
    v.data.bo.size = n;
    check(PMIx_Put(PMIX_GLOBAL, key, &v), "PMIx_Put");
    check(PMIx_Commit(), "PMIx_Commit");
}

static void fence(bool collect)
{
    pmix_info_t info;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    check(PMIx_Fence(NULL, 0, &info, 1), "PMIx_Fence");
    PMIX_INFO_DESTRUCT(&info);
}

int main(void)
{
    uint64_t t_main = now_ns();
    const char *t0s = getenv("LAUNCH_BENCH_T0");
    uint64_t t0 = t0s ? strtoull(t0s, NULL, 10) : t_main;
    pmix_proc_t me;
    check(PMIx_Init(&me, NULL, 0), "PMIx_Init");
    char addr[64];
    memset(addr, (int)me.rank, sizeof addr);
    put_bytes("launch.addr", addr, sizeof addr);
    fence(true);
    uint64_t t_ready = now_ns();
    fence(false);
    uint64_t t_bar = now_ns();

    uint64_t mine[3] = {t_ready - t_main, t_main, t_ready}, most[3] = {0, 0, 0};
    put_bytes("launch.times", mine, sizeof mine);
    fence(true);
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *v;
    check(PMIx_Get(&all, PMIX_JOB_SIZE, NULL, 0, &v), "PMIx_Get(job size)");
    uint32_t n = v->data.uint32;
    PMIX_VALUE_RELEASE(v);
    for (uint32_t r = 0; me.rank == 0 && r < n; r++) {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, me.nspace, r);
        check(PMIx_Get(&p, "launch.times", NULL, 0, &v), "PMIx_Get(times)");
        uint64_t t[3];
        if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size != sizeof t) {
            fprintf(stderr, "launch_time_pmix: rank %u sent a malformed value\n", r);
            return 1;
        }
        memcpy(t, v->data.bo.bytes, sizeof t);
        PMIX_VALUE_RELEASE(v);
        for (int i = 0; i < 3; i++)
            most[i] = t[i] > most[i] ? t[i] : most[i];
    }
    if (me.rank == 0)
        printf("launch_time: %u ranks, total %.3f ms, flit %.3f ms, after %.3f ms\n", n,
               (double)(t_bar - t0) / 1e6, (double)most[0] / 1e6,
               (double)(most[2] - most[1]) / 1e6);
    check(PMIx_Finalize(NULL, 0), "PMIx_Finalize");
    return 0;
}
