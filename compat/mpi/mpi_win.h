/* SPDX-License-Identifier: BSD-3-Clause */
/* One-sided communication (mpi_win.c): the active messages a target's
   handler takes and answers, shared with the test that forges them. */
#ifndef FLIT_MPI_WIN_H
#define FLIT_MPI_WIN_H

#include <flit/am.h>

/* Request kinds (argument 0 of a request). */
enum {
    K_ACC,
    K_GACC,
    K_CAS,
    K_LOCK,
    K_POLL,
    K_UNLOCK,
    K_POST,
    K_COMPLETE,
    K_FIND, /* a dynamic window: the attached region holding an address */
    K_NKINDS
};

/* Request arguments. */
enum {
    A_KIND,
    A_WIN,    /* the target's window id */
    A_OWIN,   /* the origin's window id, echoed in the reply */
    A_SEQ,    /* the origin's wait it answers, echoed */
    A_OFF_LO, /* byte offset in the window */
    A_OFF_HI,
    A_COUNT, /* elements */
    A_TYPE,  /* predefined type code */
    A_OP,    /* op id; a lock's type */
    A_NARGS
};

/* Reply arguments. */
enum { R_OWIN, R_SEQ, R_STATUS, R_GRANTED, R_NARGS };

/* For the test of forged one-sided messages (tests/mpi/mpi_win_forged.c,
   linked with this library's objects, not its exports): the request and
   reply handlers' indices on mp_ep, and the reply handler's function, put
   back after the test read the answers to what it forged itself. */
flit_handler_t mp_win_request_handler(void);
flit_handler_t mp_win_reply_handler(void);
flit_am_handler_fn mp_win_reply_fn(void);

#endif /* FLIT_MPI_WIN_H */
