/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Groups of an endpoint: the active-message handler, the progress
 * listener, waiting, create and destroy, sending, stats.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

flit_handles_t *fl_grp_sets, *fl_grp_groups, *fl_grp_msgs;

__thread unsigned fl_grp_delivery_depth;

/* ---------------------------------------------------------------- handler */

static const unsigned op_nargs[OP_COUNT] = {
    [OP_JOIN] = 4,    [OP_READY] = 4,        [OP_SMALL] = 5,   [OP_SEQREQ] = 6,
    [OP_SEQ] = 6,     [OP_DATA] = DATA_ARGS, [OP_CREDREQ] = 4, [OP_CREDIT] = 4,
    [OP_ACK] = 5,     [OP_LEAVE] = 3,        [OP_DONE] = 5,    [OP_QUERY] = 4,
    [OP_STATE] = 6,   [OP_NEWVIEW] = 6,      [OP_CATCHUP] = 7, [OP_CAUGHT] = 4,
    [OP_INSTALL] = 3, [OP_FIN] = 3,          [OP_CLOSED] = 3,
};

flit_status fl_grp_decode(const uint32_t *args, unsigned nargs, size_t nbytes,
                          enum op *out)
{
    if (!args || nargs < 3 || args[0] >> 24 != WIRE_VERSION || (args[0] & 0xffff00u))
        return FLIT_ERR_BAD_PACKET;
    uint32_t op = args[0] & 0xff;
    if (op == 0 || op >= OP_COUNT || nargs != op_nargs[op])
        return FLIT_ERR_BAD_PACKET;
    bool ok = nbytes == 0 || op == OP_SMALL || op == OP_DATA; /* bytes: data only */
    switch (op) {
    case OP_JOIN:
    case OP_READY: /* a fragment size every member can take */
        ok = ok && args[3] >= FRAG_MIN && args[3] <= FRAG_MAX;
        break;
    case OP_SMALL: /* one fragment */
        ok = ok && nbytes <= FRAG_MAX;
        break;
    case OP_SEQREQ: /* a message costs a credit at least */
        ok = ok && args[4] > 0;
        break;
    case OP_DATA: { /* a fragment inside a message no group can exceed */
        uint64_t total = get64(args + 8), off = get64(args + 10);
        ok = ok && nbytes <= FRAG_MAX && total <= FL_GRP_TOTAL_MAX && off <= total &&
             nbytes <= total - off && (nbytes > 0 || total == 0); /* no empty piece */
        break;
    }
    default:
        break;
    }
    if (!ok)
        return FLIT_ERR_BAD_PACKET;
    *out = (enum op)op;
    return FLIT_OK;
}

void fl_grp_refuse(struct flit_groups *gs, uint32_t id, uint32_t from, const char *what)
{
    atomic_fetch_add_explicit(&gs->ctr->refused, 1, memory_order_relaxed);
    if (gs->refusal_said)
        return;
    gs->refusal_said = true;
    flit_log(FLIT_LOG_WARN,
             "group %u: %s from rank %u refused (further ones are only counted)", id,
             what, from);
}

/* Who may send op to this member, as the protocol has it (docs/groups.md):
   what goes to the sequencer must find this member it, and what only the
   sequencer sends must come from it. */
static bool role_ok(const struct flit_group *g, enum op op, uint32_t from)
{
    switch (op) {
    case OP_JOIN:
    case OP_SMALL:
    case OP_SEQREQ:
    case OP_CREDREQ:
    case OP_ACK:
    case OP_LEAVE:
    case OP_FIN:
        return g->me == g->seqr;
    case OP_READY:
    case OP_SEQ:
    case OP_CREDIT:
    case OP_DONE:
    case OP_CLOSED:
        return from == g->seqr;
    default:
        return true;
    }
}

/* Messages of the view change, and data: judged by their own rules. The
   rest count only in the current view, outside a view change. */
static bool view_change_op(enum op op)
{
    return op >= OP_QUERY || op == OP_DATA;
}

