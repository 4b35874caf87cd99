/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Under an existing launcher that runs a PMIx server (Open MPI's mpirun,
 * prterun, Slurm's srun --mpi=pmix): rank and size come from PMIx, and each
 * allgather is a put, a commit and a data-collecting fence over the whole
 * namespace, after which every rank's blob is read from the local store;
 * where reading a blob is a request to the server, rank 0 reads them all
 * and puts them as one for the others (gathered).
 *
 * The job id names shared-memory files, so it must differ between jobs that
 * share a host. Under srun the namespace names the step, and srun's address
 * tells clusters apart (fl_boot_name_job): no exchange. Elsewhere the
 * namespace alone does not promise it (Open MPI 4.1's is a 16-bit hash of
 * host and mpirun's pid, plus a counter), and flit_init adds rank 0's 64
 * random bits in its exchange of host identities.
 */
#include <pmix.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/blobs.h"
#include "boot/proto.h"
#include "platform/os.h"
#include "util/log.h"

static struct {
    pthread_mutex_t lock; /* one exchange at a time: round and keys */
    pmix_proc_t me;
    uint32_t size;
    uint32_t round; /* allgather rounds started */
    bool open;
    bool local_store; /* gets are answered from a shared-memory store */
} px = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The variables by which a PMIx server names itself and its clients to them
   (PMIx's own; Open MPI 4.1's mpirun sets all three kinds). flitrun's
   FLIT_BOOT wins: flitrun may itself run under mpirun. */
static bool pmix_detect(void)
{
    if (getenv(FL_ENV_BOOT))
        return false;
    if (getenv("PMIX_NAMESPACE") || getenv("PMIX_RANK"))
        return true;
    for (char **e = environ; e && *e; e++) /* clearenv() leaves it NULL */
        if (strncmp(*e, "PMIX_SERVER_URI", 15) == 0)
            return true;
    return false;
}

static flit_status pmix_failed(const char *what, pmix_status_t rc)
{
    fl_error("PMIx: %s failed: %s (namespace %s, rank %u)", what, PMIx_Error_string(rc),
             px.me.nspace, px.me.rank);
    return FLIT_ERR_BOOT;
}

/* The value the server holds for key of rank r (in our namespace), which must
   be of type `type`. Release *out with PMIX_VALUE_RELEASE. */
static flit_status get_value(pmix_rank_t r, const char *key, pmix_data_type_t type,
                             pmix_value_t **out)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, px.me.nspace, r);
    /* After a collecting fence the data is here; IMMEDIATE turns a key that
       is missing into an error instead of a wait for it to be put. Job
       information (r = wildcard) is local from the start. */
    pmix_info_t hint;
    bool yes = true;
    PMIX_INFO_CONSTRUCT(&hint);
    PMIX_INFO_LOAD(&hint, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&p, key, &hint, 1, &v);
    PMIX_INFO_DESTRUCT(&hint);
    char what[PMIX_MAX_KEYLEN + 64];
    if (r == PMIX_RANK_WILDCARD)
        snprintf(what, sizeof what, "getting %s of the job", key);
    else
        snprintf(what, sizeof what, "getting %s of rank %u", key, r);
    if (rc != PMIX_SUCCESS || !v) {
        if (v)
            PMIX_VALUE_RELEASE(v);
        return pmix_failed(what, rc == PMIX_SUCCESS ? PMIX_ERR_NOT_FOUND : rc);
    }
    if (v->type != type ||
        (type == PMIX_BYTE_OBJECT && v->data.bo.size && !v->data.bo.bytes)) {
        fl_error("PMIx: %s: a value of type %s, expected %s", what,
                 PMIx_Data_type_string(v->type), PMIx_Data_type_string(type));
        PMIX_VALUE_RELEASE(v);
        return FLIT_ERR_BOOT;
    }
    *out = v;
    return FLIT_OK;
}

/* Makes data visible to every rank once the next fence completes. */
static flit_status put_bytes(const char *key, const void *data, size_t len)
{
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)data; /* PMIx_Put copies it */
    v.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS)
        return pmix_failed("PMIx_Put", rc);
    /* Put only caches the value in this process; the fence sees committed
       data only. */
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS)
        return pmix_failed("PMIx_Commit", rc);
    return FLIT_OK;
}

/* Whether rank r's value of key is missing here (after a fence). */
static bool key_missing(pmix_rank_t r, const char *key)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, px.me.nspace, r);
    pmix_info_t hint;
    bool yes = true;
    PMIX_INFO_CONSTRUCT(&hint);
    PMIX_INFO_LOAD(&hint, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&p, key, &hint, 1, &v);
    PMIX_INFO_DESTRUCT(&hint);
    if (v)
        PMIX_VALUE_RELEASE(v);
    return rc == PMIX_ERR_NOT_FOUND;
}

