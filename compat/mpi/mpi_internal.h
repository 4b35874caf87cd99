/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-mpi's insides, shared by its files (never installed).
 *
 * The flit tag of a message (64 bits):
 *   bits  0-31  the MPI tag (0 .. MPI_TAG_UB), or an internal tag of a
 *               collective on the communicator's collective context
 *   bits 32-47  the context: 2 per communicator, even for point to point,
 *               odd for its collectives, so no receive of one ever takes a
 *               message of the other or of another communicator
 *   bits 48-61  a synchronous send's id (K_SYNC, K_ACK), else 0
 *   bits 62-63  the kind: K_DATA, K_SYNC (acknowledge when matched), K_ACK
 * Kind 3 is never used, so no tag is FLIT_ANY_TAG.
 *
 * Matching is shared. A receive with one source, one tag and a contiguous
 * type, with no receive posted before it that could take the same
 * messages, is posted in the tagged layer on the flit tag of a standard
 * send (K_DATA): the tagged layer puts such a message straight into the
 * user's buffer. Every other receive is matched here: MPI_ANY_TAG must
 * match every tag of one context and none of another, which one flit tag
 * value or FLIT_ANY_TAG cannot say. The progress engine (mpi_p2p.c) takes
 * every message the tagged layer reports (flit_tagged_iprobe with both
 * wildcards): one a posted receive matches is received straight into that
 * receive's buffer (contiguous types) or into its packing buffer (a
 * synchronous send's message, K_SYNC, takes a receive back from the
 * tagged layer for that); any other goes into this library's unexpected
 * queue, in arrival order, until a receive or probe matches it. Sends
 * behind a synchronous one wait for it to match (mpi_order.c says why).
 */
#ifndef FLIT_MPI_INTERNAL_H
#define FLIT_MPI_INTERNAL_H

#include <flit/tagged.h>

#include "mpi.h"

#define TAG_BITS   32
#define CTX_SHIFT  32
#define CTX_MASK   0xffffull
#define SYNC_SHIFT 48
#define SYNC_MASK  0x3fffull
#define KIND_SHIFT 62
#define K_DATA     0ull
#define K_SYNC     1ull
#define K_ACK      2ull
#define NSYNC      (SYNC_MASK + 1)
#define CTX_MAX    CTX_MASK /* contexts 0 .. CTX_MAX - 1 */
/* A collective's tag (bits 0-30, non-negative as every MPI tag): its
   internal tag (bits 0-7) and the call's sequence number on its
   communicator (bits 8-30), the same on every rank since MPI has every
   rank call a communicator's collectives in one order. */
#define COLL_TAG_BITS 8
#define COLL_SEQ_MASK 0x7fffffu

static inline uint64_t mp_tag(uint64_t kind, uint32_t ctx, uint32_t sync, uint32_t tag)
{
    return kind << KIND_SHIFT | (uint64_t)sync << SYNC_SHIFT |
           (uint64_t)ctx << CTX_SHIFT | tag;
}

/*
 * The predefined objects (MPI_COMM_WORLD, MPI_INT, MPI_SUM ...) are data
 * the library exports and programs link to by address; an executable may
 * hold a copy of each (a copy relocation) of the size it saw when linked.
 * Each such struct is padded to a fixed size so that a library whose
 * objects grew never meets an executable linked against smaller ones.
 */

/* A datatype flattened: its blocks of bytes, offsets from the buffer. */
typedef struct mp_block {
    MPI_Aint disp;
    size_t len;
} mp_block;

struct flit_mpi_type {
    union {
        struct {
            size_t size;         /* bytes of data in one element */
            MPI_Aint lb, extent; /* as MPI defines them (create_resized sets them) */
            MPI_Aint tlb, tub;   /* true lower bound, true upper bound */
            size_t nblocks;
            mp_block *blocks; /* predefined: one block, &inline_block */
            mp_block inline_block;
            int basic; /* MP_B_* of a type made of one basic type, else -1 */
            int pair;  /* a MAXLOC/MINLOC pair type's index, else -1 */
            int predefined, committed, refs;
            const char *name;                   /* a predefined type's */
            char set_name[MPI_MAX_OBJECT_NAME]; /* MPI_Type_set_name's, else "" */
            size_t nbasic; /* a derived type's basic elements in one element */
            struct mp_envelope *env; /* how a derived type was made, else NULL */
        };
        char flit_pad[256]; /* the exported objects' size, fixed */
    };
};
_Static_assert(sizeof(struct flit_mpi_type) == 256,
               "flit_mpi_type outgrew its exported size");

