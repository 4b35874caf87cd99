/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided requests and replies forged by hand: what another process may
 * send to the target's handler, whatever it is. Two ranks. Rank 0 holds a
 * window of known contents (and a dynamic one with one region attached);
 * rank 1 sends raw active messages to rank 0's request handler, each with
 * one field wrong (argument count, kind, window id, a freed window's id,
 * offsets past the window or wrapping 64 bits, element counts whose bytes
 * overflow, type and op codes, an op the type does not take, a payload
 * shorter or longer than its count, lock types, an unlock or a poll without
 * a lock, a dynamic window's address not attached) and reads every answer
 * itself: each must be the error class that field earns, and no answer may
 * come to what gets none (a malformed request, a notice for no window).
 * Then rank 0 sends forged replies to rank 1's reply handler (argument
 * counts, unknown windows and sequences, a verdict nobody waits for, a
 * payload nobody asked). Afterwards rank 0's memory is unchanged byte for
 * byte, and an accumulate, a fetch-and-op and a get between fences give
 * the exact result.
 *
 * Built with libflit-mpi's objects rather than against its exports: it
 * needs the library's endpoint, handler indices and wire format
 * (mpi_internal.h, mpi_win.h), which the shared library keeps to itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <flit/am.h>

#include "mpi_check.h"
#include "mpi_internal.h"
#include "mpi_win.h"

#define WIN_INTS  64
#define WIN_BYTES (WIN_INTS * (int)sizeof(int))
#define DYN_BYTES 64
#define MAX_CASES 96
#define NO_REPLY  (-1)

/* Window ids at rank 0: created in this order by both ranks, the third
   freed (its slot stays empty); the first two are checked by a forged
   request that must succeed. */
enum { W_MAIN, W_DYN, W_FREED };

static struct {
    int expect; /* an error class, MPI_SUCCESS, or NO_REPLY */
    int line;
    int replies, status;
    size_t nbytes;
    unsigned char data[32];
} cases[MAX_CASES + 1];
static int ncases, nreplies, stray;
static int case_get, case_find; /* the two that must succeed */

static void capture(flit_token_t *tok, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)tok, (void)user;
    if (nargs != R_NARGS || args[R_OWIN] != 0x5eed || args[R_SEQ] == 0 ||
        args[R_SEQ] > (uint32_t)ncases) {
        stray++;
        return;
    }
    int i = (int)args[R_SEQ];
    cases[i].replies++;
    cases[i].status = (int)args[R_STATUS];
    cases[i].nbytes = nbytes;
    if (buf && nbytes <= sizeof cases[i].data)
        memcpy(cases[i].data, buf, nbytes);
    nreplies++;
}

/* Sends a request of nargs arguments (a copy of a, its sequence set) with
   the payload data, bytes long, to rank 0's request handler. */
static void send_raw(int line, int expect, uint32_t *a, unsigned nargs, const void *data,
                     size_t bytes)
{
    CHECK(ncases < MAX_CASES);
    int i = ++ncases;
    cases[i].expect = expect;
    cases[i].line = line;
    a[A_OWIN] = 0x5eed;
    a[A_SEQ] = (uint32_t)i;
    flit_handler_t h = mp_win_request_handler();
    flit_status st =
        bytes ? flit_am_medium(mp_ep, flit_rank(0), h, data, bytes, a, nargs, 0)
              : flit_am_short(mp_ep, flit_rank(0), h, a, nargs, 0);
    CHECK(st == FLIT_OK);
}

static void forge(int line, int expect, uint32_t kind, uint32_t win, uint64_t off,
                  uint32_t count, int type, uint32_t op, const void *data, size_t bytes)
{
    uint32_t a[A_NARGS] = {[A_KIND] = kind,
                           [A_WIN] = win,
                           [A_OFF_LO] = (uint32_t)off,
                           [A_OFF_HI] = (uint32_t)(off >> 32),
                           [A_COUNT] = count,
                           [A_TYPE] = (uint32_t)type,
                           [A_OP] = op};
    send_raw(line, expect, a, A_NARGS, data, bytes);
}