/*
 * The fence for key completed without every rank (PMIX_ERR_PARTIAL_SUCCESS):
 * srun counts a task that exited as arrived, so a rank that left before
 * this exchange (an early return without flit_finalize) shows here, at
 * once, instead of as a wait for ever. Names the first rank whose part is
 * missing, where every rank puts one (not in the ".all" round).
 */
static flit_status fence_partial(const char *key)
{
    size_t len = strlen(key);
    bool each = len < 4 || strcmp(key + len - 4, ".all") != 0;
    for (uint32_t r = 0; each && r < px.size; r++) {
        if (r == px.me.rank || !key_missing(r, key))
            continue;
        fl_error("PMIx: rank %u left the job: the fence for %s completed without it "
                 "(it exited before this exchange, e.g. without flit_finalize)",
                 r, key);
        return FLIT_ERR_PEER_DOWN;
    }
    fl_error("PMIx: the fence for %s completed without every rank: one left the job",
             key);
    return FLIT_ERR_PEER_DOWN;
}

/* Waits for every rank of the job, and brings their committed data here. */
static flit_status fence_all(const char *why)
{
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, px.me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    pmix_status_t rc = PMIx_Fence(&all, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc == PMIX_ERR_PARTIAL_SUCCESS)
        return fence_partial(why);
    if (rc != PMIX_SUCCESS) {
        char what[80];
        snprintf(what, sizeof what, "the fence for %s", why);
        return pmix_failed(what, rc);
    }
    return FLIT_OK;
}

static flit_status read_job_size(void)
{
    pmix_value_t *v;
    flit_status st = get_value(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, PMIX_UINT32, &v);
    if (st != FLIT_OK)
        return st;
    px.size = v->data.uint32;
    PMIX_VALUE_RELEASE(v);
    if (px.size == 0 || px.me.rank >= px.size) {
        fl_error("PMIx: rank %u in a job of %u (namespace %s)", px.me.rank, px.size,
                 px.me.nspace);
        return FLIT_ERR_BOOT;
    }
    return FLIT_OK;
}

/*
 * A key of every rank at once. PMIx_Get hands each call to PMIx's progress
 * thread and waits for it to come back: N gets are N round trips between
 * two threads, and with many ranks sharing few CPUs each costs a scheduling
 * delay (~0.5 ms per get under srun with 32 ranks on 2 CPUs). From a
 * shared-memory store PMIx_Get_nb queues all N, the progress thread
 * answers them in one go and the caller wakes once: 0.4 ms for 32 ranks
 * where one at a time took 16. From the "hash" store each get is a request
 * to the server, and several in flight at once stall ~45 ms in its socket
 * (measured under srun, any N from 4 to 16): there they go one at a time.
 */
struct got {
    pmix_status_t status; /* PMIX_ERR_NOT_FOUND where the value had another type */
    pmix_data_type_t type;
    uint32_t u32; /* PMIX_UINT32 */
    void *bytes;  /* PMIX_BYTE_OBJECT: a copy, malloc'd */
    size_t size;
};

struct batch {
    pthread_mutex_t lock;
    pthread_cond_t done;
    uint32_t pending;
    pmix_data_type_t want;
    struct got *got; /* [px.size] */
};

struct batch_slot {
    struct batch *b;
    uint32_t rank;
};

/* On PMIx's progress thread: keeps what it needs. The value is ours to
   release (PMIx 4.2 hands over what it fetched; it leaks otherwise). */
static void got_value(pmix_status_t status, pmix_value_t *v, void *arg)
{
    struct batch_slot *slot = arg;
    struct batch *b = slot->b;
    struct got *g = &b->got[slot->rank];
    g->status = status == PMIX_SUCCESS && !v ? PMIX_ERR_NOT_FOUND : status;
    if (g->status == PMIX_SUCCESS) {
        g->type = v->type;
        if (v->type != b->want) {
            g->status = PMIX_ERR_TYPE_MISMATCH;
        } else if (v->type == PMIX_UINT32) {
            g->u32 = v->data.uint32;
        } else if (v->data.bo.size) {
            g->size = v->data.bo.size;
            g->bytes = v->data.bo.bytes ? malloc(g->size) : NULL;
            if (g->bytes)
                memcpy(g->bytes, v->data.bo.bytes, g->size);
            else
                g->status = v->data.bo.bytes ? PMIX_ERR_NOMEM : PMIX_ERR_TYPE_MISMATCH;
        }
    }
    if (v)
        PMIX_VALUE_RELEASE(v);
    pthread_mutex_lock(&b->lock);
    b->pending--;
    pthread_cond_signal(&b->done);
    pthread_mutex_unlock(&b->lock);
}

