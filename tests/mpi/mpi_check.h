/* SPDX-License-Identifier: BSD-3-Clause */
/* The checks of the MPI tests: mpi.h alone, no flit header. A failed check
   names itself and its rank and ends the job with status 1. */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            int r_ = -1, i_ = 0;                                                         \
            MPI_Initialized(&i_);                                                        \
            if (i_)                                                                      \
                MPI_Comm_rank(MPI_COMM_WORLD, &r_);                                      \
            fprintf(stderr, "%s:%d: rank %d: check failed: %s\n", __FILE__, __LINE__,    \
                    r_, #cond);                                                          \
            fflush(stderr);                                                              \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS)

/* A message's ints, each telling its seed and place (computed unsigned:
   large seeds wrap, never overflow); same: b holds them. */
static inline int seq_at(int seed, int i)
{
    return (int)((unsigned)seed * 100003u + (unsigned)i);
}

static inline void seq_fill(int *b, int n, int seed)
{
    for (int i = 0; i < n; i++)
        b[i] = seq_at(seed, i);
}

static inline int seq_same(const int *b, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (b[i] != seq_at(seed, i))
            return 0;
    return 1;
}

/* A non-commutative op on MPI_2INT pairs, digits appended: (v1, p1) .
   (v2, p2) = (v1 * p2 + v2, p1 * p2). Ranks giving (rank + 1, 10) reduce
   in rank order to 12..n (n <= 9); any other order differs. */
static inline void concat_digits(void *in, void *inout, int *len, MPI_Datatype *t)
{
    int *a = in, *b = inout;
    CHECK(*t == MPI_2INT);
    for (int k = 0; k < *len; k++) {
        b[2 * k] = a[2 * k] * b[2 * k + 1] + b[2 * k];
        b[2 * k + 1] = a[2 * k + 1] * b[2 * k + 1];
    }
}

#endif
