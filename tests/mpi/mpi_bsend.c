/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buffered mode and packing on 2 ranks: MPI_Bsend/Ibsend within the
 * attached buffer (sized with MPI_Pack_size + MPI_BSEND_OVERHEAD, as MPI
 * programs do), refused with MPI_ERR_BUFFER beyond it or with none;
 * MPI_Pack of a column, an int and a double received as MPI_PACKED and
 * unpacked, and a packed buffer received as the original type; the
 * errors of each call. Every value checked exactly.
 */
#include <string.h>

#include "mpi_check.h"

static int rank;

static void buffered(void)
{
    int sz, data[100], got[100];
    OK(MPI_Pack_size(100, MPI_INT, MPI_COMM_WORLD, &sz));
    CHECK(sz == (int)sizeof data);
    int room = 2 * (sz + MPI_BSEND_OVERHEAD);
    char *buf = malloc((size_t)room);
    CHECK(buf);
    OK(MPI_Buffer_attach(buf, room));
    if (rank == 0) {
        for (int i = 0; i < 100; i++)
            data[i] = i * i - 3;
        MPI_Request q;
        OK(MPI_Bsend(data, 100, MPI_INT, 1, 1, MPI_COMM_WORLD));
        OK(MPI_Ibsend(data, 50, MPI_INT, 1, 2, MPI_COMM_WORLD, &q));
        OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        OK(MPI_Bsend(data, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD));
    } else if (rank == 1) {
        OK(MPI_Recv(got, 100, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < 100; i++)
            CHECK(got[i] == i * i - 3);
        memset(got, 0, sizeof got);
        OK(MPI_Recv(got, 100, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < 100; i++)
            CHECK(got[i] == (i < 50 ? i * i - 3 : 0));
    }
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    /* more than the buffer holds: refused, nothing sent */
    CHECK(MPI_Bsend(buf, room, MPI_BYTE, 1 - rank, 4, MPI_COMM_WORLD) == MPI_ERR_BUFFER);
    CHECK(MPI_Buffer_attach(buf, room) == MPI_ERR_BUFFER); /* one at a time */
    void *back;
    int back_size;
    OK(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == buf && back_size == room);
    CHECK(MPI_Bsend(data, 1, MPI_INT, 1 - rank, 4, MPI_COMM_WORLD) == MPI_ERR_BUFFER);
    MPI_Request q;
    CHECK(MPI_Ibsend(data, 1, MPI_INT, 1 - rank, 4, MPI_COMM_WORLD, &q) ==
          MPI_ERR_BUFFER);
    OK(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == NULL && back_size == 0);
    CHECK(MPI_Buffer_attach(NULL, 10) == MPI_ERR_BUFFER);
    CHECK(MPI_Buffer_attach(buf, -1) == MPI_ERR_ARG);
    CHECK(MPI_Buffer_detach(NULL, &back_size) == MPI_ERR_ARG);
    OK(MPI_Buffer_attach(buf, room)); /* bad arguments before the room */
    CHECK(MPI_Bsend(data, 1, MPI_INT, 5, -1, MPI_COMM_WORLD) == MPI_ERR_TAG);
    CHECK(MPI_Bsend(data, 1, MPI_INT, 9, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Bsend(data, 1, MPI_INT, 0, 0, MPI_COMM_NULL) == MPI_ERR_COMM);
    OK(MPI_Buffer_detach(&back, &back_size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    free(buf);
}

/* A column of a 3x4 matrix, an int and a double, packed one after
   another; sent as MPI_PACKED; unpacked in the same order. */
static void packing(void)
{
    double m[3][4];
    MPI_Datatype col;
    OK(MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &col));
    OK(MPI_Type_commit(&col));
    char packed[256];
    int pos = 0, n = 0, csz, isz, dsz;
    OK(MPI_Pack_size(1, col, MPI_COMM_WORLD, &csz));
    OK(MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &isz));
    OK(MPI_Pack_size(1, MPI_DOUBLE, MPI_COMM_WORLD, &dsz));
    CHECK(csz == 3 * (int)sizeof(double) && isz == (int)sizeof(int));
    if (rank == 0) {
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                m[i][j] = i * 4 + j + 0.5;
        int x = 77;
        double d = -2.25;
        OK(MPI_Pack(&m[0][2], 1, col, packed, sizeof packed, &pos, MPI_COMM_WORLD));
        OK(MPI_Pack(&x, 1, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_WORLD));
        OK(MPI_Pack(&d, 1, MPI_DOUBLE, packed, sizeof packed, &pos, MPI_COMM_WORLD));
        CHECK(pos == csz + isz + dsz);
        OK(MPI_Send(packed, pos, MPI_PACKED, 1, 5, MPI_COMM_WORLD));
        /* the packed column received as three doubles */
        pos = 0;
        OK(MPI_Pack(&m[0][1], 1, col, packed, sizeof packed, &pos, MPI_COMM_WORLD));
        OK(MPI_Send(packed, pos, MPI_PACKED, 1, 6, MPI_COMM_WORLD));
    } else if (rank == 1) {
        MPI_Status st;
        OK(MPI_Recv(packed, sizeof packed, MPI_PACKED, 0, 5, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_PACKED, &n));
        CHECK(n == csz + isz + dsz);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                m[i][j] = -1;
        int x = 0;
        double d = 0, three[3];
        OK(MPI_Unpack(packed, n, &pos, &m[0][3], 1, col, MPI_COMM_WORLD));
        OK(MPI_Unpack(packed, n, &pos, &x, 1, MPI_INT, MPI_COMM_WORLD));
        OK(MPI_Unpack(packed, n, &pos, &d, 1, MPI_DOUBLE, MPI_COMM_WORLD));
        CHECK(pos == n && x == 77 && d == -2.25);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                CHECK(m[i][j] == (j == 3 ? i * 4 + 2 + 0.5 : -1));
        OK(MPI_Recv(three, 3, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < 3; i++)
            CHECK(three[i] == i * 4 + 1 + 0.5);
    }
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int x = 1;
    pos = 0;
    CHECK(MPI_Pack(&x, 1, MPI_INT, packed, 3, &pos, MPI_COMM_WORLD) == MPI_ERR_TRUNCATE);
    CHECK(pos == 0);
    pos = 254;
    CHECK(MPI_Pack(&x, 1, MPI_INT, packed, 256, &pos, MPI_COMM_WORLD) ==
          MPI_ERR_TRUNCATE);
    CHECK(MPI_Pack(&x, 1, MPI_INT, packed, 256, NULL, MPI_COMM_WORLD) == MPI_ERR_ARG);
    pos = -1;
    CHECK(MPI_Pack(&x, 1, MPI_INT, packed, 256, &pos, MPI_COMM_WORLD) == MPI_ERR_ARG);
    pos = 0;
    CHECK(MPI_Pack(&x, -1, MPI_INT, packed, 256, &pos, MPI_COMM_WORLD) == MPI_ERR_COUNT);
    CHECK(MPI_Pack(&x, 1, MPI_DATATYPE_NULL, packed, 256, &pos, MPI_COMM_WORLD) ==
          MPI_ERR_TYPE);
    CHECK(MPI_Pack(&x, 1, MPI_INT, packed, 256, &pos, MPI_COMM_NULL) == MPI_ERR_COMM);
    CHECK(MPI_Unpack(packed, 2, &pos, &x, 1, MPI_INT, MPI_COMM_WORLD) ==
          MPI_ERR_TRUNCATE);
    CHECK(MPI_Unpack(packed, 8, &pos, NULL, 1, MPI_INT, MPI_COMM_WORLD) ==
          MPI_ERR_BUFFER);
    CHECK(MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, NULL) == MPI_ERR_ARG);
    CHECK(MPI_Pack_size(-1, MPI_INT, MPI_COMM_WORLD, &n) == MPI_ERR_COUNT);
    CHECK(MPI_Pack_size(1 << 30, MPI_DOUBLE, MPI_COMM_WORLD, &n) == MPI_ERR_COUNT);
    CHECK(pos == 0);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Type_free(&col));
}

int main(int argc, char **argv)
{
    int size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size != 2) {
        fprintf(stderr, "needs 2 ranks\n");
        MPI_Finalize();
        return 77;
    }
    buffered();
    packing();
    OK(MPI_Finalize());
    return 0;
}
