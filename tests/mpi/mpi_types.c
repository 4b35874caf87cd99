/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datatypes (2 ranks at least; ranks 0 and 1 exchange): every predefined
 * basic type's size, the pair types' layout, and derived types with holes
 * (vector, hvector, indexed, hindexed, struct, resized, contiguous, dup)
 * sent and received both ways round, the holes left untouched, counts,
 * truncation, a type freed while a request still uses it; the complex
 * types, MPI_OFFSET and MPI_COUNT, the MPI_Count queries; every
 * constructor's envelope and contents; non-contiguous sends gathered and
 * packed; types of GiBs in few blocks.
 */
#include <complex.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "mpi_check.h"

static int rank;

static void sizes(void)
{
    struct {
        MPI_Datatype t;
        int size;
    } b[] = {
        {MPI_CHAR, sizeof(char)},
        {MPI_SIGNED_CHAR, 1},
        {MPI_UNSIGNED_CHAR, 1},
        {MPI_BYTE, 1},
        {MPI_WCHAR, sizeof(wchar_t)},
        {MPI_SHORT, sizeof(short)},
        {MPI_UNSIGNED_SHORT, sizeof(short)},
        {MPI_INT, sizeof(int)},
        {MPI_UNSIGNED, sizeof(unsigned)},
        {MPI_LONG, sizeof(long)},
        {MPI_UNSIGNED_LONG, sizeof(long)},
        {MPI_LONG_LONG, sizeof(long long)},
        {MPI_LONG_LONG_INT, sizeof(long long)},
        {MPI_UNSIGNED_LONG_LONG, sizeof(long long)},
        {MPI_FLOAT, sizeof(float)},
        {MPI_DOUBLE, sizeof(double)},
        {MPI_LONG_DOUBLE, sizeof(long double)},
        {MPI_INT8_T, 1},
        {MPI_INT16_T, 2},
        {MPI_INT32_T, 4},
        {MPI_INT64_T, 8},
        {MPI_UINT8_T, 1},
        {MPI_UINT16_T, 2},
        {MPI_UINT32_T, 4},
        {MPI_UINT64_T, 8},
        {MPI_C_BOOL, sizeof(_Bool)},
        {MPI_AINT, sizeof(MPI_Aint)},
        {MPI_PACKED, 1},
        {MPI_2INT, 2 * sizeof(int)},
        {MPI_SHORT_INT, sizeof(short) + sizeof(int)},
        {MPI_DOUBLE_INT, sizeof(double) + sizeof(int)},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        int s = -1;
        OK(MPI_Type_size(b[i].t, &s));
        CHECK(s == b[i].size);
    }
    struct di {
        double d;
        int i;
    };
    MPI_Aint lb = -1, ext = -1;
    OK(MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext));
    CHECK(lb == 0 && ext == sizeof(struct di));
    /* a pair sent and received keeps its int after the padding */
    struct di p[2] = {{1.5, 7}, {-2.25, 9}}, q[2];
    memset(q, 0, sizeof q);
    OK(MPI_Sendrecv(p, 2, MPI_DOUBLE_INT, 0, 1, q, 2, MPI_DOUBLE_INT, 0, 1, MPI_COMM_SELF,
                    MPI_STATUS_IGNORE));
    CHECK(q[0].d == 1.5 && q[0].i == 7 && q[1].d == -2.25 && q[1].i == 9);
}

/* A column of a 4x5 matrix of doubles: sent from a column, received into a
   contiguous array and into another matrix's column (the rest untouched). */
static void vector(void)
{
    double m[4][5], col[4], r[4][5];
    MPI_Datatype column;
    OK(MPI_Type_vector(4, 1, 5, MPI_DOUBLE, &column));
    OK(MPI_Type_commit(&column));
    int s;
    MPI_Aint lb, ext;
    OK(MPI_Type_size(column, &s));
    OK(MPI_Type_get_extent(column, &lb, &ext));
    CHECK(s == 4 * (int)sizeof(double) && lb == 0 && ext == (3 * 5 + 1) * sizeof(double));
    MPI_Status st;
    if (rank == 0) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 5; j++)
                m[i][j] = i * 10 + j;
        OK(MPI_Send(&m[0][2], 1, column, 1, 1, MPI_COMM_WORLD));
        OK(MPI_Send(&m[0][3], 1, column, 1, 2, MPI_COMM_WORLD));
        OK(MPI_Send(col, 0, column, 1, 3, MPI_COMM_WORLD)); /* zero count */
    } else if (rank == 1) {
        OK(MPI_Recv(col, 4, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &st));
        for (int i = 0; i < 4; i++)
            CHECK(col[i] == i * 10 + 2);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 5; j++)
                r[i][j] = -1;
        OK(MPI_Recv(&r[0][1], 1, column, 0, 2, MPI_COMM_WORLD, &st));
        int n;
        OK(MPI_Get_count(&st, column, &n));
        CHECK(n == 1);
        OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
        CHECK(n == 4);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 5; j++)
                CHECK(r[i][j] == (j == 1 ? i * 10 + 3 : -1));
        OK(MPI_Recv(&r[0][1], 1, column, 0, 3, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, column, &n));
        CHECK(n == 0 && r[0][1] == 3);
    }
    OK(MPI_Type_free(&column));
}

