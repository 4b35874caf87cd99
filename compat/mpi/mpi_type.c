/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datatypes, flattened at construction into their blocks of bytes (offset,
 * length, in typemap order, neighbours merged). Non-contiguous data is
 * packed into one buffer before it is sent and unpacked after it is
 * received: flit's tagged layer has no gather send, so the pieces cannot
 * go to the wire straight from the user's memory (docs/mpi.md).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "mpi_internal.h"

#define BASIC(ty, nm, idx)                                                               \
    {                                                                                    \
        .size = sizeof(ty), .lb = 0, .extent = sizeof(ty), .tlb = 0, .tub = sizeof(ty),  \
        .nblocks = 1, .inline_block = {0, sizeof(ty)}, .basic = idx, .pair = -1,         \
        .predefined = 1, .committed = 1, .name = nm                                      \
    }

struct fi {
    float v;
    int i;
};
struct di {
    double v;
    int i;
};
struct li {
    long v;
    int i;
};
struct ii {
    int v;
    int i;
};
struct si {
    short v;
    int i;
};
struct ldi {
    long double v;
    int i;
};

#define PAIR(st, vt, nm, idx)                                                            \
    {                                                                                    \
        .size = sizeof(vt) + sizeof(int), .lb = 0, .extent = sizeof(struct st),          \
        .tlb = 0, .tub = offsetof(struct st, i) + sizeof(int), .nblocks = 2,             \
        .basic = -1, .pair = idx, .predefined = 1, .committed = 1, .name = nm            \
    }

struct flit_mpi_type flit_mpi_t_char = BASIC(char, "MPI_CHAR", 0);
struct flit_mpi_type flit_mpi_t_signed_char = BASIC(signed char, "MPI_SIGNED_CHAR", 1);
struct flit_mpi_type flit_mpi_t_unsigned_char =
    BASIC(unsigned char, "MPI_UNSIGNED_CHAR", 2);
struct flit_mpi_type flit_mpi_t_byte = BASIC(unsigned char, "MPI_BYTE", 3);
struct flit_mpi_type flit_mpi_t_wchar = BASIC(wchar_t, "MPI_WCHAR", 4);
struct flit_mpi_type flit_mpi_t_short = BASIC(short, "MPI_SHORT", 5);
struct flit_mpi_type flit_mpi_t_unsigned_short =
    BASIC(unsigned short, "MPI_UNSIGNED_SHORT", 6);
struct flit_mpi_type flit_mpi_t_int = BASIC(int, "MPI_INT", 7);
struct flit_mpi_type flit_mpi_t_unsigned = BASIC(unsigned, "MPI_UNSIGNED", 8);
struct flit_mpi_type flit_mpi_t_long = BASIC(long, "MPI_LONG", 9);
struct flit_mpi_type flit_mpi_t_unsigned_long =
    BASIC(unsigned long, "MPI_UNSIGNED_LONG", 10);
struct flit_mpi_type flit_mpi_t_long_long_int = BASIC(long long, "MPI_LONG_LONG_INT", 11);
struct flit_mpi_type flit_mpi_t_unsigned_long_long =
    BASIC(unsigned long long, "MPI_UNSIGNED_LONG_LONG", 12);
struct flit_mpi_type flit_mpi_t_float = BASIC(float, "MPI_FLOAT", 13);
struct flit_mpi_type flit_mpi_t_double = BASIC(double, "MPI_DOUBLE", 14);
struct flit_mpi_type flit_mpi_t_long_double = BASIC(long double, "MPI_LONG_DOUBLE", 15);
struct flit_mpi_type flit_mpi_t_int8_t = BASIC(int8_t, "MPI_INT8_T", 16);
struct flit_mpi_type flit_mpi_t_int16_t = BASIC(int16_t, "MPI_INT16_T", 17);
struct flit_mpi_type flit_mpi_t_int32_t = BASIC(int32_t, "MPI_INT32_T", 18);
struct flit_mpi_type flit_mpi_t_int64_t = BASIC(int64_t, "MPI_INT64_T", 19);
struct flit_mpi_type flit_mpi_t_uint8_t = BASIC(uint8_t, "MPI_UINT8_T", 20);
struct flit_mpi_type flit_mpi_t_uint16_t = BASIC(uint16_t, "MPI_UINT16_T", 21);
struct flit_mpi_type flit_mpi_t_uint32_t = BASIC(uint32_t, "MPI_UINT32_T", 22);
struct flit_mpi_type flit_mpi_t_uint64_t = BASIC(uint64_t, "MPI_UINT64_T", 23);
struct flit_mpi_type flit_mpi_t_c_bool = BASIC(_Bool, "MPI_C_BOOL", 24);
struct flit_mpi_type flit_mpi_t_aint = BASIC(MPI_Aint, "MPI_AINT", 25);
struct flit_mpi_type flit_mpi_t_packed = BASIC(unsigned char, "MPI_PACKED", 26);
struct flit_mpi_type flit_mpi_t_float_int = PAIR(fi, float, "MPI_FLOAT_INT", 27);
struct flit_mpi_type flit_mpi_t_double_int = PAIR(di, double, "MPI_DOUBLE_INT", 28);
struct flit_mpi_type flit_mpi_t_long_int = PAIR(li, long, "MPI_LONG_INT", 29);
struct flit_mpi_type flit_mpi_t_2int = PAIR(ii, int, "MPI_2INT", 30);
struct flit_mpi_type flit_mpi_t_short_int = PAIR(si, short, "MPI_SHORT_INT", 31);
struct flit_mpi_type flit_mpi_t_long_double_int =
    PAIR(ldi, long double, "MPI_LONG_DOUBLE_INT", 32);
