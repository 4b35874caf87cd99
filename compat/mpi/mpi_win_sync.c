/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication, synchronisation (mpi_win.c says how windows
 * work): fence; lock and unlock, one target or all, with the target's lock
 * manager (mpi_win_target.c) granting; flush; post, start, complete, wait.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpi_internal.h"
#include "mpi_win.h"

/* ---- synchronisation ---- */

#define MODE_ALL                                                                         \
    (MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE |         \
     MPI_MODE_NOSUCCEED)

/* Collective: every member's calls since the last fence are complete, at
   origin and target, when any member returns. */
int MPI_Win_fence(int assertion, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_fence, (assertion, win));
    const char *fn = "MPI_Win_fence";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (assertion & ~MODE_ALL)
        return mp_win_err(win, MPI_ERR_ASSERT, fn);
    if (win->nlocked || win->accessing || win->exposing)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    int rc = mp_win_complete_at(win, -1);
    int rc2 = PMPI_Barrier(win->comm);
    win->fence_epoch = (assertion & MPI_MODE_NOSUCCEED) == 0;
    return mp_win_err(win, rc ? rc : rc2, fn);
}

/* Asks rank's lock manager for a lock of type until it grants it. */
static int lock_one(MPI_Win w, int type, int rank)
{
    int granted = 0;
    uint32_t args[A_NARGS] = {[A_KIND] = K_LOCK, [A_OP] = (uint32_t)type};
    int rc = mp_win_request_wait(w, rank, args, NULL, 0, NULL, 0, &granted);
    /* bounded only by the holders' releases: each poll is a round trip */
    while (!rc && !granted) {
        uint32_t poll[A_NARGS] = {[A_KIND] = K_POLL, [A_OP] = (uint32_t)type};
        rc = mp_win_request_wait(w, rank, poll, NULL, 0, NULL, 0, &granted);
    }
    if (!rc) {
        w->peer[rank].locked = type;
        w->nlocked++;
    }
    return rc;
}

static int unlock_one(MPI_Win w, int rank)
{
    int rc = mp_win_complete_at(w, rank);
    uint32_t args[A_NARGS] = {[A_KIND] = K_UNLOCK};
    int rc2 = mp_win_request_wait(w, rank, args, NULL, 0, NULL, 0, NULL);
    w->peer[rank].locked = 0;
    w->nlocked--;
    return rc ? rc : rc2;
}

int MPI_Win_lock(int lock_type, int rank, int assertion, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_lock, (lock_type, rank, assertion, win));
    const char *fn = "MPI_Win_lock";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
        return mp_win_err(win, MPI_ERR_LOCKTYPE, fn);
    if (assertion & ~MPI_MODE_NOCHECK)
        return mp_win_err(win, MPI_ERR_ASSERT, fn);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank < 0 || rank >= win->comm->size)
        return mp_win_err(win, MPI_ERR_RANK, fn);
    if (win->peer[rank].locked || win->accessing)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    return mp_win_err(win, lock_one(win, lock_type, rank), fn);
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_unlock, (rank, win));
    const char *fn = "MPI_Win_unlock";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank < 0 || rank >= win->comm->size)
        return mp_win_err(win, MPI_ERR_RANK, fn);
    if (!win->peer[rank].locked || win->lock_all)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    return mp_win_err(win, unlock_one(win, rank), fn);
}

int MPI_Win_lock_all(int assertion, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_lock_all, (assertion, win));
    const char *fn = "MPI_Win_lock_all";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (assertion & ~MPI_MODE_NOCHECK)
        return mp_win_err(win, MPI_ERR_ASSERT, fn);
    if (win->nlocked)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    int rc = MPI_SUCCESS;
    for (int r = 0; !rc && r < win->comm->size; r++)
        rc = lock_one(win, MPI_LOCK_SHARED, r);
    if (rc) /* the locks taken go back */
        for (int r = 0; r < win->comm->size; r++)
            if (win->peer[r].locked)
                unlock_one(win, r);
    win->lock_all = !rc;
    return mp_win_err(win, rc, fn);
}

int MPI_Win_unlock_all(MPI_Win win)
{
    MP_LOCKED(PMPI_Win_unlock_all, (win));
    const char *fn = "MPI_Win_unlock_all";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!win->lock_all)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < win->comm->size; r++) {
        int rc2 = unlock_one(win, r);
        if (!rc)
            rc = rc2;
    }
    win->lock_all = 0;
    return mp_win_err(win, rc, fn);
}

