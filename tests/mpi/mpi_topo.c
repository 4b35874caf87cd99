/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Virtual topologies and neighbourhood collectives, object names, info
 * objects, MPI_Alloc_mem and MPI_Comm_split_type, with their corner cases
 * (a rank its own neighbour, the same neighbour both ways, MPI_PROC_NULL
 * past an edge, packed types) and bad arguments answering MPI's classes.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int rank, size;

static void dims(void)
{
    int d2[2] = {0, 0};
    OK(MPI_Dims_create(12, 2, d2));
    CHECK(d2[0] == 4 && d2[1] == 3);
    int d3[3] = {0, 0, 0};
    OK(MPI_Dims_create(16, 3, d3));
    CHECK(d3[0] == 4 && d3[1] == 2 && d3[2] == 2);
    int fixed[2] = {0, 3};
    OK(MPI_Dims_create(6, 2, fixed));
    CHECK(fixed[0] == 2 && fixed[1] == 3);
    int prime[3] = {0, 0, 0};
    OK(MPI_Dims_create(7, 3, prime));
    CHECK(prime[0] == 7 && prime[1] == 1 && prime[2] == 1);
    int bad[2] = {0, 2};
    CHECK(MPI_Dims_create(7, 2, bad) == MPI_ERR_DIMS); /* 7 is not a multiple of 2 */
    int neg[1] = {-1};
    CHECK(MPI_Dims_create(4, 1, neg) == MPI_ERR_DIMS);
    CHECK(MPI_Dims_create(4, 100000, neg) ==
          MPI_ERR_DIMS); /* more than a grid may have */
}

/* A 2-D grid of every rank, periodic in dimension 0 only. */
static void cart(void)
{
    int d[2] = {0, 0}, periods[2] = {1, 0}, status;
    OK(MPI_Dims_create(size, 2, d));
    MPI_Comm grid;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, d, periods, 0, &grid));
    CHECK(grid != MPI_COMM_NULL);
    OK(MPI_Topo_test(grid, &status));
    CHECK(status == MPI_CART);
    OK(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK(status == MPI_UNDEFINED);
    int nd, gd[2], gp[2], gc[2], me;
    OK(MPI_Cartdim_get(grid, &nd));
    CHECK(nd == 2);
    OK(MPI_Cart_get(grid, 2, gd, gp, gc));
    OK(MPI_Comm_rank(grid, &me));
    CHECK(me == rank && gd[0] == d[0] && gd[1] == d[1] && gp[0] == 1 && gp[1] == 0);
    CHECK(gc[0] == rank / d[1] && gc[1] == rank % d[1]); /* row-major */
    for (int r = 0; r < size; r++) {
        int c[2], back;
        OK(MPI_Cart_coords(grid, r, 2, c));
        OK(MPI_Cart_rank(grid, c, &back));
        CHECK(back == r);
    }
    int wrap[2] = {gc[0] + d[0], gc[1]}, back; /* periodic: wraps */
    OK(MPI_Cart_rank(grid, wrap, &back));
    CHECK(back == rank);
    int src, dst;
    OK(MPI_Cart_shift(grid, 0, 1, &src, &dst));
    CHECK(src == ((gc[0] - 1 + d[0]) % d[0]) * d[1] + gc[1]);
    CHECK(dst == ((gc[0] + 1) % d[0]) * d[1] + gc[1]);
    OK(MPI_Cart_shift(grid, 1, 1, &src, &dst));
    CHECK(src == (gc[1] == 0 ? MPI_PROC_NULL : rank - 1));
    CHECK(dst == (gc[1] == d[1] - 1 ? MPI_PROC_NULL : rank + 1));

    /* allgather: each neighbour's rank; MPI_PROC_NULL blocks untouched */
    int got[4] = {-7, -7, -7, -7};
    OK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, grid));
    int nb[4];
    OK(MPI_Cart_shift(grid, 0, 1, &nb[0], &nb[1]));
    OK(MPI_Cart_shift(grid, 1, 1, &nb[2], &nb[3]));
    for (int k = 0; k < 4; k++)
        CHECK(got[k] == (nb[k] == MPI_PROC_NULL ? -7 : nb[k]));

    /* rows: keep dimension 1; the row's ranks sum to a known value */
    MPI_Comm row;
    int keep[2] = {0, 1}, sum = 0, rsize;
    OK(MPI_Cart_sub(grid, keep, &row));
    OK(MPI_Comm_size(row, &rsize));
    CHECK(rsize == d[1]);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, row));
    int first = gc[0] * d[1];
    CHECK(sum == d[1] * first + d[1] * (d[1] - 1) / 2);
    OK(MPI_Cartdim_get(row, &nd));
    CHECK(nd == 1);

    /* a duplicate keeps the topology */
    MPI_Comm dup;
    OK(MPI_Comm_dup(grid, &dup));
    OK(MPI_Topo_test(dup, &status));
    CHECK(status == MPI_CART);
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&row));
    OK(MPI_Comm_free(&grid));
}