struct rec {
    char c;
    double d;
    int v[3];
    short s;
};

/* A struct type with its padding as holes, resized to the C struct's
   size; three records received into memory filled with 0xAA: the padding
   keeps 0xAA, the fields get the values. */
static void structs(void)
{
    struct rec a[3], b[3];
    memset(a, 0, sizeof a);
    int bl[4] = {1, 1, 3, 1};
    MPI_Aint base, d[4];
    OK(MPI_Get_address(&a[0], &base));
    OK(MPI_Get_address(&a[0].c, &d[0]));
    OK(MPI_Get_address(&a[0].d, &d[1]));
    OK(MPI_Get_address(&a[0].v, &d[2]));
    OK(MPI_Get_address(&a[0].s, &d[3]));
    for (int i = 0; i < 4; i++)
        d[i] -= base;
    CHECK(d[1] == offsetof(struct rec, d) && d[3] == offsetof(struct rec, s));
    MPI_Datatype ty[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT}, t0, t;
    OK(MPI_Type_create_struct(4, bl, d, ty, &t0));
    OK(MPI_Type_create_resized(t0, 0, sizeof(struct rec), &t));
    OK(MPI_Type_free(&t0));
    OK(MPI_Type_commit(&t));
    int s;
    MPI_Aint lb, ext, tlb, text;
    OK(MPI_Type_size(t, &s));
    OK(MPI_Type_get_extent(t, &lb, &ext));
    OK(MPI_Type_get_true_extent(t, &tlb, &text));
    CHECK(s == 1 + 8 + 12 + 2 && lb == 0 && ext == sizeof(struct rec));
    CHECK(tlb == 0 && text == (MPI_Aint)(offsetof(struct rec, s) + sizeof(short)));
    if (rank == 0) {
        for (int i = 0; i < 3; i++) {
            a[i].c = (char)('a' + i);
            a[i].d = i + 0.5;
            a[i].v[0] = i, a[i].v[1] = -i, a[i].v[2] = i * i;
            a[i].s = (short)(100 + i);
        }
        OK(MPI_Send(a, 3, t, 1, 4, MPI_COMM_WORLD));
        OK(MPI_Send(a, 3, t, 1, 5, MPI_COMM_WORLD));
    } else if (rank == 1) {
        memset(b, 0xAA, sizeof b);
        MPI_Status st;
        OK(MPI_Recv(b, 3, t, 0, 4, MPI_COMM_WORLD, &st));
        int n;
        OK(MPI_Get_count(&st, t, &n));
        CHECK(n == 3);
        const unsigned char *raw = (const unsigned char *)b;
        for (int i = 0; i < 3; i++) {
            CHECK(b[i].c == 'a' + i && b[i].d == i + 0.5 && b[i].v[0] == i);
            CHECK(b[i].v[1] == -i && b[i].v[2] == i * i && b[i].s == 100 + i);
            for (size_t k = 1; k < offsetof(struct rec, d); k++) /* padding after c */
                CHECK(raw[i * sizeof(struct rec) + k] == 0xAA);
        }
        /* truncated into two records: two whole ones, the third untouched */
        memset(b, 0xAA, sizeof b);
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        CHECK(MPI_Recv(b, 2, t, 0, 5, MPI_COMM_WORLD, &st) == MPI_ERR_TRUNCATE);
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
        OK(MPI_Get_count(&st, t, &n));
        CHECK(n == 2 && b[1].s == 101 && raw[2 * sizeof(struct rec)] == 0xAA);
    }
    OK(MPI_Type_free(&t));
}

/* indexed and hindexed with holes; contiguous of them; a type freed while
   its receive is posted; dup. */