/* Every call to rank (all: -1) complete at the target: a passive-target
   epoch's (MPI_ERR_RMA_SYNC outside one). Locally complete is the same. */
static int flush(MPI_Win w, int rank, const char *fn)
{
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(w))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank < -1 || rank >= w->comm->size)
        return mp_win_err(w, MPI_ERR_RANK, fn);
    if (rank >= 0 ? !w->peer[rank].locked : !w->nlocked)
        return mp_win_err(w, MPI_ERR_RMA_SYNC, fn);
    return mp_win_err(w, mp_win_complete_at(w, rank), fn);
}

int MPI_Win_flush(int rank, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_flush, (rank, win));
    return flush(win, rank < 0 && rank != MPI_PROC_NULL ? INT32_MIN : rank,
                 "MPI_Win_flush");
}

int MPI_Win_flush_all(MPI_Win win)
{
    MP_LOCKED(PMPI_Win_flush_all, (win));
    return flush(win, -1, "MPI_Win_flush_all");
}

int MPI_Win_flush_local(int rank, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_flush_local, (rank, win));
    return flush(win, rank < 0 && rank != MPI_PROC_NULL ? INT32_MIN : rank,
                 "MPI_Win_flush_local");
}

int MPI_Win_flush_local_all(MPI_Win win)
{
    MP_LOCKED(PMPI_Win_flush_local_all, (win));
    return flush(win, -1, "MPI_Win_flush_local_all");
}

/* The private and public copies of the window are one (MPI_WIN_UNIFIED):
   a full memory barrier orders this process's loads and stores against
   the window's updates, and a pass of progress applies those that have
   arrived. Valid in any epoch or none. */
int MPI_Win_sync(MPI_Win win)
{
    MP_LOCKED(PMPI_Win_sync, (win));
    const char *fn = "MPI_Win_sync";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    atomic_thread_fence(memory_order_seq_cst);
    flit_status st = flit_poll(mp_ep);
    int rc = st == FLIT_OK ? mp_progress() : mp_class_of(st);
    atomic_thread_fence(memory_order_seq_cst);
    return mp_win_err(win, rc, fn);
}

/* ---- post, start, complete, wait ---- */

/* The window's ranks of group's members into ranks[] (n of them): the
   group must be a subset of the window's, each member once. */
static int group_ranks(MPI_Win w, MPI_Group g, int *ranks, int *n)
{
    if (!g || g->size < 0 || (g->size > 0 && !g->world))
        return MPI_ERR_GROUP;
    if (g->size > w->comm->size)
        return MPI_ERR_GROUP;
    for (int i = 0; i < g->size; i++) {
        int wr = g->world[i];
        if (wr < 0 || (uint32_t)wr >= flit_job_size() || w->comm->from_world[wr] < 0)
            return MPI_ERR_GROUP;
        ranks[i] = w->comm->from_world[wr];
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return MPI_ERR_GROUP;
    }
    *n = g->size;
    return MPI_SUCCESS;
}

/* A notice (K_POST, K_COMPLETE) to rank. */
static int notice(MPI_Win w, int rank, unsigned kind)
{
    uint32_t args[A_NARGS] = {
        [A_KIND] = kind, [A_WIN] = w->peer[rank].win_id, [A_OWIN] = (uint32_t)w->id};
    flit_status st = mp_win_send_request(w->comm->world[rank], args, NULL, 0);
    return st == FLIT_OK ? MPI_SUCCESS : mp_class_of(st);
}

/* Runs fn(w, g's ranks), checking w and g first. */
static int with_group(MPI_Group g, MPI_Win w, const char *fn,
                      int (*body)(MPI_Win, const int *, int))
{
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(w))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    int *ranks = malloc(((size_t)w->comm->size + 1) * sizeof *ranks), n = 0;
    if (!ranks)
        return mp_win_err(w, MPI_ERR_NO_MEM, fn);
    int rc = group_ranks(w, g, ranks, &n);
    if (!rc)
        rc = body(w, ranks, n);
    free(ranks);
    return mp_win_err(w, rc, fn);
}

