/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * View changes: when a member dies the survivors agree on what was
 * delivered, catch up, and go on in a new view (docs/groups.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- views */

/*
 * A view change, in short (docs/groups.md has it in full). A survivor that
 * learns of a death freezes its deliveries and reports how many messages
 * it delivered to the coordinator (the sequencer, or the lowest survivor
 * when the sequencer died). With every survivor's report, the coordinator
 * names final, the most any survivor delivered, and a survivor that did:
 * the others fetch what they lack from it (it keeps its newest deliveries
 * for that) and deliver up to final, no further. Once all have, each
 * survivor's messages not ordered yet are sent again in the new view, where
 * numbering goes on from final with the credits back in the manager's pool.
 */

static uint32_t survivors(const struct flit_group *g)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->n; i++)
        k += !g->gone[i];
    return k;
}

/* The coordinator: the sequencer, or the lowest survivor (a rank). */
static uint32_t coordinator(const struct flit_group *g)
{
    if (!g->gone[g->seqr])
        return g->members[g->seqr];
    for (uint32_t i = 0; i < g->n; i++)
        if (!g->gone[i])
            return g->members[i];
    return g->gs->me;
}

/* Under the lock: member i left; (re)start forming the view without it. */
void fl_grp_start_view_change(struct flit_group *g, uint32_t i)
{
    if (g->gone[i])
        return;
    g->gone[i] = 1;
    g->left[g->nleft++] = g->members[i];
    struct recovery *r = &g->rec;
    *r = (struct recovery){.on = true, .co = coordinator(g)};
    r->rview = g->view + (g->n - survivors(g));
    uint32_t st[3] = {g->members[i]};
    put64(st + 1, g->next_deliver);
    fl_grp_ctl_to(g, r->co, OP_STATE, r->rview, st, 3);
    if (r->co != g->gs->me)
        return;
    /* Every member that left, to every survivor: one that died before any
       survivor heard of it may be unknown to a survivor that never talked
       to it (its endpoint has nothing to notice), and the round needs all
       survivors to count the same deaths. */
    for (uint32_t d = 0; d < g->n; d++)
        for (uint32_t k = 0; g->gone[d] && k < g->n; k++)
            if (!g->gone[k] && k != g->me)
                fl_grp_ctl_to(g, g->members[k], OP_QUERY, r->rview, &g->members[d], 1);
}

/* Under the lock: rank left (as a peer told us); false: not a member. */
static bool learn_left(struct flit_group *g, uint32_t rank)
{
    uint32_t i = index_of(g, rank);
    if (i == NO_RANK)
        return false;
    fl_grp_start_view_change(g, i);
    return true;
}

/* At the coordinator: a survivor's report. */
void fl_grp_on_state(struct flit_group *g, uint32_t from_rank, const uint32_t *a)
{
    learn_left(g, a[3]);
    struct recovery *r = &g->rec;
    if (!r->on || a[2] != r->rview || r->co != g->gs->me || r->final_known)
        return;
    uint64_t d = get64(a + 4);
    if (r->states++ == 0 || d > r->max_delivered) {
        r->max_delivered = d;
        r->donor = from_rank;
    }
    if (r->states < survivors(g))
        return;
    uint32_t nv[3];
    put64(nv, r->max_delivered);
    nv[2] = r->donor;
    for (uint32_t k = 0; k < g->n; k++)
        if (!g->gone[k])
            fl_grp_ctl_to(g, g->members[k], OP_NEWVIEW, r->rview, nv, 3);
}

void fl_grp_on_query(struct flit_group *g, const uint32_t *a)
{
    if (a[2] > g->view)
        learn_left(g, a[3]);
}

void fl_grp_on_newview(struct flit_group *g, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (!r->on || a[2] != r->rview || r->final_known)
        return;
    if (index_of(g, a[5]) == NO_RANK) { /* the donor must be a member */
        fl_grp_refuse(g->gs, g->id, r->co, "a new view naming no member");
        return;
    }
    r->final_known = true;
    r->final = get64(a + 3);
    if (g->next_deliver < r->final && a[5] != g->gs->me) {
        uint32_t range[4];
        put64(range, g->next_deliver);
        put64(range + 2, r->final);
        fl_grp_ctl_to(g, a[5], OP_CATCHUP, r->rview, range, 4);
    }
    fl_grp_deliver_ready(g);
}

