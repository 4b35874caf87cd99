/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point to point: requests, matching, the progress engine (see
 * mpi_internal.h for the tag layout and why matching is done here).
 *
 * Sends are eager: the tagged layer has the message on its way before
 * flit_tagged_send returns, so a send request is complete at once, except
 * a synchronous one, which completes when the receiver's acknowledgement
 * (K_ACK with the send's id) comes back; the receiver sends it when a
 * receive matches the message, not when it arrives.
 *
 * Order: messages of one sender arrive in the order sent (flit's rule) and
 * are matched in that order: the unexpected queue holds the ones that
 * arrived before any that is still in the tagged layer, so a new receive
 * looks there first and the progress engine hands later ones to posted
 * receives in the order those were posted. That is MPI's non-overtaking
 * rule per (communicator, source, tag).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* A message no receive had matched when it arrived. */
typedef struct mp_ux {
    int src; /* world rank */
    uint32_t ctx, sync_id;
    int tag, sync;
    void *data;
    size_t len;
    struct mp_ux *next;
} mp_ux;

static mp_ux *ux_head, **ux_tail = &ux_head;
static MPI_Request posted_head, *posted_tail = &posted_head;
static int posted_held; /* posted receives not in the tagged layer */
static MPI_Request spare_head; /* requests to be made again (req_alloc) */
static int spares;
static void release_held(void);
static int direct_withdraw(MPI_Request r);
/* Synchronous sends waiting for their acknowledgement, by id. */
static MPI_Request *sync_wait;
static uint32_t sync_next;
static unsigned long refused; /* messages of no valid kind or id, dropped */
unsigned long mp_progress_count;
/* How long a wait sleeps before it looks for dead peers again. */
#define DEATH_CHECK_US 100000
uint32_t mp_coll_seq;

int mp_p2p_init(void)
{
    sync_wait = calloc(NSYNC, sizeof *sync_wait);
    return sync_wait ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

void mp_p2p_fini(void)
{
    for (MPI_Request r = posted_head; r; r = r->next) /* the program's leftovers */
        if (r->treq && !direct_withdraw(r))
            flit_tagged_wait(&r->treq, DEATH_CHECK_US, NULL);
    while (ux_head) {
        mp_ux *u = ux_head;
        ux_head = u->next;
        free(u->data);
        free(u);
    }
    ux_tail = &ux_head;
    while (spare_head) {
        MPI_Request r = spare_head;
        spare_head = r->next;
        free(r);
    }
    spares = 0;
    free(sync_wait);
    sync_wait = NULL;
}

/* ---- requests ---- */

/* Fills a request (its memory the caller's: the heap, or the stack of a
   blocking call) and takes its references to type and communicator. */
static void req_init(MPI_Request r, enum mp_req_kind kind, MPI_Comm comm, uint32_t ctx,
                     void *buf, int count, MPI_Datatype type, int peer, int tag)
{
    /* Field by field: a compound literal clears the whole struct first
       with a string instruction, which took more of an MPI_Isend on an
       AMD host than the rest of the call. */
    r->kind = kind, r->comm = comm, r->ctx = ctx, r->buf = buf, r->count = count;
    r->type = type, r->peer = peer, r->tag = tag;
    r->persistent = r->active = r->complete = r->cancelled = r->sync = 0;
    r->pack = NULL, r->data = NULL, r->gather = 0, r->iov = NULL;
    r->sync_id = 0, r->orphan = 0, r->held = 0;
    r->status = (MPI_Status){.MPI_SOURCE = 0};
    r->next = r->order_next = NULL, r->treq = NULL;
    r->bytes = mp_type_bytes(type, count);
    r->contig = mp_type_contig(type, count);
    if (!type->predefined)
        type->refs++;
    mp_comm_hold(comm);
}

/*
 * Requests given back wait on a list of their own to be taken again
 * before the heap is asked: a window of 256 MPI_Isend requests freed by
 * MPI_Waitall and made again went through malloc's small bins, 28% of the
 * sender's time in bench/mpi_pingpong.c's message rate. Every call that
 * makes or frees one runs under the library's lock (MP_LOCKED), so the
 * list is a plain one. It keeps up to SPARE_MAX; MPI_Finalize empties it.
 * Under AddressSanitizer it keeps none, so that a request used after it
 * was freed is still caught.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SPARE_MAX 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARE_MAX 0
#endif
#endif
#ifndef SPARE_MAX
#define SPARE_MAX 1024
#endif

static MPI_Request req_alloc(void)
{
    MPI_Request r = spare_head;
    if (!r)
        return malloc(sizeof *r);
    spare_head = r->next;
    spares--;
    return r;
}

static void req_dealloc(MPI_Request r)
{
    if (spares == SPARE_MAX) {
        free(r);
        return;
    }
    r->next = spare_head;
    spare_head = r;
    spares++;
}

static MPI_Request req_new(enum mp_req_kind kind, MPI_Comm comm, uint32_t ctx, void *buf,
                           int count, MPI_Datatype type, int peer, int tag)
{
    MPI_Request r = req_alloc();
    if (r)
        req_init(r, kind, comm, ctx, buf, count, type, peer, tag);
    return r;
}

/* Gives back what req_init took, and the packing buffer. */
static void req_release(MPI_Request r)
{
    mp_type_release(r->type);
    mp_comm_release(r->comm);
    free(r->pack);
    free(r->iov);
}

static void req_free(MPI_Request r)
{
    req_release(r);
    req_dealloc(r);
}

/* The status of a request with nothing to say (null, inactive, PROC_NULL). */
static void empty_status(MPI_Status *s, int source)
{
    s->MPI_SOURCE = source;
    s->MPI_TAG = MPI_ANY_TAG;
    s->MPI_ERROR = MPI_SUCCESS;
    s->flit_bytes = 0;
    s->flit_cancelled = 0;
}

static void complete(MPI_Request r)
{
    mp_progress_count++; /* a waiting coroutine may go on (mpi_nbc.c) */
    r->complete = 1;
    if (r->orphan && !r->persistent)
        req_free(r);
    else if (r->orphan)
        r->active = 0;
}

/* ---- delivery ---- */

static int source_matches(MPI_Request r, int src_world)
{
    int cr = r->comm->from_world ? r->comm->from_world[src_world] : -1;
    return cr >= 0 && (r->peer == MPI_ANY_SOURCE || r->peer == cr);
}

static int matches(MPI_Request r, uint32_t ctx, int src_world, int tag)
{
    return r->ctx == ctx && (r->tag == MPI_ANY_TAG || r->tag == tag) &&
           source_matches(r, src_world);
}

static flit_status send_ack(int src_world, uint32_t ctx, uint32_t sync_id)
{
    return flit_tagged_send(mp_tg, flit_rank((uint32_t)src_world),
                            mp_tag(K_ACK, ctx, sync_id, 0), NULL, 0);
}

/* Fills r's status for a message of len bytes of which got were placed. */
static void received(MPI_Request r, int src_world, int tag, size_t len, size_t got)
{
    r->status.MPI_SOURCE = r->comm->from_world[src_world];
    r->status.MPI_TAG = tag;
    r->status.flit_bytes = got;
    r->status.flit_cancelled = 0;
    r->status.MPI_ERROR = len > r->bytes ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

/* Where r's bytes go: the user's buffer itself, or its packing buffer. */
static void *recv_target(MPI_Request r)
{
    if (r->contig)
        return (char *)r->buf + r->type->blocks[0].disp;
    return r->pack;
}

static void recv_finish(MPI_Request r, size_t got)
{
    if (!r->contig)
        mp_unpack(r->pack, got, r->buf, r->count, r->type);
}

/* ---- receives posted in the tagged layer (mpi_order.c says why a
   synchronous send's message still comes through the engine) ---- */

/* How long a wait for such a receive lets the engine's own messages (a
   synchronous send's, acknowledgements, deaths) wait at most. */
#define DIRECT_SLICE_US 1000

/* Takes the receive at link p out of the posted queue. */
static void posted_cut(MPI_Request *p)
{
    MPI_Request r = *p;
    *p = r->next;
    if (!*p)
        posted_tail = p;
    if (r->held) {
        r->held = 0;
        posted_held--;
    }
}

static void posted_unlink(MPI_Request r)
{
    for (MPI_Request *p = &posted_head; *p; p = &(*p)->next) {
        if (*p == r) {
            posted_cut(p);
            return;
        }
    }
}

/* r's receive in the tagged layer ended with st and info. */
static void direct_finish(MPI_Request r, flit_status st, const flit_tagged_info_t *info)
{
    posted_unlink(r);
    received(r, (int)info->source.idx, r->tag, info->length, info->received);
    if (st == FLIT_ERR_PEER_DOWN)
        r->status.MPI_ERROR = MPI_ERR_PROC_FAILED;
    else if (st != FLIT_OK && st != FLIT_ERR_TOO_LARGE)
        r->status.MPI_ERROR = mp_class_of(st);
    complete(r);
}

/* Whether r (posted in the tagged layer) is done; finishes it if so. Polls
   once when it is not. */
static int direct_test(MPI_Request r)
{
    int done = 0;
    flit_tagged_info_t info;
    flit_status st = flit_tagged_test(&r->treq, &done, &info);
    if (done)
        direct_finish(r, st, &info);
    return done;
}

/* Takes r's receive back from the tagged layer: 1, or 0 when a message
   has matched it already (it completes with that one). */
static int direct_withdraw(MPI_Request r)
{
    if (!r->treq || flit_tagged_cancel(&r->treq) != FLIT_OK)
        return !r->treq;
    return 1;
}

/* The posted receives that the tagged layer has completed, finished. */
static void direct_reap(void)
{
    for (MPI_Request r = posted_head, next; r; r = next) {
        next = r->next;
        if (r->treq)
            direct_test(r);
    }
}

/*
 * Data of a non-contiguous type goes gathered from the program's buffer,
 * a piece per run of bytes (flit_tagged_sendv: no packing copy), and is
 * received scattered into it (flit_tagged_irecvv), when its runs are at
 * most GATHER_RUNS and hold GATHER_MIN_RUN bytes each on average (else
 * packed: many short pieces cost more than the copy), or the whole fits
 * the small message the tagged layer copies anyway. A list of up to
 * GATHER_STACK pieces lives on the stack.
 */
#define GATHER_RUNS    1024
#define GATHER_STACK   64
#define GATHER_MIN_RUN 128
#define GATHER_SMALL   256

/* The runs of count elements of t when they go gathered, else 0. */
static int gather_runs(MPI_Datatype t, int count, size_t bytes)
{
    mp_runs it = {0};
    MPI_Aint at;
    size_t len;
    int n = 0;
    while (n <= GATHER_RUNS && mp_type_run(t, count, &it, &at, &len))
        n++;
    if (n > GATHER_RUNS || (bytes > GATHER_SMALL && bytes / (size_t)n < GATHER_MIN_RUN))
        return 0;
    return n;
}

/* r's n runs of bytes in its buffer as pieces. */
static void runs_iov(MPI_Request r, struct iovec *v, int n)
{
    mp_runs it = {0};
    MPI_Aint at;
    size_t len;
    for (int i = 0; i < n && mp_type_run(r->type, r->count, &it, &at, &len); i++)
        v[i] = (struct iovec){.iov_base = (char *)r->buf + at, .iov_len = len};
}

/* Whether r may be posted in the tagged layer: one source, one tag, one
   run of bytes or runs it can scatter into, and no receive posted before
   it (here) that could take the same messages, since the tagged layer
   would serve r first. */
static int direct_ok(MPI_Request r)
{
    if (r->peer < 0 || r->tag == MPI_ANY_TAG)
        return 0;
    if (!r->contig && !gather_runs(r->type, r->count, r->bytes))
        return 0;
    if (posted_held == 0)
        return 1; /* every posted receive is in the tagged layer, before r */
    for (MPI_Request p = posted_head; p; p = p->next)
        if (!p->treq && p->ctx == r->ctx &&
            (p->peer == MPI_ANY_SOURCE || p->peer == r->peer) &&
            (p->tag == MPI_ANY_TAG || p->tag == r->tag))
            return 0;
    return 1;
}

static int direct_post(MPI_Request r)
{
    flit_rank_t from = flit_rank((uint32_t)r->comm->world[r->peer]);
    uint64_t tag = mp_tag(K_DATA, r->ctx, 0, (uint32_t)r->tag);
    if (r->contig)
        return mp_class_of(
            flit_tagged_irecv(mp_tg, from, tag, recv_target(r), r->bytes, &r->treq));
    /* the same runs at every post (a persistent receive's type and count
       stay): the list is made once */
    int n = gather_runs(r->type, r->count, r->bytes);
    if (!r->iov && !(r->iov = malloc((size_t)n * sizeof *r->iov)))
        return MPI_ERR_NO_MEM;
    runs_iov(r, r->iov, n);
    return mp_class_of(flit_tagged_irecvv(mp_tg, from, tag, r->iov, n, &r->treq));
}

/* A message the tagged layer holds goes straight into posted receive r. */
static int take_posted(MPI_Request r, const flit_tagged_info_t *in, int tag, int sync,
                       uint32_t ctx, uint32_t sync_id)
{
    flit_tagged_info_t info;
    flit_status st =
        flit_tagged_recv(mp_tg, in->source, in->tag, recv_target(r), r->bytes, &info);
    if (st != FLIT_OK && st != FLIT_ERR_TOO_LARGE)
        return mp_class_of(st);
    recv_finish(r, info.received);
    received(r, (int)in->source.idx, tag, info.length, info.received);
    if (sync && (st = send_ack((int)in->source.idx, ctx, sync_id)) != FLIT_OK)
        r->status.MPI_ERROR = mp_class_of(st);
    complete(r);
    return MPI_SUCCESS;
}

/* A message no receive matches yet: into the unexpected queue. */
static int take_unexpected(const flit_tagged_info_t *in, int tag, int sync, uint32_t ctx,
                           uint32_t sync_id)
{
    mp_ux *u = calloc(1, sizeof *u);
    void *data = malloc(in->length ? in->length : 1);
    if (!u || !data) {
        free(u);
        free(data);
        return MPI_ERR_NO_MEM;
    }
    flit_tagged_info_t info;
    flit_status st =
        flit_tagged_recv(mp_tg, in->source, in->tag, data, in->length, &info);
    if (st != FLIT_OK) {
        free(u);
        free(data);
        return mp_class_of(st);
    }
    *u = (mp_ux){(int)in->source.idx, ctx, sync_id, tag, sync, data, info.received, NULL};
    *ux_tail = u;
    ux_tail = &u->next;
    return MPI_SUCCESS;
}

static void ack_arrived(const flit_tagged_info_t *in, uint32_t sync_id)
{
    flit_tagged_recv(mp_tg, in->source, in->tag, NULL, 0, NULL);
    MPI_Request r = sync_wait[sync_id];
    if (!r || r->comm->world[r->peer] != (int)in->source.idx) {
        if (refused++ == 0)
            fprintf(stderr,
                    "flit-mpi: rank %u: acknowledgement %u from rank %u for no "
                    "synchronous send of this rank to it; dropped\n",
                    flit_job_rank().idx, sync_id, in->source.idx);
        return;
    }
    sync_wait[sync_id] = NULL;
    mp_order_forget(r);
    complete(r);
    release_held();
}

/* Handles the message the tagged layer reported in *in. */
static int handle(const flit_tagged_info_t *in)
{
    mp_progress_count++;
    uint64_t kind = in->tag >> KIND_SHIFT;
    uint32_t ctx = (uint32_t)(in->tag >> CTX_SHIFT & CTX_MASK);
    uint32_t sync_id = (uint32_t)(in->tag >> SYNC_SHIFT & SYNC_MASK);
    int tag = (int)(uint32_t)in->tag;
    if (kind == K_ACK) {
        ack_arrived(in, sync_id);
        return MPI_SUCCESS;
    }
    if ((kind != K_DATA && kind != K_SYNC) || tag < 0) {
        flit_tagged_recv(mp_tg, in->source, in->tag, NULL, 0, NULL);
        if (refused++ == 0)
            fprintf(stderr,
                    "flit-mpi: rank %u: message of tag %#llx from rank %u is no "
                    "MPI message; dropped\n",
                    flit_job_rank().idx, (unsigned long long)in->tag, in->source.idx);
        return MPI_SUCCESS;
    }
    for (MPI_Request *p = &posted_head; *p; p = &(*p)->next) {
        MPI_Request r = *p;
        if (!matches(r, ctx, (int)in->source.idx, tag))
            continue;
        /* a standard send's message reaches a receive the tagged layer
           holds only there: here, such a receive has taken an earlier one */
        if (r->treq && (kind == K_DATA || !direct_withdraw(r)))
            continue;
        posted_cut(p);
        return take_posted(r, in, tag, kind == K_SYNC, ctx, sync_id);
    }
    return take_unexpected(in, tag, kind == K_SYNC, ctx, sync_id);
}

/* r waited for a process that died: it completes with that error. */
static void failed(MPI_Request r)
{
    empty_status(&r->status, MPI_ANY_SOURCE);
    r->status.MPI_ERROR = MPI_ERR_PROC_FAILED;
    complete(r);
}

/* Whether receive r waits in vain: its source is dead, or (a collective's
   internal receive) any member of its communicator is, since a collective
   needs them all: a rank whose part waits on a live one that gave up on
   the dead one fails too, never waits for ever. */
static int waits_for_dead(MPI_Request r)
{
    if (r->ctx != r->comm->ctx)
        return mp_source_dead(r->comm, MPI_ANY_SOURCE);
    return mp_source_dead(r->comm, r->peer);
}

/* After a death: the posted receives that wait for a dead process and the
   synchronous sends to one fail (mpi_fault.c), and the sends held behind
   those go (to fail too, when their peer is the dead one). A receive the
   tagged layer has matched already completes from there. */
static void fail_dead(void)
{
    for (MPI_Request *p = &posted_head; *p;) {
        MPI_Request r = *p;
        if (!waits_for_dead(r) || !direct_withdraw(r)) {
            p = &r->next;
            continue;
        }
        posted_cut(p);
        failed(r);
    }
    for (uint32_t id = 0; id < NSYNC; id++) {
        MPI_Request r = sync_wait[id];
        if (r && mp_peer_dead(r->comm->world[r->peer])) {
            sync_wait[id] = NULL;
            mp_order_forget(r);
            failed(r);
        }
    }
    release_held();
}

/* Handles every message that has arrived. */
static int poll_messages(void)
{
    for (int i = 0; i < 1024; i++) { /* bounded: the caller comes back */
        flit_tagged_info_t in;
        int found = 0;
        flit_status st = flit_tagged_iprobe(mp_tg, flit_rank(FLIT_ANY_SOURCE),
                                            FLIT_ANY_TAG, &found, &in);
        if (st != FLIT_OK)
            return mp_class_of(st);
        if (!found)
            return MPI_SUCCESS;
        int rc = handle(&in);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* Handles every message that has arrived and finishes the receives the
   tagged layer has completed. */
static int engine_pass(void)
{
    int rc = poll_messages();
    if (!rc)
        direct_reap();
    return rc;
}

/* The same, after acting on a death flit reported. */
static int progress_pass(void)
{
    if (mp_fault_news())
        fail_dead();
    return engine_pass();
}

/* The same, then lets the non-blocking collectives go as far as they can
   (none when called by one of them). */
static int progress_poll(void)
{
    int rc = progress_pass();
    if (!rc)
        mp_nbc_run();
    return rc;
}

int mp_progress(void)
{
    return progress_poll();
}

/* The first receive posted in the tagged layer, or NULL. */
static MPI_Request first_direct(void)
{
    for (MPI_Request r = posted_head; r; r = r->next)
        if (r->treq)
            return r;
    return NULL;
}

/* Waits in the tagged layer for w's message, a slice at most, then looks
   at the engine's own messages; at deaths as often as a wait through the
   engine does (every DEATH_CHECK_US): a collective's receive fails at the
   news of any member's death, and sooner would fail ones whose message
   was only late. */
static int wait_direct(MPI_Request w)
{
    static unsigned slices; /* slices in a row that ended without it */
    flit_tagged_info_t info;
    flit_status st = flit_tagged_wait(&w->treq, DIRECT_SLICE_US, &info);
    if (!w->treq) {
        slices = 0;
        direct_finish(w, st, &info);
        return MPI_SUCCESS;
    }
    if (st != FLIT_ERR_TIMEOUT)
        return mp_class_of(st);
    if (++slices % (DEATH_CHECK_US / DIRECT_SLICE_US) == 0)
        return progress_pass();
    return engine_pass();
}

/* MPI_THREAD_MULTIPLE's wait: a pass, then the lock goes to the other
   threads for a while. */
static int mt_pass(void)
{
    unsigned long before = mp_progress_count;
    int rc = progress_poll();
    mp_mt_pause(mp_progress_count == before);
    return rc;
}

/* What MPI_Probe waits for: a message through the engine. */
static struct flit_mpi_request probe_waiter = {.kind = R_RECV};

/* Waits for one message at least, handles what came. Every request
   completes through a message (sends are complete at once, synchronous
   ones when their acknowledgement arrives, a non-blocking collective when
   its coroutine's messages have), so a caller whose request is not
   complete may wait here. A coroutine does not wait: it hands the thread
   back to whoever resumed it and polls when it is resumed. Nor does the
   thread when a coroutine has moved: what it waits for may be done.
   w: the request the caller waits for, which says where to wait: in the
   tagged layer for a receive posted there; for NULL or a collective, on
   the first such receive (a coroutine's, say) if there is one; else for
   a message through the engine. Under MPI_THREAD_MULTIPLE no wait blocks
   in flit, which would keep the lock: a pass without blocking, then the
   lock is given up for a while (mp_mt_pause). */
static int progress_wait(MPI_Request w)
{
    if (mp_nbc_inside()) {
        mp_nbc_yield();
        return engine_pass(); /* deaths: the waiting thread's */
    }
    if (mp_nbc_run())
        return MPI_SUCCESS;
    if (!w || w->kind == R_COLL)
        w = first_direct();
    if (__builtin_expect(mp_mt, 0))
        return mt_pass();
    if (w && w->treq)
        return wait_direct(w);
    /* a bounded wait: a peer's death (which no message announces) is
       looked at after it */
    flit_tagged_info_t in;
    flit_status st = flit_tagged_probe(mp_tg, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG,
                                       DEATH_CHECK_US, &in);
    if (st == FLIT_ERR_TIMEOUT)
        return progress_pass();
    if (st != FLIT_OK)
        return mp_class_of(st);
    return handle(&in); /* the caller comes back for the others */
}

/* ---- requests of non-blocking collectives (mpi_nbc.c) ---- */

/* Until every non-blocking collective has ended (those whose requests the
   program freed too), or an error. */
int mp_nbc_drain(void)
{
    int rc = MPI_SUCCESS;
    while (mp_nbc_live() && !rc)
        rc = progress_wait(NULL);
    return rc;
}

MPI_Request mp_req_coll(MPI_Comm comm)
{
    MPI_Request r = req_new(R_COLL, comm, comm->ctx + 1, NULL, 0, MPI_BYTE, 0, 0);
    if (r)
        r->active = 1;
    return r;
}

void mp_req_coll_done(MPI_Request r, int rc)
{
    empty_status(&r->status, MPI_ANY_SOURCE);
    r->status.MPI_ERROR = rc;
    complete(r);
}

void mp_req_coll_free(MPI_Request r)
{
    req_free(r);
}

/* ---- starting requests ---- */

/* Takes the message at link p out of the unexpected queue. */
static mp_ux *ux_unlink(mp_ux **p)
{
    mp_ux *u = *p;
    *p = u->next;
    if (ux_tail == &u->next)
        ux_tail = p;
    return u;
}

/* u (out of the queue) into r's buffer; r completes, u is freed. */
static void ux_deliver(MPI_Request r, mp_ux *u)
{
    size_t got = u->len < r->bytes ? u->len : r->bytes;
    if (r->contig && got) /* a zero count's buffer may be NULL */
        memcpy(recv_target(r), u->data, got);
    else
        mp_unpack(u->data, got, r->buf, r->count, r->type);
    received(r, u->src, u->tag, u->len, got);
    flit_status st = u->sync ? send_ack(u->src, u->ctx, u->sync_id) : FLIT_OK;
    if (st != FLIT_OK)
        r->status.MPI_ERROR = mp_class_of(st);
    free(u->data);
    free(u);
    complete(r);
}

static int unexpected_match(MPI_Request r)
{
    for (mp_ux **p = &ux_head; *p; p = &(*p)->next)
        if (matches(r, (*p)->ctx, (*p)->src, (*p)->tag)) {
            ux_deliver(r, ux_unlink(p));
            return 1;
        }
    return 0;
}

static int start_recv(MPI_Request r)
{
    r->active = 1, r->complete = 0, r->cancelled = 0;
    if (r->peer == MPI_PROC_NULL) {
        empty_status(&r->status, MPI_PROC_NULL);
        complete(r);
        return MPI_SUCCESS;
    }
    if (!r->contig && !r->pack && !(r->pack = malloc(r->bytes ? r->bytes : 1)))
        return MPI_ERR_NO_MEM;
    if (unexpected_match(r))
        return MPI_SUCCESS;
    if (waits_for_dead(r)) { /* nothing more will come */
        failed(r);
        return MPI_SUCCESS;
    }
    int direct = direct_ok(r), rc;
    r->treq = NULL;
    r->next = NULL;
    *posted_tail = r;
    posted_tail = &r->next;
    r->held = !direct;
    posted_held += r->held;
    if (direct && (rc = direct_post(r)) != MPI_SUCCESS) {
        posted_unlink(r);
        return rc;
    }
    return MPI_SUCCESS;
}

static int sync_id_take(MPI_Request r)
{
    for (;;) {
        for (uint32_t i = 0; i < NSYNC; i++) {
            uint32_t id = (sync_next + i) % NSYNC;
            if (!sync_wait[id]) {
                sync_wait[id] = r;
                r->sync_id = id;
                sync_next = (id + 1) % NSYNC;
                return MPI_SUCCESS;
            }
        }
        int rc = progress_wait(NULL); /* every id waits for an acknowledgement */
        if (rc)
            return rc;
    }
}

/* A message to rank dest of comm. */
static flit_status send_bytes(MPI_Comm comm, int dest, uint64_t tag, const void *data,
                              size_t bytes)
{
    return flit_tagged_send(mp_tg, flit_rank((uint32_t)comm->world[dest]), tag, data,
                            bytes);
}

static flit_status send_gathered(MPI_Request r, uint64_t tag)
{
    struct iovec stack[GATHER_STACK], *v = stack;
    int n = r->gather;
    if (n > GATHER_STACK && !(v = malloc((size_t)n * sizeof *v)))
        return FLIT_ERR_NO_MEMORY;
    runs_iov(r, v, n);
    flit_status st =
        flit_tagged_sendv(mp_tg, flit_rank((uint32_t)r->comm->world[r->peer]), tag, v, n);
    if (v != stack)
        free(v);
    return st;
}

/* Sends r's message now; a standard send is then complete. */
static int send_now(MPI_Request r)
{
    int rc = r->sync ? sync_id_take(r) : MPI_SUCCESS;
    if (rc)
        return rc;
    uint64_t tag = mp_tag(r->sync ? K_SYNC : K_DATA, r->ctx, r->sync ? r->sync_id : 0,
                          (uint32_t)r->tag);
    flit_status st = r->gather ? send_gathered(r, tag)
                               : send_bytes(r->comm, r->peer, tag, r->data, r->bytes);
    if (st != FLIT_OK) {
        if (r->sync)
            sync_wait[r->sync_id] = NULL;
        return mp_class_of(st);
    }
    if (r->sync)
        mp_order_sync_sent(r);
    else
        complete(r);
    return MPI_SUCCESS;
}

/* Sends what an acknowledgement (or a death) let go; a send that fails
   completes with its error. */
static void release_held(void)
{
    MPI_Request h;
    while ((h = mp_order_next()) != NULL) {
        int rc = send_now(h);
        if (rc) {
            empty_status(&h->status, MPI_ANY_SOURCE);
            h->status.MPI_ERROR = rc;
            complete(h);
        }
    }
}

static int start_send(MPI_Request r)
{
    r->active = 1, r->complete = 0, r->cancelled = 0;
    empty_status(&r->status, MPI_ANY_SOURCE);
    if (r->peer == MPI_PROC_NULL) {
        empty_status(&r->status, MPI_PROC_NULL);
        complete(r);
        return MPI_SUCCESS;
    }
    const void *data = (const char *)r->buf + r->type->blocks[0].disp;
    r->gather = 0;
    if (!r->contig) {
        if ((r->gather = gather_runs(r->type, r->count, r->bytes)) == 0) {
            if (!r->pack && !(r->pack = malloc(r->bytes ? r->bytes : 1)))
                return MPI_ERR_NO_MEM;
            mp_pack(r->buf, r->count, r->type, r->pack);
            data = r->pack;
        }
    }
    r->data = data;
    if (mp_order_must_hold(r)) {
        mp_order_hold(r); /* sent when the synchronous one before it matches */
        return MPI_SUCCESS;
    }
    return send_now(r);
}

static int start(MPI_Request r)
{
    return r->kind == R_SEND ? start_send(r) : start_recv(r);
}

/* ---- argument checks ---- */

int mp_check_buf(const void *buf, int count, MPI_Datatype t)
{
    if (count < 0)
        return MPI_ERR_COUNT;
    if (!mp_type_ok(t))
        return MPI_ERR_TYPE;
    if (!buf && count > 0 && t->size > 0 && t->blocks[0].disp == 0)
        return MPI_ERR_BUFFER;
    return MPI_SUCCESS;
}

int mp_check_send(const void *buf, int count, MPI_Datatype t, int dest, int tag,
                  MPI_Comm comm)
{
    int rc = mp_check_buf(buf, count, t);
    if (rc)
        return rc;
    if (tag < 0 || tag > MPI_TAG_UB_VALUE)
        return MPI_ERR_TAG;
    if (dest != MPI_PROC_NULL && (dest < 0 || dest >= comm->size))
        return MPI_ERR_RANK;
    return MPI_SUCCESS;
}

static int check_recv(const void *buf, int count, MPI_Datatype t, int source, int tag,
                      MPI_Comm comm)
{
    int rc = mp_check_buf(buf, count, t);
    if (rc)
        return rc;
    if (tag < 0 && tag != MPI_ANY_TAG)
        return MPI_ERR_TAG;
    if (source != MPI_PROC_NULL && source != MPI_ANY_SOURCE &&
        (source < 0 || source >= comm->size))
        return MPI_ERR_RANK;
    return MPI_SUCCESS;
}

/* The checks of a point-to-point call: an MPI error class or 0. */
static int check_call(enum mp_req_kind kind, const void *buf, int count, MPI_Datatype t,
                      int peer, int tag, MPI_Comm comm)
{
    if (!mp_comm_ok(comm))
        return MPI_ERR_COMM;
    return kind == R_SEND ? mp_check_send(buf, count, t, peer, tag, comm)
                          : check_recv(buf, count, t, peer, tag, comm);
}

/* A request of a point-to-point call, checked; started unless persistent. */
static int make(enum mp_req_kind kind, int sync, int persistent, const void *buf,
                int count, MPI_Datatype t, int peer, int tag, MPI_Comm comm,
                MPI_Request *out, const char *fn)
{
    MP_CHECK_INIT(fn);
    int rc = check_call(kind, buf, count, t, peer, tag, comm);
    if (!rc && !out)
        rc = MPI_ERR_REQUEST;
    if (rc)
        return mp_err(rc == MPI_ERR_COMM ? MPI_COMM_NULL : comm, rc, fn);
    MPI_Request r = req_new(kind, comm, comm->ctx, (void *)buf, count, t, peer, tag);
    if (!r)
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    r->sync = sync;
    r->persistent = persistent;
    if (!persistent && (rc = start(r)) != MPI_SUCCESS) {
        req_free(r);
        return mp_err(comm, rc, fn);
    }
    *out = r;
    return MPI_SUCCESS;
}

/* ---- completion ---- */

/* Hands a complete request's status out, frees it (or makes a persistent
   one inactive); its error class. */
static int finish(MPI_Request *rp, MPI_Status *status)
{
    MPI_Request r = *rp;
    int rc = r->status.MPI_ERROR;
    if (status)
        *status = r->status;
    if (r->kind == R_RECV && r->cancelled && status)
        status->flit_cancelled = 1;
    if (r->persistent) {
        r->active = 0;
        r->complete = 0;
    } else {
        req_free(r);
        *rp = MPI_REQUEST_NULL;
    }
    return rc;
}

/* Null and inactive requests complete at once with an empty status. */
static int inert(MPI_Request r)
{
    return !r || (r->persistent && !r->active);
}

static int wait_one(MPI_Request *rp, MPI_Status *status)
{
    if (inert(*rp)) {
        if (status)
            empty_status(status, MPI_ANY_SOURCE);
        return MPI_SUCCESS;
    }
    while (!(*rp)->complete) {
        int rc = progress_wait(*rp);
        if (rc)
            return rc;
    }
    return finish(rp, status);
}

static MPI_Comm comm_of(MPI_Request r)
{
    return r && mp_comm_ok(r->comm) ? r->comm : MPI_COMM_NULL;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    MP_LOCKED(PMPI_Wait, (request, status));
    MP_CHECK_INIT("MPI_Wait");
    if (!request)
        return mp_err(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Wait");
    MPI_Comm comm = comm_of(*request);
    return mp_err(comm, wait_one(request, status), "MPI_Wait");
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    MP_LOCKED(PMPI_Test, (request, flag, status));
    MP_CHECK_INIT("MPI_Test");
    if (!request || !flag)
        return mp_err(MPI_COMM_NULL, !request ? MPI_ERR_REQUEST : MPI_ERR_ARG,
                      "MPI_Test");
    MPI_Comm comm = comm_of(*request);
    *flag = 0;
    if (inert(*request)) {
        *flag = 1;
        return wait_one(request, status);
    }
    int rc = (*request)->complete ? MPI_SUCCESS : progress_poll();
    if (rc)
        return mp_err(comm, rc, "MPI_Test");
    if (!(*request)->complete)
        return MPI_SUCCESS;
    *flag = 1;
    return mp_err(comm, finish(request, status), "MPI_Test");
}

static int check_array(int count, MPI_Request *reqs, const char *fn)
{
    if (count < 0 || (count && !reqs))
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, fn);
    return MPI_SUCCESS;
}

/* The first request's communicator that is not null, for errors. */
static MPI_Comm comm_of_array(int count, MPI_Request *reqs)
{
    for (int i = 0; i < count; i++)
        if (comm_of(reqs[i]))
            return comm_of(reqs[i]);
    return MPI_COMM_NULL;
}

/* Finishes every request of the array (all complete or inert). */
static int finish_all(int count, MPI_Request reqs[], MPI_Status statuses[])
{
    int failed = 0;
    for (int i = 0; i < count; i++) {
        MPI_Status s;
        int rc = inert(reqs[i]) ? (empty_status(&s, MPI_ANY_SOURCE), MPI_SUCCESS)
                                : finish(&reqs[i], &s);
        s.MPI_ERROR = rc;
        if (statuses)
            statuses[i] = s;
        failed |= rc != MPI_SUCCESS;
    }
    return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

/* Which of an array's requests a wait for them waits on (progress_wait):
   the first incomplete one posted in the tagged layer; else NULL when one
   is a collective's; else the first incomplete one. */
static MPI_Request wait_target(int count, MPI_Request reqs[])
{
    MPI_Request first = NULL;
    for (int i = 0; i < count; i++) {
        MPI_Request r = reqs[i];
        if (inert(r) || r->complete)
            continue;
        if (r->treq || r->kind == R_COLL)
            return r;
        if (!first)
            first = r;
    }
    return first;
}

static int all_complete(int count, MPI_Request reqs[])
{
    for (int i = 0; i < count; i++)
        if (!inert(reqs[i]) && !reqs[i]->complete)
            return 0;
    return 1;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    MP_LOCKED(PMPI_Waitall, (count, requests, statuses));
    MP_CHECK_INIT("MPI_Waitall");
    int rc = check_array(count, requests, "MPI_Waitall");
    if (rc)
        return rc;
    MPI_Comm comm = comm_of_array(count, requests);
    /* the requests before `first` are complete, and stay so: each pass
       looks from the first that is not (they mostly complete in order) */
    for (int first = 0;;) {
        while (first < count && (inert(requests[first]) || requests[first]->complete))
            first++;
        if (first == count)
            break;
        rc = progress_wait(wait_target(count - first, requests + first));
        if (rc != MPI_SUCCESS)
            return mp_err(comm, rc, "MPI_Waitall");
    }
    return mp_err(comm, finish_all(count, requests, statuses), "MPI_Waitall");
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    MP_LOCKED(PMPI_Testall, (count, requests, flag, statuses));
    MP_CHECK_INIT("MPI_Testall");
    int rc = check_array(count, requests, "MPI_Testall");
    if (rc)
        return rc;
    if (!flag)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Testall");
    MPI_Comm comm = comm_of_array(count, requests);
    *flag = 0;
    if (!all_complete(count, requests) && (rc = progress_poll()) != MPI_SUCCESS)
        return mp_err(comm, rc, "MPI_Testall");
    if (!all_complete(count, requests))
        return MPI_SUCCESS;
    *flag = 1;
    return mp_err(comm, finish_all(count, requests, statuses), "MPI_Testall");
}

/* The index of a complete active request, MPI_UNDEFINED when none is
   active at all, -1 when some are active and none complete. */
static int any_complete(int count, MPI_Request reqs[])
{
    int active = 0;
    for (int i = 0; i < count; i++) {
        if (inert(reqs[i]))
            continue;
        if (reqs[i]->complete)
            return i;
        active = 1;
    }
    return active ? -1 : MPI_UNDEFINED;
}

static int any(int count, MPI_Request requests[], int *index, int *flag,
               MPI_Status *status, int block, const char *fn)
{
    MP_CHECK_INIT(fn);
    int rc = check_array(count, requests, fn);
    if (rc)
        return rc;
    if (!index || !flag)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, fn);
    MPI_Comm comm = comm_of_array(count, requests);
    int i = any_complete(count, requests);
    if (i == -1 && (rc = progress_poll()) != MPI_SUCCESS)
        return mp_err(comm, rc, fn);
    while ((i = any_complete(count, requests)) == -1 && block)
        if ((rc = progress_wait(wait_target(count, requests))) != MPI_SUCCESS)
            return mp_err(comm, rc, fn);
    *flag = i != -1;
    *index = i == -1 ? MPI_UNDEFINED : i;
    if (i < 0) {
        if (i == MPI_UNDEFINED && status)
            empty_status(status, MPI_ANY_SOURCE);
        return MPI_SUCCESS;
    }
    comm = comm_of(requests[i]);
    return mp_err(comm, finish(&requests[i], status), fn);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    MP_LOCKED(PMPI_Waitany, (count, requests, index, status));
    int flag;
    return any(count, requests, index, &flag, status, 1, "MPI_Waitany");
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                MPI_Status *status)
{
    MP_LOCKED(PMPI_Testany, (count, requests, index, flag, status));
    return any(count, requests, index, flag, status, 0, "MPI_Testany");
}

static int some(int count, MPI_Request requests[], int *outcount, int indices[],
                MPI_Status statuses[], int block, const char *fn)
{
    MP_CHECK_INIT(fn);
    int rc = check_array(count, requests, fn);
    if (rc)
        return rc;
    if (!outcount || (count && !indices))
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, fn);
    MPI_Comm comm = comm_of_array(count, requests);
    if (any_complete(count, requests) == -1 && (rc = progress_poll()) != MPI_SUCCESS)
        return mp_err(comm, rc, fn);
    int i;
    while ((i = any_complete(count, requests)) == -1 && block)
        if ((rc = progress_wait(wait_target(count, requests))) != MPI_SUCCESS)
            return mp_err(comm, rc, fn);
    if (i == MPI_UNDEFINED) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    int n = 0, failed = 0;
    for (i = 0; i < count; i++) {
        if (inert(requests[i]) || !requests[i]->complete)
            continue;
        MPI_Status s;
        int e = finish(&requests[i], &s);
        s.MPI_ERROR = e;
        failed |= e != MPI_SUCCESS;
        if (statuses)
            statuses[n] = s;
        indices[n++] = i;
    }
    *outcount = n;
    return mp_err(comm, failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS, fn);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    MP_LOCKED(PMPI_Waitsome, (incount, requests, outcount, indices, statuses));
    return some(incount, requests, outcount, indices, statuses, 1, "MPI_Waitsome");
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    MP_LOCKED(PMPI_Testsome, (incount, requests, outcount, indices, statuses));
    return some(incount, requests, outcount, indices, statuses, 0, "MPI_Testsome");
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    MP_LOCKED(PMPI_Request_get_status, (request, flag, status));
    MP_CHECK_INIT("MPI_Request_get_status");
    if (!flag)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_get_status");
    if (inert(request)) {
        *flag = 1;
        if (status)
            empty_status(status, MPI_ANY_SOURCE);
        return MPI_SUCCESS;
    }
    int rc = request->complete ? MPI_SUCCESS : progress_poll();
    if (rc)
        return mp_err(comm_of(request), rc, "MPI_Request_get_status");
    *flag = request->complete;
    if (*flag && status)
        *status = request->status;
    return MPI_SUCCESS;
}

/* A receive still posted is taken out; anything else completes as it
   would have (eager sends are gone already). */
int MPI_Cancel(MPI_Request *request)
{
    MP_LOCKED(PMPI_Cancel, (request));
    MP_CHECK_INIT("MPI_Cancel");
    if (!request || inert(*request))
        return mp_err(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Cancel");
    MPI_Request r = *request;
    if (r->kind == R_COLL) /* MPI: a collective cannot be cancelled */
        return mp_err(comm_of(r), MPI_ERR_REQUEST, "MPI_Cancel");
    if (r->kind != R_RECV || r->complete)
        return MPI_SUCCESS;
    for (MPI_Request *p = &posted_head; *p; p = &(*p)->next) {
        if (*p != r)
            continue;
        if (!direct_withdraw(r)) /* matched in the tagged layer: completes */
            break;
        posted_cut(p);
        empty_status(&r->status, MPI_ANY_SOURCE);
        r->cancelled = 1;
        complete(r);
        break;
    }
    return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    MP_LOCKED(PMPI_Test_cancelled, (status, flag));
    if (!status || !flag)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Test_cancelled");
    *flag = status->flit_cancelled;
    return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *request)
{
    MP_LOCKED(PMPI_Request_free, (request));
    MP_CHECK_INIT("MPI_Request_free");
    if (!request || !*request)
        return mp_err(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Request_free");
    MPI_Request r = *request;
    *request = MPI_REQUEST_NULL;
    if (!r->active || r->complete) {
        req_free(r);
        return MPI_SUCCESS;
    }
    r->orphan = 1; /* still posted or awaiting its acknowledgement */
    r->persistent = 0;
    return MPI_SUCCESS;
}

/* ---- the calls ---- */

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Isend, (buf, count, datatype, dest, tag, comm, request));
    return make(R_SEND, 0, 0, buf, count, datatype, dest, tag, comm, request,
                "MPI_Isend");
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Irsend, (buf, count, datatype, dest, tag, comm, request));
    return make(R_SEND, 0, 0, buf, count, datatype, dest, tag, comm, request,
                "MPI_Irsend");
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Issend, (buf, count, datatype, dest, tag, comm, request));
    return make(R_SEND, 1, 0, buf, count, datatype, dest, tag, comm, request,
                "MPI_Issend");
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Irecv, (buf, count, datatype, source, tag, comm, request));
    return make(R_RECV, 0, 0, buf, count, datatype, source, tag, comm, request,
                "MPI_Irecv");
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Send_init, (buf, count, datatype, dest, tag, comm, request));
    return make(R_SEND, 0, 1, buf, count, datatype, dest, tag, comm, request,
                "MPI_Send_init");
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Ssend_init, (buf, count, datatype, dest, tag, comm, request));
    return make(R_SEND, 1, 1, buf, count, datatype, dest, tag, comm, request,
                "MPI_Ssend_init");
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                  MPI_Comm comm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Recv_init, (buf, count, datatype, source, tag, comm, request));
    return make(R_RECV, 0, 1, buf, count, datatype, source, tag, comm, request,
                "MPI_Recv_init");
}

