/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives whose algorithm changes with the rank count and the
 * size, on any number of ranks, at sizes on both sides of where they
 * change and at the edges (empty, fewer bytes than ranks, odd splits):
 * MPI_Bcast (binomial tree; scatter then ring), MPI_Allgather(v) (Bruck's;
 * ring), MPI_Allreduce (recursive doubling or halving among a power of
 * two of ranks, the others folded in), MPI_Alltoall(v) (every block at
 * once; pairwise), MPI_Reduce (binomial tree; halving, then the blocks to
 * the root), MPI_Gather and MPI_Scatter (binomial tree; linear) and
 * MPI_Reduce_scatter (halving, folded; reduce and scatter). The tests run it with the
 * FLIT_MPI_* sizes at their defaults and at both extremes, so that every algorithm meets
 * every case; each result is checked element by element, a non-commutative op's in rank
 * order. The non-blocking twins run the same code on a coroutine: one of each is checked
 * too.
 */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

static int rank, size;

/* Broadcast: every root, sizes from 0 to past a MiB, bytes and ints, a
   strided type (packed, broadcast, unpacked: only the columns change). */
static void bcasts(void)
{
    static const int bytes[] = {0, 1, 2, 3, 5, 7, 8, 9, 1000, 65536, 131075, 1 << 20};
    unsigned char *b = malloc(1 << 20);
    CHECK(b);
    for (int root = 0; root < size; root++)
        for (size_t k = 0; k < sizeof bytes / sizeof bytes[0]; k++) {
            int n = bytes[k];
            for (int i = 0; i < n; i++)
                b[i] = (unsigned char)(rank == root ? i * 7 + root : 0xee);
            OK(MPI_Bcast(b, n, MPI_BYTE, root, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                CHECK(b[i] == (unsigned char)(i * 7 + root));
        }
    enum { ROWS = 4099 }; /* 4099 rows of 3 ints, a column of each sent */
    int(*m)[3] = malloc(sizeof(int[ROWS][3]));
    CHECK(m);
    MPI_Datatype col;
    OK(MPI_Type_vector(ROWS, 2, 3, MPI_INT, &col));
    OK(MPI_Type_commit(&col));
    int root = size - 1;
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < 3; j++)
            m[i][j] = rank == root ? i * 3 + j : -1;
    OK(MPI_Bcast(m, 1, col, root, MPI_COMM_WORLD));
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < 3; j++)
            CHECK(m[i][j] == (j < 2 || rank == root ? i * 3 + j : -1));
    OK(MPI_Type_free(&col));
    free(m);
    free(b);
}

/* Allgatherv with rank i giving cnt(i) ints (some none), at displacements
   out of rank order with gaps; Allgather of each size, in place too. */
static int cnt(int i, int scale)
{
    return i % 3 == 1 ? 0 : (i + 1) * scale;
}

