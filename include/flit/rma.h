/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit one-sided communication, with the semantics of VMMC (virtual
 * memory-mapped communication).
 *
 * A receiver exports a region of its memory, naming who may reach it and
 * how (read, write or both); a sender imports it, once, with a round trip
 * to the owner, which decides; from then on the sender moves data straight
 * between its memory and the region with puts and gets, and the owner makes
 * no receive call. The owner learns of a put only if the sender asked for a
 * notification: its notification handler then runs once, after the data is
 * in its memory, with the sender, the offset and the length.
 *
 *     // owner (rank 0)
 *     void *buf;
 *     flit_rma_region_t *reg;
 *     flit_rma_alloc(ep, len, &buf);                 // the fastest memory
 *     flit_rma_export(ep, buf, len, FLIT_RMA_WRITE, NULL, 0, &reg);
 *     flit_rma_set_notify_handler(ep, on_put, NULL);
 *     uint64_t id = flit_rma_region_id(reg);         // tell the senders
 *
 *     // sender
 *     flit_rma_remote_t *r;
 *     flit_rma_import(ep, flit_rank(0), id, &r);
 *     flit_rma_put(r, 4096, data, n, FLIT_RMA_NOTIFY, NULL);
 *
 * Protection is the owner's. An import is refused (FLIT_ERR_DENIED) to a
 * rank the owner did not allow; every put and get is checked against the
 * region's bounds and the access the owner granted; after
 * flit_rma_unexport, puts and gets fail at the sender with
 * FLIT_ERR_REVOKED and nothing more lands. Over packets the owner checks
 * every access itself, whatever the sender claims; an access it refuses is
 * counted in its flit_stats_t (rma_refused), reported to the sender, and
 * never touches memory outside the region.
 *
 * Paths, chosen once, at import:
 *  - a region of flit_rma_alloc memory owned by a rank on this host is
 *    mapped into the importer (read-only when only reading was granted):
 *    a put or a get is one memcpy by the initiating process, and the
 *    owner's CPU takes no part, so a put lands even while the owner never
 *    calls flit;
 *  - any other memory of a rank on this host is reached with cross-memory
 *    attach (process_vm_writev / readv), with the same property;
 *  - under FLIT_TRANSPORT=ofi, on a provider with remote memory access
 *    (FI_RMA), the owner registers the region's memory, with exactly the
 *    access it granted, for the importers it answers: a put or a get is
 *    one fi_write or fi_read by the network (a hardware provider's NIC
 *    moves it without the owner's CPU; a software one, such as tcp or
 *    udp, while the owner makes progress). Each such put or get first
 *    makes a progress pass towards the owner, where the importer hears of
 *    an unexport;
 *  - otherwise (UDP between hosts, or where the kernel refuses
 *    cross-memory attach, or FLIT_SHM_BULK=copy) puts are cut into packets
 *    that the owner's progress engine deposits straight into the region,
 *    and gets are answered by it the same way. The data then lands while
 *    the owner makes progress (flit_poll, flit_wait, any blocking call).
 *
 * Ordering: a put's data is in the owner's memory before any packet the
 * sender sends the owner after the put returned (an active message, a
 * notification) is handled there. Puts and gets are not ordered with each
 * other; flit_rma_flush waits for all of them.
 *
 * Handler context: none of these calls may be made inside a handler (any
 * handler: active message, stream, notification), where they answer
 * FLIT_ERR_IN_HANDLER; the accessors (flit_rma_region_id,
 * flit_rma_remote_size, flit_rma_remote_access) may. A call that waits
 * (an import, a put waiting for room in packets or for FLIT_RMA_REMOTE_DONE,
 * a blocking get, a flush, flit_rma_wait) makes progress on the endpoint
 * meanwhile, as a blocked active-message send does: handlers may run
 * inside it.
 *
 * Protection is by rank and region: the endpoint tags of <flit/am.h> play
 * no part. Handles (regions, remotes, operations) belong to their endpoint
 * and die with it; a handle used after it died is recognised as dead
 * (FLIT_ERR_REVOKED for a region, FLIT_ERR_INVALID_ARG otherwise) until
 * the endpoint reuses its memory, which it does only once more than 1024
 * other handles of the same kind have died since (or, for regions, when
 * 65536 exist).
 */