static void batch_free(struct batch *b)
{
    for (uint32_t r = 0; b->got && r < px.size; r++)
        free(b->got[r].bytes);
    free(b->got);
    b->got = NULL;
    pthread_cond_destroy(&b->done);
    pthread_mutex_destroy(&b->lock);
}

/* Every rank's value of key, which must be of type `want` (PMIX_UINT32 or
   PMIX_BYTE_OBJECT), into b->got: each with its own status. Fails only
   where the requests could not be made. */
static flit_status get_all(const char *key, pmix_data_type_t want, struct batch *b)
{
    *b = (struct batch){.pending = px.size, .want = want};
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->done, NULL);
    b->got = calloc(px.size, sizeof *b->got);
    struct batch_slot *slot = calloc(px.size, sizeof *slot);
    if (!b->got || !slot) {
        free(slot);
        batch_free(b);
        return FLIT_ERR_NO_MEMORY;
    }
    /* After a collecting fence the data is here; IMMEDIATE turns a key that
       is missing into an error instead of a wait for it to be put. */
    pmix_info_t hint;
    bool yes = true;
    PMIX_INFO_CONSTRUCT(&hint);
    PMIX_INFO_LOAD(&hint, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    for (uint32_t r = 0; r < px.size; r++) {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, px.me.nspace, r);
        slot[r] = (struct batch_slot){b, r};
        pmix_status_t rc = PMIx_Get_nb(&p, key, &hint, 1, got_value, &slot[r]);
        pthread_mutex_lock(&b->lock);
        if (rc != PMIX_SUCCESS) { /* no callback will come for it */
            b->got[r].status = rc;
            b->pending--;
        }
        /* All in flight (wait after the last), or one at a time (this one
           answered before the next goes). */
        uint32_t allowed = px.size - r - 1;
        if (px.local_store && allowed)
            allowed = UINT32_MAX;
        while (b->pending > allowed)
            pthread_cond_wait(&b->done, &b->lock);
        pthread_mutex_unlock(&b->lock);
    }
    PMIX_INFO_DESTRUCT(&hint);
    free(slot);
    return FLIT_OK;
}

/*
 * Which node each rank is on, as the server says (PMIX_NODEID of every rank,
 * local information after PMIx_Init): flit_init then needs no exchange to
 * learn it. NULL where a rank's is missing: flit_init exchanges instead.
 */
static uint32_t *node_ids(void)
{
    struct batch b;
    if (get_all(PMIX_NODEID, PMIX_UINT32, &b) != FLIT_OK)
        return NULL;
    uint32_t *node_of = malloc(px.size * sizeof *node_of);
    for (uint32_t r = 0; node_of && r < px.size; r++) {
        if (b.got[r].status != PMIX_SUCCESS) {
            fl_debug("PMIx: no node id of rank %u (%s): the ranks exchange their "
                     "hosts' identities",
                     r, PMIx_Error_string(b.got[r].status));
            free(node_of);
            node_of = NULL;
        } else {
            node_of[r] = b.got[r].u32;
        }
    }
    batch_free(&b);
    return node_of;
}

/*
 * The most tasks Slurm put on one node of this step (SLURM_STEP_TASKS_PER_NODE:
 * "4", "4(x2),3"), or 0 where that is not known.
 */
static unsigned long tasks_per_node(void)
{
    const char *p = getenv("SLURM_STEP_TASKS_PER_NODE");
    unsigned long most = 0;
    while (p && *p) {
        char *end;
        unsigned long n = strtoul(p, &end, 10);
        if (end == p)
            return 0;
        most = n > most ? n : most;
        if (*end == '(')
            end += strcspn(end, ")") + (end[strcspn(end, ")")] == ')');
        if (*end && *end != ',')
            return 0;
        p = end + (*end == ',');
    }
    return most;
}

/*
 * The client picks the store it reads the job's data from, among those the
 * server offers (PMIX_GDS_MODULE). Slurm offers its shared-memory stores
 * first; a step's clients that pick one wait ~40 ms in PMIx_Init for the
 * server to answer their connection. One that picks "hash" (the job's data
 * sent over its socket) waits ~1 ms, but the server then packs the job's data
 * for every client of the node: that wins up to 16 tasks on a node and loses
 * at 32 (measured under srun on one node, bench/launch.sh). So hash where
 * Slurm says a node holds at most 16 tasks, unless the user chose
 * (PMIX_MCA_gds) or the server does not offer it. The variable is set only
 * across PMIx_Init, which reads it. Returns whether it was set.
 */
