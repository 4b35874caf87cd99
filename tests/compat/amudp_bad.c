/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad input through AMUDP's interface gets AM-2's answers: the AM_ERR_*
 * code of each call, and messages the destination refuses come back to
 * handler 0 with AM-2's status and opcode. One process, talking to itself
 * (a job of one rank, as a program started without a launcher is); the
 * SPMD start-up's command-line errors too, since such a process is a master.
 * Xfers of AM_MaxLong() bytes, which go as puts into the segment, land where
 * AM-2 says or come back with its status, and land nowhere then.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "amudp_test.h"

#define H_SET       1
#define H_NOPE      9 /* never installed */
#define H_REPLY_BAD 2 /* replies to H_NOPE */
#define H_ECHO      3
#define H_LAND      10 /* above the one AM_SetHandlerAny picks */
#define H_LAND16    11

static eb_t eb;
static ep_t ep;
static int returned_status, returned_op, returned_count, replies;
static en_t returned_from;

static void returned_handler(int status, op_t opcode, void *token)
{
    returned_status = status;
    returned_op = opcode;
    returned_count++;
    AMT_OK(AM_GetSourceEndpoint(token, &returned_from));
    /* No reply from a returned-message handler. */
    AMT_ST(AM_Reply0(token, H_SET), AM_ERR_BAD_ARG);
}

static void set_handler(void *token)
{
    (void)token;
}

static void reply_bad_handler(void *token)
{
    AMT_OK(AM_Reply0(token, H_NOPE));
}

static handler_t h_echo_reply; /* from AM_SetHandlerAny */

static void echo_handler(void *token)
{
    AMT_OK(AM_Reply0(token, h_echo_reply));
    /* a request handler replies once */
    AMT_ST(AM_Reply0(token, h_echo_reply), AM_ERR_BAD_ARG);
    /* and makes no request */
    AMT_ST(AM_Request0(ep, 0, H_SET), AM_ERR_BAD_ARG);
}

static void echo_reply_handler(void *token)
{
    AMT_ST(AM_Reply0(token, H_SET), AM_ERR_BAD_ARG); /* no reply to a reply */
    replies++;
}

/* Sends, then polls until handler 0 ran; checks what it was told. */
#define EXPECT_RETURNED(send, status, op)                                                \
    do {                                                                                 \
        int before_ = returned_count;                                                    \
        AMT_OK(send);                                                                    \
        while (returned_count == before_)                                                \
            AMT_OK(AM_Poll(eb));                                                         \
        if (returned_status != (status) || returned_op != (op))                          \
            AMT_FAIL("%s: status %d, opcode %d; expected %d, %d", #send,                 \
                     returned_status, returned_op, (int)(status), (int)(op));            \
    } while (0)

static void *landed_buf;
static size_t landed_len;
static int32_t landed_first, landed_last;
static int landed_count;

static void land_handler(void *token, void *buf, size_t nbytes, int32_t a0)
{
    (void)token;
    landed_buf = buf;
    landed_len = nbytes;
    landed_first = landed_last = a0;
    landed_count++;
}

static void land16_handler(void *token, void *buf, size_t nbytes, int32_t a0, int32_t a1,
                           int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6,
                           int32_t a7, int32_t a8, int32_t a9, int32_t a10, int32_t a11,
                           int32_t a12, int32_t a13, int32_t a14, int32_t a15)
{
    AMT_CHECK(a1 == 2 && a2 == 3 && a3 == 4 && a4 == 5 && a5 == 6 && a6 == 7 && a7 == 8 &&
              a8 == 9 && a9 == 10 && a10 == 11 && a11 == 12 && a12 == 13 && a13 == 14 &&
              a14 == 15);
    land_handler(token, buf, nbytes, a0);
    landed_last = a15;
}

static unsigned char xfer_data[AMUDP_MAX_LONG];

/* Sends, polls until the handler ran, checks where and what it was given. */
#define EXPECT_LANDED(send, where, first, last)                                          \
    do {                                                                                 \
        int before_ = landed_count;                                                      \
        AMT_OK(send);                                                                    \
        while (landed_count == before_)                                                  \
            AMT_OK(AM_Poll(eb));                                                         \
        AMT_CHECK(landed_buf == (void *)(where) && landed_len == AM_MaxLong());          \
        AMT_CHECK(landed_first == (first) && landed_last == (last));                     \
        AMT_CHECK(memcmp((where), xfer_data, AM_MaxLong()) == 0);                        \
    } while (0)

