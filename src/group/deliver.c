/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fragments coming in, the hold-back of messages numbered ahead, delivery
 * in sequence, and the program's piecewise receive inside its handler.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- delivery */

/* Under the lock: m was delivered here; keep it while a view change could
   need it. Messages some member has not delivered yet each hold a credit
   until every member has, so the newest delivered messages worth window
   credits cover whatever another survivor may lack. */
static void retain(struct flit_group *g, struct gmsg *m)
{
    m->ret_next = NULL;
    if (g->ret_tail)
        g->ret_tail->ret_next = m;
    else
        g->ret_head = m;
    g->ret_tail = m;
    g->ret_cost += m->cost;
    while (g->ret_cost > g->window) {
        struct gmsg *old = g->ret_head;
        g->ret_head = old->ret_next;
        if (!g->ret_head)
            g->ret_tail = NULL;
        g->ret_cost -= old->cost;
        fl_grp_msg_unref(g, old);
    }
}

void fl_grp_retained_clear(struct flit_group *g)
{
    while (g->ret_head) {
        struct gmsg *m = g->ret_head;
        g->ret_head = m->ret_next;
        fl_grp_msg_unref(g, m);
    }
    g->ret_tail = NULL;
    g->ret_cost = 0;
}

/* Under the lock: one of this member's messages was delivered here. */
static void own_done(struct flit_group *g, const struct gmsg *m)
{
    struct gmsg *o = g->own_head;
    if (!o || o->sender_seq != m->sender_seq)
        return; /* cannot be: the sender's order holds */
    g->own_head = o->own_next;
    if (!g->own_head)
        g->own_tail = NULL;
    g->fl_grp_own_delivered++;
    fl_grp_msg_unref(g, o);
}

static bool may_deliver(const struct flit_group *g)
{
    if (g->delivering || g->stopped)
        return false;
    if (!g->rec.on)
        return true;
    return g->rec.final_known && g->next_deliver < g->rec.final;
}

/*
 * Delivers the messages that are next in order and complete, one after
 * the other, unless another thread delivers for g now (it will take them).
 * Called with the lock held; returns with it held.
 */
void fl_grp_deliver_ready(struct flit_group *g)
{
    struct flit_groups *gs = g->gs;
    while (may_deliver(g)) {
        struct gmsg **slot = fl_grp_hb_slot(g, g->next_deliver);
        struct gmsg *m = *slot;
        if (!m || m->got < m->total || (m->total == 0 && !m->have[0]))
            break;
        /* The handle lives in g and is a handle of fl_grp_msgs, new for
           each delivery: one kept past its handler's return reads as dead
           (FLIT_ERR_BAD_TOKEN), never as the next delivery's. */
        struct flit_group_msg *h = &g->cur;
        *h = (struct flit_group_msg){.g = g, .msg = m, .pos = 0};
        if (flit_handle_new(&fl_grp_msgs, h, &h->self) != FLIT_OK) {
            /* No memory to grow the table: fl_grp_retry's next pass
               delivers it (nothing else may come to call this again). */
            g->deliver_owed = true;
            atomic_store_explicit(&gs->owed, true, memory_order_release);
            atomic_store_explicit(&gs->work, true, memory_order_release);
            break;
        }
        *slot = m->next;
        m->next = NULL;
        g->delivering = true;
        unlock(gs);
        fl_grp_delivery_depth++;
        g->fn(g->self, h->self, m->total, g->user);
        fl_grp_delivery_depth--;
        lock(gs);
        (void)flit_handle_free(&fl_grp_msgs, h->self);
        h->self = NULL;
        g->delivering = false;
        g->next_deliver++;
        if (m->sender == gs->me)
            own_done(g, m);
        retain(g, m);
        atomic_store_explicit(&gs->work, true, memory_order_release);
    }
    fl_grp_check_caught(g);
}

/* Under the lock: the fragment at off of message m is in; false when it was
   already (a view change may bring it twice). */
static bool mark_fragment(struct flit_group *g, struct gmsg *m, size_t off)
{
    size_t f = off / g->frag;
    uint8_t bit = (uint8_t)(1u << (f % 8));
    if (m->have[f / 8] & bit)
        return false;
    m->have[f / 8] |= bit;
    return true;
}

/* Under the lock: the hold-back entry for a fragment of view view, fl_grp_number
   seq; NULL to drop the fragment. An entry of an older view at that fl_grp_number
   was never delivered and never will be: a newer one replaces it. */
