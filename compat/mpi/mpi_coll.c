/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking collectives, on each communicator's collective context (its
 * own messages, never matched by a point-to-point receive) with internal
 * tags. Data travels packed: each call packs what it sends (one copy for
 * contiguous types too) and unpacks what it receives, so every algorithm
 * works on plain bytes and every datatype is handled alike.
 *
 * Algorithms, by rank count and size (the sizes are FLIT_MPI_* settings,
 * mpi_coll_choice.c):
 *   Barrier: dissemination, ceil(log2 n) rounds of empty messages.
 *   Bcast: binomial tree from the root; on 4 or more ranks from
 *     FLIT_MPI_BCAST_SCATTER_MIN bytes, scatter then ring (van de Geijn's).
 *   Reduce: on 4 to 32 ranks below FLIT_MPI_REDUCE_TREE_MIN bytes, every
 *     rank sends the root its vector (linear); else a binomial tree; a
 *     commutative op reduces towards the root, a
 *     non-commutative one towards rank 0 in rank order, then to the root;
 *     from FLIT_MPI_REDUCE_HALVING_MIN bytes a block (the vector over p)
 *     with a commutative op, recursive halving then the blocks sent to
 *     the root (Rabenseifner's).
 *   Allreduce: below FLIT_MPI_ALLREDUCE_DOUBLING_MIN bytes on 3, 5 to 8
 *     ranks, every rank sends every other its vector (one round); else
 *     among the largest power of two of ranks (the others fold
 *     into a partner first and get the result last), recursive doubling,
 *     and from FLIT_MPI_ALLREDUCE_HALVING_MIN bytes a block (the vector
 *     over p) with a commutative op recursive halving then doubling
 *     (Rabenseifner's), in the program's buffer for a contiguous type.
 *   Gather, Scatter: on 3 or more ranks below FLIT_MPI_GATHER_LINEAR_MIN
 *     (FLIT_MPI_SCATTER_LINEAR_MIN) bytes a block, a binomial tree; else,
 *     and Gatherv, Scatterv (whose ranks do not know each other's
 *     counts), linear at the root.
 *   Allgather(v): Bruck's, ceil(log2 n) steps, below
 *     FLIT_MPI_ALLGATHER_RING_MIN bytes in all on 4 or more ranks; else a
 *     ring, n - 1 steps.
 *   Alltoall(v/w): on 3 or more ranks with every block below
 *     FLIT_MPI_ALLTOALL_PAIRWISE_MIN bytes, every receive posted and every
 *     block sent at once; else pairwise exchange, n - 1 steps.
 *   Reduce_scatter(_block): with a commutative op recursive halving
 *     among the largest power of two of ranks, the others folded in (then
 *     handed their block), from FLIT_MPI_REDUCE_SCATTER_HALVING_MIN bytes
 *     of the vector where some fold; else Reduce to rank 0 and Scatter(v).
 *   Scan, Exscan: recursive doubling (MPICH's), any op.
 * Sends are eager (mpi_p2p.c), so no step waits for its receiver.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

enum {
    T_BARRIER = 16, /* + round */
    T_BCAST = 80,
    T_REDUCE,
    T_ALLREDUCE,
    T_GATHER,
    T_SCATTER,
    T_ALLGATHER,
    T_ALLTOALL,
    T_SCAN,
    T_EXSCAN,
    T_ROOT, /* a reduction's result forwarded from rank 0 to the root */
};

/* ---- helpers ---- */

static void *alloc_bytes(size_t n)
{
    return mp_scratch(n);
}

/* A packed copy of count elements of t at buf; NULL without memory. */
static void *packed_copy(const void *buf, int count, MPI_Datatype t)
{
    void *p = alloc_bytes(mp_type_bytes(t, count));
    if (p)
        mp_pack(buf, count, t, p);
    return p;
}

/* Where count elements of t at buf lie as one run of bytes, to be sent
   or received in place; NULL when they do not, or there are none. */
static char *run_of(const void *buf, int count, MPI_Datatype t)
{
    if (count <= 0 || t->size == 0 || t->nblocks != 1 || !mp_type_contig(t, count))
        return NULL;
    return (char *)buf + t->blocks[0].disp;
}

static void unpack_all(const void *p, void *buf, int count, MPI_Datatype t)
{
    mp_unpack(p, mp_type_bytes(t, count), buf, count, t);
}

/* The address of element i of an array of t. */
static void *elem(const void *buf, MPI_Aint i, MPI_Datatype t)
{
    return (char *)buf + i * t->extent;
}

static int check_comm(MPI_Comm comm, const char *fn)
{
    if (!mp_ready())
        return mp_err(MPI_COMM_NULL, MPI_ERR_OTHER, fn);
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
    mp_coll_begin(comm);
    return MPI_SUCCESS;
}

static int check_root(MPI_Comm comm, int root)
{
    return root < 0 || root >= comm->size ? MPI_ERR_ROOT : MPI_SUCCESS;
}

/* count and type of a buffer the call will use (not MPI_IN_PLACE). */
static int check_data(const void *buf, int count, MPI_Datatype t)
{
    return buf == MPI_IN_PLACE ? MPI_SUCCESS : mp_check_buf(buf, count, t);
}

static int check_counts(MPI_Comm comm, const int *counts, const int *displs,
                        MPI_Datatype t)
{
    if (!counts || !displs)
        return MPI_ERR_ARG;
    if (!mp_type_ok(t))
        return MPI_ERR_TYPE;
    for (int i = 0; i < comm->size; i++)
        if (counts[i] < 0)
            return MPI_ERR_COUNT;
    return MPI_SUCCESS;
}

/* ---- byte-level algorithms ---- */

static int barrier(MPI_Comm comm)
{
    int n = comm->size, r = comm->rank, rc = MPI_SUCCESS;
    char b = 0;
    for (int k = 0, d = 1; d < n && !rc; k++, d <<= 1)
        rc = mp_coll_sendrecv(comm, (r + d) % n, &b, 0, (r - d + n) % n, &b, 0,
                              T_BARRIER + k);
    return rc;
}

static int bcast_binomial(MPI_Comm comm, void *buf, size_t bytes, int root, int tag)
{
    int n = comm->size, rel = (comm->rank - root + n) % n, mask = 1, rc = MPI_SUCCESS;
    for (; mask < n; mask <<= 1)
        if (rel & mask) {
            rc = mp_coll_recv(comm, (rel - mask + root) % n, tag, buf, bytes);
            break;
        }
    for (mask >>= 1; mask > 0 && !rc; mask >>= 1)
        if (rel + mask < n)
            rc = mp_coll_send(comm, (rel + mask + root) % n, tag, buf, bytes);
    return rc;
}

/*
 * van de Geijn's broadcast: the message is cut into n pieces (piece_of),
 * piece i belonging to relative rank i (rank - root); the root sends each rank its piece, then the pieces go round the ring
 * of relative ranks, each rank passing on at step s the piece it got at
 * step s - 1 (its own at step 0), the root's first. The root receives
 * none and the last rank passes none on. The root sends (n - 1) / n of
 * the message twice over, where a binomial tree sends all of it
 * ceil(log2 n) times; n - 1 more steps.
 */
typedef struct piece {
    char *at;
    size_t len;
} piece;

/* Piece i of the n of bytes at buf: [bytes i / n, bytes (i + 1) / n). */
static piece piece_of(char *buf, size_t bytes, int n, int i)
{
    size_t q = bytes / (size_t)n, r = bytes % (size_t)n; /* bytes i / n, exactly */
    size_t lo = q * (size_t)i + r * (size_t)i / (size_t)n;
    size_t hi = q * (size_t)(i + 1) + r * (size_t)(i + 1) / (size_t)n;
    return (piece){buf + lo, hi - lo};
}

static int bcast_scatter_ring(MPI_Comm comm, char *buf, size_t bytes, int root, int tag)
{
    int n = comm->size, rel = (comm->rank - root + n) % n, rc = MPI_SUCCESS;
    for (int i = 1; rel == 0 && i < n && !rc; i++) {
        piece p = piece_of(buf, bytes, n, i);
        rc = mp_coll_send(comm, (i + root) % n, tag, p.at, p.len);
    }
    if (rel != 0) {
        piece p = piece_of(buf, bytes, n, rel);
        rc = mp_coll_recv(comm, root, tag, p.at, p.len);
    }
    int right = (comm->rank + 1) % n, left = (comm->rank - 1 + n) % n;
    for (int s = 0; s < n - 1 && !rc; s++) {
        piece out = piece_of(buf, bytes, n, (rel - s + n) % n);
        piece in = piece_of(buf, bytes, n, (rel - s - 1 + n) % n);
        if (rel == 0)
            rc = mp_coll_send(comm, right, tag, out.at, out.len);
        else if (rel == n - 1)
            rc = mp_coll_recv(comm, left, tag, in.at, in.len);
        else
            rc = mp_coll_sendrecv(comm, right, out.at, out.len, left, in.at, in.len, tag);
    }
    return rc;
}

/* Broadcast of bytes at buf: a binomial tree, or on 4 or more ranks from
   FLIT_MPI_BCAST_SCATTER_MIN bytes van de Geijn's (on 3 the root sends
   4/3 of the message where the tree sends it twice, and measured slower). */
static int bcast_bytes(MPI_Comm comm, void *buf, size_t bytes, int root, int tag)
{
    if (comm->size >= 4 && bytes >= mp_bcast_scatter_min)
        return bcast_scatter_ring(comm, buf, bytes, root, tag);
    return bcast_binomial(comm, buf, bytes, root, tag);
}

/*
 * Binomial reduction of the packed *acc (count of t) towards rank `to`:
 * rank rel takes in turn the partial results of rel + 1, rel + 2, rel + 4
 * ... (each covering the ranks after the ones it holds), so combining acc
 * op theirs keeps rank order. On return *acc holds the result at `to`
 * (*acc and *tmp may have been swapped).
 */
static int reduce_to(MPI_Comm comm, void **acc, void **tmp, int count, MPI_Datatype t,
                     MPI_Op op, int to, int tag)
{
    int n = comm->size, rel = (comm->rank - to + n) % n, rc = MPI_SUCCESS;
    size_t bytes = mp_type_bytes(t, count);
    for (int mask = 1; mask < n && !rc; mask <<= 1) {
        if (rel & mask)
            return mp_coll_send(comm, (rel - mask + to) % n, tag, *acc, bytes);
        if (rel + mask >= n)
            continue;
        rc = mp_coll_recv(comm, (rel + mask + to) % n, tag, *tmp, bytes);
        if (!rc)
            rc = mp_op_apply(op, *acc, *tmp, count, t); /* tmp = acc op tmp */
        void *s = *acc;
        *acc = *tmp;
        *tmp = s;
    }
    return rc;
}

/* The n vectors of a reduction, this rank's (the self-th) in *acc and the
   others' in `others` in rank order, reduced in rank order into *acc:
   v0 op (v1 op (... op vn-1)), so any op will do (*acc and *tmp are
   swapped). */
static int reduce_in_order(void **acc, void **tmp, const char *others, int n, int self,
                           int count, MPI_Datatype t, MPI_Op op)
{
    size_t bytes = mp_type_bytes(t, count);
    int rc = MPI_SUCCESS;
    for (int i = n - 1; !rc && i >= 0; i--) { /* *tmp = v(i) op *tmp */
        const char *v =
            i == self ? *acc : others + bytes * (size_t)(i < self ? i : i - 1);
        if (i == n - 1)
            memcpy(*tmp, v, bytes);
        else
            rc = mp_op_apply(op, v, *tmp, count, t);
    }
    if (!rc) {
        void *sw = *acc;
        *acc = *tmp;
        *tmp = sw;
    }
    return rc;
}

/*
 * Linear reduction of the packed *acc to root: every other rank sends the
 * root its vector and is done; the root takes them all at once and
 * reduces them in rank order, v0 op (v1 op (... op vn-1)), so any op
 * will do. No rank waits for another but the root, where a tree's inner
 * ranks wait for their subtrees: below FLIT_MPI_REDUCE_TREE_MIN bytes.
 * On return *acc holds the result at the root (*acc and *tmp may have
 * been swapped).
 */
static int reduce_linear(MPI_Comm comm, void **acc, void **tmp, int count, MPI_Datatype t,
                         MPI_Op op, int root)
{
    int n = comm->size, rc = MPI_SUCCESS;
    size_t bytes = mp_type_bytes(t, count);
    if (comm->rank != root)
        return mp_coll_send(comm, root, T_REDUCE, *acc, bytes);
    if (n == 1)
        return MPI_SUCCESS;
    char *all = alloc_bytes(bytes * (size_t)(n - 1));
    mp_part *in = calloc((size_t)n - 1, sizeof *in);
    if (!all || !in)
        rc = MPI_ERR_NO_MEM;
    for (int i = 0, m = 0; !rc && i < n; i++)
        if (i != root) {
            in[m] = (mp_part){i, T_REDUCE, all + bytes * (size_t)m, bytes};
            m++;
        }
    if (!rc)
        rc = mp_coll_exchange(comm, n - 1, in, 0, NULL);
    if (!rc)
        rc = reduce_in_order(acc, tmp, all, n, root, count, t, op);
    free(in);
    mp_scratch_free(all);
    return rc;
}

/* Whether a reduction of `bytes` to a root goes linear: below
   FLIT_MPI_REDUCE_TREE_MIN on 4 to 32 ranks (on 3 the tree is the same
   two messages; beyond 32, unmeasured, the root's n - 1 receptions and
   reductions in a row would outgrow a tree's log2 n levels). */
static int reduces_linear(MPI_Comm comm, size_t bytes)
{
    return comm->size >= 4 && comm->size <= 32 && bytes < mp_reduce_tree_min;
}

/* Reduction of acc to root: towards the root itself when the op commutes
   (relative ranks change the order), else to rank 0 and sent on. */
static int reduce_bytes(MPI_Comm comm, void **acc, void **tmp, int count, MPI_Datatype t,
                        MPI_Op op, int root)
{
    int to = op->commute ? root : 0;
    int rc = reduce_to(comm, acc, tmp, count, t, op, to, T_REDUCE);
    if (rc || to == root)
        return rc;
    size_t bytes = mp_type_bytes(t, count);
    if (comm->rank == 0)
        return mp_coll_send(comm, root, T_ROOT, *acc, bytes);
    if (comm->rank == root)
        return mp_coll_recv(comm, 0, T_ROOT, *acc, bytes);
    return MPI_SUCCESS;
}

/*
 * The ranks an allreduce works among: the largest power of two p <= n.
 * With rem = n - p, ranks 2i and 2i + 1 (i < rem) fold first: the even
 * one hands its vector to the odd one, which stands for both and hands
 * the result back at the end (MPICH's way: two steps more than on p
 * ranks, where a reduction then a broadcast took 2 ceil(log2 n)). Virtual
 * ranks keep the order of the ranks they stand for, so a non-commutative
 * op reduces in rank order.
 */
typedef struct fold {
    int p, rem;
    int v; /* this rank's virtual rank; -1: it handed its vector over */
} fold;

static fold fold_of(MPI_Comm comm)
{
    int n = comm->size, r = comm->rank, p = 1;
    while (p <= n / 2)
        p *= 2;
    fold f = {p, n - p, -1};
    if (r >= 2 * f.rem)
        f.v = r - f.rem;
    else if (r % 2)
        f.v = r / 2;
    return f;
}

/* The rank virtual rank v stands for. */
static int real_of(const fold *f, int v)
{
    return v < f->rem ? 2 * v + 1 : v + f->rem;
}

/* The first step, for a rank that folds: an even one sends `in` and is
   done until fold_back; an odd one makes acc = (its partner's) op in. */
static int fold_in(MPI_Comm comm, const fold *f, const void *in, void *acc, void *tmp,
                   int count, MPI_Datatype t, MPI_Op op)
{
    int r = comm->rank;
    size_t bytes = mp_type_bytes(t, count);
    if (r >= 2 * f->rem)
        return MPI_SUCCESS;
    if (f->v < 0)
        return mp_coll_send(comm, r + 1, T_ALLREDUCE, in, bytes);
    if (in != acc)
        memcpy(acc, in, bytes);
    int rc = mp_coll_recv(comm, r - 1, T_ALLREDUCE, tmp, bytes);
    return rc ? rc : mp_op_apply(op, tmp, acc, count, t); /* acc = tmp op acc */
}

/* The last step: the odd rank of a pair hands the result to the even. */
static int fold_back(MPI_Comm comm, const fold *f, void *acc, size_t bytes)
{
    int r = comm->rank;
    if (r >= 2 * f->rem)
        return MPI_SUCCESS;
    if (f->v < 0)
        return mp_coll_recv(comm, r + 1, T_ALLREDUCE, acc, bytes);
    return mp_coll_send(comm, r - 1, T_ALLREDUCE, acc, bytes);
}

/* Whether a reduction of count t with op halves: it needs a commutative
   op, an element per block, and blocks of `min` bytes (halving's extra
   log2 p steps cost more than the bytes they save below it):
   FLIT_MPI_ALLREDUCE_HALVING_MIN, FLIT_MPI_REDUCE_HALVING_MIN. */
static int halves(MPI_Comm comm, int count, MPI_Datatype t, MPI_Op op, size_t min)
{
    int p = fold_of(comm).p;
    return p > 1 && op->commute && count >= p &&
           mp_type_bytes(t, count) / (size_t)p >= min;
}

/*
 * Recursive halving (the first half of Rabenseifner's allreduce) among
 * the p virtual ranks of f, with a commutative op. The vector is cut into
 * p blocks, virtual rank i's being elements [edge[i], edge[i + 1]). At
 * each step a rank holds the blocks of an aligned run of 2m virtual
 * ranks: it sends its peer (v ^ m) the half of them the peer is in and
 * reduces the half of its own with the peer's; after log2 p steps acc
 * holds this rank's block reduced over every rank. A rank sends (p - 1) /
 * p of the vector and reduces as much, where a reduction tree moves all
 * of it each level. This rank's data is in `in` (acc itself, or another
 * buffer: then only the half kept at the first step is copied to acc);
 * acc and tmp hold the whole vector (packed). p > 1.
 */
static int halve(MPI_Comm comm, const fold *f, const char *in, char *acc, char *tmp,
                 const int *edge, MPI_Datatype t, MPI_Op op, int tag)
{
    int p = f->p, v = f->v, rc = MPI_SUCCESS;
    size_t e = mp_type_bytes(t, 1);
    for (int m = p >> 1; m > 0 && !rc; m >>= 1) {
        int peer = v ^ m, keep = v & ~(m - 1), give = peer & ~(m - 1);
        const char *from = m == p >> 1 ? in : acc;
        size_t k0 = (size_t)edge[keep] * e, k1 = (size_t)edge[keep + m] * e;
        size_t g0 = (size_t)edge[give] * e, g1 = (size_t)edge[give + m] * e;
        int to = real_of(f, peer);
        rc = mp_coll_sendrecv(comm, to, from + g0, g1 - g0, to, tmp + k0, k1 - k0, tag);
        if (!rc && from != acc)
            memcpy(acc + k0, from + k0, k1 - k0);
        if (!rc && k1 > k0)
            rc = mp_op_apply(op, tmp + k0, acc + k0, edge[keep + m] - edge[keep], t);
    }
    return rc;
}

/* Recursive doubling of halve's blocks (its steps in reverse): each rank
   sends the run of blocks it holds and takes its peer's, until every
   virtual rank holds them all. */
static int double_up(MPI_Comm comm, const fold *f, char *acc, const int *edge,
                     MPI_Datatype t, int tag)
{
    int p = f->p, v = f->v, rc = MPI_SUCCESS;
    size_t e = mp_type_bytes(t, 1);
    for (int m = 1; m < p && !rc; m <<= 1) {
        int peer = v ^ m, mine = v & ~(m - 1), theirs = peer & ~(m - 1);
        size_t a0 = (size_t)edge[mine] * e, a1 = (size_t)edge[mine + m] * e;
        size_t b0 = (size_t)edge[theirs] * e, b1 = (size_t)edge[theirs + m] * e;
        int to = real_of(f, peer);
        rc = mp_coll_sendrecv(comm, to, acc + a0, a1 - a0, to, acc + b0, b1 - b0, tag);
    }
    return rc;
}

/* The edges of p blocks of about count / p elements each; NULL without
   memory. */
static int *even_edges(int count, int p)
{
    int *edge = malloc((size_t)(p + 1) * sizeof *edge);
    for (int i = 0; edge && i <= p; i++)
        edge[i] = (int)((long long)count * i / p);
    return edge;
}

/* Rabenseifner's allreduce: fold, halve, double up, fold back, on p
   blocks of about count / p elements each (see halves()). */
static int allreduce_halving(MPI_Comm comm, const char *in, char *acc, char *tmp,
                             int count, MPI_Datatype t, MPI_Op op)
{
    fold f = fold_of(comm);
    int rc = fold_in(comm, &f, in, acc, tmp, count, t, op);
    if (!rc && f.v >= 0) {
        int *edge = even_edges(count, f.p);
        if (!edge)
            return MPI_ERR_NO_MEM;
        rc = halve(comm, &f, comm->rank < 2 * f.rem ? acc : in, acc, tmp, edge, t, op,
                   T_ALLREDUCE);
        if (!rc)
            rc = double_up(comm, &f, acc, edge, t, T_ALLREDUCE);
        free(edge);
    }
    return rc ? rc : fold_back(comm, &f, acc, mp_type_bytes(t, count));
}

/*
 * Rabenseifner's reduce: fold and halve as the allreduce does, then each
 * of the p virtual ranks sends its reduced block to the root, which
 * receives p - 1 of them (p if it folded). A rank sends about twice the
 * vector in all where a binomial tree sends it once per level, but no
 * rank reduces more than the vector once. acc holds this rank's packed
 * data and, at the root, the result; tmp the vector's size.
 */
static int reduce_halving(MPI_Comm comm, char *acc, char *tmp, int count, MPI_Datatype t,
                          MPI_Op op, int root)
{
    fold f = fold_of(comm);
    int *edge = even_edges(count, f.p);
    if (!edge)
        return MPI_ERR_NO_MEM;
    size_t e = mp_type_bytes(t, 1);
    int rc = fold_in(comm, &f, acc, acc, tmp, count, t, op);
    if (!rc && f.v >= 0)
        rc = halve(comm, &f, acc, acc, tmp, edge, t, op, T_REDUCE);
    if (!rc && f.v >= 0 && comm->rank != root)
        rc = mp_coll_send(comm, root, T_ROOT, acc + (size_t)edge[f.v] * e,
                          (size_t)(edge[f.v + 1] - edge[f.v]) * e);
    for (int w = 0; !rc && comm->rank == root && w < f.p; w++)
        if (w != f.v)
            rc = mp_coll_recv(comm, real_of(&f, w), T_ROOT, acc + (size_t)edge[w] * e,
                              (size_t)(edge[w + 1] - edge[w]) * e);
    free(edge);
    return rc;
}

/* Whether an allreduce of `bytes` goes by allreduce_posted: below
   FLIT_MPI_ALLREDUCE_DOUBLING_MIN on up to 8 ranks where recursive
   doubling would take 3 rounds or more (3, 5 to 8 ranks; on 4 its 2
   rounds were faster). */
static int posts_all(MPI_Comm comm, size_t bytes)
{
    fold f = fold_of(comm);
    int rounds = f.rem ? 2 : 0;
    for (int p = f.p; p > 1; p >>= 1)
        rounds++;
    return comm->size <= 8 && rounds >= 3 && bytes < mp_allreduce_doubling_min;
}

/*
 * Allreduce of a small packed *acc on a few ranks: every rank sends every
 * other its vector, all at once, and reduces the n vectors itself in rank
 * order, v0 op (v1 op (... op vn-1)), so any op will do. One round of
 * messages, no rank waiting for another's partial result, where recursive
 * doubling takes log2 p rounds (2 more when some fold), each waiting for
 * the last (posts_all says when). *acc and *tmp may be swapped.
 */
static int allreduce_posted(MPI_Comm comm, void **acc, void **tmp, int count,
                            MPI_Datatype t, MPI_Op op)
{
    int n = comm->size, r = comm->rank, rc = MPI_SUCCESS;
    size_t bytes = mp_type_bytes(t, count);
    char *all = alloc_bytes(bytes * (size_t)(n - 1)); /* the others' vectors */
    if (!all)
        return MPI_ERR_NO_MEM;
    mp_part in[8], out[8];
    for (int s = 1; s < n; s++) {
        int to = (r + s) % n, from = (r - s + n) % n;
        out[s - 1] = (mp_part){to, T_ALLREDUCE, *acc, bytes};
        in[s - 1] = (mp_part){from, T_ALLREDUCE,
                              all + bytes * (size_t)(from < r ? from : from - 1), bytes};
    }
    rc = mp_coll_exchange(comm, n - 1, in, n - 1, out);
    if (!rc)
        rc = reduce_in_order(acc, tmp, all, n, r, count, t, op);
    mp_scratch_free(all);
    return rc;
}

/* Allreduce of the packed *acc: halving where it halves, else recursive
   doubling among the folded ranks (*acc and *tmp may be swapped). */
static int allreduce_bytes(MPI_Comm comm, void **acc, void **tmp, int count,
                           MPI_Datatype t, MPI_Op op)
{
    if (halves(comm, count, t, op, mp_allreduce_halving_min))
        return allreduce_halving(comm, *acc, *acc, *tmp, count, t, op);
    if (posts_all(comm, mp_type_bytes(t, count)))
        return allreduce_posted(comm, acc, tmp, count, t, op);
    fold f = fold_of(comm);
    size_t bytes = mp_type_bytes(t, count);
    int rc = fold_in(comm, &f, *acc, *acc, *tmp, count, t, op);
    for (int mask = 1; mask < f.p && f.v >= 0 && !rc; mask <<= 1) {
        int peer = f.v ^ mask, to = real_of(&f, peer);
        rc = mp_coll_sendrecv(comm, to, *acc, bytes, to, *tmp, bytes, T_ALLREDUCE);
        if (rc)
            break;
        if (peer < f.v) { /* theirs covers the lower ranks: acc = tmp op acc */
            rc = mp_op_apply(op, *tmp, *acc, count, t);
        } else { /* acc = acc op tmp */
            rc = mp_op_apply(op, *acc, *tmp, count, t);
            void *s = *acc;
            *acc = *tmp;
            *tmp = s;
        }
    }
    return rc ? rc : fold_back(comm, &f, *acc, bytes);
}

/* ---- the calls ---- */

#define FAIL(comm, rc, fn)                                                               \
    do {                                                                                 \
        if ((rc) != MPI_SUCCESS)                                                         \
            return mp_err(comm, (rc), fn);                                               \
    } while (0)

int MPI_Barrier(MPI_Comm comm)
{
    MP_LOCKED(PMPI_Barrier, (comm));
    int rc = check_comm(comm, "MPI_Barrier");
    if (rc)
        return rc;
    return mp_err(comm, barrier(comm), "MPI_Barrier");
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Bcast, (buffer, count, datatype, root, comm));
    const char *fn = "MPI_Bcast";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    rc = check_root(comm, root);
    if (!rc)
        rc = mp_check_buf(buffer, count, datatype);
    FAIL(comm, rc, fn);
    size_t bytes = mp_type_bytes(datatype, count);
    char *run = run_of(buffer, count, datatype);
    if (run || bytes == 0)
        return mp_err(comm, bcast_bytes(comm, run ? run : buffer, bytes, root, T_BCAST),
                      fn);
    void *p =
        comm->rank == root ? packed_copy(buffer, count, datatype) : alloc_bytes(bytes);
    FAIL(comm, p ? MPI_SUCCESS : MPI_ERR_NO_MEM, fn);
    rc = bcast_bytes(comm, p, bytes, root, T_BCAST);
    if (!rc && comm->rank != root)
        unpack_all(p, buffer, count, datatype);
    mp_scratch_free(p);
    return mp_err(comm, rc, fn);
}

/* The two buffers of a reduction: acc holds this rank's data. */
static int reduce_start(const void *in, int count, MPI_Datatype t, void **acc, void **tmp)
{
    *acc = packed_copy(in, count, t);
    *tmp = alloc_bytes(mp_type_bytes(t, count));
    if (*acc && *tmp)
        return MPI_SUCCESS;
    mp_scratch_free(*acc);
    mp_scratch_free(*tmp);
    return MPI_ERR_NO_MEM;
}

static int check_reduce(MPI_Comm comm, const void *sendbuf, void *recvbuf, int count,
                        MPI_Datatype t, MPI_Op op, int need_recv)
{
    int rc = check_data(sendbuf, count, t);
    if (!rc && need_recv)
        rc = mp_check_buf(recvbuf, count, t);
    if (!rc)
        rc = mp_op_ok(op, t);
    (void)comm;
    return rc;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
               MPI_Op op, int root, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Reduce, (sendbuf, recvbuf, count, datatype, op, root, comm));
    const char *fn = "MPI_Reduce";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    int at_root = comm->rank == root;
    rc = check_root(comm, root);
    if (!rc)
        rc = check_reduce(comm, sendbuf, recvbuf, count, datatype, op, at_root);
    if (!rc && sendbuf == MPI_IN_PLACE && !at_root)
        rc = MPI_ERR_BUFFER;
    FAIL(comm, rc, fn);
    void *acc, *tmp;
    rc = reduce_start(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, datatype, &acc,
                      &tmp);
    FAIL(comm, rc, fn);
    if (halves(comm, count, datatype, op, mp_reduce_halving_min))
        rc = reduce_halving(comm, acc, tmp, count, datatype, op, root);
    else if (reduces_linear(comm, mp_type_bytes(datatype, count)))
        rc = reduce_linear(comm, &acc, &tmp, count, datatype, op, root);
    else
        rc = reduce_bytes(comm, &acc, &tmp, count, datatype, op, root);
    if (!rc && at_root)
        unpack_all(acc, recvbuf, count, datatype);
    mp_scratch_free(acc);
    mp_scratch_free(tmp);
    return mp_err(comm, rc, fn);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Allreduce, (sendbuf, recvbuf, count, datatype, op, comm));
    const char *fn = "MPI_Allreduce";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    rc = check_reduce(comm, sendbuf, recvbuf, count, datatype, op, 1);
    FAIL(comm, rc, fn);
    void *acc, *tmp;
    if (halves(comm, count, datatype, op, mp_allreduce_halving_min) &&
        (acc = run_of(recvbuf, count, datatype))) {
        /* reduced in the program's buffer: no packing, no unpacking */
        const char *in = sendbuf == MPI_IN_PLACE ? acc : run_of(sendbuf, count, datatype);
        tmp = alloc_bytes(mp_type_bytes(datatype, count));
        FAIL(comm, tmp ? MPI_SUCCESS : MPI_ERR_NO_MEM, fn);
        rc = allreduce_halving(comm, in, acc, tmp, count, datatype, op);
        mp_scratch_free(tmp);
        return mp_err(comm, rc, fn);
    }
    rc = reduce_start(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, datatype, &acc,
                      &tmp);
    FAIL(comm, rc, fn);
    rc = allreduce_bytes(comm, &acc, &tmp, count, datatype, op);
    if (!rc)
        unpack_all(acc, recvbuf, count, datatype);
    mp_scratch_free(acc);
    mp_scratch_free(tmp);
    return mp_err(comm, rc, fn);
}

/* ---- per-rank arrays and blocks ---- */

/*
 * The per-rank arrays a regular collective is turned into (its v form):
 * on the caller's stack up to ARRAYS_STACK ranks, else from the heap. A
 * 2-rank MPI_Alltoall made eight of them on the heap, each malloc and
 * free costing about as much as the exchange's one message.
 */
#define ARRAYS_STACK 32

typedef struct regular {
    int *counts, *displs;
    int stack[2 * ARRAYS_STACK];
} regular;

/* n counts of count and their displacements in *g; NULL without memory. */
static int *regular_make(regular *g, int n, int count)
{
    if (n <= ARRAYS_STACK) {
        g->counts = g->stack;
        g->displs = g->stack + ARRAYS_STACK;
    } else {
        g->counts = malloc((size_t)n * sizeof *g->counts);
        g->displs = malloc((size_t)n * sizeof *g->displs);
        if (!g->counts || !g->displs) {
            free(g->counts);
            free(g->displs);
            return NULL;
        }
    }
    for (int i = 0; i < n; i++)
        g->counts[i] = count, g->displs[i] = i * count;
    return g->counts;
}

static void regular_free(regular *g)
{
    if (g->counts != g->stack) {
        free(g->counts);
        free(g->displs);
    }
}

/* One side of an exchange: per peer a count, a byte displacement and a
   type (Alltoallw's form, to which Alltoall(v) are converted). */
typedef struct side {
    const int *counts;
    MPI_Aint *displs;
    MPI_Datatype *types;
    MPI_Aint displs_stack[ARRAYS_STACK]; /* up to ARRAYS_STACK ranks */
    MPI_Datatype types_stack[ARRAYS_STACK];
} side;

/* The block for peer i of a side: where it lies, its bytes, and whether
   it is one run of bytes there (sent from or received into the program's
   buffer) or was packed into *kept (NULL without memory; for a receive,
   room to be unpacked from after). */
static void *block_out(const char *buf, const side *sd, int i, size_t *bytes, void **kept)
{
    const char *at = buf + sd->displs[i];
    *bytes = mp_type_bytes(sd->types[i], sd->counts[i]);
    void *run = run_of(at, sd->counts[i], sd->types[i]);
    *kept = run ? NULL : packed_copy(at, sd->counts[i], sd->types[i]);
    return run ? run : *kept;
}

static void *block_in(char *buf, const side *sd, int i, size_t *bytes, void **kept)
{
    *bytes = mp_type_bytes(sd->types[i], sd->counts[i]);
    void *run = run_of(buf + sd->displs[i], sd->counts[i], sd->types[i]);
    *kept = run ? NULL : alloc_bytes(*bytes);
    return run ? run : *kept;
}

/* A received block that was packed, unpacked into its place. */
static void block_done(char *buf, const side *sd, int i, void *kept, size_t bytes)
{
    if (kept)
        mp_unpack(kept, bytes, buf + sd->displs[i], sd->counts[i], sd->types[i]);
}

/* A side of n peers: displacements in bytes (displs[i] * scale, or displs[i]
   when types is given), the one type t for all unless types. */
static int side_make(side *sd, int n, const int *counts, const int *displs,
                     MPI_Datatype t, const MPI_Datatype *types)
{
    sd->counts = counts;
    if (n <= ARRAYS_STACK) {
        sd->displs = sd->displs_stack;
        sd->types = sd->types_stack;
    } else {
        sd->displs = malloc((size_t)n * sizeof *sd->displs);
        sd->types = malloc((size_t)n * sizeof *sd->types);
        if (!sd->displs || !sd->types)
            return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < n; i++) {
        sd->types[i] = types ? types[i] : t;
        sd->displs[i] = types ? displs[i] : (MPI_Aint)displs[i] * t->extent;
    }
    return MPI_SUCCESS;
}

static void side_free(side *sd)
{
    if (sd->displs != sd->displs_stack) {
        free(sd->displs);
        free(sd->types);
    }
}

static char no_bytes; /* where an empty block is */

/* count elements of st at s copied to rcount of rt at d, the same bytes
   (else MPI_ERR_TRUNCATE): memmove between runs of bytes (in place, they
   may overlap), else through a packed copy. */
static int copy_block(const void *s, int scount, MPI_Datatype st, void *d, int rcount,
                      MPI_Datatype rt)
{
    size_t bytes = mp_type_bytes(st, scount);
    if (bytes != mp_type_bytes(rt, rcount))
        return MPI_ERR_TRUNCATE;
    char *from = run_of(s, scount, st), *to = run_of(d, rcount, rt);
    if (from && to) {
        memmove(to, from, bytes);
        return MPI_SUCCESS;
    }
    void *p = packed_copy(s, scount, st);
    if (!p)
        return MPI_ERR_NO_MEM;
    unpack_all(p, d, rcount, rt);
    mp_scratch_free(p);
    return MPI_SUCCESS;
}

/* count of t at buf sent as one message: from the program's buffer when
   it is one run of bytes there, else packed. */
static int send_block(MPI_Comm comm, int to, int tag, const void *buf, int count,
                      MPI_Datatype t)
{
    const char *run = run_of(buf, count, t);
    void *p = run ? NULL : packed_copy(buf, count, t);
    if (!run && !p)
        return MPI_ERR_NO_MEM;
    int rc = mp_coll_send(comm, to, tag, run ? run : p, mp_type_bytes(t, count));
    mp_scratch_free(p);
    return rc;
}

/* One message received as count of t at buf: into the program's buffer
   when it is one run of bytes there, else unpacked. */
static int recv_block(MPI_Comm comm, int from, int tag, void *buf, int count,
                      MPI_Datatype t)
{
    size_t bytes = mp_type_bytes(t, count);
    char *run = run_of(buf, count, t);
    void *p = run ? NULL : alloc_bytes(bytes);
    if (!run && !p)
        return MPI_ERR_NO_MEM;
    int rc = mp_coll_recv(comm, from, tag, run ? run : p, bytes);
    if (!rc && p)
        unpack_all(p, buf, count, t);
    mp_scratch_free(p);
    return rc;
}

/* ---- gather and scatter ---- */

/* The root's side of a linear gatherv (in: a receive for every other
   rank's block, posted at once, each into its place when it is one run
   of bytes there, else unpacked after) or scatterv (out: every other
   rank's block sent, from the program's buffer when it is one run). */
static int root_linear(MPI_Comm comm, int root, char *buf, const side *sd, int tag,
                       int in)
{
    int n = comm->size, m = 0, rc = MPI_SUCCESS;
    mp_part part_stack[ARRAYS_STACK] = {{0}};
    void *kept_stack[ARRAYS_STACK] = {0};
    mp_part *part = n <= ARRAYS_STACK ? part_stack : calloc((size_t)n, sizeof *part);
    void **kept = n <= ARRAYS_STACK ? kept_stack : calloc((size_t)n, sizeof *kept);
    if (!part || !kept)
        rc = MPI_ERR_NO_MEM;
    for (int i = 0; i < n && !rc; i++) {
        if (i == root)
            continue;
        part[m] = (mp_part){i, tag, NULL, 0};
        part[m].buf = in ? block_in(buf, sd, i, &part[m].bytes, &kept[i])
                         : block_out(buf, sd, i, &part[m].bytes, &kept[i]);
        if (!part[m++].buf)
            rc = MPI_ERR_NO_MEM;
    }
    if (!rc)
        rc = in ? mp_coll_exchange(comm, m, part, 0, NULL)
                : mp_coll_exchange(comm, 0, NULL, m, part);
    for (int i = 0; in && !rc && i < n; i++)
        block_done(buf, sd, i, kept[i], mp_type_bytes(sd->types[i], sd->counts[i]));
    for (int i = 0; kept && i < n; i++)
        mp_scratch_free(kept[i]);
    if (kept != kept_stack)
        free(kept);
    if (part != part_stack)
        free(part);
    return rc;
}

/* Gatherv's work, linear (counts/displs in elements of rtype, the
   root's); a block sent is sent from the program's buffer when it is one
   run of bytes there. */
static int gatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
                   const int *rcounts, const int *displs, MPI_Datatype rtype, int root,
                   MPI_Comm comm)
{
    if (comm->rank != root)
        return send_block(comm, root, T_GATHER, sendbuf, scount, stype);
    side rcv;
    int rc = side_make(&rcv, comm->size, rcounts, displs, rtype, NULL);
    if (!rc)
        rc = root_linear(comm, root, recvbuf, &rcv, T_GATHER, 1);
    if (!rc && sendbuf != MPI_IN_PLACE)
        rc = copy_block(sendbuf, scount, stype, (char *)recvbuf + rcv.displs[root],
                        rcounts[root], rtype);
    side_free(&rcv);
    return rc;
}