static void before_init(void)
{
    eb_t b;
    AMT_ST(AM_AllocateBundle(AM_SEQ, &b), AM_ERR_NOT_INIT);
    AMT_ST(AM_Terminate(), AM_ERR_NOT_INIT);
    AMT_ST(AMUDP_SPMDBarrier(), AM_ERR_NOT_INIT);
    AMT_ST(AMUDP_SPMDExit(3), AM_ERR_NOT_INIT);
    AMT_ST(AMUDP_SPMDAllGather(&b, &b, 1), AM_ERR_NOT_INIT);
    AMT_CHECK(AMUDP_SPMDMyProc() == -1 && AMUDP_SPMDNumProcs() == -1);
    AMT_CHECK(AMUDP_SPMDgetenvMaster("PATH") == NULL);
}

static void bundles_and_endpoints(en_t *name)
{
    eb_t b;
    AMT_ST(AM_AllocateBundle(7, &b), AM_ERR_BAD_ARG);
    AMT_ST(AM_AllocateBundle(AM_SEQ, NULL), AM_ERR_BAD_ARG);
    AMT_OK(AM_AllocateBundle(AM_SEQ, &eb));
    AMT_ST(AM_AllocateEndpoint(NULL, &ep, name), AM_ERR_BAD_ARG);
    AMT_ST(AM_AllocateEndpoint(eb, NULL, name), AM_ERR_BAD_ARG);
    AMT_ST(AM_AllocateEndpoint(eb, &ep, NULL), AM_ERR_BAD_ARG);
    AMT_OK(AM_AllocateEndpoint(eb, &ep, name));
    AMT_OK(AM_AllocateBundle(AM_SEQ, &b));
    AMT_ST(AM_MoveEndpoint(ep, b, eb), AM_ERR_BAD_ARG); /* not in b */
    AMT_OK(AM_MoveEndpoint(ep, eb, b));
    AMT_OK(AM_MoveEndpoint(ep, b, eb));
    AMT_OK(AM_FreeBundle(b));
    AMT_ST(AM_FreeEndpoint(NULL), AM_ERR_BAD_ARG);
    AMT_ST(AM_SetEventMask(eb, 7), AM_ERR_BAD_ARG);
    AMT_ST(AM_WaitSema(eb), AM_ERR_BAD_ARG); /* AM_NOEVENTS: it would never return */
    AMT_ST(AM_Poll(NULL), AM_ERR_BAD_ARG);
}

static void segments_and_translations(en_t name)
{
    static char seg[4096];
    uintptr_t max;
    AMT_OK(AM_MaxSegLength(&max));
    AMT_CHECK(max == AMUDP_MAX_SEGLENGTH);
    AMT_ST(AM_SetSeg(ep, NULL, 10), AM_ERR_BAD_ARG);
    AMT_ST(AM_SetSeg(ep, (void *)(uintptr_t)-16, 64), AM_ERR_BAD_ARG); /* wraps */
    AMT_ST(AM_GetSeg(ep, NULL, &max), AM_ERR_BAD_ARG);

    int n;
    AMT_OK(AM_GetNumTranslations(ep, &n));
    AMT_CHECK(n == AMUDP_INIT_NUMTRANSLATIONS);
    AMT_ST(AM_Map(ep, -1, name, 5), AM_ERR_BAD_ARG);
    AMT_ST(AM_Map(ep, n, name, 5), AM_ERR_BAD_ARG);
    en_t other = name;
    other.sin_addr.s_addr = htonl(1); /* rank 1 of a job of one */
    AMT_ST(AM_Map(ep, 0, other, 5), AM_ERR_BAD_ARG);
    other = name;
    other.sin_family = AF_UNIX;
    AMT_ST(AM_Map(ep, 0, other, 5), AM_ERR_BAD_ARG);
    AMT_ST(AM_GetTranslationInuse(ep, 0), AM_ERR_RESOURCE);
    tag_t t;
    AMT_ST(AM_GetTranslationTag(ep, 0, &t), AM_ERR_RESOURCE);
    AMT_ST(AM_UnMap(ep, 0), AM_ERR_BAD_ARG);
    AMT_OK(AM_SetTag(ep, 77));
    AMT_OK(AM_Map(ep, 0, name, 77));
    AMT_ST(AM_Map(ep, 0, name, 77), AM_ERR_RESOURCE);
    AMT_OK(AM_GetTranslationInuse(ep, 0));
    en_t back;
    AMT_OK(AM_GetTranslationName(ep, 0, &back));
    AMT_CHECK(AMUDP_enEqual(back, name));
    AMT_ST(AM_SetNumTranslations(ep, 0), AM_ERR_BAD_ARG);
    AMT_OK(AM_Map(ep, 100, name, 77));
    AMT_ST(AM_SetNumTranslations(ep, 50), AM_ERR_RESOURCE); /* 100 is in use */
    AMT_OK(AM_UnMap(ep, 100));
    AMT_OK(AM_SetNumTranslations(ep, 50));
    AMT_ST(AM_SetExpectedResources(ep, 0, 4), AM_ERR_BAD_ARG);
    AMT_ST(AM_SetExpectedResources(ep, 1, AMUDP_MAX_NETWORKDEPTH + 1), AM_ERR_BAD_ARG);
    AMT_OK(AM_SetExpectedResources(ep, 1, 4));
    AMT_ST(AM_SetExpectedResources(ep, 1, 4), AM_ERR_RESOURCE);
    AMT_OK(AM_SetSeg(ep, seg, sizeof seg));
}

