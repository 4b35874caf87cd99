/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication: windows on flit's RMA (<flit/rma.h>) and active
 * messages (<flit/am.h>).
 *
 * A window is a region each member exports (MPI_Win_allocate's memory comes
 * from flit_rma_alloc: ranks on the host reach it with a memcpy) and every
 * member imports from every other at creation, over a duplicate of the
 * communicator (whose collectives are the window's own). MPI_Put and MPI_Get
 * are flit_rma_put / flit_rma_get of the bytes, straight from and into the
 * program's buffer when its type is contiguous (else packed), one per run
 * of adjacent bytes of the target's type.
 *
 * Accumulates (MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op,
 * MPI_Compare_and_swap) are executed by the target, in the handler of an
 * active message carrying the origin's data: one process runs a window's
 * handlers one at a time, so every accumulate is atomic against every other
 * one to that window (per element and whole). The reply carries the fetched
 * values, or just the verdict; a fetching call waits for its reply, a plain
 * accumulate is counted and waited for by the next fence, flush or unlock.
 *
 * Passive target: the target keeps a lock manager per window (holders, and
 * a FIFO of waiting requests). A lock request is queued and answered with
 * the grant or not yet; a request not granted asks again (a poll, answered
 * by the handler from the same queue) until it is: handlers may only reply,
 * so a release cannot tell the next waiter itself. Handlers run when the
 * target enters the library (any call that makes progress): as in MPIs
 * without an asynchronous progress thread, a target computing outside MPI
 * delays accumulates and locks aimed at it (puts and gets on shared memory
 * do not need it).
 *
 * Everything received is checked (window, sender a member, offsets inside
 * the window, op and type codes): a bad request is answered with an error
 * class, never applied.
 *
 * Here: windows (creation, freeing, dynamic windows) and the origin's
 * requests and their replies. mpi_win_ops.c: put, get and the accumulates
 * at the origin; mpi_win_sync.c: fence, locks, flush, post/start/complete/
 * wait; mpi_win_target.c: the target's handler, accumulate executor and
 * lock manager; mpi_win.h: what they share, the messages' format included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <flit/am.h>
#include <flit/rma.h>

#include "mpi_internal.h"
#include "mpi_win.h"

MPI_Win *mp_wins; /* by id */
int mp_nwins;
flit_handler_t mp_h_req, mp_h_rep;

/* The one wait a fetching call, a lock or an unlock has outstanding. */
static struct {
    uint32_t seq, from; /* from: the world rank asked */
    int done, status, granted;
    void *result; /* fetched bytes go there */
    size_t bytes;
} waiter;

int mp_win_ok(MPI_Win w)
{
    return w && w->id >= 0 && w->id < mp_nwins && mp_wins[w->id] == w;
}

int mp_win_err(MPI_Win w, int code, const char *fn)
{
    if (!mp_win_ok(w))
        return mp_err(MPI_COMM_NULL, code, fn);
    if (code != MPI_SUCCESS && mp_errh_call_win(w->errh, w, &code))
        return code;
    return mp_err_handler(w->errh, code, fn);
}

/* ---- the origin's side ---- */

static void on_reply(flit_token_t *tok, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(tok).idx;
    if (nargs != R_NARGS || args[R_OWIN] >= (uint32_t)mp_nwins || !mp_wins[args[R_OWIN]])
        goto bad;
    MPI_Win w = mp_wins[args[R_OWIN]];
    int status = (int)args[R_STATUS];
    if (status < 0 || status > MPI_ERR_LASTCODE)
        status = MPI_ERR_OTHER;
    if (args[R_SEQ] == 0) { /* a plain accumulate's verdict */
        if (src >= flit_job_size() || w->comm->from_world[src] < 0)
            goto bad;
        struct mp_win_peer *p = &w->peer[w->comm->from_world[src]];
        if (p->pending == 0)
            goto bad;
        p->pending--;
        if (status && !w->async_err)
            w->async_err = status;
        return;
    }
    if (args[R_SEQ] != waiter.seq || src != waiter.from || waiter.done)
        goto bad;
    waiter.done = 1;
    waiter.status = status;
    waiter.granted = args[R_GRANTED] != 0;
    if (status == MPI_SUCCESS && waiter.result) {
        if (nbytes != waiter.bytes)
            waiter.status = MPI_ERR_INTERN;
        else
            memcpy(waiter.result, buf, nbytes);
    }
    return;
bad:
    fprintf(stderr, "flit-mpi: one-sided reply from rank %u unexpected; ignored\n", src);
}

flit_status mp_win_init(void)
{
    flit_handler_t h;
    flit_status st = flit_ep_reserve_handlers(mp_ep, 2, &h);
    if (st != FLIT_OK)
        return st;
    mp_h_req = h;
    mp_h_rep = flit_handler((uint16_t)(h.idx + 1));
    st = flit_am_register(mp_ep, mp_h_req, mp_win_on_request, NULL);
    if (st == FLIT_OK)
        st = flit_am_register(mp_ep, mp_h_rep, on_reply, NULL);
    return st;
}

flit_handler_t mp_win_request_handler(void)
{
    return mp_h_req;
}

flit_handler_t mp_win_reply_handler(void)
{
    return mp_h_rep;
}

flit_am_handler_fn mp_win_reply_fn(void)
{
    return on_reply;
}

/* One step of waiting for something from world rank peer: handlers run,
   the engine makes a pass. */
int mp_win_wait_step(int peer)
{
    unsigned long before = mp_progress_count;
    flit_status st = mp_mt ? flit_poll(mp_ep) : flit_wait(mp_ep, 1000);
    if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
        return mp_class_of(st);
    int rc = mp_progress();
    mp_mt_pause(mp_progress_count == before); /* not blocked in flit: MULTIPLE */
    if (rc)
        return rc;
    return peer >= 0 && mp_peer_dead(peer) ? MPI_ERR_PROC_FAILED : MPI_SUCCESS;
}

flit_status mp_win_send_request(int world, const uint32_t *args, const void *data,
                                size_t bytes)
{
    flit_rank_t to = flit_rank((uint32_t)world);
    if (bytes == 0)
        return flit_am_short(mp_ep, to, mp_h_req, args, A_NARGS, 0);
    return flit_am_medium(mp_ep, to, mp_h_req, data, bytes, args, A_NARGS, 0);
}

/* Sends a request to rank of w and waits for its reply (fetched bytes into
   result); the reply's status, or an error class. */
int mp_win_request_wait(MPI_Win w, int rank, uint32_t *args, const void *data,
                        size_t bytes, void *result, size_t rbytes, int *granted)
{
    static uint32_t seq;
    if (++seq == 0)
        seq = 1;
    waiter.seq = seq;
    waiter.done = 0;
    waiter.status = MPI_SUCCESS;
    waiter.granted = 0;
    waiter.result = result;
    waiter.bytes = rbytes;
    args[A_WIN] = w->peer[rank].win_id;
    args[A_OWIN] = (uint32_t)w->id;
    args[A_SEQ] = seq;
    int world = w->comm->world[rank];
    waiter.from = (uint32_t)world;
    flit_status st = mp_win_send_request(world, args, data, bytes);
    if (st != FLIT_OK)
        return mp_class_of(st);
    while (!waiter.done) {
        int rc = mp_win_wait_step(world);
        if (rc)
            return rc;
    }
    if (granted)
        *granted = waiter.granted;
    return waiter.status;
}

/* Until every accumulate sent to rank (every rank: -1) is answered, and its
   puts and gets are complete at the target. */
int mp_win_complete_at(MPI_Win w, int rank)
{
    int lo = rank < 0 ? 0 : rank, hi = rank < 0 ? w->comm->size : rank + 1;
    for (int r = lo; r < hi; r++) {
        struct mp_win_peer *p = &w->peer[r];
        int world = w->comm->world[r];
        if (p->remote || p->ndyn) {
            flit_status st = flit_rma_flush(mp_ep, flit_rank((uint32_t)world));
            if (st != FLIT_OK)
                return mp_class_of(st);
        }
        while (p->pending) {
            int rc = mp_win_wait_step(world);
            if (rc)
                return rc;
        }
    }
    int rc = w->async_err;
    w->async_err = 0;
    return rc;
}

/* ---- creation, destruction ---- */

static void win_destroy(MPI_Win w)
{
    if (w->peer)
        for (int r = 0; r < w->comm->size; r++) {
            if (w->peer[r].remote)
                flit_rma_release(w->peer[r].remote);
            for (int i = 0; i < w->peer[r].ndyn; i++)
                flit_rma_release(w->peer[r].dyn[i].remote);
            free(w->peer[r].dyn);
        }
    for (int i = 0; i < w->natt; i++)
        flit_rma_unexport(w->att[i].region);
    free(w->att);
    if (w->region)
        flit_rma_unexport(w->region);
    if (w->allocated && w->base)
        flit_rma_free(mp_ep, w->base);
    if (w->shm_remote)
        flit_rma_release(w->shm_remote);
    if (w->shm_region)
        flit_rma_unexport(w->shm_region);
    if (w->shm_mem)
        flit_rma_free(mp_ep, w->shm_mem);
    if (w->id >= 0 && w->id < mp_nwins && mp_wins[w->id] == w)
        mp_wins[w->id] = NULL;
    free(w->peer);
    free(w->name);
    free(w->holds);
    free(w->waiting);
    free(w->queue);
    if (w->comm)
        PMPI_Comm_free(&w->comm);
    free(w);
}

/* A free slot of mp_wins[] for w. */
static int win_slot(MPI_Win w)
{
    for (int i = 0; i < mp_nwins; i++)
        if (!mp_wins[i]) {
            mp_wins[i] = w;
            return i;
        }
    MPI_Win *n = realloc(mp_wins, (size_t)(mp_nwins + 8) * sizeof *n);
    if (!n)
        return -1;
    mp_wins = n;
    for (int i = mp_nwins; i < mp_nwins + 8; i++)
        mp_wins[i] = NULL;
    mp_nwins += 8;
    mp_wins[mp_nwins - 8] = w;
    return mp_nwins - 8;
}

/* What each member tells the others at creation. */
typedef struct mp_win_info {
    uint64_t region, size;
    uint32_t win_id;
    int32_t disp_unit, ok;
} mp_win_info;

/* Collective over comm: w (base, size, disp_unit, allocated set) exported,
   known to every member, every other member's window imported. */
static int win_setup(MPI_Win w, MPI_Comm comm)
{
    w->id = -1;
    w->excl = -1;
    w->errh = MPI_ERRORS_ARE_FATAL;
    int rc = PMPI_Comm_dup(comm, &w->comm);
    if (rc)
        return rc;
    w->comm->errh = MPI_ERRORS_RETURN;
    int n = w->comm->size;
    w->peer = calloc((size_t)n, sizeof *w->peer);
    w->holds = calloc((size_t)n, sizeof *w->holds);
    w->waiting = calloc((size_t)n, sizeof *w->waiting);
    w->queue = calloc((size_t)n, sizeof *w->queue);
    flit_rank_t *allowed = calloc((size_t)n, sizeof *allowed);
    mp_win_info *all = calloc((size_t)n, sizeof *all);
    mp_win_info me = {.size = w->size, .disp_unit = w->disp_unit, .ok = 1};
    if (!w->peer || !w->holds || !w->waiting || !w->queue || !allowed || !all)
        me.ok = 0;
    if (me.ok && (w->id = win_slot(w)) < 0)
        me.ok = 0;
    me.win_id = (uint32_t)w->id;
    if (me.ok && w->size > 0) {
        for (int r = 0; r < n; r++)
            allowed[r] = flit_rank((uint32_t)w->comm->world[r]);
        if (flit_rma_export(mp_ep, w->base, w->size, FLIT_RMA_READ | FLIT_RMA_WRITE,
                            allowed, (size_t)n, &w->region) != FLIT_OK)
            me.ok = 0;
        else
            me.region = flit_rma_region_id(w->region);
    }
    free(allowed);
    rc = PMPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE,
                        w->comm);
    for (int r = 0; !rc && r < n; r++)
        if (!all[r].ok)
            rc = MPI_ERR_NO_MEM;
    for (int r = 0; !rc && r < n; r++) {
        struct mp_win_peer *p = &w->peer[r];
        p->region = all[r].region;
        p->size = all[r].size;
        p->win_id = all[r].win_id;
        p->disp_unit = all[r].disp_unit;
        if (p->disp_unit <= 0 || p->win_id >= INT32_MAX)
            rc = MPI_ERR_OTHER;
        else if (p->region &&
                 flit_rma_import(mp_ep, flit_rank((uint32_t)w->comm->world[r]), p->region,
                                 &p->remote) != FLIT_OK)
            rc = MPI_ERR_OTHER;
        /* the bounds are the region's, as the import learned them */
        if (!rc && p->size > (p->remote ? flit_rma_remote_size(p->remote) : 0))
            p->size = p->remote ? flit_rma_remote_size(p->remote) : 0;
    }
    free(all);
    /* every member's imports done, or every one failing together */
    int bad = rc != 0, any = 0;
    if (PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, w->comm) != MPI_SUCCESS)
        any = 1;
    return any ? (rc ? rc : MPI_ERR_OTHER) : MPI_SUCCESS;
}