static void allgathers(void)
{
    static const int scales[] = {1, 7, 1000, 20000};
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        int sc = scales[s], *counts = malloc(sizeof(int) * (size_t)size);
        int *displs = malloc(sizeof(int) * (size_t)size), total = 0;
        CHECK(counts && displs);
        for (int j = size - 1; j >= 0; j--) { /* last rank's block first */
            counts[j] = cnt(j, sc);
            displs[j] = total;
            total += counts[j] + 3; /* a gap after each */
        }
        int room = counts[rank] > sc ? counts[rank] : sc;
        int *mine = malloc(sizeof(int) * (size_t)room);
        int *all = malloc(sizeof(int) * (size_t)total);
        CHECK(mine && all);
        seq_fill(mine, counts[rank], rank);
        for (int i = 0; i < total; i++)
            all[i] = -9;
        OK(MPI_Allgatherv(mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT,
                          MPI_COMM_WORLD));
        for (int j = 0; j < size; j++) {
            CHECK(seq_same(all + displs[j], counts[j], j));
            CHECK(all[displs[j] + counts[j]] == -9);
        }
        /* the regular call, from a buffer and in place */
        int *reg = malloc(sizeof(int) * (size_t)sc * (size_t)size);
        CHECK(reg);
        seq_fill(mine, sc, rank);
        OK(MPI_Allgather(mine, sc, MPI_INT, reg, sc, MPI_INT, MPI_COMM_WORLD));
        for (int j = 0; j < size; j++)
            CHECK(seq_same(reg + (size_t)j * (size_t)sc, sc, j));
        memset(reg, 0, sizeof(int) * (size_t)sc * (size_t)size);
        seq_fill(reg + (size_t)rank * (size_t)sc, sc, rank + 100);
        OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, reg, sc, MPI_INT,
                         MPI_COMM_WORLD));
        for (int j = 0; j < size; j++)
            CHECK(seq_same(reg + (size_t)j * (size_t)sc, sc, j + 100));
        free(reg);
        free(mine);
        free(all);
        free(displs);
        free(counts);
    }
    /* every other int of each block: packed, gathered, unpacked */
    MPI_Datatype two, every2;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &two));
    OK(MPI_Type_create_resized(two, 0, 4 * sizeof(int), &every2));
    OK(MPI_Type_commit(&every2));
    int *got = malloc(sizeof(int) * 4 * (size_t)size), mine[2] = {rank, -rank};
    CHECK(got);
    for (int i = 0; i < 4 * size; i++)
        got[i] = 77;
    OK(MPI_Allgather(mine, 2, MPI_INT, got, 1, every2, MPI_COMM_WORLD));
    for (int j = 0; j < size; j++)
        CHECK(got[4 * j] == j && got[4 * j + 1] == 77 && got[4 * j + 2] == -j &&
              got[4 * j + 3] == 77);
    OK(MPI_Type_free(&every2));
    OK(MPI_Type_free(&two));
    free(got);
}

static void add_ints(void *in, void *io, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        ((int *)io)[i] += ((const int *)in)[i];
}

static int f(int r, int i)
{
    return (r + 1) * 3 + i % 11 - 4;
}

static void allreduces(void)
{
    static const int counts[] = {1, 2, 3, 5, 7, 8, 1000, 4097, 65537};
    int *in = malloc(sizeof(int) * 65537), *out = malloc(sizeof(int) * 65537);
    CHECK(in && out);
    MPI_Op user, cat;
    OK(MPI_Op_create(add_ints, 1, &user));
    OK(MPI_Op_create(concat_digits, 0, &cat));
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        for (int i = 0; i < n; i++)
            in[i] = f(rank, i), out[i] = -1;
        OK(MPI_Allreduce(in, out, n, MPI_INT, c % 2 ? user : MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            long v = 0;
            for (int r = 0; r < size; r++)
                v += f(r, i);
            CHECK(out[i] == v);
        }
        OK(MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            CHECK(in[i] == f(0, i));
    }
    /* a non-commutative op, short and long: never halved, folded in order */
    if (size <= 9) {
        int want = 0;
        for (int d = 1; d <= size; d++)
            want = want * 10 + d;
        static const int pairs[] = {1, 3, 20000};
        for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++) {
            int n = pairs[c];
            for (int k = 0; k < n; k++)
                in[2 * k] = rank + 1, in[2 * k + 1] = 10;
            OK(MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_2INT, cat, MPI_COMM_WORLD));
            for (int k = 0; k < n; k++)
                CHECK(in[2 * k] == want);
        }
    }
    OK(MPI_Op_free(&cat));
    OK(MPI_Op_free(&user));
    free(in);
    free(out);
}

/* The digits 1 .. size in rank order: a non-commutative op's result. */
static int digits(void)
{
    int want = 0;
    for (int d = 1; d <= size; d++)
        want = want * 10 + d;
    return want;
}

/* Reduce to every root, at sizes on both sides of where it halves, with a
   predefined and a user commutative op, and in place at the root (the
   others' recvbuf ignored: NULL); a non-commutative op, short and long,
   in rank order. */
