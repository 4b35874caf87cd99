/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Totally-ordered group multicast on the public API alone: <flit/group.h>
 * for the contract, docs/groups.md for the protocol and why. Nothing here
 * includes a header of src/.
 *
 * Wire: every message is an active message to the one handler index the
 * groups of an endpoint reserved: short for control, medium for data (one
 * fragment of at most frag bytes each). args[0] is the version and opcode,
 * args[1] the group id; the rest depends on the opcode (see enum op). The
 * member a control message comes from is its token's rank.
 *
 * Who sends what, and from where. Active-message handlers never send: they
 * update the state and append what must go out to one FIFO per endpoint
 * (struct out). The queue is drained with non-blocking sends by whoever
 * runs program code next on the endpoint: the progress listener (after
 * every pass of the engine), or a group call of the program. A send that
 * finds no room stays at the head; flit_wait wakes when room comes back.
 * One thread drains at a time (gs->draining), so the FIFO order is the
 * order on the wire; the protocol does not rely on it for data (fragments
 * carry their sequence number and offset), only for speed.
 *
 * Locking: one mutex per endpoint's groups (gs->lock), on thread-safe
 * endpoints only, never held across a flit call or the delivery handler.
 * Deliveries of a group run one at a time and in order: the thread that
 * finds the next message complete delivers it, and any that follow.
 */
#include <flit/group.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUPS_MAGIC  0x666c7467726f7570ull /* "fltgroup" */
#define GROUP_MAGIC   0x67727570u           /* a live group */
#define MSG_MAGIC     0x676d7367u           /* a delivery under way */
#define WIRE_VERSION  2u
#define FRAG_MAX      32768u /* bytes of data per fragment, at most */
#define FRAG_MIN      1024u
#define HB_BUCKETS    256u /* hold-back hash, per group */
#define WAIT_SLICE_US 10000
#define NO_RANK       UINT32_MAX

/*
 * Opcodes, with their arguments after [0] opcode, [1] group id, [2] view
 * (the number of view changes the group went through; a message of another
 * view than the one it is meant for is stale and dropped). Ranks are job
 * ranks; only the tree's root is a member index.
 */
enum op {
    OP_JOIN = 1, /* member -> sequencer: created here; [3] its frag */
    OP_READY,    /* sequencer -> member: everyone joined; [3] the frag */
    OP_SMALL,    /* sender -> sequencer: number and multicast this;
                    [3] sender's seq [4] credits wanted; payload: data */
    OP_SEQREQ,   /* sender -> sequencer: a number for a large message;
                    [3] sender's seq [4] its cost [5] credits wanted */
    OP_SEQ,      /* sequencer -> sender: [3] sender's seq [4,5] number */
    OP_DATA,     /* down the tree: [3,4] number [5] root (NO_RANK: sent
                    straight, not to forward) [6] sender [7] sender's seq
                    [8,9] total [10,11] offset; payload: the fragment */
    OP_CREDREQ,  /* sender -> manager: [3] credits wanted */
    OP_CREDIT,   /* manager -> sender: [3] credits granted */
    OP_ACK,      /* member -> manager: [3,4] messages delivered */
    OP_LEAVE,    /* member -> sequencer: destroying */
    OP_DONE,     /* sequencer -> member: [3,4] messages the group had */
    OP_FIN,      /* member -> sequencer: all delivered here; my last word */
    OP_CLOSED,   /* sequencer -> member: every member's last word is in */
    /* View change; [2] is the view being formed. */
    OP_QUERY,   /* coordinator -> survivors: [3] the rank that left */
    OP_STATE,   /* survivor -> coordinator: [3] the rank that left
                   [4,5] messages delivered */
    OP_NEWVIEW, /* coordinator -> survivors: [3,4] the old view's last
                   number + 1 [5] a survivor that delivered them all */
    OP_CATCHUP, /* survivor -> that one: [3,4] send me from this number
                   [5,6] up to this one (it may hear of it first) */
    OP_CAUGHT,  /* survivor -> coordinator: delivered all; [3] credits its
                   messages not ordered yet will take */
    OP_INSTALL, /* coordinator -> survivors: the new view starts */
    OP_COUNT
};

#define DATA_ARGS 12u
#define MAX_ARGS  12u

/* A message: while it arrives, while held back, while delivered, while
   fragments of it wait to be forwarded, while kept for a view change. Each
   list it is on holds one reference. */
struct gmsg {
    struct gmsg *next;     /* hold-back chain, or the list of unnumbered */
    struct gmsg *own_next; /* this member's messages not delivered here */
    struct gmsg *ret_next; /* delivered, kept for a view change */
    uint64_t seq;
    uint32_t view;   /* the view that numbered it */
    uint32_t sender; /* rank */
    uint32_t sender_seq;
    uint32_t root; /* member index the tree of this message starts at */
    uint32_t cost;
    size_t total, got;
    unsigned refs;
    uint8_t *have; /* per fragment: arrived (after data) */
    uint8_t data[];
};

/* One active message waiting to go out. */
struct out {
    struct out *next;
    struct flit_group *g; /* counts it in g->queued; NULL: none */
    uint32_t dest;        /* rank */
    uint32_t nargs;
    uint32_t args[MAX_ARGS];
    struct gmsg *msg; /* payload: msg->data + off, len bytes; NULL: short */
    size_t off, len;
};

/* A JOIN that arrived before this rank created the group. */
struct early {
    struct early *next;
    uint32_t id, joins;
    size_t frag;
};