static void dispatch(struct flit_group *g, enum op op, uint32_t from, const uint32_t *a,
                     void *buf, size_t n)
{
    uint32_t rank = g->members[from];
    if (!view_change_op(op) && (a[2] != g->view || g->rec.on))
        return; /* stale, or sent again in the new view */
    if (!role_ok(g, op, from)) {
        fl_grp_refuse(g->gs, g->id, rank, "a message for another role");
        return;
    }
    switch (op) {
    case OP_JOIN:
        fl_grp_on_join(g, a);
        break;
    case OP_READY:
        fl_grp_on_ready(g, a);
        break;
    case OP_SMALL:
        fl_grp_on_small(g, from, a, buf, n);
        break;
    case OP_SEQREQ:
        fl_grp_on_seqreq(g, from, a);
        break;
    case OP_SEQ:
        fl_grp_on_seq(g, a);
        break;
    case OP_DATA:
        fl_grp_take_fragment(g, a, buf, n);
        break;
    case OP_CREDREQ:
        fl_grp_ask_credits(g, from, a[3]);
        break;
    case OP_CREDIT:
        g->credits += a[3];
        g->cred_asked = false;
        break;
    case OP_ACK:
        fl_grp_on_ack(g, from, get64(a + 3));
        break;
    case OP_LEAVE:
        fl_grp_on_leave(g);
        break;
    case OP_DONE:
        g->final = get64(a + 3);
        g->done = true;
        break;
    case OP_FIN:
        fl_grp_on_fin(g);
        break;
    case OP_CLOSED:
        g->closed = true;
        break;
    case OP_QUERY:
        fl_grp_on_query(g, a);
        break;
    case OP_STATE:
        fl_grp_on_state(g, rank, a);
        break;
    case OP_NEWVIEW:
        fl_grp_on_newview(g, a);
        break;
    case OP_CATCHUP:
        fl_grp_on_catchup(g, rank, a);
        break;
    case OP_CAUGHT:
        fl_grp_on_caught(g, rank, a);
        break;
    case OP_INSTALL:
        fl_grp_on_install(g, a);
        break;
    default:
        break;
    }
}

static void on_am(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user)
{
    struct flit_groups *gs = user;
    enum op op;
    if (fl_grp_decode(args, nargs, nbytes, &op) != FLIT_OK) {
        lock(gs);
        fl_grp_refuse(gs, nargs > 1 ? args[1] : NO_RANK, flit_token_rank(token).idx,
                      "a malformed message");
        unlock(gs);
        return;
    }
    lock(gs);
    struct flit_group *g = find_group(gs, args[1]);
    uint32_t from = g ? index_of(g, flit_token_rank(token).idx) : NO_RANK;
    if (op == OP_JOIN && (!g || g->ready)) /* (a ready one: the id's next group) */
        fl_grp_early_join(gs, args[1], args[3]);
    else if (!g || from == NO_RANK || g->stopped)
        atomic_fetch_add_explicit(&gs->ctr->unknown, 1, memory_order_relaxed);
    else
        dispatch(g, op, from, args, buf, nbytes);
    unlock(gs);
}

/* Parked on the handler index once the groups are gone: late messages
   vanish instead of coming back to their senders. */
static void on_am_gone(flit_token_t *token, void *buf, size_t nbytes,
                       const uint32_t *args, unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
}

/* ---------------------------------------------------------------- progress */

/* Under the lock: tells the manager what was delivered since last time. */
static void send_acks(struct flit_groups *gs)
{
    for (struct flit_group *g = gs->groups; g; g = g->next) {
        if (g->ready && !g->stopped && !g->rec.on && !g->fin_sent &&
            g->next_deliver > g->acked) {
            uint32_t c[2];
            put64(c, g->next_deliver);
            if (fl_grp_ctl_push(g, g->seqr, OP_ACK, c, 2)) /* else the next pass */
                g->acked = g->next_deliver;
        }
    }
}

void fl_grp_retry_group(struct flit_group *g)
{
    if (g->stopped)
        return;
    if (g->deliver_owed) {
        g->deliver_owed = false;
        fl_grp_deliver_ready(g); /* (sets it again if still short) */
    }
    fl_grp_retry_broadcasts(g);
    if (g->rec.on) {
        fl_grp_retry_view(g);
        return;
    }
    if (!g->ready && !g->join_sent) {
        uint32_t frag = (uint32_t)g->frag;
        g->join_sent = fl_grp_ctl_push(g, g->seqr, OP_JOIN, &frag, 1);
    }
    if (g->me == g->seqr && g->rq_len)
        fl_grp_serve_credits(g);
    if (g->me == g->seqr)
        fl_grp_retry_seqs(g);
    fl_grp_resend_own(g);
    fl_grp_retry_forwards(g);
    if (g->leave_want && !g->leave_sent)
        g->leave_sent = fl_grp_ctl_push(g, g->seqr, OP_LEAVE, NULL, 0);
    /* FIN last: after the LEAVE and every forward this member owed. */
    if (g->fin_want && !g->fin_sent && g->leave_sent && !g->owe)
        g->fin_sent = fl_grp_ctl_push(g, g->seqr, OP_FIN, NULL, 0);
}

