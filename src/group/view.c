/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * View changes: when a member dies the survivors agree on what was
 * delivered, catch up, and go on in a new view (docs/groups.md).
 */
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

/* Under the lock: the survivors whose bit is set in heard. */
static uint32_t heard_from(const struct flit_group *g, unsigned bit)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->n; i++)
        k += !g->gone[i] && (g->heard[i] & bit);
    return k;
}

/*
 * Under the lock: this survivor's report to the coordinator, once per
 * member it knows left. A coordinator that knew of fewer deaths when the
 * report came dropped it (another round); each names one of them, so the
 * coordinator learns them all, and it asks again (QUERY) in every round
 * it starts. Not all queued: fl_grp_retry_view sends it again.
 */
static void send_state(struct flit_group *g)
{
    struct recovery *r = &g->rec;
    uint32_t st[3];
    put64(st + 1, g->next_deliver);
    r->state_sent = true;
    for (uint32_t d = 0; d < g->n; d++) {
        if (!g->gone[d])
            continue;
        st[0] = g->members[d];
        r->state_sent =
            fl_grp_ctl_to(g, r->co, OP_STATE, r->rview, st, 3) && r->state_sent;
    }
}

/* Under the lock: hold-back entries of a view below v go (never delivered). */
static void forget_views_below(struct flit_group *g, uint32_t v)
{
    for (unsigned b = 0; b < HB_BUCKETS; b++) {
        for (struct gmsg **p = &g->hb[b]; *p;) {
            struct gmsg *m = *p;
            if (m->view < v) {
                *p = m->next;
                fl_grp_msg_unref(g, m);
            } else {
                p = &m->next;
            }
        }
    }
}

/*
 * Under the lock: the views whose fragments this survivor still takes in
 * the round it starts. One that caught up in the last round (delivered up
 * to its final) may be the only survivor not to install that view: the
 * coordinator may have installed it and numbered messages in it before
 * this survivor heard of the next death (its INSTALL then names a round
 * gone here). The new round's final may lie among those messages, so they
 * are taken here, from the catch-up; the old view's numbers past that
 * final were delivered nowhere and never will be.
 */
static uint32_t min_view_next(struct flit_group *g)
{
    const struct recovery *r = &g->rec;
    if (!r->on)
        return g->view;
    if (r->final_known && g->next_deliver >= r->final && r->rview > r->min_view) {
        forget_views_below(g, r->rview);
        return r->rview;
    }
    return r->min_view;
}

/* Under the lock: member i left; (re)start forming the view without it. */
void fl_grp_start_view_change(struct flit_group *g, uint32_t i)
{
    if (g->gone[i])
        return;
    g->gone[i] = 1;
    g->left[g->nleft++] = g->members[i];
    struct recovery *r = &g->rec;
    uint32_t min_view = min_view_next(g);
    *r = (struct recovery){.on = true, .co = coordinator(g), .min_view = min_view};
    r->rview = g->view + (g->n - survivors(g));
    /* What the last round still owed is of no use in this one. */
    memset(g->bc_owed, 0, g->n);
    memset(g->cu_owed, 0, g->n);
    memset(g->heard, 0, g->n);
    send_state(g);
    if (r->co != g->gs->me)
        return;
    /* Every member that left, to every survivor: one that died before any
       survivor heard of it may be unknown to a survivor that never talked
       to it (its endpoint has nothing to notice), and the round needs all
       survivors to count the same deaths. */
    for (uint32_t k = 0; k < g->n; k++)
        if (!g->gone[k] && k != g->me)
            g->bc_owed[k] |= BC_QUERY;
    fl_grp_retry_broadcasts(g);
}

/* Under the lock: what the coordinator sends survivor i in a view change
   (bc_owed's BC_QUERY, BC_NEWVIEW, BC_INSTALL); false: not all queued. */