int MPI_Start(MPI_Request *request)
{
    MP_LOCKED(PMPI_Start, (request));
    MP_CHECK_INIT("MPI_Start");
    if (!request || !*request || !(*request)->persistent || (*request)->active)
        return mp_err(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Start");
    return mp_err((*request)->comm, start(*request), "MPI_Start");
}

int MPI_Startall(int count, MPI_Request requests[])
{
    MP_LOCKED(PMPI_Startall, (count, requests));
    int rc = check_array(count, requests, "MPI_Startall");
    for (int i = 0; !rc && i < count; i++)
        rc = PMPI_Start(&requests[i]);
    return rc;
}

/* A request that lives on its caller's stack: leaves every queue that
   still names it (its wait failed). */
static void abandon(MPI_Request r)
{
    if (r->treq && !direct_withdraw(r)) /* matched: let it finish first */
        flit_tagged_wait(&r->treq, DEATH_CHECK_US, NULL);
    posted_unlink(r);
    mp_order_forget(r);
    if (r->kind == R_SEND && r->sync && sync_wait[r->sync_id] == r)
        sync_wait[r->sync_id] = NULL;
}

/* Starts r (on the caller's stack) and waits for it; returns its error
   class and fills status. Nothing of r is left anywhere when it returns. */
static int run_local(MPI_Request r, MPI_Status *status)
{
    int rc = start(r);
    while (!rc && !r->complete)
        rc = progress_wait(r);
    if (rc) {
        abandon(r);
    } else {
        rc = r->status.MPI_ERROR;
        if (status)
            *status = r->status;
    }
    req_release(r);
    return rc;
}

/*
 * A blocking receive from one rank (peer, of comm) of the message of flit
 * tag ftag into bytes at buf waits in the tagged layer itself, with no
 * request (flit_tagged_recv_for), when
 * nothing can come between: no receive posted before it, no message the
 * engine holds, no synchronous send or send held behind one (whose
 * acknowledgement the engine must see), no non-blocking collective to
 * drive, and source live (a rank of comm, or MPI_ANY_SOURCE for all of
 * them: a collective's receive fails at any member's death). For a slice
 * (DIRECT_SLICE_US) at most: a synchronous send's message, which comes
 * through the engine, waits no longer than it does for a receive posted
 * there; then the caller's general path. Whether it received: 1, with
 * *st and *info. (8-byte ping-pong, AMD host, 6 alternated rounds: 133 ->
 * 120 ns one way.) recv_quick: MPI_Recv's, of one tag into one run of
 * bytes; *rc its error class and status filled.
 */
static int quick_wait(MPI_Comm comm, int peer, uint64_t ftag, void *buf, size_t bytes,
                      int source, flit_status *st, flit_tagged_info_t *info)
{
    if (peer < 0 || mp_mt || posted_head || ux_head || !mp_order_idle() ||
        mp_nbc_live() || mp_source_dead(comm, source))
        return 0;
    *st = flit_tagged_recv_for(mp_tg, flit_rank((uint32_t)comm->world[peer]), ftag, buf,
                               bytes, DIRECT_SLICE_US, info);
    if (*st == FLIT_ERR_TIMEOUT)
        return 0;
    mp_progress_count++;
    return 1;
}

static int recv_quick(void *buf, int count, MPI_Datatype t, int peer, int tag,
                      MPI_Comm comm, MPI_Status *status, int *rc)
{
    flit_tagged_info_t info;
    flit_status st;
    if (tag < 0 || !mp_type_contig(t, count) ||
        !quick_wait(comm, peer, mp_tag(K_DATA, comm->ctx, 0, (uint32_t)tag),
                    (char *)buf + t->blocks[0].disp, mp_type_bytes(t, count), peer, &st,
                    &info))
        return 0;
    *rc = st == FLIT_OK              ? MPI_SUCCESS
          : st == FLIT_ERR_TOO_LARGE ? MPI_ERR_TRUNCATE
          : st == FLIT_ERR_PEER_DOWN ? MPI_ERR_PROC_FAILED
                                     : mp_class_of(st);
    if (status) {
        status->MPI_SOURCE = peer;
        status->MPI_TAG = tag;
        status->MPI_ERROR = *rc;
        status->flit_bytes =
            st == FLIT_OK || st == FLIT_ERR_TOO_LARGE ? info.received : 0;
        status->flit_cancelled = 0;
    }
    return 1;
}

/* Blocking calls: a request on the stack of this call (no allocation), and
   its wait. */
static int blocking(enum mp_req_kind kind, int sync, void *buf, int count, MPI_Datatype t,
                    int peer, int tag, MPI_Comm comm, MPI_Status *status, const char *fn)
{
    MP_CHECK_INIT(fn);
    int rc = check_call(kind, buf, count, t, peer, tag, comm);
    if (rc)
        return mp_err(rc == MPI_ERR_COMM ? MPI_COMM_NULL : comm, rc, fn);
    if (kind == R_SEND && !sync && peer != MPI_PROC_NULL && mp_type_contig(t, count) &&
        mp_order_idle()) { /* the common case: the bytes go as they lie */
        flit_status st =
            send_bytes(comm, peer, mp_tag(K_DATA, comm->ctx, 0, (uint32_t)tag),
                       (const char *)buf + t->blocks[0].disp, mp_type_bytes(t, count));
        return mp_err(comm, mp_class_of(st), fn);
    }
    if (kind == R_RECV && recv_quick(buf, count, t, peer, tag, comm, status, &rc))
        return mp_err(comm, rc, fn);
    struct flit_mpi_request r;
    req_init(&r, kind, comm, comm->ctx, buf, count, t, peer, tag);
    r.sync = sync;
    return mp_err(comm, run_local(&r, status), fn);
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm)
{
    MP_LOCKED(PMPI_Send, (buf, count, datatype, dest, tag, comm));
    return blocking(R_SEND, 0, (void *)buf, count, datatype, dest, tag, comm, NULL,
                    "MPI_Send");
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm)
{
    MP_LOCKED(PMPI_Rsend, (buf, count, datatype, dest, tag, comm));
    return blocking(R_SEND, 0, (void *)buf, count, datatype, dest, tag, comm, NULL,
                    "MPI_Rsend");
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm)
{
    MP_LOCKED(PMPI_Ssend, (buf, count, datatype, dest, tag, comm));
    return blocking(R_SEND, 1, (void *)buf, count, datatype, dest, tag, comm, NULL,
                    "MPI_Ssend");
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status)
{
    MP_LOCKED(PMPI_Recv, (buf, count, datatype, source, tag, comm, status));
    return blocking(R_RECV, 0, buf, count, datatype, source, tag, comm, status,
                    "MPI_Recv");
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    MP_LOCKED(PMPI_Sendrecv, (sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                              recvcount, recvtype, source, recvtag, comm, status));
    MPI_Request r;
    int rc = make(R_RECV, 0, 0, recvbuf, recvcount, recvtype, source, recvtag, comm, &r,
                  "MPI_Sendrecv");
    if (rc)
        return rc;
    rc = PMPI_Send(sendbuf, sendcount, sendtype, dest, sendtag, comm);
    if (rc) {
        PMPI_Cancel(&r);
        wait_one(&r, MPI_STATUS_IGNORE);
        return rc;
    }
    return mp_err(comm, wait_one(&r, status), "MPI_Sendrecv");
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                         int sendtag, int source, int recvtag, MPI_Comm comm,
                         MPI_Status *status)
{
    MP_LOCKED(PMPI_Sendrecv_replace,
              (buf, count, datatype, dest, sendtag, source, recvtag, comm, status));
    MP_CHECK_INIT("MPI_Sendrecv_replace");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Sendrecv_replace");
    int rc = mp_check_buf(buf, count, datatype);
    if (rc)
        return mp_err(comm, rc, "MPI_Sendrecv_replace");
    size_t bytes = mp_type_bytes(datatype, count);
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy)
        return mp_err(comm, MPI_ERR_NO_MEM, "MPI_Sendrecv_replace");
    mp_pack(buf, count, datatype, copy);
    rc = PMPI_Sendrecv(copy, (int)bytes, MPI_BYTE, dest, sendtag, buf, count, datatype,
                       source, recvtag, comm, status);
    free(copy);
    return rc;
}

