/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receives posted in the tagged layer itself (one source, one tag, a
 * contiguous type): MPI's matching order kept when such a receive meets a
 * synchronous send's message (which comes through the library's engine),
 * a wildcard receive posted before it, a cancel, a truncation and many of
 * them at once. 2 ranks (rank 0 sends, rank 1 receives); data checked
 * exactly. Each step has rank 1 post its receives first, then tell rank 0
 * to send, so that the messages meet receives already posted.
 */
#include <string.h>

#include "mpi_check.h"

#define N     64 /* ints in a message */
#define MANY  48 /* receives posted at once */
#define TAG   5
#define READY 9000 /* the tag of "my receives are posted" */

static int rank;
static MPI_Comm hs; /* the handshakes' own communicator */

/* Rank 1: its receives are posted; rank 0: waits for that. */
static void ready(void)
{
    int x = 0;
    if (rank == 1)
        OK(MPI_Send(&x, 1, MPI_INT, 0, READY, hs));
    else
        OK(MPI_Recv(&x, 1, MPI_INT, 1, READY, hs, MPI_STATUS_IGNORE));
}

/* A synchronous send, then standard ones to the same tag: the receives
   posted before any arrives take them in the order sent (the standard
   sends wait behind the synchronous one until it matches). */
static void sync_then_standard(void)
{
    int b[4][N];
    MPI_Request q[4];
    if (rank == 1) {
        memset(b, 0, sizeof b);
        for (int i = 0; i < 4; i++)
            OK(MPI_Irecv(b[i], N, MPI_INT, 0, TAG, MPI_COMM_WORLD, &q[i]));
        ready();
        OK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 4; i++)
            CHECK(seq_same(b[i], N, 10 + i));
    } else {
        ready();
        for (int i = 0; i < 4; i++)
            seq_fill(b[i], N, 10 + i);
        OK(MPI_Issend(b[0], N, MPI_INT, 1, TAG, MPI_COMM_WORLD, &q[0]));
        OK(MPI_Isend(b[1], N, MPI_INT, 1, TAG, MPI_COMM_WORLD, &q[1]));
        OK(MPI_Ssend(b[2], N, MPI_INT, 1, TAG, MPI_COMM_WORLD)); /* behind q[1] */
        q[2] = MPI_REQUEST_NULL;
        OK(MPI_Send(b[3], N, MPI_INT, 1, TAG, MPI_COMM_WORLD));
        q[3] = MPI_REQUEST_NULL;
        OK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
    }
}

/* A wildcard receive posted first takes the first message, though the
   receive posted after it names the message's source and tag exactly. */
static void wildcard_first(void)
{
    int b[3][N];
    MPI_Request q[3];
    MPI_Status st[3];
    if (rank == 1) {
        memset(b, 0, sizeof b);
        OK(MPI_Irecv(b[0], N, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                     &q[0]));
        OK(MPI_Irecv(b[1], N, MPI_INT, 0, TAG, MPI_COMM_WORLD, &q[1]));
        OK(MPI_Irecv(b[2], N, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &q[2]));
        ready();
        OK(MPI_Waitall(3, q, st));
        for (int i = 0; i < 3; i++)
            CHECK(seq_same(b[i], N, 20 + i));
        CHECK(st[0].MPI_SOURCE == 0 && st[0].MPI_TAG == TAG);
        CHECK(st[1].MPI_SOURCE == 0 && st[1].MPI_TAG == TAG);
        CHECK(st[2].MPI_TAG == TAG + 1);
    } else {
        ready();
        for (int i = 0; i < 3; i++) {
            seq_fill(b[i], N, 20 + i);
            OK(MPI_Send(b[i], N, MPI_INT, 1, i < 2 ? TAG : TAG + 1, MPI_COMM_WORLD));
        }
    }
}

/* A receive cancelled before its message came: the message goes to the
   next receive; a truncated one says MPI_ERR_TRUNCATE and fills what fits. */
static void cancel_and_truncate(void)
{
    int b[2][N];
    MPI_Status s;
    if (rank == 1) {
        MPI_Request q;
        int flag = 0;
        memset(b, 0, sizeof b);
        OK(MPI_Irecv(b[0], N, MPI_INT, 0, TAG, MPI_COMM_WORLD, &q));
        OK(MPI_Cancel(&q));
        OK(MPI_Wait(&q, &s));
        OK(MPI_Test_cancelled(&s, &flag));
        CHECK(flag == 1);
        OK(MPI_Irecv(b[1], N, MPI_INT, 0, TAG, MPI_COMM_WORLD, &q));
        ready();
        OK(MPI_Wait(&q, &s));
        CHECK(seq_same(b[1], N, 30) && s.MPI_SOURCE == 0 && s.MPI_TAG == TAG);
        for (int i = 0; i < N; i++)
            CHECK(b[0][i] == 0); /* the cancelled receive's buffer untouched */
        OK(MPI_Irecv(b[0], N / 2, MPI_INT, 0, TAG, MPI_COMM_WORLD, &q));
        ready();
        CHECK(MPI_Wait(&q, &s) == MPI_ERR_TRUNCATE);
        CHECK(seq_same(b[0], N / 2, 31) && b[0][N / 2] == 0);
    } else {
        ready();
        seq_fill(b[0], N, 30);
        OK(MPI_Send(b[0], N, MPI_INT, 1, TAG, MPI_COMM_WORLD));
        ready();
        seq_fill(b[1], N, 31);
        OK(MPI_Send(b[1], N, MPI_INT, 1, TAG, MPI_COMM_WORLD));
    }
}

/* Many receives on different tags posted at once, answered in reverse
   order, with every second send synchronous. */
static void many(void)
{
    static int b[MANY][N];
    MPI_Request q[MANY];
    if (rank == 1) {
        memset(b, 0, sizeof b);
        for (int i = 0; i < MANY; i++)
            OK(MPI_Irecv(b[i], N, MPI_INT, 0, 100 + i, MPI_COMM_WORLD, &q[i]));
        ready();
        for (int i = 0; i < MANY; i++) { /* one by one, in the order posted */
            MPI_Status s;
            OK(MPI_Wait(&q[i], &s));
            CHECK(seq_same(b[i], N, 40 + i) && s.MPI_TAG == 100 + i);
        }
    } else {
        ready();
        for (int i = MANY - 1; i >= 0; i--) {
            seq_fill(b[i], N, 40 + i);
            if (i % 2)
                OK(MPI_Issend(b[i], N, MPI_INT, 1, 100 + i, MPI_COMM_WORLD, &q[i]));
            else
                OK(MPI_Isend(b[i], N, MPI_INT, 1, 100 + i, MPI_COMM_WORLD, &q[i]));
        }
        OK(MPI_Waitall(MANY, q, MPI_STATUSES_IGNORE));
    }
}

int main(int argc, char **argv)
{
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &hs));
    sync_then_standard();
    wildcard_first();
    cancel_and_truncate();
    many();
    OK(MPI_Comm_free(&hs));
    OK(MPI_Finalize());
    if (rank == 0)
        printf("mpi_direct: 2 ranks passed\n");
    return 0;
}