bool fl_grp_view_bc_send(struct flit_group *g, uint32_t i, unsigned bit)
{
    struct recovery *r = &g->rec;
    uint32_t rank = g->members[i], nv[3];
    bool all = true;
    switch (bit) {
    case BC_QUERY: /* (one twice is harmless: a death is learnt once) */
        for (uint32_t d = 0; d < g->n; d++)
            if (g->gone[d])
                all =
                    fl_grp_ctl_to(g, rank, OP_QUERY, r->rview, &g->members[d], 1) && all;
        return all;
    case BC_NEWVIEW:
        put64(nv, r->max_delivered);
        nv[2] = r->donor;
        return fl_grp_ctl_to(g, rank, OP_NEWVIEW, r->rview, nv, 3);
    case BC_INSTALL: /* after install: the view is the new one */
        return fl_grp_ctl_to(g, rank, OP_INSTALL, g->view, NULL, 0);
    default:
        return true;
    }
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
    uint32_t i = index_of(g, from_rank);
    if (!r->on || a[2] != r->rview || r->co != g->gs->me || r->final_known ||
        (g->heard[i] & HEARD_STATE))
        return;
    uint64_t d = get64(a + 4);
    if (heard_from(g, HEARD_STATE) == 0 || d > r->max_delivered) {
        r->max_delivered = d;
        r->donor = from_rank;
    }
    g->heard[i] |= HEARD_STATE;
    if (heard_from(g, HEARD_STATE) < survivors(g))
        return;
    fl_grp_broadcast(g, BC_NEWVIEW);
}

/* A coordinator asks: news of a death starts this survivor's round (and
   its report); one it knew of already means its report may have been
   dropped there, so it goes again. */
void fl_grp_on_query(struct flit_group *g, const uint32_t *a)
{
    uint32_t i = index_of(g, a[3]);
    if (a[2] <= g->view || i == NO_RANK)
        return; /* of a view installed here already */
    if (!g->gone[i])
        fl_grp_start_view_change(g, i);
    else if (g->rec.on && !g->rec.final_known)
        send_state(g);
}

/* Under the lock: after NEWVIEW, what this survivor lacks, from the donor
   (r->asked once queued, or when nothing is lacking). */
static void ask_catchup(struct flit_group *g)
{
    struct recovery *r = &g->rec;
    if (g->next_deliver >= r->final || r->donor_rank == g->gs->me) {
        r->asked = true;
        return;
    }
    uint32_t range[4];
    put64(range, g->next_deliver);
    put64(range + 2, r->final);
    r->asked = fl_grp_ctl_to(g, r->donor_rank, OP_CATCHUP, r->rview, range, 4);
}

/* Under the lock: what this survivor could not queue in the view change
   so far (a pass of fl_grp_retry). */
void fl_grp_retry_view(struct flit_group *g)
{
    struct recovery *r = &g->rec;
    if (!r->state_sent)
        send_state(g);
    if (r->final_known && !r->asked)
        ask_catchup(g);
    fl_grp_check_caught(g);
    fl_grp_retry_catchups(g);
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
    r->donor_rank = a[5];
    ask_catchup(g);
    fl_grp_deliver_ready(g);
}

/* Under the lock, at the donor: queues member i what it kept from from up
   to to; what cannot be queued is owed (fl_grp_retry_catchups sends it all
   again: the survivor drops what it has). */
static void send_catchup(struct flit_group *g, uint32_t i, uint64_t from, uint64_t to)
{
    bool all = true;
    for (struct gmsg *m = g->ret_head; m; m = m->ret_next)
        if (m->seq >= from && m->seq < to)
            all = fl_grp_push_fragments(g, m, g->members[i], NO_RANK) && all;
    g->cu_owed[i] = !all;
    g->cu_from[i] = from;
    g->cu_to[i] = to;
}

/* At the donor: sends rank what it kept from fl_grp_number from up to final. */
void fl_grp_on_catchup(struct flit_group *g, uint32_t rank, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (!r->on || a[2] != r->rview)
        return;
    send_catchup(g, index_of(g, rank), get64(a + 3), get64(a + 5));
}