/* A periodic ring: with 1 rank it is its own neighbour both ways, with 2
   the other is both; each block must still land where MPI says. */
static void ring(void)
{
    int n = size, per = 1;
    MPI_Comm ring;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &per, 1, &ring));
    int out[2] = {rank * 10 + 0, rank * 10 + 1}, in[2] = {-1, -1};
    OK(MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, ring));
    int below = (rank - 1 + size) % size, above = (rank + 1) % size;
    CHECK(in[0] == below * 10 + 1); /* what the rank below sent upwards */
    CHECK(in[1] == above * 10 + 0); /* what the rank above sent downwards */

    /* the same, non-blocking, two at once */
    int in2[2] = {-1, -1}, all[2] = {-1, -1};
    MPI_Request rq[2];
    OK(MPI_Ineighbor_alltoall(out, 1, MPI_INT, in2, 1, MPI_INT, ring, &rq[0]));
    OK(MPI_Ineighbor_allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, ring, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(in2[0] == in[0] && in2[1] == in[1]);
    CHECK(all[0] == below && all[1] == above);
    OK(MPI_Comm_free(&ring));
}

/* Each rank sends to r+1 and r+2 and hears from r-1 and r-2 (weighted). */
static void graph(void)
{
    int src[2] = {(rank - 1 + size) % size, (rank - 2 + 2 * size) % size};
    int dst[2] = {(rank + 1) % size, (rank + 2) % size};
    int sw[2] = {5, 6}, dw[2] = {5, 6};
    MPI_Comm g;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw,
                                      MPI_INFO_NULL, 0, &g));
    int indeg, outdeg, weighted, status;
    OK(MPI_Topo_test(g, &status));
    CHECK(status == MPI_DIST_GRAPH);
    OK(MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted));
    CHECK(indeg == 2 && outdeg == 2 && weighted);
    int s[2], w[2], t[2], tw[2];
    OK(MPI_Dist_graph_neighbors(g, 2, s, w, 2, t, tw));
    CHECK(s[0] == src[0] && s[1] == src[1] && w[1] == 6 && t[1] == dst[1] && tw[0] == 5);

    /* alltoallv: 3 ints to r+1, 5 to r+2, every one checked */
    int sc[2] = {3, 5}, sd[2] = {0, 3}, rc[2] = {3, 5}, rd[2] = {0, 3};
    int out[8], in[8];
    seq_fill(out, 3, rank * 2);
    seq_fill(out + 3, 5, rank * 2 + 1);
    OK(MPI_Neighbor_alltoallv(out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, g));
    CHECK(seq_same(in, 3, src[0] * 2));
    CHECK(seq_same(in + 3, 5, src[1] * 2 + 1));

    /* alltoallw with a strided type on the send side (travels packed) */
    MPI_Datatype every2;
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &every2));
    OK(MPI_Type_commit(&every2));
    int spread[16], flat[8];
    for (int i = 0; i < 16; i++)
        spread[i] = i % 2 ? -1 : rank * 100 + i / 2;
    int wsc[2] = {1, 1}, wrc[2] = {4, 4};
    MPI_Aint wsd[2] = {0, 0}, wrd[2] = {0, 4 * sizeof(int)};
    MPI_Datatype wst[2] = {every2, every2}, wrt[2] = {MPI_INT, MPI_INT};
    OK(MPI_Neighbor_alltoallw(spread, wsc, wsd, wst, flat, wrc, wrd, wrt, g));
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++)
            CHECK(flat[4 * k + i] == src[k] * 100 + i);
    OK(MPI_Type_free(&every2));
    OK(MPI_Comm_free(&g));

    /* the general form: rank 0 names every edge r -> r+1 */
    int n = rank == 0 ? size : 0;
    int *from = malloc(sizeof(int) * (size_t)size),
        *deg = malloc(sizeof(int) * (size_t)size);
    int *to = malloc(sizeof(int) * (size_t)size);
    CHECK(from && deg && to);
    for (int r = 0; r < size; r++)
        from[r] = r, deg[r] = 1, to[r] = (r + 1) % size;
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, n, from, deg, to, MPI_UNWEIGHTED,
                             MPI_INFO_NULL, 0, &g));
    OK(MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && !weighted);
    OK(MPI_Dist_graph_neighbors(g, 1, s, MPI_UNWEIGHTED, 1, t, MPI_UNWEIGHTED));
    CHECK(s[0] == (rank - 1 + size) % size && t[0] == (rank + 1) % size);
    int heard = -1;
    OK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, &heard, 1, MPI_INT, g));
    CHECK(heard == s[0]);
    OK(MPI_Comm_free(&g));
    free(from), free(deg), free(to);
}