struct flit_groups {
    uint64_t magic;
    flit_ep_t *ep;
    flit_handler_t h;
    uint32_t me, size;
    bool mt;
    pthread_mutex_t lock;
    struct flit_group *groups;
    struct flit_group *graves; /* destroyed: kept so that a late call on
                                  one answers FLIT_ERR_INVALID_ARG */
    struct early *early;
    struct out *out_head, *out_tail, *out_free;
    bool draining;
    _Atomic bool work;     /* the progress listener has something to do */
    _Atomic uint64_t down; /* peers reported down, not yet acted on */
    uint8_t *dead;         /* per rank: 1 reported down, 2 acted on */
    uint64_t unknown;      /* messages for a group not here */
    size_t frag;
};

struct flit_group_msg {
    uint32_t magic;
    struct flit_group *g;
    struct gmsg *msg;
    size_t pos;
};

/* Where a view change stands, at a survivor (and at its coordinator). */
struct recovery {
    bool on;          /* forming view rview; deliveries frozen */
    uint32_t rview;   /* the view being formed */
    uint32_t co;      /* its coordinator (rank), the new sequencer */
    bool final_known; /* NEWVIEW came: deliver up to final, no further */
    bool caught_sent;
    uint64_t final;
    /* Coordinator only. */
    uint32_t states, caught;
    uint64_t max_delivered;
    uint32_t donor;   /* rank */
    uint64_t pending; /* credits of the survivors' unordered messages */
};

struct flit_group {
    uint32_t magic;
    struct flit_groups *gs;
    struct flit_group *next;
    uint32_t id, n, me, seqr; /* members, this one, the sequencer (indices) */
    uint32_t *members;        /* ranks, ascending */
    uint8_t *gone;            /* per member: left (a view change under way) */
    uint32_t view;
    flit_group_deliver_fn fn;
    void *user;
    flit_group_view_fn view_fn;
    void *view_user;
    uint32_t window, allowance, small_max;
    size_t frag;
    bool ready, leaving, leave_sent, done, fin_sent, closed, stopped;
    uint32_t *left; /* ranks that left, view handler not run yet */
    uint32_t nleft;
    struct recovery rec;
    /* Sending. */
    uint32_t credits, next_sseq;
    bool cred_asked;
    struct gmsg *unnumbered; /* large messages waiting for their number */
    struct gmsg *own_head, *own_tail;
    uint64_t sent, own_delivered;
    /* Receiving. */
    struct gmsg *hb[HB_BUCKETS];
    uint64_t next_deliver, acked, final;
    bool delivering;
    struct flit_group_msg cur; /* the delivery under way */
    struct gmsg *ret_head, *ret_tail;
    uint64_t ret_cost;
    unsigned queued; /* out items of this group */
    /* Sequencer and credit manager. */
    uint32_t joined, left_count, fin_count;
    size_t join_frag; /* the smallest frag the members joined with */
    uint64_t next_seq, released;
    int64_t pool;        /* below 0 after a view change: owed */
    uint32_t *cost;      /* [seq % window] */
    uint64_t *delivered; /* per member, as acknowledged */
    uint32_t *want;      /* per member: credits asked, 0: none */
    uint32_t *reqq;      /* members asking, FIFO of n */
    uint32_t rq_head, rq_len;
    /* Counters. */
    uint64_t sent_small, forwarded, forward_waits, credit_waits, views;
    uint64_t buffered, buffered_max;
};

static __thread unsigned delivery_depth;

/* ---------------------------------------------------------------- helpers */

static inline void lock(struct flit_groups *gs)
{
    if (gs->mt)
        pthread_mutex_lock(&gs->lock);
}

static inline void unlock(struct flit_groups *gs)
{
    if (gs->mt)
        pthread_mutex_unlock(&gs->lock);
}

static inline bool gs_ok(const struct flit_groups *gs)
{
    return gs && gs->magic == GROUPS_MAGIC;
}

static inline bool group_ok(const struct flit_group *g)
{
    return g && g->magic == GROUP_MAGIC;
}

static inline void put64(uint32_t *a, uint64_t v)
{
    a[0] = (uint32_t)v;
    a[1] = (uint32_t)(v >> 32);
}

static inline uint64_t get64(const uint32_t *a)
{
    return (uint64_t)a[0] | (uint64_t)a[1] << 32;
}

static inline uint32_t op_word(enum op op)
{
    return WIRE_VERSION << 24 | (uint32_t)op;
}

