/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AMUDP_SPMDExit called by one proc alone ends the whole job with its code:
 * the last proc calls it (directly, or from a signal handler) while the
 * others sleep in AM_WaitSema waiting for messages that never come. Every
 * proc runs its exit callback, whose output must not be lost. Also checks
 * AMUDP_SPMDgetenvMaster against the variable the test sets. With "all",
 * every proc calls it at once, as a program's last line does: the procs
 * that tell at the same time must still end together.
 *
 *   amudp_exit CODE call|signal|all     (expect_exit.sh checks the outcome)
 */
#include <signal.h>
#include <string.h>

#include "amudp_test.h"

static int code;

static void exit_callback(int c)
{
    printf("proc %d: exit callback %d\n", AMUDP_SPMDMyProc(), c); /* not flushed here */
}

static void on_signal(int sig)
{
    (void)sig;
    AMUDP_SPMDExit(code);
}

int main(int argc, char **argv)
{
    eb_t eb;
    ep_t ep;
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep));
    AMT_CHECK(argc == 3);
    code = atoi(argv[1]);
    const char *v = AMUDP_SPMDgetenvMaster("AMUDP_EXIT_TEST");
    AMT_CHECK(v && strcmp(v, "from the master") == 0);
    AMT_CHECK(AMUDP_SPMDgetenvMaster("AMUDP_EXIT_TEST_UNSET") == NULL);
    AMT_OK(AMUDP_SPMDSetExitCallback(exit_callback));
    AMT_OK(AMUDP_SPMDBarrier());
    if (strcmp(argv[2], "all") == 0 || AMUDP_SPMDMyProc() == AMUDP_SPMDNumProcs() - 1) {
        if (strcmp(argv[2], "signal") == 0) {
            signal(SIGUSR1, on_signal);
            raise(SIGUSR1);
        }
        AMUDP_SPMDExit(code);
    }
    AMT_OK(AM_SetEventMask(eb, AM_NOTEMPTY));
    for (;;) {
        AMT_OK(AM_WaitSema(eb));
        AMT_OK(AM_Poll(eb));
    }
}
