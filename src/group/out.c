/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Messages (reference-counted, with their fragments' arrival marks) and the
 * queue of active messages waiting to go out, drained by program code.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- messages */

/* Credits a message of total bytes costs: one per fragment, at least one;
   a small one (through the sequencer) one. The same at every member. */
uint32_t fl_grp_cost_of(const struct flit_group *g, size_t total)
{
    if (total <= g->small_max)
        return 1;
    size_t c = (total + g->frag - 1) / g->frag;
    return c ? (uint32_t)c : 1u;
}

size_t fl_grp_frags_of(const struct flit_group *g, size_t total)
{
    size_t c = (total + g->frag - 1) / g->frag;
    return c ? c : 1;
}

/* Bytes of a message's two fragment maps (have, owe). */
static size_t maps_of(const struct flit_group *g, size_t total)
{
    return 2 * ((fl_grp_frags_of(g, total) + 7) / 8);
}

/* Under the lock. NULL when out of memory. */
struct gmsg *fl_grp_msg_new(struct flit_group *g, size_t total)
{
    size_t bits = maps_of(g, total);
    struct gmsg *m = malloc(sizeof *m + total + bits);
    if (!m)
        return NULL;
    memset(m, 0, sizeof *m);
    m->total = total;
    m->refs = 1;
    m->cost = fl_grp_cost_of(g, total);
    m->have = m->data + total;
    m->owe = m->have + bits / 2;
    memset(m->have, 0, bits);
    g->buffered += sizeof *m + total + bits;
    if (g->buffered > g->buffered_max)
        g->buffered_max = g->buffered;
    return m;
}

/* Under the lock. */
void fl_grp_msg_unref(struct flit_group *g, struct gmsg *m)
{
    if (--m->refs)
        return;
    g->buffered -= sizeof *m + m->total + maps_of(g, m->total);
    free(m);
}

struct gmsg **fl_grp_hb_slot(struct flit_group *g, uint64_t seq)
{
    struct gmsg **p = &g->hb[seq % HB_BUCKETS];
    while (*p && (*p)->seq != seq)
        p = &(*p)->next;
    return p;
}

/* ---------------------------------------------------------------- out queue */

/* Under the lock. Appends a message for rank dest; false: no memory. */
bool fl_grp_out_push(struct flit_groups *gs, struct flit_group *g, uint32_t dest,
                     const uint32_t *args, unsigned nargs, struct gmsg *msg, size_t off,
                     size_t len)
{
    struct out *o = gs->out_free;
    if (o)
        gs->out_free = o->next;
    else if (!(o = malloc(sizeof *o))) {
        /* The caller keeps what it needs to queue it again: a pass of
           fl_grp_retry does. */
        atomic_store_explicit(&gs->owed, true, memory_order_release);
        atomic_store_explicit(&gs->work, true, memory_order_release);
        return false;
    }
    o->next = NULL;
    o->g = g;
    o->dest = dest;
    o->nargs = nargs;
    memcpy(o->args, args, nargs * sizeof *args);
    o->msg = msg;
    o->off = off;
    o->len = len;
    if (msg)
        msg->refs++;
    if (g)
        g->queued++;
    if (gs->out_tail)
        gs->out_tail->next = o;
    else
        gs->out_head = o;
    gs->out_tail = o;
    atomic_store_explicit(&gs->work, true, memory_order_release);
    return true;
}

/* Under the lock: a control message of group g, view view, to rank. */
bool fl_grp_ctl_to(struct flit_group *g, uint32_t rank, enum op op, uint32_t view,
                   const uint32_t *rest, unsigned nrest)
{
    uint32_t a[MAX_ARGS] = {op_word(op), g->id, view};
    for (unsigned i = 0; i < nrest; i++)
        a[3 + i] = rest[i];
    return fl_grp_out_push(g->gs, g, rank, a, 3 + nrest, NULL, 0, 0);
}

/* The same to member index i, in the current view. */
bool fl_grp_ctl_push(struct flit_group *g, uint32_t i, enum op op, const uint32_t *rest,
                     unsigned nrest)
{
    return fl_grp_ctl_to(g, g->members[i], op, g->view, rest, nrest);
}

/* Under the lock: an item is done with (sent, or dropped). */
void fl_grp_out_release(struct flit_groups *gs, struct out *o)
{
    if (o->msg)
        fl_grp_msg_unref(o->g, o->msg);
    if (o->g)
        o->g->queued--;
    o->next = gs->out_free;
    gs->out_free = o;
}

/* A failure of this process, not of the peer or the message: try again. */
static bool local_failure(flit_status st)
{
    return st == FLIT_ERR_NO_MEMORY || st == FLIT_ERR_SYSTEM;
}

/* Under the lock: the first send kept for a local failure is said (once:
   a shortage may last many passes). */
static void note_retry(struct flit_groups *gs, const struct out *o, flit_status st)
{
    if (gs->retry_said)
        return;
    gs->retry_said = true;
    flit_log(FLIT_LOG_WARN,
             "group: a message to rank %u could not be sent (%s): kept, sent again on a "
             "later pass (said once)",
             o->dest, flit_strerror(st));
}

static flit_status out_send(struct flit_groups *gs, const struct out *o, bool more)
{
    unsigned flags = FLIT_AM_NONBLOCK | (more ? FLIT_AM_MORE : 0);
    if (o->msg)
        return flit_am_medium(gs->ep, flit_rank(o->dest), gs->h, o->msg->data + o->off,
                              o->len, o->args, o->nargs, flags);
    return flit_am_short(gs->ep, flit_rank(o->dest), gs->h, o->args, o->nargs, flags);
}

/*
 * Program context only (never inside a handler): sends what the queue
 * holds until it is empty or a destination has no room. One thread at a
 * time; the others leave it to that one. A message to a dead rank is
 * dropped: the view change makes up for it. One that fails for a local
 * shortage stays first and the pass ends: the next pass (the progress
 * listener's, or a wait's after its slice) tries it again.
 */
void fl_grp_drain(struct flit_groups *gs)
{
    lock(gs);
    if (gs->draining || !gs->out_head) {
        unlock(gs);
        return;
    }
    gs->draining = true;
    struct out *o;
    while ((o = gs->out_head)) {
        gs->out_head = o->next;
        if (!gs->out_head)
            gs->out_tail = NULL;
        bool more = gs->out_head != NULL;
        unlock(gs);
        flit_status st = out_send(gs, o, more);
        lock(gs);
        /* No room; or a send of the program's made from a handler of
           another layer: the progress listener sends it after the pass. */
        bool local = local_failure(st);
        if (st == FLIT_ERR_AGAIN || st == FLIT_ERR_IN_HANDLER || local) {
            if (o->g && o->msg && st == FLIT_ERR_AGAIN)
                o->g->forward_waits++;
            if (local)
                note_retry(gs, o, st);
            o->next = gs->out_head;
            gs->out_head = o;
            if (!gs->out_tail)
                gs->out_tail = o;
            break;
        }
        if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
            flit_log(FLIT_LOG_ERROR, "group: message to rank %u lost: %s", o->dest,
                     flit_strerror(st));
        if (st == FLIT_OK && o->msg)
            o->g->forwarded++;
        fl_grp_out_release(gs, o);
    }
    gs->draining = false;
    unlock(gs);
}