/* The member index of rank, or NO_RANK. */
static uint32_t index_of(const struct flit_group *g, uint32_t rank)
{
    uint32_t lo = 0, hi = g->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->members[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n && g->members[lo] == rank ? lo : NO_RANK;
}

/* Under the lock. */
static struct flit_group *find_group(struct flit_groups *gs, uint32_t id)
{
    for (struct flit_group *g = gs->groups; g; g = g->next)
        if (g->id == id)
            return g;
    return NULL;
}

/* ---------------------------------------------------------------- messages */

/* Credits a message of total bytes costs: one per fragment, at least one;
   a small one (through the sequencer) one. The same at every member. */
static uint32_t cost_of(const struct flit_group *g, size_t total)
{
    if (total <= g->small_max)
        return 1;
    size_t c = (total + g->frag - 1) / g->frag;
    return c ? (uint32_t)c : 1u;
}

static size_t frags_of(const struct flit_group *g, size_t total)
{
    size_t c = (total + g->frag - 1) / g->frag;
    return c ? c : 1;
}

/* Under the lock. NULL when out of memory. */
static struct gmsg *msg_new(struct flit_group *g, size_t total)
{
    size_t bits = (frags_of(g, total) + 7) / 8;
    struct gmsg *m = malloc(sizeof *m + total + bits);
    if (!m)
        return NULL;
    memset(m, 0, sizeof *m);
    m->total = total;
    m->refs = 1;
    m->cost = cost_of(g, total);
    m->have = m->data + total;
    memset(m->have, 0, bits);
    g->buffered += sizeof *m + total + bits;
    if (g->buffered > g->buffered_max)
        g->buffered_max = g->buffered;
    return m;
}

/* Under the lock. */
static void msg_unref(struct flit_group *g, struct gmsg *m)
{
    if (--m->refs)
        return;
    g->buffered -= sizeof *m + m->total + (frags_of(g, m->total) + 7) / 8;
    free(m);
}

static struct gmsg **hb_slot(struct flit_group *g, uint64_t seq)
{
    struct gmsg **p = &g->hb[seq % HB_BUCKETS];
    while (*p && (*p)->seq != seq)
        p = &(*p)->next;
    return p;
}

/* ---------------------------------------------------------------- out queue */

/* Under the lock. Appends a message for rank dest; false: no memory. */
static bool out_push(struct flit_groups *gs, struct flit_group *g, uint32_t dest,
                     const uint32_t *args, unsigned nargs, struct gmsg *msg, size_t off,
                     size_t len)
{
    struct out *o = gs->out_free;
    if (o)
        gs->out_free = o->next;
    else if (!(o = malloc(sizeof *o)))
        return false;
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
static void ctl_to(struct flit_group *g, uint32_t rank, enum op op, uint32_t view,
                   const uint32_t *rest, unsigned nrest)
{
    uint32_t a[MAX_ARGS] = {op_word(op), g->id, view};
    for (unsigned i = 0; i < nrest; i++)
        a[3 + i] = rest[i];
    if (!out_push(g->gs, g, rank, a, 3 + nrest, NULL, 0, 0))
        fprintf(stderr, "flit: group %u: no memory for a control message\n", g->id);
}

/* The same to member index i, in the current view. */
static void ctl_push(struct flit_group *g, uint32_t i, enum op op, const uint32_t *rest,
                     unsigned nrest)
{
    ctl_to(g, g->members[i], op, g->view, rest, nrest);
}

/* Under the lock: an item is done with (sent, or dropped). */
static void out_release(struct flit_groups *gs, struct out *o)
{
    if (o->msg)
        msg_unref(o->g, o->msg);
    if (o->g)
        o->g->queued--;
    o->next = gs->out_free;
    gs->out_free = o;
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
 * dropped: the view change makes up for it.
 */
static void drain(struct flit_groups *gs)
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
        if (st == FLIT_ERR_AGAIN || st == FLIT_ERR_IN_HANDLER) {
            if (o->g && o->msg && st == FLIT_ERR_AGAIN)
                o->g->forward_waits++;
            o->next = gs->out_head;
            gs->out_head = o;
            if (!gs->out_tail)
                gs->out_tail = o;
            break;
        }
        if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
            fprintf(stderr, "flit: group: rank %u: message to rank %u lost: %s\n", gs->me,
                    o->dest, flit_strerror(st));
        if (st == FLIT_OK && o->msg)
            o->g->forwarded++;
        out_release(gs, o);
    }
    gs->draining = false;
    unlock(gs);
}

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
        msg_unref(g, old);
    }
}

