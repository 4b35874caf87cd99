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
#define WIRE_VERSION  1u
#define FRAG_MAX      32768u /* bytes of data per fragment, at most */
#define FRAG_MIN      1024u
#define HB_BUCKETS    256u /* hold-back hash, per group */
#define WAIT_SLICE_US 10000
#define NO_RANK       UINT32_MAX

enum op {
    OP_JOIN = 1, /* member -> sequencer: created here */
    OP_READY,    /* sequencer -> member: everyone joined */
    OP_SMALL,    /* sender -> sequencer: number and multicast this;
                    [2] sender's seq [3] credits wanted; payload: data */
    OP_SEQREQ,   /* sender -> sequencer: a number for a large message;
                    [2] sender's seq [3] its cost [4] credits wanted */
    OP_SEQ,      /* sequencer -> sender: [2] sender's seq [3,4] number */
    OP_DATA,     /* down the tree: [2,3] number [4] root [5] sender (index)
                    [6,7] total [8,9] offset; payload: the fragment */
    OP_CREDREQ,  /* sender -> manager: [2] credits wanted */
    OP_CREDIT,   /* manager -> sender: [2] credits granted */
    OP_ACK,      /* member -> manager: [2,3] messages delivered */
    OP_LEAVE,    /* member -> sequencer: destroying */
    OP_DONE,     /* sequencer -> member: [2,3] messages the group had */
    OP_COUNT
};

#define DATA_ARGS 10u
#define MAX_ARGS  10u

/* A message: while it arrives, while held back, while delivered, while
   fragments of it wait to be forwarded. */
struct gmsg {
    struct gmsg *next; /* hold-back chain, or the list of unnumbered */
    uint64_t seq;
    uint32_t sender; /* member index */
    uint32_t sender_seq;
    uint32_t root; /* member index the tree of this message starts at */
    uint32_t cost;
    size_t total, got;
    unsigned refs; /* hold-back / delivery, plus one per queued fragment */
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
    uint8_t *dead;         /* per rank: known down */
    uint64_t unknown;      /* messages for a group not here */
    size_t frag;
};

struct flit_group_msg {
    uint32_t magic;
    struct flit_group *g;
    struct gmsg *msg;
    size_t pos;
};