#define FORGE(expect, ...) forge(__LINE__, expect, __VA_ARGS__)

/* A dynamic window's lookup of [addr, addr + len). */
static void find(int line, int expect, uint32_t win, uint64_t addr, uint64_t len)
{
    forge(line, expect, K_FIND, win, addr, (uint32_t)len, (int)(len >> 32), 0, NULL, 0);
}

static void malformed(void)
{
    uint32_t a[FLIT_AM_MAX_ARGS] = {[A_KIND] = K_ACC, [A_WIN] = W_MAIN};
    send_raw(__LINE__, NO_REPLY, a, A_NARGS - 1, NULL, 0);
    send_raw(__LINE__, NO_REPLY, a, A_NARGS + 1, NULL, 0);
    send_raw(__LINE__, NO_REPLY, a, FLIT_AM_MAX_ARGS, NULL, 0);
    send_raw(__LINE__, NO_REPLY, a, 0, NULL, 0);
    FORGE(NO_REPLY, K_NKINDS, W_MAIN, 0, 1, 0, 0, NULL, 0);
    FORGE(NO_REPLY, UINT32_MAX, W_MAIN, 0, 1, 0, 0, NULL, 0);
    FORGE(NO_REPLY, K_POST, 777, 0, 0, 0, 0, NULL, 0);
    FORGE(NO_REPLY, K_COMPLETE, W_FREED, 0, 0, 0, 0, NULL, 0);
}