/* ---- probes ---- */

/* The link of the first unexpected message of comm from source with tag
   (wildcards allowed), or NULL. */
static mp_ux **ux_find(MPI_Comm comm, int source, int tag)
{
    for (mp_ux **p = &ux_head; *p; p = &(*p)->next) {
        const mp_ux *u = *p;
        int cr = comm->from_world[u->src];
        if (u->ctx == comm->ctx && cr >= 0 &&
            (source == MPI_ANY_SOURCE || source == cr) &&
            (tag == MPI_ANY_TAG || tag == u->tag))
            return p;
    }
    return NULL;
}

static void probe_status(MPI_Comm comm, const mp_ux *u, MPI_Status *status)
{
    if (!status)
        return;
    status->MPI_SOURCE = comm->from_world[u->src];
    status->MPI_TAG = u->tag;
    status->MPI_ERROR = MPI_SUCCESS;
    status->flit_bytes = u->len;
    status->flit_cancelled = 0;
}

/* The checks of a probe's arguments: an error class, or 0. */
static int probe_check(int source, int tag, MPI_Comm comm, const void *flag)
{
    int rc = check_recv(NULL, 0, MPI_BYTE, source, tag, comm);
    return !rc && !flag ? MPI_ERR_ARG : rc;
}

/* The link of a matching unexpected message after a pass of the engine,
   or after waiting for one (block), in *at (NULL: none yet). */