struct flit_mpi_group {
    union {
        struct {
            int size;
            int *world; /* world rank of each group rank */
            int refs, predefined;
        };
        char flit_pad[64]; /* the exported objects' size, fixed */
    };
};
_Static_assert(sizeof(struct flit_mpi_group) == 64,
               "flit_mpi_group outgrew its exported size");

struct flit_mpi_errhandler {
    union {
        struct {
            int fatal;
            /* a program's (MPI_Comm/Win_create_errhandler), else NULL */
            MPI_Comm_errhandler_function *comm_fn;
            MPI_Win_errhandler_function *win_fn;
            struct flit_mpi_errhandler *next; /* the program's, freed at MPI_Finalize */
        };
        char flit_pad[64]; /* the exported objects' size, fixed */
    };
};
_Static_assert(sizeof(struct flit_mpi_errhandler) == 64,
               "flit_mpi_errhandler outgrew its exported size");

struct flit_mpi_comm {
    union {
        struct {
            int size, rank;
            uint32_t ctx;    /* point to point: ctx, collectives: ctx + 1 */
            int *world;      /* world rank of each rank of the communicator */
            int *from_world; /* communicator rank of each world rank, or -1 */
            MPI_Errhandler errh;
            int predefined, freed;
            int refs;          /* the handle's (until MPI_Comm_free) and each request's */
            uint32_t coll_seq; /* collectives called on it so far */
            struct mp_topo *topo;  /* its virtual topology (mpi_topo.c), else NULL */
            char *name;            /* MPI_Comm_set_name's, else NULL */
            struct mp_attr *attrs; /* the program's attributes (mpi_attr.c) */
        };
        char flit_pad[128]; /* the exported objects' size, fixed */
    };
};
_Static_assert(sizeof(struct flit_mpi_comm) == 128,
               "flit_mpi_comm outgrew its exported size");

/* A message MPI_Mprobe took out of the unexpected queue (mpi_p2p.c), until
   MPI_Mrecv receives it; MPI_MESSAGE_NO_PROC is the predefined one. */
struct flit_mpi_message {
    union {
        struct {
            struct mp_ux *ux;
            MPI_Comm comm;
            int predefined;
        };
        char flit_pad[64]; /* the exported objects' size, fixed */
    };
};
_Static_assert(sizeof(struct flit_mpi_message) == 64,
               "flit_mpi_message outgrew its exported size");

enum mp_req_kind { R_SEND, R_RECV, R_COLL /* a non-blocking collective */ };

struct flit_mpi_request {
    enum mp_req_kind kind;
    int persistent, active, complete, cancelled, sync;
    MPI_Comm comm;
    uint32_t ctx;
    /* the call's arguments */
    void *buf;
    int count;
    MPI_Datatype type;
    int peer, tag; /* communicator rank (or wildcard), MPI tag (or wildcard) */
    /* a receive's destination when not received in place: the packed bytes */
    void *pack;
    const void *data; /* a send's bytes: in buf, or pack */
    int gather;       /* a send gathered from buf's runs: their number (mpi_p2p.c) */
    struct iovec *iov; /* a receive scattered into buf's runs in the tagged layer */
    size_t bytes;     /* packed bytes the call names */
    int contig;       /* those bytes lie in one run in buf (mp_type_contig) */
    uint32_t sync_id;
    int orphan; /* MPI_Request_free'd while active: freed when it completes */
    MPI_Status status;
    struct flit_mpi_request *next; /* in the posted queue */
    int held; /* in it and not posted in the tagged layer (counted) */
    /* a receive posted in the tagged layer itself (mpi_p2p.c), else NULL */
    flit_request_t *treq;
    struct flit_mpi_request *order_next; /* held, or awaiting its ack (mpi_order.c) */
};

enum {
    OP_SUM,
    OP_PROD,
    OP_MAX,
    OP_MIN,
    OP_LAND,
    OP_LOR,
    OP_LXOR,
    OP_BAND,
    OP_BOR,
    OP_BXOR,
    OP_MAXLOC,
    OP_MINLOC,
    OP_USER,
    OP_REPLACE, /* one-sided accumulates only */
    OP_NO_OP
};

