/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Communicators and groups on 1 to 4 ranks: split (by color, by key in
 * reverse, MPI_UNDEFINED), dup, split of a split, compare, COMM_SELF,
 * traffic of different communicators never matched across them (same
 * source, same tag, wildcards), groups and their rank translation;
 * MPI_Comm_create (one group, and disjoint groups at once) and
 * MPI_Comm_create_group (its members alone, the others busy elsewhere);
 * MPI_Comm_idup beside another agreement on a context.
 */
#include "mpi_check.h"

static int rank, size;

/* Rank 0 sends on dup, then on the world, same tag; the world's ANY_TAG
   ANY_SOURCE receive takes the world's message, the dup's stays for the
   dup's receive. */
static void contexts(void)
{
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int r;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &r));
    CHECK(r == MPI_CONGRUENT);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &r));
    CHECK(r == MPI_IDENT);
    if (size >= 2 && rank == 0) {
        int a = 1, b = 2;
        OK(MPI_Send(&a, 1, MPI_INT, 1, 5, dup));
        OK(MPI_Send(&b, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
    } else if (size >= 2 && rank == 1) {
        int v = 0, flag = 1;
        MPI_Status st;
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(v == 2 && st.MPI_SOURCE == 0 && st.MPI_TAG == 5);
        OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag == 0);
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 5, dup, &st));
        CHECK(v == 1);
    }
    OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL);
}

/* A receive posted on a communicator that is then freed still completes
   (MPI frees it once pending operations are done). */
static void free_pending(void)
{
    if (size < 2)
        return;
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int v = 0, go = 0;
    MPI_Request r;
    MPI_Status st;
    if (rank == 1) {
        OK(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &r));
        OK(MPI_Comm_free(&dup));
        OK(MPI_Send(&go, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
        OK(MPI_Wait(&r, &st));
        CHECK(v == 31 && st.MPI_SOURCE == 0 && st.MPI_TAG == 7);
    } else {
        if (rank == 0) {
            OK(MPI_Recv(&go, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            v = 31;
            OK(MPI_Send(&v, 1, MPI_INT, 1, 7, dup));
        }
        OK(MPI_Comm_free(&dup));
    }
}

/* Split by parity, keys reversing the order; a ring in each half. */
static void splits(void)
{
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    int hs, hr;
    OK(MPI_Comm_size(half, &hs));
    OK(MPI_Comm_rank(half, &hr));
    int n = (size - rank % 2 + 1) / 2; /* ranks of my parity */
    CHECK(hs == n);
    CHECK(hr == n - 1 - rank / 2); /* reversed */
    int next = (hr + 1) % hs, prev = (hr + hs - 1) % hs, v = rank, got = -1;
    MPI_Status st;
    OK(MPI_Sendrecv(&v, 1, MPI_INT, next, 0, &got, 1, MPI_INT, MPI_ANY_SOURCE,
                    MPI_ANY_TAG, half, &st));
    CHECK(st.MPI_SOURCE == prev);
    /* prev in the half is world rank: same parity, order reversed */
    CHECK(got == rank % 2 + 2 * (n - 1 - prev));
    int res;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, half, &res));
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL));
    /* a split of the split: everyone alone */
    MPI_Comm alone;
    OK(MPI_Comm_split(half, hr, 0, &alone));
    int as;
    OK(MPI_Comm_size(alone, &as));
    CHECK(as == 1);
    OK(MPI_Comm_free(&alone));
    OK(MPI_Comm_free(&half));

    /* all in one color, keys reversed: the same ranks in another order */
    MPI_Comm rev;
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
    OK(MPI_Comm_rank(rev, &hr));
    CHECK(hr == size - 1 - rank);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, rev, &res));
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR));
    OK(MPI_Comm_free(&rev));

    /* MPI_UNDEFINED: no communicator for rank 0 */
    MPI_Comm some;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &some));
    CHECK((rank == 0) == (some == MPI_COMM_NULL));
    if (some != MPI_COMM_NULL) {
        OK(MPI_Comm_size(some, &hs));
        CHECK(hs == size - 1);
        OK(MPI_Barrier(some));
        OK(MPI_Comm_free(&some));
    }
}