static int probe_find(int source, int tag, MPI_Comm comm, int block, mp_ux ***at)
{
    int rc = MPI_SUCCESS;
    *at = ux_find(comm, source, tag);
    if (!*at && (rc = progress_poll()) == MPI_SUCCESS)
        *at = ux_find(comm, source, tag);
    while (!*at && block && rc == MPI_SUCCESS)
        if ((rc = progress_wait(&probe_waiter)) == MPI_SUCCESS)
            *at = ux_find(comm, source, tag);
    return rc;
}

static int probe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status,
                 int block, const char *fn)
{
    MP_CHECK_INIT(fn);
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
    int rc = probe_check(source, tag, comm, flag);
    if (rc)
        return mp_err(comm, rc, fn);
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        if (status)
            empty_status(status, MPI_PROC_NULL);
        return MPI_SUCCESS;
    }
    mp_ux **at;
    if ((rc = probe_find(source, tag, comm, block, &at)) != MPI_SUCCESS)
        return mp_err(comm, rc, fn);
    *flag = at != NULL;
    if (at)
        probe_status(comm, *at, status);
    return MPI_SUCCESS;
}

/* ---- matched probes (MPI 3.1, 3.8.2): the message found is taken out of
   the queue, so that no other receive or probe (another thread's) can take
   it before MPI_Mrecv does ---- */