static void retained_clear(struct flit_group *g)
{
    while (g->ret_head) {
        struct gmsg *m = g->ret_head;
        g->ret_head = m->ret_next;
        msg_unref(g, m);
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
    g->own_delivered++;
    msg_unref(g, o);
}

static bool may_deliver(const struct flit_group *g)
{
    if (g->delivering || g->stopped)
        return false;
    if (!g->rec.on)
        return true;
    return g->rec.final_known && g->next_deliver < g->rec.final;
}

static void check_caught(struct flit_group *g);

/*
 * Delivers the messages that are next in order and complete, one after
 * the other, unless another thread delivers for g now (it will take them).
 * Called with the lock held; returns with it held.
 */
static void deliver_ready(struct flit_group *g)
{
    struct flit_groups *gs = g->gs;
    while (may_deliver(g)) {
        struct gmsg **slot = hb_slot(g, g->next_deliver);
        struct gmsg *m = *slot;
        if (!m || m->got < m->total || (m->total == 0 && !m->have[0]))
            break;
        *slot = m->next;
        m->next = NULL;
        g->delivering = true;
        /* The handle lives in g, so that one kept past its handler's return
           reads as dead (FLIT_ERR_BAD_TOKEN) rather than as stale stack. */
        struct flit_group_msg *h = &g->cur;
        *h = (struct flit_group_msg){.magic = MSG_MAGIC, .g = g, .msg = m, .pos = 0};
        unlock(gs);
        delivery_depth++;
        g->fn(g, h, m->total, g->user);
        delivery_depth--;
        lock(gs);
        h->magic = 0;
        g->delivering = false;
        g->next_deliver++;
        if (m->sender == gs->me)
            own_done(g, m);
        retain(g, m);
        atomic_store_explicit(&gs->work, true, memory_order_release);
    }
    check_caught(g);
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

/* Under the lock: the hold-back entry for a fragment of view view, number
   seq; NULL to drop the fragment. An entry of an older view at that number
   was never delivered and never will be: a newer one replaces it. */
static struct gmsg *entry_for(struct flit_group *g, const uint32_t *a, uint64_t total)
{
    uint64_t seq = get64(a + 3);
    struct gmsg **slot = hb_slot(g, seq);
    struct gmsg *m = *slot;
    if (m && m->view > a[2])
        return NULL;
    if (m && m->view < a[2]) {
        *slot = m->next;
        msg_unref(g, m);
        m = NULL;
    }
    if (m)
        return m->total == total ? m : NULL;
    if (!(m = msg_new(g, total))) {
        fprintf(stderr, "flit: group %u: no memory for a message of %llu bytes\n", g->id,
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

/* Under the lock: may a fragment of view v be taken now? */
static bool view_ok(const struct flit_group *g, uint32_t v)
{
    if (v == g->view)
        return true;
    /* A survivor that installed the new view sends in it while this one
       still finishes the old: keep it for later. */
    return v == g->view + 1 && g->rec.on && g->rec.rview == v && g->rec.final_known;
}

/*
 * Under the lock: a fragment of message seq arrived here (or, at its root,
 * was put in place): keep it, pass it down the tree, deliver what is due.
 */
static void take_fragment(struct flit_group *g, const uint32_t *a, const void *buf,
                          size_t len)
{
    uint64_t seq = get64(a + 3), total = get64(a + 8), off = get64(a + 10);
    uint32_t root = a[5];
    if ((root != NO_RANK && root >= g->n) || off > total || len > total - off ||
        (len != g->frag && off + len != total) || off % g->frag) {
        fprintf(stderr, "flit: group %u: malformed fragment dropped\n", g->id);
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
    /* Binary tree over the members, rooted at root: position p's children
       are 2p+1 and 2p+2. */
    if (root != NO_RANK && a[2] == g->view) {
        uint32_t p = (g->me + g->n - root) % g->n;
        for (uint32_t c = 2 * p + 1; c <= 2 * p + 2 && c < g->n; c++)
            if (!out_push(g->gs, g, g->members[(c + root) % g->n], a, DATA_ARGS, m, off,
                          len))
                fprintf(stderr, "flit: group %u: no memory to forward\n", g->id);
    }
    deliver_ready(g);
}

/* Under the lock: queues every fragment of m to rank dest; root as in
   OP_DATA. */
static void push_fragments(struct flit_group *g, struct gmsg *m, uint32_t dest,
                           uint32_t root)
{
    uint32_t d[DATA_ARGS] = {op_word(OP_DATA), g->id, m->view};
    put64(d + 3, m->seq);
    d[5] = root;
    d[6] = m->sender;
    d[7] = m->sender_seq;
    put64(d + 8, m->total);
    size_t off = 0;
    do {
        size_t len = m->total - off < g->frag ? m->total - off : g->frag;
        put64(d + 10, off);
        out_push(g->gs, g, dest, d, DATA_ARGS, m, off, len);
        off += len;
    } while (off < m->total);
}

/* ---------------------------------------------------------------- manager */

/* Under the lock, at the sequencer: grants queued requests while the pool
   has room, first come first served (a large request is never passed by
   small ones: it would starve). */
static void serve_credits(struct flit_group *g)
{
    while (g->rq_len) {
        uint32_t i = g->reqq[g->rq_head];
        if (g->pool < (int64_t)g->want[i])
            return;
        g->pool -= g->want[i];
        ctl_push(g, i, OP_CREDIT, &g->want[i], 1);
        g->want[i] = 0;
        g->rq_head = (g->rq_head + 1) % g->n;
        g->rq_len--;
    }
}

static void ask_credits(struct flit_group *g, uint32_t i, uint32_t amount)
{
    if (!amount || g->want[i])
        return; /* one request per member at a time */
    g->want[i] = amount;
    g->reqq[(g->rq_head + g->rq_len) % g->n] = i;
    g->rq_len++;
    serve_credits(g);
}

/* Under the lock, at the sequencer: the next number, its cost on record. */
static uint64_t number(struct flit_group *g, uint32_t cost)
{
    uint64_t s = g->next_seq++;
    g->cost[s % g->window] = cost;
    return s;
}

static void on_ack(struct flit_group *g, uint32_t i, uint64_t count)
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
    serve_credits(g);
}

/* (Re)sets the sequencer's state for numbers from first on, with pool
   credits to give. */
static flit_status seqr_reset(struct flit_group *g, uint64_t first, int64_t pool)
{
    free(g->cost);
    free(g->delivered);
    free(g->want);
    free(g->reqq);
    g->cost = calloc(g->window, sizeof *g->cost);
    g->delivered = calloc(g->n, sizeof *g->delivered);
    g->want = calloc(g->n, sizeof *g->want);
    g->reqq = calloc(g->n, sizeof *g->reqq);
    if (!g->cost || !g->delivered || !g->want || !g->reqq)
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

static void on_small(struct flit_group *g, uint32_t from, const uint32_t *a, void *buf,
                     size_t n)
{
    if (n > g->small_max) {
        fprintf(stderr, "flit: group %u: small message of %zu bytes refused\n", g->id, n);
        return;
    }
    uint32_t d[DATA_ARGS] = {op_word(OP_DATA), g->id, g->view};
    put64(d + 3, number(g, 1));
    d[5] = g->me;
    d[6] = g->members[from];
    d[7] = a[3];
    put64(d + 8, n);
    put64(d + 10, 0);
    ask_credits(g, from, a[4]);
    take_fragment(g, d, buf, n);
}

static void on_seqreq(struct flit_group *g, uint32_t from, const uint32_t *a)
{
    uint32_t r[3] = {a[3]};
    if (a[4] == 0 || a[4] > g->window / 2) {
        fprintf(stderr, "flit: group %u: number request of cost %u refused\n", g->id,
                a[4]);
        return;
    }
    put64(r + 1, number(g, a[4]));
    ctl_push(g, from, OP_SEQ, r, 3);
    ask_credits(g, from, a[5]);
}

/* At the sender: the number of one of its large messages came: multicast
   it, from here, down the tree rooted here. */
static void on_seq(struct flit_group *g, const uint32_t *a)
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
    memset(m->have, 0xff, (frags_of(g, m->total) + 7) / 8);
    struct gmsg **slot = hb_slot(g, m->seq);
    m->next = *slot;
    *slot = m;
    for (uint32_t c = 1; c <= 2 && c < g->n; c++)
        push_fragments(g, m, g->members[(c + g->me) % g->n], g->me);
    deliver_ready(g);
}

static void on_join(struct flit_group *g, const uint32_t *a)
{
    if (a[3] < g->join_frag)
        g->join_frag = a[3];
    if (++g->joined < g->n)
        return;
    uint32_t f = (uint32_t)g->join_frag;
    for (uint32_t i = 0; i < g->n; i++)
        ctl_push(g, i, OP_READY, &f, 1);
}

static void on_ready(struct flit_group *g, const uint32_t *a)
{
    if (a[3] >= FRAG_MIN && a[3] <= g->frag)
        g->frag = a[3];
    if (g->small_max > g->frag)
        g->small_max = (uint32_t)g->frag;
    g->ready = true;
}

static void on_leave(struct flit_group *g)
{
    if (++g->left_count < g->n)
        return;
    uint32_t f[2];
    put64(f, g->next_seq);
    for (uint32_t i = 0; i < g->n; i++)
        ctl_push(g, i, OP_DONE, f, 2);
}

/* Every member's FIN is the last it sends this group, after everything it
   sent before (in order per pair): with all of them in, nothing of the
   group is on its way to anyone but the CLOSED that ends it, and the id
   may be used again at once. */
static void on_fin(struct flit_group *g)
{
    if (++g->fin_count < g->n)
        return;
    for (uint32_t i = 0; i < g->n; i++)
        ctl_push(g, i, OP_CLOSED, NULL, 0);
}

/* Under the lock: a JOIN for a group this rank has not created yet. */
static void early_join(struct flit_groups *gs, uint32_t id, size_t frag)
{
    struct early *e = gs->early;
    while (e && e->id != id)
        e = e->next;
    if (!e) {
        if (!(e = calloc(1, sizeof *e))) {
            fprintf(stderr, "flit: group %u: no memory to note a join\n", id);
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
static void start_view_change(struct flit_group *g, uint32_t i)
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
    ctl_to(g, r->co, OP_STATE, r->rview, st, 3);
    if (r->co != g->gs->me)
        return;
    /* Every member that left, to every survivor: one that died before any
       survivor heard of it may be unknown to a survivor that never talked
       to it (its endpoint has nothing to notice), and the round needs all
       survivors to count the same deaths. */
    for (uint32_t d = 0; d < g->n; d++)
        for (uint32_t k = 0; g->gone[d] && k < g->n; k++)
            if (!g->gone[k] && k != g->me)
                ctl_to(g, g->members[k], OP_QUERY, r->rview, &g->members[d], 1);
}

/* Under the lock: rank left (as a peer told us); false: not a member. */
static bool learn_left(struct flit_group *g, uint32_t rank)
{
    uint32_t i = index_of(g, rank);
    if (i == NO_RANK)
        return false;
    start_view_change(g, i);
    return true;
}

/* At the coordinator: a survivor's report. */
static void on_state(struct flit_group *g, uint32_t from_rank, const uint32_t *a)
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
            ctl_to(g, g->members[k], OP_NEWVIEW, r->rview, nv, 3);
}

static void on_query(struct flit_group *g, const uint32_t *a)
{
    if (a[2] > g->view)
        learn_left(g, a[3]);
}

static void on_newview(struct flit_group *g, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (!r->on || a[2] != r->rview || r->final_known)
        return;
    r->final_known = true;
    r->final = get64(a + 3);
    if (g->next_deliver < r->final && a[5] != g->gs->me) {
        uint32_t range[4];
        put64(range, g->next_deliver);
        put64(range + 2, r->final);
        ctl_to(g, a[5], OP_CATCHUP, r->rview, range, 4);
    }
    deliver_ready(g);
}

/* At the donor: sends rank what it kept from number from up to final. */
static void on_catchup(struct flit_group *g, uint32_t rank, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (!r->on || a[2] != r->rview)
        return;
    uint64_t from = get64(a + 3), to = get64(a + 5);
    for (struct gmsg *m = g->ret_head; m; m = m->ret_next)
        if (m->seq >= from && m->seq < to)
            push_fragments(g, m, rank, NO_RANK);
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
static void check_caught(struct flit_group *g)
{
    struct recovery *r = &g->rec;
    if (!r->on || !r->final_known || r->caught_sent || g->next_deliver < r->final)
        return;
    r->caught_sent = true;
    uint32_t c = (uint32_t)own_cost(g);
    ctl_to(g, r->co, OP_CAUGHT, r->rview, &c, 1);
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
                msg_unref(g, m);
            } else {
                p = &m->next;
            }
        }
    }
    while (g->unnumbered) {
        struct gmsg *m = g->unnumbered;
        g->unnumbered = m->next;
        msg_unref(g, m);
    }
    retained_clear(g); /* every survivor delivered all of it */
    flit_status st = FLIT_OK;
    if (g->me == g->seqr)
        st = seqr_reset(g, r->final, pool);
    g->allowance = g->window / (2 * g->n);
    g->credits = 0; /* the pool has them all: ask */
    g->cred_asked = false;
    /* This member's messages not ordered yet go again, in order, paid. */
    for (struct gmsg *m = g->own_head; m; m = m->own_next) {
        uint32_t a[MAX_ARGS] = {0, g->id, g->view, m->sender_seq};
        if (m->total <= g->small_max) {
            a[0] = op_word(OP_SMALL);
            out_push(g->gs, g, g->members[g->seqr], a, 5, m, 0, m->total);
        } else {
            a[0] = op_word(OP_SEQREQ);
            a[4] = m->cost;
            m->refs++;
            m->next = g->unnumbered;
            g->unnumbered = m;
            out_push(g->gs, g, g->members[g->seqr], a, 6, NULL, 0, 0);
        }
    }
    if (g->leave_sent)
        ctl_push(g, g->seqr, OP_LEAVE, NULL, 0);
    if (g->fin_sent)
        ctl_push(g, g->seqr, OP_FIN, NULL, 0);
    deliver_ready(g);
    return st;
}

static void on_caught(struct flit_group *g, const uint32_t *a)
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
            ctl_to(g, g->members[i], OP_INSTALL, view, NULL, 0);
}

static void on_install(struct flit_group *g, const uint32_t *a)
{
    struct recovery *r = &g->rec;
    if (r->on && a[2] == r->rview && r->final_known && g->next_deliver == r->final)
        install(g, 0);
}

/* ---------------------------------------------------------------- handler */

static const unsigned op_nargs[OP_COUNT] = {
    [OP_JOIN] = 4,    [OP_READY] = 4,        [OP_SMALL] = 5,   [OP_SEQREQ] = 6,
    [OP_SEQ] = 6,     [OP_DATA] = DATA_ARGS, [OP_CREDREQ] = 4, [OP_CREDIT] = 4,
    [OP_ACK] = 5,     [OP_LEAVE] = 3,        [OP_DONE] = 5,    [OP_QUERY] = 4,
    [OP_STATE] = 6,   [OP_NEWVIEW] = 6,      [OP_CATCHUP] = 7, [OP_CAUGHT] = 4,
    [OP_INSTALL] = 3, [OP_FIN] = 3,          [OP_CLOSED] = 3,
};

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
    switch (op) {
    case OP_JOIN:
        on_join(g, a);
        break;
    case OP_READY:
        on_ready(g, a);
        break;
    case OP_SMALL:
        on_small(g, from, a, buf, n);
        break;
    case OP_SEQREQ:
        on_seqreq(g, from, a);
        break;
    case OP_SEQ:
        on_seq(g, a);
        break;
    case OP_DATA:
        take_fragment(g, a, buf, n);
        break;
    case OP_CREDREQ:
        ask_credits(g, from, a[3]);
        break;
    case OP_CREDIT:
        g->credits += a[3];
        g->cred_asked = false;
        break;
    case OP_ACK:
        on_ack(g, from, get64(a + 3));
        break;
    case OP_LEAVE:
        on_leave(g);
        break;
    case OP_DONE:
        g->final = get64(a + 3);
        g->done = true;
        break;
    case OP_FIN:
        on_fin(g);
        break;
    case OP_CLOSED:
        g->closed = true;
        break;
    case OP_QUERY:
        on_query(g, a);
        break;
    case OP_STATE:
        on_state(g, rank, a);
        break;
    case OP_NEWVIEW:
        on_newview(g, a);
        break;
    case OP_CATCHUP:
        on_catchup(g, rank, a);
        break;
    case OP_CAUGHT:
        on_caught(g, a);
        break;
    case OP_INSTALL:
        on_install(g, a);
        break;
    default:
        break;
    }
}

static void on_am(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user)
{
    struct flit_groups *gs = user;
    if (nargs < 3 || args[0] >> 24 != WIRE_VERSION)
        return;
    enum op op = (enum op)(args[0] & 0xff);
    if (op <= 0 || op >= OP_COUNT || nargs != op_nargs[op])
        return;
    lock(gs);
    struct flit_group *g = find_group(gs, args[1]);
    uint32_t from = g ? index_of(g, flit_token_rank(token).idx) : NO_RANK;
    if (op == OP_JOIN && (!g || g->ready)) /* (a ready one: the id's next group) */
        early_join(gs, args[1], args[3]);
    else if (!g || from == NO_RANK || g->stopped)
        gs->unknown++;
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
            ctl_push(g, g->seqr, OP_ACK, c, 2);
            g->acked = g->next_deliver;
        }
    }
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
            g->view_fn(g, flit_rank(rank), g->view_user);
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
                start_view_change(g, i);
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
    send_acks(gs);
    bool queued = gs->out_head != NULL;
    unlock(gs);
    run_view_fns(gs);
    if (queued)
        drain(gs);
    lock(gs);
    if (gs->out_head) /* no room: try again next pass */
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
        drain(gs);
        lock(gs);
        act_on_down(gs);
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
    if (!gs || !(gs->dead = calloc(size ? size : 1, 1))) {
        free(gs);
        return FLIT_ERR_NO_MEMORY;
    }
    gs->magic = GROUPS_MAGIC;
    gs->ep = ep;
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
    *out = gs;
    return FLIT_OK;
err_unlisten:
    (void)flit_ep_unlisten(ep, &listener, gs);
err_unregister:
    (void)flit_am_register(ep, h, on_am_gone, NULL);
err_free:
    pthread_mutex_destroy(&gs->lock);
    free(gs->dead);
    free(gs);
    return st;
}

