/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The group layer's own interface between its parts: totally-ordered group
 * multicast on the public API alone (<flit/group.h> for the contract,
 * docs/groups.md for the protocol and why; nothing here includes a header
 * of src/). The parts: out.c (messages and the queue of what goes out),
 * order.c (the sequencer and the credit manager), deliver.c (fragments in,
 * hold-back, delivery, piecewise receive), view.c (view changes when a
 * member dies), group.c (the handler, progress, create and destroy,
 * sending, stats).
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
 * carry their sequence fl_grp_number and offset), only for speed.
 *
 * A local shortage never loses a message. A send that fails for a local
 * reason (FLIT_ERR_NO_MEMORY, FLIT_ERR_SYSTEM) stays at the head of the
 * queue for the next pass, like one that finds no room. What could not be
 * queued (no memory for the item) is owed, not forgotten: a flag that says
 * "sent" is set only once the message is queued, and what a handler could
 * not queue (a fragment to forward, a catch-up, the credits granted) is
 * noted where fl_grp_retry finds it; the progress listener and every wait
 * run fl_grp_retry once a pass (gs->owed), never in a loop of their own.
 *
 * Locking: one mutex per endpoint's groups (gs->lock), on thread-safe
 * endpoints only, never held across a flit call or the delivery handler.
 * Deliveries of a group run one at a time and in order: the thread that
 * finds the next message complete delivers it, and any that follow.
 */
#ifndef FL_GROUP_INTERNAL_H
#define FL_GROUP_INTERNAL_H

#include <flit/group.h>
#include <flit/handle.h>
#include <flit/layer.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_VERSION  2u
#define FRAG_MAX      32768u /* bytes of data per fragment, at most */
#define FRAG_MIN      1024u
#define HB_BUCKETS    256u /* hold-back hash, per group */
#define WAIT_SLICE_US 10000
#define NO_RANK       UINT32_MAX

/*
 * Opcodes, with their arguments after [0] opcode, [1] group id, [2] view
 * (the fl_grp_number of view changes the group went through; a message of another
 * view than the one it is meant for is stale and dropped). Ranks are job
 * ranks; only the tree's root is a member index.
 */
enum op {
    OP_JOIN = 1, /* member -> sequencer: created here; [3] its frag */
    OP_READY,    /* sequencer -> member: everyone joined; [3] the frag */
    OP_SMALL,    /* sender -> sequencer: fl_grp_number and multicast this;
                    [3] sender's seq [4] credits wanted; payload: data */
    OP_SEQREQ,   /* sender -> sequencer: a fl_grp_number for a large message;
                    [3] sender's seq [4] its cost [5] credits wanted */
    OP_SEQ,      /* sequencer -> sender: [3] sender's seq [4,5] fl_grp_number */
    OP_DATA,     /* down the tree: [3,4] fl_grp_number [5] root (NO_RANK: sent
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
                   fl_grp_number + 1 [5] a survivor that delivered them all */
    OP_CATCHUP, /* survivor -> that one: [3,4] send me from this fl_grp_number
                   [5,6] up to this one (it may hear of it first) */
    OP_CAUGHT,  /* survivor -> coordinator: delivered all; [3] credits its
                   messages not ordered yet will take */
    OP_INSTALL, /* coordinator -> survivors: the new view starts */
    OP_COUNT
};

#define DATA_ARGS 12u
#define MAX_ARGS  12u
/* The largest message of any group: half the largest window, in fragments
   of the largest size. */
#define FL_GRP_TOTAL_MAX ((uint64_t)FLIT_GROUP_WINDOW_MAX / 2 * FRAG_MAX)

/* A message: while it arrives, while held back, while delivered, while
   fragments of it wait to be forwarded, while kept for a view change. Each
   list it is on holds one reference. */