void fl_grp_retry(struct flit_groups *gs)
{
    if (!atomic_exchange_explicit(&gs->owed, false, memory_order_acquire))
        return;
    /* A push that fails in here sets owed again: the next pass. */
    for (struct flit_group *g = gs->groups; g; g = g->next)
        fl_grp_retry_group(g);
}

/* Not under the lock: runs the view-change handlers due, one per member
   that left, once its view is installed. */
static void run_view_fns(struct flit_groups *gs)
{
    for (;;) {
        lock(gs);
        struct flit_group *g = gs->groups;
        while (g && !(g->nleft && (g->stopped || !g->rec.on)))
            g = g->next;
        uint32_t rank = g ? g->left[--g->nleft] : 0;
        bool call = g && g->view_fn;
        unlock(gs);
        if (!g)
            return;
        if (call)
            g->view_fn(g->self, flit_rank(rank), g->view_user);
    }
}

/* Under the lock: members that died start view changes; a group not
   formed yet stops. */
static void act_on_down(struct flit_groups *gs)
{
    if (!atomic_exchange_explicit(&gs->down, 0, memory_order_acquire))
        return;
    for (uint32_t r = 0; r < gs->size; r++) {
        if (gs->dead[r] != 1)
            continue;
        gs->dead[r] = 2;
        for (struct flit_group *g = gs->groups; g; g = g->next) {
            uint32_t i = index_of(g, r);
            if (i == NO_RANK || g->stopped)
                continue;
            if (!g->ready) {
                g->stopped = true;
                g->left[g->nleft++] = r;
            } else {
                fl_grp_start_view_change(g, i);
            }
        }
    }
}

static void on_progress(flit_ep_t *ep, void *user)
{
    (void)ep;
    struct flit_groups *gs = user;
    /* Acquire: what the handlers queued is visible. */
    if (!atomic_load_explicit(&gs->work, memory_order_acquire) &&
        !atomic_load_explicit(&gs->down, memory_order_relaxed))
        return;
    atomic_store_explicit(&gs->work, false, memory_order_relaxed);
    lock(gs);
    act_on_down(gs);
    fl_grp_retry(gs);
    send_acks(gs);
    bool queued = gs->out_head != NULL;
    unlock(gs);
    run_view_fns(gs);
    if (queued)
        fl_grp_drain(gs);
    lock(gs);
    /* No room, a local failure or something owed: try again next pass. */
    if (gs->out_head || atomic_load_explicit(&gs->owed, memory_order_relaxed))
        atomic_store_explicit(&gs->work, true, memory_order_relaxed);
    unlock(gs);
}

static void on_peer_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)reason;
    struct flit_groups *gs = user;
    lock(gs);
    if (peer.idx < gs->size && !gs->dead[peer.idx]) {
        gs->dead[peer.idx] = 1;
        atomic_store_explicit(&gs->down, 1, memory_order_release);
    }
    unlock(gs);
}

static const flit_ep_listener_t listener = {
    .peer_down = on_peer_down,
    .progress = on_progress,
};

/* ---------------------------------------------------------------- waiting */

/*
 * Makes progress until done(g) holds (read under the lock). FLIT_OK, or
 * the status of the wait that failed, or FLIT_ERR_PEER_DOWN once g stopped.
 */
static flit_status wait_for(struct flit_group *g, bool (*done)(struct flit_group *))
{
    struct flit_groups *gs = g->gs;
    for (;;) {
        fl_grp_drain(gs);
        lock(gs);
        act_on_down(gs);
        fl_grp_retry(gs);
        bool ok = done(g), stopped = g->stopped;
        unlock(gs);
        run_view_fns(gs);
        if (ok)
            return FLIT_OK;
        if (stopped)
            return FLIT_ERR_PEER_DOWN;
        flit_status st = flit_wait(gs->ep, WAIT_SLICE_US);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
    }
}