static void handlers_and_sends(void)
{
    AMT_ST(AM_SetHandler(ep, H_SET, NULL), AM_ERR_BAD_ARG);
    AMT_OK(AM_SetHandler(ep, 0, returned_handler));
    AMT_OK(AM_SetHandler(ep, H_SET, set_handler));
    AMT_OK(AM_SetHandler(ep, H_REPLY_BAD, reply_bad_handler));
    AMT_OK(AM_SetHandler(ep, H_ECHO, echo_handler));
    AMT_OK(AM_SetHandlerAny(ep, &h_echo_reply, echo_reply_handler));
    AMT_CHECK(h_echo_reply != 0 && h_echo_reply != H_SET && h_echo_reply != H_REPLY_BAD &&
              h_echo_reply != H_ECHO);
    static char big[AMUDP_MAX_LONG + 1];
    AMT_ST(AMUDP_Request(ep, 0, H_SET, 17), AM_ERR_BAD_ARG);
    AMT_ST(AMUDP_Request(ep, 0, H_SET, -1), AM_ERR_BAD_ARG);
    AMT_ST(AM_Request0(ep, 1, H_SET), AM_ERR_BAD_ARG); /* translation 1 not in use */
    AMT_ST(AM_RequestI0(ep, 0, H_SET, big, AM_MaxMedium() + 1), AM_ERR_BAD_ARG);
    AMT_ST(AM_RequestI0(ep, 0, H_SET, NULL, 8), AM_ERR_BAD_ARG);
    AMT_ST(AM_RequestXfer0(ep, 0, 0, H_SET, big, AM_MaxLong() + 1), AM_ERR_BAD_ARG);
    uint64_t not_a_token[8] = {5}; /* any memory that is not a token */
    AMT_ST(AM_Reply0(not_a_token, H_SET), AM_ERR_BAD_ARG);
    AMT_ST(AM_GetSourceEndpoint(not_a_token, &returned_from), AM_ERR_BAD_ARG);
}

