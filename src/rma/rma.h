/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication (VMMC): the layer's internal interface.
 *
 * Owner side. An exported region is a slot in the endpoint's region table;
 * its export id is (generation << 32 | slot), so an id outlives its region
 * without ever naming a later one. Each slot also has a word in the
 * endpoint's control file, (generation << 1 | 1) while the region is live:
 *
 *   control file  [header line][one line per rank: its busy mark]
 *                 [FL_RMA_MAX_REGIONS words: the slots]
 *
 * The file is memory of the transport's (its one-sided ->mem_alloc, key
 * FL_RMA_CTL_KEY) when ranks it serves may map it and reach the owner's
 * memory directly, private memory otherwise. An importer maps it (->map)
 * and, around every direct access, raises its busy mark (slot + 1), checks
 * the slot's word, copies (itself through a mapping of the region, or by
 * the transport's ->put / ->get), and clears the mark; unexport marks the
 * word dead, then waits until no live importer's mark names the slot. A
 * Dekker handshake with asymmetric fences (platform/fence.h): the
 * importer's side costs no fence on x86. A mark left by an importer that
 * died is not waited for.
 *
 * Importer side. An import chooses the path once (enum fl_rma_path);
 * operations that need an answer from the owner (gets over packets, puts
 * with FLIT_RMA_REMOTE_DONE, imports, flushes) are entries of the operation
 * table, named in packets by (generation << 20 | index). Other puts over
 * packets are not tracked: the owner answers them only to refuse them
 * (operation id 0), and a flush is a round trip behind them on the same
 * FIFO lanes.
 */
#ifndef FL_RMA_RMA_H
#define FL_RMA_RMA_H

#include <stdbool.h>
#include <stdint.h>

#include "core/ep.h"
#include "flit/handle.h"
#include "flit/rma.h"
#include "rma/wire.h"

#define FL_RMA_MAX_REGIONS 65536u
#define FL_RMA_OP_BITS     20u /* operation ids: index bits */
#define FL_RMA_MAX_OPS     (1u << FL_RMA_OP_BITS)
#define FL_RMA_MAX_REMOTES (1u << 20)
/* Dead handles kept apart before one is reused, so that a handle used after
   it died is recognised (FLIT_ERR_REVOKED / FLIT_ERR_INVALID_ARG). */
#define FL_RMA_KEEP_DEAD 1024u

#define FL_RMA_ACCESS_ALL (FLIT_RMA_READ | FLIT_RMA_WRITE)

/*
 * ---- handles: pooled, never freed before their endpoint ----
 *
 * The program holds <flit/handle.h> handles (one table per kind, made for
 * an object when it is first handed out), never pointers: a dead object's
 * handle still names it (FLIT_ERR_REVOKED, FLIT_ERR_INVALID_ARG: it reads
 * !live) until its slot is reused or its endpoint goes; from then on the
 * handle is refused without reading anything.
 */

#define FL_RMA_MAGIC_REGION 0x52474e31u /* "RGN1" */
#define FL_RMA_MAGIC_REMOTE 0x524d5431u /* "RMT1" */
#define FL_RMA_MAGIC_OP     0x524f5031u /* "ROP1" */

struct fl_rma_obj {
    uint32_t magic;
    bool live;
    void *self;   /* its handle, until the slot is reused; NULL: none yet */
    uint32_t idx; /* its place in the pool, for good */
    uint32_t gen; /* bumped each time it is handed out */
    struct fl_rma_obj *next_free;
};

struct fl_rma_pool {
    struct fl_rma_obj **all; /* every object made, by idx */
    uint32_t n, cap, max;
    struct fl_rma_obj *head, *tail; /* dead ones, oldest first */
    uint32_t nfree;
    size_t size;
    uint32_t magic;
    flit_handles_t **handles; /* the table of its kind */
};

/* A live object of the pool (fresh or reused, gen bumped), or NULL when
   max are live or memory is short. */
