/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What object.c (operations, creation) and placement.c (the runtime's
 * placement of FLIT_OBJECT_AUTO objects) share. Public API only.
 */
#ifndef FLIT_OBJECT_INT_H
#define FLIT_OBJECT_INT_H

#include <flit/handle.h>
#include <flit/layer.h>
#include <flit/object.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define PROC_INVOKE  0u
#define SMALL        256u /* arguments and results up to this on the stack */
#define SPARE_MAX    (4u << 20) /* the largest write buffer kept for the next */
#define WAIT_SLICE   2000 /* us: a guard is looked at again at least this often */
#define POLL_PASSES  64   /* progress passes a write polls before it waits */

/* Group messages that are not writes: hdr.op above any operation. */
#define OP_REPORT 0xfffffff0u /* [hdr][uint64 reads, writes] */
#define OP_SWITCH 0xfffffff1u /* [hdr][struct move][state]: from the owner */
#define OP_PLACE  0xfffffff2u /* [hdr][struct move]: flit_object_place */
/* [hdr][epoch?][uint64 total][bytes]: the first pieces of a replicated
   write larger than one group message, the write's own message (its op,
   its last bytes) ending it; token names the writer's call in both. */
#define OP_PART    0xfffffff3u
#define PART_SLACK 64u /* group message bytes a part's words take, and more */
#define OP_LEFT    0xfffffff4u /* [hdr][epoch][uint32 rank]: a member left the group */

/* An operation met a switch (or an owner about to switch) and must be made
   again under the placement of epoch call->target or later. Never returned
   to the program. On the wire, an RPC reply's status word REDIRECT_BIT |
   the epoch to wait for. */
#define REDIRECT     ((flit_status)1000)
#define REDIRECT_BIT 0x80000000u

struct hdr {
    uint32_t id;
    uint32_t op;
    /* replicated writes, place requests: the sender's call; an AUTO
       object's RPC: the epoch the caller saw */
    uint64_t token;
};

/* An AUTO object's group messages: [struct hdr][uint64 epoch][...], the
   placement the sender saw (pinned objects send no epoch). Its RPCs carry
   the epoch in hdr.token: an owner serves only a caller that has installed
   the placement it serves under, or the caller could read its own copy
   under an older one without the write the owner just applied for it. */
typedef uint64_t epoch_word;

/* A placement: a strategy and, when owned, the owner. */
struct move {
    uint32_t strategy;
    uint32_t owner;
};

/* A replicated write (or place request) this member made, waiting to be
   applied (or delivered) here. Its address is its token on the wire, and
   only a token found among the object's calls (o->calls) is taken. */
struct call {
    struct call *next; /* o->calls */
    const void *arg; /* the argument when flat (or joined), else NULL */
    size_t len;
    const struct iovec *res;
    int nres;
    size_t res_len;
    flit_status st;
    uint32_t target; /* REDIRECT: the epoch to retry in */
    atomic_int done;
};

/* An operation waiting for its guard. */
struct pending {
    struct pending *next;
    unsigned op;
    void *arg; /* malloc'ed copy */
    size_t len;
    struct call *call;       /* replicated: this member's own write */
    flit_rpc_reply_t *reply; /* owned: the deferred reply */
    void *res;               /* owned: room for the result */
    size_t res_len;
    flit_status st;
    uint32_t redirect; /* owned: nonzero, the status word of a redirect */
};

/* A large write from another member, its pieces so far (deliver). A writer
   that dies mid-write leaves one until the object is destroyed. */
struct part {
    struct part *next;
    uint32_t sender;
    uint64_t token;
    unsigned char *buf;
    size_t len, got;
};

struct flit_object {
    void *self; /* the handle its user holds (<flit/handle.h>) */
    uint32_t id;
    flit_objects_t *objs;
    const flit_object_type_t *type;
    /* Pinned objects: fixed at creation. AUTO ones: changed under lock, at
       a delivery of the group (the same place on every member). */
    flit_object_strategy strategy;
    flit_rank_t owner;
    bool holds; /* a copy of the state lives here (up to date) */
    flit_group_t *group;
    pthread_mutex_t lock;
    void *state;
    void *scratch; /* results nobody here wants, under lock */
    struct pending *queue, **tail;
    size_t part_max;    /* a write's bytes that fit one group message */
    struct part *parts; /* other members' writes arriving in pieces */
    uint64_t nparts;    /* of them, now */
    uint64_t parts_dropped; /* their writer left before the last piece */
    void *spare;        /* a buffer for the next write from another member */
    size_t spare_cap;
    struct call *calls; /* this member's calls in flight (their tokens) */
    uint64_t refused;   /* malformed messages dropped */
    uint64_t missed;    /* writes this copy had no memory for */
    bool logged;        /* the first refusal or miss said */
    atomic_uint_fast64_t reads, writes, local, applied, guard_waits;
    flit_object_t *next; /* in the table */