/* Scatterv's work, linear (gatherv's mirror); a block received goes
   straight into place when it is one run of bytes there. */
static int scatterv(const void *sendbuf, const int *scounts, const int *displs,
                    MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype,
                    int root, MPI_Comm comm)
{
    if (comm->rank != root)
        return recv_block(comm, root, T_SCATTER, recvbuf, rcount, rtype);
    side snd;
    int rc = side_make(&snd, comm->size, scounts, displs, stype, NULL);
    if (!rc)
        rc = root_linear(comm, root, (char *)sendbuf, &snd, T_SCATTER, 0);
    if (!rc && recvbuf != MPI_IN_PLACE)
        rc = copy_block((const char *)sendbuf + snd.displs[root], scounts[root], stype,
                        recvbuf, rcount, rtype);
    side_free(&snd);
    return rc;
}

/* Linear gather of regular blocks: every receive posted at once, each
   into its place, with no per-rank arrays but the receives' where the
   blocks are runs of bytes in the receive buffer and the ranks few (else
   by gatherv's arrays, each block unpacked after). */
static int gather_linear(const void *sendbuf, int scount, MPI_Datatype stype,
                         void *recvbuf, int rcount, MPI_Datatype rtype, int root,
                         MPI_Comm comm)
{
    int n = comm->size, m = 0, rc;
    if (comm->rank != root)
        return send_block(comm, root, T_GATHER, sendbuf, scount, stype);
    if (n - 1 > ARRAYS_STACK || (rcount > 0 && !run_of(recvbuf, rcount, rtype))) {
        regular g;
        int *counts = regular_make(&g, n, rcount);
        if (!counts)
            return MPI_ERR_NO_MEM;
        rc =
            gatherv(sendbuf, scount, stype, recvbuf, counts, g.displs, rtype, root, comm);
        regular_free(&g);
        return rc;
    }
    mp_part part[ARRAYS_STACK];
    size_t bytes = mp_type_bytes(rtype, rcount);
    for (int i = 0; i < n; i++)
        if (i != root) {
            char *at = run_of(elem(recvbuf, (MPI_Aint)i * rcount, rtype), rcount, rtype);
            part[m++] = (mp_part){i, T_GATHER, at ? at : &no_bytes, bytes};
        }
    rc = mp_coll_exchange(comm, m, part, 0, NULL);
    if (!rc && sendbuf != MPI_IN_PLACE)
        rc = copy_block(sendbuf, scount, stype,
                        elem(recvbuf, (MPI_Aint)root * rcount, rtype), rcount, rtype);
    return rc;
}