/* info's hints (no_locks, accumulate_ordering ...) are accepted and none
   is needed: every window serves every use. */
static int create_check(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                        void *out)
{
    (void)info;
    if (!mp_comm_ok(comm))
        return MPI_ERR_COMM;
    if (size < 0)
        return MPI_ERR_SIZE;
    if (disp_unit <= 0)
        return MPI_ERR_DISP;
    if (!out)
        return MPI_ERR_ARG;
    return MPI_SUCCESS;
}

/* A new window, size and disp_unit set, once the checks of a creation
   pass (extra: the caller's own, an error class or 0); else NULL, the
   error reported, its class in *rc. */
static MPI_Win win_new(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                       MPI_Win *win, int extra, const char *fn, int *rc)
{
    *rc = create_check(size, disp_unit, info, comm, win);
    if (!*rc)
        *rc = extra;
    if (*rc) {
        *rc = mp_err(mp_comm_ok(comm) ? comm : MPI_COMM_NULL, *rc, fn);
        return NULL;
    }
    MPI_Win w = calloc(1, sizeof *w);
    if (!w) {
        *rc = mp_err(comm, MPI_ERR_NO_MEM, fn);
        return NULL;
    }
    w->size = (size_t)size;
    w->disp_unit = disp_unit;
    return w;
}