#ifndef FLIT_RMA_H
#define FLIT_RMA_H

#include <flit/flit.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An exported region, on its owner. */
typedef struct flit_rma_region flit_rma_region_t;
/* An imported region, on the importer. */
typedef struct flit_rma_remote flit_rma_remote_t;
/* A non-blocking put or get in progress. */
typedef struct flit_rma_op flit_rma_op_t;

/* Access granted to importers (flit_rma_export). */
#define FLIT_RMA_READ  (1u << 0)
#define FLIT_RMA_WRITE (1u << 1)

/* Put and get flags. */
#define FLIT_RMA_REMOTE_DONE                                                             \
    (1u << 0) /* put: complete only once the data is                                     \
                 in the owner's memory (always so                                        \
                 for a get) */
#define FLIT_RMA_NOTIFY                                                                  \
    (1u << 1) /* put: run the owner's notification                                       \
                 handler once the data is there */

/* ---- memory ---- */

/*
 * Allocates len bytes (rounded up to whole pages, zeroed) in memory that
 * ranks on this host can map: regions exported from it are reached with a
 * plain memcpy. The memory is the endpoint's: flit_rma_free, or the
 * endpoint's destruction, releases it. Its pages are reserved in /dev/shm
 * here: FLIT_ERR_NO_MEMORY when there is no room.
 */
FLIT_API flit_status flit_rma_alloc(flit_ep_t *ep, size_t len, void **addr_out);

/*
 * Releases memory from flit_rma_alloc (addr: what it returned). Regions
 * exported from it are unexported first (see flit_rma_unexport); their
 * handles die. FLIT_ERR_INVALID_ARG for any other address.
 */
FLIT_API flit_status flit_rma_free(flit_ep_t *ep, void *addr);

/* ---- the owner's side ---- */

/*
 * Exports [addr, addr + len) with access FLIT_RMA_READ, FLIT_RMA_WRITE or
 * both, to the nallowed ranks in allowed (nallowed 0: every rank of the
 * job, this one included; allowed may then be NULL). Any memory may be
 * exported; memory from flit_rma_alloc is reached fastest by ranks on this
 * host. The memory must stay valid until the region is unexported. The
 * same memory may be exported several times. FLIT_ERR_RANK for a rank
 * outside the job; FLIT_ERR_NO_MEMORY when the endpoint has 65536 regions
 * exported already, or at its first export when /dev/shm has no room for
 * the control file that ranks on this host map (a later export tries
 * again).
 */
FLIT_API flit_status flit_rma_export(flit_ep_t *ep, void *addr, size_t len,
                                     unsigned access, const flit_rank_t *allowed,
                                     size_t nallowed, flit_rma_region_t **region_out);

/* The id importers name the region by (never 0); 0 for a handle that is
   not a live region. The program passes it to them, in a message. */
FLIT_API uint64_t flit_rma_region_id(const flit_rma_region_t *region);

/*
 * Revokes the region: once this returns, puts and gets to it fail at their
 * initiator with FLIT_ERR_REVOKED and nothing more lands in it, nor is
 * read from it. It waits for accesses other processes of this host are
 * making at that moment (a memcpy at most; those of a rank that died are
 * not waited for). Where the region's memory was registered with the
 * network for importers (FLIT_TRANSPORT=ofi), it tells each of them and
 * waits, making progress, until each has answered that it will not use
 * the registration again (an importer answers during its progress or its
 * next put or get there) or is known dead (FLIT_PEER_TIMEOUT): a network
 * that moves memory without the owner cannot refuse a late access without
 * breaking the connection, so none is made. The handle dies; a second call answers
 * FLIT_ERR_REVOKED (FLIT_ERR_INVALID_ARG once a new region took the dead
 * one's place, or its endpoint was destroyed: a dead handle never names
 * another region).
 */
FLIT_API flit_status flit_rma_unexport(flit_rma_region_t *region);

/*
 * Runs once per put made with FLIT_RMA_NOTIFY to one of ep's regions,
 * during progress, after the put's data is in the region: export_id names
 * the region, [offset, offset + len) is where the data landed, from is the
 * sender. Like every handler it may not make blocking calls. fn NULL
 * removes it; notifications arriving without a handler are dropped.
 * Notifications for a region unexported meanwhile are dropped too.
 */