struct flit_mpi_message flit_mpi_message_no_proc = {.predefined = 1};

static int mprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                  MPI_Status *status, int block, const char *fn)
{
    MP_CHECK_INIT(fn);
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
    int rc = probe_check(source, tag, comm, flag);
    if (!rc && !message)
        rc = MPI_ERR_ARG;
    if (rc)
        return mp_err(comm, rc, fn);
    *message = MPI_MESSAGE_NULL;
    *flag = 1;
    if (source == MPI_PROC_NULL) {
        *message = MPI_MESSAGE_NO_PROC;
        if (status)
            empty_status(status, MPI_PROC_NULL);
        return MPI_SUCCESS;
    }
    mp_ux **at;
    if ((rc = probe_find(source, tag, comm, block, &at)) != MPI_SUCCESS)
        return mp_err(comm, rc, fn);
    *flag = at != NULL;
    if (!at)
        return MPI_SUCCESS;
    MPI_Message m = calloc(1, sizeof *m);
    if (!m)
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    probe_status(comm, *at, status);
    m->ux = ux_unlink(at);
    m->comm = comm;
    mp_comm_hold(comm);
    *message = m;
    return MPI_SUCCESS;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
               MPI_Status *status)
{
    MP_LOCKED(PMPI_Mprobe, (source, tag, comm, message, status));
    int flag;
    return mprobe(source, tag, comm, &flag, message, status, 1, "MPI_Mprobe");
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status)
{
    MP_LOCKED(PMPI_Improbe, (source, tag, comm, flag, message, status));
    return mprobe(source, tag, comm, flag, message, status, 0, "MPI_Improbe");
}

