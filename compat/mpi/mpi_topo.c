/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Virtual topologies (MPI 3.1, chapter 7): Cartesian grids and distributed
 * graphs. A topology is a communicator of its own (a new context) that
 * carries its shape (struct mp_topo, mpi_internal.h); ranks are never
 * reordered, so a process keeps its rank of the old communicator. The
 * neighbourhood collectives (mpi_neighbor.c) read the neighbours from it.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY: addresses no program's array has
   (objects, not made-up pointers, which compilers warn of reading). */
int flit_mpi_unweighted[1], flit_mpi_weights_empty[1];

void mp_topo_free(struct mp_topo *t)
{
    if (!t)
        return;
    free(t->dims);
    free(t->periods);
    free(t->in);
    free(t->out);
    free(t->inw);
    free(t->outw);
    free(t);
}

/* A copy of n ints (n may be 0), NULL only without memory. */
static int *ints_dup(const int *v, int n)
{
    int *c = malloc(n > 0 ? (size_t)n * sizeof *c : 1);
    if (c && n > 0)
        memcpy(c, v, (size_t)n * sizeof *c);
    return c;
}

struct mp_topo *mp_topo_copy(const struct mp_topo *t)
{
    struct mp_topo *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = *t;
    c->dims = ints_dup(t->dims, t->ndims);
    c->periods = ints_dup(t->periods, t->ndims);
    c->in = ints_dup(t->in, t->indeg);
    c->out = ints_dup(t->out, t->outdeg);
    c->inw = ints_dup(t->inw, t->indeg);
    c->outw = ints_dup(t->outw, t->outdeg);
    if (!c->dims || !c->periods || !c->in || !c->out || !c->inw || !c->outw) {
        mp_topo_free(c);
        return NULL;
    }
    return c;
}

static int check_comm(MPI_Comm comm, const char *fn)
{
    MP_CHECK_INIT(fn);
    return mp_comm_ok(comm) ? MPI_SUCCESS : mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
}

/* comm's topology of kind, else the error MPI_ERR_TOPOLOGY (through comm's
   handler) in *rc. */
static const struct mp_topo *topo_of(MPI_Comm comm, int kind, int *rc, const char *fn)
{
    if ((*rc = check_comm(comm, fn)) != MPI_SUCCESS)
        return NULL;
    if (!comm->topo || comm->topo->kind != kind) {
        *rc = mp_err(comm, MPI_ERR_TOPOLOGY, fn);
        return NULL;
    }
    return comm->topo;
}

/* A new communicator of the ranks of comm below n (the others get
   MPI_COMM_NULL), each keeping its rank, carrying t (taken over; freed on
   failure). Collective over comm; a failure is reported by the split. */
static int attach(MPI_Comm comm, int n, struct mp_topo *t, MPI_Comm *out)
{
    int rc = PMPI_Comm_split(comm, comm->rank < n ? 0 : MPI_UNDEFINED, comm->rank, out);
    if (rc || *out == MPI_COMM_NULL)
        mp_topo_free(t);
    else
        (*out)->topo = t;
    return rc;
}

/* ---- Cartesian ---- */

/* Coordinates of rank in t (row-major: the last dimension varies fastest). */
static void coords_of(const struct mp_topo *t, int rank, int *coords)
{
    for (int d = t->ndims - 1; d >= 0; d--) {
        coords[d] = rank % t->dims[d];
        rank /= t->dims[d];
    }
}

/* The rank at coords (wrapped in periodic dimensions), or -1 outside. */
static int rank_at(const struct mp_topo *t, const int *coords)
{
    int rank = 0;
    for (int d = 0; d < t->ndims; d++) {
        int c = coords[d], n = t->dims[d];
        if (t->periods[d])
            c = ((c % n) + n) % n;
        else if (c < 0 || c >= n)
            return -1;
        rank = rank * n + c;
    }
    return rank;
}

/* The rank disp steps along dimension d from rank, or MPI_PROC_NULL. */
static int shifted(const struct mp_topo *t, int rank, int d, int disp)
{
    int c[t->ndims > 0 ? t->ndims : 1];
    coords_of(t, rank, c);
    c[d] += disp;
    int r = rank_at(t, c);
    return r < 0 ? MPI_PROC_NULL : r;
}