struct flit_mpi_type flit_mpi_t_c_float_complex =
    BASIC(float _Complex, "MPI_C_FLOAT_COMPLEX", 33);
struct flit_mpi_type flit_mpi_t_c_double_complex =
    BASIC(double _Complex, "MPI_C_DOUBLE_COMPLEX", 34);
struct flit_mpi_type flit_mpi_t_c_long_double_complex =
    BASIC(long double _Complex, "MPI_C_LONG_DOUBLE_COMPLEX", 35);
struct flit_mpi_type flit_mpi_t_offset = BASIC(MPI_Offset, "MPI_OFFSET", 36);
struct flit_mpi_type flit_mpi_t_count = BASIC(MPI_Count, "MPI_COUNT", 37);
static struct flit_mpi_type *const predefined[] = {
    &flit_mpi_t_char,
    &flit_mpi_t_signed_char,
    &flit_mpi_t_unsigned_char,
    &flit_mpi_t_byte,
    &flit_mpi_t_wchar,
    &flit_mpi_t_short,
    &flit_mpi_t_unsigned_short,
    &flit_mpi_t_int,
    &flit_mpi_t_unsigned,
    &flit_mpi_t_long,
    &flit_mpi_t_unsigned_long,
    &flit_mpi_t_long_long_int,
    &flit_mpi_t_unsigned_long_long,
    &flit_mpi_t_float,
    &flit_mpi_t_double,
    &flit_mpi_t_long_double,
    &flit_mpi_t_int8_t,
    &flit_mpi_t_int16_t,
    &flit_mpi_t_int32_t,
    &flit_mpi_t_int64_t,
    &flit_mpi_t_uint8_t,
    &flit_mpi_t_uint16_t,
    &flit_mpi_t_uint32_t,
    &flit_mpi_t_uint64_t,
    &flit_mpi_t_c_bool,
    &flit_mpi_t_aint,
    &flit_mpi_t_packed,
    &flit_mpi_t_float_int,
    &flit_mpi_t_double_int,
    &flit_mpi_t_long_int,
    &flit_mpi_t_2int,
    &flit_mpi_t_short_int,
    &flit_mpi_t_long_double_int,
    &flit_mpi_t_c_float_complex,
    &flit_mpi_t_c_double_complex,
    &flit_mpi_t_c_long_double_complex,
    &flit_mpi_t_offset,
    &flit_mpi_t_count,
};
#define NTYPES (sizeof predefined / sizeof predefined[0])

/* The pair types' blocks: the value, then the int after its padding. */
static mp_block pair_blocks[6][2] = {
    {{0, sizeof(float)}, {offsetof(struct fi, i), sizeof(int)}},
    {{0, sizeof(double)}, {offsetof(struct di, i), sizeof(int)}},
    {{0, sizeof(long)}, {offsetof(struct li, i), sizeof(int)}},
    {{0, sizeof(int)}, {offsetof(struct ii, i), sizeof(int)}},
    {{0, sizeof(short)}, {offsetof(struct si, i), sizeof(int)}},
    {{0, sizeof(long double)}, {offsetof(struct ldi, i), sizeof(int)}},
};

/* Points each predefined type at its blocks (the table cannot, statically,
   point into itself through a macro argument); MPI_Init calls it. */
void mp_type_init(void)
{
    static bool done;
    if (done)
        return;
    for (size_t i = 0; i < NTYPES; i++) {
        struct flit_mpi_type *t = predefined[i];
        t->blocks = t->pair >= 0 ? pair_blocks[t->pair - 27] : &t->inline_block;
        /* a pair's int block is 4 bytes of 4: its size is the two blocks' */
        if (t->pair >= 0 && t->blocks[0].len + t->blocks[1].len == (size_t)t->extent) {
            t->blocks[0].len = (size_t)t->extent;
            t->nblocks = 1;
        }
    }
    done = true;
}

size_t mp_basic_size(int basic)
{
    return basic >= 0 && (size_t)basic < NTYPES ? predefined[basic]->size : 1;
}