static void indexed(void)
{
    int bl[3] = {2, 1, 3}, dp[3] = {0, 4, 7};
    MPI_Aint hdp[3] = {0, 4 * sizeof(int), 7 * sizeof(int)};
    MPI_Datatype ix, hx, two, dupd;
    OK(MPI_Type_indexed(3, bl, dp, MPI_INT, &ix));
    OK(MPI_Type_create_hindexed(3, bl, hdp, MPI_INT, &hx));
    OK(MPI_Type_contiguous(2, ix, &two));
    OK(MPI_Type_dup(hx, &dupd));
    MPI_Datatype all[] = {ix, hx, two, dupd};
    for (int i = 0; i < 4; i++)
        OK(MPI_Type_commit(&all[i]));
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(ix, &lb, &ext));
    CHECK(lb == 0 && ext == 10 * sizeof(int));
    int s;
    OK(MPI_Type_size(two, &s));
    CHECK(s == 12 * (int)sizeof(int));
    static const int want[10] = {0, 1, -1, -1, 4, -1, -1, 7, 8, 9};
    int src[20], dst[20];
    for (int i = 0; i < 20; i++)
        src[i] = i;
    if (rank == 0) {
        OK(MPI_Send(src, 1, ix, 1, 6, MPI_COMM_WORLD));
        OK(MPI_Send(src, 1, two, 1, 7, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Request r;
        for (int i = 0; i < 20; i++)
            dst[i] = -1;
        OK(MPI_Irecv(dst, 1, all[1], 0, 6, MPI_COMM_WORLD, &r));
        OK(MPI_Type_free(&all[1])); /* the request keeps it */
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < 10; i++)
            CHECK(dst[i] == want[i]);
        int packed[12];
        OK(MPI_Recv(packed, 12, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        static const int picked[6] = {0, 1, 4, 7, 8, 9};
        for (int k = 0; k < 12; k++)
            CHECK(packed[k] == (k < 6 ? 0 : 10) + picked[k % 6]);
    }
    if (rank != 1)
        OK(MPI_Type_free(&all[1]));
    OK(MPI_Type_free(&all[0]));
    OK(MPI_Type_free(&all[2]));
    OK(MPI_Type_free(&all[3]));
    /* an empty type: zero bytes whatever the count */
    MPI_Datatype empty;
    OK(MPI_Type_contiguous(0, MPI_INT, &empty));
    OK(MPI_Type_commit(&empty));
    OK(MPI_Type_size(empty, &s));
    CHECK(s == 0);
    OK(MPI_Sendrecv(src, 5, empty, 0, 8, dst, 5, empty, 0, 8, MPI_COMM_SELF,
                    MPI_STATUS_IGNORE));
    OK(MPI_Type_free(&empty));
}

/* The n ints type t picks from 0, 1, 2 ... (packed), against want. */
static void picks(MPI_Datatype t, const int *want, int n)
{
    int src[64], out[64], pos = 0, sz;
    for (int i = 0; i < 64; i++)
        src[i] = i;
    OK(MPI_Type_commit(&t));
    OK(MPI_Type_size(t, &sz));
    CHECK(sz == n * (int)sizeof(int));
    OK(MPI_Pack(src, 1, t, out, sizeof out, &pos, MPI_COMM_SELF));
    CHECK(pos == sz);
    for (int i = 0; i < n; i++)
        CHECK(out[i] == want[i]);
    OK(MPI_Type_free(&t));
}

/* indexed_block, hindexed_block and subarray (both orders), locally and
   across ranks; bad shapes refused. */
static void blocks_and_subarrays(void)
{
    MPI_Datatype t;
    int dp[3] = {0, 5, 10};
    OK(MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &t));
    picks(t, (const int[]){0, 1, 5, 6, 10, 11}, 6);
    MPI_Aint hdp[2] = {3 * sizeof(int), 20 * sizeof(int)};
    OK(MPI_Type_create_hindexed_block(2, 3, hdp, MPI_INT, &t));
    picks(t, (const int[]){3, 4, 5, 20, 21, 22}, 6);

    /* a 4 x 5 array: rows 1-2, columns 1-3 */
    int sizes[2] = {4, 5}, sub[2] = {2, 3}, start[2] = {1, 1};
    OK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t));
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(t, &lb, &ext));
    CHECK(lb == 0 && ext == 20 * (MPI_Aint)sizeof(int)); /* the whole array */
    picks(t, (const int[]){6, 7, 8, 11, 12, 13}, 6);
    /* Fortran order: the first index fastest (4 of them), 5 columns */
    OK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_FORTRAN, MPI_INT, &t));
    picks(t, (const int[]){5, 6, 9, 10, 13, 14}, 6);
    /* 3-D, the corner of a 3 x 3 x 3 cube */
    int c3[3] = {3, 3, 3}, s3[3] = {2, 2, 2}, o3[3] = {1, 1, 1};
    OK(MPI_Type_create_subarray(3, c3, s3, o3, MPI_ORDER_C, MPI_INT, &t));
    picks(t, (const int[]){13, 14, 16, 17, 22, 23, 25, 26}, 8);

    /* a halo column sent with it: rank 0 sends column 1..3 of rows 1-2 */
    if (rank < 2) {
        int a[20], got[6];
        for (int i = 0; i < 20; i++)
            a[i] = 100 * rank + i;
        OK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t));
        OK(MPI_Type_commit(&t));
        int peer = 1 - rank;
        OK(MPI_Sendrecv(a, 1, t, peer, 11, got, 6, MPI_INT, peer, 11, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
        static const int cells[6] = {6, 7, 8, 11, 12, 13};
        for (int i = 0; i < 6; i++)
            CHECK(got[i] == 100 * peer + cells[i]);
        OK(MPI_Type_free(&t));
    }

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int big[2] = {4, 3};
    CHECK(MPI_Type_create_subarray(2, sizes, big, start, MPI_ORDER_C, MPI_INT, &t) ==
          MPI_ERR_ARG); /* 1 + 3 > 4 */
    CHECK(MPI_Type_create_subarray(2, sizes, sub, start, 3, MPI_INT, &t) == MPI_ERR_ARG);
    CHECK(MPI_Type_create_subarray(0, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t) ==
          MPI_ERR_ARG);
    CHECK(MPI_Type_create_indexed_block(-1, 1, dp, MPI_INT, &t) == MPI_ERR_COUNT);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* MPI_Get_elements beside MPI_Get_count: whole elements of a mixed type,
   a part of one of a one-basic-type type, a part of a mixed one. */
static void elements(void)
{
    struct id {
        int i;
        double d;
    };
    MPI_Datatype mixed, pairs;
    int bl[2] = {1, 1};
    MPI_Aint dp[2] = {offsetof(struct id, i), offsetof(struct id, d)};
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Type_create_struct(2, bl, dp, ty, &mixed));
    OK(MPI_Type_commit(&mixed));
    OK(MPI_Type_contiguous(2, MPI_INT, &pairs));
    OK(MPI_Type_commit(&pairs));
    if (rank == 0) {
        struct id v[3] = {{1, 1.5}, {2, 2.5}, {3, 3.5}};
        int five[5] = {1, 2, 3, 4, 5};
        OK(MPI_Send(v, 3, mixed, 1, 20, MPI_COMM_WORLD));
        OK(MPI_Send(five, 5, MPI_INT, 1, 21, MPI_COMM_WORLD));
        OK(MPI_Send(five, 2, MPI_INT, 1, 22, MPI_COMM_WORLD)); /* 8 of 12 bytes */
        OK(MPI_Send(v, 3, mixed, 1, 23, MPI_COMM_WORLD));
    } else if (rank == 1) {
        struct id v[3];
        int got[6], n, e;
        MPI_Status st;
        OK(MPI_Recv(v, 3, mixed, 0, 20, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, mixed, &n));
        OK(MPI_Get_elements(&st, mixed, &e));
        CHECK(n == 3 && e == 6 && v[2].i == 3 && v[2].d == 3.5);
        OK(MPI_Recv(got, 3, pairs, 0, 21, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, pairs, &n));
        OK(MPI_Get_elements(&st, pairs, &e));
        CHECK(n == MPI_UNDEFINED && e == 5); /* two pairs and a half */
        OK(MPI_Recv(v, 3, mixed, 0, 22, MPI_COMM_WORLD, &st));
        OK(MPI_Get_elements(&st, mixed, &e));
        CHECK(e == MPI_UNDEFINED); /* a part of a mixed element */
        MPI_Count ex;
        OK(MPI_Get_elements_x(&st, mixed, &ex));
        CHECK(ex == MPI_UNDEFINED);
        OK(MPI_Recv(v, 3, mixed, 0, 23, MPI_COMM_WORLD, &st));
        OK(MPI_Get_elements_x(&st, mixed, &ex));
        CHECK(ex == 6);
    }
    OK(MPI_Type_free(&mixed));
    OK(MPI_Type_free(&pairs));
}

