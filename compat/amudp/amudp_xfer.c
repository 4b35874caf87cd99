/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Xfer as a put: the segment's export on its owner, what each sender knows
 * of its destinations' segments, and the short message after the put that
 * runs the handler (the protocol is described in amudp_internal.h).
 */
#include <stdlib.h>
#include <string.h>

#include "amudp_internal.h"

/* (Re-)exports the segment: any earlier export is revoked, so that the
   senders that imported it ask again. No segment, or an export flit
   refuses: none, and Xfers travel as medium messages. */
void amx_seg_export(struct amudp_ep *ep)
{
    if (ep->seg_region)
        flit_rma_unexport(ep->seg_region);
    ep->seg_region = NULL;
    if (!ep->seg || !ep->seglen)
        return;
    flit_rma_region_t *r;
    if (flit_rma_export(ep->fep, ep->seg, ep->seglen, FLIT_RMA_WRITE, NULL, 0, &r) ==
        FLIT_OK)
        ep->seg_region = r;
}

struct amx_peer *amx_peer_of(struct amudp_ep *ep, uint32_t rank)
{
    uint32_t n = flit_job_size();
    if (rank >= n)
        return NULL;
    if (!ep->peers)
        ep->peers = calloc(n, sizeof *ep->peers);
    return ep->peers ? &ep->peers[rank] : NULL;
}

/* ---------------------------------------------------------------- the question */

/* A question: [serial]. */
void amx_seg_question(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    (void)buf, (void)nbytes;
    struct amudp_ep *ep = ((struct amx_slot *)user)->ep;
    uint64_t id = ep->seg_region ? flit_rma_region_id(ep->seg_region) : 0;
    uint32_t w[5] = {nargs ? args[0] : 0, (uint32_t)id, (uint32_t)(id >> 32),
                     (uint32_t)ep->tag, (uint32_t)(ep->tag >> 32)};
    flit_am_reply_short(ft, flit_handler(AMX_H_SEGA), w, 5);
}

/* Its answer: [serial, id (2 words), tag (2 words)]; only the answer to the
   latest question counts. */
void amx_seg_answer(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf, (void)nbytes;
    struct amx_peer *p =
        amx_peer_of(((struct amx_slot *)user)->ep, flit_token_rank(ft).idx);
    if (!p || nargs != 5 || args[0] != p->asked)
        return;
    p->seg_id = args[1] | (uint64_t)args[2] << 32;
    p->seg_tag = args[3] | (uint64_t)args[4] << 32;
    p->answered = 1;
}

/* A question that came back (the destination died, or refused our tag):
   the answer is "no segment". 1 when info was a question. */
int amx_seg_returned(struct amudp_ep *ep, const flit_returned_t *info)
{
    if (info->handler.idx != AMX_H_SEGQ)
        return 0;
    struct amx_peer *p = amx_peer_of(ep, info->peer.idx);
    if (p && info->nargs == 1 && info->args[0] == p->asked) {
        p->seg_id = 0;
        p->answered = 1;
    }
    return 1;
}

/* Asks dest for its segment's export and imports it; 0 when there is none
   to put into. Handlers run while it waits, as in a request without
   credit. */
static int import_segment(struct amudp_ep *ep, flit_rank_t dest, struct amx_peer *p)
{
    uint32_t q = ++ep->next_question;
    p->asked = q;
    p->answered = 0;
    if (flit_am_short(ep->fep, dest, flit_handler(AMX_H_SEGQ), &q, 1, 0) != FLIT_OK)
        return 0;
    while (!p->answered) {
        flit_status st = flit_wait(ep->fep, 100000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return 0;
    }
    flit_rma_remote_t *r;
    if (p->seg_id == 0 || flit_rma_import(ep->fep, dest, p->seg_id, &r) != FLIT_OK)
        return 0;
    p->remote = r;
    return 1;
}

/* ---------------------------------------------------------------- the put */

/* The message that runs handler h once the put's data is in place. */
static flit_status notify(struct amudp_ep *ep, flit_rank_t dest, handler_t h,
                          size_t nbytes, uint64_t off, const uint32_t *args,
                          unsigned nargs)
{
    if (nargs <= AMX_PUT_ARGS) {
        uint32_t a[FLIT_AM_MAX_ARGS];
        memcpy(a, args, nargs * sizeof *a);
        a[nargs] = (uint32_t)off;
        a[nargs + 1] = (uint32_t)(off >> 32);
        a[nargs + 2] = (uint32_t)nbytes;
        return flit_am_short(ep->fep, dest, flit_handler(AMX_H_INDEX(AMX_PUT, 0, h)), a,
                             nargs + 3, 0);
    }
    unsigned char hdr[AMX_PUT_HDR];
    amx_put_le(hdr, off, 8);
    amx_put_le(hdr + 8, nbytes, 4);
    return flit_am_medium(ep->fep, dest, flit_handler(AMX_H_INDEX(AMX_PUTHDR, 0, h)), hdr,
                          sizeof hdr, args, nargs, 0);
}

/*
 * Sends a request Xfer as a put and its notification, when it can: 1 with
 * the send's status in *st, 0 when the message must travel as a medium
 * (too small; no segment there, or not one we may put into; a segment this
 * process cannot copy into itself (not mapped here, not its own); an offset or a
 * length the destination's segment does not hold, which the destination
 * then refuses with AM-2's status; a request from inside a handler, which
 * flit refuses there too).
 */
int amx_put_xfer(struct amudp_ep *ep, flit_rank_t dest, handler_t h, const void *src,
                 size_t nbytes, uint64_t off, const uint32_t *args, unsigned nargs,
                 flit_status *st)
{
    struct amx_peer *p = nbytes >= AMX_PUT_MIN ? amx_peer_of(ep, dest.idx) : NULL;
    if (!p || !p->has_send_tag)
        return 0;
    for (int tries = 0; tries < 2; tries++) {
        if (!p->remote && !import_segment(ep, dest, p))
            return 0;
        if (p->seg_tag != p->send_tag)
            return 0; /* it would refuse the message: nothing may land */
        if (flit_rma_remote_path(p->remote) != FLIT_RMA_PATH_COPY)
            return 0; /* by the kernel or in packets: a medium costs less */
        flit_status put = flit_rma_put(p->remote, off, src, nbytes, 0, NULL);
        if (put == FLIT_OK) {
            *st = notify(ep, dest, h, nbytes, off, args, nargs);
            return 1;
        }
        if (put != FLIT_ERR_REVOKED)
            return 0;
        flit_rma_release(p->remote); /* a new segment, or a new tag: ask again */
        p->remote = NULL;
    }
    return 0;
}