MPI_Datatype mp_type_predef(int code)
{
    return code >= 0 && (size_t)code < NTYPES ? predefined[code] : NULL;
}

int mp_type_code(MPI_Datatype t)
{
    if (!t || !t->predefined)
        return -1;
    return t->basic >= 0 ? t->basic : t->pair;
}

int mp_type_ok(MPI_Datatype t)
{
    mp_type_init();
    return t && t->committed && t->refs >= 0 && t->blocks;
}

/* Whether count elements are one run of bytes, from buf + blocks[0].disp. */
int mp_type_contig(MPI_Datatype t, int count)
{
    if (count <= 0)
        return 1;
    if (t->nblocks != 1)
        return 0;
    return count == 1 || (MPI_Aint)t->blocks[0].len == t->extent;
}

size_t mp_type_bytes(MPI_Datatype t, int count)
{
    return count <= 0 ? 0 : t->size * (size_t)count;
}

int mp_type_span(MPI_Datatype t, int count, MPI_Aint *lo, MPI_Aint *hi)
{
    *lo = *hi = 0;
    if (count <= 0 || t->size == 0)
        return 1;
    MPI_Aint step, last;
    if (__builtin_mul_overflow((MPI_Aint)(count - 1), t->extent, &step))
        return 0;
    if (__builtin_add_overflow(t->tlb, step < 0 ? step : 0, lo) ||
        __builtin_add_overflow(t->tub, step > 0 ? step : 0, &last))
        return 0;
    *hi = last;
    return 1;
}

int mp_type_run(MPI_Datatype t, int count, mp_runs *it, MPI_Aint *disp, size_t *len)
{
    MPI_Aint d = 0;
    size_t n = 0;
    while (t->nblocks > 0 && it->i < count) {
        const mp_block *b = &t->blocks[it->b];
        MPI_Aint at = (MPI_Aint)it->i * t->extent + b->disp;
        if (n > 0 && b->len > 0 && at != d + (MPI_Aint)n)
            break; /* a gap, or a step back: the next run */
        if (n == 0)
            d = at;
        n += b->len;
        if (++it->b == t->nblocks) {
            it->b = 0;
            it->i++;
        }
    }
    *disp = d;
    *len = n;
    return n > 0;
}

/* Both ways, count elements of a contiguous type are one run of bytes,
   one memcpy (an element at a time, a char's costs a call per byte). */
void mp_pack(const void *buf, int count, MPI_Datatype t, void *out)
{
    unsigned char *o = out;
    if (count > 0 && mp_type_contig(t, count)) {
        memcpy(o, (const unsigned char *)buf + t->blocks[0].disp,
               mp_type_bytes(t, count));
        return;
    }
    for (int i = 0; i < count; i++) {
        const unsigned char *base = (const unsigned char *)buf + (MPI_Aint)i * t->extent;
        for (size_t b = 0; b < t->nblocks; b++) {
            memcpy(o, base + t->blocks[b].disp, t->blocks[b].len);
            o += t->blocks[b].len;
        }
    }
}

void mp_unpack(const void *in, size_t bytes, void *buf, int count, MPI_Datatype t)
{
    const unsigned char *p = in;
    if (count > 0 && mp_type_contig(t, count)) {
        size_t all = mp_type_bytes(t, count);
        memcpy((unsigned char *)buf + t->blocks[0].disp, p, bytes < all ? bytes : all);
        return;
    }
    for (int i = 0; i < count && bytes; i++) {
        unsigned char *base = (unsigned char *)buf + (MPI_Aint)i * t->extent;
        for (size_t b = 0; b < t->nblocks && bytes; b++) {
            size_t n = t->blocks[b].len < bytes ? t->blocks[b].len : bytes;
            memcpy(base + t->blocks[b].disp, p, n);
            p += n;
            bytes -= n;
        }
    }
}

/* ---- construction ---- */

/* A type being built: blocks appended, neighbours merged, bounds kept. */
typedef struct builder {
    struct flit_mpi_type *t;
    size_t cap;
    int basic; /* -2: nothing yet; -1: mixed */
    bool bounded;
} builder;

static int b_start(builder *b)
{
    mp_type_init();
    memset(b, 0, sizeof *b);
    if (!(b->t = calloc(1, sizeof *b->t)))
        return MPI_ERR_NO_MEM;
    b->t->pair = -1;
    b->t->refs = 1;
    b->basic = -2;
    return MPI_SUCCESS;
}

static int b_block(builder *b, MPI_Aint disp, size_t len)
{
    struct flit_mpi_type *t = b->t;
    if (len == 0)
        return MPI_SUCCESS;
    if (t->nblocks &&
        t->blocks[t->nblocks - 1].disp + (MPI_Aint)t->blocks[t->nblocks - 1].len ==
            disp) {
        t->blocks[t->nblocks - 1].len += len;
    } else {
        if (t->nblocks == b->cap) {
            size_t cap = b->cap ? 2 * b->cap : 8;
            mp_block *nb = realloc(t->blocks, cap * sizeof *nb);
            if (!nb)
                return MPI_ERR_NO_MEM;
            t->blocks = nb;
            b->cap = cap;
        }
        t->blocks[t->nblocks++] = (mp_block){disp, len};
    }
    t->size += len;
    return MPI_SUCCESS;
}

