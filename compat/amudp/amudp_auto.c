/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AMUDP's automatic replies, as its statistics count them. AMUDP answers a
 * request whose handler sent no reply with a reply of its own (its
 * acknowledgement): the receiver counts a short reply sent, the sender a
 * short reply received, and AMUDP_DumpStatistics shows them among the
 * replies. flit needs no such message, so this library sends none per
 * request: the receiver counts the reply at once and owes its sender the
 * news, which goes as one count per sender (AMX_H_AUTO) the next time the
 * program polls, sends a request or waits, off the path of each message.
 * The sender acknowledges each count (AMX_H_AUTO_ACK), so that
 * AMUDP_SPMDBarrier can wait until every count it told has arrived: after
 * a barrier, the sum over the job of replies sent equals that of replies
 * received, as the programs that check AMUDP's statistics expect.
 * Requests to oneself get no automatic reply, as in AMUDP.
 */
#include "amudp_internal.h"

void amx_auto_owe(struct amudp_ep *ep, flit_rank_t sender)
{
    struct amx_peer *p = amx_peer_of(ep, sender.idx);
    if (!p || sender.idx == flit_job_rank().idx)
        return;
    ep->stats.RepliesSent[amudp_Short]++; /* no arguments, no data: no bytes */
    if (p->owed++ == 0) {
        p->owed_next = ep->owed_head;
        ep->owed_head = sender.idx;
    }
}

/* Tells each sender owed automatic replies how many; a sender whose
   message finds no room now stays on the list for the next flush. */
void amx_auto_flush(struct amudp_ep *ep)
{
    uint32_t keep = AMX_NONE;
    if (ep->owed_head == AMX_NONE || flit_in_handler())
        return;
    for (uint32_t r = ep->owed_head, next; r != AMX_NONE; r = next) {
        struct amx_peer *p = &ep->peers[r];
        next = p->owed_next;
        if (p->owed == 0)
            continue; /* that sender went down */
        flit_status st = flit_am_short(ep->fep, flit_rank(r), flit_handler(AMX_H_AUTO),
                                       &p->owed, 1, FLIT_AM_NONBLOCK);
        if (st == FLIT_ERR_AGAIN) {
            p->owed_next = keep;
            keep = r;
            continue;
        }
        if (st == FLIT_OK) {
            p->unacked += p->owed;
            ep->auto_unacked += p->owed;
        }
        p->owed = 0; /* told, or that sender is gone */
    }
    ep->owed_head = keep;
}

static int settled(void *arg)
{
    struct amudp_ep *ep = (struct amudp_ep *)arg;
    amx_auto_flush(ep);
    return ep->owed_head == AMX_NONE && ep->auto_unacked == 0;
}

int amx_auto_settle(struct amudp_ep *ep, const char *fn)
{
    return amx_wait_until(ep, settled, ep, fn);
}

/* A receiver's count: the automatic replies it sent us. */
void amx_auto_told(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)buf, (void)nbytes;
    struct amudp_ep *ep = ((struct amx_slot *)user)->ep;
    if (nargs != 1)
        return;
    ep->stats.RepliesReceived[amudp_Short] += args[0];
    flit_am_reply_short(ft, flit_handler(AMX_H_AUTO_ACK), args, 1);
}

void amx_auto_acked(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf, (void)nbytes;
    struct amudp_ep *ep = ((struct amx_slot *)user)->ep;
    struct amx_peer *p = amx_peer_of(ep, flit_token_rank(ft).idx);
    if (!p || nargs != 1 || args[0] > p->unacked)
        return; /* not a count we told */
    p->unacked -= args[0];
    ep->auto_unacked -= args[0];
}

/* A count the sender refused (its tag is not the one this endpoint holds
   for it): it never learns of those replies, and nothing waits for them. */
void amx_auto_refused(struct amudp_ep *ep, uint32_t rank, uint32_t count)
{
    struct amx_peer *p = ep->peers && rank < flit_job_size() ? &ep->peers[rank] : NULL;
    if (!p || count > p->unacked)
        return;
    p->unacked -= count;
    ep->auto_unacked -= count;
}

/* A sender gone: nothing more to tell it, nor to hear from it. */
void amx_auto_peer_down(struct amudp_ep *ep, uint32_t rank)
{
    struct amx_peer *p = ep->peers && rank < flit_job_size() ? &ep->peers[rank] : NULL;
    if (!p)
        return;
    ep->auto_unacked -= p->unacked;
    p->unacked = 0;
    p->owed = 0; /* stays listed until the next flush, which drops it */
}