/*
 * Binomial gather of blocks of `bytes` (MPI_Gather below
 * FLIT_MPI_GATHER_LINEAR_MIN bytes a block, 3 or more ranks; by default
 * never: linear, its senders independent, was faster at every size
 * measured, on 2 cores): the rank
 * rel ranks after the root holds the blocks of its subtree, rel to
 * rel + 2^k - 1 (2^k its lowest set bit; the root's, all), in that order,
 * and hands them to rel - 2^k in one message. The root takes
 * ceil(log2 n) messages, where gatherv takes n - 1 one after the other.
 */
static int gather_tree(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
                       int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int n = comm->size, rel = (comm->rank - root + n) % n, rc = MPI_SUCCESS;
    int in_place = rel == 0 && sendbuf == MPI_IN_PLACE;
    size_t bytes = rel ? mp_type_bytes(stype, scount) : mp_type_bytes(rtype, rcount);
    if (rel == 0 && !in_place && mp_type_bytes(stype, scount) != bytes)
        return MPI_ERR_TRUNCATE;
    int low = rel & -rel, span = rel && low < n - rel ? low : n - rel;
    char *tmp = alloc_bytes(bytes * (size_t)span);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    if (!in_place)
        mp_pack(sendbuf, scount, stype, tmp);
    for (int mask = 1, have = 1; mask < n && !rc; mask <<= 1) {
        if (rel & mask) {
            rc = mp_coll_send(comm, (rel - mask + root) % n, T_GATHER, tmp,
                              bytes * (size_t)have);
            break;
        }
        if (rel + mask >= n)
            continue;
        int k = n - rel - mask < mask ? n - rel - mask : mask;
        rc = mp_coll_recv(comm, (rel + mask + root) % n, T_GATHER,
                          tmp + bytes * (size_t)mask, bytes * (size_t)k);
        have = mask + k;
    }
    for (int j = in_place; !rc && rel == 0 && j < n; j++)
        unpack_all(tmp + bytes * (size_t)j,
                   elem(recvbuf, (MPI_Aint)((j + root) % n) * rcount, rtype), rcount,
                   rtype);
    mp_scratch_free(tmp);
    return rc;
}