/* Basic elements in one element of t (a pair type's are two). */
static size_t nbasic_of(MPI_Datatype t)
{
    return t->predefined ? (t->pair >= 0 ? 2 : 1) : t->nbasic;
}

/* Widens b's bounds to hold one element of old at byte displacement disp. */
static void b_bounds(builder *b, MPI_Datatype old, MPI_Aint disp)
{
    struct flit_mpi_type *t = b->t;
    MPI_Aint lb = disp + old->lb, ub = disp + old->lb + old->extent;
    MPI_Aint tlb = disp + old->tlb, tub = disp + old->tub;
    if (!b->bounded) {
        t->lb = lb, t->extent = ub - lb, t->tlb = tlb, t->tub = tub;
        b->bounded = true;
    } else {
        MPI_Aint nub = t->lb + t->extent > ub ? t->lb + t->extent : ub;
        t->lb = t->lb < lb ? t->lb : lb;
        t->extent = nub - t->lb;
        t->tlb = t->tlb < tlb ? t->tlb : tlb;
        t->tub = t->tub > tub ? t->tub : tub;
    }
}

/*
 * Appends n elements of old, one extent apart from byte displacement disp.
 * Elements of a type of one block as long as its extent lie end to end:
 * they are one block, added at once, so a vector of 4,096 bytes a row
 * costs a row, not 4,096 elements (the bounds of the first and the last
 * element hold those between).
 */
static int b_elems(builder *b, MPI_Datatype old, MPI_Aint disp, size_t n)
{
    if (n == 0)
        return MPI_SUCCESS;
    MPI_Aint last = disp + (MPI_Aint)(n - 1) * old->extent;
    if (old->nblocks == 1 && old->extent > 0 &&
        (MPI_Aint)old->blocks[0].len == old->extent) {
        int rc = b_block(b, disp + old->blocks[0].disp, old->blocks[0].len * n);
        if (rc)
            return rc;
    } else {
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < old->nblocks; i++) {
                int rc =
                    b_block(b, disp + (MPI_Aint)j * old->extent + old->blocks[i].disp,
                            old->blocks[i].len);
                if (rc)
                    return rc;
            }
    }
    b_bounds(b, old, disp);
    b_bounds(b, old, last);
    int ob = old->pair >= 0 ? -1 : old->basic;
    b->basic = b->basic == -2 ? ob : (b->basic == ob ? ob : -1);
    b->t->nbasic += n * nbasic_of(old);
    return MPI_SUCCESS;
}

static int b_finish(builder *b, int rc, MPI_Datatype *out)
{
    if (rc != MPI_SUCCESS) {
        free(b->t->blocks);
        free(b->t);
        return rc;
    }
    b->t->basic = b->basic < 0 ? -1 : b->basic;
    if (!b->t->blocks) /* empty type: one empty block keeps it valid */
        b->t->blocks = &b->t->inline_block;
    *out = b->t;
    return MPI_SUCCESS;
}

static int check_old(MPI_Datatype old, int count, void *out)
{
    mp_type_init();
    if (!out)
        return MPI_ERR_ARG;
    if (count < 0)
        return MPI_ERR_COUNT;
    if (!old || !old->blocks || old->refs < 0)
        return MPI_ERR_TYPE;
    return MPI_SUCCESS;
}

#define TYPE_FAIL(rc, fn) mp_err(MPI_COMM_NULL, rc, fn)

/* The end of a public constructor: *newtype, made (rc MPI_SUCCESS),
   records how (mpi_envelope.c); without memory for that it is not made. */