    /* ---- FLIT_OBJECT_AUTO (placement.c); under lock unless atomic ---- */
    bool adaptive;   /* created AUTO */
    uint32_t epoch;  /* placements installed here: the switches */
    bool moving;     /* the owner captured the state for a switch */
    bool owner_dead; /* the owner left the group while owning */
    bool pinned;     /* by flit_object_place, at its place in the order */
    struct move pin;
    uint32_t pin_seq; /* place requests delivered */
    bool want;        /* owner: a switch to send (want_to) */
    atomic_int wantf; /* want, read without the lock */
    struct move want_to;
    bool stuck;                /* the state is too large to move: stays where it is */
    uint8_t *member;           /* [job size]: MEMBER, DEPARTED, or 0 (placement.c) */
    uint8_t *left;             /* [job size]: left the group, OP_LEFT not sent */
    atomic_int leftf;          /* some left[] set, read without the lock */
    uint64_t departed;         /* members made DEPARTED */
    uint64_t *cr, *cw, ctotal; /* the window's counts, per job rank */
    atomic_uint_fast64_t rep_r, rep_w; /* counted here, not reported yet */
    atomic_uint_fast64_t switches, retries;
    atomic_int busy; /* the progress listener is using it */
};

/* What the object layer counts (flit/layer.h), relaxed atomics. */
struct fl_obj_counters {
    _Atomic uint64_t live; /* objects here now (a gauge) */
};

struct flit_objects {
    void *self; /* the handle its user holds */
    struct fl_obj_counters own, *ctr; /* ctr: own, or the layer state's */
    flit_ep_t *ep;
    flit_rpc_t *rpc;
    flit_groups_t *groups;
    pthread_mutex_t lock;
    flit_object_t *list;
    atomic_int work; /* some owner has a switch to send, or a member left */
    bool listening;
};

/* Sets of objects and objects are handed out as handles of these tables
   (objects.c, object.c), never as pointers: one destroyed answers FLIT_ERR_INVALID_ARG,
   also once its block holds a new one. The live one a handle names; NULL
   for any other value. */
extern flit_handles_t *fl_obj_sets, *fl_obj_objects;

static inline flit_objects_t *objs_of(flit_objects_t *h)
{
    return (flit_objects_t *)flit_handle_get(&fl_obj_sets, h);
}

static inline flit_object_t *obj_of(const flit_object_t *h)
{
    return (flit_object_t *)flit_handle_get(&fl_obj_objects, h);
}

/* apply.c */
/* The longest result of the type's operations. */
size_t object_res_max(const flit_object_type_t *t);
/* Under o->lock: whether op may run now on (arg, len). */
bool object_guard_holds(flit_object_t *o, unsigned op, const void *arg, size_t len);
/* Under o->lock: runs op with its result into res (room for res_max), or
   into the scratch room when res is NULL; the result's length. */
size_t object_apply(flit_object_t *o, unsigned op, const void *arg, size_t len,
                    void *res);
/* Under o->lock: a replicated write applied for its writer's call c (or
   nobody's, NULL), which it ends. */
void object_apply_for(flit_object_t *o, unsigned op, const void *arg, size_t len,
                      struct call *c);
/* Under o->lock, after a write: the waiting operations whose guard holds,
   oldest first; owned objects' finished ones go to *done (object_answer
   them once the lock is let go). */
void object_run_queue(flit_object_t *o, struct pending **done);
/* Under o->lock: p (its arg malloc'ed) waits for its guard. */
void object_enqueue(flit_object_t *o, struct pending *p);
/* Under o->lock: a replicated write queued behind its guard (its argument
   copied, or heap taken); false when there is no memory for it. */
bool object_wait_guard(flit_object_t *o, unsigned op, const void *arg, size_t len,
                       void *heap, struct call *c);
/* Answers owned objects' finished waiting operations (no lock held). */
void object_answer(struct pending *done);
void object_pending_free(struct pending *p);
/* Under o->lock: a message of another member refused (what, from), or a
   write this copy had no memory for (from then on the copy here answers
   FLIT_ERR_NO_MEMORY): counted, the object's first logged. */
void object_refuse(flit_object_t *o, const char *what, uint32_t from);
void object_miss(flit_object_t *o, const char *what, size_t len);

/* objects.c: the set of ep, counting into ctr (NULL: its own);
   flit_objects_create's. */
flit_status object_sets_create(flit_ep_t *ep, struct fl_obj_counters *ctr,
                               flit_objects_t **out);
/* objects.c: under objs->lock (find) or taking it (lookup): the live
   object id of objs; NULL when none. */
flit_object_t *object_find(flit_objects_t *objs, uint32_t id);
flit_object_t *object_lookup(flit_objects_t *objs, uint32_t id);

/* replicated.c */
/* Under o->lock: this member's call whose token a message carries; NULL
   when it is none of them (gone, or never one). */
struct call *object_call(flit_object_t *o, uint64_t token);
/* c's token is taken from now on (in), refused from now on (out: a write
   of c still waiting for its guard is applied for nobody); each takes
   o->lock. */
void object_call_in(flit_object_t *o, struct call *c);
void object_call_out(flit_object_t *o, struct call *c);
/* The object group's delivery handler. */
void object_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user);
/* A write through the group, waited for until applied here. */
flit_status object_invoke_write(flit_object_t *o, uint32_t epoch, unsigned op,
                                const struct iovec *arg, int narg, const void *flat,
                                size_t len, const struct iovec *res, int nres,
                                size_t *res_len, uint32_t *target);

