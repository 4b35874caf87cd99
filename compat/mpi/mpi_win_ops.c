/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication, the origin's calls (mpi_win.c says how windows
 * work): put and get on flit's RMA; accumulate, get-accumulate,
 * fetch-and-op and compare-and-swap sent to the target's handler
 * (mpi_win_target.c) to execute.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <flit/rma.h>

#include "mpi_internal.h"
#include "mpi_win.h"

/* ---- communication calls ---- */

/* The checks every call aimed at target rank makes: *skip set for
   MPI_PROC_NULL. */
static int target_check(MPI_Win w, int rank, int *skip)
{
    *skip = 0;
    if (rank == MPI_PROC_NULL) {
        *skip = 1;
        return MPI_SUCCESS;
    }
    if (rank < 0 || rank >= w->comm->size)
        return MPI_ERR_RANK;
    if (!w->fence_epoch && !w->peer[rank].locked && !w->peer[rank].started)
        return MPI_ERR_RMA_SYNC;
    return MPI_SUCCESS;
}

/* The byte offset in rank's window of count elements of t at disp, from
   which their type's displacements count: checks that every byte of them
   lies inside the window. */
static int target_span(MPI_Win w, int rank, MPI_Aint disp, int count, MPI_Datatype t,
                       uint64_t *off)
{
    if (disp < 0)
        return MPI_ERR_DISP;
    struct mp_win_peer *p = &w->peer[rank];
    MPI_Aint lo, hi;
    if (!mp_type_span(t, count, &lo, &hi))
        return MPI_ERR_TYPE;
    if ((uint64_t)disp > UINT64_MAX / 2 / (uint64_t)p->disp_unit)
        return MPI_ERR_DISP;
    uint64_t o = (uint64_t)disp * (uint64_t)p->disp_unit;
    if (lo < 0 && (uint64_t)-lo > o)
        return MPI_ERR_DISP;
    uint64_t first = lo < 0 ? o - (uint64_t)-lo : o + (uint64_t)lo;
    uint64_t bytes = (uint64_t)(hi - lo);
    if (!w->dynamic && (first > p->size || bytes > p->size - first))
        return MPI_ERR_DISP; /* a dynamic window's target checks */
    *off = o;
    return MPI_SUCCESS;
}

/* The origin's and target's buffers, counts and types. */
static int types_check(const void *buf, int count, MPI_Datatype t, int tcount,
                       MPI_Datatype tt)
{
    if (count < 0 || tcount < 0)
        return MPI_ERR_COUNT;
    if (!mp_type_ok(t) || !mp_type_ok(tt))
        return MPI_ERR_TYPE;
    if (count > 0 && !buf)
        return MPI_ERR_BUFFER;
    if (mp_type_bytes(t, count) != mp_type_bytes(tt, tcount))
        return MPI_ERR_TYPE; /* both sides the same number of bytes */
    return MPI_SUCCESS;
}

/* One run of bytes to or from byte offset off of rank's window. */
static int put_get_run(int get, MPI_Win w, int rank, uint64_t off, unsigned char *data,
                       size_t bytes)
{
    flit_status st = FLIT_OK;
    for (int tries = 0; tries < 2; tries++) {
        flit_rma_remote_t *r = w->peer[rank].remote;
        uint64_t roff = off;
        int rc;
        if (w->dynamic &&
            (rc = mp_win_dyn_find(w, rank, off, bytes, &r, &roff)) != MPI_SUCCESS)
            return rc;
        st = get ? flit_rma_get(r, roff, data, bytes, 0, NULL)
                 : flit_rma_put(r, roff, data, bytes, 0, NULL);
        if (st != FLIT_ERR_REVOKED || !w->dynamic)
            break;
        mp_win_dyn_forget(w, rank, r); /* detached meanwhile: ask the target again */
    }
    return st == FLIT_OK ? MPI_SUCCESS : mp_class_of(st);
}

/* The origin's bytes in packed order (the program's buffer itself when its
   type is contiguous), moved run by run of the target's type: a strided or
   indexed target type is one put or get per run of adjacent bytes. */