struct flit_mpi_op {
    union {
        struct {
            int id;
            MPI_User_function *fn; /* MPI_Op_create's, else NULL */
            int commute, refs;
        };
        char flit_pad[64]; /* the exported objects' size, fixed */
    };
};
_Static_assert(sizeof(struct flit_mpi_op) == 64, "flit_mpi_op outgrew its exported size");

/*
 * The profiling interface (MPI 3.1, 14.2): each file ends with
 * MP_PROFILED(MPI_X) for every MPI_X it defines, which makes MPI_X weak and
 * PMPI_X a strong alias of the same code, so that a tool's own MPI_X
 * (linked first, or in an executable) replaces MPI_X and reaches flit's
 * through PMPI_X.
 */
#define MP_PRAGMA(x) _Pragma(#x)
#define MP_PROFILED(f)                                                                   \
    MP_PRAGMA(weak f) extern __typeof__(f) P##f __attribute__((alias(#f)))

/* mpi_op.c */
int mp_op_ok(MPI_Op op, MPI_Datatype t); /* MPI_ERR_OP for a pair not allowed */
/* io = in op io, count elements of t, both packed. */
int mp_op_apply(MPI_Op op, const void *in, void *io, int count, MPI_Datatype t);

/* mpi_env.c */
extern flit_ep_t *mp_ep;
extern flit_tagged_t *mp_tg;
int mp_ready(void); /* between MPI_Init and MPI_Finalize */
int mp_err(MPI_Comm comm, int code, const char *fn);
int mp_err_handler(MPI_Errhandler h, int code, const char *fn);
int mp_class_of(flit_status st);
/* mpi_errh.c: the program's error handlers. Calls comm's (or win's) when it
   is the program's and answers 1, else 0 (mp_err_handler's to do). */
int mp_errh_call_comm(MPI_Errhandler h, MPI_Comm comm, int *code);
int mp_errh_call_win(MPI_Errhandler h, MPI_Win win, int *code);
int mp_errh_for_comm(MPI_Errhandler h); /* may be set on a communicator */
int mp_errh_for_win(MPI_Errhandler h);
void mp_errh_fini(void); /* frees the program's, at MPI_Finalize */
/*
 * MPI_THREAD_MULTIPLE: one library lock. Every entry point that touches
 * the library's state begins with MP_LOCKED(PMPI_X, (its arguments)):
 * when MULTIPLE was granted and this thread does not hold the lock yet
 * it takes it, calls PMPI_X (the same code, which finds the lock held and
 * goes on), gives the lock back and returns what it returned. An MPI call
 * made from inside the library, or from a handler, is already under it.
 * Below MULTIPLE it costs a test of mp_mt and keeps the function as it
 * was (its tail calls too). Every flit call is made under the lock, so
 * the endpoint stays single-threaded. A wait gives the lock up between its
 * passes (mp_mt_pause) so that other threads run their calls meanwhile.
 */
/* MULTIPLE was granted; set once, in MPI_Init_thread. Hidden: read
   without the global offset table. */
extern int mp_mt __attribute__((visibility("hidden")));
int mp_lock_enter(void); /* 1 when it took the lock, 0 when this thread held it */
void mp_lock_leave(void);
#define MP_LOCKED(pmpi_fn, args)                                                         \
    do {                                                                                 \
        if (__builtin_expect(mp_mt, 0) && mp_lock_enter()) {                             \
            int rc_locked_ = pmpi_fn args;                                               \
            mp_lock_leave();                                                             \
            return rc_locked_;                                                           \
        }                                                                                \
    } while (0)
/* Under MULTIPLE, outside a coroutine: gives the lock up, lets the other
   threads run (sleeps a little after idle passes in a row; idle: the pass
   before it moved nothing), takes the lock back. Else nothing. */
void mp_mt_pause(int idle);
#define MP_CHECK_INIT(fn)                                                                \
    do {                                                                                 \
        if (!mp_ready())                                                                 \
            return mp_err(MPI_COMM_NULL, MPI_ERR_OTHER, fn);                             \
    } while (0)

/* mpi_fault.c: processes flit saw die */
int mp_fault_init(void); /* after mp_ep */
void mp_fault_fini(void);
int mp_fault_news(void); /* 1 once after each death */
int mp_peer_dead(int world_rank);
int mp_source_dead(MPI_Comm comm, int src); /* src: a rank or MPI_ANY_SOURCE */