static bool prefer_hash_store(void)
{
    const char *offer = getenv("PMIX_GDS_MODULE");
    unsigned long local = tasks_per_node();
    if (getenv("PMIX_MCA_gds") || !offer || local == 0 || local > 16)
        return false;
    for (const char *p = offer; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 4 && memcmp(p, "hash", 4) == 0)
            return setenv("PMIX_MCA_gds", "hash", 0) == 0;
        p += n + (p[n] == ',');
    }
    return false;
}

/* Whether the client will read the job's data from a shared-memory store:
   the user's choice (PMIX_MCA_gds), else the server's first offer. */
static bool shared_memory_store(void)
{
    const char *pick = getenv("PMIX_MCA_gds");
    if (!pick)
        pick = getenv("PMIX_GDS_MODULE");
    return pick && strncmp(pick, "ds", 2) == 0;
}

static flit_status pmix_open(struct fl_boot_info *info)
{
    const char *ns = getenv("PMIX_NAMESPACE"), *rank = getenv("PMIX_RANK");
    if (!ns || !*ns || !rank || !*rank) {
        fl_error("a PMIx server is named in the environment, but PMIX_NAMESPACE "
                 "and PMIX_RANK are not both set: not started by a PMIx launcher?");
        return FLIT_ERR_BOOT;
    }
    memset(&px.me, 0, sizeof px.me);
    px.size = 0;
    px.round = 0;
    /* PMIx_Init starts PMIx's progress thread: it takes no signals, they
       belong to the program. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool hash = prefer_hash_store();
    px.local_store = !hash && shared_memory_store();
    pmix_status_t rc = PMIx_Init(&px.me, NULL, 0);
    if (hash) {
        unsetenv("PMIX_MCA_gds");
        fl_debug("PMIx: the job's data through the server's socket (store hash)");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != PMIX_SUCCESS) {
        fl_error("PMIx: cannot reach the launcher's server (namespace %s, rank %s): %s",
                 ns, rank, PMIx_Error_string(rc));
        return FLIT_ERR_BOOT;
    }
    flit_status st = read_job_size();
    if (st != FLIT_OK) {
        PMIx_Finalize(NULL, 0);
        return st;
    }
    px.open = true;
    info->rank = px.me.rank;
    info->size = px.size;
    fl_boot_name_job(info, px.me.nspace, "slurm.pmix.");
    /* Useful only where the job id needs no exchange either. */
    if (px.size > 1 && info->job_id_unique)
        info->host_of = node_ids();
    info->launcher = "pmix";
    return FLIT_OK;
}

/* Every rank's value of key, in rank order, as blobs. */
static flit_status collect(const char *key, struct fl_blobs **out)
{
    struct batch b;
    flit_status st = get_all(key, PMIX_BYTE_OBJECT, &b);
    if (st != FLIT_OK)
        return st;
    size_t total = 0;
    for (uint32_t r = 0; r < px.size && st == FLIT_OK; r++) {
        struct got *g = &b.got[r];
        if (g->status == PMIX_ERR_TYPE_MISMATCH) {
            fl_error("PMIx: getting %s of rank %u: a value of type %s, expected %s", key,
                     r, PMIx_Data_type_string(g->type),
                     PMIx_Data_type_string(PMIX_BYTE_OBJECT));
            st = FLIT_ERR_BOOT;
        } else if (g->status == PMIX_ERR_NOT_FOUND) {
            /* The fence completed without its part: under srun a task that
               exited counts as arrived (mpirun ends the job instead). */
            fl_error("PMIx: rank %u left the job: the fence for %s completed without "
                     "its part (it exited before this exchange, e.g. without "
                     "flit_finalize)",
                     r, key);
            st = FLIT_ERR_PEER_DOWN;
        } else if (g->status != PMIX_SUCCESS) {
            char what[PMIX_MAX_KEYLEN + 64];
            snprintf(what, sizeof what, "getting %s of rank %u", key, r);
            st = g->status == PMIX_ERR_NOMEM ? FLIT_ERR_NO_MEMORY
                                             : pmix_failed(what, g->status);
        }
        total += g->size;
    }
    struct fl_blobs *bl = st == FLIT_OK ? fl_blobs_alloc(px.size, total) : NULL;
    if (st == FLIT_OK && !bl)
        st = FLIT_ERR_NO_MEMORY;
    for (uint32_t r = 0; bl && r < px.size; r++)
        fl_blobs_add(bl, r, b.got[r].bytes, b.got[r].size);
    batch_free(&b);
    if (bl)
        *out = bl;
    return st;
}