/* A Cartesian topology for rank me of dims (neighbours filled in). */
static struct mp_topo *cart_new(int ndims, const int *dims, const int *periods, int me)
{
    struct mp_topo *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->kind = MP_TOPO_CART;
    t->ndims = ndims;
    t->indeg = t->outdeg = 2 * ndims;
    t->dims = ints_dup(dims, ndims);
    t->periods = malloc(ndims > 0 ? (size_t)ndims * sizeof(int) : 1);
    size_t nb = 2 * (size_t)ndims + 1;
    t->in = malloc(nb * sizeof(int));
    t->out = malloc(nb * sizeof(int));
    t->inw = malloc(nb * sizeof(int));
    t->outw = malloc(nb * sizeof(int));
    if (!t->dims || !t->periods || !t->in || !t->out || !t->inw || !t->outw) {
        mp_topo_free(t);
        return NULL;
    }
    for (int d = 0; d < ndims; d++)
        t->periods[d] = periods[d] != 0;
    for (int k = 0; k < 2 * ndims; k++)
        t->inw[k] = t->outw[k] = 1;
    for (int d = 0; d < ndims; d++) {
        t->in[2 * d] = t->out[2 * d] = shifted(t, me, d, -1);
        t->in[2 * d + 1] = t->out[2 * d + 1] = shifted(t, me, d, 1);
    }
    return t;
}

/* Checks dims (each positive) and returns their product in *nodes, or an
   error class. */
static int grid_size(int ndims, const int *dims, int *nodes)
{
    long long n = 1;
    if (ndims < 0 || ndims > MP_MAX_DIMS || (ndims > 0 && !dims))
        return MPI_ERR_DIMS;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] <= 0)
            return MPI_ERR_DIMS;
        n *= dims[d];
        if (n > 0x7fffffff)
            return MPI_ERR_DIMS;
    }
    *nodes = (int)n;
    return MPI_SUCCESS;
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                    int reorder, MPI_Comm *comm_cart)
{
    MP_LOCKED(PMPI_Cart_create, (comm_old, ndims, dims, periods, reorder, comm_cart));
    static const char fn[] = "MPI_Cart_create";
    (void)reorder; /* ranks are kept: a permitted choice */
    int rc = check_comm(comm_old, fn), nodes = 0;
    if (rc)
        return rc;
    if (!comm_cart || (ndims > 0 && !periods))
        return mp_err(comm_old, MPI_ERR_ARG, fn);
    if ((rc = grid_size(ndims, dims, &nodes)) != MPI_SUCCESS)
        return mp_err(comm_old, rc, fn);
    if (nodes > comm_old->size)
        return mp_err(comm_old, MPI_ERR_TOPOLOGY, fn);
    struct mp_topo *t = NULL;
    if (comm_old->rank < nodes && !(t = cart_new(ndims, dims, periods, comm_old->rank)))
        nodes = -1; /* this rank stays out; the split still needs it */
    rc = attach(comm_old, nodes < 0 ? 0 : nodes, t, comm_cart);
    if (!rc && nodes < 0)
        return mp_err(comm_old, MPI_ERR_NO_MEM, fn);
    return rc;
}