static int made(int rc, MPI_Datatype *newtype, int combiner, const mp_iseg *iseg,
                int nseg, int na, const MPI_Aint *aints, int nd,
                const MPI_Datatype *types, const char *fn)
{
    if (rc != MPI_SUCCESS)
        return rc;
    if (mp_type_made(*newtype, combiner, iseg, nseg, na, aints, nd, types) == MPI_SUCCESS)
        return MPI_SUCCESS;
    mp_type_release(*newtype);
    *newtype = MPI_DATATYPE_NULL;
    return TYPE_FAIL(MPI_ERR_NO_MEM, fn);
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype old,
                            MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_create_hvector, (count, blocklength, stride, old, newtype));
    int rc = check_old(old, count, newtype);
    if (!rc && blocklength < 0)
        rc = MPI_ERR_ARG;
    if (rc)
        return TYPE_FAIL(rc, "MPI_Type_create_hvector");
    builder b;
    if ((rc = b_start(&b)))
        return TYPE_FAIL(rc, "MPI_Type_create_hvector");
    for (int i = 0; i < count && !rc; i++)
        rc = b_elems(&b, old, i * stride, (size_t)blocklength);
    if ((rc = b_finish(&b, rc, newtype)))
        return TYPE_FAIL(rc, "MPI_Type_create_hvector");
    int h[2] = {count, blocklength};
    return made(rc, newtype, MPI_COMBINER_HVECTOR, &(mp_iseg){h, 2}, 1, 1, &stride, 1,
                &old, "MPI_Type_create_hvector");
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype old,
                    MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_vector, (count, blocklength, stride, old, newtype));
    int rc = check_old(old, count, newtype);
    if (rc)
        return TYPE_FAIL(rc, "MPI_Type_vector");
    rc = PMPI_Type_create_hvector(count, blocklength, (MPI_Aint)stride * old->extent, old,
                                  newtype);
    int h[3] = {count, blocklength, stride};
    return made(rc, newtype, MPI_COMBINER_VECTOR, &(mp_iseg){h, 3}, 1, 0, NULL, 1, &old,
                "MPI_Type_vector");
}

int MPI_Type_contiguous(int count, MPI_Datatype old, MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_contiguous, (count, old, newtype));
    int rc = check_old(old, count, newtype);
    if (rc)
        return TYPE_FAIL(rc, "MPI_Type_contiguous");
    rc = PMPI_Type_create_hvector(1, count, 0, old, newtype);
    return made(rc, newtype, MPI_COMBINER_CONTIGUOUS, &(mp_iseg){&count, 1}, 1, 0, NULL,
                1, &old, "MPI_Type_contiguous");
}

int MPI_Type_create_hindexed(int count, const int blocklengths[],
                             const MPI_Aint displacements[], MPI_Datatype old,
                             MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_create_hindexed,
              (count, blocklengths, displacements, old, newtype));
    int rc = check_old(old, count, newtype);
    if (!rc && count && (!blocklengths || !displacements))
        rc = MPI_ERR_ARG;
    for (int i = 0; !rc && i < count; i++)
        if (blocklengths[i] < 0)
            rc = MPI_ERR_ARG;
    if (rc)
        return TYPE_FAIL(rc, "MPI_Type_create_hindexed");
    builder b;
    if ((rc = b_start(&b)))
        return TYPE_FAIL(rc, "MPI_Type_create_hindexed");
    for (int i = 0; i < count && !rc; i++)
        rc = b_elems(&b, old, displacements[i], (size_t)blocklengths[i]);
    if ((rc = b_finish(&b, rc, newtype)))
        return TYPE_FAIL(rc, "MPI_Type_create_hindexed");
    mp_iseg is[2] = {{&count, 1}, {blocklengths, count}};
    return made(rc, newtype, MPI_COMBINER_HINDEXED, is, 2, count, displacements, 1, &old,
                "MPI_Type_create_hindexed");
}

int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
                     MPI_Datatype old, MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_indexed, (count, blocklengths, displacements, old, newtype));
    int rc = check_old(old, count, newtype);
    if (!rc && count && !displacements)
        rc = MPI_ERR_ARG;
    if (rc)
        return TYPE_FAIL(rc, "MPI_Type_indexed");
    MPI_Aint *d = malloc((count ? (size_t)count : 1) * sizeof *d);
    if (!d)
        return TYPE_FAIL(MPI_ERR_NO_MEM, "MPI_Type_indexed");
    for (int i = 0; i < count; i++)
        d[i] = (MPI_Aint)displacements[i] * old->extent;
    rc = PMPI_Type_create_hindexed(count, blocklengths, d, old, newtype);
    free(d);
    mp_iseg is[3] = {{&count, 1}, {blocklengths, count}, {displacements, count}};
    return made(rc, newtype, MPI_COMBINER_INDEXED, is, 3, 0, NULL, 1, &old,
                "MPI_Type_indexed");
}

int MPI_Type_create_struct(int count, const int blocklengths[],
                           const MPI_Aint displacements[], const MPI_Datatype types[],
                           MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_create_struct,
              (count, blocklengths, displacements, types, newtype));
    mp_type_init();
    int rc = !newtype ? MPI_ERR_ARG : count < 0 ? MPI_ERR_COUNT : MPI_SUCCESS;
    if (!rc && count && (!blocklengths || !displacements || !types))
        rc = MPI_ERR_ARG;
    for (int i = 0; !rc && i < count; i++)
        rc = check_old(types[i], blocklengths[i], newtype);
    if (rc)
        return TYPE_FAIL(rc == MPI_ERR_COUNT ? MPI_ERR_ARG : rc,
                         "MPI_Type_create_struct");
    builder b;
    if ((rc = b_start(&b)))
        return TYPE_FAIL(rc, "MPI_Type_create_struct");
    for (int i = 0; i < count && !rc; i++)
        rc = b_elems(&b, types[i], displacements[i], (size_t)blocklengths[i]);
    if ((rc = b_finish(&b, rc, newtype)))
        return TYPE_FAIL(rc, "MPI_Type_create_struct");
    mp_iseg is[2] = {{&count, 1}, {blocklengths, count}};
    return made(rc, newtype, MPI_COMBINER_STRUCT, is, 2, count, displacements, count,
                types, "MPI_Type_create_struct");
}

