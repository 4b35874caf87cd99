/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Non-blocking collectives, MPI_Reduce_scatter and MPI_Alltoallw on 1 to 4
 * ranks: each I-call's result equals, byte for byte, the blocking call's
 * on the same data; several in flight at once on one communicator,
 * completed in another order than started; progress made while the
 * program waits in a point-to-point call; an Ibarrier that cannot complete
 * before the last rank enters; a derived type freed while in use; every
 * argument error answering its class with no request made.
 */
#include <string.h>

#include "mpi_check.h"

#define N 3000

static int rank, size;

static int value(int r, int i)
{
    return r * 1000003 + i * 7 - 5;
}

static void fill(int *b, int n, int r)
{
    for (int i = 0; i < n; i++)
        b[i] = value(r, i);
}

/* Waits for req by MPI_Test alone (bounded: a hang is a failure). */
static void test_until_done(MPI_Request *req)
{
    int flag = 0;
    for (long i = 0; i < 100000000L && !flag; i++)
        OK(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
    CHECK(flag && *req == MPI_REQUEST_NULL);
}

static void bcast_reduce(void)
{
    static int a[N], b[N], c[N], d[N];
    int counts[] = {0, 1, N};
    for (int root = 0; root < size; root++)
        for (int k = 0; k < 3; k++) {
            int n = counts[k];
            MPI_Request req[3];
            fill(a, n, rank == root ? root : -1);
            fill(b, n, rank);
            memset(c, 0, sizeof c);
            memset(d, 0, sizeof d);
            OK(MPI_Ibcast(a, n, MPI_INT, root, MPI_COMM_WORLD, &req[0]));
            OK(MPI_Ireduce(b, c, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req[1]));
            OK(MPI_Iallreduce(b, d, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req[2]));
            OK(MPI_Wait(&req[2], MPI_STATUS_IGNORE)); /* the last started first */
            test_until_done(&req[1]);
            OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
            static int e[N], f[N];
            OK(MPI_Reduce(b, e, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
            OK(MPI_Allreduce(b, f, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                CHECK(a[i] == value(root, i) && d[i] == f[i] &&
                      d[i] == value(size - 1, i));
            CHECK(rank != root || memcmp(c, e, (size_t)n * sizeof *c) == 0);
        }
}

/* The blocking call and the non-blocking one into two buffers: equal. */
static void movement(void)
{
    static int s[4 * N], r1[4 * N], r2[4 * N];
    int cnt[4], dsp[4], n = 700;
    for (int i = 0; i < size; i++)
        cnt[i] = n - 100 * i, dsp[i] = i * n;
    fill(s, 4 * N, rank);
    MPI_Request q[8];
    memset(r1, 0, sizeof r1);
    memset(r2, 0, sizeof r2);
    int root = size - 1;
    OK(MPI_Igather(s, n, MPI_INT, r2, n, MPI_INT, root, MPI_COMM_WORLD, &q[0]));
    OK(MPI_Iscatter(s, n, MPI_INT, r2 + N, n, MPI_INT, 0, MPI_COMM_WORLD, &q[1]));
    OK(MPI_Iallgather(s, n, MPI_INT, r2 + 2 * N, n, MPI_INT, MPI_COMM_WORLD, &q[2]));
    OK(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
    OK(MPI_Gather(s, n, MPI_INT, r1, n, MPI_INT, root, MPI_COMM_WORLD));
    OK(MPI_Scatter(s, n, MPI_INT, r1 + N, n, MPI_INT, 0, MPI_COMM_WORLD));
    OK(MPI_Allgather(s, n, MPI_INT, r1 + 2 * N, n, MPI_INT, MPI_COMM_WORLD));
    CHECK(memcmp(r1, r2, sizeof r1) == 0);
    int me = cnt[rank];
    OK(MPI_Igatherv(s, me, MPI_INT, r2, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD, &q[0]));
    OK(MPI_Iscatterv(s, cnt, dsp, MPI_INT, r2 + N, me, MPI_INT, root, MPI_COMM_WORLD,
                     &q[1]));
    OK(MPI_Iallgatherv(s, me, MPI_INT, r2 + 2 * N, cnt, dsp, MPI_INT, MPI_COMM_WORLD,
                       &q[2]));
    OK(MPI_Ialltoall(s, n / 4, MPI_INT, r2 + 3 * N, n / 4, MPI_INT, MPI_COMM_WORLD,
                     &q[3]));
    OK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
    OK(MPI_Gatherv(s, me, MPI_INT, r1, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD));
    OK(MPI_Scatterv(s, cnt, dsp, MPI_INT, r1 + N, me, MPI_INT, root, MPI_COMM_WORLD));
    OK(MPI_Allgatherv(s, me, MPI_INT, r1 + 2 * N, cnt, dsp, MPI_INT, MPI_COMM_WORLD));
    OK(MPI_Alltoall(s, n / 4, MPI_INT, r1 + 3 * N, n / 4, MPI_INT, MPI_COMM_WORLD));
    CHECK(memcmp(r1, r2, sizeof r1) == 0);
}

/* Reduce_scatter with uneven blocks (rank i gets i + 1 elements, in place
   too), and its non-blocking twins; scans. */
static void reduce_scatter(void)
{
    int cnt[4] = {1, 2, 3, 4}, off = 0;
    for (int i = 0; i < rank; i++)
        off += cnt[i];
    int in[10], out[4] = {0}, again[10];
    for (int i = 0; i < 10; i++)
        in[i] = again[i] = (rank + 1) * (i + 1);
    MPI_Request q;
    OK(MPI_Ireduce_scatter(in, out, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    OK(MPI_Reduce_scatter(MPI_IN_PLACE, again, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int ranks_sum = size * (size + 1) / 2;
    for (int i = 0; i < cnt[rank]; i++)
        CHECK(out[i] == ranks_sum * (off + i + 1) && again[i] == out[i]);
    int blk[2] = {0};
    OK(MPI_Ireduce_scatter_block(in, blk, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(blk[0] == 2 * rank + 1 && blk[1] == 2 * rank + 2);
    int x = rank + 1, sc = 0, ex = -7;
    MPI_Request qs[2];
    OK(MPI_Iscan(&x, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &qs[0]));
    OK(MPI_Iexscan(&x, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &qs[1]));
    OK(MPI_Waitall(2, qs, MPI_STATUSES_IGNORE));
    CHECK(sc == (rank + 1) * (rank + 2) / 2);
    CHECK(ex == (rank ? rank * (rank + 1) / 2 : -7));
}

/* Alltoallw: to rank j a block of j + 1 ints of column type, received as
   contiguous ints at byte displacements; Ialltoallv and Ialltoallw equal. */
static void alltoallw(void)
{
    static int m[4][8], got[64], got2[64];
    MPI_Datatype col, st[4], rt[4];
    OK(MPI_Type_vector(4, 1, 8, MPI_INT, &col));
    OK(MPI_Type_commit(&col));
    int sc[4], sd[4], rc[4], rd[4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            m[i][j] = value(rank, i * 8 + j);
    for (int j = 0; j < size; j++) {
        st[j] = col, sc[j] = 1, sd[j] = (int)(j * sizeof(int)); /* column j */
        rt[j] = MPI_INT, rc[j] = 4, rd[j] = (int)(j * 4 * sizeof(int));
    }
    MPI_Request q;
    memset(got, -1, sizeof got);
    OK(MPI_Ialltoallw(m, sc, sd, st, got, rc, rd, rt, MPI_COMM_WORLD, &q));
    OK(MPI_Type_free(&col)); /* the call holds it */
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < 4; i++)
            CHECK(got[j * 4 + i] == value(j, i * 8 + rank));
    CHECK(got[size * 4] == -1);
    memcpy(got2, got, sizeof got);
    OK(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, got2, rc, rd, rt, MPI_COMM_WORLD));
    for (int j = 0; j < size; j++) /* sent back: each block home again */
        for (int i = 0; i < 4; i++)
            CHECK(got2[j * 4 + i] == value(rank, i * 8 + j));
    int vd[4];
    for (int j = 0; j < size; j++)
        vd[j] = j * 4;
    OK(MPI_Ialltoallv(got, rc, vd, MPI_INT, got2, rc, vd, MPI_INT, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < 4; i++)
            CHECK(got2[j * 4 + i] == value(rank, i * 8 + j));
}

/* Rank 0 waits in MPI_Recv for the last rank, which sends only once its
   Ibarrier is done: rank 0's barrier must move while it is in MPI_Recv.
   Then an Ibarrier the last rank tests while rank 0 has not entered. */
static void progress(void)
{
    MPI_Request q;
    int x = 0, last = size - 1, flag = 1;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &q));
    if (rank == 0 && size > 1) {
        OK(MPI_Recv(&x, 1, MPI_INT, last, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(x == 42);
    }
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (rank == last && size > 1)
        OK(MPI_Send(&(int){42}, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
    if (size < 2)
        return;
    if (rank == 0)
        OK(MPI_Recv(&x, 1, MPI_INT, last, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &q));
    if (rank == last) {
        for (int i = 0; i < 100; i++) {
            OK(MPI_Test(&q, &flag, MPI_STATUS_IGNORE));
            CHECK(flag == 0);
        }
        OK(MPI_Send(&x, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
    }
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
}

/* lifetimes' broadcast buffers: the freed request's may be written after
   lifetimes returns (until MPI_Finalize), so they outlive it. */
static int lifetime_v[40];

/* A communicator freed while its collective is in flight; a request freed
   before it completes; many in flight at once. */
static void lifetimes(void)
{
    MPI_Comm dup;
    MPI_Request q[40];
    int *v = lifetime_v;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    for (int i = 0; i < 40; i++) {
        v[i] = rank == i % size ? i : -1;
        OK(MPI_Ibcast(&v[i], 1, MPI_INT, i % size, dup, &q[i]));
    }
    OK(MPI_Comm_free(&dup));
    OK(MPI_Request_free(&q[39]));
    CHECK(q[39] == MPI_REQUEST_NULL);
    OK(MPI_Waitall(39, q, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 39; i++)
        CHECK(v[i] == i);
    OK(MPI_Barrier(MPI_COMM_WORLD)); /* the freed one completes by MPI_Finalize */
}

static void errors(void)
{
    MPI_Request q = (MPI_Request)&q;
    int x = 0;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Ibarrier(MPI_COMM_NULL, &q) == MPI_ERR_COMM);
    CHECK(MPI_Ibarrier(MPI_COMM_WORLD, NULL) == MPI_ERR_REQUEST);
    CHECK(MPI_Ibcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD, &q) == MPI_ERR_ROOT);
    CHECK(q == MPI_REQUEST_NULL);
    CHECK(MPI_Ibcast(&x, -1, MPI_INT, 0, MPI_COMM_WORLD, &q) == MPI_ERR_COUNT);
    CHECK(MPI_Iallreduce(&x, &x, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD, &q) ==
          MPI_ERR_TYPE);
    CHECK(MPI_Iallreduce(&x, &x, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &q) ==
          MPI_ERR_OP);
    CHECK(MPI_Ireduce_scatter(&x, &x, NULL, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q) ==
          MPI_ERR_ARG);
    int neg[4] = {-1, -1, -1, -1};
    CHECK(MPI_Reduce_scatter(&x, &x, neg, MPI_INT, MPI_SUM, MPI_COMM_WORLD) ==
          MPI_ERR_COUNT);
    int c[4] = {1, 1, 1, 1}, d[4] = {0};
    MPI_Datatype t[4] = {MPI_INT, MPI_INT, MPI_INT, MPI_DATATYPE_NULL};
    if (size == 4)
        CHECK(MPI_Alltoallw(&x, c, d, t, &x, c, d, t, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    CHECK(MPI_Alltoallw(&x, c, NULL, t, &x, c, d, t, MPI_COMM_WORLD) == MPI_ERR_ARG);
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &q));
    CHECK(MPI_Cancel(&q) == MPI_ERR_REQUEST); /* MPI: collectives cannot be */
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size <= 4);
    bcast_reduce();
    movement();
    reduce_scatter();
    alltoallw();
    progress();
    lifetimes();
    errors();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    CHECK(lifetime_v[39] == 39); /* the freed broadcast completed by then */
    return 0;
}
