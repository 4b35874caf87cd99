/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One start of a job, timed for bench/launch.sh (make bench-launch): from
 * the moment the launcher was called (LAUNCH_BENCH_T0, ns of CLOCK_REALTIME,
 * set by the script just before) to the end of the first barrier, and
 * flit's share of it, two ways (each rank sends its times to rank 0 as an
 * active message):
 *   flit   flit_init + flit_ep_create of the slowest rank: includes the
 *          time that rank waited in the launcher's collectives for ranks
 *          the launcher had not started yet
 *   after  from the moment the last rank entered main to the end of the
 *          last flit_ep_create: what flit adds once every process runs
 *          (CLOCK_REALTIME of every rank: one host, or synchronized clocks)
 *
 *     LAUNCH_BENCH_T0=$(date +%s%N) srun --mpi=pmix -n 8 launch_time
 *     -> "launch_time: 8 ranks, total 812.402 ms, flit 21.733 ms, after 9.120 ms"
 */
#include <flit/flit.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { H_SHARE = 1 };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "launch_time: %s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

/* The largest of each rank's share, main's start and creation's end. */
static uint64_t most[3];
static uint32_t shares;

static void on_share(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)nargs, (void)user;
    for (int i = 0; i < 3; i++) {
        uint64_t v = (uint64_t)args[2 * i] << 32 | args[2 * i + 1];
        if (v > most[i])
            most[i] = v;
    }
    shares++;
}

int main(void)
{
    uint64_t t_main = now_ns();
    const char *t0s = getenv("LAUNCH_BENCH_T0");
    uint64_t t0 = t0s ? strtoull(t0s, NULL, 10) : t_main;
    flit_ep_t *ep;
    check(flit_init(NULL), "flit_init");
    check(flit_ep_create(NULL, &ep), "flit_ep_create");
    uint64_t t_created = now_ns();
    check(flit_am_register(ep, flit_handler(H_SHARE), on_share, NULL), "register");
    check(flit_barrier(ep), "flit_barrier");
    uint64_t t_bar = now_ns();
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    uint64_t mine[3] = {t_created - t_main, t_main, t_created};
    uint32_t args[6];
    for (int i = 0; i < 3; i++) {
        args[2 * i] = (uint32_t)(mine[i] >> 32);
        args[2 * i + 1] = (uint32_t)mine[i];
    }
    check(flit_am_short(ep, flit_rank(0), flit_handler(H_SHARE), args, 6, 0), "send");
    while (me == 0 && shares < n)
        check(flit_wait(ep, -1), "flit_wait");
    check(flit_barrier(ep), "flit_barrier");
    if (me == 0)
        printf("launch_time: %u ranks, total %.3f ms, flit %.3f ms, after %.3f ms\n", n,
               (double)(t_bar - t0) / 1e6, (double)most[0] / 1e6,
               (double)(most[2] - most[1]) / 1e6);
    check(flit_finalize(), "flit_finalize");
    return 0;
}
