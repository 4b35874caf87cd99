/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale AMUDP handles: an endpoint and a bundle used after they were freed,
 * once a new one of the same kind was made right after (so that malloc
 * hands back the same block). Each call answers AM_ERR_BAD_ARG and the new
 * endpoint or bundle goes on working; under ASan nothing reads freed
 * memory. A handler's token kept past its return is refused in the next
 * handler (whose token sits in the same place on the dispatcher's stack),
 * which replies as it should. Also: AM_GetDestEndpoint answers the very
 * value the program holds. One process, talking to itself. argv[1], when
 * given, names the one case to run.
 */
#include <string.h>

#include "amudp_test.h"

#define H_PING  1
#define H_KEEP  2 /* keeps its token */
#define H_STALE 3 /* uses the kept one */
#define H_ACK   4

static int pings, kept_runs, stale_runs, acks;
static ep_t pinged;
static void *kept;

static void ping_handler(void *token)
{
    pings++;
    AMT_OK(AM_GetDestEndpoint(token, &pinged));
}

static void keep_handler(void *token)
{
    kept = token;
    kept_runs++;
    AMT_OK(AM_Reply0(token, H_ACK));
}

static void stale_handler(void *token)
{
    en_t who;
    tag_t tag;
    ep_t dest;
    AMT_ST(AM_Reply0(kept, H_ACK), AM_ERR_BAD_ARG); /* the last handler's */
    AMT_ST(AM_GetSourceEndpoint(kept, &who), AM_ERR_BAD_ARG);
    AMT_ST(AM_GetMsgTag(kept, &tag), AM_ERR_BAD_ARG);
    AMT_ST(AM_GetDestEndpoint(kept, &dest), AM_ERR_BAD_ARG);
    AMT_OK(AM_Reply0(token, H_ACK)); /* its own: once */
    stale_runs++;
}

static void ack_handler(void *token)
{
    (void)token;
    acks++;
}

/* A new endpoint in b, mapped to itself, its handler in place. */
static ep_t new_endpoint(eb_t b)
{
    ep_t e;
    en_t name;
    AMT_OK(AM_AllocateEndpoint(b, &e, &name));
    AMT_OK(AM_Map(e, 0, name, 0));
    AMT_OK(AM_SetTag(e, 0));
    AMT_OK(AM_SetHandler(e, H_PING, ping_handler));
    AMT_OK(AM_SetHandler(e, H_KEEP, keep_handler));
    AMT_OK(AM_SetHandler(e, H_STALE, stale_handler));
    AMT_OK(AM_SetHandler(e, H_ACK, ack_handler));
    return e;
}

/* e works: a request to itself is handled, through e. */
static void ping(eb_t b, ep_t e)
{
    int before = pings;
    AMT_OK(AM_Request0(e, 0, H_PING));
    AMT_POLL_UNTIL(b, pings, before + 1);
    AMT_CHECK(pinged == e);
}

static void stale_endpoint(void)
{
    eb_t b;
    AMT_OK(AM_AllocateBundle(AM_SEQ, &b));
    ep_t old = new_endpoint(b);
    AMT_OK(AM_FreeEndpoint(old));
    ep_t fresh = new_endpoint(b); /* most likely old's block */
    AMT_ST(AM_FreeEndpoint(old), AM_ERR_BAD_ARG);
    AMT_ST(AM_SetTag(old, 5), AM_ERR_BAD_ARG);
    AMT_ST(AM_Request0(old, 0, H_PING), AM_ERR_BAD_ARG);
    AMT_ST(AM_SetHandler(old, H_PING, ping_handler), AM_ERR_BAD_ARG);
    AMT_ST(AM_UnMap(old, 0), AM_ERR_BAD_ARG);
    int n;
    AMT_ST(AM_GetNumTranslations(old, &n), AM_ERR_BAD_ARG);
    amudp_stats_t st;
    AMT_ST(AMUDP_GetEndpointStatistics(old, &st), AM_ERR_BAD_ARG);
    /* The new one is untouched: tag, translation and handler in place. */
    tag_t t = 1;
    AMT_OK(AM_GetTag(fresh, &t));
    AMT_CHECK(t == 0);
    AMT_OK(AM_GetTranslationInuse(fresh, 0));
    ping(b, fresh);
    AMT_OK(AM_FreeBundle(b));
}

static void stale_bundle(void)
{
    eb_t old, fresh;
    AMT_OK(AM_AllocateBundle(AM_SEQ, &old));
    AMT_OK(AM_FreeBundle(old));
    AMT_OK(AM_AllocateBundle(AM_SEQ, &fresh)); /* most likely old's block */
    ep_t e = new_endpoint(fresh);
    AMT_ST(AM_FreeBundle(old), AM_ERR_BAD_ARG);
    AMT_ST(AM_Poll(old), AM_ERR_BAD_ARG);
    AMT_ST(AM_SetEventMask(old, AM_NOTEMPTY), AM_ERR_BAD_ARG);
    AMT_ST(AM_MoveEndpoint(e, old, fresh), AM_ERR_BAD_ARG);
    en_t name;
    ep_t e2 = NULL;
    AMT_ST(AM_AllocateEndpoint(old, &e2, &name), AM_ERR_BAD_ARG);
    AMT_CHECK(e2 == NULL);
    int mask = -1;
    AMT_OK(AM_GetEventMask(fresh, &mask));
    AMT_CHECK(mask == AM_NOEVENTS);
    ping(fresh, e); /* its endpoint is still there */
    /* An endpoint freed with its bundle is stale too. */
    AMT_OK(AM_FreeBundle(fresh));
    AMT_ST(AM_FreeEndpoint(e), AM_ERR_BAD_ARG);
}

static void stale_token(void)
{
    eb_t b;
    AMT_OK(AM_AllocateBundle(AM_SEQ, &b));
    ep_t e = new_endpoint(b);
    AMT_OK(AM_Request0(e, 0, H_KEEP));
    AMT_POLL_UNTIL(b, acks, 1);
    AMT_OK(AM_Request0(e, 0, H_STALE));
    AMT_POLL_UNTIL(b, acks, 2);
    for (int i = 0; i < 100; i++) /* no second reply from the stale token */
        AMT_OK(AM_Poll(b));
    AMT_CHECK(kept_runs == 1 && stale_runs == 1 && acks == 2);
    AMT_OK(AM_FreeBundle(b));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {
        {"endpoint", stale_endpoint}, {"bundle", stale_bundle}, {"token", stale_token}};
    AMT_OK(AM_Init());
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (argc < 2 || strcmp(argv[1], cases[i].name) == 0)
            cases[i].run();
    AMT_OK(AM_Terminate());
    return 0;
}