struct fl_rma_obj *fl_rma_pool_get(struct fl_rma_pool *p);
void fl_rma_pool_put(struct fl_rma_pool *p, struct fl_rma_obj *o);
/* o's handle, made if it has none: FLIT_OK, or FLIT_ERR_NO_MEMORY. */
flit_status fl_rma_pool_handle(struct fl_rma_pool *p, struct fl_rma_obj *o);
/* The object a handle of each kind names; NULL for any other value. */
struct flit_rma_region *fl_rma_region_of(const flit_rma_region_t *h);
struct flit_rma_remote *fl_rma_remote_of(const flit_rma_remote_t *h);
struct flit_rma_op *fl_rma_op_of(const flit_rma_op_t *h);

/* ---- owner side ---- */

/* flit_rma_alloc memory: the transport's memory that peers map (key
   seq), or private pages where no transport offers such memory. */
struct fl_rma_block {
    uint8_t *addr;
    size_t len;   /* whole pages */
    uint64_t seq; /* its key; from 1 */
    bool shared;  /* the transport's (fl_rma_ep.mem), else private pages */
    struct fl_rma_block *next;
};

struct flit_rma_region {
    struct fl_rma_obj obj; /* obj.idx: the slot; obj.gen: the generation */
    struct flit_ep *ep;
    uint8_t *addr;
    uint64_t len;
    unsigned access;
    uint64_t *allowed;          /* bitmap over ranks; NULL: every rank */
    struct fl_rma_block *block; /* the alloc memory holding it, or NULL */
    uint64_t block_off;
    uint32_t dir; /* its export directory entry (dir.c), UINT32_MAX: left out */
    uint64_t key; /* flit_rma_region_set_key's, 0: none */
    /* Exposed to importers by a transport's ->expose (at the first import
       it serves): its ops, endpoint, key and the address of the region's
       first byte there; NULL xos: not exposed. Withdrawn at revocation. */
    const struct fl_tp_onesided *xos;
    struct fl_tp_ep *xtpe;
    uint64_t xkey, xraddr;
    uint64_t *xheld; /* bitmap over ranks: importers given the key */
};

/*
 * An unexport waiting until every importer given the region's key
 * (FL_RMA_INFO_KEY) says it will not use it again, before the transport
 * withdraws it (region.c): a transport that moves memory without the
 * owner cannot tell a late access from a wrong one, and may end the
 * connection over it. On the unexporting call's stack, in the endpoint's
 * list meanwhile.
 */
struct fl_rma_withdrawal {
    uint64_t id;
    uint64_t *held; /* importers yet to answer, bitmap over ranks */
    struct fl_rma_withdrawal *next;
};

/* ---- importer side ---- */

enum fl_rma_path {
    FL_RMA_PATH_SELF,    /* our own region: memmove */
    FL_RMA_PATH_MAP,     /* its memory mapped here: memcpy */
    FL_RMA_PATH_TP,      /* the transport's one-sided ->put / ->get */
    FL_RMA_PATH_PACKETS, /* the owner's progress engine moves it */
    FL_RMA_PATH_EXPOSED, /* ->put / ->get at the key the owner's transport
                            gave the region (->expose): no control words,
                            revoked by withdrawing the key */
};

struct flit_rma_remote {
    struct fl_rma_obj obj;
    struct flit_ep *ep;
    uint32_t owner;
    uint64_t id;
    uint64_t size;
    unsigned access;
    enum fl_rma_path path;
    bool revoked;                 /* known to be unexported */
    bool releasing;               /* flit_rma_release waits for its operations */
    uint8_t unheard;              /* EXPOSED: early puts since a progress pass */
    uint8_t *base;                /* SELF: the region; MAP: the region, mapped */
    struct fl_rma_map *map;       /* MAP: the mapping (whole pages), shared */
    uint64_t raddr;               /* TP: the region in the owner's process;
                                     EXPOSED: its first byte at key */
    uint64_t key;                 /* TP: the owner's memory holding it (0: none);
                                     EXPOSED: the transport's key */
    const _Atomic uint64_t *word; /* MAP, TP: the slot's word, mapped */
    uint64_t live_word;           /* its value while the region is live */
    _Atomic uint64_t *busy;       /* MAP, TP: our busy mark there */
    uint32_t outstanding;         /* operations waiting for the owner */
};