flit_status flit_groups_destroy(flit_groups_t *gs)
{
    if (!gs_ok(gs))
        return FLIT_ERR_INVALID_ARG;
    if (delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    lock(gs);
    bool busy = gs->groups != NULL;
    unlock(gs);
    if (busy)
        return FLIT_ERR_AGAIN;
    /* Nothing is queued: each group's destroy dropped what was left. */
    (void)flit_ep_unlisten(gs->ep, &listener, gs);
    (void)flit_am_register(gs->ep, gs->h, on_am_gone, NULL);
    gs->magic = 0;
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
            msg_unref(g, m);
        }
    while (g->unnumbered) {
        struct gmsg *m = g->unnumbered;
        g->unnumbered = m->next;
        msg_unref(g, m);
    }
    while (g->own_head) {
        struct gmsg *m = g->own_head;
        g->own_head = m->own_next;
        msg_unref(g, m);
    }
    g->own_tail = NULL;
    retained_clear(g);
}

static void group_free(struct flit_group *g)
{
    drop_messages(g);
    free(g->gone);
    free(g->left);
    free(g->members);
    free(g->cost);
    free(g->delivered);
    free(g->want);
    free(g->reqq);
    g->magic = 0;
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
    g->left = calloc(g->n, sizeof *g->left);
    if (!g->gone || !g->left)
        return FLIT_ERR_NO_MEMORY;
    if (g->me != g->seqr)
        return FLIT_OK;
    g->join_frag = g->frag;
    return seqr_reset(g, 0, (int64_t)g->window - (int64_t)g->allowance * g->n);
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
}