struct flit_group {
    uint32_t magic;
    struct flit_groups *gs;
    struct flit_group *next;
    uint32_t id, n, me, seqr; /* members, this one, the sequencer (indices) */
    uint32_t *members;        /* ranks, ascending */
    flit_group_deliver_fn fn;
    void *user;
    flit_group_view_fn view_fn;
    void *view_user;
    uint32_t window, allowance, small_max;
    size_t frag;
    bool ready, leaving, done, stopped, view_pending;
    uint32_t left_rank; /* the member whose death stopped it */
    /* Sending. */
    uint32_t credits, next_sseq;
    bool cred_asked;
    struct gmsg *unnumbered; /* large messages waiting for their number */
    uint64_t sent, own_delivered;
    /* Receiving. */
    struct gmsg *hb[HB_BUCKETS];
    uint64_t next_deliver, acked, final;
    bool delivering;
    struct flit_group_msg cur; /* the delivery under way */
    unsigned queued;           /* out items of this group */
    /* Sequencer and credit manager. */
    uint32_t joined, left;
    uint64_t next_seq, released;
    uint32_t pool;
    uint32_t *cost;      /* [seq % window] */
    uint64_t *delivered; /* per member, as acknowledged */
    uint32_t *want;      /* per member: credits asked, 0: none */
    uint32_t *reqq;      /* members asking, FIFO of n */
    uint32_t rq_head, rq_len;
    /* Counters. */
    uint64_t sent_small, forwarded, forward_waits, credit_waits;
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

static uint32_t cost_of(const struct flit_group *g, size_t total)
{
    size_t c = (total + g->frag - 1) / g->frag;
    return c ? (uint32_t)c : 1u;
}

/* ---------------------------------------------------------------- messages */

/* Under the lock. NULL when out of memory. */
static struct gmsg *msg_new(struct flit_group *g, size_t total)
{
    struct gmsg *m = malloc(sizeof *m + total);
    if (!m)
        return NULL;
    memset(m, 0, sizeof *m);
    m->total = total;
    m->refs = 1;
    g->buffered += sizeof *m + total;
    if (g->buffered > g->buffered_max)
        g->buffered_max = g->buffered;
    return m;
}

/* Under the lock. */
static void msg_unref(struct flit_group *g, struct gmsg *m)
{
    if (--m->refs)
        return;
    g->buffered -= sizeof *m + m->total;
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

/* Under the lock: a control message of group g to member index i. */
static void ctl_push(struct flit_group *g, uint32_t i, enum op op, const uint32_t *rest,
                     unsigned nrest)
{
    uint32_t a[MAX_ARGS] = {op_word(op), g->id};
    memcpy(a + 2, rest, nrest * sizeof *rest);
    if (!out_push(g->gs, g, g->members[i], a, 2 + nrest, NULL, 0, 0))
        fprintf(stderr, "flit: group %u: no memory for a control message\n", g->id);
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
 * time; the others leave it to that one.
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
        if (st == FLIT_ERR_AGAIN) {
            if (o->g && o->msg)
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

/* Under the lock: group g delivered more; the manager should hear of it. */
static void note_delivered(struct flit_group *g)
{
    (void)g;
    atomic_store_explicit(&g->gs->work, true, memory_order_release);
}

/*
 * Delivers the messages that are next in order and complete, one after
 * the other, unless another thread delivers for g now (it will take them).
 * Called with the lock held; returns with it held.
 */
static void deliver_ready(struct flit_group *g)
{
    struct flit_groups *gs = g->gs;
    while (!g->delivering && !g->stopped) {
        struct gmsg **slot = hb_slot(g, g->next_deliver);
        struct gmsg *m = *slot;
        if (!m || m->got < m->total)
            return;
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
        if (m->sender == g->me)
            g->own_delivered++;
        msg_unref(g, m);
        note_delivered(g);
    }
}

/*
 * Under the lock: a fragment of message seq arrived here (or, at its root,
 * was put in place): keep it, pass it down the tree, deliver what is due.
 */
static void take_fragment(struct flit_group *g, const uint32_t *a, const void *buf,
                          size_t len)
{
    uint64_t seq = get64(a + 2), total = get64(a + 6), off = get64(a + 8);
    uint32_t root = a[4], sender = a[5];
    if (root >= g->n || sender >= g->n || off > total || len > total - off ||
        seq < g->next_deliver) {
        fprintf(stderr, "flit: group %u: malformed fragment dropped\n", g->id);
        return;
    }
    struct gmsg **slot = hb_slot(g, seq);
    struct gmsg *m = *slot;
    if (!m) {
        if (!(m = msg_new(g, total))) {
            fprintf(stderr, "flit: group %u: no memory for a message of %llu bytes\n",
                    g->id, (unsigned long long)total);
            return;
        }
        m->seq = seq;
        m->sender = sender;
        m->root = root;
        *slot = m;
    }
    if (len)
        memcpy(m->data + off, buf, len);
    m->got += len;
    /* Binary tree over the members, rooted at root: position p's children
       are 2p+1 and 2p+2. */
    uint32_t p = (g->me + g->n - root) % g->n;
    for (uint32_t c = 2 * p + 1; c <= 2 * p + 2 && c < g->n; c++)
        if (!out_push(g->gs, g, g->members[(c + root) % g->n], a, DATA_ARGS, m, off, len))
            fprintf(stderr, "flit: group %u: no memory to forward\n", g->id);
    deliver_ready(g);
}

/* ---------------------------------------------------------------- manager */

/* Under the lock, at the sequencer: grants queued requests while the pool
   has room, first come first served (a large request is never passed by
   small ones: it would starve). */
static void serve_credits(struct flit_group *g)
{
    while (g->rq_len) {
        uint32_t i = g->reqq[g->rq_head];
        if (g->pool < g->want[i])
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

/* ---------------------------------------------------------------- handler */

static void on_small(struct flit_group *g, uint32_t from, const uint32_t *a, void *buf,
                     size_t n)
{
    uint32_t d[DATA_ARGS] = {op_word(OP_DATA), g->id};
    put64(d + 2, number(g, 1));
    d[4] = g->me;
    d[5] = from;
    put64(d + 6, n);
    put64(d + 8, 0);
    ask_credits(g, from, a[3]);
    take_fragment(g, d, buf, n);
}

static void on_seqreq(struct flit_group *g, uint32_t from, const uint32_t *a)
{
    uint32_t r[3] = {a[2]};
    if (a[3] == 0 || a[3] > g->window / 2) {
        fprintf(stderr, "flit: group %u: number request of cost %u refused\n", g->id,
                a[3]);
        return;
    }
    put64(r + 1, number(g, a[3]));
    ctl_push(g, from, OP_SEQ, r, 3);
    ask_credits(g, from, a[4]);
}

/* At the sender: the number of one of its large messages came: multicast
   it, from here, down the tree rooted here. */
static void on_seq(struct flit_group *g, const uint32_t *a)
{
    struct gmsg **p = &g->unnumbered;
    while (*p && (*p)->sender_seq != a[2])
        p = &(*p)->next;
    struct gmsg *m = *p;
    if (!m)
        return;
    *p = m->next;
    m->next = NULL;
    m->seq = get64(a + 3);
    m->sender = m->root = g->me;
    m->got = m->total;
    struct gmsg **slot = hb_slot(g, m->seq);
    m->next = *slot;
    *slot = m;
    uint32_t d[DATA_ARGS] = {op_word(OP_DATA), g->id};
    put64(d + 2, m->seq);
    d[4] = d[5] = g->me;
    put64(d + 6, m->total);
    for (uint32_t c = 1; c <= 2 && c < g->n; c++) {
        size_t off = 0;
        do {
            size_t len = m->total - off < g->frag ? m->total - off : g->frag;
            put64(d + 8, off);
            out_push(g->gs, g, g->members[(c + g->me) % g->n], d, DATA_ARGS, m, off, len);
            off += len;
        } while (off < m->total);
    }
    deliver_ready(g);
}

static void on_join(struct flit_group *g)
{
    if (++g->joined < g->n)
        return;
    for (uint32_t i = 0; i < g->n; i++)
        ctl_push(g, i, OP_READY, NULL, 0);
}

static void on_leave(struct flit_group *g)
{
    if (++g->left < g->n)
        return;
    uint32_t f[2];
    put64(f, g->next_seq);
    for (uint32_t i = 0; i < g->n; i++)
        ctl_push(g, i, OP_DONE, f, 2);
}

/* Under the lock: a JOIN for a group this rank has not created yet. */
static void early_join(struct flit_groups *gs, uint32_t id)
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
        e->next = gs->early;
        gs->early = e;
    }
    e->joins++;
}

static const unsigned op_nargs[OP_COUNT] = {
    [OP_JOIN] = 2, [OP_READY] = 2,        [OP_SMALL] = 4,   [OP_SEQREQ] = 5,
    [OP_SEQ] = 5,  [OP_DATA] = DATA_ARGS, [OP_CREDREQ] = 3, [OP_CREDIT] = 3,
    [OP_ACK] = 4,  [OP_LEAVE] = 2,        [OP_DONE] = 4,
};

static void dispatch(struct flit_group *g, enum op op, uint32_t from, const uint32_t *a,
                     void *buf, size_t n)
{
    switch (op) {
    case OP_JOIN:
        on_join(g);
        break;
    case OP_READY:
        g->ready = true;
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
        ask_credits(g, from, a[2]);
        break;
    case OP_CREDIT:
        g->credits += a[2];
        g->cred_asked = false;
        break;
    case OP_ACK:
        on_ack(g, from, get64(a + 2));
        break;
    case OP_LEAVE:
        on_leave(g);
        break;
    case OP_DONE:
        g->final = get64(a + 2);
        g->done = true;
        break;
    default:
        break;
    }
}

static void on_am(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user)
{
    struct flit_groups *gs = user;
    if (nargs < 2 || args[0] >> 24 != WIRE_VERSION)
        return;
    enum op op = (enum op)(args[0] & 0xff);
    if (op <= 0 || op >= OP_COUNT || nargs != op_nargs[op])
        return;
    lock(gs);
    struct flit_group *g = find_group(gs, args[1]);
    uint32_t from = g ? index_of(g, flit_token_rank(token).idx) : NO_RANK;
    if (!g && op == OP_JOIN)
        early_join(gs, args[1]);
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
        if (g->ready && !g->stopped && g->next_deliver > g->acked) {
            uint32_t c[2];
            put64(c, g->next_deliver);
            ctl_push(g, g->seqr, OP_ACK, c, 2);
            g->acked = g->next_deliver;
        }
    }
}

/* Under the lock. The view-change handler runs later, unlocked
   (run_view_fns). */
static void stop_group(struct flit_group *g, uint32_t rank)
{
    g->stopped = true;
    g->left_rank = rank;
    g->view_pending = g->view_fn != NULL;
}

/* Not under the lock: runs the view-change handlers due. */
static void run_view_fns(struct flit_groups *gs)
{
    for (;;) {
        lock(gs);
        struct flit_group *g = gs->groups;
        while (g && !g->view_pending)
            g = g->next;
        if (g)
            g->view_pending = false;
        unlock(gs);
        if (!g)
            return;
        g->view_fn(g, flit_rank(g->left_rank), g->view_user);
    }
}

/* Under the lock: members that died stop their groups. */
static void act_on_down(struct flit_groups *gs)
{
    if (!atomic_exchange_explicit(&gs->down, 0, memory_order_acquire))
        return;
    for (uint32_t r = 0; r < gs->size; r++) {
        if (gs->dead[r] != 1)
            continue;
        gs->dead[r] = 2;
        for (struct flit_group *g = gs->groups; g; g = g->next)
            if (!g->stopped && index_of(g, r) != NO_RANK)
                stop_group(g, r);
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
    flit_status st = flit_barrier(gs->ep);
    if (st != FLIT_OK)
        return st;
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

static void group_free(struct flit_group *g)
{
    for (unsigned b = 0; b < HB_BUCKETS; b++)
        for (struct gmsg *m = g->hb[b], *next; m; m = next) {
            next = m->next;
            free(m);
        }
    for (struct gmsg *m = g->unnumbered, *next; m; m = next) {
        next = m->next;
        free(m);
    }
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
    if (g->me != g->seqr)
        return FLIT_OK;
    g->pool = g->window - g->allowance * g->n;
    g->cost = calloc(g->window, sizeof *g->cost);
    g->delivered = calloc(g->n, sizeof *g->delivered);
    g->want = calloc(g->n, sizeof *g->want);
    g->reqq = calloc(g->n, sizeof *g->reqq);
    return g->cost && g->delivered && g->want && g->reqq ? FLIT_OK : FLIT_ERR_NO_MEMORY;
}

/* Under the lock: links g into gs, taking the JOINs that came first. */
static void link_group(struct flit_groups *gs, struct flit_group *g)
{
    for (struct early **p = &gs->early; *p; p = &(*p)->next) {
        if ((*p)->id == g->id) {
            struct early *e = *p;
            *p = e->next;
            g->joined = e->joins;
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
        if (st == FLIT_OK)
            ctl_push(g, g->seqr, OP_JOIN, NULL, 0);
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

static bool all_done(struct flit_group *g)
{
    return g->done && g->next_deliver >= g->final && g->queued == 0;
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
    if (st == FLIT_OK) {
        lock(gs);
        ctl_push(g, g->seqr, OP_LEAVE, NULL, 0);
        unlock(gs);
        st = wait_for(g, all_done);
    }
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
        if (has_credits_for(g, cost)) {
            g->credits -= cost;
            g->credit_waits += waited;
            unlock(gs);
            return FLIT_OK;
        }
        if (!g->cred_asked) {
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
    m->sender_seq = g->next_sseq++;
    m->cost = cost;
    uint32_t a[MAX_ARGS] = {0, g->id, m->sender_seq};
    bool ok;
    if (total <= g->small_max) {
        a[0] = op_word(OP_SMALL);
        a[3] = piggyback(g);
        ok = out_push(gs, g, g->members[g->seqr], a, op_nargs[OP_SMALL], m, 0, total);
        msg_unref(g, m); /* the queue holds it until sent */
        g->sent_small++;
    } else {
        a[0] = op_word(OP_SEQREQ);
        a[3] = cost;
        a[4] = piggyback(g);
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
    uint32_t cost = total <= g->small_max ? 1u : cost_of(g, total);
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
    return flit_rank(msg_ok(m) ? m->g->members[m->msg->sender] : UINT32_MAX);
}

uint64_t flit_group_msg_seq(const flit_group_msg_t *m)
{
    return msg_ok(m) ? m->msg->seq : UINT64_MAX;
}

/* ---------------------------------------------------------------- stats */

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
    s.buffer_bound = (uint64_t)g->window * (g->frag + sizeof(struct gmsg));
    s.stopped = g->stopped;
    unlock(gs);
    *out = s;
    return FLIT_OK;
}