enum fl_rma_op_kind { FL_RMA_OP_PUT, FL_RMA_OP_GET, FL_RMA_OP_IMPORT, FL_RMA_OP_FLUSH };

struct flit_rma_op {
    struct fl_rma_obj obj;
    struct flit_ep *ep;
    uint8_t kind;
    bool pending;     /* waits for the owner's answer */
    bool want_answer; /* its handle completes with the answer */
    bool held;        /* a handle someone holds (the program, or a
                         blocking call); else freed on the answer */
    flit_status status;
    uint32_t peer;
    struct flit_rma_remote *remote; /* PUT, GET */
    uint8_t *dst;                   /* GET: where the data goes */
    uint64_t len, got;
    struct fl_rma_info info; /* IMPORT: the answer */
    uint64_t size;
    unsigned access;
};

/* ---- per endpoint ---- */

/*
 * The importer's mapping of a range of pages of an owner's block. Every
 * import of the same region shares one (counted): a program that imports
 * a region many times costs the process one mapping, not one per import.
 */
struct fl_rma_map {
    uint64_t block, start, end; /* the block's seq; the file's pages mapped */
    bool write;
    uint8_t *addr;
    uint32_t refs;
    struct fl_rma_map *next; /* the owner's, in fl_rma_peer.maps */
};

/* Distinct mappings an endpoint keeps at most (the kernel allows a process
   vm.max_map_count, 65530 by default, for everything it maps); imports
   past it reach their regions by the transport's put / get, or packets. */
#define FL_RMA_MAX_MAPS 8192u

struct fl_rma_peer {
    uint32_t outstanding; /* our operations waiting for its answer */
    flit_status sticky;   /* a refusal no handle reported; for flush */
    uint64_t unflushed;   /* puts in packets it answers only if it
                             refuses them, since the last flush */
    /* Its control file, mapped when we first imported from it. */
    uint8_t *ctl;
    size_t ctl_len;
    bool ctl_tried;
    bool no_tp;              /* its transport refused a ->put / ->get */
    bool unsettled;          /* its transport's early puts since the last flush */
    struct fl_rma_map *maps; /* its blocks' pages mapped here */
    /* The put arriving in pieces from it: its id and the first refusal. */
    uint32_t put_op;
    flit_status put_err;
};

struct fl_rma_ep {
    struct flit_ep *ep;
    struct fl_rma_pool regions, remotes, ops;
    struct fl_rma_peer *peers; /* [size] */
    uint32_t outstanding;      /* all peers' */
    uint32_t nmaps;            /* distinct mappings of peers' blocks */
    /* Our control file (made at the first export). */
    uint8_t *ctl;
    size_t ctl_len;
    bool ctl_shared; /* the transport's memory, peers may map */
    /* The transport whose memory ours is (->mem_alloc): the first one that
       reaches a peer and offers it; NULL: none (private pages). */
    const struct fl_tp_onesided *mem;
    struct fl_tp_ep *mem_tpe;
    bool mem_known; /* mem looked for */
    struct fl_rma_block *blocks;
    uint64_t next_block;
    struct fl_rma_withdrawal *withdrawals; /* unexports waiting for importers */
    flit_rma_notify_fn notify_fn;
    void *notify_user;
    size_t page;
    fl_counter puts, gets, put_bytes, get_bytes, notifications, refused;
};

