/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A spawn function of the program's own, passed to AMUDP_SPMDStartup as
 * AMUDP programs may: it forks and execs the workers itself, with the
 * command line it was given. The workers check that they are its children
 * (a variable it set), pass a message round the ring, then the last one
 * calls AMUDP_SPMDExit(CODE): the job, and the master, must end with CODE,
 * every exit callback having run (expect_exit.sh checks). With kill for
 * CODE the last one dies by SIGKILL instead: the job ends with 255, AMUDP's
 * status for a lost worker (expect_status.sh checks).
 *
 *   amudp_spawnfn NPROCS CODE|kill
 */
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "amudp_test.h"

#define H_RING 1
#define H_BACK 2

static volatile int back;

static int own_spawn(int nproc, int argc, char **argv)
{
    (void)argc;
    char parent[32];
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    setenv("AMUDP_SPAWNFN_PARENT", parent, 1);
    for (int i = 0; i < nproc; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 0;
        if (pid == 0) {
            execv(argv[0], argv);
            _exit(127);
        }
    }
    return 1;
}

static void ring_handler(void *token, int32_t from)
{
    AMT_OK(AM_Reply1(token, H_BACK, from));
}

static void back_handler(void *token, int32_t me)
{
    (void)token;
    AMT_CHECK(me == AMUDP_SPMDMyProc());
    back++;
}

static void exit_callback(int c)
{
    printf("proc %d: exit callback %d\n", AMUDP_SPMDMyProc(), c);
}

int main(int argc, char **argv)
{
    eb_t eb;
    ep_t ep;
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, own_spawn, NULL, &eb, &ep));
    const char *parent = getenv("AMUDP_SPAWNFN_PARENT");
    AMT_CHECK(parent && atoi(parent) == (int)getppid()); /* own_spawn's child */
    AMT_CHECK(argc == 2);
    int code = atoi(argv[1]), me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    AMT_OK(AM_SetHandler(ep, H_RING, ring_handler));
    AMT_OK(AM_SetHandler(ep, H_BACK, back_handler));
    AMT_OK(AMUDP_SPMDSetExitCallback(exit_callback));
    AMT_OK(AMUDP_SPMDBarrier());
    AMT_OK(AM_Request1(ep, (me + 1) % n, H_RING, me));
    AMT_POLL_UNTIL(eb, back, 1);
    AMT_OK(AMUDP_SPMDBarrier());
    if (me == n - 1 && strcmp(argv[1], "kill") == 0)
        kill(getpid(), SIGKILL);
    if (me == n - 1)
        AMUDP_SPMDExit(code);
    AMT_OK(AM_SetEventMask(eb, AM_NOTEMPTY));
    for (;;) {
        AMT_OK(AM_WaitSema(eb));
        AMT_OK(AM_Poll(eb));
    }
}