/*
 * The rest of a round whose gets go to the server (the "hash" store), once
 * every rank's blob is fenced: rank 0 gets them all and puts them as one,
 * which every other rank gets after a second fence. The server serves the
 * gets of its node's clients one after another, and where every rank got
 * every blob that was N² of them a round: under srun with 16 ranks on 2
 * CPUs each took 1-5 ms and a round's gets 20-35 ms. Now about 2N, for one
 * more fence. Rank 0 puts something even when it failed (one byte), since
 * the others wait for it in the fence.
 */
static flit_status gathered(const char *key, struct fl_blobs **out)
{
    char all_key[48];
    snprintf(all_key, sizeof all_key, "%s.all", key);
    *out = NULL;
    if (px.me.rank == 0) {
        flit_status st = collect(key, out);
        size_t n = 1;
        uint8_t failed = 0, *all = st == FLIT_OK ? fl_blobs_pack(*out, &n) : NULL;
        if (st == FLIT_OK && !all)
            st = FLIT_ERR_NO_MEMORY;
        flit_status put = put_bytes(all_key, all ? all : &failed, all ? n : 1);
        free(all);
        flit_status fenced = fence_all(all_key);
        st = st != FLIT_OK ? st : put != FLIT_OK ? put : fenced;
        if (st != FLIT_OK && *out) {
            fl_blobs_free(*out);
            *out = NULL;
        }
        return st;
    }
    flit_status st = fence_all(all_key);
    pmix_value_t *v = NULL;
    if (st == FLIT_OK)
        st = get_value(0, all_key, PMIX_BYTE_OBJECT, &v);
    if (st != FLIT_OK)
        return st;
    if (v->data.bo.size <= 1) {
        fl_error("PMIx: rank 0 could not gather exchange %s (it says why)", key);
        st = FLIT_ERR_BOOT;
    } else {
        st = fl_blobs_unpack((const uint8_t *)v->data.bo.bytes, v->data.bo.size, px.size,
                             out);
        if (st == FLIT_ERR_BOOT)
            fl_error("PMIx: rank 0's gathered blobs of exchange %s (%zu bytes) do not "
                     "add up for %u ranks",
                     key, v->data.bo.size, px.size);
    }
    PMIX_VALUE_RELEASE(v);
    return st;
}

static flit_status pmix_allgather(const void *mine, size_t len, struct fl_blobs **out)
{
    pthread_mutex_lock(&px.lock);
    /* A key per round: PMIx 4.2 can return a key's first value after it is
       put again. Nothing can be removed either, so each commit and each fence
       carries all a rank ever put: fine for flit's small blobs, a few rounds
       per endpoint. */
    char key[32];
    snprintf(key, sizeof key, "flit.%u", ++px.round);
    fl_debug("PMIx: exchange %s, %zu bytes", key, len);
    flit_status st = put_bytes(key, mine, len);
    if (st == FLIT_OK)
        st = fence_all(key);
    /* From a shared-memory store every get is local: each rank reads all
       (get_all). Two ranks gain nothing from a second fence. */
    if (st == FLIT_OK && !px.local_store && px.size > 2)
        st = gathered(key, out);
    else if (st == FLIT_OK)
        st = collect(key, out);
    pthread_mutex_unlock(&px.lock);
    return st;
}

static void pmix_close(bool clean)
{
    (void)clean;
    if (!px.open)
        return;
    px.open = false;
    pmix_status_t rc = PMIx_Finalize(NULL, 0);
    if (rc != PMIX_SUCCESS)
        fl_warn("PMIx: PMIx_Finalize: %s", PMIx_Error_string(rc));
}

/* PMIx_Abort of the whole namespace: the server ends every process of the
   job (this one included) and returns once it has; its launcher (mpirun,
   srun) exits with the status. */
static void pmix_abort(int status, const char *why)
{
    if (!px.open)
        return;
    pmix_status_t rc = PMIx_Abort(status, why, NULL, 0);
    if (rc != PMIX_SUCCESS)
        fl_warn("PMIx: PMIx_Abort: %s", PMIx_Error_string(rc));
}

const struct fl_boot_ops fl_boot_pmix = {
    .name = "pmix",
    .detect = pmix_detect,
    .open = pmix_open,
    .allgather = pmix_allgather,
    .close = pmix_close,
    .abort = pmix_abort,
};