int MPI_Type_create_resized(MPI_Datatype old, MPI_Aint lb, MPI_Aint extent,
                            MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_create_resized, (old, lb, extent, newtype));
    int rc = check_old(old, 1, newtype);
    if (rc)
        return TYPE_FAIL(rc, "MPI_Type_create_resized");
    builder b;
    if ((rc = b_start(&b)))
        return TYPE_FAIL(rc, "MPI_Type_create_resized");
    rc = b_elems(&b, old, 0, 1);
    if ((rc = b_finish(&b, rc, newtype)))
        return TYPE_FAIL(rc, "MPI_Type_create_resized");
    (*newtype)->lb = lb;
    (*newtype)->extent = extent;
    MPI_Aint a[2] = {lb, extent};
    return made(rc, newtype, MPI_COMBINER_RESIZED, NULL, 0, 2, a, 1, &old,
                "MPI_Type_create_resized");
}

int MPI_Type_dup(MPI_Datatype old, MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_dup, (old, newtype));
    int rc =
        PMPI_Type_create_resized(old, old ? old->lb : 0, old ? old->extent : 0, newtype);
    if (rc == MPI_SUCCESS && old->committed)
        (*newtype)->committed = 1;
    return made(rc, newtype, MPI_COMBINER_DUP, NULL, 0, 0, NULL, 1, &old, "MPI_Type_dup");
}

/* ---- constructors made of the ones above ---- */

/* count blocks of blocklength each, at int displacements in elements
   (displs) or MPI_Aint ones in bytes (hdispls). */
static int blocks_of(int count, int blocklength, const int *displs,
                     const MPI_Aint *hdispls, MPI_Datatype old, MPI_Datatype *newtype,
                     const char *fn)
{
    if (count < 0 || blocklength < 0)
        return TYPE_FAIL(count < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, fn);
    int *bl = malloc((count ? (size_t)count : 1) * sizeof *bl);
    if (!bl)
        return TYPE_FAIL(MPI_ERR_NO_MEM, fn);
    for (int i = 0; i < count; i++)
        bl[i] = blocklength;
    int rc = hdispls ? PMPI_Type_create_hindexed(count, bl, hdispls, old, newtype)
                     : PMPI_Type_indexed(count, bl, displs, old, newtype);
    free(bl);
    return rc;
}

int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
                                  MPI_Datatype old, MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_create_indexed_block,
              (count, blocklength, displacements, old, newtype));
    int rc = blocks_of(count, blocklength, displacements, NULL, old, newtype,
                       "MPI_Type_create_indexed_block");
    int h[2] = {count, blocklength};
    mp_iseg is[2] = {{h, 2}, {displacements, count}};
    return made(rc, newtype, MPI_COMBINER_INDEXED_BLOCK, is, 2, 0, NULL, 1, &old,
                "MPI_Type_create_indexed_block");
}

int MPI_Type_create_hindexed_block(int count, int blocklength,
                                   const MPI_Aint displacements[], MPI_Datatype old,
                                   MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_create_hindexed_block,
              (count, blocklength, displacements, old, newtype));
    if (count > 0 && !displacements)
        return TYPE_FAIL(MPI_ERR_ARG, "MPI_Type_create_hindexed_block");
    int rc = blocks_of(count, blocklength, NULL, displacements, old, newtype,
                       "MPI_Type_create_hindexed_block");
    int h[2] = {count, blocklength};
    return made(rc, newtype, MPI_COMBINER_HINDEXED_BLOCK, &(mp_iseg){h, 2}, 1, count,
                displacements, 1, &old, "MPI_Type_create_hindexed_block");
}

static int subarray_ok(int ndims, const int *sizes, const int *subsizes,
                       const int *starts, int order)
{
    if (ndims <= 0 || ndims > MP_MAX_DIMS || !sizes || !subsizes || !starts)
        return 0;
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return 0;
    for (int d = 0; d < ndims; d++)
        if (sizes[d] <= 0 || subsizes[d] <= 0 || subsizes[d] > sizes[d] ||
            starts[d] < 0 || starts[d] > sizes[d] - subsizes[d])
            return 0;
    return 1;
}

/* The rows of the sub-array (runs along its fastest dimension) as an
   hindexed type, resized to the whole array's extent, as MPI defines it. */
