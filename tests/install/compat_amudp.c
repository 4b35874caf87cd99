/* SPDX-License-Identifier: BSD-3-Clause */
/* An AMUDP program built against the installed flit-amudp: each proc asks
   the next one for its number and checks the answer. */
#include <amudp.h>
#include <amudp_spmd.h>
#include <stdio.h>

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

int main(int argc, char **argv)
{
    eb_t eb;
    ep_t ep;
    if (AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep) != AM_OK)
        return 1;
    int me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    if (sizeof PLATFORM_COMPILER_IDSTR < 2 || PLATFORM_ARCH_FAMILYID < 0)
        return 1; /* amx_portable_platform.h, which amudp.h includes */
    if (AM_SetHandler(ep, 1, ask) != AM_OK || AM_SetHandler(ep, 2, answered) != AM_OK ||
        AMUDP_SPMDBarrier() != AM_OK || AM_Request1(ep, (me + 1) % n, 1, me) != AM_OK)
        return 1;
    while (answer < 0)
        AM_Poll(eb);
    AMUDP_SPMDBarrier();
    AMUDP_SPMDExit(answer == (me + 1) % n ? 0 : 1);
    return 1;
}
