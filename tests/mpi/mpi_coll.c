/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking collectives on 1 to 4 ranks, from every root, with zero, small
 * and large counts, derived types, MPI_IN_PLACE, every predefined op and a
 * non-commutative one of the program's own: results checked exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int rank, size;

static void barrier(void)
{
    for (int i = 0; i < 5; i++)
        OK(MPI_Barrier(MPI_COMM_WORLD));
    if (size < 2)
        return;
    /* rank 1 can leave only once rank 0 has entered, which it does after
       getting rank 1's "ready": so rank 1's "after" cannot come first */
    int x = 0, flag = 1;
    if (rank == 1) {
        OK(MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(MPI_Send(&x, 1, MPI_INT, 0, 2, MPI_COMM_WORLD));
    } else if (rank == 0) {
        OK(MPI_Recv(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < 100; i++) {
            OK(MPI_Iprobe(1, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            CHECK(flag == 0);
        }
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(MPI_Recv(&x, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }
}

static void bcast(void)
{
    static int buf[100000];
    int counts[] = {0, 1, 1000, 100000};
    for (int root = 0; root < size; root++)
        for (int c = 0; c < 4; c++) {
            for (int i = 0; i < counts[c]; i++)
                buf[i] = rank == root ? root * 7 + i : -1;
            OK(MPI_Bcast(buf, counts[c], MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < counts[c]; i++)
                CHECK(buf[i] == root * 7 + i);
        }
    /* a column of a matrix: only the column changes */
    double m[3][4];
    MPI_Datatype col;
    OK(MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &col));
    OK(MPI_Type_commit(&col));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            m[i][j] = rank == size - 1 ? i * 4 + j : -1;
    OK(MPI_Bcast(&m[0][1], 1, col, size - 1, MPI_COMM_WORLD));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            CHECK(m[i][j] == (j == 1 || rank == size - 1 ? i * 4 + j : -1));
    OK(MPI_Type_free(&col));
}

/* The reductions of every predefined op on ints of value f(rank, i). */
static int f(int r, int i)
{
    return (r + 1) * 3 + i % 5;
}

static int is_logical(MPI_Op op)
{
    return op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
}

/* Rank r's element i for op: 0/1 for the logical ops. */
static int g(MPI_Op op, int r, int i)
{
    return is_logical(op) ? f(r, i) & 1 : f(r, i);
}

static int expect(MPI_Op op, int i)
{
    int v = g(op, 0, i);
    for (int r = 1; r < size; r++) {
        int x = g(op, r, i);
        if (op == MPI_SUM)
            v += x;
        else if (op == MPI_PROD)
            v *= x;
        else if (op == MPI_MAX)
            v = x > v ? x : v;
        else if (op == MPI_MIN)
            v = x < v ? x : v;
        else if (op == MPI_LAND)
            v = v && x;
        else if (op == MPI_LOR)
            v = v || x;
        else if (op == MPI_LXOR)
            v = !v != !x;
        else if (op == MPI_BAND)
            v &= x;
        else if (op == MPI_BOR)
            v |= x;
        else
            v ^= x;
    }
    return v;
}

/* Allreduce of vectors past 16 KiB: on 2 and 4 ranks these halve the
   vector (each rank reduces one part, then the parts are gathered), so
   odd counts, a type of several ints (split only between elements), a
   strided type, an in-place call and a program's commutative op each
   check that every element is reduced once, over every rank. */
static void add_ints(void *in, void *io, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        ((int *)io)[i] += ((const int *)in)[i];
}

static long sum_f(int i)
{
    long v = 0;
    for (int r = 0; r < size; r++)
        v += f(r, i);
    return v;
}

static void large_allreduce(void)
{
    enum { MAX = 3 * 65539 };
    int *in = malloc(MAX * sizeof *in), *out = malloc(MAX * sizeof *out);
    CHECK(in && out);
    MPI_Op user;
    OK(MPI_Op_create(add_ints, 1, &user));
    MPI_Datatype three, strided, every_other;
    OK(MPI_Type_contiguous(3, MPI_INT, &three));
    OK(MPI_Type_commit(&three));
    OK(MPI_Type_vector(1025, 1, 2, MPI_INT, &strided)); /* tiles: 2050 ints each */
    OK(MPI_Type_create_resized(strided, 0, 2050 * sizeof(int), &every_other));
    OK(MPI_Type_commit(&every_other));
    const int counts[] = {4096, 4099, 16383, 65539, 3 * 65539};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        for (int i = 0; i < n; i++)
            in[i] = f(rank, i);
        memset(out, 0xff, (size_t)n * sizeof *out);
        OK(MPI_Allreduce(in, out, n, MPI_INT, c % 2 ? user : MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            CHECK(out[i] == sum_f(i));
        OK(MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            CHECK(in[i] == f(size - 1, i));
        if (n % 3 == 0) { /* elements of three ints */
            for (int i = 0; i < n; i++)
                in[i] = f(rank, i);
            OK(MPI_Allreduce(in, out, n / 3, three, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                CHECK(out[i] == sum_f(i));
        }
    }
    /* every other int: packed, halved, unpacked; the gaps left alone */
    for (int i = 0; i < 4 * 2050; i++)
        in[i] = f(rank, i), out[i] = -7;
    OK(MPI_Allreduce(in, out, 4, every_other, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 4 * 2050; i++)
        CHECK(out[i] == (i % 2 ? -7 : sum_f(i)));
    OK(MPI_Type_free(&strided));
    OK(MPI_Type_free(&three));
    OK(MPI_Type_free(&every_other));
    OK(MPI_Op_free(&user));
    free(in);
    free(out);
}

static void reductions(void)
{
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX,  MPI_MIN, MPI_BAND,
                    MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
    enum { N = 1000 };
    static int in[N], out[N];
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (int i = 0; i < N; i++)
            in[i] = g(ops[o], rank, i);
        for (int root = 0; root < size; root++) {
            memset(out, 0xff, sizeof out);
            OK(MPI_Reduce(in, out, N, MPI_INT, ops[o], root, MPI_COMM_WORLD));
            for (int i = 0; rank == root && i < N; i++)
                CHECK(out[i] == expect(ops[o], i));
        }
        memset(out, 0xff, sizeof out);
        OK(MPI_Allreduce(in, out, N, MPI_INT, ops[o], MPI_COMM_WORLD));
        for (int i = 0; i < N; i++)
            CHECK(out[i] == expect(ops[o], i));
        static int again[N];
        memcpy(again, in, sizeof again); /* in place: the input is the output */
        OK(MPI_Allreduce(MPI_IN_PLACE, again, N, MPI_INT, ops[o], MPI_COMM_WORLD));
        for (int i = 0; i < N; i++)
            CHECK(again[i] == out[i]);
    }
    /* doubles; reduce in place at the root */
    double d = rank + 0.5, sum = -1;
    OK(MPI_Allreduce(&d, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2.0 + 0.5 * size);
    double ip = rank + 0.5;
    OK(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &ip, &ip, 1, MPI_DOUBLE, MPI_MAX, 0,
                  MPI_COMM_WORLD));
    CHECK(rank != 0 || ip == size - 0.5);
    /* MAXLOC / MINLOC: ties go to the smaller index */
    struct {
        double v;
        int i;
    } p = {rank % 2 ? 1.0 : 2.0, rank}, q;
    OK(MPI_Allreduce(&p, &q, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(q.v == 2.0 && q.i == 0);
    OK(MPI_Allreduce(&p, &q, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(q.v == (size > 1 ? 1.0 : 2.0) && q.i == (size > 1 ? 1 : 0));
    int pi[2] = {10 - rank, rank}, qi[2];
    OK(MPI_Allreduce(pi, qi, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(qi[0] == 10 - (size - 1) && qi[1] == size - 1);
    /* an op on a type it does not apply to */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Allreduce(&d, &sum, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Allreduce(&d, &sum, 1, MPI_DOUBLE, MPI_MAXLOC, MPI_COMM_WORLD) ==
          MPI_ERR_OP);
    CHECK(MPI_Reduce(&d, &sum, 1, MPI_DOUBLE, MPI_SUM, size, MPI_COMM_WORLD) ==
          MPI_ERR_ROOT);
    CHECK(MPI_Bcast(&d, 1, MPI_DOUBLE, -1, MPI_COMM_WORLD) == MPI_ERR_ROOT);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static int digits(int from, int to) /* from..to, 1-based */
{
    int v = 0;
    for (int d = from; d <= to; d++)
        v = v * 10 + d;
    return v;
}

static void user_ops(void)
{
    MPI_Op cat;
    OK(MPI_Op_create(concat_digits, 0, &cat));
    int commute = 1;
    OK(MPI_Op_commutative(cat, &commute));
    CHECK(commute == 0);
    int mine[2] = {rank + 1, 10}, res[2] = {-1, -1};
    for (int root = 0; root < size; root++) {
        res[0] = -1;
        OK(MPI_Reduce(mine, res, 1, MPI_2INT, cat, root, MPI_COMM_WORLD));
        CHECK(rank != root || res[0] == digits(1, size));
    }
    OK(MPI_Allreduce(mine, res, 1, MPI_2INT, cat, MPI_COMM_WORLD));
    CHECK(res[0] == digits(1, size));
    OK(MPI_Scan(mine, res, 1, MPI_2INT, cat, MPI_COMM_WORLD));
    CHECK(res[0] == digits(1, rank + 1));
    res[0] = -7;
    OK(MPI_Exscan(mine, res, 1, MPI_2INT, cat, MPI_COMM_WORLD));
    CHECK(rank == 0 ? res[0] == -7 : res[0] == digits(1, rank));
    int s = rank + 1;
    OK(MPI_Scan(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(s == (rank + 1) * (rank + 2) / 2);
    /* MPI_Reduce_local: inout = in op inout, here; a user op keeps the
       order (in first), a predefined one on a strided type */
    int in[2] = {7, 10}, io[2] = {8, 10}; /* "7" then "8": 78 */
    OK(MPI_Reduce_local(in, io, 1, MPI_2INT, cat));
    CHECK(io[0] == 78 && io[1] == 100);
    double v[6] = {1, -1, 2, -1, 3, -1}, w[6] = {10, -5, 20, -5, 30, -5};
    MPI_Datatype every2;
    OK(MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &every2));
    OK(MPI_Type_commit(&every2));
    OK(MPI_Reduce_local(v, w, 1, every2, MPI_SUM));
    CHECK(w[0] == 11 && w[2] == 22 && w[4] == 33 && w[1] == -5 && w[3] == -5);
    OK(MPI_Type_free(&every2));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Reduce_local(in, io, 1, MPI_2INT, MPI_SUM) ==
          MPI_ERR_OP); /* not on pairs */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Op_free(&cat));
    CHECK(cat == MPI_OP_NULL);
}

static void gathers(void)
{
    int n = size, r = rank;
    int mine[3] = {r * 10, r * 10 + 1, r * 10 + 2}, all[12], one[3];
    for (int root = 0; root < n; root++) {
        memset(all, 0xff, sizeof all);
        OK(MPI_Gather(mine, 3, MPI_INT, all, 3, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; r == root && i < 3 * n; i++)
            CHECK(all[i] == (i / 3) * 10 + i % 3);
        /* scatter it back, the root in place */
        memset(one, 0xff, sizeof one);
        OK(MPI_Scatter(all, 3, MPI_INT, r == root ? MPI_IN_PLACE : one, 3, MPI_INT, root,
                       MPI_COMM_WORLD));
        for (int i = 0; r != root && i < 3; i++)
            CHECK(one[i] == mine[i]);
    }
    /* gather in place at the root */
    for (int i = 0; i < 3 * n; i++)
        all[i] = r == 0 && i / 3 == 0 ? mine[i % 3] : -1;
    OK(MPI_Gather(r == 0 ? MPI_IN_PLACE : mine, 3, MPI_INT, all, 3, MPI_INT, 0,
                  MPI_COMM_WORLD));
    for (int i = 0; r == 0 && i < 3 * n; i++)
        CHECK(all[i] == (i / 3) * 10 + i % 3);
    /* v: rank i gives i + 1 ints, placed in reverse order of ranks */
    int counts[4], displs[4], at = 0, vbuf[10], got[4];
    for (int i = n - 1; i >= 0; i--) {
        counts[i] = i + 1;
        displs[i] = at;
        at += i + 1;
    }
    int give[4] = {r, r, r, r};
    memset(vbuf, 0xff, sizeof vbuf);
    OK(MPI_Gatherv(give, r + 1, MPI_INT, vbuf, counts, displs, MPI_INT, n - 1,
                   MPI_COMM_WORLD));
    for (int i = 0; r == n - 1 && i < n; i++)
        for (int k = 0; k < counts[i]; k++)
            CHECK(vbuf[displs[i] + k] == i);
    memset(got, 0xff, sizeof got);
    OK(MPI_Scatterv(vbuf, counts, displs, MPI_INT, got, r + 1, MPI_INT, n - 1,
                    MPI_COMM_WORLD));
    for (int k = 0; r != n - 1 && k < r + 1; k++)
        CHECK(got[k] == r);
    memset(vbuf, 0xff, sizeof vbuf);
    OK(MPI_Allgatherv(give, r + 1, MPI_INT, vbuf, counts, displs, MPI_INT,
                      MPI_COMM_WORLD));
    for (int i = 0; i < n; i++)
        for (int k = 0; k < counts[i]; k++)
            CHECK(vbuf[displs[i] + k] == i);
    /* allgather, also in place and of zero counts */
    memset(all, 0xff, sizeof all);
    OK(MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < 3 * n; i++)
        CHECK(all[i] == (i / 3) * 10 + i % 3);
    for (int i = 0; i < 3 * n; i++)
        all[i] = i / 3 == r ? mine[i % 3] : -1;
    OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 3, MPI_INT,
                     MPI_COMM_WORLD));
    for (int i = 0; i < 3 * n; i++)
        CHECK(all[i] == (i / 3) * 10 + i % 3);
    OK(MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_COMM_WORLD));
}

static void alltoalls(void)
{
    int n = size, r = rank, out[8], in[8];
    for (int i = 0; i < 2 * n; i++)
        out[i] = r * 100 + i; /* block for rank i / 2 */
    memset(in, 0xff, sizeof in);
    OK(MPI_Alltoall(out, 2, MPI_INT, in, 2, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < n; s++)
        CHECK(in[2 * s] == s * 100 + 2 * r && in[2 * s + 1] == s * 100 + 2 * r + 1);
    memcpy(in, out, sizeof out);
    OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in, 2, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < n; s++)
        CHECK(in[2 * s] == s * 100 + 2 * r && in[2 * s + 1] == s * 100 + 2 * r + 1);
    /* The same signature, one run of bytes on even ranks (the direct path)
       and two ints a gap apart on odd ranks (packed): the two exchange
       alike. */
    int wide[16];
    MPI_Datatype gap, gapped;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &gap));
    OK(MPI_Type_create_resized(gap, 0, 4 * (MPI_Aint)sizeof(int), &gapped));
    OK(MPI_Type_commit(&gapped));
    for (int i = 0; i < 4 * n; i++)
        wide[i] = i % 2 ? -7 : r * 100 + i / 2; /* holes between the ints */
    memset(in, 0xff, sizeof in);
    if (r % 2 == 0)
        OK(MPI_Alltoall(out, 2, MPI_INT, in, 2, MPI_INT, MPI_COMM_WORLD));
    else
        OK(MPI_Alltoall(wide, 1, gapped, in, 2, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < n; s++)
        CHECK(in[2 * s] == s * 100 + 2 * r && in[2 * s + 1] == s * 100 + 2 * r + 1);
    OK(MPI_Type_free(&gapped));
    OK(MPI_Type_free(&gap));
    /* v: rank r sends j + 1 ints to rank j (rank r's value), at reversed
       places */
    int sc[4], sd[4], rc[4], rd[4], so = 0, ro = 0, sv[10], rv[16];
    for (int j = 0; j < n; j++) {
        sc[j] = j + 1, sd[j] = so, so += j + 1;
        rc[j] = r + 1, rd[j] = 4 * (n - 1 - j);
    }
    for (int k = 0; k < so; k++)
        sv[k] = r;
    memset(rv, 0xff, sizeof rv);
    OK(MPI_Alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 4; k++)
            CHECK(rv[rd[j] + k] == (k < r + 1 ? j : -1));
    (void)ro;
}

static void reduce_scatter(void)
{
    int n = size, r = rank, in[8], out[2];
    for (int i = 0; i < 2 * n; i++)
        in[i] = r + i;
    OK(MPI_Reduce_scatter_block(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int base = n * (n - 1) / 2;
    CHECK(out[0] == base + n * 2 * r && out[1] == base + n * (2 * r + 1));
    OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, in, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(in[0] == out[0] && in[1] == out[1]);
    /* uneven blocks, rank 1's empty, up to 16 KiB (on 2 and 4 ranks each
       rank halves towards its own block); then every block 20 KiB */
    int cnt[4], off = 0, total = 0;
    for (int i = 0; i < n; i++) {
        cnt[i] = i == 1 ? 0 : 1000 * (i + 1) + 7;
        off += i < r ? cnt[i] : 0;
        total += cnt[i];
    }
    int *v = malloc((size_t)n * 5000 * sizeof *v), *got = malloc(5001 * sizeof *got);
    CHECK(v && got);
    for (int i = 0; i < total; i++)
        v[i] = f(r, i);
    OK(MPI_Reduce_scatter(v, got, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < cnt[r]; i++)
        CHECK(got[i] == sum_f(off + i));
    OK(MPI_Reduce_scatter(v, got, cnt, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    for (int i = 0; i < cnt[r]; i++)
        CHECK(got[i] == f(n - 1, off + i));
    for (int i = 0; i < n * 5000; i++)
        v[i] = f(r, i);
    got[5000] = -7;
    OK(MPI_Reduce_scatter_block(v, got, 5000, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 5000; i++)
        CHECK(got[i] == sum_f(r * 5000 + i));
    CHECK(got[5000] == -7);
    free(v);
    free(got);
    int ex = 5;
    OK(MPI_Exscan(&r, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(r == 0 ? ex == 5 : ex == r * (r - 1) / 2);
}

/* Allgather with a strided type: into one (each block packed, then
   unpacked, the gaps untouched), from one into plain ints (the blocks
   land in the receive buffer itself), and in place. */
static void allgather_types(void)
{
    MPI_Datatype pair, spaced; /* two ints a gap apart, extent four ints */
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &pair));
    OK(MPI_Type_create_resized(pair, 0, 4 * sizeof(int), &spaced));
    OK(MPI_Type_commit(&spaced));
    int mine[4] = {10 * rank, -1, 10 * rank + 1, -1}, got[16], flat[8];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 16; i++)
            got[i] = -1;
        if (pass == 0) {
            OK(MPI_Allgather(mine, 1, spaced, got, 1, spaced, MPI_COMM_WORLD));
        } else {
            got[4 * rank] = 10 * rank, got[4 * rank + 2] = 10 * rank + 1;
            OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, 1, spaced,
                             MPI_COMM_WORLD));
        }
        for (int i = 0; i < size; i++)
            CHECK(got[4 * i] == 10 * i && got[4 * i + 1] == -1 &&
                  got[4 * i + 2] == 10 * i + 1 && got[4 * i + 3] == -1);
    }
    OK(MPI_Allgather(mine, 1, spaced, flat, 2, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(flat[2 * i] == 10 * i && flat[2 * i + 1] == 10 * i + 1);
    OK(MPI_Type_free(&pair));
    OK(MPI_Type_free(&spaced));
}

/* Collectives on a split communicator do not mix with the world's. */
static void on_split(void)
{
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    int hs, hr, v = rank, sum = -1;
    OK(MPI_Comm_size(half, &hs));
    OK(MPI_Comm_rank(half, &hr));
    OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half));
    int want = 0;
    for (int i = rank % 2; i < size; i += 2)
        want += i;
    CHECK(sum == want);
    OK(MPI_Bcast(&v, 1, MPI_INT, 0, half));
    CHECK(v == rank % 2);
    OK(MPI_Comm_free(&half));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size <= 4);
    barrier();
    bcast();
    reductions();
    large_allreduce();
    user_ops();
    gathers();
    allgather_types();
    alltoalls();
    reduce_scatter();
    on_split();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    return 0;
}
