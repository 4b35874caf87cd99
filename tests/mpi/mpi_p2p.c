/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point to point on MPI_COMM_WORLD (2 to 4 ranks): every call with its
 * corner cases, data checked exactly. Rank 0 and rank 1 are the pair most
 * steps use; the others join the ring and wildcard steps.
 */
#include <string.h>

#include "mpi_check.h"

static int rank, size;
static MPI_Comm hs; /* the handshakes' own communicator */

/* Every rank has reached this point (a barrier of point-to-point messages
   on a duplicate of MPI_COMM_WORLD, which no wildcard receive on
   MPI_COMM_WORLD may take: contexts keep them apart). Messages sent before it by a rank
   arrive at any rank before that rank's handshake message does. */
static void handshake(void)
{
    int x = 0;
    if (rank == 0) {
        for (int i = 1; i < size; i++)
            OK(MPI_Recv(&x, 0, MPI_INT, i, 9999, hs, MPI_STATUS_IGNORE));
        for (int i = 1; i < size; i++)
            OK(MPI_Send(&x, 0, MPI_INT, i, 9999, hs));
    } else {
        OK(MPI_Send(&x, 0, MPI_INT, 0, 9999, hs));
        OK(MPI_Recv(&x, 0, MPI_INT, 0, 9999, hs, MPI_STATUS_IGNORE));
    }
}

/* Send/Recv, Ssend, Rsend around the ring; status fields and counts. */
static void ring(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[64], in[64];
    MPI_Status st;
    seq_fill(out, 64, rank);
    for (int mode = 0; mode < 3; mode++) {
        memset(in, 0, sizeof in);
        MPI_Request r;
        OK(MPI_Irecv(in, 64, MPI_INT, prev, 10 + mode, MPI_COMM_WORLD, &r));
        if (mode == 0)
            OK(MPI_Send(out, 64, MPI_INT, next, 10, MPI_COMM_WORLD));
        else if (mode == 1)
            OK(MPI_Ssend(out, 64, MPI_INT, next, 11, MPI_COMM_WORLD));
        else
            OK(MPI_Rsend(out, 64, MPI_INT, next, 12, MPI_COMM_WORLD));
        OK(MPI_Wait(&r, &st));
        CHECK(r == MPI_REQUEST_NULL);
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 10 + mode);
        int n = -1;
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 64 && seq_same(in, 64, prev));
        OK(MPI_Get_count(&st, MPI_DOUBLE, &n)); /* 256 bytes: 32 doubles */
        CHECK(n == 32);
        OK(MPI_Get_count(&st, MPI_SHORT_INT, &n)); /* 256 % 6 */
        CHECK(n == MPI_UNDEFINED);
    }
}

/* Zero counts and MPI_PROC_NULL. */
static void empties(void)
{
    MPI_Status st;
    int n = -1;
    if (rank < 2) {
        int other = 1 - rank;
        OK(MPI_Sendrecv(NULL, 0, MPI_INT, other, 5, NULL, 0, MPI_INT, other, 5,
                        MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == other && st.MPI_TAG == 5);
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 0);
    }
    int x = 7;
    OK(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD));
    OK(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
    CHECK(x == 7 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 0);
    int flag = 0;
    OK(MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag == 1 && st.MPI_SOURCE == MPI_PROC_NULL);
}

/* Wildcards: rank 0 takes one message of every other rank with
   ANY_SOURCE/ANY_TAG and learns who sent what from the status. */
static void wildcards(void)
{
    if (rank != 0) {
        int v = rank * 11;
        OK(MPI_Send(&v, 1, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD));
        return;
    }
    int seen[4] = {0};
    for (int i = 1; i < size; i++) {
        MPI_Status st;
        int v = -1;
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < size && !seen[st.MPI_SOURCE]);
        CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE && v == st.MPI_SOURCE * 11);
        seen[st.MPI_SOURCE] = 1;
    }
}

/* Non-overtaking: 200 messages 0 -> 1 on two tags; receiving by tag and by
   ANY_TAG keeps each tag's order and the arrival order. */