/* The end of a creation: w to *win, or (rc an error class) destroyed, the
   error reported. */
static int win_made(MPI_Win w, int rc, MPI_Comm comm, MPI_Win *win, const char *fn)
{
    if (rc) {
        win_destroy(w);
        return mp_err(comm, rc, fn);
    }
    *win = w;
    return MPI_SUCCESS;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win)
{
    MP_LOCKED(PMPI_Win_create, (base, size, disp_unit, info, comm, win));
    const char *fn = "MPI_Win_create";
    MP_CHECK_INIT(fn);
    int rc;
    MPI_Win w = win_new(size, disp_unit, info, comm, win,
                        size > 0 && !base ? MPI_ERR_BUFFER : 0, fn, &rc);
    if (!w)
        return rc;
    w->base = base;
    return win_made(w, win_setup(w, comm), comm, win, fn);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                     void *baseptr, MPI_Win *win)
{
    MP_LOCKED(PMPI_Win_allocate, (size, disp_unit, info, comm, baseptr, win));
    const char *fn = "MPI_Win_allocate";
    MP_CHECK_INIT(fn);
    int rc;
    MPI_Win w =
        win_new(size, disp_unit, info, comm, win, baseptr ? 0 : MPI_ERR_ARG, fn, &rc);
    if (!w)
        return rc;
    /* a failure to allocate is told to the others by win_setup */
    if (size > 0 && flit_rma_alloc(mp_ep, (size_t)size, &w->base) == FLIT_OK) {
        w->allocated = 1;
    } else if (size > 0) {
        w->size = 0;
        rc = MPI_ERR_NO_MEM;
    }
    int rc2 = win_setup(w, comm);
    if ((rc = win_made(w, rc ? rc : rc2, comm, win, fn)) == MPI_SUCCESS)
        *(void **)baseptr = w->base;
    return rc;
}

