/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication on 1 to 4 ranks: put and get with fence (zero
 * counts, MPI_PROC_NULL, disp_unit, a derived origin type), derived
 * target types (vector, indexed, reaching before the displacement) for
 * puts, gets and accumulates, every
 * accumulate op from all ranks at once to one place (the exact sum proves
 * atomicity), get-accumulate, fetch-and-op (every fetched value distinct),
 * compare-and-swap (one winner), complex and MPI_Count accumulates,
 * MPI_Win_sync watching the window's own memory, shared-memory windows
 * (MPI_Win_allocate_shared, MPI_Win_shared_query), exclusive locks (read-modify-write
 * from all ranks, the count exact), shared locks held together, flush, the request-based
 * operations (a put's and an accumulate's complete while their target
 * computes outside MPI), and bad arguments answered with their error classes.
 */
#include <complex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_check.h"

static int rank, size;

#define N 64

/* Each rank puts its ints into the next rank's window and gets the
   previous rank's; windows of disp_unit 4 (allocated) and 1 (the
   program's memory). */
static void put_get(void)
{
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    MPI_Group g;
    int gs;
    OK(MPI_Win_get_group(w, &g));
    OK(MPI_Group_size(g, &gs));
    CHECK(gs == size);
    OK(MPI_Group_free(&g));
    for (int i = 0; i < N; i++)
        base[i] = -1;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int src[N / 2], got[N / 2];
    seq_fill(src, N / 2, rank);
    OK(MPI_Win_fence(0, w));
    /* the upper half, at displacement N/2 elements */
    OK(MPI_Put(src, N / 2, MPI_INT, next, N / 2, N / 2, MPI_INT, w));
    OK(MPI_Put(src, 0, MPI_INT, next, 0, 0, MPI_INT, w));
    OK(MPI_Put(src, N / 2, MPI_INT, MPI_PROC_NULL, 0, N / 2, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(seq_same(base + N / 2, N / 2, prev));
    CHECK(base[0] == -1 && base[N / 2 - 1] == -1);
    memset(got, 0, sizeof got);
    OK(MPI_Get(got, N / 2, MPI_INT, next, N / 2, N / 2, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(seq_same(got, N / 2, rank));
    /* a strided origin (every other int) into contiguous ints */
    MPI_Datatype vec;
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int strided[8] = {10 + rank, 0, 11 + rank, 0, 12 + rank, 0, 13 + rank, 0};
    OK(MPI_Put(strided, 1, vec, next, 0, 4, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    for (int i = 0; i < 4; i++)
        CHECK(base[i] == 10 + prev + i);
    int back[8] = {0};
    OK(MPI_Get(back, 1, vec, next, 0, 4, MPI_INT, w));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w));
    CHECK(back[0] == 10 + rank && back[6] == 13 + rank && back[1] == 0);
    OK(MPI_Type_free(&vec));
    OK(MPI_Win_free(&w));
    CHECK(w == MPI_WIN_NULL);

    /* disp_unit 1 over the program's memory: byte displacements */
    int mine[4] = {0};
    OK(MPI_Win_create(mine, sizeof mine, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    OK(MPI_Win_fence(0, w));
    int v = 1000 + rank;
    OK(MPI_Put(&v, 1, MPI_INT, next, 2 * sizeof(int), 1, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(mine[2] == 1000 + prev && mine[0] == 0 && mine[3] == 0);
    OK(MPI_Win_free(&w));
}

/* Every rank accumulates into rank 0's window at once, many times: the
   sum is exact only if each accumulate is atomic. */
static void accumulate(void)
{
    long *base;
    MPI_Win w;
    enum { BIG = 8192, BIGITER = 300 };
    OK(MPI_Win_allocate((16 + BIG) * sizeof(long), sizeof(long), MPI_INFO_NULL,
                        MPI_COMM_WORLD, &base, &w));
    long *ones = malloc(BIG * sizeof(long));
    CHECK(ones);
    for (int i = 0; i < BIG; i++)
        ones[i] = i + 1;
    /* 0: SUM, 1: PROD, 2: MAX, 3: MIN, 4: BAND, 5: BOR, 6: BXOR, 7: LAND,
       8: LOR, 9: LXOR, 10: REPLACE */
    long init[11] = {0, 1, -5, 1000, -1, 0, 0, 1, 0, 0, -1};
    if (rank == 0)
        memcpy(base, init, sizeof init);
    OK(MPI_Win_fence(0, w));
    enum { ITER = 200 };
    long one = 1, sums[4] = {1, 2, 3, 4};
    for (int i = 0; i < ITER; i++) {
        OK(MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, w));
        OK(MPI_Accumulate(sums, 4, MPI_LONG, 0, 12, 4, MPI_LONG, MPI_SUM, w));
    }
    /* long accumulates: a non-atomic one would overlap another's */
    for (int i = 0; i < BIGITER; i++)
        OK(MPI_Accumulate(ones, BIG, MPI_LONG, 0, 16, BIG, MPI_LONG, MPI_SUM, w));
    long two = 2, mx = rank * 10, bit = 1L << rank, t = 1, f = 0, r = rank;
    OK(MPI_Accumulate(&two, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_PROD, w));
    OK(MPI_Accumulate(&mx, 1, MPI_LONG, 0, 2, 1, MPI_LONG, MPI_MAX, w));
    OK(MPI_Accumulate(&mx, 1, MPI_LONG, 0, 3, 1, MPI_LONG, MPI_MIN, w));
    long notbit = ~bit;
    OK(MPI_Accumulate(&notbit, 1, MPI_LONG, 0, 4, 1, MPI_LONG, MPI_BAND, w));
    OK(MPI_Accumulate(&bit, 1, MPI_LONG, 0, 5, 1, MPI_LONG, MPI_BOR, w));
    OK(MPI_Accumulate(&bit, 1, MPI_LONG, 0, 6, 1, MPI_LONG, MPI_BXOR, w));
    OK(MPI_Accumulate(&t, 1, MPI_LONG, 0, 7, 1, MPI_LONG, MPI_LAND, w));
    OK(MPI_Accumulate(&f, 1, MPI_LONG, 0, 8, 1, MPI_LONG, MPI_LOR, w));
    OK(MPI_Accumulate(&t, 1, MPI_LONG, 0, 9, 1, MPI_LONG, MPI_LXOR, w));
    OK(MPI_Accumulate(&r, 1, MPI_LONG, 0, 10, 1, MPI_LONG, MPI_REPLACE, w));
    OK(MPI_Win_fence(0, w));
    if (rank == 0) {
        long all = (1L << size) - 1;
        CHECK(base[0] == (long)ITER * size);
        for (int k = 0; k < 4; k++)
            CHECK(base[12 + k] == (long)ITER * size * (k + 1));
        CHECK(base[1] == 1L << size);
        CHECK(base[2] == (size - 1) * 10);
        CHECK(base[3] == 0);
        CHECK(base[4] == ~all);
        CHECK(base[5] == all);
        CHECK(base[6] == all);
        CHECK(base[7] == 1 && base[8] == 0 && base[9] == (size & 1));
        CHECK(base[10] >= 0 && base[10] < size);
        for (int i = 0; i < BIG; i++)
            CHECK(base[16 + i] == (long)BIGITER * size * (i + 1));
    }
    OK(MPI_Win_fence(0, w));
    /* get-accumulate: NO_OP reads, REPLACE swaps */
    long old = -7, mark = 500 + rank;
    OK(MPI_Get_accumulate(NULL, 0, MPI_LONG, &old, 1, MPI_LONG, 0, 0, 1, MPI_LONG,
                          MPI_NO_OP, w));
    CHECK(old == (long)ITER * size);
    OK(MPI_Win_fence(0, w));
    if (rank == size - 1)
        OK(MPI_Get_accumulate(&mark, 1, MPI_LONG, &old, 1, MPI_LONG, 0, 0, 1, MPI_LONG,
                              MPI_REPLACE, w));
    OK(MPI_Win_fence(0, w));
    if (rank == size - 1)
        CHECK(old == (long)ITER * size);
    if (rank == 0)
        CHECK(base[0] == 500 + size - 1);
    /* MAXLOC on pairs */
    struct {
        int v, i;
    } pair = {rank % 2 ? 100 : rank, rank};
    if (rank == 0) {
        int *p = (int *)(base + 14);
        p[0] = -1;
        p[1] = -1;
    }
    OK(MPI_Win_fence(0, w));
    OK(MPI_Accumulate(&pair, 1, MPI_2INT, 0, 14, 1, MPI_2INT, MPI_MAXLOC, w));
    OK(MPI_Win_fence(0, w));
    if (rank == 0) {
        int *p = (int *)(base + 14);
        CHECK(size == 1 ? p[0] == 0 && p[1] == 0 : p[0] == 100 && p[1] == 1);
    }
    OK(MPI_Win_free(&w));
    free(ones);
}

/* Complex numbers and MPI_Count accumulated at rank 0 (SUM and PROD are
   MPI's operations on complex), and MPI_Win_sync: rank 0 watches its
   own window, in a shared lock_all epoch, until every rank's flag has
   landed, calling only MPI_Win_sync. */
static void complex_and_sync(void)
{
    double _Complex *base;
    MPI_Win w;
    OK(MPI_Win_allocate(4 * sizeof *base, sizeof *base, MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    if (rank == 0) {
        base[0] = 0;
        base[1] = 1;
        base[2] = 0;
        base[3] = 0;
    }
    OK(MPI_Win_fence(0, w));
    double _Complex add = rank + 2.0 * rank * I, mul = I; /* I^size */
    MPI_Count one = 1;
    OK(MPI_Accumulate(&add, 1, MPI_C_DOUBLE_COMPLEX, 0, 0, 1, MPI_C_DOUBLE_COMPLEX,
                      MPI_SUM, w));
    OK(MPI_Accumulate(&mul, 1, MPI_C_DOUBLE_COMPLEX, 0, 1, 1, MPI_C_DOUBLE_COMPLEX,
                      MPI_PROD, w));
    OK(MPI_Accumulate(&one, 1, MPI_COUNT, 0, 2, 1, MPI_COUNT, MPI_SUM, w));
    OK(MPI_Win_fence(0, w));
    if (rank == 0) {
        double tri = size * (size - 1) / 2.0;
        double _Complex pw = 1;
        for (int k = 0; k < size; k++)
            pw *= I;
        CHECK(creal(base[0]) == tri && cimag(base[0]) == 2 * tri);
        CHECK(creal(base[1]) == creal(pw) && cimag(base[1]) == cimag(pw));
        MPI_Count n;
        memcpy(&n, &base[2], sizeof n);
        CHECK(n == size);
    }
    OK(MPI_Win_fence(0, w));
    /* flags: each rank sets its own int at rank 0 under lock_all */
    OK(MPI_Win_lock_all(0, w));
    int flag = 1;
    if (rank != 0) {
        OK(MPI_Accumulate(&flag, 1, MPI_INT, 0, 3, 1, MPI_INT, MPI_SUM, w));
        OK(MPI_Win_flush(0, w));
    } else {
        volatile int *seen = (volatile int *)&base[3];
        double end = MPI_Wtime() + 60;
        while (*seen != size - 1) {
            OK(MPI_Win_sync(w));
            CHECK(MPI_Wtime() < end);
        }
    }
    OK(MPI_Win_unlock_all(w));
    OK(MPI_Win_free(&w));
}

/* The ranks that share memory with this one (MPI_COMM_TYPE_SHARED): its
   rank there and their number. */
static MPI_Comm node_comm(int *nr, int *nn)
{
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                           &node));
    OK(MPI_Comm_rank(node, nr));
    OK(MPI_Comm_size(node, nn));
    return node;
}

/* MPI_Win_allocate_shared on the ranks of this host (MPI_Comm_split_type):
   segments of different sizes, one empty, contiguous in rank order; each
   rank stores into its own with plain stores and reads every other's with
   plain loads; a put lands where the loads see it; MPI_PROC_NULL's query
   and the errors. Over UDP every rank is its own host's only one, and a
   window over all of them cannot be shared. */
static void shared(void)
{
    int nr, nn;
    MPI_Comm node = node_comm(&nr, &nn);
    int mine = nr == 1 ? 0 : 16 + 8 * nr; /* ints; rank 1 none */
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate_shared((MPI_Aint)mine * (MPI_Aint)sizeof(int), sizeof(int),
                               MPI_INFO_NULL, node, &base, &w));
    CHECK(mine ? base != NULL : base == NULL);
    int *flavor, flag;
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED);
    for (int i = 0; i < mine; i++)
        base[i] = nr * 1000 + i;
    OK(MPI_Win_fence(0, w));
    char *first = NULL, *expect = NULL;
    for (int r = 0; r < nn; r++) {
        MPI_Aint sz;
        int du, *p;
        OK(MPI_Win_shared_query(w, r, &sz, &du, &p));
        int n = r == 1 ? 0 : 16 + 8 * r;
        CHECK(sz == (MPI_Aint)n * (MPI_Aint)sizeof(int) && du == (int)sizeof(int));
        if (!n) {
            CHECK(p == NULL);
            continue;
        }
        if (!first)
            first = expect = (char *)p;
        CHECK((char *)p == expect); /* contiguous, in rank order */
        expect += sz;
        for (int i = 0; i < n; i++)
            CHECK(p[i] == r * 1000 + i);
    }
    MPI_Aint sz;
    int du, *p;
    OK(MPI_Win_shared_query(w, MPI_PROC_NULL, &sz, &du, &p));
    CHECK((char *)p == first && sz == 16 * (MPI_Aint)sizeof(int));
    OK(MPI_Win_fence(0, w));
    /* a put to the next rank's first int, seen there by a load */
    if (nn > 1) {
        int to = (nr + 1) % nn, v = -nr - 1;
        if (to != 1)
            OK(MPI_Put(&v, 1, MPI_INT, to, 0, 1, MPI_INT, w));
    }
    OK(MPI_Win_fence(0, w));
    if (nn > 1 && nr != 1)
        CHECK(base[0] == -((nr + nn - 1) % nn) - 1);
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    CHECK(MPI_Win_shared_query(w, nn, &sz, &du, &p) == MPI_ERR_RANK);
    CHECK(MPI_Win_shared_query(w, 0, NULL, &du, &p) == MPI_ERR_ARG);
    OK(MPI_Win_free(&w));

    /* not shared: MPI_ERR_RMA_FLAVOR */
    OK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    CHECK(MPI_Win_shared_query(w, 0, &sz, &du, &p) == MPI_ERR_RMA_FLAVOR);
    OK(MPI_Win_free(&w));
    /* the whole job: shared where every rank is on this host's shared
       memory, MPI_ERR_RMA_SHARED over UDP or libfabric (no rank on shm) */
    const char *tp = getenv("FLIT_TRANSPORT");
    int udp = tp && (strcmp(tp, "udp") == 0 || strcmp(tp, "ofi") == 0);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int rc = MPI_Win_allocate_shared(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    CHECK(rc == (udp && size > 1 ? MPI_ERR_RMA_SHARED : MPI_SUCCESS));
    if (rc == MPI_SUCCESS)
        OK(MPI_Win_free(&w));
    CHECK(MPI_Win_allocate_shared(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w) ==
          MPI_ERR_SIZE);
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    OK(MPI_Error_string(MPI_ERR_RMA_SHARED, msg, &len));
    CHECK(len > 0 && strstr(msg, "shared"));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_free(&node));
}

/* Every rank fetches-and-adds rank 0's counter ITER times under a shared
   lock_all: the values fetched are all distinct, 0 .. ITER * size - 1. */
static void fetch_and_op(void)
{
    enum { ITER = 100 };
    long *base;
    MPI_Win w;
    OK(MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    OK(MPI_Win_lock_all(0, w));
    long one = 1, got[ITER];
    for (int i = 0; i < ITER; i++)
        OK(MPI_Fetch_and_op(&one, &got[i], MPI_LONG, 0, 0, MPI_SUM, w));
    OK(MPI_Win_flush_all(w));
    OK(MPI_Win_unlock_all(w));
    for (int i = 1; i < ITER; i++)
        CHECK(got[i] > got[i - 1]);
    long *all = malloc(sizeof(long) * ITER * (size_t)size);
    CHECK(all);
    OK(MPI_Gather(got, ITER, MPI_LONG, all, ITER, MPI_LONG, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        char *seen = calloc((size_t)ITER * (size_t)size, 1);
        CHECK(seen);
        for (int i = 0; i < ITER * size; i++) {
            CHECK(all[i] >= 0 && all[i] < ITER * size && !seen[all[i]]);
            seen[all[i]] = 1;
        }
        free(seen);
    }
    free(all);
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* compare-and-swap: one rank turns 0 into its rank + 1 */
    OK(MPI_Win_lock_all(0, w));
    long zero = 0, me = rank + 1, was = -1;
    OK(MPI_Compare_and_swap(&me, &zero, &was, MPI_LONG, 0, 1, w));
    OK(MPI_Win_unlock_all(w));
    int won = was == 0, winners = 0;
    OK(MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(winners == 1);
    long final = 0;
    OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
    OK(MPI_Get(&final, 1, MPI_LONG, 0, 1, 1, MPI_LONG, w));
    OK(MPI_Win_unlock(0, w));
    CHECK(final >= 1 && final <= size && (!won || final == me));
    CHECK(won || was == final);
    OK(MPI_Win_free(&w));
}

/* Read-modify-write of rank 0's counter with get and put under an
   exclusive lock: no update is lost. Shared locks are held together (the
   barrier inside would wait forever otherwise). Flush makes a put visible
   at the target before the message that says so. */
static void locks(void)
{
    enum { ITER = 50 };
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < ITER; i++) {
        int v = -1;
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
        OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
        OK(MPI_Win_flush(0, w));
        v++;
        OK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
        OK(MPI_Win_unlock(0, w));
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        CHECK(base[0] == ITER * size);

    OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
    int v = -1;
    OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
    OK(MPI_Barrier(MPI_COMM_WORLD)); /* every rank holds the shared lock now */
    OK(MPI_Win_unlock(0, w));
    CHECK(v == ITER * size);

    /* flush: rank 1 puts into rank 0's window, flushes, then tells it */
    if (size >= 2 && rank == 1) {
        int x = 4242, go = 1;
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
        OK(MPI_Put(&x, 1, MPI_INT, 0, 1, 1, MPI_INT, w));
        OK(MPI_Win_flush(0, w));
        OK(MPI_Send(&go, 1, MPI_INT, 0, 9, MPI_COMM_WORLD));
        OK(MPI_Win_unlock(0, w));
    } else if (size >= 2 && rank == 0) {
        int go = 0;
        OK(MPI_Recv(&go, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(base[1] == 4242);
    }
    OK(MPI_Win_free(&w));
}

/* Request-based operations under lock_all: each rank writes its slot of
   rank 0's window (Rput), adds to a counter (Raccumulate, and fetches the
   counter's old value with Rget_accumulate), and reads the next rank's
   window (Rget); outside an epoch they answer MPI_ERR_RMA_SYNC. */
static void requests(void)
{
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate((MPI_Aint)(size + 2) * (MPI_Aint)sizeof(int), sizeof(int),
                        MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    for (int i = 0; i < size + 2; i++)
        base[i] = i == size ? 0 : rank * 1000 + i;
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request rq[4];
    int mine = rank + 100, one = 1, old = -1, next[2] = {-1, -1};
    int right = (rank + 1) % size;
    CHECK(MPI_Rput(&mine, 1, MPI_INT, 0, rank, 1, MPI_INT, w, &rq[0]) ==
          MPI_ERR_RMA_SYNC);
    CHECK(rq[0] == MPI_REQUEST_NULL);
    OK(MPI_Win_lock_all(0, w));
    OK(MPI_Rput(&mine, 1, MPI_INT, 0, rank, 1, MPI_INT, w, &rq[0]));
    OK(MPI_Raccumulate(&one, 1, MPI_INT, 0, size, 1, MPI_INT, MPI_SUM, w, &rq[1]));
    OK(MPI_Rget_accumulate(&one, 1, MPI_INT, &old, 1, MPI_INT, 0, size, 1, MPI_INT,
                           MPI_SUM, w, &rq[2]));
    /* 2 ints into 1: refused, no request */
    CHECK(MPI_Rget(next, 2, MPI_INT, right, size + 1, 1, MPI_INT, w, &rq[3]) !=
          MPI_SUCCESS);
    CHECK(rq[3] == MPI_REQUEST_NULL);
    OK(MPI_Rget(next, 1, MPI_INT, right, size + 1, 1, MPI_INT, w, &rq[3]));
    OK(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    CHECK(next[0] == right * 1000 + size + 1);
    CHECK(old >= 1 && old <= 2 * size - 1); /* its own add came first */
    OK(MPI_Win_unlock_all(w));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            CHECK(base[r] == r + 100);
        CHECK(base[size] == 2 * size); /* every rank added 1, twice */
    }
    OK(MPI_Win_free(&w));
}

/* A request-based put and accumulate complete while their target computes
   outside MPI (MPI: their completion is the origin's buffer free again,
   not their arrival): node rank 0 watches a flag in shared memory without
   any MPI call until node rank 1, holding a lock on it, has waited for
   both requests and raised the flag. Where no two ranks share memory
   (UDP, one rank) there is no flag to watch: skipped. */
static void requests_local(void)
{
    int nr, nn;
    MPI_Comm node = node_comm(&nr, &nn);
    if (nn < 2) {
        OK(MPI_Comm_free(&node));
        return;
    }
    int *base, *p, du;
    MPI_Aint sz;
    MPI_Win w;
    OK(MPI_Win_allocate_shared((nr == 0 ? 4 : 0) * (MPI_Aint)sizeof(int), sizeof(int),
                               MPI_INFO_NULL, node, &base, &w));
    OK(MPI_Win_shared_query(w, 0, &sz, &du, &p));
    if (nr == 0)
        memset(base, 0, 4 * sizeof(int));
    if (nr == 1)
        OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
    OK(MPI_Barrier(node));
    if (nr == 0) { /* no MPI call: at most 20 s */
        struct timespec t0, now, nap = {0, 50000};
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int seen = 0;
        do {
            seen = __atomic_load_n(&p[0], __ATOMIC_ACQUIRE);
            nanosleep(&nap, NULL);
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while (!seen && now.tv_sec - t0.tv_sec < 20);
        CHECK(seen);
    } else if (nr == 1) {
        MPI_Request rq[2];
        int five = 5, v = 77;
        OK(MPI_Raccumulate(&five, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, w, &rq[0]));
        OK(MPI_Rput(&v, 1, MPI_INT, 0, 2, 1, MPI_INT, w, &rq[1]));
        OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        five = v = 0; /* the buffers are the program's again */
        __atomic_store_n(&p[0], 1, __ATOMIC_RELEASE);
        OK(MPI_Win_unlock(0, w)); /* complete at the target now */
    }
    OK(MPI_Barrier(node));
    if (nr == 0)
        CHECK(base[1] == 5 && base[2] == 77);
    OK(MPI_Win_free(&w));
    OK(MPI_Comm_free(&node));
}

static void user_sum(void *in, void *io, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        ((int *)io)[i] += ((int *)in)[i];
}

/* Bad arguments: error classes, with MPI_ERRORS_RETURN on the window. */
/* Derived target types: puts and gets through a vector, an indexed type
   whose blocks go backwards and a type reaching before its displacement
   (holes untouched); accumulates and get-accumulates through vectors,
   from every rank at once (exact sums: each element atomic). */
static void target_types(void)
{
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    for (int i = 0; i < N; i++)
        base[i] = -1;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Datatype vec, ind, back;
    OK(MPI_Type_vector(8, 1, 3, MPI_INT, &vec)); /* ints 0, 3, ... 21 */
    OK(MPI_Type_commit(&vec));
    int blens[3] = {2, 3, 1}, disps[3] = {40, 30, 50};
    OK(MPI_Type_indexed(3, blens, disps, MPI_INT, &ind));
    OK(MPI_Type_commit(&ind));
    int blen = 2;
    MPI_Aint before = -2 * (MPI_Aint)sizeof(int);
    OK(MPI_Type_create_hindexed(1, &blen, &before, MPI_INT, &back));
    OK(MPI_Type_commit(&back));
    int src[8], got[8];
    for (int i = 0; i < 8; i++)
        src[i] = 100 * rank + i;
    OK(MPI_Win_fence(0, w));
    OK(MPI_Put(src, 8, MPI_INT, next, 1, 1, vec, w));
    OK(MPI_Put(src, 6, MPI_INT, next, 0, 1, ind, w));
    OK(MPI_Put(src + 6, 2, MPI_INT, next, 60, 1, back, w)); /* ints 58, 59 */
    OK(MPI_Win_fence(0, w));
    for (int i = 0; i < 8; i++)
        CHECK(base[1 + 3 * i] == 100 * prev + i);
    CHECK(base[2] == -1 && base[3] == -1 && base[23] == -1 && base[0] == -1);
    CHECK(base[40] == 100 * prev && base[41] == 100 * prev + 1);
    CHECK(base[30] == 100 * prev + 2 && base[32] == 100 * prev + 4);
    CHECK(base[50] == 100 * prev + 5 && base[42] == -1 && base[33] == -1);
    CHECK(base[58] == 100 * prev + 6 && base[59] == 100 * prev + 7 && base[60] == -1);
    memset(got, 0, sizeof got);
    OK(MPI_Get(got, 8, MPI_INT, next, 1, 1, vec, w));
    OK(MPI_Win_fence(0, w));
    for (int i = 0; i < 8; i++)
        CHECK(got[i] == src[i]);
    memset(got, 0, sizeof got);
    OK(MPI_Get(got, 6, MPI_INT, next, 0, 1, ind, w));
    OK(MPI_Get(got + 6, 2, MPI_INT, next, 60, 1, back, w));
    OK(MPI_Win_fence(0, w));
    for (int i = 0; i < 8; i++)
        CHECK(got[i] == src[i]);
    /* a target type of no bytes at all: nothing moves */
    MPI_Datatype none;
    OK(MPI_Type_contiguous(0, MPI_INT, &none));
    OK(MPI_Type_commit(&none));
    OK(MPI_Put(src, 0, MPI_INT, next, 0, 3, none, w));
    OK(MPI_Get(got, 0, MPI_INT, next, 0, 3, none, w));
    OK(MPI_Accumulate(src, 0, MPI_INT, next, 0, 3, none, MPI_SUM, w));
    OK(MPI_Win_fence(0, w));
    OK(MPI_Type_free(&none));
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&ind));
    OK(MPI_Type_free(&back));

    /* every rank adds 1..16 into rank 0's even ints, 20 times; a vector
       of pairs of ints for the get-accumulate */
    enum { ITER = 20 };
    for (int i = 0; i < N; i++)
        base[i] = 7;
    MPI_Datatype evens, pairs;
    OK(MPI_Type_vector(16, 1, 2, MPI_INT, &evens));
    OK(MPI_Type_commit(&evens));
    OK(MPI_Type_vector(4, 2, 4, MPI_INT, &pairs)); /* ints 0 1, 4 5, 8 9, 12 13 */
    OK(MPI_Type_commit(&pairs));
    int add[16], old[16];
    for (int i = 0; i < 16; i++)
        add[i] = i + 1;
    OK(MPI_Win_fence(0, w));
    for (int k = 0; k < ITER; k++)
        OK(MPI_Accumulate(add, 16, MPI_INT, 0, 0, 1, evens, MPI_SUM, w));
    OK(MPI_Win_fence(0, w));
    if (rank == 0)
        for (int i = 0; i < 32; i++)
            CHECK(base[i] == (i % 2 ? 7 : 7 + ITER * size * (i / 2 + 1)));
    OK(MPI_Win_fence(0, w));
    memset(old, 0, sizeof old);
    OK(MPI_Get_accumulate(NULL, 0, MPI_INT, old, 16, MPI_INT, 0, 0, 1, evens, MPI_NO_OP,
                          w));
    OK(MPI_Win_fence(0, w));
    for (int i = 0; i < 16; i++)
        CHECK(old[i] == 7 + ITER * size * (i + 1));
    /* rank r swaps its marks into ints 32.. in turn, by a vector of pairs:
       each sees the marks of the rank before it */
    for (int r = 0; r < size; r++) {
        int mark[8];
        for (int i = 0; i < 8; i++)
            mark[i] = 1000 * (r + 1) + i;
        if (rank == r)
            OK(MPI_Get_accumulate(mark, 8, MPI_INT, old, 8, MPI_INT, 0, 32, 1, pairs,
                                  MPI_REPLACE, w));
        OK(MPI_Win_fence(0, w));
        if (rank == r)
            for (int i = 0; i < 8; i++)
                CHECK(old[i] == (r == 0 ? 7 : 1000 * r + i));
    }
    if (rank == 0)
        CHECK(base[32] == 1000 * size && base[33] == 1000 * size + 1 && base[34] == 7 &&
              base[45] == 1000 * size + 7 && base[46] == 7);
    OK(MPI_Type_free(&evens));
    OK(MPI_Type_free(&pairs));
    OK(MPI_Win_free(&w));
}

static void errors(void)
{
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    MPI_Errhandler eh;
    OK(MPI_Win_get_errhandler(w, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    int v = 1, c = 0, r = 0;
    /* no epoch yet */
    CHECK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_unlock(0, w) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_flush(0, w) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_unlock_all(w) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_lock(12345, 0, 0, w) == MPI_ERR_LOCKTYPE);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, size, 0, w) == MPI_ERR_RANK);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_fence(0, w) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, w) == MPI_ERR_RANK);
    CHECK(MPI_Put(&v, 1, MPI_INT, 0, 4, 1, MPI_INT, w) == MPI_ERR_DISP);
    CHECK(MPI_Put(&v, 2, MPI_INT, 0, 3, 2, MPI_INT, w) == MPI_ERR_DISP);
    CHECK(MPI_Get(&v, 1, MPI_INT, 0, -1, 1, MPI_INT, w) == MPI_ERR_DISP);
    CHECK(MPI_Put(&v, -1, MPI_INT, 0, 0, -1, MPI_INT, w) == MPI_ERR_COUNT);
    CHECK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_DATATYPE_NULL, w) == MPI_ERR_TYPE);
    CHECK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_LONG, w) == MPI_ERR_TYPE);
    /* a target type whose holes reach past the window, or before it */
    int three[3] = {1, 2, 3};
    MPI_Datatype vec, back, mixed, one_int;
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    CHECK(MPI_Put(three, 3, MPI_INT, 0, 0, 1, vec, w) == MPI_ERR_DISP);
    CHECK(MPI_Get(three, 3, MPI_INT, 0, 0, 1, vec, w) == MPI_ERR_DISP);
    CHECK(MPI_Accumulate(three, 3, MPI_INT, 0, 0, 1, vec, MPI_SUM, w) == MPI_ERR_DISP);
    CHECK(MPI_Put(three, 2, MPI_INT, 0, 0, 1, vec, w) == MPI_ERR_TYPE); /* 8 vs 12 B */
    OK(MPI_Type_free(&vec));
    int blen = 1;
    MPI_Aint before = -(MPI_Aint)sizeof(int);
    OK(MPI_Type_create_hindexed(1, &blen, &before, MPI_INT, &back));
    OK(MPI_Type_commit(&back));
    CHECK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, back, w) == MPI_ERR_DISP);
    OK(MPI_Type_free(&back));
    /* accumulates: one basic type in the target's, predefined for
       fetch-and-op */
    int blens[2] = {1, 1};
    MPI_Aint disps[2] = {0, sizeof(int)};
    MPI_Datatype kinds[2] = {MPI_INT, MPI_FLOAT};
    OK(MPI_Type_create_struct(2, blens, disps, kinds, &mixed));
    OK(MPI_Type_commit(&mixed));
    CHECK(MPI_Accumulate(three, 2, MPI_INT, 0, 0, 1, mixed, MPI_SUM, w) == MPI_ERR_TYPE);
    OK(MPI_Put(three, 2, MPI_INT, 0, 0, 1, mixed, w)); /* bytes are bytes */
    OK(MPI_Type_free(&mixed));
    OK(MPI_Type_contiguous(1, MPI_INT, &one_int));
    OK(MPI_Type_commit(&one_int));
    CHECK(MPI_Fetch_and_op(&v, &r, one_int, 0, 0, MPI_SUM, w) == MPI_ERR_TYPE);
    CHECK(MPI_Accumulate(three, 1, MPI_LONG, 0, 0, 2, one_int, MPI_SUM, w) ==
          MPI_ERR_TYPE);
    OK(MPI_Type_free(&one_int));
    MPI_Op mine;
    OK(MPI_Op_create(user_sum, 1, &mine));
    CHECK(MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, mine, w) == MPI_ERR_OP);
    OK(MPI_Op_free(&mine));
    CHECK(MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_NO_OP, w) == MPI_ERR_OP);
    CHECK(MPI_Accumulate(&v, 1, MPI_FLOAT, 0, 0, 1, MPI_FLOAT, MPI_BAND, w) ==
          MPI_ERR_OP);
    CHECK(MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_MAXLOC, w) == MPI_ERR_OP);
    CHECK(MPI_Fetch_and_op(&v, &r, MPI_INT, 0, 4, MPI_SUM, w) == MPI_ERR_DISP);
    CHECK(MPI_Compare_and_swap(&v, &c, &r, MPI_2INT, 0, 0, w) == MPI_ERR_TYPE);
    CHECK(MPI_Compare_and_swap(&v, &c, &r, MPI_FLOAT, 0, 0, w) == MPI_ERR_TYPE);
    CHECK(MPI_Compare_and_swap(&v, &c, &r, MPI_C_FLOAT_COMPLEX, 0, 0, w) == MPI_ERR_TYPE);
    CHECK(MPI_Accumulate(&v, 1, MPI_C_FLOAT_COMPLEX, 0, 0, 1, MPI_C_FLOAT_COMPLEX,
                         MPI_MAX, w) == MPI_ERR_OP);
    OK(MPI_Win_unlock(0, w));
    OK(MPI_Win_free(&w));
    MPI_Win bad = MPI_WIN_NULL;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Win_free(&bad) == MPI_ERR_WIN);
    CHECK(MPI_Win_fence(0, MPI_WIN_NULL) == MPI_ERR_WIN);
    CHECK(MPI_Win_sync(MPI_WIN_NULL) == MPI_ERR_WIN);
    CHECK(MPI_Win_create(NULL, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &bad) ==
          MPI_ERR_SIZE);
    CHECK(MPI_Win_create(NULL, 0, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &bad) ==
          MPI_ERR_DISP);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    /* an empty window: nothing fits in it */
    OK(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    OK(MPI_Win_fence(0, w));
    CHECK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w) == MPI_ERR_DISP);
    OK(MPI_Put(&v, 0, MPI_INT, 0, 0, 0, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    OK(MPI_Win_free(&w));
}

/* Post/start/complete/wait: a ring (each rank exposes to the previous and
   puts into the next), then every other rank accumulating into rank 0
   with MPI_Win_test polled until done (bounded). */
static void pscw(void)
{
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    CHECK(MPI_Win_complete(w) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_wait(w) == MPI_ERR_RMA_SYNC);
    MPI_Group world, gprev, gnext, gzero, gothers;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, zero = 0;
    OK(MPI_Group_incl(world, 1, &prev, &gprev));
    OK(MPI_Group_incl(world, 1, &next, &gnext));
    OK(MPI_Group_incl(world, 1, &zero, &gzero));
    OK(MPI_Group_excl(world, 1, &zero, &gothers));
    for (int round = 0; round < 3; round++) {
        OK(MPI_Win_post(gprev, 0, w));
        OK(MPI_Win_start(gnext, 0, w));
        int v = rank * 10 + round;
        OK(MPI_Put(&v, 1, MPI_INT, next, 0, 1, MPI_INT, w));
        CHECK(MPI_Win_fence(0, w) == MPI_ERR_RMA_SYNC);
        OK(MPI_Win_complete(w));
        OK(MPI_Win_wait(w));
        CHECK(base[0] == prev * 10 + round);
    }
    if (rank == 0) {
        base[1] = 0;
        OK(MPI_Win_post(gothers, 0, w));
        int flag = 0;
        for (long i = 0; i < 100000000L && !flag; i++)
            OK(MPI_Win_test(w, &flag));
        CHECK(flag);
        CHECK(base[1] == size * (size - 1) / 2);
    } else {
        int v = rank;
        OK(MPI_Win_start(gzero, 0, w));
        OK(MPI_Accumulate(&v, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, w));
        OK(MPI_Win_complete(w));
    }
    OK(MPI_Group_free(&gprev));
    OK(MPI_Group_free(&gnext));
    OK(MPI_Group_free(&gzero));
    OK(MPI_Group_free(&gothers));
    OK(MPI_Group_free(&world));
    OK(MPI_Win_free(&w));
}

/* A dynamic window: memory attached, its address told to the others, put
   and accumulated into by address; detached and another attached (the
   origin's import of the first is revoked: it asks again); an address
   nothing holds answers MPI_ERR_DISP. */
static void dynamic(void)
{
    MPI_Win w;
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)size);
    CHECK(addrs);
    MPI_Datatype apart;
    OK(MPI_Type_vector(2, 1, 6, MPI_INT, &apart));
    OK(MPI_Type_commit(&apart));
    for (int round = 0; round < 2; round++) {
        int *mem = calloc(8, sizeof(int));
        CHECK(mem);
        OK(MPI_Win_attach(w, mem, 8 * sizeof(int)));
        MPI_Aint mine;
        OK(MPI_Get_address(mem, &mine));
        OK(MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
        OK(MPI_Win_fence(0, w));
        int v = 100 * round + rank, one = 1, ends[2] = {v, v + 1};
        OK(MPI_Put(&v, 1, MPI_INT, next, addrs[next] + 2 * (MPI_Aint)sizeof(int), 1,
                   MPI_INT, w));
        OK(MPI_Put(ends, 2, MPI_INT, next, addrs[next], 1, apart, w)); /* ints 0, 6 */
        OK(MPI_Accumulate(&one, 1, MPI_INT, 0, addrs[0] + 5 * (MPI_Aint)sizeof(int), 1,
                          MPI_INT, MPI_SUM, w));
        CHECK(MPI_Put(&v, 1, MPI_INT, next, addrs[next] + 8 * (MPI_Aint)sizeof(int), 1,
                      MPI_INT, w) == MPI_ERR_DISP);
        /* past the end: the target refuses it, the fence reports it */
        int ones[2] = {1, 1};
        OK(MPI_Accumulate(ones, 2, MPI_INT, next, addrs[next] + 7 * (MPI_Aint)sizeof(int),
                          2, MPI_INT, MPI_SUM, w));
        CHECK(MPI_Win_fence(0, w) == MPI_ERR_DISP);
        CHECK(mem[2] == 100 * round + prev);
        CHECK(mem[0] == 100 * round + prev && mem[6] == 100 * round + prev + 1 &&
              mem[1] == 0 && mem[7] == 0);
        CHECK(rank != 0 || mem[5] == size);
        int got = -1;
        OK(MPI_Get(&got, 1, MPI_INT, prev, addrs[prev] + 2 * (MPI_Aint)sizeof(int), 1,
                   MPI_INT, w));
        OK(MPI_Win_fence(0, w));
        CHECK(got == 100 * round + (prev + size - 1) % size);
        OK(MPI_Win_detach(w, mem));
        OK(MPI_Barrier(MPI_COMM_WORLD)); /* everyone's detached before reuse */
        free(mem);
    }
    CHECK(MPI_Win_detach(w, addrs) == MPI_ERR_ARG);
    OK(MPI_Type_free(&apart));
    free(addrs);
    OK(MPI_Win_free(&w));
}