struct gmsg {
    struct gmsg *next;     /* hold-back chain, or the list of unnumbered */
    struct gmsg *owe_next; /* g->owe: fragments still to pass down the tree */
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
    uint8_t *owe;  /* per fragment: not queued to the tree's children yet
                      (after have); on g->owe while any is set */
    bool owing;
    bool resend; /* own, to go again in a new view: not queued yet */
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

/* What the group layer counts (flit/layer.h), relaxed atomics: the dump
   reads them from any thread. */
struct fl_grp_counters {
    _Atomic uint64_t unknown; /* messages for a group not here */
    _Atomic uint64_t refused; /* malformed, or for another role: dropped */
    _Atomic uint64_t live;    /* groups here now (a gauge, not a count) */
};

struct flit_groups {
    void *self; /* the handle its user holds (<flit/handle.h>) */
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
    _Atomic bool work;           /* the progress listener has something to do */
    _Atomic uint64_t down;       /* peers reported down, not yet acted on */
    uint8_t *dead;               /* per rank: 1 reported down, 2 acted on */
    _Atomic bool owed;           /* something could not be queued: fl_grp_retry */
    bool retry_said;             /* the first kept send logged */
    struct fl_grp_counters own;  /* a set made by flit_groups_create */
    struct fl_grp_counters *ctr; /* own, or the layer state's */
    bool refusal_said;           /* the first refusal logged */
    size_t frag;
};

struct flit_group_msg {
    void *self; /* its handle during its delivery; NULL after */
    struct flit_group *g;
    struct gmsg *msg;
    size_t pos;
};

/* Where a view change stands, at a survivor (and at its coordinator). */
struct recovery {
    bool on;             /* forming view rview; deliveries frozen */
    uint32_t rview;      /* the view being formed */
    uint32_t co;         /* its coordinator (rank), the new sequencer */
    bool final_known;    /* NEWVIEW came: deliver up to final, no further */
    bool caught_sent;    /* CAUGHT queued (set once it is) */
    bool state_sent;     /* STATE queued */
    bool asked;          /* CATCHUP queued (or none needed) */
    uint32_t donor_rank; /* what CATCHUP names */
    uint64_t final;
    /* Fragments of a view below this are stale: g->view, or the view of
       an earlier round this survivor caught up in (installed elsewhere,
       perhaps, with numbers past that round's final reused). */
    uint32_t min_view;
    /* Coordinator only: the survivors heard from are g->heard's bits. */
    uint64_t max_delivered;
    uint32_t donor;   /* rank */
    uint64_t pending; /* credits of the survivors' unordered messages */
};

/* What a coordinator heard from a survivor in the round under way: each
   counts once, however often it comes (a report is sent again when asked). */
enum { HEARD_STATE = 1, HEARD_CAUGHT = 2 };

struct flit_group {
    void *self; /* the handle its user holds; NULL once destroyed */
    struct flit_groups *gs;
    struct flit_group *next;
    uint32_t id, n, me, seqr; /* members, this one, the sequencer (indices) */
    uint32_t *members;        /* ranks, ascending */
    uint8_t *gone;            /* per member: left (a view change under way) */
    uint8_t *heard;           /* per member, at a coordinator: HEARD_ bits, this round */
    uint32_t view;
    flit_group_deliver_fn fn;
    void *user;
    flit_group_view_fn view_fn;
    void *view_user;
    uint32_t window, allowance, small_max;
    size_t frag;
    bool ready, leaving, done, closed, stopped;
    /* destroy's LEAVE and FIN: wanted (its step reached), and queued in
       this view (a new view sends them again). */
    bool leave_want, leave_sent, fin_want, fin_sent;
    uint32_t *left; /* ranks that left, view handler not run yet */
    uint32_t nleft;
    struct recovery rec;
    /* Sending. */
    uint32_t credits, next_sseq;
    bool cred_asked;  /* a credit request queued, not answered yet */
    struct gmsg *owe; /* messages with fragments not forwarded yet */
    /* Per member index: a CATCHUP this donor could not queue all of. */
    uint64_t *cu_from, *cu_to;
    uint8_t *cu_owed;
    bool join_sent;
    bool resending; /* own messages marked resend: newer ones wait */
    /* Per member index: what the sequencer (or coordinator) sends every
       member and could not queue yet (BC_* bits). */
    uint8_t *bc_owed;
    struct gmsg *unnumbered; /* large messages waiting for their fl_grp_number */
    struct gmsg *own_head, *own_tail;
    uint64_t sent, fl_grp_own_delivered;
    /* Receiving. */
    struct gmsg *hb[HB_BUCKETS];
    uint64_t next_deliver, acked, final;
    bool delivering;
    bool deliver_owed;         /* a delivery put off for a shortage */
    struct flit_group_msg cur; /* the delivery under way */
    struct gmsg *ret_head, *ret_tail;
    uint64_t ret_cost;
    unsigned queued; /* out items of this group */
    /* Sequencer and credit manager. */
    uint32_t joined, left_count, fin_count;
    size_t join_frag; /* the smallest frag the members joined with */
    uint64_t next_seq, released;
    int64_t pool;   /* below 0 after a view change: owed */
    uint32_t *cost; /* [seq % window] */
    /* [seq % window]: whose number it is (member index, its seq) and
       whether its SEQ still waits to be queued. */
    uint32_t *seq_to, *seq_sseq;
    uint8_t *seq_owed;
    uint64_t *delivered; /* per member, as acknowledged */
    uint32_t *want;      /* per member: credits asked, 0: none */
    uint32_t *reqq;      /* members asking, FIFO of n */
    uint32_t rq_head, rq_len;
    /* Counters. */
    uint64_t sent_small, forwarded, forward_waits, credit_waits, views;
    uint64_t buffered, buffered_max;
};

/* What a sequencer or coordinator owes each member (bc_owed). */
enum {
    BC_READY = 1,
    BC_DONE = 2,
    BC_CLOSED = 4,
    BC_QUERY = 8,
    BC_NEWVIEW = 16,
    BC_INSTALL = 32
};

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

/* The layer's objects are handed out as handles of these tables (group.c),
   never as pointers: one destroyed, or a delivery's message after its
   handler returned, is refused, also once its memory holds a new one. */
extern flit_handles_t *fl_grp_sets, *fl_grp_groups, *fl_grp_msgs;

/* The set of groups a handle names; NULL for any other value. */
static inline struct flit_groups *gs_of(flit_groups_t *h)
{
    return flit_handle_get(&fl_grp_sets, h);
}

/* The live group a handle names; NULL for any other value. */
static inline struct flit_group *group_of(flit_group_t *h)
{
    return flit_handle_get(&fl_grp_groups, h);
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
static inline uint32_t index_of(const struct flit_group *g, uint32_t rank)
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
static inline struct flit_group *find_group(struct flit_groups *gs, uint32_t id)
{
    for (struct flit_group *g = gs->groups; g; g = g->next)
        if (g->id == id)
            return g;
    return NULL;
}

extern __thread unsigned fl_grp_delivery_depth;

/* out.c */
uint32_t fl_grp_cost_of(const struct flit_group *g, size_t total);
/* Under the lock: a control message queued; false: no memory (the caller
   keeps what it needs to try again, gs->owed set). */
bool fl_grp_ctl_push(struct flit_group *g, uint32_t i, enum op op, const uint32_t *rest,
                     unsigned nrest);
bool fl_grp_ctl_to(struct flit_group *g, uint32_t rank, enum op op, uint32_t view,
                   const uint32_t *rest, unsigned nrest);
void fl_grp_drain(struct flit_groups *gs);
size_t fl_grp_frags_of(const struct flit_group *g, size_t total);
struct gmsg **fl_grp_hb_slot(struct flit_group *g, uint64_t seq);
struct gmsg *fl_grp_msg_new(struct flit_group *g, size_t total);
void fl_grp_msg_unref(struct flit_group *g, struct gmsg *m);
bool fl_grp_out_push(struct flit_groups *gs, struct flit_group *g, uint32_t dest,
                     const uint32_t *args, unsigned nargs, struct gmsg *msg, size_t off,
                     size_t len);
void fl_grp_out_release(struct flit_groups *gs, struct out *o);

/* deliver.c */
void fl_grp_deliver_ready(struct flit_group *g);
bool fl_grp_push_fragments(struct flit_group *g, struct gmsg *m, uint32_t dest,
                           uint32_t root);
void fl_grp_owe_clear(struct flit_group *g);
void fl_grp_retry_forwards(struct flit_group *g);
void fl_grp_retained_clear(struct flit_group *g);
void fl_grp_take_fragment(struct flit_group *g, const uint32_t *a, const void *buf,
                          size_t len);

/* order.c */
void fl_grp_ask_credits(struct flit_group *g, uint32_t i, uint32_t amount);
void fl_grp_serve_credits(struct flit_group *g);
void fl_grp_broadcast(struct flit_group *g, unsigned bit);
void fl_grp_retry_broadcasts(struct flit_group *g);
void fl_grp_retry_seqs(struct flit_group *g);
void fl_grp_early_join(struct flit_groups *gs, uint32_t id, size_t frag);
uint64_t fl_grp_number(struct flit_group *g, uint32_t cost);
void fl_grp_on_ack(struct flit_group *g, uint32_t i, uint64_t count);
void fl_grp_on_fin(struct flit_group *g);
void fl_grp_on_join(struct flit_group *g, const uint32_t *a);
void fl_grp_on_leave(struct flit_group *g);
void fl_grp_on_ready(struct flit_group *g, const uint32_t *a);
void fl_grp_on_seq(struct flit_group *g, const uint32_t *a);
void fl_grp_on_seqreq(struct flit_group *g, uint32_t from, const uint32_t *a);
void fl_grp_on_small(struct flit_group *g, uint32_t from, const uint32_t *a, void *buf,
                     size_t n);
flit_status fl_grp_seqr_reset(struct flit_group *g, uint64_t first, int64_t pool);

/* view.c */
void fl_grp_check_caught(struct flit_group *g);
void fl_grp_on_catchup(struct flit_group *g, uint32_t rank, const uint32_t *a);
void fl_grp_on_caught(struct flit_group *g, uint32_t from_rank, const uint32_t *a);
void fl_grp_on_install(struct flit_group *g, const uint32_t *a);
void fl_grp_on_newview(struct flit_group *g, const uint32_t *a);
void fl_grp_on_query(struct flit_group *g, const uint32_t *a);
void fl_grp_on_state(struct flit_group *g, uint32_t from_rank, const uint32_t *a);
void fl_grp_retry_catchups(struct flit_group *g);
bool fl_grp_view_bc_send(struct flit_group *g, uint32_t i, unsigned bit);
void fl_grp_retry_view(struct flit_group *g);
void fl_grp_resend_own(struct flit_group *g);
void fl_grp_start_view_change(struct flit_group *g, uint32_t i);

/* group.c */
/* The one decoder of the wire (the active message's words and its bytes):
   FLIT_ERR_BAD_PACKET for another version, an unknown opcode, a count of
   words the opcode does not have, bytes on a control message, a fragment
   size outside FRAG_MIN .. FRAG_MAX, a message that costs no credit, a
   fragment outside its message, an empty fragment of a message that is
   not empty, or a message larger than any group's;
   *op written only on success. What depends on the group (its members,
   view, fragment size, window) is judged where the message is taken. */
flit_status fl_grp_decode(const uint32_t *args, unsigned nargs, size_t nbytes,
                          enum op *op);
/* The groups of ep, counting into ctr (NULL: their own): collective over
   the job (a handler reservation, a barrier). flit_groups_create's. */
flit_status fl_grp_sets_create(flit_ep_t *ep, struct fl_grp_counters *ctr,
                               flit_groups_t **out);
/* Under the lock: a message from rank refused (what it was), counted, the
   first logged. */
void fl_grp_refuse(struct flit_groups *gs, uint32_t id, uint32_t from, const char *what);
bool fl_grp_own_delivered(struct flit_group *g);
/* Under the lock: queues again what a shortage left owed (see above), of
   one group or of all. */
void fl_grp_retry_group(struct flit_group *g);
void fl_grp_retry(struct flit_groups *gs);

#endif /* FL_GROUP_INTERNAL_H */
