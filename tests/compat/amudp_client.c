/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AMUDP surface a runtime's conduit uses besides AM-2, as such a client
 * uses it: <amudp_const.h> by name, the tracing hooks of
 * AMUDP_SetHandlerCallbacks around every handler (requests and replies of
 * each category, handler 0 with a returned message), AMUDP's automatic
 * replies in the statistics (a request its handler left unanswered counts
 * as a short reply sent by its receiver and received by its sender),
 * AMUDP_SPMDCheckpoint's answer when there is no checkpointing, argv[0] as
 * the master was given it (EXPECT_ARGV0), and AMUDP_PoliteSync: with it
 * set, a proc waiting in AMUDP_SPMDBarrier for one that comes 300 ms late
 * sleeps (its thread's CPU time under half of the wait), though
 * FLIT_SPIN_US (the test sets 1 s) would have it poll the whole time.
 *
 *   amudp_client N L  (or under flitrun)
 */
#include <amudp_const.h> /* by name, as clients include it */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "amudp_test.h"

#define H_ASK    1 /* short request, answered with H_ANSWER */
#define H_ANSWER 2
#define H_MEDIUM 3 /* medium request, left unanswered */
#define H_LONG   4 /* long request, left unanswered */
#define H_UNSET  5 /* no handler: the request comes back */
#define MEDIUMS  10

static eb_t eb;
static ep_t ep;
static char seg[4096];
static volatile int asked, answered, mediums, longs, returned;
static int inside;                            /* between pre and post */
static int pre_calls[2][3], post_calls[2][3]; /* [isReq][category] */
static int pre_returned;                      /* pre with handler 0 */

static void pre(amudp_category_t cat, int isReq, int handlerId, void *token, void *buf,
                size_t nbytes, int numargs, uint32_t *args)
{
    AMT_CHECK(!inside && token && cat < amudp_NumCategories);
    AMT_CHECK(handlerId != 0 || (!buf && !nbytes && !numargs && !args)); /* returned */
    AMT_CHECK(cat != amudp_Short || (!buf && !nbytes));
    AMT_CHECK(cat == amudp_Short || handlerId == 0 || buf);
    AMT_CHECK(numargs == 0 || args);
    if (handlerId == H_ASK || handlerId == H_ANSWER)
        AMT_CHECK(numargs == 1 && (int)args[0] == (handlerId == H_ASK ? 7 : 8));
    inside = 1;
    pre_calls[!!isReq][cat]++;
    pre_returned += handlerId == 0;
}

static void post(amudp_category_t cat, int isReq)
{
    AMT_CHECK(inside && cat < amudp_NumCategories);
    inside = 0;
    post_calls[!!isReq][cat]++;
}

static void ask(void *token, int32_t v)
{
    AMT_CHECK(inside && v == 7);
    asked++;
    AMT_OK(AM_Reply1(token, H_ANSWER, 8));
}

static void answer(void *token, int32_t v)
{
    (void)token;
    AMT_CHECK(inside && v == 8);
    answered++;
}

static void medium(void *token, void *buf, size_t nbytes)
{
    (void)token;
    AMT_CHECK(inside && nbytes == 5 && memcmp(buf, "flit", 5) == 0);
    mediums++;
}

static void along(void *token, void *buf, size_t nbytes)
{
    (void)token;
    AMT_CHECK(inside && nbytes == 100 && buf == seg + 1000);
    longs++;
}

static void on_returned(int status, op_t opcode, void *token)
{
    (void)token;
    AMT_CHECK(inside && status == EBADHANDLER && opcode == AM_REQUEST_M);
    returned++;
}

/* Every kind of handler once or more, and what the statistics and the
   hooks must say of them afterwards. */
static void hooks_and_auto_replies(int me, int n)
{
    static char data[100];
    int next = (me + 1) % n;
    AMT_OK(AM_Request1(ep, next, H_ASK, 7));
    for (int i = 0; i < MEDIUMS; i++)
        AMT_OK(AM_RequestI0(ep, next, H_MEDIUM, "flit", 5));
    AMT_OK(AM_RequestXfer0(ep, next, 1000, H_LONG, data, sizeof data));
    AMT_OK(AM_Request0(ep, next, H_UNSET));
    while (asked < 1 || answered < 1 || mediums < MEDIUMS || longs < 1 || returned < 1)
        AMT_OK(AM_Poll(eb));
    AMT_OK(AMUDP_SPMDBarrier()); /* every automatic reply counted where it goes */

    amudp_stats_t s;
    AMT_OK(AMUDP_GetEndpointStatistics(ep, &s));
    /* one reply of the handler's, and MEDIUMS + 1 of AMUDP's for it */
    AMT_CHECK(s.RepliesSent[amudp_Short] == MEDIUMS + 2);
    AMT_CHECK(s.RepliesReceived[amudp_Short] == MEDIUMS + 2);
    char want[64];
    snprintf(want, sizeof want, "Replies:  %d sent", MEDIUMS + 2);
    const char *dump = AMUDP_DumpStatistics(NULL, &s, 0);
    AMT_CHECK(dump && strstr(dump, want));
    AMT_CHECK(!inside && pre_returned == 1);
    AMT_CHECK(pre_calls[1][amudp_Short] == 2); /* H_ASK, and H_UNSET's return */
    AMT_CHECK(pre_calls[1][amudp_Medium] == MEDIUMS && pre_calls[1][amudp_Long] == 1);
    AMT_CHECK(pre_calls[0][amudp_Short] == 1); /* H_ANSWER */
    AMT_CHECK(memcmp(pre_calls, post_calls, sizeof pre_calls) == 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double thread_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Proc 0 comes 300 ms late to a barrier the others wait in, politely. */
static void polite_barrier(int me)
{
    AMUDP_PoliteSync = 1;
    AMT_OK(AMUDP_SPMDBarrier());
    if (me == 0)
        usleep(300000); /* a gap to wait through, not a handshake */
    double wall = now_s(), cpu = thread_cpu_s();
    AMT_OK(AMUDP_SPMDBarrier());
    wall = now_s() - wall;
    cpu = thread_cpu_s() - cpu;
    if (me != 0) {
        printf("proc %d: polite barrier: waited %.3f s, used %.3f s of CPU\n", me, wall,
               cpu);
        /* A poller would take all the CPU it gets (on an idle machine the
           whole wait); a sleeper takes what flit's own wake-ups cost. */
        AMT_CHECK(wall < 0.2 || cpu < wall / 2);
    }
    AMUDP_PoliteSync = 0;
}

int main(int argc, char **argv)
{
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep));
    int me = AMUDP_SPMDMyProc(), n = AMUDP_SPMDNumProcs();
    const char *argv0 = getenv("EXPECT_ARGV0");
    AMT_CHECK(!argv0 || strcmp(argv[0], argv0) == 0);
    AMT_CHECK(AMUDP_LIBRARY_VERSION_MAJOR == 3 && AMUDP_LIBRARY_VERSION_MINOR == 16);
    AMT_CHECK(strcmp(AMUDP_LIBRARY_VERSION_STR, "3.16") == 0);
    AMT_OK(AM_SetSeg(ep, seg, sizeof seg));
    AMT_OK(AM_SetHandler(ep, 0, on_returned));
    AMT_OK(AM_SetHandler(ep, H_ASK, ask));
    AMT_OK(AM_SetHandler(ep, H_ANSWER, answer));
    AMT_OK(AM_SetHandler(ep, H_MEDIUM, medium));
    AMT_OK(AM_SetHandler(ep, H_LONG, along));
    AMT_ST(AMUDP_SetHandlerCallbacks(NULL, pre, post), AM_ERR_BAD_ARG);
    AMT_OK(AMUDP_SetHandlerCallbacks(ep, pre, post));
    errno = 0;
    AMT_CHECK(AMUDP_SPMDCheckpoint(&eb, &ep, "/tmp") == -1 && errno == ENOTSUP);
    AMT_OK(AMUDP_SPMDBarrier());

    hooks_and_auto_replies(me, n);
    polite_barrier(me);
    AMT_OK(AMUDP_SetHandlerCallbacks(ep, NULL, NULL));
    AMT_OK(AMUDP_SPMDBarrier());
    if (me == 0)
        printf("amudp_client: %d procs passed\n", n);
    AMUDP_SPMDExit(0);
    return 1;
}