/* Large transfers: a put and a get of 1 MiB (packets over UDP), and an
   accumulate and a get-accumulate of 160 KiB, cut into several messages. */
static void large(void)
{
    enum { NBIG = 1 << 18, NACC = 20000 };
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate(NBIG * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &w));
    int *src = malloc(NBIG * sizeof(int)), *got = malloc(NBIG * sizeof(int));
    CHECK(src && got);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    seq_fill(src, NBIG, rank + 1);
    OK(MPI_Win_fence(0, w));
    OK(MPI_Put(src, NBIG, MPI_INT, next, 0, NBIG, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(seq_same(base, NBIG, prev + 1));
    OK(MPI_Get(got, NBIG, MPI_INT, next, 0, NBIG, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(seq_same(got, NBIG, rank + 1));
    /* every rank adds 1 .. NACC into rank 0's first NACC ints, then reads
       them back with a get-accumulate adding nothing more than 0 */
    for (int i = 0; i < NACC; i++)
        src[i] = i + 1;
    if (rank == 0)
        memset(base, 0, NACC * sizeof(int));
    OK(MPI_Win_fence(0, w));
    OK(MPI_Accumulate(src, NACC, MPI_INT, 0, 0, NACC, MPI_INT, MPI_SUM, w));
    OK(MPI_Win_fence(0, w));
    memset(src, 0, NACC * sizeof(int));
    OK(MPI_Get_accumulate(src, NACC, MPI_INT, got, NACC, MPI_INT, 0, 0, NACC, MPI_INT,
                          MPI_SUM, w));
    OK(MPI_Win_fence(0, w));
    for (int i = 0; i < NACC; i++)
        CHECK(got[i] == size * (i + 1));
    free(src);
    free(got);
    OK(MPI_Win_free(&w));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    put_get();
    target_types();
    large();
    accumulate();
    complex_and_sync();
    fetch_and_op();
    locks();
    requests();
    requests_local();
    pscw();
    dynamic();
    shared();
    errors();
    OK(MPI_Finalize());
    if (rank == 0)
        printf("mpi_win: %d ranks passed\n", size);
    return 0;
}