static void forge_all(uint64_t dbase)
{
    int ti = mp_type_code(MPI_INT), td = mp_type_code(MPI_DOUBLE);
    int one[4] = {1, 1, 1, 1};
    double d[4] = {1, 1, 1, 1};
    const uint64_t top = UINT64_MAX;

    malformed();
    /* what must succeed: the window ids are those assumed */
    FORGE(MPI_SUCCESS, K_GACC, W_MAIN, 8, 2, ti, OP_NO_OP, NULL, 0);
    case_get = ncases;
    find(__LINE__, MPI_SUCCESS, W_DYN, dbase + 4, 8);
    case_find = ncases;
    /* windows */
    FORGE(MPI_ERR_WIN, K_ACC, 777, 0, 1, ti, OP_SUM, one, 4);
    FORGE(MPI_ERR_WIN, K_ACC, UINT32_MAX, 0, 1, ti, OP_SUM, one, 4);
    FORGE(MPI_ERR_WIN, K_ACC, W_FREED, 0, 1, ti, OP_SUM, one, 4);
    FORGE(MPI_ERR_WIN, K_GACC, W_FREED, 0, 1, ti, OP_NO_OP, NULL, 0);
    FORGE(MPI_ERR_WIN, K_LOCK, W_FREED, 0, 0, 0, MPI_LOCK_SHARED, NULL, 0);
    FORGE(MPI_ERR_WIN, K_UNLOCK, 777, 0, 0, 0, 0, NULL, 0);
    find(__LINE__, MPI_ERR_WIN, W_FREED, 0, 4);
    find(__LINE__, MPI_ERR_WIN, W_MAIN, 0, 4); /* not a dynamic window */
    /* offsets */
    FORGE(MPI_ERR_DISP, K_ACC, W_MAIN, WIN_BYTES, 1, ti, OP_SUM, one, 4);
    FORGE(MPI_ERR_DISP, K_ACC, W_MAIN, WIN_BYTES - 4, 2, ti, OP_SUM, one, 8);
    FORGE(MPI_ERR_DISP, K_ACC, W_MAIN, (uint64_t)1 << 32, 1, ti, OP_REPLACE, one, 4);
    FORGE(MPI_ERR_DISP, K_ACC, W_MAIN, top - 3, 2, ti, OP_SUM, one, 8); /* wraps */
    FORGE(MPI_ERR_DISP, K_ACC, W_MAIN, top, 1, ti, OP_REPLACE, one, 4);
    FORGE(MPI_ERR_DISP, K_GACC, W_MAIN, WIN_BYTES, 1, ti, OP_NO_OP, NULL, 0);
    FORGE(MPI_ERR_DISP, K_CAS, W_MAIN, WIN_BYTES, 1, ti, 0, one, 8);
    FORGE(MPI_ERR_DISP, K_CAS, W_MAIN, top - 1, 1, ti, 0, one, 8);
    /* counts whose bytes overflow */
    FORGE(MPI_ERR_COUNT, K_ACC, W_MAIN, 0, UINT32_MAX, td, OP_SUM, d, 8);
    FORGE(MPI_ERR_COUNT, K_ACC, W_MAIN, 0, 0x20000001u, td, OP_SUM, d, 8);
    FORGE(MPI_ERR_COUNT, K_ACC, W_MAIN, 0, FLIT_AM_MAX_MEDIUM / 8 + 1, td, OP_SUM, d, 8);
    FORGE(MPI_ERR_COUNT, K_GACC, W_MAIN, 0, UINT32_MAX, ti, OP_NO_OP, NULL, 0);
    /* type and op codes */
    FORGE(MPI_ERR_TYPE, K_ACC, W_MAIN, 0, 1, 9999, OP_SUM, one, 4);
    FORGE(MPI_ERR_TYPE, K_ACC, W_MAIN, 0, 1, -1, OP_SUM, one, 4);
    FORGE(MPI_ERR_TYPE, K_ACC, W_MAIN, 0, 1, INT32_MIN, OP_SUM, one, 4);
    FORGE(MPI_ERR_OP, K_ACC, W_MAIN, 0, 1, ti, 9999, one, 4);
    FORGE(MPI_ERR_OP, K_ACC, W_MAIN, 0, 1, ti, UINT32_MAX, one, 4);
    FORGE(MPI_ERR_OP, K_ACC, W_MAIN, 0, 1, ti, OP_USER, one, 4);
    FORGE(MPI_ERR_OP, K_ACC, W_MAIN, 0, 1, ti, OP_NO_OP, NULL, 0); /* only fetching */
    FORGE(MPI_ERR_OP, K_ACC, W_MAIN, 0, 1, td, OP_BAND, d, 8);     /* not for the type */
    FORGE(MPI_ERR_OP, K_ACC, W_MAIN, 0, 1, ti, OP_MAXLOC, one, 4);
    FORGE(MPI_ERR_OP, K_GACC, W_MAIN, 0, 1, td, OP_BXOR, d, 8);
    /* payloads other than the count says */
    FORGE(MPI_ERR_ARG, K_ACC, W_MAIN, 0, 2, ti, OP_SUM, one, 4);
    FORGE(MPI_ERR_ARG, K_ACC, W_MAIN, 0, 2, ti, OP_SUM, one, 12);
    FORGE(MPI_ERR_ARG, K_ACC, W_MAIN, 0, 2, ti, OP_SUM, NULL, 0);
    FORGE(MPI_ERR_ARG, K_GACC, W_MAIN, 0, 1, ti, OP_NO_OP, one, 4);
    FORGE(MPI_ERR_ARG, K_CAS, W_MAIN, 0, 1, ti, 0, one, 4);
    FORGE(MPI_ERR_ARG, K_CAS, W_MAIN, 0, 1, ti, 0, one, 12);
    /* compare-and-swap: one element of a type compared by its bytes */
    FORGE(MPI_ERR_TYPE, K_CAS, W_MAIN, 0, 2, ti, 0, one, 16);
    FORGE(MPI_ERR_TYPE, K_CAS, W_MAIN, 0, 1, td, 0, d, 16);
    /* locks */
    FORGE(MPI_ERR_LOCKTYPE, K_LOCK, W_MAIN, 0, 0, 0, 0, NULL, 0);
    FORGE(MPI_ERR_LOCKTYPE, K_LOCK, W_MAIN, 0, 0, 0, 99, NULL, 0);
    FORGE(MPI_ERR_LOCKTYPE, K_LOCK, W_MAIN, 0, 0, 0, UINT32_MAX, NULL, 0);
    FORGE(MPI_ERR_RMA_SYNC, K_UNLOCK, W_MAIN, 0, 0, 0, MPI_LOCK_EXCLUSIVE, NULL, 0);
    FORGE(MPI_ERR_RMA_SYNC, K_POLL, W_MAIN, 0, 0, 0, MPI_LOCK_SHARED, NULL, 0);
    /* a dynamic window: addresses not attached */
    find(__LINE__, MPI_ERR_DISP, W_DYN, 8, 4);
    find(__LINE__, MPI_ERR_DISP, W_DYN, dbase + DYN_BYTES - 4, 8);
    find(__LINE__, MPI_ERR_DISP, W_DYN, dbase + DYN_BYTES + 1, 0);
    find(__LINE__, MPI_ERR_DISP, W_DYN, dbase, top);
    find(__LINE__, MPI_ERR_DISP, W_DYN, top, 2);
    FORGE(MPI_ERR_DISP, K_ACC, W_DYN, 8, 1, ti, OP_REPLACE, one, 4);
    FORGE(MPI_ERR_DISP, K_ACC, W_DYN, dbase + DYN_BYTES - 4, 2, ti, OP_SUM, one, 8);
    FORGE(MPI_ERR_DISP, K_ACC, W_DYN, top - 3, 2, ti, OP_SUM, one, 8);
    FORGE(MPI_ERR_DISP, K_CAS, W_DYN, dbase - 4, 1, ti, 0, one, 8);
}