static void self(void)
{
    int s, r, v = 42, w = 0;
    OK(MPI_Comm_size(MPI_COMM_SELF, &s));
    OK(MPI_Comm_rank(MPI_COMM_SELF, &r));
    CHECK(s == 1 && r == 0);
    MPI_Request q;
    OK(MPI_Irecv(&w, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &q));
    OK(MPI_Send(&v, 1, MPI_INT, 0, 3, MPI_COMM_SELF));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(w == 42);
    OK(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_WORLD, &r));
    CHECK(r == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL));
}

static void groups(void)
{
    MPI_Group world, odd, even, empty;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int gs, gr;
    OK(MPI_Group_size(world, &gs));
    OK(MPI_Group_rank(world, &gr));
    CHECK(gs == size && gr == rank);
    int odds[2], n = 0;
    for (int i = 1; i < size; i += 2)
        odds[n++] = i;
    OK(MPI_Group_incl(world, n, odds, &odd));
    OK(MPI_Group_excl(world, n, odds, &even));
    OK(MPI_Group_size(odd, &gs));
    CHECK(gs == n);
    OK(MPI_Group_rank(odd, &gr));
    CHECK(gr == (rank % 2 ? rank / 2 : MPI_UNDEFINED));
    OK(MPI_Group_size(even, &gs));
    CHECK(gs == size - n);
    int in[4] = {0, 1, 2, 3}, out[4];
    OK(MPI_Group_translate_ranks(world, size, in, even, out));
    for (int i = 0; i < size; i++)
        CHECK(out[i] == (i % 2 ? MPI_UNDEFINED : i / 2));
    int pn = MPI_PROC_NULL;
    OK(MPI_Group_translate_ranks(world, 1, &pn, odd, out));
    CHECK(out[0] == MPI_PROC_NULL);
    int res;
    OK(MPI_Group_compare(world, world, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Group_compare(world, even, &res));
    CHECK(res == (size == 1 ? MPI_IDENT : MPI_UNEQUAL));
    OK(MPI_Group_excl(world, 0, NULL, &empty)); /* excluding nobody: the same */
    OK(MPI_Group_compare(world, empty, &res));
    CHECK(res == MPI_IDENT);
    OK(MPI_Group_size(MPI_GROUP_EMPTY, &gs));
    CHECK(gs == 0);
    MPI_Group *all[] = {&world, &odd, &even, &empty};
    for (int i = 0; i < 4; i++) {
        OK(MPI_Group_free(all[i]));
        CHECK(*all[i] == MPI_GROUP_NULL);
    }
}

/* The group of world ranks members[0..n), as MPI_Group_incl makes it. */
static void check_group(MPI_Group g, const int *members, int n)
{
    MPI_Group world;
    int gs, out[8], idx[8];
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_size(g, &gs));
    CHECK(gs == n);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    OK(MPI_Group_translate_ranks(g, n, idx, world, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == members[i]);
    OK(MPI_Group_free(&world));
}

/* Union, intersection, difference (first group's order, then the
   second's others), ranges in both directions, and bad ranges. */
static void group_sets(void)
{
    MPI_Group world, a, b, g;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int ra[4] = {size - 1, 0}, rb[4] = {0, 1 % size};
    int na = size > 1 ? 2 : 1, nb = size > 1 ? 2 : 1; /* a = {last, 0}, b = {0, 1} */
    OK(MPI_Group_incl(world, na, ra, &a));
    OK(MPI_Group_incl(world, nb, rb, &b));
    OK(MPI_Group_union(a, b, &g));
    if (size == 1)
        check_group(g, (const int[]){0}, 1);
    else if (size == 2)
        check_group(g, (const int[]){1, 0}, 2);
    else
        check_group(g, (const int[]){size - 1, 0, 1}, 3);
    OK(MPI_Group_free(&g));
    OK(MPI_Group_intersection(a, b, &g));
    if (size == 2)
        check_group(g, (const int[]){1, 0}, 2); /* a's order */
    else
        check_group(g, (const int[]){0}, 1);
    OK(MPI_Group_free(&g));
    OK(MPI_Group_difference(a, b, &g));
    if (size > 2)
        check_group(g, (const int[]){size - 1}, 1);
    else
        check_group(g, NULL, 0);
    OK(MPI_Group_free(&g));
    /* ranges: every second rank up from 0; then down from the last */
    int up[1][3] = {{0, size - 1, 2}}, down[1][3] = {{size - 1, 0, -1}};
    int evens[4], nev = 0, rev[4];
    for (int r = 0; r < size; r += 2)
        evens[nev++] = r;
    for (int r = 0; r < size; r++)
        rev[r] = size - 1 - r;
    OK(MPI_Group_range_incl(world, 1, up, &g));
    check_group(g, evens, nev);
    OK(MPI_Group_free(&g));
    OK(MPI_Group_range_incl(world, 1, down, &g));
    check_group(g, rev, size);
    OK(MPI_Group_free(&g));
    OK(MPI_Group_range_excl(world, 1, up, &g));
    int odds[4], nod = 0;
    for (int r = 1; r < size; r += 2)
        odds[nod++] = r;
    check_group(g, odds, nod);
    OK(MPI_Group_free(&g));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int zero[1][3] = {{0, 0, 0}}, twice[2][3] = {{0, 0, 1}, {0, 0, 1}};
    int outside[1][3] = {{0, size, 1}};
    CHECK(MPI_Group_range_incl(world, 1, zero, &g) == MPI_ERR_RANK);
    CHECK(MPI_Group_range_incl(world, 2, twice, &g) == MPI_ERR_RANK);
    CHECK(MPI_Group_range_incl(world, 1, outside, &g) == MPI_ERR_RANK);
    CHECK(MPI_Group_union(a, MPI_GROUP_NULL, &g) == MPI_ERR_GROUP);
    int inter = 1;
    OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &inter));
    CHECK(inter == 0);
    MPI_Comm parent = MPI_COMM_WORLD;
    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Group_free(&a));
    OK(MPI_Group_free(&b));
    OK(MPI_Group_free(&world));
}

