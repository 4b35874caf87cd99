/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication, the target's side (mpi_win.c says how windows
 * work): the handler of the requests other ranks send, which checks every
 * field it receives and answers a bad request with an error class, never
 * applying it; the accumulate executor; the lock manager.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <flit/am.h>

#include "mpi_internal.h"
#include "mpi_win.h"

static MPI_Op const ops[] = {
    [OP_SUM] = MPI_SUM,         [OP_PROD] = MPI_PROD,     [OP_MAX] = MPI_MAX,
    [OP_MIN] = MPI_MIN,         [OP_LAND] = MPI_LAND,     [OP_LOR] = MPI_LOR,
    [OP_LXOR] = MPI_LXOR,       [OP_BAND] = MPI_BAND,     [OP_BOR] = MPI_BOR,
    [OP_BXOR] = MPI_BXOR,       [OP_MAXLOC] = MPI_MAXLOC, [OP_MINLOC] = MPI_MINLOC,
    [OP_REPLACE] = MPI_REPLACE, [OP_NO_OP] = MPI_NO_OP,
};

/* The window a request names, its sender's rank there, or NULL. */
static MPI_Win target_win(const uint32_t *args, flit_token_t *tok, int *rank)
{
    uint32_t id = args[A_WIN];
    if (id >= (uint32_t)mp_nwins || !mp_wins[id])
        return NULL;
    MPI_Win w = mp_wins[id];
    uint32_t src = flit_token_rank(tok).idx;
    if (src >= flit_job_size() || w->comm->from_world[src] < 0)
        return NULL;
    *rank = w->comm->from_world[src];
    return w;
}

static void reply(flit_token_t *tok, const uint32_t *args, int status, int granted,
                  const void *data, size_t bytes)
{
    uint32_t r[R_NARGS] = {[R_OWIN] = args[A_OWIN],
                           [R_SEQ] = args[A_SEQ],
                           [R_STATUS] = (uint32_t)status,
                           [R_GRANTED] = (uint32_t)granted};
    flit_status st = data ? flit_am_reply_medium(tok, mp_h_rep, data, bytes, r, R_NARGS)
                          : flit_am_reply_short(tok, mp_h_rep, r, R_NARGS);
    if (st != FLIT_OK)
        fprintf(stderr, "flit-mpi: one-sided reply to rank %u: %s\n",
                flit_token_rank(tok).idx, flit_strerror(st));
}

/* Grants the queue's head as long as it is compatible with the holders. */
static void grant(MPI_Win w)
{
    while (w->qlen > 0) {
        mp_lock_wait *q = &w->queue[w->qhead];
        if (w->excl >= 0 || (q->type == MPI_LOCK_EXCLUSIVE && w->shared > 0))
            return;
        if (q->type == MPI_LOCK_EXCLUSIVE)
            w->excl = q->rank;
        else
            w->shared++;
        w->holds[q->rank] = q->type;
        w->waiting[q->rank] = 0;
        w->qhead = (w->qhead + 1) % w->comm->size;
        w->qlen--;
    }
}

/* A lock, a poll or an unlock from rank: MPI_SUCCESS and whether it holds
   the lock now, or an error class. */
static int lock_request(MPI_Win w, int kind, int rank, int type, int *granted)
{
    if (kind == K_LOCK) {
        if (type != MPI_LOCK_EXCLUSIVE && type != MPI_LOCK_SHARED)
            return MPI_ERR_LOCKTYPE;
        if (w->holds[rank] || w->waiting[rank] || w->qlen >= w->comm->size)
            return MPI_ERR_RMA_SYNC;
        w->queue[(w->qhead + w->qlen) % w->comm->size] = (mp_lock_wait){rank, type};
        w->qlen++;
        w->waiting[rank] = 1;
    } else if (kind == K_UNLOCK) {
        if (!w->holds[rank])
            return MPI_ERR_RMA_SYNC;
        if (w->holds[rank] == MPI_LOCK_EXCLUSIVE)
            w->excl = -1;
        else
            w->shared--;
        w->holds[rank] = 0;
    } else if (!w->holds[rank] && !w->waiting[rank]) {
        return MPI_ERR_RMA_SYNC; /* a poll without a request */
    }
    grant(w);
    *granted = w->holds[rank] != 0;
    return MPI_SUCCESS;
}

/* Where [off, off + bytes) lies in w, or NULL when not inside it. */
static unsigned char *span(MPI_Win w, uint64_t off, uint64_t bytes)
{
    if (w->dynamic) { /* off is an address, inside one attached region */
        for (int i = 0; i < w->natt; i++) {
            mp_attach *a = &w->att[i];
            if (off >= a->base && off - a->base <= a->size &&
                bytes <= a->size - (off - a->base))
                return (unsigned char *)(uintptr_t)off;
        }
        return NULL;
    }
    if (off > w->size || bytes > w->size - off)
        return NULL;
    return (unsigned char *)w->base + off;
}

/* Scratch of the accumulate handlers (one runs at a time): the window's
   and the message's elements, aligned for any type. */
static alignas(16) unsigned char acc_io[ACC_MAX_BYTES], acc_in[ACC_MAX_BYTES],
    acc_old[ACC_MAX_BYTES];

/* Compare-and-swap compares bytes: integer, logical and byte types, as MPI
   says (not floating point or complex, whose equal values may differ in
   bytes). */