static void unlink_group(struct flit_groups *gs, struct flit_group *g)
{
    for (struct flit_group **p = &gs->groups; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
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
            out_release(gs, o);
        } else {
            gs->out_tail = o;
            p = &o->next;
        }
    }
}

flit_status flit_group_create(flit_groups_t *gs, uint32_t id, const flit_rank_t *members,
                              unsigned n, const flit_group_params_t *params,
                              flit_group_deliver_fn fn, void *user, flit_group_t **out)
{
    if (!gs_ok(gs) || !fn || !out)
        return FLIT_ERR_INVALID_ARG;
    if (delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    struct flit_group *g = calloc(1, sizeof *g);
    if (!g)
        return FLIT_ERR_NO_MEMORY;
    g->magic = GROUP_MAGIC;
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
        if (st == FLIT_OK)
            ctl_push(g, g->seqr, OP_JOIN, &frag, 1);
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
    *out = g;
    return FLIT_OK;
}

static bool own_delivered(struct flit_group *g)
{
    return g->own_delivered == g->sent;
}

/* (the sequencer's CLOSED to the others gone out too) */
static bool is_closed(struct flit_group *g)
{
    return g->closed && g->queued == 0;
}

static bool all_done(struct flit_group *g)
{
    return g->done && g->next_deliver >= g->final && g->queued == 0;
}

/* A step of destroy: op to the sequencer (sent flags it, so that a new
   view sends it again), then a wait for its answer. */
static flit_status tell_sequencer(struct flit_group *g, enum op op, bool *sent,
                                  bool (*answered)(struct flit_group *))
{
    lock(g->gs);
    *sent = true;
    if (!g->rec.on) /* else the new view sends it */
        ctl_push(g, g->seqr, op, NULL, 0);
    unlock(g->gs);
    return wait_for(g, answered);
}

flit_status flit_group_destroy(flit_group_t *g)
{
    if (!group_ok(g) || g->leaving)
        return FLIT_ERR_INVALID_ARG;
    if (delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    struct flit_groups *gs = g->gs;
    g->leaving = true;
    flit_status st = wait_for(g, own_delivered);
    if (st == FLIT_OK)
        st = tell_sequencer(g, OP_LEAVE, &g->leave_sent, all_done);
    if (st == FLIT_OK)
        st = tell_sequencer(g, OP_FIN, &g->fin_sent, is_closed);
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
            g->cred_asked = true;
            ctl_push(g, g->seqr, OP_CREDREQ, &amount, 1);
        }
        unlock(gs);
        waited = true;
        drain(gs);
        flit_status st = flit_wait(gs->ep, WAIT_SLICE_US);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
    }
}

