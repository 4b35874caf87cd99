/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Communicators and groups on 1 to 4 ranks: split (by color, by key in
 * reverse, MPI_UNDEFINED), dup, split of a split, compare, COMM_SELF,
 * traffic of different communicators never matched across them (same
 * source, same tag, wildcards), groups and their rank translation.
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