int mp_win_cas_type(MPI_Datatype t)
{
    return t && t->predefined && t->basic >= 0 && t != MPI_FLOAT && t != MPI_DOUBLE &&
           t != MPI_LONG_DOUBLE && t != MPI_C_FLOAT_COMPLEX &&
           t != MPI_C_DOUBLE_COMPLEX && t != MPI_C_LONG_DOUBLE_COMPLEX;
}

/* Applies an accumulate, a get-accumulate or a compare-and-swap; the old
   elements go to acc_old. An error class, or MPI_SUCCESS. */
static int accumulate(MPI_Win w, const uint32_t *args, const void *buf, size_t nbytes)
{
    MPI_Datatype t = mp_type_predef((int)args[A_TYPE]);
    uint32_t opid = args[A_OP], count = args[A_COUNT];
    if (!t || !mp_type_contig(t, (int)(count > 1 ? 2 : count)))
        return MPI_ERR_TYPE; /* a pair type with a hole in it */
    size_t bytes = (size_t)count * t->size;
    if (count > ACC_MAX_BYTES || bytes > ACC_MAX_BYTES)
        return MPI_ERR_COUNT;
    unsigned kind = args[A_KIND];
    if (nbytes != (kind == K_CAS ? 2 * bytes : opid == OP_NO_OP ? 0 : bytes))
        return MPI_ERR_ARG;
    if (kind == K_CAS && (count != 1 || !mp_win_cas_type(t)))
        return MPI_ERR_TYPE;
    MPI_Op op = NULL;
    if (kind != K_CAS) {
        if (opid >= sizeof ops / sizeof ops[0] || !ops[opid])
            return MPI_ERR_OP;
        op = ops[opid];
        if (opid == OP_NO_OP && kind != K_GACC)
            return MPI_ERR_OP;
        if (opid != OP_REPLACE && opid != OP_NO_OP && mp_op_ok(op, t) != MPI_SUCCESS)
            return MPI_ERR_OP;
    }
    uint64_t off = (uint64_t)args[A_OFF_HI] << 32 | args[A_OFF_LO];
    unsigned char *at = span(w, off, bytes);
    if (!at)
        return MPI_ERR_DISP;
    memcpy(acc_old, at, bytes);
    if (kind == K_CAS) {
        if (memcmp(acc_old, (const unsigned char *)buf + bytes, bytes) == 0)
            memcpy(at, buf, bytes);
        return MPI_SUCCESS;
    }
    if (opid == OP_NO_OP)
        return MPI_SUCCESS;
    if (opid == OP_REPLACE) {
        memcpy(at, buf, bytes);
        return MPI_SUCCESS;
    }
    memcpy(acc_io, at, bytes);
    memcpy(acc_in, buf, bytes);
    int rc = mp_op_apply(op, acc_in, acc_io, (int)count, t);
    if (rc == MPI_SUCCESS)
        memcpy(at, acc_io, bytes);
    return rc;
}

void mp_win_on_request(flit_token_t *tok, void *buf, size_t nbytes, const uint32_t *args,
                       unsigned nargs, void *user)
{
    (void)user;
    if (nargs != A_NARGS || args[A_KIND] >= K_NKINDS) {
        fprintf(stderr, "flit-mpi: one-sided request from rank %u malformed; ignored\n",
                flit_token_rank(tok).idx);
        return;
    }
    int rank = -1, granted = 0, rc;
    MPI_Win w = target_win(args, tok, &rank);
    unsigned kind = args[A_KIND];
    if (kind == K_POST || kind == K_COMPLETE) { /* notices: no reply */
        if (!w)
            fprintf(stderr, "flit-mpi: one-sided notice from rank %u for no window\n",
                    flit_token_rank(tok).idx);
        else if (kind == K_POST && w->peer[rank].posts < UINT32_MAX)
            w->peer[rank].posts++;
        else if (kind == K_COMPLETE && w->peer[rank].completes < UINT32_MAX)
            w->peer[rank].completes++;
        return;
    }
    if (kind == K_FIND) {
        mp_found f = {0};
        uint64_t addr = (uint64_t)args[A_OFF_HI] << 32 | args[A_OFF_LO];
        uint64_t len = (uint64_t)args[A_TYPE] << 32 | args[A_COUNT];
        rc = w && w->dynamic ? MPI_ERR_DISP : MPI_ERR_WIN;
        for (int i = 0; w && w->dynamic && i < w->natt; i++) {
            mp_attach *a = &w->att[i];
            if (addr >= a->base && addr - a->base <= a->size &&
                len <= a->size - (addr - a->base)) {
                f = (mp_found){a->base, a->size, a->id};
                rc = MPI_SUCCESS;
                break;
            }
        }
        reply(tok, args, rc, 0, rc ? NULL : &f, sizeof f);
        return;
    }
    if (!w)
        rc = MPI_ERR_WIN;
    else if (kind == K_LOCK || kind == K_POLL || kind == K_UNLOCK)
        rc = lock_request(w, (int)kind, rank, (int)args[A_OP], &granted);
    else
        rc = accumulate(w, args, buf, nbytes);
    if (rc != MPI_SUCCESS)
        fprintf(stderr,
                "flit-mpi: one-sided request %u from rank %u refused (class %d)\n", kind,
                flit_token_rank(tok).idx, rc);
    int fetch = rc == MPI_SUCCESS && (kind == K_GACC || kind == K_CAS);
    size_t bytes =
        fetch ? (size_t)args[A_COUNT] * mp_type_predef((int)args[A_TYPE])->size : 0;
    reply(tok, args, rc, granted, fetch ? acc_old : NULL, bytes);
}