typedef void (*flit_rma_notify_fn)(flit_ep_t *ep, uint64_t export_id, flit_rank_t from,
                                   uint64_t offset, size_t len, void *user);
FLIT_API flit_status flit_rma_set_notify_handler(flit_ep_t *ep, flit_rma_notify_fn fn,
                                                 void *user);

/* ---- the importer's side ---- */

/*
 * Imports owner's region export_id: a round trip to owner (making progress
 * meanwhile), which decides. FLIT_ERR_DENIED when owner did not allow this
 * rank; FLIT_ERR_REVOKED when it exports no region by that id (any more);
 * FLIT_ERR_PEER_DOWN when it died. A rank may import its own regions.
 * An owner on this host (its memory reachable directly: not with
 * FLIT_SHM_BULK=copy) publishes its regions (the first 1024 live ones) in
 * an export directory in shared memory, and the import reads it there with
 * the same verdicts, without a message: the owner need make no call
 * meanwhile (a refusal is counted in the owner's rma_refused all the same).
 */
FLIT_API flit_status flit_rma_import(flit_ep_t *ep, flit_rank_t owner, uint64_t export_id,
                                     flit_rma_remote_t **remote_out);

/*
 * Names region by key (not 0), the program's own name for it (VMMC's buffer
 * names), so that importers on this host find its id with flit_rma_lookup
 * without asking the owner. FLIT_ERR_INVALID_ARG for key 0 or a key another
 * live region of the endpoint holds; FLIT_ERR_REVOKED for an unexported one.
 */
FLIT_API flit_status flit_rma_region_set_key(flit_rma_region_t *region, uint64_t key);

/*
 * The id of owner's live region named key, read in its export directory
 * (flit_rma_import), owner taking no part. FLIT_ERR_REVOKED when it has no
 * region by that key; FLIT_ERR_DENIED (*id_out set) when it did not allow
 * this rank; FLIT_ERR_NOT_SUPPORTED when the directory cannot answer here
 * (owner on another host, FLIT_SHM_BULK=copy, or more than 1024 regions
 * exported there): ask owner with a message instead. Not inside a handler.
 */
FLIT_API flit_status flit_rma_lookup(flit_ep_t *ep, flit_rank_t owner, uint64_t key,
                                     uint64_t *id_out);

/* The region's length and the access its owner granted, as the import
   learned them; 0 for a handle that is not a live import. */
FLIT_API size_t flit_rma_remote_size(const flit_rma_remote_t *remote);
FLIT_API unsigned flit_rma_remote_access(const flit_rma_remote_t *remote);

/* The path the import chose for remote's puts and gets (see "Paths"
   above); FLIT_RMA_PATH_NONE for a handle that is not a live import. A
   transport's put and get refused later (cross-memory attach the kernel
   refuses) go on in packets. */
typedef enum flit_rma_path {
    FLIT_RMA_PATH_NONE = 0,
    FLIT_RMA_PATH_COPY = 1,    /* one memcpy by the caller: mapped here, or its own */
    FLIT_RMA_PATH_ATTACH = 2,  /* the transport's one-sided put / get: one copy
                                  (shm: cross-memory attach, by the kernel) */
    FLIT_RMA_PATH_PACKETS = 3, /* packets that the owner's progress lands */
    FLIT_RMA_PATH_FABRIC = 4,  /* the network's remote memory access (libfabric's
                                  fi_write / fi_read into memory the owner
                                  registered for this region, and withdraws
                                  when it unexports) */
} flit_rma_path;
FLIT_API flit_rma_path flit_rma_remote_path(const flit_rma_remote_t *remote);

/*
 * Where remote's region lies in this process when its path is
 * FLIT_RMA_PATH_COPY (the owner's flit_rma_alloc memory mapped here, or a
 * region of this rank's own): the program's loads, and its stores where
 * the access granted has FLIT_RMA_WRITE (the mapping is read-only
 * otherwise), reach the owner's memory directly, with no call, as VMMC's
 * imported buffers did. NULL for any other path or a handle that is not a
 * live import. Valid until flit_rma_release; ordering against the owner's
 * own loads and stores is the program's (atomics, or a message). The owner
 * may unexport meanwhile: the pages stay mapped, and what is written there
 * then reaches nobody's region.
 */