static int put_get(int get, void *buf, int count, MPI_Datatype t, int rank, MPI_Aint disp,
                   int tcount, MPI_Datatype tt, MPI_Win w)
{
    int skip, rc = types_check(buf, count, t, tcount, tt);
    if (!rc)
        rc = target_check(w, rank, &skip);
    if (rc || skip)
        return rc;
    uint64_t off;
    if ((rc = target_span(w, rank, disp, tcount, tt, &off)) != MPI_SUCCESS)
        return rc;
    size_t bytes = mp_type_bytes(t, count);
    if (bytes == 0)
        return MPI_SUCCESS;
    int contig = mp_type_contig(t, count);
    unsigned char *data =
        contig ? (unsigned char *)buf + t->blocks[0].disp : malloc(bytes);
    if (!data)
        return MPI_ERR_NO_MEM;
    if (!contig && !get)
        mp_pack(buf, count, t, data);
    mp_runs it = {0};
    MPI_Aint at;
    size_t len, done = 0;
    while (!rc && mp_type_run(tt, tcount, &it, &at, &len)) {
        rc = put_get_run(get, w, rank, (uint64_t)((int64_t)off + at), data + done, len);
        done += len;
    }
    if (!contig) {
        if (get && !rc)
            mp_unpack(data, bytes, buf, count, t);
        free(data);
    }
    return rc;
}

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count,
            MPI_Datatype target_datatype, MPI_Win win)
{
    MP_LOCKED(PMPI_Put, (origin_addr, origin_count, origin_datatype, target_rank,
                         target_disp, target_count, target_datatype, win));
    MP_CHECK_INIT("MPI_Put");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Put");
    return mp_win_err(win,
                      put_get(0, (void *)origin_addr, origin_count, origin_datatype,
                              target_rank, target_disp, target_count, target_datatype,
                              win),
                      "MPI_Put");
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count,
            MPI_Datatype target_datatype, MPI_Win win)
{
    MP_LOCKED(PMPI_Get, (origin_addr, origin_count, origin_datatype, target_rank,
                         target_disp, target_count, target_datatype, win));
    MP_CHECK_INIT("MPI_Get");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Get");
    return mp_win_err(win,
                      put_get(1, origin_addr, origin_count, origin_datatype, target_rank,
                              target_disp, target_count, target_datatype, win),
                      "MPI_Get");
}

/* The predefined type an accumulate's target type is made of: itself when
   predefined, else the one basic type of a derived type, else NULL (MPI:
   every basic component of the target's type is the same predefined
   type). */
static MPI_Datatype acc_elem(MPI_Datatype tt)
{
    if (!mp_type_ok(tt))
        return NULL;
    return mp_type_predef(tt->predefined ? mp_type_code(tt) : tt->basic);
}

/* An accumulate's operands: the target's type made of one predefined type,
   the origin's (or the result's) that type, or made of its basic type, or
   the target's own. */
static int acc_types(MPI_Datatype tt, MPI_Datatype t, int count, MPI_Op op)
{
    MPI_Datatype et = acc_elem(tt);
    int empty = !et && mp_type_ok(tt) && tt->size == 0; /* no element to act on */
    if ((!et && !empty) || (count > 0 && !mp_type_ok(t)))
        return MPI_ERR_TYPE;
    if (et && count > 0 && t != tt && t != et && (et->basic < 0 || t->basic != et->basic))
        return MPI_ERR_TYPE;
    if (!op || op->refs <= 0 || op->fn)
        return MPI_ERR_OP;
    if (et && op->id != OP_REPLACE && op->id != OP_NO_OP &&
        mp_op_ok(op, et) != MPI_SUCCESS)
        return MPI_ERR_OP;
    return MPI_SUCCESS;
}

/* Sends tcount elements of tt at byte offset off of rank's window, the
   packed operands in (NULL: none) and, fetching, the old elements into
   out, in messages of at most ACC_MAX_BYTES; a plain accumulate's verdict
   is counted as pending, for the next synchronisation. */