void fl_grp_retry_catchups(struct flit_group *g)
{
    for (uint32_t i = 0; g->rec.on && i < g->n; i++)
        if (g->cu_owed[i] && !g->gone[i])
            send_catchup(g, i, g->cu_from[i], g->cu_to[i]);
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
    uint32_t c = (uint32_t)own_cost(g);
    /* Not queued: fl_grp_retry calls this again. */
    r->caught_sent = fl_grp_ctl_to(g, r->co, OP_CAUGHT, r->rview, &c, 1);
}

/* Under the lock: this member's own messages marked to go again (a new
   view), in their order: the first that cannot be queued stops the rest,
   so that the sequencer sees them in order (a later pass goes on). */
void fl_grp_resend_own(struct flit_group *g)
{
    for (struct gmsg *m = g->own_head; m; m = m->own_next) {
        if (!m->resend)
            continue;
        uint32_t a[MAX_ARGS] = {0, g->id, g->view, m->sender_seq};
        bool ok;
        if (m->total <= g->small_max) {
            a[0] = op_word(OP_SMALL);
            ok = fl_grp_out_push(g->gs, g, g->members[g->seqr], a, 5, m, 0, m->total);
        } else {
            a[0] = op_word(OP_SEQREQ);
            a[4] = m->cost;
            ok = fl_grp_out_push(g->gs, g, g->members[g->seqr], a, 6, NULL, 0, 0);
            if (ok) { /* waits for its number */
                m->refs++;
                m->next = g->unnumbered;
                g->unnumbered = m;
            }
        }
        if (!ok)
            return;
        m->resend = false;
    }
    g->resending = false;
}

/* Under the lock: the new view: survivors only, numbering from final. */
static flit_status install(struct flit_group *g, int64_t pool)
{
    struct recovery *r = &g->rec;
    uint32_t k = 0;
    memset(g->cu_owed, 0, g->n);
    memset(g->bc_owed, 0, g->n); /* (every NEWVIEW went: all CAUGHT came) */
    fl_grp_owe_clear(g);         /* every survivor has the old view's messages */
    for (uint32_t i = 0; i < g->n; i++)
        if (!g->gone[i])
            g->members[k++] = g->members[i];
    g->views += g->n - k; /* one per member that left: two may go at once */
    g->n = k;
    memset(g->gone, 0, g->n);
    memset(g->heard, 0, g->n);
    g->me = index_of(g, g->gs->me);
    g->seqr = index_of(g, r->co);
    g->view = r->rview;
    g->next_deliver = g->acked = r->final;
    r->on = false;
    /* Numbers of the old view past final were never delivered. */
    forget_views_below(g, g->view);
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
    for (struct gmsg *m = g->own_head; m; m = m->own_next)
        m->resend = g->resending = true;
    fl_grp_resend_own(g);
    /* destroy's steps reached so far go again, to the new sequencer. */
    g->leave_sent = g->fin_sent = false;
    fl_grp_retry_group(g);
    fl_grp_deliver_ready(g);
    return st;
}

void fl_grp_on_caught(struct flit_group *g, uint32_t from_rank, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    uint32_t from = index_of(g, from_rank);
    if (!r->on || a[2] != r->rview || r->co != g->gs->me ||
        (g->heard[from] & HEARD_CAUGHT))
        return;
    g->heard[from] |= HEARD_CAUGHT;
    r->pending += a[3];
    if (heard_from(g, HEARD_CAUGHT) < survivors(g))
        return;
    if (install(g, (int64_t)g->window - (int64_t)r->pending) != FLIT_OK)
        flit_log(FLIT_LOG_ERROR, "group %u: no memory for the new view", g->id);
    for (uint32_t i = 0; i < g->n; i++)
        if (i != g->me)
            g->bc_owed[i] |= BC_INSTALL;
    fl_grp_retry_broadcasts(g);
}

void fl_grp_on_install(struct flit_group *g, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (r->on && a[2] == r->rview && r->final_known && g->next_deliver == r->final)
        install(g, 0);
}
