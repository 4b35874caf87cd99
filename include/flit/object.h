/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit shared objects, after Orca: instances of an abstract data type whose
 * operations are indivisible, shared by a group of ranks, built on
 * <flit/rpc.h> and <flit/group.h> alone.
 *
 * A type is described once: the size of its state (zeroed, then given to
 * init on every rank that holds a copy; fini before it is freed) and its
 * operations, each a C function marked read-only or write, with an
 * optional guard. An operation takes its argument as one flat block and
 * writes its result into one flat block:
 *
 *     static size_t inc(void *state, const void *arg, size_t len, void *res,
 *                       void *user)
 *     {
 *         int64_t *v = state, by;
 *         memcpy(&by, arg, sizeof by);
 *         *v += by;
 *         memcpy(res, v, sizeof *v);
 *         return sizeof *v;                        // bytes of result
 *     }
 *     static const flit_object_op_t ops[] = {
 *         {FLIT_OBJECT_WRITE, sizeof(int64_t), sizeof(int64_t), inc, NULL},
 *     };
 *     static const flit_object_type_t counter = {
 *         .state_size = sizeof(int64_t), .ops = ops, .nops = 1};
 *
 * Marshalling: none is written by the program. A flat argument goes from
 * the caller's memory to the wire (or, for a local operation, to the
 * function) with no copy through an intermediate buffer, and the result
 * comes back into the caller's buffer; flit_object_invokev gathers the
 * argument from pieces and scatters the result into pieces (a local
 * operation given more than one argument piece joins them once).
 *
 * Strategies, pinned by the program at creation, or chosen at run time:
 *  - FLIT_OBJECT_REPLICATED: every member holds a copy. A read runs on the
 *    local copy with no communication. A write is multicast through the
 *    object's group (<flit/group.h>) and every member applies it in the
 *    group's total order; the writer's call returns once its write has
 *    been applied on its own copy, with the result computed there.
 *  - FLIT_OBJECT_OWNED: only the owner holds the state. Every operation
 *    of another member is an RPC to the owner (<flit/rpc.h>), which
 *    applies it; the owner's own operations run locally.
 *  - FLIT_OBJECT_AUTO: the runtime places the object (Orca's run-time
 *    placement), starting replicated, and moves it between the two above:
 *    every member counts the reads and writes it invokes, and a switch is
 *    an event in the object's group order, applied by every member at the
 *    same place of the operations' order (docs/objects.md):
 *      - replicated: each member multicasts its counts every 16 of its
 *        operations; once 64 operations are counted, a window where the
 *        writes outnumber the reads moves the object to the member that
 *        wrote most (every member decides alike, at that report).
 *      - owned: the owner counts what it serves and runs itself; once 64
 *        are counted, reads over twice the writes make it replicated, and
 *        a member that wrote over twice what the owner wrote takes it over.
 *        The owner multicasts the switch with the state.
 *    An operation caught by a switch is redone under the new placement,
 *    never lost, doubled or reordered. flit_object_place pins a placement
 *    (or hands it back to the runtime). The state travels as its
 *    state_size bytes, or through the type's pack and unpack when it holds
 *    pointers. Operations of a pinned object pay nothing for this.
 *
 * Semantics: every operation is indivisible with respect to every other
 * on the same object, from every thread and every rank (a monitor: the
 * functions run under the object's lock, one at a time); every member
 * sees the writes to one object in one order.
 *
 * Guards: an operation with a guard runs only once guard(state, arg)
 * holds. A write whose guard does not hold when its turn comes waits on
 * the object (at the owner, or on every replica in the same place of the
 * order) and is retried, oldest first, after each write applied there;
 * the caller blocks meanwhile while its endpoint goes on making progress
 * (the owner keeps serving, the group keeps delivering). A guarded read
 * of a replicated object waits locally until a write makes it hold.
 *
 * Operation functions and guards run in handler context or in the
 * caller's thread, under the object's lock: they must not call flit, and
 * must not block. A guard must not change the state.
 *
 * Setting up: the objects are a layer of the endpoint (flit/layer.h).
 * Name "object" among the endpoint's layers (flit_ep_params_t.layers) and
 * the endpoint is created with its object machinery; flit_object_open and
 * flit_object_find take the endpoint. flit_objects_create /
 * flit_objects_destroy, flit_object_create and flit_object_lookup, which
 * took a set the program made first, still work and are deprecated: they
 * go in the next release.
 *
 * Progress: an invoking call makes progress on the endpoint while it
 * waits; a member serves the others' operations on objects it owns, and
 * applies replicated writes, while its endpoint makes progress (any flit
 * call that waits, flit_poll, or the progress thread).
 */
#ifndef FLIT_OBJECT_H
#define FLIT_OBJECT_H

#include <sys/uio.h>

#include <flit/group.h>
#include <flit/rpc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Deprecated: the "object" layer of the endpoint holds them. */
typedef struct flit_objects flit_objects_t;
typedef struct flit_object flit_object_t;

#define FLIT_OBJECT_READ  0u /* the operation does not change the state */
#define FLIT_OBJECT_WRITE 1u /* it may */

/* Applies the operation: state, its argument (len bytes), and res, room for
   the operation's res_max bytes; returns the result's length (<= res_max). */
typedef size_t (*flit_object_op_fn)(void *state, const void *arg, size_t len, void *res,
                                    void *user);
/* Nonzero when the operation may run now. */
typedef int (*flit_object_guard_fn)(const void *state, const void *arg, size_t len,
                                    void *user);

typedef struct flit_object_op {
    unsigned kind;  /* FLIT_OBJECT_READ or FLIT_OBJECT_WRITE */
    size_t arg_max; /* longest argument; longer ones: FLIT_ERR_TOO_LARGE */
    size_t res_max; /* longest result */
    flit_object_op_fn fn;
    flit_object_guard_fn guard; /* NULL: always runs at once */
} flit_object_op_t;

typedef struct flit_object_type {
    size_t state_size; /* bytes of state, zeroed before init; may be 0 */
    /* Called once on each copy made (NULL: none), with the creation's
       argument; fini (NULL: none) before the copy is freed. */
    void (*init)(void *state, const void *arg, size_t len, void *user);
    void (*fini)(void *state, void *user);
    const flit_object_op_t *ops; /* operations 0 .. nops-1 */
    unsigned nops;
    void *user; /* given to every function of the type */
    /*
     * State that is not flat (it holds pointers), for AUTO objects: how it
     * travels when the runtime moves it. pack writes the state as bytes
     * into buf (room for cap) and returns how many it needs; when that is
     * more than cap it wrote nothing and is called again with that much
     * room. unpack makes a copy (one init made, stale since, or current)
     * the state packed: it frees what the copy held that the bytes
     * replace. Both NULL: the state's state_size bytes travel as they are.
     * Both run under the object's lock, like operations.
     */
    size_t (*pack)(const void *state, void *buf, size_t cap, void *user);
    void (*unpack)(void *state, const void *buf, size_t len, void *user);
} flit_object_type_t;

typedef enum flit_object_strategy {
    FLIT_OBJECT_REPLICATED = 0,
    FLIT_OBJECT_OWNED = 1,
    FLIT_OBJECT_AUTO = 2 /* placed by the runtime (at creation, or to unpin) */
} flit_object_strategy;

/*
 * The object layer (flit/layer.h): name "object", opened on request. An
 * endpoint created with "object" in flit_ep_params_t.layers makes, during
 * that collective call, what flit_objects_create makes; flit_ep_destroy
 * frees it once the program destroyed its objects (objects left live, or
 * a rank lost, are logged, and the memory kept). Counter
 * (flit_layer_counter): object.live, the objects on the endpoint now.
 */
FLIT_API extern const flit_layer_t flit_object_layer;

/*
 * Deprecated (flit_ep_params_t.layers "object" instead; it goes in the
 * next release). Collective over the job: the object machinery of ep (an RPC object and a
 * group set of its own, which reserve handler indices). ep must outlive it.
 * FLIT_ERR_INVALID_ARG for a NULL ep or out; the statuses of
 * flit_rpc_create and flit_groups_create (FLIT_ERR_IN_HANDLER in a handler).
 */
FLIT_API flit_status flit_objects_create(flit_ep_t *ep, flit_objects_t **out);
/* Deprecated, as flit_objects_create. Collective over the job, once every
   object of it was destroyed
   (FLIT_ERR_AGAIN, nothing done, while one lives here). FLIT_ERR_INVALID_ARG
   for NULL; FLIT_ERR_PEER_DOWN, nothing freed, when a rank of the job died
   (its RPC object's closing barrier cannot complete). */
FLIT_API flit_status flit_objects_destroy(flit_objects_t *objs);

/*
 * Deprecated: flit_object_open below takes the endpoint. Collective over
 * the members: every member calls it with the same id (the object's name, of the
 * program's choosing, unique among the live objects of objs; it can travel in messages:
 * see flit_object_lookup), type (described alike), members (any order, no repeats; NULL
 * and 0 for the whole job), strategy, owner (a member; ignored unless owned) and creation
 * argument. It returns once every member has joined. The type must stay valid while the
 * object lives.
 *
 * FLIT_ERR_INVALID_ARG: NULL objs, type or out, an unknown strategy, a
 * type with nops 0 or NULL ops, an operation with NULL fn or a kind other
 * than READ or WRITE, a NULL init_arg with a length, an id in use here,
 * members NULL with n > 0, a repeated member, this rank not a member, the
 * owner not a member, a type with one of pack and unpack but not the
 * other; FLIT_ERR_RANK: a member or the owner outside the job;
 * FLIT_ERR_NO_MEMORY; FLIT_ERR_IN_HANDLER; FLIT_ERR_PEER_DOWN: a member
 * died before all had joined.
 */
FLIT_API flit_status flit_object_create(flit_objects_t *objs, uint32_t id,
                                        const flit_object_type_t *type,
                                        const flit_rank_t *members, unsigned n,
                                        flit_object_strategy strategy, flit_rank_t owner,
                                        const void *init_arg, size_t init_len,
                                        flit_object_t **out);

/*
 * Collective over the members, once every operation on the object has
 * returned on every member: frees it. Its id may name a new object once
 * every member's destroy has returned (a barrier after it, say): a member
 * still destroying the old one would take the new one's messages for it.
 * FLIT_ERR_INVALID_ARG for NULL; FLIT_ERR_IN_HANDLER; the group's FLIT_ERR_PEER_DOWN (the
 * object is freed all the same).
 */
FLIT_API flit_status flit_object_destroy(flit_object_t *obj);

/* flit_object_create on the object layer of ep (the call to use): the
   same arguments, collective over the members, the same statuses, and
   FLIT_ERR_INVALID_ARG for an ep created without "object" among its
   layers. */
FLIT_API flit_status flit_object_open(flit_ep_t *ep, uint32_t id,
                                      const flit_object_type_t *type,
                                      const flit_rank_t *members, unsigned n,
                                      flit_object_strategy strategy, flit_rank_t owner,
                                      const void *init_arg, size_t init_len,
                                      flit_object_t **out);

/* Deprecated: flit_object_find below. The live object of objs named id (an
   id received in a message), or FLIT_ERR_INVALID_ARG (NULL arguments, no
   such object here). */
FLIT_API flit_status flit_object_lookup(flit_objects_t *objs, uint32_t id,
                                        flit_object_t **out);
/* The live object named id on ep's object layer, or FLIT_ERR_INVALID_ARG
   (NULL arguments, no such object here, an ep without "object" among its
   layers). */
FLIT_API flit_status flit_object_find(flit_ep_t *ep, uint32_t id, flit_object_t **out);
/* The object's id; UINT32_MAX for NULL. */
FLIT_API uint32_t flit_object_id(const flit_object_t *obj);

/*
 * Applies operation op to obj with the argument arg (len bytes) and puts
 * the result into res (room for cap bytes); *res_len (may be NULL) gets
 * the result's length. Returns when the operation was applied: locally
 * for a read of a replicated object and any operation of the owner; on
 * this member's copy, in the group's order, for a write of a replicated
 * object; at the owner otherwise.
 *
 * FLIT_ERR_INVALID_ARG: NULL obj, a NULL arg with len > 0, a NULL res with
 * cap > 0; FLIT_ERR_BAD_HANDLER: op >= nops; FLIT_ERR_TOO_LARGE: len above
 * the operation's arg_max (nothing done), or a result longer than cap (the
 * operation was applied; the first cap bytes are in res, *res_len is the
 * whole length); FLIT_ERR_IN_HANDLER: a call that would have to wait or
 * send, inside a handler; FLIT_ERR_PEER_DOWN: the owner died (owned), the
 * group lost this member's message (replicated); FLIT_ERR_NO_MEMORY: the
 * copy that must answer (here, or the owner's) missed a write for want of
 * memory (stats: missed), and gives no result from then on;
 * FLIT_ERR_BAD_PACKET: the owner's reply was malformed. A malformed message
 * from another member never stops this one: it is dropped and counted
 * (stats: refused).
 */
FLIT_API flit_status flit_object_invoke(flit_object_t *obj, unsigned op, const void *arg,
                                        size_t len, void *res, size_t cap,
                                        size_t *res_len);

/* The same with the argument gathered from arg[0 .. narg-1] and the result
   scattered into res[0 .. nres-1]; FLIT_ERR_INVALID_ARG also for a count
   < 0, a NULL iov with a count, a NULL base with a length. */
FLIT_API flit_status flit_object_invokev(flit_object_t *obj, unsigned op,
                                         const struct iovec *arg, int narg,
                                         const struct iovec *res, int nres,
                                         size_t *res_len);

/*
 * Pins obj (created FLIT_OBJECT_AUTO) to strategy and owner (ignored unless
 * owned), or with FLIT_OBJECT_AUTO hands its placement back to the
 * runtime. Any member may call it, alone: the request is ordered in the
 * object's group like a switch, every member pins (or unpins) at that place,
 * and the switch it needs follows (from the owner, with the state, when
 * owned). Returns once this member applied the placement asked for, or a
 * later request replaced it. FLIT_ERR_INVALID_ARG: NULL obj, an unknown
 * strategy, an owner not a member; FLIT_ERR_RANK: an owner outside the job;
 * FLIT_ERR_NOT_SUPPORTED: obj was created pinned; FLIT_ERR_IN_HANDLER;
 * FLIT_ERR_PEER_DOWN: the owner that must hand the state over died, or the
 * owner asked for left the group before the request's place in its order.
 */
FLIT_API flit_status flit_object_place(flit_object_t *obj, flit_object_strategy strategy,
                                       flit_rank_t owner);

typedef struct flit_object_stats {
    size_t struct_size;             /* set to sizeof(flit_object_stats_t) */
    flit_object_strategy strategy;  /* now: REPLICATED or OWNED */
    flit_rank_t owner;              /* owned: the owner; else flit_rank(UINT32_MAX) */
    uint64_t reads;                 /* read operations this member invoked */
    uint64_t writes;                /* write operations this member invoked */
    uint64_t local;                 /* ... of those applied here with no message */
    uint64_t applied;               /* operations applied to the copy here */
    uint64_t guard_waits;           /* operations that waited on their guard here */
    flit_object_strategy placement; /* AUTO while the runtime places it,
                                       else the strategy it is pinned to */
    uint64_t switches;              /* placement switches applied here */
    uint64_t retries;               /* operations of this member redone after a switch */
    uint64_t partial_writes;        /* other members' writes larger than one group
                                       message, some pieces of them here */
    uint64_t partials_dropped;      /* ... whose writer left the group before its
                                       last piece: never applied, freed then */
    uint64_t departed;              /* AUTO: members that left, as every member
                                       agreed at one place of the group's order;
                                       from there the runtime places it among the
                                       others only */
    uint64_t refused;               /* malformed messages from other members,
                                       dropped (the first logged) */
    uint64_t missed;                /* writes the copy here had no memory for
                                       (logged): from the first, operations on
                                       it answer FLIT_ERR_NO_MEMORY */
} flit_object_stats_t;

/* FLIT_ERR_INVALID_ARG for NULL arguments or a struct_size that no release
   had. A struct_size of an earlier release (one that ends at retries) gets
   the fields it has; struct_size is left as the caller set it. */
FLIT_API flit_status flit_object_stats(flit_object_t *obj, flit_object_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_OBJECT_H */
