/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_THREAD_MULTIPLE on 2 ranks: the level granted and what
 * MPI_Query_thread and MPI_Is_thread_main say; threads doing ping-pongs on
 * tags of their own at once (every byte and count checked); a thread
 * blocked in a receive while another thread of its process must first send
 * what lets the peer answer (a lock kept by the blocked thread hangs it);
 * non-blocking sends and receives waited for by several threads at once,
 * in order within each thread; collectives at once on communicators
 * duplicated before the threads start; communicators made at once from
 * those (each must get a context of its own).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define NT   4
#define ITER 100

static int rank, peer;
static MPI_Comm dup[NT];

static void run_threads(void *(*fn)(void *))
{
    pthread_t th[NT];
    for (long t = 0; t < NT; t++)
        CHECK(pthread_create(&th[t], NULL, fn, (void *)t) == 0);
    for (int t = 0; t < NT; t++)
        CHECK(pthread_join(th[t], NULL) == 0);
}

/* ---- the level ---- */

static void *not_main(void *arg)
{
    int flag = -1, level = -1;
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 0);
    OK(MPI_Query_thread(&level));
    CHECK(level == MPI_THREAD_MULTIPLE);
    return arg;
}

/* ---- ping-pongs, one tag per thread ---- */

static int pp_len(long t, int i)
{
    return 1 + (int)((t * 37 + i * 13) % 700) + (i % 10 == 0 ? 5000 : 0);
}

static void *pingpong(void *arg)
{
    long t = (long)arg;
    int *buf = malloc(6000 * sizeof *buf);
    CHECK(buf);
    for (int i = 0; i < ITER; i++) {
        int n = pp_len(t, i), seed = (int)t * 10000 + i, count = -1;
        MPI_Status st;
        if (rank == 0) {
            seq_fill(buf, n, seed);
            OK(MPI_Send(buf, n, MPI_INT, peer, (int)t, MPI_COMM_WORLD));
            memset(buf, 0, 6000 * sizeof *buf);
            OK(MPI_Recv(buf, 6000, MPI_INT, peer, (int)t, MPI_COMM_WORLD, &st));
            CHECK(seq_same(buf, n, seed + 5000));
        } else {
            memset(buf, 0, 6000 * sizeof *buf);
            OK(MPI_Recv(buf, 6000, MPI_INT, peer, (int)t, MPI_COMM_WORLD, &st));
            CHECK(seq_same(buf, n, seed));
            seq_fill(buf, n, seed + 5000);
            OK(MPI_Send(buf, n, MPI_INT, peer, (int)t, MPI_COMM_WORLD));
        }
        OK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == n && st.MPI_SOURCE == peer && st.MPI_TAG == (int)t);
    }
    free(buf);
    return NULL;
}

/* ---- a blocked receive that another thread's send unblocks ---- */

static atomic_int a_waiting; /* rounds thread A of rank 0 has begun to wait for */

/* Rank 0's thread A waits for round i's answer (tag 100) while thread B
   sends, only once A waits, what makes rank 1 answer (tag 101); half the
   rounds through MPI_Recv, half through MPI_Irecv and MPI_Wait. */
