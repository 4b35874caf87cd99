/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An AMUDP program built against a flit-amudp installed under a prefix
 * other than the configured one, started the AMUDP way (`prog 2 L`, or
 * `prog 2` with AMUDP_SPAWNFN) with no flitrun on $PATH and no
 * AMUDP_FLITRUN: each worker checks that the flitrun above it is the
 * installed one (EXPECT_FLITRUN) and that argv[0] is what the master was
 * given (EXPECT_ARGV0), then the procs ask each other round a ring.
 */
#define _GNU_SOURCE /* readlink, realpath, PATH_MAX under -std=c11 */
#include <amudp.h>
#include <amudp_spmd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int answer = -1;

static void ask(void *token, int32_t from)
{
    (void)from;
    AM_Reply1(token, 2, AMUDP_SPMDMyProc());
}

static void answered(void *token, int32_t proc)
{
    (void)token;
    answer = proc;
}

/* 1 when the process that started this worker runs the program want. */
static int parent_runs(const char *want)
{
    char link[64], exe[PATH_MAX], real[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)getppid());
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    if (n <= 0 || !realpath(want, real))
        return 0;
    exe[n] = 0;
    return strcmp(exe, real) == 0;
}

static int check(int ok, const char *what)
{
    if (!ok)
        fprintf(stderr, "amudp_prefix: proc %d: %s\n", AMUDP_SPMDMyProc(), what);
    return ok;
}

int main(int argc, char **argv)
{
    eb_t eb;
    ep_t ep;
    if (AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep) != AM_OK)
        return 1;
    const char *flitrun = getenv("EXPECT_FLITRUN"), *argv0 = getenv("EXPECT_ARGV0");
    int ok =
        check(!flitrun || parent_runs(flitrun), "not started by the installed flitrun");
    ok &= check(!argv0 || strcmp(argv[0], argv0) == 0, "argv[0] is not the one typed");
    int me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    if (AM_SetHandler(ep, 1, ask) != AM_OK || AM_SetHandler(ep, 2, answered) != AM_OK ||
        AMUDP_SPMDBarrier() != AM_OK || AM_Request1(ep, (me + 1) % n, 1, me) != AM_OK)
        return 1;
    while (answer < 0)
        AM_Poll(eb);
    ok &= check(answer == (me + 1) % n, "wrong answer");
    AMUDP_SPMDBarrier();
    AMUDP_SPMDExit(ok ? 0 : 1);
    return 1;
}