static void returned_messages(en_t name)
{
    static char data[100];
    EXPECT_RETURNED(AM_Request0(ep, 0, H_NOPE), EBADHANDLER, AM_REQUEST_M);
    AMT_CHECK(AMUDP_enEqual(returned_from, name));
    EXPECT_RETURNED(AM_RequestI0(ep, 0, H_NOPE, data, 10), EBADHANDLER, AM_REQUEST_IM);
    EXPECT_RETURNED(AM_RequestXfer0(ep, 0, 0, H_NOPE, data, 10), EBADHANDLER,
                    AM_REQUEST_XFER_M);
    EXPECT_RETURNED(AM_RequestXfer0(ep, 0, 5000, H_SET, data, 10), EBADSEGOFF,
                    AM_REQUEST_XFER_M);
    EXPECT_RETURNED(AM_RequestXfer0(ep, 0, 4090, H_SET, data, 10), EBADLENGTH,
                    AM_REQUEST_XFER_M);
    EXPECT_RETURNED(AM_RequestXferAsync16(ep, 0, 4095, H_SET, data, 2, 1, 2, 3, 4, 5, 6,
                                          7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
                    EBADLENGTH, AM_REQUEST_XFER_M);
    EXPECT_RETURNED(AM_Request0(ep, 0, H_REPLY_BAD), EBADHANDLER, AM_REPLY_M);
    AMT_OK(AMUDP_SetTranslationTag(ep, 0, 78)); /* our tag is 77 */
    EXPECT_RETURNED(AM_Request0(ep, 0, H_SET), EBADTAG, AM_REQUEST_M);
    tag_t t;
    AMT_OK(AM_GetTranslationTag(ep, 0, &t));
    AMT_CHECK(t == 78);
    AMT_OK(AMUDP_SetTranslationTag(ep, 0, 77));
    AMT_OK(AM_SetSeg(ep, NULL, 0));
    EXPECT_RETURNED(AM_RequestXfer0(ep, 0, 0, H_SET, data, 0), EBADSEGOFF,
                    AM_REQUEST_XFER_M);
    amudp_stats_t s;
    AMT_OK(AMUDP_GetEndpointStatistics(ep, &s));
    AMT_CHECK(s.ReturnedMessages == (uint64_t)returned_count);
}

static int all_zero(const unsigned char *p, size_t len)
{
    for (size_t k = 0; k < len; k++)
        if (p[k])
            return 0;
    return 1;
}

/* Xfers that go as puts: the segment is exported at AM_SetSeg, and again
   when it or the tag changes. */
static void xfer_puts(void)
{
    static unsigned char seg1[3 * AMUDP_MAX_LONG], seg2[2 * AMUDP_MAX_LONG];
    const size_t max = AM_MaxLong();
    for (size_t k = 0; k < max; k++)
        xfer_data[k] = (unsigned char)(k * 7 + 1);
    AMT_OK(AM_SetHandler(ep, H_LAND, land_handler));
    AMT_OK(AM_SetHandler(ep, H_LAND16, land16_handler));
    EXPECT_RETURNED(AM_RequestXfer1(ep, 0, 0, H_LAND, xfer_data, max, 0), EBADSEGOFF,
                    AM_REQUEST_XFER_M); /* no segment yet */
    AMT_OK(AM_SetSeg(ep, seg1, sizeof seg1));
    EXPECT_LANDED(AM_RequestXfer1(ep, 0, 1000, H_LAND, xfer_data, max, 42), seg1 + 1000,
                  42, 42);
    EXPECT_LANDED(AM_RequestXferAsync16(ep, 0, 2 * max, H_LAND16, xfer_data, max, 1, 2, 3,
                                        4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
                  seg1 + 2 * max, 1, 16);
    memset(seg1, 0, sizeof seg1);
    EXPECT_RETURNED(AM_RequestXfer1(ep, 0, sizeof seg1 + 1, H_LAND, xfer_data, max, 0),
                    EBADSEGOFF, AM_REQUEST_XFER_M);
    EXPECT_RETURNED(AM_RequestXfer1(ep, 0, sizeof seg1 - 100, H_LAND, xfer_data, max, 0),
                    EBADLENGTH, AM_REQUEST_XFER_M);
    EXPECT_RETURNED(AM_RequestXfer16(ep, 0, sizeof seg1 - 100, H_LAND16, xfer_data, max,
                                     1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                     16),
                    EBADLENGTH, AM_REQUEST_XFER_M);
    AMT_OK(AMUDP_SetTranslationTag(ep, 0, 78)); /* our tag is 77 */
    EXPECT_RETURNED(AM_RequestXfer1(ep, 0, 0, H_LAND, xfer_data, max, 0), EBADTAG,
                    AM_REQUEST_XFER_M);
    AMT_OK(AMUDP_SetTranslationTag(ep, 0, 77));
    AMT_CHECK(all_zero(seg1, sizeof seg1)); /* none of those landed */
    EXPECT_RETURNED(AM_RequestXfer1(ep, 0, 0, H_NOPE, xfer_data, max, 0), EBADHANDLER,
                    AM_REQUEST_XFER_M);
    /* A new segment, then a new tag: the next Xfer lands in the new one. */
    AMT_OK(AM_SetSeg(ep, seg2, sizeof seg2));
    EXPECT_LANDED(AM_RequestXfer1(ep, 0, 5, H_LAND, xfer_data, max, 5), seg2 + 5, 5, 5);
    AMT_OK(AM_SetTag(ep, 90));
    AMT_OK(AMUDP_SetTranslationTag(ep, 0, 90));
    EXPECT_LANDED(AM_RequestXfer1(ep, 0, 7, H_LAND, xfer_data, max, 7), seg2 + 7, 7, 7);
    AMT_OK(AM_SetSeg(ep, NULL, 0));
}

static int failing_spawn(int nproc, int argc, char **argv)
{
    (void)nproc, (void)argc, (void)argv;
    return 0; /* started nothing */
}

/* A command line without NPROCS gets AMUDP's banner, with the version the
   API follows (AMUDP_LIBRARY_VERSION_STR), before the usage, on stderr. */
static void banner(void)
{
    eb_t b;
    ep_t e;
    char prog[] = "amudp_bad", *none[] = {prog, NULL}, **argv = none, out[4096];
    int argc = 1, saved = dup(2);
    FILE *f = tmpfile();
    AMT_CHECK(saved >= 0 && f && dup2(fileno(f), 2) == 2);
    int rc = AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &b, &e);
    fflush(stderr);
    AMT_CHECK(dup2(saved, 2) == 2);
    close(saved);
    size_t n = (rewind(f), fread(out, 1, sizeof out - 1, f));
    fclose(f);
    out[n] = 0;
    AMT_CHECK(rc == AM_ERR_BAD_ARG);
    static const char want[] = "AMUDP SPMD Runtime Layer v" AMUDP_LIBRARY_VERSION_STR " ";
    AMT_CHECK(strncmp(out, want, sizeof want - 1) == 0);
    AMT_CHECK(strstr(out, "Usage: amudp_bad NPROCS [SPAWNFN] args..."));
}

static void spmd_command_lines(void)
{
    eb_t b;
    ep_t e;
    char prog[] = "amudp_bad", two[] = "2", q[] = "Q", l[] = "L", zero[] = "0";
    char *none[] = {prog, NULL}, *bad_letter[] = {prog, two, q, NULL};
    char *bad_count[] = {prog, zero, l, NULL}, *no_letter[] = {prog, two, NULL};
    int argc = 1;
    char **argv = none;
    AMT_ST(AMUDP_SPMDStartup(NULL, &argv, 0, 0, NULL, NULL, &b, &e), AM_ERR_BAD_ARG);
    AMT_ST(AMUDP_SPMDStartup(&argc, &argv, 0, -1, NULL, NULL, &b, &e), AM_ERR_BAD_ARG);
    AMT_ST(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &b, &e), AM_ERR_BAD_ARG);
    /* Q is no letter of the table: the program's first argument, and the
       letter comes from AMUDP_SPAWNFN, here none of the table either */
    setenv("AMUDP_SPAWNFN", "Q", 1);
    argc = 3, argv = bad_letter;
    AMT_ST(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &b, &e), AM_ERR_BAD_ARG);
    argv = bad_count;
    AMT_ST(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &b, &e), AM_ERR_BAD_ARG);
    argc = 2, argv = no_letter;
    AMT_ST(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &b, &e), AM_ERR_BAD_ARG);
    /* no letter and no AMUDP_SPAWNFN: AMUDP's default, S, which needs
       SSH_SERVERS and starts nothing without */
    unsetenv("AMUDP_SPAWNFN");
    unsetenv("SSH_SERVERS");
    AMT_ST(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &b, &e), AM_ERR_RESOURCE);
    /* a spawn function of the program's own that fails */
    AMT_ST(AMUDP_SPMDStartup(&argc, &argv, 2, 0, failing_spawn, NULL, &b, &e),
           AM_ERR_RESOURCE);
}

int main(void)
{
    if (AMUDP_SPMDIsWorker(NULL)) {
        printf("SKIP: amudp_bad runs as one process, not under a launcher\n");
        return TEST_SKIP;
    }
    AMUDP_VerboseErrors = getenv("AMUDP_VERBOSE") != NULL;
    before_init();
    banner();
    spmd_command_lines();
    AMT_OK(AM_Init());
    en_t name;
    bundles_and_endpoints(&name);
    segments_and_translations(name);
    handlers_and_sends();
    returned_messages(name);
    xfer_puts();
    AMT_OK(AM_Request0(ep, 0, H_ECHO));
    while (replies < 1)
        AMT_OK(AM_Poll(eb));
    AMT_OK(AM_Terminate());
    AMT_ST(AM_Terminate(), AM_ERR_NOT_INIT);
    printf("amudp_bad: every bad input answered as AM-2 says\n");
    return 0;
}