static void reduces(void)
{
    static const int counts[] = {1, 3, 7, 8, 1000, 4097, 65537};
    int *in = malloc(sizeof(int) * 2 * 65537), *out = malloc(sizeof(int) * 65537);
    CHECK(in && out);
    MPI_Op user, cat;
    OK(MPI_Op_create(add_ints, 1, &user));
    OK(MPI_Op_create(concat_digits, 0, &cat));
    for (int root = 0; root < size; root++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            int n = counts[c];
            for (int i = 0; i < n; i++)
                in[i] = f(rank, i), out[i] = -1;
            OK(MPI_Reduce(in, out, n, MPI_INT, c % 2 ? user : MPI_SUM, root,
                          MPI_COMM_WORLD));
            for (int i = 0; i < n; i++) {
                long v = 0;
                for (int r = 0; r < size; r++)
                    v += f(r, i);
                CHECK(out[i] == (rank == root ? v : -1));
            }
            OK(MPI_Reduce(rank == root ? MPI_IN_PLACE : in, rank == root ? in : NULL, n,
                          MPI_INT, MPI_MAX, root, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                CHECK(in[i] == f(rank == root ? size - 1 : rank, i));
        }
    if (size <= 9) {
        static const int pairs[] = {1, 3, 20000};
        for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++) {
            int n = pairs[c], root = (int)c % size;
            for (int k = 0; k < n; k++)
                in[2 * k] = rank + 1, in[2 * k + 1] = 10;
            OK(MPI_Reduce(rank == root ? MPI_IN_PLACE : in, in, n, MPI_2INT, cat, root,
                          MPI_COMM_WORLD));
            for (int k = 0; rank == root && k < n; k++)
                CHECK(in[2 * k] == digits());
        }
    }
    OK(MPI_Op_free(&cat));
    OK(MPI_Op_free(&user));
    free(in);
    free(out);
}

/* Gather and Scatter from every root, blocks of k ints on both sides of
   where they go linear (none too), from and to a buffer and in place at
   the root; rank i's block is seq(i * 64 + root). Then a gather into
   every other int at the root (a strided type: each block unpacked). */
static void gathers(void)
{
    static const int ks[] = {0, 1, 3, 256, 1023, 1025, 5000};
    int *all = malloc(sizeof(int) * 2 * 5000 * (size_t)size),
        *mine = malloc(sizeof(int) * 5000);
    CHECK(all && mine);
    for (int root = 0; root < size; root++)
        for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
            int k = ks[c], at_root = rank == root;
            seq_fill(mine, k, rank * 64 + root);
            for (int i = 0; i < k * size; i++)
                all[i] = -7;
            OK(MPI_Gather(mine, k, MPI_INT, all, k, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < size; i++)
                CHECK(at_root ? seq_same(all + i * k, k, i * 64 + root)
                              : k == 0 || all[i * k] == -7);
            if (at_root)
                memset(all, 0xff, sizeof(int) * (size_t)(k * size)),
                    seq_fill(all + root * k, k, root * 64 + root);
            OK(MPI_Gather(at_root ? MPI_IN_PLACE : mine, k, MPI_INT, all, k, MPI_INT,
                          root, MPI_COMM_WORLD));
            for (int i = 0; at_root && i < size; i++)
                CHECK(seq_same(all + i * k, k, i * 64 + root));
            /* scatter back what was gathered: each its own block again */
            for (int i = 0; i < k; i++)
                mine[i] = -7;
            OK(MPI_Scatter(all, k, MPI_INT, mine, k, MPI_INT, root, MPI_COMM_WORLD));
            CHECK(at_root || seq_same(mine, k, rank * 64 + root));
            CHECK(!at_root || seq_same(mine, k, root * 64 + root));
            if (at_root)
                for (int i = 0; i < k; i++)
                    all[root * k + i] = -9;
            OK(MPI_Scatter(all, k, MPI_INT, at_root ? MPI_IN_PLACE : mine, k, MPI_INT,
                           root, MPI_COMM_WORLD));
            CHECK(at_root ? k == 0 || all[root * k] == -9
                          : seq_same(mine, k, rank * 64 + root));
        }
    MPI_Datatype one, every2;
    OK(MPI_Type_vector(1, 1, 2, MPI_INT, &one));
    OK(MPI_Type_create_resized(one, 0, 2 * sizeof(int), &every2));
    OK(MPI_Type_commit(&every2));
    int root = size - 1, k = 700;
    seq_fill(mine, k, rank * 64 + 3);
    for (int i = 0; i < 2 * k * size; i++)
        all[i] = -3;
    OK(MPI_Gather(mine, k, MPI_INT, all, k, every2, root, MPI_COMM_WORLD));
    for (int i = 0; rank == root && i < size; i++)
        for (int e = 0; e < k; e++)
            CHECK(all[2 * (i * k + e)] == seq_at(i * 64 + 3, e) &&
                  all[2 * (i * k + e) + 1] == -3);
    OK(MPI_Type_free(&every2));
    OK(MPI_Type_free(&one));
    free(mine);
    free(all);
}

/* Reduce_scatter with blocks of 0 to many ints (uneven, some ranks none),
   commutative (halved, the ranks past a power of two folded) and not (in
   rank order), and Reduce_scatter_block in place. */
static void reduce_scatters(void)
{
    int *counts = malloc(sizeof(int) * (size_t)size);
    CHECK(counts);
    static const int scales[] = {1, 3, 1000};
    for (size_t c = 0; c < sizeof scales / sizeof scales[0]; c++) {
        int total = 0, off = 0;
        for (int i = 0; i < size; i++) {
            counts[i] = (i * 7 + (int)c) % 5 == 2 ? 0 : scales[c] * (1 + i % 3);
            off += i < rank ? counts[i] : 0;
            total += counts[i];
        }
        int *in = malloc(sizeof(int) * (size_t)(2 * total + 1)),
            *out = malloc(sizeof(int) * (size_t)(2 * counts[rank] + 1));
        CHECK(in && out);
        for (int i = 0; i < total; i++)
            in[i] = f(rank, i);
        OK(MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < counts[rank]; i++) {
            long v = 0;
            for (int r = 0; r < size; r++)
                v += f(r, off + i);
            CHECK(out[i] == v);
        }
        if (size <= 9) {
            MPI_Op cat;
            OK(MPI_Op_create(concat_digits, 0, &cat));
            for (int k = 0; k < total; k++)
                in[2 * k] = rank + 1, in[2 * k + 1] = 10;
            OK(MPI_Reduce_scatter(in, out, counts, MPI_2INT, cat, MPI_COMM_WORLD));
            for (int k = 0; k < counts[rank]; k++)
                CHECK(out[2 * k] == digits());
            OK(MPI_Op_free(&cat));
        }
        free(in);
        free(out);
    }
    enum { B = 300 };
    int *v = malloc(sizeof(int) * B * (size_t)size);
    CHECK(v);
    for (int i = 0; i < B * size; i++)
        v[i] = f(rank, i);
    OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, v, B, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    for (int i = 0; i < B; i++)
        CHECK(v[i] == f(0, rank * B + i));
    free(v);
    free(counts);
}

/* Alltoall of k ints a block, from a buffer and in place; Alltoallv with
   counts by sender and receiver (some none) and a strided receive type
   (each block packed, exchanged, unpacked). Block (i to j) holds ints
   seq_at(i * 64 + j, ...). */
static void alltoalls(void)
{
    static const int ks[] = {1, 100, 1025, 5000};
    for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
        int k = ks[c], nk = k * size;
        int *snd = malloc(sizeof(int) * (size_t)nk),
            *rcv = malloc(sizeof(int) * (size_t)nk);
        CHECK(snd && rcv);
        for (int j = 0; j < size; j++)
            seq_fill(snd + j * k, k, rank * 64 + j);
        OK(MPI_Alltoall(snd, k, MPI_INT, rcv, k, MPI_INT, MPI_COMM_WORLD));
        for (int i = 0; i < size; i++)
            CHECK(seq_same(rcv + i * k, k, i * 64 + rank));
        OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, snd, k, MPI_INT,
                        MPI_COMM_WORLD));
        for (int i = 0; i < size; i++)
            CHECK(seq_same(snd + i * k, k, i * 64 + rank));
        free(snd);
        free(rcv);
    }
    /* v: i sends j (i + j) % 3 * 300 ints (0, 300 or 600), received every
       other int (a vector type of 2 ints a stride, resized to 2) */
    int *sc = malloc(sizeof(int) * 4 * (size_t)size), *sd = sc + size, *rc = sd + size,
        *rd = rc + size, so = 0, ro = 0;
    CHECK(sc);
    for (int j = 0; j < size; j++) {
        sc[j] = (rank + j) % 3 * 300, sd[j] = so, so += sc[j] + 1;
        rc[j] = (j + rank) % 3 * 300, rd[j] = ro, ro += rc[j] + 1; /* in pairs of ints */
    }
    MPI_Datatype one, every2;
    OK(MPI_Type_vector(1, 1, 2, MPI_INT, &one));
    OK(MPI_Type_create_resized(one, 0, 2 * sizeof(int), &every2));
    OK(MPI_Type_commit(&every2));
    int *sv = malloc(sizeof(int) * (size_t)(so + 1)),
        *rv = malloc(sizeof(int) * 2 * (size_t)ro);
    CHECK(sv && rv);
    for (int j = 0; j < size; j++)
        seq_fill(sv + sd[j], sc[j], rank * 64 + j);
    for (int i = 0; i < 2 * ro; i++)
        rv[i] = -3;
    OK(MPI_Alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, every2, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        for (int e = 0; e < rc[i]; e++) {
            CHECK(rv[2 * (rd[i] + e)] == seq_at(i * 64 + rank, e));
            CHECK(rv[2 * (rd[i] + e) + 1] == -3);
        }
    OK(MPI_Type_free(&every2));
    OK(MPI_Type_free(&one));
    free(sv);
    free(rv);
    free(sc);
}