int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[],
                             const int starts[], int order, MPI_Datatype old,
                             MPI_Datatype *newtype)
{
    MP_LOCKED(PMPI_Type_create_subarray,
              (ndims, sizes, subsizes, starts, order, old, newtype));
    static const char fn[] = "MPI_Type_create_subarray";
    int rc = check_old(old, 1, newtype);
    if (rc)
        return TYPE_FAIL(rc, fn);
    if (!subarray_ok(ndims, sizes, subsizes, starts, order))
        return TYPE_FAIL(MPI_ERR_ARG, fn);
    /* stride of each dimension, in elements; f: the fastest */
    MPI_Aint stride[ndims], total = 1, rows = 1;
    int f = order == MPI_ORDER_C ? ndims - 1 : 0;
    for (int k = 0; k < ndims; k++) {
        int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
        stride[d] = total;
        total *= sizes[d];
        if (d != f)
            rows *= subsizes[d];
    }
    if (rows > 0x7fffffff)
        return TYPE_FAIL(MPI_ERR_ARG, fn);
    MPI_Aint *disp = malloc((size_t)rows * sizeof *disp);
    int *len = malloc((size_t)rows * sizeof *len), idx[ndims];
    if (!disp || !len) {
        free(disp);
        free(len);
        return TYPE_FAIL(MPI_ERR_NO_MEM, fn);
    }
    for (int d = 0; d < ndims; d++)
        idx[d] = 0;
    for (MPI_Aint r = 0; r < rows; r++) { /* an odometer over the slow dimensions */
        MPI_Aint at = 0;
        for (int d = 0; d < ndims; d++)
            at += (starts[d] + (d == f ? 0 : idx[d])) * stride[d];
        disp[r] = at * old->extent;
        len[r] = subsizes[f];
        for (int k = 0; k < ndims; k++) {
            int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
            if (d == f)
                continue;
            if (++idx[d] < subsizes[d])
                break;
            idx[d] = 0;
        }
    }
    MPI_Datatype rowsT;
    rc = PMPI_Type_create_hindexed((int)rows, len, disp, old, &rowsT);
    free(disp);
    free(len);
    if (rc)
        return rc;
    rc = PMPI_Type_create_resized(rowsT, 0, total * old->extent, newtype);
    mp_type_release(rowsT);
    mp_iseg is[5] = {
        {&ndims, 1}, {sizes, ndims}, {subsizes, ndims}, {starts, ndims}, {&order, 1}};
    return made(rc, newtype, MPI_COMBINER_SUBARRAY, is, 5, 0, NULL, 1, &old, fn);
}

int MPI_Type_commit(MPI_Datatype *datatype)
{
    MP_LOCKED(PMPI_Type_commit, (datatype));
    mp_type_init();
    if (!datatype || !*datatype || (*datatype)->refs < 0)
        return TYPE_FAIL(MPI_ERR_TYPE, "MPI_Type_commit");
    (*datatype)->committed = 1;
    return MPI_SUCCESS;
}

/* A derived type's memory goes when its handle is freed and no pending
   request still names it (refs: the handle's one plus a request's each). */
void mp_type_release(MPI_Datatype t)
{
    if (!t || t->predefined || --t->refs > 0)
        return;
    mp_type_forget(t);
    if (t->blocks != &t->inline_block)
        free(t->blocks);
    free(t);
}

int MPI_Type_free(MPI_Datatype *datatype)
{
    MP_LOCKED(PMPI_Type_free, (datatype));
    mp_type_init();
    if (!datatype || !*datatype || (*datatype)->predefined || (*datatype)->refs <= 0)
        return TYPE_FAIL(MPI_ERR_TYPE, "MPI_Type_free");
    mp_type_release(*datatype);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}

int mp_type_live(MPI_Datatype t)
{
    mp_type_init();
    return t && t->blocks && t->refs >= 0 && (t->predefined || t->refs > 0);
}

/* The checks of a query of t's: t usable, both answers wanted (a
   query with one answer passes it twice). An error class, or 0. */
static int type_query(MPI_Datatype t, const void *a, const void *b, const char *fn)
{
    if (!mp_type_live(t))
        return TYPE_FAIL(MPI_ERR_TYPE, fn);
    if (!a || !b)
        return TYPE_FAIL(MPI_ERR_ARG, fn);
    return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size)
{
    MP_LOCKED(PMPI_Type_size, (datatype, size));
    int rc = type_query(datatype, size, size, "MPI_Type_size");
    if (rc == MPI_SUCCESS)
        *size = datatype->size > 0x7fffffff ? MPI_UNDEFINED : (int)datatype->size;
    return rc;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    MP_LOCKED(PMPI_Type_get_extent, (datatype, lb, extent));
    int rc = type_query(datatype, lb, extent, "MPI_Type_get_extent");
    if (rc == MPI_SUCCESS)
        *lb = datatype->lb, *extent = datatype->extent;
    return rc;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
                             MPI_Aint *true_extent)
{
    MP_LOCKED(PMPI_Type_get_true_extent, (datatype, true_lb, true_extent));
    int rc = type_query(datatype, true_lb, true_extent, "MPI_Type_get_true_extent");
    if (rc == MPI_SUCCESS)
        *true_lb = datatype->tlb, *true_extent = datatype->tub - datatype->tlb;
    return rc;
}

