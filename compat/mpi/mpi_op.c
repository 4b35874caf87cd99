/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reduction operations: the predefined ones on every basic type MPI allows
 * them on (MPI_ERR_OP elsewhere), MAXLOC/MINLOC on the pair types, and
 * the program's own (MPI_Op_create). Collectives apply them to packed
 * data: a sequence of basic elements (or of packed pairs: value then int).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

struct flit_mpi_op flit_mpi_op_sum = {.id = OP_SUM, .commute = 1, .refs = 1},
                   flit_mpi_op_prod = {.id = OP_PROD, .commute = 1, .refs = 1},
                   flit_mpi_op_max = {.id = OP_MAX, .commute = 1, .refs = 1},
                   flit_mpi_op_min = {.id = OP_MIN, .commute = 1, .refs = 1},
                   flit_mpi_op_land = {.id = OP_LAND, .commute = 1, .refs = 1},
                   flit_mpi_op_lor = {.id = OP_LOR, .commute = 1, .refs = 1},
                   flit_mpi_op_lxor = {.id = OP_LXOR, .commute = 1, .refs = 1},
                   flit_mpi_op_band = {.id = OP_BAND, .commute = 1, .refs = 1},
                   flit_mpi_op_bor = {.id = OP_BOR, .commute = 1, .refs = 1},
                   flit_mpi_op_bxor = {.id = OP_BXOR, .commute = 1, .refs = 1},
                   flit_mpi_op_maxloc = {.id = OP_MAXLOC, .commute = 1, .refs = 1},
                   flit_mpi_op_minloc = {.id = OP_MINLOC, .commute = 1, .refs = 1},
                   flit_mpi_op_replace = {.id = OP_REPLACE, .commute = 0, .refs = 1},
                   flit_mpi_op_no_op = {.id = OP_NO_OP, .commute = 0, .refs = 1};

#define FOR(stmt)                                                                        \
    for (size_t i = 0; i < n; i++)                                                       \
        stmt;                                                                            \
    return MPI_SUCCESS
#define ARITH(T)                                                                         \
    case OP_SUM:                                                                         \
        FOR(b[i] = (T)(b[i] + a[i]));                                                    \
    case OP_PROD:                                                                        \
        FOR(b[i] = (T)(b[i] * a[i]));                                                    \
    case OP_MAX:                                                                         \
        FOR(b[i] = a[i] > b[i] ? a[i] : b[i]);                                           \
    case OP_MIN:                                                                         \
        FOR(b[i] = a[i] < b[i] ? a[i] : b[i]);
#define LOGIC(T)                                                                         \
    case OP_LAND:                                                                        \
        FOR(b[i] = (T)(a[i] && b[i]));                                                   \
    case OP_LOR:                                                                         \
        FOR(b[i] = (T)(a[i] || b[i]));                                                   \
    case OP_LXOR:                                                                        \
        FOR(b[i] = (T)(!a[i] != !b[i]));
#define BITS(T)                                                                          \
    case OP_BAND:                                                                        \
        FOR(b[i] = (T)(a[i] & b[i]));                                                    \
    case OP_BOR:                                                                         \
        FOR(b[i] = (T)(a[i] | b[i]));                                                    \
    case OP_BXOR:                                                                        \
        FOR(b[i] = (T)(a[i] ^ b[i]));
/* Complex numbers: MPI_SUM and MPI_PROD only (MPI 3.1, 5.9.2). */
#define CARITH(T)                                                                        \
    case OP_SUM:                                                                         \
        FOR(b[i] = b[i] + a[i]);                                                         \
    case OP_PROD:                                                                        \
        FOR(b[i] = b[i] * a[i]);
#define KIND(idx, T, OPS)                                                                \
    case idx: {                                                                          \
        const T *a = in;                                                                 \
        T *b = io;                                                                       \
        switch (op) {                                                                    \
            OPS default : return MPI_ERR_OP;                                             \
        }                                                                                \
    }