/* Under the lock: credits to ask for with this message (Panda's piggyback):
   a refill when half the allowance is spent and no request is out. */
static uint32_t piggyback(struct flit_group *g)
{
    if (g->cred_asked || g->credits >= (g->allowance + 1) / 2)
        return 0;
    g->cred_asked = true;
    return g->allowance - g->credits;
}

static flit_status check_iov(const struct iovec *iov, int iovcnt, size_t *total)
{
    if (iovcnt < 0 || (!iov && iovcnt > 0))
        return FLIT_ERR_INVALID_ARG;
    size_t t = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (!iov[i].iov_base && iov[i].iov_len)
            return FLIT_ERR_INVALID_ARG;
        if (iov[i].iov_len > SIZE_MAX - t)
            return FLIT_ERR_TOO_LARGE;
        t += iov[i].iov_len;
    }
    *total = t;
    return FLIT_OK;
}

static void gather(uint8_t *to, const struct iovec *iov, int iovcnt)
{
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len)
            memcpy(to, iov[i].iov_base, iov[i].iov_len);
        to += iov[i].iov_len;
    }
}

/* Under the lock: the message, gathered, queued to the sequencer. */
static flit_status queue_message(struct flit_group *g, const struct iovec *iov,
                                 int iovcnt, size_t total, uint32_t cost)
{
    struct flit_groups *gs = g->gs;
    struct gmsg *m = msg_new(g, total);
    if (!m)
        return FLIT_ERR_NO_MEMORY;
    gather(m->data, iov, iovcnt);
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
    bool ok;
    if (total <= g->small_max) {
        a[0] = op_word(OP_SMALL);
        a[4] = piggyback(g);
        ok = out_push(gs, g, g->members[g->seqr], a, op_nargs[OP_SMALL], m, 0, total);
        g->sent_small++;
    } else {
        a[0] = op_word(OP_SEQREQ);
        a[4] = cost;
        a[5] = piggyback(g);
        m->refs++;
        m->next = g->unnumbered;
        g->unnumbered = m;
        ok = out_push(gs, g, g->members[g->seqr], a, op_nargs[OP_SEQREQ], NULL, 0, 0);
    }
    if (!ok)
        return FLIT_ERR_NO_MEMORY;
    g->sent++;
    return FLIT_OK;
}