/* Rank 1: forges, reads every answer, and checks it. */
static void forge_and_check(uint64_t dbase, const int *contents)
{
    flit_handler_t h = mp_win_reply_handler();
    CHECK(flit_am_register(mp_ep, h, capture, NULL) == FLIT_OK);
    forge_all(dbase);
    int want = 0;
    for (int i = 1; i <= ncases; i++)
        want += cases[i].expect != NO_REPLY;
    /* answers come while rank 0 makes progress (in a barrier) */
    for (int n = 0; n < 30000 && nreplies < want; n++) {
        flit_status st = flit_wait(mp_ep, 1000);
        CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
    }
    CHECK(flit_am_register(mp_ep, h, mp_win_reply_fn(), NULL) == FLIT_OK);
    int bad = 0;
    for (int i = 1; i <= ncases; i++) {
        int e = cases[i].expect, ok = e == NO_REPLY
                                          ? cases[i].replies == 0
                                          : cases[i].replies == 1 && cases[i].status == e;
        if (!ok) {
            fprintf(stderr, "mpi_win_forged.c:%d: %d replies, class %d; expected %d\n",
                    cases[i].line, cases[i].replies, cases[i].status, e);
            bad++;
        }
    }
    CHECK(bad == 0 && stray == 0 && nreplies == want);
    /* the two that succeeded: the elements fetched, the region found */
    CHECK(cases[case_get].nbytes == 2 * sizeof(int));
    CHECK(memcmp(cases[case_get].data, contents + 2, 2 * sizeof(int)) == 0);
    uint64_t f[3];
    CHECK(cases[case_find].nbytes == sizeof f);
    memcpy(f, cases[case_find].data, sizeof f);
    CHECK(f[0] == dbase && f[1] == DYN_BYTES);
    printf("mpi_win_forged: %d forged requests, %d refused as expected\n", ncases,
           ncases - 2);
}