#define INTEGER(idx, T) KIND(idx, T, ARITH(T) LOGIC(T) BITS(T))

/* b[i] = a[i] op b[i] for n elements of basic type `basic`. */
static int basic_op(int op, int basic, const void *in, void *io, size_t n)
{
    switch (basic) {
        INTEGER(0, char)
        INTEGER(1, signed char)
        INTEGER(2, unsigned char)
        KIND(3, unsigned char, BITS(unsigned char))
        INTEGER(5, short)
        INTEGER(6, unsigned short)
        INTEGER(7, int)
        INTEGER(8, unsigned)
        INTEGER(9, long)
        INTEGER(10, unsigned long)
        INTEGER(11, long long)
        INTEGER(12, unsigned long long)
        KIND(13, float, ARITH(float))
        KIND(14, double, ARITH(double))
        KIND(15, long double, ARITH(long double))
        INTEGER(16, int8_t)
        INTEGER(17, int16_t)
        INTEGER(18, int32_t)
        INTEGER(19, int64_t)
        INTEGER(20, uint8_t)
        INTEGER(21, uint16_t)
        INTEGER(22, uint32_t)
        INTEGER(23, uint64_t)
        KIND(24, _Bool, LOGIC(_Bool))
        INTEGER(25, MPI_Aint)
        KIND(33, float _Complex, CARITH(float _Complex))
        KIND(34, double _Complex, CARITH(double _Complex))
        KIND(35, long double _Complex, CARITH(long double _Complex))
        INTEGER(36, MPI_Offset)
        INTEGER(37, MPI_Count)
    default:
        return MPI_ERR_OP; /* MPI_WCHAR, MPI_PACKED: no operation */
    }
}

/* MAXLOC/MINLOC on n packed pairs (value, int): the better value, and the
   smaller index of equal ones. */
#define LOC(idx, V)                                                                      \
    case idx:                                                                            \
        for (size_t k = 0; k < n; k++) {                                                 \
            const unsigned char *pa = (const unsigned char *)in + k * (sizeof(V) + 4);   \
            unsigned char *pb = (unsigned char *)io + k * (sizeof(V) + 4);               \
            V va, vb;                                                                    \
            int ia, ib;                                                                  \
            memcpy(&va, pa, sizeof va), memcpy(&ia, pa + sizeof(V), 4);                  \
            memcpy(&vb, pb, sizeof vb), memcpy(&ib, pb + sizeof(V), 4);                  \
            int take = max ? va > vb : va < vb;                                          \
            if (take || (va == vb && ia < ib))                                           \
                memcpy(pb, pa, sizeof(V) + 4);                                           \
        }                                                                                \
        return MPI_SUCCESS;

static int loc_op(int max, int pair, const void *in, void *io, size_t n)
{
    switch (pair) {
        LOC(27, float)
        LOC(28, double)
        LOC(29, long)
        LOC(30, int)
        LOC(31, short)
        LOC(32, long double)
    default:
        return MPI_ERR_OP;
    }
}

int mp_op_ok(MPI_Op op, MPI_Datatype t)
{
    if (!op || op->refs <= 0)
        return MPI_ERR_OP;
    if (op->fn)
        return MPI_SUCCESS;
    if (op->id == OP_MAXLOC || op->id == OP_MINLOC) {
        MPI_Datatype pt = t;
        return pt->pair >= 0 ? MPI_SUCCESS : MPI_ERR_OP;
    }
    if (t->basic < 0)
        return MPI_ERR_OP;
    /* allowed on the type if on one element of it (the largest basic type,
       long double _Complex, is 32 bytes) */
    _Alignas(max_align_t) unsigned char a[32] = {0}, b[32] = {0};
    return basic_op(op->id, t->basic, a, b, 1);
}

/* A user function sees the type's own layout: non-contiguous data is
   unpacked for it and packed again. */
