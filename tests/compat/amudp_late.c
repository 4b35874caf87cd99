/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The last proc ends LATE_S seconds after the others, as a proc doing extra
 * work at the end does: the job must still end with status 0. flitrun
 * fails a job in which a rank exits 0 without flit_finalize while others
 * still run (2 s after its exit), so the AMUDP library must end flit on
 * every way an AMUDP program ends normally:
 *
 *   amudp_late terminate   SPMD workers: AM_Terminate, then the last proc
 *                          works LATE_S seconds more before it returns
 *                          (also: AM_Terminate twice, and the SPMD barrier
 *                          after it, answer AM_ERR_NOT_INIT)
 *   amudp_late return      SPMD workers return from main without
 *                          AM_Terminate, the last one LATE_S seconds late
 *   amudp_late exit        the last proc calls AMUDP_SPMDExit(0) after
 *                          AM_Terminate: it ends (the others are gone)
 *   amudp_late fail        the last proc exits with 3 at once, the others
 *                          wait for a request it never sends: the job must
 *                          end with 3 (the exit handler must not hold a
 *                          failing proc in a collective)
 *   amudp_late am2         no SPMD start-up: AM_Init, a bundle and an
 *                          endpoint on every rank of a flitrun job, then
 *                          AM_Terminate; the last rank LATE_S seconds late
 *
 * The SPMD procs first send one request round the ring and take its reply,
 * so the endpoint has carried traffic when it ends.
 */
#include <string.h>
#include <unistd.h>

#include "amudp_test.h"

#define H_REQ  1
#define H_REP  2
#define LATE_S 3

static volatile int requests, replies;

static void req_handler(void *token, int32_t from)
{
    int n = AMUDP_SPMDNumProcs();
    AMT_CHECK(from == (AMUDP_SPMDMyProc() + n - 1) % n);
    requests++;
    AMT_OK(AM_Reply1(token, H_REP, from));
}

static void rep_handler(void *token, int32_t from)
{
    (void)token;
    AMT_CHECK(from == AMUDP_SPMDMyProc());
    replies++;
}

/* An AM-2 program of its own, no SPMD: the endpoint is made and freed on
   every rank (both collective in flit). */
static int am2(void)
{
    eb_t eb;
    ep_t ep;
    en_t name;
    AMT_OK(AM_Init());
    AMT_OK(AM_AllocateBundle(AM_SEQ, &eb));
    AMT_OK(AM_AllocateEndpoint(eb, &ep, &name));
    AMT_OK(AM_Terminate());
    AMT_ST(AM_Terminate(), AM_ERR_NOT_INIT);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "am2") == 0) {
        am2();
        const char *r = getenv("FLIT_RANK"), *size = getenv("FLIT_SIZE");
        if (r && size && atoi(r) == atoi(size) - 1) /* flitrun's names for them */
            sleep(LATE_S); /* the program's own work at its end: the delay under test */
        return 0;
    }
    eb_t eb;
    ep_t ep;
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep));
    AMT_CHECK(argc == 2);
    const char *mode = argv[1];
    int me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    int late = me == n - 1;
    AMT_OK(AM_SetHandler(ep, H_REQ, req_handler));
    AMT_OK(AM_SetHandler(ep, H_REP, rep_handler));
    AMT_OK(AMUDP_SPMDBarrier());
    AMT_OK(AM_Request1(ep, (me + 1) % n, H_REQ, me));
    AMT_POLL_UNTIL(eb, requests, 1);
    AMT_POLL_UNTIL(eb, replies, 1);
    if (strcmp(mode, "fail") == 0 && late)
        exit(3);
    for (long i = 0; strcmp(mode, "fail") == 0 && i < 1000000000L; i++)
        AMT_OK(AM_Poll(eb)); /* flitrun stops it first */
    if (strcmp(mode, "return") != 0) {
        AMT_OK(AM_Terminate());
        AMT_ST(AM_Terminate(), AM_ERR_NOT_INIT);
        AMT_ST(AMUDP_SPMDBarrier(), AM_ERR_NOT_INIT);
    }
    if (late)
        sleep(LATE_S); /* the program's own work at its end: the delay under test */
    printf("proc %d: ended (%s)%s\n", me, mode, late ? ", 3 s after the others" : "");
    if (strcmp(mode, "exit") == 0 && late) {
        fflush(stdout);
        AMUDP_SPMDExit(0);
        AMT_FAIL("AMUDP_SPMDExit returned");
    }
    return 0;
}