/* Control file layout. */
#define FL_RMA_CTL_MAGIC 0x4c5443414d52464cull /* "LFRMACTL" */
#define FL_RMA_CTL_KEY   0u /* its key in the transport's memory (blocks: 1..) */
#define FL_RMA_LINE      64u

/* After the slot words, the export directory (dir.c): a line, then
   FL_RMA_DIR_MAX entries of 8 words and a bitmap over the ranks. */
#define FL_RMA_DIR_MAX 1024u

static inline size_t fl_rma_dir_off(uint32_t nranks)
{
    return FL_RMA_LINE * (1 + (size_t)nranks) + 8u * FL_RMA_MAX_REGIONS;
}

static inline size_t fl_rma_dir_entry_len(uint32_t nranks)
{
    size_t n = 64u + 8u * (((size_t)nranks + 63) / 64);
    return (n + FL_RMA_LINE - 1) & ~(size_t)(FL_RMA_LINE - 1);
}

static inline size_t fl_rma_ctl_len(uint32_t nranks, size_t page)
{
    size_t n = fl_rma_dir_off(nranks) + FL_RMA_LINE +
               FL_RMA_DIR_MAX * fl_rma_dir_entry_len(nranks);
    return (n + page - 1) & ~(page - 1);
}

static inline _Atomic uint64_t *fl_rma_ctl_busy(uint8_t *ctl, uint32_t rank)
{
    return (_Atomic uint64_t *)(void *)(ctl + FL_RMA_LINE * (1 + (size_t)rank));
}

static inline _Atomic uint64_t *fl_rma_ctl_word(uint8_t *ctl, uint32_t nranks,
                                                uint32_t slot)
{
    return (_Atomic uint64_t *)(void *)(ctl + FL_RMA_LINE * (1 + (size_t)nranks) +
                                        8u * (size_t)slot);
}

static inline uint64_t fl_rma_live_word(uint32_t gen)
{
    return (uint64_t)gen << 1 | 1u;
}

/* ---- across the layer's files ---- */

extern struct fl_layer fl_rma_layer;

static inline struct fl_rma_ep *fl_rma_of(const struct flit_ep *ep)
{
    return (struct fl_rma_ep *)fl_ep_layer(ep, &fl_rma_layer);
}

/*
 * The one-sided operations of the transport serving peer, when it offers
 * them and reaches peer's memory now; NULL: packets.
 */
static inline const struct fl_tp_onesided *fl_rma_tp(const struct flit_ep *ep,
                                                     uint32_t peer)
{
    const struct fl_peer *p = &ep->peers[peer];
    const struct fl_tp_onesided *os = p->tp ? p->tp->onesided : NULL;
    return os && os->reaches(p->tpe, peer) ? os : NULL;
}

/* mem.c: memory and mappings, by the transports' one-sided operations. */
struct fl_rma_block *fl_rma_block_of(struct fl_rma_ep *r, const void *addr, size_t len,
                                     uint64_t *off_out);
flit_status fl_rma_ctl_make(struct flit_ep *ep);
void fl_rma_ctl_unmake(struct flit_ep *ep);
bool fl_rma_ctl_attach(struct flit_ep *ep, uint32_t owner);
flit_status fl_rma_map_remote(struct flit_ep *ep, struct flit_rma_remote *rm,
                              const struct fl_rma_info *in);
void fl_rma_unmap_remote(struct flit_ep *ep, struct flit_rma_remote *rm);
void fl_rma_blocks_free(struct flit_ep *ep);
void fl_rma_peer_ctl_free(struct flit_ep *ep, uint32_t owner);
/* Maps [0, len) of owner's control file (writable: busy marks): FLIT_OK,
   or the transport's ->map status (FLIT_ERR_NOT_SUPPORTED with no map). */
flit_status fl_rma_ctl_map(struct flit_ep *ep, uint32_t owner, size_t len, void **out);
/* Gives back what the transport serving owner mapped (control file, block). */
void fl_rma_unmap(struct flit_ep *ep, uint32_t owner, void *addr, size_t len);

