/* SPDX-License-Identifier: BSD-3-Clause */
/* One-sided communication (mpi_win.c, mpi_win_target.c): a window, and the
   active messages a target's handler takes and answers (shared with the
   test that forges them). */
#ifndef FLIT_MPI_WIN_H
#define FLIT_MPI_WIN_H

#include <stdint.h>

#include <flit/am.h>
#include <flit/rma.h>

#include "mpi_internal.h"

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

/* Elements of one accumulate message: its data (and a reply's) fit a
   medium message. */
#define ACC_MAX_BYTES FLIT_AM_MAX_MEDIUM

/* A dynamic window's memory attached here (MPI_Win_attach), or a region
   of a target's that this origin imported. */
typedef struct mp_attach {
    uint64_t base, size, id;
    flit_rma_region_t *region; /* here */
    flit_rma_remote_t *remote; /* a target's */
} mp_attach;

/* K_FIND's answer. */
typedef struct mp_found {
    uint64_t base, size, id;
} mp_found;

typedef struct mp_lock_wait {
    int rank, type;
} mp_lock_wait;

struct flit_mpi_win {
    int id; /* index in wins[] */
    MPI_Comm comm;
    void *base;
    size_t size;
    int disp_unit;
    int allocated; /* base is flit_rma_alloc memory */
    flit_rma_region_t *region;
    MPI_Errhandler errh;
    /* per member of comm */
    struct mp_win_peer {
        uint64_t region; /* 0: an empty window */
        uint64_t size;
        uint32_t win_id;
        int disp_unit;
        flit_rma_remote_t *remote;
        unsigned long pending; /* accumulates not yet answered */
        int locked;            /* the lock type this rank holds there, or 0 */
        /* post/start/complete/wait */
        unsigned posts;     /* its MPI_Win_post's not yet met by a start */
        unsigned completes; /* its MPI_Win_complete's not yet met by a wait */
        int started;        /* an access epoch to it is open (MPI_Win_start) */
        int exposed;        /* exposed to it (MPI_Win_post), until a wait */
        mp_attach *dyn;     /* a dynamic window: its regions imported here */
        int ndyn;
    } * peer;
    int fence_epoch; /* a fence opened an access epoch */
    int dynamic;     /* MPI_Win_create_dynamic's: displacements are addresses */
    mp_attach *att;  /* its memory attached here */
    int natt;
    int accessing; /* an MPI_Win_start epoch is open */
    int exposing;  /* an MPI_Win_post epoch is open */
    int lock_all;
    int nlocked;   /* targets locked */
    int async_err; /* a plain accumulate refused, for the next sync */
    /* the lock manager, as a target */
    int excl;     /* the holder of the exclusive lock, or -1 */
    int shared;   /* holders of the shared lock */
    int *holds;   /* per rank: the lock type it holds here, or 0 */
    int *waiting; /* per rank: 1 while its request is queued */
    mp_lock_wait *queue;
    int qhead, qlen; /* a ring of comm->size entries */
    char *name;      /* MPI_Win_set_name's, else NULL */
    struct mp_attr *attrs; /* the program's attributes (mpi_attr.c) */
    MPI_Aint attr_size;    /* MPI_WIN_SIZE's and MPI_WIN_CREATE_FLAVOR's values */
    int attr_flavor;
    /* MPI_Win_allocate_shared's: the members' memory is one block of its
       rank 0's (shm_mem, exported as shm_region), mapped here at shm_base
       (an import, shm_remote, elsewhere); each member's segment follows
       the one before it (their sizes: peer[].size). */
    int shm;
    char *shm_base;
    void *shm_mem;
    flit_rma_region_t *shm_region;
    flit_rma_remote_t *shm_remote;
};

/* The windows by id, and the handlers' indices on mp_ep (mpi_win.c). */
extern MPI_Win *mp_wins;
extern int mp_nwins;
extern flit_handler_t mp_h_req, mp_h_rep;

/* mpi_win_target.c: the request handler; whether compare-and-swap takes
   type t. */
void mp_win_on_request(flit_token_t *tok, void *buf, size_t nbytes, const uint32_t *args,
                       unsigned nargs, void *user);
int mp_win_cas_type(MPI_Datatype t);

/* mpi_win.c: w a live window; an error through w's handler; one step of
   waiting for world rank peer (-1: none); a request to world rank world;
   one to w's rank and the wait for its reply (its status); until every
   accumulate to rank (-1: all) is answered, and puts and gets complete. */
int mp_win_ok(MPI_Win w);
int mp_win_err(MPI_Win w, int code, const char *fn);
int mp_win_wait_step(int peer);
flit_status mp_win_send_request(int world, const uint32_t *args, const void *data,
                                size_t bytes);
int mp_win_request_wait(MPI_Win w, int rank, uint32_t *args, const void *data,
                        size_t bytes, void *result, size_t rbytes, int *granted);
int mp_win_complete_at(MPI_Win w, int rank);

/* mpi_win.c, dynamic windows: the import of rank's region holding
   [addr, addr + bytes) and the offset there (MPI_ERR_DISP when none);
   forgetting the import r (its region was detached). */
int mp_win_dyn_find(MPI_Win w, int rank, uint64_t addr, size_t bytes,
                    flit_rma_remote_t **r, uint64_t *off);
void mp_win_dyn_forget(MPI_Win w, int rank, flit_rma_remote_t *r);

/* For the test of forged one-sided messages (tests/mpi/mpi_win_forged.c,
   linked with this library's objects, not its exports): the request and
   reply handlers' indices on mp_ep, and the reply handler's function, put
   back after the test read the answers to what it forged itself. */
flit_handler_t mp_win_request_handler(void);
flit_handler_t mp_win_reply_handler(void);
flit_am_handler_fn mp_win_reply_fn(void);

#endif /* FLIT_MPI_WIN_H */