/* parts.c */
void *object_spare_take(flit_object_t *o, size_t len, size_t *cap);
void object_spare_give(flit_object_t *o, void *p, size_t cap);
/* A piece of another member's large write, into its place. */
void object_part_deliver(flit_object_t *o, flit_group_msg_t *m, const struct hdr *h,
                         size_t len);
/* sender's write token in pieces, unlinked (takes o->lock); NULL: none. */
struct part *object_part_take(flit_object_t *o, uint32_t sender, uint64_t token);
/* The joined argument of a write whose last piece is m (takes part). */
void *object_part_last(flit_object_t *o, flit_group_msg_t *m, struct part *part,
                       unsigned op, size_t len);
/* sender left: its writes in pieces will never be whole (takes o->lock). */
void object_parts_forget(flit_object_t *o, uint32_t sender);

/* owned.c: an operation of a member that is not the owner, by RPC. */
flit_status object_invoke_remote(flit_object_t *o, flit_rank_t owner, uint32_t epoch,
                                 unsigned op, const struct iovec *arg, int narg,
                                 const struct iovec *res, int nres, size_t *res_len,
                                 uint32_t *target);
/* owned.c: the objects' RPC procedure, registered. */
flit_status object_serve_register(flit_objects_t *objs);
/* wire.c: [head's k pieces][v's n pieces] in small (room for 8) or a
   malloc'ed array (free it when it is not small); NULL: no memory. */
struct iovec *object_iov_after(struct iovec *small, const struct iovec *head, int k,
                               const struct iovec *v, int n);

/*
 * The wire, decoded by one validating function per format (wire.c); all
 * FLIT_ERR_BAD_PACKET for what the format does not allow, the output
 * written only on success. Multi-byte words are in the host's order (the
 * members of a job share it).
 *
 * A group message of object id: [struct hdr][epoch_word, AUTO objects
 * only][body]. head: its first fl_obj_head_len(adaptive) bytes (NULL when
 * total is shorter). The body, by hdr.op: a write operation of the type
 * (kind WRITE, at most its arg_max bytes); OP_PART (a part's words and at
 * least one byte); AUTO objects also OP_REPORT (two uint64), OP_SWITCH
 * (struct move, then the state: state_size bytes unless the type packs),
 * OP_PLACE (struct move), OP_LEFT (a uint32 rank).
 */
struct fl_obj_msg {
    struct hdr h;
    uint32_t epoch; /* AUTO objects' (0 else) */
    size_t len;     /* body bytes */
};
size_t fl_obj_head_len(bool adaptive);
flit_status fl_obj_decode_msg(const uint8_t *head, size_t total, uint32_t id,
                              bool adaptive, const flit_object_type_t *t,
                              struct fl_obj_msg *m);
/* An OP_PART body's first 8 bytes (the write's total, uint64): len the
   body's bytes, max the longest argument of the type's writes. The total
   must exceed the bytes this part carries (the write's own message carries
   its last ones) and be at most max. */
flit_status fl_obj_decode_part(const uint8_t *words, size_t len, size_t max,
                               size_t *total);
/* A struct move of OP_SWITCH (place false) or OP_PLACE (true): a strategy
   REPLICATED or OWNED (or AUTO, place only), an owned one's owner a rank
   below nranks. */
flit_status fl_obj_decode_move(const uint8_t *b, bool place, uint32_t nranks,
                               struct move *mv);
/* An owned object's RPC request: [struct hdr][argument], len bytes. */
flit_status fl_obj_decode_req(const uint8_t *b, size_t len, struct hdr *h);
/* An owned object's RPC reply word: FLIT_OK, an error this library has, or
   (AUTO objects) REDIRECT_BIT | an epoch; *target the epoch then. */
flit_status fl_obj_decode_reply(uint32_t word, bool adaptive, flit_status *st,
                                uint32_t *target);
/* The longest argument of the type's write operations. */
size_t fl_obj_write_max(const flit_object_type_t *t);

/* placement.c */
flit_status place_init(flit_object_t *o, const flit_rank_t *members, unsigned n);
void place_fini(flit_object_t *o);
flit_status place_listen(flit_objects_t *objs);
void place_unlisten(flit_objects_t *objs);
/* Under lock, at the owner of an owned object: one operation of rank. */
void place_count(flit_object_t *o, uint32_t rank, bool write);
/* After an operation of this member (program code, no lock). */
void place_after(flit_object_t *o, bool write, flit_object_strategy was);
/* In the delivery handler: the placement messages. */
void place_deliver(flit_object_t *o, flit_group_msg_t *m, const struct hdr *h,
                   uint32_t epoch, size_t len);
/* Waits until the epoch reaches target (or retries at once when it has). */
flit_status place_await(flit_object_t *o, uint32_t from, uint32_t target);
void place_view(flit_group_t *g, flit_rank_t left, void *user);

#endif /* FLIT_OBJECT_INT_H */