/* The message into buf: at once, as a receive that found it waiting; out:
   as a request (MPI_Imrecv, complete when returned), else its status. */
static int mrecv(void *buf, int count, MPI_Datatype t, MPI_Message *message,
                 MPI_Status *status, MPI_Request *out, const char *fn)
{
    MP_CHECK_INIT(fn);
    if (!message || !*message)
        return mp_err(MPI_COMM_NULL, MPI_ERR_REQUEST, fn);
    MPI_Message m = *message;
    MPI_Comm comm = m->predefined ? MPI_COMM_SELF : m->comm;
    int rc = mp_check_buf(buf, count, t);
    if (rc)
        return mp_err(comm, rc, fn);
    struct flit_mpi_request local;
    MPI_Request r = out ? req_alloc() : &local;
    if (!r)
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    int src = m->predefined ? MPI_PROC_NULL : comm->from_world[m->ux->src];
    req_init(r, R_RECV, comm, comm->ctx, buf, count, t, src,
             m->predefined ? 0 : m->ux->tag);
    r->active = 1;
    *message = MPI_MESSAGE_NULL;
    if (m->predefined) { /* MPI_MESSAGE_NO_PROC: a receive from MPI_PROC_NULL */
        empty_status(&r->status, MPI_PROC_NULL);
        complete(r);
    } else {
        ux_deliver(r, m->ux);
        mp_comm_release(m->comm);
        free(m);
    }
    if (out) {
        *out = r;
        return MPI_SUCCESS;
    }
    rc = r->status.MPI_ERROR;
    if (status)
        *status = r->status;
    req_release(r);
    return mp_err(comm, rc, fn);
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
              MPI_Status *status)
{
    MP_LOCKED(PMPI_Mrecv, (buf, count, datatype, message, status));
    return mrecv(buf, count, datatype, message, status, NULL, "MPI_Mrecv");
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request)
{
    MP_LOCKED(PMPI_Imrecv, (buf, count, datatype, message, request));
    if (!request)
        return mp_err(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Imrecv");
    return mrecv(buf, count, datatype, message, NULL, request, "MPI_Imrecv");
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    MP_LOCKED(PMPI_Iprobe, (source, tag, comm, flag, status));
    return probe(source, tag, comm, flag, status, 0, "MPI_Iprobe");
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    MP_LOCKED(PMPI_Probe, (source, tag, comm, status));
    int flag;
    return probe(source, tag, comm, &flag, status, 1, "MPI_Probe");
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MP_LOCKED(PMPI_Get_count, (status, datatype, count));
    if (!status || !count)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Get_count");
    if (!mp_type_ok(datatype))
        return mp_err(MPI_COMM_NULL, MPI_ERR_TYPE, "MPI_Get_count");
    if (datatype->size == 0)
        *count = status->flit_bytes == 0 ? 0 : MPI_UNDEFINED;
    else if (status->flit_bytes % datatype->size)
        *count = MPI_UNDEFINED;
    else
        *count = (int)(status->flit_bytes / datatype->size);
    return MPI_SUCCESS;
}

/* ---- collectives' messages ---- */

void mp_coll_begin(MPI_Comm comm)
{
    mp_coll_seq = comm->coll_seq++;
}

/* A collective's internal tag within the call's sequence number: two
   collectives of one communicator in flight at once (non-blocking ones)
   never take each other's messages. */
static uint32_t coll_tag(int tag)
{
    return (mp_coll_seq & COLL_SEQ_MASK) << COLL_TAG_BITS | (uint32_t)tag;
}

int mp_coll_send(MPI_Comm comm, int dest, int tag, const void *buf, size_t bytes)
{
    return mp_class_of(send_bytes(
        comm, dest, mp_tag(K_DATA, comm->ctx + 1, 0, coll_tag(tag)), buf, bytes));
}

/* A collective's internal receive, in r (not started). */
static void coll_recv_init(MPI_Request r, MPI_Comm comm, int src, int tag, void *buf,
                           size_t bytes)
{
    req_init(r, R_RECV, comm, comm->ctx + 1, buf, 0, MPI_BYTE, src, (int)coll_tag(tag));
    r->bytes = bytes; /* bytes of MPI_BYTE, as one run */
}

/* A collective's receive that quick_wait took: its error class (the
   ranks disagreeing on the size is a truncation, as in mp_coll_recv). */
static int coll_quick_rc(flit_status st, const flit_tagged_info_t *info, size_t bytes)
{
    if (st == FLIT_OK)
        return info->received == bytes ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
    return st == FLIT_ERR_TOO_LARGE   ? MPI_ERR_TRUNCATE
           : st == FLIT_ERR_PEER_DOWN ? MPI_ERR_PROC_FAILED
                                      : mp_class_of(st);
}

static int coll_recv_quick(MPI_Comm comm, int src, int tag, void *buf, size_t bytes,
                           int *rc)
{
    flit_status st;
    flit_tagged_info_t info;
    uint64_t ftag = mp_tag(K_DATA, comm->ctx + 1, 0, coll_tag(tag));
    if (!quick_wait(comm, src, ftag, buf, bytes, MPI_ANY_SOURCE, &st, &info))
        return 0;
    *rc = coll_quick_rc(st, &info, bytes);
    return 1;
}

/* A collective's exchange receives its message after sending its own, in
   quick_wait, up to this size (one copy more than a receive posted first,
   when the message arrives before the receive: nothing for small ones). */
#define COLL_QUICK_MAX 1024

int mp_coll_recv(MPI_Comm comm, int src, int tag, void *buf, size_t bytes)
{
    int rc;
    if (coll_recv_quick(comm, src, tag, buf, bytes, &rc))
        return rc;
    struct flit_mpi_request r;
    coll_recv_init(&r, comm, src, tag, buf, bytes);
    rc = run_local(&r, NULL);
    if (!rc && r.status.flit_bytes != bytes)
        rc = MPI_ERR_TRUNCATE; /* the ranks disagree on the size */
    return rc;
}

int mp_coll_sendrecv(MPI_Comm comm, int dest, const void *sbuf, size_t sbytes, int src,
                     void *rbuf, size_t rbytes, int tag)
{
    if (rbytes <= COLL_QUICK_MAX && src >= 0 && !mp_nbc_live() && !mp_mt) {
        int sc = mp_coll_send(comm, dest, tag, sbuf, sbytes), rc;
        if (sc)
            return sc;
        if (coll_recv_quick(comm, src, tag, rbuf, rbytes, &rc))
            return rc;
        return mp_coll_recv(comm, src, tag, rbuf, rbytes);
    }
    struct flit_mpi_request r;
    coll_recv_init(&r, comm, src, tag, rbuf, rbytes);
    int rc = start_recv(&r);
    int sc = rc ? MPI_SUCCESS : mp_coll_send(comm, dest, tag, sbuf, sbytes);
    while (!rc && !r.complete)
        rc = progress_wait(&r);
    if (rc)
        abandon(&r);
    else if ((rc = r.status.MPI_ERROR) == MPI_SUCCESS && r.status.flit_bytes != rbytes)
        rc = MPI_ERR_TRUNCATE;
    req_release(&r);
    return sc ? sc : rc;
}

#define EXCHANGE_STACK                                                                   \
    8 /* receives whose requests mp_coll_exchange keeps on its stack                     \
       */

int mp_coll_exchange(MPI_Comm comm, int nin, const mp_part *in, int nout,
                     const mp_part *out)
{
    /* a few receives' requests on the stack: a calloc and a free cost a
       2-rank MPI_Gather a fifth of its time */
    struct flit_mpi_request stack[EXCHANGE_STACK];
    struct flit_mpi_request *r =
        nin <= EXCHANGE_STACK ? stack : calloc((size_t)nin, sizeof *r);
    if (!r)
        return MPI_ERR_NO_MEM;
    if (r == stack)
        memset(stack, 0, sizeof stack[0] * (size_t)nin);
    int rc = MPI_SUCCESS, started = 0;
    for (; !rc && started < nin; started++) {
        const mp_part *p = &in[started];
        coll_recv_init(&r[started], comm, p->peer, p->tag, p->buf, p->bytes);
        rc = start_recv(&r[started]);
    }
    for (int j = 0; !rc && j < nout; j++)
        if (out[j].peer != MPI_PROC_NULL)
            rc = mp_coll_send(comm, out[j].peer, out[j].tag, out[j].buf, out[j].bytes);
    for (int i = 0; i < started; i++) {
        while (!rc && !r[i].complete)
            rc = progress_wait(&r[i]);
        if (!rc && (rc = r[i].status.MPI_ERROR) == MPI_SUCCESS &&
            in[i].peer != MPI_PROC_NULL && r[i].status.flit_bytes != in[i].bytes)
            rc = MPI_ERR_TRUNCATE; /* the ranks disagree on the size */
    }
    for (int i = 0; i < started; i++) {
        if (!r[i].complete)
            abandon(&r[i]);
        req_release(&r[i]);
    }
    if (r != stack)
        free(r);
    return rc;
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Wait);
MP_PROFILED(MPI_Test);
MP_PROFILED(MPI_Waitall);
MP_PROFILED(MPI_Testall);
MP_PROFILED(MPI_Waitany);
MP_PROFILED(MPI_Testany);
MP_PROFILED(MPI_Waitsome);
MP_PROFILED(MPI_Testsome);
MP_PROFILED(MPI_Request_get_status);
MP_PROFILED(MPI_Cancel);
MP_PROFILED(MPI_Test_cancelled);
MP_PROFILED(MPI_Request_free);
MP_PROFILED(MPI_Isend);
MP_PROFILED(MPI_Irsend);
MP_PROFILED(MPI_Issend);
MP_PROFILED(MPI_Irecv);
MP_PROFILED(MPI_Send_init);
MP_PROFILED(MPI_Ssend_init);
MP_PROFILED(MPI_Recv_init);
MP_PROFILED(MPI_Start);
MP_PROFILED(MPI_Startall);
MP_PROFILED(MPI_Send);
MP_PROFILED(MPI_Rsend);
MP_PROFILED(MPI_Ssend);
MP_PROFILED(MPI_Recv);
MP_PROFILED(MPI_Sendrecv);
MP_PROFILED(MPI_Sendrecv_replace);
MP_PROFILED(MPI_Iprobe);
MP_PROFILED(MPI_Probe);
MP_PROFILED(MPI_Get_count);
MP_PROFILED(MPI_Mprobe);
MP_PROFILED(MPI_Improbe);
MP_PROFILED(MPI_Mrecv);
MP_PROFILED(MPI_Imrecv);