static struct gmsg *entry_for(struct flit_group *g, const uint32_t *a, uint64_t total)
{
    uint64_t seq = get64(a + 3);
    struct gmsg **slot = fl_grp_hb_slot(g, seq);
    struct gmsg *m = *slot;
    if (m && m->view > a[2])
        return NULL;
    if (m && m->view < a[2]) {
        *slot = m->next;
        fl_grp_msg_unref(g, m);
        m = NULL;
    }
    if (m)
        return m->total == total ? m : NULL;
    if (!(m = fl_grp_msg_new(g, total))) {
        flit_log(FLIT_LOG_ERROR, "group %u: no memory for a message of %llu bytes", g->id,
                 (unsigned long long)total);
        return NULL;
    }
    m->seq = seq;
    m->view = a[2];
    m->sender = a[6];
    m->sender_seq = a[7];
    m->root = a[5];
    m->next = *slot;
    *slot = m;
    return m;
}

/* Under the lock: the fragment at off of m could not be queued to a child:
   owed, m held on g->owe until it is. */
static void owe(struct flit_group *g, struct gmsg *m, size_t off)
{
    size_t f = off / g->frag;
    m->owe[f / 8] |= (uint8_t)(1u << (f % 8));
    if (m->owing)
        return;
    m->owing = true;
    m->refs++;
    m->owe_next = g->owe;
    g->owe = m;
}

/* Under the lock: the fragment (words a) to this member's children in the
   tree of its message (binary, over the members, rooted at root: position
   p's children are 2p+1 and 2p+2); false: owed. */
static bool forward_or_owe(struct flit_group *g, struct gmsg *m, const uint32_t *a,
                           size_t off, size_t len)
{
    uint32_t root = a[5];
    uint32_t p = (g->me + g->n - root) % g->n;
    bool all = true;
    for (uint32_t c = 2 * p + 1; c <= 2 * p + 2 && c < g->n; c++)
        if (!fl_grp_out_push(g->gs, g, g->members[(c + root) % g->n], a, DATA_ARGS, m,
                             off, len))
            all = false;
    if (!all)
        owe(g, m, off);
    return all;
}

/* Under the lock: may a fragment of view v be taken now? */
static bool view_ok(const struct flit_group *g, uint32_t v)
{
    const struct recovery *r = &g->rec;
    if (!r->on)
        return v == g->view;
    /* In a view change: this view, unless an earlier round's view was
       installed elsewhere (its catch-up is taken, r->min_view); and a
       survivor that installed the new view sends in it while this one
       still finishes the old: kept for later. */
    if (v < r->rview)
        return v >= r->min_view;
    return v == r->rview && r->final_known;
}

/*
 * Under the lock: a fragment of message seq arrived here (or, at its root,
 * was put in place): keep it, pass it down the tree, deliver what is due.
 */
void fl_grp_take_fragment(struct flit_group *g, const uint32_t *a, const void *buf,
                          size_t len)
{
    uint64_t seq = get64(a + 3), total = get64(a + 8), off = get64(a + 10);
    uint32_t root = a[5];
    /* (fl_grp_decode: off and len inside total, total below any group's
       largest message) */
    if ((root != NO_RANK && root >= g->n) || index_of(g, a[6]) == NO_RANK ||
        total > (uint64_t)(g->window / 2) * g->frag || off > total || len > total - off ||
        (len != g->frag && off + len != total) || off % g->frag ||
        (len == 0 && total != 0)) {
        fl_grp_refuse(g->gs, g->id, a[6], "a malformed fragment");
        return;
    }
    if (seq < g->next_deliver || !view_ok(g, a[2]))
        return; /* delivered already, or stale */
    struct gmsg *m = entry_for(g, a, total);
    if (!m || !mark_fragment(g, m, off))
        return;
    if (len)
        memcpy(m->data + off, buf, len);
    m->got += len;
    if (root != NO_RANK && a[2] == g->view)
        forward_or_owe(g, m, a, off, len);
    fl_grp_deliver_ready(g);
}

/* The OP_DATA words of the fragment at off of m; root as in OP_DATA. */
static void data_words(const struct flit_group *g, const struct gmsg *m, uint32_t root,
                       size_t off, uint32_t d[DATA_ARGS])
{
    memset(d, 0, DATA_ARGS * sizeof *d);
    d[0] = op_word(OP_DATA);
    d[1] = g->id;
    d[2] = m->view;
    put64(d + 3, m->seq);
    d[5] = root;
    d[6] = m->sender;
    d[7] = m->sender_seq;
    put64(d + 8, m->total);
    put64(d + 10, off);
}

/* Under the lock: queues every fragment of m to rank dest; root as in
   OP_DATA. False: some could not be queued; those of a tree (root not
   NO_RANK) are owed (fl_grp_retry_forwards), the others are the caller's
   to try again. */