/* Rank 0: replies nobody asked for, to rank 1's reply handler. */
static void forge_replies(void)
{
    flit_handler_t h = mp_win_reply_handler();
    flit_rank_t to = flit_rank(1);
    uint32_t r[FLIT_AM_MAX_ARGS] = {0};
    unsigned char junk[100] = {0};
    CHECK(flit_am_short(mp_ep, to, h, r, 0, 0) == FLIT_OK);
    CHECK(flit_am_short(mp_ep, to, h, r, R_NARGS - 1, 0) == FLIT_OK);
    CHECK(flit_am_short(mp_ep, to, h, r, FLIT_AM_MAX_ARGS, 0) == FLIT_OK);
    uint32_t cases_r[][R_NARGS] = {
        {777, 5, 0, 0},                      /* no such window */
        {UINT32_MAX, 5, 0, 0},               /* no such window */
        {W_MAIN, 0, MPI_ERR_OTHER, 0},       /* a verdict with none pending */
        {W_MAIN, 0x7ffffff0, 0, 1},          /* a sequence nobody waits for */
        {W_MAIN, 0x7ffffff1, UINT32_MAX, 1}, /* and a status out of range */
    };
    for (size_t i = 0; i < sizeof cases_r / sizeof cases_r[0]; i++) {
        CHECK(flit_am_short(mp_ep, to, h, cases_r[i], R_NARGS, 0) == FLIT_OK);
        CHECK(flit_am_medium(mp_ep, to, h, junk, sizeof junk, cases_r[i], R_NARGS, 0) ==
              FLIT_OK);
    }
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    int rank, size;
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == 2);

    int contents[WIN_INTS];
    for (int i = 0; i < WIN_INTS; i++)
        contents[i] = 0x10203 * (i + 1);
    unsigned char dcontents[DYN_BYTES];
    for (int i = 0; i < DYN_BYTES; i++)
        dcontents[i] = (unsigned char)(0xa5 ^ i);

    int *base;
    MPI_Win win, dyn, gone;
    OK(MPI_Win_allocate(WIN_BYTES, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                        &win));
    memcpy(base, contents, WIN_BYTES);
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn));
    static unsigned char dmem[DYN_BYTES];
    memcpy(dmem, dcontents, DYN_BYTES);
    if (rank == 0)
        OK(MPI_Win_attach(dyn, dmem, DYN_BYTES));
    int *gbase;
    OK(MPI_Win_allocate(16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &gbase, &gone));
    OK(MPI_Win_free(&gone));

    MPI_Aint daddr;
    OK(MPI_Get_address(dmem, &daddr));
    OK(MPI_Bcast(&daddr, 1, MPI_AINT, 0, MPI_COMM_WORLD));

    /* rank 1 forges while rank 0 waits in the barrier */
    if (rank == 1)
        forge_and_check((uint64_t)daddr, contents);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        forge_replies();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(memcmp(base, contents, WIN_BYTES) == 0);
        CHECK(memcmp(dmem, dcontents, DYN_BYTES) == 0);
    }

    /* both alive, and the window still works */
    int add[2] = {5, -7}, one = 3, old = 0, got[2] = {0, 0};
    OK(MPI_Win_fence(0, win));
    if (rank == 1) {
        OK(MPI_Accumulate(add, 2, MPI_INT, 0, 10, 2, MPI_INT, MPI_SUM, win));
        OK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 20, MPI_SUM, win));
        CHECK(old == contents[20]);
    }
    OK(MPI_Win_fence(0, win));
    if (rank == 1)
        OK(MPI_Get(got, 2, MPI_INT, 0, 10, 2, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    if (rank == 1)
        CHECK(got[0] == contents[10] + 5 && got[1] == contents[11] - 7);
    if (rank == 0) {
        contents[10] += 5;
        contents[11] -= 7;
        contents[20] += 3;
        CHECK(memcmp(base, contents, WIN_BYTES) == 0);
        CHECK(memcmp(dmem, dcontents, DYN_BYTES) == 0);
    }

    if (rank == 0)
        OK(MPI_Win_detach(dyn, dmem));
    OK(MPI_Win_free(&dyn));
    OK(MPI_Win_free(&win));
    OK(MPI_Finalize());
    if (rank == 0)
        printf("mpi_win_forged: OK\n");
    return 0;
}
