/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sequencer and the credit manager beside it: numbers for messages,
 * credits granted and recycled as members acknowledge deliveries.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- manager */

/* Under the lock, at the sequencer: grants queued requests while the pool
   has room, first come first served (a large request is never passed by
   small ones: it would starve). A grant that cannot be queued stays at
   the head of the requests for fl_grp_retry's next pass. */
void fl_grp_serve_credits(struct flit_group *g)
{
    while (g->rq_len) {
        uint32_t i = g->reqq[g->rq_head];
        if (g->pool < (int64_t)g->want[i])
            return;
        if (!fl_grp_ctl_push(g, i, OP_CREDIT, &g->want[i], 1))
            return;
        g->pool -= g->want[i];
        g->want[i] = 0;
        g->rq_head = (g->rq_head + 1) % g->n;
        g->rq_len--;
    }
}

void fl_grp_ask_credits(struct flit_group *g, uint32_t i, uint32_t amount)
{
    if (!amount || g->want[i])
        return; /* one request per member at a time */
    g->want[i] = amount;
    g->reqq[(g->rq_head + g->rq_len) % g->n] = i;
    g->rq_len++;
    fl_grp_serve_credits(g);
}

/* Under the lock: what bit stands for, to member i; false: not queued. */
static bool bc_send(struct flit_group *g, uint32_t i, unsigned bit)
{
    uint32_t w[2];
    switch (bit) {
    case BC_READY:
        w[0] = (uint32_t)g->join_frag;
        return fl_grp_ctl_push(g, i, OP_READY, w, 1);
    case BC_DONE: /* (no number is given once every member left) */
        put64(w, g->next_seq);
        return fl_grp_ctl_push(g, i, OP_DONE, w, 2);
    case BC_CLOSED:
        return fl_grp_ctl_push(g, i, OP_CLOSED, NULL, 0);
    default:
        return fl_grp_view_bc_send(g, i, bit);
    }
}

/* Under the lock: queues what the bits owe each member, as far as it can;
   the rest stays owed for fl_grp_retry's next pass. */
void fl_grp_retry_broadcasts(struct flit_group *g)
{
    for (uint32_t i = 0; i < g->n; i++)
        for (unsigned bit = 1; bit <= BC_INSTALL; bit <<= 1)
            if ((g->bc_owed[i] & bit) && bc_send(g, i, bit))
                g->bc_owed[i] &= (uint8_t)~bit;
}

/* Under the lock: bit's message to every member that is not gone. */
void fl_grp_broadcast(struct flit_group *g, unsigned bit)
{
    for (uint32_t i = 0; i < g->n; i++)
        if (!g->gone[i])
            g->bc_owed[i] |= (uint8_t)bit;
    fl_grp_retry_broadcasts(g);
}

/* Under the lock, at the sequencer: the next fl_grp_number, its cost on record. */
uint64_t fl_grp_number(struct flit_group *g, uint32_t cost)
{
    uint64_t s = g->next_seq++;
    g->cost[s % g->window] = cost;
    g->seq_owed[s % g->window] = 0;
    return s;
}

void fl_grp_on_ack(struct flit_group *g, uint32_t i, uint64_t count)
{
    if (count > g->next_seq)
        return;
    if (count > g->delivered[i])
        g->delivered[i] = count;
    uint64_t low = UINT64_MAX;
    for (uint32_t k = 0; k < g->n; k++)
        if (g->delivered[k] < low)
            low = g->delivered[k];
    for (; g->released < low; g->released++)
        g->pool += g->cost[g->released % g->window];
    fl_grp_serve_credits(g);
}

/* (Re)sets the sequencer's state for numbers from first on, with pool
   credits to give. */
flit_status fl_grp_seqr_reset(struct flit_group *g, uint64_t first, int64_t pool)
{
    free(g->cost);
    free(g->delivered);
    free(g->want);
    free(g->reqq);
    free(g->seq_to);
    free(g->seq_sseq);
    free(g->seq_owed);
    g->seq_to = calloc(g->window, sizeof *g->seq_to);
    g->seq_sseq = calloc(g->window, sizeof *g->seq_sseq);
    g->seq_owed = calloc(g->window, 1);
    g->cost = calloc(g->window, sizeof *g->cost);
    g->delivered = calloc(g->n, sizeof *g->delivered);
    g->want = calloc(g->n, sizeof *g->want);
    g->reqq = calloc(g->n, sizeof *g->reqq);
    if (!g->cost || !g->delivered || !g->want || !g->reqq || !g->seq_to || !g->seq_sseq ||
        !g->seq_owed)
        return FLIT_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < g->n; i++)
        g->delivered[i] = first;
    g->next_seq = g->released = first;
    g->pool = pool;
    g->rq_head = g->rq_len = 0;
    g->left_count = g->fin_count = 0;
    return FLIT_OK;
}