int MPI_Dims_create(int nnodes, int ndims, int dims[])
{
    MP_LOCKED(PMPI_Dims_create, (nnodes, ndims, dims));
    static const char fn[] = "MPI_Dims_create";
    if (ndims < 0 || ndims > MP_MAX_DIMS)
        return mp_err(MPI_COMM_WORLD, MPI_ERR_DIMS, fn);
    if (nnodes <= 0 || (ndims > 0 && !dims))
        return mp_err(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
    int rest = nnodes, nfree = 0;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 0 || (dims[d] > 0 && rest % dims[d]))
            return mp_err(MPI_COMM_WORLD, MPI_ERR_DIMS, fn);
        if (dims[d] > 0)
            rest /= dims[d];
        else
            nfree++;
    }
    if (nfree == 0)
        return rest == 1 ? MPI_SUCCESS : mp_err(MPI_COMM_WORLD, MPI_ERR_DIMS, fn);
    /* The prime factors of what is left, largest first, each to the
       smallest free dimension so far: as close to each other as possible. */
    int f[nfree];
    for (int i = 0; i < nfree; i++)
        f[i] = 1;
    int primes[32], np = 0;
    for (int p = 2; (long long)p * p <= rest; p++)
        while (rest % p == 0)
            primes[np++] = p, rest /= p;
    if (rest > 1)
        primes[np++] = rest;
    for (int k = np - 1; k >= 0; k--) {
        int s = 0;
        for (int i = 1; i < nfree; i++)
            if (f[i] < f[s])
                s = i;
        f[s] *= primes[k];
    }
    for (int i = 0; i < nfree; i++) /* non-increasing, as MPI asks */
        for (int j = i + 1; j < nfree; j++)
            if (f[j] > f[i]) {
                int x = f[i];
                f[i] = f[j], f[j] = x;
            }
    for (int d = 0, i = 0; d < ndims; d++)
        if (dims[d] == 0)
            dims[d] = f[i++];
    return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
    MP_LOCKED(PMPI_Cartdim_get, (comm, ndims));
    int rc;
    const struct mp_topo *t = topo_of(comm, MP_TOPO_CART, &rc, "MPI_Cartdim_get");
    if (!t)
        return rc;
    if (!ndims)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Cartdim_get");
    *ndims = t->ndims;
    return MPI_SUCCESS;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
    MP_LOCKED(PMPI_Cart_get, (comm, maxdims, dims, periods, coords));
    int rc;
    const struct mp_topo *t = topo_of(comm, MP_TOPO_CART, &rc, "MPI_Cart_get");
    if (!t)
        return rc;
    int n = t->ndims < maxdims ? t->ndims : maxdims;
    if (maxdims < 0 || (n > 0 && (!dims || !periods || !coords)))
        return mp_err(comm, MPI_ERR_ARG, "MPI_Cart_get");
    int c[t->ndims > 0 ? t->ndims : 1];
    coords_of(t, comm->rank, c);
    for (int d = 0; d < n; d++)
        dims[d] = t->dims[d], periods[d] = t->periods[d], coords[d] = c[d];
    return MPI_SUCCESS;
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
    MP_LOCKED(PMPI_Cart_rank, (comm, coords, rank));
    int rc;
    const struct mp_topo *t = topo_of(comm, MP_TOPO_CART, &rc, "MPI_Cart_rank");
    if (!t)
        return rc;
    if (!rank || (t->ndims > 0 && !coords))
        return mp_err(comm, MPI_ERR_ARG, "MPI_Cart_rank");
    int r = rank_at(t, coords);
    if (r < 0) /* outside a non-periodic dimension */
        return mp_err(comm, MPI_ERR_ARG, "MPI_Cart_rank");
    *rank = r;
    return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
    MP_LOCKED(PMPI_Cart_coords, (comm, rank, maxdims, coords));
    int rc;
    const struct mp_topo *t = topo_of(comm, MP_TOPO_CART, &rc, "MPI_Cart_coords");
    if (!t)
        return rc;
    if (rank < 0 || rank >= comm->size)
        return mp_err(comm, MPI_ERR_RANK, "MPI_Cart_coords");
    if (maxdims < t->ndims || (t->ndims > 0 && !coords))
        return mp_err(comm, MPI_ERR_ARG, "MPI_Cart_coords");
    coords_of(t, rank, coords);
    return MPI_SUCCESS;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source,
                   int *rank_dest)
{
    MP_LOCKED(PMPI_Cart_shift, (comm, direction, disp, rank_source, rank_dest));
    int rc;
    const struct mp_topo *t = topo_of(comm, MP_TOPO_CART, &rc, "MPI_Cart_shift");
    if (!t)
        return rc;
    if (!rank_source || !rank_dest || direction < 0 || direction >= t->ndims)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Cart_shift");
    *rank_source = shifted(t, comm->rank, direction, -disp);
    *rank_dest = shifted(t, comm->rank, direction, disp);
    return MPI_SUCCESS;
}

/* The grid's ranks that share this rank's coordinates in every dimension
   remain_dims drops form one sub-grid of the dimensions it keeps. */
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    MP_LOCKED(PMPI_Cart_sub, (comm, remain_dims, newcomm));
    static const char fn[] = "MPI_Cart_sub";
    int rc;
    const struct mp_topo *t = topo_of(comm, MP_TOPO_CART, &rc, fn);
    if (!t)
        return rc;
    if (!newcomm || (t->ndims > 0 && !remain_dims))
        return mp_err(comm, MPI_ERR_ARG, fn);
    int nd = t->ndims > 0 ? t->ndims : 1, c[nd], dims[nd], periods[nd], kept = 0;
    coords_of(t, comm->rank, c);
    int color = 0, key = 0;
    for (int d = 0; d < t->ndims; d++) {
        if (remain_dims[d]) {
            key = key * t->dims[d] + c[d];
            dims[kept] = t->dims[d], periods[kept] = t->periods[d], kept++;
        } else {
            color = color * t->dims[d] + c[d];
        }
    }
    if ((rc = PMPI_Comm_split(comm, color, key, newcomm)) != MPI_SUCCESS)
        return rc; /* reported by the split */
    /* No dimension kept: a grid of one point (MPI 3.1, 7.5.7, zero-dim). */
    if (!((*newcomm)->topo = cart_new(kept, dims, periods, (*newcomm)->rank))) {
        PMPI_Comm_free(newcomm);
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    }
    return MPI_SUCCESS;
}