static void order(void)
{
    enum { N = 200 };
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            OK(MPI_Send(&i, 1, MPI_INT, 1, i % 2, MPI_COMM_WORLD));
    } else if (rank == 1) {
        int next[2] = {0, 1}, v;
        MPI_Status st;
        /* the first 100 by tag 1 first: each tag keeps its own order */
        for (int i = 0; i < N / 4; i++) {
            OK(MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &st));
            CHECK(v == next[1]);
            next[1] += 2;
        }
        for (int i = 0; i < N / 4; i++) {
            OK(MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &st));
            CHECK(v == next[0]);
            next[0] += 2;
        }
        /* the rest with ANY_TAG: strictly increasing, in send order */
        int last = -1;
        for (int i = 0; i < N / 2; i++) {
            OK(MPI_Recv(&v, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(v > last && st.MPI_TAG == v % 2 && v == next[v % 2]);
            next[v % 2] += 2;
            last = v;
        }
    }
}

/* Truncation: a receive smaller than the message answers MPI_ERR_TRUNCATE
   with what fitted, posted before the message came and after. */
static void truncation(void)
{
    int buf[8], in[8];
    seq_fill(buf, 8, 9);
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    if (rank == 1) {
        memset(in, 0, sizeof in);
        OK(MPI_Irecv(in, 4, MPI_INT, 0, 40, MPI_COMM_WORLD, &r));
    }
    if (rank == 0)
        OK(MPI_Send(buf, 8, MPI_INT, 1, 41, MPI_COMM_WORLD)); /* before: unexpected */
    handshake();
    if (rank == 0)
        OK(MPI_Send(buf, 8, MPI_INT, 1, 40, MPI_COMM_WORLD)); /* after: posted */
    if (rank != 1)
        return;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Wait(&r, &st) == MPI_ERR_TRUNCATE);
    CHECK(st.MPI_ERROR == MPI_ERR_TRUNCATE && st.MPI_SOURCE == 0 && st.MPI_TAG == 40);
    int n;
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 4 && seq_same(in, 4, 9) && in[4] == 0);
    memset(in, 0, sizeof in);
    CHECK(MPI_Recv(in, 3, MPI_INT, 0, 41, MPI_COMM_WORLD, &st) == MPI_ERR_TRUNCATE);
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 3 && seq_same(in, 3, 9) && in[3] == 0);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* A blocking receive with nothing posted before it and nothing unexpected
   (it waits in the tagged layer itself, without a request): truncation
   with what fitted, its status, a synchronous send's message (which comes
   through the library's engine instead), zero counts and an ignored
   status. Rank 1 asks for each message once it waits (a message before
   the receive would be unexpected); rank 0 sends it when asked. */