/* ---- shared memory (MPI 3.1, 11.2.3) ---- */

/* Collective over comm: the block holding every member's segment, in rank
   order and contiguous (MPI's default; alloc_shared_noncontig changes
   nothing), allocated at rank 0 and mapped by the others; this member's
   segment's offset in it to *off. MPI_ERR_NO_MEM when rank 0 has no room,
   MPI_ERR_RMA_SHARED when a member cannot map it (a member not on this
   host, or reached other than through shared memory); every member
   answers the same. */
static int shared_block(MPI_Win w, MPI_Comm comm, MPI_Aint *off)
{
    MPI_Aint mine = (MPI_Aint)w->size, total = 0;
    int rc = PMPI_Allreduce(&mine, &total, 1, MPI_AINT, MPI_SUM, comm);
    if (!rc)
        rc = PMPI_Exscan(&mine, off, 1, MPI_AINT, MPI_SUM, comm);
    if (comm->rank == 0)
        *off = 0; /* Exscan leaves it alone */
    uint64_t id = 0;
    if (!rc && comm->rank == 0) {
        size_t len = total > 0 ? (size_t)total : 1;
        flit_rank_t *allowed = calloc((size_t)comm->size, sizeof *allowed);
        for (int r = 0; allowed && r < comm->size; r++)
            allowed[r] = flit_rank((uint32_t)comm->world[r]);
        if (allowed && flit_rma_alloc(mp_ep, len, &w->shm_mem) == FLIT_OK &&
            flit_rma_export(mp_ep, w->shm_mem, len, FLIT_RMA_READ | FLIT_RMA_WRITE,
                            allowed, (size_t)comm->size, &w->shm_region) == FLIT_OK) {
            id = flit_rma_region_id(w->shm_region);
            w->shm_base = w->shm_mem;
        }
        free(allowed);
    }
    if (!rc)
        rc = PMPI_Bcast(&id, 1, MPI_UINT64_T, 0, comm);
    if (!rc && id && comm->rank != 0 &&
        flit_rma_import(mp_ep, flit_rank((uint32_t)comm->world[0]), id, &w->shm_remote) ==
            FLIT_OK)
        w->shm_base = flit_rma_remote_addr(w->shm_remote);
    int bad = rc || !w->shm_base, any = 1;
    if (PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        any = 1;
    if (!any)
        return MPI_SUCCESS;
    return rc ? rc : id ? MPI_ERR_RMA_SHARED : MPI_ERR_NO_MEM;
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win)
{
    MP_LOCKED(PMPI_Win_allocate_shared, (size, disp_unit, info, comm, baseptr, win));
    const char *fn = "MPI_Win_allocate_shared";
    MP_CHECK_INIT(fn);
    int rc;
    MPI_Win w =
        win_new(size, disp_unit, info, comm, win, baseptr ? 0 : MPI_ERR_ARG, fn, &rc);
    if (!w)
        return rc;
    w->shm = 1;
    MPI_Aint off = 0;
    if ((rc = shared_block(w, comm, &off)) == MPI_SUCCESS) {
        w->base = w->shm_base + off;
        rc = win_setup(w, comm);
    }
    if ((rc = win_made(w, rc, comm, win, fn)) == MPI_SUCCESS)
        *(void **)baseptr = w->size ? w->base : NULL;
    return rc;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                         void *baseptr)
{
    MP_LOCKED(PMPI_Win_shared_query, (win, rank, size, disp_unit, baseptr));
    const char *fn = "MPI_Win_shared_query";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!win->shm)
        return mp_win_err(win, MPI_ERR_RMA_FLAVOR, fn);
    if (!size || !disp_unit || !baseptr)
        return mp_win_err(win, MPI_ERR_ARG, fn);
    int n = win->comm->size;
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= n))
        return mp_win_err(win, MPI_ERR_RANK, fn);
    /* MPI_PROC_NULL: the lowest rank with memory */
    int r = rank == MPI_PROC_NULL ? 0 : rank;
    while (rank == MPI_PROC_NULL && r < n - 1 && win->peer[r].size == 0)
        r++;
    MPI_Aint off = 0;
    for (int k = 0; k < r; k++)
        off += (MPI_Aint)win->peer[k].size;
    *size = (MPI_Aint)win->peer[r].size;
    *disp_unit = win->peer[r].disp_unit;
    *(void **)baseptr = *size ? win->shm_base + off : NULL;
    return MPI_SUCCESS;
}