/* Linear scatter of regular blocks: the root sends each rank its block
   (from the program's buffer when it is one run of bytes there), with no
   per-rank arrays: on 2 ranks a scatter is a one-way message, and its
   set-up was a third of its time. */
static int scatter_linear(const void *sendbuf, int scount, MPI_Datatype stype,
                          void *recvbuf, int rcount, MPI_Datatype rtype, int root,
                          MPI_Comm comm)
{
    if (comm->rank != root)
        return recv_block(comm, root, T_SCATTER, recvbuf, rcount, rtype);
    int rc = MPI_SUCCESS;
    for (int i = 0; i < comm->size && !rc; i++)
        if (i != root)
            rc = send_block(comm, i, T_SCATTER,
                            elem(sendbuf, (MPI_Aint)i * scount, stype), scount, stype);
    if (!rc && recvbuf != MPI_IN_PLACE)
        rc = copy_block(elem(sendbuf, (MPI_Aint)root * scount, stype), scount, stype,
                        recvbuf, rcount, rtype);
    return rc;
}

/* Binomial scatter (gather_tree reversed): the root packs the blocks
   from its own on, in rank order round the ranks; each rank takes its
   subtree's blocks from its parent in one message and hands each child
   rel + m (m = 2^(k-1) down to 1) the blocks of the child's subtree. */