/* The MPI_Count twins (MPI 3.1, 4.1.5 and 4.1.8): sizes and extents past
   what an int holds. */
int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    MP_LOCKED(PMPI_Type_size_x, (datatype, size));
    int rc = type_query(datatype, size, size, "MPI_Type_size_x");
    if (rc == MPI_SUCCESS)
        *size = (MPI_Count)datatype->size;
    return rc;
}

int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    MP_LOCKED(PMPI_Type_get_extent_x, (datatype, lb, extent));
    int rc = type_query(datatype, lb, extent, "MPI_Type_get_extent_x");
    if (rc == MPI_SUCCESS)
        *lb = datatype->lb, *extent = datatype->extent;
    return rc;
}

int MPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
                               MPI_Count *true_extent)
{
    MP_LOCKED(PMPI_Type_get_true_extent_x, (datatype, true_lb, true_extent));
    int rc = type_query(datatype, true_lb, true_extent, "MPI_Type_get_true_extent_x");
    if (rc == MPI_SUCCESS)
        *true_lb = datatype->tlb, *true_extent = datatype->tub - datatype->tlb;
    return rc;
}

/* Whole elements give their basic elements; a part of one is counted in
   basic elements when the type is made of one basic type, else it is
   undefined (SIZE_MAX: the type map's order is not kept past
   construction). An error class, or 0 with the count in *n. */
static int elements(const MPI_Status *status, MPI_Datatype t, const void *out, size_t *n,
                    const char *fn)
{
    if (!status || !out)
        return TYPE_FAIL(MPI_ERR_ARG, fn);
    if (!mp_type_ok(t))
        return TYPE_FAIL(MPI_ERR_TYPE, fn);
    size_t bytes = status->flit_bytes, size = t->size;
    if (size == 0)
        *n = 0;
    else if (bytes % size == 0)
        *n = bytes / size * nbasic_of(t);
    else if (t->basic >= 0 && bytes % mp_basic_size(t->basic) == 0)
        *n = bytes / mp_basic_size(t->basic);
    else
        *n = SIZE_MAX;
    return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MP_LOCKED(PMPI_Get_elements, (status, datatype, count));
    size_t n;
    int rc = elements(status, datatype, count, &n, "MPI_Get_elements");
    if (rc == MPI_SUCCESS)
        *count = n > 0x7fffffff ? MPI_UNDEFINED : (int)n;
    return rc;
}

int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    MP_LOCKED(PMPI_Get_elements_x, (status, datatype, count));
    size_t n;
    int rc = elements(status, datatype, count, &n, "MPI_Get_elements_x");
    if (rc == MPI_SUCCESS)
        *count = n == SIZE_MAX ? MPI_UNDEFINED : (MPI_Count)n;
    return rc;
}

int MPI_Get_address(const void *location, MPI_Aint *address)
{
    MP_LOCKED(PMPI_Get_address, (location, address));
    if (!address)
        return TYPE_FAIL(MPI_ERR_ARG, "MPI_Get_address");
    *address = (MPI_Aint)location;
    return MPI_SUCCESS;
}

/* Address arithmetic (MPI 3.1, 4.1.5): plain integer arithmetic on this
   flat address space. */
MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}

MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Type_create_hvector);
MP_PROFILED(MPI_Type_vector);
MP_PROFILED(MPI_Type_contiguous);
MP_PROFILED(MPI_Type_create_hindexed);
MP_PROFILED(MPI_Type_indexed);
MP_PROFILED(MPI_Type_create_struct);
MP_PROFILED(MPI_Type_create_resized);
MP_PROFILED(MPI_Type_dup);
MP_PROFILED(MPI_Get_elements);
MP_PROFILED(MPI_Type_create_indexed_block);
MP_PROFILED(MPI_Type_create_hindexed_block);
MP_PROFILED(MPI_Type_create_subarray);
MP_PROFILED(MPI_Type_commit);
MP_PROFILED(MPI_Type_free);
MP_PROFILED(MPI_Type_size);
MP_PROFILED(MPI_Type_get_extent);
MP_PROFILED(MPI_Type_get_true_extent);
MP_PROFILED(MPI_Get_address);
MP_PROFILED(MPI_Get_elements_x);
MP_PROFILED(MPI_Type_size_x);
MP_PROFILED(MPI_Type_get_extent_x);
MP_PROFILED(MPI_Type_get_true_extent_x);
MP_PROFILED(MPI_Aint_add);
MP_PROFILED(MPI_Aint_diff);