/* mpi_comm.c */
int mp_comm_ok(MPI_Comm comm);
void mp_comm_hold(MPI_Comm comm);
void mp_comm_release(MPI_Comm comm); /* frees a freed one no request uses */
int mp_comm_init_world(void);
void mp_comm_fini(void);

/* mpi_type.c */
void mp_type_init(void);                       /* the predefined types' blocks */
size_t mp_basic_size(int basic);               /* bytes of a basic type (its index) */
int mp_type_ok(MPI_Datatype t);                /* predefined or committed */
int mp_type_live(MPI_Datatype t);              /* predefined or not freed */
int mp_type_contig(MPI_Datatype t, int count); /* count elements lie in one run */
size_t mp_type_bytes(MPI_Datatype t, int count);
/* The true bounds of count elements, [*lo, *hi) from the buffer (0, 0 when
   empty); 0 when they overflow. */
int mp_type_span(MPI_Datatype t, int count, MPI_Aint *lo, MPI_Aint *hi);
/* The runs of bytes count elements cover, in the order mp_pack packs
   them, each run as long as the bytes are adjacent: start from
   (mp_runs){0}; 0 when there are no more. */
typedef struct mp_runs {
    int i;    /* the element */
    size_t b; /* its block */
} mp_runs;
int mp_type_run(MPI_Datatype t, int count, mp_runs *it, MPI_Aint *disp, size_t *len);
void mp_pack(const void *buf, int count, MPI_Datatype t, void *out);
/* Unpacks bytes (at most count elements, possibly a partial one). */
void mp_unpack(const void *in, size_t bytes, void *buf, int count, MPI_Datatype t);
void mp_type_release(MPI_Datatype t);
/* The predefined type of code (a basic index, or a pair type's), else NULL;
   mp_type_code: a predefined type's code, else -1. */
MPI_Datatype mp_type_predef(int code);
int mp_type_code(MPI_Datatype t);

/* mpi_p2p.c */
extern unsigned long mp_progress_count; /* messages handled, requests completed */
extern uint32_t mp_coll_seq;            /* the running collective's number */
int mp_p2p_init(void);
int mp_progress(void); /* one pass of the engine, without blocking */
void mp_p2p_fini(void);
/* Checks of a point-to-point call's arguments: an MPI error class or 0. */
int mp_check_buf(const void *buf, int count, MPI_Datatype t);
int mp_check_send(const void *buf, int count, MPI_Datatype t, int dest, int tag,
                  MPI_Comm comm);
/* Internal byte messages of collectives on comm's collective context. */
/* Numbers a collective call on comm: its messages' tags carry it. */
void mp_coll_begin(MPI_Comm comm);
int mp_coll_send(MPI_Comm comm, int dest, int tag, const void *buf, size_t bytes);
int mp_coll_recv(MPI_Comm comm, int src, int tag, void *buf, size_t bytes);
int mp_coll_sendrecv(MPI_Comm comm, int dest, const void *sbuf, size_t sbytes, int src,
                     void *rbuf, size_t rbytes, int tag);
/* One message of an exchange: a peer (MPI_PROC_NULL: none), a tag, bytes. */
typedef struct mp_part {
    int peer, tag;
    void *buf; /* a send's is only read */
    size_t bytes;
} mp_part;
/* Posts a receive for each in[i] (in order: messages of one peer and tag
   are taken by the parts in their order), sends each out[j], waits for
   every receive; MPI_ERR_TRUNCATE when one brought another size. */
int mp_coll_exchange(MPI_Comm comm, int nin, const mp_part *in, int nout,
                     const mp_part *out);
MPI_Request mp_req_coll(MPI_Comm comm);       /* an active R_COLL request */
void mp_req_coll_done(MPI_Request r, int rc); /* completes it with error rc */
void mp_req_coll_free(MPI_Request r);         /* one never handed out */

/* mpi_order.c: sends held behind a synchronous one to the same key (the
   destination, context and tag); lists linked by order_next. */
int mp_order_idle(void);                /* no send held, none awaiting its ack */
int mp_order_must_hold(MPI_Request r);  /* a send about to go: 1 when it waits */
void mp_order_hold(MPI_Request r);      /* appends it to the held ones */
void mp_order_sync_sent(MPI_Request r); /* a synchronous send is out */
void mp_order_forget(MPI_Request r);    /* out of both lists (acknowledged, failed) */
MPI_Request mp_order_next(void);        /* a held send free to go now, taken out */