/* Exposes the window to the group's members (origins): tells each. */
static int post(MPI_Win w, const int *ranks, int n)
{
    if (w->exposing)
        return MPI_ERR_RMA_SYNC;
    for (int i = 0; i < n; i++)
        w->peer[ranks[i]].exposed = 1;
    w->exposing = 1;
    for (int i = 0; i < n; i++) {
        int rc = notice(w, ranks[i], K_POST);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* Opens an access epoch to the group's members (targets) once each has
   posted. */
static int start(MPI_Win w, const int *ranks, int n)
{
    if (w->accessing || w->nlocked)
        return MPI_ERR_RMA_SYNC;
    w->accessing = 1; /* MPI_Win_complete ends it, even after an error */
    for (int i = 0; i < n; i++) {
        struct mp_win_peer *p = &w->peer[ranks[i]];
        while (!p->posts) {
            int rc = mp_win_wait_step(w->comm->world[ranks[i]]);
            if (rc)
                return rc;
        }
        p->posts--;
        p->started = 1;
    }
    return MPI_SUCCESS;
}

int MPI_Win_post(MPI_Group group, int assertion, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_post, (group, assertion, win));
    if (mp_win_ok(win) &&
        (assertion & ~(MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT)))
        return mp_win_err(win, MPI_ERR_ASSERT, "MPI_Win_post");
    return with_group(group, win, "MPI_Win_post", post);
}

int MPI_Win_start(MPI_Group group, int assertion, MPI_Win win)
{
    MP_LOCKED(PMPI_Win_start, (group, assertion, win));
    if (mp_win_ok(win) && (assertion & ~MPI_MODE_NOCHECK))
        return mp_win_err(win, MPI_ERR_ASSERT, "MPI_Win_start");
    return with_group(group, win, "MPI_Win_start", start);
}

/* Completes the access epoch: every call at its target, then tells each. */
int MPI_Win_complete(MPI_Win win)
{
    MP_LOCKED(PMPI_Win_complete, (win));
    const char *fn = "MPI_Win_complete";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!win->accessing)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    int rc = MPI_SUCCESS;
    for (int r = 0; r < win->comm->size; r++) {
        if (!win->peer[r].started)
            continue;
        int rc2 = mp_win_complete_at(win, r);
        if (!rc2)
            rc2 = notice(win, r, K_COMPLETE);
        if (!rc)
            rc = rc2;
        win->peer[r].started = 0;
    }
    win->accessing = 0;
    return mp_win_err(win, rc, fn);
}

/* Whether every origin of the exposure epoch has completed; ends it when
   so. */
static int exposure_done(MPI_Win w)
{
    for (int r = 0; r < w->comm->size; r++)
        if (w->peer[r].exposed && !w->peer[r].completes)
            return 0;
    for (int r = 0; r < w->comm->size; r++)
        if (w->peer[r].exposed) {
            w->peer[r].completes--;
            w->peer[r].exposed = 0;
        }
    w->exposing = 0;
    return 1;
}

int MPI_Win_wait(MPI_Win win)
{
    MP_LOCKED(PMPI_Win_wait, (win));
    const char *fn = "MPI_Win_wait";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!win->exposing)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    while (!exposure_done(win)) {
        int rc = mp_win_wait_step(-1);
        for (int r = 0; !rc && r < win->comm->size; r++)
            if (win->peer[r].exposed && !win->peer[r].completes &&
                mp_peer_dead(win->comm->world[r]))
                rc = MPI_ERR_PROC_FAILED;
        if (rc)
            return mp_win_err(win, rc, fn);
    }
    return MPI_SUCCESS;
}

int MPI_Win_test(MPI_Win win, int *flag)
{
    MP_LOCKED(PMPI_Win_test, (win, flag));
    const char *fn = "MPI_Win_test";
    MP_CHECK_INIT(fn);
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, fn);
    if (!flag)
        return mp_win_err(win, MPI_ERR_ARG, fn);
    if (!win->exposing)
        return mp_win_err(win, MPI_ERR_RMA_SYNC, fn);
    flit_status st = flit_poll(mp_ep);
    int rc = st == FLIT_OK ? mp_progress() : mp_class_of(st);
    if (rc)
        return mp_win_err(win, rc, fn);
    *flag = exposure_done(win);
    return MPI_SUCCESS;
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Win_fence);
MP_PROFILED(MPI_Win_sync);
MP_PROFILED(MPI_Win_lock);
MP_PROFILED(MPI_Win_unlock);
MP_PROFILED(MPI_Win_lock_all);
MP_PROFILED(MPI_Win_unlock_all);
MP_PROFILED(MPI_Win_flush);
MP_PROFILED(MPI_Win_flush_all);
MP_PROFILED(MPI_Win_flush_local);
MP_PROFILED(MPI_Win_flush_local_all);
MP_PROFILED(MPI_Win_post);
MP_PROFILED(MPI_Win_start);
MP_PROFILED(MPI_Win_complete);
MP_PROFILED(MPI_Win_wait);
MP_PROFILED(MPI_Win_test);