int MPI_Topo_test(MPI_Comm comm, int *status)
{
    MP_LOCKED(PMPI_Topo_test, (comm, status));
    int rc = check_comm(comm, "MPI_Topo_test");
    if (rc)
        return rc;
    if (!status)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Topo_test");
    *status = !comm->topo                        ? MPI_UNDEFINED
              : comm->topo->kind == MP_TOPO_CART ? MPI_CART
                                                 : MPI_DIST_GRAPH;
    return MPI_SUCCESS;
}

/* ---- distributed graphs ---- */

/* Weights of n edges: MPI_UNWEIGHTED (or MPI_WEIGHTS_EMPTY) gives 1s. */
static int weights_ok(const int *w, int n)
{
    if (w == MPI_UNWEIGHTED || w == MPI_WEIGHTS_EMPTY)
        return n == 0 || w == MPI_UNWEIGHTED;
    if (n > 0 && !w)
        return 0;
    for (int i = 0; i < n; i++)
        if (w[i] < 0)
            return 0;
    return 1;
}

static int ranks_ok(const int *r, int n, int size)
{
    if (n < 0 || (n > 0 && !r))
        return 0;
    for (int i = 0; i < n; i++)
        if (r[i] < 0 || r[i] >= size)
            return 0;
    return 1;
}

/* A graph topology of the given edges (arrays copied). */
static struct mp_topo *graph_new(int indeg, const int *in, const int *inw, int outdeg,
                                 const int *out, const int *outw, int weighted)
{
    struct mp_topo *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->kind = MP_TOPO_DIST;
    t->indeg = indeg, t->outdeg = outdeg, t->weighted = weighted;
    t->dims = ints_dup(NULL, 0);
    t->periods = ints_dup(NULL, 0);
    t->in = ints_dup(in, indeg);
    t->out = ints_dup(out, outdeg);
    t->inw = malloc(indeg > 0 ? (size_t)indeg * sizeof(int) : 1);
    t->outw = malloc(outdeg > 0 ? (size_t)outdeg * sizeof(int) : 1);
    if (!t->dims || !t->periods || !t->in || !t->out || !t->inw || !t->outw) {
        mp_topo_free(t);
        return NULL;
    }
    int plain_in = inw == MPI_UNWEIGHTED || inw == MPI_WEIGHTS_EMPTY;
    int plain_out = outw == MPI_UNWEIGHTED || outw == MPI_WEIGHTS_EMPTY;
    for (int i = 0; i < indeg; i++)
        t->inw[i] = plain_in ? 1 : inw[i];
    for (int i = 0; i < outdeg; i++)
        t->outw[i] = plain_out ? 1 : outw[i];
    return t;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[],
                                   MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    MP_LOCKED(PMPI_Dist_graph_create_adjacent,
              (comm_old, indegree, sources, sourceweights, outdegree, destinations,
               destweights, info, reorder, comm_dist_graph));
    static const char fn[] = "MPI_Dist_graph_create_adjacent";
    (void)info, (void)reorder;
    int rc = check_comm(comm_old, fn);
    if (rc)
        return rc;
    if (!comm_dist_graph || !ranks_ok(sources, indegree, comm_old->size) ||
        !ranks_ok(destinations, outdegree, comm_old->size) ||
        !weights_ok(sourceweights, indegree) || !weights_ok(destweights, outdegree) ||
        (sourceweights == MPI_UNWEIGHTED) != (destweights == MPI_UNWEIGHTED))
        return mp_err(comm_old, MPI_ERR_ARG, fn);
    int weighted = sourceweights != MPI_UNWEIGHTED;
    struct mp_topo *t = graph_new(indegree, sources, sourceweights, outdegree,
                                  destinations, destweights, weighted);
    rc = attach(comm_old, t ? comm_old->size : 0, t, comm_dist_graph);
    return !rc && !t ? mp_err(comm_old, MPI_ERR_NO_MEM, fn) : rc;
}

