/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI environment: one flit endpoint and one tagged context on it for
 * the whole job (every communicator's traffic, told apart by its context
 * bits in the tag), error classes and handlers, clocks.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_internal.h"

flit_ep_t *mp_ep;
flit_tagged_t *mp_tg;

static int initialized, finalized, thread_level;
static pthread_t main_thread; /* the one that called MPI_Init_thread */

/* ---- the library lock (MPI_THREAD_MULTIPLE; mpi_internal.h) ---- */

int mp_mt;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The holder: written under the lock, read by any thread (a thread finds
   itself there only if it holds the lock). */
static _Atomic(pthread_t) owner;
static unsigned idle_passes; /* under the lock: waits' idle passes in a row */

int mp_lock_enter(void)
{
    pthread_t self = pthread_self();
    if (pthread_equal(atomic_load_explicit(&owner, memory_order_relaxed), self))
        return 0;
    pthread_mutex_lock(&lock);
    atomic_store_explicit(&owner, self, memory_order_relaxed);
    return 1;
}

void mp_lock_leave(void)
{
    atomic_store_explicit(&owner, (pthread_t)0, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
}

void mp_mt_pause(int idle)
{
    if (!mp_mt || mp_nbc_inside())
        return;
    /* the running collective's number is the waiting thread's own */
    uint32_t seq = mp_coll_seq;
    unsigned passes = idle ? ++idle_passes : (idle_passes = 0);
    mp_lock_leave();
    if (passes < 64) {
        sched_yield();
    } else { /* nothing moved for a while: let the cores go */
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    mp_lock_enter();
    mp_coll_seq = seq;
}

struct flit_mpi_errhandler flit_mpi_errors_are_fatal = {.fatal = 1};
struct flit_mpi_errhandler flit_mpi_errors_return = {.fatal = 0};

int mp_ready(void)
{
    return initialized && !finalized;
}

static const char *const class_text[] = {
    [MPI_SUCCESS] = "no error",
    [MPI_ERR_BUFFER] = "invalid buffer pointer",
    [MPI_ERR_COUNT] = "invalid count argument",
    [MPI_ERR_TYPE] = "invalid datatype (null, freed, or not committed)",
    [MPI_ERR_TAG] = "invalid tag argument",
    [MPI_ERR_COMM] = "invalid communicator",
    [MPI_ERR_RANK] = "invalid rank",
    [MPI_ERR_REQUEST] = "invalid request",
    [MPI_ERR_ROOT] = "invalid root",
    [MPI_ERR_GROUP] = "invalid group",
    [MPI_ERR_OP] = "invalid reduction operation",
    [MPI_ERR_TOPOLOGY] = "invalid topology",
    [MPI_ERR_DIMS] = "invalid dimension argument",
    [MPI_ERR_ARG] = "invalid argument of some other kind",
    [MPI_ERR_UNKNOWN] = "unknown error",
    [MPI_ERR_TRUNCATE] = "message truncated on receive",
    [MPI_ERR_OTHER] = "other error (MPI not initialized, or finalized)",
    [MPI_ERR_INTERN] = "internal error of the MPI library",
    [MPI_ERR_IN_STATUS] = "error code is in the status",
    [MPI_ERR_PENDING] = "pending request",
    [MPI_ERR_NO_MEM] = "out of memory",
    [MPI_ERR_PROC_FAILED] = "a process of the job has died (or stopped answering)",
    [MPI_ERR_WIN] = "invalid window",
    [MPI_ERR_DISP] = "invalid displacement (outside the target's window)",
    [MPI_ERR_LOCKTYPE] = "invalid lock type",
    [MPI_ERR_RMA_SYNC] = "one-sided call outside its synchronisation (epoch, lock)",
    [MPI_ERR_SIZE] = "invalid size argument",
    [MPI_ERR_ASSERT] = "invalid assertion argument",
    [MPI_ERR_INFO] = "invalid info object",
    [MPI_ERR_INFO_KEY] = "info key empty or too long",
    [MPI_ERR_INFO_VALUE] = "info value empty or too long",
    [MPI_ERR_INFO_NOKEY] = "no such key in the info object",
    [MPI_ERR_KEYVAL] = "invalid attribute key (unknown, freed, or of another kind)",
    [MPI_ERR_RMA_SHARED] = "the members' memory cannot be shared (not all on one host)",
    [MPI_ERR_RMA_FLAVOR] = "the window is not of the flavor the call needs",
};

/* The error class of a flit status met under an MPI call. */
int mp_class_of(flit_status st)
{
    switch (st) {
    case FLIT_OK:
        return MPI_SUCCESS;
    case FLIT_ERR_TOO_LARGE:
        return MPI_ERR_TRUNCATE;
    case FLIT_ERR_NO_MEMORY:
        return MPI_ERR_NO_MEM;
    case FLIT_ERR_RANK:
        return MPI_ERR_RANK;
    case FLIT_ERR_PEER_DOWN:
        return MPI_ERR_PROC_FAILED;
    default:
        return MPI_ERR_OTHER;
    }
}

/* Reports code through comm's error handler (MPI_COMM_WORLD's when comm is
   null or not valid): fatal ends the job, else the code is returned. */
int mp_err(MPI_Comm comm, int code, const char *fn)
{
    if (code == MPI_SUCCESS)
        return code;
    MPI_Errhandler h = MPI_ERRORS_ARE_FATAL;
    if (comm && mp_comm_ok(comm)) {
        h = comm->errh;
    } else if (mp_ready()) {
        h = flit_mpi_comm_world.errh;
        comm = MPI_COMM_WORLD;
    }
    if (mp_errh_call_comm(h, comm, &code))
        return code;
    return mp_err_handler(h, code, fn);
}

/* Reports code through handler h (a window's, say). */
int mp_err_handler(MPI_Errhandler h, int code, const char *fn)
{
    if (code == MPI_SUCCESS)
        return code;
    if (h && !h->fatal)
        return code;
    if (mp_nbc_name()) /* the blocking code of a non-blocking call */
        fn = mp_nbc_name();
    /* a program's code (MPI_Comm_call_errhandler) may be any number */
    const char *text = code > 0 && code <= MPI_ERR_LASTCODE
                           ? class_text[code]
                           : "an error code of the program";
    fprintf(stderr, "flit-mpi: rank %u: %s: %s (error class %d); aborting\n",
            flit_job_rank().idx, fn, text, code);
    fflush(stderr);
    /* A failure that a peer's end caused is not this rank's to end the job
       with: the launcher judges the peer's end first (flitrun: a rank
       killed is the cause, its status the job's). */
    if (code == MPI_ERR_PROC_FAILED)
        _exit(code);
    char why[160];
    snprintf(why, sizeof why, "%s: %s (error class %d)", fn, text, code);
    flit_job_abort(code, why);
}

int MPI_Init(int *argc, char ***argv)
{
    int provided;
    return PMPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
}

/* Fatal when it fails: no communicator has an error handler yet. */
static int init_fail(const char *what, flit_status st)
{
    fprintf(stderr, "flit-mpi: MPI_Init: %s: %s\n", what, flit_strerror(st));
    return mp_err(MPI_COMM_NULL, mp_class_of(st) ? mp_class_of(st) : MPI_ERR_OTHER,
                  "MPI_Init");
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)argc;
    (void)argv;
    if (initialized)
        return mp_err(MPI_COMM_NULL, MPI_ERR_OTHER, "MPI_Init");
    if (!provided || required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Init_thread");
    mp_type_init();
    flit_status st = mp_coll_choice_init();
    if (st != FLIT_OK)
        return init_fail("the FLIT_MPI_* settings", st);
    st = flit_init(NULL);
    if (st != FLIT_OK)
        return init_fail("flit_init", st);
    /* A single-threaded endpoint at every level: under MULTIPLE the
       library lock keeps its calls one at a time, and no progress thread
       (FLIT_PROGRESS_THREAD) may run the handlers outside it. */
    flit_ep_params_t params = {.field_mask = FLIT_EP_PARAM_PROGRESS_THREAD};
    if ((st = flit_ep_create(required == MPI_THREAD_MULTIPLE ? &params : NULL, &mp_ep)) !=
        FLIT_OK)
        return init_fail("flit_ep_create", st);
    flit_handler_t h;
    if ((st = flit_ep_reserve_handlers(mp_ep, 1, &h)) != FLIT_OK)
        return init_fail("flit_ep_reserve_handlers", st);
    if ((st = flit_tagged_create(mp_ep, h, &mp_tg)) != FLIT_OK)
        return init_fail("flit_tagged_create", st);
    if (mp_fault_init() != MPI_SUCCESS)
        return init_fail("listening for dead peers", FLIT_ERR_NO_MEMORY);
    if (mp_comm_init_world() != MPI_SUCCESS || mp_p2p_init() != MPI_SUCCESS)
        return init_fail("memory for the library's tables", FLIT_ERR_NO_MEMORY);
    if ((st = mp_win_init()) != FLIT_OK)
        return init_fail("the one-sided handlers", st);
    thread_level = required;
    main_thread = pthread_self();
    mp_mt = required == MPI_THREAD_MULTIPLE;
    *provided = thread_level;
    initialized = 1;
    return MPI_SUCCESS;
}

int MPI_Initialized(int *flag)
{
    if (!flag)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Initialized");
    *flag = initialized;
    return MPI_SUCCESS;
}

int MPI_Finalized(int *flag)
{
    MP_LOCKED(PMPI_Finalized, (flag)); /* MPI_Finalize may be running */
    if (!flag)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Finalized");
    *flag = finalized;
    return MPI_SUCCESS;
}

/* Collective: the barrier of flit_tagged_destroy's endpoint makes every
   rank's messages to the others received before anyone leaves. */
int MPI_Finalize(void)
{
    MP_LOCKED(PMPI_Finalize, ());
    MP_CHECK_INIT("MPI_Finalize");
    /* MPI_COMM_SELF's attributes first: libraries clean up in their delete
       functions, and may still call MPI there (MPI 3.1, 8.7.1) */
    int rc = mp_attr_comm_clear(MPI_COMM_SELF);
    if (!rc)
        rc = mp_attr_comm_clear(MPI_COMM_WORLD);
    if (rc)
        return mp_err(MPI_COMM_NULL, rc, "MPI_Finalize");
    /* collectives whose requests were freed still owe their messages */
    rc = mp_nbc_drain();
    if (rc)
        return mp_err(MPI_COMM_NULL, rc, "MPI_Finalize");
    flit_status st = flit_barrier(mp_ep);
    mp_scratch_fini();
    mp_p2p_fini();
    if (st == FLIT_OK)
        st = flit_tagged_destroy(mp_tg);
    if (st == FLIT_OK)
        st = flit_finalize();
    mp_comm_fini();
    mp_fault_fini();
    mp_errh_fini();
    mp_attr_fini();
    finalized = 1;
    return st == FLIT_OK ? MPI_SUCCESS
                         : mp_err(MPI_COMM_NULL, MPI_ERR_OTHER, "MPI_Finalize");
}

/* Ends this process with errorcode (1 when its low byte is 0, so that the
   job fails); flitrun stops the other ranks and exits with that status. */
int MPI_Abort(MPI_Comm comm, int errorcode)
{
    (void)comm;
    char why[64];
    snprintf(why, sizeof why, "MPI_Abort(%d)", errorcode);
    fprintf(stderr, "flit-mpi: rank %u: %s\n", flit_job_rank().idx, why);
    flit_job_abort(errorcode, why);
}

double MPI_Wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double MPI_Wtick(void)
{
    struct timespec ts;
    if (clock_getres(CLOCK_MONOTONIC, &ts) != 0)
        return 1e-9;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int MPI_Get_processor_name(char *name, int *resultlen)
{
    if (!name || !resultlen)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Get_processor_name");
    if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0)
        snprintf(name, MPI_MAX_PROCESSOR_NAME, "localhost");
    name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion)
{
    if (!version || !subversion)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Get_version");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen)
{
    if (!version || !resultlen)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Get_library_version");
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                     "flit-mpi (MPI %d.%d subset on flit's tagged layer)", MPI_VERSION,
                     MPI_SUBVERSION);
    *resultlen = n;
    return MPI_SUCCESS;
}

int MPI_Query_thread(int *provided)
{
    MP_CHECK_INIT("MPI_Query_thread");
    if (!provided)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Query_thread");
    *provided = thread_level;
    return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag)
{
    MP_CHECK_INIT("MPI_Is_thread_main");
    if (!flag)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Is_thread_main");
    *flag = pthread_equal(pthread_self(), main_thread) != 0;
    return MPI_SUCCESS;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    MP_LOCKED(PMPI_Comm_set_errhandler, (comm, errhandler));
    MP_CHECK_INIT("MPI_Comm_set_errhandler");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_set_errhandler");
    if (!mp_errh_for_comm(errhandler))
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_set_errhandler");
    comm->errh = errhandler;
    return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    MP_LOCKED(PMPI_Comm_get_errhandler, (comm, errhandler));
    MP_CHECK_INIT("MPI_Comm_get_errhandler");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_get_errhandler");
    if (!errhandler)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_get_errhandler");
    *errhandler = comm->errh;
    return MPI_SUCCESS;
}

/* The predefined handlers are never freed: the handle is just set null. */
int MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    MP_LOCKED(PMPI_Errhandler_free, (errhandler));
    if (!errhandler || (!mp_errh_for_comm(*errhandler) && !mp_errh_for_win(*errhandler)))
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Errhandler_free");
    /* A program's handler lives until MPI_Finalize: objects may still use
       it (MPI 3.1, 8.3.4), and a handle is all the program gives back. */
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
    if (!string || !resultlen || errorcode < 0 || errorcode > MPI_ERR_LASTCODE)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Error_string");
    *resultlen = snprintf(string, MPI_MAX_ERROR_STRING, "%s", class_text[errorcode]);
    return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int *errorclass)
{
    if (!errorclass || errorcode < 0 || errorcode > MPI_ERR_LASTCODE)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Error_class");
    *errorclass = errorcode;
    return MPI_SUCCESS;
}

/* No profiling levels of its own: a tool's MPI_Pcontrol replaces this one. */
int MPI_Pcontrol(const int level, ...)
{
    (void)level;
    return MPI_SUCCESS;
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Init);
MP_PROFILED(MPI_Init_thread);
MP_PROFILED(MPI_Initialized);
MP_PROFILED(MPI_Finalized);
MP_PROFILED(MPI_Finalize);
MP_PROFILED(MPI_Abort);
MP_PROFILED(MPI_Wtime);
MP_PROFILED(MPI_Wtick);
MP_PROFILED(MPI_Get_processor_name);
MP_PROFILED(MPI_Get_version);
MP_PROFILED(MPI_Get_library_version);
MP_PROFILED(MPI_Query_thread);
MP_PROFILED(MPI_Is_thread_main);
MP_PROFILED(MPI_Comm_set_errhandler);
MP_PROFILED(MPI_Comm_get_errhandler);
MP_PROFILED(MPI_Errhandler_free);
MP_PROFILED(MPI_Error_string);
MP_PROFILED(MPI_Error_class);
MP_PROFILED(MPI_Pcontrol);