static void names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14);
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(len == 0 && name[0] == 0); /* a duplicate is not named after its original */
    OK(MPI_Comm_set_name(dup, "solver"));
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "solver") == 0);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    OK(MPI_Comm_set_name(dup, longname)); /* cut to fit */
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len);
    OK(MPI_Comm_free(&dup));
    OK(MPI_Type_get_name(MPI_INT, name, &len));
    CHECK(strcmp(name, "MPI_INT") == 0);
    MPI_Datatype pair;
    OK(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
    OK(MPI_Type_get_name(pair, name, &len));
    CHECK(len == 0);
    OK(MPI_Type_set_name(pair, "pair"));
    OK(MPI_Type_get_name(pair, name, &len));
    CHECK(strcmp(name, "pair") == 0 && len == 4);
    OK(MPI_Type_free(&pair));
    MPI_Win win;
    int cell = 0;
    OK(MPI_Win_create(&cell, sizeof cell, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_name(win, "cells"));
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(strcmp(name, "cells") == 0);
    OK(MPI_Win_free(&win));
}

static void infos(void)
{
    MPI_Info info, copy;
    char v[MPI_MAX_INFO_VAL], k[MPI_MAX_INFO_KEY];
    int flag, n, len;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "no_locks", "true"));
    OK(MPI_Info_set(info, "alloc_shm", "false"));
    OK(MPI_Info_set(info, "no_locks", "false")); /* replaces */
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2);
    OK(MPI_Info_get_nthkey(info, 1, k));
    CHECK(strcmp(k, "alloc_shm") == 0);
    OK(MPI_Info_get(info, "no_locks", MPI_MAX_INFO_VAL - 1, v, &flag));
    CHECK(flag && strcmp(v, "false") == 0);
    OK(MPI_Info_get(info, "no_locks", 2, v, &flag)); /* valuelen characters at most */
    CHECK(flag && strcmp(v, "fa") == 0);
    OK(MPI_Info_get_valuelen(info, "alloc_shm", &len, &flag));
    CHECK(flag && len == 5);
    OK(MPI_Info_get(info, "absent", MPI_MAX_INFO_VAL - 1, v, &flag));
    CHECK(!flag);
    OK(MPI_Info_dup(info, &copy));
    OK(MPI_Info_delete(info, "no_locks"));
    CHECK(MPI_Info_delete(info, "no_locks") == MPI_ERR_INFO_NOKEY);
    OK(MPI_Info_get_nkeys(copy, &n));
    CHECK(n == 2);
    CHECK(MPI_Info_set(info, "", "x") == MPI_ERR_INFO_KEY);
    CHECK(MPI_Info_set(info, "k", "") == MPI_ERR_INFO_VALUE);
    CHECK(MPI_Info_get_nkeys(MPI_INFO_NULL, &n) == MPI_ERR_INFO);
    /* hints are accepted where calls take them */
    MPI_Win win;
    void *base;
    OK(MPI_Win_allocate(64, 1, copy, MPI_COMM_WORLD, &base, &win));
    OK(MPI_Win_free(&win));
    OK(MPI_Info_free(&copy));
    OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL);
    double *mem;
    OK(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &mem));
    CHECK(((unsigned long)mem & 7) == 0);
    mem[999] = 1.0;
    OK(MPI_Free_mem(mem));
}