/* At the donor: sends rank what it kept from fl_grp_number from up to final. */
void fl_grp_on_catchup(struct flit_group *g, uint32_t rank, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (!r->on || a[2] != r->rview)
        return;
    uint64_t from = get64(a + 3), to = get64(a + 5);
    for (struct gmsg *m = g->ret_head; m; m = m->ret_next)
        if (m->seq >= from && m->seq < to)
            fl_grp_push_fragments(g, m, rank, NO_RANK);
}

/* Credits this member's messages not ordered yet will take again. */
static uint64_t own_cost(const struct flit_group *g)
{
    uint64_t c = 0;
    for (const struct gmsg *m = g->own_head; m; m = m->own_next)
        c += m->cost;
    return c;
}

/* Under the lock: after a NEWVIEW, once this member delivered up to final,
   says so to the coordinator. */
void fl_grp_check_caught(struct flit_group *g)
{
    struct recovery *r = &g->rec;
    if (!r->on || !r->final_known || r->caught_sent || g->next_deliver < r->final)
        return;
    r->caught_sent = true;
    uint32_t c = (uint32_t)own_cost(g);
    fl_grp_ctl_to(g, r->co, OP_CAUGHT, r->rview, &c, 1);
}

/* Under the lock: the new view: survivors only, numbering from final. */
static flit_status install(struct flit_group *g, int64_t pool)
{
    struct recovery *r = &g->rec;
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->n; i++)
        if (!g->gone[i])
            g->members[k++] = g->members[i];
    g->views += g->n - k; /* one per member that left: two may go at once */
    g->n = k;
    memset(g->gone, 0, g->n);
    g->me = index_of(g, g->gs->me);
    g->seqr = index_of(g, r->co);
    g->view = r->rview;
    g->next_deliver = g->acked = r->final;
    r->on = false;
    /* Numbers of the old view past final were never delivered. */
    for (unsigned b = 0; b < HB_BUCKETS; b++) {
        for (struct gmsg **p = &g->hb[b]; *p;) {
            struct gmsg *m = *p;
            if (m->view < g->view) {
                *p = m->next;
                fl_grp_msg_unref(g, m);
            } else {
                p = &m->next;
            }
        }
    }
    while (g->unnumbered) {
        struct gmsg *m = g->unnumbered;
        g->unnumbered = m->next;
        fl_grp_msg_unref(g, m);
    }
    fl_grp_retained_clear(g); /* every survivor delivered all of it */
    flit_status st = FLIT_OK;
    if (g->me == g->seqr)
        st = fl_grp_seqr_reset(g, r->final, pool);
    g->allowance = g->window / (2 * g->n);
    g->credits = 0; /* the pool has them all: ask */
    g->cred_asked = false;
    /* This member's messages not ordered yet go again, in order, paid. */
    for (struct gmsg *m = g->own_head; m; m = m->own_next) {
        uint32_t a[MAX_ARGS] = {0, g->id, g->view, m->sender_seq};
        if (m->total <= g->small_max) {
            a[0] = op_word(OP_SMALL);
            fl_grp_out_push(g->gs, g, g->members[g->seqr], a, 5, m, 0, m->total);
        } else {
            a[0] = op_word(OP_SEQREQ);
            a[4] = m->cost;
            m->refs++;
            m->next = g->unnumbered;
            g->unnumbered = m;
            fl_grp_out_push(g->gs, g, g->members[g->seqr], a, 6, NULL, 0, 0);
        }
    }
    if (g->leave_sent)
        fl_grp_ctl_push(g, g->seqr, OP_LEAVE, NULL, 0);
    if (g->fin_sent)
        fl_grp_ctl_push(g, g->seqr, OP_FIN, NULL, 0);
    fl_grp_deliver_ready(g);
    return st;
}

void fl_grp_on_caught(struct flit_group *g, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (!r->on || a[2] != r->rview || r->co != g->gs->me)
        return;
    r->pending += a[3];
    if (++r->caught < survivors(g))
        return;
    uint32_t view = r->rview;
    if (install(g, (int64_t)g->window - (int64_t)r->pending) != FLIT_OK)
        fprintf(stderr, "flit: group %u: no memory for the new view\n", g->id);
    for (uint32_t i = 0; i < g->n; i++)
        if (i != g->me)
            fl_grp_ctl_to(g, g->members[i], OP_INSTALL, view, NULL, 0);
}

void fl_grp_on_install(struct flit_group *g, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (r->on && a[2] == r->rview && r->final_known && g->next_deliver == r->final)
        install(g, 0);
}