flit_status flit_group_sendv(flit_group_t *g, const struct iovec *iov, int iovcnt)
{
    if (!group_ok(g) || g->leaving)
        return FLIT_ERR_INVALID_ARG;
    if (delivery_depth)
        return FLIT_ERR_IN_HANDLER;
    size_t total;
    flit_status st = check_iov(iov, iovcnt, &total);
    if (st != FLIT_OK)
        return st;
    if (total > (size_t)(g->window / 2) * g->frag)
        return FLIT_ERR_TOO_LARGE;
    uint32_t cost = cost_of(g, total);
    if ((st = get_credits(g, cost)) != FLIT_OK)
        return st;
    lock(g->gs);
    st = queue_message(g, iov, iovcnt, total, cost);
    unlock(g->gs);
    drain(g->gs);
    return st;
}

flit_status flit_group_send(flit_group_t *g, const void *buf, size_t n)
{
    struct iovec v = {(void *)(uintptr_t)buf, n};
    return flit_group_sendv(g, &v, 1);
}

/* ---------------------------------------------------------------- receiving */

static inline bool msg_ok(const struct flit_group_msg *m)
{
    return m && m->magic == MSG_MAGIC;
}

/* Common checks of recv and skip: n bytes wanted. */
static flit_status recv_check(const flit_group_msg_t *m, size_t n)
{
    if (!m)
        return FLIT_ERR_INVALID_ARG;
    if (!msg_ok(m))
        return FLIT_ERR_BAD_TOKEN;
    if (n > m->msg->total - m->pos)
        return FLIT_ERR_TOO_LARGE;
    return FLIT_OK;
}

flit_status flit_group_recv(flit_group_msg_t *m, void *buf, size_t n)
{
    if (n && !buf)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = recv_check(m, n);
    if (st != FLIT_OK)
        return st;
    if (n)
        memcpy(buf, m->msg->data + m->pos, n);
    m->pos += n;
    return FLIT_OK;
}

flit_status flit_group_recvv(flit_group_msg_t *m, const struct iovec *iov, int iovcnt)
{
    size_t total;
    flit_status st = check_iov(iov, iovcnt, &total);
    if (st == FLIT_OK)
        st = recv_check(m, total);
    if (st != FLIT_OK)
        return st;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len)
            memcpy(iov[i].iov_base, m->msg->data + m->pos, iov[i].iov_len);
        m->pos += iov[i].iov_len;
    }
    return FLIT_OK;
}

flit_status flit_group_skip(flit_group_msg_t *m, size_t n)
{
    flit_status st = recv_check(m, n);
    if (st == FLIT_OK)
        m->pos += n;
    return st;
}

size_t flit_group_remaining(const flit_group_msg_t *m)
{
    return msg_ok(m) ? m->msg->total - m->pos : 0;
}

flit_rank_t flit_group_msg_sender(const flit_group_msg_t *m)
{
    return flit_rank(msg_ok(m) ? m->msg->sender : UINT32_MAX);
}

uint64_t flit_group_msg_seq(const flit_group_msg_t *m)
{
    return msg_ok(m) ? m->msg->seq : UINT64_MAX;
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

flit_status flit_group_stats(flit_group_t *g, flit_group_stats_t *out)
{
    if (!group_ok(g) || !out || out->struct_size < sizeof *out)
        return FLIT_ERR_INVALID_ARG;
    struct flit_groups *gs = g->gs;
    flit_group_stats_t s = {.struct_size = sizeof s};
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
    unlock(gs);
    *out = s;
    return FLIT_OK;
}