static int scatter_tree(const void *sendbuf, int scount, MPI_Datatype stype,
                        void *recvbuf, int rcount, MPI_Datatype rtype, int root,
                        MPI_Comm comm)
{
    int n = comm->size, rel = (comm->rank - root + n) % n, rc = MPI_SUCCESS;
    int in_place = rel == 0 && recvbuf == MPI_IN_PLACE;
    size_t bytes = rel ? mp_type_bytes(rtype, rcount) : mp_type_bytes(stype, scount);
    if (rel == 0 && !in_place && mp_type_bytes(rtype, rcount) != bytes)
        return MPI_ERR_TRUNCATE;
    int low = 1;
    while (rel ? !(rel & low) : low < n)
        low <<= 1;
    int span = low < n - rel ? low : n - rel;
    char *tmp = alloc_bytes(bytes * (size_t)span);
    if (!tmp)
        return MPI_ERR_NO_MEM;
    for (int j = in_place; rel == 0 && j < n; j++)
        mp_pack(elem(sendbuf, (MPI_Aint)((j + root) % n) * scount, stype), scount, stype,
                tmp + bytes * (size_t)j);
    if (rel)
        rc = mp_coll_recv(comm, (rel - low + root) % n, T_SCATTER, tmp,
                          bytes * (size_t)span);
    for (int m = low >> 1; m > 0 && !rc; m >>= 1)
        if (rel + m < n) {
            int k = n - rel - m < m ? n - rel - m : m;
            rc = mp_coll_send(comm, (rel + m + root) % n, T_SCATTER,
                              tmp + bytes * (size_t)m, bytes * (size_t)k);
        }
    if (!rc && !in_place)
        unpack_all(tmp, recvbuf, rcount, rtype);
    mp_scratch_free(tmp);
    return rc;
}