int MPI_Win_free(MPI_Win *win)
{
    MP_LOCKED(PMPI_Win_free, (win));
    const char *fn = "MPI_Win_free";
    MP_CHECK_INIT(fn);
    if (!win || !mp_win_ok(*win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    MPI_Win w = *win;
    if (w->nlocked || w->accessing || w->exposing)
        return mp_win_err(w, MPI_ERR_RMA_SYNC, fn);
    int rc = mp_attr_win_clear(w); /* the delete functions, first */
    if (rc)
        return mp_win_err(w, rc, fn);
    rc = mp_win_complete_at(w, -1);
    /* nobody reaches the memory any more once all are here */
    int rc2 = PMPI_Barrier(w->comm);
    MPI_Errhandler errh = w->errh;
    win_destroy(w);
    *win = MPI_WIN_NULL;
    rc = rc ? rc : rc2;
    if (rc && mp_errh_call_win(errh, MPI_WIN_NULL, &rc)) /* the window is gone */
        return rc;
    return mp_err_handler(errh, rc, fn);
}

int MPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
    MP_LOCKED(PMPI_Win_get_group, (win, group));
    const char *fn = "MPI_Win_get_group";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!group)
        return mp_win_err(win, MPI_ERR_ARG, fn);
    return mp_win_err(win, PMPI_Comm_group(win->comm, group), fn);
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    MP_LOCKED(PMPI_Win_set_errhandler, (win, errhandler));
    const char *fn = "MPI_Win_set_errhandler";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!mp_errh_for_win(errhandler))
        return mp_win_err(win, MPI_ERR_ARG, fn);
    win->errh = errhandler;
    return MPI_SUCCESS;
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    MP_LOCKED(PMPI_Win_get_errhandler, (win, errhandler));
    const char *fn = "MPI_Win_get_errhandler";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!errhandler)
        return mp_win_err(win, MPI_ERR_ARG, fn);
    *errhandler = win->errh;
    return MPI_SUCCESS;
}