/* The complex types, MPI_OFFSET and MPI_COUNT: sizes and names, reduced
   (SUM and PROD on complex, MPI_ERR_OP for MAX), sent; the MPI_Count
   queries; address arithmetic. */
static void counts_and_complex(void)
{
    int sz;
    char name[MPI_MAX_OBJECT_NAME];
    OK(MPI_Type_size(MPI_C_FLOAT_COMPLEX, &sz));
    CHECK(sz == sizeof(float _Complex) && MPI_C_COMPLEX == MPI_C_FLOAT_COMPLEX);
    OK(MPI_Type_size(MPI_C_DOUBLE_COMPLEX, &sz));
    CHECK(sz == sizeof(double _Complex));
    OK(MPI_Type_size(MPI_C_LONG_DOUBLE_COMPLEX, &sz));
    CHECK(sz == sizeof(long double _Complex));
    OK(MPI_Type_size(MPI_OFFSET, &sz));
    CHECK(sz == sizeof(MPI_Offset) && sizeof(MPI_Count) >= sizeof(MPI_Aint));
    OK(MPI_Type_get_name(MPI_C_LONG_DOUBLE_COMPLEX, name, &sz));
    CHECK(strcmp(name, "MPI_C_LONG_DOUBLE_COMPLEX") == 0 && sz == 25);
    OK(MPI_Type_get_name(MPI_COUNT, name, &sz));
    CHECK(strcmp(name, "MPI_COUNT") == 0);

    MPI_Datatype v;
    MPI_Count n, lb, ext;
    OK(MPI_Type_vector(3, 2, 5, MPI_C_DOUBLE_COMPLEX, &v));
    OK(MPI_Type_commit(&v));
    OK(MPI_Type_size_x(v, &n));
    CHECK(n == 6 * (MPI_Count)sizeof(double _Complex));
    OK(MPI_Type_get_extent_x(v, &lb, &ext));
    CHECK(lb == 0 && ext == 12 * (MPI_Count)sizeof(double _Complex));
    OK(MPI_Type_get_true_extent_x(v, &lb, &ext));
    CHECK(lb == 0 && ext == 12 * (MPI_Count)sizeof(double _Complex));

    int size;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    double _Complex z = rank + 1.0 * I, sum, prod, back[6] = {0};
    OK(MPI_Allreduce(&z, &sum, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    CHECK(creal(sum) == (double)(size * (size - 1) / 2) && cimag(sum) == size);
    double _Complex unit = I;
    OK(MPI_Allreduce(&unit, &prod, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    double _Complex pw = 1;
    for (int k = 0; k < size; k++)
        pw *= I;
    CHECK(creal(prod) == creal(pw) && cimag(prod) == cimag(pw));
    float _Complex fz = 0.5f - 1.0f * I, fsum;
    OK(MPI_Allreduce(&fz, &fsum, 1, MPI_C_FLOAT_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    CHECK(crealf(fsum) == 0.5f * size && cimagf(fsum) == -1.0f * size);
    MPI_Offset off = (MPI_Offset)1 << 40, offmax;
    OK(MPI_Allreduce(&off, &offmax, 1, MPI_OFFSET, MPI_SUM, MPI_COMM_WORLD));
    CHECK(offmax == ((MPI_Offset)size << 40));
    MPI_Count c = rank, cmax;
    OK(MPI_Allreduce(&c, &cmax, 1, MPI_COUNT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(cmax == size - 1);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Allreduce(&z, &sum, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD) ==
          MPI_ERR_OP);
    CHECK(MPI_Type_size_x(MPI_DATATYPE_NULL, &n) == MPI_ERR_TYPE);
    CHECK(MPI_Type_get_extent_x(MPI_INT, NULL, &ext) == MPI_ERR_ARG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

    /* a strided complex vector, sent and received contiguous */
    double _Complex src[12];
    for (int k = 0; k < 12; k++)
        src[k] = k + (100.0 + k) * I;
    if (rank == 0)
        OK(MPI_Send(src, 1, v, 1, 30, MPI_COMM_WORLD));
    else if (rank == 1) {
        MPI_Status st;
        OK(MPI_Recv(back, 6, MPI_C_DOUBLE_COMPLEX, 0, 30, MPI_COMM_WORLD, &st));
        OK(MPI_Get_elements_x(&st, MPI_C_DOUBLE_COMPLEX, &n));
        CHECK(n == 6);
        int at[6] = {0, 1, 5, 6, 10, 11};
        for (int k = 0; k < 6; k++)
            CHECK(creal(back[k]) == at[k] && cimag(back[k]) == 100.0 + at[k]);
    }
    OK(MPI_Type_free(&v));

    MPI_Aint a0, a5;
    OK(MPI_Get_address(&src[0], &a0));
    OK(MPI_Get_address(&src[5], &a5));
    CHECK(MPI_Aint_diff(a5, a0) == 5 * (MPI_Aint)sizeof src[0]);
    CHECK(MPI_Aint_add(a0, 5 * (MPI_Aint)sizeof src[0]) == a5);
}

/* MPI_Type_get_envelope and get_contents: each constructor's combiner and
   arguments given back; a type rebuilt from them has the same size and
   extent; the types named are held past the program's free of them, and a
   derived one handed out is the program's to free. */
static void expect_env(MPI_Datatype t, int combiner, int ni, int na, int nd)
{
    int i, a, d, c;
    OK(MPI_Type_get_envelope(t, &i, &a, &d, &c));
    if (c != combiner || i != ni || a != na || d != nd) {
        fprintf(stderr, "envelope %d %d %d %d, expected %d %d %d %d\n", c, i, a, d,
                combiner, ni, na, nd);
        CHECK(0);
    }
}

static void envelopes(void)
{
    int ints[16];
    MPI_Aint addrs[8];
    MPI_Datatype types[4];
    expect_env(MPI_INT, MPI_COMBINER_NAMED, 0, 0, 0);
    expect_env(MPI_2INT, MPI_COMBINER_NAMED, 0, 0, 0);

    MPI_Datatype vec, hvec, contig, idx, hidx, blk, hblk, st, sub, rs, dup;
    OK(MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &vec));
    expect_env(vec, MPI_COMBINER_VECTOR, 3, 0, 1);
    OK(MPI_Type_get_contents(vec, 16, 8, 4, ints, addrs, types));
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && types[0] == MPI_DOUBLE);
    OK(MPI_Type_create_hvector(2, 1, 100, vec, &hvec));
    expect_env(hvec, MPI_COMBINER_HVECTOR, 2, 1, 1);
    OK(MPI_Type_get_contents(hvec, 16, 8, 4, ints, addrs, types));
    CHECK(ints[0] == 2 && ints[1] == 1 && addrs[0] == 100 && types[0] == vec);
    OK(MPI_Type_free(&types[0])); /* a derived one: the program's to free */
    OK(MPI_Type_contiguous(7, MPI_INT, &contig));
    expect_env(contig, MPI_COMBINER_CONTIGUOUS, 1, 0, 1);
    int bl[3] = {1, 2, 3}, dp[3] = {0, 4, 10};
    OK(MPI_Type_indexed(3, bl, dp, MPI_INT, &idx));
    expect_env(idx, MPI_COMBINER_INDEXED, 7, 0, 1);
    OK(MPI_Type_get_contents(idx, 7, 0, 1, ints, NULL, types));
    CHECK(ints[0] == 3 && ints[3] == 3 && ints[4] == 0 && ints[6] == 10);
    MPI_Aint hdp[3] = {0, 16, 40};
    OK(MPI_Type_create_hindexed(3, bl, hdp, MPI_INT, &hidx));
    expect_env(hidx, MPI_COMBINER_HINDEXED, 4, 3, 1);
    OK(MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &blk));
    expect_env(blk, MPI_COMBINER_INDEXED_BLOCK, 5, 0, 1);
    OK(MPI_Type_create_hindexed_block(3, 2, hdp, MPI_INT, &hblk));
    expect_env(hblk, MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1);
    MPI_Datatype parts[2] = {MPI_CHAR, contig};
    int sbl[2] = {3, 1};
    MPI_Aint sdp[2] = {0, 8};
    OK(MPI_Type_create_struct(2, sbl, sdp, parts, &st));
    expect_env(st, MPI_COMBINER_STRUCT, 3, 2, 2);
    OK(MPI_Type_get_contents(st, 3, 2, 2, ints, addrs, types));
    CHECK(ints[0] == 2 && ints[1] == 3 && ints[2] == 1 && addrs[1] == 8);
    CHECK(types[0] == MPI_CHAR && types[1] == contig);
    OK(MPI_Type_free(&types[1]));
    int sizes[2] = {6, 8}, subs[2] = {2, 3}, starts[2] = {1, 4};
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_FLOAT, &sub));
    expect_env(sub, MPI_COMBINER_SUBARRAY, 8, 0, 1);
    OK(MPI_Type_get_contents(sub, 8, 0, 1, ints, addrs, types));
    CHECK(ints[0] == 2 && ints[1] == 6 && ints[4] == 3 && ints[6] == 4 &&
          ints[7] == MPI_ORDER_C && types[0] == MPI_FLOAT);
    OK(MPI_Type_create_resized(idx, -4, 64, &rs));
    expect_env(rs, MPI_COMBINER_RESIZED, 0, 2, 1);
    OK(MPI_Type_dup(st, &dup));
    expect_env(dup, MPI_COMBINER_DUP, 0, 0, 1);

    /* rebuilt from its contents: the same layout */
    OK(MPI_Type_get_contents(st, 3, 2, 2, ints, addrs, types));
    MPI_Datatype again;
    OK(MPI_Type_create_struct(ints[0], &ints[1], addrs, types, &again));
    MPI_Aint lb1, ex1, lb2, ex2;
    int s1, s2;
    OK(MPI_Type_size(st, &s1));
    OK(MPI_Type_size(again, &s2));
    OK(MPI_Type_get_extent(st, &lb1, &ex1));
    OK(MPI_Type_get_extent(again, &lb2, &ex2));
    CHECK(s1 == s2 && lb1 == lb2 && ex1 == ex2);
    OK(MPI_Type_free(&types[1]));
    OK(MPI_Type_free(&again));

    /* the types named outlive the program's handles: contig freed, the
       struct still holds it */
    OK(MPI_Type_free(&contig));
    OK(MPI_Type_get_contents(st, 3, 2, 2, ints, addrs, types));
    OK(MPI_Type_size(types[1], &s1));
    CHECK(s1 == 7 * (int)sizeof(int));
    OK(MPI_Type_free(&types[1]));

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Type_get_contents(MPI_INT, 0, 0, 0, ints, addrs, types) == MPI_ERR_ARG);
    CHECK(MPI_Type_get_contents(vec, 2, 0, 1, ints, addrs, types) == MPI_ERR_ARG);
    CHECK(MPI_Type_get_envelope(MPI_DATATYPE_NULL, &s1, &s1, &s1, &s1) == MPI_ERR_TYPE);
    CHECK(MPI_Type_get_envelope(vec, NULL, &s1, &s1, &s1) == MPI_ERR_ARG);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    MPI_Datatype all[] = {vec, hvec, idx, hidx, blk, hblk, st, sub, rs, dup};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        OK(MPI_Type_free(&all[k]));
}

/* Whether dst (n doubles, -1 but where one element of t was received)
   holds exp in t's order and nothing else: packed into back to compare. */
static int placed(const double *dst, int n, MPI_Datatype t, const double *exp,
                  double *back)
{
    int size, pos = 0, touched = 0;
    OK(MPI_Type_size(t, &size));
    OK(MPI_Pack(dst, 1, t, back, n * (int)sizeof(double), &pos, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++)
        touched += dst[i] != -1;
    return memcmp(back, exp, (size_t)size) == 0 && touched == size / (int)sizeof(double);
}

/* Non-contiguous data on the gathered path and the packed one, each way
   flit-mpi chooses between them (up to 1024 runs of 128 B or more on
   average: gathered, also the last run of a large message pulled; more
   runs, or short ones: packed; a small whole: gathered): sent by MPI_Send, MPI_Ssend and
   MPI_Isend to rank 1, received contiguous and compared with MPI_Pack's
   order; to rank 1's receive of the type, posted first (scattered where
   gathered); and by every rank to itself, received with the type; holes
   untouched. */
static void gathered(void)
{
    enum { NSRC = 90000, NTYPES = 7 };
    double *src = malloc(NSRC * sizeof(double)), *dst = malloc(NSRC * sizeof(double)),
           *exp = malloc(NSRC * sizeof(double)), *back = malloc(NSRC * sizeof(double));
    CHECK(src && dst && exp && back);
    for (int i = 0; i < NSRC; i++)
        src[i] = i + 0.5;
    MPI_Datatype types[NTYPES];
    OK(MPI_Type_vector(8, 1000, 1100, MPI_DOUBLE, &types[0])); /* 8 runs of 8000 B */
    OK(MPI_Type_vector(64, 32, 40, MPI_DOUBLE, &types[1]));    /* 64 runs of 256 B */
    OK(MPI_Type_vector(1030, 16, 20, MPI_DOUBLE, &types[2]));  /* 1030 runs: packed */
    OK(MPI_Type_vector(16, 4, 9, MPI_DOUBLE, &types[3]));      /* short runs: packed */
    OK(MPI_Type_vector(3, 10, 12, MPI_DOUBLE, &types[4]));     /* 240 B in all */
    int bl[2] = {2, 40000}, dp[2] = {0, 100};
    OK(MPI_Type_indexed(2, bl, dp, MPI_DOUBLE, &types[5])); /* 16 B, then 320 KB */
    OK(MPI_Type_vector(128, 512, 520, MPI_DOUBLE, &types[6])); /* 128 runs of 4 KiB */
    for (int k = 0; k < NTYPES; k++) {
        OK(MPI_Type_commit(&types[k]));
        int size, pos = 0;
        OK(MPI_Type_size(types[k], &size));
        OK(MPI_Pack(src, 1, types[k], exp, NSRC * (int)sizeof(double), &pos,
                    MPI_COMM_WORLD));
        CHECK(pos == size);
        int n = size / (int)sizeof(double);
        for (int mode = 0; mode < 3; mode++) {
            int tag = 600 + 3 * k + mode;
            if (rank == 0) {
                MPI_Request r;
                if (mode == 0)
                    OK(MPI_Send(src, 1, types[k], 1, tag, MPI_COMM_WORLD));
                else if (mode == 1)
                    OK(MPI_Ssend(src, 1, types[k], 1, tag, MPI_COMM_WORLD));
                else {
                    OK(MPI_Isend(src, 1, types[k], 1, tag, MPI_COMM_WORLD, &r));
                    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
                }
            } else if (rank == 1) {
                MPI_Status st;
                int got;
                OK(MPI_Recv(dst, NSRC, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, &st));
                OK(MPI_Get_count(&st, MPI_DOUBLE, &got));
                CHECK(got == n && memcmp(dst, exp, (size_t)size) == 0);
            }
        }
        /* to rank 1's receive of the type, posted first */
        MPI_Request pr = MPI_REQUEST_NULL;
        if (rank == 1) {
            for (int i = 0; i < NSRC; i++)
                dst[i] = -1;
            OK(MPI_Irecv(dst, 1, types[k], 0, 800 + k, MPI_COMM_WORLD, &pr));
        }
        OK(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 0)
            OK(MPI_Send(src, 1, types[k], 1, 800 + k, MPI_COMM_WORLD));
        if (rank == 1) {
            OK(MPI_Wait(&pr, MPI_STATUS_IGNORE));
            CHECK(placed(dst, NSRC, types[k], exp, back));
        }
        /* to itself, received with the type */
        MPI_Request r;
        for (int i = 0; i < NSRC; i++)
            dst[i] = -1;
        OK(MPI_Isend(src, 1, types[k], rank, 700 + k, MPI_COMM_WORLD, &r));
        OK(MPI_Recv(dst, 1, types[k], rank, 700 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(placed(dst, NSRC, types[k], exp, back));
        OK(MPI_Type_free(&types[k]));
    }
    free(src);
    free(dst);
    free(exp);
    free(back);
}

/*
 * Types of many bytes in few blocks: a GiB of bytes as one run, a vector
 * of 1,024 rows of a MiB, one of 1,024 rows of INT_MAX bytes (2 TiB:
 * MPI_Type_size answers MPI_UNDEFINED, the _x twin the size), and a vector
 * of a type with holes whose rows must stay apart. Each is built in time
 * by its blocks, not by its bytes (a builder that walked element by
 * element took 12 s for the first two, and hours for the third); sizes,
 * extents and true extents are checked, and a few rows of the vector are
 * sent with the type and land where it says; a type of one block shorter
 * than its extent repeated.
 */
static void large(void)
{
    MPI_Datatype gib, rows, wide, pairs, holes;
    int s;
    MPI_Count sx;
    MPI_Aint lb, ext, tlb, text;
    OK(MPI_Type_contiguous(1 << 30, MPI_CHAR, &gib));
    OK(MPI_Type_size(gib, &s));
    OK(MPI_Type_get_extent(gib, &lb, &ext));
    CHECK(s == 1 << 30 && lb == 0 && ext == (MPI_Aint)1 << 30);

    OK(MPI_Type_vector(1024, 1 << 20, 1 << 21, MPI_CHAR, &rows));
    OK(MPI_Type_size(rows, &s));
    OK(MPI_Type_get_extent(rows, &lb, &ext));
    CHECK(s == 1 << 30 && lb == 0 && ext == ((MPI_Aint)1023 << 21) + (1 << 20));

    /* 1,024 rows of INT_MAX bytes, 4 GiB apart: 2 TiB in 1,024 blocks */
    OK(MPI_Type_create_hvector(1024, INT_MAX, (MPI_Aint)1 << 32, MPI_CHAR, &wide));
    OK(MPI_Type_size(wide, &s));
    OK(MPI_Type_size_x(wide, &sx));
    OK(MPI_Type_get_true_extent(wide, &tlb, &text));
    CHECK(s == MPI_UNDEFINED && sx == (MPI_Count)1024 * INT_MAX && tlb == 0 &&
          text == ((MPI_Aint)1023 << 32) + INT_MAX);

    /* one int in 8 bytes: one block shorter than its extent, never merged */
    MPI_Datatype spaced, three;
    OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced));
    OK(MPI_Type_contiguous(3, spaced, &three));
    OK(MPI_Type_size(three, &s));
    OK(MPI_Type_get_extent(three, &lb, &ext));
    OK(MPI_Type_get_true_extent(three, &tlb, &text));
    CHECK(s == 3 * (int)sizeof(int) && ext == 6 * (MPI_Aint)sizeof(int) && tlb == 0 &&
          text == 5 * (MPI_Aint)sizeof(int));

    /* two ints 12 bytes apart: elements of a vector row must not merge */
    OK(MPI_Type_vector(2, 1, 3, MPI_INT, &pairs));
    OK(MPI_Type_create_resized(pairs, 0, 4 * sizeof(int), &holes));
    MPI_Datatype few;
    OK(MPI_Type_vector(3, 2, 3, holes, &few)); /* rows of 2, 3 apart */
    OK(MPI_Type_commit(&few));
    OK(MPI_Type_size(few, &s));
    OK(MPI_Type_get_extent(few, &lb, &ext));
    OK(MPI_Type_get_true_extent(few, &tlb, &text));
    CHECK(s == 12 * (int)sizeof(int) && lb == 0 && ext == 32 * (MPI_Aint)sizeof(int));
    CHECK(tlb == 0 && text == 32 * (MPI_Aint)sizeof(int));
    int buf[32];
    for (int i = 0; i < 32; i++)
        buf[i] = rank == 0 ? i : -1;
    if (rank == 0) {
        OK(MPI_Send(buf, 1, few, 1, 40, MPI_COMM_WORLD));
    } else if (rank == 1) {
        OK(MPI_Recv(buf, 1, few, 0, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        /* element k of a row at 4k ints: ints 4k and 4k+3; rows 12 apart */
        for (int i = 0; i < 32; i++) {
            int row = i / 12, in = i % 12;
            bool sent = row < 3 && in < 8 && (in % 4 == 0 || in % 4 == 3);
            CHECK(buf[i] == (sent ? i : -1));
        }
    }
    MPI_Datatype all[] = {gib, rows, wide, spaced, three, pairs, holes, few};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        OK(MPI_Type_free(&all[i]));
}

int main(int argc, char **argv)
{
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size < 2) {
        MPI_Finalize();
        return 77;
    }
    sizes();
    vector();
    structs();
    indexed();
    blocks_and_subarrays();
    elements();
    counts_and_complex();
    envelopes();
    gathered();
    large();
    OK(MPI_Finalize());
    return 0;
}