/* A gather's or scatter's arguments: this rank's own block (a gather's
   send buffer, a scatter's receive buffer; MPI_IN_PLACE at the root) and
   the root's counts and displacements. */
static int check_rooted(MPI_Comm comm, int root, const void *own, int count,
                        MPI_Datatype t, const int *counts, const int *displs,
                        MPI_Datatype vt)
{
    int at_root = comm->rank == root;
    int rc = check_root(comm, root);
    if (!rc && (own != MPI_IN_PLACE || !at_root))
        rc = mp_check_buf(own == MPI_IN_PLACE ? NULL : own, count, t);
    if (!rc && at_root)
        rc = check_counts(comm, counts, displs, vt);
    return rc;
}

/* A regular gather's or scatter's arguments: this rank's own block (as
   check_rooted) and the root's buffer of every rank's blocks. */
static int check_regular(MPI_Comm comm, int root, const void *own, int count,
                         MPI_Datatype t, const void *all, int all_count,
                         MPI_Datatype all_t)
{
    int rc = check_root(comm, root);
    if (!rc && (own != MPI_IN_PLACE || comm->rank != root))
        rc = mp_check_buf(own == MPI_IN_PLACE ? NULL : own, count, t);
    if (!rc && comm->rank == root)
        rc = mp_check_buf(all, all_count, all_t);
    return rc;
}

/* Whether a regular gather or scatter of blocks of `bytes` (this rank's
   view: MPI has every rank's the same) goes by tree: below `linear_min`
   (FLIT_MPI_GATHER_LINEAR_MIN, FLIT_MPI_SCATTER_LINEAR_MIN) on 3 or more
   ranks. A scatter's by default (MP_SIZE_AUTO): below 8 KiB on 5 or more
   ranks (on 4, the tree's extra hop costs what it saves; docs/mpi.md,
   "Collectives by size"). */
static int by_tree(MPI_Comm comm, size_t bytes, size_t linear_min)
{
    if (linear_min == MP_SIZE_AUTO)
        linear_min = comm->size >= 5 ? 8192 : 0;
    return comm->size >= 3 && bytes < linear_min;
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                int root, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Gatherv, (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                             recvtype, root, comm));
    const char *fn = "MPI_Gatherv";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    rc = check_rooted(comm, root, sendbuf, sendcount, sendtype, recvcounts, displs,
                      recvtype);
    FAIL(comm, rc, fn);
    return mp_err(comm,
                  gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                          recvtype, root, comm),
                  fn);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Gather,
              (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm));
    const char *fn = "MPI_Gather";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    int at_root = comm->rank == root;
    rc = check_regular(comm, root, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                       recvtype);
    FAIL(comm, rc, fn);
    size_t bytes =
        at_root ? mp_type_bytes(recvtype, recvcount) : mp_type_bytes(sendtype, sendcount);
    if (by_tree(comm, bytes, mp_gather_linear_min))
        rc = gather_tree(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                         comm);
    else
        rc = gather_linear(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           root, comm);
    return mp_err(comm, rc, fn);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Scatterv, (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                              recvtype, root, comm));
    const char *fn = "MPI_Scatterv";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    rc = check_rooted(comm, root, recvbuf, recvcount, recvtype, sendcounts, displs,
                      sendtype);
    FAIL(comm, rc, fn);
    return mp_err(comm,
                  scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                           recvtype, root, comm),
                  fn);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Scatter,
              (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm));
    const char *fn = "MPI_Scatter";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    int at_root = comm->rank == root;
    rc = check_regular(comm, root, recvbuf, recvcount, recvtype, sendbuf, sendcount,
                       sendtype);
    FAIL(comm, rc, fn);
    size_t bytes =
        at_root ? mp_type_bytes(sendtype, sendcount) : mp_type_bytes(recvtype, recvcount);
    if (by_tree(comm, bytes, mp_scatter_linear_min))
        rc = scatter_tree(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                          root, comm);
    else
        rc = scatter_linear(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                            root, comm);
    return mp_err(comm, rc, fn);
}

/* Ring allgather: step s passes on the block of rank (r - s) mod n to the
   right. The n blocks are at at[i], len[i] bytes each. */

static int ring_allgather(MPI_Comm comm, char *const *at, const size_t *len)
{
    int n = comm->size, r = comm->rank, rc = MPI_SUCCESS;
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    for (int s = 0; s < n - 1 && !rc; s++) {
        int sb = (r - s + n) % n, rb = (r - s - 1 + n) % n;
        rc = mp_coll_sendrecv(comm, right, at[sb], len[sb], left, at[rb], len[rb],
                              T_ALLGATHER);
    }
    return rc;
}

/*
 * Bruck's allgather, ceil(log2 n) steps for any n: in a buffer of its
 * own, rank r keeps the blocks in the order r, r + 1, ... (mod n), its
 * own first. At the step of distance d it sends its first min(d, n - d)
 * blocks to rank r - d and puts those of rank r + d after its first d:
 * they are the blocks d ahead. Then each block is copied to its place.
 */
static int bruck_allgather(MPI_Comm comm, char *const *at, const size_t *len)
{
    int n = comm->size, r = comm->rank, rc = MPI_SUCCESS;
    size_t *off = malloc((size_t)(n + 1) * sizeof *off); /* of position j */
    if (!off)
        return MPI_ERR_NO_MEM;
    off[0] = 0;
    for (int j = 0; j < n; j++)
        off[j + 1] = off[j] + len[(r + j) % n];
    char *rot = off[n] ? alloc_bytes(off[n]) : &no_bytes;
    if (!rot) {
        free(off);
        return MPI_ERR_NO_MEM;
    }
    memcpy(rot, at[r], len[r]);
    for (int d = 1; d < n && !rc; d <<= 1) {
        int k = d < n - d ? d : n - d;
        rc = mp_coll_sendrecv(comm, (r - d + n) % n, rot, off[k], (r + d) % n,
                              rot + off[d], off[d + k] - off[d], T_ALLGATHER);
    }
    for (int j = 1; j < n && !rc; j++)
        memcpy(at[(r + j) % n], rot + off[j], len[(r + j) % n]);
    if (rot != &no_bytes)
        mp_scratch_free(rot);
    free(off);
    return rc;
}

/* Allgather of blocks at[i], len[i]: Bruck's below
   FLIT_MPI_ALLGATHER_RING_MIN bytes in all where it takes fewer steps
   than the ring (ceil(log2 n) < n - 1: 4 ranks or more), else the ring. */
static int allgather_blocks(MPI_Comm comm, char *const *at, const size_t *len,
                            size_t total)
{
    if (comm->size >= 4 && total < mp_allgather_ring_min)
        return bruck_allgather(comm, at, len);
    return ring_allgather(comm, at, len);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Allgatherv, (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                recvtype, comm));
    const char *fn = "MPI_Allgatherv";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    rc = check_data(sendbuf, sendcount, sendtype);
    if (!rc)
        rc = check_counts(comm, recvcounts, displs, recvtype);
    FAIL(comm, rc, fn);
    int n = comm->size, r = comm->rank, direct = 1;
    size_t *len = malloc((size_t)n * sizeof *len), total = 0;
    char **at = malloc((size_t)n * sizeof *at), *all = NULL;
    if (!len || !at) {
        free(len);
        free(at);
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    }
    /* Each block where it lands in the program's buffer when every one is
       a run of bytes there; else all packed in one buffer, unpacked after. */
    for (int i = 0; i < n; i++) {
        len[i] = mp_type_bytes(recvtype, recvcounts[i]);
        total += len[i];
        at[i] = len[i]
                    ? run_of(elem(recvbuf, displs[i], recvtype), recvcounts[i], recvtype)
                    : &no_bytes;
        direct = direct && at[i];
    }
    if (!direct && !(all = alloc_bytes(total)))
        rc = MPI_ERR_NO_MEM;
    for (size_t i = 0, o = 0; all && i < (size_t)n; o += len[i++])
        at[i] = all + o;
    if (!rc && sendbuf == MPI_IN_PLACE && !direct)
        mp_pack(elem(recvbuf, displs[r], recvtype), recvcounts[r], recvtype, at[r]);
    else if (!rc && sendbuf != MPI_IN_PLACE &&
             mp_type_bytes(sendtype, sendcount) != len[r])
        rc = MPI_ERR_TRUNCATE;
    else if (!rc && sendbuf != MPI_IN_PLACE)
        mp_pack(sendbuf, sendcount, sendtype, at[r]);
    if (!rc)
        rc = allgather_blocks(comm, at, len, total);
    for (int i = 0; !rc && !direct && i < n; i++)
        mp_unpack(at[i], len[i], elem(recvbuf, displs[i], recvtype), recvcounts[i],
                  recvtype);
    mp_scratch_free(all);
    free(at);
    free(len);
    return mp_err(comm, rc, fn);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Allgather,
              (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
    int rc = check_comm(comm, "MPI_Allgather");
    if (rc)
        return rc;
    if (recvcount < 0)
        return mp_err(comm, MPI_ERR_COUNT, "MPI_Allgather");
    regular g;
    int *counts = regular_make(&g, comm->size, recvcount), *displs = g.displs;
    if (!counts)
        return mp_err(comm, MPI_ERR_NO_MEM, "MPI_Allgather");
    rc = PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype,
                         comm);
    regular_free(&g);
    return rc;
}