static void *cross(void *arg)
{
    long t = (long)arg;
    for (int i = 0; i < ITER; i++) {
        int v = -1;
        if (rank == 1) {
            if (t != 0)
                return NULL;
            OK(MPI_Recv(&v, 1, MPI_INT, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == i);
            v = i + 1000;
            OK(MPI_Send(&v, 1, MPI_INT, peer, 100, MPI_COMM_WORLD));
        } else if (t == 0) {
            atomic_store(&a_waiting, i + 1);
            if (i % 2) {
                MPI_Request r;
                OK(MPI_Irecv(&v, 1, MPI_INT, peer, 100, MPI_COMM_WORLD, &r));
                OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else {
                OK(MPI_Recv(&v, 1, MPI_INT, peer, 100, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
            }
            CHECK(v == i + 1000);
        } else if (t == 1) {
            /* bounded: A begins round i at once unless it hangs */
            double until = MPI_Wtime() + 30;
            while (atomic_load(&a_waiting) <= i) {
                CHECK(MPI_Wtime() < until);
                sched_yield();
            }
            v = i;
            OK(MPI_Send(&v, 1, MPI_INT, peer, 101, MPI_COMM_WORLD));
        } else {
            return NULL;
        }
    }
    return NULL;
}

/* ---- non-blocking, waited for by every thread at once ---- */

#define K 8

static void *nonblocking(void *arg)
{
    long t = (long)arg;
    int n = 64 + (int)t * 1000;
    int *out = malloc((size_t)K * n * sizeof *out),
        *in = malloc((size_t)K * n * sizeof *in);
    CHECK(out && in);
    for (int i = 0; i < ITER / 4; i++) {
        MPI_Request rq[2 * K];
        MPI_Status st[2 * K];
        memset(in, 0, (size_t)K * n * sizeof *in);
        /* one tag for all K: they match in the order sent */
        for (int k = 0; k < K; k++)
            OK(MPI_Irecv(in + k * n, n, MPI_INT, peer, 200 + (int)t, MPI_COMM_WORLD,
                         &rq[k]));
        for (int k = 0; k < K; k++) {
            seq_fill(out + k * n, n, rank * 1000000 + (int)t * 10000 + i * 100 + k);
            OK(MPI_Isend(out + k * n, n, MPI_INT, peer, 200 + (int)t, MPI_COMM_WORLD,
                         &rq[K + k]));
        }
        OK(MPI_Waitall(2 * K, rq, st));
        for (int k = 0; k < K; k++) {
            int count = -1;
            CHECK(seq_same(in + k * n, n, peer * 1000000 + (int)t * 10000 + i * 100 + k));
            OK(MPI_Get_count(&st[k], MPI_INT, &count));
            CHECK(count == n && rq[k] == MPI_REQUEST_NULL);
        }
    }
    free(out);
    free(in);
    return NULL;
}

/* ---- collectives, a communicator per thread ---- */

/* Collectives on c with values of thread t's own. */
static void coll_rounds(MPI_Comm c, long t, int rounds)
{
    int me; /* this rank in c */
    OK(MPI_Comm_rank(c, &me));
    for (int i = 0; i < rounds; i++) {
        int v[3] = {me + i, (int)t, 1}, sum[3] = {0, 0, 0};
        OK(MPI_Allreduce(v, sum, 3, MPI_INT, MPI_SUM, c));
        CHECK(sum[0] == 1 + 2 * i && sum[1] == 2 * (int)t && sum[2] == 2);
        int b[100];
        if (me == i % 2)
            seq_fill(b, 100, (int)t * 1000 + i);
        else
            memset(b, 0, sizeof b);
        OK(MPI_Bcast(b, 100, MPI_INT, i % 2, c));
        CHECK(seq_same(b, 100, (int)t * 1000 + i));
        OK(MPI_Barrier(c));
        /* two steps: rank 0 waits for the reduction, then scatters */
        int rs_in[4] = {i, (int)t, me, 1}, rs_out[2] = {-1, -1};
        OK(MPI_Reduce_scatter_block(rs_in, rs_out, 2, MPI_INT, MPI_SUM, c));
        if (me == 0)
            CHECK(rs_out[0] == 2 * i && rs_out[1] == 2 * (int)t);
        else
            CHECK(rs_out[0] == 1 && rs_out[1] == 2);
        MPI_Request r;
        int mx = -1;
        v[0] = me * 10 + (int)t + i;
        OK(MPI_Iallreduce(v, &mx, 1, MPI_INT, MPI_MAX, c, &r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(mx == 10 + (int)t + i);
    }
}

static void *collectives(void *arg)
{
    long t = (long)arg;
    coll_rounds(dup[t], t, ITER / 2);
    return NULL;
}

/* Communicators made at once from different ones: each its own context
   (two sharing one would take each other's messages). */
static void *dups(void *arg)
{
    long t = (long)arg;
    for (int i = 0; i < 10; i++) {
        MPI_Comm c, s;
        OK(MPI_Comm_dup(dup[t], &c));
        OK(MPI_Comm_split(dup[t], 0, -rank, &s)); /* ranks swapped */
        int r = -1;
        OK(MPI_Comm_rank(s, &r));
        CHECK(r == 1 - rank);
        coll_rounds(c, t, 2);
        coll_rounds(s, t, 2);
        OK(MPI_Comm_free(&c));
        OK(MPI_Comm_free(&s));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1, level = -1, flag = -1, size;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    OK(MPI_Query_thread(&level));
    CHECK(level == MPI_THREAD_MULTIPLE);
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 1);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2);
    peer = 1 - rank;
    /* argv[1], when given, names the one part to run */
    const char *only = argc > 1 ? argv[1] : NULL;
#define PART(name) (!only || strcmp(only, name) == 0)
    if (PART("level"))
        run_threads(not_main);
    if (PART("pingpong"))
        run_threads(pingpong);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (PART("cross"))
        run_threads(cross);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (PART("nonblocking"))
        run_threads(nonblocking);
    for (int t = 0; t < NT; t++)
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup[t]));
    if (PART("collectives"))
        run_threads(collectives);
    if (PART("dups"))
        run_threads(dups);
    for (int t = 0; t < NT; t++)
        OK(MPI_Comm_free(&dup[t]));
    OK(MPI_Finalize());
    if (rank == 0)
        printf("mpi_thread: ok\n");
    return 0;
}