static void quick_recv(void)
{
    int buf[8], in[8], n, go = 0;
    MPI_Status st;
    seq_fill(buf, 8, 11);
    if (rank == 0) {
        OK(MPI_Recv(&go, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Send(buf, 8, MPI_INT, 1, 51, MPI_COMM_WORLD));
        OK(MPI_Ssend(buf, 5, MPI_INT, 1, 52, MPI_COMM_WORLD));
        OK(MPI_Send(buf, 0, MPI_INT, 1, 53, MPI_COMM_WORLD));
        OK(MPI_Send(buf, 2, MPI_INT, 1, 54, MPI_COMM_WORLD));
    }
    if (rank != 1)
        return;
    OK(MPI_Send(&go, 1, MPI_INT, 0, 50, MPI_COMM_WORLD));
    memset(in, 0, sizeof in);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Recv(in, 3, MPI_INT, 0, 51, MPI_COMM_WORLD, &st) == MPI_ERR_TRUNCATE);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(st.MPI_ERROR == MPI_ERR_TRUNCATE && st.MPI_SOURCE == 0 && st.MPI_TAG == 51);
    CHECK(n == 3 && seq_same(in, 3, 11) && in[3] == 0);
    memset(in, 0, sizeof in);
    OK(MPI_Recv(in, 8, MPI_INT, 0, 52, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 5 && seq_same(in, 5, 11) && in[5] == 0 && st.MPI_TAG == 52);
    OK(MPI_Recv(NULL, 0, MPI_INT, 0, 53, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 0 && st.MPI_SOURCE == 0 && st.MPI_TAG == 53 &&
          st.MPI_ERROR == MPI_SUCCESS);
    memset(in, 0, sizeof in);
    OK(MPI_Recv(in, 8, MPI_INT, 0, 54, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(seq_same(in, 2, 11) && in[2] == 0);
}

/* Probe and Iprobe: what they report is what the receive then takes. */
static void probes(void)
{
    int buf[32];
    MPI_Status st;
    int flag = 1;
    if (rank == 1) {
        OK(MPI_Iprobe(0, 50, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag == 0); /* rank 0 sends only after the handshake */
    }
    handshake();
    if (rank == 0) {
        seq_fill(buf, 32, 5);
        OK(MPI_Send(buf, 17, MPI_INT, 1, 50, MPI_COMM_WORLD));
        OK(MPI_Send(buf, 3, MPI_INT, 1, 51, MPI_COMM_WORLD));
    } else if (rank == 1) {
        OK(MPI_Probe(MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, &st));
        int n;
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 51 && n == 3);
        /* 50 came first: it is in as well, and ANY_TAG finds it first */
        OK(MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(flag == 1 && st.MPI_TAG == 50 && n == 17);
        memset(buf, 0, sizeof buf);
        OK(MPI_Recv(buf, 32, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 17 && seq_same(buf, 17, 5));
        OK(MPI_Recv(buf, 32, MPI_INT, 0, 51, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 3 && seq_same(buf, 3, 5));
        OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag == 0);
    }
}

/* Matched probes: the message found is taken out of the queue (a probe no
   longer sees it), received by MPI_Mrecv/Imrecv whatever came after it; a
   synchronous send is acknowledged only then; MPI_PROC_NULL's message. */
static void matched(void)
{
    int buf[32];
    MPI_Status st;
    MPI_Message msg;
    int flag = 1, n;
    if (rank == 1) {
        OK(MPI_Improbe(0, 60, MPI_COMM_WORLD, &flag, &msg, &st));
        CHECK(flag == 0 && msg == MPI_MESSAGE_NULL); /* sent after the handshake */
    }
    handshake();
    if (rank == 0) {
        MPI_Request r;
        seq_fill(buf, 32, 8);
        OK(MPI_Send(buf, 9, MPI_INT, 1, 60, MPI_COMM_WORLD));
        OK(MPI_Issend(buf, 4, MPI_INT, 1, 61, MPI_COMM_WORLD, &r));
        OK(MPI_Send(buf, 2, MPI_INT, 1, 60, MPI_COMM_WORLD));
        OK(MPI_Send(buf, 20, MPI_INT, 1, 62, MPI_COMM_WORLD));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE)); /* rank 1's MPI_Mrecv matched it */
    } else if (rank == 1) {
        OK(MPI_Mprobe(0, 60, MPI_COMM_WORLD, &msg, &st));
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(msg != MPI_MESSAGE_NULL && st.MPI_TAG == 60 && n == 9);
        /* taken: a probe for tag 60 now sees the second one (2 ints) */
        OK(MPI_Probe(0, 60, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 2);
        MPI_Message sync_msg, big;
        OK(MPI_Mprobe(MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &sync_msg, &st));
        OK(MPI_Mprobe(0, 62, MPI_COMM_WORLD, &big, &st));
        memset(buf, 0, sizeof buf);
        OK(MPI_Mrecv(buf, 32, MPI_INT, &msg, &st));
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(msg == MPI_MESSAGE_NULL && n == 9 && st.MPI_SOURCE == 0 &&
              seq_same(buf, 9, 8));
        MPI_Request r;
        OK(MPI_Imrecv(buf, 32, MPI_INT, &sync_msg, &r));
        OK(MPI_Wait(&r, &st));
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 4 && st.MPI_TAG == 61 && seq_same(buf, 4, 8));
        OK(MPI_Recv(buf, 32, MPI_INT, 0, 60, MPI_COMM_WORLD, &st)); /* the second 60 */
        OK(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 2);
        /* too small a buffer: the message is truncated, as a receive's */
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        CHECK(MPI_Mrecv(buf, 5, MPI_INT, &big, &st) == MPI_ERR_TRUNCATE);
        CHECK(big == MPI_MESSAGE_NULL && seq_same(buf, 5, 8));
        MPI_Message none = MPI_MESSAGE_NULL;
        CHECK(MPI_Mrecv(buf, 1, MPI_INT, &none, &st) == MPI_ERR_REQUEST);
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }
    OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
    OK(MPI_Mrecv(buf, 3, MPI_INT, &msg, &st));
    OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(msg == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL && n == 0);
}

/* Issend completes only once the receive matched: rank 1 posts it only
   after rank 0 has tested the send incomplete (and told rank 1 so). */
static void synchronous(void)
{
    int v = 77, w = 0;
    MPI_Request r;
    MPI_Status st;
    if (rank == 0) {
        int flag = 1;
        OK(MPI_Issend(&v, 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &r));
        for (int i = 0; i < 20; i++) {
            OK(MPI_Test(&r, &flag, &st));
            CHECK(flag == 0 && r != MPI_REQUEST_NULL);
        }
        OK(MPI_Send(&v, 1, MPI_INT, 1, 61, MPI_COMM_WORLD)); /* "post it now" */
        OK(MPI_Wait(&r, &st));
        CHECK(r == MPI_REQUEST_NULL);
    } else if (rank == 1) {
        OK(MPI_Recv(&w, 1, MPI_INT, 0, 61, MPI_COMM_WORLD, &st)); /* overtakes 60 */
        w = 0;
        OK(MPI_Recv(&w, 1, MPI_INT, 0, 60, MPI_COMM_WORLD, &st));
        CHECK(w == 77);
    }
}

/* Many outstanding requests, completed by Waitall, Waitany, Waitsome,
   Testall, Testany, Testsome; NULL entries are skipped. */
static void many(void)
{
    enum { N = 300 };
    static int in[N], out[N];
    static MPI_Request rq[N];
    static MPI_Status sts[N];
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < N; i++) {
            in[i] = -1;
            out[i] = rank * 1000 + i + round;
            rq[i] = MPI_REQUEST_NULL; /* 7's message goes to a receive below */
            if (i != 7)
                OK(MPI_Irecv(&in[i], 1, MPI_INT, prev, i, MPI_COMM_WORLD, &rq[i]));
        }
        for (int i = N - 1; i >= 0; i--) /* reverse: every receive waits for its tag */
            OK(MPI_Send(&out[i], 1, MPI_INT, next, i, MPI_COMM_WORLD));
        int done = 0, idx, outc, flag, ix[N];
        MPI_Status s;
        switch (round) {
        case 0:
            OK(MPI_Waitall(N, rq, sts));
            done = N - 1;
            break;
        case 1:
            for (int k = 0; k < N - 1; k++) {
                OK(MPI_Waitany(N, rq, &idx, &s));
                CHECK(idx >= 0 && idx != 7 && rq[idx] == MPI_REQUEST_NULL &&
                      s.MPI_TAG == idx);
                done++;
            }
            OK(MPI_Waitany(N, rq, &idx, &s)); /* none active left */
            CHECK(idx == MPI_UNDEFINED);
            break;
        case 2:
            while (done < N - 1) {
                OK(MPI_Waitsome(N, rq, &outc, ix, sts));
                CHECK(outc >= 1);
                for (int k = 0; k < outc; k++)
                    CHECK(sts[k].MPI_TAG == ix[k] && rq[ix[k]] == MPI_REQUEST_NULL);
                done += outc;
            }
            OK(MPI_Waitsome(N, rq, &outc, ix, sts));
            CHECK(outc == MPI_UNDEFINED);
            break;
        case 3:
            for (flag = 0; !flag;)
                OK(MPI_Testall(N, rq, &flag, MPI_STATUSES_IGNORE));
            done = N - 1;
            break;
        case 4:
            while (done < N - 1) {
                OK(MPI_Testany(N, rq, &idx, &flag, &s));
                if (flag) {
                    CHECK(idx != MPI_UNDEFINED && s.MPI_TAG == idx);
                    done++;
                }
            }
            OK(MPI_Testany(N, rq, &idx, &flag, &s));
            CHECK(flag == 1 && idx == MPI_UNDEFINED);
            break;
        default:
            while (done < N - 1) {
                OK(MPI_Testsome(N, rq, &outc, ix, MPI_STATUSES_IGNORE));
                CHECK(outc >= 0);
                done += outc;
            }
        }
        CHECK(done == N - 1);
        int v = -1;
        OK(MPI_Recv(&v, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == prev * 1000 + 7 + round);
        for (int i = 0; i < N; i++)
            CHECK(i == 7 || in[i] == prev * 1000 + i + round);
        handshake();
    }
}

/* Persistent requests, started again and again; Startall. */
static void persistent(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[3], in[3];
    MPI_Request rq[2];
    OK(MPI_Recv_init(in, 3, MPI_INT, prev, 70, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Send_init(out, 3, MPI_INT, next, 70, MPI_COMM_WORLD, &rq[1]));
    int flag = 0;
    MPI_Status st;
    OK(MPI_Test(&rq[0], &flag, &st)); /* inactive: complete, empty */
    CHECK(flag == 1 && rq[0] != MPI_REQUEST_NULL);
    for (int it = 0; it < 10; it++) {
        seq_fill(out, 3, rank + it);
        memset(in, 0, sizeof in);
        if (it % 2)
            OK(MPI_Startall(2, rq));
        else {
            OK(MPI_Start(&rq[0]));
            OK(MPI_Start(&rq[1]));
        }
        /* an active request cannot be started again */
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        CHECK(MPI_Start(&rq[0]) == MPI_ERR_REQUEST);
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
        OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL);
        CHECK(seq_same(in, 3, prev + it));
    }
    OK(MPI_Request_free(&rq[0]));
    OK(MPI_Request_free(&rq[1]));
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL);
}

/* Cancel of a receive nobody sends to; Request_free of a pending one. */
static void cancels(void)
{
    int x = 0, flag = 0;
    MPI_Request r;
    MPI_Status st;
    OK(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 80, MPI_COMM_WORLD, &r));
    OK(MPI_Cancel(&r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1 && r == MPI_REQUEST_NULL);
    /* a freed receive still takes its message (and that one only) */
    int y = -1, z = -1;
    if (rank == 1) {
        OK(MPI_Irecv(&y, 1, MPI_INT, 0, 81, MPI_COMM_WORLD, &r));
        OK(MPI_Request_free(&r));
        CHECK(r == MPI_REQUEST_NULL);
    }
    handshake();
    if (rank == 0) {
        int a = 123, b = 456;
        OK(MPI_Send(&a, 1, MPI_INT, 1, 81, MPI_COMM_WORLD));
        OK(MPI_Send(&b, 1, MPI_INT, 1, 81, MPI_COMM_WORLD));
    } else if (rank == 1) {
        OK(MPI_Recv(&z, 1, MPI_INT, 0, 81, MPI_COMM_WORLD, &st));
        CHECK(z == 456 && y == 123);
    }
    /* after a cancelled wildcard receive, another one still comes before
       a receive of one source posted behind it: it takes the first message */
    if (rank == 1) {
        int w = -1, o = -1;
        MPI_Request rs[2];
        OK(MPI_Irecv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 83, MPI_COMM_WORLD, &r));
        OK(MPI_Cancel(&r));
        OK(MPI_Wait(&r, &st));
        OK(MPI_Irecv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 83, MPI_COMM_WORLD, &rs[0]));
        OK(MPI_Irecv(&o, 1, MPI_INT, 0, 83, MPI_COMM_WORLD, &rs[1]));
        OK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
        CHECK(w == 1 && o == 2);
    } else if (rank == 0) {
        for (int v = 1; v <= 2; v++)
            OK(MPI_Send(&v, 1, MPI_INT, 1, 83, MPI_COMM_WORLD));
    }
    /* a cancelled send completes as sent (eager) and is not cancelled */
    if (rank == 0) {
        int a = 9;
        OK(MPI_Isend(&a, 1, MPI_INT, 1, 82, MPI_COMM_WORLD, &r));
        OK(MPI_Cancel(&r));
        OK(MPI_Wait(&r, &st));
        OK(MPI_Test_cancelled(&st, &flag));
        CHECK(flag == 0);
    } else if (rank == 1) {
        OK(MPI_Recv(&z, 1, MPI_INT, 0, 82, MPI_COMM_WORLD, &st));
        CHECK(z == 9);
    }
}