static bool is_ready(struct flit_group *g)
{
    return g->ready;
}

/* ---------------------------------------------------------------- groups */

static size_t pick_frag(flit_ep_t *ep, uint32_t size)
{
    size_t frag = FRAG_MAX;
    for (uint32_t r = 0; r < size; r++) {
        flit_peer_info_t info = {.struct_size = sizeof info};
        if (flit_ep_peer_info(ep, flit_rank(r), &info) != FLIT_OK)
            continue;
        size_t room = info.max_packet > 512 ? info.max_packet - 512 : 0;
        if (room < frag)
            frag = room;
    }
    frag &= ~(size_t)1023;
    return frag < FRAG_MIN ? FRAG_MIN : frag;
}

flit_status flit_groups_create(flit_ep_t *ep, flit_groups_t **out)
{
    return fl_grp_sets_create(ep, NULL, out);
}

flit_status fl_grp_sets_create(flit_ep_t *ep, struct fl_grp_counters *ctr,
                               flit_groups_t **out)
{
    if (!ep || !out)
        return FLIT_ERR_INVALID_ARG;
    flit_thread_mode mode;
    flit_status st = flit_ep_thread_mode(ep, &mode);
    if (st != FLIT_OK)
        return st;
    flit_handler_t h;
    if ((st = flit_ep_reserve_handlers(ep, 1, &h)) != FLIT_OK)
        return st;
    struct flit_groups *gs = calloc(1, sizeof *gs);
    uint32_t size = flit_job_size();
    if (!gs || !(gs->dead = calloc(size ? size : 1, 1)) ||
        flit_handle_new(&fl_grp_sets, gs, &gs->self) != FLIT_OK) {
        if (gs)
            free(gs->dead);
        free(gs);
        return FLIT_ERR_NO_MEMORY;
    }
    gs->ep = ep;
    gs->ctr = ctr ? ctr : &gs->own;
    gs->h = h;
    gs->me = flit_job_rank().idx;
    gs->size = size;
    gs->mt = mode == FLIT_THREAD_SAFE;
    gs->frag = pick_frag(ep, size);
    pthread_mutex_init(&gs->lock, NULL);
    if ((st = flit_am_register(ep, h, on_am, gs)) != FLIT_OK)
        goto err_free;
    if ((st = flit_ep_listen(ep, &listener, gs)) != FLIT_OK)
        goto err_unregister;
    /* Every rank takes messages before anyone sends one. */
    if ((st = flit_barrier(ep)) != FLIT_OK)
        goto err_unlisten;
    *out = gs->self;
    return FLIT_OK;
err_unlisten:
    (void)flit_ep_unlisten(ep, &listener, gs);
err_unregister:
    (void)flit_am_register(ep, h, on_am_gone, NULL);
err_free:
    (void)flit_handle_free(&fl_grp_sets, gs->self);
    pthread_mutex_destroy(&gs->lock);
    free(gs->dead);
    free(gs);
    return st;
}