/* ---------------------------------------------------------------- ordering */

void fl_grp_on_small(struct flit_group *g, uint32_t from, const uint32_t *a, void *buf,
                     size_t n)
{
    if (n > g->small_max) {
        flit_log(FLIT_LOG_WARN, "group %u: small message of %zu bytes refused", g->id, n);
        return;
    }
    uint32_t d[DATA_ARGS] = {op_word(OP_DATA), g->id, g->view};
    put64(d + 3, fl_grp_number(g, 1));
    d[5] = g->me;
    d[6] = g->members[from];
    d[7] = a[3];
    put64(d + 8, n);
    put64(d + 10, 0);
    fl_grp_ask_credits(g, from, a[4]);
    fl_grp_take_fragment(g, d, buf, n);
}

void fl_grp_on_seqreq(struct flit_group *g, uint32_t from, const uint32_t *a)
{
    uint32_t r[3] = {a[3]};
    if (a[4] == 0 || a[4] > g->window / 2) {
        flit_log(FLIT_LOG_WARN, "group %u: numbering request of cost %u refused", g->id,
                 a[4]);
        return;
    }
    uint64_t s = fl_grp_number(g, a[4]);
    put64(r + 1, s);
    /* The number is taken: a SEQ that cannot be queued is owed. */
    g->seq_to[s % g->window] = from;
    g->seq_sseq[s % g->window] = a[3];
    g->seq_owed[s % g->window] = !fl_grp_ctl_push(g, from, OP_SEQ, r, 3);
    fl_grp_ask_credits(g, from, a[5]);
}

/* Under the lock, at the sequencer: SEQs owed go out, in number order. */
void fl_grp_retry_seqs(struct flit_group *g)
{
    for (uint64_t s = g->released; s < g->next_seq; s++) {
        uint32_t k = (uint32_t)(s % g->window), r[3] = {g->seq_sseq[k]};
        if (!g->seq_owed[k])
            continue;
        put64(r + 1, s);
        if (!fl_grp_ctl_push(g, g->seq_to[k], OP_SEQ, r, 3))
            return;
        g->seq_owed[k] = 0;
    }
}

/* At the sender: the fl_grp_number of one of its large messages came: multicast
   it, from here, down the tree rooted here. */
void fl_grp_on_seq(struct flit_group *g, const uint32_t *a)
{
    struct gmsg **p = &g->unnumbered;
    while (*p && (*p)->sender_seq != a[3])
        p = &(*p)->next;
    struct gmsg *m = *p;
    if (!m)
        return;
    *p = m->next;
    m->seq = get64(a + 4);
    m->view = g->view;
    m->root = g->me;
    m->got = m->total;
    memset(m->have, 0xff, (fl_grp_frags_of(g, m->total) + 7) / 8);
    struct gmsg **slot = fl_grp_hb_slot(g, m->seq);
    m->next = *slot;
    *slot = m;
    for (uint32_t c = 1; c <= 2 && c < g->n; c++)
        fl_grp_push_fragments(g, m, g->members[(c + g->me) % g->n], g->me);
    fl_grp_deliver_ready(g);
}

void fl_grp_on_join(struct flit_group *g, const uint32_t *a)
{
    if (a[3] < g->join_frag)
        g->join_frag = a[3];
    if (++g->joined < g->n)
        return;
    fl_grp_broadcast(g, BC_READY);
}

void fl_grp_on_ready(struct flit_group *g, const uint32_t *a)
{
    if (a[3] >= FRAG_MIN && a[3] <= g->frag)
        g->frag = a[3];
    if (g->small_max > g->frag)
        g->small_max = (uint32_t)g->frag;
    g->ready = true;
}

void fl_grp_on_leave(struct flit_group *g)
{
    if (++g->left_count < g->n)
        return;
    fl_grp_broadcast(g, BC_DONE);
}

/* Every member's FIN is the last it sends this group, after everything it
   sent before (in order per pair): with all of them in, nothing of the
   group is on its way to anyone but the CLOSED that ends it, and the id
   may be used again at once. */
void fl_grp_on_fin(struct flit_group *g)
{
    if (++g->fin_count < g->n)
        return;
    fl_grp_broadcast(g, BC_CLOSED);
}

/* Under the lock: a JOIN for a group this rank has not created yet. */
void fl_grp_early_join(struct flit_groups *gs, uint32_t id, size_t frag)
{
    struct early *e = gs->early;
    while (e && e->id != id)
        e = e->next;
    if (!e) {
        if (!(e = calloc(1, sizeof *e))) {
            flit_log(FLIT_LOG_ERROR, "group %u: no memory to note a join", id);
            return;
        }
        e->id = id;
        e->frag = SIZE_MAX;
        e->next = gs->early;
        gs->early = e;
    }
    e->joins++;
    if (frag < e->frag)
        e->frag = frag;
}