/* This rank's own block of an exchange: copied (copy_block). */
static int block_self(const char *sbuf, const side *snd, char *rbuf, const side *rcv,
                      int r)
{
    return copy_block(sbuf + snd->displs[r], snd->counts[r], snd->types[r],
                      rbuf + rcv->displs[r], rcv->counts[r], rcv->types[r]);
}

/* Pairwise exchange: at step s, send to r + s and receive from r - s. */
static int alltoallw_pairwise(const char *sbuf, const side *snd, char *rbuf,
                              const side *rcv, MPI_Comm comm)
{
    int n = comm->size, r = comm->rank;
    int rc = block_self(sbuf, snd, rbuf, rcv, r);
    for (int s = 1; s < n && !rc; s++) {
        int to = (r + s) % n, from = (r - s + n) % n;
        size_t sb, rb;
        void *ok, *ik;
        void *out = block_out(sbuf, snd, to, &sb, &ok),
             *in = block_in(rbuf, rcv, from, &rb, &ik);
        rc = !out || !in ? MPI_ERR_NO_MEM
                         : mp_coll_sendrecv(comm, to, out, sb, from, in, rb, T_ALLTOALL);
        if (!rc)
            block_done(rbuf, rcv, from, ik, rb);
        mp_scratch_free(ok);
        mp_scratch_free(ik);
    }
    return rc;
}

/* Every receive posted, every block sent, then every receive waited for
   (mp_coll_exchange): a rank waits once, where the pairwise exchange
   waits n - 1 times, each a hand-over of the core on a crowded host. */
static int alltoallw_posted(const char *sbuf, const side *snd, char *rbuf,
                            const side *rcv, MPI_Comm comm)
{
    int n = comm->size, r = comm->rank, m = n - 1;
    int rc = block_self(sbuf, snd, rbuf, rcv, r);
    mp_part *in = calloc(2 * (size_t)n, sizeof *in), *out = in + n;
    void **kept = calloc(2 * (size_t)n, sizeof *kept); /* out's, then in's */
    if (!in || !kept)
        rc = rc ? rc : MPI_ERR_NO_MEM;
    for (int s = 1; s < n && !rc; s++) { /* in the pairwise order */
        int to = (r + s) % n, from = (r - s + n) % n;
        out[s - 1] = (mp_part){to, T_ALLTOALL, NULL, 0};
        in[s - 1] = (mp_part){from, T_ALLTOALL, NULL, 0};
        out[s - 1].buf = block_out(sbuf, snd, to, &out[s - 1].bytes, &kept[s - 1]);
        in[s - 1].buf = block_in(rbuf, rcv, from, &in[s - 1].bytes, &kept[n + s - 1]);
        if (!out[s - 1].buf || !in[s - 1].buf)
            rc = MPI_ERR_NO_MEM;
    }
    if (!rc)
        rc = mp_coll_exchange(comm, m, in, m, out);
    for (int s = 1; !rc && s < n; s++)
        block_done(rbuf, rcv, (r - s + n) % n, kept[n + s - 1], in[s - 1].bytes);
    for (int i = 0; kept && i < 2 * n; i++)
        mp_scratch_free(kept[i]);
    free(kept);
    free(in);
    return rc;
}

/* All to all: every block posted at once while each is below
   FLIT_MPI_ALLTOALL_PAIRWISE_MIN bytes, else the pairwise exchange. */
static int alltoallw(const char *sbuf, const side *snd, char *rbuf, const side *rcv,
                     MPI_Comm comm)
{
    size_t most = 0;
    for (int i = 0; i < comm->size; i++) {
        size_t sb = mp_type_bytes(snd->types[i], snd->counts[i]);
        size_t rb = mp_type_bytes(rcv->types[i], rcv->counts[i]);
        most = sb > most ? sb : rb > most ? rb : most;
    }
    if (comm->size > 2 && most < mp_alltoall_pairwise_min)
        return alltoallw_posted(sbuf, snd, rbuf, rcv, comm);
    return alltoallw_pairwise(sbuf, snd, rbuf, rcv, comm);
}

/* In place: what is sent is a copy of the receive buffer's blocks, taken
   whole before anything arrives. */
static int alltoallw_in_place(char *rbuf, const side *rcv, MPI_Comm comm)
{
    MPI_Aint span = 0;
    for (int i = 0; i < comm->size; i++) {
        MPI_Aint end = rcv->displs[i] + rcv->counts[i] * rcv->types[i]->extent;
        if (rcv->counts[i] && end > span)
            span = end;
    }
    char *copy = alloc_bytes((size_t)span);
    if (!copy)
        return MPI_ERR_NO_MEM;
    if (span)
        memcpy(copy, rbuf, (size_t)span);
    int rc = alltoallw(copy, rcv, rbuf, rcv, comm);
    mp_scratch_free(copy);
    return rc;
}

static int check_side(MPI_Comm comm, const int *counts, const void *displs,
                      const MPI_Datatype *types)
{
    if (!counts || !displs || !types)
        return MPI_ERR_ARG;
    for (int i = 0; i < comm->size; i++) {
        if (!mp_type_ok(types[i]))
            return MPI_ERR_TYPE;
        if (counts[i] < 0)
            return MPI_ERR_COUNT;
    }
    return MPI_SUCCESS;
}

/* Alltoallv (types NULL: one type each side) and Alltoallw, the
   communicator checked (check_comm) and the call begun. */
static int alltoall_begun(const void *sendbuf, const int *scounts, const int *sdispls,
                          MPI_Datatype stype, const MPI_Datatype *stypes, void *recvbuf,
                          const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                          const MPI_Datatype *rtypes, MPI_Comm comm, const char *fn)
{
    int rc = MPI_SUCCESS, n = comm->size;
    int in_place = sendbuf == MPI_IN_PLACE;
    if (!in_place)
        rc = stypes ? check_side(comm, scounts, sdispls, stypes)
                    : check_counts(comm, scounts, sdispls, stype);
    if (!rc)
        rc = rtypes ? check_side(comm, rcounts, rdispls, rtypes)
                    : check_counts(comm, rcounts, rdispls, rtype);
    FAIL(comm, rc, fn);
    side snd, rcv; /* not cleared whole: only what side_free reads */
    snd.displs = rcv.displs = NULL, snd.types = rcv.types = NULL;
    rc = side_make(&rcv, n, rcounts, rdispls, rtype, rtypes);
    if (!rc && !in_place)
        rc = side_make(&snd, n, scounts, sdispls, stype, stypes);
    if (!rc)
        rc = in_place ? alltoallw_in_place(recvbuf, &rcv, comm)
                      : alltoallw(sendbuf, &snd, recvbuf, &rcv, comm);
    side_free(&snd);
    side_free(&rcv);
    return mp_err(comm, rc, fn);
}

static int alltoall_any(const void *sendbuf, const int *scounts, const int *sdispls,
                        MPI_Datatype stype, const MPI_Datatype *stypes, void *recvbuf,
                        const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                        const MPI_Datatype *rtypes, MPI_Comm comm, const char *fn)
{
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    return alltoall_begun(sendbuf, scounts, sdispls, stype, stypes, recvbuf, rcounts,
                          rdispls, rtype, rtypes, comm, fn);
}

/*
 * MPI_Alltoall whose blocks are each one run of bytes on both sides, of
 * equal length, where the pairwise exchange serves (2 ranks, or blocks of
 * FLIT_MPI_ALLTOALL_PAIRWISE_MIN bytes or more): straight between the
 * buffers, without the v form's per-rank arrays and checks (about 1,000
 * instructions of a 2-rank call of 8 bytes, by callgrind). The messages
 * are the general path's, so a rank whose type is not one run (it takes
 * that path) exchanges with this one all the same. 0: it does not apply.
 */
static int alltoall_runs(const void *sendbuf, int scount, MPI_Datatype st, void *recvbuf,
                         int rcount, MPI_Datatype rt, MPI_Comm comm, int *rc)
{
    int n = comm->size, r = comm->rank;
    if (sendbuf == MPI_IN_PLACE || !mp_type_ok(st) || !mp_type_ok(rt) ||
        !run_of(sendbuf, scount, st) || !run_of(recvbuf, rcount, rt))
        return 0;
    size_t bytes = mp_type_bytes(st, scount);
    if (bytes != mp_type_bytes(rt, rcount) || (n > 2 && bytes < mp_alltoall_pairwise_min))
        return 0;
    MPI_Aint sx = (MPI_Aint)scount * st->extent, rx = (MPI_Aint)rcount * rt->extent;
    const char *sb = sendbuf;
    char *rb = recvbuf;
    memmove(run_of(rb + r * rx, rcount, rt), run_of(sb + r * sx, scount, st), bytes);
    *rc = MPI_SUCCESS;
    for (int s = 1; s < n && !*rc; s++) { /* as alltoallw_pairwise */
        int to = (r + s) % n, from = (r - s + n) % n;
        *rc = mp_coll_sendrecv(comm, to, run_of(sb + to * sx, scount, st), bytes, from,
                               run_of(rb + from * rx, rcount, rt), bytes, T_ALLTOALL);
    }
    return 1;
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Alltoallv, (sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                               recvcounts, rdispls, recvtype, comm));
    return alltoall_any(sendbuf, sendcounts, sdispls, sendtype, NULL, recvbuf, recvcounts,
                        rdispls, recvtype, NULL, comm, "MPI_Alltoallv");
}