/* An edge's end as it travels to the rank that keeps it: three ints, which
   end that rank is (E_OUT: the source), the other end, the weight. */
enum { E_OUT, E_IN, END_INTS = 3 };

typedef struct ends {
    int *count, *displ; /* ints to / from each rank, and where they lie */
    int *buf;
} ends;

static void ends_free(ends *e)
{
    free(e->count);
    free(e->displ);
    free(e->buf);
}

/* Room for size ranks and total ints; 0 without memory. */
static int ends_alloc(ends *e, int size, size_t total)
{
    e->count = calloc((size_t)size, sizeof(int));
    e->displ = calloc((size_t)size, sizeof(int));
    e->buf = malloc(total ? total * sizeof(int) : 1);
    return e->count && e->displ && e->buf;
}

/* The ends of the edges this rank names, each to the rank it belongs to. */
static int ends_out(ends *e, int size, int n, const int *sources, const int *degrees,
                    const int *dests, const int *weights, size_t edges)
{
    if (!ends_alloc(e, size, edges * 2 * END_INTS))
        return MPI_ERR_NO_MEM;
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < degrees[i]; j++, k++)
            e->count[sources[i]] += END_INTS, e->count[dests[k]] += END_INTS;
    for (int r = 1; r < size; r++)
        e->displ[r] = e->displ[r - 1] + e->count[r - 1];
    int *fill = calloc((size_t)size, sizeof(int));
    if (!fill)
        return MPI_ERR_NO_MEM;
    int plain = weights == MPI_UNWEIGHTED || weights == MPI_WEIGHTS_EMPTY;
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < degrees[i]; j++, k++) {
            int s = sources[i], d = dests[k], w = plain ? 1 : weights[k];
            int *at = e->buf + e->displ[s] + fill[s];
            at[0] = E_OUT, at[1] = d, at[2] = w, fill[s] += END_INTS;
            at = e->buf + e->displ[d] + fill[d];
            at[0] = E_IN, at[1] = s, at[2] = w, fill[d] += END_INTS;
        }
    free(fill);
    return MPI_SUCCESS;
}

/* Every rank's ends for this one, into in; a failure is reported (fn). */
static int ends_exchange(const ends *out, ends *in, MPI_Comm comm, const char *fn)
{
    int size = comm->size;
    in->count = calloc((size_t)size, sizeof(int));
    in->displ = calloc((size_t)size, sizeof(int));
    if (!in->count || !in->displ)
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    int rc = PMPI_Alltoall(out->count, 1, MPI_INT, in->count, 1, MPI_INT, comm);
    long long total = 0;
    for (int r = 0; !rc && r < size; r++)
        in->displ[r] = (int)total, total += in->count[r];
    if (!rc && (total > 0x7fffffff ||
                !(in->buf = malloc(total ? (size_t)total * sizeof(int) : 1))))
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    if (!rc)
        rc = PMPI_Alltoallv(out->buf, out->count, out->displ, MPI_INT, in->buf, in->count,
                            in->displ, MPI_INT, comm);
    return rc;
}

/* The topology the received ends describe. */
static struct mp_topo *graph_of_ends(const ends *in, int size, int weighted)
{
    size_t n = 0;
    for (int r = 0; r < size; r++)
        n += (size_t)in->count[r] / END_INTS;
    int *v = malloc((4 * n + 1) * sizeof(int)), nin = 0, nout = 0;
    if (!v)
        return NULL;
    int *src = v, *srcw = v + n, *dst = v + 2 * n, *dstw = v + 3 * n;
    for (size_t j = 0; j < n; j++) {
        const int *at = in->buf + END_INTS * j;
        if (at[0] == E_OUT)
            dst[nout] = at[1], dstw[nout++] = at[2];
        else
            src[nin] = at[1], srcw[nin++] = at[2];
    }
    struct mp_topo *t = graph_new(nin, src, srcw, nout, dst, dstw, weighted);
    free(v);
    return t;
}

/* Each rank names any edges (n sources, degrees[i] destinations each);
   both ends of every edge learn it. */