/* mpi_attr.c: attributes. clear: every value deleted (the object is
   being freed); dup: the values old's copy functions give new. Each
   answers the first error class a program's function returned. */
int mp_attr_comm_clear(MPI_Comm comm);
int mp_attr_win_clear(MPI_Win win);
int mp_attr_comm_dup(MPI_Comm old, MPI_Comm new);
void mp_attr_fini(void); /* the key table, at MPI_Finalize */

/* mpi_topo.c: virtual topologies. A communicator's neighbours in the
   order neighbourhood collectives use (MPI 3.1, 7.6): a Cartesian one's,
   for each dimension, the rank below then the rank above (MPI_PROC_NULL
   past a non-periodic edge), both ways; a distributed graph's sources and
   destinations as given. */
enum { MP_TOPO_CART = 1, MP_TOPO_DIST = 2 };
/* The most dimensions a grid or sub-array may have (MPI_ERR_DIMS beyond:
   their coordinates live on the stack). */
#define MP_MAX_DIMS 256
struct mp_topo {
    int kind;
    int ndims, *dims, *periods;                          /* Cartesian */
    int indeg, outdeg, weighted, *in, *out, *inw, *outw; /* both (weights: graph) */
};
void mp_topo_free(struct mp_topo *t);
struct mp_topo *mp_topo_copy(const struct mp_topo *t); /* NULL without memory */

/* mpi_nbc.c: non-blocking collectives, each a coroutine running the
   blocking collective's code on a stack of its own. */
typedef struct mp_coll_args {
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    const MPI_Aint *sbdispls, *rbdispls; /* in bytes (neighbourhood alltoallw) */
    MPI_Datatype stype, rtype;
    const MPI_Datatype *stypes, *rtypes;
    MPI_Op op;
    MPI_Comm comm;
} mp_coll_args;
typedef int mp_coll_fn(const mp_coll_args *a);
/* Starts fn(a) (a copied) as request *out; fn's first steps run now. */
int mp_nbc_start(mp_coll_fn *fn, const mp_coll_args *a, MPI_Request *out,
                 const char *name);
int mp_nbc_inside(void);       /* 1 on a coroutine's stack */
const char *mp_nbc_name(void); /* the running coroutine's call, else NULL */
void mp_nbc_yield(void);       /* back to whoever resumed this coroutine */
int mp_nbc_run(void);          /* resumes them all; 1 when something moved */
int mp_nbc_live(void);         /* 1 while one has not ended */
int mp_nbc_drain(void);        /* mpi_p2p.c: waits until none is live */

/* mpi_scratch.c: the collectives' scratch buffers, large ones kept for the
   next call; any malloc'd block may be given back. */
/* mpi_envelope.c: how a derived type was made. t made by combiner from
   ints (given in runs), addresses and types (held from now on); what t
   recorded before goes. MPI_ERR_NO_MEM, or MPI_SUCCESS. forget: at t's
   release. */
typedef struct mp_iseg {
    const int *p;
    int n;
} mp_iseg;
int mp_type_made(MPI_Datatype t, int combiner, const mp_iseg *iseg, int nseg, int na,
                 const MPI_Aint *aints, int nd, const MPI_Datatype *types);
void mp_type_forget(MPI_Datatype t);

void *mp_scratch(size_t n);
void mp_scratch_free(void *p);
void mp_scratch_fini(void); /* MPI_Finalize: the kept ones freed */

/* mpi_win.c: one-sided communication */
flit_status mp_win_init(void); /* its active-message handlers (MPI_Init) */

/* mpi_coll_choice.c: the sizes at which collectives change algorithm
   (FLIT_MPI_*), read by mp_coll_choice_init before flit_init. */
extern size_t mp_bcast_scatter_min, mp_allgather_ring_min, mp_allreduce_halving_min,
    mp_alltoall_pairwise_min, mp_reduce_halving_min, mp_gather_linear_min,
    mp_scatter_linear_min, /* MP_SIZE_AUTO: chosen by the rank count */
    mp_reduce_scatter_halving_min, mp_reduce_tree_min, mp_allreduce_doubling_min;
#define MP_SIZE_AUTO SIZE_MAX /* a setting's -1 */
flit_status mp_coll_choice_init(void);

#endif /* FLIT_MPI_INTERNAL_H */