/* ---- dynamic windows ---- */

/* Forgets the import r of rank's (its region was detached). */
void mp_win_dyn_forget(MPI_Win w, int rank, flit_rma_remote_t *r)
{
    struct mp_win_peer *p = &w->peer[rank];
    for (int i = 0; i < p->ndyn; i++)
        if (p->dyn[i].remote == r) {
            flit_rma_release(r);
            p->dyn[i] = p->dyn[--p->ndyn];
            return;
        }
}

/* The import of rank's region holding [addr, addr + bytes), and the offset
   there: from those imported before, else asked of the target (K_FIND)
   and imported. MPI_ERR_DISP when nothing attached there holds it. */
int mp_win_dyn_find(MPI_Win w, int rank, uint64_t addr, size_t bytes,
                    flit_rma_remote_t **r, uint64_t *off)
{
    struct mp_win_peer *p = &w->peer[rank];
    for (int i = 0; i < p->ndyn; i++) {
        mp_attach *a = &p->dyn[i];
        if (addr >= a->base && addr - a->base <= a->size &&
            bytes <= a->size - (addr - a->base)) {
            *r = a->remote;
            *off = addr - a->base;
            return MPI_SUCCESS;
        }
    }
    mp_found f;
    uint32_t args[A_NARGS] = {[A_KIND] = K_FIND,
                              [A_OFF_LO] = (uint32_t)addr,
                              [A_OFF_HI] = (uint32_t)(addr >> 32),
                              [A_COUNT] = (uint32_t)bytes,
                              [A_TYPE] = (uint32_t)((uint64_t)bytes >> 32)};
    int rc = mp_win_request_wait(w, rank, args, NULL, 0, &f, sizeof f, NULL);
    if (rc)
        return rc;
    if (addr < f.base || addr - f.base > f.size || bytes > f.size - (addr - f.base))
        return MPI_ERR_INTERN; /* an answer that does not hold it */
    mp_attach *n = realloc(p->dyn, (size_t)(p->ndyn + 1) * sizeof *n);
    if (!n)
        return MPI_ERR_NO_MEM;
    p->dyn = n;
    mp_attach *a = &n[p->ndyn];
    *a = (mp_attach){.base = f.base, .size = f.size, .id = f.id};
    flit_status st = flit_rma_import(mp_ep, flit_rank((uint32_t)w->comm->world[rank]),
                                     f.id, &a->remote);
    if (st != FLIT_OK)
        return st == FLIT_ERR_REVOKED ? MPI_ERR_DISP : mp_class_of(st);
    if (flit_rma_remote_size(a->remote) < a->size)
        a->size = flit_rma_remote_size(a->remote);
    p->ndyn++;
    if (a->size < bytes)
        return MPI_ERR_DISP;
    *r = a->remote;
    *off = addr - a->base;
    return MPI_SUCCESS;
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    MP_LOCKED(PMPI_Win_create_dynamic, (info, comm, win));
    const char *fn = "MPI_Win_create_dynamic";
    MP_CHECK_INIT(fn);
    int rc;
    MPI_Win w = win_new(0, 1, info, comm, win, 0, fn, &rc);
    if (!w)
        return rc;
    w->dynamic = 1;
    return win_made(w, win_setup(w, comm), comm, win, fn);
}