int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
                          const int degrees[], const int destinations[],
                          const int weights[], MPI_Info info, int reorder,
                          MPI_Comm *comm_dist_graph)
{
    MP_LOCKED(PMPI_Dist_graph_create, (comm_old, n, sources, degrees, destinations,
                                       weights, info, reorder, comm_dist_graph));
    static const char fn[] = "MPI_Dist_graph_create";
    (void)info, (void)reorder;
    int rc = check_comm(comm_old, fn);
    if (rc)
        return rc;
    int size = comm_old->size;
    long long edges = 0;
    if (!comm_dist_graph || !ranks_ok(sources, n, size) || (n > 0 && !degrees))
        return mp_err(comm_old, MPI_ERR_ARG, fn);
    for (int i = 0; i < n; i++) {
        if (degrees[i] < 0)
            return mp_err(comm_old, MPI_ERR_ARG, fn);
        edges += degrees[i];
    }
    if (edges > 0x7fffffff / (2 * END_INTS) ||
        !ranks_ok(destinations, (int)edges, size) || !weights_ok(weights, (int)edges))
        return mp_err(comm_old, MPI_ERR_ARG, fn);
    ends out = {0}, in = {0};
    rc = ends_out(&out, size, n, sources, degrees, destinations, weights, (size_t)edges);
    int told = 0; /* the exchange's own calls reported its failure */
    if (!rc)
        told = (rc = ends_exchange(&out, &in, comm_old, fn)) != MPI_SUCCESS;
    int weighted = weights != MPI_UNWEIGHTED;
    struct mp_topo *t = rc ? NULL : graph_of_ends(&in, size, weighted);
    ends_free(&out);
    ends_free(&in);
    if (!rc && !t)
        rc = MPI_ERR_NO_MEM;
    int split_rc = attach(comm_old, t ? size : 0, t, comm_dist_graph);
    if (rc)
        return told ? rc : mp_err(comm_old, rc, fn);
    return split_rc;
}

int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree,
                                   int *weighted)
{
    MP_LOCKED(PMPI_Dist_graph_neighbors_count, (comm, indegree, outdegree, weighted));
    int rc;
    const struct mp_topo *t =
        topo_of(comm, MP_TOPO_DIST, &rc, "MPI_Dist_graph_neighbors_count");
    if (!t)
        return rc;
    if (!indegree || !outdegree || !weighted)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Dist_graph_neighbors_count");
    *indegree = t->indeg, *outdegree = t->outdeg, *weighted = t->weighted;
    return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[],
                             int sourceweights[], int maxoutdegree, int destinations[],
                             int destweights[])
{
    MP_LOCKED(PMPI_Dist_graph_neighbors, (comm, maxindegree, sources, sourceweights,
                                          maxoutdegree, destinations, destweights));
    static const char fn[] = "MPI_Dist_graph_neighbors";
    int rc;
    const struct mp_topo *t = topo_of(comm, MP_TOPO_DIST, &rc, fn);
    if (!t)
        return rc;
    if (maxindegree < t->indeg || maxoutdegree < t->outdeg ||
        (t->indeg > 0 && !sources) || (t->outdeg > 0 && !destinations))
        return mp_err(comm, MPI_ERR_ARG, fn);
    int win = sourceweights != MPI_UNWEIGHTED && sourceweights != MPI_WEIGHTS_EMPTY &&
              sourceweights;
    int wout =
        destweights != MPI_UNWEIGHTED && destweights != MPI_WEIGHTS_EMPTY && destweights;
    for (int i = 0; i < t->indeg; i++) {
        sources[i] = t->in[i];
        if (win)
            sourceweights[i] = t->inw[i];
    }
    for (int i = 0; i < t->outdeg; i++) {
        destinations[i] = t->out[i];
        if (wout)
            destweights[i] = t->outw[i];
    }
    return MPI_SUCCESS;
}

MP_PROFILED(MPI_Cart_create);
MP_PROFILED(MPI_Dims_create);
MP_PROFILED(MPI_Cartdim_get);
MP_PROFILED(MPI_Cart_get);
MP_PROFILED(MPI_Cart_rank);
MP_PROFILED(MPI_Cart_coords);
MP_PROFILED(MPI_Cart_shift);
MP_PROFILED(MPI_Cart_sub);
MP_PROFILED(MPI_Topo_test);
MP_PROFILED(MPI_Dist_graph_create_adjacent);
MP_PROFILED(MPI_Dist_graph_create);
MP_PROFILED(MPI_Dist_graph_neighbors_count);
MP_PROFILED(MPI_Dist_graph_neighbors);