/* The non-blocking twins take the same paths. */
static void nonblocking(void)
{
    enum { N = 40000 };
    int *b = malloc(sizeof(int) * N * (size_t)(size + 1)), *s = malloc(sizeof(int) * N);
    CHECK(b && s);
    MPI_Request q[3];
    seq_fill(b, N, 5);
    if (rank != 1 % size)
        memset(b, 0, sizeof(int) * N);
    OK(MPI_Ibcast(b, N, MPI_INT, 1 % size, MPI_COMM_WORLD, &q[0]));
    OK(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
    CHECK(seq_same(b, N, 5));
    seq_fill(s, 100, rank);
    OK(MPI_Iallgather(s, 100, MPI_INT, b, 100, MPI_INT, MPI_COMM_WORLD, &q[1]));
    for (int i = 0; i < N; i++)
        s[i] = i - rank;
    int *sum = b + N * (size_t)size;
    OK(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
    for (int j = 0; j < size; j++)
        CHECK(seq_same(b + 100 * j, 100, j));
    OK(MPI_Iallreduce(s, sum, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[2]));
    OK(MPI_Wait(&q[2], MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++)
        CHECK(sum[i] == i * size - size * (size - 1) / 2);
    free(s);
    free(b);
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    bcasts();
    allgathers();
    allreduces();
    alltoalls();
    reduces();
    gathers();
    reduce_scatters();
    nonblocking();
    /* on a communicator of every other rank: another size, other ranks */
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
    OK(MPI_Comm_rank(half, &rank));
    OK(MPI_Comm_size(half, &size));
    int v = rank + 1, total = 0;
    OK(MPI_Allreduce(&v, &total, 1, MPI_INT, MPI_SUM, half));
    CHECK(total == size * (size + 1) / 2);
    OK(MPI_Comm_free(&half));
    OK(MPI_Finalize());
    return 0;
}