flit_status flit_groups_destroy(flit_groups_t *h)
{
    struct flit_groups *gs = gs_of(h);
    if (!gs)
        return FLIT_ERR_INVALID_ARG;
    if (fl_grp_delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    lock(gs);
    bool busy = gs->groups != NULL;
    unlock(gs);
    if (busy)
        return FLIT_ERR_AGAIN;
    /* Nothing is queued: each group's destroy dropped what was left. */
    (void)flit_ep_unlisten(gs->ep, &listener, gs);
    (void)flit_am_register(gs->ep, gs->h, on_am_gone, NULL);
    (void)flit_handle_free(&fl_grp_sets, h);
    for (struct flit_group *g = gs->graves, *next; g; g = next) {
        next = g->next;
        free(g);
    }
    for (struct early *e = gs->early, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    for (struct out *o = gs->out_free, *next; o; o = next) {
        next = o->next;
        free(o);
    }
    pthread_mutex_destroy(&gs->lock);
    free(gs->dead);
    free(gs);
    return FLIT_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The members, ascending, checked. */
static flit_status take_members(struct flit_groups *gs, const flit_rank_t *members,
                                unsigned n, uint32_t **out, uint32_t *n_out)
{
    if (!members && n)
        return FLIT_ERR_INVALID_ARG;
    uint32_t count = members ? n : gs->size;
    if (count == 0)
        return FLIT_ERR_INVALID_ARG;
    uint32_t *m = malloc(count * sizeof *m);
    if (!m)
        return FLIT_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < count; i++)
        m[i] = members ? members[i].idx : i;
    qsort(m, count, sizeof *m, cmp_u32);
    flit_status st = FLIT_OK;
    for (uint32_t i = 0; i < count && st == FLIT_OK; i++)
        if (m[i] >= gs->size)
            st = FLIT_ERR_RANK;
        else if (i && m[i] == m[i - 1])
            st = FLIT_ERR_INVALID_ARG;
    if (st != FLIT_OK) {
        free(m);
        return st;
    }
    *out = m;
    *n_out = count;
    return FLIT_OK;
}

#define KNOWN_PARAMS                                                                     \
    (FLIT_GROUP_PARAM_SEQUENCER | FLIT_GROUP_PARAM_WINDOW | FLIT_GROUP_PARAM_SMALL_MAX | \
     FLIT_GROUP_PARAM_VIEW_FN)

/* Applies params to g (members known). */
static flit_status take_params(struct flit_group *g, const flit_group_params_t *p)
{
    g->seqr = 0;
    g->window = FLIT_GROUP_WINDOW_DEFAULT;
    g->small_max = FLIT_GROUP_SMALL_DEFAULT;
    if (!p)
        return FLIT_OK;
    if (p->field_mask & ~(uint64_t)KNOWN_PARAMS)
        return FLIT_ERR_INVALID_ARG;
    if (p->field_mask & FLIT_GROUP_PARAM_SEQUENCER) {
        if (p->sequencer.idx >= g->gs->size)
            return FLIT_ERR_RANK;
        if ((g->seqr = index_of(g, p->sequencer.idx)) == NO_RANK)
            return FLIT_ERR_INVALID_ARG;
    }
    if (p->field_mask & FLIT_GROUP_PARAM_WINDOW) {
        if (p->window < FLIT_GROUP_WINDOW_MIN || p->window > FLIT_GROUP_WINDOW_MAX)
            return FLIT_ERR_INVALID_ARG;
        g->window = p->window;
    }
    if (p->field_mask & FLIT_GROUP_PARAM_SMALL_MAX) {
        if (p->small_max > g->frag)
            return FLIT_ERR_INVALID_ARG;
        g->small_max = p->small_max;
    }
    if (p->field_mask & FLIT_GROUP_PARAM_VIEW_FN) {
        g->view_fn = p->view_fn;
        g->view_user = p->view_user;
    }
    return FLIT_OK;
}

/* Under the lock, with nothing of g queued: drops every message. */
static void drop_messages(struct flit_group *g)
{
    for (unsigned b = 0; b < HB_BUCKETS; b++)
        while (g->hb[b]) {
            struct gmsg *m = g->hb[b];
            g->hb[b] = m->next;
            fl_grp_msg_unref(g, m);
        }
    while (g->unnumbered) {
        struct gmsg *m = g->unnumbered;
        g->unnumbered = m->next;
        fl_grp_msg_unref(g, m);
    }
    while (g->own_head) {
        struct gmsg *m = g->own_head;
        g->own_head = m->own_next;
        fl_grp_msg_unref(g, m);
    }
    g->own_tail = NULL;
    fl_grp_retained_clear(g);
    fl_grp_owe_clear(g);
}

static void group_free(struct flit_group *g)
{
    drop_messages(g);
    free(g->gone);
    free(g->heard);
    free(g->left);
    free(g->cu_from);
    free(g->cu_to);
    free(g->cu_owed);
    free(g->bc_owed);
    free(g->seq_to);
    free(g->seq_sseq);
    free(g->seq_owed);
    free(g->members);
    free(g->cost);
    free(g->delivered);
    free(g->want);
    free(g->reqq);
    (void)flit_handle_free(&fl_grp_groups, g->self);
    g->self = NULL;
}

/* Frees what g holds; the struct stays in gs's graves until gs goes. */
static void group_bury(struct flit_groups *gs, struct flit_group *g)
{
    group_free(g);
    lock(gs);
    g->next = gs->graves;
    gs->graves = g;
    unlock(gs);
}

/* Sets up the state of the credit manager and the sender's credits. */
static flit_status init_credits(struct flit_group *g)
{
    g->allowance = g->window / (2 * g->n);
    g->credits = g->allowance;
    g->gone = calloc(g->n, 1);
    g->heard = calloc(g->n, 1);
    g->left = calloc(g->n, sizeof *g->left);
    g->cu_from = calloc(g->n, sizeof *g->cu_from);
    g->cu_to = calloc(g->n, sizeof *g->cu_to);
    g->cu_owed = calloc(g->n, 1);
    g->bc_owed = calloc(g->n, 1);
    if (!g->gone || !g->heard || !g->left || !g->cu_from || !g->cu_to || !g->cu_owed ||
        !g->bc_owed)
        return FLIT_ERR_NO_MEMORY;
    if (g->me != g->seqr)
        return FLIT_OK;
    g->join_frag = g->frag;
    return fl_grp_seqr_reset(g, 0, (int64_t)g->window - (int64_t)g->allowance * g->n);
}

/* Under the lock: links g into gs, taking the JOINs that came first. */
static void link_group(struct flit_groups *gs, struct flit_group *g)
{
    for (struct early **p = &gs->early; *p; p = &(*p)->next) {
        if ((*p)->id == g->id) {
            struct early *e = *p;
            *p = e->next;
            g->joined = e->joins;
            if (e->frag < g->join_frag)
                g->join_frag = e->frag;
            free(e);
            break;
        }
    }
    g->next = gs->groups;
    gs->groups = g;
    atomic_fetch_add_explicit(&gs->ctr->live, 1, memory_order_relaxed);
}

static void unlink_group(struct flit_groups *gs, struct flit_group *g)
{
    for (struct flit_group **p = &gs->groups; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            atomic_fetch_sub_explicit(&gs->ctr->live, 1, memory_order_relaxed);
            return;
        }
}

/* Under the lock: drops the queued messages of g (a stopped group). */
static void drop_queued(struct flit_groups *gs, struct flit_group *g)
{
    struct out **p = &gs->out_head;
    gs->out_tail = NULL;
    while (*p) {
        struct out *o = *p;
        if (o->g == g) {
            *p = o->next;
            fl_grp_out_release(gs, o);
        } else {
            gs->out_tail = o;
            p = &o->next;
        }
    }
}

flit_status flit_group_create(flit_groups_t *h, uint32_t id, const flit_rank_t *members,
                              unsigned n, const flit_group_params_t *params,
                              flit_group_deliver_fn fn, void *user, flit_group_t **out)
{
    struct flit_groups *gs = gs_of(h);
    if (!gs || !fn || !out)
        return FLIT_ERR_INVALID_ARG;
    if (fl_grp_delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    struct flit_group *g = calloc(1, sizeof *g);
    if (!g || flit_handle_new(&fl_grp_groups, g, &g->self) != FLIT_OK) {
        free(g);
        return FLIT_ERR_NO_MEMORY;
    }
    g->gs = gs;
    g->id = id;
    g->fn = fn;
    g->user = user;
    g->frag = gs->frag;
    flit_status st = take_members(gs, members, n, &g->members, &g->n);
    if (st == FLIT_OK && (g->me = index_of(g, gs->me)) == NO_RANK)
        st = FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK)
        st = take_params(g, params);
    if (st == FLIT_OK)
        st = init_credits(g);
    if (st == FLIT_OK) {
        lock(gs);
        if (find_group(gs, id))
            st = FLIT_ERR_INVALID_ARG;
        else
            link_group(gs, g);
        uint32_t frag = (uint32_t)g->frag;
        if (st == FLIT_OK) /* else fl_grp_retry_group sends it */
            g->join_sent = fl_grp_ctl_push(g, g->seqr, OP_JOIN, &frag, 1);
        unlock(gs);
    }
    if (st == FLIT_OK && (st = wait_for(g, is_ready)) != FLIT_OK) {
        lock(gs);
        drop_queued(gs, g);
        unlink_group(gs, g);
        unlock(gs);
    }
    if (st != FLIT_OK) {
        group_free(g);
        free(g);
        return st;
    }
    *out = g->self;
    return FLIT_OK;
}

bool fl_grp_own_delivered(struct flit_group *g)
{
    return g->fl_grp_own_delivered == g->sent;
}

/* (the sequencer's CLOSED to the others gone out too) */
static bool is_closed(struct flit_group *g)
{
    return g->closed && g->queued == 0 && !g->owe;
}

/* (and nothing this member owes a child: the FIN goes after it) */
static bool all_done(struct flit_group *g)
{
    return g->done && g->next_deliver >= g->final && g->queued == 0 && !g->owe;
}

/* A step of destroy: its message to the sequencer wanted (*want), queued
   by fl_grp_retry_group now, or by a later pass if it cannot be (no
   memory), or by the new view's install during a view change; then a wait
   for its answer. */
static flit_status tell_sequencer(struct flit_group *g, bool *want,
                                  bool (*answered)(struct flit_group *))
{
    lock(g->gs);
    *want = true;
    fl_grp_retry_group(g);
    unlock(g->gs);
    return wait_for(g, answered);
}

flit_status flit_group_destroy(flit_group_t *h)
{
    struct flit_group *g = group_of(h);
    if (!g || g->leaving)
        return FLIT_ERR_INVALID_ARG;
    if (fl_grp_delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    struct flit_groups *gs = g->gs;
    g->leaving = true;
    flit_status st = wait_for(g, fl_grp_own_delivered);
    if (st == FLIT_OK)
        st = tell_sequencer(g, &g->leave_want, all_done);
    if (st == FLIT_OK)
        st = tell_sequencer(g, &g->fin_want, is_closed);
    if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN) {
        g->leaving = false; /* the endpoint failed: may be called again */
        return st;
    }
    lock(gs);
    drop_queued(gs, g);
    unlink_group(gs, g);
    unlock(gs);
    group_bury(gs, g);
    return st;
}

/* ---------------------------------------------------------------- sending */

static bool has_credits_for(struct flit_group *g, uint32_t cost)
{
    return g->credits >= cost;
}

/* Makes progress until the sender holds cost credits, asking the manager
   for what it lacks (and a refill) when no request is out. */
static flit_status get_credits(struct flit_group *g, uint32_t cost)
{
    struct flit_groups *gs = g->gs;
    bool waited = false;
    for (;;) {
        lock(gs);
        act_on_down(gs);
        if (g->stopped) {
            unlock(gs);
            return FLIT_ERR_PEER_DOWN;
        }
        if (!g->rec.on && has_credits_for(g, cost)) {
            g->credits -= cost;
            g->credit_waits += waited;
            unlock(gs);
            return FLIT_OK;
        }
        if (!g->cred_asked && !g->rec.on) {
            uint32_t amount = cost - g->credits + g->allowance;
            /* Asked only once queued: else the next turn asks again. */
            g->cred_asked = fl_grp_ctl_push(g, g->seqr, OP_CREDREQ, &amount, 1);
        }
        fl_grp_retry(gs);
        unlock(gs);
        waited = true;
        fl_grp_drain(gs);
        flit_status st = flit_wait(gs->ep, WAIT_SLICE_US);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
    }
}

/* Under the lock: credits to ask for with this message (Panda's piggyback):
   a refill when half the allowance is spent and no request is out. The
   caller marks the request out once the message is queued. */
static uint32_t piggyback(const struct flit_group *g)
{
    if (g->cred_asked || g->credits >= (g->allowance + 1) / 2)
        return 0;
    return g->allowance - g->credits;
}

/* Under the lock: m, the newest of this member's own messages, could not be
   queued: it is forgotten as if never sent (its number, its place in the
   list), so that the program may send it again. */
static void unqueue_own(struct flit_group *g, struct gmsg *m)
{
    struct gmsg **p = &g->own_head, *prev = NULL;
    while (*p != m) {
        prev = *p;
        p = &(*p)->own_next;
    }
    *p = NULL;
    g->own_tail = prev;
    if (g->unnumbered == m) {
        g->unnumbered = m->next;
        fl_grp_msg_unref(g, m);
    }
    g->next_sseq--;
    fl_grp_msg_unref(g, m);
}

/* Under the lock: the message, gathered, queued to the sequencer. */
static flit_status queue_message(struct flit_group *g, const struct iovec *iov,
                                 int iovcnt, size_t total, uint32_t cost)
{
    struct flit_groups *gs = g->gs;
    fl_grp_resend_own(g);
    if (g->resending) /* an older one is not queued again yet: it goes first */
        return FLIT_ERR_NO_MEMORY;
    struct gmsg *m = fl_grp_msg_new(g, total);
    if (!m)
        return FLIT_ERR_NO_MEMORY;
    flit_iov_gather(m->data, iov, iovcnt);
    m->sender = gs->me;
    m->sender_seq = g->next_sseq++;
    m->cost = cost;
    /* Kept (its first reference) until delivered here: a view change sends
       it again if the old view did not order it. */
    m->own_next = NULL;
    if (g->own_tail)
        g->own_tail->own_next = m;
    else
        g->own_head = m;
    g->own_tail = m;
    uint32_t a[MAX_ARGS] = {0, g->id, g->view, m->sender_seq};
    bool ok, small = total <= g->small_max;
    uint32_t ask = piggyback(g);
    if (small) {
        a[0] = op_word(OP_SMALL);
        a[4] = ask;
        ok = fl_grp_out_push(gs, g, g->members[g->seqr], a, op_nargs[OP_SMALL], m, 0,
                             total);
    } else {
        a[0] = op_word(OP_SEQREQ);
        a[4] = cost;
        a[5] = ask;
        m->refs++;
        m->next = g->unnumbered;
        g->unnumbered = m;
        ok = fl_grp_out_push(gs, g, g->members[g->seqr], a, op_nargs[OP_SEQREQ], NULL, 0,
                             0);
    }
    if (!ok) { /* nothing sent: the call says so, and may be made again */
        unqueue_own(g, m);
        return FLIT_ERR_NO_MEMORY;
    }
    g->cred_asked |= ask != 0;
    g->sent_small += small;
    g->sent++;
    return FLIT_OK;
}

flit_status flit_group_sendv(flit_group_t *h, const struct iovec *iov, int iovcnt)
{
    struct flit_group *g = group_of(h);
    if (!g || g->leaving)
        return FLIT_ERR_INVALID_ARG;
    if (fl_grp_delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    size_t total;
    flit_status st = flit_iov_total(iov, iovcnt, &total);
    if (st != FLIT_OK)
        return st;
    if (total > (size_t)(g->window / 2) * g->frag)
        return FLIT_ERR_TOO_LARGE;
    uint32_t cost = fl_grp_cost_of(g, total);
    if ((st = get_credits(g, cost)) != FLIT_OK)
        return st;
    lock(g->gs);
    st = queue_message(g, iov, iovcnt, total, cost);
    if (st != FLIT_OK)
        g->credits += cost; /* not sent: its credits are still this member's */
    unlock(g->gs);
    fl_grp_drain(g->gs);
    return st;
}

flit_status flit_group_send(flit_group_t *g, const void *buf, size_t n)
{
    struct iovec v = {(void *)(uintptr_t)buf, n};
    return flit_group_sendv(g, &v, 1);
}

/* ---------------------------------------------------------------- stats */

/* What credits let a member hold: messages not delivered everywhere yet and
   its newest deliveries kept for a view change (window credits' worth
   each), plus copies of its own small messages until they come back. */
static uint64_t buffer_bound(const struct flit_group *g)
{
    uint64_t per = sizeof(struct gmsg) + 1 + g->frag / 8;
    return (uint64_t)g->window * (2 * (g->frag + per) + g->small_max + per);
}

flit_status flit_group_stats(flit_group_t *h, flit_group_stats_t *out)
{
    struct flit_group *g = group_of(h);
    /* A program built against an earlier header knows a shorter struct (up
       to stopped): it gets what it knows. */
    if (!g || !out || out->struct_size < offsetof(flit_group_stats_t, refused) ||
        out->struct_size > sizeof *out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_groups *gs = g->gs;
    flit_group_stats_t s = {.struct_size = out->struct_size};
    lock(gs);
    s.size = g->n;
    s.sequencer = flit_rank(g->members[g->seqr]);
    s.frag = g->frag;
    s.sent = g->sent;
    s.sent_small = g->sent_small;
    s.delivered = g->next_deliver;
    s.forwarded = g->forwarded;
    s.forward_waits = g->forward_waits;
    s.credit_waits = g->credit_waits;
    s.buffered = g->buffered;
    s.buffered_max = g->buffered_max;
    s.buffer_bound = buffer_bound(g);
    s.views = g->views;
    s.stopped = g->stopped;
    s.refused = atomic_load_explicit(&gs->ctr->refused, memory_order_relaxed);
    unlock(gs);
    memcpy(out, &s, s.struct_size);
    return FLIT_OK;
}
