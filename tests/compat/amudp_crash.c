/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The exit status of a job started the AMUDP way (`amudp_crash N L MODE`)
 * whose last worker ends alone while the others wait for messages:
 *   kill   it dies by SIGKILL: the job ends with 255, AMUDP's status for a
 *          lost worker (its master's exit(-1));
 *   exit   it calls AMUDP_SPMDExit(137), the status flitrun gives a rank
 *          killed by SIGKILL: the job ends with 137, told apart from the
 *          crash by the word each worker leaves when it ends in order.
 * expect_status.sh checks the status.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "amudp_test.h"

int main(int argc, char **argv)
{
    eb_t eb;
    ep_t ep;
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep));
    AMT_CHECK(argc == 2);
    AMT_OK(AMUDP_SPMDBarrier());
    if (AMUDP_SPMDMyProc() == AMUDP_SPMDNumProcs() - 1) {
        fflush(NULL);
        if (strcmp(argv[1], "kill") == 0)
            kill(getpid(), SIGKILL);
        AMUDP_SPMDExit(128 + SIGKILL);
    }
    AMT_OK(AM_SetEventMask(eb, AM_NOTEMPTY));
    for (;;) {
        AMT_OK(AM_WaitSema(eb));
        AMT_OK(AM_Poll(eb));
    }
}