static int acc_send(MPI_Win w, int rank, uint64_t off, size_t tcount, MPI_Datatype tt,
                    MPI_Op op, const unsigned char *in, unsigned char *out, int fetch)
{
    size_t esize = tt->size, per = ACC_MAX_BYTES / esize;
    int world = w->comm->world[rank];
    int rc = MPI_SUCCESS;
    for (size_t done = 0; !rc && done < tcount;) {
        size_t n = tcount - done < per ? tcount - done : per;
        uint64_t o = off + done * esize;
        uint32_t args[A_NARGS] = {
            [A_KIND] = fetch ? K_GACC : K_ACC,     [A_OFF_LO] = (uint32_t)o,
            [A_OFF_HI] = (uint32_t)(o >> 32),      [A_COUNT] = (uint32_t)n,
            [A_TYPE] = (uint32_t)mp_type_code(tt), [A_OP] = (uint32_t)op->id};
        const void *piece = in ? in + done * esize : NULL;
        size_t pbytes = in ? n * esize : 0;
        if (fetch) {
            rc = mp_win_request_wait(w, rank, args, piece, pbytes, out + done * esize,
                                     n * esize, NULL);
        } else {
            args[A_WIN] = w->peer[rank].win_id;
            args[A_OWIN] = (uint32_t)w->id;
            flit_status st = mp_win_send_request(world, args, piece, pbytes);
            if (st == FLIT_OK)
                w->peer[rank].pending++;
            else
                rc = mp_class_of(st);
        }
        done += n;
    }
    return rc;
}

/* MPI_Accumulate (result NULL) and MPI_Get_accumulate: in pieces of at most
   ACC_MAX_BYTES, each one message executed by the target. */
static int accumulate_call(const void *obuf, int ocount, MPI_Datatype ot, void *rbuf,
                           int rcount, MPI_Datatype rt, int rank, MPI_Aint disp,
                           int tcount, MPI_Datatype tt, MPI_Op op, MPI_Win w, int fetch)
{
    if (ocount < 0 || tcount < 0 || rcount < 0)
        return MPI_ERR_COUNT;
    int noop = op && op->id == OP_NO_OP;
    if (noop && !fetch)
        return MPI_ERR_OP;
    int rc = acc_types(tt, ot, noop ? 0 : ocount, op);
    if (!rc && fetch)
        rc = acc_types(tt, rt, rcount, MPI_NO_OP);
    if (rc)
        return rc;
    MPI_Datatype et = acc_elem(tt); /* NULL: a type of no bytes */
    if (et && et->pair >= 0 && !mp_type_contig(tt, tcount))
        return MPI_ERR_TYPE; /* pairs with holes between them */
    size_t tbytes = mp_type_bytes(tt, tcount);
    if ((!noop && mp_type_bytes(ot, ocount) != tbytes) ||
        (fetch && mp_type_bytes(rt, rcount) != tbytes))
        return MPI_ERR_TYPE;
    if ((!noop && ocount > 0 && !obuf) || (fetch && rcount > 0 && !rbuf))
        return MPI_ERR_BUFFER;
    int skip;
    uint64_t off;
    if ((rc = target_check(w, rank, &skip)) || skip)
        return rc;
    if ((rc = target_span(w, rank, disp, tcount, tt, &off)))
        return rc;
    if (tbytes == 0)
        return MPI_SUCCESS;
    unsigned char *in = noop ? NULL : malloc(tbytes),
                  *out = fetch ? malloc(tbytes) : NULL;
    if ((!noop && !in) || (fetch && !out)) {
        free(in);
        free(out);
        return MPI_ERR_NO_MEM;
    }
    if (in)
        mp_pack(obuf, ocount, ot, in);
    /* run by run of the target's type, each whole elements of et: the
       target applies each run at once, so every element is atomic */
    mp_runs it = {0};
    MPI_Aint at;
    size_t len, done = 0;
    while (!rc && mp_type_run(tt, tcount, &it, &at, &len)) {
        if (len % et->size) {
            rc = MPI_ERR_TYPE;
            break;
        }
        rc = acc_send(w, rank, (uint64_t)((int64_t)off + at), len / et->size, et, op,
                      in ? in + done : NULL, out ? out + done : NULL, fetch);
        done += len;
    }
    if (!rc && fetch)
        mp_unpack(out, tbytes, rbuf, rcount, rt);
    free(in);
    free(out);
    return rc;
}