FLIT_API void *flit_rma_remote_addr(const flit_rma_remote_t *remote);

/* Waits for the puts and gets still in progress on remote, then forgets
   it; the handle dies. */
FLIT_API flit_status flit_rma_release(flit_rma_remote_t *remote);

/*
 * Copies len bytes from src into the region at offset (any length, any
 * offset, any alignment).
 *
 * op NULL, blocking: returns when src may be reused; with
 * FLIT_RMA_REMOTE_DONE, once the data is in the owner's memory, with the
 * owner's verdict. Without it, over packets, the owner answers the put
 * only if it refuses it: that refusal is reported by the next
 * flit_rma_flush to that rank, and later calls on the same import fail at
 * once. On the direct paths (mapping, cross-memory attach, this rank) a
 * put is in the owner's memory when it returns, whatever the flags. On the
 * fabric path a put no larger than the provider's inject size returns once
 * the provider took it, one up to FLIT_OFI_BOUNCE_KB once its bytes are
 * copied into a bounce buffer (FLIT_OFI_EARLY_PUTS), its failure reported
 * by the next flush; a larger one once it is in the owner's memory.
 *
 * op non-NULL: *op is a handle that flit_rma_test / flit_rma_wait complete:
 * when src may be reused, or with FLIT_RMA_REMOTE_DONE when the data is in
 * the owner's memory. Either way src may be reused when the call returns
 * (over packets the data is then in packets, waiting for room as needed).
 *
 * Refused before anything moves: FLIT_ERR_BOUNDS when [offset, offset +
 * len) is not inside the region, FLIT_ERR_DENIED when writing was not
 * granted, FLIT_ERR_REVOKED when the region is known to be unexported,
 * FLIT_ERR_PEER_DOWN when the owner died, FLIT_ERR_INVALID_ARG for unknown
 * flags, src NULL with len > 0, or a dead handle.
 */
FLIT_API flit_status flit_rma_put(flit_rma_remote_t *remote, uint64_t offset,
                                  const void *src, size_t len, unsigned flags,
                                  flit_rma_op_t **op);

/*
 * Copies len bytes of the region at offset into dst. op NULL: returns when
 * they are in dst. Otherwise flit_rma_test / flit_rma_wait say when; dst
 * must stay valid until then. FLIT_RMA_NOTIFY is not for gets
 * (FLIT_ERR_INVALID_ARG); FLIT_ERR_DENIED when reading was not granted;
 * the rest as for flit_rma_put.
 */
FLIT_API flit_status flit_rma_get(flit_rma_remote_t *remote, uint64_t offset, void *dst,
                                  size_t len, unsigned flags, flit_rma_op_t **op);

/*
 * Makes progress once (without blocking) and says whether op is complete.
 * Not complete: FLIT_OK with *done = 0. Complete: *done = 1 and the
 * operation's own status (FLIT_OK, or why it failed); the handle then
 * dies. FLIT_ERR_INVALID_ARG, *done untouched, for a dead handle.
 */
FLIT_API flit_status flit_rma_test(flit_rma_op_t *op, int *done);

/*
 * Makes progress until op is complete, then answers its status (the
 * handle dies), or FLIT_ERR_TIMEOUT after timeout_us microseconds (< 0:
 * never), the handle still valid.
 */
FLIT_API flit_status flit_rma_wait(flit_rma_op_t *op, int64_t timeout_us);

/*
 * Waits until every put and get this endpoint made to rank is complete at
 * rank (puts in its memory, gets in their buffers; handles not yet tested
 * stay valid and complete). Answers the first refusal the owner reported
 * since the last flush for puts whose status no handle will give, or
 * FLIT_ERR_PEER_DOWN when rank died; else FLIT_OK. flit_rma_flush_all
 * does the same for every rank and answers the first failure.
 */
FLIT_API flit_status flit_rma_flush(flit_ep_t *ep, flit_rank_t rank);
FLIT_API flit_status flit_rma_flush_all(flit_ep_t *ep);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_RMA_H */