/* Displacements in bytes, a type per peer. */
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    MP_LOCKED(PMPI_Alltoallw, (sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                               recvcounts, rdispls, recvtypes, comm));
    return alltoall_any(sendbuf, sendcounts, sdispls, MPI_DATATYPE_NULL, sendtypes,
                        recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes, comm,
                        "MPI_Alltoallw");
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Alltoall,
              (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
    int rc = check_comm(comm, "MPI_Alltoall");
    if (rc)
        return rc;
    if (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0))
        return mp_err(comm, MPI_ERR_COUNT, "MPI_Alltoall");
    if (alltoall_runs(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                      &rc))
        return mp_err(comm, rc, "MPI_Alltoall");
    regular gs, gr;
    int *sc = regular_make(&gs, comm->size, sendcount);
    int *rcn = regular_make(&gr, comm->size, recvcount);
    if (sc && rcn)
        rc = alltoall_begun(sendbuf, sc, gs.displs, sendtype, NULL, recvbuf, rcn,
                            gr.displs, recvtype, NULL, comm, "MPI_Alltoall");
    else
        rc = mp_err(comm, MPI_ERR_NO_MEM, "MPI_Alltoall");
    if (sc)
        regular_free(&gs);
    if (rcn)
        regular_free(&gr);
    return rc;
}

/*
 * Reduce_scatter with a commutative op, on any number of ranks: fold and
 * halve as the allreduce does, virtual rank v's block covering the blocks
 * of the ranks it stands for (edge, the ranks' blocks' edges, in
 * elements); then the odd rank of a folded pair hands the even one its
 * part. Each rank's block is left at acc + edge[rank] elements.
 */
static int reduce_scatter_halving(MPI_Comm comm, char *acc, char *tmp, const int *edge,
                                  MPI_Datatype t, MPI_Op op)
{
    fold f = fold_of(comm);
    int r = comm->rank, n = comm->size;
    size_t e = mp_type_bytes(t, 1);
    int rc = fold_in(comm, &f, acc, acc, tmp, edge[n], t, op);
    if (!rc && f.v >= 0 && f.p > 1) {
        int *vedge = malloc((size_t)(f.p + 1) * sizeof *vedge);
        if (!vedge)
            return MPI_ERR_NO_MEM;
        for (int v = 0; v < f.p; v++)
            vedge[v] = edge[v < f.rem ? 2 * v : v + f.rem];
        vedge[f.p] = edge[n];
        rc = halve(comm, &f, acc, acc, tmp, vedge, t, op, T_SCATTER);
        free(vedge);
    }
    if (rc || r >= 2 * f.rem)
        return rc;
    if (f.v < 0)
        return mp_coll_recv(comm, r + 1, T_SCATTER, acc + (size_t)edge[r] * e,
                            (size_t)(edge[r + 1] - edge[r]) * e);
    return mp_coll_send(comm, r - 1, T_SCATTER, acc + (size_t)edge[r - 1] * e,
                        (size_t)(edge[r] - edge[r - 1]) * e);
}

/* Reduce_scatter(_block): by halving with a commutative op, on a rank
   count not a power of two (folded: two steps more) from
   FLIT_MPI_REDUCE_SCATTER_HALVING_MIN bytes of the vector; else the whole
   vector reduced to rank 0 in rank order, which sends each rank its block
   (counts[i] elements, in rank order). */
static int reduce_scatter(const void *sendbuf, void *recvbuf, const int *counts,
                          MPI_Datatype t, MPI_Op op, MPI_Comm comm, const char *fn)
{
    int n = comm->size, r = comm->rank, total = 0, rc = MPI_SUCCESS;
    for (int i = 0; i < n && !rc; i++)
        if (counts[i] < 0 || counts[i] > INT_MAX - total)
            rc = MPI_ERR_COUNT;
        else
            total += counts[i];
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (!rc)
        rc = check_reduce(comm, in, recvbuf, counts[r], t, op, 1);
    FAIL(comm, rc, fn);
    void *acc, *tmp;
    rc = reduce_start(in, total, t, &acc, &tmp);
    FAIL(comm, rc, fn);
    if (op->commute &&
        (!(n & (n - 1)) || mp_type_bytes(t, total) >= mp_reduce_scatter_halving_min)) {
        int *edge = malloc((size_t)(n + 1) * sizeof *edge);
        rc = edge ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        for (int i = 0; edge && i <= n; i++)
            edge[i] = i ? edge[i - 1] + counts[i - 1] : 0;
        if (!rc)
            rc = reduce_scatter_halving(comm, acc, tmp, edge, t, op);
        if (!rc)
            unpack_all((char *)acc + mp_type_bytes(t, edge[r]), recvbuf, counts[r], t);
        free(edge);
        mp_scratch_free(acc);
        mp_scratch_free(tmp);
        return mp_err(comm, rc, fn);
    }
    rc = reduce_bytes(comm, &acc, &tmp, total, t, op, 0);
    size_t off = mp_type_bytes(t, counts[0]);
    for (int i = 1; !rc && r == 0 && i < n; i++) {
        size_t b = mp_type_bytes(t, counts[i]);
        rc = mp_coll_send(comm, i, T_SCATTER, (char *)acc + off, b);
        off += b;
    }
    if (!rc && r != 0)
        rc = mp_coll_recv(comm, 0, T_SCATTER, acc, mp_type_bytes(t, counts[r]));
    if (!rc)
        unpack_all(acc, recvbuf, counts[r], t);
    mp_scratch_free(acc);
    mp_scratch_free(tmp);
    return mp_err(comm, rc, fn);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Reduce_scatter, (sendbuf, recvbuf, recvcounts, datatype, op, comm));
    int rc = check_comm(comm, "MPI_Reduce_scatter");
    if (rc)
        return rc;
    if (!recvcounts)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Reduce_scatter");
    return reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm,
                          "MPI_Reduce_scatter");
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Reduce_scatter_block,
              (sendbuf, recvbuf, recvcount, datatype, op, comm));
    const char *fn = "MPI_Reduce_scatter_block";
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    if (recvcount < 0)
        return mp_err(comm, MPI_ERR_COUNT, fn);
    regular g;
    int *counts = regular_make(&g, comm->size, recvcount);
    if (!counts)
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    rc = reduce_scatter(sendbuf, recvbuf, counts, datatype, op, comm, fn);
    regular_free(&g);
    return rc;
}

/* Scan (exclusive: Exscan) by recursive doubling: partial holds the
   reduction of a block of ranks ending at this one's block; ranks below
   contribute on the left of every result. */
static int scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                MPI_Comm comm, int exclusive, const char *fn)
{
    int rc = check_comm(comm, fn);
    if (rc)
        return rc;
    rc = check_reduce(comm, sendbuf, recvbuf, count, t, op, 1);
    FAIL(comm, rc, fn);
    size_t bytes = mp_type_bytes(t, count);
    void *partial, *tmp, *result = alloc_bytes(bytes);
    rc = reduce_start(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, t, &partial,
                      &tmp);
    if (rc || !result) {
        mp_scratch_free(result);
        if (!rc)
            mp_scratch_free(partial), mp_scratch_free(tmp);
        FAIL(comm, MPI_ERR_NO_MEM, fn);
    }
    int have = !exclusive, n = comm->size, r = comm->rank;
    if (have)
        memcpy(result, partial, bytes);
    for (int mask = 1; mask < n && !rc; mask <<= 1) {
        int peer = r ^ mask;
        if (peer >= n)
            continue;
        rc = mp_coll_sendrecv(comm, peer, partial, bytes, peer, tmp, bytes,
                              exclusive ? T_EXSCAN : T_SCAN);
        if (rc)
            break;
        if (peer < r) {
            if (have)
                rc = mp_op_apply(op, tmp, result, count, t); /* result = tmp op result */
            else
                memcpy(result, tmp, bytes);
            have = 1;
            if (!rc)
                rc = mp_op_apply(op, tmp, partial, count,
                                 t); /* partial = tmp op partial */
        } else {
            rc = mp_op_apply(op, partial, tmp, count, t); /* partial = partial op tmp */
            void *s = partial;
            partial = tmp;
            tmp = s;
        }
    }
    if (!rc && have)
        unpack_all(result, recvbuf, count, t);
    mp_scratch_free(partial);
    mp_scratch_free(tmp);
    mp_scratch_free(result);
    return mp_err(comm, rc, fn);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
             MPI_Op op, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Scan, (sendbuf, recvbuf, count, datatype, op, comm));
    return scan(sendbuf, recvbuf, count, datatype, op, comm, 0, "MPI_Scan");
}

/* recvbuf at rank 0 is left as it was (MPI leaves it undefined). */
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm)
{
    MP_LOCKED(PMPI_Exscan, (sendbuf, recvbuf, count, datatype, op, comm));
    return scan(sendbuf, recvbuf, count, datatype, op, comm, 1, "MPI_Exscan");
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Barrier);
MP_PROFILED(MPI_Bcast);
MP_PROFILED(MPI_Reduce);
MP_PROFILED(MPI_Allreduce);
MP_PROFILED(MPI_Gatherv);
MP_PROFILED(MPI_Gather);
MP_PROFILED(MPI_Scatterv);
MP_PROFILED(MPI_Scatter);
MP_PROFILED(MPI_Allgatherv);
MP_PROFILED(MPI_Allgather);
MP_PROFILED(MPI_Alltoallv);
MP_PROFILED(MPI_Alltoallw);
MP_PROFILED(MPI_Alltoall);
MP_PROFILED(MPI_Reduce_scatter);
MP_PROFILED(MPI_Reduce_scatter_block);
MP_PROFILED(MPI_Scan);
MP_PROFILED(MPI_Exscan);