int MPI_Accumulate(const void *origin_addr, int origin_count,
                   MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                   int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    MP_LOCKED(PMPI_Accumulate, (origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, op, win));
    MP_CHECK_INIT("MPI_Accumulate");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Accumulate");
    return mp_win_err(win,
                      accumulate_call(origin_addr, origin_count, origin_datatype, NULL, 0,
                                      NULL, target_rank, target_disp, target_count,
                                      target_datatype, op, win, 0),
                      "MPI_Accumulate");
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count,
                       MPI_Datatype origin_datatype, void *result_addr, int result_count,
                       MPI_Datatype result_datatype, int target_rank,
                       MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    MP_LOCKED(PMPI_Get_accumulate,
              (origin_addr, origin_count, origin_datatype, result_addr, result_count,
               result_datatype, target_rank, target_disp, target_count, target_datatype,
               op, win));
    MP_CHECK_INIT("MPI_Get_accumulate");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Get_accumulate");
    return mp_win_err(win,
                      accumulate_call(origin_addr, origin_count, origin_datatype,
                                      result_addr, result_count, result_datatype,
                                      target_rank, target_disp, target_count,
                                      target_datatype, op, win, 1),
                      "MPI_Get_accumulate");
}

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    MP_LOCKED(PMPI_Fetch_and_op,
              (origin_addr, result_addr, datatype, target_rank, target_disp, op, win));
    MP_CHECK_INIT("MPI_Fetch_and_op");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Fetch_and_op");
    int rc = mp_type_ok(datatype) && datatype->predefined ? MPI_SUCCESS : MPI_ERR_TYPE;
    if (!rc)
        rc = accumulate_call(origin_addr, 1, datatype, result_addr, 1, datatype,
                             target_rank, target_disp, 1, datatype, op, win, 1);
    return mp_win_err(win, rc, "MPI_Fetch_and_op");
}

static int cas(const void *obuf, const void *cbuf, void *rbuf, MPI_Datatype t, int rank,
               MPI_Aint disp, MPI_Win w)
{
    if (!mp_win_cas_type(t))
        return MPI_ERR_TYPE;
    if (!obuf || !cbuf || !rbuf)
        return MPI_ERR_BUFFER;
    int skip;
    uint64_t off;
    int rc = target_check(w, rank, &skip);
    if (rc || skip)
        return rc;
    if ((rc = target_span(w, rank, disp, 1, t, &off)))
        return rc;
    unsigned char data[2 * 16];
    memcpy(data, obuf, t->size);
    memcpy(data + t->size, cbuf, t->size);
    uint32_t args[A_NARGS] = {[A_KIND] = K_CAS,
                              [A_OFF_LO] = (uint32_t)off,
                              [A_OFF_HI] = (uint32_t)(off >> 32),
                              [A_COUNT] = 1,
                              [A_TYPE] = (uint32_t)mp_type_code(t)};
    return mp_win_request_wait(w, rank, args, data, 2 * t->size, rbuf, t->size, NULL);
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
                         void *result_addr, MPI_Datatype datatype, int target_rank,
                         MPI_Aint target_disp, MPI_Win win)
{
    MP_LOCKED(PMPI_Compare_and_swap, (origin_addr, compare_addr, result_addr, datatype,
                                      target_rank, target_disp, win));
    MP_CHECK_INIT("MPI_Compare_and_swap");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Compare_and_swap");
    return mp_win_err(win,
                      cas(origin_addr, compare_addr, result_addr, datatype, target_rank,
                          target_disp, win),
                      "MPI_Compare_and_swap");
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Put);
MP_PROFILED(MPI_Get);
MP_PROFILED(MPI_Accumulate);
MP_PROFILED(MPI_Get_accumulate);
MP_PROFILED(MPI_Fetch_and_op);
MP_PROFILED(MPI_Compare_and_swap);