static int user_op(MPI_Op op, const void *in, void *io, int count, MPI_Datatype t)
{
    MPI_Datatype tt = t;
    if (mp_type_contig(t, count)) {
        op->fn((void *)in, io, &count, &tt);
        return MPI_SUCCESS;
    }
    size_t span = (size_t)(count ? (count - 1) * t->extent + t->tub - t->tlb : 0);
    char *ua = malloc(span + 1), *ub = malloc(span + 1);
    if (!ua || !ub) {
        free(ua);
        free(ub);
        return MPI_ERR_NO_MEM;
    }
    /* buffers placed so that the type's true lower bound is their start */
    mp_unpack(in, mp_type_bytes(t, count), ua - t->tlb, count, t);
    mp_unpack(io, mp_type_bytes(t, count), ub - t->tlb, count, t);
    op->fn(ua - t->tlb, ub - t->tlb, &count, &tt);
    mp_pack(ub - t->tlb, count, t, io);
    free(ua);
    free(ub);
    return MPI_SUCCESS;
}

int mp_op_apply(MPI_Op op, const void *in, void *io, int count, MPI_Datatype t)
{
    if (count == 0)
        return MPI_SUCCESS;
    if (op->fn)
        return user_op(op, in, io, count, t);
    if (op->id == OP_MAXLOC || op->id == OP_MINLOC)
        return loc_op(op->id == OP_MAXLOC, t->pair, in, io, (size_t)count);
    size_t esize = mp_basic_size(t->basic);
    return basic_op(op->id, t->basic, in, io, mp_type_bytes(t, count) / esize);
}

/* inoutbuf = inbuf op inoutbuf, here, on count elements (MPI 3.1, 5.9.7). */
int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op)
{
    MP_LOCKED(PMPI_Reduce_local, (inbuf, inoutbuf, count, datatype, op));
    int rc = mp_check_buf(inbuf, count, datatype);
    if (!rc)
        rc = mp_check_buf(inoutbuf, count, datatype);
    if (!rc)
        rc = op ? mp_op_ok(op, datatype) : MPI_ERR_OP;
    if (rc)
        return mp_err(MPI_COMM_NULL, rc, "MPI_Reduce_local");
    size_t n = mp_type_bytes(datatype, count);
    void *in = malloc(n ? n : 1), *io = malloc(n ? n : 1);
    if (!in || !io) {
        free(in);
        free(io);
        return mp_err(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Reduce_local");
    }
    mp_pack(inbuf, count, datatype, in);
    mp_pack(inoutbuf, count, datatype, io);
    rc = mp_op_apply(op, in, io, count, datatype);
    if (!rc)
        mp_unpack(io, n, inoutbuf, count, datatype);
    free(in);
    free(io);
    return mp_err(MPI_COMM_NULL, rc, "MPI_Reduce_local");
}

int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    MP_LOCKED(PMPI_Op_create, (user_fn, commute, op));
    if (!user_fn || !op)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Op_create");
    MPI_Op o = calloc(1, sizeof *o);
    if (!o)
        return mp_err(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Op_create");
    *o = (struct flit_mpi_op){
        .id = OP_USER, .fn = user_fn, .commute = commute != 0, .refs = 1};
    *op = o;
    return MPI_SUCCESS;
}

int MPI_Op_free(MPI_Op *op)
{
    MP_LOCKED(PMPI_Op_free, (op));
    if (!op || !*op || !(*op)->fn || (*op)->refs <= 0)
        return mp_err(MPI_COMM_NULL, MPI_ERR_OP, "MPI_Op_free");
    (*op)->refs = 0;
    free(*op);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

int MPI_Op_commutative(MPI_Op op, int *commute)
{
    MP_LOCKED(PMPI_Op_commutative, (op, commute));
    if (!op || op->refs <= 0)
        return mp_err(MPI_COMM_NULL, MPI_ERR_OP, "MPI_Op_commutative");
    if (!commute)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Op_commutative");
    *commute = op->commute;
    return MPI_SUCCESS;
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Op_create);
MP_PROFILED(MPI_Reduce_local);
MP_PROFILED(MPI_Op_free);
MP_PROFILED(MPI_Op_commutative);