bool fl_grp_push_fragments(struct flit_group *g, struct gmsg *m, uint32_t dest,
                           uint32_t root)
{
    uint32_t d[DATA_ARGS];
    bool all = true;
    size_t off = 0;
    do {
        size_t len = m->total - off < g->frag ? m->total - off : g->frag;
        data_words(g, m, root, off, d);
        if (!fl_grp_out_push(g->gs, g, dest, d, DATA_ARGS, m, off, len)) {
            all = false;
            if (root != NO_RANK)
                owe(g, m, off);
        }
        off += len;
    } while (off < m->total);
    return all;
}

/* Under the lock: forwards still owed go out (a pass of fl_grp_retry). A
   child that had a fragment already drops the second copy. */
void fl_grp_retry_forwards(struct flit_group *g)
{
    struct gmsg **p = &g->owe;
    while (*p) {
        struct gmsg *m = *p;
        size_t nf = fl_grp_frags_of(g, m->total);
        /* A message of an older view: the view change caught everyone up. */
        for (size_t f = 0; f < nf && m->view == g->view; f++) {
            uint8_t bit = (uint8_t)(1u << (f % 8));
            if (!(m->owe[f / 8] & bit))
                continue;
            size_t off = f * g->frag;
            size_t len = m->total - off < g->frag ? m->total - off : g->frag;
            uint32_t d[DATA_ARGS];
            data_words(g, m, m->root, off, d);
            m->owe[f / 8] &= (uint8_t)~bit;
            if (!forward_or_owe(g, m, d, off, len))
                return; /* still short: the next pass */
        }
        *p = m->owe_next;
        m->owing = false;
        memset(m->owe, 0, (nf + 7) / 8);
        fl_grp_msg_unref(g, m);
    }
}

/* Under the lock: nothing owed any more (the group goes, or a new view). */
void fl_grp_owe_clear(struct flit_group *g)
{
    while (g->owe) {
        struct gmsg *m = g->owe;
        g->owe = m->owe_next;
        m->owing = false;
        memset(m->owe, 0, (fl_grp_frags_of(g, m->total) + 7) / 8);
        fl_grp_msg_unref(g, m);
    }
}

/* ---------------------------------------------------------------- receiving */

/* The message under delivery a handle names; NULL for any other value. */
static inline struct flit_group_msg *msg_of(const flit_group_msg_t *h)
{
    return flit_handle_get(&fl_grp_msgs, h);
}

/* Common checks of recv and skip: n bytes wanted from handle h (*out: its
   message). */
static flit_status recv_check(const flit_group_msg_t *h, size_t n,
                              struct flit_group_msg **out)
{
    if (!h)
        return FLIT_ERR_INVALID_ARG;
    struct flit_group_msg *m = msg_of(h);
    if (!m)
        return FLIT_ERR_BAD_TOKEN;
    if (n > m->msg->total - m->pos)
        return FLIT_ERR_TOO_LARGE;
    *out = m;
    return FLIT_OK;
}

flit_status flit_group_recv(flit_group_msg_t *h, void *buf, size_t n)
{
    if (n && !buf)
        return FLIT_ERR_INVALID_ARG;
    struct flit_group_msg *m;
    flit_status st = recv_check(h, n, &m);
    if (st != FLIT_OK)
        return st;
    if (n)
        memcpy(buf, m->msg->data + m->pos, n);
    m->pos += n;
    return FLIT_OK;
}

flit_status flit_group_recvv(flit_group_msg_t *h, const struct iovec *iov, int iovcnt)
{
    size_t total;
    struct flit_group_msg *m = NULL;
    flit_status st = flit_iov_total(iov, iovcnt, &total);
    if (st == FLIT_OK)
        st = recv_check(h, total, &m);
    if (st != FLIT_OK)
        return st;
    m->pos += flit_iov_scatter(iov, iovcnt, m->msg->data + m->pos, total);
    return FLIT_OK;
}

flit_status flit_group_skip(flit_group_msg_t *h, size_t n)
{
    struct flit_group_msg *m = NULL;
    flit_status st = recv_check(h, n, &m);
    if (st == FLIT_OK)
        m->pos += n;
    return st;
}

size_t flit_group_remaining(const flit_group_msg_t *h)
{
    const struct flit_group_msg *m = msg_of(h);
    return m ? m->msg->total - m->pos : 0;
}

flit_rank_t flit_group_msg_sender(const flit_group_msg_t *h)
{
    const struct flit_group_msg *m = msg_of(h);
    return flit_rank(m ? m->msg->sender : UINT32_MAX);
}

uint64_t flit_group_msg_seq(const flit_group_msg_t *h)
{
    const struct flit_group_msg *m = msg_of(h);
    return m ? m->msg->seq : UINT64_MAX;
}
