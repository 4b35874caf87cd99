/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AMUDP's statistics: counters this library keeps per endpoint as it sends
 * and dispatches, plus what only flit knows (retransmissions), and
 * AMUDP's readable report.
 */
#include <stdio.h>
#include <string.h>

#include "amudp_internal.h"

const amudp_stats_t AMUDP_initial_stats = {
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0},      {0, 0, 0}, {0, 0, 0}, {0, 0, 0},
    0,         0,         0,         (amx_tick_t)-1, /* min latency: none yet */
    0,         0,         {0, 0, 0}, {0, 0, 0},      {0, 0, 0}, {0, 0, 0}, 0};

static uint64_t flit_retransmits(struct amudp_ep *ep)
{
    flit_stats_t fs;
    memset(&fs, 0, sizeof fs);
    fs.struct_size = sizeof fs;
    return flit_ep_stats(ep->fep, &fs) == FLIT_OK ? fs.retransmits : 0;
}

/* flit retransmits packets, not messages of a category: they are counted
   under short requests. */
int AMUDP_GetEndpointStatistics(ep_t h, amudp_stats_t *stats)
{
    struct amudp_ep *ep = amx_ep_of(h);
    if (!ep || !stats)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_GetEndpointStatistics",
                       "endpoint or stats");
    *stats = ep->stats;
    stats->RequestsRetransmitted[amudp_Short] +=
        flit_retransmits(ep) - ep->retransmits_before;
    return AM_OK;
}

int AMUDP_ResetEndpointStatistics(ep_t h)
{
    struct amudp_ep *ep = amx_ep_of(h);
    if (!ep)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_ResetEndpointStatistics",
                       "not an endpoint");
    ep->stats = AMUDP_initial_stats;
    ep->retransmits_before = flit_retransmits(ep);
    return AM_OK;
}

static void add3(uint64_t *sum, const uint64_t *v)
{
    for (int c = 0; c < amudp_NumCategories; c++)
        sum[c] += v[c];
}

int AMUDP_AggregateStatistics(amudp_stats_t *runningsum, amudp_stats_t *newvalues)
{
    if (!runningsum || !newvalues)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_AggregateStatistics", "NULL stats");
    amudp_stats_t *s = runningsum;
    const amudp_stats_t *v = newvalues;
    add3(s->RequestsSent, v->RequestsSent);
    add3(s->RepliesSent, v->RepliesSent);
    add3(s->RequestsRetransmitted, v->RequestsRetransmitted);
    add3(s->RepliesRetransmitted, v->RepliesRetransmitted);
    add3(s->RepliesSquashed, v->RepliesSquashed);
    add3(s->RequestsReceived, v->RequestsReceived);
    add3(s->RepliesReceived, v->RepliesReceived);
    s->ReturnedMessages += v->ReturnedMessages;
    s->OutOfOrderRequests += v->OutOfOrderRequests;
    s->OutOfOrderReplies += v->OutOfOrderReplies;
    if (v->RequestMinLatency < s->RequestMinLatency)
        s->RequestMinLatency = v->RequestMinLatency;
    if (v->RequestMaxLatency > s->RequestMaxLatency)
        s->RequestMaxLatency = v->RequestMaxLatency;
    s->RequestSumLatency += v->RequestSumLatency;
    add3(s->RequestDataBytesSent, v->RequestDataBytesSent);
    add3(s->ReplyDataBytesSent, v->ReplyDataBytesSent);
    add3(s->RequestTotalBytesSent, v->RequestTotalBytesSent);
    add3(s->ReplyTotalBytesSent, v->ReplyTotalBytesSent);
    s->TotalBytesSent += v->TotalBytesSent;
    return AM_OK;
}

static uint64_t sum3(const uint64_t *v)
{
    return v[0] + v[1] + v[2];
}

static char report[2048];

const char *AMUDP_DumpStatistics(void *fp, amudp_stats_t *stats, int globalAnalysis)
{
    if (!stats)
        return NULL;
    const amudp_stats_t *s = stats;
    uint64_t req = sum3(s->RequestsSent), rep = sum3(s->RepliesSent);
    uint64_t data = sum3(s->RequestDataBytesSent) + sum3(s->ReplyDataBytesSent);
    uint64_t msgs = req + rep;
    snprintf(report, sizeof report,
             "%s AMUDP statistics (on flit):\n"
             " Requests: %" PRIu64 " sent (%" PRIu64 " short, %" PRIu64
             " medium, %" PRIu64 " long), %" PRIu64 " received\n"
             " Replies:  %" PRIu64 " sent (%" PRIu64 " short, %" PRIu64
             " medium, %" PRIu64 " long), %" PRIu64 " received\n"
             " Returned messages: %" PRIu64 "\n"
             " Retransmitted packets: %" PRIu64 "\n"
             " Data bytes sent (arguments and payload): %" PRIu64 " (%.1f per message)\n"
             " Total bytes sent: %" PRIu64 "\n",
             globalAnalysis ? "Global" : "Endpoint", req, s->RequestsSent[0],
             s->RequestsSent[1], s->RequestsSent[2], sum3(s->RequestsReceived), rep,
             s->RepliesSent[0], s->RepliesSent[1], s->RepliesSent[2],
             sum3(s->RepliesReceived), s->ReturnedMessages,
             sum3(s->RequestsRetransmitted) + sum3(s->RepliesRetransmitted), data,
             msgs ? (double)data / (double)msgs : 0.0, s->TotalBytesSent);
    if (fp) {
        fputs(report, (FILE *)fp);
        fflush((FILE *)fp);
    }
    return report;
}