/* Ranks on one host reach each other over shared memory, unless the job
   was told to use UDP for all. */
static void shared(void)
{
    MPI_Comm node;
    int n;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                           &node));
    OK(MPI_Comm_size(node, &n));
    const char *tp = getenv("FLIT_TRANSPORT");
    CHECK(n == (tp && strstr(tp, "udp") ? 1 : size));
    OK(MPI_Comm_free(&node));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, rank, MPI_INFO_NULL, &node));
    CHECK(node == MPI_COMM_NULL);
}

static void bad(void)
{
    int x = 0, d = 2, per = 0, r;
    MPI_Comm c;
    CHECK(MPI_Neighbor_allgather(&x, 1, MPI_INT, &x, 1, MPI_INT, MPI_COMM_WORLD) ==
          MPI_ERR_TOPOLOGY);
    int big = size + 1;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, &big, &per, 0, &c) == MPI_ERR_TOPOLOGY);
    int zero = 0;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, &zero, &per, 0, &c) == MPI_ERR_DIMS);
    CHECK(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &x, &x) == MPI_ERR_TOPOLOGY);
    int n1 = 1;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &n1, &per, 0, &c)); /* rank 0 alone */
    CHECK((rank == 0) == (c != MPI_COMM_NULL));
    if (c != MPI_COMM_NULL) {
        int out[1] = {d};
        CHECK(MPI_Cart_rank(c, out, &r) == MPI_ERR_ARG); /* off a non-periodic edge */
        CHECK(MPI_Cart_coords(c, 1, 1, &x) == MPI_ERR_RANK);
        CHECK(MPI_Cart_shift(c, 1, 1, &x, &r) == MPI_ERR_ARG); /* no dimension 1 */
        int src, dst;
        OK(MPI_Cart_shift(c, 0, 1, &src, &dst));
        CHECK(src == MPI_PROC_NULL && dst == MPI_PROC_NULL);
        CHECK(MPI_Dist_graph_neighbors_count(c, &x, &x, &x) == MPI_ERR_TOPOLOGY);
        OK(MPI_Comm_free(&c));
    }
    int away = size;
    CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &away, MPI_UNWEIGHTED, 0,
                                         NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                         &c) == MPI_ERR_ARG);
    int me = rank, neg = -1;
    CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &me, &neg, 1, &me, &neg,
                                         MPI_INFO_NULL, 0, &c) == MPI_ERR_ARG);
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    dims();
    cart();
    ring();
    graph();
    names();
    infos();
    shared();
    bad();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        printf("mpi_topo: %d ranks OK\n", size);
    OK(MPI_Finalize());
    return 0;
}