/* The members of the group (world ranks, in group order) get a
   communicator whose rank i is group rank i: an allreduce of world ranks
   and the rank order check it. */
static void check_created(MPI_Comm c, const int *members, int n)
{
    int me = -1;
    for (int i = 0; i < n; i++)
        if (members[i] == rank)
            me = i;
    CHECK((me < 0) == (c == MPI_COMM_NULL));
    if (me < 0)
        return;
    int r, sz, sum = 0, want = 0, first = -1;
    OK(MPI_Comm_rank(c, &r));
    OK(MPI_Comm_size(c, &sz));
    CHECK(r == me && sz == n);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
    OK(MPI_Bcast(&first, 0, MPI_INT, 0, c));
    int w = r == 0 ? rank : -1;
    OK(MPI_Bcast(&w, 1, MPI_INT, 0, c));
    for (int i = 0; i < n; i++)
        want += members[i];
    CHECK(sum == want && w == members[0]);
    OK(MPI_Comm_free(&c));
}

static void creates(void)
{
    MPI_Group world, g, odd_even;
    MPI_Comm c;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int rev[4], n = 0;
    for (int i = size - 1; i >= 0; i -= 2)
        rev[n++] = i; /* the last rank, every second one down */
    OK(MPI_Group_incl(world, n, rev, &g));
    OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
    check_created(c, rev, n);
    /* disjoint groups at once (MPI 2.2): evens and odds, each its own */
    int mine[4], k = 0;
    for (int i = rank % 2; i < size; i += 2)
        mine[k++] = i;
    OK(MPI_Group_incl(world, k, mine, &odd_even));
    OK(MPI_Comm_create(MPI_COMM_WORLD, odd_even, &c));
    check_created(c, mine, k);
    OK(MPI_Group_free(&odd_even));
    /* create_group: only g's members call it; the others do a collective
       of their own meanwhile, on a communicator of theirs */
    int in_g = 0;
    for (int i = 0; i < n; i++)
        in_g |= rev[i] == rank;
    if (in_g) {
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 7, &c));
        check_created(c, rev, n);
    } else {
        MPI_Comm rest;
        OK(MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &rest));
        OK(MPI_Barrier(rest));
        OK(MPI_Comm_free(&rest));
    }
    if (in_g) { /* the others' split is a collective of the world's */
        MPI_Comm rest;
        OK(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &rest));
        CHECK(rest == MPI_COMM_NULL);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD)); /* the world's collectives still agree */
    /* errors */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &c) == MPI_ERR_GROUP);
    CHECK(MPI_Comm_create(MPI_COMM_NULL, g, &c) == MPI_ERR_COMM);
    CHECK(MPI_Comm_create(MPI_COMM_WORLD, g, NULL) == MPI_ERR_ARG);
    if (in_g)
        CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, g, -1, &c) == MPI_ERR_TAG);
    else
        CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 7, &c) == MPI_ERR_GROUP);
    if (size > 1) { /* a group with a rank outside the communicator */
        MPI_Comm solo;
        OK(MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &solo));
        CHECK(MPI_Comm_create(solo, world, &c) == MPI_ERR_GROUP);
        OK(MPI_Comm_free(&solo));
    }
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Group_free(&g));
    OK(MPI_Group_free(&world));
}