/* Large messages both ways at once (Sendrecv) and Sendrecv_replace. */
static void large(int n)
{
    int *out = malloc((size_t)n * sizeof *out), *in = malloc((size_t)n * sizeof *in);
    CHECK(out && in);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    seq_fill(out, n, rank + 3);
    MPI_Status st;
    OK(MPI_Sendrecv(out, n, MPI_INT, next, 90, in, n, MPI_INT, prev, 90, MPI_COMM_WORLD,
                    &st));
    int c;
    OK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK(c == n && seq_same(in, n, prev + 3));
    OK(MPI_Sendrecv_replace(out, n, MPI_INT, next, 91, prev, 91, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == prev && seq_same(out, n, prev + 3));
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (size < 2) {
        fprintf(stderr, "needs 2 ranks at least\n");
        MPI_Finalize();
        return 77;
    }
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &hs));
    ring();
    empties();
    wildcards();
    handshake();
    order();
    truncation();
    handshake();
    quick_recv();
    handshake();
    probes();
    handshake();
    matched();
    handshake();
    synchronous();
    many();
    persistent();
    cancels();
    large(1);
    large(1 << 18); /* 1 MiB each way */
    handshake();
    OK(MPI_Comm_free(&hs));
    OK(MPI_Finalize());
    if (rank == 0)
        printf("mpi_p2p: %d ranks passed\n", size);
    return 0;
}