/* Local: exports [base, base + size) to the window's members. */
int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    MP_LOCKED(PMPI_Win_attach, (win, base, size));
    const char *fn = "MPI_Win_attach";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!win->dynamic)
        return mp_win_err(win, MPI_ERR_WIN, fn);
    if (size < 0)
        return mp_win_err(win, MPI_ERR_SIZE, fn);
    if (size == 0)
        return MPI_SUCCESS;
    if (!base)
        return mp_win_err(win, MPI_ERR_BUFFER, fn);
    mp_attach *n = realloc(win->att, (size_t)(win->natt + 1) * sizeof *n);
    if (!n)
        return mp_win_err(win, MPI_ERR_NO_MEM, fn);
    win->att = n;
    int m = win->comm->size;
    flit_rank_t *allowed = malloc((size_t)m * sizeof *allowed);
    if (!allowed)
        return mp_win_err(win, MPI_ERR_NO_MEM, fn);
    for (int r = 0; r < m; r++)
        allowed[r] = flit_rank((uint32_t)win->comm->world[r]);
    mp_attach *a = &n[win->natt];
    *a = (mp_attach){.base = (uint64_t)(uintptr_t)base, .size = (uint64_t)size};
    flit_status st =
        flit_rma_export(mp_ep, base, (size_t)size, FLIT_RMA_READ | FLIT_RMA_WRITE,
                        allowed, (size_t)m, &a->region);
    free(allowed);
    if (st != FLIT_OK)
        return mp_win_err(win, mp_class_of(st), fn);
    a->id = flit_rma_region_id(a->region);
    win->natt++;
    return MPI_SUCCESS;
}

/* Local: revokes the memory attached at base; origins that reach it
   after this are answered MPI_ERR_DISP. */
int MPI_Win_detach(MPI_Win win, const void *base)
{
    MP_LOCKED(PMPI_Win_detach, (win, base));
    const char *fn = "MPI_Win_detach";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!win->dynamic)
        return mp_win_err(win, MPI_ERR_WIN, fn);
    for (int i = 0; i < win->natt; i++)
        if (win->att[i].base == (uint64_t)(uintptr_t)base) {
            flit_rma_unexport(win->att[i].region);
            win->att[i] = win->att[--win->natt];
            return MPI_SUCCESS;
        }
    return mp_win_err(win, MPI_ERR_ARG, fn);
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Win_create);
MP_PROFILED(MPI_Win_allocate);
MP_PROFILED(MPI_Win_allocate_shared);
MP_PROFILED(MPI_Win_shared_query);
MP_PROFILED(MPI_Win_free);
MP_PROFILED(MPI_Win_get_group);
MP_PROFILED(MPI_Win_set_errhandler);
MP_PROFILED(MPI_Win_get_errhandler);
MP_PROFILED(MPI_Win_create_dynamic);
MP_PROFILED(MPI_Win_attach);
MP_PROFILED(MPI_Win_detach);