/* MPI_Comm_idup of the world left waiting (the last rank starts its own
   only when told) while the others agree on a dup of their own
   sub-communicator: the two agreements run at once in those ranks, and
   must end on different contexts. Messages of the same source and tag on
   the two never match across them. */
static void idup(void)
{
    int last = size - 1, in_sub = rank < last;
    MPI_Comm sub, ds = MPI_COMM_NULL, dw = MPI_COMM_NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    OK(MPI_Comm_split(MPI_COMM_WORLD, in_sub ? 0 : MPI_UNDEFINED, rank, &sub));
    int go = 1;
    if (in_sub) {
        OK(MPI_Comm_idup(MPI_COMM_WORLD, &dw, &req));
        OK(MPI_Comm_dup(sub, &ds));
        OK(MPI_Barrier(sub));
        if (rank == 0)
            OK(MPI_Send(&go, 1, MPI_INT, last, 9, MPI_COMM_WORLD));
    } else {
        if (size > 1)
            OK(MPI_Recv(&go, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Comm_idup(MPI_COMM_WORLD, &dw, &req));
    }
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL && dw != MPI_COMM_NULL);
    int r, n;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, dw, &r));
    CHECK(r == MPI_CONGRUENT);
    OK(MPI_Allreduce(&go, &n, 1, MPI_INT, MPI_SUM, dw));
    CHECK(n == size);
    int dst = size >= 3 ? 1 : 0; /* in the sub-communicator with rank 0 */
    if (size >= 2) {
        MPI_Request sends[2];
        int a = 1, b = 2, x = 0, y = 0;
        if (rank == 0) {
            OK(MPI_Isend(&a, 1, MPI_INT, dst, 7, ds, &sends[0]));
            OK(MPI_Isend(&b, 1, MPI_INT, dst, 7, dw, &sends[1]));
        }
        if (rank == dst) {
            OK(MPI_Recv(&y, 1, MPI_INT, 0, 7, dw, MPI_STATUS_IGNORE));
            OK(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, ds,
                        MPI_STATUS_IGNORE));
            CHECK(y == 2 && x == 1);
        }
        if (rank == 0)
            OK(MPI_Waitall(2, sends, MPI_STATUSES_IGNORE));
    }
    if (ds != MPI_COMM_NULL)
        OK(MPI_Comm_free(&ds));
    if (sub != MPI_COMM_NULL)
        OK(MPI_Comm_free(&sub));
    OK(MPI_Comm_free(&dw));
    /* bad arguments, refused before anything starts */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Comm_idup(MPI_COMM_NULL, &dw, &req) == MPI_ERR_COMM);
    CHECK(MPI_Comm_idup(MPI_COMM_WORLD, NULL, &req) == MPI_ERR_ARG);
    CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &dw, NULL) == MPI_ERR_REQUEST);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size <= 4);
    contexts();
    free_pending();
    splits();
    self();
    groups();
    group_sets();
    creates();
    idup();
    /* many communicators made and freed: contexts are not reused */
    for (int i = 0; i < 200; i++) {
        MPI_Comm c;
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        OK(MPI_Barrier(c));
        OK(MPI_Comm_free(&c));
    }
    OK(MPI_Finalize());
    return 0;
}