/* region.c */
struct flit_rma_region *fl_rma_region_find(struct fl_rma_ep *r, uint64_t id);
bool fl_rma_region_allows(const struct flit_rma_region *g, uint32_t rank);
/* The owner's judgement of an access by rank, needing access need, to
   [base, base + len) of region id. */
flit_status fl_rma_judge(struct flit_ep *ep, uint32_t rank, uint64_t id, unsigned need,
                         uint64_t base, uint64_t len, struct flit_rma_region **out);
/* Unexports g: marks it dead, waits for direct accesses, frees the slot;
   withdraws its key from the importers given it (waiting for them with
   wait; region.c). */
void fl_rma_revoke(struct flit_ep *ep, struct flit_rma_region *g, bool wait);
/* Importer src answered the withdrawal of region id's key. */
void fl_rma_withdrawn(struct flit_ep *ep, uint32_t src, uint64_t id);

/* op.c */
struct flit_rma_op *fl_rma_op_new(struct flit_ep *ep, enum fl_rma_op_kind kind,
                                  uint32_t peer, struct flit_rma_remote *rm);
void fl_rma_op_wait_for(struct flit_ep *ep, struct flit_rma_op *op);
void fl_rma_op_complete(struct flit_ep *ep, struct flit_rma_op *op, flit_status st);
struct flit_rma_op *fl_rma_op_find(struct flit_ep *ep, uint32_t id, uint32_t src,
                                   enum fl_rma_op_kind kind);
bool fl_rma_op_done(const struct flit_rma_op *op);
/* The holder lets go of a complete (or locally complete) op. */
void fl_rma_op_release(struct flit_ep *ep, struct flit_rma_op *op);
/* Blocks (making progress) until op is done (fl_rma_op_done). */
void fl_rma_op_wait(struct flit_ep *ep, struct flit_rma_op *op);
/* Blocks until op is done; returns its status and lets go of it. */
flit_status fl_rma_op_finish(struct flit_ep *ep, struct flit_rma_op *op);

static inline uint32_t fl_rma_op_id(const struct flit_rma_op *op)
{
    return op->obj.idx | op->obj.gen << FL_RMA_OP_BITS;
}

/* recv.c */
/* Sends one packet (header p, then the payload) on p's lane. Answers from
   a packet handler raise fl_handler_depth around it. */
flit_status fl_rma_send(struct flit_ep *ep, uint32_t dst, struct fl_rma_pkt *p,
                        const void *payload, unsigned flags);
void fl_rma_recv(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt, size_t len);
/* Runs the notification handler (counted). */
void fl_rma_notify(struct flit_ep *ep, uint64_t id, uint32_t from, uint64_t off,
                   uint64_t len);

/* dir.c: the export directory in the control file, which importers of
   this host read instead of asking the owner. publish: at export, with
   the region's fields set; unpublish: at revocation, first. dir_import:
   region id as the directory grants it (FLIT_ERR_DENIED, FLIT_ERR_REVOKED
   as the owner would answer), FLIT_ERR_NOT_SUPPORTED when it cannot tell
   (ask the owner). */
void fl_rma_dir_publish(struct flit_ep *ep, struct flit_rma_region *g);
void fl_rma_dir_unpublish(struct flit_ep *ep, struct flit_rma_region *g);
flit_status fl_rma_dir_import(struct flit_ep *ep, uint32_t owner, uint64_t id,
                              struct flit_rma_remote *rm, struct fl_rma_info *in);
/* Imports of our regions importers refused from our directory. */
uint64_t fl_rma_dir_refused(const struct fl_rma_ep *r);

/* import.c: the owner's answer to an import request; the importer's
   handling of the answer. */
void fl_rma_answer_import(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p);
void fl_rma_import_answered(struct flit_ep *ep, uint32_t src, const struct fl_rma_pkt *p);

#endif /* FL_RMA_RMA_H */
